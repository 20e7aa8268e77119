//! `LocalStorage`: a store in a folder of the local file system.
//!
//! Layout: `<id>.md` per document (`/` in an id is a sub-folder), and under
//! `.memtree/`: `lock` (the cross-process lock), `journal.json` and
//! `journal-2.json` (the redo records of the last changes, until their
//! documents are synced: see [`crate::journal_slots`]), `tmp/`
//! (temporary files, same file system as the documents) and
//! `trash/<batch>/<id>.md` (pruned documents, kept for recovery).
//!
//! Every change is one sync: its record (see [`crate::journal`]). The
//! documents are renamed into place unsynced; the next change's record
//! carries the operations not yet synced, and a quiet moment, a record
//! grown past [`CARRY_LIMIT`] or the store's close syncs them
//! ([`crate::checkpoint`]).

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use memtree_core::{
    Change, DocId, Listing, LockMode, Recovery, Stamp, Storage, StorageError, StoreLock, Unreadable,
};

use crate::atomic_file::{
    ChangedFolders, create_dirs, io_error, own_folder, rename_into, set_aside, write_temp,
};
use crate::checkpoint::{self, Places};
use crate::done_settler::DoneSettler;
use crate::folder_names::{Edit, FolderNames};
use crate::journal::{self, Head, Held, Journal, JournalOp, TrashBatch, boot};
use crate::journal_slots::{self, Heads, JournalSlots};
use crate::listing::Listings;

/// A deliberate crash for tests of crash safety: the process aborts at the
/// named point of a journaled change, as a `kill -9` would stop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// While the journal is written: part of its record is on disk.
    BeforeJournalCommit,
    /// After the journal is committed and this many operations applied.
    AfterOps(usize),
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            None if s == "journal" => Ok(Fault::BeforeJournalCommit),
            Some(("apply", n)) => n.parse().map(Fault::AfterOps).map_err(|e| format!("{s}: {e}")),
            _ => Err(format!("unknown fault {s:?} (expected `journal` or `apply:N`)")),
        }
    }
}

/// How large a record may grow with the operations it carries before a
/// change syncs them itself: it bounds what each change writes again.
const CARRY_LIMIT: usize = 64 * 1024;

/// Reads of a document that changed while it was read, before what was
/// read is taken.
const READ_ATTEMPTS: u32 = 3;

pub struct LocalStorage {
    places: Places,
    meta: PathBuf,
    temp: PathBuf,
    journals: JournalSlots,
    lock_path: PathBuf,
    fault: Option<Fault>,
    batch_seq: AtomicU64,
    names: FolderNames,
    listings: Listings,
    /// Largest document read; a larger file is reported, not read.
    read_limit: u64,
    settler: DoneSettler,
    /// The operations of the applied record this process wrote last, so a
    /// change need not read them back.
    carried: Mutex<Carried>,
}

/// Operations applied but maybe not durable, and the record they are in.
#[derive(Default)]
struct Carried {
    /// The journal files' heads as the record left them: while they read
    /// the same, no one wrote or cleared a record since.
    heads: Option<Heads>,
    /// The record's slot and sequence number.
    slot: usize,
    seq: u64,
    ops: Vec<JournalOp>,
}

/// The record a new one follows: the operations it must carry, its slot
/// (`None` when there is none) and its sequence number.
struct Last {
    ops: Vec<JournalOp>,
    slot: Option<usize>,
    seq: u64,
}

const META_DIR: &str = ".memtree";

