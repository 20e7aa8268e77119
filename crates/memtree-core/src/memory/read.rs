//! Reads: a document, one of its sections, the outline, the list of
//! documents and the store's size.

use super::Memory;
use super::edit::section_span;
use crate::answer::{DocumentInfo, StoreStatus};
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter::{self, FrontMatter};
use crate::links::parse_links;
use crate::merge;
use crate::outline;
use crate::storage::LockMode;

impl Memory {
    /// The document's Markdown as stored; a superseded document's text is
    /// preceded by one line naming the document that replaces it.
    pub fn read_document(&self, id: &DocId) -> Result<String, MemoryError> {
        Ok(self.read_versioned(id)?.0)
    }

    /// [`Memory::read_document`] and the version of the stored text, to
    /// base a later write on.
    pub fn read_versioned(&self, id: &DocId) -> Result<(String, String), MemoryError> {
        let (text, version) = self.read_stored(id)?;
        let successor = front_matter::split(&text)
            .yaml
            .and_then(|y| FrontMatter::parse(y).ok())
            .and_then(|fm| fm.superseded_by);
        Ok(match successor {
            Some(new) => {
                (format!("> Superseded by {new}: read that for the current version.\n\n{text}"), version)
            }
            None => (text, version),
        })
    }

    /// The document's text exactly as stored, and its version: what an
    /// editor of the whole file starts from.
    pub fn read_stored(&self, id: &DocId) -> Result<(String, String), MemoryError> {
        self.restore_invariants()?;
        let text = self.read_existing(id)?;
        let version = merge::version(&text);
        Ok((text, version))
    }

    /// One section of a document: its heading line and everything under it.
    pub fn read_section(&self, id: &DocId, heading: &str) -> Result<String, MemoryError> {
        self.restore_invariants()?;
        let text = self.read_existing(id)?;
        let span = section_span(id, &text, heading)?;
        let body = front_matter::split(&text).body;
        Ok(body[span.start..span.end].to_owned())
    }

    /// The outline (the L0 index of the MCP resource): the tree from root with a one-line summary per
    /// document (front-matter `summary`, else the first line of text),
    /// within `budget` bytes (the configured budget when `None`). Reads only
    /// the documents it shows.
    pub fn outline(&self, budget: Option<usize>) -> Result<String, MemoryError> {
        self.restore_invariants()?;
        let mut failure = None;
        let text = outline::render(budget.unwrap_or(self.settings.outline_budget), |id| {
            match self.storage.read(id) {
                Ok(Some(text)) => {
                    let split = front_matter::split(&text);
                    Some(outline::Entry {
                        summary: outline::summary(&split),
                        children: parse_links(split.body).ids,
                    })
                }
                Ok(None) | Err(crate::storage::StorageError::Unreadable { .. }) => None,
                Err(e) => {
                    failure.get_or_insert(e);
                    None
                }
            }
        });
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(text),
        }
    }

    /// A document's one-line summary, as the outline shows it.
    pub fn summary(&self, id: &DocId) -> Result<String, MemoryError> {
        let text = self.read_existing(id)?;
        Ok(outline::summary(&front_matter::split(&text)))
    }

    /// Every document with its size, last change, parent, children and
    /// references both ways (the list view), in id order.
    pub fn documents(&self) -> Result<Vec<DocumentInfo>, MemoryError> {
        let _lock = self.lock(LockMode::Shared)?;
        let tree = self.tree_unlocked()?.0;
        let listing = self.storage.list()?;
        Ok(listing
            .docs
            .iter()
            .map(|(id, stamp)| DocumentInfo {
                parent: tree.parents(id).first().cloned(),
                children: tree.links(id).iter().filter(|c| tree.contains(c)).cloned().collect(),
                references: tree.references(id).to_vec(),
                referenced_by: tree.referrers(id).to_vec(),
                bytes: stamp.len,
                modified_ns: stamp.modified_ns,
                id: id.clone(),
            })
            .collect())
    }

    pub fn status(&self) -> Result<StoreStatus, MemoryError> {
        self.restore_invariants()?;
        let listing = self.storage.list()?;
        let mut sizes: Vec<(DocId, u64)> = listing.docs.iter().map(|(id, s)| (id.clone(), s.len)).collect();
        sizes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(StoreStatus {
            location: self.storage.location(),
            documents: sizes.len(),
            total_bytes: sizes.iter().map(|(_, len)| len).sum(),
            largest: sizes.into_iter().take(5).collect(),
            trash: self.storage.trash_len()?,
        })
    }
}
