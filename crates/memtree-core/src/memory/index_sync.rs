//! Keeping the search index in step with the documents: after each change,
//! at a server's start (`reconcile`, which searches wait for a while), for
//! files changed by other programs, and rebuilt whole.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::Memory;
use crate::answer::Reconciliation;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::index::{IndexProgress, IndexStats, IndexedDoc, Queued, SearchIndex, Usage, content_hash};
use crate::storage::{Change, LockMode, Storage};

/// Documents read, indexed or restamped to one index transaction by a
/// reconciliation or a reindex: few transactions, and the index's writing
/// lock let go between them for the writers of other processes.
const DOCS_AT_A_TIME: usize = 500;

/// The state of an index catching up with the documents (a server's
/// reconciliation at start), which searches wait for.
#[derive(Debug, Default)]
pub(super) struct CatchingUp {
    progress: Mutex<Option<IndexProgress>>,
    done: std::sync::Condvar,
}

/// Ends a catch-up when dropped, however it ends.
struct CaughtUp<'a>(&'a CatchingUp);

impl Drop for CaughtUp<'_> {
    fn drop(&mut self) {
        *self.0.progress.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.0.done.notify_all();
    }
}

impl CatchingUp {
    fn expect(&self) {
        self.progress.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_default();
    }

    fn begin(&self) -> CaughtUp<'_> {
        self.expect();
        CaughtUp(self)
    }

    fn set(&self, progress: IndexProgress) {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = Some(progress);
    }

    /// Waits up to `wait` for the catch-up to end; the progress if it has not.
    fn wait(&self, wait: std::time::Duration) -> Option<IndexProgress> {
        let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        let (progress, _) =
            self.done.wait_timeout_while(progress, wait, |p| p.is_some()).unwrap_or_else(|e| e.into_inner());
        *progress
    }
}

impl Memory {
    /// Marks the index as about to catch up with the documents (a server
    /// reconciles in the background): searches wait for it, a while.
    pub fn expect_reconcile(&self) {
        self.catching_up.expect();
    }

    /// How far the index is, when it is still catching up with the
    /// documents after waiting a little for it to finish; `None` once it
    /// has.
    pub fn index_progress(&self) -> Option<IndexProgress> {
        self.catching_up.wait(self.settings.index_wait)
    }

    /// Brings the index up to date with the documents: stamps first, then
    /// content hashes only where a stamp changed.
    pub fn reconcile(&self) -> Result<Reconciliation, MemoryError> {
        let index = self.settled_index()?;
        let _catching_up = self.catching_up.begin();
        // What was reported changed before the listing below is in it.
        let seen = self.outside.seen();
        self.restore_invariants()?;
        // Before the listing: a document written since may be listed gone.
        let listed_after = index.queue_end()?;
        // The index's stamps are read and sorted on a thread of their own
        // while the folders are listed: at 100,000 documents, 50 ms of the
        // start. Either may see a write made meanwhile; the other then
        // differs, and the document is read again.
        let (listing, known) = std::thread::scope(|scope| {
            let known = scope.spawn(|| {
                // Both in id order (a listing is), the files and the index
                // are walked side by side: no table of 100,000 ids to build.
                index.stamps().map(|mut known| {
                    known.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                    known
                })
            });
            (self.storage.list(), known.join().expect("reading the stamps does not panic"))
        });
        let (listing, known) = (listing?, known?);
        let mut known = known.into_iter().peekable();
        let mut report = Reconciliation::default();
        let (mut changed, mut gone, mut restamped) = (Vec::new(), Vec::new(), Vec::new());
        for (id, stamp) in listing.docs.iter() {
            while let Some((before, ..)) = known.next_if(|k| k.0 < *id) {
                gone.push(before);
            }
            match known.next_if(|k| k.0 == *id) {
                Some((_, known_stamp, _)) if known_stamp == *stamp => report.unchanged += 1,
                Some((_, _, hash)) => match self.storage.read(id) {
                    Ok(Some(text)) if content_hash(text.as_bytes()) == hash => {
                        restamped.push((id.clone(), *stamp, hash));
                    }
                    _ => changed.push(id.clone()),
                },
                None => changed.push(id.clone()),
            }
        }
        gone.extend(known.map(|(id, ..)| id));
        // A copied store's every document, a transaction per chunk rather
        // than one each (10,000: 385 ms of a start).
        report.restamped = restamped.len();
        for chunk in restamped.chunks(DOCS_AT_A_TIME) {
            index.restamp(chunk)?;
        }
        report.indexed = changed.len();
        for (i, chunk) in changed.chunks(DOCS_AT_A_TIME).enumerate() {
            self.catching_up.set(IndexProgress { done: i * DOCS_AT_A_TIME, total: changed.len() });
            self.refresh(chunk)?;
        }
        report.removed = gone.len();
        index.replace(&[], &gone, listed_after)?;
        // Many changed documents leave many fresh passages and deleted
        // ones, which every term read then walks: compact after a bulk
        // change. (Single writes compact as they go.)
        if (report.indexed + report.removed) * 100 >= listing.docs.len().max(1) {
            index.optimize()?;
        }
        self.outside.reconciled(seen);
        Ok(report)
    }

