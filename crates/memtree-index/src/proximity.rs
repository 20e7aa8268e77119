//! How a passage's score weighs holding the query's words close together,
//! and which of a search's candidates have their rows read to weigh it.
//!
//! Proximity is weighed on a passage's text, matching words as excerpts do
//! ([`Matcher::window_coverage`](crate::text::Matcher::window_coverage)); reading sixty
//! candidates' rows for it was a quarter of a search. Yet most candidates
//! cannot reach the best few, whatever their text says. Each has bounds on
//! the score the engine's ranking ([`ranking`]) will give it: at least its
//! score with no proximity, at most its score with the closeness that the
//! positions of its terms allow ([`closeness`](crate::scoring::closeness),
//! over every index term of a word the text would match). [`settle`] reads
//! rows, highest bound first, until no candidate left unread can be among
//! the best: the answer is the one that reading every row gives.

use std::collections::HashMap;

use memtree_core::{DocId, DocumentSignals, Match, ranking};

/// How much of a passage's score depends on holding the query's words
/// close together, within [`PROXIMITY_WORDS`] words.
const PROXIMITY: f64 = 0.5;
pub const PROXIMITY_WORDS: usize = 40;

/// `score` weighed by a passage's closeness (0 to 1): the share of the
/// query's weight that [`PROXIMITY_WORDS`] neighbouring words hold.
pub fn weighed(score: f64, closeness: f64) -> f64 {
    score * (1.0 - PROXIMITY + PROXIMITY * closeness)
}

/// Bounds are compared with this much room for rounding: a passage's
/// closeness and its bound sum the same weights in different orders.
const ROUNDING: f64 = 1e-9;

/// A candidate passage of a search, joined to its document.
pub struct Candidate {
    /// Its passage's rowid.
    pub rowid: i64,
    /// Its BM25 (or fused) score, before proximity.
    pub score: f64,
    /// The most its closeness can be.
    pub bound: f64,
    /// What the engine's ranking multiplies its score by
    /// ([`ranking::signals`]), and whether ranking shows it at all
    /// ([`ranking::is_stale`]).
    pub signals: f64,
    pub shown: bool,
    /// The match, its text and weighed score there once it is read.
    pub found: Match,
    pub read: bool,
}

impl Candidate {
    /// The least and the most score ranking can give it.
    fn least(&self) -> f64 {
        let score = if self.read { self.found.hit.score } else { weighed(self.score, 0.0) };
        score * self.signals
    }

    fn most(&self) -> f64 {
        let score = if self.read { self.found.hit.score } else { weighed(self.score, self.bound) };
        score * self.signals
    }
}

/// The matches of `candidates` that can be among the best `limit` the
/// engine ranks, every one read: `read` reads a candidate's row and weighs
/// its score (false if the row is gone, which drops it), the unread ones
/// with the highest bound first, until every one left unread falls below
/// `limit` documents' least scores. Ranking takes at most two passages of a
/// document, a second one discounted, so a passage below the least scores
/// of `limit` other documents' passages, or of its own document's and
/// `limit - 1` others', is never kept. Matches keep the candidates' order.
pub fn settle<E>(
    mut candidates: Vec<Candidate>,
    limit: usize,
    mut read: impl FnMut(&mut Candidate) -> Result<bool, E>,
) -> Result<Vec<Match>, E> {
    let mut gone = vec![false; candidates.len()];
    let documents = ByDocument::of(&candidates);
    let mut best = Vec::new();
    loop {
        let floor = documents.least_of_best(&candidates, &gone, limit, &mut best);
        let next = (0..candidates.len())
            .filter(|&i| !gone[i] && !candidates[i].read && candidates[i].shown)
            .max_by(|&a, &b| candidates[a].most().total_cmp(&candidates[b].most()));
        let Some(i) = next else { break };
        if candidates[i].most() * (1.0 + ROUNDING) < floor {
            break;
        }
        if read(&mut candidates[i])? {
            candidates[i].read = true;
        } else {
            gone[i] = true;
        }
    }
    Ok(candidates.into_iter().zip(gone).filter(|(c, gone)| c.read && !gone).map(|(c, _)| c.found).collect())
}

