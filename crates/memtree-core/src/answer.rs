//! The answers of the engine's operations, and the one text (`report`)
//! each renders for both adapters, the MCP tools and the CLI.

use crate::cite::join;
use crate::doc_id::DocId;
use crate::remember;
use crate::tree::{Finding, Severity};

/// What a successful update did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// New documents, in link order.
    pub created: Vec<DocId>,
    /// Pruned documents: each removed link's subtree, parent before children.
    pub deleted: Vec<DocId>,
    /// The document outgrew the split threshold: what to do about it, or
    /// what was done.
    pub split: Option<String>,
    /// The write was based on an older version and merged with what changed
    /// since: the sections kept from those changes.
    pub merged: Option<Vec<String>>,
    /// The change is saved, but something failed beside it (history).
    pub warning: Option<String>,
}

impl UpdateOutcome {
    /// The answer of `update_document`: `Succeeded`, then `Created:` and
    /// `Deleted:` lines when there is something to list.
    pub fn report(&self) -> String {
        let mut out = "Succeeded".to_owned();
        if !self.created.is_empty() {
            out.push_str(&format!("\nCreated: {}", join(&self.created)));
        }
        if !self.deleted.is_empty() {
            out.push_str(&format!("\nDeleted: {}", join(&self.deleted)));
        }
        match self.merged.as_deref() {
            Some([]) => out.push_str("\nMerged: the document had changed since your version, in agreement"),
            Some(kept) => out.push_str(&format!(
                "\nMerged: the document had changed since your version; kept those changes to {}",
                kept.join(", ")
            )),
            None => {}
        }
        if let Some(split) = &self.split {
            out.push('\n');
            out.push_str(split);
        }
        push_warning(&mut out, self.warning.as_deref());
        out
    }
}

/// Adds a warning line to an answer.
pub(crate) fn push_warning(out: &mut String, warning: Option<&str>) {
    if let Some(warning) = warning {
        out.push_str("\nWarning: ");
        out.push_str(warning);
    }
}

/// What `remember` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remembered {
    pub id: DocId,
    pub section: String,
    pub action: remember::Action,
    /// The document made for the fact, when none matched.
    pub created: Option<DocId>,
    /// Documents the fact's own links created.
    pub update: UpdateOutcome,
}

impl Remembered {
    pub fn report(&self) -> String {
        let place = format!("{}#{}", self.id, self.section);
        let mut out = match &self.action {
            remember::Action::Added => format!("Added to {place}"),
            remember::Action::Replaced { old } => format!("Replaced in {place}: {}", old.trim()),
            remember::Action::Merged { old } => format!("Merged into {place}: {}", old.trim()),
            remember::Action::Skipped { existing } => {
                format!("Skipped: {place} already says: {}", existing.trim())
            }
        };
        if let Some(id) = &self.created {
            out = format!("Created document {id}\n{out}");
        }
        if !self.update.created.is_empty() {
            out.push_str(&format!("\nCreated: {}", join(&self.update.created)));
        }
        push_warning(&mut out, self.update.warning.as_deref());
        out
    }
}

/// What a split did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitOutcome {
    pub children: Vec<DocId>,
    /// Documents made for links that named ids which did not exist.
    pub created: Vec<DocId>,
    pub warning: Option<String>,
}

impl SplitOutcome {
    pub fn report(&self) -> String {
        let mut out = format!("Succeeded\nSplit into: {}", join(&self.children));
        if !self.created.is_empty() {
            out.push_str(&format!("\nCreated: {}", join(&self.created)));
        }
        push_warning(&mut out, self.warning.as_deref());
        out
    }
}

/// What a move did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveOutcome {
    pub id: DocId,
    pub from: DocId,
    pub to: DocId,
    pub warning: Option<String>,
}

impl MoveOutcome {
    pub fn report(&self) -> String {
        let mut out = if self.from == self.to {
            format!("Succeeded\nUnchanged: {} is already a child of {}", self.id, self.to)
        } else {
            format!("Succeeded\nMoved: {} from {} to {}", self.id, self.from, self.to)
        };
        push_warning(&mut out, self.warning.as_deref());
        out
    }
}

/// Health of a store, for `validate`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ValidationReport {
    pub documents: usize,
    pub findings: Vec<Finding>,
}

impl ValidationReport {
    pub fn is_healthy(&self) -> bool {
        self.findings.iter().all(|f| f.severity() < Severity::Error)
    }

