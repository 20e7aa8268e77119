//! What a search reads of the index file to score passages itself: how
//! many passages hold a term and where it occurs, from memtree's inverted
//! index (`inverted.rs`), and each passage's length in terms. [`Reader`]
//! keeps them between searches.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use rusqlite::{Connection, params};

use crate::instances::{Instance, Postings};
use crate::inverted::{Recent, short};
use crate::scoring::Corpus;

/// The terms' postings read so far and the passages' lengths, kept
/// between searches.
/// This process's own writes are kept as [`Change`]s and applied to a
/// term's postings when a search next asks for it, so that a write costs
/// nothing here and a search only what its own words need; a write by
/// another process drops everything, and past [`HELD_BYTES`] the
/// postings read longest ago go.
#[derive(Default)]
pub struct Reader {
    lengths: Lengths,
    /// The number of passages, at the last refresh.
    passages: usize,
    recent: Recent,
    /// The index's change counters the postings are current at (with the
    /// changes pending): SQLite's `data_version` (other connections'
    /// commits) and this connection's total changes.
    at: (i64, u64),
    /// Each term's postings, with the number of the first change not
    /// applied to them yet and when a search last read them (in `reads`).
    postings: HashMap<String, (Arc<Postings>, u64, u64)>,
    reads: u64,
    held: usize,
    /// This process's writes not yet applied to every term held; the first
    /// is change number `first`.
    pending: VecDeque<Change>,
    first: u64,
    /// Whether a term was read since the last change was queued: until
    /// then, the next change may join it.
    read_since_queued: bool,
}

/// The most memory the postings [`Reader`] keeps take, 16 MiB: about 5.5
/// million instances, the postings of the words searched most in a large
/// store. The bench's 200 queries on 10,000 notes read 633,000 instances
/// of 255 terms, 2 MB; its 100 queries on 100,000 notes need more than
/// 8 MiB, and with that bound searched at 8.4 ms (p50) where with 16 they
/// search at 1.6 ms, in a process no larger: what is read again and again
/// takes memory while it is read.
const HELD_BYTES: usize = 16 << 20;

/// The most the postings read ahead take, 4 MiB: at 10,000 documents all
/// the words in at least 1 % of them (3.4 MB); at 100,000 the most common
/// of those, with a session's peak memory in mind.
const READ_AHEAD_BYTES: usize = 4 << 20;

/// Past this many passages written and not yet applied to every term, the
/// postings held are dropped instead.
const PENDING_PASSAGES: usize = 10_000;

/// What a write changed of the full-text index: the passages it deleted,
/// and the postings of those it added, by term (made once, for the
/// inverted index and for the postings processes keep); `rewritten` if it
/// wrote the inverted index anew (a fold, a purge, a clear), so that what
/// processes read of it is read again.
#[derive(Default)]
pub struct Change {
    pub gone: Vec<i64>,
    pub added: BTreeMap<String, Postings>,
    /// How many passages it added, and the first one's rowid.
    pub passages_added: usize,
    pub first_added: Option<i64>,
    pub rewritten: bool,
}

impl Change {
    /// Adds passage `rowid`, newer than any added before, with its six
    /// columns' terms, space separated (see `terms.rs`).
    pub fn add(&mut self, rowid: i64, columns: &[String; 6]) -> rusqlite::Result<()> {
        let rowid = short(rowid)?;
        let mut passage: HashMap<&str, Vec<Instance>> = HashMap::new();
        for (column, text) in columns.iter().enumerate() {
            for (offset, term) in text.split(' ').filter(|t| !t.is_empty()).enumerate() {
                passage.entry(term).or_default().push(Instance::new(rowid, column as u8, offset as u32));
            }
        }
        for (term, instances) in passage {
            match self.added.get_mut(term) {
                Some(postings) => postings.push(&instances),
                None => {
                    let mut postings = Postings::default();
                    postings.push(&instances);
                    self.added.insert(term.to_owned(), postings);
                }
            }
        }
        self.passages_added += 1;
        self.first_added.get_or_insert(i64::from(rowid));
        Ok(())
    }

