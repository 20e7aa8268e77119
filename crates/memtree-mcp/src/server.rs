//! `MemtreeServer`: the rmcp handler with the tools of SPEC section 2.

use std::sync::Arc;

use memtree_core::{
    Edit, FactPlace, LifecycleArguments, MemoryError, Namespaced, defaults, pack, parse_mode_argument,
    parse_scope_argument,
};
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, prompt, prompt_handler, prompt_router, schemars, tool,
    tool_handler, tool_router,
};

use memtree_sessions::{Sessions, layer};

use crate::prompts;

/// Every tool this server can expose, in `tools/list` order.
pub const TOOL_NAMES: &[&str] = &[
    "remember",
    "lifecycle",
    "split_document",
    "read_document",
    "update_document",
    "edit_document",
    "move_document",
    "get_document_tree",
    "search",
    "recall",
    "history",
    "restore",
    "validate",
    "scan_sessions",
    "search_sessions",
];

/// The tools of the session-transcript layer, listed when it is on.
pub const SESSION_TOOLS: &[&str] = &["scan_sessions", "search_sessions"];

/// The L0 index as an MCP resource.
const INDEX_URI: &str = "memtree://index";
/// Store and index status as an MCP resource.
const STATUS_URI: &str = "memtree://status";
/// Every document with size, parent and children, and the graph's edges.
const DOCUMENTS_URI: &str = "memtree://documents";
/// Each document as an MCP resource: this prefix and its id.
const DOC_URI_PREFIX: &str = "memtree://doc/";

/// What an agent is told at initialize: how the tree works, in few tokens.
const INSTRUCTIONS: &str = "\
Persistent memory: a tree of Markdown documents under `root`. \
At the start of a task call recall(task) for what memory knows about it; search(query) finds facts, \
cited [id#heading]; read_document(id) shows a whole document. \
Writing a [[new_id]] link into a document (update_document) creates that child; \
removing a link deletes the child and its whole subtree. \
A document may link only its own children; ids are [A-Za-z0-9_-] words, `/` for folders. \
update_document replaces the whole document: read it first. \
Keep each document to one topic; move details into children as it grows.";

