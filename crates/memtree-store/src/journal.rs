//! The intent journal that makes a multi-document change atomic.
//!
//! Redo logging: the complete after-state of a change (every new document
//! text, every document moved to the trash) is written to
//! `.memtree/journal.json` and made durable before any document is touched.
//! A crash before that leaves the before-state; a crash after it is
//! completed by replaying the journal, whose operations are all idempotent.
//! The journal is marked done last.
//!
//! The file is written in place, not renamed into place: that would make a
//! new file, and fsync the folder, at both ends of every change, where
//! writing over the file's own blocks makes a data sync enough. So a record
//! is framed: [`MAGIC`], the JSON's length and its CRC-32, then the JSON.
//! A record cut short by a crash fails its check and held a change that
//! never touched a document (its writer syncs it before its first rename);
//! a done journal starts with zeros. A file that is neither (someone else's
//! bytes) is not guessed at.
//!
//! A change is acknowledged once its documents are durable, before its
//! journal is marked done durably: the mark ([`DONE_MARK`], by
//! [`mark_done`]) is written without a sync, so the disk may still hold the
//! record for a while. Replaying that record again would undo any later
//! write of its documents, so it is made durable ([`settle`]) before any
//! write that does not replace the record with one of its own: a single
//! document's write, by any process, and a quiet moment after the change
//! (`done_settler`). A record written over it replaces it whole, synced.
//! An older memtree reads the mark as a done journal (it starts with
//! zeros) and settles nothing.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _};
use std::os::unix::fs::{FileExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

use memtree_core::{DocId, StorageError};

use crate::atomic_file::{io_error, set_aside, sync_dir};

/// What a journal record starts with.
const MAGIC: [u8; 8] = *b"MTJRNL01";
/// The magic, the JSON's length (u64) and its CRC-32 (u32), little-endian.
const HEADER: usize = 8 + 8 + 4;
/// A done journal whose being done may not be durable yet: 8 zero bytes
/// (done, to any memtree), then a tag where a record's length was, which
/// no record's length equals.
pub(crate) const DONE_MARK: [u8; 16] = *b"\0\0\0\0\0\0\0\0MTJRDONE";

/// What the journal file holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// No change: no file, an empty one, or a done journal.
    Nothing,
    /// A record its writer did not finish writing.
    Torn,
    Change(Journal),
}

/// The file's bytes for `journal`.
pub(crate) fn frame(journal: &Journal) -> Vec<u8> {
    let json = serde_json::to_vec(journal).expect("journals serialise");
    let mut bytes = Vec::with_capacity(HEADER + json.len());
    bytes.extend(MAGIC);
    bytes.extend((json.len() as u64).to_le_bytes());
    bytes.extend(crc32fast::hash(&json).to_le_bytes());
    bytes.extend(json);
    bytes
}

/// What `bytes`, the whole journal file, holds; `Err` with the reason when
/// memtree did not write them. A journal of memtree before records were
/// framed is plain JSON.
pub(crate) fn read(bytes: &[u8]) -> Result<Held, String> {
    if bytes.iter().take(MAGIC.len()).all(|&b| b == 0) {
        return Ok(Held::Nothing);
    }
    if bytes.first() == Some(&b'{') {
        return serde_json::from_slice(bytes).map(Held::Change).map_err(|e| e.to_string());
    }
    if !bytes.starts_with(&MAGIC) {
        return Err("not a journal record".to_owned());
    }
    let framed = || -> Option<&[u8]> {
        let len = u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?);
        let crc = u32::from_le_bytes(bytes.get(16..HEADER)?.try_into().ok()?);
        let json = bytes.get(HEADER..HEADER.checked_add(usize::try_from(len).ok()?)?)?;
        (crc32fast::hash(json) == crc).then_some(json)
    };
    match framed() {
        Some(json) => serde_json::from_slice(json).map(Held::Change).map_err(|e| e.to_string()),
        None => Ok(Held::Torn),
    }
}

