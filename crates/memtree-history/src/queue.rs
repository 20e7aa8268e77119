//! The record queue: `.memtree/history/<n>.json`, one file per change not
//! yet committed. A record is written under the store's exclusive lock, so
//! names grow in write order across processes; it is renamed into place
//! whole, so a reader never sees half of one.

use std::fs;
use std::io;
use std::path::PathBuf;
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
    dir: PathBuf,
}

impl Queue {
    pub fn new(dir: PathBuf) -> Queue {
        Queue { dir }
    }

    /// The queued records' names, oldest first.
    pub fn names(&self) -> io::Result<Vec<u128>> {
        let mut names = Vec::new();
        match fs::read_dir(&self.dir) {
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

    /// Queues `change`. The caller holds the exclusive store lock.
    pub fn push(&self, change: &Change) -> io::Result<u128> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        // After the last queued name even if the clock stepped back.
        let name = self.names()?.last().map_or(0, |last| last + 1).max(now.as_nanos());
        let record = Record {
            label: change.label.clone(),
            puts: change.puts.clone(),
            deletes: change.deletes.clone(),
            time: now.as_secs() as i64,
        };
        fs::create_dir_all(&self.dir)?;
        let temp = self.dir.join(format!(".{name}.{}", std::process::id()));
        fs::write(&temp, serde_json::to_vec(&record).map_err(io::Error::other)?)?;
        fs::rename(&temp, self.path(name))?;
        Ok(name)
    }

    pub fn read(&self, name: u128) -> io::Result<Record> {
        let bytes = fs::read(self.path(name))?;
        serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
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
