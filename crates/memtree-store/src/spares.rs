//! Temporary files used again: a rewrite swaps its new file with the
//! document's (`RENAME_EXCHANGE`), and the old file, now a temporary one,
//! takes a later write's text instead of a new file being made.
//!
//! On ext4 without a journal (the machines memtree is measured on), making
//! a file skips every inode freed in the last minute, five while their
//! table block is dirty: under sustained writes each one made and each
//! replaced costs more the longer writing goes on (0.14–0.3 ms a file,
//! against 0.02 ms for a file written over). A swap frees nothing.
//!
//! An old file is written over only once a checkpoint has synced the swap
//! that made it temporary: until then, after a crash of the machine, the
//! document's entry on disk may still name it, and the record's replay
//! would take the new text for an edit made since. A file with another
//! name (a hard link), another owner or other permissions is not ours to
//! reuse: it is unlinked, as a rename over it would have done.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use memtree_core::StorageError;

use crate::atomic_file::{ChangedFolders, io_error, rename_into, write_temp};

/// Old files kept waiting for a checkpoint; past this, they are unlinked.
const KEPT: usize = 256;

#[derive(Debug, Default)]
pub(crate) struct Spares {
    state: Mutex<State>,
    /// The file system cannot swap two names (not Linux, or no
    /// `RENAME_EXCHANGE`): every write makes a file, as before.
    no_exchange: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    /// Swapped out before the last checkpoint: free to be written over.
    ready: Vec<PathBuf>,
    /// Swapped out since.
    waiting: Vec<PathBuf>,
    /// How this process's new files are made; known after its first.
    made: Option<Made>,
}

impl Spares {
    /// A temporary file in `temp_dir` holding `bytes`, unsynced: a ready
    /// spare written over, or a new file.
    pub fn write(&self, temp_dir: &Path, bytes: &[u8]) -> Result<PathBuf, StorageError> {
        let mut state = self.lock();
        while let Some(spare) = state.ready.pop() {
            match reusable(&spare, state.made) {
                Some(file) => {
                    file.write_all_at(bytes, 0).map_err(io_error("write", &spare))?;
                    file.set_len(bytes.len() as u64).map_err(io_error("truncate", &spare))?;
                    return Ok(spare);
                }
                // Gone (a recovery cleared the folder) or not ours.
                None => drop(fs::remove_file(&spare)),
            }
        }
        let temp = write_temp(temp_dir, bytes)?;
        if state.made.is_none() {
            state.made = fs::symlink_metadata(&temp).ok().map(|meta| Made::of(&meta));
        }
        Ok(temp)
    }

    /// Puts `temp` at `path`, making its folders, each noted in `changed`:
    /// swapped with the document there, whose file is kept as a spare, or
    /// renamed over it.
    pub fn put(&self, temp: &Path, path: &Path, changed: &mut ChangedFolders) -> Result<(), StorageError> {
        let made = self.lock().made;
        // A document of ours is there, so its folders are.
        if made.is_some_and(|made| made.at(path)) && self.exchange(temp, path)? {
            let mut state = self.lock();
            if state.waiting.len() < KEPT {
                state.waiting.push(temp.to_path_buf());
            } else {
                drop(fs::remove_file(temp));
            }
            changed.add(path.parent().expect("document paths have a parent"));
            return Ok(());
        }
        rename_into(temp, path, changed)
    }

    /// Every swap made so far is durable (a checkpoint synced the folders
    /// of every change this process applied): their old files may be
    /// written over.
    pub fn synced(&self) {
        let mut state = self.lock();
        let waiting = std::mem::take(&mut state.waiting);
        state.ready.extend(waiting);
    }

    /// The spares are gone (a recovery cleared the temporary folder).
    pub fn forget(&self) {
        let mut state = self.lock();
        state.ready.clear();
        state.waiting.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Swaps the names `temp` and `path`; `false` when they cannot be
    /// swapped and nothing changed.
    #[cfg(target_os = "linux")]
    fn exchange(&self, temp: &Path, path: &Path) -> Result<bool, StorageError> {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        use rustix::io::Errno;
        if self.no_exchange.load(Ordering::Relaxed) {
            return Ok(false);
        }
        match renameat_with(CWD, temp, CWD, path, RenameFlags::EXCHANGE) {
            Ok(()) => Ok(true),
            // The document went a moment ago: a rename puts it back.
            Err(Errno::NOENT) => Ok(false),
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                self.no_exchange.store(true, Ordering::Relaxed);
                Ok(false)
            }
            Err(errno) => Err(io_error("swap", path)(errno.into())),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn exchange(&self, _temp: &Path, _path: &Path) -> Result<bool, StorageError> {
        Ok(false)
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        let state = self.lock();
        for spare in state.ready.iter().chain(&state.waiting) {
            drop(fs::remove_file(spare));
        }
    }
}

/// Removes the temporary files in `temp_dir` of processes no longer
/// running (their names start with the process id): a process killed
/// leaves its spares. Where it cannot tell (no `/proc`), it leaves them.
pub(crate) fn sweep(temp_dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(temp_dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.split_once('-')).map(|(pid, _)| pid) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            drop(fs::remove_file(entry.path()));
        }
    }
}

/// How the files this process makes are: their owner and permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Made {
    uid: u32,
    mode: u32,
}

impl Made {
    fn of(meta: &fs::Metadata) -> Made {
        Made { uid: meta.uid(), mode: meta.mode() & 0o7777 }
    }

    /// Whether `meta` is of a regular file made like ours, with one name.
    fn like(self, meta: &fs::Metadata) -> bool {
        meta.file_type().is_file() && meta.nlink() == 1 && Made::of(meta) == self
    }

    fn at(self, path: &Path) -> bool {
        fs::symlink_metadata(path).is_ok_and(|meta| self.like(&meta))
    }
}

/// The spare at `path` opened for writing, if it is still one of ours.
fn reusable(path: &Path, made: Option<Made>) -> Option<File> {
    let (file, meta) = open_to_write_over(path)?;
    made?.like(&meta).then_some(file)
}

/// The file at `path` opened for writing, and its metadata, unless it is a
/// symbolic link or a FIFO (which an open would follow or block on): for a
/// caller that writes over a file it left to be used again, once it has
/// checked the file is still what it left.
pub fn open_to_write_over(path: &Path) -> Option<(File, fs::Metadata)> {
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let file = OpenOptions::new().write(true).custom_flags(flags).open(path).ok()?;
    let meta = file.metadata().ok()?;
    Some((file, meta))
}