    fn passages(&self) -> usize {
        self.gone.len() + self.passages_added
    }

    /// Whether `later` may join this change: none of the passages it
    /// deletes is one this change adds, so applying the two as one (the
    /// deleted passages first, then the added) is applying them in turn.
    fn takes(&self, later: &Change) -> bool {
        self.first_added.is_none_or(|first| later.gone.iter().all(|&rowid| rowid < first))
    }

    /// Adds `later`, which [`Change::takes`] allows, to this change.
    fn join(&mut self, later: Change) {
        self.gone.extend(later.gone);
        for (term, postings) in later.added {
            match self.added.get_mut(&term) {
                Some(held) => held.append_coded(postings.coded(), |_| true),
                None => drop(self.added.insert(term, postings)),
            }
        }
        self.passages_added += later.passages_added;
    }

    /// Applies the change to `term`'s postings.
    fn apply(&self, term: &str, postings: &mut Postings) {
        for &rowid in &self.gone {
            postings.remove(rowid);
        }
        if let Some(added) = self.added.get(term) {
            postings.append_coded(added.coded(), |_| true);
        }
    }
}

/// The counters a [`Reader`] is current at, for `conn` now.
pub fn counters(conn: &Connection) -> rusqlite::Result<(i64, u64)> {
    let version = conn.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get(0))?;
    Ok((version, conn.total_changes()))
}

impl Reader {
    /// Brings the reader up to date with the index; returns the number of
    /// passages and their mean length.
    pub fn refresh(&mut self, conn: &Connection) -> rusqlite::Result<Corpus> {
        let at = counters(conn)?;
        if at != self.at {
            self.recent = Recent::load(conn)?;
            self.at = at;
            self.postings.clear();
            self.pending.clear();
            self.held = 0;
        }
        if self.held > HELD_BYTES {
            self.forget_least_read(HELD_BYTES / 2);
        }
        // Changes every term held has caught up with are done with.
        let next = self.next();
        let oldest = self.postings.values().map(|p| p.1).min();
        while self.first < oldest.unwrap_or(next) {
            self.pending.pop_front();
            self.first += 1;
        }
        let corpus = self.lengths.refresh(conn)?;
        self.passages = corpus.passages as usize;
        Ok(corpus)
    }

    /// Drops the postings read longest ago until at most `keep` bytes are
    /// held: the words searched most stay.
    fn forget_least_read(&mut self, keep: usize) {
        let mut by_read: Vec<(u64, String)> = self.postings.iter().map(|(t, p)| (p.2, t.clone())).collect();
        by_read.sort_unstable();
        for (_, term) in by_read {
            if self.held <= keep {
                break;
            }
            if let Some((postings, ..)) = self.postings.remove(&term) {
                self.held -= postings.size();
            }
        }
    }

    /// The number the next change will have.
    fn next(&self) -> u64 {
        self.first + self.pending.len() as u64
    }

    /// Records `change`, a write of this process that moved the counters
    /// from `before` to `after`: the postings held stay current if they were
    /// at `before` and no other process wrote in between.
    pub fn wrote(&mut self, before: (i64, u64), after: (i64, u64), change: Change) {
        let queued = self.pending.iter().map(Change::passages).sum::<usize>() + change.passages();
        let current = self.at == before && after.0 == before.0 && queued <= PENDING_PASSAGES;
        if current && !change.rewritten && self.recent.wrote(&change).is_ok() {
            self.at = after;
            if change.passages() > 0 {
                // The indexer writes a burst a few documents at a time: as
                // one change, each term is held once, not once per write.
                match self.pending.back_mut().filter(|last| !self.read_since_queued && last.takes(&change)) {
                    Some(last) => last.join(change),
                    None => self.pending.push_back(change),
                }
                self.read_since_queued = false;
            }
        } else {
            // Not current: the next refresh drops everything.
            self.at = (i64::MIN, 0);
        }
    }

