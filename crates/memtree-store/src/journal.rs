//! The redo journal that makes every change atomic and durable in one sync.
//!
//! The complete after-state of a change (every new document text, every
//! document moved to the trash) is written to `.memtree/journal.json` and
//! made durable before any document is touched. A crash before that leaves
//! the before-state; a crash after it is completed by replaying the record,
//! whose operations are idempotent.
//!
//! The file is written in place, not renamed into place: over its own
//! blocks a data sync is enough, where a new file would also need its
//! folder's. So a record is framed: [`MAGIC`], a tag, the JSON's length and
//! its CRC-32, then the JSON. A record cut short by a crash fails its check
//! and held a change that never touched a document (its writer syncs it
//! before its first rename); a done journal starts with zeros. A file that
//! is neither (someone else's bytes) is not guessed at.
//!
//! The record is the change's only sync: the documents are then written
//! and renamed into place without one, and the record is marked applied
//! ([`APPLIED_MARK`], over its first bytes, unsynced). Until the documents
//! are durable, the record is what a crash of the machine would restore
//! them from, so it is let go ([`clear`]) only after they are synced
//! (`checkpoint`), at a quiet moment; the next change writes a record that
//! carries the applied operations still unsynced, with its own, to the
//! other of two files ([`crate::journal_slots`]), never over them. Each
//! operation says when it was made, so a replay leaves alone a document
//! edited by someone else since.
//!
//! An older memtree reads an applied record as done (it starts with eight
//! zeros), and its own done mark ([`OLD_DONE_MARK`]) as one to sync.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _};
use std::os::unix::fs::{FileExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

use memtree_core::{DocId, StorageError};

use crate::atomic_file::{io_error, set_aside, sync_dir};

/// What a journal record starts with.
const MAGIC: [u8; 8] = *b"MTJRNL02";
/// What it starts with until it is applied.
const PENDING: [u8; 8] = *b"MTJRPEND";
/// The magic, the tag, the JSON's length (u64) and its CRC-32 (u32),
/// little-endian.
const HEADER: usize = 8 + 8 + 8 + 4;
/// An applied record: its magic and tag written over, the rest (length,
/// CRC, JSON) kept for the checkpoint to read.
pub(crate) const APPLIED_MARK: [u8; 16] = *b"\0\0\0\0\0\0\0\0MTJRAPLD";
/// The first record format (an older memtree's): the magic, the length
/// and the CRC.
const MAGIC_V1: [u8; 8] = *b"MTJRNL01";
const HEADER_V1: usize = 8 + 8 + 4;
/// An older memtree's done mark, not yet synced.
const OLD_DONE_MARK: [u8; 16] = *b"\0\0\0\0\0\0\0\0MTJRDONE";

/// What the journal file holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// No change: no file, an empty one, or a done journal.
    Nothing,
    /// A record its writer did not finish writing.
    Torn,
    /// A change that may be partly applied: replayed by recovery.
    Change(Journal),
    /// A change wholly applied whose documents may not be durable yet.
    Applied(Journal),
}

/// What the first bytes of the journal file say, read without the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Head {
    /// No change, nothing to sync.
    Clear,
    /// A record to replay, or something that is no journal: recovery's.
    Pending,
    /// An applied record, named by its length and CRC.
    Applied { len: u64, crc: u32 },
    /// An older memtree's done mark, to sync.
    OldDone,
}

/// The file's bytes for `journal`.
pub(crate) fn frame(journal: &Journal) -> Vec<u8> {
    let json = serde_json::to_vec(journal).expect("journals serialise");
    let mut bytes = Vec::with_capacity(HEADER + json.len());
    bytes.extend(MAGIC);
    bytes.extend(PENDING);
    bytes.extend((json.len() as u64).to_le_bytes());
    bytes.extend(crc32fast::hash(&json).to_le_bytes());
    bytes.extend(json);
    bytes
}

