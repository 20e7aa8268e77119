//! `import`: many new documents brought in at once under one parent, as
//! one checked, atomic change (one version in history).

use std::collections::{HashMap, HashSet};

use super::Memory;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::line_ending::LineEnding;
use crate::refusal::{Refusal, Subject};
use crate::storage::Change;

/// New documents, and where they join the tree.
#[derive(Debug, Clone, Default)]
pub struct Import {
    /// Each new document and its text; their `[[links]]` make their tree.
    pub docs: Vec<(DocId, String)>,
    /// The documents the parent links, in order (the tops of that tree).
    pub top: Vec<DocId>,
    /// The new text of root, when the import brings a whole store into a
    /// new one: it links the tops itself (`top` is then empty).
    pub root_text: Option<String>,
}

/// What an import did (or, in a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Imported {
    pub documents: usize,
    pub under: DocId,
    pub written: bool,
}

impl Memory {
    /// Brings `import` in under `under` in one change: each new document
    /// checked as an update checks it, none that exists already (letter
    /// case aside), every one of them in exactly one place of the tree
    /// below `under`. With `dry_run`, every check runs and nothing is
    /// written.
    pub fn import(
        &self,
        under: &DocId,
        import: &Import,
        label: &str,
        dry_run: bool,
    ) -> Result<Imported, MemoryError> {
        self.write(|| {
            let change = self.plan_import(under, import, label)?;
            if !dry_run {
                self.apply_change(&change)?;
            }
            Ok(Imported { documents: import.docs.len(), under: under.clone(), written: !dry_run })
        })
    }

    fn plan_import(&self, under: &DocId, import: &Import, label: &str) -> Result<Change, MemoryError> {
        let old_parent_text = self.read_existing(under)?;
        let parent_text = match &import.root_text {
            Some(text) if under.is_root() => text.clone(),
            Some(_) => return Err(Refusal::Missing(Subject::Parent).into()),
            None => with_links(&old_parent_text, &import.top),
        };
        let parent_links = self.check_text(&old_parent_text, &parent_text).map_err(in_doc(under.clone()))?;

        let mut folded = HashSet::new();
        let mut parents: HashMap<&DocId, Vec<&DocId>> = HashMap::new();
        let mut links_of: HashMap<&DocId, Vec<DocId>> = HashMap::new();
        for (id, text) in &import.docs {
            if !folded.insert(id.folded())
                || self.storage.stamp(id)?.is_some()
                || self.storage.find_folded(id)?.is_some()
            {
                return Err(Refusal::AlreadyExists { id: id.clone() }.into());
            }
            let links = self.check_text("", text).map_err(in_doc(id.clone()))?;
            links_of.insert(id, links.ids);
        }
        let imported: HashMap<&DocId, usize> =
            import.docs.iter().enumerate().map(|(i, (id, _))| (id, i)).collect();
        let old_children: HashSet<DocId> = crate::links::children(&old_parent_text).into_iter().collect();
        for link in &parent_links.ids {
            if let Some((id, _)) = imported.get_key_value(link) {
                parents.entry(id).or_default().push(under);
            } else if !old_children.contains(link) && self.storage.stamp(link)?.is_some() {
                return Err(self.cross_tree(under, link)?);
            }
        }
        for (id, links) in &links_of {
            for link in links {
                if let Some((child, _)) = imported.get_key_value(link) {
                    parents.entry(child).or_default().push(id);
                } else if self.storage.stamp(link)?.is_some() {
                    return Err(in_doc((*id).clone())(self.cross_tree(id, link)?));
                }
            }
        }
        for (id, _) in &import.docs {
            match parents.get(id).map(Vec::as_slice) {
                Some([_]) => {}
                Some(several) => {
                    let parents = several.iter().map(|p| (*p).clone()).collect();
                    return Err(Refusal::SeveralParents { id: id.clone(), parents }.into());
                }
                None => return Err(Refusal::NotInTree { id: id.clone() }.into()),
            }
        }
        // Reached from the parent, level by level: whatever is not is in
        // a cycle of imported documents.
        let mut depth_of: HashMap<&DocId, usize> = HashMap::new();
        let mut level: Vec<&DocId> = parents.iter().filter(|(_, p)| p[0] == under).map(|(c, _)| *c).collect();
        let base = self.depth(under)?;
        let mut depth = base + 1;
        while !level.is_empty() {
            let mut next = Vec::new();
            for id in level {
                if depth_of.insert(id, depth).is_none() {
                    next.extend(
                        links_of[id].iter().filter_map(|l| imported.get_key_value(l).map(|(k, _)| *k)),
                    );
                }
            }
            level = next;
            depth += 1;
        }
        if let Some((id, _)) = import.docs.iter().find(|(id, _)| !depth_of.contains_key(id)) {
            return Err(Refusal::NotInTree { id: id.clone() }.into());
        }
        if let Some((deepest, &d)) = depth_of.iter().max_by_key(|(_, d)| **d) {
            self.check_depth(Subject::Id, deepest, d)?;
        }
        let mut puts = vec![(under.clone(), parent_text)];
        puts.extend(import.docs.iter().cloned());
        Ok(Change { puts, deletes: vec![], label: label.to_owned() })
    }
}

/// Names the document an error is about.
fn in_doc(id: DocId) -> impl FnOnce(MemoryError) -> MemoryError {
    move |error| MemoryError::InDocument { id, error: error.into() }
}

/// `text` with a `- [[id]]` line for each of `ids` at its end, in its own
/// line endings.
fn with_links(text: &str, ids: &[DocId]) -> String {
    if ids.is_empty() {
        return text.to_owned();
    }
    let eol = LineEnding::of(text).as_str();
    let mut out = text.trim_end().to_owned();
    out.push_str(eol);
    out.push_str(eol);
    for id in ids {
        out.push_str(&format!("- [[{id}]]{eol}"));
    }
    out
}

impl Memory {
    /// Creates document `id` with `text` under `parent` (a `- [[id]]` line
    /// at its end), in one change: the import of one document.
    pub fn create_document(&self, parent: &DocId, id: &DocId, text: &str) -> Result<Imported, MemoryError> {
        let import =
            Import { docs: vec![(id.clone(), text.to_owned())], top: vec![id.clone()], root_text: None };
        self.import(parent, &import, &format!("create {id}"), false)
    }
}