impl LocalStorage {
    /// Opens (creating if needed) the store in `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<LocalStorage, StorageError> {
        let root = root.into();
        let meta = root.join(META_DIR);
        let (journals, lock_path) = (JournalSlots::new(&meta), meta.join("lock"));
        let places = Places { trash: meta.join("trash"), root, spares: Default::default() };
        let storage = LocalStorage {
            settler: DoneSettler::new(journals.clone(), lock_path.clone(), places.clone()),
            temp: meta.join("tmp"),
            journals,
            lock_path,
            places,
            meta,
            fault: None,
            batch_seq: AtomicU64::new(0),
            names: FolderNames::default(),
            listings: Listings::default(),
            read_limit: u64::MAX,
            carried: Mutex::default(),
        };
        storage.create_layout()?;
        crate::spares::sweep(&storage.temp);
        storage.complete_applied();
        Ok(storage)
    }

    /// Creates the store's folders, durably (a record's file in `.memtree/`
    /// is only as durable as the folder's own entry), each folder whose
    /// entries changed synced once; also used when someone deleted
    /// `.memtree/` under a running server.
    fn create_layout(&self) -> Result<(), StorageError> {
        let mut changed = ChangedFolders::default();
        for dir in [&self.temp, &self.places.trash] {
            own_folder(dir).map_err(io_error("set aside", dir))?;
            create_dirs(dir, &mut changed)?;
        }
        changed.sync()
    }

    /// Completes an applied record that a process left before its
    /// checkpoint: syncs its documents. The mark says nothing after a crash
    /// of the machine, which may have kept it and lost the documents: a
    /// record of an earlier boot is replayed first, writing again each
    /// document that does not hold its text (and that no one changed
    /// since). A live writer's record costs its syncs, a moment early. A lock held
    /// longer than a moment is a live process's, which completed the
    /// record at its own start or carries it.
    fn complete_applied(&self) {
        let heads = self.journals.heads().unwrap_or([Head::Clear; 2]);
        if !heads.iter().any(|head| matches!(head, Head::Applied { .. } | Head::OldDone)) {
            return;
        }
        let Some(_lock) = checkpoint::lock_within(&self.lock_path, std::time::Duration::from_millis(200))
        else {
            return;
        };
        if let Err(error) = self.recover() {
            tracing::warn!(%error, "cannot complete the journal's last changes; the next writer carries them");
        }
    }

    /// Reads no document larger than `bytes` (the size limit of writes):
    /// a larger file, written by another program, is reported as
    /// unreadable rather than held in memory and served whole.
    pub fn with_read_limit(mut self, bytes: u64) -> LocalStorage {
        self.read_limit = bytes;
        self
    }

    /// Arms a deliberate crash (tests only).
    pub fn with_fault(mut self, fault: Option<Fault>) -> LocalStorage {
        self.fault = fault;
        self
    }

    pub fn root(&self) -> &Path {
        &self.places.root
    }

    fn doc_path(&self, id: &DocId) -> PathBuf {
        self.places.doc(id)
    }

    /// The first folder on the way to `id`'s file that is a symbolic link:
    /// it could point anywhere outside the store, so nothing is read or
    /// written through it.
    fn linked_folder(&self, id: &DocId) -> Option<PathBuf> {
        let mut dir = self.places.root.clone();
        let segments: Vec<&str> = id.segments().collect();
        for segment in &segments[..segments.len() - 1] {
            dir.push(segment);
            if fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
                return Some(dir);
            }
        }
        None
    }

    /// Refuses to write through a symlinked folder.
    fn check_real_folders(&self, id: &DocId) -> Result<(), StorageError> {
        match self.linked_folder(id) {
            Some(dir) => Err(io_error("write through symlink", &dir)(io::Error::other(
                "folder is a symbolic link; memtree writes only inside the store",
            ))),
            None => Ok(()),
        }
    }

    fn move_to_trash(
        &self,
        batch: &TrashBatch,
        id: &DocId,
        changed: &mut ChangedFolders,
    ) -> Result<(), StorageError> {
        let from = self.doc_path(id);
        if fs::symlink_metadata(&from).is_err() {
            return Ok(()); // Already moved by an earlier (interrupted) replay.
        }
        let to = self.places.trashed(batch, id);
        let trash_dir = to.parent().expect("trash paths have a parent");
        create_dirs(trash_dir, changed)?;
        fs::rename(&from, &to).map_err(io_error("move to trash", &from))?;
        changed.add(trash_dir);
        let mut dir = from.parent().map(Path::to_path_buf);
        changed.add(dir.as_deref().expect("document paths have a parent"));
        // Remove the folders the move left empty, up to the store root.
        while let Some(d) = dir.filter(|d| *d != self.places.root) {
            if fs::remove_dir(&d).is_err() {
                break;
            }
            dir = d.parent().map(Path::to_path_buf);
            changed.add(dir.as_deref().expect("store folders have a parent"));
        }
        Ok(())
    }

    /// The new texts of `ops`' puts in temporary files, before the record
    /// is committed: a write that fails (a full disk) fails the change
    /// while nothing is changed.
    fn write_temps(&self, ops: &[JournalOp]) -> Result<Vec<PathBuf>, StorageError> {
        let mut temps = Vec::new();
        for op in ops {
            if let JournalOp::Put { content, .. } = op {
                match self.places.spares.write(&self.temp, content.as_bytes()) {
                    Ok(temp) => temps.push(temp),
                    Err(error) => {
                        temps.iter().for_each(|temp| drop(fs::remove_file(temp)));
                        return Err(error);
                    }
                }
            }
        }
        Ok(temps)
    }

    /// Carries out the new operations of a committed record, unsynced:
    /// the record covers a crash at any point, until the checkpoint.
    fn apply_ops(&self, ops: &[JournalOp], temps: Vec<PathBuf>, label: &str) -> Result<(), StorageError> {
        // Synced by the checkpoint, not here.
        let mut unsynced = ChangedFolders::default();
        let mut temps = temps.into_iter();
        for (done, op) in ops.iter().enumerate() {
            if self.fault == Some(Fault::AfterOps(done)) {
                crash(&format!("after {done} operations of {label}"));
            }
            match op {
                JournalOp::Put { id, .. } => {
                    let temp = temps.next().expect("one temporary file per put");
                    self.places.spares.put(&temp, &self.doc_path(id), &mut unsynced)?;
                }
                JournalOp::Trash { batch, id, .. } => self.move_to_trash(batch, id, &mut unsynced)?,
            }
        }
        if self.fault == Some(Fault::AfterOps(ops.len())) {
            crash(&format!("after all operations of {label}"));
        }
        Ok(())
    }

    /// Completes a record that a crash interrupted (or whose documents a
    /// crash of the machine may have lost), unsynced. A document changed
    /// since its operation was made (an edit in another program) is left
    /// as it is: replaying would undo it.
    fn replay(&self, record: &Journal) -> Result<(), StorageError> {
        let mut unsynced = ChangedFolders::default();
        // What the replay wrote itself is no one else's edit.
        let mut replayed = std::collections::HashSet::new();
        for (i, op) in record.ops.iter().enumerate() {
            let path = self.doc_path(op.id());
            if let Some(at) = op.at()
                && !replayed.contains(&path)
                && changed_since(&path, at)?
            {
                tracing::warn!(path = %path.display(), "left alone in recovery: changed since memtree wrote it");
                continue;
            }
            match op {
                JournalOp::Put { id, content, .. } => {
                    self.check_real_folders(id)?;
                    let trashed_later = match record.ops[i + 1..].iter().find(|later| later.id() == id) {
                        Some(JournalOp::Trash { batch, .. }) => self.places.trashed(batch, id).exists(),
                        _ => false,
                    };
                    if trashed_later || fs::read(&path).is_ok_and(|bytes| bytes == content.as_bytes()) {
                        continue;
                    }
                    let temp = write_temp(&self.temp, content.as_bytes())?;
                    rename_into(&temp, &path, &mut unsynced)?;
                    replayed.insert(path);
                }
                JournalOp::Trash { batch, id, .. } => self.move_to_trash(batch, id, &mut unsynced)?,
            }
        }
        Ok(())
    }

    /// The operations of the journal's applied record, which the next
    /// record must carry until they are synced. A record that no one
    /// finished applying (its writer died after this process looked) is
    /// recovery's: the write is planned again after it.
    fn unsynced(&self, carried: &mut Carried, heads: &Heads) -> Result<Last, StorageError> {
        if heads.contains(&Head::Pending) {
            return Err(StorageError::Conflict);
        }
        if carried.heads.as_ref() == Some(heads) {
            // Taken: a change that fails from here reads them back.
            carried.heads = None;
            return Ok(Last {
                ops: std::mem::take(&mut carried.ops),
                slot: Some(carried.slot),
                seq: carried.seq,
            });
        }
        // An older memtree's done change is durable: a record may replace
        // it.
        Ok(match self.journals.latest_applied(heads)? {
            Some((slot, record)) => Last { ops: record.ops, slot: Some(slot), seq: record.seq },
            None => Last { ops: Vec::new(), slot: None, seq: 0 },
        })
    }

    /// The store's write generation: a counter in the lock file that every
    /// writer bumps under the exclusive lock. A cache validator only, so it
    /// is not fsync'd (after a crash no cache survives anyway).
    fn generation(&self) -> Result<u64, StorageError> {
        let mut bytes = [0u8; 8];
        match fs::File::open(&self.lock_path) {
            Ok(file) => {
                use std::os::unix::fs::FileExt as _;
                let n = file.read_at(&mut bytes, 0).map_err(io_error("read", &self.lock_path))?;
                Ok(if n == 8 { u64::from_le_bytes(bytes) } else { 0 })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io_error("open", &self.lock_path)(e)),
        }
    }

    fn set_generation(&self, generation: u64) -> Result<(), StorageError> {
        use std::os::unix::fs::FileExt as _;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock_path)
            .map_err(io_error("open", &self.lock_path))?;
        file.write_all_at(&generation.to_le_bytes(), 0).map_err(io_error("write", &self.lock_path))
    }

    /// The name each document of `change` adds to or removes from its folder.
    fn edits<'p>(change: &Change, paths: &'p [PathBuf]) -> Vec<Edit<'p>> {
        let added = change.puts.len();
        paths
            .iter()
            .enumerate()
            .map(|(i, path)| Edit {
                dir: path.parent().expect("document paths have a parent"),
                name: path.file_name().expect("document paths have a name").to_string_lossy().into_owned(),
                added: i < added,
            })
            .collect()
    }

    fn apply_unrecorded(&self, change: &Change) -> Result<(), StorageError> {
        let at = Some(unix_ms());
        let batch = self.new_batch();
        let mut ops: Vec<JournalOp> = change
            .deletes
            .iter()
            .map(|id| JournalOp::Trash { batch: batch.clone(), id: id.clone(), at })
            .collect();
        ops.extend(change.puts.iter().map(|(id, content)| JournalOp::Put {
            id: id.clone(),
            content: content.clone(),
            at,
        }));
        for id in change.puts.iter().map(|(id, _)| id) {
            self.check_real_folders(id)?;
        }
        let mut carried = self.carried.lock().unwrap_or_else(|e| e.into_inner());
        let mut heads = self.journals.heads()?;
        let last = self.unsynced(&mut carried, &heads)?;
        let (slot, seq) = (journal_slots::next_slot(last.slot), last.seq + 1);
        let path = self.journals.path(slot);
        let mut kept = carry(last.ops, &ops);
        let mut bytes = journal::frame(&Journal {
            label: change.label.clone(),
            ops: [&kept[..], &ops].concat(),
            boot: boot().map(str::to_owned),
            seq,
        });
        if bytes.len() > CARRY_LIMIT && !kept.is_empty() {
            // The documents this change writes again are synced as they
            // stand too: then every swap made so far is durable, and the
            // files it freed may take this change's texts.
            self.places.sync(kept.iter().chain(&ops))?;
            self.places.spares.synced();
            kept.clear();
            bytes = journal::frame(&Journal {
                label: change.label.clone(),
                ops: ops.clone(),
                boot: boot().map(str::to_owned),
                seq,
            });
        }
        if self.fault == Some(Fault::BeforeJournalCommit) {
            journal::write(path, &bytes[..bytes.len() / 2])?;
            crash(&format!("before committing the journal of {}", change.label));
        }
        let temps = self.write_temps(&ops)?;
        if let Err(error) = journal::write(path, &bytes) {
            // The last record, in the other slot, still carries what this
            // one would have.
            temps.iter().for_each(|temp| drop(fs::remove_file(temp)));
            return Err(error);
        }
        self.apply_ops(&ops, temps, &change.label)?;
        journal::mark_applied(path)?;
        kept.extend(ops);
        let (len, crc) = journal::key(&bytes);
        heads[slot] = Head::Applied { len, crc };
        *carried = Carried { heads: Some(heads), slot, seq, ops: kept };
        drop(carried);
        self.settler.marked(heads);
        Ok(())
    }

    fn new_batch(&self) -> TrashBatch {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        TrashBatch::new(now, std::process::id(), self.batch_seq.fetch_add(1, Ordering::Relaxed))
    }

    fn clear_temp(&self) -> Result<(), StorageError> {
        for entry in fs::read_dir(&self.temp).map_err(io_error("list", &self.temp))? {
            let path = entry.map_err(io_error("list", &self.temp))?.path();
            let _ = fs::remove_file(path);
        }
        Ok(())
    }
}

