//! Bringing notes into memtree and writing a store out.
//!
//! An import reads a source folder once ([`Source`]), plans the documents
//! it becomes (ids, the tree, every link rewritten) as a
//! [`memtree_core::Import`] with a [`Report`], and leaves the writing to the
//! engine, which checks and applies it as one change. Nothing here writes
//! to a store.

pub mod export;
pub mod folder;
pub mod format;
pub mod naming;
pub mod native;
pub mod report;
pub mod source;
pub mod wikilinks;

use std::collections::HashSet;
use std::path::PathBuf;

use memtree_core::front_matter;
use memtree_core::references;
use memtree_core::{DocId, Import};

pub use format::Format;
pub use report::{Copied, Counted, Entry, LinkCounts, Report};
pub use source::{Note, Skipped, Source};

/// Why an import or export could not start.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{}: {why}", path.display())]
    Source { path: PathBuf, why: String },
}

/// What an import is asked to do.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// The document the import goes under.
    pub under: DocId,
    /// The store's documents, whose ids an import does not take.
    pub existing: Vec<DocId>,
    /// The format's name, for the report.
    pub format: &'static str,
    /// Import notes that look like they hold a secret.
    pub allow_secrets: bool,
    /// Whether the store holds nothing but its root: a whole store
    /// imported then replaces it.
    pub store_is_new: bool,
    /// The largest note imported, in bytes.
    pub max_bytes: usize,
}

/// The documents an import makes, the attachments to copy beside them,
/// and the report.
#[derive(Debug)]
pub struct Plan {
    pub import: Import,
    /// Each attachment's path in the source and in the store.
    pub attachments: Vec<Copied>,
    pub report: Report,
    /// The source folder.
    pub source: PathBuf,
}

/// Reads the folder at `path` and plans its import as `format` (detected
/// when [`Format::Auto`]).
pub fn plan(path: &std::path::Path, format: Format, options: &PlanOptions) -> Result<Plan, ImportError> {
    let format = match format {
        Format::Auto => format::detect(path),
        f => f,
    };
    let options = PlanOptions { format: format.name(), ..options.clone() };
    let source = Source::read(&format::notes_folder(path, format), options.max_bytes)?;
    let mut plan = format::plan(source, format, &options);
    plan.report.links.after = count_after(&plan, &options.existing);
    Ok(plan)
}

/// The links of the planned documents by what they lead to, read back
/// from their texts: references to documents that will exist, links to
/// the attachments copied, links within a document, and the rest. The
/// tree's own `[[links]]` are not counted: they are not the source's.
fn count_after(plan: &Plan, existing: &[DocId]) -> Counted {
    let ids: HashSet<&DocId> = plan.import.docs.iter().map(|(id, _)| id).chain(existing).collect();
    let files: HashSet<&str> = plan.attachments.iter().map(|c| c.to.as_str()).collect();
    let mut counted = Counted::default();
    for (id, text) in &plan.import.docs {
        let body = front_matter::split(text).body;
        let folder = id.as_str().rsplit_once('/').map_or("", |(f, _)| f);
        for (dest, _) in
            references::destinations_where(body, |d| references::is_local(d) || d.starts_with('#'))
        {
            if dest.starts_with('#') {
                counted.in_note += 1;
            } else if references::is_local_markdown(&dest) {
                match references::resolve(id, &dest) {
                    Some(r) if ids.contains(&r.target) => counted.to_notes += 1,
                    _ => counted.unresolved += 1,
                }
            } else {
                let path = references::decode(dest.split('#').next().unwrap_or_default()).into_owned();
                match references::join_path(folder, &path) {
                    Some(p) if files.contains(p.as_str()) => counted.to_files += 1,
                    _ => counted.unresolved += 1,
                }
            }
        }
    }
    counted
}
