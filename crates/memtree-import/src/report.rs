//! What an import did, for a person (`render`) and for scripts (JSON):
//! which file became which document and why its id is not its name, what
//! was left out, the attachments copied, and the links before and after.

use crate::source::Skipped;

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    pub format: String,
    pub under: String,
    pub documents: Vec<Entry>,
    pub skipped: Vec<Skipped>,
    pub attachments: Vec<Copied>,
    pub links: LinkCounts,
    /// Other changes made to keep a note whole (front-matter memtree cannot
    /// read kept as a code block, say).
    pub remarks: Vec<String>,
    /// Whether the documents were written (not a dry run).
    pub written: bool,
}

/// A file or folder and the document it became.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// The path in the source; a folder's ends with `/`.
    pub from: String,
    pub id: String,
    /// Why the id is not the file's name, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed: Option<String>,
}

/// An attachment and where it went in the store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    pub from: String,
    pub to: String,
}

/// The source's links, and the store's after the import, counted apart.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkCounts {
    pub before: Counted,
    pub after: Counted,
}

/// Links of a set of notes by what they lead to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counted {
    /// To another note (a reference after the import).
    pub to_notes: usize,
    /// To an attachment.
    pub to_files: usize,
    /// To a heading or block of the same note.
    pub in_note: usize,
    /// To nothing that exists.
    pub unresolved: usize,
}

impl Counted {
    pub fn total(&self) -> usize {
        self.to_notes + self.to_files + self.in_note + self.unresolved
    }
}

impl Report {
    /// The report as a person reads it: totals first, then each renamed
    /// document and each file left out.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let verb = if self.written { "Imported" } else { "Would import (dry run)" };
        let folders = self.documents.iter().filter(|e| e.from.ends_with('/')).count();
        out.push_str(&format!(
            "{verb} {} documents ({} notes, {folders} folders) under {} as {}\n",
            self.documents.len(),
            self.documents.len() - folders,
            self.under,
            self.format
        ));
        let (b, a) = (&self.links.before, &self.links.after);
        out.push_str(&format!(
            "Links: {} before, {} after ({} to notes → {} references, {} → {} to files, {} → {} in a note, {} → {} unresolved)\n",
            b.total(),
            a.total(),
            b.to_notes,
            a.to_notes,
            b.to_files,
            a.to_files,
            b.in_note,
            a.in_note,
            b.unresolved,
            a.unresolved
        ));
        if !self.attachments.is_empty() {
            out.push_str(&format!("Attachments copied beside the notes: {}\n", self.attachments.len()));
        }
        let renamed: Vec<&Entry> = self.documents.iter().filter(|e| e.renamed.is_some()).collect();
        if !renamed.is_empty() {
            out.push_str(&format!("Renamed ({}):\n", renamed.len()));
            for e in renamed {
                out.push_str(&format!(
                    "  {} → {} ({})\n",
                    e.from,
                    e.id,
                    e.renamed.as_deref().unwrap_or_default()
                ));
            }
        }
        if !self.skipped.is_empty() {
            out.push_str(&format!("Skipped ({}):\n", self.skipped.len()));
            for s in &self.skipped {
                out.push_str(&format!("  {}: {}\n", s.path, s.why));
            }
        }
        for remark in &self.remarks {
            out.push_str(&format!("Note: {remark}\n"));
        }
        out
    }
}
