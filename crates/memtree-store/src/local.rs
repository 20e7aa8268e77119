//! `LocalStorage`: a store in a folder of the local file system.
//!
//! Layout: `<id>.md` per document (`/` in an id is a sub-folder), and under
//! `.memtree/`: `lock` (the cross-process lock), `journal.json` (a change in
//! progress), `tmp/` (temporary files, same file system as the documents) and
//! `trash/<batch>/<id>.md` (pruned documents, kept for recovery).

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use memtree_core::{
    Change, DocId, Listing, LockMode, Recovery, Stamp, Storage, StorageError, StoreLock, Unreadable,
};

use crate::atomic_file::{
    ChangedFolders, create_dir_durable, create_dirs, io_error, own_folder, rename_into, set_aside,
    write_atomic, write_temp,
};
use crate::done_settler::DoneSettler;
use crate::folder_names::{Edit, FolderNames};
use crate::journal::{self, Held, Journal, JournalOp, TrashBatch};
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

pub struct LocalStorage {
    root: PathBuf,
    meta: PathBuf,
    temp: PathBuf,
    trash: PathBuf,
    journal: PathBuf,
    lock_path: PathBuf,
    fault: Option<Fault>,
    batch_seq: AtomicU64,
    names: FolderNames,
    listings: Listings,
    /// Largest document read; a larger file is reported, not read.
    read_limit: u64,
    settler: DoneSettler,
}

const META_DIR: &str = ".memtree";