    /// One line per finding with its severity, then the verdict.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for finding in &self.findings {
            out.push_str(&format!("{}: {finding}\n", finding.severity()));
        }
        let verdict = if self.is_healthy() { "healthy" } else { "unhealthy" };
        out.push_str(&format!("{} documents, {} findings: {verdict}", self.documents, self.findings.len()));
        out
    }
}

/// One line of the list view.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DocumentInfo {
    pub id: DocId,
    pub bytes: u64,
    /// Last change, in nanoseconds since the Unix epoch (ISO 8601 in JSON).
    #[serde(rename = "modified", serialize_with = "crate::date::serialize_iso")]
    pub modified_ns: u64,
    pub parent: Option<DocId>,
    pub children: Vec<DocId>,
    /// The documents it references (standard Markdown links), existing or not.
    pub references: Vec<DocId>,
    /// The documents that reference it.
    pub referenced_by: Vec<DocId>,
}

/// What [`Memory::reconcile`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reconciliation {
    pub unchanged: usize,
    /// Touched but not changed (same content hash).
    pub restamped: usize,
    pub indexed: usize,
    pub removed: usize,
}

/// Size and shape of a store, for `status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreStatus {
    pub location: String,
    pub documents: usize,
    pub total_bytes: u64,
    pub largest: Vec<(DocId, u64)>,
    pub trash: usize,
}

/// Everything `status` shows: the store, the index, history, use, and the
/// tidying suggestions.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StatusReport {
    pub store: StoreStatus,
    pub index: crate::index::IndexStats,
    pub index_fresh: bool,
    /// Why the index is out of date, when it is.
    #[serde(skip)]
    pub index_finding: Option<String>,
    pub embeddings: Option<crate::index::EmbeddingProgress>,
    pub history: String,
    pub most_used: Vec<crate::index::Usage>,
    pub least_used: Vec<crate::index::Usage>,
    pub suggestions: Vec<String>,
}

impl StatusReport {
    /// The text of `memtree status`: one fact per line.
    pub fn render(&self) -> String {
        let (status, index) = (&self.store, &self.index);
        let mut out = format!(
            "data folder: {}\ndocuments: {}\ntotal size: {} bytes\ntrash: {} documents\n",
            status.location, status.documents, status.total_bytes, status.trash
        );
        if !status.largest.is_empty() {
            out.push_str("largest:\n");
            for (id, len) in &status.largest {
                out.push_str(&format!("  {id}: {len} bytes\n"));
            }
        }
        out.push_str(&format!(
            "index: {} documents, {} passages, {} bytes, {}\n",
            index.documents,
            index.passages,
            index.bytes,
            self.index_finding.as_deref().unwrap_or("up to date")
        ));
        out.push_str(&match &self.embeddings {
            Some(e) => {
                format!("embeddings: {}, {} of {} passages embedded\n", e.model, e.embedded, e.passages)
            }
            None => "embeddings: off (BM25 only; see --embedding-model)\n".to_owned(),
        });
        out.push_str(&format!("history: {}\n", self.history));
        let line = |u: &crate::index::Usage| format!("  {}: {} packs\n", u.id, u.count);
        if !self.most_used.is_empty() {
            out.push_str("most used in memory packs:\n");
            out.extend(self.most_used.iter().map(line));
            out.push_str("least used:\n");
            out.extend(self.least_used.iter().map(line));
        }
        out.push_str("suggestions:\n");
        out.extend(self.suggestions.iter().map(|s| format!("  {s}\n")));
        out
    }
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The document and the gone documents below it that came back.
    pub ids: Vec<DocId>,
    pub version: String,
    /// The document the restored one was linked under again, when it had
    /// been pruned.
    pub relinked_under: Option<DocId>,
    pub outcome: UpdateOutcome,
}

impl Restored {
    /// `Succeeded`, what came back from which version, then a `Deleted:`
    /// line for children the restored version no longer links.
    pub fn report(&self) -> String {
        let mut out = format!("Succeeded\nRestored: {} from {}", join(&self.ids), self.version);
        if let Some(parent) = &self.relinked_under {
            out.push_str(&format!(" under {parent}"));
        }
        if !self.outcome.deleted.is_empty() {
            out.push_str(&format!("\nDeleted: {}", join(&self.outcome.deleted)));
        }
        push_warning(&mut out, self.outcome.warning.as_deref());
        out
    }
}
