//! The `History` trait: every change recorded as one version, so any earlier
//! version of a document, and any pruned subtree, can be brought back.
//!
//! The engine records each [`Change`] while it holds the exclusive store
//! lock, so records are in write order across processes: prepared before
//! the change is applied, confirmed once it is durable. A process killed in
//! between leaves a prepared record, which the next lock holder settles:
//! confirmed if the change is in the store (a journal's recovery may have
//! completed it), dropped if not. A backend (git, in `memtree-history`)
//! turns confirmed records into versions off the request's path, and
//! [`History::flush`] waits until it has.

use crate::date::civil_date;
use crate::doc_id::DocId;
use crate::storage::Change;

/// One version of the store in which a document changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Version {
    /// Short, unique name of the version (a commit hash prefix).
    pub version: String,
    /// Unix time in seconds.
    pub time: i64,
    /// What the change was, and why when a why was given.
    pub message: String,
    /// Whether the document exists in this version (false: it was deleted).
    pub present: bool,
}

/// One line per version: `<version> <date> <time> UTC <message>`, and
/// `[deleted]` where the document was pruned or removed.
pub fn render(versions: &[Version]) -> String {
    if versions.is_empty() {
        return "No versions.\n".to_owned();
    }
    let mut out = String::new();
    for v in versions {
        let secs = v.time.max(0) as u64;
        let (hour, minute) = (secs % 86_400 / 3600, secs % 3600 / 60);
        let gone = if v.present { "" } else { " [deleted]" };
        out.push_str(&format!(
            "{} {} {hour:02}:{minute:02} {}{gone}\n",
            v.version,
            civil_date(secs),
            v.message
        ));
    }
    out
}

/// Ids a version's message names per line; the rest are counted.
const NAMED: usize = 20;

/// The body of a version's message, after its label: which documents it
/// added, changed, deleted (a line each; [`History::log`] joins lines with
/// `; `).
pub fn describe(added: &[DocId], changed: &[DocId], deleted: &[DocId]) -> String {
    let mut out = String::new();
    for (what, ids) in [("Added", added), ("Changed", changed), ("Deleted", deleted)] {
        if ids.len() > NAMED {
            let named = crate::cite::join(&ids[..NAMED]);
            out.push_str(&format!("{what}: {named} (+{} more)\n", ids.len() - NAMED));
        } else if !ids.is_empty() {
            out.push_str(&format!("{what}: {}\n", crate::cite::join(ids)));
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// The label of the change a version's message (as [`History::log`] gives
/// it) is about: the message without what [`describe`] added.
pub fn label_of(message: &str) -> String {
    let parts = message
        .split("; ")
        .filter(|part| !["Added: ", "Changed: ", "Deleted: "].iter().any(|what| part.starts_with(what)));
    parts.collect::<Vec<_>>().join("; ")
}

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("no version {0:?}")]
    UnknownVersion(String),
    /// The backend failed at `op` (a few words: "read blob"); `source` is
    /// its own error, kept so that a caller can tell what failed beneath.
    #[error("{op}: {source}")]
    Backend { op: &'static str, source: Box<dyn std::error::Error + Send + Sync> },
    /// A lock another program holds for a moment (a git command run in the
    /// store): the work is kept and done later.
    #[error("{0}")]
    Busy(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A record prepared for a change not yet applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prepared(pub u128);

pub trait History: Send + Sync {
    /// Records `change`, about to be applied, for a version of its own.
    /// Called under the exclusive store lock.
    fn prepare(&self, change: &Change) -> Result<Prepared, HistoryError>;

    /// The prepared change is durable: it may become a version.
    fn confirm(&self, record: Prepared) -> Result<(), HistoryError>;

    /// The prepared change failed and changed nothing.
    fn abandon(&self, record: Prepared) -> Result<(), HistoryError>;

    /// Whether a process died between preparing and confirming. Cheap.
    fn has_unsettled(&self) -> Result<bool, HistoryError>;

    /// Confirms each record a dead process left prepared whose change is
    /// in the store (`applied`), and drops the others. Called under the
    /// exclusive store lock.
    fn settle(&self, applied: &dyn Fn(&Change) -> bool) -> Result<(), HistoryError>;

    /// Turns every recorded change into its version, in order, then records
    /// what other programs changed as one version (all documents when
    /// `changed` is `None`, else those ids).
    fn flush(&self, changed: Option<&[DocId]>) -> Result<(), HistoryError>;

    /// What of a [`History::flush`] of `changed` needs no store lock, done
    /// just before it so that the locked part, which every writer of every
    /// process waits for, is short: committing what is queued and, before
    /// a scan, reading the files of the documents committed.
    fn ready_flush(&self, _changed: Option<&[DocId]>) -> Result<(), HistoryError> {
        Ok(())
    }

    /// The versions in which `id` changed (every version when `None`),
    /// newest first.
    fn log(&self, id: Option<&DocId>, limit: usize) -> Result<Vec<Version>, HistoryError>;

    /// The document's text in `version`, `None` when it did not exist.
    fn read_at(&self, version: &str, id: &DocId) -> Result<Option<String>, HistoryError>;

    /// The documents `version` changed and their state just before it, for
    /// finding where a pruned document hung.
    fn before(&self, version: &str) -> Result<Vec<(DocId, Option<String>)>, HistoryError>;

    /// Why changes are not becoming versions, as last seen (the repository
    /// could not be opened, or a commit failed); `None` when all is well.
    /// Cheap: it looks at nothing.
    fn problem(&self) -> Option<String>;

    /// Looks at the history's health now (the repository opens, its
    /// newest version is whole), for `validate` and `status`; returns the
    /// problem and how many changes wait for their version.
    fn check(&self) -> Result<(), HistoryProblem>;

    /// How far versions are behind the changes, for `status`. A history
    /// that makes each version with its change has no backlog.
    fn backlog(&self) -> Backlog {
        Backlog::default()
    }
}

/// Changes saved and waiting for their version (a server commits them in
/// the background, several to a version when writes outpace it).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Backlog {
    pub queued: usize,
    /// How long the oldest of them has waited, in seconds.
    pub oldest_secs: Option<u64>,
    /// Pack files holding the versions (a store's git repository).
    pub packs: Option<usize>,
}

impl std::fmt::Display for Backlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.queued, self.oldest_secs) {
            (0, _) => f.write_str("every change has its version")?,
            (n, Some(secs)) => write!(f, "{n} changes waiting for their version, the oldest for {secs} s")?,
            (n, None) => write!(f, "{n} changes waiting for their version")?,
        }
        match self.packs {
            Some(packs) => write!(f, "; {packs} pack files"),
            None => Ok(()),
        }
    }
}

/// Why history is not recording, and what waits meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HistoryProblem {
    pub reason: String,
    /// Changes queued for their version.
    pub queued: usize,
}