/// The carried operations a new record keeps before `new`: all but the
/// puts that a later put of the same document writes over. A put before a
/// move to the trash stays, so a replay trashes the text that was trashed.
fn carry(unsynced: Vec<JournalOp>, new: &[JournalOp]) -> Vec<JournalOp> {
    let later = |i: usize| unsynced[i + 1..].iter().chain(new);
    let kept: Vec<bool> = (0..unsynced.len())
        .map(|i| match &unsynced[i] {
            JournalOp::Put { id, .. } => {
                !matches!(later(i).find(|op| op.id() == id), Some(JournalOp::Put { .. }))
            }
            JournalOp::Trash { .. } => true,
        })
        .collect();
    unsynced.into_iter().zip(kept).filter_map(|(op, keep)| keep.then_some(op)).collect()
}

/// Whether the file at `path` holds something written after `at` (Unix
/// ms): a file that is empty is taken as a write a crash cut short.
fn changed_since(path: &Path, at: u64) -> Result<bool, StorageError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(meta.len() > 0 && stamp_of(&meta).modified_ns / 1_000_000 > at),
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => Ok(false),
        Err(e) => Err(io_error("stat", path)(e)),
    }
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn crash(at: &str) -> ! {
    tracing::error!("fault injection: aborting {at}");
    std::process::abort()
}

/// A folder's stamp, `None` when it is gone.
pub(crate) fn dir_stamp(dir: &Path) -> Result<Option<Stamp>, StorageError> {
    match fs::metadata(dir) {
        Ok(meta) => Ok(Some(stamp_of(&meta))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("stat", dir)(e)),
    }
}

pub(crate) fn stamp_of(meta: &fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    stamp(meta.len(), (meta.mtime(), meta.mtime_nsec()), meta.ino(), (meta.ctime(), meta.ctime_nsec()))
}

