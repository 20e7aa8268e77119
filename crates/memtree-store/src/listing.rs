//! The store's listing: every document with its stamp, and the files left
//! out. Listing stats every file (about 20 ms for 10,000 on the bench
//! machine), so while a file watcher reports what changes on disk
//! ([`Listings::watched`]), what each folder held is kept and reused while
//! three things hold: the folder's own stamp is unchanged (it moves when a
//! file in it is created, removed or renamed: every atomic save, every
//! memtree write), the store's write generation is the one this process
//! last saw (another memtree process wrote nothing), and the watcher
//! reported nothing in it. A file the watcher reports is stat'ed again; a
//! folder it reports, or one holding a file it does not know, is read again.
//! memtree's own changes are applied to what is kept, as they are made.
//!
//! What is left: a change made in place by another program is seen once the
//! watcher delivers it (usually within a millisecond), not before. Without a
//! watcher nothing is kept and every listing reads every folder.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{CStr, OsStr};
use std::fs;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use memtree_core::{DocId, Ignored, Listing, Stamp, StorageError};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};

use crate::atomic_file::io_error;
use crate::local::{dir_stamp, stamp_of, stamp_of_stat};

/// The most paths reported and not yet listed that are kept; past it,
/// the next listing reads every folder.
const MOST_CHANGED: usize = 4096;

#[derive(Debug, Default)]
pub(crate) struct Listings {
    watched: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    /// The store's write generation the folders are current at.
    generation: u64,
    folders: HashMap<PathBuf, Folder>,
    /// Paths the watcher reported since the last listing.
    changed: HashSet<PathBuf>,
    /// The listing made from `folders`, handed out again while every
    /// folder still holds and nothing was reported or applied since.
    listed: Option<Listing>,
}

/// What one folder held when its stamp was `stamp` (`None`: it was gone,
/// and reading it fails).
#[derive(Debug)]
struct Folder {
    stamp: Option<Stamp>,
    /// The start of its documents' ids: `""` at the top, `a/b/` below.
    prefix: String,
    /// By id: sharing the listing's ids, where a map by file name held a
    /// name of its own for each document (megabytes at 100,000).
    docs: BTreeMap<DocId, Stamp>,
    ignored: Vec<(String, Ignored)>,
    /// Folders inside it, with the id prefix of their documents.
    folders: Vec<(PathBuf, String)>,
}

/// The stamp of the file at `path`, `None` once it is gone.
fn file_stamp(path: &Path) -> Result<Option<Stamp>, StorageError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(stamp_of(&meta))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("stat", path)(e)),
    }
}

impl Folder {
    /// Reads `dir`, whose documents' ids start with `prefix`. Its entries
    /// are read as the kernel hands them over, with no allocation per file
    /// but a document's id: a store's folder may hold 100,000 files.
    fn read(dir: &Path, prefix: &str) -> Result<Folder, StorageError> {
        let stamp = dir_stamp(dir)?;
        let mut folder = Folder {
            stamp,
            prefix: prefix.to_owned(),
            docs: BTreeMap::new(),
            ignored: Vec::new(),
            folders: Vec::new(),
        };
        let listing = |e: rustix::io::Errno| io_error("list", dir)(e.into());
        let fd = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(listing)?;
        // As large as the folder's entries (a directory's size, on ext4),
        // within bounds: a vault of many small folders maps no megabyte each.
        let size = stamp.map_or(DIR_BUFFER, |s| usize::try_from(s.len).unwrap_or(DIR_BUFFER));
        let mut buffer = vec![MaybeUninit::uninit(); size.clamp(DIR_BUFFER_LEAST, DIR_BUFFER)];
        let mut entries = RawDir::new(&fd, &mut buffer);
        let mut documents = Vec::new();
        while let Some(entry) = entries.next() {
            let entry = entry.map_err(listing)?;
            let raw = entry.file_name();
            let Ok(name) = std::str::from_utf8(raw.to_bytes()) else {
                let name = String::from_utf8_lossy(raw.to_bytes());
                folder.ignored.push((format!("{prefix}{name}"), Ignored::NotAnId));
                continue;
            };
            if name.starts_with('.') || name.starts_with('@') {
                continue; // ., .., .memtree, .git, .obsidian, swap files; @namespace trees
            }
            let kind = match entry.file_type() {
                // A file system that does not say: asked, as `std` does.
                FileType::Unknown => rustix::fs::statat(&fd, raw, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|stat| FileType::from_raw_mode(stat.st_mode))
                    .map_err(|e| io_error("stat", &dir.join(name))(e.into()))?,
                kind => kind,
            };
            if kind == FileType::Directory {
                folder.folders.push((dir.join(name), format!("{prefix}{name}/")));
                continue;
            }
            if kind == FileType::Symlink && fs::metadata(dir.join(name)).is_ok_and(|m| m.is_dir()) {
                folder.ignored.push((format!("{prefix}{name}"), Ignored::LinkedFolder));
                continue;
            }
            let Some(stem) = name.strip_suffix(".md") else { continue };
            // A symbolic link or a special file is listed as the document
            // it stands for: reading it says why it cannot be.
            let id = match prefix {
                "" => DocId::parse(stem),
                _ => DocId::parse(&format!("{prefix}{stem}")),
            };
            match id {
                Ok(id) => documents.push(id),
                Err(_) => folder.ignored.push((format!("{prefix}{name}"), Ignored::NotAnId)),
            }
        }
        folder.docs = stamps(dir, &fd, prefix, documents)?;
        Ok(folder)
    }

