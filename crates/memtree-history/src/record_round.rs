//! A round of commits made from queued records, written by memtree rather
//! than libgit2's tree builder: each tree the round changes is held once,
//! as bytes, edited at each commit (`tree_bytes.rs`), and a round
//! of many commits goes into one pack of memtree's making (`pack_file.rs`),
//! each tree there whole once and then as deltas against that version,
//! known from the entries. libgit2 held every commit's trees whole until the
//! round's pack was written, then searched them for deltas: sixteen root
//! trees of 426 KB at once in a store of 10,000 documents in one folder,
//! and 13 ms of CPU a commit.
//!
//! A round of a few commits writes loose objects, as [`crate::round`]
//! explains. The branch moves once, at the end, after the objects it names
//! are on disk.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use git2::{ObjectType, Oid, Repository};
use memtree_core::HistoryError;

use crate::git::{backend, head_commit};
use crate::pack_file::PackFile;
use crate::round::{PACKED, move_branch};
use crate::tree_bytes::{self, Edit};

pub(crate) struct RecordRound {
    repo: Repository,
    /// The round's objects, when they go into one pack (a round of many
    /// commits); otherwise they are written loose as they come.
    pack: Option<PackFile>,
    /// The branch's commit when the round began.
    start: Option<Oid>,
    /// The round's last commit.
    tip: Option<Oid>,
    /// The trees the round has read or written, by folder ("" the root).
    trees: HashMap<String, Held>,
    /// The objects in the round's pack, which the repository cannot find
    /// until it is written.
    packed: HashSet<Oid>,
}

/// A tree as the round's last commit has it.
struct Held {
    bytes: Vec<u8>,
    id: Oid,
    /// The version of this tree the round packed whole, and where: the
    /// base of the deltas of its later versions. Against the round's first
    /// version rather than the one before, so that reading any of them
    /// (the branch's last, most of all) rebuilds one delta, not a chain.
    base: Option<(u64, Vec<u8>)>,
}

/// The folder of a path in the store and the name in it.
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

fn depth(folder: &str) -> usize {
    if folder.is_empty() { 0 } else { folder.matches('/').count() + 1 }
}

impl RecordRound {
    /// Opens the repository at `root` for a round of about `commits`
    /// commits, with the trees the last round `kept`, if the branch is
    /// still at its last commit. The caller holds the history lock.
    pub(crate) fn open(root: &Path, commits: usize, kept: Option<Kept>) -> Result<RecordRound, HistoryError> {
        let repo = Repository::open(root).map_err(backend("open repository"))?;
        let start = head_commit(&repo)?.map(|commit| commit.id());
        let pack = (commits >= PACKED)
            .then(|| PackFile::new(&repo.path().join("objects/pack")))
            .transpose()
            .map_err(backend("start pack"))?;
        let trees = match kept {
            Some(kept) if kept.commit == start => kept.trees,
            _ => HashMap::new(),
        };
        let trees =
            trees.into_iter().map(|(folder, (bytes, id))| (folder, Held { bytes, id, base: None })).collect();
        Ok(RecordRound { repo, pack, start, tip: start, trees, packed: HashSet::new() })
    }

