//! The tree rules at write time: a link may only name a new document or a
//! current child (`cross_tree` says which rule another link breaks), a
//! dropped link prunes its subtree unless something else still links it,
//! and no document goes deeper than the limit.

use std::collections::{HashMap, HashSet};

use super::Memory;
use crate::doc_id::DocId;
use crate::error::{CrossTreeReason, MemoryError};
use crate::index::SearchIndex;
use crate::refusal::Subject;
use crate::storage::{Storage, StorageError};
use crate::tree::Tree;

/// What a prune needs to know of the links around a subtree.
trait LinkSource {
    /// The existing documents `id` links, in order.
    fn children(&self, id: &DocId) -> Result<Vec<DocId>, MemoryError>;
    /// The documents that link `id`.
    fn parents(&self, id: &DocId) -> Result<Vec<DocId>, MemoryError>;
}

impl LinkSource for Tree {
    fn children(&self, id: &DocId) -> Result<Vec<DocId>, MemoryError> {
        Ok(self.links(id).iter().filter(|c| self.contains(c)).cloned().collect())
    }

    fn parents(&self, id: &DocId) -> Result<Vec<DocId>, MemoryError> {
        Ok(self.parents(id).to_vec())
    }
}

/// The links of a subtree from its own files, and what links into it from
/// the index's link table (which every write updates as it is queued, see
/// [`crate::index::Queued`]): a prune then costs in the size of the
/// subtree, not of the store.
struct StoredLinks<'a> {
    storage: &'a dyn Storage,
    index: &'a dyn SearchIndex,
}

impl LinkSource for StoredLinks<'_> {
    fn children(&self, id: &DocId) -> Result<Vec<DocId>, MemoryError> {
        let text = match self.storage.read(id) {
            Ok(text) => text.unwrap_or_default(),
            // As in the tree: a document that cannot be read links nothing.
            Err(StorageError::Unreadable { .. }) => String::new(),
            Err(e) => return Err(e.into()),
        };
        let mut children = Vec::new();
        for link in crate::links::children(&text) {
            if !children.contains(&link) && self.storage.stamp(&link)?.is_some() {
                children.push(link);
            }
        }
        Ok(children)
    }

    fn parents(&self, id: &DocId) -> Result<Vec<DocId>, MemoryError> {
        Ok(self.index.parents(id)?)
    }
}

/// What removing the links `removed` from `id` prunes (see
/// [`Memory::prunable`]), with the links `source` gives.
fn prune_plan(
    source: &dyn LinkSource,
    id: &DocId,
    removed: &[&DocId],
    still_linked: &HashSet<&DocId>,
    exists: impl Fn(&DocId) -> Result<bool, MemoryError>,
) -> Result<Vec<DocId>, MemoryError> {
    let never = |d: &DocId| d == id || d.is_root() || still_linked.contains(d);
    let mut roots: Vec<DocId> = Vec::new();
    for r in removed.iter().copied().filter(|r| !never(r)) {
        if !roots.contains(r) && exists(r)? {
            roots.push(r.clone());
        }
    }
    // The candidates: everything below the roots, through documents that
    // may go, with what each links and what links it.
    let mut children: HashMap<DocId, Vec<DocId>> = HashMap::new();
    let mut parents: HashMap<DocId, Vec<DocId>> = HashMap::new();
    let mut stack = roots.clone();
    while let Some(d) = stack.pop() {
        if never(&d) || children.contains_key(&d) {
            continue;
        }
        let below = source.children(&d)?;
        stack.extend(below.iter().cloned());
        parents.insert(d.clone(), source.parents(&d)?);
        children.insert(d, below);
    }
    let reachable = |allowed: &dyn Fn(&DocId) -> bool| -> HashSet<DocId> {
        let mut seen = HashSet::new();
        let mut stack: Vec<&DocId> = roots.iter().collect();
        while let Some(d) = stack.pop() {
            if allowed(d) && seen.insert(d.clone()) {
                stack.extend(children.get(d).into_iter().flatten());
            }
        }
        seen
    };
    let mut pruned = reachable(&|d| children.contains_key(d));
    loop {
        let linked_elsewhere: Vec<DocId> = pruned
            .iter()
            .filter(|d| parents[*d].iter().any(|p| p != id && !pruned.contains(p)))
            .cloned()
            .collect();
        if linked_elsewhere.is_empty() {
            break;
        }
        for d in &linked_elsewhere {
            pruned.remove(d);
        }
        let allowed = pruned.clone();
        pruned = reachable(&|d| allowed.contains(d));
    }
    // Pre-order, removed links in their order, children in link order.
    let mut out = Vec::with_capacity(pruned.len());
    let mut seen = HashSet::new();
    let mut stack: Vec<&DocId> = roots.iter().rev().filter(|r| pruned.contains(*r)).collect();
    while let Some(d) = stack.pop() {
        if seen.insert(d) {
            out.push(d.clone());
            stack.extend(children[d].iter().rev().filter(|c| pruned.contains(*c)));
        }
    }
    Ok(out)
}