    /// Rebuilds the index from every document; `progress(done, total)`.
    pub fn reindex(&self, progress: &mut dyn FnMut(usize, usize)) -> Result<usize, MemoryError> {
        let index = self.settled_index()?;
        self.restore_invariants()?;
        let listing = self.storage.list()?;
        index.clear()?;
        let total = listing.docs.len();
        let ids: Vec<DocId> = listing.docs.iter().map(|(id, _)| id.clone()).collect();
        for (i, chunk) in ids.chunks(DOCS_AT_A_TIME).enumerate() {
            self.refresh(chunk)?;
            progress((i * DOCS_AT_A_TIME + chunk.len()).min(total), total);
        }
        index.optimize()?;
        Ok(total)
    }

    /// Indexes documents again from their stored text where the file's
    /// stamp differs from the indexed one (the gone ones are removed): those
    /// a file watcher saw change, which include memtree's own writes.
    /// Returns the ids indexed again: those another program changed.
    pub fn reindex_changed(&self, ids: &[DocId]) -> Result<Vec<DocId>, MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        let changed = {
            // A write, in this process or another, queues its documents
            // for indexing before it lets go of the store's exclusive
            // lock: under the shared one, every write whose file the
            // watcher saw is queued, and its indexing is its writer's
            // (or any reader's), not a change made outside. Nothing is
            // indexed here while the lock holds writers up.
            let _lock = self.storage.lock(LockMode::Shared)?;
            let queued: HashSet<DocId> =
                index.queued()?.map(|(_, ids)| ids.into_iter().collect()).unwrap_or_default();
            let mut changed = Vec::new();
            for id in ids.iter().filter(|id| !queued.contains(*id)) {
                if self.storage.stamp(id)? != index.stamp(id)? {
                    changed.push(id.clone());
                }
            }
            changed
        };
        self.refresh(&changed)?;
        Ok(changed)
    }

    /// Index size and pack usage, for `status`.
    pub fn index_status(&self) -> Result<(IndexStats, Vec<Usage>), MemoryError> {
        let index = self.settled_index()?;
        Ok((index.stats()?, index.usage()?))
    }

    /// Indexes `ids` again from their stored text (removing the gone ones).
    /// Its callers settled the queue once already, before their own reads
    /// of the index: a chunk of a reindex does not read the queue again.
    pub(super) fn refresh(&self, ids: &[DocId]) -> Result<(), MemoryError> {
        refresh(&*self.storage, &**self.index.as_ref().ok_or(MemoryError::NoIndex)?, ids)
    }

    /// Indexes what this process's writes left queued. Everything that
    /// reads the index through the engine does this itself; code holding
    /// the index alone (tests, the embedding thread's caller) calls it.
    pub fn settle_index(&self) {
        if let Some(indexer) = &self.indexer {
            indexer.settle();
        }
    }

    /// Reads ahead what the first searches would otherwise wait for (see
    /// [`SearchIndex::read_ahead`]); a server does it once it has started.
    pub fn read_ahead(&self) -> Result<usize, MemoryError> {
        Ok(self.settled_index()?.read_ahead()?)
    }

    /// The index, once every write of this process is in it.
    pub(super) fn settled_index(&self) -> Result<&Arc<dyn SearchIndex>, MemoryError> {
        self.settle_index();
        self.index.as_ref().ok_or(MemoryError::NoIndex)
    }

    /// Queues the documents of a change just applied for indexing (see
    /// [`super::indexer`]). The documents are safe on disk already, so an
    /// index failure is logged, not returned: the next reconciliation
    /// repairs the index.
    pub(super) fn index_change(&self, change: &Change) {
        let Some(indexer) = &self.indexer else { return };
        let changed: Vec<Queued> = change
            .puts
            .iter()
            .map(|(id, text)| Queued::put(id.clone(), text))
            .chain(change.deletes.iter().cloned().map(Queued::deleted))
            .collect();
        indexer.push(&changed);
    }
}

/// Indexes `ids` again from their stored text (removing the gone ones).
pub(super) fn refresh(
    storage: &dyn Storage,
    index: &dyn SearchIndex,
    ids: &[DocId],
) -> Result<(), MemoryError> {
    // Taken before the files are read: a write queued after it may be
    // newer than the text read, and its links must stay.
    let read_after = index.queue_end()?;
    let mut docs = Vec::with_capacity(ids.len());
    let mut gone = Vec::new();
    for id in ids {
        let stamp = storage.stamp(id)?;
        match (stamp, storage.read(id)) {
            (Some(stamp), Ok(Some(text))) => docs.push(IndexedDoc::from_text(id.clone(), &text, stamp)),
            (_, Err(crate::storage::StorageError::Unreadable { .. })) => gone.push(id.clone()),
            (_, Err(e)) => return Err(e.into()),
            _ => gone.push(id.clone()),
        }
    }
    index.replace(&docs, &gone, read_after)?;
    Ok(())
}