/// `candidates` with those that `now` picks read (`read`: false if the row
/// is gone, which drops the candidate).
pub fn read_where<E>(
    candidates: Vec<Candidate>,
    now: impl Fn(&Candidate) -> bool,
    read: &mut impl FnMut(&mut Candidate) -> Result<bool, E>,
) -> Result<Vec<Candidate>, E> {
    let mut kept = Vec::with_capacity(candidates.len());
    for mut candidate in candidates {
        if !candidate.read && now(&candidate) {
            if !read(&mut candidate)? {
                continue;
            }
            candidate.read = true;
        }
        kept.push(candidate);
    }
    Ok(kept)
}

/// Which document each candidate is of, numbered once for a settling:
/// every round then sums the candidates by document without hashing ids.
struct ByDocument {
    of: Vec<usize>,
    count: usize,
}

impl ByDocument {
    fn of(candidates: &[Candidate]) -> ByDocument {
        let mut numbers: HashMap<&DocId, usize> = HashMap::with_capacity(candidates.len());
        let of = candidates
            .iter()
            .map(|c| {
                let next = numbers.len();
                *numbers.entry(&c.found.hit.id).or_insert(next)
            })
            .collect();
        ByDocument { of, count: numbers.len() }
    }

    /// The `limit`-th highest of the documents' best least scores, among
    /// the candidates ranking shows; none below it when there are fewer
    /// documents. `best` is room for the documents' figures.
    fn least_of_best(
        &self,
        candidates: &[Candidate],
        gone: &[bool],
        limit: usize,
        best: &mut Vec<Option<f64>>,
    ) -> f64 {
        best.clear();
        best.resize(self.count, None);
        for ((c, _), &document) in
            candidates.iter().zip(gone).zip(&self.of).filter(|((c, gone), _)| c.shown && !**gone)
        {
            let least = best[document].get_or_insert(f64::MIN);
            *least = least.max(c.least());
        }
        let mut leasts: Vec<f64> = best.iter().flatten().copied().collect();
        if leasts.len() < limit || limit == 0 {
            return f64::NEG_INFINITY;
        }
        leasts.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
        leasts[limit - 1]
    }
}

/// The engine's ranking at one time, as far as bounds need it.
pub struct Ranking {
    now_ns: u64,
    today: String,
}

impl Ranking {
    pub fn at(now_ns: u64) -> Ranking {
        Ranking { now_ns, today: memtree_core::date::civil_date(now_ns / 1_000_000_000) }
    }

    /// What ranking multiplies a passage's score by, for its document's
    /// signals and stamp, and whether it shows the document at all.
    pub fn weigh(&self, document: &DocumentSignals, modified_ns: u64) -> (f64, bool) {
        (ranking::signals(document, modified_ns, self.now_ns), !ranking::is_stale(document, &self.today))
    }
}

#[cfg(test)]
mod tests {
    use memtree_core::{Hit, Signals, Stamp};

    use super::*;

    const DAY_NS: u64 = 86_400 * 1_000_000_000;
    const NOW: u64 = 20_000 * DAY_NS;

    /// A pseudo-random stream (an LCG): the same cases on every run.
    struct Stream(u64);

    impl Stream {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Candidate `n` of document `doc`: its score before proximity, the
    /// closeness its text will show and its bound, and its document's
    /// priority, age and expiry.
    struct Case {
        doc: usize,
        score: f64,
        closeness: f64,
        bound: f64,
        priority: f64,
        age_days: u64,
        expired: bool,
    }

    fn matched(n: usize, case: &Case) -> Match {
        Match {
            hit: Hit {
                id: DocId::parse(&format!("d{}", case.doc)).unwrap(),
                heading: format!("p{n}"),
                heading_path: vec![],
                score: case.score,
                path: vec![],
                excerpt: String::new(),
                text: String::new(),
                after: String::new(),
                focus: None,
                line: n,
                scope: None,
                stamp: Stamp { len: 1, modified_ns: NOW - case.age_days * DAY_NS, tag: 0 },
                shared: false,
                signals: Signals::BM25,
            },
            document: DocumentSignals {
                priority: Some(case.priority),
                expires: case.expired.then(|| "2000-01-01".to_owned()),
                ..DocumentSignals::default()
            },
        }
    }

