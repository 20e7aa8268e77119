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

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
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
}

impl Queue {
    /// The queue in `meta`, the store's `.memtree/` folder.
    pub fn new(meta: &Path) -> Queue {
        Queue {
            dir: meta.join("history"),
            pending: meta.join("history.pending"),
            last: meta.join("history.last"),
        }
    }

    /// Sets aside what stands where the queue's folders and last name
    /// belong and is not what belongs there (a file for a folder, a folder
    /// for the name), so that queueing works again; the records stay there
    /// to be looked at.
    pub fn repair(&self) -> io::Result<()> {
        memtree_store::own_folder(&self.dir)?;
        memtree_store::own_folder(&self.pending)?;
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
        // Written in place, not renamed into it: a record torn by a kill
        // is one whose change was not applied yet, and settling drops a
        // record it cannot read.
        let path = self.prepared_path(name);
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
        match fs::remove_file(self.prepared_path(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
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

    pub fn remove(&self, name: u128) -> io::Result<()> {
        match fs::remove_file(self.path(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
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
