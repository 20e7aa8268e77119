//! A round of commits made through libgit2's trees: from the files as they
//! are (a scan, history's first commit), by way of the git index. Queued
//! records go through `record_round.rs`. The branch moves once, at the
//! end, and only after the objects it names are written.
//!
//! A round of many commits keeps its objects in memory (a libgit2 mempack)
//! and writes them out as one pack, in which each commit's tree is a delta
//! against another: about 10 KiB a commit where a loose root tree of a store
//! of 10,000 flat documents takes 300 KiB. A burst of writes then costs the
//! disk little, so the committer does not slow the fsyncs of the writes
//! still coming. A round of a few commits writes loose objects: a pack each
//! would pile up packs, which are costly to merge again.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature, Tree};
use memtree_core::HistoryError;

use crate::git::{backend, head_commit};

/// Rounds of this many commits or more are written as one pack.
pub(crate) const PACKED: usize = 8;
/// The most file data [`write_blobs`] holds in memory before it writes a
/// pack.
pub(crate) const BLOBS_PER_PACK: u64 = 16 << 20;
/// Above libgit2's loose (1) and pack (2) backends, so that every object
/// the round writes goes to memory.
const IN_MEMORY: i32 = 1000;

/// The memory libgit2's pack builder may fill with the objects it looks
/// for deltas among (`pack.windowMemory`; unbounded by default). Unbounded,
/// a round's pack holds ten root trees and their delta indexes at once:
/// 12 MB in a store of 10,000 documents in one folder, at every round. The
/// best base of a root tree is the one next to it in the window, so packs
/// come out the same size with 1 MiB.
const PACK_WINDOW_MEMORY: i64 = 1 << 20;

/// Bounds the pack builder's window in the repository's config, unless a
/// value is set there (or in the user's git config) already. A store that
/// cannot be written keeps its history readable: a failure is logged.
pub(crate) fn bound_pack_window(repo: &Repository) {
    let bounded = repo.config().and_then(|mut config| {
        let set = config.get_entry("pack.windowMemory").is_ok();
        if set { Ok(()) } else { config.set_i64("pack.windowMemory", PACK_WINDOW_MEMORY) }
    });
    if let Err(error) = bounded {
        tracing::warn!(%error, "could not bound git's pack window; packing history may take more memory");
    }
}

pub(crate) struct Round {
    repo: Repository,
    packed: bool,
    /// Every blob the round's commits name is on disk already (see
    /// [`write_blobs`]): its pack holds the commits and trees only.
    blobs_written: bool,
    /// The branch's commit when the round began.
    start: Option<Oid>,
    /// The round's last commit.
    tip: Cell<Option<Oid>>,
}

impl Round {
    /// Opens the repository at `root` for a round of about `commits`
    /// commits. The caller holds the history lock.
    pub(crate) fn open(root: &Path, commits: usize) -> Result<Round, HistoryError> {
        let repo = Repository::open(root).map_err(backend("open repository"))?;
        let packed = commits >= PACKED;
        if packed {
            // The odb owns the backend; the handle is not needed to use it.
            repo.odb()
                .map_err(backend("open object database"))?
                .add_new_mempack_backend(IN_MEMORY)
                .map_err(backend("keep objects in memory"))?;
        }
        let start = head_commit(&repo)?.map(|commit| commit.id());
        Ok(Round { repo, packed, blobs_written: false, start, tip: Cell::new(start) })
    }

    /// The blobs the round's commits name are written already.
    pub(crate) fn with_blobs_written(mut self) -> Round {
        self.blobs_written = true;
        self
    }

