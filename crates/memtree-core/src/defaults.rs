//! What a call gets when its caller leaves an argument out: the same for
//! every adapter (the MCP tools, the CLI), so they are set here once.

/// Hits a search returns.
pub const SEARCH_HITS: usize = 8;
/// Tokens a memory pack may use.
pub const PACK_BUDGET: usize = 1200;
/// Versions a history lists.
pub const HISTORY_VERSIONS: usize = 20;
