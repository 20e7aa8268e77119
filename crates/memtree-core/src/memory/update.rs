//! `update_document`: a document's whole new text.

use super::Memory;
use crate::answer::UpdateOutcome;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter;
use crate::line_ending::BOM;

impl Memory {
    /// Replaces a document's content, creating the documents its new links
    /// name and pruning the subtrees of the links it dropped. Content
    /// without a front-matter block keeps the stored block.
    ///
    /// Content written from version `base` of the document (see
    /// [`crate::merge::version`]) is merged by section with what changed
    /// since, or refused with `Error: version: conflict` when both changed
    /// the same section.
    pub fn update_document(
        &self,
        id: &DocId,
        content: &str,
        base: Option<&str>,
    ) -> Result<UpdateOutcome, MemoryError> {
        let limit = self.settings.max_document_bytes;
        if content.len() > limit {
            return Err(MemoryError::TooLarge { len: content.len(), limit });
        }
        let keep_block = |old_text: &str| {
            let (new, old) = (front_matter::split(content), front_matter::split(old_text));
            Ok(match (new.block, old.block) {
                (None, Some(block)) => {
                    let bom = if old.head.starts_with(BOM) || new.head.starts_with(BOM) { BOM } else { "" };
                    format!("{bom}{block}{}", new.body)
                }
                _ => content.to_owned(),
            })
        };
        let mut merged = None;
        let mut outcome = self.rewrite(id, &format!("update {id}"), |old_text| {
            self.based_on(id, base, old_text, keep_block, &mut merged)
        })?;
        outcome.merged = merged;
        Ok(self.after_growth(id, outcome))
    }
}

impl Memory {
    /// Deletes a document and its subtree: its link leaves its parent,
    /// which prunes it as any update removing a link does (to the trash,
    /// and history). `root` cannot be deleted.
    pub fn delete_document(&self, id: &DocId) -> Result<UpdateOutcome, MemoryError> {
        if id.is_root() {
            return Err(crate::refusal::Refusal::RootCannotBeDeleted.into());
        }
        let tree = self.tree()?;
        let parent = match tree.parents(id) {
            _ if !tree.contains(id) => return Err(MemoryError::NotFound { id: id.clone() }),
            [parent] => parent.clone(),
            [] => return Err(crate::refusal::Refusal::NoParent { id: id.clone() }.into()),
            several => {
                let parents = several.to_vec();
                return Err(crate::refusal::Refusal::SeveralParents { id: id.clone(), parents }.into());
            }
        };
        self.rewrite(&parent, &format!("delete {id}"), |text| {
            let split = front_matter::split(text);
            Ok(format!("{}{}", split.head, crate::links::remove_links_to(split.body, id)))
        })
    }
}
