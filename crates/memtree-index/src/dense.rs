//! Dense (semantic) retrieval beside BM25: the sentence encoder the index
//! is given, the chunks of a passage it embeds, the vectors it keeps in
//! memory for a query, and how the two rankings are fused.
//!
//! A passage is embedded as chunks of whole lines, each short enough for
//! a small encoder's window (all-MiniLM-L6-v2 reads 128 tokens as shipped;
//! what is past the window would not count), under its heading path. A
//! passage's dense score is its best chunk's cosine with the query.

use std::collections::HashMap;

use memtree_core::{Signals, content_hash};

/// A sentence-embedding model, as the index uses it.
pub trait Encoder: Send + Sync {
    /// Names the model and its weights: vectors of another model are never
    /// compared with this one's.
    fn model(&self) -> &str;
    /// One unit-length vector per text, all of one length.
    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>>;
}

/// Most words of a chunk: about 110 BPE tokens of English, inside a
/// 128-token window with the heading path before it.
const CHUNK_WORDS: usize = 80;

/// The texts a passage is embedded as: its lines, in order, grouped into
/// chunks of at most [`CHUNK_WORDS`] words (a longer line is a chunk
/// alone), each after the passage's heading path.
pub fn chunks(heading_path: &[String], text: &str) -> Vec<String> {
    let heading = heading_path.join(" › ");
    let mut out = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let n = line.split_whitespace().count();
        if words > 0 && words + n > CHUNK_WORDS {
            out.push(std::mem::take(&mut current));
            words = 0;
        }
        if current.is_empty() && !heading.is_empty() {
            current.push_str(&heading);
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(line);
        words += n;
    }
    if words > 0 {
        out.push(current);
    }
    out
}

/// The key of a chunk's vector: the same text has the same vector, in any
/// passage of any document, so an unchanged passage is never embedded again.
pub fn chunk_key(text: &str) -> i64 {
    content_hash(text.as_bytes()) as i64
}