/// Added to the instructions in a namespace.
const NAMESPACE_INSTRUCTIONS: &str = "\
This tree is yours; a shared tree sits beside it. Reads and searches see yours first, then the shared \
one, whose ids are written shared:<id>; writes go to yours unless the id says shared:.";

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadDocumentArgs {
    /// Document id; default root.
    pub id: Option<String>,
    /// Only this section (heading text).
    pub section: Option<String>,
    /// Also return the version (a write's base).
    pub version: Option<bool>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditDocumentArgs {
    pub id: String,
    /// Exact text to replace; must occur once.
    pub old: Option<String>,
    /// Replacement text, or the section's new body.
    pub new: String,
    /// Replace this section's body instead (heading text).
    pub section: Option<String>,
    /// Version read.
    pub base: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDocumentArgs {
    /// Document id; default root.
    pub id: Option<String>,
    /// The whole new Markdown.
    pub content: String,
    /// Version read; if changed since, merged by section or refused.
    pub base: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryArgs {
    /// Default: every change.
    pub id: Option<String>,
    /// Most versions; default 20.
    pub limit: Option<u32>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreArgs {
    pub id: String,
    /// From history; default: before the last change.
    pub version: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TreeArgs {
    /// The compact index instead: one-line summaries, folded to fit.
    pub summaries: Option<bool>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The fact, one line or a short paragraph.
    pub content: String,
    /// Target document (made if missing); default: the best match.
    pub document: Option<String>,
    /// Parent of a new document; default root.
    pub parent: Option<String>,
    /// `##` section; default Notes.
    pub section: Option<String>,
    /// upsert (default), append or merge.
    pub mode: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LifecycleArgs {
    pub id: String,
    /// Why the memory changes (recorded).
    pub why: String,
    /// active or deprecated.
    pub status: Option<String>,
    /// global, agent, project or ephemeral.
    pub scope: Option<String>,
    /// 0 to 1.
    pub priority: Option<f64>,
    /// YYYY-MM-DD.
    pub expires: Option<String>,
    /// Id of its replacement.
    pub superseded_by: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitDocumentArgs {
    pub id: String,
    /// New child id → the headings it takes; default: one child per section.
    pub plan: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveDocumentArgs {
    pub id: String,
    pub new_parent: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Plain words or a question.
    pub query: String,
    /// Most hits; default 8.
    pub limit: Option<u32>,
    /// global, agent, project or ephemeral.
    pub scope: Option<String>,
    /// Only this document's subtree.
    pub under: Option<String>,
    /// Answer as JSON.
    pub json: Option<bool>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The task or question.
    pub task: String,
    /// Token budget; default 1200.
    pub budget: Option<u32>,
    /// global, agent, project or ephemeral.
    pub scope: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanSessionsArgs {
    /// Default 7.
    pub days: Option<u32>,
    pub project: Option<String>,
    /// Default 10.
    pub limit: Option<u32>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchSessionsArgs {
    pub query: String,
    pub project: Option<String>,
    pub days: Option<u32>,
    /// Default 8.
    pub limit: Option<u32>,
}

/// A `--tools` name that is not a tool.
#[derive(Debug, thiserror::Error)]
#[error("unknown tool {0:?} (tools: {list})", list = TOOL_NAMES.join(", "))]
pub struct UnknownTool(pub String);

#[derive(Clone)]
pub struct MemtreeServer {
    trees: Arc<Namespaced>,
    sessions: Option<Arc<Sessions>>,
    tool_router: ToolRouter<MemtreeServer>,
    prompt_router: PromptRouter<MemtreeServer>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct TranscriptArgs {
    /// The session transcript to compress into memory; default: recent sessions (scan_sessions).
    pub transcript: Option<String>,
}

impl MemtreeServer {
    /// A server exposing `tools` (all of [`TOOL_NAMES`] when `None`); the
    /// session tools only with a session layer.
    pub fn new(
        trees: Arc<Namespaced>,
        tools: Option<&[String]>,
        sessions: Option<Arc<Sessions>>,
    ) -> Result<MemtreeServer, UnknownTool> {
        let mut tool_router = crate::profile::compacted(Self::tool_router());
        if let Some(wanted) = tools {
            if let Some(unknown) = wanted.iter().find(|t| !TOOL_NAMES.contains(&t.as_str())) {
                return Err(UnknownTool(unknown.clone()));
            }
            for name in TOOL_NAMES.iter().filter(|n| !wanted.iter().any(|w| w == *n)) {
                tool_router.remove_route(name);
            }
        }
        if sessions.is_none() {
            for name in SESSION_TOOLS {
                tool_router.remove_route(name);
            }
        }
        Ok(MemtreeServer { trees, sessions, tool_router, prompt_router: Self::prompt_router() })
    }

    /// Runs a call on the session layer off the async workers.
    async fn on_sessions<F>(&self, call: F) -> Result<CallToolResult, ErrorData>
    where
        F: FnOnce(&Sessions) -> Result<String, memtree_sessions::SessionError> + Send + 'static,
    {
        let Some(sessions) = self.sessions.clone() else {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "Error: sessions: off (serve --sessions)",
            )]));
        };
        let result = crate::blocking::run(move || call(&sessions))
            .await
            .map_err(|e| ErrorData::internal_error(format!("session task failed: {e}"), None))?;
        Ok(match result {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(error) => {
                tracing::error!(%error, "session call failed");
                CallToolResult::error(vec![ContentBlock::text(format!("Error: sessions: {error}"))])
            }
        })
    }

    /// The tools this server exposes, with their input schemas (as `tools/list`
    /// gives them, sorted by name).
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tool_router.list_all()
    }

    /// Runs a blocking engine call off the async workers and renders it.
    async fn run<F>(&self, call: F) -> Result<CallToolResult, ErrorData>
    where
        F: FnOnce(&Namespaced) -> Result<String, MemoryError> + Send + 'static,
    {
        self.run_blocks(move |trees| call(trees).map(|text| vec![text])).await
    }

    /// [`MemtreeServer::run`] for an answer of several text blocks.
    async fn run_blocks<F>(&self, call: F) -> Result<CallToolResult, ErrorData>
    where
        F: FnOnce(&Namespaced) -> Result<Vec<String>, MemoryError> + Send + 'static,
    {
        let trees = Arc::clone(&self.trees);
        let result = crate::blocking::run(move || call(&trees))
            .await
            .map_err(|e| ErrorData::internal_error(format!("engine task failed: {e}"), None))?;
        Ok(match result {
            Ok(texts) => CallToolResult::success(texts.into_iter().map(ContentBlock::text).collect()),
            Err(error) => {
                if !error.is_user_error() {
                    tracing::error!(%error, "tool call failed");
                }
                CallToolResult::error(vec![ContentBlock::text(error.report())])
            }
        })
    }
}

#[tool_router]
impl MemtreeServer {
    #[tool(description = "Read a document's Markdown (default: root).")]
    async fn read_document(
        &self,
        Parameters(args): Parameters<ReadDocumentArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run_blocks(move |m| {
            let t = m.for_read("id", args.id.as_deref())?;
            let (text, version) = t.memory.read_versioned(&t.id)?;
            let text = match args.section.as_deref() {
                Some(section) => t.memory.read_section(&t.id, section)?,
                None => text,
            };
            // The version is a second block, so the first stays the
            // document exactly.
            let mut blocks = vec![text];
            if args.version == Some(true) {
                blocks.push(format!("version: {version}"));
            }
            Ok(blocks)
        })
        .await
    }

    #[tool(
        description = "Change part of a document: the one occurrence of `old`, or the body of `section`, \
                          becomes `new`. Link rules and answer as update_document."
    )]
    async fn edit_document(
        &self,
        Parameters(args): Parameters<EditDocumentArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let t = m.for_write("id", Some(&args.id))?;
            let edit = match (args.old, args.section) {
                (Some(old), None) => Edit::Replace { old, new: args.new },
                (None, Some(section)) => Edit::Section { section, body: args.new },
                _ => {
                    return Err(MemoryError::InvalidArgument {
                        argument: "old",
                        what: "give either old or section".to_owned(),
                    });
                }
            };
            Ok(t.memory.edit_document(&t.id, &edit, args.base.as_deref())?.report())
        })
        .await
    }

    #[tool(description = "Replace a document's whole content. A new [[id]] link creates that child; \
                       a removed link deletes the child and its subtree. Link only this document's \
                       children or new ids.")]
    async fn update_document(
        &self,
        Parameters(args): Parameters<UpdateDocumentArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let t = m.for_write("id", args.id.as_deref())?;
            Ok(t.memory.update_document(&t.id, &args.content, args.base.as_deref())?.report())
        })
        .await
    }

    #[tool(description = "Find what memory says (plain words or a question): ranked passages \
                          [id#heading] score · path, with the matching lines.")]
    async fn search(&self, Parameters(args): Parameters<SearchArgs>) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let scope = parse_scope_argument(args.scope.as_deref())?;
            let limit = args.limit.map_or(defaults::SEARCH_HITS, |l| l as usize);
            let hits = m.search(&args.query, limit, scope, args.under.as_deref())?;
            Ok(if args.json == Some(true) {
                serde_json::to_string(&hits).expect("hits serialise")
            } else {
                pack::render_hits(&hits)
            })
        })
        .await
    }

    #[tool(description = "A memory pack for a task: the most relevant passages, cited [id#heading], \
                          within a token budget. Use at the start of a task.")]
    async fn recall(&self, Parameters(args): Parameters<RecallArgs>) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let scope = parse_scope_argument(args.scope.as_deref())?;
            let budget = args.budget.map_or(defaults::PACK_BUDGET, |b| b as usize);
            Ok(m.recall(&args.task, budget, scope)?.render())
        })
        .await
    }

    #[tool(description = "Store a fact in a document's ## section without rewriting the document; \
                          a near-duplicate line is replaced (upsert), kept beside (append) or merged.")]
    async fn remember(
        &self,
        Parameters(args): Parameters<RememberArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let (memory, document, parent) =
                m.for_remember(args.document.as_deref(), args.parent.as_deref())?;
            let mode = parse_mode_argument(args.mode.as_deref())?;
            let place = FactPlace {
                document: document.as_ref(),
                section: args.section.as_deref(),
                parent: parent.as_ref(),
            };
            Ok(memory.remember(&args.content, &place, mode)?.report())
        })
        .await
    }

    #[tool(description = "Deprecate, reactivate, supersede, re-scope, re-prioritise or expire a document, \
                          saying why. Stale memory leaves search and packs, not the tree.")]
    async fn lifecycle(
        &self,
        Parameters(args): Parameters<LifecycleArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let t = m.for_write("id", Some(&args.id))?;
            let change = m.lifecycle_change(
                &t,
                LifecycleArguments {
                    status: args.status.as_deref(),
                    scope: args.scope.as_deref(),
                    priority: args.priority,
                    expires: args.expires,
                    superseded_by: args.superseded_by.as_deref(),
                },
            )?;
            t.memory.set_lifecycle(&t.id, &change, &args.why)
        })
        .await
    }

    #[tool(description = "Split a large document into children along its sections, or as a plan says; \
                          the parent keeps its preamble and a [[child]] line per child.")]
    async fn split_document(
        &self,
        Parameters(args): Parameters<SplitDocumentArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let t = m.for_write("id", Some(&args.id))?;
            let plan = args.plan.map(|plan| m.split_plan(&t, "plan", plan)).transpose()?;
            Ok(t.memory.split_document(&t.id, plan.as_deref())?.report())
        })
        .await
    }

    #[tool(description = "Move a document and its subtree under another parent in one step \
                          (removing a link would delete the subtree).")]
    async fn move_document(
        &self,
        Parameters(args): Parameters<MoveDocumentArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let t = m.for_write("id", Some(&args.id))?;
            let new_parent = m.beside(&t, "new_parent", &args.new_parent)?;
            Ok(t.memory.move_document(&t.id, &new_parent)?.report())
        })
        .await
    }

    #[tool(description = "Versions in which a document changed, newest first: version, time, what and why.")]
    async fn history(&self, Parameters(args): Parameters<HistoryArgs>) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let limit = args.limit.map_or(defaults::HISTORY_VERSIONS, |l| l as usize);
            let versions = match args.id.as_deref() {
                Some(raw) => {
                    let t = m.for_read("id", Some(raw))?;
                    t.memory.history(Some(&t.id), limit)?
                }
                None => m.own().history(None, limit)?,
            };
            Ok(memtree_core::history::render(&versions))
        })
        .await
    }

    #[tool(
        description = "Bring back a document as it was in a version, or a deleted subtree under its old parent."
    )]
    async fn restore(&self, Parameters(args): Parameters<RestoreArgs>) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| {
            let t = m.for_write("id", Some(&args.id))?;
            Ok(t.memory.restore(&t.id, args.version.as_deref())?.report())
        })
        .await
    }

    #[tool(description = "Check memory's health: broken rules or references, expired or conflicting memory.")]
    async fn validate(&self) -> Result<CallToolResult, ErrorData> {
        self.run(|m| Ok(m.own().validate()?.report())).await
    }

    #[tool(description = "Your recent sessions (Claude Code, Codex) in brief, to pick what to remember: \
                          requests, files, tools.")]
    async fn scan_sessions(
        &self,
        Parameters(args): Parameters<ScanSessionsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.on_sessions(move |s| {
            s.scan()?;
            let filter =
                memtree_sessions::filter(args.project, Some(args.days.unwrap_or(layer::RECENT_DAYS)));
            let limit = args.limit.map_or(layer::RECENT_SESSIONS, |l| l as usize);
            Ok(memtree_sessions::render_recent(&s.recent(&filter, limit)?))
        })
        .await
    }

    #[tool(description = "Search past session transcripts: excerpts with session, project, time.")]
    async fn search_sessions(
        &self,
        Parameters(args): Parameters<SearchSessionsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.on_sessions(move |s| {
            let filter = memtree_sessions::filter(args.project, args.days);
            let limit = args.limit.map_or(layer::SEARCH_HITS, |l| l as usize);
            Ok(memtree_sessions::render_excerpts(&s.search(&args.query, &filter, limit)?))
        })
        .await
    }

    #[tool(description = "The document tree as YAML.")]
    async fn get_document_tree(
        &self,
        Parameters(args): Parameters<TreeArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(move |m| if args.summaries == Some(true) { m.outline() } else { m.tree_yaml() }).await
    }
}

