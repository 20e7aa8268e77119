//! The `SearchIndex` trait: the derived search index the engine keeps beside the
//! documents, and the values that cross it.
//!
//! Everything in an index can be rebuilt from the documents (`reindex`), so
//! a backend may be deleted at any time. The engine updates it in the same
//! operation as every write and checks each hit against the stored document
//! before returning it.

use crate::doc_id::DocId;
use crate::front_matter::{self, FrontMatter, Scope};
use crate::links::parse_links;
use crate::sections::{self, PASSAGE_WORDS, Passage};
use crate::storage::Stamp;

/// A document as the index stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedDoc {
    pub id: DocId,
    pub stamp: Stamp,
    /// Hash of the document's bytes: tells a touched file from a changed one.
    pub hash: u64,
    pub title: String,
    /// The known front-matter keys (empty when the block is invalid).
    pub front: FrontMatter,
    /// Children, in link order.
    pub links: Vec<DocId>,
    pub passages: Vec<Passage>,
}

impl IndexedDoc {
    /// Everything the index needs of a document, from its stored text. A
    /// document whose front-matter is invalid (edited outside memtree) is
    /// indexed without metadata rather than left out.
    pub fn from_text(id: DocId, text: &str, stamp: Stamp) -> IndexedDoc {
        let split = front_matter::split(text);
        let fm = split.yaml.and_then(|y| FrontMatter::parse(y).ok()).unwrap_or_default();
        // Passage lines count from the top of the file, front-matter included.
        let offset = crate::line_ending::count_breaks(split.head);
        let mut passages = sections::passages(split.body, PASSAGE_WORDS);
        for passage in &mut passages {
            passage.line += offset;
        }
        IndexedDoc {
            title: sections::title(split.body).unwrap_or_else(|| id.to_string()),
            hash: content_hash(text.as_bytes()),
            links: parse_links(split.body).ids,
            passages,
            front: fm,
            id,
            stamp,
        }
    }
}

/// A document a write just changed, as queued for the index, with the
/// links it now holds (none when it was deleted): the link table is current
/// as soon as the write is, so the tree rules read it without waiting for
/// the full text to be indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub id: DocId,
    pub links: Vec<DocId>,
}

impl Queued {
    /// `id`, now holding `text`.
    pub fn put(id: DocId, text: &str) -> Queued {
        Queued { id, links: crate::links::children(text) }
    }

    /// `id`, now deleted.
    pub fn deleted(id: DocId) -> Queued {
        Queued { id, links: Vec::new() }
    }
}

/// FNV-1a: a hash that stays the same across builds, unlike std's.
pub fn content_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// What to look for. The query is plain words: any character is text.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub query: String,
    /// How many matches the caller needs: an index returns at least this
    /// many when there are, and may return more (all the candidates it
    /// weighed), for the engine's ranking to choose from.
    pub limit: usize,
    pub scope: Option<Scope>,
    /// Only documents in this subtree (itself included).
    pub under: Option<DocId>,
    /// The time the engine ranks at ([`crate::ranking::rank`]): an index
    /// may leave out a match that ranking cannot put among the best `limit`.
    pub now_ns: u64,
}

/// What an index answers: the passages that match, best BM25 score first,
/// with what the ranking needs of their documents.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched {
    pub matches: Vec<Match>,
    /// Whether these are all the passages that match (else there are more
    /// than the request's limit).
    pub complete: bool,
    /// The words matched (the query's, and those that stand in for a
    /// misspelt one), for [`SearchIndex::excerpt`].
    pub terms: Vec<QueryTerm>,
}

/// A word a query matched, and how much it says: its inverse document
/// frequency, so that a rare word decides which lines an excerpt shows,
/// not a word on every line (a speaker's name, a project's).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    pub word: String,
    pub weight: f64,
}

/// One passage that matched: its hit, scored by BM25 alone (higher is
/// better), without its path and excerpt, and its document's signals.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    pub hit: Hit,
    pub document: DocumentSignals,
}

