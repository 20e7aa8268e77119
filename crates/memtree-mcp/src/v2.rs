//! `serve --profile v2`: seed 004's Memory V2 tools over the same engine.
//! A path is a document id; the root answers to `memory` (and `root`, or
//! no path). Answers are the seed's objects as JSON (`WriteResult`,
//! search results, file infos, the graph); a failure is a tool error.

use std::sync::Arc;

use memtree_core::{DocId, MemoryError, Namespaced, front_matter, sections};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use crate::profile::{Answer, Failure, answer, size_of};

/// What the root is called in this profile.
const ROOT: &str = "memory";

const INSTRUCTIONS: &str = "\
Memory V2: one root file `memory`; files link their children as [[path]] and split when they grow past \
10 KB. read_memory(path) to read, write_memory(content, path, mode) to write (update merges by section), \
search_memory(query) to find, list_memory_files and get_memory_graph to see the whole.";

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    /// Default: the root, memory.
    pub path: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    pub content: String,
    /// Default: the root, memory.
    pub path: Option<String>,
    /// update (default: merge by section), append or replace.
    pub mode: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pub query: String,
    /// Default 10.
    pub max_results: Option<u32>,
}

#[derive(Clone)]
pub struct V2Server {
    trees: Arc<Namespaced>,
    tool_router: ToolRouter<V2Server>,
}

/// The document a path names: the root for none, `memory` or `root`.
fn path_id(path: Option<&str>) -> Result<DocId, Failure> {
    match path.map(str::trim).map(|p| p.trim_matches('/')) {
        None | Some("" | ROOT | "root") => Ok(DocId::root()),
        Some(p) => {
            DocId::parse(p).map_err(|e| Failure::Flagged(format!("Error: path: invalid path {p:?}: {e}")))
        }
    }
}

/// A document's path as this profile names it.
fn path_of(id: &DocId) -> String {
    if id.is_root() { ROOT.to_owned() } else { id.to_string() }
}

/// An engine error as this profile's tool error: what memtree's tools
/// call the `id` is a `path` here.
fn flagged(error: MemoryError) -> Failure {
    let text = error.report_as(|s| if s == memtree_core::Subject::Id { "path" } else { s.tool_argument() });
    Failure::Flagged(match text.strip_prefix("Error: id:") {
        Some(rest) => format!("Error: path:{rest}"),
        None => text,
    })
}

/// The parent a new document at `id` goes under: its nearest existing
/// ancestor by path (`projects` for `projects/silica`), else the root.
fn parent_for(trees: &Namespaced, id: &DocId) -> Result<DocId, MemoryError> {
    let segments: Vec<&str> = id.segments().collect();
    for end in (1..segments.len()).rev() {
        if let Ok(candidate) = DocId::parse(&segments[..end].join("/"))
            && trees.own().exists(&candidate)?
        {
            return Ok(candidate);
        }
    }
    Ok(DocId::root())
}

/// `existing` with `new` incorporated: each `##` section of `new` takes
/// the place of the section of the same heading, or comes at the end; text
/// before the first section is added once. Nothing is added twice.
fn incorporate(existing: &str, new: &str) -> String {
    let new = new.trim_end();
    if existing.contains(new) {
        return existing.to_owned();
    }
    let split = front_matter::split(existing);
    let old = sections::top_sections(split.body);
    let add = sections::top_sections(new);
    let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
    let mut out = split.head.to_owned();
    out.push_str(&old.preamble);
    let preamble = add.preamble.trim();
    if !preamble.is_empty() && !existing.contains(preamble) {
        push_block(&mut out, preamble);
    }
    for ((heading, _), raw) in old.sections.iter().zip(&old.raw) {
        match add.sections.iter().position(|(h, _)| same(h, heading)) {
            Some(at) => push_block(&mut out, add.raw[at].trim_end()),
            None => push_block(&mut out, raw.trim_end()),
        }
    }
    for ((heading, _), raw) in add.sections.iter().zip(&add.raw) {
        if !old.sections.iter().any(|(h, _)| same(h, heading)) {
            push_block(&mut out, raw.trim_end());
        }
    }
    out.push('\n');
    out
}

