//! A cache of the entry names of the store's folders, for the check that no
//! two ids differ only in letter case.
//!
//! That check needs every name of a folder, and listing a folder of 100,000
//! documents for each new document would make adding a link linear in the
//! store. A cached listing is trusted while two things are unchanged: the
//! folder's own stamp (an editor adding a file changes it) and the store's
//! write generation, which every memtree writer bumps under the exclusive
//! lock (a folder's mtime is too coarse to tell two quick writes apart).
//! memtree's own changes are applied to the cached names directly.
//!
//! The gap left: a program other than memtree that adds a file to a folder
//! within the same file-system clock tick as memtree's last write there is
//! not seen by this check until the folder changes again. Only the
//! case-collision check relies on this cache, and `validate` lists every
//! file, so such a collision is still reported.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memtree_core::{Stamp, StorageError};

use crate::atomic_file::io_error;
use crate::local::dir_stamp;

#[derive(Debug, Default)]
pub(crate) struct FolderNames {
    folders: Mutex<HashMap<PathBuf, Folder>>,
}

#[derive(Debug)]
struct Folder {
    stamp: Stamp,
    generation: u64,
    /// Lower-cased name → name as stored.
    names: HashMap<String, String>,
}

/// A name added to or removed from a folder by a change.
pub(crate) struct Edit<'a> {
    pub dir: &'a Path,
    pub name: String,
    pub added: bool,
}

impl FolderNames {
    fn folders(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Folder>> {
        self.folders.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stored name in `dir` equal to `wanted` ignoring ASCII case (the
    /// exact name when it exists), or `None`; `None` too when `dir` is missing.
    pub fn find(&self, dir: &Path, generation: u64, wanted: &str) -> Result<Option<String>, StorageError> {
        let Some(stamp) = dir_stamp(dir)? else {
            return Ok(None);
        };
        let mut folders = self.folders();
        let fresh = folders.get(dir).is_some_and(|f| f.stamp == stamp && f.generation == generation);
        if !fresh {
            let mut names = HashMap::new();
            for entry in fs::read_dir(dir).map_err(io_error("list", dir))? {
                let name = entry.map_err(io_error("list", dir))?.file_name();
                if let Some(name) = name.to_str() {
                    names.insert(name.to_ascii_lowercase(), name.to_owned());
                }
            }
            folders.insert(dir.to_path_buf(), Folder { stamp, generation, names });
        }
        let folder = &folders[dir];
        if dir.join(wanted).exists() {
            return Ok(Some(wanted.to_owned()));
        }
        Ok(folder.names.get(&wanted.to_ascii_lowercase()).cloned())
    }

    /// Before a change made at `generation`: forget folders something else
    /// changed since they were listed.
    pub fn before_change(&self, edits: &[Edit<'_>], generation: u64) -> Result<(), StorageError> {
        let mut folders = self.folders();
        for edit in edits {
            let still_valid = match folders.get(edit.dir) {
                Some(f) => f.generation == generation && Some(f.stamp) == dir_stamp(edit.dir)?,
                None => continue,
            };
            if !still_valid {
                folders.remove(edit.dir);
            }
        }
        Ok(())
    }

    /// After the change: apply its edits to the folders still known, which
    /// are now valid at `new_generation`.
    pub fn after_change(
        &self,
        edits: &[Edit<'_>],
        generation: u64,
        new_generation: u64,
    ) -> Result<(), StorageError> {
        let mut folders = self.folders();
        folders.retain(|_, f| f.generation == generation || f.generation == new_generation);
        for edit in edits {
            let Some(folder) = folders.get_mut(edit.dir) else { continue };
            let Some(stamp) = dir_stamp(edit.dir)? else {
                folders.remove(edit.dir);
                continue;
            };
            let folded = edit.name.to_ascii_lowercase();
            if edit.added {
                folder.names.insert(folded, edit.name.clone());
            } else {
                folder.names.remove(&folded);
            }
            folder.stamp = stamp;
            folder.generation = new_generation;
        }
        folders.retain(|_, f| f.generation == new_generation);
        Ok(())
    }

    pub fn clear(&self) {
        self.folders().clear();
    }
}
