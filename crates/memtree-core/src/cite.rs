//! How answers name documents and passages: `shared:` for the shared tree,
//! `[id#heading]` for a passage, ids joined with `, `.

use crate::doc_id::DocId;

/// How an id argument names a document of the shared tree.
pub const SHARED_PREFIX: &str = "shared:";

/// `[id#heading]`, or `[id]` for text before the first heading; a passage
/// of the shared tree seen from a namespace is `[shared:id…]`.
pub fn cite(id: &DocId, heading: &str, shared: bool) -> String {
    let tree = if shared { SHARED_PREFIX } else { "" };
    if heading.is_empty() { format!("[{tree}{id}]") } else { format!("[{tree}{id}#{heading}]") }
}

/// Joins ids with `, `, as every list in memtree's answers is written.
pub fn join(ids: &[DocId]) -> String {
    ids.iter().map(DocId::as_str).collect::<Vec<_>>().join(", ")
}