impl LocalStorage {
    /// Opens (creating if needed) the store in `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<LocalStorage, StorageError> {
        let root = root.into();
        let meta = root.join(META_DIR);
        let (journal, lock_path) = (meta.join("journal.json"), meta.join("lock"));
        let storage = LocalStorage {
            settler: DoneSettler::new(journal.clone(), lock_path.clone()),
            temp: meta.join("tmp"),
            trash: meta.join("trash"),
            journal,
            lock_path,
            root,
            meta,
            fault: None,
            batch_seq: AtomicU64::new(0),
            names: FolderNames::default(),
            listings: Listings::default(),
            read_limit: u64::MAX,
        };
        storage.create_layout()?;
        Ok(storage)
    }

    /// Creates the store's folders; also used when someone deleted
    /// `.memtree/` under a running server.
    fn create_layout(&self) -> Result<(), StorageError> {
        for dir in [&self.temp, &self.trash] {
            own_folder(dir).map_err(io_error("set aside", dir))?;
            create_dir_durable(dir)?;
        }
        Ok(())
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
        &self.root
    }

    fn doc_path(&self, id: &DocId) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(id.segments());
        path.set_extension("md");
        path
    }

    /// The first folder on the way to `id`'s file that is a symbolic link:
    /// it could point anywhere outside the store, so nothing is read or
    /// written through it.
    fn linked_folder(&self, id: &DocId) -> Option<PathBuf> {
        let mut dir = self.root.clone();
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

    fn put(&self, id: &DocId, content: &str) -> Result<(), StorageError> {
        self.check_real_folders(id)?;
        write_atomic(&self.temp, &self.doc_path(id), content.as_bytes())
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
        let mut to = self.trash.join(batch.as_str());
        to.extend(id.segments());
        to.set_extension("md");
        let trash_dir = to.parent().expect("trash paths have a parent");
        create_dirs(trash_dir, changed)?;
        fs::rename(&from, &to).map_err(io_error("move to trash", &from))?;
        changed.add(trash_dir);
        let mut dir = from.parent().map(Path::to_path_buf);
        changed.add(dir.as_deref().expect("document paths have a parent"));
        // Remove the folders the move left empty, up to the store root.
        while let Some(d) = dir.filter(|d| *d != self.root) {
            if fs::remove_dir(&d).is_err() {
                break;
            }
            dir = d.parent().map(Path::to_path_buf);
            changed.add(dir.as_deref().expect("store folders have a parent"));
        }
        Ok(())
    }

    /// Carries out a committed journal. Every new text is written and
    /// fsync'd first, then the renames are made, then each folder they
    /// changed is fsync'd once: the journal, marked done by the caller
    /// once this returns, covers a crash at any point in between.
    fn replay(&self, journal: &Journal) -> Result<(), StorageError> {
        let mut changed = ChangedFolders::default();
        let mut temps = Vec::new();
        for op in &journal.ops {
            if let JournalOp::Put { id, content } = op {
                self.check_real_folders(id)?;
                temps.push(write_temp(&self.temp, content.as_bytes())?);
            }
        }
        let mut temps = temps.into_iter();
        for (done, op) in journal.ops.iter().enumerate() {
            if self.fault == Some(Fault::AfterOps(done)) {
                crash(&format!("after {done} operations of {}", journal.label));
            }
            match op {
                JournalOp::Put { id, .. } => {
                    let temp = temps.next().expect("one temporary file per put");
                    rename_into(&temp, &self.doc_path(id), &mut changed)?;
                }
                JournalOp::Trash { batch, id } => self.move_to_trash(batch, id, &mut changed)?,
            }
        }
        changed.sync()?;
        if self.fault == Some(Fault::AfterOps(journal.ops.len())) {
            crash(&format!("after all operations of {}", journal.label));
        }
        Ok(())
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
        if let ([(id, content)], []) = (change.puts.as_slice(), change.deletes.as_slice()) {
            // One file: its own atomic rename is the whole transaction,
            // once no record on disk can be replayed over it.
            journal::settle(&self.journal)?;
            return self.put(id, content);
        }
        let batch = self.new_batch();
        let mut ops: Vec<JournalOp> = change
            .deletes
            .iter()
            .map(|id| JournalOp::Trash { batch: batch.clone(), id: id.clone() })
            .collect();
        ops.extend(
            change
                .puts
                .iter()
                .map(|(id, content)| JournalOp::Put { id: id.clone(), content: content.clone() }),
        );
        for id in change.puts.iter().map(|(id, _)| id) {
            self.check_real_folders(id)?;
        }
        let journal = Journal { label: change.label.clone(), ops };
        let bytes = journal::frame(&journal);
        if self.fault == Some(Fault::BeforeJournalCommit) {
            journal::write(&self.journal, &bytes[..bytes.len() / 2])?;
            crash(&format!("before committing the journal of {}", change.label));
        }
        journal::write(&self.journal, &bytes)?;
        self.replay(&journal)?;
        // The change is durable: the mark need not be, until a write that
        // does not replace the record (see `journal`).
        journal::mark_done(&self.journal)?;
        self.settler.marked();
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
    let modified_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    #[cfg(unix)]
    let tag = {
        use std::os::unix::fs::MetadataExt;
        meta.ino() ^ (meta.ctime_nsec() as u64).rotate_left(32) ^ meta.ctime() as u64
    };
    #[cfg(not(unix))]
    let tag = 0;
    Stamp { len: meta.len(), modified_ns, tag }
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
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(unreadable(Unreadable::Symlink)),
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
        file.take(self.read_limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_error("read", &path))?;
        if bytes.len() as u64 > self.read_limit {
            return Err(too_large(bytes.len() as u64));
        }
        String::from_utf8(bytes).map(Some).map_err(|_| unreadable(Unreadable::InvalidUtf8))
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
        let mut dir = self.root.clone();
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
        self.listings.list(&self.root, self.generation()?)
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
        journal::may_hold_change(&self.journal)
    }

    fn recover(&self) -> Result<Option<Recovery>, StorageError> {
        self.clear_temp()?;
        self.names.clear();
        let Some(bytes) = journal::bytes(&self.journal)? else { return Ok(None) };
        let held = journal::read(&bytes).map_err(|reason| StorageError::BadJournal {
            path: self.journal.display().to_string(),
            reason,
        })?;
        let journal = match held {
            Held::Change(journal) => journal,
            Held::Nothing => return Ok(None),
            Held::Torn => {
                // Its writer died before the record was durable, so before
                // it touched a document.
                tracing::warn!("dropped a change whose journal its writer did not finish");
                journal::clear(&self.journal)?;
                return Ok(None);
            }
        };
        // The replay changes files without going through `apply`.
        self.listings.hold().forget();
        self.replay(&journal)?;
        journal::clear(&self.journal)?;
        Ok(Some(Recovery { label: journal.label, replayed: journal.ops.len() }))
    }

    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn trash_len(&self) -> Result<usize, StorageError> {
        let mut count = 0;
        let mut stack = vec![self.trash.clone()];
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
        f.debug_struct("LocalStorage").field("root", &self.root).field("meta", &self.meta).finish()
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
        journal::write(&storage.journal, &journal::frame(journal)).unwrap();
    }

    fn text(storage: &LocalStorage, id_: &str) -> Option<String> {
        storage.read(&id(id_)).unwrap()
    }

    #[test]
    fn a_committed_journal_is_completed_by_recovery() {
        completed_by_recovery(commit_journal);
    }

    #[test]
    fn a_journal_of_an_older_memtree_is_completed_by_recovery() {
        // Plain JSON, renamed into place.
        completed_by_recovery(|storage, journal| {
            write_atomic(&storage.temp, &storage.journal, &serde_json::to_vec(journal).unwrap()).unwrap();
        });
    }

    fn completed_by_recovery(commit: impl Fn(&LocalStorage, &Journal)) {
        let (_dir, storage) = store();
        storage.put(&id("old"), "old text").unwrap();
        let batch = TrashBatch::new(1, 2, 3);
        let journal = Journal {
            label: "update root".into(),
            ops: vec![
                JournalOp::Trash { batch: batch.clone(), id: id("old") },
                JournalOp::Put { id: id("root"), content: "[[new]]".into() },
                JournalOp::Put { id: id("a/new"), content: "# new\n\n".into() },
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
        let trashed = storage.trash.join(batch.as_str()).join("old.md");
        assert_eq!(fs::read_to_string(trashed).unwrap(), "old text");
        assert_eq!(storage.recover().unwrap(), None);
    }

    #[test]
    fn a_journal_cut_short_leaves_the_before_state() {
        let (_dir, storage) = store();
        storage.put(&id("root"), "before").unwrap();
        let journal = Journal {
            label: "update root".into(),
            ops: vec![JournalOp::Put { id: id("root"), content: "after".into() }],
        };
        let bytes = journal::frame(&journal);
        journal::write(&storage.journal, &bytes[..bytes.len() - 1]).unwrap();
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
        fs::write(&storage.journal, b"not json").unwrap();
        assert!(matches!(storage.recover(), Err(StorageError::BadJournal { .. })));
    }

    #[test]
    fn multi_document_changes_leave_no_journal() {
        let (_dir, storage) = store();
        let change = Change {
            puts: vec![(id("root"), "[[a]]".into()), (id("a"), "# a".into())],
            deletes: vec![],
            label: "t".into(),
        };
        storage.apply(&change).unwrap();
        assert!(!storage.has_pending_change().unwrap());
        assert_eq!(text(&storage, "a").as_deref(), Some("# a"));
    }

    /// Whether the journal holds a done mark not yet made durable.
    fn marked(storage: &LocalStorage) -> bool {
        fs::read(&storage.journal).unwrap()[..journal::DONE_MARK.len()] == journal::DONE_MARK
    }

    fn two_documents(label: &str) -> Change {
        Change {
            puts: vec![(id("root"), format!("[[a]] {label}")), (id("a"), format!("# a {label}"))],
            deletes: vec![],
            label: label.into(),
        }
    }

    /// A multi-document change is acknowledged with its journal marked done
    /// but not synced; a single document's write syncs the mark first, so
    /// no record left on disk can be replayed over it.
    #[test]
    fn a_single_write_settles_the_done_mark_first() {
        let (_dir, storage) = store();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        storage.apply(&two_documents("one")).unwrap();
        assert!(marked(&storage), "the mark waits");
        assert!(!storage.has_pending_change().unwrap());
        assert_eq!(storage.recover().unwrap(), None, "nothing to replay");
        storage
            .apply(&Change {
                puts: vec![(id("a"), "# a, once more".into())],
                deletes: vec![],
                label: "x".into(),
            })
            .unwrap();
        assert!(!marked(&storage), "settled before the write");
        assert_eq!(text(&storage, "a").as_deref(), Some("# a, once more"));
        drop(lock);
    }

    /// Left alone, the mark is settled once changes pause, or when the
    /// store is let go.
    #[test]
    fn the_done_mark_is_settled_when_changes_pause_or_the_store_closes() {
        let (_dir, storage) = store();
        storage.apply(&two_documents("one")).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while marked(&storage) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!marked(&storage), "settled in a quiet moment");
        let journal = storage.journal.clone();
        let lock = storage.lock(LockMode::Exclusive).unwrap();
        storage.apply(&two_documents("two")).unwrap();
        drop(lock);
        drop(storage);
        assert_eq!(fs::read(journal).unwrap()[..16], [0; 16], "settled as the store closed");
    }

    #[cfg(unix)]
    #[test]
    fn writes_never_follow_a_symlinked_folder_out_of_the_store() {
        let (dir, storage) = store();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        let err = storage.put(&id("escape/x"), "x").unwrap_err();
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
        storage.put(&id("root"), "x").unwrap();
        assert!(storage.trash.is_dir());
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