    /// The number of passages holding `term`: counted from the inverted
    /// index's rows when that is exact enough, else by reading the term's
    /// postings (which a search then reads anyway).
    pub fn df(&mut self, conn: &Connection, term: &str) -> rusqlite::Result<usize> {
        if !self.postings.contains_key(term)
            && let Some(df) = self.recent.df(conn, term, self.passages)?
        {
            return Ok(df);
        }
        Ok(self.postings(conn, term)?.df())
    }

    /// Reads `term`'s postings ahead of the searches that will ask for
    /// them, unless the postings held have reached [`READ_AHEAD_BYTES`];
    /// `false` once they have.
    pub fn read_ahead(&mut self, conn: &Connection, term: &str) -> rusqlite::Result<bool> {
        self.refresh(conn)?;
        if self.held >= READ_AHEAD_BYTES {
            return Ok(false);
        }
        self.postings(conn, term)?;
        Ok(true)
    }

    /// Every instance of `term`.
    pub fn postings(&mut self, conn: &Connection, term: &str) -> rusqlite::Result<Arc<Postings>> {
        let next = self.next();
        self.reads += 1;
        self.read_since_queued = true;
        if let Some((p, seen, read)) = self.postings.get_mut(term) {
            let before = p.size();
            for change in self.pending.range((*seen - self.first) as usize..) {
                change.apply(term, Arc::make_mut(p));
            }
            self.held = (self.held + p.size()).saturating_sub(before);
            *seen = next;
            *read = self.reads;
            return Ok(p.clone());
        }
        let p = Arc::new(self.recent.read(conn, term)?);
        self.held += p.size();
        self.postings.insert(term.to_owned(), (p.clone(), next, self.reads));
        Ok(p)
    }

    /// The length of passage `rowid` in terms.
    pub fn length(&self, rowid: i64) -> u32 {
        self.lengths.get(rowid)
    }

    /// What is known of passage `rowid` without reading its row, if it was
    /// seen.
    pub fn passage(&self, rowid: i64) -> Option<Passage> {
        self.lengths.passage(rowid)
    }
}

/// What is known of a passage without reading its row: its document (its
/// `docs` rowid), whether its text holds a link (`[[`), and whether a word
/// of it mixes CJK with other letters (`東京でReact`, `ReactとVue`): the
/// index keeps those letters as terms of their own, which the typo
/// vocabulary does not hold and whose positions are not the words' places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passage {
    pub document: i64,
    pub links: bool,
    pub mixed_words: bool,
}

/// [`Passage::links`] and [`Passage::mixed_words`] as the index stores
/// them, bits of `passages.flags`.
pub const LINKS: u8 = 1;
pub const MIXED_WORDS: u8 = 2;

impl Passage {
    /// A passage of `document` stored with `flags`.
    pub fn stored(document: i64, flags: u8) -> Passage {
        Passage { document, links: flags & LINKS != 0, mixed_words: flags & MIXED_WORDS != 0 }
    }
}

/// The length in terms of every passage this process has seen, its
/// document's row and its flags, by rowid. Rowids are never reused (`AUTOINCREMENT`), so
/// neither ever changes and an update only appends the passages written
/// since; a deleted passage's stay until the next full load, harmless, as
/// no term leads to it. They are found by rowid directly: a search looks up
/// thousands of lengths, and the documents of its sixty candidates without
/// reading their rows. A new index (a schema change, a reindex) starts
/// another generation.
#[derive(Default)]
struct Lengths {
    generation: i64,
    /// The rowid of `lengths[0]`.
    first: i64,
    /// By rowid from `first`; 0 for a rowid never seen.
    lengths: Vec<u32>,
    /// The `docs` rowid of each (same order); 0 for one never seen, or past
    /// `u32`.
    documents: Vec<u32>,
    /// The flags of each (same order; [`LINKS`], [`MIXED_WORDS`]).
    flags: Vec<u8>,
    /// How many of `lengths` are passages seen.
    seen: usize,
}

