//! The record queue: `.memtree/history/<n>.json`, one file per change not
//! yet committed, and `<n>.pending` for a change being applied. A record is
//! written under the store's exclusive lock, so names grow in write order
//! across processes; it is renamed into place whole, so a reader never sees
//! half of one.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use memtree_core::{Change, DocId};

/// How old a temporary record file must be to be a dead writer's.
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(60);

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
    dir: PathBuf,
}

impl Queue {
    pub fn new(dir: PathBuf) -> Queue {
        Queue { dir }
    }

    /// The confirmed records' names, oldest first.
    pub fn names(&self) -> io::Result<Vec<u128>> {
        self.named(".json")
    }

    /// The names of records prepared and not confirmed.
    pub fn prepared(&self) -> io::Result<Vec<u128>> {
        self.named(".pending")
    }

    fn named(&self, suffix: &str) -> io::Result<Vec<u128>> {
        let mut names = Vec::new();
        match fs::read_dir(&self.dir) {
            Ok(entries) => {
                for entry in entries {
                    let name = entry?.file_name();
                    if let Some(n) = name.to_str().and_then(|n| n.strip_suffix(suffix)?.parse().ok()) {
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

    /// Queues `change` as prepared (`.pending`). The caller holds the
    /// exclusive store lock.
    pub fn prepare(&self, change: &Change) -> io::Result<u128> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        // After the last queued name even if the clock stepped back.
        let last = self.names()?.into_iter().chain(self.prepared()?).max();
        let name = last.map_or(0, |last| last + 1).max(now.as_nanos());
        let record = Record {
            label: change.label.clone(),
            puts: change.puts.clone(),
            deletes: change.deletes.clone(),
            time: now.as_secs() as i64,
        };
        fs::create_dir_all(&self.dir)?;
        let temp = self.dir.join(format!(".{name}.{}", std::process::id()));
        fs::write(&temp, serde_json::to_vec(&record).map_err(io::Error::other)?)?;
        fs::rename(&temp, self.pending_path(name))?;
        Ok(name)
    }

    /// Removes the temporary files of records a killed process was writing
    /// (only old ones: a live writer may be writing one now).
    pub fn remove_stale_temps(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE_TEMP));
            if entry.file_name().to_str().is_some_and(|n| n.starts_with('.')) && stale {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// A prepared record becomes one to commit.
    pub fn confirm(&self, name: u128) -> io::Result<()> {
        fs::rename(self.pending_path(name), self.path(name))
    }

    /// Drops a prepared record.
    pub fn abandon(&self, name: u128) -> io::Result<()> {
        match fs::remove_file(self.pending_path(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    pub fn read(&self, name: u128) -> io::Result<Record> {
        Self::parse(&fs::read(self.path(name))?)
    }

    pub fn read_prepared(&self, name: u128) -> io::Result<Record> {
        Self::parse(&fs::read(self.pending_path(name))?)
    }

    fn parse(bytes: &[u8]) -> io::Result<Record> {
        serde_json::from_slice(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    fn pending_path(&self, name: u128) -> PathBuf {
        self.dir.join(format!("{name:039}.pending"))
    }

    pub fn remove(&self, name: u128) -> io::Result<()> {
        match fs::remove_file(self.path(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    pub(crate) fn path(&self, name: u128) -> PathBuf {
        self.dir.join(format!("{name:039}.json"))
    }
}
