//! What every tool surface shares (memtree's own and the compatibility
//! profiles `layered` and `v2`): compact schemas and the argument check
//! before a call; and what the profiles share: engine calls off the async
//! workers, JSON answers, and which profile a server speaks.

use std::sync::Arc;

use memtree_core::{DocId, MemoryError, Namespaced};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use crate::arguments;

/// `router` with its tools' input schemas compacted (see
/// [`arguments::compact_schema`]): every client pays for `tools/list`.
pub(crate) fn compacted<S>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    for route in router.map.values_mut() {
        route.attr.input_schema = Arc::new(arguments::compact_schema(&route.attr.input_schema));
    }
    router
}

/// Dispatches a call after checking its arguments against its tool's
/// schema: a wrong argument is a tool error in the spec's form.
pub(crate) async fn checked_call<S: Send + Sync + 'static>(
    server: &S,
    router: &ToolRouter<S>,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    if let Some(tool) = router.get(&request.name)
        && let Err(text) = arguments::check(tool, request.arguments.as_ref())
    {
        return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
    }
    router.call(ToolCallContext::new(server, request, context)).await
}

/// The tool surface a server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// memtree's own tools.
    Memtree,
    /// Seed 002's layered-memory-mcp tools.
    Layered,
    /// Seed 004's Memory V2 tools.
    V2,
}

impl Profile {
    pub const NAMES: &[&str] = &["memtree", "layered", "v2"];

    pub fn parse(name: &str) -> Option<Profile> {
        match name {
            "memtree" | "default" => Some(Profile::Memtree),
            "layered" => Some(Profile::Layered),
            "v2" => Some(Profile::V2),
            _ => None,
        }
    }
}

/// How a profile tells a failure: in the answer's JSON, or as a tool error.
pub(crate) enum Failure {
    /// `{"success": false, "error": …}`, not flagged as an error
    /// (layered-memory-mcp's way).
    InJson(String),
    /// A tool result with `isError` set.
    Flagged(String),
}

impl From<MemoryError> for Failure {
    fn from(error: MemoryError) -> Failure {
        if !error.is_user_error() {
            tracing::error!(%error, "tool call failed");
        }
        Failure::InJson(error.report())
    }
}

/// Runs `call` on the trees off the async workers; its JSON (or text) is
/// the answer.
pub(crate) async fn answer<F>(trees: &Arc<Namespaced>, call: F) -> Result<CallToolResult, ErrorData>
where
    F: FnOnce(&Namespaced) -> Result<Answer, Failure> + Send + 'static,
{
    let trees = Arc::clone(trees);
    let result = crate::blocking::run(move || call(&trees))
        .await
        .map_err(|e| ErrorData::internal_error(format!("engine task failed: {e}"), None))?;
    Ok(match result {
        Ok(Answer::Json(value)) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
        Ok(Answer::Text(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(Failure::InJson(error)) => CallToolResult::success(vec![ContentBlock::text(
            serde_json::json!({ "success": false, "error": error }).to_string(),
        )]),
        Err(Failure::Flagged(error)) => CallToolResult::error(vec![ContentBlock::text(error)]),
    })
}

/// A tool's answer.
pub(crate) enum Answer {
    Json(serde_json::Value),
    Text(String),
}

/// Most bytes' size in KiB, two decimals, as both seeds show sizes.
pub(crate) fn kib(bytes: u64) -> f64 {
    (bytes as f64 / 1024.0 * 100.0).round() / 100.0
}

/// A document's size in bytes, 0 when it is gone.
pub(crate) fn size_of(trees: &Namespaced, id: &DocId) -> u64 {
    trees.own().read_document(id).map_or(0, |t| t.len() as u64)
}