/// What stands where the journal belongs.
enum Found {
    Nothing,
    Journal(File),
    /// Something memtree must not read or write through: a symbolic link
    /// (it could point anywhere), a folder, a FIFO; for writing, also a
    /// file of several names (written in place, each would change).
    Other,
}

/// Opens the journal at `path` itself, for writing or reading: never
/// through a symbolic link, never waiting on a FIFO.
fn find(path: &Path, write: bool) -> Result<Found, StorageError> {
    let opened = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    match opened {
        Ok(file) => {
            let meta = file.metadata().map_err(io_error("stat", path))?;
            let own = meta.is_file() && (!write || meta.nlink() == 1);
            Ok(if own { Found::Journal(file) } else { Found::Other })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Found::Nothing),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EISDIR | libc::ENXIO)) => {
            Ok(Found::Other)
        }
        Err(e) => Err(io_error("open", path)(e)),
    }
}

fn put_aside(path: &Path) -> Result<(), StorageError> {
    set_aside(path).map(drop).map_err(io_error("set aside", path))
}

/// Whether the journal at `path` may hold a change: something other than
/// a done journal is there. Reads the first bytes only.
pub(crate) fn may_hold_change(path: &Path) -> Result<bool, StorageError> {
    let mut file = match find(path, false)? {
        Found::Nothing => return Ok(false),
        // For recovery to set aside.
        Found::Other => return Ok(true),
        Found::Journal(file) => file,
    };
    let mut start = [0u8; MAGIC.len()];
    let n = file.read(&mut start).map_err(io_error("read", path))?;
    Ok(start[..n].iter().any(|&b| b != 0))
}

/// The bytes of the journal at `path`; `None` when there is none. What
/// stands there and is no file of memtree's holds no change of its own:
/// it is set aside.
pub(crate) fn bytes(path: &Path) -> Result<Option<Vec<u8>>, StorageError> {
    match find(path, false)? {
        Found::Nothing => Ok(None),
        Found::Other => put_aside(path).map(|()| None),
        Found::Journal(mut file) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(io_error("read", path))?;
            Ok(Some(bytes))
        }
    }
}

/// Writes `bytes` (a [`frame`], or part of one to fake a crash) over the
/// journal at `path`, durably: the commit point of a change. The caller
/// recovered whatever change it held first.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    let existing = match find(path, true)? {
        Found::Journal(file) => Some(file),
        Found::Nothing => None,
        Found::Other => put_aside(path).map(|()| None)?,
    };
    let created = existing.is_none();
    let file = match existing {
        Some(file) => file,
        None => OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(io_error("create", path))?,
    };
    file.write_all_at(bytes, 0).map_err(io_error("write", path))?;
    if created {
        // A new file's entry in its folder is durable once the folder is.
        file.sync_all().map_err(io_error("fsync", path))?;
        sync_dir(path.parent().expect("the journal has a folder"))
    } else {
        file.sync_data().map_err(io_error("fsync", path))
    }
}

/// Marks the journal at `path` done, durably. Its blocks stay, for the
/// next record to be written over.
pub(crate) fn clear(path: &Path) -> Result<(), StorageError> {
    match find(path, true)? {
        Found::Nothing => Ok(()),
        Found::Other => put_aside(path),
        Found::Journal(file) => {
            file.write_all_at(&[0; DONE_MARK.len()], 0).map_err(io_error("write", path))?;
            file.sync_data().map_err(io_error("fsync", path))
        }
    }
}

/// Marks the journal at `path` done without waiting for the disk: the
/// caller's change is durable, and [`settle`] makes the mark durable
/// before anything could undo a write by replaying the record again.
pub(crate) fn mark_done(path: &Path) -> Result<(), StorageError> {
    match find(path, true)? {
        Found::Nothing => Ok(()),
        Found::Other => put_aside(path),
        Found::Journal(file) => file.write_all_at(&DONE_MARK, 0).map_err(io_error("write", path)),
    }
}

