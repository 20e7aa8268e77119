//! `memtree ls`: every document with its size, last change, parent and
//! children (the list view); `--json` gives the documents and the
//! graph as nodes and edges (`kind` child or reference).

use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let documents = super::open_own(settings)?.documents()?;
    if settings.json {
        let edges: Vec<serde_json::Value> = documents
            .iter()
            .flat_map(|d| {
                let children =
                    d.children.iter().map(|c| serde_json::json!({ "from": d.id, "to": c, "kind": "child" }));
                let references = d
                    .references
                    .iter()
                    .map(|r| serde_json::json!({ "from": d.id, "to": r, "kind": "reference" }));
                children.chain(references)
            })
            .collect();
        super::print_json(&serde_json::json!({ "documents": documents, "edges": edges }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for d in &documents {
        let changed = memtree_core::date::iso_datetime(d.modified_ns).replace('T', " ").replace('Z', " UTC");
        let parent = d.parent.as_ref().map_or("-", |p| p.as_str());
        out.push_str(&format!(
            "{}\t{} bytes\tchanged {changed}\tparent {parent}\t{} children\t{} references\n",
            d.id,
            d.bytes,
            d.children.len(),
            d.references.len()
        ));
    }
    super::print(&out)?;
    Ok(ExitCode::SUCCESS)
}
