//! memtree's MCP server: the only crate that knows MCP.
//!
//! Each tool converts its arguments, calls one [`memtree_core::Memory`]
//! method and converts the result: a rule broken or a lookup failed is a
//! tool result with `isError` set carrying the spec's `Error: …` text (so
//! the agent reads it); malformed arguments are protocol errors.

/// The pre-dispatch check of a tool call's arguments against the tool's
/// input schema; public so that the fuzz targets in `fuzz/` can call it.
pub mod arguments;
/// Engine calls from async handlers: in place, or on the blocking pool.
pub mod blocking;
/// JSON-RPC framing on stdio: malformed lines answered per JSON-RPC 2.0.
pub mod framing;
pub mod layered;
mod profile;
mod prompts;
mod server;
/// Stdin and stdout for the stdio transport, without a thread between.
pub mod stdio;
pub mod v2;

pub use layered::{L0Format, LayeredServer};
pub use profile::Profile;
pub use server::{MemtreeServer, SESSION_TOOLS, TOOL_NAMES, UnknownTool};
pub use v2::V2Server;

/// The tools' argument structs, which rmcp deserializes each call into;
/// public so that the fuzz target can hold the argument check to them.
pub mod tool_arguments {
    pub use crate::server::{
        EditDocumentArgs, HistoryArgs, LifecycleArgs, MoveDocumentArgs, ReadDocumentArgs, RecallArgs,
        RememberArgs, RestoreArgs, SearchArgs, SplitDocumentArgs, TreeArgs, UpdateDocumentArgs,
    };
}