/// Makes a done mark of [`mark_done`] at `path` durable, if one is there:
/// after it, the disk cannot hold the record it marked. Answers whether
/// it synced. The caller holds the store's exclusive lock, so no record
/// is written meanwhile.
pub(crate) fn settle(path: &Path) -> Result<bool, StorageError> {
    let file = match find(path, true)? {
        Found::Journal(file) => file,
        Found::Nothing | Found::Other => return Ok(false),
    };
    let mut start = [0u8; DONE_MARK.len()];
    let n = file.read_at(&mut start, 0).map_err(io_error("read", path))?;
    if n < start.len() || start != DONE_MARK {
        return Ok(false);
    }
    file.sync_data().map_err(io_error("fsync", path))?;
    // Durable or not, zeros say the same as the mark: both are done. They
    // tell the next writer that nothing is left to sync.
    file.write_all_at(&[0; DONE_MARK.len()], 0).map_err(io_error("write", path))?;
    Ok(true)
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Journal {
    pub label: String,
    pub ops: Vec<JournalOp>,
}

/// Paths are rebuilt from validated ids on replay, so a tampered journal
/// cannot name a file outside the store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum JournalOp {
    /// Write the document (atomically replacing what is there).
    Put { id: DocId, content: String },
    /// Move the document, bytes untouched, into the trash folder `batch`.
    Trash { batch: TrashBatch, id: DocId },
}

/// The trash folder name of one change: digits and dashes only.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub(crate) struct TrashBatch(String);