    /// The hits ranking keeps of `matches`, as (passage, score).
    fn kept(matches: Vec<Match>, limit: usize) -> Vec<(String, f64)> {
        let today = memtree_core::date::civil_date(NOW / 1_000_000_000);
        ranking::rank(ranking::current(matches, &today), limit, NOW)
            .into_iter()
            .map(|h| (h.heading, h.score))
            .collect()
    }

    /// Settles `cases`; the hits ranking keeps, and how many rows were read.
    fn settled(cases: &[Case], limit: usize) -> (Vec<(String, f64)>, usize) {
        let ranking = Ranking::at(NOW);
        let candidates = cases
            .iter()
            .enumerate()
            .map(|(n, case)| {
                let found = matched(n, case);
                let (signals, shown) = ranking.weigh(&found.document, found.hit.stamp.modified_ns);
                Candidate {
                    rowid: n as i64,
                    score: case.score,
                    bound: case.bound,
                    signals,
                    shown,
                    found,
                    read: false,
                }
            })
            .collect();
        let mut reads = 0;
        let matches = settle(candidates, limit, |c| {
            reads += 1;
            c.found.hit.score = weighed(c.score, cases[c.rowid as usize].closeness);
            Ok::<_, ()>(true)
        })
        .unwrap();
        (kept(matches, limit), reads)
    }

    /// Every row read: the answer settling must give.
    fn all_read(cases: &[Case], limit: usize) -> Vec<(String, f64)> {
        let matches = cases
            .iter()
            .enumerate()
            .map(|(n, case)| {
                let mut found = matched(n, case);
                found.hit.score = weighed(case.score, case.closeness);
                found
            })
            .collect();
        kept(matches, limit)
    }

    fn cases(stream: &mut Stream, count: usize, documents: usize) -> Vec<Case> {
        (0..count)
            .map(|_| {
                let closeness = stream.next();
                Case {
                    doc: (stream.next() * documents as f64) as usize,
                    score: 1.0 + 20.0 * stream.next(),
                    closeness,
                    bound: closeness + (1.0 - closeness) * stream.next() * stream.next(),
                    priority: stream.next(),
                    age_days: (stream.next() * 200.0) as u64,
                    expired: stream.next() < 0.1,
                }
            })
            .collect()
    }

    #[test]
    fn settling_keeps_what_ranking_every_row_would() {
        let mut stream = Stream(20261128);
        let mut reads = 0;
        for round in 0..2000 {
            let count = 1 + (stream.next() * 80.0) as usize;
            // Few documents: second passages, discounted, compete too.
            let documents = 1 + (stream.next() * count as f64) as usize;
            let limit = 1 + (stream.next() * 12.0) as usize;
            let cases = cases(&mut stream, count, documents);
            let (got, read) = settled(&cases, limit);
            assert_eq!(got, all_read(&cases, limit), "round {round}: {count} candidates, limit {limit}");
            reads += read;
        }
        assert!(reads > 0);
    }

    #[test]
    fn tight_bounds_spare_most_rows() {
        let mut stream = Stream(7);
        let mut cases = cases(&mut stream, 60, 60);
        for case in &mut cases {
            case.bound = case.closeness;
            case.expired = false;
        }
        let (got, read) = settled(&cases, 8);
        assert_eq!(got, all_read(&cases, 8));
        assert!(read < 30, "{read} of 60 rows read");
    }

    #[test]
    fn without_bounds_every_row_that_may_rank_is_read() {
        let mut stream = Stream(11);
        let mut cases = cases(&mut stream, 40, 40);
        for case in &mut cases {
            case.bound = 1.0;
        }
        let (got, _) = settled(&cases, 8);
        assert_eq!(got, all_read(&cases, 8));
    }
}
