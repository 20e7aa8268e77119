//! `copy_from`: one store's documents, and its history as far as it can be
//! read, into another store (a folder to a bucket, and back).

use std::collections::BTreeMap;

use super::Memory;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::history;
use crate::storage::Change;

/// What a copy brought over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    pub documents: usize,
    /// Versions of the source's history replayed as changes here.
    pub versions: usize,
}

impl Memory {
    /// Whether the store holds nothing but its root: a store to copy into.
    pub fn is_new(&self) -> Result<bool, MemoryError> {
        Ok(self.storage.list()?.docs.iter().all(|(id, _)| id.is_root()))
    }

    /// Copies `from` into this store, which [`Memory::is_new`]. With
    /// `versions`, each version of `from`'s history, oldest first, becomes
    /// a change here (its label kept, not its time); then the documents as
    /// they are now, where history does not end there. Changes are applied
    /// as they were: they were checked where they were made.
    pub fn copy_from(&self, from: &Memory, versions: bool) -> Result<Copied, MemoryError> {
        let mut replayed = 0;
        if let Some(source) = from.history.as_ref().filter(|_| versions) {
            from.flush_history(None)?;
            let mut log = source.log(None, usize::MAX)?;
            log.reverse();
            for version in log {
                let mut change = Change { label: history::label_of(&version.message), ..Change::default() };
                for (id, _) in source.before(&version.version)? {
                    match source.read_at(&version.version, &id)? {
                        Some(text) => change.puts.push((id, text)),
                        None if self.storage.stamp(&id)?.is_some() => change.deletes.push(id),
                        None => {}
                    }
                }
                if !change.puts.is_empty() || !change.deletes.is_empty() {
                    self.write(|| self.apply_change(&change))?;
                    replayed += 1;
                }
            }
        }
        let now = from.texts()?;
        let here = self.texts()?;
        let change = Change {
            puts: now
                .iter()
                .filter(|(id, text)| here.get(*id) != Some(*text))
                .map(|(i, t)| (i.clone(), t.clone()))
                .collect(),
            deletes: here.keys().filter(|id| !now.contains_key(*id)).cloned().collect(),
            label: format!("copy from {}", from.storage.location()),
        };
        if !change.puts.is_empty() || !change.deletes.is_empty() {
            self.write(|| self.apply_change(&change))?;
        }
        Ok(Copied { documents: now.len(), versions: replayed })
    }
}

impl Memory {
    /// Every document and its text, in id order.
    pub fn texts(&self) -> Result<BTreeMap<DocId, String>, MemoryError> {
        let mut docs = BTreeMap::new();
        for (id, _) in self.storage.list()?.docs.iter() {
            let text = self.read_existing(id)?;
            docs.insert(id.clone(), text);
        }
        Ok(docs)
    }
}
