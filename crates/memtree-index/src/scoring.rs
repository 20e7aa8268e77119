//! BM25 over the postings a search reads. SQLite FTS5's ranking, which
//! memtree used first, visits every matching row through its auxiliary
//! function API (a B-tree lookup for the row's length, a scan of every
//! phrase's whole doclist for its weight, then a sort of all of them),
//! about 0.7 µs a row. Read once, the postings give the weights, the
//! counts and the positions for phrases together, and a search scores a
//! term's thousands of passages in microseconds.

use std::sync::Arc;

use crate::instances::{Instance, Postings};

/// How much a term weighs where it occurs: id, title, headings, summary
/// and tags, body, CJK bigrams. Where a word appears says how much a
/// passage is about it.
pub const COLUMN_WEIGHTS: [f64; 6] = [5.0, 3.0, 3.0, 2.0, 1.0, 1.0];

/// A column's weight; one past the table's counts as the body.
fn column_weight(column: u8) -> f64 {
    COLUMN_WEIGHTS.get(usize::from(column)).copied().unwrap_or(1.0)
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The number of passages and their mean length in terms.
#[derive(Debug, Clone, Copy)]
pub struct Corpus {
    pub passages: f64,
    pub mean_length: f64,
}

impl Corpus {
    /// BM25's inverse document frequency, floored just above zero as FTS5
    /// floors it: a term in more than half of the passages says nothing.
    fn idf(&self, df: usize) -> f64 {
        let df = df as f64;
        let idf = ((self.passages - df + 0.5) / (df + 0.5)).ln();
        if idf > 0.0 { idf } else { 1e-6 }
    }

    /// BM25's weight of a term held `tf` times (by column weight) in a
    /// passage of `length` terms, before its idf.
    fn saturation(&self, tf: f64, length: u32) -> f64 {
        let relative = if self.mean_length > 0.0 { f64::from(length) / self.mean_length } else { 1.0 };
        tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * relative))
    }

    /// BM25's weight of a term in a passage where it occurs as
    /// `instances`, before its idf.
    fn weight(&self, rowid: i64, instances: &[Instance], length: &impl Fn(i64) -> u32) -> f64 {
        let tf: f64 = instances.iter().map(|i| column_weight(i.column())).sum();
        self.saturation(tf, length(rowid))
    }

    /// Each passage of `postings` with the term's BM25 weight in it.
    fn weights(&self, postings: &Postings, length: &impl Fn(i64) -> u32) -> Vec<(i64, f64)> {
        let idf = self.idf(postings.df());
        let mut weights = Vec::with_capacity(postings.df());
        let mut cursor = postings.cursor();
        let mut tf = 0.0;
        while let Some(rowid) = cursor.next_columns(|column| tf += column_weight(column)) {
            weights.push((rowid, idf * self.saturation(std::mem::take(&mut tf), length(rowid))));
        }
        weights
    }
}

/// The terms of a query by how many passages hold them (see `plan` in
/// `sqlite.rs`), and its pairs of neighbouring words.
pub struct Tiers<'a> {
    pub rare: Vec<&'a Postings>,
    pub frequent: Vec<&'a Postings>,
    pub useless: Vec<&'a Postings>,
    pub pairs: Vec<(Arc<Postings>, Arc<Postings>)>,
}

/// How much more a passage weighs that holds two of the query's
/// neighbouring words side by side, as the query has them.
pub const PHRASE_LIFT: f64 = 0.25;

/// Words at most this many positions apart stand together (two stop words
/// or other words may come between them).
const PHRASE_SPAN: u32 = 3;

