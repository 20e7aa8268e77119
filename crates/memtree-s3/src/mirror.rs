//! `Mirror`: this machine's copy of a bucket store's documents as of one
//! commit. Reads, stamps and listings are served from it; each operation
//! first asks the bucket for its head (one small GET), and when the head
//! has moved, the mirror replays the change records since — they hold
//! every document's full text — instead of listing the bucket. It is kept
//! in the cache folder so that a restart replays only what it missed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use memtree_core::{DocId, Stamp};

use crate::storage::Record;

/// Each document's text, and a tag unique to its version.
pub(crate) type Texts = BTreeMap<DocId, (String, u64)>;

/// How often the mirror is written to the cache folder while it changes.
const SAVE_EVERY: Duration = Duration::from_secs(2);

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct State {
    /// Whether `docs` are the store's at commit `seq` (`name`: its record).
    filled: bool,
    seq: u64,
    name: Option<String>,
    /// Each document's text and a tag unique to its version.
    docs: BTreeMap<DocId, (String, u64)>,
}

pub(crate) struct Mirror {
    state: State,
    /// Where it is kept; `None`: in memory only.
    file: Option<PathBuf>,
    saved: Option<Instant>,
}

impl Mirror {
    /// The mirror kept in `file` (empty when there is none yet, or it
    /// cannot be read: it is filled again from the bucket).
    pub(crate) fn open(file: Option<PathBuf>) -> Mirror {
        let state = file
            .as_ref()
            .and_then(|f| std::fs::read(f).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Mirror { state, file, saved: None }
    }

    /// The commit the documents are at.
    pub(crate) fn at(&self) -> (u64, Option<&str>) {
        (self.state.seq, self.state.name.as_deref())
    }

    pub(crate) fn is_filled(&self) -> bool {
        self.state.filled
    }

    pub(crate) fn text(&self, id: &DocId) -> Option<&str> {
        self.state.docs.get(id).map(|(text, _)| text.as_str())
    }

    pub(crate) fn stamp(&self, id: &DocId) -> Option<Stamp> {
        self.state.docs.get(id).map(stamp)
    }

    /// Every document and its stamp, in id order.
    pub(crate) fn stamps(&self) -> impl Iterator<Item = (&DocId, Stamp)> {
        self.state.docs.iter().map(|(id, doc)| (id, stamp(doc)))
    }

    /// Fills the mirror with `docs` (text, tag), the documents at commit `seq`.
    pub(crate) fn fill(&mut self, seq: u64, name: Option<String>, docs: Texts) {
        self.state = State { filled: true, seq, name, docs };
        self.save(true);
    }

    /// Applies `record`, the change after the one the mirror is at.
    pub(crate) fn replay(&mut self, name: &str, record: &Record) {
        for raw in &record.deletes {
            if let Ok(id) = DocId::parse(raw) {
                self.state.docs.remove(&id);
            }
        }
        for (raw, text) in &record.puts {
            if let Ok(id) = DocId::parse(raw) {
                // The seq that wrote a version is unique to it.
                self.state.docs.insert(id, (text.clone(), record.seq));
            }
        }
        self.state.seq = record.seq;
        self.state.name = Some(name.to_owned());
        self.save(false);
    }

    /// Writes the mirror to its file: at once when `now`, else at most
    /// every [`SAVE_EVERY`]. A crash loses at most what the records replay.
    fn save(&mut self, now: bool) {
        let Some(file) = &self.file else { return };
        if !now && self.saved.is_some_and(|at| at.elapsed() < SAVE_EVERY) {
            return;
        }
        self.saved = Some(Instant::now());
        let write = || -> std::io::Result<()> {
            let temp = file.with_extension("tmp");
            std::fs::write(&temp, serde_json::to_vec(&self.state).map_err(std::io::Error::other)?)?;
            std::fs::rename(&temp, file)
        };
        if let Err(error) = write() {
            tracing::warn!(%error, file = %file.display(), "cannot keep the mirror of the bucket");
        }
    }
}

/// A document's stamp: a modification time of 0 is never "recent" (racy).
fn stamp((text, tag): &(String, u64)) -> Stamp {
    Stamp { len: text.len() as u64, modified_ns: 0, tag: *tag }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        self.save(true);
    }
}
