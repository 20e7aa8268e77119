//! A document's new text, checked whole (size, secrets, front-matter,
//! links, the tree rules) and planned as one [`Change`] before a byte is
//! written; a write based on an older version is merged first.

use std::collections::{HashMap, HashSet};

use super::Memory;
use crate::answer::UpdateOutcome;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter::{self, FrontMatter};
use crate::links::{Links, parse_links};
use crate::merge;
use crate::refusal::Subject;
use crate::secrets;
use crate::storage::Change;

impl Memory {
    /// Applies `make(stored text)` as the document's new text: every check,
    /// then one atomic change. `make` runs again when another process
    /// committed first (see [`Memory::write`]).
    pub(super) fn rewrite(
        &self,
        id: &DocId,
        label: &str,
        mut make: impl FnMut(&str) -> Result<String, MemoryError>,
    ) -> Result<UpdateOutcome, MemoryError> {
        self.write(|| self.rewrite_locked(id, label, &mut make, &HashMap::new()))
    }

    /// [`Memory::rewrite`] with the locks held; a new link whose id is in
    /// `restored` gets that text instead of a title, and the rest of
    /// `restored` (its subtree) comes back with it.
    pub(super) fn rewrite_locked(
        &self,
        id: &DocId,
        label: &str,
        make: impl FnOnce(&str) -> Result<String, MemoryError>,
        restored: &HashMap<DocId, String>,
    ) -> Result<UpdateOutcome, MemoryError> {
        let old_text = self.read_existing(id)?;
        let text = make(&old_text)?;
        let (change, outcome) = self.plan_rewrite(id, &old_text, text, restored, label)?;
        let warning = self.apply_change(&change)?;
        Ok(UpdateOutcome { warning, ..outcome })
    }

    /// The change that makes `text` the new text of `id` (now `old_text`),
    /// after every check: size, secrets, front-matter, links and the tree
    /// rules. Creates the documents new links name, prunes the subtrees of
    /// links dropped. Writes nothing. The caller holds the locks.
    pub(super) fn plan_rewrite(
        &self,
        id: &DocId,
        old_text: &str,
        text: String,
        restored: &HashMap<DocId, String>,
        label: &str,
    ) -> Result<(Change, UpdateOutcome), MemoryError> {
        let new_links = self.check_text(old_text, &text)?;
        let old = front_matter::split(old_text);
        let old_links = parse_links(old.body).ids;
        // Sets, so that a document with many thousands of links stays linear.
        let old_set: HashSet<&DocId> = old_links.iter().collect();
        let new_set: HashSet<&DocId> = new_links.ids.iter().collect();

        let mut created = Vec::new();
        let mut created_folded: HashMap<String, &DocId> = HashMap::new();
        for link in &new_links.ids {
            if self.storage.stamp(link)?.is_some() {
                if old_set.contains(link) {
                    continue; // A current child.
                }
                return Err(self.cross_tree(id, link)?);
            }
            // A new id, or a child whose file was deleted outside memtree:
            // either way it is created.
            if let Some(existing) = self.storage.find_folded(link)? {
                return Err(MemoryError::CaseCollision { link: link.clone(), existing });
            }
            if let Some(twin) = created_folded.insert(link.folded(), link) {
                return Err(MemoryError::CaseCollision { link: link.clone(), existing: twin.clone() });
            }
            created.push(link.clone());
        }

        if let Some(first) = created.first() {
            self.check_depth(Subject::Content, first, self.depth(id)? + 1)?;
        }
        let removed: Vec<&DocId> = old_links.iter().filter(|l| !new_set.contains(l)).collect();
        let deleted = if removed.is_empty() { Vec::new() } else { self.prunable(id, &removed, &new_set)? };

        let mut puts = vec![(id.clone(), text)];
        puts.extend(
            created.iter().map(|c| (c.clone(), restored.get(c).cloned().unwrap_or(format!("# {c}\n\n")))),
        );
        let mut below: Vec<(DocId, String)> = restored
            .iter()
            .filter(|(r, _)| !created.contains(r))
            .map(|(r, t)| (r.clone(), t.clone()))
            .collect();
        below.sort();
        puts.extend(below);
        let change = Change { puts, deletes: deleted.clone(), label: label.to_owned() };
        Ok((change, UpdateOutcome { created, deleted, ..UpdateOutcome::default() }))
    }

    /// Checks a document's new text on its own (size, secrets it adds to
    /// `old_text`, front-matter, link syntax and count) and answers its
    /// links.
    pub(super) fn check_text(&self, old_text: &str, text: &str) -> Result<Links, MemoryError> {
        let limit = self.settings.max_document_bytes;
        if text.len() > limit {
            return Err(MemoryError::TooLarge { len: text.len(), limit });
        }
        if !self.settings.allow_secrets
            && let Some(kind) = secrets::added(old_text, text)
        {
            return Err(MemoryError::Secret { kind });
        }
        let new = front_matter::split(text);
        if let Some(yaml) = new.yaml {
            FrontMatter::parse(yaml)?;
        }
        let links = parse_links(new.body);
        if let Some(bad) = links.invalid.first() {
            return Err(MemoryError::InvalidLink { target: bad.target.clone(), error: bad.error.clone() });
        }
        let limit = self.settings.max_links;
        if links.ids.len() > limit {
            return Err(MemoryError::TooManyLinks { links: links.ids.len(), limit });
        }
        Ok(links)
    }

    /// `make` applied to the stored text, or, for a write based on an older
    /// version, to that version's text (from history) and merged with what
    /// changed since.
    pub(super) fn based_on(
        &self,
        id: &DocId,
        base: Option<&str>,
        stored: &str,
        make: impl Fn(&str) -> Result<String, MemoryError>,
        merged: &mut Option<Vec<String>>,
    ) -> Result<String, MemoryError> {
        if let Some(base) = base {
            merge::check_version(base)?;
        }
        let Some(base) = base.filter(|b| *b != merge::version(stored)) else {
            // Kept in case another process commits first: the next attempt
            // merges with this text.
            self.earlier_reads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((id.clone(), stored.to_owned()));
            return make(stored);
        };
        let Some(base_text) = self.text_of_version(id, base)? else {
            return Err(MemoryError::Conflict { sections: vec![] });
        };
        let mine = make(&base_text)?;
        let done =
            merge::merge(&base_text, stored, &mine).map_err(|sections| MemoryError::Conflict { sections })?;
        *merged = Some(done.theirs);
        Ok(done.text)
    }

    /// The document's text in the version whose hash is `version`: read by
    /// an earlier attempt of this write, or looked up in its history.
    fn text_of_version(&self, id: &DocId, version: &str) -> Result<Option<String>, MemoryError> {
        let earlier = self.earlier_reads.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, text)) =
            earlier.iter().find(|(read, text)| read == id && merge::version(text) == version)
        {
            return Ok(Some(text.clone()));
        }
        drop(earlier);
        let Some(history) = &self.history else { return Ok(None) };
        history.flush(Some(&[]))?;
        for v in history.log(Some(id), 200)?.iter().filter(|v| v.present) {
            if let Some(text) = history.read_at(&v.version, id)?
                && merge::version(&text) == version
            {
                return Ok(Some(text));
            }
        }
        Ok(None)
    }
}
