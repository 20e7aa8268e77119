//! The tree rules at write time: a link may only name a new document or a
//! current child (`cross_tree` says which rule another link breaks), a
//! dropped link prunes its subtree unless something else still links it,
//! and no document goes deeper than the limit.

use std::collections::HashSet;

use super::Memory;
use crate::doc_id::DocId;
use crate::error::{CrossTreeReason, MemoryError};
use crate::refusal::Subject;
use crate::tree::Tree;

/// Documents reachable from `roots` through documents that are `allowed`.
fn reachable<'t>(tree: &'t Tree, roots: &[&DocId], allowed: impl Fn(&DocId) -> bool) -> HashSet<&'t DocId> {
    let mut seen = HashSet::new();
    let mut stack: Vec<&'t DocId> = roots.iter().filter_map(|r| tree.key(r)).collect();
    while let Some(d) = stack.pop() {
        if allowed(d) && seen.insert(d) {
            stack.extend(tree.links(d).iter().filter_map(|c| tree.key(c)));
        }
    }
    seen
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
        let tree = self.tree_unlocked()?.0;
        let never = |d: &DocId| d == id || d.is_root() || still_linked.contains(d);
        let roots: Vec<&DocId> = removed.iter().copied().filter(|r| tree.contains(r) && !never(r)).collect();
        let mut pruned = reachable(&tree, &roots, |d| !never(d));
        loop {
            let linked_elsewhere: Vec<&DocId> = pruned
                .iter()
                .copied()
                .filter(|d| tree.parents(d).iter().any(|p| p != id && !pruned.contains(p)))
                .collect();
            if linked_elsewhere.is_empty() {
                break;
            }
            for d in &linked_elsewhere {
                pruned.remove(d);
            }
            let roots: Vec<&DocId> = roots.iter().copied().filter(|r| pruned.contains(r)).collect();
            let allowed = pruned.clone();
            pruned = reachable(&tree, &roots, |d| allowed.contains(d));
        }
        // Pre-order, removed links in their order, children in link order.
        let mut out = Vec::with_capacity(pruned.len());
        let mut seen = HashSet::new();
        let mut stack: Vec<&DocId> = roots.iter().rev().copied().filter(|r| pruned.contains(r)).collect();
        while let Some(d) = stack.pop() {
            if seen.insert(d) {
                out.push(d.clone());
                stack.extend(tree.links(d).iter().rev().filter(|c| pruned.contains(c)));
            }
        }
        Ok(out)
    }

    /// How deep `id` is (root: 0): by the index's links, which every write
    /// keeps current, else (no index, or a failing one) by the whole tree.
    pub(super) fn depth(&self, id: &DocId) -> Result<usize, MemoryError> {
        // The index is derived: when it fails, writes go on by the tree.
        if let Some(path) = self.settled_index().ok().and_then(|index| index.path(id).ok()) {
            return Ok(path.len());
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
