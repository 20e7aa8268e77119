//! `GitHistory`: the store folder is a git repository, and every change is
//! one commit in it — push it to a remote of your own to carry the memory
//! to another machine.
//!
//! A change is queued (`queue.rs`) inside the write and committed after it,
//! by a background thread or at once, from the queued content onto the
//! previous commit's tree — never from the working files, which may already
//! hold a later change. What other programs changed is committed as such
//! when [`History::flush`] looks at the files. The git index follows the
//! commits, so `git status` in the store stays clean.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use git2::{ObjectType, Oid, Repository, Signature, Sort};
use memtree_core::doorbell::{Doorbell, Pause, Woken};
use memtree_core::{Change, DocId, History, HistoryError, HistoryProblem, Prepared, Version};
use thread_priority::ThreadPriority;

use crate::changes::Changes;
use crate::index_tree;
use crate::packs;
use crate::queue::{Queue, Record};
use crate::record_round::{Kept, RecordRound};
use crate::round::{self, Round};

/// The trailer naming the queued record a commit was made from, so a
/// record committed just before a crash is not committed twice.
const RECORD_TRAILER: &str = "Memtree-Record: ";
/// After this long without a change, a server brings the git index along.
const IDLE: Duration = Duration::from_secs(1);
/// The committer waits for writes to pause this long: on two cores, its
/// work (13 ms of CPU a commit in a flat store of 10,000 documents) slows
/// the requests of a burst by a third even at the lowest priority, as both
/// cores are then busy (measured with requests to two servers taken in
/// turn: 1.05 ms with no committer running, 1.4–1.5 ms beside one, even one
/// whose store is in RAM).
const QUIET: Duration = Duration::from_millis(250);
/// ...but not longer than this after a change, so that a long stream of
/// writes is committed as it goes.
const MAX_DELAY: Duration = Duration::from_secs(5);
/// How long a git lock file may be another program's before it is taken
/// for a killed process's leftover.
const STALE_LOCK_WAIT: Duration = Duration::from_secs(1);
/// How often, and how long apart, work that met a git lock held by another
/// program is tried again.
const BUSY_TRIES: usize = 20;
const BUSY_WAIT: Duration = Duration::from_millis(100);
/// Commits per round; their records' files are removed once the round is
/// done, so a crash in between finds them among the last commits.
const BATCH: usize = 16;
/// A queue longer than this many rounds' worth is behind: its records are
/// committed several to a commit, or a sustained stream of writes would
/// outrun the committer (a commit of a flat store of 10,000 documents
/// writes a root tree of 400 KiB, 13 ms of CPU), and history would fall
/// further behind the longer writing went on.
const LAGGING: usize = 2 * BATCH;
/// The most records one commit takes when the queue lags.
const MOST_PER_COMMIT: usize = 64;

/// When queued changes are committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitTiming {
    /// Inside the write (one-shot commands that exit right after).
    AtOnce,
    /// By a background thread, shortly after the write (servers).
    InBackground,
}

pub struct GitHistory {
    root: PathBuf,
    queue: Queue,
    lock_path: PathBuf,
    mode: CommitTiming,
    /// Documents committed since the git index last followed.
    unindexed: Mutex<BTreeSet<DocId>>,
    /// Why the last attempt to commit failed, until one succeeds.
    problem: Mutex<Option<String>>,
    /// The pack builder's window is bounded once a process, not at every
    /// opening of the repository (see [`round::bound_pack_window`]).
    window_bounded: std::sync::Once,
    /// The first commit was made, or found made ([`GitHistory::begun`]).
    started: std::sync::Once,
    /// Rung at each record confirmed, for the committer.
    records: Arc<Doorbell>,
    /// Which commits changed which document, built at the first question.
    changes: Mutex<Changes>,
    /// The trees the last round of queued records left.
    kept: Mutex<Option<Kept>>,
    /// A scan of every document did not get to write the git index: the
    /// next flush scans every document again, as the index's entries for
    /// what that scan found are behind.
    rescan: AtomicBool,
}

/// The history error of `op` failing, which keeps the error beneath as
/// its source: a git lock held by another program is
/// [`HistoryError::Busy`], which passes.
pub(crate) fn backend<E>(op: &'static str) -> impl FnOnce(E) -> HistoryError
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    move |error| {
        let source = error.into();
        match source.downcast_ref::<git2::Error>() {
            Some(git) if git.code() == git2::ErrorCode::Locked => HistoryError::Busy(source),
            _ => HistoryError::Backend { op, source },
        }
    }
}

/// A `.git` that does not open, named: it may be the user's, to repair.
#[derive(Debug, thiserror::Error)]
#[error("{} is damaged: {}", .path.display(), .source.message())]
struct Damaged {
    path: PathBuf,
    source: git2::Error,
}

fn path_of(id: &DocId) -> String {
    format!("{id}.md")
}

fn id_of(path: &Path) -> Option<DocId> {
    DocId::parse(path.to_str()?.strip_suffix(".md")?).ok()
}

impl GitHistory {
    /// The history of the store at `root` (its `.memtree/` folder exists).
    /// The repository is created at the first commit.
    pub fn open(root: &Path, mode: CommitTiming) -> Arc<GitHistory> {
        // libgit2 keeps up to 256 MiB of parsed objects by default; the
        // trees of a large flat store would pile up in every server.
        git2::opts::enable_caching(false);
        // Checking that every object a new tree names exists reads each
        // one's header from its pack: a scan of a store of 100,000
        // documents brought 60 MiB of packs into memory. memtree writes a
        // tree's blobs before the tree.
        git2::opts::strict_object_creation(false);
        let history = Arc::new(GitHistory {
            root: root.to_path_buf(),
            queue: Queue::new(&root.join(".memtree")),
            lock_path: root.join(".memtree").join("history.lock"),
            mode,
            unindexed: Mutex::default(),
            problem: Mutex::default(),
            window_bounded: std::sync::Once::new(),
            started: std::sync::Once::new(),
            records: Arc::new(Doorbell::new()),
            changes: Mutex::default(),
            kept: Mutex::default(),
            rescan: AtomicBool::new(false),
        });
        if let Err(error) = history.queue.repair() {
            tracing::error!(%error, "the history queue's folders cannot be repaired");
        }
        match mode {
            CommitTiming::AtOnce => history.begun(),
            CommitTiming::InBackground => {
                let weak = Arc::downgrade(&history);
                let records = Arc::clone(&history.records);
                std::thread::Builder::new()
                    .name("memtree-history".into())
                    .spawn(move || committer(&weak, &records))
                    .expect("spawning a thread");
            }
        }
        history
    }

    /// Waits for [`GitHistory::begin`], run once: by `open` itself for
    /// the CLI, by a server's committer as it starts, so that a server
    /// answers its client's handshake without it (creating the repository
    /// of a new store is half of that start). Every use of the repository
    /// and every change queued waits for it.
    fn begun(&self) {
        self.started.call_once(|| self.begin());
    }

    /// Makes the first commit, of the documents as they are, if there is
    /// none yet: before this process changes anything, so that its first
    /// change is a commit of its own. Once per store: about 2 s for 10,000
    /// documents, then an open and a look at `HEAD`.
    fn begin(&self) {
        let started = self.locked_repo(|repo| self.start(repo));
        if let Err(error) = &started {
            tracing::error!(%error, "cannot start the history; changes stay queued");
        }
        self.note(&started);
    }

