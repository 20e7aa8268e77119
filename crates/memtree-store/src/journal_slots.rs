//! The two files a change's journal record is written to in turn.
//!
//! An applied record may be the only durable copy of documents written
//! since the last checkpoint, and the next record carries them. Written
//! over that record, a next one that a crash of the machine cut short
//! would take both with it. So each record goes to the file that does not
//! hold the last one, which stays whole until the new one is durable; a
//! record's sequence number (one past the last's) says which of the two is
//! newer, and a checkpoint clears both.

use std::path::{Path, PathBuf};

use memtree_core::StorageError;

use crate::journal::{self, Head, Held, Journal};

/// Each file's head, in slot order.
pub(crate) type Heads = [Head; 2];

#[derive(Debug, Clone)]
pub(crate) struct JournalSlots {
    paths: [PathBuf; 2],
}

impl JournalSlots {
    /// The slots of the store whose metadata folder is `meta`: the first
    /// is the file an older memtree writes alone.
    pub fn new(meta: &Path) -> JournalSlots {
        JournalSlots { paths: [meta.join("journal.json"), meta.join("journal-2.json")] }
    }

    pub fn path(&self, slot: usize) -> &Path {
        &self.paths[slot]
    }

    pub fn heads(&self) -> Result<Heads, StorageError> {
        Ok([journal::head(&self.paths[0])?, journal::head(&self.paths[1])?])
    }

    /// Whether a slot may hold a change to replay. Cheap.
    pub fn may_hold_change(&self) -> Result<bool, StorageError> {
        Ok(self.heads()?.contains(&Head::Pending))
    }

    /// What each slot holds; a slot no memtree wrote is an error naming it.
    pub fn read(&self) -> Result<[Held; 2], StorageError> {
        let read = |path: &Path| -> Result<Held, StorageError> {
            let Some(bytes) = journal::bytes(path)? else { return Ok(Held::Nothing) };
            journal::read(&bytes)
                .map_err(|reason| StorageError::BadJournal { path: path.display().to_string(), reason })
        };
        Ok([read(&self.paths[0])?, read(&self.paths[1])?])
    }

    /// The newer applied record of the two whose `heads` these are, with
    /// its slot: the one that carries every operation not yet synced.
    pub fn latest_applied(&self, heads: &Heads) -> Result<Option<(usize, Journal)>, StorageError> {
        let mut applied = [Held::Nothing, Held::Nothing];
        for (slot, head) in heads.iter().enumerate() {
            if matches!(head, Head::Applied { .. })
                && let Some(Ok(held @ Held::Applied(_))) =
                    journal::bytes(&self.paths[slot])?.map(|b| journal::read(&b))
            {
                applied[slot] = held;
            }
        }
        Ok(newest(applied).map(|(slot, record, _)| (slot, record)))
    }

    /// Clears every slot that holds something, `last` (the newest record's)
    /// after the other: until then a crash leaves the newest, which
    /// replays to the state the documents are in, never an older one
    /// alone, which could bring back a document a newer record trashed.
    pub fn clear(&self, last: Option<usize>) -> Result<(), StorageError> {
        let heads = self.heads()?;
        let order = match last {
            Some(slot) => [1 - slot, slot],
            None => [0, 1],
        };
        for slot in order {
            if heads[slot] != Head::Clear {
                journal::clear(&self.paths[slot])?;
            }
        }
        Ok(())
    }
}

/// The newest record of those `held` (a slot's each): its slot, the
/// record, and whether it is applied. Of a change and an applied record,
/// the one of the higher sequence number.
pub(crate) fn newest(held: [Held; 2]) -> Option<(usize, Journal, bool)> {
    let mut newest: Option<(usize, Journal, bool)> = None;
    for (slot, held) in held.into_iter().enumerate() {
        let (record, applied) = match held {
            Held::Change(record) => (record, false),
            Held::Applied(record) => (record, true),
            Held::Nothing | Held::Torn => continue,
        };
        if newest.as_ref().is_none_or(|(_, newer, _)| record.seq > newer.seq) {
            newest = Some((slot, record, applied));
        }
    }
    newest
}

/// The slot a record that follows the one in `last` is written to.
pub(crate) fn next_slot(last: Option<usize>) -> usize {
    last.map_or(0, |slot| 1 - slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64) -> Journal {
        Journal { label: format!("r{seq}"), ops: vec![], boot: None, seq }
    }

    #[test]
    fn the_newest_record_is_the_one_of_the_higher_number() {
        let applied = |seq| Held::Applied(record(seq));
        assert_eq!(newest([applied(4), applied(5)]), Some((1, record(5), true)));
        assert_eq!(newest([applied(7), applied(6)]), Some((0, record(7), true)));
        assert_eq!(newest([Held::Torn, applied(1)]), Some((1, record(1), true)));
        assert_eq!(newest([applied(2), Held::Change(record(3))]), Some((1, record(3), false)));
        assert_eq!(newest([applied(0), Held::Nothing]), Some((0, record(0), true)));
        assert_eq!(newest([Held::Nothing, Held::Torn]), None);
        assert_eq!((next_slot(None), next_slot(Some(0)), next_slot(Some(1))), (0, 1, 0));
    }
}
