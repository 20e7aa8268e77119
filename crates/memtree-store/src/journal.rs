//! The intent journal that makes a multi-document change atomic.
//!
//! Redo logging: the complete after-state of a change (every new document
//! text, every document moved to the trash) is written to
//! `.memtree/journal.json` with one atomic rename before any document is
//! touched. A crash before that rename leaves the before-state (the journal
//! never existed); a crash after it is completed by replaying the journal,
//! whose operations are all idempotent. The journal is removed last.

use memtree_core::DocId;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Journal {
    pub label: String,
    pub ops: Vec<JournalOp>,
}

/// Paths are rebuilt from validated ids on replay, so a tampered journal
/// cannot name a file outside the store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum JournalOp {
    /// Write the document (atomically replacing what is there).
    Put { id: DocId, content: String },
    /// Move the document, bytes untouched, into the trash folder `batch`.
    Trash { batch: TrashBatch, id: DocId },
}

/// The trash folder name of one change: digits and dashes only.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub(crate) struct TrashBatch(String);

impl TrashBatch {
    pub fn new(unix_ms: u128, pid: u32, seq: u64) -> TrashBatch {
        TrashBatch(format!("{unix_ms:013}-{pid}-{seq}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TrashBatch {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            Ok(TrashBatch(s))
        } else {
            Err(format!("invalid trash batch name {s:?}"))
        }
    }
}

impl From<TrashBatch> for String {
    fn from(b: TrashBatch) -> String {
        b.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trips_and_refuses_path_tricks() {
        let j = Journal {
            label: "update root".into(),
            ops: vec![
                JournalOp::Put { id: DocId::root(), content: "# x\n".into() },
                JournalOp::Trash { batch: TrashBatch::new(1, 2, 3), id: DocId::parse("a").unwrap() },
            ],
        };
        let text = serde_json::to_string(&j).unwrap();
        assert_eq!(serde_json::from_str::<Journal>(&text).unwrap(), j);
        for bad in [
            r#"{"label":"x","ops":[{"op":"trash","batch":"1","id":"../etc/passwd"}]}"#,
            r#"{"label":"x","ops":[{"op":"trash","batch":"../x","id":"a"}]}"#,
            r#"{"label":"x","ops":[{"op":"put","id":"/abs","content":""}]}"#,
        ] {
            assert!(serde_json::from_str::<Journal>(bad).is_err(), "{bad}");
        }
    }
}