/// What a document's front-matter and use say about its passages' worth.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocumentSignals {
    pub priority: Option<f64>,
    pub tentative: bool,
    pub deprecated: bool,
    /// `YYYY-MM-DD…`.
    pub expires: Option<String>,
    /// How many memory packs drew on it.
    pub uses: u64,
}

/// One passage that matched.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub id: DocId,
    pub heading: String,
    pub heading_path: Vec<String>,
    pub score: f64,
    /// Ids from root down to the document's parent.
    pub path: Vec<DocId>,
    /// The matching lines with a little context, matches marked `**…**`.
    pub excerpt: String,
    /// The whole passage, for memory packs.
    #[serde(skip)]
    pub text: String,
    /// The lines after the passage in its section (the next passage's
    /// first), as context for its last lines: an answer after its question.
    #[serde(skip)]
    pub after: String,
    /// The lines of the passage nearest the query in meaning, when dense
    /// retrieval alone found it: what its excerpt shows.
    #[serde(skip)]
    pub focus: Option<String>,
    pub line: usize,
    #[serde(skip)]
    pub scope: Option<Scope>,
    /// The stamp of the document the passage was indexed from.
    #[serde(skip)]
    pub stamp: Stamp,
    /// From the shared tree, seen from a namespace (cited `shared:<id>`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    pub signals: Signals,
}

/// Which rankings found a hit: BM25 (its words) and dense retrieval (its
/// meaning, when the index has a sentence encoder). Serialised as the list
/// of their names, `["bm25", "dense"]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    pub bm25: bool,
    pub dense: bool,
}

impl Signals {
    pub const BM25: Signals = Signals { bm25: true, dense: false };

    pub fn names(self) -> Vec<&'static str> {
        [(self.bm25, "bm25"), (self.dense, "dense")]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| n)
            .collect()
    }
}

impl serde::Serialize for Signals {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.names())
    }
}

/// How far an index catching up with the documents is: `done` of `total`
/// documents indexed again (`0` of `0` while it compares stamps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexProgress {
    pub done: usize,
    pub total: usize,
}

impl std::fmt::Display for IndexProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.total == 0 {
            f.write_str("the index is still being checked against the documents")
        } else {
            write!(f, "the index is still being built ({} of {} documents)", self.done, self.total)
        }
    }
}

/// The answer of a search: ranked hits, and whether the index was still
/// catching up (so a missing hit may only not be indexed yet).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub hits: Vec<Hit>,
    pub index_building: Option<IndexProgress>,
}

/// As the list of hits; while the index is catching up, as
/// `{"hits": [...], "index_building": {"done": …, "total": …}}`, so a
/// script cannot take an empty list for "nothing matches".
impl serde::Serialize for Found {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        match self.index_building {
            None => self.hits.serialize(serializer),
            Some(progress) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("hits", &self.hits)?;
                map.serialize_entry("index_building", &progress)?;
                map.end()
            }
        }
    }
}

/// Documents most and least used by memory packs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Usage {
    pub id: DocId,
    pub count: u64,
    pub last_used_ns: u64,
}

/// Size and freshness of an index, for `status`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct IndexStats {
    pub documents: usize,
    pub passages: usize,
    pub bytes: u64,
    pub location: String,
    /// How far embedding the passages has got, when the index has a
    /// sentence encoder.
    #[serde(skip)]
    pub embeddings: Option<EmbeddingProgress>,
}

/// The passages embedded by a model so far: dense retrieval sees only
/// those, and catches up in the background.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmbeddingProgress {
    pub model: String,
    pub passages: usize,
    pub embedded: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// `source` is the backend's own error, kept so that a caller can tell
    /// what failed beneath.
    #[error("index {location}: {source}")]
    Backend { location: String, source: Box<dyn std::error::Error + Send + Sync> },
}

