//! Agent session transcripts as a searchable, read-only layer beside the
//! memory (seed 002's L3): Claude Code's and Codex's JSONL files read by
//! tolerant readers (`claude`, `codex`) into one shape (`record`),
//! scanned incrementally (`scan`) into an index of their own (`index`),
//! with a brief of each session (`summary`) for an agent deciding what is
//! worth remembering. Secrets are masked before anything is indexed or
//! shown. Nothing here writes to memory: the agent does, with `remember`.

pub mod claude;
pub mod codex;
pub mod index;
pub mod layer;
pub mod record;
pub mod scan;
pub mod summary;

pub use index::{Excerpt, Filter, SessionIndex};
pub use layer::{Sessions, filter, render_excerpts, render_recent};
pub use record::Agent;
pub use scan::{ScanOptions, Scanned};
pub use summary::Summary;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session index: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}: {why}", path.display())]
    Io { path: std::path::PathBuf, why: String },
}