    /// The branch's commit when the round began.
    pub(crate) fn start(&self) -> Result<Option<git2::Commit<'_>>, HistoryError> {
        self.start.map(|id| self.repo.find_commit(id)).transpose().map_err(backend("read commit"))
    }

    /// The ids of the files at `paths` (in the store) as the round's last
    /// commit has them: one walk through each folder's tree.
    pub(crate) fn files(&mut self, paths: &[String]) -> Result<Vec<Option<Oid>>, HistoryError> {
        let mut by_folder: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
        for (i, path) in paths.iter().enumerate() {
            let (folder, name) = split(path);
            by_folder.entry(folder).or_default().push((i, name));
        }
        let mut ids = vec![None; paths.len()];
        for (folder, names) in by_folder {
            let tree = self.tree(folder)?;
            let wanted: Vec<&str> = names.iter().map(|(_, name)| *name).collect();
            let found = tree_bytes::entries_named(&tree.bytes, &wanted).map_err(backend("read tree"))?;
            for ((i, _), entry) in names.iter().zip(found) {
                ids[*i] = entry.filter(|(_, folder)| !folder).map(|(id, _)| id);
            }
        }
        Ok(ids)
    }

    /// The tree of `folder` as the round's last commit has it (empty if
    /// there is none), read from the repository the first time.
    fn tree(&mut self, folder: &str) -> Result<&Held, HistoryError> {
        if !self.trees.contains_key(folder) {
            let id = match folder {
                "" => self.start()?.map(|commit| commit.tree_id()),
                _ => {
                    let (parent, name) = split(folder);
                    let parent = self.tree(parent)?;
                    let entry = tree_bytes::entry(&parent.bytes, name).map_err(backend("read tree"))?;
                    entry.filter(|(_, folder)| *folder).map(|(id, _)| id)
                }
            };
            let held = match id {
                Some(id) => {
                    let odb = self.repo.odb().map_err(backend("open object database"))?;
                    let bytes = odb.read(id).map_err(backend("read tree"))?.data().to_vec();
                    Held { bytes, id, base: None }
                }
                None => Held { bytes: Vec::new(), id: empty_tree()?, base: None },
            };
            self.trees.insert(folder.to_owned(), held);
        }
        Ok(&self.trees[folder])
    }

    /// Writes `data` as a blob, unless the repository has it; answers its
    /// id.
    pub(crate) fn blob(&mut self, data: &[u8]) -> Result<Oid, HistoryError> {
        let id = Oid::hash_object(ObjectType::Blob, data).map_err(backend("hash blob"))?;
        self.write(id, ObjectType::Blob, data, None)?;
        Ok(id)
    }

    /// Writes object `id` (whole, or in a pack as a delta against the tree
    /// `base` at its offset), unless the repository or the round's pack has
    /// it; answers where the pack holds it.
    fn write(
        &mut self,
        id: Oid,
        kind: ObjectType,
        data: &[u8],
        base: Option<(u64, &[u8])>,
    ) -> Result<Option<u64>, HistoryError> {
        if self.packed.contains(&id) {
            return Ok(None);
        }
        let odb = self.repo.odb().map_err(backend("open object database"))?;
        let Some(pack) = self.pack.as_mut() else {
            odb.write(kind, data).map_err(backend("write object"))?;
            return Ok(None);
        };
        if odb.exists(id) {
            return Ok(None);
        }
        let at = match base {
            Some((at, base)) => {
                let pieces = tree_bytes::pieces(base, data).map_err(backend("read tree"))?;
                pack.add_delta(id, at, &tree_bytes::delta(base.len(), data, &pieces))
            }
            None => pack.add(id, kind, data),
        }
        .map_err(backend("pack object"))?;
        self.packed.insert(id);
        Ok(Some(at))
    }

    /// Puts each file of `files` (a path in the store, and its blob's id or
    /// none to take it out) in the trees of the round's last commit,
    /// writes the trees that changed, and answers the root tree's id.
    pub(crate) fn tree_with(&mut self, files: Vec<(String, Option<Oid>)>) -> Result<Oid, HistoryError> {
        // By depth and folder: the deepest folder is edited first, then
        // its parent with the folder's new id.
        let mut pending: BTreeMap<(usize, String), Vec<Edit>> = BTreeMap::new();
        for (path, id) in files {
            let (folder, name) = split(&path);
            let edit = Edit { name: name.to_owned(), folder: false, id };
            pending.entry((depth(folder), folder.to_owned())).or_default().push(edit);
        }
        while let Some(((depth, folder), mut edits)) = pending.pop_last() {
            self.tree(&folder)?;
            // Out of the map while the round writes it; an error ends the
            // round, which then keeps nothing.
            let mut held = self.trees.remove(&folder).expect("read just above");
            tree_bytes::edit(&mut held.bytes, &mut edits).map_err(backend("edit tree"))?;
            let id = Oid::hash_object(ObjectType::Tree, &held.bytes).map_err(backend("hash tree"))?;
            if id != held.id {
                held.id = id;
                self.write_tree(depth, &folder, &mut held, &mut pending)?;
            }
            self.trees.insert(folder, held);
        }
        Ok(self.tree("")?.id)
    }

    /// Writes the tree of `folder` (at `depth`) as `held` now has it, and
    /// puts its new id among the `pending` edits of its parent.
    fn write_tree(
        &mut self,
        depth: usize,
        folder: &str,
        held: &mut Held,
        pending: &mut BTreeMap<(usize, String), Vec<Edit>>,
    ) -> Result<(), HistoryError> {
        if depth > 0 {
            let (parent, name) = split(folder);
            // A folder left empty goes: git keeps no empty trees.
            let id = (!held.bytes.is_empty()).then_some(held.id);
            pending.entry((depth - 1, parent.to_owned())).or_default().push(Edit {
                name: name.to_owned(),
                folder: true,
                id,
            });
            if id.is_none() {
                return Ok(());
            }
        }
        let base = held.base.as_ref().map(|(at, bytes)| (*at, &bytes[..]));
        let written = self.write(held.id, ObjectType::Tree, &held.bytes, base)?;
        if held.base.is_none()
            && let Some(at) = written
        {
            // A copy: the round edits its tree in place.
            held.base = Some((at, held.bytes.clone()));
        }
        Ok(())
    }

    /// Commits `tree` after the round's last commit, as memtree at `time`
    /// (seconds since the epoch, UTC), without moving the branch yet.
    pub(crate) fn commit(&mut self, time: i64, message: &str, tree: Oid) -> Result<Oid, HistoryError> {
        let data = commit_bytes(tree, self.tip, time, message);
        let id = Oid::hash_object(ObjectType::Commit, data.as_bytes()).map_err(backend("hash commit"))?;
        self.write(id, ObjectType::Commit, data.as_bytes(), None)?;
        self.tip = Some(id);
        Ok(id)
    }

    /// Writes the round's pack, if it has one, then moves the branch to the
    /// round's last commit, if it is still where the round found it;
    /// answers the trees to keep for the next round.
    pub(crate) fn finish(self) -> Result<Kept, HistoryError> {
        if let Some(tip) = self.tip.filter(|&tip| Some(tip) != self.start) {
            if let Some(pack) = self.pack.filter(|pack| !pack.is_empty()) {
                pack.finish(&self.repo.path().join("objects").join("pack")).map_err(backend("write pack"))?;
            }
            move_branch(&self.repo, self.start, tip)?;
        }
        let trees = self.trees.into_iter().map(|(folder, held)| (folder, (held.bytes, held.id))).collect();
        Ok(Kept { commit: self.tip, trees })
    }
}

