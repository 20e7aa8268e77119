//! History and restore on the engine: list a document's versions, bring
//! back an earlier one or a pruned subtree through the same tree rules as
//! any write.

use std::collections::HashMap;

use super::Memory;
use crate::answer::Restored;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter;
use crate::history::{History, Version};
use crate::links::parse_links;
use crate::refusal::Refusal;
use crate::storage::LockMode;

impl Memory {
    fn history_backend(&self) -> Result<&dyn History, MemoryError> {
        self.history.as_deref().ok_or(MemoryError::NoHistory)
    }

    /// Commits what is queued and what other programs changed (`changed`
    /// ids, or every document when `None`), holding the shared lock so no
    /// write is half-recorded meanwhile. What needs no lock is done first:
    /// a server leaving with a backlog held three others' writes 250 ms.
    pub fn flush_history(&self, changed: Option<&[DocId]>) -> Result<(), MemoryError> {
        let Some(history) = &self.history else { return Ok(()) };
        if let Err(error) = history.ready_flush(changed) {
            tracing::debug!(%error, "the flush does it all under the lock");
        }
        let _lock = self.lock(LockMode::Shared)?;
        Ok(history.flush(changed)?)
    }

    /// The versions in which `id` changed (every change when `None`), newest
    /// first.
    pub fn history(&self, id: Option<&DocId>, limit: usize) -> Result<Vec<Version>, MemoryError> {
        let history = self.history_backend()?;
        // What is queued is listed once committed; a store that cannot be
        // written (read-only, a full disk) still shows what history holds.
        if let Err(error) = self.flush_history(id.map(std::slice::from_ref)) {
            tracing::warn!(%error, "listing history without the changes not committed yet");
        }
        Ok(history.log(id, limit)?)
    }

    /// The text of `id` in `version` (`None`: it did not exist then).
    pub fn read_at(&self, id: &DocId, version: &str) -> Result<Option<String>, MemoryError> {
        Ok(self.history_backend()?.read_at(version, id)?)
    }

    /// Brings back `id` as it was in `version`, or, without a version, as it
    /// was before its last change (a pruned document: just before it was
    /// pruned). Children it linked then that are gone now come back with
    /// it; a pruned document is linked again under the parent it had.
    pub fn restore(&self, id: &DocId, version: Option<&str>) -> Result<Restored, MemoryError> {
        let history = self.history_backend()?;
        self.flush_history(Some(std::slice::from_ref(id)))?;
        let exists = self.storage.stamp(id)?.is_some();
        let version = match version {
            Some(v) => v.to_owned(),
            None => {
                let log = history.log(Some(id), 1000)?;
                // The newest version that is not the current state.
                let earlier = if exists { log.iter().skip(1).find(|v| v.present) } else { log.first() };
                match earlier {
                    Some(v) if exists => v.version.clone(),
                    // Pruned in `v`: as it was just before.
                    Some(v) => format!("{}^", v.version),
                    None => return Err(Refusal::NoEarlierVersion { id: id.clone() }.into()),
                }
            }
        };
        let text = history
            .read_at(&version, id)?
            .ok_or_else(|| Refusal::NotInVersion { id: id.clone(), version: version.clone() })?;
        let label = format!("restore {id} from {version}");
        self.write(|| self.restore_locked(history, id, exists, &version, &text, &label))
    }

    /// [`Memory::restore`] of `text`, the document in `version`, with the
    /// locks held.
    fn restore_locked(
        &self,
        history: &dyn History,
        id: &DocId,
        exists: bool,
        version: &str,
        text: &str,
        label: &str,
    ) -> Result<Restored, MemoryError> {
        let came_back = |subtree: &HashMap<DocId, String>| {
            let mut ids: Vec<DocId> = subtree.keys().filter(|k| *k != id).cloned().collect();
            ids.sort();
            ids.insert(0, id.clone());
            ids
        };
        if exists {
            let subtree = self.gone_subtree(history, version, text)?;
            let ids = came_back(&subtree);
            let outcome = self.rewrite_locked(id, label, |_| Ok(text.to_owned()), &subtree)?;
            return Ok(Restored { ids, version: version.to_owned(), relinked_under: None, outcome });
        }
        let parent = self.old_parent(history, id)?;
        let mut subtree = self.gone_subtree(history, version, text)?;
        subtree.insert(id.clone(), text.to_owned());
        let ids = came_back(&subtree);
        let link = format!("- [[{id}]]");
        let outcome = self.rewrite_locked(
            &parent,
            &format!("{label} under {parent}"),
            |current| Ok(crate::line_ending::append_line(current, &link)),
            &subtree,
        )?;
        Ok(Restored { ids, version: version.to_owned(), relinked_under: Some(parent), outcome })
    }

    /// The documents `text` links, recursively, that no longer exist, each
    /// with the last text it had (in `version`, when history has no other).
    /// A link there to a document that exists now elsewhere cannot come
    /// back without breaking the tree.
    fn gone_subtree(
        &self,
        history: &dyn History,
        version: &str,
        text: &str,
    ) -> Result<HashMap<DocId, String>, MemoryError> {
        let links = |t: &str| parse_links(front_matter::split(t).body).ids;
        let mut subtree = HashMap::new();
        let mut stack: Vec<DocId> = Vec::new();
        for link in links(text) {
            if self.storage.stamp(&link)?.is_none() {
                stack.push(link);
            }
        }
        while let Some(child) = stack.pop() {
            if subtree.contains_key(&child) {
                continue;
            }
            let text = match self.last_text(history, &child)? {
                Some(text) => text,
                None => history.read_at(version, &child)?.unwrap_or_else(|| format!("# {child}\n\n")),
            };
            for link in links(&text) {
                if self.storage.stamp(&link)?.is_some() {
                    return Err(
                        Refusal::LinkedElsewhereNow { child, link, version: version.to_owned() }.into()
                    );
                }
                stack.push(link);
            }
            subtree.insert(child, text);
        }
        Ok(subtree)
    }

    /// The last text a document that is gone had: as it was just before it
    /// was pruned (or deleted).
    fn last_text(&self, history: &dyn History, id: &DocId) -> Result<Option<String>, MemoryError> {
        Ok(match history.log(Some(id), 1)?.first() {
            Some(v) if !v.present => history.read_at(&format!("{}^", v.version), id)?,
            Some(v) => history.read_at(&v.version, id)?,
            None => None,
        })
    }

    /// The document that linked `id` when it was pruned: the one whose
    /// text before the pruning change links it.
    fn old_parent(&self, history: &dyn History, id: &DocId) -> Result<DocId, MemoryError> {
        let pruned = history.log(Some(id), 1)?;
        let Some(pruned) = pruned.first().filter(|v| !v.present) else {
            return Err(MemoryError::NotFound { id: id.clone() });
        };
        let parent = history
            .before(&pruned.version)?
            .into_iter()
            .find(|(_, text)| {
                text.as_deref().is_some_and(|t| parse_links(front_matter::split(t).body).ids.contains(id))
            })
            .map(|(parent, _)| parent)
            .unwrap_or_else(DocId::root);
        if self.storage.stamp(&parent)?.is_none() {
            return Err(Refusal::ParentGone { parent }.into());
        }
        Ok(parent)
    }
}
