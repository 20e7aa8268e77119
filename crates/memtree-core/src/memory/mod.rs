//! `Memory`: the engine every adapter (MCP tools, CLI) calls. Each
//! operation is an `impl Memory` block in a module of its own (`update`,
//! `edit`, `move_document`, `split`, `remember`, `lifecycle`, `versions`,
//! `read`, `search`, `health`, `index_sync`), over the shared steps of
//! `rewrite` and the rules of `tree_rules`.
//!
//! This module keeps what every operation shares: the struct, opening a
//! store, the locks, applying a checked change and restoring the store's
//! invariants. Writers are serialised twice: by a mutex inside this process
//! (rmcp runs requests concurrently) and by the store's exclusive lock
//! across processes.

use std::sync::{Arc, Mutex};

mod copy;
mod edit;
mod health;
mod import;
mod index_sync;
mod indexer;
mod lifecycle;
mod move_document;
mod outside;
mod read;
mod remember;
mod rewrite;
mod search;
mod settings;
mod split;
mod tree_cache;
mod tree_rules;
mod update;
mod versions;

pub use copy::Copied;
pub use edit::Edit;
pub use import::{Import, Imported};
pub use lifecycle::Lifecycle;
pub use remember::FactPlace;
pub(crate) use search::{PACK_CANDIDATES, check_pack_request, relative};
pub use settings::{Clock, MemorySettings, SplitPolicy};

use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::history::History;
use crate::index::{SearchIndex, TokenCounter};
use crate::storage::{Change, LockMode, Recovery, Storage, StorageError, StoreLock};
use crate::tree::{Finding, Tree};
use index_sync::CatchingUp;
use tree_cache::TreeCache;

/// How many times a write is planned before a run of conflicts is reported.
const WRITE_ATTEMPTS: u32 = 12;

/// A random wait that grows with the attempt (up to about 0.4 s), so
/// writers that collided do not collide again in step.
fn backoff(attempt: u32) -> std::time::Duration {
    use std::hash::BuildHasher as _;
    let jitter = std::collections::hash_map::RandomState::new().hash_one(attempt) % 1000;
    let ceiling_ms = 10u64 << attempt.min(5);
    std::time::Duration::from_micros(jitter * ceiling_ms + 1000)
}

/// The engine over one store: its documents, and the search index and
/// history beside them.
pub struct Memory {
    storage: Arc<dyn Storage>,
    index: Option<Arc<dyn SearchIndex>>,
    /// This process's writes waiting to be indexed (with an index).
    indexer: Option<indexer::Indexer>,
    tokens: Option<Arc<dyn TokenCounter>>,
    history: Option<Arc<dyn History>>,
    settings: MemorySettings,
    writer: Mutex<()>,
    /// The documents the current write read on its earlier attempts: the
    /// base texts to merge with when another process committed first.
    earlier_reads: Mutex<Vec<(DocId, String)>>,
    cache: Mutex<TreeCache>,
    recovered: Option<Recovery>,
    /// How far the index is in catching up with the documents, while it is.
    catching_up: CatchingUp,
    outside: outside::Outside,
}

impl Memory {
    /// Opens a store: completes any interrupted change and creates `root`
    /// when it is missing.
    pub fn open(storage: Arc<dyn Storage>, settings: MemorySettings) -> Result<Memory, MemoryError> {
        let recovered = {
            let _lock = storage.lock(LockMode::Exclusive)?;
            storage.recover()?
        };
        if let Some(r) = &recovered {
            tracing::warn!(label = %r.label, replayed = r.replayed, "completed an interrupted change");
        }
        let memory = Memory {
            storage,
            index: None,
            indexer: None,
            tokens: None,
            history: None,
            settings,
            writer: Mutex::new(()),
            earlier_reads: Mutex::default(),
            cache: Mutex::default(),
            recovered,
            catching_up: CatchingUp::default(),
            outside: outside::Outside::default(),
        };
        memory.restore_invariants()?;
        Ok(memory)
    }

    /// Adds the search index and the token counter of memory packs. The
    /// index is brought up to date with the documents before first use by
    /// [`Memory::reconcile`].
    pub fn with_index(mut self, index: Arc<dyn SearchIndex>, tokens: Arc<dyn TokenCounter>) -> Memory {
        self.indexer = Some(indexer::Indexer::new(Arc::clone(&self.storage), Arc::clone(&index)));
        self.index = Some(index);
        self.tokens = Some(tokens);
        self
    }

    /// Records every change from now on in `history`.
    pub fn with_history(mut self, history: Arc<dyn History>) -> Memory {
        self.history = Some(history);
        self
    }

    /// Size in bytes from which a document should be split.
    pub fn split_threshold(&self) -> usize {
        self.settings.split_threshold
    }

    /// The store's commit mark (see [`Storage::commit_mark`]).
    pub fn commit_mark(&self) -> Result<Option<String>, MemoryError> {
        Ok(self.storage.commit_mark()?)
    }

    /// Whether the document exists.
    pub fn exists(&self, id: &DocId) -> Result<bool, MemoryError> {
        Ok(self.storage.stamp(id)?.is_some())
    }

    /// The whole tree as it is now on storage.
    pub fn tree(&self) -> Result<Arc<Tree>, MemoryError> {
        Ok(self.snapshot()?.0)
    }