    /// Runs `f` on the repository, opened (or created) anew, while holding
    /// the history lock that serialises committers across processes. Anew,
    /// as a repository object kept would not see the packs and the git
    /// index other processes wrote since: it would write again, loose, an
    /// object already in a pack, and write back an index older than theirs.
    ///
    /// A git lock taken meanwhile by a git command (a `git status` run in
    /// the store) fails the work with [`HistoryError::Busy`]: it is tried
    /// again a few times, as everything done here may be done again.
    fn with_repo<T>(&self, f: impl FnMut(&Repository) -> Result<T, HistoryError>) -> Result<T, HistoryError> {
        self.begun();
        self.locked_repo(f)
    }

    /// [`GitHistory::with_repo`] without waiting for the first commit.
    fn locked_repo<T>(
        &self,
        mut f: impl FnMut(&Repository) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock_path)
            .or_else(|e| match e.kind() {
                // A read-only store's history is still read under the
                // lock: flock needs no write access.
                std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
                    File::open(&self.lock_path)
                }
                _ => Err(e),
            })
            .map_err(backend("open history lock"))?;
        lock.lock().map_err(backend("take history lock"))?;
        let mut tries = 0;
        loop {
            self.clear_stale_locks();
            match f(&self.open_repo()?) {
                Err(HistoryError::Busy(_)) if tries < BUSY_TRIES => {
                    tries += 1;
                    std::thread::sleep(BUSY_WAIT);
                }
                done => return done,
            }
        }
    }

    /// Removes git lock files a killed memtree process left: every memtree
    /// process touches the repository only under the history lock, which
    /// this one now holds, so a lock file that outlives a short wait (for a
    /// git command run by hand) belongs to no one.
    fn clear_stale_locks(&self) {
        let git = self.root.join(".git");
        let mut locks = vec![git.join("index.lock"), git.join("HEAD.lock")];
        if let Ok(entries) = fs::read_dir(git.join("refs").join("heads")) {
            locks.extend(
                entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "lock")),
            );
        }
        for lock in locks.into_iter().filter(|l| l.exists()) {
            let deadline = std::time::Instant::now() + STALE_LOCK_WAIT;
            while lock.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if lock.exists() {
                tracing::warn!(path = %lock.display(), "removing a stale git lock file");
                let _ = fs::remove_file(&lock);
            }
        }
    }

    /// Remembers whether the last attempt to reach the repository worked;
    /// a git lock another program held says nothing either way.
    fn note<T>(&self, result: &Result<T, HistoryError>) {
        let problem = match result {
            Err(HistoryError::Busy(_)) => return,
            Err(error) => Some(error.to_string()),
            Ok(_) => None,
        };
        *self.problem.lock().unwrap_or_else(|e| e.into_inner()) = problem;
    }

    /// Opens the store's repository, creating it when there is none. A
    /// `.git` that does not open is an error, never replaced: it may be
    /// the user's, damaged, and hold versions worth repairing.
    fn open_repo(&self) -> Result<Repository, HistoryError> {
        let git = self.root.join(".git");
        let repo = match Repository::open(&self.root) {
            Ok(repo) => repo,
            Err(error) if fs::symlink_metadata(&git).is_ok() => {
                return Err(backend("open repository")(Damaged { path: git, source: error }));
            }
            Err(_) => {
                let repo = Repository::init(&self.root).map_err(backend("create repository"))?;
                // memtree's own state and namespace trees are not documents.
                let exclude = self.root.join(".git").join("info").join("exclude");
                fs::create_dir_all(exclude.parent().expect("has a parent"))
                    .map_err(backend("create .git/info"))?;
                fs::write(&exclude, "/.memtree/\n/@*/\n").map_err(backend("write .git/info/exclude"))?;
                repo
            }
        };
        self.window_bounded.call_once(|| round::bound_pack_window(&repo));
        Ok(repo)
    }

    fn signature() -> Result<Signature<'static>, HistoryError> {
        Signature::now("memtree", "memtree@localhost").map_err(backend("make signature"))
    }

    /// Commits up to [`BATCH`] commits' worth of queued records, oldest
    /// first, in one round: a record a commit, or several when the queue
    /// lags ([`LAGGING`]). Returns the documents they touched and the
    /// records done.
    fn drain(&self, repo: &Repository) -> Result<(Vec<DocId>, Vec<u128>), HistoryError> {
        let (mut touched, mut done) = (Vec::new(), Vec::new());
        let queued = self.queue.names().map_err(backend("list queued changes"))?;
        let per_commit = (queued.len() / LAGGING).clamp(1, MOST_PER_COMMIT);
        let names: Vec<u128> = queued.into_iter().take(BATCH * per_commit).collect();
        if names.is_empty() {
            return Ok((touched, done));
        }
        self.start(repo)?;
        let started = std::time::Instant::now();
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut round = RecordRound::open(&self.root, names.len().div_ceil(per_commit), kept)?;
        let committed = recent_records(round.start()?)?;
        for group in names.chunks(per_commit) {
            done.extend(group);
            let mut records = Vec::with_capacity(group.len());
            for &name in group {
                if committed.contains(&name) {
                    continue; // Committed just before a crash.
                }
                match self.queue.read(name) {
                    Ok(record) => records.push((name, record)),
                    Err(error) => {
                        tracing::error!(%error, name, "unreadable history record; the next scan commits its files");
                    }
                }
            }
            touched.extend(commit_records(&mut round, &records)?);
        }
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(round.finish()?);
        let ms = started.elapsed().as_millis() as u64;
        tracing::debug!(records = done.len(), per_commit, ms, "committed a round");
        Ok((touched, done))
    }

    /// Commits every queued record, [`BATCH`] at a time.
    fn drain_all(&self, repo: &Repository) -> Result<(), HistoryError> {
        loop {
            let (touched, done) = self.drain(repo)?;
            self.unindexed().extend(touched);
            for name in &done {
                self.queue.remove(*name).map_err(backend("remove queued change"))?;
            }
            if done.len() < BATCH {
                return Ok(());
            }
            // Under a stream of writes this loop may run long: packs are
            // rolled up as they come, not only once it ends.
            packs::compact(repo, packs::LOOSE_BYTES)?;
        }
    }

    /// Makes the first commit, if there is none: the documents the store
    /// held before history began, as they are. Their files go into packs of
    /// bounded size first, then the round packs its trees and commit.
    fn start(&self, repo: &Repository) -> Result<(), HistoryError> {
        if head_commit(repo)?.is_some() {
            return Ok(());
        }
        let round = match round::write_blobs(&self.root, &document_files(&self.root)?, round::BLOBS_PER_PACK)?
        {
            true => Round::open(&self.root, round::PACKED)?.with_blobs_written(),
            false => Round::open(&self.root, round::PACKED)?,
        };
        let mut index = round.repo().index().map_err(backend("open git index"))?;
        add_documents(round.repo(), &mut index, &self.root, None)?;
        {
            let tree = round
                .repo()
                .find_tree(write_index_tree(round.repo(), &index)?)
                .map_err(backend("read tree"))?;
            let message = match tree_len(&tree)? {
                1 => "history starts: 1 document\n".to_owned(),
                n => format!("history starts: {n} documents\n"),
            };
            round.commit(&Self::signature()?, &message, &tree)?;
        }
        round.finish()?;
        index.write().map_err(backend("write git index"))
    }

    /// Brings the git index to the files (`changed` ids, or all) and
    /// commits what differs from the last commit: changes made by other
    /// programs.
    fn scan(&self, changed: Option<&[DocId]>) -> Result<(), HistoryError> {
        let round = Round::open(&self.root, changed.map_or(usize::MAX, <[DocId]>::len))?;
        let mut index = round.repo().index().map_err(backend("open git index"))?;
        let behind = self.add_to_index(round.repo(), &mut index, changed)?;
        let recorded = Self::record_scan(round, &mut index);
        if recorded.is_err() {
            // The index is not written (a git command may hold its lock):
            // what the scan brought along waits to be brought along again.
            self.unindexed().extend(behind.into_iter().chain(changed.into_iter().flatten().cloned()));
        }
        if changed.is_none() {
            self.rescan.store(recorded.is_err(), Ordering::Release);
        }
        recorded
    }

    /// Commits what the scanned `index` holds that the last commit does
    /// not, then writes the index. Before the first commit, neither: the
    /// first drain commits every document and writes the index.
    fn record_scan(round: Round, index: &mut git2::Index) -> Result<(), HistoryError> {
        let tree_id = write_index_tree(round.repo(), index)?;
        let Some(base) = round.tip()?.map(|head| head.tree()).transpose().map_err(backend("read tree"))?
        else {
            return Ok(()); // The first drain commits everything.
        };
        if base.id() != tree_id {
            let tree = round.repo().find_tree(tree_id).map_err(backend("read tree"))?;
            let diff = round
                .repo()
                .diff_tree_to_tree(Some(&base), Some(&tree), None)
                .map_err(backend("diff trees"))?;
            let (mut added, mut changed, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
            for delta in diff.deltas() {
                let path = delta.new_file().path().or(delta.old_file().path());
                let Some(id) = path.and_then(id_of) else { continue };
                match delta.status() {
                    git2::Delta::Added => added.push(id),
                    git2::Delta::Deleted => deleted.push(id),
                    _ => changed.push(id),
                }
            }
            let message = format!(
                "changed outside memtree\n\n{}",
                memtree_core::history::describe(&added, &changed, &deleted)
            );
            round.commit(&Self::signature()?, &message, &tree)?;
        }
        drop(base);
        // The index names the round's blobs: written once they are.
        round.finish()?;
        index.write().map_err(backend("write git index"))
    }

    fn resolve<'r>(repo: &'r Repository, version: &str) -> Result<git2::Commit<'r>, HistoryError> {
        repo.revparse_single(version)
            .and_then(|o| o.peel_to_commit())
            .map_err(|_| HistoryError::UnknownVersion(version.to_owned()))
    }
}

