//! Which commits changed which file: what a document's history lists.
//!
//! Asking git "which commits changed this path" means comparing every
//! commit's root tree with its parent's, and a root tree is as large as
//! the store (10,000 entries at 10,000 documents): 0.8 s for one document
//! over 500 commits. This index is built by one such walk, reading each
//! tree once and descending only into subtrees that differ, then kept:
//! later questions cost only the commits made since.

use std::collections::HashMap;

use git2::{ObjectType, Oid, Repository, Tree};

use crate::git::backend;
use memtree_core::HistoryError;

/// One commit that changed a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Touch {
    pub commit: Oid,
    /// Whether the file exists after the commit (false: it was deleted).
    pub present: bool,
}

#[derive(Default)]
pub(crate) struct Changes {
    /// The commit the index is up to (`None`: not built yet).
    head: Option<Oid>,
    /// Each file's changes, newest first.
    by_path: HashMap<String, Vec<Touch>>,
}

/// A tree's entries in git's order, their names in one buffer (a root
/// tree has an entry per document: one allocation, not thousands).
#[derive(Default)]
struct Entries {
    names: Vec<u8>,
    /// Name range, object, whether it is a subtree.
    items: Vec<(u32, u32, Oid, bool)>,
}

impl Entries {
    fn of(tree: &Tree<'_>) -> Entries {
        let mut out = Entries { names: Vec::new(), items: Vec::with_capacity(tree.len()) };
        for entry in tree.iter() {
            let start = out.names.len() as u32;
            out.names.extend_from_slice(entry.name_bytes());
            out.items.push((
                start,
                out.names.len() as u32,
                entry.id(),
                entry.kind() == Some(ObjectType::Tree),
            ));
        }
        out
    }

    fn name(&self, i: usize) -> &[u8] {
        let (start, end, _, _) = self.items[i];
        &self.names[start as usize..end as usize]
    }
}

/// Git's order of tree entries: by name, a subtree's read as if it ended
/// in `/`.
fn git_order(a: &[u8], a_tree: bool, b: &[u8], b_tree: bool) -> std::cmp::Ordering {
    let common = a.len().min(b.len());
    a[..common].cmp(&b[..common]).then_with(|| {
        let next = |name: &[u8], tree: bool| name.get(common).copied().or(tree.then_some(b'/'));
        next(a, a_tree).cmp(&next(b, b_tree))
    })
}

impl Changes {
    /// The commits that changed `path`, newest first, once the index has
    /// caught up with `head`.
    pub fn of(&mut self, repo: &Repository, head: Oid, path: &str) -> Result<&[Touch], HistoryError> {
        if self.head != Some(head) {
            self.catch_up(repo, head)?;
        }
        Ok(self.by_path.get(path).map_or(&[], Vec::as_slice))
    }

    /// Adds the commits from `head` back to the last one indexed; rebuilds
    /// from scratch when that one is no longer an ancestor (history
    /// rewritten by hand).
    fn catch_up(&mut self, repo: &Repository, head: Oid) -> Result<(), HistoryError> {
        let mut walk = repo.revwalk().map_err(backend("walk history"))?;
        walk.push(head).map_err(backend("walk history"))?;
        walk.simplify_first_parent().map_err(backend("walk history"))?;
        let mut fresh: Vec<Oid> = Vec::new();
        let mut met = false;
        for oid in walk {
            let oid = oid.map_err(backend("walk history"))?;
            if Some(oid) == self.head {
                met = true;
                break;
            }
            fresh.push(oid);
        }
        if !met {
            self.by_path.clear();
        }
        // Newest first, as the lists are kept: the new touches go in front.
        let mut added: HashMap<String, Vec<Touch>> = HashMap::new();
        let mut newer: Option<(Oid, Entries)> = None;
        for (i, &oid) in fresh.iter().enumerate() {
            let commit = repo.find_commit(oid).map_err(backend("read commit"))?;
            let tree = Entries::of(&commit.tree().map_err(backend("read tree"))?);
            if let Some((newer_oid, newer_tree)) = newer.take() {
                diff(repo, &tree, &newer_tree, "", &mut |path, present| {
                    added.entry(path).or_default().push(Touch { commit: newer_oid, present });
                })?;
            }
            let is_last = i + 1 == fresh.len();
            if is_last {
                // The oldest new commit against its parent: the last one
                // indexed, or nothing for the first commit of all.
                let parent = match commit.parent(0) {
                    Ok(parent) => Entries::of(&parent.tree().map_err(backend("read tree"))?),
                    Err(_) => Entries::default(),
                };
                diff(repo, &parent, &tree, "", &mut |path, present| {
                    added.entry(path).or_default().push(Touch { commit: oid, present });
                })?;
            }
            newer = Some((oid, tree));
        }
        for (path, mut touches) in added {
            let list = self.by_path.entry(path).or_default();
            touches.append(list);
            *list = touches;
        }
        self.head = Some(head);
        Ok(())
    }
}