    /// The id of the document the file `name` of this folder would hold.
    fn id_of(&self, name: &OsStr) -> Option<String> {
        let stem = name.to_str()?.strip_suffix(".md")?;
        Some(format!("{}{stem}", self.prefix))
    }

    /// The stamp kept for the file `name`, if it holds a document.
    fn stamp_mut(&mut self, name: &OsStr) -> Option<&mut Stamp> {
        let id = self.id_of(name)?;
        self.docs.get_mut(id.as_str())
    }

    /// Whether what was kept of the folder still holds, with the files the
    /// watcher reported in it stat'ed again.
    fn still_holds(&mut self, dir: &Path, changed: &HashSet<PathBuf>) -> Result<bool, StorageError> {
        if changed.contains(dir) || dir_stamp(dir)? != self.stamp {
            return Ok(false);
        }
        for path in changed.iter().filter(|p| p.parent() == Some(dir)) {
            let Some(kept) = path.file_name().and_then(|name| self.stamp_mut(name)) else {
                // A file it did not hold: read the folder again, unless the
                // file is not a document and never was one.
                if path.extension().is_some_and(|e| e == "md") || path.is_dir() {
                    return Ok(false);
                }
                continue;
            };
            match file_stamp(path)? {
                Some(stamp) => *kept = stamp,
                None => return Ok(false),
            }
        }
        Ok(true)
    }
}

impl Listings {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A watcher reports every change from now on (`false`: no longer).
    pub fn watched(&self, on: bool) {
        self.watched.store(on, Ordering::Release);
        self.state().forget();
    }

    /// Paths the watcher saw change (`None`: it lost track of some).
    /// Answers whether one may be another program's change rather than
    /// this process's own: a document whose stamp is the one its own write
    /// left is not, nor is anything gone (a removal adds no link).
    pub fn changed(&self, paths: Option<&[PathBuf]>) -> bool {
        let mut state = self.state();
        let Some(paths) = paths else {
            state.forget();
            return true;
        };
        let news = paths.iter().any(|path| state.news(path));
        // Kept for the next listing, if anything is kept for it; a session
        // that writes much and lists seldom forgets instead of growing.
        if !state.folders.is_empty() {
            state.changed.extend(paths.iter().cloned());
            if state.changed.len() > MOST_CHANGED {
                state.forget();
            }
        }
        news
    }

    /// Holds the listing while this process changes the store, so that the
    /// watcher's report of the change waits for [`State::applied`] and is
    /// known for its own.
    pub fn hold(&self) -> MutexGuard<'_, State> {
        self.state()
    }

    /// Every document under `root`, with the files left out. `generation`
    /// is the store's write generation now.
    pub fn list(&self, root: &Path, generation: u64) -> Result<Listing, StorageError> {
        let keep = self.watched.load(Ordering::Acquire);
        let mut state = self.state();
        let changed = std::mem::take(&mut state.changed);
        if !keep || state.generation != generation {
            state.forget();
        }
        // The last listing is current if no folder had to be read again
        // and no report or own change touched what was kept.
        let mut same = changed.is_empty();
        let mut kept: HashMap<PathBuf, Folder> = HashMap::new();
        let mut stack = vec![(root.to_path_buf(), String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            let held = match state.folders.remove(&dir) {
                Some(mut folder) => folder.still_holds(&dir, &changed)?.then_some(folder),
                None => None,
            };
            let folder = match held {
                Some(folder) => folder,
                None => {
                    same = false;
                    Folder::read(&dir, &prefix)?
                }
            };
            stack.extend(folder.folders.iter().cloned());
            kept.insert(dir, folder);
        }
        if let (true, Some(listed)) = (same, &state.listed) {
            let listed = listed.clone();
            state.folders = kept;
            return Ok(listed);
        }
        let mut docs: Vec<(DocId, Stamp)> =
            kept.values().flat_map(|f| f.docs.iter().map(|(id, stamp)| (id.clone(), *stamp))).collect();
        let mut ignored: Vec<(String, Ignored)> =
            kept.values().flat_map(|f| f.ignored.iter().cloned()).collect();
        // Each id is one file's: an unstable sort, which takes no scratch
        // space (as large as the listing, at every write's next listing).
        docs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        ignored.sort();
        let listing = Listing { docs: docs.into(), ignored };
        if keep {
            state.folders = kept;
            state.generation = generation;
            state.listed = Some(listing.clone());
        }
        Ok(listing)
    }
}