impl GitHistory {
    /// Brings the git index to the files of the documents committed since
    /// it last did, so that `git status` in the store is clean.
    /// Whether each document's file is as the last commit has it (or
    /// absent from both). A file that git would filter on the way in may
    /// look changed: the scan then finds out.
    fn as_committed(&self, repo: &Repository, ids: &[DocId]) -> Result<bool, HistoryError> {
        let Some(head) = head_commit(repo)? else { return Ok(false) };
        let tree = head.tree().map_err(backend("read tree"))?;
        for id in ids {
            let path = path_of(id);
            let file = self.root.join(&path);
            let on_disk = match file.is_file() {
                true => match read_steady(&file, "hash file", || Oid::hash_file(ObjectType::Blob, &file))? {
                    Some(oid) => Some(oid),
                    None => return Ok(false), // being written: the scan sees to it
                },
                false => None,
            };
            if on_disk != tree.get_path(Path::new(&path)).ok().map(|e| e.id()) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn sync_index(&self, repo: &Repository) -> Result<(), HistoryError> {
        if self.unindexed().is_empty() {
            return Ok(());
        }
        let mut index = repo.index().map_err(backend("open git index"))?;
        let behind = self.add_to_index(repo, &mut index, Some(&[]))?;
        let written = index.write().map_err(backend("write git index"));
        if written.is_err() {
            self.unindexed().extend(behind);
        }
        written
    }

    /// The documents committed since the git index last followed them.
    fn unindexed(&self) -> MutexGuard<'_, BTreeSet<DocId>> {
        self.unindexed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings `index` to the files of `changed` (or of every document) and
    /// of the documents committed since it last was, which it returns: to
    /// wait again if the index is not written after all. A file being
    /// written meanwhile is left for a later flush.
    fn add_to_index(
        &self,
        repo: &Repository,
        index: &mut git2::Index,
        changed: Option<&[DocId]>,
    ) -> Result<Vec<DocId>, HistoryError> {
        let behind: Vec<DocId> = std::mem::take(&mut *self.unindexed()).into_iter().collect();
        let ids = changed.map(|changed| [changed, &behind].concat());
        match add_documents(repo, index, &self.root, ids.as_deref()) {
            Ok(unsteady) => {
                self.unindexed().extend(unsteady);
                Ok(behind)
            }
            Err(error) => {
                self.unindexed().extend(behind);
                Err(error)
            }
        }
    }
}

/// The tree of `index`'s entries, written to `repo`'s objects.
fn write_index_tree(repo: &Repository, index: &git2::Index) -> Result<Oid, HistoryError> {
    let odb = repo.odb().map_err(backend("open object database"))?;
    index_tree::write(&odb, index).map_err(backend("write tree"))
}

/// The files of the store's documents, relative to `root`, with their
/// sizes: every `.md` file whose path is an id, outside hidden folders and
/// namespace trees.
fn document_files(root: &Path) -> Result<Vec<(PathBuf, u64)>, HistoryError> {
    let mut files = Vec::new();
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        let dir = root.join(&folder);
        let entries = fs::read_dir(&dir).map_err(backend("list the store"))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str().filter(|n| !n.starts_with('.') && !n.starts_with('@')) else {
                continue;
            };
            let path = folder.join(name);
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push(path),
                Ok(kind) if kind.is_file() && id_of(&path).is_some() => {
                    files.push((path, entry.metadata().map_or(0, |m| m.len())));
                }
                _ => {}
            }
        }
    }
    Ok(files)
}

/// How often a read of a file that another program is writing meanwhile
/// is tried before it is left for a later flush.
const STEADY_TRIES: usize = 3;

/// Runs `read` over the file at `path`, which another program may be
/// writing in place meanwhile (an editor saving; the watcher reports the
/// first bytes): git then fails on a size that moved under it. A read
/// that fails is tried again; `None` when it never succeeded and the file
/// moved meanwhile, so that a later flush records it once it holds still.
/// A file that fails without moving (no permission) is an error.
fn read_steady<T>(
    path: &Path,
    op: &'static str,
    mut read: impl FnMut() -> Result<T, git2::Error>,
) -> Result<Option<T>, HistoryError> {
    let seen = || fs::metadata(path).ok().map(|m| (m.len(), m.modified().ok()));
    let mut moved = false;
    let mut last = None;
    for _ in 0..STEADY_TRIES {
        let before = seen();
        match read() {
            Ok(value) => return Ok(Some(value)),
            Err(error) => {
                moved |= seen() != before;
                last = Some(error);
            }
        }
    }
    match (moved, last) {
        (false, Some(error)) => Err(backend(op)(error)),
        _ => Ok(None),
    }
}

