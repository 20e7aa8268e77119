//! `InMemoryStorage`: a store in a map, for tests of the engine and of
//! adapters. One process only: its lock orders nothing across processes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use memtree_core::{Change, DocId, Listing, LockMode, Recovery, Stamp, Storage, StorageError, StoreLock};

#[derive(Debug, Default)]
pub struct InMemoryStorage {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    docs: BTreeMap<DocId, (String, Stamp)>,
    trash: Vec<(DocId, String)>,
    clock: u64,
}

impl InMemoryStorage {
    pub fn new() -> InMemoryStorage {
        InMemoryStorage::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Storage for InMemoryStorage {
    fn read(&self, id: &DocId) -> Result<Option<String>, StorageError> {
        Ok(self.state().docs.get(id).map(|(text, _)| text.clone()))
    }

    fn stamp(&self, id: &DocId) -> Result<Option<Stamp>, StorageError> {
        Ok(self.state().docs.get(id).map(|(_, stamp)| *stamp))
    }

    fn find_folded(&self, id: &DocId) -> Result<Option<DocId>, StorageError> {
        let folded = id.folded();
        Ok(self.state().docs.keys().find(|k| *k != id && k.folded() == folded).cloned())
    }

    fn list(&self) -> Result<Listing, StorageError> {
        let docs = self.state().docs.iter().map(|(id, (_, stamp))| (id.clone(), *stamp)).collect();
        Ok(Listing { docs, ignored: vec![] })
    }

    fn apply(&self, change: &Change) -> Result<(), StorageError> {
        let mut state = self.state();
        for id in &change.deletes {
            if let Some((text, _)) = state.docs.remove(id) {
                state.trash.push((id.clone(), text));
            }
        }
        for (id, text) in &change.puts {
            state.clock += 1;
            // Stamps from a logical clock: never "recent", never equal.
            let stamp = Stamp { len: text.len() as u64, modified_ns: 0, tag: state.clock };
            state.docs.insert(id.clone(), (text.clone(), stamp));
        }
        Ok(())
    }

    fn lock(&self, _mode: LockMode) -> Result<StoreLock, StorageError> {
        Ok(StoreLock::new(()))
    }

    fn has_pending_change(&self) -> Result<bool, StorageError> {
        Ok(false)
    }

    fn recover(&self) -> Result<Option<Recovery>, StorageError> {
        Ok(None)
    }

    fn location(&self) -> String {
        "memory".to_owned()
    }

    fn trash_len(&self) -> Result<usize, StorageError> {
        Ok(self.state().trash.len())
    }
}
