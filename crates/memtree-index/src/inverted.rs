//! memtree's own inverted index, in the index file: every instance of
//! every term of the passages, coded as `instances.rs` codes them, so that
//! a search reads a word's postings as a few blobs. Through FTS5's
//! `fts5vocab` it read them an instance at a time, 264 ns each: 130 ms for
//! a common word at 100,000 documents.
//!
//! - `postings(term, shard, df, last, bytes)`: the passages up to
//!   `totals.folded`, one row per term and shard of rowids ([`SHARD_BITS`]).
//! - `fresh(id, bytes)`: one row per write since, its new passages'
//!   postings term by term. A write appends one row instead of rewriting a
//!   row per term (a hundred B-tree pages); once [`FOLD_PASSAGES`] wait
//!   there, a write folds them into `postings`, into the last shard's rows.
//! - `gone(rowid)`: deleted passages whose instances are still in those
//!   rows; reading skips them. Past a bound ([`GONE_LEAST`]), the shard
//!   holding the most is written again without them.
//!
//! Every change is made in the write's own transaction, so the index is
//! as durable and as shared between processes as the rest of the file.
//! [`Recent`] is what a process keeps of `fresh` and `gone` to read terms.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::instances::{Postings, join_coded, read_varint, varint};
use crate::postings::Change;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS postings(term TEXT NOT NULL, shard INTEGER NOT NULL, df INTEGER NOT NULL,
    last INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY(term, shard));
CREATE INDEX IF NOT EXISTS postings_shard ON postings(shard);
CREATE TABLE IF NOT EXISTS fresh(id INTEGER PRIMARY KEY, bytes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS gone(rowid INTEGER PRIMARY KEY);
";

/// A shard holds 8,192 rowids. Folding writes again the rows of the
/// shards the fresh passages fall in, the last one mostly; a term is read
/// as one row per shard it occurs in (13 at most at 100,000 documents).
const SHARD_BITS: u32 = 13;

/// Fresh passages are folded into `postings` once there are this many:
/// every process holds them in memory ([`Recent`]), read again whenever
/// another process writes.
const FOLD_PASSAGES: i64 = 2048;

/// Deleted passages left in `postings` before the shard holding most of
/// them is written again: this many, or a sixteenth of the passages if
/// more. Until then each costs a comparison when a term holding it is read.
const GONE_LEAST: i64 = 1024;

fn shard(rowid: u32) -> i64 {
    i64::from(rowid >> SHARD_BITS)
}

/// Rowids are kept in 32 bits, four billion passages written: `clear`
/// (a reindex) starts them again.
pub(crate) fn short(rowid: i64) -> rusqlite::Result<u32> {
    u32::try_from(rowid).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(0, rowid))
}

/// A `fresh` row: each term, then its postings.
fn encode(terms: &BTreeMap<String, Postings>) -> Vec<u8> {
    let mut out = Vec::new();
    for (term, postings) in terms {
        for part in [term.as_bytes(), postings.coded()] {
            varint(&mut out, part.len() as u64);
            out.extend_from_slice(part);
        }
    }
    out
}

/// The terms of a `fresh` row and their postings, as [`encode`] wrote them.
fn decode(bytes: &[u8]) -> impl Iterator<Item = (&str, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= bytes.len() {
            return None;
        }
        let mut part = || {
            let len = read_varint(bytes, &mut at) as usize;
            let part = bytes.get(at..at.checked_add(len)?)?;
            at += len;
            Some(part)
        };
        let term = std::str::from_utf8(part()?).ok()?;
        Some((term, part()?))
    })
}

/// Skips deleted passages while passages are read in rowid order.
struct Skipper<'a> {
    gone: &'a [u32],
}

impl Skipper<'_> {
    /// Whether passage `rowid` is not deleted; rowids come in order.
    fn keeps(&mut self, rowid: u32) -> bool {
        if self.gone.first().is_some_and(|g| *g < rowid) {
            self.gone = &self.gone[self.gone.partition_point(|g| *g < rowid)..];
        }
        self.gone.first() != Some(&rowid)
    }
}

/// The rowids of `gone` between `first` and `last`, in order.
fn gone_between(conn: &Connection, first: i64, last: i64) -> rusqlite::Result<Vec<u32>> {
    let mut stmt =
        conn.prepare_cached("SELECT rowid FROM gone WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid")?;
    let rows = stmt.query_map([first, last], |r| r.get(0))?;
    rows.collect()
}