impl TrashBatch {
    pub fn new(unix_ms: u128, pid: u32, seq: u64) -> TrashBatch {
        TrashBatch(format!("{unix_ms:013}-{pid}-{seq}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TrashBatch {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            Ok(TrashBatch(s))
        } else {
            Err(format!("invalid trash batch name {s:?}"))
        }
    }
}

impl From<TrashBatch> for String {
    fn from(b: TrashBatch) -> String {
        b.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal() -> Journal {
        Journal {
            label: "update root".into(),
            ops: vec![JournalOp::Put { id: DocId::root(), content: "# x\n".into() }],
        }
    }

    #[test]
    fn a_record_is_read_back_only_whole() {
        let bytes = frame(&journal());
        assert_eq!(read(&bytes), Ok(Held::Change(journal())));
        // Cut short anywhere, or with a byte changed, it is torn.
        for cut in [MAGIC.len(), HEADER - 1, HEADER, bytes.len() - 1] {
            assert_eq!(read(&bytes[..cut]), Ok(Held::Torn), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(read(&flipped), Ok(Held::Torn));
        // Written over a longer record, the old one's tail is not read.
        let mut over = frame(&Journal { label: "a much longer label than the other".into(), ..journal() });
        over[..bytes.len()].copy_from_slice(&bytes);
        assert_eq!(read(&over), Ok(Held::Change(journal())));
    }

    #[test]
    fn a_done_journal_an_old_one_and_someone_elses_bytes() {
        let mut done = frame(&journal());
        done[..MAGIC.len()].fill(0);
        assert_eq!(read(&done), Ok(Held::Nothing));
        assert_eq!(read(b""), Ok(Held::Nothing));
        let old = serde_json::to_vec(&journal()).unwrap();
        assert_eq!(read(&old), Ok(Held::Change(journal())));
        assert!(read(b"garbage").is_err());
        assert!(read(b"{\"label\":").is_err());
    }

    #[test]
    fn the_file_is_written_over_and_cleared_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        assert!(!may_hold_change(&path).unwrap());
        clear(&path).unwrap();
        assert!(!path.exists(), "clearing makes no file");
        write(&path, &frame(&journal())).unwrap();
        assert!(may_hold_change(&path).unwrap());
        let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
        clear(&path).unwrap();
        assert!(!may_hold_change(&path).unwrap());
        assert_eq!(read(&std::fs::read(&path).unwrap()), Ok(Held::Nothing));
        write(&path, &frame(&journal())).unwrap();
        assert_eq!(read(&std::fs::read(&path).unwrap()), Ok(Held::Change(journal())));
        assert_eq!(
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap()),
            inode,
            "the same file"
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(may_hold_change(&path).unwrap(), "a folder in its place is for recovery to set aside");
    }

    #[test]
    fn a_done_mark_reads_as_done_and_is_settled_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        assert!(!settle(&path).unwrap(), "no journal, nothing to settle");
        write(&path, &frame(&journal())).unwrap();
        assert!(!settle(&path).unwrap(), "a record is not a mark");
        mark_done(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // An older memtree reads the first eight bytes only: zeros, done.
        assert_eq!(bytes[..MAGIC.len()], [0; MAGIC.len()]);
        assert_eq!(bytes[..DONE_MARK.len()], DONE_MARK);
        assert_eq!(read(&bytes), Ok(Held::Nothing));
        assert!(!may_hold_change(&path).unwrap());
        assert!(settle(&path).unwrap(), "the mark is synced");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[..DONE_MARK.len()], [0; DONE_MARK.len()]);
        assert_eq!(read(&bytes), Ok(Held::Nothing));
        assert!(!settle(&path).unwrap(), "settled once");
        // A record written over a mark is a record again.
        write(&path, &frame(&journal())).unwrap();
        assert_eq!(read(&std::fs::read(&path).unwrap()), Ok(Held::Change(journal())));
    }

    #[test]
    fn nothing_is_read_or_written_through_what_is_no_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        let aside = dir.path().join("journal.json.damaged");
        let outside = dir.path().join("outside");
        // A symbolic link to a file of someone else's.
        std::fs::write(&outside, "keep me").unwrap();
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        assert!(may_hold_change(&path).unwrap());
        write(&path, &frame(&journal())).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me");
        assert!(std::fs::symlink_metadata(&aside).unwrap().is_symlink(), "the link is set aside");
        assert_eq!(read(&std::fs::read(&path).unwrap()), Ok(Held::Change(journal())));
        // A second name for the journal (a backup's hard link) is read
        // through, but not written over.
        std::fs::remove_file(&aside).unwrap();
        std::fs::hard_link(&path, outside.with_extension("linked")).unwrap();
        assert_eq!(bytes(&path).unwrap().map(|b| read(&b)), Some(Ok(Held::Change(journal()))));
        clear(&path).unwrap();
        assert_eq!(
            read(&std::fs::read(outside.with_extension("linked")).unwrap()),
            Ok(Held::Change(journal()))
        );
        assert!(!may_hold_change(&path).unwrap());
        // A FIFO: nothing waits on it.
        std::fs::remove_file(&aside).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        assert!(may_hold_change(&path).unwrap());
        assert_eq!(bytes(&path).unwrap(), None);
        assert!(!path.exists() && aside.exists(), "the FIFO is set aside");
    }

    #[test]
    fn journal_round_trips_and_refuses_path_tricks() {
        let j = Journal {
            label: "update root".into(),
            ops: vec![
                JournalOp::Put { id: DocId::root(), content: "# x\n".into() },
                JournalOp::Trash { batch: TrashBatch::new(1, 2, 3), id: DocId::parse("a").unwrap() },
            ],
        };
        let text = serde_json::to_string(&j).unwrap();
        assert_eq!(serde_json::from_str::<Journal>(&text).unwrap(), j);
        for bad in [
            r#"{"label":"x","ops":[{"op":"trash","batch":"1","id":"../etc/passwd"}]}"#,
            r#"{"label":"x","ops":[{"op":"trash","batch":"../x","id":"a"}]}"#,
            r#"{"label":"x","ops":[{"op":"put","id":"/abs","content":""}]}"#,
        ] {
            assert!(serde_json::from_str::<Journal>(bad).is_err(), "{bad}");
        }
    }
}