impl Memory {
    /// The error for a link from `id` to `link`, an existing document that
    /// is not one of `id`'s children.
    pub(super) fn cross_tree(&self, id: &DocId, link: &DocId) -> Result<MemoryError, MemoryError> {
        let reason = if link.is_root() {
            CrossTreeReason::Root
        } else if link == id {
            CrossTreeReason::ItSelf
        } else {
            // The error path only: a full view of the tree is affordable here.
            let tree = self.tree_unlocked()?.0;
            if tree.is_ancestor(link, id) {
                CrossTreeReason::Ancestor { of: id.clone() }
            } else {
                match tree.parents(link).first() {
                    Some(parent) => CrossTreeReason::ChildOf { parent: parent.clone() },
                    None => CrossTreeReason::Orphan,
                }
            }
        };
        Ok(MemoryError::CrossTree { link: link.clone(), reason })
    }

    /// What removing the links `removed` from `id` prunes: each removed
    /// child and its subtree, parent before children.
    ///
    /// In a store broken from outside, a document may also be linked from
    /// somewhere else; it then stays (with whatever hangs under it), because
    /// a file is never deleted while a document still links it. `validate`
    /// reports such stores. The caller holds the exclusive lock.
    pub(super) fn prunable(
        &self,
        id: &DocId,
        removed: &[&DocId],
        still_linked: &HashSet<&DocId>,
    ) -> Result<Vec<DocId>, MemoryError> {
        let exists = |d: &DocId| Ok(self.storage.stamp(d)?.is_some());
        // The index is derived: when it fails, or may not know of an edit
        // made outside, a prune goes by the tree.
        if let Some(index) = self.index.as_ref().filter(|_| self.outside.links_current()) {
            let stored = StoredLinks { storage: &*self.storage, index: &**index };
            match prune_plan(&stored, id, removed, still_linked, exists) {
                Err(MemoryError::Index(error)) => tracing::warn!(%error, "pruning by the whole tree"),
                planned => return planned,
            }
        }
        let tree = self.tree_unlocked()?.0;
        prune_plan(&*tree, id, removed, still_linked, |d| Ok(tree.contains(d)))
    }

    /// How deep `id` is (root: 0): by the index's links, which every write
    /// keeps current as it queues its documents (no need to wait for the
    /// full text), else (no index, or a failing one) by the whole tree.
    pub(super) fn depth(&self, id: &DocId) -> Result<usize, MemoryError> {
        // The index is derived: when it fails, writes go on by the tree.
        if let Some(mut paths) = self.index.as_ref().and_then(|index| index.paths(&[id]).ok()) {
            return Ok(paths.pop().map_or(0, |path| path.len()));
        }
        Ok(self.tree_unlocked()?.0.depth(id))
    }

    /// Refuses to put `id` (or the deepest document it brings) `depth`
    /// levels below root when that is over the limit.
    pub(super) fn check_depth(&self, subject: Subject, id: &DocId, depth: usize) -> Result<(), MemoryError> {
        let limit = self.settings.max_depth;
        if depth > limit {
            return Err(MemoryError::TooDeep { subject, id: id.clone(), depth, limit });
        }
        Ok(())
    }
}