/// The passages a query matches with their BM25 scores ([`Scores::best`]
/// puts the best first). Candidates are the passages holding a rare term;
/// a frequent term adds its weight to them and, where one is held, the
/// rare terms count twice, as they do in FTS5's ranking of `rare OR (rare
/// AND frequent)`: with rare words in the query, a frequent one only tells
/// their passages apart. Without a rare term the frequent ones match
/// alone, and without those the useless ones. A passage holding a pair of
/// the query's neighbouring words together weighs [`PHRASE_LIFT`] more.
pub fn rank(tiers: Tiers<'_>, corpus: Corpus, length: impl Fn(i64) -> u32) -> Scores {
    let leading = [&tiers.rare, &tiers.frequent, &tiers.useless].into_iter().find(|t| !t.is_empty());
    let Some(leading) = leading else { return Scores { scores: Vec::new(), pairs: Vec::new() } };
    let mut scores = sum(leading.iter().map(|p| corpus.weights(p, &length)));
    // The frequent terms' weights in the candidates: each candidate is
    // looked up in their postings, which are many times longer.
    if !tiers.rare.is_empty() && !tiers.frequent.is_empty() {
        let mut added: Vec<Option<f64>> = vec![None; scores.len()];
        for p in &tiers.frequent {
            let idf = corpus.idf(p.df());
            let mut cursor = p.cursor();
            for ((rowid, _), added) in scores.iter().zip(added.iter_mut()) {
                if let Some(instances) = cursor.seek(*rowid) {
                    *added = Some(added.unwrap_or(0.0) + idf * corpus.weight(*rowid, instances, &length));
                }
            }
        }
        for ((_, score), added) in scores.iter_mut().zip(added) {
            if let Some(added) = added {
                *score = 2.0 * *score + added;
            }
        }
    }
    Scores { scores, pairs: tiers.pairs }
}

/// The passages a query matches with their scores before the phrase lift,
/// and the pairs of postings that lift them.
pub struct Scores {
    scores: Vec<(i64, f64)>,
    pairs: Vec<(Arc<Postings>, Arc<Postings>)>,
}

/// Best first, ties in passage order.
fn order(a: &(i64, f64), b: &(i64, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

impl Scores {
    /// How many passages match.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// The `k` best passages with their scores, best first. The phrase
    /// lift is looked for only in the passages it could bring into them:
    /// those the lift would take to the `k`th best score before it. The
    /// `k` best before the lift are among them and keep at least that
    /// score, so no other passage could pass them. Looking in every
    /// matching passage took half of a search's ranking.
    pub fn best(&mut self, k: usize) -> Vec<(i64, f64)> {
        let k = k.min(self.scores.len());
        if k == 0 {
            return Vec::new();
        }
        if self.pairs.is_empty() {
            return top(&mut self.scores, k).to_vec();
        }
        let threshold = top(&mut self.scores, k)[k - 1].1;
        let lift = 1.0 + PHRASE_LIFT;
        let mut reach: Vec<(i64, f64)> =
            self.scores.iter().filter(|(_, score)| score * lift >= threshold).copied().collect();
        reach.sort_unstable_by_key(|(rowid, _)| *rowid);
        let mut cursors: Vec<_> = self.pairs.iter().map(|(a, b)| (a.cursor(), b.cursor())).collect();
        for (rowid, score) in reach.iter_mut() {
            let mut together = false;
            for (a, b) in cursors.iter_mut() {
                // Every cursor moves to the passage, to stay in order.
                together |= side_by_side(a.seek(*rowid), b.seek(*rowid));
            }
            if together {
                *score *= lift;
            }
        }
        top(&mut reach, k);
        reach.truncate(k);
        reach
    }
}

/// Puts the `k` best of `scores` first, best first, and returns them; the
/// rest stay unsorted.
fn top(scores: &mut [(i64, f64)], k: usize) -> &[(i64, f64)] {
    let k = k.min(scores.len());
    if k < scores.len() {
        scores.select_nth_unstable_by(k, order);
    }
    scores[..k].sort_unstable_by(order);
    &scores[..k]
}

/// The passages of several weight lists (each in passage order), with the
/// sum of their weights, in passage order.
fn sum(lists: impl Iterator<Item = Vec<(i64, f64)>>) -> Vec<(i64, f64)> {
    let mut total: Vec<(i64, f64)> = Vec::new();
    for list in lists {
        if total.is_empty() {
            total = list;
            continue;
        }
        let mut merged = Vec::with_capacity(total.len() + list.len());
        let (mut a, mut b) = (total.iter().peekable(), list.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) if x.0 == y.0 => {
                    merged.push((x.0, x.1 + y.1));
                    a.next();
                    b.next();
                }
                (Some(&&x), Some(&&y)) => {
                    if x.0 < y.0 {
                        merged.push(x);
                        a.next();
                    } else {
                        merged.push(y);
                        b.next();
                    }
                }
                (Some(&&x), None) => {
                    merged.push(x);
                    a.next();
                }
                (None, Some(&&y)) => {
                    merged.push(y);
                    b.next();
                }
                (None, None) => break,
            }
        }
        total = merged;
    }
    total
}

/// The column of a passage's body, whose terms' positions are its words'
/// places.
const BODY: u8 = 4;