/// [`stamp_of`] from a `stat` of the file, the same stamp.
pub(crate) fn stamp_of_stat(stat: &rustix::fs::Stat) -> Stamp {
    #[allow(clippy::unnecessary_cast)] // The fields' types vary by target.
    stamp(
        stat.st_size as u64,
        (stat.st_mtime as i64, stat.st_mtime_nsec as i64),
        stat.st_ino as u64,
        (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
    )
}

/// A file's stamp from its size, modification time (seconds, nanoseconds;
/// 0 before 1970), inode and change time.
fn stamp(len: u64, (mtime, mtime_ns): (i64, i64), ino: u64, (ctime, ctime_ns): (i64, i64)) -> Stamp {
    let modified_ns = match mtime {
        ..0 => 0,
        _ => mtime as u64 * 1_000_000_000 + mtime_ns as u64,
    };
    let tag = ino ^ (ctime_ns as u64).rotate_left(32) ^ ctime as u64;
    Stamp { len, modified_ns, tag }
}

impl Storage for LocalStorage {
    /// Reads a regular file inside the store and nothing else: a symbolic
    /// link is not followed (`O_NOFOLLOW`), a FIFO cannot block the open
    /// (`O_NONBLOCK`) and is refused once opened, and no more than the
    /// read limit is read, however the file grows meanwhile.
    fn read(&self, id: &DocId) -> Result<Option<String>, StorageError> {
        use std::io::Read as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = self.doc_path(id);
        let unreadable = |reason| StorageError::Unreadable { id: id.clone(), reason };
        if self.linked_folder(id).is_some() {
            return Ok(None);
        }
        // A file written while it is read (one a rewrite swapped out and a
        // later one wrote over, or another program's write in place) is
        // read again.
        for attempt in 1.. {
            let file = match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&path)
            {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                    return Err(unreadable(Unreadable::Symlink));
                }
                Err(e) => return Err(io_error("read", &path)(e)),
            };
            let meta = file.metadata().map_err(io_error("stat", &path))?;
            if meta.is_dir() {
                return Ok(None); // A folder named like a document is a folder.
            }
            if !meta.is_file() {
                return Err(unreadable(Unreadable::NotAFile));
            }
            let too_large = |len| unreadable(Unreadable::TooLarge { len, limit: self.read_limit });
            if meta.len() > self.read_limit {
                return Err(too_large(meta.len()));
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            (&file)
                .take(self.read_limit.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(io_error("read", &path))?;
            if bytes.len() as u64 > self.read_limit {
                return Err(too_large(bytes.len() as u64));
            }
            let after = file.metadata().map_err(io_error("stat", &path))?;
            if attempt < READ_ATTEMPTS && stamp_of(&after) != stamp_of(&meta) {
                continue;
            }
            return String::from_utf8(bytes).map(Some).map_err(|_| unreadable(Unreadable::InvalidUtf8));
        }
        unreachable!("the last attempt returns")
    }

    /// A document is a regular file, or a symbolic link or special file
    /// in its place (which exists, and which reading reports); a folder is
    /// not one, and neither is anything behind a symlinked folder.
    fn stamp(&self, id: &DocId) -> Result<Option<Stamp>, StorageError> {
        let path = self.doc_path(id);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => Ok(None),
            Ok(_) if self.linked_folder(id).is_some() => Ok(None),
            Ok(meta) => Ok(Some(stamp_of(&meta))),
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => Ok(None),
            Err(e) => Err(io_error("stat", &path)(e)),
        }
    }

    fn find_folded(&self, id: &DocId) -> Result<Option<DocId>, StorageError> {
        // Walk the id's path segment by segment, following a differently
        // cased twin where there is one, so that `Projects/Silica` finds
        // `projects/silica` (or the folder `projects` when no file matches).
        let generation = self.generation()?;
        let segments: Vec<&str> = id.segments().collect();
        let mut dir = self.places.root.clone();
        let mut actual: Vec<String> = Vec::new();
        for (i, segment) in segments.iter().enumerate() {
            let wanted =
                if i + 1 == segments.len() { format!("{segment}.md") } else { (*segment).to_owned() };
            let Some(name) = self.names.find(&dir, generation, &wanted)? else { break };
            dir.push(&name);
            actual.push(name.strip_suffix(".md").unwrap_or(&name).to_owned());
        }
        let differs = actual.iter().zip(&segments).any(|(a, s)| a != s);
        Ok(if differs { DocId::parse(&actual.join("/")).ok() } else { None })
    }

    fn list(&self) -> Result<Listing, StorageError> {
        self.listings.list(&self.places.root, self.generation()?)
    }

    fn watched(&self, on: bool) {
        self.listings.watched(on);
    }

    fn changed_on_disk(&self, paths: Option<&[PathBuf]>) -> bool {
        self.listings.changed(paths)
    }

    fn apply(&self, change: &Change) -> Result<(), StorageError> {
        let generation = self.generation()?;
        let paths: Vec<PathBuf> =
            change.puts.iter().map(|(id, _)| id).chain(&change.deletes).map(|id| self.doc_path(id)).collect();
        let edits = Self::edits(change, &paths);
        self.names.before_change(&edits, generation)?;
        let mut listings = self.listings.hold();
        let applied = self.apply_unrecorded(change);
        self.set_generation(generation + 1)?;
        match applied {
            Ok(()) => {
                let (puts, removed) = paths.split_at(change.puts.len());
                let puts: Vec<(PathBuf, &DocId)> =
                    puts.iter().cloned().zip(change.puts.iter().map(|(id, _)| id)).collect();
                listings.applied(generation, &puts, removed)?;
                self.names.after_change(&edits, generation, generation + 1)
            }
            Err(e) => {
                self.names.clear();
                listings.forget();
                Err(e)
            }
        }
    }

    fn lock(&self, mode: LockMode) -> Result<StoreLock, StorageError> {
        // A fresh descriptor per holder: flock locks belong to the open file,
        // so threads sharing one descriptor would share (and release) one lock.
        let open = || OpenOptions::new().create(true).truncate(false).write(true).open(&self.lock_path);
        let file = match open() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                tracing::warn!("{} was deleted; recreating it", self.meta.display());
                self.create_layout()?;
                open()
            }
            Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
                set_aside(&self.lock_path).map_err(io_error("set aside", &self.lock_path))?;
                open()
            }
            other => other,
        }
        .or_else(|e| {
            // A read-only store (a read-only mount, a copy without write
            // rights) is still read under a lock: flock needs no write
            // access, so the file is opened for reading.
            if matches!(e.raw_os_error(), Some(libc::EROFS | libc::EACCES | libc::EPERM)) {
                fs::File::open(&self.lock_path)
            } else {
                Err(e)
            }
        })
        .map_err(io_error("open", &self.lock_path))?;
        match mode {
            LockMode::Shared => file.lock_shared(),
            LockMode::Exclusive => file.lock(),
        }
        .map_err(io_error("lock", &self.lock_path))?;
        Ok(StoreLock::new(file))
    }

    fn has_pending_change(&self) -> Result<bool, StorageError> {
        self.journals.may_hold_change()
    }

    fn recover(&self) -> Result<Option<Recovery>, StorageError> {
        self.clear_temp()?;
        self.places.spares.forget();
        self.names.clear();
        let held = self.journals.read()?;
        let torn = held.contains(&Held::Torn);
        let Some((slot, record, applied)) = journal_slots::newest(held) else {
            if torn {
                // Its writer died before the record was durable, so before
                // it touched a document; the record before it, in the
                // other slot, was checkpointed.
                tracing::warn!("dropped a change whose journal its writer did not finish");
                self.journals.clear(None)?;
            }
            return Ok(None);
        };
        // A torn record beside it was the next one's, which never touched
        // a document: this one holds every change not yet synced. Applied
        // in this boot, the files hold what it says, or what someone made
        // of them since.
        if !applied || record.boot.is_none() || record.boot.as_deref() != boot() {
            // The replay changes files without going through `apply`.
            self.listings.hold().forget();
            self.replay(&record)?;
        }
        let recovered =
            (!applied).then(|| Recovery { label: record.label.clone(), replayed: record.ops.len() });
        self.places.sync(&record.ops)?;
        self.places.spares.synced();
        self.journals.clear(Some(slot))?;
        Ok(recovered)
    }

    fn location(&self) -> String {
        self.places.root.display().to_string()
    }

    fn trash_len(&self) -> Result<usize, StorageError> {
        let mut count = 0;
        let mut stack = vec![self.places.trash.clone()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).map_err(io_error("list", &dir))? {
                let entry = entry.map_err(io_error("list", &dir))?;
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(entry.path());
                } else {
                    count += 1;
                }
            }
        }
        Ok(count)
    }
}

