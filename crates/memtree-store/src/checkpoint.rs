//! Makes the documents of an applied journal record durable, then lets the
//! record go (see [`crate::journal`]): the syncs a change did not wait for,
//! made once for every change since the last checkpoint.

use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memtree_core::{DocId, StorageError};

use crate::atomic_file::{ChangedFolders, io_error};
use crate::journal::{Head, JournalOp, TrashBatch};
use crate::journal_slots::JournalSlots;
use crate::spares::Spares;

/// Where a store keeps its documents and its trash.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    pub root: PathBuf,
    pub trash: PathBuf,
    /// Told when a sync made this process's swaps durable.
    pub spares: Arc<Spares>,
}

impl Places {
    pub fn doc(&self, id: &DocId) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(id.segments());
        path.set_extension("md");
        path
    }

    pub fn trashed(&self, batch: &TrashBatch, id: &DocId) -> PathBuf {
        let mut path = self.trash.join(batch.as_str());
        path.extend(id.segments());
        path.set_extension("md");
        path
    }

    /// Syncs each file `ops` wrote or moved, then every folder from each
    /// one's up to the store's (or the trash's) own, which holds any folder
    /// a change made or removed on the way.
    pub fn sync<'o>(&self, ops: impl IntoIterator<Item = &'o JournalOp>) -> Result<(), StorageError> {
        let mut folders = ChangedFolders::default();
        for op in ops {
            let doc = self.doc(op.id());
            match op {
                JournalOp::Put { .. } => sync_data(&doc)?,
                JournalOp::Trash { batch, id, .. } => {
                    let trashed = self.trashed(batch, id);
                    sync_data(&trashed)?;
                    add_folders(&mut folders, &trashed, &self.trash);
                }
            }
            add_folders(&mut folders, &doc, &self.root);
        }
        folders.sync()
    }
}

/// Syncs the documents of the journal's newest applied record, if there is
/// one, and clears the journal. The caller holds the store's exclusive
/// lock, so no record is written meanwhile. Answers whether there was one.
pub(crate) fn settle(journals: &JournalSlots, places: &Places) -> Result<bool, StorageError> {
    let heads = journals.heads()?;
    if heads.contains(&Head::Pending)
        || !heads.iter().any(|h| matches!(h, Head::Applied { .. } | Head::OldDone))
    {
        return Ok(false);
    }
    let latest = journals.latest_applied(&heads)?;
    if let Some((_, record)) = &latest {
        places.sync(&record.ops)?;
        // A record carries every change not yet synced (at least its last
        // put of each document), so it held each swap this process made.
        places.spares.synced();
    }
    journals.clear(latest.map(|(slot, _)| slot))?;
    Ok(true)
}

/// The store's exclusive lock, if it can be had within `patience`: a
/// checkpoint left undone is done by the holder's next one.
pub(crate) fn lock_within(lock_path: &Path, patience: Duration) -> Option<File> {
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path)
        .or_else(|_| File::open(lock_path))
        .ok()?;
    let deadline = Instant::now() + patience;
    loop {
        match lock.try_lock() {
            Ok(()) => return Some(lock),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => return None,
            Err(TryLockError::Error(error)) => {
                tracing::warn!(%error, "cannot lock the store for a checkpoint");
                return None;
            }
        }
    }
}

fn sync_data(path: &Path) -> Result<(), StorageError> {
    match File::open(path) {
        Ok(file) => file.sync_data().map_err(io_error("fsync", path)),
        // Moved or deleted by someone since: nothing of ours to keep.
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::IsADirectory) => Ok(()),
        Err(e) => Err(io_error("open", path)(e)),
    }
}

fn add_folders(folders: &mut ChangedFolders, file: &Path, top: &Path) {
    for dir in file.ancestors().skip(1) {
        folders.add(dir);
        if dir == top || !dir.starts_with(top) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folders_synced_run_from_each_file_up_to_its_top() {
        let places =
            Places { root: "/s".into(), trash: "/s/.memtree/trash".into(), spares: Default::default() };
        let mut folders = ChangedFolders::default();
        add_folders(&mut folders, &places.doc(&DocId::parse("a/b/c").unwrap()), &places.root);
        let batch = TrashBatch::new(1, 2, 3);
        add_folders(&mut folders, &places.trashed(&batch, &DocId::parse("x").unwrap()), &places.trash);
        let listed: Vec<String> = folders.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            listed,
            ["/s", "/s/.memtree/trash", "/s/.memtree/trash/0000000000001-2-3", "/s/a", "/s/a/b"]
        );
    }
}