impl State {
    /// Forgets every folder kept.
    pub fn forget(&mut self) {
        self.folders.clear();
        self.changed.clear();
        self.listed = None;
    }

    /// Whether `path`, reported changed, may hold a change this process did
    /// not make: a document (or a folder, which may hold documents) that
    /// exists and is not as this process left it.
    fn news(&self, path: &Path) -> bool {
        if path.extension().is_some_and(|e| e == "md") {
            let kept = path
                .parent()
                .and_then(|dir| self.folders.get(dir))
                .and_then(|f| f.docs.get(f.id_of(path.file_name()?)?.as_str()));
            return match file_stamp(path) {
                Ok(Some(stamp)) => kept.is_none_or(|known| *known != stamp),
                Ok(None) => false,
                Err(_) => true,
            };
        }
        path.is_dir()
    }

    /// After this process's change, which moved the write generation from
    /// `generation` to the next: the documents it put (at `puts`, with
    /// their ids) and removed (at `removed`) are applied to the folders
    /// kept, whose stamps are taken again. A folder made or removed by the
    /// change is read again next time, with its parent.
    pub fn applied(
        &mut self,
        generation: u64,
        puts: &[(PathBuf, &DocId)],
        removed: &[PathBuf],
    ) -> Result<(), StorageError> {
        if self.folders.is_empty() {
            return Ok(());
        }
        if self.generation != generation {
            self.forget();
            return Ok(());
        }
        self.generation = generation + 1;
        self.listed = None;
        let mut restamp: HashSet<&Path> = HashSet::new();
        for (path, id) in puts {
            let dir = path.parent().expect("document paths have a parent");
            match (self.folders.get_mut(dir), file_stamp(path)?) {
                (Some(folder), Some(stamp)) => {
                    folder.docs.insert((*id).clone(), stamp);
                    restamp.insert(dir);
                }
                _ => forget_with_parents(&mut self.folders, dir),
            }
        }
        for path in removed {
            let dir = path.parent().expect("document paths have a parent");
            match self.folders.get_mut(dir) {
                Some(folder) if dir.is_dir() => {
                    let name = path.file_name().expect("document paths have a name");
                    if let Some(id) = folder.id_of(name) {
                        folder.docs.remove(id.as_str());
                    }
                    restamp.insert(dir);
                }
                _ => forget_with_parents(&mut self.folders, dir),
            }
        }
        for dir in restamp {
            if let Some(folder) = self.folders.get_mut(dir) {
                folder.stamp = dir_stamp(dir)?;
            }
        }
        Ok(())
    }
}

