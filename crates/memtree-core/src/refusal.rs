//! `Refusal`: an engine call refused because of what it was asked, typed
//! by reason, and the [`Subject`] it is about, which each adapter names in
//! its own words (an MCP tool argument, a CLI flag).

use crate::doc_id::DocId;

/// What a refused call got wrong: one of its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Id,
    Content,
    /// The text an edit replaces.
    Old,
    Section,
    NewParent,
    /// Where a new document goes.
    Parent,
    /// How a split divides a document.
    Plan,
    Query,
    Task,
    Budget,
    Why,
    Priority,
    Expires,
    SupersededBy,
    Status,
    /// The version a write is based on.
    Base,
    Version,
}

impl Subject {
    /// The name the MCP tools give this input, which the spec's error
    /// lines use.
    pub fn tool_argument(self) -> &'static str {
        match self {
            Subject::Id => "id",
            Subject::Content => "content",
            Subject::Old => "old",
            Subject::Section => "section",
            Subject::NewParent => "new_parent",
            Subject::Parent => "parent",
            Subject::Plan => "plan",
            Subject::Query => "query",
            Subject::Task => "task",
            Subject::Budget => "budget",
            Subject::Why => "why",
            Subject::Priority => "priority",
            Subject::Expires => "expires",
            Subject::SupersededBy => "superseded_by",
            Subject::Status => "status",
            Subject::Base => "base",
            Subject::Version => "version",
        }
    }
}

/// Why a split plan cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanConflict {
    #[error("{child} already exists")]
    ChildExists { child: DocId },
    #[error("no single section {heading:?} (sections: {})", sections.join(", "))]
    NoSingleSection { heading: String, sections: Vec<String> },
    #[error("section {heading:?} is given to both {first} and {second}")]
    SectionTwice { heading: String, first: DocId, second: DocId },
    #[error("[[{link}]] would be linked from both {first} and {second}")]
    LinkedTwice { link: DocId, first: DocId, second: DocId },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("empty")]
    Empty(Subject),
    #[error("not found")]
    Missing(Subject),
    #[error("not found in {id}")]
    TextNotFound { id: DocId },
    #[error("occurs {count} times in {id}; include more of the text around it")]
    TextRepeated { id: DocId, count: usize },
    #[error("no heading {heading:?} in {id} (headings: {})", headings.join(", "))]
    SectionNotFound { id: DocId, heading: String, headings: Vec<String> },
    /// `candidates`: each heading of that name with its line in the file.
    #[error("{heading:?} is ambiguous in {id}: {}", candidates.join(", "))]
    SectionAmbiguous { id: DocId, heading: String, candidates: Vec<String> },
    #[error("must be one line of text (no line breaks or control characters)")]
    SectionNotOneLine,
    #[error("root cannot move")]
    RootCannotMove,
    #[error("root cannot be deleted")]
    RootCannotBeDeleted,
    #[error("{new_parent} is in the subtree of {id}; that would make a cycle")]
    WouldCycle { id: DocId, new_parent: DocId },
    #[error("{id} has no parent (an orphan; see `memtree validate`)")]
    NoParent { id: DocId },
    #[error("{id} is linked from several documents: {}", crate::cite::join(parents))]
    SeveralParents { id: DocId, parents: Vec<DocId> },
    #[error("the link to {id} in {parent} cannot be taken out cleanly; edit {parent} first")]
    LinkTangled { id: DocId, parent: DocId },
    #[error("{id} has no sections to split along")]
    NoSections { id: DocId },
    #[error(transparent)]
    Plan(PlanConflict),
    #[error("no room for a child id under {prefix}")]
    NoRoomForId { prefix: String },
    #[error("{budget} tokens; give 50 to 100000")]
    BudgetOutOfRange { budget: usize },
    #[error("empty: say why the memory changes")]
    NoReason,
    #[error("{priority} is not from 0 to 1")]
    PriorityOutOfRange { priority: f64 },
    /// `shown`: the start of what was given.
    #[error("{shown:?} is not a date (YYYY-MM-DD)")]
    NotADate { shown: String },
    #[error("a document cannot supersede itself")]
    SupersedesItself,
    #[error("{successor} not found")]
    SuccessorNotFound { successor: DocId },
    #[error("nothing to change: give status, scope, priority, expires or superseded_by")]
    NothingToChange,
    #[error("empty: give the version read_document answered, or leave base out")]
    EmptyBase,
    #[error("{shown:?} is not a version (12 hex digits, as read_document answers with version: true)")]
    NotAVersion { shown: String },
    #[error("{id} has no earlier version")]
    NoEarlierVersion { id: DocId },
    #[error("{id} did not exist in {version}")]
    NotInVersion { id: DocId, version: String },
    #[error("{child} linked {link} in {version}, which is elsewhere now; move it first")]
    LinkedElsewhereNow { child: DocId, link: DocId, version: String },
    #[error("its parent {parent} is gone too; restore {parent} first")]
    ParentGone { parent: DocId },
    #[error("{id} already exists")]
    AlreadyExists { id: DocId },
    #[error("{id} would be in no place of the tree: nothing imported links it, or it is in a cycle")]
    NotInTree { id: DocId },
}

impl Refusal {
    /// The input the refusal is about.
    pub fn subject(&self) -> Subject {
        match self {
            Refusal::Empty(subject) | Refusal::Missing(subject) => *subject,
            Refusal::TextNotFound { .. } | Refusal::TextRepeated { .. } => Subject::Old,
            Refusal::SectionNotFound { .. }
            | Refusal::SectionAmbiguous { .. }
            | Refusal::SectionNotOneLine => Subject::Section,
            Refusal::RootCannotMove
            | Refusal::RootCannotBeDeleted
            | Refusal::NoParent { .. }
            | Refusal::SeveralParents { .. }
            | Refusal::LinkTangled { .. }
            | Refusal::NoSections { .. }
            | Refusal::NoRoomForId { .. }
            | Refusal::ParentGone { .. }
            | Refusal::AlreadyExists { .. }
            | Refusal::NotInTree { .. } => Subject::Id,
            Refusal::WouldCycle { .. } => Subject::NewParent,
            Refusal::Plan(_) => Subject::Plan,
            Refusal::BudgetOutOfRange { .. } => Subject::Budget,
            Refusal::NoReason => Subject::Why,
            Refusal::PriorityOutOfRange { .. } => Subject::Priority,
            Refusal::NotADate { .. } => Subject::Expires,
            Refusal::SupersedesItself | Refusal::SuccessorNotFound { .. } => Subject::SupersededBy,
            Refusal::NothingToChange => Subject::Status,
            Refusal::EmptyBase | Refusal::NotAVersion { .. } => Subject::Base,
            Refusal::NoEarlierVersion { .. }
            | Refusal::NotInVersion { .. }
            | Refusal::LinkedElsewhereNow { .. } => Subject::Version,
        }
    }
}