/// For each of `rowids` (in increasing order), the largest share of the
/// query's weight that `window` neighbouring terms of its body hold, from
/// the positions of the terms in `postings` (each counting for one of the
/// query's terms, which weigh `weights`): does a passage say the query's
/// words in one place or scatter them? A query term's weight counts once in
/// a window however often it occurs there. Search bounds the closeness of
/// a passage's text with it (`proximity.rs`).
pub fn closeness(postings: &[(&Postings, usize)], weights: &[f64], rowids: &[i64], window: u32) -> Vec<f64> {
    let total: f64 = weights.iter().sum();
    let mut cursors: Vec<_> = postings.iter().map(|(p, t)| (p.cursor(), *t)).collect();
    let mut held: Vec<(u32, usize)> = Vec::new();
    let mut inside = vec![0u32; weights.len()];
    rowids
        .iter()
        .map(|&rowid| {
            held.clear();
            for (cursor, t) in &mut cursors {
                let instances = cursor.seek(rowid).unwrap_or_default();
                held.extend(instances.iter().filter(|i| i.column() == BODY).map(|i| (i.offset(), *t)));
            }
            held.sort_unstable();
            // A window slides over the terms held, in order of position.
            let (mut best, mut weight, mut first) = (0.0f64, 0.0, 0);
            for &(offset, t) in &held {
                while offset - held[first].0 >= window {
                    let gone = held[first].1;
                    inside[gone] -= 1;
                    if inside[gone] == 0 {
                        weight -= weights[gone];
                    }
                    first += 1;
                }
                inside[t] += 1;
                if inside[t] == 1 {
                    weight += weights[t];
                }
                best = best.max(weight);
            }
            for &(_, t) in &held[first..] {
                inside[t] -= 1;
            }
            if total > 0.0 { best / total } else { 0.0 }
        })
        .collect()
}

