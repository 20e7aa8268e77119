//! Indexing a write beside the requests: a change is acknowledged once its
//! files are durable and its documents are queued in the index (a small
//! insert, no full-text work), and a thread of its own indexes them, so a
//! writer does not wait for the full-text index. The thread waits for
//! writes to pause before it indexes them: while it indexes, it holds the
//! index's write lock, which the next write needs to queue its documents;
//! the index lets go of it between two documents when a writer of another
//! process waits. Whatever reads the index, in this process or another,
//! first indexes what the queue holds ([`Indexer::settle`]), so a search
//! finds every write acknowledged before it; a crash leaves the queue, or
//! at worst a stale stamp, for the next reader or the next start's
//! reconciliation.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::doc_id::DocId;
use crate::doorbell::{Doorbell, Pause, Woken};
use crate::index::{Queued, SearchIndex};
use crate::storage::Storage;

/// How long writes must pause before the thread indexes them. Requests of
/// a burst come well under a millisecond apart; those of an agent that
/// reads the answer first, far more.
const QUIET: Duration = Duration::from_millis(10);

/// How long a burst of writes may keep the thread from indexing. A reader
/// indexes what is queued itself, so this bounds the work a search after a
/// burst finds left to do.
const LONGEST_WAIT: Duration = Duration::from_millis(200);

/// How many documents are read and indexed in one transaction, unless a
/// writer of another process waits (see `SearchIndex::replace`): 20–40 ms
/// of work at 10,000 documents, which a write of this process that comes
/// meanwhile waits for. Under a burst of writes, each transaction holds
/// up one write: in transactions of 8 documents, one write in six of a
/// burst waited 1–3 ms (p95 of `memtree-bench`'s rewrites 0.85 → 3–4 ms).
const INDEXED_TOGETHER: usize = 128;

/// The thread indexing what this process's writes queue.
pub(super) struct Indexer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    storage: Arc<dyn Storage>,
    index: Arc<dyn SearchIndex>,
    queued: Arc<Doorbell>,
    /// Held while queued documents are being indexed, so that a reader in
    /// this process waits for the work in hand rather than doing it twice.
    indexing: Mutex<()>,
}

impl Indexer {
    pub(super) fn new(storage: Arc<dyn Storage>, index: Arc<dyn SearchIndex>) -> Indexer {
        let shared =
            Arc::new(Shared { storage, index, queued: Arc::new(Doorbell::new()), indexing: Mutex::new(()) });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("memtree-index".into())
            .spawn(move || worker.run())
            .inspect_err(|error| tracing::warn!(%error, "no indexing thread; writes index as they go"))
            .ok();
        Indexer { shared, thread }
    }

    /// Queues documents just written, to be indexed. When the queue cannot
    /// be written (a read-only index), they are indexed here and now.
    pub(super) fn push(&self, changed: &[Queued]) {
        if let Err(error) = self.shared.index.enqueue(changed) {
            tracing::debug!(%error, "cannot queue for the index; indexing at once");
            let ids: Vec<DocId> = changed.iter().map(|q| q.id.clone()).collect();
            self.shared.index_now(&ids);
            return;
        }
        match self.thread {
            Some(_) => self.shared.queued.ring(),
            None => self.settle(),
        }
    }

    /// Indexes what the queue holds, in the caller's thread, after the
    /// work the thread has in hand: the index then holds every write
    /// acknowledged so far, by this process or another.
    pub(super) fn settle(&self) {
        self.shared.settle();
    }
}

impl Drop for Indexer {
    /// Indexes what is left before the process goes on without it (a
    /// command that wrote and exits).
    fn drop(&mut self) {
        self.shared.queued.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.shared.settle();
    }
}

impl Shared {
    fn run(&self) {
        // Back to back, a write waited for the index connection while this
        // thread indexed the one before: 16% of an update's time, 28% of
        // one that creates a document (requests to two servers taken in
        // turn).
        let pause = Pause { quiet: QUIET, longest: Some(LONGEST_WAIT), idle: None };
        while self.queued.wait_for_pause(pause) == Woken::Paused {
            self.settle();
        }
    }

    fn settle(&self) {
        let _indexing = self.indexing.lock().unwrap_or_else(|e| e.into_inner());
        // Nothing queued, as a reader mostly finds: no turn to wait for.
        if matches!(self.index.queued(), Ok(None)) {
            return;
        }
        // Without the turn (its lock file cannot be made), processes may
        // index the same documents at once: wasted, not wrong.
        let _turn = self
            .index
            .indexing_turn()
            .inspect_err(|error| tracing::warn!(%error, "indexing without waiting for other processes"))
            .ok();
        let (through, mut ids) = match self.index.queued() {
            Ok(Some(queued)) => queued,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "cannot read the index queue");
                return;
            }
        };
        ids.sort_unstable();
        ids.dedup();
        // Indexed from the files as they are now: a write queued twice
        // meanwhile is indexed once, at its latest text.
        if self.index_now(&ids) {
            self.index.dequeue(through).unwrap_or_else(|error| {
                tracing::warn!(%error, "cannot clear the index queue; its documents are indexed again");
            });
        }
    }

    /// Indexes `ids`, [`INDEXED_TOGETHER`] at a time.
    fn index_now(&self, ids: &[DocId]) -> bool {
        ids.chunks(INDEXED_TOGETHER).all(|chunk| {
            super::index_sync::refresh(&*self.storage, &*self.index, chunk)
                .inspect_err(|error| {
                    tracing::error!(%error, "index update failed; the next reconciliation repairs it");
                })
                .is_ok()
        })
    }
}