/// The rowid up to which passages are folded into `postings`, the number
/// of passages waiting in `fresh`, and the number of passages.
fn totals(conn: &Connection) -> rusqlite::Result<(i64, i64, i64)> {
    conn.prepare_cached("SELECT folded, fresh, passages FROM totals")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
}

/// Records what a write changed, inside its transaction: its deleted
/// passages in `gone`, its new ones as a row of `fresh`; then folds or
/// purges if it is time. Returns whether it did: the rows of `postings`
/// are then written anew, and what processes keep of them read again.
pub fn record(tx: &Transaction<'_>, change: &Change) -> rusqlite::Result<bool> {
    if change.gone.is_empty() && change.added.is_empty() {
        return Ok(false);
    }
    let mut insert = tx.prepare_cached("INSERT OR IGNORE INTO gone(rowid) VALUES (?1)")?;
    for rowid in &change.gone {
        insert.execute([rowid])?;
    }
    if !change.added.is_empty() {
        tx.prepare_cached("INSERT INTO fresh(bytes) VALUES (?1)")?.execute([encode(&change.added)])?;
        tx.prepare_cached("UPDATE totals SET fresh = fresh + ?1")?.execute([change.passages_added as i64])?;
    }
    let (_, fresh, _) = totals(tx)?;
    let folds = fresh >= FOLD_PASSAGES;
    if folds {
        fold(tx)?;
    }
    // One shard at most: a write waits for one shard's rewriting.
    Ok(folds | (!change.gone.is_empty() && purge_due(tx, 1)?))
}

/// Folds every fresh passage and purges as many shards as are due: after
/// bulk changes, so that searches read `postings` alone and skip few
/// deleted passages.
pub fn compact(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    fold(tx)?;
    purge_due(tx, usize::MAX).map(drop)
}

/// Purges the shards holding the most deleted passages, up to `shards` of
/// them, while `postings` holds more than [`GONE_LEAST`] allows; whether
/// it purged any.
fn purge_due(tx: &Transaction<'_>, shards: usize) -> rusqlite::Result<bool> {
    let mut purged = 0;
    while purged < shards {
        let (folded, _, passages) = totals(tx)?;
        let gone: i64 = tx
            .prepare_cached("SELECT count(*) FROM gone WHERE rowid <= ?1")?
            .query_row([folded], |r| r.get(0))?;
        if gone <= GONE_LEAST.max(passages / 16) || !purge(tx)? {
            break;
        }
        purged += 1;
    }
    Ok(purged > 0)
}

/// Forgets every passage.
pub fn clear(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "DELETE FROM postings; DELETE FROM fresh; DELETE FROM gone; UPDATE totals SET folded = 0, fresh = 0;",
    )
}

/// Moves the passages of `fresh` into the rows of `postings`, leaving out
/// those deleted since they were written.
fn fold(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    let (folded, fresh, _) = totals(tx)?;
    let gone = Gone::after(folded, &gone_between(tx, folded + 1, i64::MAX)?);
    // Each term's parts are borrowed from the rows, read whole first: a
    // term owned per row and part took a third of a fold.
    let rows: Vec<Vec<u8>> = tx
        .prepare_cached("SELECT bytes FROM fresh ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut parts: HashMap<&str, Vec<&[u8]>> = HashMap::new();
    for row in &rows {
        for (term, coded) in decode(row) {
            parts.entry(term).or_default().push(coded);
        }
    }
    // In the order of the table's key, as the rows it makes go in.
    let mut parts: Vec<(&str, Vec<&[u8]>)> = parts.into_iter().collect();
    parts.sort_unstable_by_key(|(term, _)| *term);
    let mut find =
        tx.prepare_cached("SELECT rowid, df, last, bytes FROM postings WHERE term = ?1 AND shard = ?2")?;
    let mut update =
        tx.prepare_cached("UPDATE postings SET df = ?2, last = ?3, bytes = ?4 WHERE rowid = ?1")?;
    let mut insert =
        tx.prepare_cached("INSERT INTO postings(term, shard, df, last, bytes) VALUES (?1, ?2, ?3, ?4, ?5)")?;
    for (term, coded) in &parts {
        let mut added = Postings::default();
        for coded in coded {
            added.append_coded(coded, |rowid| !gone.holds(rowid));
        }
        let Some(first) = added.first() else { continue };
        let (first, last) = (shard(first), shard(added.last()));
        for at in first..=last {
            let part = if first == last {
                Cow::Borrowed(&added)
            } else {
                let mut part = Postings::default();
                part.append_coded(added.coded(), |rowid| shard(rowid) == at);
                Cow::Owned(part)
            };
            if part.df() == 0 {
                continue;
            }
            // A shard's row gains the passages after its last: the new
            // ones' bytes follow its own, which are not read through.
            let row = find.query_row(params![term, at], |r| {
                let bytes = join_coded(r.get_ref(3)?.as_blob()?, r.get(2)?, part.coded());
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, bytes))
            });
            match row.optional()? {
                Some((rowid, df, bytes)) => {
                    update.execute(params![rowid, df + part.df() as i64, part.last(), bytes])?
                }
                None => insert.execute(params![term, at, part.df() as i64, part.last(), part.coded()])?,
            };
        }
    }
    tx.execute("DELETE FROM gone WHERE rowid > ?1", [folded])?;
    tx.execute_batch(
        "DELETE FROM fresh;
         UPDATE totals SET fresh = 0, folded = coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'passages'), 0);",
    )?;
    tracing::debug!(
        passages = fresh,
        terms = parts.len(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "fresh passages folded into the postings"
    );
    Ok(())
}

