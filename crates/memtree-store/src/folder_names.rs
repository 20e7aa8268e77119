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
use std::hash::{DefaultHasher, Hasher as _};
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
    names: Names,
}

/// A folder's entry names, as the hashes of their names in lower case
/// (ASCII), in order: 8 bytes a name, where the names themselves took 48
/// and more (4.7 MiB for a folder of 100,000 documents, kept for the
/// server's life). Of names equal ignoring case, the hash is held once. A
/// hash found is checked, and the name it stands for found, in the folder
/// itself: only a name written in another case than one stored gets there.
#[derive(Debug, Default)]
struct Names(Vec<u64>);

/// The hash of `name` with ASCII letters folded to lower case.
fn folded_hash(name: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(name.to_ascii_lowercase().as_bytes());
    hasher.finish()
}

impl Names {
    /// The names whose hashes are `hashes`, in any order.
    fn new(mut hashes: Vec<u64>) -> Names {
        hashes.sort_unstable();
        hashes.dedup();
        Names(hashes)
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search(&folded_hash(name))
    }

    /// Whether a name equal to `name` ignoring case may be held.
    fn may_hold(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }

    /// Adds `name`, unless one equal to it ignoring case is held.
    fn insert(&mut self, name: &str) {
        if let Err(at) = self.position(name) {
            self.0.insert(at, folded_hash(name));
        }
    }

    /// Removes the name equal to `name` ignoring case.
    fn remove(&mut self, name: &str) {
        if let Ok(at) = self.position(name) {
            self.0.remove(at);
        }
    }
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
            let mut names = Vec::new();
            for entry in fs::read_dir(dir).map_err(io_error("list", dir))? {
                let name = entry.map_err(io_error("list", dir))?.file_name();
                names.extend(name.to_str().map(folded_hash));
            }
            folders.insert(dir.to_path_buf(), Folder { stamp, generation, names: Names::new(names) });
        }
        if dir.join(wanted).exists() {
            return Ok(Some(wanted.to_owned()));
        }
        if !folders[dir].names.may_hold(wanted) {
            return Ok(None);
        }
        drop(folders);
        for entry in fs::read_dir(dir).map_err(io_error("list", dir))? {
            let name = entry.map_err(io_error("list", dir))?.file_name();
            if let Some(name) = name.to_str().filter(|name| name.eq_ignore_ascii_case(wanted)) {
                return Ok(Some(name.to_owned()));
            }
        }
        Ok(None)
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
            if edit.added {
                folder.names.insert(&edit.name);
            } else {
                folder.names.remove(&edit.name);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_held_once_ignoring_case() {
        let mut names = Names::new(["b.md", "Alpha.md", "c", "ALPHA.md"].map(folded_hash).to_vec());
        assert_eq!(names.0.len(), 3, "one hash for the names equal ignoring case");
        assert!(names.may_hold("alpha.MD") && names.may_hold("B.md") && names.may_hold("C"));
        assert!(!names.may_hold("d.md"));
        names.insert("D.md");
        names.insert("B.MD");
        assert_eq!(names.0.len(), 4, "a name equal to one held ignoring case is not held twice");
        assert!(names.may_hold("d.md"));
        names.remove("b.md");
        assert!(!names.may_hold("B.md"));
        assert!(names.0.is_sorted(), "{:?}", names.0);
    }

    #[test]
    fn a_folder_is_listed_once_and_follows_the_changes_applied() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("Note.md"), "").unwrap();
        let names = FolderNames::default();
        assert_eq!(names.find(dir.path(), 1, "note.md").unwrap().as_deref(), Some("Note.md"));
        fs::write(dir.path().join("other.md"), "").unwrap();
        let edit = Edit { dir: dir.path(), name: "other.md".into(), added: true };
        names.before_change(std::slice::from_ref(&edit), 1).unwrap();
        names.after_change(&[edit], 1, 2).unwrap();
        assert_eq!(names.find(dir.path(), 2, "OTHER.md").unwrap().as_deref(), Some("other.md"));
        fs::remove_file(dir.path().join("Note.md")).unwrap();
        let edit = Edit { dir: dir.path(), name: "Note.md".into(), added: false };
        names.after_change(&[edit], 2, 3).unwrap();
        assert_eq!(names.find(dir.path(), 3, "note.md").unwrap(), None);
    }
}
