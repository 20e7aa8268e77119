//! `MemoryError`: every way an engine call can fail, and its spec text.
//!
//! The first line of each error an agent sees is fixed
//! (`Error: <argument>: <what is wrong>`); [`MemoryError::report_as`]
//! renders it, with an optional second line saying which link broke which
//! rule, so that the MCP tools and the CLI print the same words, each
//! naming the arguments its own way.

use crate::doc_id::{DocId, IdError};
use crate::front_matter::FrontMatterError;
use crate::history::HistoryError;
use crate::index::IndexError;
use crate::refusal::{Refusal, Subject};
use crate::storage::StorageError;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("not found")]
    NotFound { id: DocId },
    #[error("invalid id {raw:?}: {error}")]
    InvalidId { argument: &'static str, raw: String, error: IdError },
    #[error("cross-tree reference not allowed")]
    CrossTree { link: DocId, reason: CrossTreeReason },
    #[error("invalid link [[{target}]]: {error}")]
    InvalidLink { target: String, error: IdError },
    #[error("[[{link}]] differs only in letter case from existing document {existing}")]
    CaseCollision { link: DocId, existing: DocId },
    #[error(transparent)]
    FrontMatter(#[from] FrontMatterError),
    #[error("too large ({len} bytes; the limit is {limit})")]
    TooLarge { len: usize, limit: usize },
    #[error("{links} links; the limit is {limit} per document (give it children that link the rest)")]
    TooManyLinks { links: usize, limit: usize },
    #[error("{id} would be {depth} levels deep; the limit is {limit}")]
    TooDeep { subject: Subject, id: DocId, depth: usize, limit: usize },
    #[error(
        "looks like a secret ({kind}); memory is not the place for secrets (MEMTREE_ALLOW_SECRETS=1 allows them)"
    )]
    Secret { kind: &'static str },
    #[error("unreadable: {reason}")]
    Unreadable { id: DocId, reason: String },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("this store is served without a search index")]
    NoIndex,
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("history is off (MEMTREE_HISTORY=off); deleted documents are in .memtree/trash/")]
    NoHistory,
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// An argument an adapter could not make sense of, which it names.
    #[error("{what}")]
    InvalidArgument { argument: &'static str, what: String },
    /// A write based on an older version changed sections that changed since.
    #[error("conflict")]
    Conflict { sections: Vec<String> },
    /// One document of a change of many (an import) was refused.
    #[error("in {id}: {error}")]
    InDocument { id: DocId, error: Box<MemoryError> },
}

/// Why a link to an existing document breaks the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrossTreeReason {
    ItSelf,
    Root,
    Ancestor { of: DocId },
    ChildOf { parent: DocId },
    Orphan,
}

impl MemoryError {
    /// The argument the error is about, as the MCP tools name it.
    pub fn argument(&self) -> &'static str {
        self.argument_as(Subject::tool_argument)
    }

    /// The argument the error is about, `name` naming the engine's inputs.
    pub fn argument_as(&self, name: impl Fn(Subject) -> &'static str) -> &'static str {
        match self {
            MemoryError::NotFound { .. } | MemoryError::Unreadable { .. } => "id",
            MemoryError::InvalidId { argument, .. } => argument,
            MemoryError::CrossTree { .. }
            | MemoryError::InvalidLink { .. }
            | MemoryError::CaseCollision { .. }
            | MemoryError::FrontMatter(_)
            | MemoryError::TooLarge { .. }
            | MemoryError::TooManyLinks { .. }
            | MemoryError::Secret { .. } => "content",
            MemoryError::TooDeep { subject, .. } => name(*subject),
            MemoryError::Refused(refusal) => name(refusal.subject()),
            MemoryError::Storage(_) => "storage",
            MemoryError::Index(_) | MemoryError::NoIndex => "index",
            MemoryError::History(HistoryError::UnknownVersion(_)) => "version",
            MemoryError::History(_) | MemoryError::NoHistory => "history",
            MemoryError::InvalidArgument { argument, .. } => argument,
            MemoryError::Conflict { .. } => "version",
            MemoryError::InDocument { error, .. } => error.argument_as(name),
        }
    }

    /// The optional second line.
    pub fn detail(&self) -> Option<String> {
        if let MemoryError::InDocument { error, .. } = self {
            return error.detail();
        }
        if let MemoryError::Conflict { sections } = self {
            return Some(if sections.is_empty() {
                "the document changed since that version, which is not in history; read it again".to_owned()
            } else {
                format!("changed since that version, differently: {}; read it again", sections.join(", "))
            });
        }
        let MemoryError::CrossTree { link, reason } = self else {
            return None;
        };
        Some(match reason {
            CrossTreeReason::ItSelf => format!("[[{link}]] is the document itself"),
            CrossTreeReason::Root => format!("[[{link}]] is the root document"),
            CrossTreeReason::Ancestor { of } => format!("[[{link}]] is an ancestor of {of}"),
            CrossTreeReason::ChildOf { parent } => format!("[[{link}]] is a child of {parent}"),
            CrossTreeReason::Orphan => {
                format!("[[{link}]] exists but no document links it (see `memtree validate`)")
            }
        })
    }

    /// Whether the caller can fix it (a user error), as opposed to a fault of
    /// the store or the machine.
    pub fn is_user_error(&self) -> bool {
        !matches!(
            self,
            MemoryError::Storage(_)
                | MemoryError::Index(_)
                | MemoryError::NoIndex
                | MemoryError::History(HistoryError::Backend { .. } | HistoryError::Busy(_))
        )
    }

    /// The full text an agent sees, the engine's inputs named as the MCP
    /// tools name them.
    pub fn report(&self) -> String {
        self.report_as(Subject::tool_argument)
    }

    /// The full text, `name` naming the engine's inputs.
    pub fn report_as(&self, name: impl Fn(Subject) -> &'static str) -> String {
        let first = format!("Error: {}: {self}", self.argument_as(name));
        match self.detail() {
            Some(detail) => format!("{first}\n{detail}"),
            None => first,
        }
    }
}
