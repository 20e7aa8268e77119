//! `move_document`: a document and its subtree under a new parent, in one
//! change.

use super::Memory;
use crate::answer::MoveOutcome;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter;
use crate::line_ending;
use crate::links::{self, parse_links};
use crate::refusal::{Refusal, Subject};
use crate::storage::Change;

impl Memory {
    /// Moves `id` and its subtree under `new_parent` in one atomic change:
    /// the link leaves the old parent and is added at the end of the new one.
    pub fn move_document(&self, id: &DocId, new_parent: &DocId) -> Result<MoveOutcome, MemoryError> {
        if id.is_root() {
            return Err(Refusal::RootCannotMove.into());
        }
        self.write(|| self.move_locked(id, new_parent))
    }

    fn move_locked(&self, id: &DocId, new_parent: &DocId) -> Result<MoveOutcome, MemoryError> {
        let tree = self.tree_unlocked()?.0;
        if !tree.contains(id) {
            return Err(MemoryError::NotFound { id: id.clone() });
        }
        if !tree.contains(new_parent) {
            return Err(Refusal::Missing(Subject::NewParent).into());
        }
        if new_parent == id || tree.is_ancestor(id, new_parent) {
            return Err(Refusal::WouldCycle { id: id.clone(), new_parent: new_parent.clone() }.into());
        }
        let old_parent = match tree.parents(id) {
            [parent] => parent.clone(),
            [] => return Err(Refusal::NoParent { id: id.clone() }.into()),
            several => {
                return Err(Refusal::SeveralParents { id: id.clone(), parents: several.to_vec() }.into());
            }
        };
        if &old_parent == new_parent {
            return Ok(MoveOutcome {
                id: id.clone(),
                from: old_parent,
                to: new_parent.clone(),
                warning: None,
            });
        }
        self.check_depth(Subject::NewParent, id, tree.depth(new_parent) + 1 + tree.height(id))?;
        let old_text = self.read_existing(&old_parent)?;
        let split = front_matter::split(&old_text);
        let without = links::remove_links_to(split.body, id);
        // Removing the link text must remove that link and nothing else: in
        // tangled Markdown (a link inside another's brackets, before an
        // indented line) it can change what the rest means.
        let expected: Vec<DocId> = parse_links(split.body).ids.into_iter().filter(|l| l != id).collect();
        if parse_links(&without).ids != expected {
            return Err(Refusal::LinkTangled { id: id.clone(), parent: old_parent }.into());
        }
        let old_parent_text = format!("{}{without}", split.head);
        let new_parent_text =
            line_ending::append_line(&self.read_existing(new_parent)?, &format!("- [[{id}]]"));
        let limit = self.settings.max_document_bytes;
        if new_parent_text.len() > limit {
            return Err(MemoryError::TooLarge { len: new_parent_text.len(), limit });
        }
        let change = Change {
            puts: vec![(old_parent.clone(), old_parent_text), (new_parent.clone(), new_parent_text)],
            deletes: vec![],
            label: format!("move {id} from {old_parent} to {new_parent}"),
        };
        let warning = self.apply_change(&change)?;
        Ok(MoveOutcome { id: id.clone(), from: old_parent, to: new_parent.clone(), warning })
    }
}