    pub(crate) fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The commit the next one follows: the round's last, or the branch's.
    pub(crate) fn tip(&self) -> Result<Option<git2::Commit<'_>>, HistoryError> {
        self.tip.get().map(|id| self.repo.find_commit(id)).transpose().map_err(backend("read commit"))
    }

    /// Commits `tree` after the tip, without moving the branch yet.
    pub(crate) fn commit(
        &self,
        signature: &Signature<'_>,
        message: &str,
        tree: &Tree<'_>,
    ) -> Result<Oid, HistoryError> {
        let parent = self.tip()?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let id = self
            .repo
            .commit(None, signature, signature, message, tree, &parents)
            .map_err(backend("write commit"))?;
        self.tip.set(Some(id));
        Ok(id)
    }

    /// Writes the round's objects (a pack round's, as one pack), then moves
    /// the branch to the round's last commit, if it is still where the round
    /// found it. Until then, nothing on disk names the round's objects.
    pub(crate) fn finish(self) -> Result<(), HistoryError> {
        let Some(tip) = self.tip.get().filter(|&tip| Some(tip) != self.start) else { return Ok(()) };
        if self.packed {
            // What the round's commits reach and the branch did not. An
            // object of an older commit (a document written back as it
            // was) comes along again: a roll-up sorts that out.
            let mut walk = self.repo.revwalk().map_err(backend("walk new commits"))?;
            walk.push(tip).map_err(backend("walk new commits"))?;
            if let Some(start) = self.start {
                walk.hide(start).map_err(backend("walk new commits"))?;
            }
            let mut builder = self.repo.packbuilder().map_err(backend("start pack"))?;
            if self.blobs_written {
                for commit in walk {
                    let commit = self.repo.find_commit(commit.map_err(backend("walk new commits"))?);
                    let commit = commit.map_err(backend("read commit"))?;
                    builder.insert_object(commit.id(), None).map_err(backend("pack commit"))?;
                    insert_trees(&mut builder, &commit.tree().map_err(backend("read tree"))?)?;
                }
            } else {
                builder.insert_walk(&mut walk).map_err(backend("pack new commits"))?;
            }
            builder
                .write(&self.repo.path().join("objects").join("pack"), 0o444)
                .map_err(backend("write pack"))?;
        }
        move_branch(&self.repo, self.start, tip)
    }
}

/// Moves the branch HEAD names (or HEAD itself, checked out by hand at a
/// commit) from `start` to `tip`, if it is still at `start`.
pub(crate) fn move_branch(repo: &Repository, start: Option<Oid>, tip: Oid) -> Result<(), HistoryError> {
    let head = repo.find_reference("HEAD").map_err(backend("read HEAD"))?;
    let branch = head.symbolic_target().map_err(backend("read HEAD"))?.unwrap_or("HEAD").to_owned();
    let log = "memtree: commit";
    match start {
        Some(start) => repo.reference_matching(&branch, tip, true, start, log).map(drop),
        None => repo.reference(&branch, tip, false, log).map(drop),
    }
    .map_err(backend("move branch"))
}

/// Writes the files at `files` (inside the work tree at `root`, with their
/// sizes) as blobs, in packs of about `most` bytes each, when they hold more
/// than that; answers whether it did. A commit of many files (history's
/// first, of a store made outside memtree) then holds no more than that in
/// memory: the round that commits them finds them written, and packs only
/// its trees (see [`Round::with_blobs_written`]). A round's mempack would
/// hold every file at once, with the pack builder's copies: 320 MiB for
/// 98 MiB of Markdown.
pub(crate) fn write_blobs(root: &Path, files: &[(PathBuf, u64)], most: u64) -> Result<bool, HistoryError> {
    if files.iter().map(|(_, len)| len).sum::<u64>() <= most {
        return Ok(false);
    }
    let mut files = files.iter().peekable();
    while files.peek().is_some() {
        let round = Round::open(root, PACKED)?;
        let mut builder = round.repo.packbuilder().map_err(backend("start pack"))?;
        let mut held = 0;
        while held < most
            && let Some((path, len)) = files.next()
        {
            let id = round.repo.blob_path(&root.join(path)).map_err(backend("write blob"))?;
            builder.insert_object(id, None).map_err(backend("pack blob"))?;
            held += len;
        }
        builder
            .write(&round.repo.path().join("objects").join("pack"), 0o444)
            .map_err(backend("write pack"))?;
    }
    Ok(true)
}

/// Adds `tree` and every tree under it to `builder`, not their blobs.
fn insert_trees(builder: &mut git2::PackBuilder<'_>, tree: &Tree<'_>) -> Result<(), HistoryError> {
    builder.insert_object(tree.id(), None).map_err(backend("pack tree"))?;
    let mut failed = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        if entry.kind() != Some(git2::ObjectType::Tree) {
            return git2::TreeWalkResult::Ok;
        }
        match builder.insert_object(entry.id(), None) {
            Ok(()) => git2::TreeWalkResult::Ok,
            Err(error) => {
                failed = Some(error);
                git2::TreeWalkResult::Abort
            }
        }
    })
    .map_err(backend("walk tree"))?;
    failed.map_or(Ok(()), |error| Err(backend("pack tree")(error)))
}