/// The trees a round read or wrote, as its last commit has them, kept for
/// the next round: reading them again from the packs would rebuild each
/// from its delta, and libgit2 keeps what it rebuilds in each pack's cache
/// while the pack is open (in a store of 10,000 documents in one folder,
/// 426 KB a root tree, about 2 MB more each round).
pub(crate) struct Kept {
    commit: Option<Oid>,
    trees: HashMap<String, (Vec<u8>, Oid)>,
}

/// The id of the tree with nothing in it.
fn empty_tree() -> Result<Oid, HistoryError> {
    Oid::hash_object(ObjectType::Tree, b"").map_err(backend("hash tree"))
}

/// A commit object of `tree` after `parent`, by memtree at `time`.
fn commit_bytes(tree: Oid, parent: Option<Oid>, time: i64, message: &str) -> String {
    let parent = parent.map(|id| format!("parent {id}\n")).unwrap_or_default();
    let who = format!("memtree <memtree@localhost> {time} +0000");
    format!("tree {tree}\n{parent}author {who}\ncommitter {who}\n\n{message}")
}

#[cfg(test)]
mod tests {
    use git2::{Signature, Time};

    use super::*;

    /// The commit memtree writes is byte for byte the one libgit2 would.
    #[test]
    fn a_commit_is_the_one_libgit2_makes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let tree = repo.find_tree(repo.treebuilder(None).unwrap().write().unwrap()).unwrap();
        let signature = Signature::new("memtree", "memtree@localhost", &Time::new(1_700_000_000, 0)).unwrap();
        let message = "update_document: a\n\nchanged: a\nMemtree-Record: 7\n";
        let first = repo.commit(None, &signature, &signature, message, &tree, &[]).unwrap();
        let parent = repo.find_commit(first).unwrap();
        let expected = repo.commit_create_buffer(&signature, &signature, message, &tree, &[&parent]).unwrap();
        assert_eq!(commit_bytes(tree.id(), Some(first), 1_700_000_000, message).as_bytes(), &expected[..]);
    }

    /// Files put in and taken out of nested folders, over a round packed
    /// and one written loose, give the trees libgit2's tree updates give:
    /// new folders appear, emptied ones go.
    #[test]
    fn nested_folders_are_edited_as_libgit2_edits_them() {
        for commits in [1, PACKED] {
            let dir = tempfile::tempdir().unwrap();
            let repo = Repository::init(dir.path()).unwrap();
            let signature = Signature::now("t", "t@localhost").unwrap();
            let empty = repo.find_tree(repo.treebuilder(None).unwrap().write().unwrap()).unwrap();
            repo.commit(Some("HEAD"), &signature, &signature, "start", &empty, &[]).unwrap();
            let steps: [&[(&str, Option<&str>)]; 5] = [
                &[("a.md", Some("a")), ("p/q/r.md", Some("r")), ("p/s.md", Some("s"))],
                &[("p/q/r.md", Some("r2")), ("p/q.md", Some("q"))],
                &[("p/q/r.md", None), ("b.md", Some("b"))],
                &[("p/s.md", None), ("p/q.md", None), ("x/y/z.md", Some("z"))],
                &[("a.md", None), ("missing.md", None)],
            ];
            let mut round = RecordRound::open(dir.path(), commits, None).unwrap();
            let mut expected = empty.id();
            let mut ids = Vec::new();
            for (i, step) in steps.iter().enumerate() {
                let mut update = git2::build::TreeUpdateBuilder::new();
                let mut files = Vec::new();
                for (path, text) in *step {
                    match text {
                        Some(text) => {
                            let blob = round.blob(text.as_bytes()).unwrap();
                            update.upsert(*path, blob, git2::FileMode::Blob);
                            files.push((path.to_string(), Some(blob)));
                        }
                        None => {
                            // libgit2 refuses to take out what is not there.
                            if round.files(&[path.to_string()]).unwrap()[0].is_some() {
                                update.remove(*path);
                            }
                            files.push((path.to_string(), None));
                        }
                    }
                }
                let tree = round.tree_with(files).unwrap();
                // libgit2 needs the blobs and the last tree in the odb: a
                // second repository handle writes its own loose copies.
                let other = Repository::open(dir.path()).unwrap();
                for text in step.iter().filter_map(|(_, text)| *text) {
                    other.blob(text.as_bytes()).unwrap();
                }
                expected = update.create_updated(&other, &other.find_tree(expected).unwrap()).unwrap();
                assert_eq!(tree, expected, "commits {commits}, step {i}");
                ids.push(round.commit(1_700_000_000 + i as i64, &format!("step {i}\n"), tree).unwrap());
            }
            round.finish().unwrap();
            let head = repo.head().unwrap().peel_to_commit().unwrap();
            assert_eq!(head.id(), *ids.last().unwrap());
            assert_eq!(head.tree_id(), expected);
            assert_eq!(head.parent(0).unwrap().id(), ids[ids.len() - 2]);
            crate::git::tests::assert_fsck(dir.path());
        }
    }
}
