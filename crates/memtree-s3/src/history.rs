//! `RecordHistory`: the history of a store in a bucket, read from its
//! change records. A change's record is written before its commit point,
//! with every document's full text, so each committed change is already a
//! version: nothing to prepare, confirm or flush, and a change is never
//! saved without its version.
//!
//! Versions are named `r<seq>` (`r12^`: just before change 12). This
//! machine keeps an index of the records (when, what, which documents each
//! added, changed or deleted) in a file of its cache folder. Committed
//! records never change, so the index only grows: from the head back to
//! the last record it knows, one read per new record.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use memtree_core::{Change, DocId, History, HistoryError, HistoryProblem, Prepared, StorageError, Version};

use crate::storage::{Record, S3Storage};

pub struct RecordHistory {
    storage: Arc<S3Storage>,
    /// The index file (JSON lines, one per record, in commit order).
    file: PathBuf,
    /// Record `seq` is at `seq - 1`.
    entries: Mutex<Vec<Entry>>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Entry {
    seq: u64,
    name: String,
    time: i64,
    label: String,
    added: Vec<DocId>,
    changed: Vec<DocId>,
    deleted: Vec<DocId>,
}

impl Entry {
    fn of(name: &str, record: &Record) -> Entry {
        let ids = |raw: &[String]| raw.iter().filter_map(|r| DocId::parse(r).ok()).collect::<Vec<_>>();
        let puts: Vec<String> = record.puts.iter().map(|(id, _)| id.clone()).collect();
        let (changed, added): (Vec<String>, Vec<String>) =
            puts.into_iter().partition(|id| record.expected(id).is_some());
        let deleted: Vec<String> =
            record.deletes.iter().filter(|id| record.expected(id).is_some()).cloned().collect();
        Entry {
            seq: record.seq,
            name: name.to_owned(),
            time: record.time,
            label: record.label.clone(),
            added: ids(&added),
            changed: ids(&changed),
            deleted: ids(&deleted),
        }
    }

    fn touches(&self, id: &DocId) -> Option<bool> {
        if self.deleted.contains(id) {
            return Some(false);
        }
        (self.added.contains(id) || self.changed.contains(id)).then_some(true)
    }

    fn version(&self, present: bool) -> Version {
        let message = format!(
            "{}\n\n{}",
            self.label,
            memtree_core::history::describe(&self.added, &self.changed, &self.deleted)
        );
        let lines: Vec<&str> = message.lines().filter(|l| !l.is_empty()).collect();
        Version { version: format!("r{}", self.seq), time: self.time, message: lines.join("; "), present }
    }
}

fn backend(op: &'static str) -> impl FnOnce(StorageError) -> HistoryError {
    move |error| HistoryError::Backend { op, source: Box::new(error) }
}

impl RecordHistory {
    /// The history of `storage`, its index kept in `file`.
    pub fn open(storage: Arc<S3Storage>, file: PathBuf) -> Arc<RecordHistory> {
        let known = std::fs::read_to_string(&file).unwrap_or_default();
        let mut entries: Vec<Entry> = Vec::new();
        // A line cut short by a crash ends what is known; the rest is read again.
        for line in known.lines() {
            match serde_json::from_str::<Entry>(line) {
                Ok(entry) if entry.seq == entries.len() as u64 + 1 => entries.push(entry),
                _ => break,
            }
        }
        Arc::new(RecordHistory { storage, file, entries: Mutex::new(entries) })
    }

    /// The index, brought up to the store's head.
    fn current(&self) -> Result<MutexGuard<'_, Vec<Entry>>, HistoryError> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let head = self.storage.head().map_err(backend("read the head"))?;
        let known = entries.len() as u64;
        let same_store = match head.seq.checked_sub(1).and_then(|i| entries.get(i as usize)) {
            Some(entry) => head.name.as_deref() == Some(entry.name.as_str()),
            // Ahead of what is known, or no change yet.
            None => head.seq >= known,
        };
        if same_store && head.seq == known {
            return Ok(entries);
        }
        let rewrite = !same_store;
        if rewrite {
            // Another store at this place since the index was made.
            entries.clear();
        }
        let mut new = Vec::new();
        let mut name = head.name.clone();
        while let Some(current) = name.filter(|_| new.len() as u64 + (entries.len() as u64) < head.seq) {
            let record = self.storage.record(&current).map_err(backend("read a change record"))?;
            name = record.prev.clone();
            new.push(Entry::of(&current, &record));
        }
        new.reverse();
        if new.first().is_some_and(|e| e.seq != entries.len() as u64 + 1) {
            return Err(HistoryError::Backend {
                op: "read the change records",
                source: "the chain of change records has a gap".into(),
            });
        }
        if let Err(error) = self.save(&new, rewrite.then_some(entries.as_slice())) {
            tracing::warn!(%error, file = %self.file.display(), "cannot keep the history index");
        }
        entries.extend(new);
        Ok(entries)
    }