impl std::fmt::Debug for LocalStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalStorage").field("root", &self.places.root).field("meta", &self.meta).finish()
    }
}

#[cfg(test)]
mod tests {
    use memtree_core::Ignored;

    use super::*;

    fn id(s: &str) -> DocId {
        DocId::parse(s).unwrap()
    }

    fn store() -> (tempfile::TempDir, LocalStorage) {
        let dir = tempfile::tempdir().unwrap();
        let storage = LocalStorage::open(dir.path()).unwrap();
        (dir, storage)
    }

    fn commit_journal(storage: &LocalStorage, journal: &Journal) {
        journal::write(storage.journals.path(0), &journal::frame(journal)).unwrap();
    }

    fn text(storage: &LocalStorage, id_: &str) -> Option<String> {
        storage.read(&id(id_)).unwrap()
    }

    fn put(storage: &LocalStorage, id_: &str, text: &str) -> Result<(), StorageError> {
        storage.apply(&Change { puts: vec![(id(id_), text.into())], deletes: vec![], label: "t".into() })
    }

    /// The newest record as a crash of the machine may leave it: whole,
    /// its applied mark lost.
    fn unmark(storage: &LocalStorage) {
        let heads = storage.journals.heads().unwrap();
        let (slot, record) = storage.journals.latest_applied(&heads).unwrap().expect("an applied record");
        journal::write(storage.journals.path(slot), &journal::frame(&record)).unwrap();
    }

    /// The journal's newest record, when it is applied.
    fn applied(storage: &LocalStorage) -> Option<Journal> {
        let heads = storage.journals.heads().unwrap();
        storage.journals.latest_applied(&heads).unwrap().map(|(_, record)| record)
    }

    #[test]
    fn a_committed_journal_is_completed_by_recovery() {
        completed_by_recovery(commit_journal);
    }

    #[test]
    fn a_journal_of_an_older_memtree_is_completed_by_recovery() {
        // Plain JSON.
        completed_by_recovery(|storage, journal| {
            fs::write(storage.journals.path(0), serde_json::to_vec(journal).unwrap()).unwrap();
        });
    }

    fn completed_by_recovery(commit: impl Fn(&LocalStorage, &Journal)) {
        let (_dir, storage) = store();
        put(&storage, "old", "old text").unwrap();
        drop(storage.recover().unwrap());
        let batch = TrashBatch::new(1, 2, 3);
        let journal = Journal {
            boot: None,
            seq: 0,
            label: "update root".into(),
            ops: vec![
                JournalOp::Trash { batch: batch.clone(), id: id("old"), at: None },
                JournalOp::Put { id: id("root"), content: "[[new]]".into(), at: None },
                JournalOp::Put { id: id("a/new"), content: "# new\n\n".into(), at: None },
            ],
        };
        commit(&storage, &journal);
        // A crash after the first operation: replaying from the start must
        // still reach the after-state (every operation is idempotent).
        storage.move_to_trash(&batch, &id("old"), &mut ChangedFolders::default()).unwrap();
        assert!(storage.has_pending_change().unwrap());
        assert_eq!(storage.recover().unwrap(), Some(Recovery { label: "update root".into(), replayed: 3 }));
        assert!(!storage.has_pending_change().unwrap());
        assert_eq!(text(&storage, "old"), None);
        assert_eq!(text(&storage, "root").as_deref(), Some("[[new]]"));
        assert_eq!(text(&storage, "a/new").as_deref(), Some("# new\n\n"));
        let trashed = storage.places.trashed(&batch, &id("old"));
        assert_eq!(fs::read_to_string(trashed).unwrap(), "old text");
        assert_eq!(storage.recover().unwrap(), None);
    }

    #[test]
    fn a_journal_cut_short_leaves_the_before_state() {
        let (_dir, storage) = store();
        put(&storage, "root", "before").unwrap();
        let journal = Journal {
            boot: None,
            seq: 0,
            label: "update root".into(),
            ops: vec![JournalOp::Put { id: id("root"), content: "after".into(), at: None }],
        };
        let bytes = journal::frame(&journal);
        // Where the record after root's goes.
        journal::write(storage.journals.path(1), &bytes[..bytes.len() - 1]).unwrap();
        fs::write(storage.temp.join("1-0"), "after").unwrap();
        assert!(storage.has_pending_change().unwrap());
        assert_eq!(storage.recover().unwrap(), None);
        assert_eq!(text(&storage, "root").as_deref(), Some("before"));
        assert!(!storage.has_pending_change().unwrap(), "the torn record is cleared");
        assert_eq!(fs::read_dir(&storage.temp).unwrap().count(), 0, "recovery clears temporary files");
    }

    #[test]
    fn a_damaged_journal_stops_the_store_instead_of_guessing() {
        let (_dir, storage) = store();
        fs::write(storage.journals.path(0), b"not json").unwrap();
        assert!(matches!(storage.recover(), Err(StorageError::BadJournal { .. })));
    }

    fn two_documents(label: &str) -> Change {
        Change {
            puts: vec![(id("root"), format!("[[a]] {label}")), (id("a"), format!("# a {label}"))],
            deletes: vec![],
            label: label.into(),
        }
    }

    fn ops_of(record: &Journal) -> Vec<(&str, Option<&str>)> {
        record
            .ops
            .iter()
            .map(|op| match op {
                JournalOp::Put { id, content, .. } => (id.as_str(), Some(content.as_str())),
                JournalOp::Trash { id, .. } => (id.as_str(), None),
            })
            .collect()
    }

    /// A change leaves its record applied, not yet cleared: nothing to
    /// replay, and the documents to sync at the checkpoint.
    #[test]
    fn a_change_leaves_an_applied_record_for_the_checkpoint() {
        let (_dir, storage) = store();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        storage.apply(&two_documents("one")).unwrap();
        assert_eq!(text(&storage, "a").as_deref(), Some("# a one"));
        assert!(!storage.has_pending_change().unwrap(), "nothing to replay");
        let record = applied(&storage).expect("an applied record");
        assert_eq!(ops_of(&record), [("root", Some("[[a]] one")), ("a", Some("# a one"))]);
        assert!(checkpoint::settle(&storage.journals, &storage.places).unwrap());
        assert_eq!(storage.journals.heads().unwrap(), [Head::Clear; 2]);
        assert!(!checkpoint::settle(&storage.journals, &storage.places).unwrap(), "once");
        drop(lock);
    }