/// Whether an instance of one term and one of another in a passage stand
/// within [`PHRASE_SPAN`] positions of each other in one column.
fn side_by_side(a: Option<&[Instance]>, b: Option<&[Instance]>) -> bool {
    let (Some(a), Some(b)) = (a, b) else { return false };
    a.iter()
        .any(|x| b.iter().any(|y| x.column() == y.column() && x.offset().abs_diff(y.offset()) <= PHRASE_SPAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Postings from (passage, column, offset) triples.
    fn postings(at: &[(u32, u8, u32)]) -> Postings {
        Postings::new(
            at.iter().map(|&(rowid, column, offset)| Instance::new(rowid, column, offset)).collect(),
        )
    }

    const CORPUS: Corpus = Corpus { passages: 100.0, mean_length: 10.0 };

    /// `rank`'s passages, best first, with their scores.
    fn scored(tiers: Tiers<'_>, length: impl Fn(i64) -> u32) -> Vec<(i64, f64)> {
        rank(tiers, CORPUS, length).best(usize::MAX)
    }

    fn ranked(tiers: Tiers<'_>) -> Vec<i64> {
        scored(tiers, |_| 10).into_iter().map(|(rowid, _)| rowid).collect()
    }

    #[test]
    fn closeness_is_the_weight_held_within_a_window_of_the_body() {
        let weights = [3.0, 1.0];
        // Passage 1: apart; 2 and 3: together; 4: together in the title.
        let cello = postings(&[(1, 4, 0), (2, 4, 0), (3, 4, 5), (3, 4, 90), (4, 1, 0)]);
        let exam = postings(&[(1, 4, 50), (2, 4, 2), (3, 4, 6), (4, 1, 1)]);
        let close = closeness(&[(&cello, 0), (&exam, 1)], &weights, &[1, 2, 3, 4], 40);
        assert_eq!(close, [0.75, 1.0, 1.0, 0.0], "the heavier word alone, then both, then neither");
        // A longer term counting for `cello` (`cellos`) stands near `exam`.
        let cellos = postings(&[(1, 4, 48)]);
        assert_eq!(closeness(&[(&cello, 0), (&exam, 1), (&cellos, 0)], &weights, &[1], 40), [1.0]);
        assert_eq!(closeness(&[(&cellos, 1)], &weights, &[1], 40), [0.25], "counted for its query term");
        // Forty terms from the first to the last.
        let (last, past) = (postings(&[(1, 4, 39)]), postings(&[(1, 4, 40)]));
        assert_eq!(closeness(&[(&cello, 0), (&last, 1)], &weights, &[1], 40), [1.0]);
        assert_eq!(closeness(&[(&cello, 0), (&past, 1)], &weights, &[1], 40), [0.75]);
        // Only the body counts.
        let (body, bigram) = (postings(&[(1, 4, 3)]), postings(&[(1, 5, 3)]));
        assert_eq!(closeness(&[(&body, 0), (&bigram, 1)], &weights, &[1], 40), [0.75]);
        assert_eq!(closeness(&[(&body, 0)], &[0.0], &[1], 40), [0.0], "no weight");
    }

    #[test]
    fn bm25_weighs_rare_terms_columns_and_counts() {
        let rare = postings(&[(1, 4, 0), (2, 4, 0), (2, 4, 5), (3, 1, 0)]);
        let tiers = || Tiers { rare: vec![&rare], frequent: vec![], useless: vec![], pairs: vec![] };
        let scores = scored(tiers(), |_| 10);
        // The title (weight 3) beats two body instances, which beat one.
        assert_eq!(scores.iter().map(|s| s.0).collect::<Vec<_>>(), [3, 2, 1]);
        let idf = ((100.0f64 - 3.0 + 0.5) / 3.5).ln();
        assert!((scores[2].1 - idf).abs() < 1e-9, "one instance at mean length weighs the idf: {scores:?}");
        // A longer passage weighs less.
        let scores = scored(tiers(), |rowid| if rowid == 1 { 5 } else { 40 });
        assert!(scores.iter().find(|s| s.0 == 1).unwrap().1 > idf);
    }

    #[test]
    fn a_frequent_term_only_tells_the_rare_terms_passages_apart() {
        let rare = postings(&[(1, 4, 0), (2, 4, 0)]);
        let frequent = postings(&[(2, 4, 3), (5, 4, 0), (6, 4, 0)]);
        let tiers = Tiers { rare: vec![&rare], frequent: vec![&frequent], useless: vec![], pairs: vec![] };
        assert_eq!(ranked(tiers), [2, 1], "passages without the rare term do not match");
        let alone = Tiers { rare: vec![], frequent: vec![&frequent], useless: vec![], pairs: vec![] };
        assert_eq!(ranked(alone), [2, 5, 6], "without a rare term, frequent ones match");
        let none = Tiers { rare: vec![], frequent: vec![], useless: vec![], pairs: vec![] };
        assert!(ranked(none).is_empty());
    }

    #[test]
    fn words_side_by_side_lift_their_passage() {
        let release = Arc::new(postings(&[(1, 4, 0), (2, 4, 7), (3, 2, 1)]));
        let train = Arc::new(postings(&[(1, 4, 9), (2, 4, 8), (3, 4, 2)]));
        let tiers =
            |pairs| Tiers { rare: vec![&*release, &*train], frequent: vec![], useless: vec![], pairs };
        let plain = scored(tiers(vec![]), |_| 10);
        let lifted = scored(tiers(vec![(release.clone(), train.clone())]), |_| 10);
        let score = |scores: &[(i64, f64)], rowid| scores.iter().find(|s| s.0 == rowid).unwrap().1;
        assert!((score(&lifted, 2) - score(&plain, 2) * (1.0 + PHRASE_LIFT)).abs() < 1e-9);
        assert_eq!(score(&lifted, 1), score(&plain, 1), "nine positions apart");
        assert_eq!(score(&lifted, 3), score(&plain, 3), "in different columns");
    }

    #[test]
    fn the_best_few_are_the_first_of_all_passages_lifted() {
        // Two words in 300 passages, side by side in every third, at
        // lengths that spread the scores.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for rowid in 1..=300u32 {
            a.push((rowid, 4, 0));
            if rowid % 2 == 0 {
                a.push((rowid, 4, 20));
            }
            b.push((rowid, 4, if rowid % 3 == 0 { 1 } else { 9 }));
        }
        let (a, b) = (Arc::new(postings(&a)), Arc::new(postings(&b)));
        let length = |rowid: i64| 5 + (rowid * 7 % 40) as u32;
        let tiers = || Tiers {
            rare: vec![&*a, &*b],
            frequent: vec![],
            useless: vec![],
            pairs: vec![(a.clone(), b.clone())],
        };
        let all = rank(tiers(), CORPUS, length).best(usize::MAX);
        assert_eq!(all.len(), 300);
        let mut scores = rank(tiers(), CORPUS, length);
        for k in [1, 2, 7, 60, 150, 299] {
            assert_eq!(scores.best(k), all[..k], "the {k} best");
        }
    }
}
