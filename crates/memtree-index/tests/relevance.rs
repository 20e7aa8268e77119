//! Ranking quality on the relevance set in `tests/relevance/`: a store of
//! agent notes and queries with the sections that should answer them.
//! Reports (on stderr) recall@5 and MRR (overall and by kind of query) and fails when
//! they fall below the level reached and recorded here, or when stale
//! memory (deprecated, expired) comes back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memtree_core::{DocId, Hit, Memory};
use memtree_test::indexed_copy;

#[cfg(feature = "embeddings")]
mod model;

/// The levels reached (recall@5 0.867, MRR 0.846 over 110 queries); a
/// change that lowers them is a regression.
const MIN_RECALL_AT_5: f64 = 0.86;
const MIN_MRR: f64 = 0.84;

#[derive(Debug, serde::Deserialize)]
struct Query {
    query: String,
    kind: String,
    expect: Vec<String>,
    #[serde(default)]
    absent: Vec<String>,
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/relevance")
}

/// Whether a hit answers a target: `id` (any passage of it) or `id#Heading`
/// (that section, or a passage under it).
fn answers(hit: &Hit, target: &str) -> bool {
    let (id, heading) = target.split_once('#').map_or((target, None), |(i, h)| (i, Some(h)));
    hit.id.as_str() == id && heading.is_none_or(|h| hit.heading_path.iter().any(|p| p == h))
}

#[derive(Default)]
struct Score {
    queries: usize,
    recall: f64,
    reciprocal_rank: f64,
}

/// Scores by kind of query, the stale hits and the misses of `memory`.
struct Measured {
    /// Compared kind by kind with hybrid search's (feature `embeddings`).
    #[cfg_attr(not(feature = "embeddings"), expect(dead_code))]
    by_kind: BTreeMap<String, Score>,
    total: Score,
    stale: Vec<String>,
}

fn measure(memory: &Memory, label: &str) -> Measured {
    let queries: Vec<Query> =
        yaml_serde::from_str(&std::fs::read_to_string(fixture().join("queries.yaml")).unwrap()).unwrap();
    assert!(queries.len() >= 60, "the set needs at least 60 queries");

    let mut by_kind: BTreeMap<String, Score> = BTreeMap::new();
    let mut stale = Vec::new();
    let mut misses = Vec::new();
    for q in &queries {
        let hits = memory.search(&q.query, 10, None, None).unwrap();
        let top5 = &hits[..hits.len().min(5)];
        let found = q.expect.iter().filter(|t| top5.iter().any(|h| answers(h, t))).count();
        let rank = hits.iter().position(|h| q.expect.iter().any(|t| answers(h, t)));
        let score = by_kind.entry(q.kind.clone()).or_default();
        score.queries += 1;
        score.recall += found as f64 / q.expect.len() as f64;
        score.reciprocal_rank += rank.map_or(0.0, |r| 1.0 / (r + 1) as f64);
        if rank.is_none_or(|r| r >= 5) {
            let got: Vec<String> = hits.iter().take(3).map(|h| format!("{}#{}", h.id, h.heading)).collect();
            misses.push(format!("{:>10} {:?} → {:?}", q.kind, q.query, got));
        }
        for absent in &q.absent {
            let id = DocId::parse(absent.split('#').next().unwrap()).unwrap();
            if hits.iter().any(|h| h.id == id) {
                stale.push(format!("{:?} returned stale {absent}", q.query));
            }
        }
    }
    let total = by_kind.values().fold(Score::default(), |mut acc, s| {
        acc.queries += s.queries;
        acc.recall += s.recall;
        acc.reciprocal_rank += s.reciprocal_rank;
        acc
    });
    eprintln!("{label}\n{:>10}  queries  recall@5  MRR", "kind");
    for (kind, s) in by_kind.iter().chain([(&"all".to_owned(), &total)]) {
        eprintln!("{kind:>10}  {:>7}  {:>8.3}  {:.3}", s.queries, s.recall(), s.mrr());
    }
    eprintln!("not in the top 5:\n{}", misses.join("\n"));
    Measured { by_kind, total, stale }
}

impl Score {
    fn recall(&self) -> f64 {
        self.recall / self.queries.max(1) as f64
    }

    fn mrr(&self) -> f64 {
        self.reciprocal_rank / self.queries.max(1) as f64
    }
}

#[test]
fn ranking_quality_on_the_relevance_set() {
    let (_dir, memory) = indexed_copy("relevance/store");
    let measured = measure(&memory, "BM25");
    let (recall, mrr) = (measured.total.recall(), measured.total.mrr());
    assert!(measured.stale.is_empty(), "stale memory returned: {:#?}", measured.stale);
    assert!(recall >= MIN_RECALL_AT_5, "recall@5 {recall:.3} < {MIN_RECALL_AT_5}");
    assert!(mrr >= MIN_MRR, "MRR {mrr:.3} < {MIN_MRR}");
}

/// Hybrid search (BM25 and all-MiniLM-L6-v2) against BM25 alone on the
/// same set: no kind of query ranks worse (recall@5 and MRR, within one
/// query's worth of rounding), paraphrases and questions rank better.
#[cfg(feature = "embeddings")]
#[test]
fn hybrid_search_adds_and_takes_nothing_away() {
    let (_dir, memory) = indexed_copy("relevance/store");
    let bm25 = measure(&memory, "BM25");
    let (_dense_dir, hybrid_memory, _) =
        memtree_test::indexed_copy_with("relevance/store", Some(model::from_env()));
    let hybrid = measure(&hybrid_memory, "hybrid");
    assert!(hybrid.stale.is_empty(), "stale memory returned: {:#?}", hybrid.stale);
    for (kind, before) in &bm25.by_kind {
        let after = &hybrid.by_kind[kind];
        assert!(
            after.recall() >= before.recall() - 1e-9,
            "{kind}: recall@5 {} < {}",
            after.recall(),
            before.recall()
        );
        assert!(after.mrr() >= before.mrr() - 0.01, "{kind}: MRR {} < {}", after.mrr(), before.mrr());
    }
    for kind in ["paraphrase", "question"] {
        let (before, after) = (&bm25.by_kind[kind], &hybrid.by_kind[kind]);
        assert!(after.mrr() > before.mrr() + 0.02, "{kind}: MRR {} vs {}", after.mrr(), before.mrr());
    }
}