/// A folder's documents by id, each with its stamp. Each file is
/// stat'ed relative to the open folder (not following links: no path walk
/// per file, its name made in one buffer); a large folder's files on
/// several threads, as the stat calls are most of a listing's time (a
/// store of 100,000 notes in one folder).
fn stamps(
    dir: &Path,
    fd: &OwnedFd,
    prefix: &str,
    mut ids: Vec<DocId>,
) -> Result<BTreeMap<DocId, Stamp>, StorageError> {
    let stamp_all = |ids: Vec<DocId>| {
        let mut name = Vec::new();
        ids.into_iter()
            .map(|id| {
                name.clear();
                name.extend_from_slice(&id.as_str().as_bytes()[prefix.len()..]);
                name.extend_from_slice(b".md\0");
                let file = CStr::from_bytes_with_nul(&name).expect("an id holds no NUL");
                let stat = rustix::fs::statat(fd, file, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| {
                    io_error("stat", &dir.join(OsStr::from_bytes(&name[..name.len() - 1])))(e.into())
                })?;
                Ok((id, stamp_of_stat(&stat)))
            })
            .collect::<Result<Vec<_>, StorageError>>()
    };
    let threads = match ids.len() {
        n if n < PARALLEL_STATS => 1,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()).min(MOST_STAT_THREADS),
    };
    if threads < 2 {
        return Ok(stamp_all(ids)?.into_iter().collect());
    }
    let share = ids.len().div_ceil(threads);
    let mut shares = Vec::new();
    while ids.len() > share {
        shares.push(ids.split_off(ids.len() - share));
    }
    shares.push(ids);
    std::thread::scope(|scope| {
        let running: Vec<_> = shares.into_iter().map(|share| scope.spawn(|| stamp_all(share))).collect();
        let mut docs = Vec::new();
        for thread in running {
            docs.extend(thread.join().expect("a stat thread does not panic")?);
        }
        // Built at once from the sorted entries, not inserted one by one.
        Ok(docs.into_iter().collect())
    })
}

/// The buffer a folder's entries are read into: at most 1 MiB, some
/// 25,000 entries a call, at least 8 KiB.
const DIR_BUFFER: usize = 1 << 20;
const DIR_BUFFER_LEAST: usize = 8 << 10;

/// A folder with at least this many documents is stat'ed on several
/// threads, at most this many.
const PARALLEL_STATS: usize = 4096;
const MOST_STAT_THREADS: usize = 4;