    /// Appends `new` to the index file (rewritten from `all` first when
    /// the store changed under it).
    fn save(&self, new: &[Entry], all: Option<&[Entry]>) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(all.is_none())
            .write(true)
            .truncate(all.is_some())
            .open(&self.file)?;
        let mut text = String::new();
        for entry in all.unwrap_or_default().iter().chain(new) {
            text.push_str(&serde_json::to_string(entry).expect("an entry serialises"));
            text.push('\n');
        }
        file.write_all(text.as_bytes())
    }

    /// The change a version names: `r<seq>`, each `^` one change earlier
    /// (0: before the first change).
    fn seq_of(version: &str, known: usize) -> Result<u64, HistoryError> {
        let unknown = || HistoryError::UnknownVersion(version.to_owned());
        let base = version.trim_end_matches('^');
        let back = (version.len() - base.len()) as u64;
        let seq: u64 = base.strip_prefix('r').unwrap_or(base).parse().map_err(|_| unknown())?;
        if seq == 0 || seq > known as u64 {
            return Err(unknown());
        }
        seq.checked_sub(back).ok_or_else(unknown)
    }

    fn text_at(&self, entries: &[Entry], seq: u64, id: &DocId) -> Result<Option<String>, HistoryError> {
        let last =
            entries[..seq as usize].iter().rev().find_map(|e| e.touches(id).map(|present| (e, present)));
        let Some((entry, true)) = last else { return Ok(None) };
        let record = self.storage.record(&entry.name).map_err(backend("read a change record"))?;
        let raw = id.to_string();
        Ok(record.puts.into_iter().find(|(put, _)| *put == raw).map(|(_, text)| text))
    }
}

impl History for RecordHistory {
    fn prepare(&self, _change: &Change) -> Result<Prepared, HistoryError> {
        // The change's record is its version.
        Ok(Prepared(0))
    }

    fn confirm(&self, _record: Prepared) -> Result<(), HistoryError> {
        Ok(())
    }

    fn abandon(&self, _record: Prepared) -> Result<(), HistoryError> {
        Ok(())
    }

    fn has_unsettled(&self) -> Result<bool, HistoryError> {
        Ok(false)
    }

    fn settle(&self, _applied: &dyn Fn(&Change) -> bool) -> Result<(), HistoryError> {
        Ok(())
    }

    fn flush(&self, _changed: Option<&[DocId]>) -> Result<(), HistoryError> {
        Ok(())
    }

    fn log(&self, id: Option<&DocId>, limit: usize) -> Result<Vec<Version>, HistoryError> {
        let entries = self.current()?;
        let versions = entries.iter().rev().filter_map(|entry| match id {
            Some(id) => entry.touches(id).map(|present| entry.version(present)),
            None => Some(entry.version(true)),
        });
        Ok(versions.take(limit).collect())
    }

    fn read_at(&self, version: &str, id: &DocId) -> Result<Option<String>, HistoryError> {
        let entries = self.current()?;
        let seq = Self::seq_of(version, entries.len())?;
        self.text_at(&entries, seq, id)
    }

    fn before(&self, version: &str) -> Result<Vec<(DocId, Option<String>)>, HistoryError> {
        let entries = self.current()?;
        let seq = Self::seq_of(version, entries.len())?;
        let Some(entry) = seq.checked_sub(1).and_then(|i| entries.get(i as usize)) else {
            return Ok(Vec::new());
        };
        let ids = entry.added.iter().chain(&entry.changed).chain(&entry.deleted);
        ids.map(|id| Ok((id.clone(), self.text_at(&entries, seq - 1, id)?))).collect()
    }

    fn problem(&self) -> Option<String> {
        None
    }

    fn check(&self) -> Result<(), HistoryProblem> {
        self.current().map(drop).map_err(|error| HistoryProblem { reason: error.to_string(), queued: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_name_a_change_or_one_before_it() {
        assert_eq!(RecordHistory::seq_of("r12", 20).unwrap(), 12);
        assert_eq!(RecordHistory::seq_of("12", 20).unwrap(), 12);
        assert_eq!(RecordHistory::seq_of("r12^", 20).unwrap(), 11);
        assert_eq!(RecordHistory::seq_of("r1^", 20).unwrap(), 0);
        for bad in ["r21", "r0", "r1^^", "x", "", "r-1", "HEAD"] {
            assert!(matches!(RecordHistory::seq_of(bad, 20), Err(HistoryError::UnknownVersion(_))), "{bad}");
        }
    }
}
