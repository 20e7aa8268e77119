//! The record queue: `.memtree/history/<n>.json`, one file per change not
//! yet committed, and `.memtree/history.pending/<n>.json` for a change being
//! applied. A record is written under the store's exclusive lock, so names
//! grow in write order across processes; it is renamed into place whole, so
//! a reader never sees half of one.
//!
//! A write must not pay for the queue's length: when commits lag behind a
//! burst of writes, hundreds of records wait. So the newest name given is
//! kept in `.memtree/history.last`, and prepared records sit in a folder of
//! their own, which is empty unless a process died while writing.
//!
//! Nor for a file made and one freed per change: on ext4 making a file
//! costs more the more were freed in the last minute (0.1–0.7 ms under
//! sustained writes on this machine's disk, where writing over one costs
//! 0.02). So a committed or dropped record's file goes to
//! `.memtree/history.free/` and a later record is written over it there,
//! then renamed into place: a kill leaves either the old record in the
//! free folder or the whole new one prepared, never an old record under a
//! new name.

use std::fs;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use memtree_core::{Change, DocId};

/// A change waiting for its commit.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub label: String,
    pub puts: Vec<(DocId, String)>,
    pub deletes: Vec<DocId>,
    /// Unix time in seconds: the commit's time.
    pub time: i64,
}

pub struct Queue {
    /// Confirmed records.
    dir: PathBuf,
    /// Prepared records.
    pending: PathBuf,
    /// The newest name given.
    last: PathBuf,
    /// Files of records done with, to be written over.
    free: PathBuf,
    /// The names in `free` this process knows of, listed at first use (a
    /// command that only reads lists nothing).
    spare: OnceLock<Mutex<Vec<u128>>>,
}

/// Files kept in the free folder by a process: the records written
/// between two of the committer's rounds under sustained writes (up to
/// `git.rs`'s 5 s at 500–700 writes a second), so that the writes take the
/// files of the records committed before them.
const KEPT: usize = 4096;
/// A larger record's file is not kept, so the folder holds at most 64 MiB.
const KEPT_BYTES: u64 = 16 * 1024;

impl Queue {
    /// The queue in `meta`, the store's `.memtree/` folder.
    pub fn new(meta: &Path) -> Queue {
        Queue {
            dir: meta.join("history"),
            pending: meta.join("history.pending"),
            last: meta.join("history.last"),
            free: meta.join("history.free"),
            spare: OnceLock::new(),
        }
    }

    /// The free files' names, listed the first time they are asked for.
    fn spare(&self) -> MutexGuard<'_, Vec<u128>> {
        let spare = self.spare.get_or_init(|| {
            // Processes that shared the store may have left up to `KEPT`
            // each: one process's worth stays.
            let mut spare = named(&self.free).unwrap_or_default();
            for extra in spare.split_off(spare.len().min(KEPT)) {
                let _ = fs::remove_file(record_path(&self.free, extra));
            }
            Mutex::new(spare)
        });
        spare.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets aside what stands where the queue's folders and last name
    /// belong and is not what belongs there (a file for a folder, a folder
    /// for the name), so that queueing works again; the records stay there
    /// to be looked at.
    pub fn repair(&self) -> io::Result<()> {
        memtree_store::own_folder(&self.dir)?;
        memtree_store::own_folder(&self.pending)?;
        memtree_store::own_folder(&self.free)?;
        if self.last.is_dir() {
            memtree_store::set_aside(&self.last)?;
        }
        Ok(())
    }

    /// The confirmed records' names, oldest first.
    pub fn names(&self) -> io::Result<Vec<u128>> {
        named(&self.dir)
    }

    /// The names of records prepared and not confirmed.
    pub fn prepared(&self) -> io::Result<Vec<u128>> {
        named(&self.pending)
    }