/// The deleted passages among those after a rowid, one bit each: a fold
/// asks once per passage and term.
struct Gone {
    after: i64,
    bits: Vec<u64>,
}

impl Gone {
    fn after(after: i64, gone: &[u32]) -> Gone {
        let span = gone.last().map_or(0, |last| (i64::from(*last) - after) as usize);
        let mut bits = vec![0u64; span.div_ceil(64) + 1];
        for &rowid in gone {
            let at = (i64::from(rowid) - after) as usize;
            bits[at / 64] |= 1 << (at % 64);
        }
        Gone { after, bits }
    }

    fn holds(&self, rowid: u32) -> bool {
        let Ok(at) = usize::try_from(i64::from(rowid) - self.after) else { return false };
        self.bits.get(at / 64).is_some_and(|word| word >> (at % 64) & 1 == 1)
    }
}

/// Writes again, without its deleted passages, the shard that holds the
/// most of them; `false` if none does.
fn purge(tx: &Transaction<'_>) -> rusqlite::Result<bool> {
    let (folded, ..) = totals(tx)?;
    let most = tx
        .prepare_cached(
            "SELECT rowid >> ?1 FROM gone WHERE rowid <= ?2 GROUP BY 1 ORDER BY count(*) DESC LIMIT 1",
        )?
        .query_row(params![SHARD_BITS, folded], |r| r.get::<_, i64>(0))
        .optional()?;
    let Some(at) = most else { return Ok(false) };
    let (first, last) = (at << SHARD_BITS, (((at + 1) << SHARD_BITS) - 1).min(folded));
    let gone = gone_between(tx, first, last)?;
    let rows: Vec<(i64, Vec<u8>)> = tx
        .prepare_cached("SELECT rowid, bytes FROM postings WHERE shard = ?1")?
        .query_map([at], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut update =
        tx.prepare_cached("UPDATE postings SET df = ?2, last = ?3, bytes = ?4 WHERE rowid = ?1")?;
    let mut delete = tx.prepare_cached("DELETE FROM postings WHERE rowid = ?1")?;
    for (rowid, bytes) in rows {
        let mut kept = Postings::default();
        let mut skipper = Skipper { gone: &gone };
        kept.append_coded(&bytes, |passage| skipper.keeps(passage));
        if kept.df() == 0 {
            delete.execute([rowid])?;
        } else if kept.coded().len() != bytes.len() {
            update.execute(params![rowid, kept.df() as i64, kept.last(), kept.coded()])?;
        }
    }
    tx.execute("DELETE FROM gone WHERE rowid BETWEEN ?1 AND ?2", [first, last])?;
    Ok(true)
}

/// What a process keeps of the index's last writes to read its terms: the
/// passages not folded yet, by term, and the deleted ones. Read again
/// whole when another process writes; this process's own writes are
/// added as they are made.
#[derive(Default)]
pub struct Recent {
    /// Passages up to this rowid are read from `postings`, the later ones
    /// from `fresh`: a fold by another process after this was read leaves
    /// them in both.
    folded: u32,
    fresh: HashMap<String, Postings>,
    /// Deleted passages, in rowid order.
    gone: Vec<u32>,
}

impl Recent {
    /// What the index holds now of `fresh` and `gone`.
    pub fn load(conn: &Connection) -> rusqlite::Result<Recent> {
        let (folded, ..) = totals(conn)?;
        let mut recent =
            Recent { folded: short(folded)?, gone: gone_between(conn, 0, i64::MAX)?, ..Recent::default() };
        let mut rows = conn.prepare_cached("SELECT bytes FROM fresh ORDER BY id")?;
        let mut rows = rows.query([])?;
        while let Some(row) = rows.next()? {
            for (term, coded) in decode(row.get_ref(0)?.as_blob()?) {
                recent.add(term, coded);
            }
        }
        Ok(recent)
    }

    fn add(&mut self, term: &str, coded: &[u8]) {
        match self.fresh.get_mut(term) {
            Some(postings) => postings.append_coded(coded, |_| true),
            None => {
                let mut postings = Postings::default();
                postings.append_coded(coded, |_| true);
                self.fresh.insert(term.to_owned(), postings);
            }
        }
    }

    /// Adds this process's `change`, just written (and not folded).
    pub fn wrote(&mut self, change: &Change) -> rusqlite::Result<()> {
        for (term, postings) in &change.added {
            self.add(term, postings.coded());
        }
        for &rowid in &change.gone {
            let rowid = short(rowid)?;
            if let Err(at) = self.gone.binary_search(&rowid) {
                self.gone.insert(at, rowid);
            }
        }
        Ok(())
    }

    /// Every instance of `term` in the passages not deleted.
    pub fn read(&self, conn: &Connection, term: &str) -> rusqlite::Result<Postings> {
        let mut postings = Postings::default();
        let mut skipper = Skipper { gone: &self.gone };
        let mut rows = conn.prepare_cached("SELECT bytes FROM postings WHERE term = ?1 ORDER BY shard")?;
        let mut rows = rows.query([term])?;
        while let Some(row) = rows.next()? {
            let folded = self.folded;
            postings
                .append_coded(row.get_ref(0)?.as_blob()?, |rowid| rowid <= folded && skipper.keeps(rowid));
        }
        if let Some(fresh) = self.fresh.get(term) {
            postings.append_coded(fresh.coded(), |rowid| skipper.keeps(rowid));
        }
        postings.shrink_to_fit();
        Ok(postings)
    }

    /// The number of passages holding `term` when it can be told without
    /// reading where it occurs: when no deleted passage is left in
    /// `postings`, or when the word is in more than half of the
    /// `passages` even if every deleted passage held it (the count may
    /// then be a few too many, and the word weighs next to nothing).
    pub fn df(&self, conn: &Connection, term: &str, passages: usize) -> rusqlite::Result<Option<usize>> {
        let folded: i64 = conn
            .prepare_cached("SELECT coalesce(sum(df), 0) FROM postings WHERE term = ?1")?
            .query_row([term], |r| r.get(0))?;
        let mut skipper = Skipper { gone: &self.gone };
        let mut fresh = Postings::default();
        if let Some(postings) = self.fresh.get(term) {
            fresh.append_coded(postings.coded(), |rowid| skipper.keeps(rowid));
        }
        let df = folded as usize + fresh.df();
        let unpurged = self.gone.partition_point(|g| *g <= self.folded);
        Ok((unpurged == 0 || df.saturating_sub(unpurged) * 2 > passages).then_some(df))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use memtree_core::{DocId, IndexedDoc, SearchIndex, Stamp};

    use super::*;
    use crate::SqliteIndex;
    use crate::instances::tests::Rng;

    /// A new index, and a connection of its own to read it through.
    fn index() -> (tempfile::TempDir, SqliteIndex, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        let index = SqliteIndex::open(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        (dir, index, conn)
    }

    /// Words kept whole as terms (a digit: no stemming).
    const WORDS: u64 = 40;

    fn doc(id: &str, words: &[u64]) -> IndexedDoc {
        let body: Vec<String> = words.iter().map(|w| format!("w{w}")).collect();
        let text = format!("# T\n\n{}\n", body.join(" "));
        let stamp = Stamp { len: text.len() as u64, modified_ns: 1, tag: 0 };
        IndexedDoc::from_text(DocId::parse(id).unwrap(), &text, stamp)
    }

    /// The passages of each word and the word's positions in them, from
    /// the documents written and the rowids their passages were given.
    fn expected(
        conn: &Connection,
        living: &BTreeMap<String, Vec<u64>>,
    ) -> BTreeMap<u64, Vec<(u32, Vec<u32>)>> {
        let mut by_word: BTreeMap<u64, Vec<(u32, Vec<u32>)>> = BTreeMap::new();
        let mut stmt = conn.prepare("SELECT rowid, doc FROM passages ORDER BY rowid").unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, String>(1)?))).unwrap();
        for row in rows {
            let (rowid, id) = row.unwrap();
            let words = &living[&id];
            for word in words.iter().collect::<BTreeSet<_>>() {
                let at = (0..words.len()).filter(|&i| words[i] == *word).map(|i| i as u32).collect();
                by_word.entry(*word).or_default().push((rowid, at));
            }
        }
        by_word
    }

    /// Each passage of `postings` with the positions in its body.
    fn found(postings: &Postings) -> Vec<(u32, Vec<u32>)> {
        let mut cursor = postings.cursor();
        let mut out = Vec::new();
        while let Some(passage) = cursor.next_passage() {
            let body = passage.iter().filter(|i| i.column() == 4).map(|i| i.offset()).collect();
            out.push((passage[0].rowid() as u32, body));
        }
        out
    }

    /// Documents written, rewritten and removed, past the passages that
    /// make a fold and the deleted ones that make a purge: every word
    /// reads back where the living documents hold it, in this process
    /// and another, and its count is exact or, for a word in most
    /// passages, at most the deleted passages too many.
    #[test]
    fn folds_and_purges_keep_every_living_passage_and_no_deleted_one() {
        let (_dir, index, conn) = index();
        let mut rng = Rng(3);
        let mut living: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        let (mut folds, mut purges, mut before) = (0, 0, (0, 0));
        for round in 0..24 {
            let mut batch: BTreeMap<String, Vec<u64>> = BTreeMap::new();
            for _ in 0..200 {
                let words: Vec<u64> =
                    (0..1 + rng.below(6)).map(|_| rng.below(WORDS) % (1 + rng.below(WORDS))).collect();
                batch.insert(format!("d{}", rng.below(1500)), words);
            }
            let docs: Vec<IndexedDoc> = batch.iter().map(|(id, words)| doc(id, words)).collect();
            index.replace(&docs, &[], 0).unwrap();
            living.extend(batch);
            let gone: Vec<String> = living.keys().filter(|_| rng.below(12) == 0).cloned().collect();
            index
                .replace(&[], &gone.iter().map(|id| DocId::parse(id).unwrap()).collect::<Vec<_>>(), 0)
                .unwrap();
            for id in &gone {
                living.remove(id);
            }
            let (folded, _, passages) = totals(&conn).unwrap();
            let unpurged: i64 = conn
                .query_row("SELECT count(*) FROM gone WHERE rowid <= ?1", [folded], |r| r.get(0))
                .unwrap();
            folds += i32::from(folded > before.0);
            purges += i32::from(unpurged < before.1);
            before = (folded, unpurged);
            let recent = Recent::load(&conn).unwrap();
            for (word, want) in expected(&conn, &living) {
                let term = format!("w{word}");
                let postings = recent.read(&conn, &term).unwrap();
                assert_eq!(found(&postings), want, "round {round}, {term}");
                let df = recent.df(&conn, &term, passages as usize).unwrap();
                assert!(
                    df.is_none_or(|df| df == want.len()
                        || (df >= want.len() && want.len() * 2 > passages as usize - unpurged as usize)),
                    "round {round}, {term}: {df:?} for {}",
                    want.len()
                );
            }
        }
        assert!(folds >= 2 && purges >= 1, "{folds} folds, {purges} purges");
        // Compacting folds every fresh passage and leaves no more deleted
        // ones than are due.
        index.optimize().unwrap();
        let (folded, fresh, passages) = totals(&conn).unwrap();
        let unpurged: i64 =
            conn.query_row("SELECT count(*) FROM gone WHERE rowid <= ?1", [folded], |r| r.get(0)).unwrap();
        assert_eq!(fresh, 0);
        assert!(unpurged <= GONE_LEAST.max(passages / 16), "{unpurged} deleted passages left");
        let recent = Recent::load(&conn).unwrap();
        for (word, want) in expected(&conn, &living) {
            assert_eq!(found(&recent.read(&conn, &format!("w{word}")).unwrap()), want, "compacted, w{word}");
        }
    }

    /// What a process read of `fresh` stays true when another process
    /// folds those passages into `postings` before it reads a term: each
    /// passage is read once, and the later ones not at all.
    #[test]
    fn a_fold_after_reading_the_fresh_passages_reads_each_passage_once() {
        let (_dir, index, conn) = index();
        let batch = |from: usize, count: usize| -> Vec<IndexedDoc> {
            (from..from + count).map(|i| doc(&format!("d{i}"), &[1, i as u64 % 3])).collect()
        };
        index.replace(&batch(0, 2500), &[], 0).unwrap();
        index.replace(&batch(2500, 100), &[], 0).unwrap();
        let recent = Recent::load(&conn).unwrap();
        let living: BTreeMap<String, Vec<u64>> =
            (0..2600).map(|i| (format!("d{i}"), vec![1, i as u64 % 3])).collect();
        let want = expected(&conn, &living);
        index.replace(&batch(2600, 2500), &[], 0).unwrap();
        assert!(totals(&conn).unwrap().0 > i64::from(recent.folded), "another fold");
        for word in [1, 2] {
            assert_eq!(found(&recent.read(&conn, &format!("w{word}")).unwrap()), want[&word], "w{word}");
        }
    }

    /// A fold whose passages straddle two shards puts each in its own
    /// shard's row, after the passages the row held, and leaves out those
    /// deleted before it: every word reads back where the living
    /// documents hold it, in this process and a new one.
    #[test]
    fn a_fold_across_two_shards_keeps_each_passage_once_where_it_belongs() {
        let (_dir, index, conn) = index();
        let words = |i: usize| vec![1, 2 + i as u64 % 5, 7 + i as u64 % 11];
        let batch = |ids: std::ops::Range<usize>| -> Vec<IndexedDoc> {
            ids.map(|i| doc(&format!("d{i}"), &words(i))).collect()
        };
        index.replace(&batch(0..7000), &[], 0).unwrap();
        let first_fold = totals(&conn).unwrap().0;
        assert!((7000..1 << SHARD_BITS).contains(&first_fold), "{first_fold}");
        // Passages on both sides of the shard's end, some deleted before
        // the fold, some of them in the shard already folded.
        let gone: Vec<DocId> =
            (6900..7100).step_by(3).map(|i| DocId::parse(&format!("d{i}")).unwrap()).collect();
        index.replace(&batch(7000..8500), &[], 0).unwrap();
        index.replace(&[], &gone, 0).unwrap();
        index.replace(&batch(8500..9600), &[], 0).unwrap();
        let (folded, fresh, _) = totals(&conn).unwrap();
        assert!(folded > 1 << SHARD_BITS && fresh == 0, "a second fold into shard 1: {folded}, {fresh}");
        let shards: Vec<i64> = conn
            .prepare("SELECT shard FROM postings WHERE term = 'w1' ORDER BY shard")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(shards, [0, 1]);
        let living: BTreeMap<String, Vec<u64>> = (0..9600)
            .filter(|i| !(6900..7100).contains(i) || (i - 6900) % 3 != 0)
            .map(|i| (format!("d{i}"), words(i)))
            .collect();
        let recent = Recent::load(&conn).unwrap();
        for (word, want) in expected(&conn, &living) {
            let term = format!("w{word}");
            assert_eq!(found(&recent.read(&conn, &term).unwrap()), want, "{term}");
            let passages =
                conn.query_row("SELECT count(*) FROM passages", [], |r| r.get::<_, i64>(0)).unwrap() as usize;
            // Exact, or for a word in most passages at most the 34
            // deleted ones left in shard 0's rows too many.
            let df = recent.df(&conn, &term, passages).unwrap();
            assert!(
                df.is_none_or(|df| df == want.len() || (df <= want.len() + 34 && want.len() * 2 > passages)),
                "{term}: {df:?} for {}",
                want.len()
            );
        }
    }
}
