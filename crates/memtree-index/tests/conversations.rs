//! What the agent receives, on the conversation-log set in
//! `tests/relevance/conversations/`: chat sessions between four friends and
//! questions whose answer is one line (one turn) of one session.
//!
//! Unlike `relevance.rs`, which asks whether the right section ranks high,
//! this asks whether the text handed to the agent holds the answer line:
//!
//! * `doc@5`: the answering session is among the first 5 hits of `search`;
//! * `excerpt@5`: the answer (a verbatim substring of the line) is in the
//!   excerpt of one of the first 5 hits;
//! * `pack@B`: the answer is in the rendered memory pack of `recall` at a
//!   budget of B tokens (500, 1000, 2000).
//!
//! Reports the figures (overall and by kind of question) and the pack@1000
//! misses on stderr (`cargo test -p memtree-index --test conversations --
//! --nocapture`), and fails when a figure falls below the level recorded
//! here. Set `CONVERSATIONS_SHOW` to a part of a question to print the hits
//! and the packs rendered for the questions that contain it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memtree_core::Memory;
use memtree_test::indexed_copy;

#[cfg(feature = "embeddings")]
mod model;

/// The levels reached, over 169 questions (when the set was written:
/// doc@5 0.740, excerpt@5 0.515, pack@500 0.509, pack@1000 0.562,
/// pack@2000 0.568; with excerpts by word weight, packs that spend what is
/// left of their budget on whole passages, and passages that overlap by a
/// line: 0.728, 0.556, 0.556, 0.675, 0.710; with the phrase signal and
/// link lists entering packs as their matching lines: 0.740, 0.562, 0.556,
/// 0.675, 0.710; with context past a passage's end, hubs' link lines
/// lifting the documents they describe, proximity (the query's weight held
/// within 40 words), and packs that join a document's neighbouring passages
/// and grow entries by lines, and a long word standing for the store's
/// shortened form of it: 0.787, 0.675, 0.657, 0.734, 0.757; with a
/// question shown for its words followed by its answer: 0.787, 0.686,
/// 0.657, 0.746, 0.757; with excerpts of 60 words rather than four lines:
/// 0.787, 0.692, 0.657, 0.751, 0.781; with a document's second passage
/// making search's cut only when clearly better than another's best, and
/// personal pronouns as stop words: 0.799, 0.698, 0.663, 0.751, 0.781).
/// Each minimum is that level less 0.03, rounded down; raise them as
/// retrieval improves.
const MIN_DOC_AT_5: f64 = 0.76;
const MIN_EXCERPT_AT_5: f64 = 0.66;
const MIN_PACK_AT_500: f64 = 0.62;
const MIN_PACK_AT_1000: f64 = 0.72;
const MIN_PACK_AT_2000: f64 = 0.75;

/// The size the set promises (see its `check_fixture.py`).
const MIN_QUERIES: usize = 110;

const BUDGETS: [usize; 3] = [500, 1000, 2000];

#[derive(Debug, serde::Deserialize)]
struct Query {
    query: String,
    kind: String,
    doc: String,
    answer: String,
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/relevance/conversations")
}

/// Whether `text` holds `answer` verbatim once the `**` match marks are gone.
fn holds(text: &str, answer: &str) -> bool {
    text.replace("**", "").contains(answer)
}

/// Counts of questions that got the answer, by measure.
#[derive(Default, Clone, Copy)]
struct Score {
    queries: usize,
    doc_at_5: usize,
    excerpt_at_5: usize,
    pack: [usize; BUDGETS.len()],
}

impl Score {
    fn add(&mut self, other: &Score) {
        self.queries += other.queries;
        self.doc_at_5 += other.doc_at_5;
        self.excerpt_at_5 += other.excerpt_at_5;
        for (a, b) in self.pack.iter_mut().zip(other.pack) {
            *a += b;
        }
    }

    fn share(&self, count: usize) -> f64 {
        count as f64 / self.queries.max(1) as f64
    }

    fn row(&self, name: &str) -> String {
        let mut row = format!(
            "{name:>10}  {:>7}  {:>5.3}  {:>9.3}",
            self.queries,
            self.share(self.doc_at_5),
            self.share(self.excerpt_at_5)
        );
        for &count in &self.pack {
            row.push_str(&format!("  {:>9.3}", self.share(count)));
        }
        row
    }
}

