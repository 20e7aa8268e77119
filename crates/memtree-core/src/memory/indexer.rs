//! Indexing a write beside the requests: a change is acknowledged once its
//! files are durable, and the documents it touched are indexed by a thread
//! of their own, so a writer does not wait for the index (derived state,
//! rebuilt from the files at any time). Several writes waiting are indexed
//! in one transaction. Anything in this process that reads the index first
//! indexes what is still waiting ([`Indexer::settle`]), so a search after a
//! write finds it; a crash before the thread got to a write leaves a stale
//! stamp, which the next start's reconciliation repairs.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::doc_id::DocId;
use crate::index::SearchIndex;
use crate::storage::Storage;

/// The documents written and not indexed yet, and the thread indexing them.
pub(super) struct Indexer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    storage: Arc<dyn Storage>,
    index: Arc<dyn SearchIndex>,
    waiting: Mutex<Waiting>,
    wake: Condvar,
    /// Held while documents taken from `waiting` are being indexed, so that
    /// a reader that finds nothing waiting still waits for them.
    indexing: Mutex<()>,
}

#[derive(Default)]
struct Waiting {
    ids: Vec<DocId>,
    closed: bool,
}

impl Indexer {
    pub(super) fn new(storage: Arc<dyn Storage>, index: Arc<dyn SearchIndex>) -> Indexer {
        let shared = Arc::new(Shared {
            storage,
            index,
            waiting: Mutex::default(),
            wake: Condvar::new(),
            indexing: Mutex::new(()),
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("memtree-index".into())
            .spawn(move || worker.run())
            .inspect_err(|error| tracing::warn!(%error, "no indexing thread; writes index as they go"))
            .ok();
        Indexer { shared, thread }
    }

    /// Queues `ids`, written by this process, to be indexed.
    pub(super) fn push(&self, ids: impl IntoIterator<Item = DocId>) {
        let mut waiting = self.shared.lock_waiting();
        waiting.ids.extend(ids);
        drop(waiting);
        if self.thread.is_some() {
            self.shared.wake.notify_one();
        } else {
            self.settle();
        }
    }

    /// Indexes what is waiting, in the caller's thread, after the work the
    /// thread has in hand: the index then holds every write acknowledged.
    pub(super) fn settle(&self) {
        self.shared.settle();
    }
}

impl Drop for Indexer {
    /// Indexes what is left before the process goes on without it (a
    /// command that wrote and exits).
    fn drop(&mut self) {
        self.shared.lock_waiting().closed = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.shared.settle();
    }
}

impl Shared {
    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn run(&self) {
        loop {
            let waiting = self.lock_waiting();
            let waiting = self
                .wake
                .wait_while(waiting, |w| w.ids.is_empty() && !w.closed)
                .unwrap_or_else(|e| e.into_inner());
            if waiting.closed {
                return;
            }
            drop(waiting);
            self.settle();
        }
    }

    fn settle(&self) {
        let _indexing = self.indexing.lock().unwrap_or_else(|e| e.into_inner());
        let mut ids = std::mem::take(&mut self.lock_waiting().ids);
        if ids.is_empty() {
            return;
        }
        ids.sort_unstable();
        ids.dedup();
        if let Err(error) = super::index_sync::refresh(&*self.storage, &*self.index, &ids) {
            tracing::error!(%error, "index update failed; the next reconciliation repairs it");
        }
    }
}