#[prompt_router]
impl MemtreeServer {
    /// When to read and write memory, what not to store, how to settle a conflict.
    #[prompt(name = "memory_rules")]
    async fn memory_rules(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, prompts::MEMORY_RULES)]
    }

    /// Turn a session transcript into durable memory, without duplicates.
    #[prompt(name = "compress_transcript")]
    async fn compress_transcript(&self, Parameters(args): Parameters<TranscriptArgs>) -> Vec<PromptMessage> {
        let text = match args.transcript {
            Some(transcript) => {
                format!("{}{}{transcript}", prompts::COMPRESS_TRANSCRIPT, prompts::TRANSCRIPT_BELOW)
            }
            None => format!("{}{}", prompts::COMPRESS_TRANSCRIPT, prompts::RECENT_SESSIONS),
        };
        vec![PromptMessage::new_text(Role::User, text)]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for MemtreeServer {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        crate::profile::checked_call(self, &self.tool_router, request, context).await
    }

    fn get_info(&self) -> ServerConfig {
        // The L0 index rides along, so an agent starts knowing what exists.
        let mut instructions = INSTRUCTIONS.to_owned();
        if self.trees.shared().is_some() {
            instructions = format!("{instructions}\n{NAMESPACE_INSTRUCTIONS}");
        }
        match self.trees.outline() {
            Ok(index) => instructions = format!("{instructions}\n\nWhat the memory holds:\n{index}"),
            Err(error) => tracing::warn!(%error, "no L0 index in the instructions"),
        }
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_resources().enable_prompts().build(),
        )
        .with_server_info(Implementation::new("memtree", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(INDEX_URI, "index")
                .with_description("The memory's table of contents: the tree with one-line summaries."),
            Resource::new(STATUS_URI, "status").with_description("Store and index size, freshness and use."),
            Resource::new(DOCUMENTS_URI, "documents")
                .with_description("Every document with size, last change, parent and children (JSON)."),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(format!("{DOC_URI_PREFIX}{{id}}"), "document")
                .with_description("A document's Markdown, by id."),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        let trees = Arc::clone(&self.trees);
        let text = crate::blocking::run(move || -> Result<Option<String>, MemoryError> {
            let memory = trees.own();
            if uri == INDEX_URI {
                return trees.outline().map(Some);
            }
            if uri == STATUS_URI {
                let status = memory.status()?;
                let (index, usage) = memory.index_status()?;
                let value = serde_json::json!({ "store": status, "index": index, "most_used": usage.iter().take(5).collect::<Vec<_>>() });
                return Ok(Some(serde_json::to_string_pretty(&value).expect("status serialises")));
            }
            if uri == DOCUMENTS_URI {
                let documents = memory.documents()?;
                return Ok(Some(serde_json::to_string_pretty(&documents).expect("documents serialise")));
            }
            match uri.strip_prefix(DOC_URI_PREFIX) {
                Some(raw) => {
                    let t = trees.for_read("id", Some(raw))?;
                    t.memory.read_document(&t.id).map(Some)
                }
                None => Ok(None),
            }
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("engine task failed: {e}"), None))?;
        match text {
            Ok(Some(text)) => {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri)]).into())
            }
            Ok(None) => Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None)),
            Err(error @ (MemoryError::NotFound { .. } | MemoryError::InvalidId { .. })) => {
                Err(ErrorData::resource_not_found(error.report(), None))
            }
            Err(error) => Err(ErrorData::internal_error(error.report(), None)),
        }
    }
}