    /// Each change's record carries the operations still unsynced, but
    /// not the puts it writes over; a put before a trashing stays.
    #[test]
    fn the_next_record_carries_what_is_not_yet_synced() {
        let (_dir, storage) = store();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        storage.apply(&two_documents("one")).unwrap();
        put(&storage, "a", "# a, once more").unwrap();
        let record = applied(&storage).unwrap();
        assert_eq!(ops_of(&record), [("root", Some("[[a]] one")), ("a", Some("# a, once more"))]);
        storage.apply(&Change { puts: vec![], deletes: vec![id("a")], label: "prune".into() }).unwrap();
        put(&storage, "a", "# a again").unwrap();
        let record = applied(&storage).unwrap();
        assert_eq!(
            ops_of(&record),
            [
                ("root", Some("[[a]] one")),
                ("a", Some("# a, once more")),
                ("a", None),
                ("a", Some("# a again"))
            ]
        );
        // Another process's store reads the record back, not its cache.
        let other = LocalStorage::open(storage.root()).unwrap();
        put(&other, "b", "# b").unwrap();
        assert_eq!(ops_of(&applied(&storage).unwrap()).len(), 5);
        drop(lock);
    }

    /// A crash of the machine may lose the mark and documents not yet
    /// synced: recovery writes them again from the record, but leaves a
    /// document edited since (by another program) as it is.
    #[test]
    fn recovery_restores_lost_writes_and_leaves_later_edits_alone() {
        let (dir, storage) = store();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        storage.apply(&two_documents("one")).unwrap();
        put(&storage, "b", "# b").unwrap();
        // The disk kept the record but not the mark, nor root's new text
        // (an old file, from before the change) ...
        unmark(&storage);
        let root = dir.path().join("root.md");
        fs::write(&root, "old root").unwrap();
        let long_ago = UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        fs::File::options().write(true).open(&root).unwrap().set_modified(long_ago).unwrap();
        // ... nor b's (a new file, empty) ...
        fs::write(dir.path().join("b.md"), "").unwrap();
        // ... and an editor changed a since.
        std::thread::sleep(std::time::Duration::from_millis(5));
        fs::write(dir.path().join("a.md"), "# a, edited by hand").unwrap();
        assert!(storage.has_pending_change().unwrap());
        assert_eq!(storage.recover().unwrap().map(|r| r.replayed), Some(3));
        assert_eq!(text(&storage, "root").as_deref(), Some("[[a]] one"));
        assert_eq!(text(&storage, "b").as_deref(), Some("# b"));
        assert_eq!(text(&storage, "a").as_deref(), Some("# a, edited by hand"));
        assert_eq!(storage.journals.heads().unwrap(), [Head::Clear; 2], "synced and cleared");
        drop(lock);
    }

    /// Records go to the two slots in turn, each numbered one past the
    /// last and carrying it, whichever process wrote the last one.
    #[test]
    fn records_alternate_between_the_slots_across_processes() {
        let (_dir, storage) = store();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        let newest = |storage: &LocalStorage| {
            let heads = storage.journals.heads().unwrap();
            let (slot, record) = storage.journals.latest_applied(&heads).unwrap().unwrap();
            (slot, record.seq, ops_of(&record).into_iter().map(|(id, _)| id.to_owned()).collect::<Vec<_>>())
        };
        put(&storage, "x", "# x").unwrap();
        assert_eq!(newest(&storage), (0, 1, vec!["x".to_owned()]));
        let other = LocalStorage::open(storage.root()).unwrap();
        put(&other, "y", "# y").unwrap();
        assert_eq!(newest(&storage), (1, 2, vec!["x".to_owned(), "y".to_owned()]));
        assert!(matches!(storage.journals.heads().unwrap(), [Head::Applied { .. }, Head::Applied { .. }]));
        // This process's own record is no longer the newest: it reads the
        // other's back rather than carrying its own.
        put(&storage, "z", "# z").unwrap();
        assert_eq!(newest(&storage), (0, 3, ["x", "y", "z"].map(str::to_owned).to_vec()));
        assert!(checkpoint::settle(&storage.journals, &storage.places).unwrap());
        assert_eq!(storage.journals.heads().unwrap(), [Head::Clear; 2]);
        put(&storage, "x", "# x again").unwrap();
        assert_eq!(newest(&storage), (0, 1, vec!["x".to_owned()]), "numbered anew after a checkpoint");
        drop(lock);
    }