/// What `bytes`, the whole journal file, holds; `Err` with the reason when
/// memtree did not write them. A journal of memtree before records were
/// framed is plain JSON.
pub(crate) fn read(bytes: &[u8]) -> Result<Held, String> {
    if bytes.starts_with(&APPLIED_MARK) {
        // Its body was synced before any document was touched; one that
        // fails its check was damaged since, and names nothing to sync.
        return Ok(framed(bytes, HEADER).map_or(Held::Nothing, |j| j.map_or(Held::Nothing, Held::Applied)));
    }
    if bytes.iter().take(MAGIC.len()).all(|&b| b == 0) {
        return Ok(Held::Nothing);
    }
    if bytes.first() == Some(&b'{') {
        return serde_json::from_slice(bytes).map(Held::Change).map_err(|e| e.to_string());
    }
    let header = match () {
        () if bytes.starts_with(&MAGIC) => HEADER,
        () if bytes.starts_with(&MAGIC_V1) => HEADER_V1,
        () => return Err("not a journal record".to_owned()),
    };
    match framed(bytes, header) {
        Some(journal) => journal.map(Held::Change),
        None => Ok(Held::Torn),
    }
}

/// The record of a header `header` bytes long ending in its length and
/// CRC; `None` when it is cut short or fails its check.
fn framed(bytes: &[u8], header: usize) -> Option<Result<Journal, String>> {
    let len = u64::from_le_bytes(bytes.get(header - 12..header - 4)?.try_into().ok()?);
    let crc = u32::from_le_bytes(bytes.get(header - 4..header)?.try_into().ok()?);
    let json = bytes.get(header..header.checked_add(usize::try_from(len).ok()?)?)?;
    (crc32fast::hash(json) == crc).then(|| serde_json::from_slice(json).map_err(|e| e.to_string()))
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

/// What the journal at `path` starts with. Reads its header only.
pub(crate) fn head(path: &Path) -> Result<Head, StorageError> {
    let file = match find(path, false)? {
        Found::Nothing => return Ok(Head::Clear),
        // For recovery to set aside.
        Found::Other => return Ok(Head::Pending),
        Found::Journal(file) => file,
    };
    let mut start = [0u8; HEADER];
    let mut n = 0;
    while n < start.len() {
        match file.read_at(&mut start[n..], n as u64).map_err(io_error("read", path))? {
            0 => break,
            read => n += read,
        }
    }
    let start = &start[..n];
    Ok(if start.starts_with(&APPLIED_MARK) && n == HEADER {
        let (len, crc) = key(start);
        Head::Applied { len, crc }
    } else if start.starts_with(&OLD_DONE_MARK) {
        Head::OldDone
    } else if start.iter().take(MAGIC.len()).any(|&b| b != 0) {
        Head::Pending
    } else {
        Head::Clear
    })
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
            file.write_all_at(&[0; APPLIED_MARK.len()], 0).map_err(io_error("write", path))?;
            file.sync_data().map_err(io_error("fsync", path))
        }
    }
}

/// Marks the record at `path` applied, without waiting for the disk: a
/// crash that loses the mark replays the record, which is idempotent.
pub(crate) fn mark_applied(path: &Path) -> Result<(), StorageError> {
    match find(path, true)? {
        Found::Nothing => Ok(()),
        Found::Other => put_aside(path),
        Found::Journal(file) => file.write_all_at(&APPLIED_MARK, 0).map_err(io_error("write", path)),
    }
}

/// The length and CRC that name the record `bytes` (a [`frame`], or its
/// header, applied or not): what [`head`] reads once it is applied.
pub(crate) fn key(bytes: &[u8]) -> (u64, u32) {
    let len = u64::from_le_bytes(bytes[16..24].try_into().expect("a framed record"));
    (len, u32::from_le_bytes(bytes[24..28].try_into().expect("a framed record")))
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Journal {
    pub label: String,
    pub ops: Vec<JournalOp>,
    /// The machine's boot the record was written in: an applied record of
    /// the same boot is what the page cache holds, one of an earlier boot
    /// may have lost documents to a crash. `None` in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// One past the record it follows (see [`crate::journal_slots`]); 0 in
    /// older records.
    #[serde(default)]
    pub seq: u64,
}

/// This boot of the machine (Linux's `boot_id`); `None` where unknown.
pub(crate) fn boot() -> Option<&'static str> {
    static BOOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|id| id.trim().to_owned())
    })
    .as_deref()
}