/// Adds documents to the index: the given ids (removing those whose file is
/// gone), or every `.md` file whose name is a valid id. Adding them all first
/// records the file data (time, size, inode) of files whose text is as
/// indexed: otherwise a store copied, cloned or restored (every file new to
/// the index's eyes) has each of its files read and hashed again at every
/// start, seconds at 10,000 documents. Returns the given ids left out
/// because another program was writing their file.
fn add_documents(
    repo: &Repository,
    index: &mut git2::Index,
    root: &Path,
    only: Option<&[DocId]>,
) -> Result<Vec<DocId>, HistoryError> {
    let Some(ids) = only else {
        return add_every_document(repo, index, root);
    };
    let mut unsteady = Vec::new();
    for id in ids {
        add_or_remove(index, root, Path::new(&path_of(id)), id, &mut unsteady)?;
    }
    Ok(unsteady)
}

/// Adds the file at `path` (under `root`) to the index, or takes its entry
/// out when the file is gone; `id` goes to `unsteady` when another program
/// was writing the file.
fn add_or_remove(
    index: &mut git2::Index,
    root: &Path,
    path: &Path,
    id: &DocId,
    unsteady: &mut Vec<DocId>,
) -> Result<(), HistoryError> {
    let file = root.join(path);
    if file.is_file() {
        if read_steady(&file, "add to git index", || index.add_path(path))?.is_none() {
            unsteady.push(id.clone());
        }
        return Ok(());
    }
    match index.remove_path(path) {
        Ok(()) => Ok(()),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(()),
        Err(e) => Err(backend("remove from git index")(e)),
    }
}

/// Brings the index to every document's file: an entry whose file is gone
/// is removed, one whose file data (size, times, inode) moved, or that was
/// written too close to the index to trust it, is read and hashed again,
/// and a file the index lacks is added unless `.gitignore` names it. One
/// pass over the entries, then one walk of the folder reading each
/// directory's entries as they come: libgit2's `add_all` and `update_all`
/// walk the folder holding a directory's entries at once, 32 MB for a
/// directory of 100,000 files. Returns the documents left out because
/// another program was writing their file.
fn add_every_document(
    repo: &Repository,
    index: &mut git2::Index,
    root: &Path,
) -> Result<Vec<DocId>, HistoryError> {
    // A file changed within the clock tick in which the index was written
    // may keep the file data the index holds ("racy git"): read it again.
    let written = fs::metadata(repo.path().join("index")).and_then(|m| m.modified()).ok();
    let mut stale = Vec::new();
    for entry in index.iter() {
        let Some((path, id)) = String::from_utf8(entry.path.clone())
            .ok()
            .and_then(|path| id_of(Path::new(&path)).map(|id| (path, id)))
        else {
            continue;
        };
        let unchanged = fs::symlink_metadata(root.join(&path))
            .is_ok_and(|meta| meta.is_file() && same_file_data(&entry, &meta) && before(&entry, written));
        if !unchanged {
            stale.push((path, id));
        }
    }
    let mut unsteady = Vec::new();
    for (path, id) in stale {
        add_or_remove(index, root, Path::new(&path), &id, &mut unsteady)?;
    }
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        let entries = match fs::read_dir(root.join(&folder)) {
            Ok(entries) => entries,
            // Removed during the walk: the next scan takes its files out.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(backend("list the store's folder")(e)),
        };
        for entry in entries {
            let entry = entry.map_err(backend("list the store's folder"))?;
            let Ok(name) = entry.file_name().into_string() else { continue };
            let path = folder.join(&name);
            let kind = entry.file_type().map_err(backend("list the store's folder"))?;
            if kind.is_dir() {
                // Only folders that can hold ids: not `.git` or `.memtree`.
                if DocId::parse(&name).is_ok() {
                    folders.push(path);
                }
                continue;
            }
            let Some(id) = id_of(&path).filter(|_| kind.is_file()) else { continue };
            if index.get_path(&path, 0).is_some() || repo.is_path_ignored(&path).unwrap_or(false) {
                continue;
            }
            add_or_remove(index, root, &path, &id, &mut unsteady)?;
        }
    }
    Ok(unsteady)
}

/// Whether a file's size, times and inode are those the index recorded
/// (as git stores them: truncated to 32 bits).
#[cfg(unix)]
fn same_file_data(entry: &git2::IndexEntry, meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    entry.file_size == meta.size() as u32
        && entry.mtime.seconds() == meta.mtime() as i32
        && entry.mtime.nanoseconds() == meta.mtime_nsec() as u32
        && entry.ctime.seconds() == meta.ctime() as i32
        && entry.ctime.nanoseconds() == meta.ctime_nsec() as u32
        && entry.ino == meta.ino() as u32
}

#[cfg(not(unix))]
fn same_file_data(_: &git2::IndexEntry, _: &fs::Metadata) -> bool {
    false
}

/// Whether the entry's file was last changed before the index was written.
fn before(entry: &git2::IndexEntry, written: Option<std::time::SystemTime>) -> bool {
    let modified = std::time::UNIX_EPOCH
        + Duration::new(u64::from(entry.mtime.seconds() as u32), entry.mtime.nanoseconds());
    written.is_some_and(|written| modified < written)
}

/// Commits `records` (oldest first) as one commit after the round's tip,
/// unless together they change nothing there; returns the documents they
/// added, changed or deleted. One record keeps its label; several are
/// labelled by their count and their labels, and each is named by a
/// trailer.
fn commit_records(round: &mut RecordRound, records: &[(u128, Record)]) -> Result<Vec<DocId>, HistoryError> {
    let Some((_, last)) = records.last() else { return Ok(Vec::new()) };
    // Each document's last text (or deletion) over the records.
    let mut last_state: std::collections::BTreeMap<&DocId, Option<&str>> = std::collections::BTreeMap::new();
    for (_, record) in records {
        for id in &record.deletes {
            last_state.insert(id, None);
        }
        for (id, text) in &record.puts {
            last_state.insert(id, Some(text));
        }
    }
    let paths: Vec<String> = last_state.keys().map(|id| path_of(id)).collect();
    let befores = round.files(&paths)?;
    let mut files = Vec::new();
    let (mut added, mut changed, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    for (((id, text), path), before) in last_state.into_iter().zip(paths).zip(befores) {
        match (text, before) {
            (Some(text), before) => {
                let blob = round.blob(text.as_bytes())?;
                match before {
                    Some(old) if old == blob => continue,
                    Some(_) => changed.push(id.clone()),
                    None => added.push(id.clone()),
                }
                files.push((path, Some(blob)));
            }
            (None, Some(_)) => {
                files.push((path, None));
                deleted.push(id.clone());
            }
            (None, None) => {}
        }
    }
    if files.is_empty() {
        // Nothing to record: the changes rewrote documents as they were,
        // or history began after them (its first commit has them).
        return Ok(Vec::new());
    }
    let tree = round.tree_with(files)?;
    let label = match records {
        [(_, record)] => record.label.clone(),
        _ => {
            let labels: Vec<&str> = records.iter().map(|(_, r)| r.label.as_str()).collect();
            let mut label = format!("{} changes: {}", records.len(), labels.join("; "));
            if label.len() > MAX_GROUP_LABEL {
                let cut = (0..=MAX_GROUP_LABEL).rev().find(|&i| label.is_char_boundary(i)).unwrap_or(0);
                label.truncate(cut);
                label.push('…');
            }
            label
        }
    };
    let trailers: String = records.iter().map(|(name, _)| format!("{RECORD_TRAILER}{name}\n")).collect();
    let message =
        format!("{label}\n\n{}{trailers}", memtree_core::history::describe(&added, &changed, &deleted));
    round.commit(last.time, &message, tree)?;
    Ok(added.into_iter().chain(changed).chain(deleted).collect())
}

/// The first line of a commit of several records stops about here.
const MAX_GROUP_LABEL: usize = 200;

/// The records named by the last [`BATCH`] commits up to `tip`.
fn recent_records(tip: Option<git2::Commit<'_>>) -> Result<std::collections::HashSet<u128>, HistoryError> {
    let mut names = std::collections::HashSet::new();
    let mut commit = tip;
    for _ in 0..BATCH {
        let Some(c) = commit else { break };
        let message = c.message().unwrap_or("");
        names.extend(
            message.lines().filter_map(|l| l.strip_prefix(RECORD_TRAILER)?.trim().parse::<u128>().ok()),
        );
        commit = c.parent(0).ok();
    }
    Ok(names)
}

pub(crate) fn head_commit(repo: &Repository) -> Result<Option<git2::Commit<'_>>, HistoryError> {
    match repo.head() {
        Ok(head) => head.peel_to_commit().map(Some).map_err(backend("read HEAD commit")),
        Err(e) if matches!(e.code(), git2::ErrorCode::UnbornBranch | git2::ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(backend("read HEAD")(e)),
    }
}

fn tree_len(tree: &git2::Tree<'_>) -> Result<usize, HistoryError> {
    let mut count = 0;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        count += usize::from(entry.kind() == Some(ObjectType::Blob));
        git2::TreeWalkResult::Ok
    })
    .map_err(backend("walk tree"))?;
    Ok(count)
}

