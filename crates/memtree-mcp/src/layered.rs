//! `serve --profile layered`: seed 002's layered-memory-mcp tools, so that
//! prompts and agents written for it work unchanged. A knowledge file
//! `<domain>.md` is the document `<domain>`; new files go under root. Each
//! tool is a thin adapter over the engine's own operation (`remember`,
//! `search`, `validate`, …) answering the JSON layered-memory-mcp answers;
//! a failure is `{"success": false, "error": …}`, as there. The L0 index is
//! derived from the documents at every read, so it is always in sync.

use std::sync::Arc;

use memtree_core::remember::{Action, Mode};
use memtree_core::{DocId, FactPlace, MemoryError, Namespaced, front_matter, sections};
use memtree_sessions::Sessions;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListResourcesResult,
    PaginatedRequestParams, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, prompt, prompt_handler, prompt_router, schemars, tool,
    tool_handler, tool_router,
};
use serde_json::{Value, json};

use crate::profile::{Answer, Failure, answer, kib, size_of};
use crate::prompts;

/// The L0 index's line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L0Format {
    /// `[L0] domain: summary → knowledge/domain.md`
    Hermes,
    /// `[domain.md] summary`
    Generic,
}

impl L0Format {
    pub fn parse(name: &str) -> Option<L0Format> {
        match name {
            "hermes" => Some(L0Format::Hermes),
            "generic" => Some(L0Format::Generic),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            L0Format::Hermes => "hermes",
            L0Format::Generic => "generic",
        }
    }

    fn line(self, domain: &str, summary: &str) -> String {
        match self {
            L0Format::Hermes => format!("[L0] {domain}: {summary} → knowledge/{domain}.md"),
            L0Format::Generic => format!("[{domain}.md] {summary}"),
        }
    }
}

const STATUS_URI: &str = "memory://status";
const FILES_URI: &str = "knowledge://files";