/// A full-text index of passages with document metadata, links and usage.
pub trait SearchIndex: Send + Sync {
    /// Replaces everything the index holds for each of `docs` and drops
    /// the `gone`, as read from the files once the queue reached
    /// `read_after` ([`SearchIndex::queue_end`]). A document queued after
    /// that keeps the links its write put in the table: the text read may
    /// be older than they are, and the queue indexes it again. It may take
    /// several transactions: a writer of another process waiting for the
    /// index goes in between two documents.
    fn replace(&self, docs: &[IndexedDoc], gone: &[DocId], read_after: i64) -> Result<(), IndexError>;
    /// The position of the last document queued so far (0: none ever).
    fn queue_end(&self) -> Result<i64, IndexError>;
    /// One indexed document's stamp, if it is indexed.
    fn stamp(&self, id: &DocId) -> Result<Option<Stamp>, IndexError>;
    /// Every indexed document's stamp and hash, for reconciliation.
    fn stamps(&self) -> Result<Vec<(DocId, Stamp, u64)>, IndexError>;
    /// Queues documents a write just changed, to be indexed by whichever
    /// process reads the index next (or the writer's indexing thread): the
    /// queue is in the index, so another process's search finds a write
    /// acknowledged before it, and a crash loses nothing queued. Their
    /// links go into the link table at once.
    fn enqueue(&self, changed: &[Queued]) -> Result<(), IndexError>;
    /// Waits for the store's turn to index the queue, held until the
    /// lock drops: one process at a time reads the queue, indexes it and
    /// drops it, so that none indexes again what another just did.
    fn indexing_turn(&self) -> Result<crate::storage::StoreLock, IndexError>;
    /// The queued documents, and the queue position they reach; `None`
    /// when nothing waits.
    fn queued(&self) -> Result<Option<(i64, Vec<DocId>)>, IndexError>;
    /// Drops the queue up to `through`, once those documents are indexed
    /// (what was queued after stays).
    fn dequeue(&self, through: i64) -> Result<(), IndexError>;
    /// Records that documents whose text still has the indexed hash now
    /// have these stamps (a copied store: new inodes, the same texts), in
    /// one transaction. A document rewritten since keeps its row.
    fn restamp(&self, stamps: &[(DocId, Stamp, u64)]) -> Result<(), IndexError>;
    /// The passages that match, best BM25 score first; ranking them is
    /// the engine's ([`crate::ranking`]).
    fn search(&self, request: &SearchRequest) -> Result<Matched, IndexError>;
    /// The lines of `passage` that hold `terms` (as this index matches
    /// words) with their context (the lines `after` it included), marked
    /// `**…**`, for a hit the engine keeps.
    fn excerpt(&self, passage: &str, after: &str, terms: &[QueryTerm]) -> String;
    /// For each of `ids`, the ids from root down to the document's parent,
    /// by the indexed links: all in one look at the index.
    fn paths(&self, ids: &[&DocId]) -> Result<Vec<Vec<DocId>>, IndexError>;
    /// Every indexed document that links `id`.
    fn parents(&self, id: &DocId) -> Result<Vec<DocId>, IndexError>;
    fn record_use(&self, ids: &[DocId], now_ns: u64) -> Result<(), IndexError>;
    /// Every used document, most used first.
    fn usage(&self) -> Result<Vec<Usage>, IndexError>;
    fn stats(&self) -> Result<IndexStats, IndexError>;
    /// Compacts the full-text index (moves its recent writes in with the
    /// rest and drops deleted passages), after bulk changes.
    fn optimize(&self) -> Result<(), IndexError>;
    /// Reads ahead what searches cost most to read the first time (a
    /// server's start is idle time); returns how many words it read.
    fn read_ahead(&self) -> Result<usize, IndexError>;
    /// Forgets every document (usage is kept).
    fn clear(&self) -> Result<(), IndexError>;
    /// How far dense retrieval's embedding has got; `None` without it.
    fn embeddings(&self) -> Result<Option<EmbeddingProgress>, IndexError> {
        Ok(None)
    }
}

/// Counts tokens the way the agent's model does (a real BPE tokenizer).
pub trait TokenCounter: Send + Sync {
    fn count(&self, text: &str) -> usize;
    fn name(&self) -> &str;
}