    /// A crash of the machine while a record was written, before it was
    /// durable, cut it short; the last change's document, unsynced, was
    /// lost with it. The record before, in the other slot, is whole and
    /// brings the document back.
    #[test]
    fn a_record_cut_short_keeps_the_one_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let storage = LocalStorage::open(dir.path()).unwrap();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        put(&storage, "a", "# a, acknowledged").unwrap();
        let heads = storage.journals.heads().unwrap();
        let (slot, mut record) = storage.journals.latest_applied(&heads).unwrap().unwrap();
        // As a machine's earlier boot left it: applied, its document not
        // synced.
        record.boot = Some("an earlier boot".into());
        journal::write(storage.journals.path(slot), &journal::frame(&record)).unwrap();
        journal::mark_applied(storage.journals.path(slot)).unwrap();
        let next = journal::frame(&Journal {
            label: "next".into(),
            ops: record.ops.clone(),
            boot: record.boot.clone(),
            seq: record.seq + 1,
        });
        journal::write(storage.journals.path(journal_slots::next_slot(Some(slot))), &next[..next.len() / 2])
            .unwrap();
        let a = dir.path().join("a.md");
        fs::write(&a, "").unwrap();
        let long_ago = UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        fs::File::options().write(true).open(&a).unwrap().set_modified(long_ago).unwrap();
        drop(lock);
        drop(storage);
        let reopened = LocalStorage::open(dir.path()).unwrap();
        assert!(!reopened.has_pending_change().unwrap());
        assert_eq!(text(&reopened, "a").as_deref(), Some("# a, acknowledged"));
        assert_eq!(reopened.journals.heads().unwrap(), [Head::Clear; 2]);
    }

    /// The machine crashed after a change's applied mark reached the
    /// disk but before its document did: the next open writes it again.
    #[test]
    fn an_open_completes_an_applied_record_a_crash_may_have_cut() {
        let dir = tempfile::tempdir().unwrap();
        drop(LocalStorage::open(dir.path()).unwrap());
        // As a change leaves it (written here, so no settler of a live
        // store checkpoints it first), with its document cut by a crash.
        let journal = dir.path().join(".memtree/journal.json");
        let at = Some(unix_ms());
        let record = Journal {
            boot: None,
            seq: 0,
            label: "t".into(),
            ops: vec![JournalOp::Put { id: id("root"), content: "[[a]] one".into(), at }],
        };
        journal::write(&journal, &journal::frame(&record)).unwrap();
        journal::mark_applied(&journal).unwrap();
        let root = dir.path().join("root.md");
        fs::write(&root, "old root").unwrap();
        let long_ago = UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        fs::File::options().write(true).open(&root).unwrap().set_modified(long_ago).unwrap();
        let reopened = LocalStorage::open(dir.path()).unwrap();
        assert_eq!(text(&reopened, "root").as_deref(), Some("[[a]] one"));
        assert_eq!(journal::head(&journal).unwrap(), Head::Clear);
        drop(reopened);
        // Of this boot, the page cache held the record's documents: what
        // is gone since (deleted by hand) stays gone.
        let record = Journal {
            boot: boot().map(str::to_owned),
            seq: 0,
            label: "t".into(),
            ops: vec![JournalOp::Put { id: id("gone"), content: "# gone".into(), at }],
        };
        journal::write(&journal, &journal::frame(&record)).unwrap();
        journal::mark_applied(&journal).unwrap();
        let reopened = LocalStorage::open(dir.path()).unwrap();
        assert_eq!(text(&reopened, "gone"), None);
        assert_eq!(journal::head(&journal).unwrap(), Head::Clear);
    }

    /// A record carrying a document written then trashed: replaying it
    /// writes the document again, which is the replay's own write, and
    /// trashes it again.
    #[test]
    fn a_replay_trashes_again_what_it_wrote_again() {
        let (_dir, storage) = store();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        put(&storage, "c0", "# c0").unwrap();
        storage
            .apply(&Change {
                puts: vec![(id("c1"), "# c1".into())],
                deletes: vec![id("c0")],
                label: "t".into(),
            })
            .unwrap();
        let record = applied(&storage).unwrap();
        assert_eq!(ops_of(&record), [("c0", Some("# c0")), ("c0", None), ("c1", Some("# c1"))]);
        std::thread::sleep(std::time::Duration::from_millis(5));
        unmark(&storage);
        storage.recover().unwrap();
        assert_eq!((text(&storage, "c0"), text(&storage, "c1").as_deref()), (None, Some("# c1")));
        drop(lock);
    }

    /// A burst of changes to many documents syncs them once the record
    /// would grow past the limit, so each change writes a bounded record.
    #[test]
    fn a_record_carries_no_more_than_the_limit() {
        let (_dir, storage) = store();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        let text_ = "x".repeat(3000);
        let mut longest = 0;
        for n in 0..100 {
            put(&storage, &format!("d{n}"), &text_).unwrap();
            longest = longest.max(journal::frame(&applied(&storage).unwrap()).len());
        }
        assert!(longest <= CARRY_LIMIT + text_.len() + 200, "{longest}");
        assert!(longest > CARRY_LIMIT / 2, "{longest}: operations are carried");
        assert_eq!(text(&storage, "d0").as_deref(), Some(text_.as_str()));
        drop(lock);
    }

    fn inode(storage: &LocalStorage, id_: &str) -> u64 {
        use std::os::unix::fs::MetadataExt as _;
        fs::metadata(storage.doc_path(&id(id_))).unwrap().ino()
    }

    #[test]
    fn a_rewrite_writes_over_the_old_file_only_after_a_checkpoint() {
        let (_dir, storage) = store();
        // Keeps the settler from checkpointing on its own.
        let _held = storage.lock(LockMode::Shared).unwrap();
        put(&storage, "a", "one").unwrap();
        let old = inode(&storage, "a");
        put(&storage, "a", "two").unwrap();
        put(&storage, "b", "bee").unwrap();
        assert_ne!(inode(&storage, "b"), old, "written over before its swap was durable");
        checkpoint::settle(&storage.journals, &storage.places).unwrap();
        put(&storage, "c", "sea").unwrap();
        assert_eq!(inode(&storage, "c"), old, "the swapped-out file is used again");
        assert_eq!(
            [text(&storage, "a"), text(&storage, "b"), text(&storage, "c")],
            [Some("two".into()), Some("bee".into()), Some("sea".into())]
        );
    }

    #[test]
    fn writes_that_never_pause_use_the_files_they_freed() {
        let (_dir, storage) = store();
        let _held = storage.lock(LockMode::Shared).unwrap();
        let mut files = std::collections::HashSet::new();
        // 40 documents of 3 KB pass the carry limit every 20 or so
        // writes: the writer checkpoints itself.
        for n in 0..200 {
            put(&storage, &format!("d{}", n % 40), &format!("{n}{}", "x".repeat(3000))).unwrap();
            files.insert(inode(&storage, &format!("d{}", n % 40)));
        }
        assert!(files.len() < 120, "{} files made for 200 writes", files.len());
        assert!(text(&storage, "d39").unwrap().starts_with("199x"));
    }

    #[test]
    fn a_document_with_another_name_is_never_written_over() {
        let (dir, storage) = store();
        let _held = storage.lock(LockMode::Shared).unwrap();
        put(&storage, "a", "one").unwrap();
        let link = dir.path().join("backup-of-a");
        fs::hard_link(storage.doc_path(&id("a")), &link).unwrap();
        put(&storage, "a", "two").unwrap();
        checkpoint::settle(&storage.journals, &storage.places).unwrap();
        for (doc, text) in [("b", "bee"), ("c", "sea"), ("a", "three")] {
            put(&storage, doc, text).unwrap();
        }
        assert_eq!(fs::read_to_string(&link).unwrap(), "one");
        assert_eq!(text(&storage, "a").as_deref(), Some("three"));
    }

    #[test]
    fn spares_are_removed_when_the_store_is_let_go_or_their_process_is_dead() {
        let (dir, storage) = store();
        put(&storage, "a", "one").unwrap();
        put(&storage, "a", "two").unwrap();
        let temp = dir.path().join(".memtree/tmp");
        assert_eq!(fs::read_dir(&temp).unwrap().count(), 1, "the old file is kept");
        drop(storage);
        assert_eq!(fs::read_dir(&temp).unwrap().count(), 0);
        // A killed process's: no process has an id past the kernel's limit.
        fs::write(temp.join("999999999-3"), "old").unwrap();
        fs::write(temp.join(format!("{}-999", std::process::id())), "a live one's").unwrap();
        let _storage = LocalStorage::open(dir.path()).unwrap();
        let left: Vec<_> = fs::read_dir(&temp).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [std::ffi::OsString::from(format!("{}-999", std::process::id()))]);
    }

    #[test]
    fn writes_go_on_when_the_spare_files_are_gone() {
        let (_dir, storage) = store();
        let _held = storage.lock(LockMode::Shared).unwrap();
        put(&storage, "a", "one").unwrap();
        put(&storage, "a", "two").unwrap();
        checkpoint::settle(&storage.journals, &storage.places).unwrap();
        // As another process's recovery would.
        storage.clear_temp().unwrap();
        put(&storage, "b", "bee").unwrap();
        assert_eq!([text(&storage, "a"), text(&storage, "b")], [Some("two".into()), Some("bee".into())]);
    }

    /// Another process's record carries this one's operations, and its
    /// writer checkpoints them: this process's pause is not the store's.
    #[test]
    fn the_checkpoint_is_left_to_the_writer_of_the_newest_record() {
        let (dir, first) = store();
        let second = LocalStorage::open(dir.path()).unwrap();
        // Keeps either settler from checkpointing meanwhile.
        let _held = first.lock(LockMode::Shared).unwrap();
        put(&first, "a", "one").unwrap();
        assert!(first.settler.owns_newest());
        put(&second, "b", "two").unwrap();
        assert!(!first.settler.owns_newest(), "the second process's record is the newest");
        assert!(second.settler.owns_newest());
        let record = applied(&second).unwrap();
        assert_eq!(ops_of(&record), [("a", Some("one")), ("b", Some("two"))], "it carries the first's");
    }

    /// Left alone, the record is checkpointed once changes pause, or when
    /// the store is let go.
    #[test]
    fn an_applied_record_is_checkpointed_when_changes_pause_or_the_store_closes() {
        let (_dir, storage) = store();
        storage.apply(&two_documents("one")).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while applied(&storage).is_some() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(applied(&storage).is_none(), "checkpointed in a quiet moment");
        let journals = storage.journals.clone();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        storage.apply(&two_documents("two")).unwrap();
        drop(lock);
        drop(storage);
        assert_eq!(journals.heads().unwrap(), [Head::Clear; 2], "checkpointed as the store closed");
    }

    #[cfg(unix)]
    #[test]
    fn writes_never_follow_a_symlinked_folder_out_of_the_store() {
        let (dir, storage) = store();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        let err = put(&storage, "escape/x", "x").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn reads_never_leave_the_store_block_or_run_unbounded() {
        use std::os::unix::fs::symlink;
        let (dir, storage) = store();
        let storage = storage.with_read_limit(1000);
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.md"), "outside").unwrap();
        symlink(outside.path().join("secret.md"), dir.path().join("linked.md")).unwrap();
        symlink("/dev/zero", dir.path().join("zero.md")).unwrap();
        symlink(outside.path(), dir.path().join("folder")).unwrap();
        fs::write(dir.path().join("big.md"), "x".repeat(1001)).unwrap();
        let fifo = dir.path().join("fifo.md");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let reason = |id_: &str| match storage.read(&id(id_)) {
            Err(StorageError::Unreadable { reason, .. }) => reason,
            other => panic!("{id_}: {other:?}"),
        };
        assert_eq!(reason("linked"), Unreadable::Symlink);
        assert_eq!(reason("zero"), Unreadable::Symlink);
        assert_eq!(reason("fifo"), Unreadable::NotAFile);
        assert_eq!(reason("big"), Unreadable::TooLarge { len: 1001, limit: 1000 });
        // Each exists as a document (so no write replaces it unseen)...
        for name in ["linked", "zero", "fifo", "big"] {
            assert!(storage.stamp(&id(name)).unwrap().is_some(), "{name}");
        }
        // ...but nothing behind a symlinked folder is in the store.
        assert_eq!(storage.read(&id("folder/secret")).unwrap(), None);
        assert_eq!(storage.stamp(&id("folder/secret")).unwrap(), None);
        let listing = storage.list().unwrap();
        let ids: Vec<&str> = listing.docs.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(ids, ["big", "fifo", "linked", "zero"]);
        assert_eq!(listing.ignored, [("folder".to_owned(), Ignored::LinkedFolder)]);
    }

    #[test]
    fn a_deleted_meta_folder_is_recreated() {
        let (_dir, storage) = store();
        fs::remove_dir_all(&storage.meta).unwrap();
        drop(storage.lock(LockMode::Exclusive).unwrap());
        put(&storage, "root", "x").unwrap();
        assert!(storage.places.trash.is_dir());
    }

    #[test]
    fn case_twins_are_found_after_memtree_and_external_changes() {
        let (dir, storage) = store();
        let change = |puts: &[&str], deletes: &[&str]| Change {
            puts: puts.iter().map(|p| (id(p), String::new())).collect(),
            deletes: deletes.iter().map(|d| id(d)).collect(),
            label: "t".into(),
        };
        storage.apply(&change(&["alpha", "beta"], &[])).unwrap();
        assert_eq!(storage.find_folded(&id("ALPHA")).unwrap(), Some(id("alpha")));
        storage.apply(&change(&["Gamma"], &["alpha"])).unwrap();
        assert_eq!(storage.find_folded(&id("alpha")).unwrap(), None, "a trashed name is forgotten");
        assert_eq!(storage.find_folded(&id("gamma")).unwrap(), Some(id("Gamma")), "a new name is known");
        // Another process's write bumps the generation: the cache is not trusted.
        let other = LocalStorage::open(dir.path()).unwrap();
        other.apply(&change(&["Delta"], &[])).unwrap();
        assert_eq!(storage.find_folded(&id("delta")).unwrap(), Some(id("Delta")));
        // An editor's new file changes the folder's stamp.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(dir.path().join("Epsilon.md"), "").unwrap();
        assert_eq!(storage.find_folded(&id("epsilon")).unwrap(), Some(id("Epsilon")));
        assert_eq!(storage.find_folded(&id("beta")).unwrap(), None, "an exact name is no twin");
    }

    #[test]
    fn faults_parse() {
        assert_eq!("journal".parse::<Fault>(), Ok(Fault::BeforeJournalCommit));
        assert_eq!("apply:2".parse::<Fault>(), Ok(Fault::AfterOps(2)));
        assert!("apply:x".parse::<Fault>().is_err());
        assert!("boom".parse::<Fault>().is_err());
    }

    #[test]
    fn exclusive_lock_excludes_other_descriptors() {
        let (_dir, storage) = store();
        let held = storage.lock(LockMode::Exclusive).unwrap();
        let other = OpenOptions::new().write(true).open(&storage.lock_path).unwrap();
        assert!(matches!(other.try_lock_shared(), Err(fs::TryLockError::WouldBlock)));
        drop(held);
        assert!(other.try_lock().is_ok());
    }
}