/// The background committer: wakes at a record, waits for the writes to
/// pause, commits what is queued. Ends with the history.
fn committer(history: &std::sync::Weak<GitHistory>, records: &Arc<Doorbell>) {
    // At the thread's first priority: a first write may be waiting for it.
    match history.upgrade() {
        Some(history) => history.begun(),
        None => return,
    }
    // Commits may wait; requests may not: on two cores the committer must
    // not take the CPU from the server.
    if let Err(error) = thread_priority::set_current_thread_priority(ThreadPriority::Min) {
        tracing::debug!(?error, "the committer runs at normal priority");
    }
    let pause = Pause { quiet: QUIET, longest: Some(MAX_DELAY), idle: Some(IDLE) };
    loop {
        let woken = records.wait_for_pause(pause);
        let Some(history) = history.upgrade() else { return };
        if woken == Woken::Idle {
            if let Err(error) = history.with_repo(|repo| history.sync_index(repo)) {
                tracing::warn!(%error, "bringing the git index along failed");
            }
            continue;
        }
        if let Err(error) = history.flush(Some(&[])) {
            if matches!(error, HistoryError::Busy(_)) {
                // Try again after the next quiet spell, not only at the next write.
                records.ring();
            }
            tracing::error!(%error, "committing history failed; the queue is kept for the next try");
        }
    }
}

impl GitHistory {
    /// Commits confirmed records now, or wakes the committer.
    fn committed(&self) -> Result<(), HistoryError> {
        match self.mode {
            CommitTiming::AtOnce => self.flush(Some(&[])),
            CommitTiming::InBackground => {
                self.records.ring();
                Ok(())
            }
        }
    }
}

impl History for GitHistory {
    fn prepare(&self, change: &Change) -> Result<Prepared, HistoryError> {
        // The first commit holds the documents as they were before this
        // process changed any.
        self.begun();
        self.queue.prepare(change).map(Prepared).map_err(backend("queue change"))
    }

    fn confirm(&self, record: Prepared) -> Result<(), HistoryError> {
        self.queue.confirm(record.0).map_err(backend("confirm queued change"))?;
        self.committed()
    }

    fn abandon(&self, record: Prepared) -> Result<(), HistoryError> {
        self.queue.abandon(record.0).map_err(backend("drop queued change"))
    }

    fn has_unsettled(&self) -> Result<bool, HistoryError> {
        Ok(!self.queue.prepared().map_err(backend("list prepared changes"))?.is_empty())
    }

    fn settle(&self, applied: &dyn Fn(&Change) -> bool) -> Result<(), HistoryError> {
        let mut confirmed = false;
        for name in self.queue.prepared().map_err(backend("list prepared changes"))? {
            let keep = self
                .queue
                .read_prepared(name)
                .is_ok_and(|r| applied(&Change { puts: r.puts, deletes: r.deletes, label: r.label }));
            tracing::warn!(name, applied = keep, "settling a change a killed process was making");
            if keep {
                self.queue.confirm(name).map_err(backend("confirm queued change"))?;
                confirmed = true;
            } else {
                self.queue.abandon(name).map_err(backend("drop queued change"))?;
            }
        }
        if confirmed { self.committed() } else { Ok(()) }
    }

    fn flush(&self, changed: Option<&[DocId]>) -> Result<(), HistoryError> {
        // Cleared only by a scan of every document that wrote the index: a
        // flush that fails before it leaves the scan due.
        let changed = if self.rescan.load(Ordering::Acquire) { None } else { changed };
        let flushed = self.with_repo(|repo| {
            self.drain_all(repo)?;
            match changed {
                // A server brings the git index along when idle, not
                // between writes.
                Some([]) if self.mode == CommitTiming::InBackground => {}
                Some([]) => self.sync_index(repo)?,
                // Nothing to record (the usual case when a document's
                // history is asked for): no git index read and written.
                Some(ids) if self.as_committed(repo, ids)? => {}
                // The scan brings the git index along: a second copy of
                // it (tens of megabytes at 100,000 documents) is not read.
                other => self.scan(other)?,
            }
            packs::compact(repo, packs::LOOSE_BYTES)
        });
        self.note(&flushed);
        flushed
    }

    fn ready_flush(&self, changed: Option<&[DocId]>) -> Result<(), HistoryError> {
        let queued = !self.queue.names().map_err(backend("list queued changes"))?.is_empty();
        if !queued && (changed.is_some() || self.unindexed().is_empty()) {
            return Ok(());
        }
        let readied = self.with_repo(|repo| {
            self.drain_all(repo)?;
            // The files memtree wrote: the scan then reads only the others.
            if changed.is_none() { self.sync_index(repo) } else { Ok(()) }
        });
        self.note(&readied);
        readied
    }