/// Vectors as little-endian `f32`s, as the index file keeps them.
pub fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn from_bytes(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// The dot product of two vectors of one model: their cosine, for the unit
/// vectors an [`Encoder`] returns.
///
/// # Panics
/// If the lengths differ: such vectors come from different models.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "vectors of different models");
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The vectors of one model in memory, for queries: every chunk of every
/// passage, by key. Vectors only ever get added (a key's vector never
/// changes), so they are read once; the chunk list is read again whenever
/// the index changed.
#[derive(Default)]
pub struct VectorCache {
    vectors: HashMap<i64, Box<[f32]>>,
    /// The last row of the vectors table read.
    last_row: i64,
    /// Each chunk's passage and key.
    chunks: Vec<(i64, usize, i64)>,
    /// What the chunk list was read at (the index's change counters).
    chunks_at: Option<(i64, u64)>,
}

impl VectorCache {
    /// Adds vectors read from rows after `last_row`.
    pub fn add(&mut self, rows: impl IntoIterator<Item = (i64, i64, Vec<u8>)>) {
        for (row, key, bytes) in rows {
            self.last_row = self.last_row.max(row);
            self.vectors.insert(key, from_bytes(&bytes).into_boxed_slice());
        }
    }

    pub fn last_row(&self) -> i64 {
        self.last_row
    }

    /// Whether the chunk list read at `at` is the current one.
    pub fn chunks_current(&self, at: (i64, u64)) -> bool {
        self.chunks_at == Some(at)
    }

    pub fn set_chunks(&mut self, chunks: Vec<(i64, usize, i64)>, at: (i64, u64)) {
        self.chunks = chunks;
        self.chunks_at = Some(at);
    }

    /// The `k` passages nearest `query` (cosine of their best chunk), best
    /// first, each with its best chunk's place in it; passages with no
    /// vector yet are not among them.
    pub fn nearest(&self, query: &[f32], k: usize) -> Vec<(i64, f32, usize)> {
        let mut best: HashMap<i64, (f32, usize)> = HashMap::new();
        for (passage, ord, key) in &self.chunks {
            if let Some(vector) = self.vectors.get(key) {
                let score = dot(query, vector);
                let entry = best.entry(*passage).or_insert((score, *ord));
                if score > entry.0 {
                    *entry = (score, *ord);
                }
            }
        }
        let mut ranked: Vec<(i64, f32, usize)> =
            best.into_iter().map(|(passage, (score, ord))| (passage, score, ord)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(k);
        ranked
    }
}

/// Cosine below which a passage is not taken to be about the query: for
/// all-MiniLM-L6-v2, unrelated English sentences score 0–0.3.
const DENSE_FLOOR: f32 = 0.35;

/// How much a dense match counts beside BM25 at most: for the passage
/// nearest the query, when BM25's best passage holds none of its words.
const DENSE_WEIGHT: f64 = 0.8;

/// The weight of dense matches for a query whose words BM25's best passage
/// covers by `coverage` (the share of the query words' idf it holds, a word
/// the store lacks weighing most): where that passage holds every word
/// (a name, a number, an error message, CJK), BM25 is sure and ranks
/// alone; the fewer it holds (a paraphrase, a question in other words),
/// the more the meaning decides.
pub fn dense_weight(coverage: f64) -> f64 {
    DENSE_WEIGHT * (1.0 - coverage.clamp(0.0, 1.0))
}

/// BM25 and dense candidates (passage, score; best first) fused into one
/// ranking, best first: each passage scores its BM25 score relative to the
/// best BM25 candidate, plus, when its cosine clears [`DENSE_FLOOR`], up to
/// `weight` by how far it clears it, relative to the best dense candidate.
/// The fused score is on BM25's scale, so later ranking signals weigh the
/// same either way.
pub fn fuse(bm25: &[(i64, f64)], dense: &[(i64, f32, usize)], weight: f64) -> Vec<(i64, f64, Signals)> {
    let top_bm25 = bm25.first().map_or(0.0, |c| c.1).max(f64::MIN_POSITIVE);
    let top_dense = dense.first().map_or(0.0, |c| c.1);
    let mut fused: HashMap<i64, (f64, Signals)> = HashMap::new();
    for &(passage, score) in bm25 {
        fused.insert(passage, (score / top_bm25, Signals::BM25));
    }
    if top_dense > DENSE_FLOOR && weight > 0.0 {
        for &(passage, cosine, _) in dense.iter().filter(|c| c.1 > DENSE_FLOOR) {
            let lift = weight * f64::from((cosine - DENSE_FLOOR) / (top_dense - DENSE_FLOOR));
            let entry = fused.entry(passage).or_default();
            entry.0 += lift;
            entry.1.dense = true;
        }
    }
    let mut ranked: Vec<(i64, f64, Signals)> =
        fused.into_iter().map(|(passage, (score, found))| (passage, score * top_bm25, found)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_whole_lines_under_the_heading_path() {
        let path = vec!["Notes".to_owned(), "Setup".to_owned()];
        let long = "word ".repeat(50);
        let text = format!("first line\n\n{long}\n{long}\nlast");
        let chunks = chunks(&path, &text);
        assert_eq!(chunks.len(), 2, "{chunks:?}");
        assert_eq!(chunks[0], format!("Notes › Setup\nfirst line\n{}", long.trim()));
        assert_eq!(chunks[1], format!("Notes › Setup\n{}\nlast", long.trim()));
        assert_eq!(super::chunks(&[], "one\ntwo"), ["one\ntwo"]);
        assert!(super::chunks(&path, "\n \n").is_empty());
    }

    #[test]
    fn vectors_round_trip_through_bytes() {
        let v = [0.25f32, -1.5, 3.0e-8];
        assert_eq!(from_bytes(&to_bytes(&v)), v);
    }

    #[test]
    fn nearest_scores_a_passage_by_its_best_chunk() {
        let mut cache = VectorCache::default();
        cache.add([
            (1, 10, to_bytes(&[1.0, 0.0])),
            (2, 11, to_bytes(&[0.0, 1.0])),
            (3, 12, to_bytes(&[0.6, 0.8])),
        ]);
        assert_eq!(cache.last_row(), 3);
        // Passage 7 has chunks 10 and 11, passage 8 chunk 12, passage 9 no vector yet.
        cache.set_chunks(vec![(7, 0, 10), (7, 1, 11), (8, 0, 12), (9, 0, 13)], (1, 1));
        assert!(cache.chunks_current((1, 1)) && !cache.chunks_current((1, 2)));
        assert_eq!(cache.nearest(&[0.0, 1.0], 5), [(7, 1.0, 1), (8, 0.8, 0)], "7 by its second chunk");
        let best = cache.nearest(&[0.8, 0.6], 1);
        assert_eq!((best.len(), best[0].0), (1, 8));
        assert!((best[0].1 - 0.96).abs() < 1e-6, "{best:?}");
    }

    #[test]
    fn fusion_keeps_a_sure_bm25_order_and_brings_in_what_only_dense_found() {
        let bm25 = [(1, 10.0), (2, 4.0)];
        // Passage 3 only dense found; 2 both; 4 is under the floor.
        let dense = [(3, 0.7, 0), (2, 0.5, 0), (4, 0.1, 0)];
        let fused = fuse(&bm25, &dense, 0.5);
        let order: Vec<i64> = fused.iter().map(|f| f.0).collect();
        assert_eq!(order, [1, 2, 3]);
        assert_eq!(fused[0].2, Signals::BM25);
        assert_eq!(fused[1].2, Signals { bm25: true, dense: true });
        assert_eq!(fused[2].2, Signals { bm25: false, dense: true });
        assert!((fused[0].1 - 10.0).abs() < 1e-9, "a BM25-only passage keeps its score");
        // A heavier weight lets meaning win over a weak word match.
        let heavy: Vec<i64> = fuse(&bm25, &dense, 0.8).iter().map(|f| f.0).collect();
        assert_eq!(heavy, [1, 3, 2]);
        // Nothing from BM25: dense alone ranks.
        let only = fuse(&[], &dense, 0.5);
        assert_eq!(only.iter().map(|f| f.0).collect::<Vec<_>>(), [3, 2]);
        // Nothing dense clears the floor, or no weight: BM25 as it was.
        for (dense, weight) in [(&[(5, 0.2, 0)][..], 0.5), (&dense[..], 0.0)] {
            let same = fuse(&bm25, dense, weight);
            assert_eq!(same.iter().map(|f| (f.0, f.1)).collect::<Vec<_>>(), [(1, 10.0), (2, 4.0)]);
        }
    }

    #[test]
    fn dense_weighs_less_the_more_of_the_query_bm25_covers() {
        assert_eq!(dense_weight(1.0), 0.0);
        assert_eq!(dense_weight(0.0), DENSE_WEIGHT);
        assert!(dense_weight(0.25) > dense_weight(0.75));
    }
}