/// Appends `block` after a blank line.
fn push_block(out: &mut String, block: &str) {
    let trimmed = out.trim_end_matches('\n').len();
    out.truncate(trimmed);
    if !out.is_empty() && !out.ends_with("---") {
        out.push_str("\n\n");
    } else if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(block);
}

/// The seed's `WriteResult`.
fn write_result(trees: &Namespaced, id: &DocId, split: bool, new_files: &[DocId]) -> Value {
    json!({
        "success": true,
        "path": path_of(id),
        "size_bytes": size_of(trees, id),
        "split_triggered": split,
        "new_files": new_files.iter().map(path_of).collect::<Vec<_>>(),
    })
}

impl V2Server {
    pub fn new(trees: Arc<Namespaced>) -> V2Server {
        let tool_router = crate::profile::compacted(Self::tool_router());
        V2Server { trees, tool_router }
    }
}

#[tool_router]
impl V2Server {
    #[tool(description = "Read a memory file (default: the root, memory).")]
    async fn read_memory(&self, Parameters(args): Parameters<PathArgs>) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let id = path_id(args.path.as_deref())?;
            trees.own().read_document(&id).map(Answer::Text).map_err(flagged)
        })
        .await
    }

    #[tool(
        description = "Write a memory file: update merges by ## section, append adds at the end, replace \
                          overwrites. A new [[path]] link creates that file; a file over 10 KB is split."
    )]
    async fn write_memory(
        &self,
        Parameters(args): Parameters<WriteArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let id = path_id(args.path.as_deref())?;
            let mode = args.mode.as_deref().unwrap_or("update");
            if !matches!(mode, "update" | "append" | "replace") {
                return Err(Failure::Flagged(format!(
                    "Error: mode: {mode:?} is not update, append or replace"
                )));
            }
            let memory = trees.own();
            if !memory.exists(&id).map_err(flagged)? {
                let parent = parent_for(trees, &id).map_err(flagged)?;
                memory.create_document(&parent, &id, &args.content).map_err(flagged)?;
                return Ok(Answer::Json(write_result(trees, &id, false, &[])));
            }
            let (text, version) = memory.read_versioned(&id).map_err(flagged)?;
            let new = match mode {
                "replace" => args.content.clone(),
                "append" => format!("{}\n{}", text.trim_end_matches('\n'), args.content),
                _ => incorporate(&text, &args.content),
            };
            let outcome = memory.update_document(&id, &new, Some(&version)).map_err(flagged)?;
            Ok(Answer::Json(write_result(trees, &id, outcome.split.is_some(), &outcome.created)))
        })
        .await
    }

    #[tool(description = "Search memory: ranked excerpts with relevance (0–1) and their place in the tree.")]
    async fn search_memory(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let limit = args.max_results.map_or(10, |n| n.clamp(1, 50) as usize);
            let found = trees.search(&args.query, limit, None, None).map_err(flagged)?;
            let results: Vec<Value> = found
                .hits
                .iter()
                .map(|hit| {
                    let mut context: Vec<String> = hit.path.iter().map(path_of).collect();
                    context.push(path_of(&hit.id));
                    json!({
                        "path": path_of(&hit.id),
                        "excerpt": hit.excerpt,
                        "relevance_score": (hit.score * 1000.0).round() / 1000.0,
                        "context": format!("{} § {}", context.join(" → "), hit.heading),
                    })
                })
                .collect();
            Ok(Answer::Json(Value::Array(results)))
        })
        .await
    }

    #[tool(description = "Every memory file: size, last update, the files it links and is linked from.")]
    async fn list_memory_files(&self) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let files: Vec<Value> = trees
                .own()
                .documents()
                .map_err(flagged)?
                .iter()
                .map(|d| {
                    let links_to: Vec<String> = d.children.iter().chain(&d.references).map(path_of).collect();
                    let linked_from: Vec<String> =
                        d.parent.iter().chain(&d.referenced_by).map(path_of).collect();
                    json!({
                        "path": path_of(&d.id),
                        "size_bytes": d.bytes,
                        "last_updated": memtree_core::date::iso_datetime(d.modified_ns),
                        "links_to": links_to,
                        "linked_from": linked_from,
                    })
                })
                .collect();
            Ok(Answer::Json(Value::Array(files)))
        })
        .await
    }

    #[tool(description = "The graph of memory files: nodes (id, size, label) and links (from, to, label).")]
    async fn get_memory_graph(&self) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let memory = trees.own();
            let documents = memory.documents().map_err(flagged)?;
            let mut nodes = Vec::new();
            let mut edges = Vec::new();
            for d in &documents {
                let text = memory.read_document(&d.id).unwrap_or_default();
                let body = front_matter::split(&text).body;
                let label = match sections::title(body) {
                    _ if d.id.is_root() => "Root".to_owned(),
                    Some(title) => title,
                    None => d.id.as_str().rsplit('/').next().unwrap_or_default().to_owned(),
                };
                nodes.push(json!({ "id": path_of(&d.id), "size": d.bytes, "label": label }));
                for child in &d.children {
                    edges.push(json!({ "from": path_of(&d.id), "to": path_of(child), "label": link_label(body, child) }));
                }
                for target in &d.references {
                    edges.push(json!({ "from": path_of(&d.id), "to": path_of(target), "label": "reference" }));
                }
            }
            Ok(Answer::Json(json!({ "nodes": nodes, "edges": edges })))
        })
        .await
    }

    #[tool(description = "Split a memory file into child files along its ## sections.")]
    async fn split_memory(
        &self,
        Parameters(args): Parameters<PathArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let id = path_id(args.path.as_deref())?;
            let outcome = trees.own().split_document(&id, None).map_err(flagged)?;
            Ok(Answer::Json(write_result(trees, &id, true, &outcome.children)))
        })
        .await
    }
}

