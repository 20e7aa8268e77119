//! The ranking policy: which of an index's matches an answer shows, and in
//! what order. Stale memory (deprecated, or expired before today) is left
//! out; BM25 is weighed by the document's signals (priority, confidence,
//! recency of its last change, use in memory packs); no document fills the
//! answer with more than two passages, and a second one makes the cut over
//! another document's best only when clearly better. Any index backend gets the same
//! policy, since it lives here and not in the backend.

use std::collections::{HashMap, HashSet};

use crate::date::has_expired;
use crate::doc_id::DocId;
use crate::index::{DocumentSignals, Hit, Match};

/// At most this many passages of one document: the next document's best
/// passage is worth more to the reader than a third one.
pub const PASSAGES_PER_DOCUMENT: usize = 2;

/// Choosing which hits make the cut, a document's second passage counts
/// for this share of its score: another document's best passage tells the
/// reader more, unless the second is clearly better. The hits that make it
/// keep their order by score. (Over the conversation set, search's right
/// document in the first five 0.787 → 0.799, with memory packs, which
/// choose from forty, unchanged; at 0.7, 0.805, but hybrid search then
/// lost a relevant section of the notes set's questions.)
const SECOND_PASSAGE_SHARE: f64 = 0.8;

/// Whether the document's memory is no longer current on `today`
/// (`YYYY-MM-DD`).
pub fn is_stale(document: &DocumentSignals, today: &str) -> bool {
    document.deprecated || document.expires.as_deref().is_some_and(|e| has_expired(e, today))
}

/// The document's signals as a factor on BM25: priority, confidence,
/// recency of the last change (`modified_ns`, against `now_ns`) and use in
/// memory packs. Each moves a score by a fraction, never past a much
/// better text match.
pub fn signals(document: &DocumentSignals, modified_ns: u64, now_ns: u64) -> f64 {
    let priority = 0.8 + 0.4 * document.priority.unwrap_or(0.5);
    let confidence = if document.tentative { 0.9 } else { 1.0 };
    let age_days = now_ns.saturating_sub(modified_ns) as f64 / 86_400e9;
    let recency = 1.0 + 0.15 * (-age_days / 60.0).exp();
    let usage = 1.0 + 0.05 * (1.0 + document.uses as f64).ln();
    priority * confidence * recency * usage
}

/// The matches that may be shown on `today`.
pub fn current(matches: Vec<Match>, today: &str) -> Vec<Match> {
    matches.into_iter().filter(|m| !is_stale(&m.document, today)).collect()
}

/// Whether `matches` hold enough passages, at most two per document, to
/// fill `limit` hits.
pub fn fills(matches: &[Match], limit: usize) -> bool {
    let mut per_doc: HashMap<&DocId, usize> = HashMap::new();
    let usable = matches
        .iter()
        .filter(|m| {
            let n = per_doc.entry(&m.hit.id).or_default();
            *n += 1;
            *n <= PASSAGES_PER_DOCUMENT
        })
        .count();
    usable >= limit
}

