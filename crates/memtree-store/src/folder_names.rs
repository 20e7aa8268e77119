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

use std::cmp::Ordering;
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
    names: Names,
}

/// A folder's entry names as stored, ordered ignoring ASCII case: one
/// string each, where a map from the lower-cased name held two (13 MB for
/// a folder of 100,000 documents, kept for the server's life).
#[derive(Debug, Default)]
struct Names(Vec<Box<str>>);

/// `a` against `b` with ASCII letters folded to lower case.
fn folded_cmp(a: &str, b: &str) -> Ordering {
    a.bytes().map(|c| c.to_ascii_lowercase()).cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

impl Names {
    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|held| folded_cmp(held, name))
    }

    /// The name equal to `name` ignoring case.
    fn get(&self, name: &str) -> Option<&str> {
        self.position(name).ok().map(|at| &*self.0[at])
    }

    /// Adds `name`, in place of one equal to it ignoring case.
    fn insert(&mut self, name: &str) {
        match self.position(name) {
            Ok(at) => self.0[at] = name.into(),
            Err(at) => self.0.insert(at, name.into()),
        }
    }

    /// Removes the name equal to `name` ignoring case.
    fn remove(&mut self, name: &str) {
        if let Ok(at) = self.position(name) {
            self.0.remove(at);
        }
    }
}

impl FromIterator<String> for Names {
    fn from_iter<I: IntoIterator<Item = String>>(names: I) -> Names {
        let mut names: Vec<Box<str>> = names.into_iter().map(String::into_boxed_str).collect();
        names.sort_by(|a, b| folded_cmp(a, b));
        // Of names equal ignoring case, one is kept.
        names.dedup_by(|a, b| folded_cmp(a, b).is_eq());
        Names(names)
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
                names.extend(name.into_string());
            }
            folders
                .insert(dir.to_path_buf(), Folder { stamp, generation, names: names.into_iter().collect() });
        }
        let folder = &folders[dir];
        if dir.join(wanted).exists() {
            return Ok(Some(wanted.to_owned()));
        }
        Ok(folder.names.get(wanted).map(str::to_owned))
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
    fn names_are_found_ignoring_case_and_kept_as_stored() {
        let mut names: Names = ["b.md", "Alpha.md", "c", "ALPHA.md"].map(String::from).into_iter().collect();
        assert_eq!(names.0.len(), 3, "one of the names equal ignoring case");
        assert!(names.get("alpha.MD").is_some_and(|n| n.eq_ignore_ascii_case("alpha.md")));
        assert_eq!(names.get("B.md"), Some("b.md"));
        assert_eq!(names.get("d.md"), None);
        names.insert("D.md");
        names.insert("B.MD");
        assert_eq!(names.get("d.md"), Some("D.md"));
        assert_eq!(names.get("b.md"), Some("B.MD"), "replaced by the name added");
        names.remove("b.md");
        assert_eq!(names.get("B.md"), None);
        assert!(names.0.is_sorted_by(|a, b| folded_cmp(a, b).is_lt()), "{:?}", names.0);
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
