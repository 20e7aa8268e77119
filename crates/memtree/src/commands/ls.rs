//! `memtree ls`: every document with its size, last change, parent and
//! children (the list view); `--json` gives the documents and the
//! graph as nodes and edges.

use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let documents = super::open_own(settings)?.documents()?;
    if settings.json {
        let edges: Vec<serde_json::Value> = documents
            .iter()
            .flat_map(|d| d.children.iter().map(move |c| serde_json::json!({ "from": d.id, "to": c })))
            .collect();
        super::print_json(&serde_json::json!({ "documents": documents, "edges": edges }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for d in &documents {
        let changed = memtree_core::date::iso_datetime(d.modified_ns).replace('T', " ").replace('Z', " UTC");
        let parent = d.parent.as_ref().map_or("-", |p| p.as_str());
        out.push_str(&format!(
            "{}\t{} bytes\tchanged {changed}\tparent {parent}\t{} children\n",
            d.id,
            d.bytes,
            d.children.len()
        ));
    }
    super::print(&out)?;
    Ok(ExitCode::SUCCESS)
}