/// The best `limit` hits of `matches`: BM25 times the signals, best first,
/// at most two per document, a second passage discounted for the cut
/// ([`SECOND_PASSAGE_SHARE`]).
pub fn rank(matches: Vec<Match>, limit: usize, now_ns: u64) -> Vec<Hit> {
    let mut hits: Vec<Hit> = matches
        .into_iter()
        .map(|m| {
            let mut hit = m.hit;
            hit.score *= signals(&m.document, hit.stamp.modified_ns, now_ns);
            hit
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut per_doc: HashMap<DocId, usize> = HashMap::new();
    hits.retain(|hit| {
        let n = per_doc.entry(hit.id.clone()).or_default();
        *n += 1;
        *n <= PASSAGES_PER_DOCUMENT
    });
    let mut seen: HashSet<&DocId> = HashSet::new();
    let mut cut: Vec<(f64, usize)> = hits
        .iter()
        .enumerate()
        .map(|(i, hit)| (if seen.insert(&hit.id) { hit.score } else { hit.score * SECOND_PASSAGE_SHARE }, i))
        .collect();
    cut.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let kept: HashSet<usize> = cut.into_iter().take(limit).map(|(_, i)| i).collect();
    let mut i = 0;
    hits.retain(|_| {
        i += 1;
        kept.contains(&(i - 1))
    });
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Signals;
    use crate::storage::Stamp;

    const DAY_NS: u64 = 86_400_000_000_000;
    const NOW: u64 = 1000 * DAY_NS;

    fn matched(id: &str, bm25: f64, document: DocumentSignals) -> Match {
        Match {
            hit: Hit {
                id: DocId::parse(id).unwrap(),
                heading: String::new(),
                heading_path: vec![],
                score: bm25,
                path: vec![],
                excerpt: String::new(),
                text: format!("{id} {bm25}"),
                after: String::new(),
                focus: None,
                line: 1,
                scope: None,
                stamp: Stamp { len: 1, modified_ns: NOW - 400 * DAY_NS, tag: 0 },
                shared: false,
                signals: Signals::BM25,
            },
            document,
        }
    }

    fn ids(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn stale_memory_is_left_out() {
        let expired = DocumentSignals { expires: Some("2026-01-01".into()), ..Default::default() };
        let later = DocumentSignals { expires: Some("2027-01-01T00:00".into()), ..Default::default() };
        let deprecated = DocumentSignals { deprecated: true, ..Default::default() };
        let kept = current(
            vec![
                matched("expired", 3.0, expired),
                matched("deprecated", 2.0, deprecated),
                matched("later", 1.0, later),
                matched("plain", 1.0, DocumentSignals::default()),
            ],
            "2026-11-26",
        );
        let kept: Vec<&str> = kept.iter().map(|m| m.hit.id.as_str()).collect();
        assert_eq!(kept, ["later", "plain"]);
    }

    #[test]
    fn signals_reorder_close_matches_but_not_distant_ones() {
        let high = DocumentSignals { priority: Some(1.0), uses: 20, ..Default::default() };
        let low = DocumentSignals { priority: Some(0.0), tentative: true, ..Default::default() };
        let hits = rank(vec![matched("low", 1.05, low.clone()), matched("high", 1.0, high.clone())], 8, NOW);
        assert_eq!(ids(&hits), ["high", "low"], "a small BM25 lead yields to the signals");
        let hits = rank(vec![matched("low", 3.0, low), matched("high", 1.0, high)], 8, NOW);
        assert_eq!(ids(&hits), ["low", "high"], "a large BM25 lead stands");
    }

    #[test]
    fn a_recent_change_weighs_a_little() {
        let mut fresh = matched("fresh", 1.0, DocumentSignals::default());
        fresh.hit.stamp.modified_ns = NOW - DAY_NS;
        let old = matched("old", 1.1, DocumentSignals::default());
        assert_eq!(ids(&rank(vec![old, fresh], 8, NOW)), ["fresh", "old"]);
    }

    #[test]
    fn at_most_two_passages_per_document() {
        let plain = DocumentSignals::default;
        let matches = vec![
            matched("a", 5.0, plain()),
            matched("a", 4.0, plain()),
            matched("a", 3.0, plain()),
            matched("b", 1.0, plain()),
        ];
        assert!(!fills(&matches, 4), "the third passage of a does not count");
        assert!(fills(&matches, 3));
        assert_eq!(ids(&rank(matches, 8, NOW)), ["a", "a", "b"]);
    }

    #[test]
    fn a_second_passage_makes_the_cut_only_when_clearly_better() {
        let plain = DocumentSignals::default;
        let close = vec![matched("a", 5.0, plain()), matched("a", 4.0, plain()), matched("b", 3.5, plain())];
        assert_eq!(ids(&rank(close.clone(), 2, NOW)), ["a", "b"], "b's best outweighs a's second");
        assert_eq!(ids(&rank(close, 3, NOW)), ["a", "a", "b"], "within the cut, order is by score");
        let clear = vec![matched("a", 5.0, plain()), matched("a", 4.0, plain()), matched("b", 2.0, plain())];
        assert_eq!(ids(&rank(clear, 2, NOW)), ["a", "a"]);
    }
}