/// Paths are rebuilt from validated ids on replay, so a tampered journal
/// cannot name a file outside the store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum JournalOp {
    /// Write the document (atomically replacing what is there).
    Put {
        id: DocId,
        content: String,
        /// When (Unix ms) the change was made; replay leaves a document
        /// changed since alone. `None` in an older memtree's records.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
    /// Move the document, bytes untouched, into the trash folder `batch`.
    Trash {
        batch: TrashBatch,
        id: DocId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
}

impl JournalOp {
    /// The document the operation writes or moves.
    pub fn id(&self) -> &DocId {
        match self {
            JournalOp::Put { id, .. } | JournalOp::Trash { id, .. } => id,
        }
    }

    pub fn at(&self) -> Option<u64> {
        match self {
            JournalOp::Put { at, .. } | JournalOp::Trash { at, .. } => *at,
        }
    }
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

    /// Whether the journal at `path` may hold a change to replay.
    fn may_hold_change(path: &Path) -> Result<bool, StorageError> {
        Ok(head(path)? == Head::Pending)
    }

    fn journal() -> Journal {
        Journal {
            boot: None,
            seq: 0,
            label: "update root".into(),
            ops: vec![JournalOp::Put { id: DocId::root(), content: "# x\n".into(), at: None }],
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
    fn an_applied_record_reads_as_done_to_recovery_and_keeps_its_operations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        let record = frame(&journal());
        write(&path, &record).unwrap();
        assert_eq!(head(&path).unwrap(), Head::Pending);
        mark_applied(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // An older memtree reads the first eight bytes only: zeros, done.
        assert_eq!(bytes[..MAGIC.len()], [0; MAGIC.len()]);
        assert_eq!(read(&bytes), Ok(Held::Applied(journal())));
        let (len, crc) = key(&record);
        assert_eq!(head(&path).unwrap(), Head::Applied { len, crc });
        assert!(!may_hold_change(&path).unwrap(), "nothing to replay");
        clear(&path).unwrap();
        assert_eq!(head(&path).unwrap(), Head::Clear);
        assert_eq!(read(&std::fs::read(&path).unwrap()), Ok(Held::Nothing));
        // A record written over an applied one is a record again.
        write(&path, &record).unwrap();
        assert_eq!(read(&std::fs::read(&path).unwrap()), Ok(Held::Change(journal())));
        // An older memtree's done mark: nothing to replay, one sync owed.
        let mut old = OLD_DONE_MARK.to_vec();
        old.extend(&record[16..]);
        std::fs::write(&path, &old).unwrap();
        assert_eq!((head(&path).unwrap(), read(&old)), (Head::OldDone, Ok(Held::Nothing)));
    }

    #[test]
    fn an_older_memtrees_framed_record_is_read() {
        let json = serde_json::to_vec(&journal()).unwrap();
        let mut v1 = MAGIC_V1.to_vec();
        v1.extend((json.len() as u64).to_le_bytes());
        v1.extend(crc32fast::hash(&json).to_le_bytes());
        v1.extend(&json);
        assert_eq!(read(&v1), Ok(Held::Change(journal())));
        assert_eq!(read(&v1[..v1.len() - 1]), Ok(Held::Torn));
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
            boot: Some("b".into()),
            seq: 0,
            label: "update root".into(),
            ops: vec![
                JournalOp::Put { id: DocId::root(), content: "# x\n".into(), at: None },
                JournalOp::Trash {
                    batch: TrashBatch::new(1, 2, 3),
                    id: DocId::parse("a").unwrap(),
                    at: Some(7),
                },
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
