//! File primitives: write to a temporary file and rename it into place (at
//! no instant can a reader see a partly written file), and the folders to
//! fsync for what was renamed, made or removed to be durable.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memtree_core::StorageError;

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

pub(crate) fn io_error<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StorageError + 'a {
    move |error| StorageError::Io { op, path: path.display().to_string(), error }
}

/// Writes `bytes` to a new file in `temp_dir` (on the documents' file
/// system), unsynced: the first half of an atomic write, finished by
/// [`rename_into`]. A journal record covers it until its checkpoint.
pub(crate) fn write_temp(temp_dir: &Path, bytes: &[u8]) -> Result<PathBuf, StorageError> {
    loop {
        let temp =
            temp_dir.join(format!("{}-{}", std::process::id(), TEMP_SEQ.fetch_add(1, Ordering::Relaxed)));
        // A name taken: a dead process's file, whose id this one was given.
        let mut file = match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            file => file.map_err(io_error("create", &temp))?,
        };
        file.write_all(bytes).map_err(io_error("write", &temp))?;
        return Ok(temp);
    }
}

/// Renames `temp` to `path`, making its folders, each noted in `changed`.
pub(crate) fn rename_into(
    temp: &Path,
    path: &Path,
    changed: &mut ChangedFolders,
) -> Result<(), StorageError> {
    let parent = path.parent().expect("document paths have a parent");
    create_dirs(parent, changed)?;
    fs::rename(temp, path).map_err(io_error("rename", path))?;
    changed.add(parent);
    Ok(())
}

/// The folders whose entries a change added, renamed or removed: each is
/// fsync'd once when the change is done, however many of its entries
/// changed, rather than once per entry.
#[derive(Debug, Default)]
pub(crate) struct ChangedFolders(BTreeSet<PathBuf>);

impl ChangedFolders {
    pub fn add(&mut self, dir: &Path) {
        if !self.0.contains(dir) {
            self.0.insert(dir.to_path_buf());
        }
    }

    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        self.0.iter().map(PathBuf::as_path)
    }

    /// Fsyncs every folder; one removed since needs none (its parent,
    /// which lists the removal, is among them).
    pub fn sync(self) -> Result<(), StorageError> {
        for dir in &self.0 {
            match File::open(dir) {
                Ok(d) => d.sync_all().map_err(io_error("fsync", dir))?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("open", dir)(e)),
            }
        }
        Ok(())
    }
}

/// Creates `dir` and its missing parents, noting each parent whose entry
/// list changed in `changed`.
pub(crate) fn create_dirs(dir: &Path, changed: &mut ChangedFolders) -> Result<(), StorageError> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing: Vec<PathBuf> = Vec::new();
    let mut cursor = Some(dir);
    while let Some(d) = cursor.filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        missing.push(d.to_path_buf());
        cursor = d.parent();
    }
    for d in missing.iter().rev() {
        match fs::create_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_error("mkdir", d)(e)),
        }
        if let Some(parent) = d.parent() {
            changed.add(parent);
        }
    }
    Ok(())
}

/// Moves `path`, a piece of memtree's own state found damaged (a file
/// where a folder belongs, a folder where a file does, a file that is no
/// database), to `<name>.damaged` beside it, replacing an older one: a new
/// one can be made, and the old is kept for a look.
pub fn set_aside(path: &Path) -> io::Result<PathBuf> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".damaged");
    let aside = PathBuf::from(aside);
    let _ = fs::remove_dir_all(&aside).or_else(|_| fs::remove_file(&aside));
    fs::rename(path, &aside)?;
    tracing::warn!(path = %path.display(), aside = %aside.display(), "damaged state set aside");
    Ok(aside)
}

/// Makes sure `dir`, a folder of memtree's own state, is not something
/// else: a file in its place is set aside (the folder is made by its user).
pub fn own_folder(dir: &Path) -> io::Result<()> {
    if fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
        set_aside(dir)?;
    }
    Ok(())
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_error("fsync", dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_make_their_folders_and_leave_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("tmp");
        fs::create_dir(&temp).unwrap();
        let target = dir.path().join("a/b/doc.md");
        let mut changed = ChangedFolders::default();
        for text in [b"one", b"two"] {
            rename_into(&write_temp(&temp, text).unwrap(), &target, &mut changed).unwrap();
        }
        assert_eq!(fs::read(&target).unwrap(), b"two");
        assert_eq!(fs::read_dir(&temp).unwrap().count(), 0);
        let folders: Vec<&Path> = changed.iter().collect();
        assert_eq!(folders, [dir.path(), &dir.path().join("a"), &dir.path().join("a/b")]);
        changed.sync().unwrap();
    }

    #[test]
    fn a_temp_name_left_by_a_dead_process_with_this_id_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let next = TEMP_SEQ.load(Ordering::Relaxed);
        for seq in next..next + 8 {
            fs::write(dir.path().join(format!("{}-{seq}", std::process::id())), "theirs").unwrap();
        }
        let temp = write_temp(dir.path(), b"ours").unwrap();
        assert_eq!(fs::read(&temp).unwrap(), b"ours");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 9);
    }
}