/// Reports each file under `prefix` that differs between `old` and `new`,
/// and whether it exists in `new`; descends only into subtrees that differ.
fn diff(
    repo: &Repository,
    old: &Entries,
    new: &Entries,
    prefix: &str,
    report: &mut dyn FnMut(String, bool),
) -> Result<(), HistoryError> {
    let (mut i, mut j) = (0, 0);
    while i < old.items.len() || j < new.items.len() {
        let (gone, came) = match (old.items.get(i), new.items.get(j)) {
            (Some(a), Some(b)) => match git_order(old.name(i), a.3, new.name(j), b.3) {
                std::cmp::Ordering::Less => (Some(i), None),
                std::cmp::Ordering::Greater => (None, Some(j)),
                std::cmp::Ordering::Equal => (Some(i), Some(j)),
            },
            (Some(_), None) => (Some(i), None),
            _ => (None, Some(j)),
        };
        i += usize::from(gone.is_some());
        j += usize::from(came.is_some());
        let (a, b) = (gone.map(|g| old.items[g]), came.map(|c| new.items[c]));
        if let (Some(a), Some(b)) = (a, b)
            && a.2 == b.2
        {
            continue;
        }
        let name = match gone {
            Some(g) => old.name(g),
            None => new.name(came.expect("one side")),
        };
        let path = format!("{prefix}{}", String::from_utf8_lossy(name));
        let subtree = |item: Option<(u32, u32, Oid, bool)>| -> Result<Entries, HistoryError> {
            match item {
                Some((_, _, oid, true)) => {
                    Ok(Entries::of(&repo.find_tree(oid).map_err(backend("read tree"))?))
                }
                _ => Ok(Entries::default()),
            }
        };
        let (old_sub, new_sub) = (subtree(a)?, subtree(b)?);
        if !old_sub.items.is_empty() || !new_sub.items.is_empty() {
            diff(repo, &old_sub, &new_sub, &format!("{path}/"), report)?;
        }
        let file = |item: Option<(u32, u32, Oid, bool)>| item.is_some_and(|item| !item.3);
        if file(a) || file(b) {
            report(path, file(b));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use git2::{IndexAddOption, Signature};

    use super::*;

    /// Makes the work tree exactly `files` and commits it on HEAD.
    fn commit(repo: &Repository, files: &[(&str, &str)]) -> Oid {
        let work = repo.workdir().unwrap();
        for entry in std::fs::read_dir(work).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().unwrap() != ".git" {
                if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) }
                    .unwrap();
            }
        }
        for (path, text) in files {
            let path = work.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let mut index = repo.index().unwrap();
        index.clear().unwrap();
        index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("t", "t@example.invalid").unwrap();
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, "c", &tree, &parents).unwrap()
    }

    /// What `path`'s history is, asked of git commit by commit.
    fn naive(repo: &Repository, head: Oid, path: &str) -> Vec<Touch> {
        let entry = |c: &git2::Commit<'_>| c.tree().unwrap().get_path(Path::new(path)).ok().map(|e| e.id());
        let mut out = Vec::new();
        let mut commit = Some(repo.find_commit(head).unwrap());
        while let Some(c) = commit {
            let parent = c.parent(0).ok();
            let (now, before) = (entry(&c), parent.as_ref().and_then(entry));
            if now != before {
                out.push(Touch { commit: c.id(), present: now.is_some() });
            }
            commit = parent;
        }
        out
    }

    /// Documents are files: a folder is no document.
    const PATHS: &[&str] = &["a.md", "f/x.md", "f/z.md", "f/g/y.md", "f/g.md", "b.md"];

    fn agrees(changes: &mut Changes, repo: &Repository, head: Oid) {
        for path in PATHS {
            assert_eq!(changes.of(repo, head, path).unwrap(), naive(repo, head, path), "{path} at {head}");
        }
    }

    #[test]
    fn the_index_lists_what_a_commit_by_commit_walk_finds() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut changes = Changes::default();
        commit(&repo, &[("a.md", "1"), ("f/x.md", "x"), ("f/g/y.md", "y")]);
        commit(&repo, &[("a.md", "2"), ("f/x.md", "x"), ("f/g/y.md", "y")]);
        let c3 = commit(&repo, &[("a.md", "2"), ("f/z.md", "z"), ("f/g/y.md", "y")]);
        agrees(&mut changes, &repo, c3);
        // Later commits are added to what is known: a file beside a folder
        // of the same name (`f/g.md`, `f/g/`), then the folder gone.
        commit(&repo, &[("a.md", "2"), ("f/z.md", "z"), ("f/g.md", "g"), ("f/g/y.md", "y2")]);
        let c5 = commit(&repo, &[("a.md", "2"), ("f/z.md", "z"), ("f/g.md", "g2"), ("f/x.md", "x2")]);
        agrees(&mut changes, &repo, c5);
        assert_eq!(changes.of(&repo, c5, "f/x.md").unwrap().len(), 3, "added, deleted, added again");
        // History rewritten by hand: the index starts again.
        let c2 = repo.find_commit(c3).unwrap().parent_id(0).unwrap();
        repo.reset(&repo.find_object(c2, None).unwrap(), git2::ResetType::Hard, None).unwrap();
        let other = commit(&repo, &[("b.md", "b")]);
        agrees(&mut changes, &repo, other);
        assert!(changes.of(&repo, other, "f/z.md").unwrap().is_empty());
    }
}
