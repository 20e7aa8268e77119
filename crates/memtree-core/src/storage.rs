//! The `Storage` trait: everything the engine knows about where documents live.
//!
//! A backend stores whole documents by id and applies a [`Change`] (several
//! puts and deletes) atomically across a crash. It also provides the
//! cross-process lock that serialises writers. The engine does no I/O except
//! through this trait, so a local folder, an in-memory map (tests) and,
//! later, an S3 bucket are interchangeable.

use std::fmt;
use std::sync::Arc;

use crate::doc_id::DocId;

/// Cheap metadata that changes whenever a document's bytes may have changed.
/// Compared for equality only; a backend fills it from whatever it has
/// (size, modification time, inode; or an ETag hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    pub len: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub modified_ns: u64,
    /// Anything else that changes with the content (inode, ctime, ETag hash).
    pub tag: u64,
}

/// Every document the backend holds, and the files it could not take as one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// In id order. Shared: a backend that knows nothing changed hands out
    /// the listing it made last, and a reader may tell it is the same one
    /// (`Arc::ptr_eq`) without comparing every stamp.
    pub docs: Arc<[(DocId, Stamp)]>,
    /// Paths the backend saw but left out of the store, and why.
    pub ignored: Vec<(String, Ignored)>,
}

/// Why a path in the store's folder is not part of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ignored {
    /// A `.md` file whose name is not a valid id.
    NotAnId,
    /// A symbolic link to a folder: what is under it is outside the store.
    LinkedFolder,
}

/// Why a document that exists cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    InvalidUtf8,
    /// Larger than the document size limit (written by another program).
    TooLarge {
        len: u64,
        limit: u64,
    },
    /// A symbolic link, which memtree does not follow: it could point
    /// anywhere outside the store.
    Symlink,
    /// A FIFO, socket or device, which could block or never end.
    NotAFile,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreadable::InvalidUtf8 => f.write_str("not valid UTF-8"),
            Unreadable::TooLarge { len, limit } => write!(
                f,
                "{len} bytes, over the document size limit of {limit} (--max-document-bytes); \
                 split the file outside memtree or raise the limit"
            ),
            Unreadable::Symlink => {
                f.write_str("a symbolic link; memtree reads only regular files inside the store")
            }
            Unreadable::NotAFile => f.write_str("not a regular file (a FIFO, socket or device)"),
        }
    }
}

/// A set of document writes applied all together or not at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    pub puts: Vec<(DocId, String)>,
    /// Deleted documents are kept recoverable by the backend (trash or history).
    pub deletes: Vec<DocId>,
    /// One line saying what the change is, for the journal and the trash.
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Readers of several documents that need one consistent state.
    Shared,
    /// Writers; excludes every other lock holder in every process.
    Exclusive,
}

/// A held store lock; released on drop.
pub struct StoreLock(#[allow(dead_code)] Box<dyn Send>);

impl StoreLock {
    pub fn new(guard: impl Send + 'static) -> StoreLock {
        StoreLock(Box::new(guard))
    }
}

impl fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StoreLock")
    }
}

/// What recovery found of an interrupted change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub label: String,
    /// Operations replayed to bring the store to the change's after-state.
    pub replayed: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{op} {path}: {error}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        error: std::io::Error,
    },
    #[error("document {id}: {reason}")]
    Unreadable { id: DocId, reason: Unreadable },
    #[error(
        "journal {path} is damaged ({reason}), so memtree cannot tell which change it held; \
         move it aside (the documents stay as that change left them), then run `memtree validate`"
    )]
    BadJournal { path: String, reason: String },
    /// Another process committed a change since this one read the store:
    /// a backend without a store lock (a bucket) refuses the change, and
    /// the engine plans it again on what is stored now.
    /// Surfaces only once the engine's retries are spent.
    #[error("writers in other processes kept committing first; the change is not saved, try again")]
    Conflict,
}

/// A place that holds one tree of documents.
pub trait Storage: Send + Sync {
    /// The document's text, or `None` when it does not exist.
    fn read(&self, id: &DocId) -> Result<Option<String>, StorageError>;

    /// The document's stamp, or `None` when it does not exist.
    fn stamp(&self, id: &DocId) -> Result<Option<Stamp>, StorageError>;

    /// An existing document whose id equals `id` ignoring ASCII case.
    fn find_folded(&self, id: &DocId) -> Result<Option<DocId>, StorageError>;

    /// Every document, in id order.
    fn list(&self) -> Result<Listing, StorageError>;

    /// A file watcher reports, through [`Storage::changed_on_disk`], every
    /// change made to the store's files from now on (`false`: no longer):
    /// a listing may then keep what it read of a folder nothing changed.
    fn watched(&self, _on: bool) {}

    /// Paths of the store's files or folders a watcher saw change; `None`
    /// when it lost track of some (anything may have changed). Answers
    /// whether a change may be another program's (not one this storage
    /// made itself): by default, always.
    fn changed_on_disk(&self, _paths: Option<&[std::path::PathBuf]>) -> bool {
        true
    }

    /// Applies `change` atomically: after a crash at any instant the store
    /// holds either none or all of it (once [`Storage::recover`] has run).
    /// The caller holds an exclusive lock. A backend whose lock excludes no
    /// one returns [`StorageError::Conflict`] when another process
    /// committed since the lock was taken, and stores nothing.
    fn apply(&self, change: &Change) -> Result<(), StorageError>;

    /// Takes the store lock, waiting for it. An exclusive lock on a backend
    /// with no lock (a bucket) marks where the writer's reads start.
    fn lock(&self, mode: LockMode) -> Result<StoreLock, StorageError>;

    /// Whether an interrupted change is waiting for recovery. Cheap.
    fn has_pending_change(&self) -> Result<bool, StorageError>;

    /// Completes an interrupted change. The caller holds an exclusive lock.
    fn recover(&self) -> Result<Option<Recovery>, StorageError>;

    /// Where the store is, for people (`status`).
    fn location(&self) -> String;

    /// Number of documents kept in the trash.
    fn trash_len(&self) -> Result<usize, StorageError>;

    /// Whether nothing has committed since the exclusive lock held now was
    /// taken. A backend whose lock excludes no one may have served that
    /// lock's reads from two states (a change being rolled forward), so a
    /// write they made look invalid is planned again rather than refused.
    fn unchanged_since_lock(&self) -> Result<bool, StorageError> {
        Ok(true)
    }

    /// A mark that changes whenever a change commits, cheap to ask for,
    /// so that processes elsewhere (other machines on one bucket) notice
    /// their index is behind. `None`: the backend has none (a folder is
    /// watched instead).
    fn commit_mark(&self) -> Result<Option<String>, StorageError> {
        Ok(None)
    }
}