/// Forgets `dir` and every folder above it (one of them gained or lost a
/// folder).
fn forget_with_parents(folders: &mut HashMap<PathBuf, Folder>, dir: &Path) {
    for d in dir.ancestors() {
        folders.remove(d);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use memtree_core::{Change, Storage};

    use super::*;
    use crate::LocalStorage;

    fn id(s: &str) -> DocId {
        DocId::parse(s).unwrap()
    }

    fn change(storage: &LocalStorage, puts: &[&str], deletes: &[&str]) {
        let puts = puts.iter().map(|p| (id(p), format!("# {p}\n"))).collect();
        let deletes = deletes.iter().map(|d| id(d)).collect();
        storage.apply(&Change { puts, deletes, label: "test".into() }).unwrap();
    }

    /// Every change a watched listing is told of, or makes itself, or that
    /// another memtree process makes, is in the next listing, which equals
    /// one that reads every folder.
    #[test]
    fn a_watched_listing_follows_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let storage = LocalStorage::open(root).unwrap();
        let everything = || LocalStorage::open(root).unwrap().list().unwrap();
        storage.watched(true);
        change(&storage, &["root", "a", "b/c", "b/d/e"], &[]);
        let first = storage.list().unwrap();
        assert_eq!(first, everything());
        let again = storage.list().unwrap();
        assert!(Arc::ptr_eq(&first.docs, &again.docs), "nothing changed: the same listing, handed out again");
        // Another program's new file in a folder below the top one, not
        // reported yet: that folder's stamp moved, the others' did not.
        fs::write(root.join("b/unreported.md"), "# made by another program\n").unwrap();
        assert_eq!(storage.list().unwrap(), everything());
        // Its own changes: a document rewritten; a new folder, a folder
        // emptied and removed.
        change(&storage, &["a"], &[]);
        assert_eq!(storage.list().unwrap(), everything());
        change(&storage, &["a", "f/g"], &["b/d/e"]);
        assert_eq!(storage.list().unwrap(), everything());
        assert!(!root.join("b/d").exists());
        // Changes on disk, as a watcher reports them.
        fs::write(root.join("a.md"), "# a, edited in place by another program\n").unwrap();
        fs::write(root.join("b/new.md"), "# new\n").unwrap();
        fs::write(root.join("b/Not an id.md"), "# x\n").unwrap();
        storage.changed_on_disk(Some(&[
            root.join("a.md"),
            root.join("b/new.md"),
            root.join("b/Not an id.md"),
        ]));
        assert_eq!(storage.list().unwrap(), everything());
        // Another memtree process's change, which no watcher reported yet.
        change(&LocalStorage::open(root).unwrap(), &["b/h"], &["a"]);
        assert_eq!(storage.list().unwrap(), everything());
        // The watcher lost track.
        fs::write(root.join("b/c.md"), "# c, edited in place, the event lost\n").unwrap();
        storage.changed_on_disk(None);
        assert_eq!(storage.list().unwrap(), everything());
    }

    /// What is kept is kept: an edit in place no watcher reported is not
    /// seen while watched (the watcher's events are what make this safe),
    /// and is seen at once when nothing is watched.
    #[test]
    fn only_a_watched_listing_keeps_what_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let storage = LocalStorage::open(root).unwrap();
        change(&storage, &["root", "a"], &[]);
        let stamp = |listing: Listing| listing.docs.iter().find(|(d, _)| *d == id("a")).unwrap().1;
        let edit = |text: &str| fs::write(root.join("a.md"), text).unwrap();
        let before = stamp(storage.list().unwrap());
        edit("# a, longer than it was\n");
        assert_ne!(stamp(storage.list().unwrap()), before, "not watched: read again");
        storage.watched(true);
        let before = stamp(storage.list().unwrap());
        edit("# a, longer still than it was before\n");
        assert_eq!(stamp(storage.list().unwrap()), before, "watched and not reported: kept");
        storage.changed_on_disk(Some(&[root.join("a.md")]));
        assert_ne!(stamp(storage.list().unwrap()), before, "reported: stat'ed again");
    }

    /// A report of this process's own write is not taken for another
    /// program's change; an edit from outside, or a new folder, is; a file
    /// gone is not (a removal adds no link).
    #[test]
    fn a_report_tells_its_own_writes_from_another_programs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let storage = LocalStorage::open(root).unwrap();
        storage.watched(true);
        change(&storage, &["root", "a", "b"], &[]);
        storage.list().unwrap();
        change(&storage, &["a"], &["b"]);
        assert!(!storage.changed_on_disk(Some(&[root.join("a.md"), root.join("b.md")])));
        fs::write(root.join("a.md"), "# a, edited by another program\n").unwrap();
        assert!(storage.changed_on_disk(Some(&[root.join("a.md")])));
        fs::create_dir(root.join("moved_in")).unwrap();
        assert!(storage.changed_on_disk(Some(&[root.join("moved_in")])));
        assert!(storage.changed_on_disk(None));
    }

    /// What a folder's names make of it: documents, folders, names left out
    /// and names that are no id (one not even UTF-8).
    #[test]
    fn a_folder_s_names_are_read_as_ids_folders_or_left_out() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for folder in ["sub", "@shared", ".git"] {
            fs::create_dir(root.join(folder)).unwrap();
        }
        for file in
            ["a.md", "sub/c.md", "@shared/x.md", ".git/y.md", ".hidden.md", "notes.txt", "bad name.md"]
        {
            fs::write(root.join(file), "# x\n").unwrap();
        }
        fs::write(root.join(OsStr::from_bytes(b"caf\xe9.md")), "# x\n").unwrap();
        let listing = Listings::default().list(root, 0).unwrap();
        let ids: Vec<&str> = listing.docs.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["a", "sub/c"]);
        assert_eq!(
            listing.ignored,
            [("bad name.md".to_owned(), Ignored::NotAnId), ("caf\u{fffd}.md".to_owned(), Ignored::NotAnId)]
        );
        for (id, stamp) in listing.docs.iter() {
            assert_eq!(file_stamp(&root.join(format!("{id}.md"))).unwrap(), Some(*stamp));
        }
    }

    /// A folder large enough to be stat'ed on several threads lists every
    /// document, each with the stamp a stat of its own gives.
    #[test]
    fn a_large_folder_is_listed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let count = PARALLEL_STATS + 7;
        for i in 0..count {
            fs::write(dir.path().join(format!("n{i}.md")), format!("# {i}\n")).unwrap();
        }
        let listing = Listings::default().list(dir.path(), 0).unwrap();
        assert_eq!(listing.docs.len(), count);
        for (id, stamp) in listing.docs.iter() {
            assert_eq!(file_stamp(&dir.path().join(format!("{id}.md"))).unwrap(), Some(*stamp));
        }
    }

    /// Reports kept for the next listing do not pile up in a session that
    /// writes much and lists seldom.
    #[test]
    fn reports_waiting_for_a_listing_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let listings = Listings::default();
        listings.watched(true);
        listings.list(dir.path(), 0).unwrap();
        for i in 0..=MOST_CHANGED {
            listings.changed(Some(&[dir.path().join(format!("n{i}.md"))]));
            assert!(listings.state().changed.len() <= MOST_CHANGED);
        }
        assert!(listings.state().folders.is_empty(), "forgotten: the next listing reads every folder");
    }
}