    /// A name after every queued one, and after the clock's now (in
    /// nanoseconds) unless the clock stepped back. The caller holds the
    /// exclusive store lock.
    fn next_name(&self) -> io::Result<u128> {
        let last = match fs::read_to_string(&self.last) {
            Ok(text) => text.trim().parse().ok(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        // A missing or torn file (a crash while writing it): look.
        let last = match last {
            Some(last) => Some(last),
            None => self.names()?.into_iter().chain(self.prepared()?).max(),
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
        let name = last.map_or(0, |last| last + 1).max(now);
        // Overwritten in place at a fixed width, not truncated: ext4 flushes
        // a file truncated and written again at its close, which would cost
        // the write its own fsync's time once more.
        let file = fs::File::options().write(true).create(true).truncate(false).open(&self.last)?;
        std::os::unix::fs::FileExt::write_all_at(&file, format!("{name:039}").as_bytes(), 0)?;
        Ok(name)
    }

    /// Queues `change` as prepared. The caller holds the exclusive store
    /// lock.
    pub fn prepare(&self, change: &Change) -> io::Result<u128> {
        let name = self.next_name()?;
        let record = Record {
            label: change.label.clone(),
            puts: change.puts.clone(),
            deletes: change.deletes.clone(),
            time: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64,
        };
        let bytes = serde_json::to_vec(&record).map_err(io::Error::other)?;
        let path = self.prepared_path(name);
        if self.write_over_spare(&bytes, &path)? {
            return Ok(name);
        }
        // Written in place, not renamed into it: a record torn by a kill
        // is one whose change was not applied yet, and settling drops a
        // record it cannot read.
        let create = || fs::File::options().write(true).create_new(true).open(&path);
        let mut file = match create() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(&self.pending)?;
                create()?
            }
            other => other?,
        };
        io::Write::write_all(&mut file, &bytes)?;
        Ok(name)
    }

    /// Writes `bytes` over a free record's file and renames it to `to`;
    /// false when there is none to take. A file with a second name or
    /// another owner is never written over (it is removed).
    fn write_over_spare(&self, bytes: &[u8], to: &Path) -> io::Result<bool> {
        let mut spare = self.spare();
        while let Some(old) = spare.pop() {
            let from = record_path(&self.free, old);
            // Taken by another process, or not a file to write over.
            let Some((file, meta)) = memtree_store::open_to_write_over(&from) else { continue };
            let ours = fs::metadata(&self.free).is_ok_and(|free| free.uid() == meta.uid());
            if !meta.is_file() || meta.nlink() != 1 || !ours {
                drop(file);
                let _ = fs::remove_file(&from);
                continue;
            }
            file.write_all_at(bytes, 0)?;
            // Cut to the new length, never to zero: ext4 flushes a file
            // cut to zero and written again when it is closed.
            if meta.len() > bytes.len() as u64 {
                file.set_len(bytes.len() as u64)?;
            }
            drop(file);
            match fs::rename(&from, to) {
                Err(e) if e.kind() == io::ErrorKind::NotFound && !self.pending.exists() => {
                    fs::create_dir_all(&self.pending)?;
                    fs::rename(&from, to)?;
                }
                other => other?,
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// Keeps the file at `path`, a record done with, to be written over,
    /// or removes it when enough are kept.
    fn release(&self, path: &Path, name: u128) -> io::Result<()> {
        let mut spare = self.spare();
        let keep = spare.len() < KEPT && fs::symlink_metadata(path).is_ok_and(|m| m.len() <= KEPT_BYTES);
        if keep {
            let to = record_path(&self.free, name);
            let moved = match fs::rename(path, &to) {
                Err(e) if e.kind() == io::ErrorKind::NotFound && !self.free.exists() => {
                    fs::create_dir_all(&self.free).and_then(|()| fs::rename(path, &to))
                }
                other => other,
            };
            if moved.is_ok() {
                spare.push(name);
                return Ok(());
            }
        }
        match fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// A prepared record becomes one to commit.
    pub fn confirm(&self, name: u128) -> io::Result<()> {
        let rename = || fs::rename(self.prepared_path(name), self.path(name));
        match rename() {
            Err(e) if e.kind() == io::ErrorKind::NotFound && !self.dir.exists() => {
                fs::create_dir_all(&self.dir)?;
                rename()
            }
            other => other,
        }
    }

    /// Drops a prepared record.
    pub fn abandon(&self, name: u128) -> io::Result<()> {
        self.release(&self.prepared_path(name), name)
    }

    pub fn read(&self, name: u128) -> io::Result<Record> {
        Self::parse(&fs::read(self.path(name))?)
    }

    pub fn read_prepared(&self, name: u128) -> io::Result<Record> {
        Self::parse(&fs::read(self.prepared_path(name))?)
    }

    fn parse(bytes: &[u8]) -> io::Result<Record> {
        serde_json::from_slice(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// Done with a committed record.
    pub fn remove(&self, name: u128) -> io::Result<()> {
        self.release(&self.path(name), name)
    }

    pub(crate) fn path(&self, name: u128) -> PathBuf {
        record_path(&self.dir, name)
    }

    pub(crate) fn prepared_path(&self, name: u128) -> PathBuf {
        record_path(&self.pending, name)
    }
}

fn record_path(dir: &Path, name: u128) -> PathBuf {
    dir.join(format!("{name:039}.json"))
}

/// The names of the records in `dir`, oldest first.
fn named(dir: &Path) -> io::Result<Vec<u128>> {
    let mut names = Vec::new();
    match fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let name = entry?.file_name();
                if let Some(n) = name.to_str().and_then(|n| n.strip_suffix(".json")?.parse().ok()) {
                    names.push(n);
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    names.sort_unstable();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(label: &str) -> Change {
        Change { puts: vec![(DocId::root(), "# r\n".into())], deletes: vec![], label: label.into() }
    }

    #[test]
    fn names_follow_the_last_one_given_even_when_the_clock_is_behind() {
        let meta = tempfile::tempdir().unwrap();
        let queue = Queue::new(meta.path());
        let first = queue.prepare(&change("a")).unwrap();
        queue.confirm(first).unwrap();
        // As if another process's clock had run ahead, or ours stepped back.
        let ahead = first + 10u128.pow(15);
        fs::write(&queue.last, ahead.to_string()).unwrap();
        let second = queue.prepare(&change("b")).unwrap();
        assert_eq!(second, ahead + 1);
        assert_eq!(queue.names().unwrap(), [first], "a prepared record is not one to commit");
        assert_eq!(queue.prepared().unwrap(), [second]);
        queue.confirm(second).unwrap();
        assert_eq!(queue.names().unwrap(), [first, second]);
        assert!(queue.prepared().unwrap().is_empty());
    }

    fn inode(path: &Path) -> u64 {
        fs::metadata(path).unwrap().ino()
    }

    #[test]
    fn a_record_done_with_is_written_over_by_a_later_one() {
        let meta = tempfile::tempdir().unwrap();
        let queue = Queue::new(meta.path());
        let long = change(&"a long label ".repeat(40));
        let first = queue.prepare(&long).unwrap();
        queue.confirm(first).unwrap();
        let file = inode(&queue.path(first));
        queue.remove(first).unwrap();
        assert!(!queue.path(first).exists());
        // Shorter than the record it is written over: cut to its length.
        let second = queue.prepare(&change("b")).unwrap();
        assert_eq!(inode(&queue.prepared_path(second)), file, "the same file, written over");
        assert_eq!(queue.read_prepared(second).unwrap().label, "b");
        assert_eq!(named(&queue.free).unwrap(), [0u128; 0]);
        // A dropped record's file too, and a queue opened afresh knows it.
        queue.abandon(second).unwrap();
        let queue = Queue::new(meta.path());
        let third = queue.prepare(&change("c")).unwrap();
        assert_eq!(inode(&queue.prepared_path(third)), file);
        assert_eq!(queue.read_prepared(third).unwrap().label, "c");
    }

    #[test]
    fn a_file_with_a_second_name_or_a_large_one_is_not_written_over() {
        let meta = tempfile::tempdir().unwrap();
        let queue = Queue::new(meta.path());
        let first = queue.prepare(&change("a")).unwrap();
        queue.abandon(first).unwrap();
        let linked = meta.path().join("elsewhere");
        fs::hard_link(record_path(&queue.free, first), &linked).unwrap();
        let before = fs::read(&linked).unwrap();
        let second = queue.prepare(&change("b")).unwrap();
        assert_ne!(inode(&queue.prepared_path(second)), inode(&linked));
        assert_eq!(fs::read(&linked).unwrap(), before, "the other name's content is untouched");
        assert!(!record_path(&queue.free, first).exists(), "removed, as a rename over it would");
        // A record larger than KEPT_BYTES is removed, not kept.
        let big = Change {
            puts: vec![(DocId::root(), "x".repeat(KEPT_BYTES as usize + 1))],
            deletes: vec![],
            label: "big".into(),
        };
        let third = queue.prepare(&big).unwrap();
        queue.abandon(third).unwrap();
        assert!(named(&queue.free).unwrap().is_empty());
    }

    #[test]
    fn at_most_kept_files_wait() {
        let meta = tempfile::tempdir().unwrap();
        let queue = Queue::new(meta.path());
        let names: Vec<u128> = (0..KEPT + 5).map(|_| queue.prepare(&change("a")).unwrap()).collect();
        for name in names {
            queue.abandon(name).unwrap();
        }
        assert_eq!(named(&queue.free).unwrap().len(), KEPT);
        assert!(queue.prepared().unwrap().is_empty());
    }

    #[test]
    fn a_torn_last_name_falls_back_to_the_queued_records() {
        let meta = tempfile::tempdir().unwrap();
        let queue = Queue::new(meta.path());
        let ahead = 10u128.pow(30);
        fs::create_dir_all(&queue.dir).unwrap();
        fs::write(
            queue.path(ahead),
            serde_json::to_vec(&Record { label: "x".into(), puts: vec![], deletes: vec![], time: 0 })
                .unwrap(),
        )
        .unwrap();
        fs::write(&queue.last, "").unwrap();
        assert_eq!(queue.prepare(&change("a")).unwrap(), ahead + 1);
        assert_eq!(fs::read_to_string(&queue.last).unwrap().parse::<u128>().unwrap(), ahead + 1);
    }
}