    fn log(&self, id: Option<&DocId>, limit: usize) -> Result<Vec<Version>, HistoryError> {
        self.with_repo(|repo| {
            let Some(head) = head_commit(repo)? else { return Ok(Vec::new()) };
            let version = |oid: Oid, present: bool| -> Result<Version, HistoryError> {
                let commit = repo.find_commit(oid).map_err(backend("read commit"))?;
                let message =
                    commit.message().unwrap_or("").lines().take_while(|l| !l.starts_with(RECORD_TRAILER));
                let message: Vec<&str> = message.filter(|l| !l.is_empty()).collect();
                Ok(Version {
                    version: oid.to_string()[..10].to_owned(),
                    time: commit.time().seconds(),
                    message: message.join("; "),
                    present,
                })
            };
            if let Some(id) = id {
                let mut changes = self.changes.lock().unwrap_or_else(|e| e.into_inner());
                let touches = changes.of(repo, head.id(), &path_of(id))?;
                return touches.iter().take(limit).map(|t| version(t.commit, t.present)).collect();
            }
            let mut walk = repo.revwalk().map_err(backend("walk history"))?;
            walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME).map_err(backend("walk history"))?;
            walk.push(head.id()).map_err(backend("walk history"))?;
            walk.take(limit).map(|oid| version(oid.map_err(backend("walk history"))?, true)).collect()
        })
    }

    fn read_at(&self, version: &str, id: &DocId) -> Result<Option<String>, HistoryError> {
        self.with_repo(|repo| {
            let tree = Self::resolve(repo, version)?.tree().map_err(backend("read tree"))?;
            let Ok(entry) = tree.get_path(Path::new(&path_of(id))) else { return Ok(None) };
            let blob = repo.find_blob(entry.id()).map_err(backend("read blob"))?;
            Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
        })
    }

    fn problem(&self) -> Option<String> {
        self.problem.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn check(&self) -> Result<(), HistoryProblem> {
        let checked = self.with_repo(|repo| {
            if let Some(head) = head_commit(repo)? {
                head.tree().map_err(backend("read tree"))?;
            }
            Ok(())
        });
        let reason = match (checked, self.problem()) {
            (Err(error), _) => error.to_string(),
            (Ok(()), Some(problem)) => problem,
            (Ok(()), None) => return Ok(()),
        };
        let queued = self.queue.names().map_or(0, |names| names.len());
        Err(HistoryProblem { reason, queued })
    }

    fn backlog(&self) -> memtree_core::Backlog {
        let queued = self.queue.names().unwrap_or_default();
        // A record's name is the time it was queued, in nanoseconds.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let oldest_secs =
            queued.first().map(|&name| (now.as_nanos().saturating_sub(name) / 1_000_000_000) as u64);
        let packs = packs::packs(&self.root.join(".git").join("objects").join("pack")).len();
        memtree_core::Backlog { queued: queued.len(), oldest_secs, packs: Some(packs) }
    }

    fn before(&self, version: &str) -> Result<Vec<(DocId, Option<String>)>, HistoryError> {
        self.with_repo(|repo| {
            let commit = Self::resolve(repo, version)?;
            let tree = commit.tree().map_err(backend("read tree"))?;
            let parent =
                commit.parent(0).ok().map(|p| p.tree()).transpose().map_err(backend("read parent tree"))?;
            let diff =
                repo.diff_tree_to_tree(parent.as_ref(), Some(&tree), None).map_err(backend("diff trees"))?;
            let mut out = BTreeSet::new();
            for delta in diff.deltas() {
                let Some(id) = delta.old_file().path().or(delta.new_file().path()).and_then(id_of) else {
                    continue;
                };
                let old = delta.old_file().id();
                let text = if old.is_zero() {
                    None
                } else {
                    let blob = repo.find_blob(old).map_err(backend("read blob"))?;
                    Some(String::from_utf8_lossy(blob.content()).into_owned())
                };
                out.insert((id, text));
            }
            Ok(out.into_iter().collect())
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A store whose root holds `root` (none: no root), with its history.
    fn store(root: Option<&str>, mode: CommitTiming) -> (tempfile::TempDir, Arc<GitHistory>) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(".memtree")).unwrap();
        if let Some(text) = root {
            fs::write(dir.path().join("root.md"), text).unwrap();
        }
        let history = GitHistory::open(dir.path(), mode);
        // As a server's first write does.
        history.begun();
        (dir, history)
    }

    /// Queues `change` as a write does, prepared then confirmed.
    fn queue(history: &GitHistory, change: &Change) -> u128 {
        let name = history.queue.prepare(change).unwrap();
        history.queue.confirm(name).unwrap();
        name
    }

    fn root_change(text: String, label: String) -> Change {
        Change { puts: vec![(DocId::root(), text)], deletes: vec![], label }
    }

    fn pack_count(objects: &Path) -> usize {
        packs::packs(&objects.join("pack")).len()
    }

    /// git itself reads the repository: the branch and every object are sound.
    pub(crate) fn assert_fsck(dir: &Path) {
        let fsck = std::process::Command::new("git").arg("-C").arg(dir).args(["fsck", "--strict"]).output();
        if let Ok(fsck) = fsck {
            assert!(fsck.status.success(), "{}", String::from_utf8_lossy(&fsck.stderr));
        }
    }

    /// The trees a round keeps for the next one are dropped once another
    /// commit moved the branch (a scan's here; another process's alike):
    /// the next round starts from the branch, and keeps what it added.
    #[test]
    fn kept_trees_give_way_to_a_commit_made_meanwhile() {
        let (dir, history) = store(Some("# Root\n"), CommitTiming::AtOnce);
        // A write: the file, and its change queued.
        let put = |id: &str, text: &str| {
            fs::write(dir.path().join(format!("{id}.md")), text).unwrap();
            Change {
                puts: vec![(DocId::parse(id).unwrap(), text.to_owned())],
                deletes: vec![],
                label: format!("put {id}"),
            }
        };
        queue(&history, &put("a", "# A\n"));
        history.flush(Some(&[])).unwrap();
        fs::write(dir.path().join("b.md"), "# B, written by hand\n").unwrap();
        history.flush(None).unwrap();
        queue(&history, &put("c", "# C\n"));
        history.flush(Some(&[])).unwrap();
        let repo = Repository::open(dir.path()).unwrap();
        let tree = repo.head().unwrap().peel_to_tree().unwrap();
        let names: Vec<String> = tree.iter().map(|e| e.name().unwrap().to_owned()).collect();
        assert_eq!(names, ["a.md", "b.md", "c.md", "root.md"]);
        assert_fsck(dir.path());
    }

    /// History's first commit of a store made outside memtree writes its
    /// files in packs of bounded size, not all at once from memory.
    #[test]
    fn the_first_commit_of_a_large_store_is_written_in_bounded_packs() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(".memtree")).unwrap();
        fs::create_dir_all(dir.path().join("deep/er")).unwrap();
        fs::write(dir.path().join("root.md"), "# root\n").unwrap();
        fs::write(dir.path().join("deep/er/n.md"), "# deep\n").unwrap();
        fs::write(dir.path().join("Not an id.md"), "# left out\n").unwrap();
        // Files that do not compress to nothing.
        let mut seed = 1u64;
        let mut noise = || {
            (0..(1 << 20) / 16)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    format!("{:016x}", seed)
                })
                .collect::<String>()
        };
        for i in 0..20 {
            fs::write(dir.path().join(format!("n{i}.md")), format!("# n{i}\n{}\n", noise())).unwrap();
        }
        let history = GitHistory::open(dir.path(), CommitTiming::AtOnce);
        history.flush(Some(&[])).unwrap();
        // 21 MiB: one pack of 16 MiB of files, one of the rest, one of the
        // trees and the commit.
        let objects = dir.path().join(".git/objects");
        assert_eq!(pack_count(&objects), 3);
        assert!(packs::loose_objects(&objects).is_empty());
        let log = history.log(None, 10).unwrap();
        assert_eq!(log.len(), 1);
        let at = &log[0].version;
        assert_eq!(history.read_at(at, &DocId::parse("n19").unwrap()).unwrap().unwrap().len(), (1 << 20) + 7);
        assert_eq!(
            history.read_at(at, &DocId::parse("deep/er/n").unwrap()).unwrap().as_deref(),
            Some("# deep\n")
        );
        assert_fsck(dir.path());
    }

    #[test]
    fn a_backend_error_keeps_its_git_cause() {
        let (dir, history) = store(Some("# v1\n"), CommitTiming::AtOnce);
        // A `.git` whose objects were lost: it opens, but HEAD names nothing.
        let objects = dir.path().join(".git").join("objects");
        fs::remove_dir_all(&objects).unwrap();
        fs::create_dir(&objects).unwrap();
        let error = history.log(None, 10).unwrap_err();
        assert!(matches!(error, HistoryError::Backend { op: "read HEAD commit", .. }), "{error:?}");
        let cause = std::error::Error::source(&error).expect("a cause");
        assert!(cause.downcast_ref::<git2::Error>().is_some(), "{cause:?}");
        assert_eq!(error.to_string(), format!("read HEAD commit: {cause}"));
    }

    #[test]
    fn a_git_lock_held_elsewhere_is_busy_and_keeps_its_cause() {
        let locked = git2::Error::new(git2::ErrorCode::Locked, git2::ErrorClass::Index, "index.lock exists");
        let error = backend("write git index")(locked);
        assert!(matches!(error, HistoryError::Busy(_)), "{error:?}");
        let cause = std::error::Error::source(&error).expect("a cause");
        assert!(cause.downcast_ref::<git2::Error>().is_some_and(|git| git.code() == git2::ErrorCode::Locked));
    }

    /// A server's first commit is made on its committer's thread, and a
    /// change waits for it: the first commit holds the documents as they
    /// were before the change.
    #[test]
    fn a_change_waits_for_the_first_commit_made_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(".memtree")).unwrap();
        fs::write(dir.path().join("root.md"), "# v0\n").unwrap();
        // Another process's committer holds the history for a while.
        let held = File::create(dir.path().join(".memtree/history.lock")).unwrap();
        held.lock().unwrap();
        let history = GitHistory::open(dir.path(), CommitTiming::InBackground);
        let writer = {
            let (history, root) = (Arc::clone(&history), dir.path().join("root.md"));
            std::thread::spawn(move || {
                let record = history.prepare(&root_change("# v1\n".into(), "update root".into())).unwrap();
                fs::write(root, "# v1\n").unwrap();
                history.confirm(record).unwrap();
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(fs::read_to_string(dir.path().join("root.md")).unwrap(), "# v0\n", "the change waits");
        drop(held);
        writer.join().unwrap();
        history.flush(Some(&[])).unwrap();
        let log = history.log(None, 10).unwrap();
        let messages: Vec<&str> = log.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(messages, ["update root; Changed: root", "history starts: 1 document"]);
        assert_eq!(history.read_at(&log[1].version, &DocId::root()).unwrap().as_deref(), Some("# v0\n"));
    }

    #[test]
    fn a_record_committed_just_before_a_crash_is_not_committed_twice() {
        let (dir, history) = store(Some("# v1\n"), CommitTiming::AtOnce);
        fs::write(dir.path().join("root.md"), "# v2\n").unwrap();
        let name = queue(&history, &root_change("# v2\n".into(), "update root".into()));
        let record = fs::read(history.queue.path(name)).unwrap();
        history.flush(Some(&[])).unwrap();
        // As if the process died after the commit, before removing the record.
        fs::write(history.queue.path(name), record).unwrap();
        history.flush(Some(&[])).unwrap();
        let log = history.log(None, 10).unwrap();
        assert_eq!(
            log.iter().map(|v| v.message.as_str()).collect::<Vec<_>>(),
            ["update root; Changed: root", "history starts: 1 document"]
        );
        assert!(history.queue.names().unwrap().is_empty());
    }

    #[test]
    fn a_record_torn_by_a_kill_is_dropped_when_settling() {
        let (_dir, history) = store(None, CommitTiming::AtOnce);
        let name = history.queue.prepare(&root_change("# r\n".into(), "update root".into())).unwrap();
        let whole = history.queue.read_prepared(name).unwrap();
        assert_eq!(whole.label, "update root");
        // As if the writer died mid-record: its change was never applied.
        let path = history.queue.prepared_path(name);
        fs::write(&path, &fs::read(&path).unwrap()[..10]).unwrap();
        assert!(history.has_unsettled().unwrap());
        history.settle(&|_| true).unwrap();
        assert!(!history.has_unsettled().unwrap());
        assert!(history.queue.names().unwrap().is_empty(), "not confirmed");
    }

    /// A store whose files are new to the git index's eyes (copied, cloned,
    /// restored: same text, other times) has its files' data recorded by
    /// the next scan, so that later starts need not read them again.
    #[test]
    fn a_scan_records_the_file_data_of_unchanged_documents() {
        let (dir, history) = store(Some("# Root\n- [[a]]\n"), CommitTiming::AtOnce);
        fs::write(dir.path().join("a.md"), "# A\n").unwrap();
        history.flush(None).unwrap();
        let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        for name in ["root.md", "a.md"] {
            File::options()
                .write(true)
                .open(dir.path().join(name))
                .unwrap()
                .set_modified(an_hour_ago)
                .unwrap();
        }
        let recorded = |name: &str| {
            let repo = Repository::open(dir.path()).unwrap();
            let entry = repo.index().unwrap().get_path(Path::new(name), 0).unwrap();
            entry.mtime.seconds()
        };
        let on_disk = |name: &str| {
            let modified = fs::metadata(dir.path().join(name)).unwrap().modified().unwrap();
            modified.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i32
        };
        assert_ne!(recorded("a.md"), on_disk("a.md"));
        let versions = history.log(None, 10).unwrap().len();
        history.flush(None).unwrap();
        for name in ["root.md", "a.md"] {
            assert_eq!(recorded(name), on_disk(name), "{name}");
        }
        assert_eq!(history.log(None, 10).unwrap().len(), versions, "the same text is no change");
    }

    #[test]
    fn packing_keeps_every_version_and_leaves_no_loose_object() {
        let (dir, history) = store(Some("# v0\n"), CommitTiming::AtOnce);
        for i in 1..=5 {
            let text = format!("# v{i}\n");
            fs::write(dir.path().join("root.md"), &text).unwrap();
            queue(&history, &root_change(text, format!("update {i}")));
            history.flush(Some(&[])).unwrap();
        }
        history.with_repo(|repo| packs::compact(repo, 0)).unwrap();
        let objects = dir.path().join(".git/objects");
        assert_eq!(packs::loose_objects(&objects).len(), 0);
        assert_eq!(pack_count(&objects), 2, "the first commit's pack and the loose objects'");
        let log = history.log(Some(&DocId::root()), 10).unwrap();
        assert_eq!(log.len(), 6);
        for (i, v) in log.iter().rev().enumerate() {
            assert_eq!(history.read_at(&v.version, &DocId::root()).unwrap().unwrap(), format!("# v{i}\n"));
        }
        // Committing goes on after packing.
        fs::write(dir.path().join("root.md"), "# v6\n").unwrap();
        queue(&history, &root_change("# v6\n".into(), "update 6".into()));
        history.flush(None).unwrap();
        assert_eq!(history.log(None, 10).unwrap().len(), 7);
    }

    #[test]
    fn many_bursts_leave_a_few_packs_and_every_version() {
        let (dir, history) = store(Some("# v0\n"), CommitTiming::InBackground);
        let objects = dir.path().join(".git/objects");
        let (bursts, size) = (40, round::PACKED);
        let mut most = 0;
        for burst in 0..bursts {
            for i in 0..size {
                let n = burst * size + i + 1;
                queue(&history, &root_change(format!("# v{n}\n"), format!("update {n}")));
            }
            history.flush(Some(&[])).unwrap();
            most = most.max(pack_count(&objects));
        }
        assert!(most <= 32, "packs are rolled up: at most {most}");
        assert!(pack_count(&objects) < most, "a roll-up happened");
        assert!(packs::loose_objects(&objects).is_empty());
        let log = history.log(Some(&DocId::root()), 1000).unwrap();
        assert_eq!(log.len(), bursts * size + 1);
        for (i, v) in log.iter().rev().enumerate().step_by(37) {
            assert_eq!(history.read_at(&v.version, &DocId::root()).unwrap().unwrap(), format!("# v{i}\n"));
        }
        assert_fsck(dir.path());
    }

    #[test]
    fn a_lagging_queue_is_committed_several_changes_to_a_version_and_loses_none() {
        let (dir, history) = store(Some("# v0\n"), CommitTiming::InBackground);
        let many = LAGGING * 3;
        let mut names = Vec::new();
        for i in 1..=many {
            // Each change adds a note and deletes the one before it, the
            // last of them deleted in the same version it was added in.
            let change = Change {
                puts: vec![
                    (DocId::root(), format!("# v{i}\n")),
                    (DocId::parse(&format!("n{i}")).unwrap(), "x\n".into()),
                ],
                deletes: (i > 1).then(|| DocId::parse(&format!("n{}", i - 1)).unwrap()).into_iter().collect(),
                label: format!("update {i}"),
            };
            names.push(queue(&history, &change));
        }
        let backlog = history.backlog();
        assert_eq!((backlog.queued, backlog.packs), (many, Some(1)), "{backlog}");
        history.flush(Some(&[])).unwrap();
        assert_eq!(history.backlog().queued, 0);
        assert_eq!(history.backlog().to_string(), "every change has its version; 5 pack files", "4 rounds");
        let log = history.log(None, 1000).unwrap();
        assert!(log.len() < 1 + many, "{} versions for {many} changes", log.len());
        let newest = &log[0].version;
        assert_eq!(history.read_at(newest, &DocId::root()).unwrap().unwrap(), format!("# v{many}\n"));
        assert_eq!(
            history.read_at(newest, &DocId::parse(&format!("n{many}")).unwrap()).unwrap().unwrap(),
            "x\n"
        );
        assert!(history.read_at(newest, &DocId::parse("n1").unwrap()).unwrap().is_none(), "deleted later");
        // Every record is named by the version that holds it.
        let committed = history
            .with_repo(|repo| {
                let mut commit = head_commit(repo)?;
                let mut all = std::collections::HashSet::new();
                while let Some(c) = commit {
                    all.extend(recent_records(Some(c.clone()))?);
                    commit = c.parent(0).ok();
                }
                Ok(all)
            })
            .unwrap();
        assert!(names.iter().all(|n| committed.contains(n)));
        // The oldest changes, queued 3 rounds deep, went 3 to a version.
        let first = &log[log.len() - 2].message;
        assert!(first.starts_with("3 changes: update 1; update 2; update 3"), "{first}");
        assert_fsck(dir.path());
    }

    #[test]
    fn a_burst_of_changes_is_one_pack_with_a_commit_each() {
        let (dir, history) = store(Some("# v0\n"), CommitTiming::InBackground);
        let objects = dir.path().join(".git/objects");
        assert_eq!(pack_count(&objects), 1, "the first commit is a pack");
        let burst = round::PACKED + 3;
        // Queued as a server's writes are, then committed in one round.
        for i in 1..=burst {
            let change = Change {
                puts: vec![
                    (DocId::root(), format!("# v{i}\n")),
                    (DocId::parse(&format!("n{i}")).unwrap(), "x\n".into()),
                    (DocId::parse(&format!("deep/er/d{i}")).unwrap(), format!("# d{i}\n")),
                ],
                // In a sub-folder, the one before deleted.
                deletes: (i > 1)
                    .then(|| DocId::parse(&format!("deep/er/d{}", i - 1)).unwrap())
                    .into_iter()
                    .collect(),
                label: format!("update {i}"),
            };
            queue(&history, &change);
        }
        history.flush(Some(&[])).unwrap();
        assert_eq!(pack_count(&objects), 2, "the burst is one more pack");
        assert!(packs::loose_objects(&objects).is_empty());
        let log = history.log(Some(&DocId::root()), 100).unwrap();
        assert_eq!(log.len(), burst + 1);
        for (i, v) in log.iter().rev().enumerate() {
            assert_eq!(history.read_at(&v.version, &DocId::root()).unwrap().unwrap(), format!("# v{i}\n"));
        }
        assert!(history.queue.names().unwrap().is_empty());
        assert_fsck(dir.path());
    }

    /// Another program writing a document in place while history reads it
    /// (an editor saving, the watcher reporting the first half) is no
    /// failure of history: the file is recorded once it holds still.
    #[test]
    fn a_file_written_while_it_is_read_is_recorded_once_it_holds_still() {
        let (dir, history) = store(Some("# Root\n- [[a]]\n"), CommitTiming::AtOnce);
        let file = dir.path().join("a.md");
        fs::write(&file, "# A\n").unwrap();
        history.flush(None).unwrap();
        let a = DocId::parse("a").unwrap();
        let writing = std::sync::atomic::AtomicBool::new(true);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut size = 1usize;
                while writing.load(std::sync::atomic::Ordering::Relaxed) {
                    size = size % 200_000 + 7_919;
                    let mut f = File::create(&file).unwrap(); // truncates, as an editor saving in place
                    std::io::Write::write_all(&mut f, "x".repeat(size).as_bytes()).unwrap();
                }
            });
            let flushed: Result<Vec<()>, _> =
                (0..300).map(|_| history.flush(Some(std::slice::from_ref(&a)))).collect();
            writing.store(false, std::sync::atomic::Ordering::Relaxed);
            flushed.unwrap();
        });
        history.flush(Some(std::slice::from_ref(&a))).unwrap();
        let last = &history.log(Some(&a), 1).unwrap()[0].version;
        assert_eq!(history.read_at(last, &a).unwrap().unwrap(), fs::read_to_string(&file).unwrap());
        assert!(history.problem.lock().unwrap().is_none());
    }

    /// The pack builder's window is bounded in the store's git config, in
    /// a repository memtree makes and in one it finds; a value set by hand
    /// stays.
    #[test]
    fn the_pack_window_is_bounded_unless_set_by_hand() {
        let local = |dir: &Path| {
            let config = Repository::open(dir).unwrap().config().unwrap();
            config.open_level(git2::ConfigLevel::Local).unwrap().get_i64("pack.windowMemory")
        };
        let (made, history) = store(Some("# Root\n"), CommitTiming::AtOnce);
        history.flush(None).unwrap();
        assert_eq!(local(made.path()).unwrap(), 1 << 20);

        let found = tempfile::tempdir().unwrap();
        fs::create_dir_all(found.path().join(".memtree")).unwrap();
        fs::write(found.path().join("root.md"), "# Root\n").unwrap();
        Repository::init(found.path()).unwrap();
        assert!(local(found.path()).is_err());
        GitHistory::open(found.path(), CommitTiming::AtOnce).flush(None).unwrap();
        assert_eq!(local(found.path()).unwrap(), 1 << 20);

        let by_hand = tempfile::tempdir().unwrap();
        fs::create_dir_all(by_hand.path().join(".memtree")).unwrap();
        fs::write(by_hand.path().join("root.md"), "# Root\n").unwrap();
        Repository::init(by_hand.path())
            .unwrap()
            .config()
            .unwrap()
            .set_i64("pack.windowMemory", 3 << 20)
            .unwrap();
        GitHistory::open(by_hand.path(), CommitTiming::AtOnce).flush(None).unwrap();
        assert_eq!(local(by_hand.path()).unwrap(), 3 << 20);
    }
}