const INSTRUCTIONS: &str = "\
Layered memory: L0 index (below) → L1 knowledge files (recall_knowledge, get_knowledge_file) → \
L3 past sessions (scan_recent_sessions, search_sessions_by_keyword). Check the index before acting; \
write what is worth keeping with inject_knowledge.";

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InjectArgs {
    /// Knowledge file, e.g. infrastructure.
    pub domain: String,
    /// `##` section.
    pub section: String,
    pub content: String,
    /// upsert (default), append or merge.
    pub mode: Option<String>,
    pub agent_id: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    pub keyword: String,
    /// Default 5.
    pub top_n: Option<u32>,
    pub search_mode: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileArgs {
    /// e.g. infrastructure.md
    pub filename: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    pub filename: String,
    pub content: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    pub filename: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanArgs {
    /// Default 3.
    pub days: Option<u32>,
    /// Default 10.
    pub max_sessions: Option<u32>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionSearchArgs {
    pub keyword: String,
    /// Default 7.
    pub days: Option<u32>,
    /// Default 5.
    pub max_results: Option<u32>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncArgs {
    pub format: Option<String>,
    pub dry_run: Option<bool>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryArgs {
    /// add, remove or replace.
    pub action: String,
    pub domain: String,
    pub summary: Option<String>,
    pub filename: Option<String>,
}

#[derive(Clone)]
pub struct LayeredServer {
    trees: Arc<Namespaced>,
    sessions: Option<Arc<Sessions>>,
    format: L0Format,
    tool_router: ToolRouter<LayeredServer>,
    prompt_router: PromptRouter<LayeredServer>,
}

/// The document a `domain` (with or without `.md`) names.
fn domain_id(domain: &str) -> Result<DocId, Failure> {
    let name = domain.trim().strip_suffix(".md").unwrap_or(domain.trim());
    DocId::parse(name)
        .map_err(|_| Failure::InJson(format!("Invalid filename (path traversal blocked): {domain}")))
}

/// The document a `filename` names, to be overwritten or deleted: not
/// root, which holds the links that make every file part of the tree.
fn writable_file_id(filename: &str) -> Result<DocId, Failure> {
    let id = file_id(filename)?;
    if id.is_root() {
        return Err(Failure::InJson(format!(
            "{filename} holds the links of every knowledge file; it is changed through the files themselves"
        )));
    }
    Ok(id)
}

/// The document a `filename` names, which must end in `.md`.
fn file_id(filename: &str) -> Result<DocId, Failure> {
    let Some(stem) = filename.strip_suffix(".md") else {
        return Err(Failure::InJson(format!(
            "Invalid extension: filename must end with .md, got '{filename}'"
        )));
    };
    DocId::parse(stem).map_err(|_| Failure::InJson(format!("Path traversal not allowed: '{filename}'")))
}

fn file_of(id: &DocId) -> String {
    format!("{id}.md")
}

/// How many knowledge files there are: every document but root.
fn file_count(trees: &Namespaced) -> Result<usize, MemoryError> {
    Ok(trees.own().tree()?.len().saturating_sub(1))
}

/// The L0 index: a line per document but root, in the tree's order,
/// within `budget` bytes; a last `#` line (which L0 readers skip) says how
/// many files it leaves out. Only the documents listed are read. Answers
/// how many files there are, and the text.
fn l0_index(trees: &Namespaced, format: L0Format, budget: usize) -> Result<(usize, String), MemoryError> {
    let memory = trees.own();
    let tree = memory.tree()?;
    let files = tree.len().saturating_sub(1);
    let mut lines: Vec<String> = Vec::new();
    let mut used = 0;
    for entry in tree.outline().into_iter().filter(|e| !e.id.is_root()) {
        let line = format.line(entry.id.as_str(), &memory.summary(entry.id)?);
        if used + line.len() + 1 > budget {
            break;
        }
        used += line.len() + 1;
        lines.push(line);
    }
    if lines.len() < files {
        lines.push(format!("# … and {} more files (recall_knowledge finds them)", files - lines.len()));
    }
    Ok((files, lines.join("\n")))
}

/// The room the L0 index's tool answers get: far more than the index in
/// the instructions, but a bound on what a call puts into a context.
const L0_TOOL_BUDGET_FACTOR: usize = 16;

impl LayeredServer {
    pub fn new(trees: Arc<Namespaced>, sessions: Option<Arc<Sessions>>, format: L0Format) -> LayeredServer {
        let tool_router = crate::profile::compacted(Self::tool_router());
        LayeredServer { trees, sessions, format, tool_router, prompt_router: Self::prompt_router() }
    }

    fn sessions(&self) -> Result<Arc<Sessions>, Failure> {
        self.sessions.clone().ok_or_else(|| {
            Failure::InJson("Sessions directory not configured or not found: no transcripts to scan".into())
        })
    }
}

#[tool_router]
impl LayeredServer {
    #[tool(
        description = "Primary write path: put content into a ## section of a knowledge file, with dedup \
                          (upsert/append/merge) and L0 sync."
    )]
    async fn inject_knowledge(
        &self,
        Parameters(args): Parameters<InjectArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let mode = match args.mode.as_deref().unwrap_or("upsert") {
                "upsert" => Mode::Upsert,
                "append" => Mode::Append,
                "merge" => Mode::Merge,
                other => {
                    return Err(Failure::InJson(format!(
                        "Invalid mode: '{other}'. Must be 'upsert', 'append', or 'merge'."
                    )));
                }
            };
            if args.content.trim().is_empty() {
                return Err(Failure::InJson("Content is empty".into()));
            }
            let section = args.section.trim().trim_start_matches('#').trim().to_owned();
            if section.is_empty() {
                return Err(Failure::InJson("Section heading cannot be empty".into()));
            }
            let id = domain_id(&args.domain)?;
            let memory = trees.own();
            let before = memory.read_document(&id).ok();
            let had_section = before.as_deref().is_some_and(|text| {
                matches!(
                    sections::find_section(front_matter::split(text).body, &section),
                    sections::SectionLookup::Found(_)
                )
            });
            let place = FactPlace { document: Some(&id), section: Some(&section), parent: None };
            let done = memory.remember(&args.content, &place, mode)?;
            let (action, matched) = match &done.action {
                _ if before.is_none() => ("created", None),
                Action::Added if !had_section => ("section_created", None),
                Action::Added => ("appended", None),
                Action::Replaced { old } => ("replaced", Some(old)),
                Action::Merged { old } => ("merged", Some(old)),
                Action::Skipped { existing } => ("skipped", Some(existing)),
            };
            let file = file_of(&done.id);
            let dedup = json!({
                "similar_found": matched.is_some(),
                "matched_file": matched.map(|_| file.clone()),
                "matched_line": matched.map(|l| l.trim()),
                "suggestion": matched.map(|_| match action { "replaced" => "replace", "merged" => "merge", _ => "skip" }),
            });
            if action == "skipped" {
                return Ok(Answer::Json(json!({
                    "success": true, "action": "skipped", "file": file, "section": format!("## {section}"),
                    "reason": "Content already exists (high similarity)", "dedup": dedup, "l0_synced": false,
                })));
            }
            let pointer = L0Format::Hermes.line(done.id.as_str(), &memory.summary(&done.id)?);
            let is_new = before.is_none();
            Ok(Answer::Json(json!({
                "success": true,
                "action": action,
                "file": file,
                "section": format!("## {section}"),
                "bytes_written": args.content.len(),
                "file_size_bytes": size_of(trees, &done.id),
                "dedup": dedup,
                "l0_synced": true,
                "l0_sync_report": null,
                "l0_pointer": pointer,
                "hint": if is_new {
                    format!("A NEW knowledge file was created; it is in the L0 index from now on: \"{pointer}\"")
                } else {
                    "L0 index auto-synced, no action needed.".to_owned()
                },
                "is_new_file": is_new,
            })))
        })
        .await
    }

    #[tool(
        description = "Search knowledge files by keyword; answers the matching ## sections of the best files."
    )]
    async fn recall_knowledge(
        &self,
        Parameters(args): Parameters<RecallArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let top_n = args.top_n.map_or(5, |n| n.clamp(1, 50) as usize);
            let found = trees.search(&args.keyword, top_n * 4, None, None)?;
            let mut results: Vec<Value> = Vec::new();
            let mut order: Vec<DocId> = Vec::new();
            for hit in &found.hits {
                if !order.contains(&hit.id) {
                    if order.len() == top_n {
                        continue;
                    }
                    order.push(hit.id.clone());
                    results.push(json!({
                        "file": file_of(&hit.id),
                        "score": (hit.score * 1000.0).round() / 100.0,
                        "matched_sections": 0,
                        "sections": [],
                        "wiki_links": [],
                    }));
                }
                let at = order.iter().position(|i| *i == hit.id).expect("pushed above");
                let sections = results[at]["sections"].as_array_mut().expect("an array");
                if sections.len() < 3 {
                    sections.push(json!({ "title": hit.heading, "content": hit.text.trim() }));
                    results[at]["matched_sections"] = (sections.len()).into();
                }
            }
            Ok(Answer::Json(json!({
                "success": true,
                "keyword": args.keyword,
                "search_mode": args.search_mode.unwrap_or_else(|| "bm25".into()),
                "total_files": file_count(trees)?,
                "matched_files": results.len(),
                "results": results,
            })))
        })
        .await
    }

    #[tool(description = "Read a knowledge file by name.")]
    async fn get_knowledge_file(
        &self,
        Parameters(args): Parameters<FileArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let id = file_id(&args.filename)?;
            match trees.own().read_document(&id) {
                Ok(content) => {
                    Ok(Answer::Json(json!({ "success": true, "file": args.filename, "content": content })))
                }
                Err(MemoryError::NotFound { .. }) => {
                    Err(Failure::InJson(format!("File not found: {}", args.filename)))
                }
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    #[tool(
        description = "The L0 index: one line per knowledge file (LAYERED_MEMORY_L0_FORMAT hermes or generic)."
    )]
    async fn get_l0_index(&self) -> Result<CallToolResult, ErrorData> {
        let format = self.format;
        answer(&self.trees, move |trees| {
            let budget = trees.own().outline_budget() * L0_TOOL_BUDGET_FACTOR;
            let (total, content) = l0_index(trees, format, budget)?;
            Ok(Answer::Json(json!({
                "success": true, "source": "generated", "format": format.name(), "total_entries": total,
                "content": content,
            })))
        })
        .await
    }

    #[tool(description = "Sizes of the knowledge files, and suggestions.")]
    async fn list_memory_stats(&self) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let memory = trees.own();
            let threshold = memory.split_threshold() as u64;
            let files: Vec<Value> = memory
                .documents()?
                .iter()
                .filter(|d| !d.id.is_root())
                .map(|d| {
                    json!({ "file": file_of(&d.id), "size_bytes": d.bytes, "size_kb": kib(d.bytes), "oversized": d.bytes > threshold })
                })
                .collect();
            let total: u64 = files.iter().map(|f| f["size_bytes"].as_u64().unwrap_or(0)).sum();
            let oversized: Vec<&Value> = files.iter().filter(|f| f["oversized"] == true).collect();
            Ok(Answer::Json(json!({
                "l1_knowledge": {
                    "total_files": files.len(),
                    "total_size_bytes": total,
                    "total_size_kb": kib(total),
                    "avg_size_kb": if files.is_empty() { 0.0 } else { kib(total / files.len() as u64) },
                    "oversized_files": oversized,
                    "files": files,
                },
                "suggestions": memory.suggestions()?,
            })))
        })
        .await
    }

    #[tool(description = "Health check: tree and index consistency, file health, conflicts.")]
    async fn validate_knowledge(
        &self,
        Parameters(args): Parameters<ValidateArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let report = trees.own().validate()?;
            let only = match args.filename.as_deref() {
                Some(f) => Some(file_id(f)?),
                None => None,
            };
            let issues: Vec<Value> = report
                .findings
                .iter()
                .filter(|f| only.as_ref().is_none_or(|id| f.to_string().starts_with(&format!("{id}:"))))
                .map(|f| {
                    let kind = serde_json::to_value(f).ok().and_then(|v| v["kind"].as_str().map(str::to_owned));
                    json!({ "severity": f.severity().to_string(), "type": kind, "message": f.to_string() })
                })
                .collect();
            let orphaned: Vec<String> = report
                .findings
                .iter()
                .filter_map(|f| match f {
                    memtree_core::Finding::Unreachable { id } => Some(file_of(id)),
                    _ => None,
                })
                .collect();
            let health = match issues.len() {
                0 => "good",
                1..=3 => "fair",
                _ => "poor",
            };
            Ok(Answer::Json(json!({
                "overall_health": health,
                "healthy": report.is_healthy(),
                "issues": issues,
                "l0_l1_consistency": {
                    "orphaned_l1": orphaned, "stale_l0_entries": [], "total_l1": report.documents.saturating_sub(1),
                    "health": if orphaned.is_empty() { "good" } else { "fair" },
                },
            })))
        })
        .await
    }

    #[tool(description = "Recent sessions (Claude Code, Codex) summarised for knowledge extraction (JSON).")]
    async fn scan_recent_sessions(
        &self,
        Parameters(args): Parameters<ScanArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let sessions = self.sessions();
        answer(&self.trees, move |_| {
            let sessions = sessions?;
            sessions.scan().map_err(|e| Failure::InJson(e.to_string()))?;
            let days = args.days.unwrap_or(3);
            let filter = memtree_sessions::filter(None, Some(days));
            let all = sessions.recent(&filter, 10_000).map_err(|e| Failure::InJson(e.to_string()))?;
            let max = args.max_sessions.map_or(10, |n| n as usize);
            let list: Vec<Value> = all
                .iter()
                .take(max)
                .map(|s| {
                    json!({
                        "session": s.session, "agent": s.agent, "project": s.project, "path": s.cwd,
                        "user_messages": s.requests,
                        "assistant_topics": s.title.iter().collect::<Vec<_>>(),
                        "tool_calls": s.tools.keys().collect::<Vec<_>>(),
                        "files_touched": s.files,
                        "mtime": s.to,
                    })
                })
                .collect();
            Ok(Answer::Json(json!({
                "generated_at": memtree_core::date::iso_datetime(now_ns()),
                "scan_days": days,
                "total_sessions": all.len(),
                "sessions": list,
            })))
        })
        .await
    }

    #[tool(description = "Search session transcripts by keyword.")]
    async fn search_sessions_by_keyword(
        &self,
        Parameters(args): Parameters<SessionSearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let sessions = self.sessions();
        answer(&self.trees, move |_| {
            let sessions = sessions?;
            let days = args.days.unwrap_or(7);
            let max = args.max_results.map_or(5, |n| n as usize);
            let filter = memtree_sessions::filter(None, Some(days));
            let hits = sessions.search(&args.keyword, &filter, max * 6).map_err(|e| Failure::InJson(e.to_string()))?;
            let mut matches: Vec<Value> = Vec::new();
            for hit in hits {
                let at = match matches.iter().position(|m| m["session"] == hit.session.as_str()) {
                    Some(at) => at,
                    None if matches.len() < max => {
                        matches.push(json!({
                            "session": hit.session, "agent": hit.agent, "project": hit.project, "mtime": hit.time,
                            "matched_user_messages": [], "matched_assistant_topics": [],
                        }));
                        matches.len() - 1
                    }
                    None => continue,
                };
                let key = if hit.role == "user" { "matched_user_messages" } else { "matched_assistant_topics" };
                let list = matches[at][key].as_array_mut().expect("an array");
                if list.len() < 3 {
                    list.push(hit.text.split_whitespace().collect::<Vec<_>>().join(" ").into());
                }
            }
            Ok(Answer::Json(json!({
                "success": true, "keyword": args.keyword, "scan_days": days, "matched_sessions": matches.len(),
                "matches": matches,
            })))
        })
        .await
    }

    #[tool(description = "Create a new knowledge file.")]
    async fn create_knowledge_file(
        &self,
        Parameters(args): Parameters<WriteFileArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let id = file_id(&args.filename)?;
            let memory = trees.own();
            if memory.exists(&id)? {
                return Err(Failure::InJson(format!(
                    "File already exists: {}. Use update_knowledge_file instead.",
                    args.filename
                )));
            }
            memory.create_document(&memtree_core::DocId::root(), &id, &args.content)?;
            Ok(Answer::Json(json!({
                "success": true, "action": "created", "file": args.filename, "size_bytes": args.content.len(),
                "l0_synced": true,
            })))
        })
        .await
    }

    #[tool(description = "Overwrite a knowledge file. Removing a [[link]] deletes that child.")]
    async fn update_knowledge_file(
        &self,
        Parameters(args): Parameters<WriteFileArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let id = writable_file_id(&args.filename)?;
            let memory = trees.own();
            if !memory.exists(&id)? {
                return Err(Failure::InJson(format!(
                    "File not found: {}. Use create_knowledge_file for new files.",
                    args.filename
                )));
            }
            let previous = size_of(trees, &id);
            let outcome = memory.update_document(&id, &args.content, None)?;
            Ok(Answer::Json(json!({
                "success": true, "action": "updated", "file": args.filename, "previous_size_bytes": previous,
                "new_size_bytes": size_of(trees, &id), "l0_synced": true,
                "created": outcome.created, "deleted": outcome.deleted,
            })))
        })
        .await
    }

    #[tool(description = "Delete a knowledge file and the files it links (recoverable from history).")]
    async fn delete_knowledge_file(
        &self,
        Parameters(args): Parameters<FileArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let id = writable_file_id(&args.filename)?;
            let size = size_of(trees, &id);
            match trees.own().delete_document(&id) {
                Ok(outcome) => Ok(Answer::Json(json!({
                    "success": true, "action": "deleted", "file": args.filename, "deleted_size_bytes": size,
                    "deleted": outcome.deleted, "l0_synced": true,
                }))),
                Err(MemoryError::NotFound { .. }) => {
                    Err(Failure::InJson(format!("File not found: {}", args.filename)))
                }
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    #[tool(description = "Rebuild the L0 index from the knowledge files (dry_run previews).")]
    async fn sync_l0_index(
        &self,
        Parameters(args): Parameters<SyncArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let configured = self.format;
        answer(&self.trees, move |trees| {
            let format = match args.format.as_deref() {
                None => configured,
                Some(name) => L0Format::parse(name).ok_or_else(|| {
                    Failure::InJson(format!("Invalid format: '{name}'. Must be 'hermes' or 'generic'."))
                })?,
            };
            let budget = trees.own().outline_budget() * L0_TOOL_BUDGET_FACTOR;
            let (total, content) = l0_index(trees, format, budget)?;
            let mut report = json!({
                "success": true, "l0_file": null, "l0_format": format.name(), "l1_files_found": total,
                "entries_added": 0, "entries_removed": 0, "entries_unchanged": total, "total_entries": total,
                "added": [], "removed": [],
                "note": "memtree derives the L0 index from the files at every read: it is always in sync",
            });
            if args.dry_run == Some(true) {
                report["preview"] = content.into();
            }
            Ok(Answer::Json(report))
        })
        .await
    }

    #[tool(description = "Add, remove or replace one L0 entry (a file's one-line summary).")]
    async fn manage_l0_entry(
        &self,
        Parameters(args): Parameters<EntryArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(&self.trees, move |trees| {
            let id = match args.filename.as_deref() {
                Some(f) => file_id(f)?,
                None => domain_id(&args.domain)?,
            };
            let memory = trees.own();
            let (text, version) = match memory.read_versioned(&id) {
                Ok(read) => read,
                Err(MemoryError::NotFound { .. }) => {
                    return Err(Failure::InJson(format!("File not found: {}", file_of(&id))));
                }
                Err(e) => return Err(e.into()),
            };
            let has = front_matter::split(&text)
                .yaml
                .and_then(|y| front_matter::FrontMatter::parse(y).ok())
                .is_some_and(|fm| fm.summary.is_some());
            let summary = match (args.action.as_str(), args.summary) {
                ("add" | "replace", None) => {
                    return Err(Failure::InJson(format!("summary is required for '{}'", args.action)));
                }
                ("add", Some(_)) if has => {
                    return Err(Failure::InJson(format!(
                        "Entry for '{}' already exists. Use 'replace'.",
                        args.domain
                    )));
                }
                ("remove", _) if !has => {
                    return Err(Failure::InJson(format!("No entry found for '{}'", args.domain)));
                }
                ("add" | "replace", Some(s)) => Some(s),
                ("remove", _) => None,
                (other, _) => return Err(Failure::InJson(format!("Invalid action: '{other}'"))),
            };
            let new = front_matter::set_keys(&text, &[("summary", summary)]);
            memory.update_document(&id, &new, Some(&version))?;
            Ok(Answer::Json(json!({
                "success": true, "action": args.action, "domain": args.domain, "l0_file": null,
                "total_entries": file_count(trees)?,
            })))
        })
        .await
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[prompt_router]
impl LayeredServer {
    /// Extract stable knowledge from recent sessions into knowledge files.
    #[prompt(name = "knowledge_compression_prompt")]
    async fn knowledge_compression_prompt(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, prompts::KNOWLEDGE_COMPRESSION)]
    }

    /// The decision framework for disciplined memory use.
    #[prompt(name = "cognitive_decision_prompt")]
    async fn cognitive_decision_prompt(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, prompts::COGNITIVE_DECISION)]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for LayeredServer {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        crate::profile::checked_call(self, &self.tool_router, request, context).await
    }

    fn get_info(&self) -> ServerConfig {
        let mut instructions = INSTRUCTIONS.to_owned();
        if let Ok((_, index)) = l0_index(&self.trees, self.format, self.trees.own().outline_budget()) {
            instructions = format!("{instructions}\n\nL0 index:\n{index}");
        }
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_resources().enable_prompts().build(),
        )
        .with_server_info(Implementation::new("memtree (layered profile)", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(STATUS_URI, "status").with_description("Overall status and configuration."),
            Resource::new(FILES_URI, "files").with_description("Every knowledge file with its size."),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        let trees = Arc::clone(&self.trees);
        let sessions = self.sessions.clone();
        let text = crate::blocking::run(move || -> Result<Option<Value>, MemoryError> {
            let memory = trees.own();
            let files = || -> Result<Vec<Value>, MemoryError> {
                Ok(memory
                    .documents()?
                    .iter()
                    .filter(|d| !d.id.is_root())
                    .map(|d| {
                        let title = memory.summary(&d.id).unwrap_or_default();
                        json!({ "file": file_of(&d.id), "size_bytes": d.bytes, "title_hint": title })
                    })
                    .collect())
            };
            Ok(match uri.as_str() {
                STATUS_URI => {
                    let status = memory.status()?;
                    let files = files()?;
                    let (count, passages) = sessions.as_ref().and_then(|s| s.counts().ok()).unwrap_or((0, 0));
                    Some(json!({
                        "status": if memory.validate()?.is_healthy() { "healthy" } else { "unhealthy" },
                        "home": status.location,
                        "l1_knowledge": { "total_files": files.len(), "total_size_bytes": status.total_bytes, "files": files },
                        "l0_index": { "configured": true, "derived": true },
                        "sessions": { "available": sessions.is_some(), "total_sessions": count, "indexed_passages": passages },
                    }))
                }
                FILES_URI => {
                    let files = files()?;
                    Some(json!({ "knowledge_dirs": [memory.status()?.location], "total_files": files.len(), "files": files }))
                }
                _ => None,
            })
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("engine task failed: {e}"), None))?;
        match text {
            Ok(Some(value)) => {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(value.to_string(), request.uri)])
                    .into())
            }
            Ok(None) => Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None)),
            Err(error) => Err(ErrorData::internal_error(error.report(), None)),
        }
    }
}
