//! memtree's domain: document ids, front-matter, `[[id]]` links, the tree
//! rules and the [`Memory`] engine, over a [`Storage`] trait.
//!
//! No transport (MCP, HTTP) and no file-system code lives here: adapters call
//! [`Memory`], backends implement [`Storage`].

pub mod answer;
pub mod arguments;
pub mod cite;
pub mod conflicts;
pub mod date;
pub mod defaults;
pub mod doc_id;
pub mod doorbell;
pub mod error;
pub mod front_matter;
pub mod history;
pub mod index;
pub mod line_ending;
pub mod links;
pub mod memory;
pub mod merge;
pub mod namespace;
pub mod outline;
pub mod pack;
pub mod ranking;
pub mod references;
pub mod refusal;
pub mod remember;
pub mod secrets;
pub mod sections;
pub mod storage;
pub mod tree;

pub use answer::{
    DocumentInfo, MoveOutcome, Reconciliation, Remembered, Restored, SplitOutcome, StatusReport, StoreStatus,
    UpdateOutcome, ValidationReport,
};
pub use arguments::{
    LifecycleArguments, parse_id_argument, parse_mode_argument, parse_scope_argument, parse_status_argument,
};
pub use cite::SHARED_PREFIX;
pub use doc_id::{DocId, IdError};
pub use error::{CrossTreeReason, MemoryError};
pub use front_matter::Scope;
pub use history::{Backlog, History, HistoryError, HistoryProblem, Prepared, Version};
pub use index::{
    DocumentSignals, EmbeddingProgress, Found, Hit, IndexError, IndexProgress, IndexStats, IndexedDoc, Match,
    Matched, QueryTerm, Queued, SearchIndex, SearchRequest, Signals, TokenCounter, Usage, content_hash,
};
pub use memory::{
    Clock, Copied, Edit, FactPlace, Import, Imported, Lifecycle, Memory, MemorySettings, SplitPolicy,
};
pub use namespace::{Namespaced, Target};
pub use pack::Pack;
pub use refusal::{PlanConflict, Refusal, Subject};
pub use storage::{
    Change, Ignored, Listing, LockMode, Recovery, Stamp, Storage, StorageError, StoreLock, Unreadable,
};
pub use tree::{Finding, OutlineEntry, Severity, Tree};