impl Lengths {
    /// Brings the lengths up to date; returns the number of passages and
    /// their mean length.
    fn refresh(&mut self, conn: &Connection) -> rusqlite::Result<Corpus> {
        let (generation, passages, tokens): (i64, i64, i64) = conn
            .prepare_cached("SELECT generation, passages, tokens FROM totals")?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        // Lengths of deleted passages outnumbering the living: start over.
        let stale = self.seen > 2 * passages.max(0) as usize + 1024;
        if generation != self.generation || stale {
            *self = Lengths { generation, ..Lengths::default() };
        }
        let last = self.first + self.lengths.len() as i64 - 1;
        let mut stmt = conn.prepare_cached(
            "SELECT rowid, tokens, docrow, flags FROM passages WHERE rowid > ?1 ORDER BY rowid",
        )?;
        let mut rows = stmt.query(params![last.max(0)])?;
        while let Some(row) = rows.next()? {
            let (rowid, length, document, flags): (i64, u32, i64, u8) =
                (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
            if self.lengths.is_empty() {
                self.first = rowid;
            }
            let at = (rowid - self.first) as usize;
            self.lengths.resize(at, 0);
            self.documents.resize(at, 0);
            self.flags.resize(at, 0);
            self.lengths.push(length);
            self.documents.push(u32::try_from(document).unwrap_or(0));
            self.flags.push(flags);
            self.seen += 1;
        }
        Ok(Corpus {
            passages: passages as f64,
            mean_length: if passages > 0 { tokens as f64 / passages as f64 } else { 0.0 },
        })
    }

    /// The length of passage `rowid` (0 if unknown: one written after the
    /// last refresh).
    fn get(&self, rowid: i64) -> u32 {
        self.at(rowid).map_or(0, |i| self.lengths[i])
    }

    fn passage(&self, rowid: i64) -> Option<Passage> {
        let i = self.at(rowid)?;
        let document = i64::from(self.documents[i]);
        (document > 0).then(|| Passage::stored(document, self.flags[i]))
    }

    fn at(&self, rowid: i64) -> Option<usize> {
        usize::try_from(rowid - self.first).ok().filter(|&i| i < self.lengths.len())
    }
}

#[cfg(test)]
mod tests {
    use memtree_core::{DocId, IndexedDoc, SearchIndex, Stamp};

    use super::*;
    use crate::SqliteIndex;

    /// Past its bound, the reader drops the postings read longest ago, not
    /// all of them: the words searched most stay held.
    #[test]
    fn the_postings_read_longest_ago_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        let docs: Vec<IndexedDoc> = (0..3)
            .map(|i| {
                let text = format!("# Note {i}\nalpha beta gamma delta\n");
                let stamp = Stamp { len: text.len() as u64, modified_ns: 1, tag: 0 };
                IndexedDoc::from_text(DocId::parse(&format!("n{i}")).unwrap(), &text, stamp)
            })
            .collect();
        SqliteIndex::open(&path).unwrap().replace(&docs, &[], 0).unwrap();
        let conn = Connection::open(&path).unwrap();
        let mut reader = Reader::default();
        reader.refresh(&conn).unwrap();
        for term in ["alpha", "beta", "gamma", "delta", "alpha"] {
            reader.postings(&conn, term).unwrap();
        }
        let each = reader.postings["alpha"].0.size();
        reader.forget_least_read(2 * each);
        let mut held: Vec<&str> = reader.postings.keys().map(String::as_str).collect();
        held.sort_unstable();
        assert_eq!(held, ["alpha", "delta"], "beta and gamma were read longest ago");
        assert_eq!(reader.held, 2 * each);
    }
}
