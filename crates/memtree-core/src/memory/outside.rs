//! Whether the index's link table knows every change made to the files by
//! other programs. memtree's own writes put their links in the table as
//! they are acknowledged (see [`crate::index::Queued`]); an edit from
//! outside is in it only once indexed. A prune decides from the table which
//! files go to the trash, so it reads the table only while a watcher
//! reports outside changes, a reconciliation since the watch began has
//! indexed what changed before it, and every change reported since is
//! indexed: otherwise it reads the whole tree from the files.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::Memory;

#[derive(Debug, Default)]
pub(super) struct Outside {
    watched: AtomicBool,
    reconciled: AtomicBool,
    /// Outside changes reported so far, and how many of them are indexed.
    seen: AtomicU64,
    indexed: AtomicU64,
}

impl Outside {
    /// Whether the link table holds every change made so far.
    pub(super) fn links_current(&self) -> bool {
        self.watched.load(Ordering::Acquire)
            && self.reconciled.load(Ordering::Acquire)
            && self.indexed.load(Ordering::Acquire) >= self.seen.load(Ordering::Acquire)
    }

    /// A reconciliation that began when `seen` changes had been reported
    /// indexed them all.
    pub(super) fn reconciled(&self, seen: u64) {
        self.indexed.fetch_max(seen, Ordering::AcqRel);
        self.reconciled.store(true, Ordering::Release);
    }

    pub(super) fn seen(&self) -> u64 {
        self.seen.load(Ordering::Acquire)
    }
}

impl Memory {
    /// A file watcher reports every change made to the store's files from
    /// now on (`false`: no longer), through [`Memory::changed_on_disk`]; a
    /// reconciliation is then due before the index's links are trusted.
    pub fn watched(&self, on: bool) {
        self.storage.watched(on);
        self.outside.reconciled.store(false, Ordering::Release);
        self.outside.watched.store(on, Ordering::Release);
    }

    /// Paths of the store a watcher saw change, told as they come (`None`:
    /// it lost track of some). Answers the report's number: once the
    /// documents of every report up to it are indexed, say so with
    /// [`Memory::indexed_outside`].
    pub fn changed_on_disk(&self, paths: Option<&[PathBuf]>) -> u64 {
        if self.storage.changed_on_disk(paths) {
            self.outside.seen.fetch_add(1, Ordering::AcqRel) + 1
        } else {
            self.outside.seen()
        }
    }

    /// Every change reported up to report `through` is indexed.
    pub fn indexed_outside(&self, through: u64) {
        self.outside.indexed.fetch_max(through, Ordering::AcqRel);
    }
}