    /// Applies a checked change: durably, then into history and the index.
    /// The caller holds the exclusive lock, so history records are in
    /// write order. A change is acknowledged once durable: a history or
    /// index failure is logged, and the next scan or reconciliation
    /// repairs it (history then records it as changed outside memtree).
    /// Returns why history is not recording, when it is not, for the
    /// answer to say so.
    pub(super) fn apply_change(&self, change: &Change) -> Result<Option<String>, MemoryError> {
        let Some(history) = &self.history else {
            self.storage.apply(change)?;
            self.index_change(change);
            return Ok(None);
        };
        let mut problem = None;
        let mut failed = |error: crate::history::HistoryError| {
            tracing::error!(%error, label = %change.label, "recording history failed");
            // A git lock another program held a moment longer than our
            // retries: the change is queued and committed later, not lost.
            if !matches!(error, crate::history::HistoryError::Busy(_)) {
                problem.get_or_insert(error.to_string());
            }
        };
        let record = history.prepare(change).map_err(&mut failed).ok();
        if let Err(error) = self.storage.apply(change) {
            if let Some(record) = record {
                history.abandon(record).unwrap_or_else(&mut failed);
            }
            return Err(error.into());
        }
        if let Some(record) = record {
            history.confirm(record).unwrap_or_else(&mut failed);
        }
        self.index_change(change);
        Ok(problem.or_else(|| history.problem()).map(|reason| {
            format!(
                "history is not being recorded ({reason}); the change is saved (`memtree validate` says more)"
            )
        }))
    }

    /// Whether `change` is in the store: each put document holds its text
    /// and each deleted one is gone.
    fn is_applied(&self, change: &Change) -> bool {
        change
            .puts
            .iter()
            .all(|(id, text)| self.storage.read(id).ok().flatten().as_deref() == Some(text.as_str()))
            && change.deletes.iter().all(|id| matches!(self.storage.stamp(id), Ok(None)))
    }

    pub(super) fn read_existing(&self, id: &DocId) -> Result<String, MemoryError> {
        match self.storage.read(id) {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(MemoryError::NotFound { id: id.clone() }),
            Err(crate::storage::StorageError::Unreadable { id, reason }) => {
                Err(MemoryError::Unreadable { id, reason: reason.to_string() })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Runs a write with the process's writer mutex and the store's
    /// exclusive lock held. On a store without a lock (a bucket), a change
    /// that another process committed first refuses ours
    /// ([`StorageError::Conflict`]): `op` then runs again on what is stored
    /// now, so a stale base is merged or refused exactly as after any other
    /// writer, and nothing is lost.
    pub(super) fn write<T>(&self, mut op: impl FnMut() -> Result<T, MemoryError>) -> Result<T, MemoryError> {
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut attempt = 0;
        let result = loop {
            let result = self.lock(LockMode::Exclusive).and_then(|_lock| match op() {
                Err(error) if !matches!(error, MemoryError::Storage(StorageError::Conflict)) => {
                    match self.storage.unchanged_since_lock()? {
                        true => Err(error),
                        false => Err(StorageError::Conflict.into()),
                    }
                }
                result => result,
            });
            match result {
                Err(MemoryError::Storage(StorageError::Conflict)) if attempt < WRITE_ATTEMPTS => {
                    attempt += 1;
                    tracing::debug!(attempt, "another process committed first; planning the write again");
                    std::thread::sleep(backoff(attempt));
                }
                result => break result,
            }
        };
        self.earlier_reads.lock().unwrap_or_else(|e| e.into_inner()).clear();
        result
    }

    /// Takes the store lock, first restoring what another process or
    /// program may have broken, so no one sees a half-applied tree.
    pub(super) fn lock(&self, mode: LockMode) -> Result<StoreLock, MemoryError> {
        self.restore_invariants()?;
        Ok(self.storage.lock(mode)?)
    }

    /// Completes a change that a crashed process left half-applied, and
    /// recreates `root` if something deleted it. Two stats when all is well.
    pub(super) fn restore_invariants(&self) -> Result<(), MemoryError> {
        let pending = self.storage.has_pending_change()?;
        let unsettled = match &self.history {
            Some(history) => history.has_unsettled()?,
            None => false,
        };
        if !pending && !unsettled && self.storage.stamp(&DocId::root())?.is_some() {
            return Ok(());
        }
        // A live writer holds the lock while its journal (or its prepared
        // history record) exists: waiting for the lock waits for it; a dead
        // one left the work to us.
        let _lock = self.storage.lock(LockMode::Exclusive)?;
        if let Some(r) = self.storage.recover()? {
            tracing::warn!(label = %r.label, replayed = r.replayed, "completed an interrupted change");
        }
        if let Some(history) = &self.history {
            history.settle(&|change| self.is_applied(change))?;
        }
        if self.storage.stamp(&DocId::root())?.is_none() {
            tracing::info!("creating root from the template");
            let created = self.apply_change(&Change {
                puts: vec![(DocId::root(), self.settings.root_template.clone())],
                deletes: vec![],
                label: "create root".to_owned(),
            });
            match created {
                // Another process created it first.
                Err(MemoryError::Storage(StorageError::Conflict))
                    if self.storage.stamp(&DocId::root())?.is_some() => {}
                created => drop(created?),
            }
        }
        Ok(())
    }

    pub(super) fn snapshot(&self) -> Result<(Arc<Tree>, Vec<Finding>), MemoryError> {
        let _lock = self.lock(LockMode::Shared)?;
        self.tree_unlocked()
    }

    /// The tree from every document's links, re-reading only the
    /// documents whose stamp changed. The caller holds a store lock.
    pub(super) fn tree_unlocked(&self) -> Result<(Arc<Tree>, Vec<Finding>), MemoryError> {
        let listing = self.storage.list()?;
        // File stamps come from the wall clock, never from a pinned one.
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        Ok(cache.view(listing, now_ns, |id| self.storage.read(id))?)
    }
}