/// The scores of `memory` by kind of question, printed under `label`.
fn measure(memory: &Memory, label: &str) -> BTreeMap<String, Score> {
    let queries: Vec<Query> =
        yaml_serde::from_str(&std::fs::read_to_string(fixture().join("queries.yaml")).unwrap()).unwrap();
    assert!(
        queries.len() >= MIN_QUERIES,
        "the set needs at least {MIN_QUERIES} queries, has {}",
        queries.len()
    );
    let show = std::env::var("CONVERSATIONS_SHOW").ok().filter(|s| !s.is_empty());

    // Every search first, then the packs: `recall` logs the use of the
    // documents it draws on, which nudges later rankings, so the searches
    // are measured on an index no pack has touched yet.
    let mut scores = vec![Score { queries: 1, ..Score::default() }; queries.len()];
    // What the agent pays for the excerpts: their words, over all searches.
    let mut excerpt_words = 0;
    for (q, score) in queries.iter().zip(&mut scores) {
        let hits = memory.search(&q.query, 5, None, None).unwrap();
        let top5 = &hits[..hits.len().min(5)];
        excerpt_words += top5.iter().map(|h| h.excerpt.split_whitespace().count()).sum::<usize>();
        score.doc_at_5 = usize::from(top5.iter().any(|h| h.id.as_str() == q.doc));
        score.excerpt_at_5 = usize::from(top5.iter().any(|h| holds(&h.excerpt, &q.answer)));
        if show.as_deref().is_some_and(|s| q.query.contains(s)) {
            eprintln!("=== search {:?} (answer in {}: {:?})", q.query, q.doc, q.answer);
            for h in top5 {
                eprintln!("--- {}#{}\n{}", h.id, h.heading, h.excerpt);
            }
        }
    }
    let mut misses = Vec::new();
    for (q, score) in queries.iter().zip(&mut scores) {
        for (b, &budget) in BUDGETS.iter().enumerate() {
            let pack = memory.recall(&q.query, budget, None).unwrap();
            let rendered = pack.render();
            let found = holds(&rendered, &q.answer);
            score.pack[b] = usize::from(found);
            if show.as_deref().is_some_and(|s| q.query.contains(s)) {
                eprintln!(
                    "=== recall {:?} at {budget} (answer in {}: {:?})\n{rendered}",
                    q.query, q.doc, q.answer
                );
            }
            if budget == 1000 && !found {
                let mut drew: Vec<&str> = Vec::new();
                for entry in &pack.entries {
                    if !drew.contains(&entry.id.as_str()) {
                        drew.push(entry.id.as_str());
                    }
                }
                misses.push(format!("{:>10} {:?} → {} (pack: {})", q.kind, q.query, q.doc, drew.join(" ")));
            }
        }
    }

    let mut by_kind: BTreeMap<String, Score> = BTreeMap::new();
    for (q, score) in queries.iter().zip(&scores) {
        by_kind.entry(q.kind.clone()).or_default().add(score);
    }
    let total = total(&by_kind);
    eprintln!("{label}\n{:>10}  queries  doc@5  excerpt@5   pack@500  pack@1000  pack@2000", "kind");
    for (kind, score) in &by_kind {
        eprintln!("{}", score.row(kind));
    }
    eprintln!("{}", total.row("all"));
    eprintln!("excerpts of the first 5 hits: {} words a search", excerpt_words / queries.len().max(1));
    eprintln!("answer not in the pack at 1000 tokens ({}):\n{}", misses.len(), misses.join("\n"));
    by_kind
}

fn total(by_kind: &BTreeMap<String, Score>) -> Score {
    let mut total = Score::default();
    for score in by_kind.values() {
        total.add(score);
    }
    total
}

#[test]
fn answers_reach_the_agent_on_the_conversation_set() {
    let (_dir, memory) = indexed_copy("relevance/conversations/store");
    let total = total(&measure(&memory, "BM25"));

    let figures = [
        ("doc@5", total.share(total.doc_at_5), MIN_DOC_AT_5),
        ("excerpt@5", total.share(total.excerpt_at_5), MIN_EXCERPT_AT_5),
        ("pack@500", total.share(total.pack[0]), MIN_PACK_AT_500),
        ("pack@1000", total.share(total.pack[1]), MIN_PACK_AT_1000),
        ("pack@2000", total.share(total.pack[2]), MIN_PACK_AT_2000),
    ];
    for (name, value, min) in figures {
        assert!(value >= min, "{name} {value:.3} < {min}");
    }
}

/// Hybrid search (BM25 and all-MiniLM-L6-v2) against BM25 alone: no kind
/// of question gets fewer answers to the agent by any measure (within one
/// question), paraphrases and questions get more over all measures.
#[cfg(feature = "embeddings")]
#[test]
fn hybrid_search_hands_over_more_answers_and_none_fewer() {
    let (_dir, memory) = indexed_copy("relevance/conversations/store");
    let bm25 = measure(&memory, "BM25");
    let (_dense_dir, hybrid_memory, _) =
        memtree_test::indexed_copy_with("relevance/conversations/store", Some(model::from_env()));
    let hybrid = measure(&hybrid_memory, "hybrid");
    for (kind, before) in &bm25 {
        let after = &hybrid[kind];
        let pairs = [(before.doc_at_5, after.doc_at_5), (before.excerpt_at_5, after.excerpt_at_5)]
            .into_iter()
            .chain(before.pack.iter().copied().zip(after.pack));
        for (b, a) in pairs {
            assert!(a + 1 >= b, "{kind}: {a} answers < {b} with BM25 alone");
        }
    }
    // Better: more answers over all five measures together.
    let answers = |s: &Score| s.doc_at_5 + s.excerpt_at_5 + s.pack.iter().sum::<usize>();
    for kind in ["paraphrase", "question"] {
        let (before, after) = (answers(&bm25[kind]), answers(&hybrid[kind]));
        assert!(after > before, "{kind}: {after} answers over all measures vs {before}");
    }
}