/// What a parent says of a child on the link's line (`- [[child]]: what`).
fn link_label(body: &str, child: &DocId) -> String {
    let link = format!("[[{child}");
    body.lines()
        .find(|l| l.contains(&link))
        .and_then(|l| l.split_once("]]").map(|(_, after)| after))
        .map(|after| after.trim().trim_start_matches([':', '-', '—']).trim().to_owned())
        .unwrap_or_default()
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for V2Server {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        crate::profile::checked_call(self, &self.tool_router, request, context).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memtree (v2 profile)", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_replaces_its_sections_and_adds_the_rest() {
        let existing = "---\nsummary: s\n---\n# Silica\nintro\n\n## Goals\nold goals\n\n## Stack\nRust\n";
        let merged = incorporate(existing, "## Goals\nnew goals\n\n## Risks\nnone yet\n");
        assert_eq!(
            merged,
            "---\nsummary: s\n---\n# Silica\nintro\n\n## Goals\nnew goals\n\n## Stack\nRust\n\n## Risks\nnone yet\n"
        );
        assert_eq!(incorporate(&merged, "none yet"), merged, "nothing twice");
        assert_eq!(incorporate("# A\n", "a fact"), "# A\n\na fact\n");
    }

    #[test]
    fn the_root_answers_to_memory() {
        for path in [None, Some(""), Some("memory"), Some("root"), Some("/memory/")] {
            assert!(path_id(path).is_ok_and(|id| id.is_root()), "{path:?}");
        }
        assert_eq!(path_of(&DocId::root()), "memory");
        assert_eq!(
            link_label("- [[projects/silica]]: Python projects\n", &DocId::parse("projects/silica").unwrap()),
            "Python projects"
        );
    }
}
