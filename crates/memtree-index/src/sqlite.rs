//! `SqliteIndex`: the index in one SQLite file, `.memtree/index.sqlite`.
//!
//! memtree's own inverted index of the passages' terms (`inverted.rs`;
//! BM25 in `scoring.rs`, stemmed words, CJK as bigrams), beside plain
//! tables for the passages, document metadata, links (for the path
//! from root and subtree filters) and pack usage; the typo vocabulary is a
//! table of the words documents are spelt with, as written, each with the
//! number of documents that use it, so a typo is matched against real words
//! (`databse` → `database`), not Porter stems (`databas`). WAL
//! and a busy timeout let several memtree processes share the file; it is
//! derived data, so `synchronous=NORMAL` is enough.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use memtree_core::front_matter::{Confidence, Scope, Status};
use memtree_core::links::parse_links;
use memtree_core::{
    DocId, EmbeddingProgress, Hit, IndexError, IndexStats, IndexedDoc, Match, Matched, QueryTerm, Queued,
    SearchIndex, SearchRequest, Signals, Stamp, StoreLock, Usage,
};
use rusqlite::{Connection, OptionalExtension, params};

use crate::dense::{Encoder, VectorCache, chunk_key, chunks, dense_weight, fuse, to_bytes};
use crate::documents::{Document, Documents};
use crate::instances::Postings;
use crate::inverted;
use crate::postings::{Change, LINKS, MIXED_WORDS, Passage, Reader, counters};
use crate::proximity::{Candidate, PROXIMITY_WORDS, Ranking, read_where, settle, weighed};
use crate::scoring::{Scores, Tiers, closeness, rank};
use crate::terms::{Stems, term};
use crate::text::{Matcher, cjk_bigrams, coverage, edit_distance, excerpt, query_terms, words};

/// How long indexing that let go of the writing lock for the writers of
/// other processes waits for them to take it.
const LET_IN_AT_MOST: Duration = Duration::from_millis(2);

const SCHEMA_VERSION: &str = "14";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
    id TEXT PRIMARY KEY, len INTEGER NOT NULL, mtime INTEGER NOT NULL, tag INTEGER NOT NULL, hash INTEGER NOT NULL,
    title TEXT NOT NULL, summary TEXT, tags TEXT NOT NULL, scope TEXT, priority REAL, confidence TEXT,
    status TEXT, expires TEXT);
CREATE TABLE IF NOT EXISTS links(parent TEXT NOT NULL, ord INTEGER NOT NULL, child TEXT NOT NULL,
    PRIMARY KEY(parent, ord));
CREATE INDEX IF NOT EXISTS links_child ON links(child);
CREATE TABLE IF NOT EXISTS passages(rowid INTEGER PRIMARY KEY AUTOINCREMENT, doc TEXT NOT NULL,
    heading_path TEXT NOT NULL, text TEXT NOT NULL, line INTEGER NOT NULL, after TEXT NOT NULL, tokens INTEGER NOT NULL,
    docrow INTEGER NOT NULL, flags INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS passages_doc ON passages(doc);
CREATE TABLE IF NOT EXISTS totals(id INTEGER PRIMARY KEY CHECK (id = 0), generation INTEGER NOT NULL,
    passages INTEGER NOT NULL, tokens INTEGER NOT NULL, folded INTEGER NOT NULL, fresh INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS spellings(word TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage(id TEXT PRIMARY KEY, count INTEGER NOT NULL, last_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(passage INTEGER NOT NULL, ord INTEGER NOT NULL, key INTEGER NOT NULL,
    PRIMARY KEY(passage, ord)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunks_key ON chunks(key);
CREATE TABLE IF NOT EXISTS vectors(rowid INTEGER PRIMARY KEY, model TEXT NOT NULL, key INTEGER NOT NULL,
    vector BLOB NOT NULL, UNIQUE(model, key));
CREATE TABLE IF NOT EXISTS queue(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL);
";

pub struct SqliteIndex {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Held shared by writers of any process while they wait for
    /// `writing` (`index.sqlite-waiting`): indexing, which may hold it for
    /// many documents, lets go between two of them when one does.
    waiting: Option<std::fs::File>,
    /// The lock every memtree process takes for a write transaction
    /// (`index.sqlite-writing`; `None` where it cannot be made, a read-only
    /// store): waiting for it, a writer wakes as the transaction before
    /// ends, where SQLite's busy handler would sleep 1, 2, 5, 10 ms in
    /// turn, each holding up the writer's store lock and so every writer.
    writing: Option<std::fs::File>,
    /// What searches read of the full-text index; locked while `conn` is.
    reader: Mutex<Reader>,
    documents: Mutex<Documents>,
    /// The terms of the words written so far; locked while `conn` is.
    stems: Mutex<Stems>,
    /// The sentence encoder of dense retrieval, and its vectors in memory.
    /// Set once, possibly after opening: a server loads the model in the
    /// background and searches by BM25 alone meanwhile.
    dense: OnceLock<(Arc<dyn Encoder>, Mutex<VectorCache>)>,
}

/// The index error of what failed at `path`, which keeps the error beneath
/// as its source.
fn backend<E>(path: &Path) -> impl Fn(E) -> IndexError + '_
where
    E: std::error::Error + Send + Sync + 'static,
{
    move |e| IndexError::Backend { location: path.display().to_string(), source: Box::new(e) }
}

impl SqliteIndex {
    /// Opens (creating if needed) the index at `path`. An index of another
    /// schema version is emptied: it is derived data, rebuilt by
    /// reconciling. So is a damaged one (garbage in the file, a folder in
    /// its place): it is set aside as `index.sqlite.damaged` and a new one
    /// made, with a warning. Where the index cannot be written (a read-only
    /// folder, a full disk) it is opened read-only, so searches still work.
    pub fn open(path: impl Into<PathBuf>) -> Result<SqliteIndex, IndexError> {
        let path = path.into();
        let conn = match open_writable(&path) {
            Ok(conn) => conn,
            Err(error) if is_damaged(&path, &error) => repair(&path, &error)?,
            Err(error) => match open_read_only(&path) {
                Ok(conn) => {
                    tracing::warn!(%error, path = %path.display(), "the index cannot be written: searching it read-only");
                    conn
                }
                Err(_) => return Err(backend(&path)(error)),
            },
        };
        let writing = lock_file(&path.with_extension("sqlite-writing"));
        Ok(SqliteIndex {
            conn: Mutex::new(conn),
            waiting: lock_file(&path.with_extension("sqlite-waiting")),
            writing,
            reader: Mutex::default(),
            documents: Mutex::default(),
            stems: Mutex::default(),
            path,
            dense: OnceLock::new(),
        })
    }

    /// Adds dense retrieval by `encoder`'s vectors to BM25: passages it has
    /// embedded are searched by meaning too (see [`crate::dense`]). Passages
    /// are embedded by [`SqliteIndex::embed_pending`], which a server calls
    /// in the background; until then they are found by BM25 alone.
    pub fn with_encoder(self, encoder: Arc<dyn Encoder>) -> SqliteIndex {
        self.set_encoder(encoder);
        self
    }

    /// [`SqliteIndex::with_encoder`] on an index in use; `false` (and
    /// nothing changes) when it has one already.
    pub fn set_encoder(&self, encoder: Arc<dyn Encoder>) -> bool {
        self.dense.set((encoder, Mutex::new(VectorCache::default()))).is_ok()
    }

    pub fn has_encoder(&self) -> bool {
        self.dense.get().is_some()
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the writing lock; while another process holds it, says so on
    /// the waiting file, so that its indexing lets go between two
    /// documents ([`SqliteIndex::another_waits`]).
    fn lock_writing(&self) -> Option<Writing<'_>> {
        let file = self.writing.as_ref()?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let said = self.waiting.as_ref().filter(|waiting| waiting.lock_shared().is_ok());
                let locked = file.lock();
                if let Some(waiting) = said {
                    let _ = waiting.unlock();
                }
                locked.ok()?;
            }
            Err(std::fs::TryLockError::Error(_)) => return None,
        }
        Some(Writing(file))
    }

    /// Whether a writer of another process waits for the writing lock.
    fn another_waits(&self) -> bool {
        self.waiting.as_ref().is_some_and(|waiting| match waiting.try_lock() {
            Ok(()) => {
                let _ = waiting.unlock();
                false
            }
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(_)) => false,
        })
    }

    /// Lets the writers of other processes waiting for the writing lock
    /// have it before this process takes it again: once free, it goes to
    /// whichever asks first, mostly the process that just let go of it.
    fn let_others_in(&self) {
        let until = Instant::now() + LET_IN_AT_MOST;
        while self.another_waits() && Instant::now() < until {
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Indexes the first of `docs` and drops the `gone`, in `tx`: all of
    /// them, or as many as go before a writer of another process waits
    /// for the writing lock, at least one. A write of this process waits
    /// for the transaction: it comes rarely, a longer wait once rather
    /// than a short one at every other write of a burst. What it returns
    /// is how many of `docs` it wrote.
    fn replace_some(
        &self,
        tx: &rusqlite::Transaction<'_>,
        docs: &[Prepared<'_>],
        gone: &[DocId],
        read_after: i64,
    ) -> rusqlite::Result<(usize, Change)> {
        let newer = queued_after(tx, read_after)?;
        let mut spelt = Spellings::default();
        let mut change = Change::default();
        let gone_ids: Vec<&str> = gone.iter().map(DocId::as_str).collect();
        delete_docs(tx, &gone_ids, &mut spelt, &mut change.gone)?;
        // A document's links: the newer write's if one was queued since,
        // else its text's (`write_links` below), none if gone.
        for id in gone.iter().filter(|id| !newer.contains(id.as_str())) {
            write_links(tx, id, &[])?;
        }
        let mut doc_stmt = tx.prepare_cached(
            "INSERT INTO docs(id, len, mtime, tag, hash, title, summary, tags, scope, priority, confidence, status, expires)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?;
        let mut passage_stmt =
            tx.prepare_cached("INSERT INTO passages(doc, heading_path, text, line, after, tokens, docrow, flags) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
        let mut chunk_stmt =
            tx.prepare_cached("INSERT INTO chunks(passage, ord, key) VALUES (?1, ?2, ?3)")?;
        let (mut passages, mut tokens) = (0i64, 0i64);
        let mut written = 0;
        for Prepared { doc, passages: prepared, words } in docs {
            if written > 0 && self.another_waits() {
                break;
            }
            delete_docs(tx, &[doc.id.as_str()], &mut spelt, &mut change.gone)?;
            doc_stmt.execute(params![
                doc.id.as_str(),
                doc.stamp.len as i64,
                doc.stamp.modified_ns as i64,
                doc.stamp.tag as i64,
                doc.hash as i64,
                doc.title,
                doc.front.summary,
                doc.front.tags.join(" "),
                scope_str(doc.front.scope),
                doc.front.priority,
                doc.front.confidence.map(|c| if c == Confidence::Tentative { "tentative" } else { "stable" }),
                doc.front.status.map(Status::as_str),
                doc.front.expires,
            ])?;
            let docrow = tx.last_insert_rowid();
            if !newer.contains(doc.id.as_str()) {
                write_links(tx, &doc.id, &doc.links)?;
            }
            for (passage, ready) in doc.passages.iter().zip(prepared) {
                passage_stmt.execute(params![
                    doc.id.as_str(),
                    ready.heading_path,
                    passage.text,
                    passage.line as i64,
                    passage.after,
                    ready.length as i64,
                    docrow,
                    ready.flags,
                ])?;
                let rowid = tx.last_insert_rowid();
                (passages, tokens) = (passages + 1, tokens + ready.length as i64);
                change.add(rowid, &ready.columns)?;
                for (ord, key) in ready.chunk_keys.iter().enumerate() {
                    chunk_stmt.execute(params![rowid, ord as i64, key])?;
                }
            }
            spelt.add(words, 1);
            written += 1;
        }
        count_passages(tx, passages, tokens)?;
        spelt.write(tx)?;
        Ok((written, change))
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> IndexError + '_ {
        backend(&self.path)
    }

    /// Runs `write` in a write transaction; what it returns it changed of
    /// the full-text index is recorded in the inverted index in the same
    /// transaction, then applied to the postings searches keep.
    fn write<T>(
        &self,
        write: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<(T, Change)>,
    ) -> Result<T, IndexError> {
        let mut conn = self.conn();
        // One descriptor, used under `conn`'s mutex only.
        let _writing = self.lock_writing();
        let tx = write_transaction(&mut conn).map_err(self.err())?;
        let before = counters(&tx).map_err(self.err())?;
        let (value, mut change) = write(&tx).map_err(self.err())?;
        change.rewritten |= inverted::record(&tx, &change).map_err(self.err())?;
        tx.commit().map_err(self.err())?;
        let after = counters(&conn).map_err(self.err())?;
        self.reader.lock().unwrap_or_else(|e| e.into_inner()).wrote(before, after, change);
        Ok(value)
    }
}

/// A lock file beside the index, opened (made if need be).
fn open_lock_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::options().create(true).truncate(false).write(true).open(path)
}

/// A lock file beside the index; `None` where it cannot be made (a
/// read-only store, which no process writes).
fn lock_file(path: &Path) -> Option<std::fs::File> {
    open_lock_file(path).ok()
}

/// The lock file at `path`, locked (exclusive): let go when it is closed.
fn locked(path: &Path) -> Result<std::fs::File, IndexError> {
    open_lock_file(path).and_then(|file| file.lock().map(|()| file)).map_err(backend(path))
}

/// The index's writing lock, held: let go when dropped.
struct Writing<'a>(&'a std::fs::File);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// A transaction that takes the write lock at once (`BEGIN IMMEDIATE`). A
/// deferred one reads first and takes the lock at its first write; if
/// another process committed in between, SQLite refuses the upgrade at
/// once (`SQLITE_BUSY_SNAPSHOT`, "database is locked") without waiting,
/// which several memtree processes writing one index would meet.
fn write_transaction(conn: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

/// Opens the index for reading and writing, creating or upgrading it.
fn open_writable(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    stable_plans(&conn)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // Nothing syncs the making of the file (WAL mode, then the schema):
    // it is derived data, and a file a crash of the machine cut short is
    // found at the next open, damaged (set aside) or without its schema
    // (made again), and built from the documents. Synced, it cost six
    // fsyncs before a new store's first answer. Once the schema is in place,
    // WAL's checkpoints sync the log before the file, which keeps the
    // file whole.
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    let version = |conn: &Connection| -> Option<String> {
        conn.query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| r.get(0)).ok()
    };
    // Opening an up-to-date index writes nothing, so that a server's
    // start never waits for another process's write transaction. The
    // version is read again under the write lock: two processes opening
    // a new store at once must not drop each other's tables.
    if version(&conn).as_deref() != Some(SCHEMA_VERSION) {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        if version(&conn).as_deref() != Some(SCHEMA_VERSION) {
            conn.execute_batch(
                "DROP TABLE IF EXISTS vocab; DROP TABLE IF EXISTS words_vocab; DROP TABLE IF EXISTS words;
                 DROP TABLE IF EXISTS fts_instances; DROP TABLE IF EXISTS fts_rows; DROP TABLE IF EXISTS totals;
                 DROP TABLE IF EXISTS spellings; DROP TABLE IF EXISTS fts; DROP TABLE IF EXISTS docs;
                 DROP TABLE IF EXISTS links; DROP TABLE IF EXISTS passages; DROP TABLE IF EXISTS chunks;
                 DROP TABLE IF EXISTS queue; DROP TABLE IF EXISTS postings; DROP TABLE IF EXISTS fresh;
                 DROP TABLE IF EXISTS gone;",
            )?;
            conn.execute_batch(SCHEMA)?;
            conn.execute_batch(inverted::SCHEMA)?;
            conn.execute("INSERT INTO totals VALUES (0, ?1, 0, 0, 0, 0)", [new_generation()])?;
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?1)", [SCHEMA_VERSION])?;
        }
        conn.execute_batch("COMMIT")?;
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // SQLite's own page cache stays at its default, about 2 MiB: searches
    // read postings from memtree's compact copy (`postings`), so a bigger
    // one held the pages of the postings' first reads, 8 MiB at 10k
    // documents, for no later gain (BENCHMARKS, "Performance, sixth part").
    Ok(conn)
}

/// Keeps each statement's query plan whatever values are bound to it.
/// Otherwise SQLite plans some statements (`rowid = ?1`) for the value
/// bound, and prepares them again the first time they run after their
/// bindings were cleared: once for every search, about a twentieth of its
/// time. memtree's statements have one good plan. And keeps them all
/// prepared: rusqlite's cache holds 16 by default, fewer than a write and
/// a search use, so each indexing prepared again those it had let go
/// (a tenth of its time in SQLite).
fn stable_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_prepared_statement_cache_capacity(PREPARED_STATEMENTS);
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map(drop)
}

/// More than the statements memtree prepares through the cache (about 50).
const PREPARED_STATEMENTS: usize = 96;

/// A number no earlier index at this path had: the lengths a process
/// keeps in memory (`Lengths`) belong to one generation of the index.
fn new_generation() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    now.as_nanos() as i64
}

/// Opens the index read-only, as it is (no schema change, no WAL file
/// created): for a store on a read-only or full disk.
fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    use rusqlite::OpenFlags;
    let escaped = path.display().to_string().replace('%', "%25").replace('?', "%3f").replace('#', "%23");
    let uri = format!("file:{escaped}?immutable=1");
    let conn =
        Connection::open_with_flags(&uri, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI)?;
    stable_plans(&conn)?;
    conn.query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| r.get::<_, String>(0)).and_then(
        |version| {
            if version == SCHEMA_VERSION { Ok(conn) } else { Err(rusqlite::Error::InvalidQuery) }
        },
    )
}

/// Whether opening failed because the file is not a sound index (so a new
/// one may replace it), rather than for want of room or rights.
fn is_damaged(path: &Path, error: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    let not_a_file = std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file());
    not_a_file || matches!(error.sqlite_error_code(), Some(NotADatabase | DatabaseCorrupt))
}

/// Sets a damaged index aside and makes a new one, holding a lock so that
/// two processes never set aside each other's new index.
fn repair(path: &Path, error: &rusqlite::Error) -> Result<Connection, IndexError> {
    let err = backend(path);
    let lock = locked(&path.with_extension("lock"))?;
    // Another process may have repaired it while this one waited.
    let conn = match open_writable(path) {
        Ok(conn) => conn,
        Err(again) if is_damaged(path, &again) => {
            tracing::warn!(%error, path = %path.display(), "the search index is damaged: set aside, and built again from the documents");
            memtree_store::set_aside(path).map_err(backend(path))?;
            // What the damaged file's log and shared memory hold is not
            // the new file's.
            for extension in ["sqlite-wal", "sqlite-shm"] {
                let _ = std::fs::remove_file(path.with_extension(extension));
            }
            open_writable(path).map_err(&err)?
        }
        Err(again) => return Err(err(again)),
    };
    drop(lock);
    Ok(conn)
}

fn scope_str(scope: Option<Scope>) -> Option<&'static str> {
    scope.map(Scope::as_str)
}

/// Deletes every row of `ids` from the index tables, inside `tx`; their
/// words are counted out of `spelt`, their passages' rowids added to `gone`.
fn delete_docs(
    tx: &rusqlite::Transaction<'_>,
    ids: &[&str],
    spelt: &mut Spellings,
    gone: &mut Vec<i64>,
) -> rusqlite::Result<()> {
    let mut rows =
        tx.prepare_cached("SELECT rowid, heading_path, text, tokens FROM passages WHERE doc = ?1")?;
    let mut doc = tx.prepare_cached("SELECT title, coalesce(summary, ''), tags FROM docs WHERE id = ?1")?;
    let mut del_chunks = tx.prepare_cached("DELETE FROM chunks WHERE passage = ?1")?;
    let (mut passages, mut tokens) = (0i64, 0i64);
    for id in ids {
        // Its words were counted in with its row in `docs`: passages
        // without one (no write leaves them) are deleted, counting nothing.
        let indexed = doc
            .query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))
            .optional()?;
        let mut text = match &indexed {
            Some((title, summary, tags)) => format!("{id} {title} {summary} {tags}"),
            None => String::new(),
        };
        let rows = rows.query_map([id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?))
        })?;
        for passage in rows {
            let (rowid, heading_path, body, length) = passage?;
            passages += 1;
            tokens += length;
            gone.push(rowid);
            del_chunks.execute([rowid])?;
            let headings: Vec<String> = serde_json::from_str(&heading_path).unwrap_or_default();
            text.extend([" ", &headings.join(" "), " ", &body]);
        }
        if indexed.is_some() {
            spelt.count(&text, -1);
        }
        tx.execute("DELETE FROM passages WHERE doc = ?1", [id])?;
        tx.execute("DELETE FROM docs WHERE id = ?1", [id])?;
    }
    count_passages(tx, -passages, -tokens)
}

/// The documents queued after queue position `end`: their links in the
/// table are from writes newer than a text read before they were queued.
fn queued_after(tx: &rusqlite::Transaction<'_>, end: i64) -> rusqlite::Result<HashSet<String>> {
    tx.prepare_cached("SELECT id FROM queue WHERE seq > ?1")?.query_map([end], |r| r.get(0))?.collect()
}

/// Makes `links` the links of `parent`, in order.
fn write_links(tx: &rusqlite::Transaction<'_>, parent: &DocId, links: &[DocId]) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM links WHERE parent = ?1")?.execute([parent.as_str()])?;
    let mut insert = tx.prepare_cached("INSERT INTO links(parent, ord, child) VALUES (?1, ?2, ?3)")?;
    for (ord, child) in links.iter().enumerate() {
        insert.execute(params![parent.as_str(), ord as i64, child.as_str()])?;
    }
    Ok(())
}

/// Adds to the number of passages and of their terms.
fn count_passages(tx: &rusqlite::Transaction<'_>, passages: i64, tokens: i64) -> rusqlite::Result<()> {
    if passages != 0 {
        tx.prepare_cached("UPDATE totals SET passages = passages + ?1, tokens = tokens + ?2")?
            .execute(params![passages, tokens])?;
    }
    Ok(())
}

/// The distinct words of `text` as the typo vocabulary keeps them: split
/// as query words are, lower-cased, CJK left to bigrams.
fn spelling_words(text: &str) -> HashSet<String> {
    words(text).filter(|w| !w.chars().any(crate::text::is_cjk)).map(str::to_lowercase).collect()
}

/// Changes to the typo vocabulary, the number of documents spelt with
/// each word, gathered over one write and applied at its end: a rewritten
/// document's unchanged words cancel out, and a batch writes each word once.
#[derive(Default)]
struct Spellings(HashMap<String, i64>);

impl Spellings {
    /// Counts a document spelt with the words of `text` in (`by` 1) or out
    /// (`by` -1), each distinct word once. Words are split as query words
    /// are, so the text of a document counted in and then out leaves no trace.
    fn count(&mut self, text: &str, by: i64) {
        self.add(&spelling_words(text), by);
    }

    /// Counts a document spelt with `words` in or out.
    fn add(&mut self, words: &HashSet<String>, by: i64) {
        for word in words {
            match self.0.get_mut(word) {
                Some(count) => *count += by,
                None => drop(self.0.insert(word.clone(), by)),
            }
        }
    }

    /// Applies the changes; a word no document uses any more leaves.
    fn write(self, tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
        let mut count = tx.prepare_cached(
            "INSERT INTO spellings(word, docs) VALUES (?1, ?2) ON CONFLICT(word) DO UPDATE SET docs = docs + ?2",
        )?;
        let mut unused = tx.prepare_cached("DELETE FROM spellings WHERE word = ?1 AND docs <= 0")?;
        // In order, so that neighbouring words share the B-tree pages just read.
        let mut changes: Vec<(String, i64)> = self.0.into_iter().filter(|(_, by)| *by != 0).collect();
        changes.sort_unstable();
        for (word, by) in changes {
            count.execute(params![word, by])?;
            if by < 0 {
                unused.execute([word])?;
            }
        }
        Ok(())
    }
}

/// What indexing a document computes from its text alone, before the
/// write lock is taken: each passage's columns of terms, and the words
/// the document is spelt with.
struct Prepared<'a> {
    doc: &'a IndexedDoc,
    passages: Vec<PreparedPassage>,
    words: HashSet<String>,
}

struct PreparedPassage {
    /// The columns' terms: id, title, headings, meta, text, CJK bigrams.
    columns: [String; 6],
    /// How many terms the columns hold.
    length: usize,
    heading_path: String,
    flags: u8,
    /// The keys of the chunks dense retrieval embeds it as.
    chunk_keys: Vec<i64>,
}

impl Prepared<'_> {
    fn new<'a>(doc: &'a IndexedDoc, stems: &mut Stems) -> Prepared<'a> {
        let meta = format!("{} {}", doc.front.summary.as_deref().unwrap_or(""), doc.front.tags.join(" "));
        let (id_terms, title_terms, meta_terms) =
            (stems.column(&id_text(&doc.id)), stems.column(&doc.title), stems.column(&meta));
        let passages = doc
            .passages
            .iter()
            .map(|passage| {
                let headings = passage.heading_path.join(" › ");
                let cjk = cjk_bigrams(&format!("{} {} {} {}", doc.title, headings, meta, passage.text));
                let columns = [
                    id_terms.clone(),
                    title_terms.clone(),
                    stems.column(&headings),
                    meta_terms.clone(),
                    stems.column(&passage.text),
                    cjk,
                ];
                PreparedPassage {
                    length: columns.iter().map(|c| c.split(' ').filter(|t| !t.is_empty()).count()).sum(),
                    columns,
                    heading_path: serde_json::to_string(&passage.heading_path).expect("strings serialise"),
                    flags: passage_flags(&passage.text),
                    chunk_keys: chunks(&passage.heading_path, &passage.text)
                        .iter()
                        .map(|c| chunk_key(c))
                        .collect(),
                }
            })
            .collect();
        // The document's words as written, for typos; `delete_docs`
        // takes them out from the same fields.
        let mut words = format!("{} {} {meta}", doc.id.as_str(), doc.title);
        for passage in &doc.passages {
            words.extend([" ", &passage.heading_path.join(" "), " ", &passage.text]);
        }
        Prepared { doc, passages, words: spelling_words(&words) }
    }
}

/// Words of an id as text: `projects/silica_notes` → `projects silica notes`.
fn id_text(id: &DocId) -> String {
    id.as_str().replace(['/', '_', '-'], " ")
}

impl SearchIndex for SqliteIndex {
    fn replace(&self, docs: &[IndexedDoc], gone: &[DocId], read_after: i64) -> Result<(), IndexError> {
        if docs.is_empty() && gone.is_empty() {
            return Ok(());
        }
        // Before the write lock: every process's writes wait while it is
        // held, and what a text alone gives need not keep them waiting.
        let prepared: Vec<Prepared<'_>> = {
            let mut stems = self.stems.lock().unwrap_or_else(|e| e.into_inner());
            docs.iter().map(|doc| Prepared::new(doc, &mut stems)).collect()
        };
        let (mut rest, mut gone) = (&prepared[..], gone);
        loop {
            let written = self.write(|tx| self.replace_some(tx, rest, gone, read_after))?;
            (rest, gone) = (&rest[written..], &[]);
            if rest.is_empty() {
                return Ok(());
            }
            self.let_others_in();
        }
    }

    fn queue_end(&self) -> Result<i64, IndexError> {
        self.conn()
            .query_row(
                "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'queue'), 0)",
                [],
                |r| r.get(0),
            )
            .map_err(self.err())
    }

    fn paths(&self, ids: &[&DocId]) -> Result<Vec<Vec<DocId>>, IndexError> {
        let conn = self.conn();
        let mut documents = self.documents.lock().unwrap_or_else(|e| e.into_inner());
        // One read transaction: each statement on its own takes the file's
        // shared lock again.
        let snapshot = conn.unchecked_transaction().map_err(self.err())?;
        documents.check(&snapshot).map_err(self.err())?;
        let paths = ids.iter().map(|id| path_to(&snapshot, &mut documents, id)).collect::<Result<_, _>>();
        let paths = paths.map_err(self.err())?;
        snapshot.commit().map_err(self.err())?;
        Ok(paths)
    }

    fn parents(&self, id: &DocId) -> Result<Vec<DocId>, IndexError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare_cached("SELECT DISTINCT parent FROM links WHERE child = ?1").map_err(self.err())?;
        let parents: Vec<String> =
            stmt.query_map([id.as_str()], |r| r.get(0)).and_then(Iterator::collect).map_err(self.err())?;
        Ok(parents.iter().filter_map(|p| DocId::parse(p).ok()).collect())
    }

    fn stamp(&self, id: &DocId) -> Result<Option<Stamp>, IndexError> {
        self.conn()
            .query_row("SELECT len, mtime, tag FROM docs WHERE id = ?1", [id.as_str()], |r| {
                Ok(Stamp {
                    len: r.get::<_, i64>(0)? as u64,
                    modified_ns: r.get::<_, i64>(1)? as u64,
                    tag: r.get::<_, i64>(2)? as u64,
                })
            })
            .optional()
            .map_err(self.err())
    }

    fn stamps(&self) -> Result<Vec<(DocId, Stamp, u64)>, IndexError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT id, len, mtime, tag, hash FROM docs").map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    Stamp {
                        len: r.get::<_, i64>(1)? as u64,
                        modified_ns: r.get::<_, i64>(2)? as u64,
                        tag: r.get::<_, i64>(3)? as u64,
                    },
                    r.get::<_, i64>(4)? as u64,
                ))
            })
            .map_err(self.err())?;
        let mut out = Vec::new();
        for row in rows {
            let (id, stamp, hash) = row.map_err(self.err())?;
            // A row whose id is no longer valid is left for `clear`/`remove`.
            if let Ok(id) = DocId::parse(&id) {
                out.push((id, stamp, hash));
            }
        }
        Ok(out)
    }

    fn enqueue(&self, changed: &[Queued]) -> Result<(), IndexError> {
        self.write(|tx| {
            let mut insert = tx.prepare_cached("INSERT INTO queue(id) VALUES (?1)")?;
            for Queued { id, links } in changed {
                insert.execute([id.as_str()])?;
                write_links(tx, id, links)?;
            }
            Ok(((), Change::default()))
        })
    }

    fn indexing_turn(&self) -> Result<StoreLock, IndexError> {
        // A descriptor of its own: flock's locks belong to the open file.
        Ok(StoreLock::new(locked(&self.path.with_extension("sqlite-indexing"))?))
    }

    fn queued(&self) -> Result<Option<(i64, Vec<DocId>)>, IndexError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT seq, id FROM queue ORDER BY seq").map_err(self.err())?;
        let rows =
            stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))).map_err(self.err())?;
        let (mut through, mut ids) = (None, Vec::new());
        for row in rows {
            let (seq, id) = row.map_err(self.err())?;
            through = Some(seq);
            ids.extend(DocId::parse(&id).ok());
        }
        Ok(through.map(|through| (through, ids)))
    }

    fn dequeue(&self, through: i64) -> Result<(), IndexError> {
        self.write(|tx| {
            tx.execute("DELETE FROM queue WHERE seq <= ?1", [through])?;
            Ok(((), Change::default()))
        })
    }

    fn restamp(&self, stamps: &[(DocId, Stamp, u64)]) -> Result<(), IndexError> {
        if stamps.is_empty() {
            return Ok(());
        }
        self.write(|tx| {
            let mut update = tx.prepare_cached(
                "UPDATE docs SET len = ?2, mtime = ?3, tag = ?4 WHERE id = ?1 AND hash = ?5",
            )?;
            for (id, stamp, hash) in stamps {
                update.execute(params![
                    id.as_str(),
                    stamp.len as i64,
                    stamp.modified_ns as i64,
                    stamp.tag as i64,
                    *hash as i64
                ])?;
            }
            Ok(((), Change::default()))
        })
    }

    fn search(&self, request: &SearchRequest) -> Result<Matched, IndexError> {
        let err = self.err();
        // A query in a script without spaces is left to BM25's bigrams: the
        // small English models memtree is tested with do not read it.
        let readable = !request.query.chars().any(crate::text::is_cjk);
        // The query's vector, once made (`Some(None)`: it cannot be).
        let mut query_vector: Option<Option<Vec<f32>>> = None;
        loop {
            let conn = self.conn();
            // One snapshot of the file for the ranking and the passages it
            // names: a write committed in between (by another process, or
            // this one's indexing thread) would delete the rows ranked.
            let snapshot = conn.unchecked_transaction().map_err(&err)?;
            let mut plan = {
                let mut reader = self.reader.lock().unwrap_or_else(|e| e.into_inner());
                rank_query(&snapshot, &mut reader, &request.query).map_err(&err)?
            };
            // How sure BM25 is decides whether the query's meaning counts
            // at all, and so whether its vector is worth making.
            let weight = match (&mut plan, self.dense.get()) {
                (_, None) => 0.0,
                (Some(ranked), Some(_)) => dense_weight(
                    best_coverage(&snapshot, &ranked.plan, &ranked.scores.best(1)).map_err(&err)?,
                ),
                (None, Some(_)) => dense_weight(0.0),
            };
            let dense = self.dense.get().filter(|_| readable && weight > 0.0);
            if let (Some((encoder, _)), None) = (dense, &query_vector) {
                // The vector outside the lock: encoding takes milliseconds,
                // other threads' searches need not wait for it. The ranking
                // is then made again, in a new snapshot.
                drop(snapshot);
                drop(conn);
                query_vector = Some(
                    encoder
                        .encode(&[request.query.as_str()])
                        .inspect_err(
                            |error| tracing::warn!(%error, "cannot encode the query: searching by BM25 alone"),
                        )
                        .ok()
                        .and_then(|mut v| v.pop()),
                );
                continue;
            }
            let vectors = match (dense, query_vector.as_ref().and_then(Option::as_ref)) {
                (Some((encoder, cache)), Some(vector)) => {
                    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
                    refresh_vectors(&snapshot, encoder.model(), &mut cache).map_err(&err)?;
                    Some((vector, cache))
                }
                _ => None,
            };
            let nearest = vectors.as_ref().map(|(vector, cache)| |k: usize| cache.nearest(vector, k));
            if plan.is_none() && nearest.is_none() {
                return Ok(Matched { matches: vec![], complete: true, terms: vec![] });
            }
            let dense = nearest.as_ref().map(|f| (f as Nearest<'_>, weight));
            let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner());
            let mut documents = self.documents.lock().unwrap_or_else(|e| e.into_inner());
            documents.check(&snapshot).map_err(&err)?;
            let matched =
                execute(&snapshot, &reader, &mut documents, plan.as_mut(), dense, request).map_err(&err)?;
            drop(vectors);
            snapshot.commit().map_err(&err)?;
            return Ok(matched);
        }
    }

    fn embeddings(&self) -> Result<Option<EmbeddingProgress>, IndexError> {
        let Some((encoder, _)) = self.dense.get() else { return Ok(None) };
        let conn = self.conn();
        let count = |sql: &str, params: &[&dyn rusqlite::ToSql]| {
            conn.query_row(sql, params, |r| r.get::<_, i64>(0)).map(|n| n as usize).map_err(self.err())
        };
        Ok(Some(EmbeddingProgress {
            model: encoder.model().to_owned(),
            passages: count("SELECT count(*) FROM passages", &[])?,
            embedded: count(
                "SELECT count(*) FROM passages p WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.passage = p.rowid
                 AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model = ?1 AND v.key = c.key))",
                &[&encoder.model()],
            )?,
        }))
    }

    fn excerpt(&self, passage: &str, after: &str, terms: &[QueryTerm]) -> String {
        excerpt(passage, after, terms)
    }

    fn record_use(&self, ids: &[DocId], now_ns: u64) -> Result<(), IndexError> {
        self.write(|tx| {
            for id in ids {
                tx.execute(
                    "INSERT INTO usage(id, count, last_ns) VALUES (?1, 1, ?2)
                     ON CONFLICT(id) DO UPDATE SET count = count + 1, last_ns = ?2",
                    params![id.as_str(), now_ns as i64],
                )?;
            }
            Ok(((), Change::default()))
        })
    }

    fn usage(&self) -> Result<Vec<Usage>, IndexError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT u.id, u.count, u.last_ns FROM usage u JOIN docs d ON d.id = u.id ORDER BY u.count DESC, u.last_ns DESC")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))
            .map_err(self.err())?;
        let mut out = Vec::new();
        for row in rows {
            let (id, count, last) = row.map_err(self.err())?;
            if let Ok(id) = DocId::parse(&id) {
                out.push(Usage { id, count: count as u64, last_used_ns: last as u64 });
            }
        }
        Ok(out)
    }

    fn stats(&self) -> Result<IndexStats, IndexError> {
        let conn = self.conn();
        let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).map_err(self.err());
        let documents = count("SELECT count(*) FROM docs")? as usize;
        let passages = count("SELECT count(*) FROM passages")? as usize;
        let pages = count("PRAGMA page_count")? as u64;
        let page_size = count("PRAGMA page_size")? as u64;
        let wal = std::fs::metadata(self.path.with_extension("sqlite-wal")).map_or(0, |m| m.len());
        drop(conn);
        Ok(IndexStats {
            documents,
            passages,
            bytes: pages * page_size + wal,
            location: self.path.display().to_string(),
            embeddings: self.embeddings()?,
        })
    }

    /// The postings of the words in the most documents, most first, down
    /// to words in one document of a hundred: a word in 80 % of
    /// 10,000 documents' passages takes 9 ms to read, against 0.1 ms for
    /// one in 1 %. Each word is read under the connection's lock on its
    /// own, so a request waits at most for one. They take at most 4 MiB.
    fn read_ahead(&self) -> Result<usize, IndexError> {
        let err = self.err();
        let words: Vec<String> = {
            let conn = self.conn();
            let docs: i64 = conn.query_row("SELECT count(*) FROM docs", [], |r| r.get(0)).map_err(&err)?;
            let mut stmt = conn
                .prepare("SELECT word FROM spellings WHERE docs >= ?1 ORDER BY docs DESC")
                .map_err(&err)?;
            let words = stmt.query_map([(docs / READ_AHEAD_SHARE).max(2)], |r| r.get(0)).map_err(&err)?;
            words.collect::<Result<_, _>>().map_err(&err)?
        };
        let mut read = HashSet::new();
        for word in words {
            let term = term(&word);
            if read.contains(&term) {
                continue;
            }
            let conn = self.conn();
            let mut reader = self.reader.lock().unwrap_or_else(|e| e.into_inner());
            if !reader.read_ahead(&conn, &term).map_err(&err)? {
                break;
            }
            read.insert(term);
        }
        Ok(read.len())
    }

    fn optimize(&self) -> Result<(), IndexError> {
        self.write(|tx| {
            inverted::compact(tx)?;
            Ok(((), Change { rewritten: true, ..Change::default() }))
        })
    }

    fn clear(&self) -> Result<(), IndexError> {
        self.write(|tx| {
            tx.execute_batch(
                "DELETE FROM docs; DELETE FROM links; DELETE FROM passages; DELETE FROM spellings;
                 DELETE FROM chunks; DELETE FROM sqlite_sequence WHERE name = 'passages';",
            )?;
            inverted::clear(tx)?;
            // Rowids start again: the lengths processes keep are of another
            // generation.
            tx.execute("UPDATE totals SET passages = 0, tokens = 0, generation = ?1", [new_generation()])?;
            Ok(((), Change { rewritten: true, ..Change::default() }))
        })
    }
}

impl SqliteIndex {
    /// Embeds up to `limit` chunks that have no vector of the encoder's
    /// model yet and stores their vectors; returns how many (0 when all
    /// are embedded, or there is no encoder). The connection is not held
    /// while encoding, so searches and writes go on meanwhile.
    pub fn embed_pending(&self, limit: usize) -> Result<usize, IndexError> {
        let Some((encoder, _)) = self.dense.get() else { return Ok(0) };
        let model = encoder.model();
        let pending = pending_chunks(&self.conn(), model, limit).map_err(self.err())?;
        if pending.is_empty() {
            return Ok(0);
        }
        let texts: Vec<&str> = pending.iter().map(|(_, text)| text.as_str()).collect();
        let vectors = encoder
            .encode(&texts)
            .map_err(|source| IndexError::Backend { location: format!("embedding model {model}"), source })?;
        self.write(|tx| {
            let mut insert =
                tx.prepare_cached("INSERT OR IGNORE INTO vectors(model, key, vector) VALUES (?1, ?2, ?3)")?;
            for ((key, _), vector) in pending.iter().zip(&vectors) {
                insert.execute(params![model, key, to_bytes(vector)])?;
            }
            Ok((pending.len(), Change::default()))
        })
    }

    /// Drops the vectors no chunk has any more (of passages changed or
    /// gone): run when embedding has caught up.
    pub fn prune_vectors(&self) -> Result<usize, IndexError> {
        self.write(|tx| {
            let pruned = tx.execute(
                "DELETE FROM vectors WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.key = vectors.key)",
                [],
            )?;
            Ok((pruned, Change::default()))
        })
    }
}

/// Chunks (key and text) with no vector of `model`, at most `limit`, each
/// key once.
fn pending_chunks(conn: &Connection, model: &str, limit: usize) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.key, c.ord, p.heading_path, p.text FROM chunks c JOIN passages p ON p.rowid = c.passage
         WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model = ?1 AND v.key = c.key) LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![model, (limit * 4) as i64], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
    })?;
    let mut pending: Vec<(i64, String)> = Vec::new();
    for row in rows {
        let (key, ord, heading_path, text) = row?;
        let heading_path: Vec<String> = serde_json::from_str(&heading_path).unwrap_or_default();
        let Some(chunk) = chunks(&heading_path, &text).into_iter().nth(ord as usize) else { continue };
        if chunk_key(&chunk) == key && !pending.iter().any(|(k, _)| *k == key) {
            pending.push((key, chunk));
        }
        if pending.len() == limit {
            break;
        }
    }
    Ok(pending)
}

/// Brings the vectors of `model` in memory up to date with the index:
/// reads the vectors added since, and the chunk list again if anything
/// changed (another process's commit moves `data_version`, this
/// connection's own writes its change count).
fn refresh_vectors(conn: &Connection, model: &str, cache: &mut VectorCache) -> rusqlite::Result<()> {
    let mut added =
        conn.prepare_cached("SELECT rowid, key, vector FROM vectors WHERE model = ?1 AND rowid > ?2")?;
    let rows =
        added.query_map(params![model, cache.last_row()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    cache.add(rows.collect::<rusqlite::Result<Vec<_>>>()?);
    let version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
    let at = (version, conn.total_changes());
    if !cache.chunks_current(at) {
        let mut all = conn.prepare_cached("SELECT passage, ord, key FROM chunks")?;
        let chunks = all
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        cache.set_chunks(chunks, at);
    }
    Ok(())
}

/// How a query is run: its words by how many passages hold them, and the
/// words whose matches an excerpt marks, with their weights.
#[derive(Debug, PartialEq)]
struct QueryPlan {
    /// Words whose passages are the candidates; words that only tell those
    /// apart; words in most passages, which match only when nothing else does.
    rare: Vec<String>,
    frequent: Vec<String>,
    useless: Vec<String>,
    terms: Vec<QueryTerm>,
    /// The query's own words, each weighing its idf, a word no passage
    /// holds weighing most: what [`coverage`] of a passage is measured by.
    words: Vec<QueryTerm>,
    /// Each two words next to each other in a short query.
    pairs: Vec<(String, String)>,
}

/// A query's plan, the passages it matches with their BM25 scores
/// ([`Scores::best`] sorts as many as needed), and what bounds each plan
/// term's closeness.
struct Ranked {
    plan: QueryPlan,
    scores: Scores,
    close: Option<Close>,
}

/// The postings of the terms that bound each plan term's closeness, with
/// the plan term they count for ([`close_terms`]), and the plan terms taken
/// to be in every window instead (held by most passages).
struct Close {
    postings: Vec<(Arc<Postings>, usize)>,
    everywhere: Vec<bool>,
}

/// BM25's inverse document frequency of a word in `df` of `passages`.
fn idf(df: i64, passages: i64) -> f64 {
    let (df, n) = (df as f64, passages as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The plan of `query` and the passages it matches with their BM25
/// scores, best first; `None` when nothing can match. The postings of its
/// words are read once, for their document frequencies and their scores.
///
/// A word in more than half of the passages weighs nothing in BM25 and is
/// left out. A frequent word (in more than a tenth) still counts in the
/// score, but only for passages that also hold a rarer word: the thousands
/// of passages that share nothing else with the query would rank last. A
/// word of a short query that matches nothing is joined by the indexed
/// words one or two edits away.
fn rank_query(conn: &Connection, reader: &mut Reader, query: &str) -> rusqlite::Result<Option<Ranked>> {
    let corpus = reader.refresh(conn)?;
    let plan = plan_from(
        query_terms(query),
        corpus.passages as i64,
        |word| Ok(reader.df(conn, &term(word))? as i64),
        |word| near_words(conn, word),
    )?;
    let Some(plan) = plan else { return Ok(None) };
    // The useless words are read where they occur only when nothing else
    // matches: each is in most passages.
    let mut seen = HashSet::new();
    let mut read = |words: &[String]| -> rusqlite::Result<Vec<Arc<Postings>>> {
        words
            .iter()
            .map(|w| term(w))
            .filter(|k| seen.insert(k.clone()))
            .map(|k| reader.postings(conn, &k))
            .collect()
    };
    let rare = read(&plan.rare)?;
    let frequent = read(&plan.frequent)?;
    let useless = if rare.is_empty() && frequent.is_empty() { read(&plan.useless)? } else { Vec::new() };
    let pairs: Vec<(Arc<Postings>, Arc<Postings>)> = plan
        .pairs
        .iter()
        .map(|(a, b)| Ok((reader.postings(conn, &term(a))?, reader.postings(conn, &term(b))?)))
        .collect::<rusqlite::Result<_>>()?;
    let tiers = Tiers {
        rare: rare.iter().map(|p| &**p).collect(),
        frequent: frequent.iter().map(|p| &**p).collect(),
        useless: useless.iter().map(|p| &**p).collect(),
        pairs,
    };
    let scores = rank(tiers, corpus, |rowid| reader.length(rowid));
    let close = match close_terms(conn, &plan.terms)? {
        Some(close) => {
            // A term in most passages is taken to be in every window: its
            // postings are the largest to read, its weight the least.
            let mut everywhere = vec![false; plan.terms.len()];
            for (counted, i) in &close {
                if reader.df(conn, counted)? as f64 * 2.0 > corpus.passages {
                    everywhere[*i] = true;
                }
            }
            let postings = close
                .into_iter()
                .filter(|(_, i)| !everywhere[*i])
                .map(|(counted, i)| Ok((reader.postings(conn, &counted)?, i)))
                .collect::<rusqlite::Result<_>>()?;
            Some(Close { postings, everywhere })
        }
        None => None,
    };
    Ok(Some(Ranked { plan, scores, close }))
}

/// The index terms of the words that proximity matches to each of `terms`
/// (as excerpts match them, by their light stems: [`Matcher`]), each with
/// the first term it matches for some word: all the words documents are
/// spelt with that start with a term's head are looked at. An index term
/// also counts where it stands for a word that does not match (`firing`
/// for `fire`): the positions of these terms bound the closeness of a
/// passage, they do not measure it. None when a term is a CJK bigram.
fn close_terms(conn: &Connection, terms: &[QueryTerm]) -> rusqlite::Result<Option<Vec<(String, usize)>>> {
    let matcher = Matcher::new(terms);
    let Some(heads) = matcher.heads() else { return Ok(None) };
    let heads: BTreeSet<&String> = heads.iter().collect();
    let mut spelt =
        conn.prepare_cached("SELECT word FROM spellings WHERE word >= ?1 AND word < ?1 || char(1114111)")?;
    let mut close = BTreeSet::new();
    for head in heads {
        for word in spelt.query_map([head], |r| r.get::<_, String>(0))? {
            let word = word?;
            if let Some(i) = matcher.term_of(&word) {
                close.insert((term(&word), i));
            }
        }
    }
    Ok(Some(close.into_iter().collect()))
}

/// [`rank_query`]'s plan, given the number of passages, each word's
/// document frequency (`df`) and its near words.
fn plan_from(
    terms: Vec<String>,
    passages: i64,
    mut df: impl FnMut(&str) -> rusqlite::Result<i64>,
    mut near: impl FnMut(&str) -> rusqlite::Result<Vec<String>>,
) -> rusqlite::Result<Option<QueryPlan>> {
    let short = terms.len() <= 4;
    let (mut rare, mut frequent, mut useless) = (Vec::new(), Vec::new(), Vec::new());
    let mut weighted: Vec<QueryTerm> = Vec::new();
    let mut words: Vec<QueryTerm> = Vec::new();
    // Whether some passage holds each of `words`.
    let mut held: Vec<bool> = Vec::new();
    for term in &terms {
        let count = df(term)?;
        weighted.push(QueryTerm {
            word: term.clone(),
            weight: if count == 0 { 0.0 } else { idf(count, passages) },
        });
        // What a passage covers of the query: a misspelt word's stand-in
        // counts for it; a word no passage holds weighs most.
        let mut stand_in = None;
        if count == 0 && short && term.chars().count() >= 4 && !term.chars().any(crate::text::is_cjk) {
            for word in near(term)? {
                let weight = idf(df(&word)?.max(1), passages);
                stand_in.get_or_insert_with(|| QueryTerm { word: word.clone(), weight });
                weighted.push(QueryTerm { weight, word: word.clone() });
                rare.push(word);
            }
        }
        held.push(count > 0 || stand_in.is_some());
        words
            .push(stand_in.unwrap_or_else(|| QueryTerm { word: term.clone(), weight: idf(count, passages) }));
        if count == 0 {
            continue;
        }
        if count * 2 > passages {
            useless.push(term.clone());
        } else if count * 10 > passages {
            frequent.push(term.clone());
        } else {
            rare.push(term.clone());
        }
    }
    if rare.is_empty() && frequent.is_empty() && useless.is_empty() {
        return Ok(None);
    }
    let mut seen = HashSet::new();
    weighted.retain(|t| seen.insert(t.word.clone()));
    let pairs = if words.len() <= PHRASE_QUERY_WORDS {
        (1..words.len())
            .filter(|&i| held[i - 1] && held[i])
            .map(|i| (words[i - 1].word.clone(), words[i].word.clone()))
            .filter(|(a, b)| ![a, b].iter().any(|w| w.chars().any(crate::text::is_cjk)))
            .collect()
    } else {
        Vec::new()
    };
    Ok(Some(QueryPlan { rare, frequent, useless, terms: weighted, words, pairs }))
}

/// [`SearchIndex::read_ahead`] reads the words in at least one document
/// of this many.
const READ_AHEAD_SHARE: i64 = 100;

/// Queries of at most this many words are lifted by their phrases: in a
/// short query, words side by side are a name or a term (`release train`,
/// `cedar strips`); in a longer question they are mostly incidental, and
/// lifting them cost ranking quality on both relevance sets.
const PHRASE_QUERY_WORDS: usize = 3;

/// Runs `plan`: its BM25 ranking alone, or fused with the nearest
/// passages by meaning when `dense` gives them with their weight; then
/// only the best candidates (six times the matches asked for, at least 60)
/// are joined to their document and filtered by scope and subtree; those
/// that can be among the best `request.limit` the engine ranks are
/// returned, for its ranking to choose from ([`settle`]). When the filters
/// leave fewer than asked for, the next, larger batch is taken.
fn execute(
    conn: &Connection,
    reader: &Reader,
    documents: &mut Documents,
    ranked: Option<&mut Ranked>,
    dense: Option<(Nearest<'_>, f64)>,
    request: &SearchRequest,
) -> rusqlite::Result<Matched> {
    let subtree: Option<HashSet<String>> = match &request.under {
        Some(under) => Some(subtree(conn, under.as_str())?),
        None => None,
    };
    let (plan, close, mut scores) = match ranked {
        Some(r) => (Some(&r.plan), r.close.as_ref(), Some(&mut r.scores)),
        None => (None, None, None),
    };
    let ranking = Ranking::at(request.now_ns);
    // A passage as a match of its document, its row not read, and what is
    // known of it.
    let mut joined =
        |rowid: i64, score: f64, signals: Signals| -> rusqlite::Result<Option<(Match, Passage)>> {
            let passage = match reader.passage(rowid) {
                Some(passage) => Some(passage),
                None => conn
                    .prepare_cached("SELECT docrow, flags FROM passages WHERE rowid = ?1")?
                    .query_row([rowid], |r| Ok(Passage::stored(r.get(0)?, r.get(1)?)))
                    .optional()?,
            };
            let Some(passage) = passage else { return Ok(None) };
            let Some(document) = documents.row(conn, passage.document)? else { return Ok(None) };
            Ok(Some((unread(document, score, signals), passage)))
        };
    let mut batch = (request.limit * 6).max(60);
    loop {
        let matching = scores.as_ref().map_or(0, |r| r.len());
        let bm25 = scores.as_mut().map(|r| r.best(batch)).unwrap_or_default();
        let nearest = dense.map(|(nearest, weight)| (nearest(batch), weight));
        let complete = matching <= batch && nearest.as_ref().is_none_or(|d| d.0.len() < batch);
        let candidates = match &nearest {
            Some((nearest, weight)) => fuse(&bm25, nearest, *weight),
            None => bm25.iter().map(|&(rowid, score)| (rowid, score, Signals::BM25)).collect(),
        };
        let wanted = |found: &Match| {
            request.scope.is_none_or(|s| found.hit.scope == Some(s))
                && subtree.as_ref().is_none_or(|s| s.contains(found.hit.id.as_str()))
        };
        // Where dense alone found a passage, its chunk nearest the query is
        // what an excerpt shows: no line of it holds a query word to go by.
        let nearest_chunk: HashMap<i64, usize> =
            nearest.iter().flat_map(|(n, _)| n.iter().map(|&(passage, _, ord)| (passage, ord))).collect();
        let read = |rowid: i64, found: &mut Match| -> rusqlite::Result<bool> {
            if !read_passage(conn, rowid, &mut found.hit)? {
                return Ok(false);
            }
            if !found.hit.signals.bm25 {
                found.hit.focus = nearest_chunk
                    .get(&rowid)
                    .and_then(|&ord| chunks(&[], &found.hit.text).into_iter().nth(ord));
            }
            Ok(true)
        };
        let mut kept = Vec::new();
        for &(rowid, score, signals) in &candidates {
            if let Some((found, passage)) = joined(rowid, score, signals)?.filter(|(found, _)| wanted(found))
            {
                kept.push((rowid, found, passage));
            }
        }
        let matches = match plan {
            Some(plan) => {
                let matcher = Matcher::new(&plan.terms);
                let mut matches =
                    weigh_proximity(kept, &matcher, close, &ranking, request.limit, |rowid, found| {
                        if !read(rowid, found)? {
                            return Ok(false);
                        }
                        let closeness = matcher.window_coverage(&found.hit.text, PROXIMITY_WORDS);
                        found.hit.score = weighed(found.hit.score, closeness);
                        Ok(true)
                    })?;
                let mut passages_of =
                    conn.prepare_cached("SELECT rowid FROM passages WHERE doc = ?1 LIMIT ?2")?;
                lift_described(&mut matches, &plan.terms, |id| {
                    let rowids: Vec<i64> = passages_of
                        .query_map(params![id.as_str(), DESCRIBED_PASSAGES as i64], |r| r.get(0))?
                        .collect::<Result<_, _>>()?;
                    let mut found = Vec::new();
                    for rowid in rowids {
                        if let Some((mut described, _)) =
                            joined(rowid, 0.0, Signals::BM25)?.filter(|(found, _)| wanted(found))
                            && read(rowid, &mut described)?
                        {
                            found.push(described);
                        }
                    }
                    Ok(found)
                })?;
                matches
            }
            None => {
                let mut matches = Vec::new();
                for (rowid, mut found, _) in kept {
                    if read(rowid, &mut found)? {
                        matches.push(found);
                    }
                }
                matches
            }
        };
        if complete || matches.len() >= request.limit {
            return Ok(Matched {
                matches,
                complete,
                terms: plan.map(|p| p.terms.clone()).unwrap_or_default(),
            });
        }
        batch *= 4;
    }
}

/// The candidates (`kept`: rowid, match, what is known of it) that can
/// be among the best `limit`, read (`weigh`: reads a row and weighs its
/// score by proximity; false if it is gone). A passage that links is read
/// first, for the documents its link lines describe ([`described`]), and
/// so is a passage of a described document (its score is lifted by what
/// its text says) or one found by meaning alone (its text shows its nearest
/// chunk); the others are read as [`settle`] needs them, their closeness
/// bounded by the positions of the `close` terms ([`close_terms`]), or not
/// at all without them.
fn weigh_proximity(
    kept: Vec<(i64, Match, Passage)>,
    matcher: &Matcher<'_>,
    close: Option<&Close>,
    ranking: &Ranking,
    limit: usize,
    mut weigh: impl FnMut(i64, &mut Match) -> rusqlite::Result<bool>,
) -> rusqlite::Result<Vec<Match>> {
    let passages: Vec<(i64, Passage)> = kept.iter().map(|(rowid, _, passage)| (*rowid, *passage)).collect();
    let bounds = closeness_bounds(&passages, matcher, close);
    let linking: HashSet<i64> =
        kept.iter().filter(|(_, _, passage)| passage.links).map(|(rowid, _, _)| *rowid).collect();
    let candidates = kept
        .into_iter()
        .zip(bounds)
        .map(|((rowid, found, _), bound)| {
            let (signals, shown) = ranking.weigh(&found.document, found.hit.stamp.modified_ns);
            Candidate { rowid, score: found.hit.score, bound, signals, shown, found, read: false }
        })
        .collect();
    let mut read = |candidate: &mut Candidate| weigh(candidate.rowid, &mut candidate.found);
    let candidates =
        read_where(candidates, |c| linking.contains(&c.rowid) || !c.found.hit.signals.bm25, &mut read)?;
    let lifted = described(candidates.iter().filter(|c| c.read).map(|c| &c.found), matcher);
    let candidates = read_where(candidates, |c| lifted.contains_key(&c.found.hit.id), &mut read)?;
    settle(candidates, limit, read)
}

/// The most closeness each of `passages` (rowid, what is known of it) can
/// have: from the positions of the `close` terms, the plan terms they count
/// for, plus the weight of the plan terms taken to be everywhere; 1 without
/// them, or for a passage whose words mix scripts.
fn closeness_bounds(passages: &[(i64, Passage)], matcher: &Matcher<'_>, close: Option<&Close>) -> Vec<f64> {
    let Some(close) = close else { return vec![1.0; passages.len()] };
    let rowids: Vec<i64> = passages.iter().map(|(rowid, _)| *rowid).collect();
    let mut order: Vec<usize> = (0..rowids.len()).collect();
    order.sort_unstable_by_key(|&i| rowids[i]);
    let sorted: Vec<i64> = order.iter().map(|&i| rowids[i]).collect();
    let counting: Vec<(&Postings, usize)> = close.postings.iter().map(|(p, t)| (&**p, *t)).collect();
    let weights: Vec<f64> = matcher.terms().iter().map(|t| t.weight).collect();
    let total: f64 = weights.iter().sum();
    let everywhere: f64 = weights.iter().zip(&close.everywhere).filter(|(_, e)| **e).map(|(w, _)| w).sum();
    let everywhere = if total > 0.0 { everywhere / total } else { 0.0 };
    let mut bounds = vec![1.0; rowids.len()];
    for (&i, bound) in order.iter().zip(closeness(&counting, &weights, &sorted, PROXIMITY_WORDS as u32)) {
        if !passages[i].1.mixed_words {
            bounds[i] = (bound + everywhere).min(1.0);
        }
    }
    bounds
}

/// How much of a hub passage's score a child's passages gain from the hub's
/// link line to it, when that line holds all the query's words: as much as
/// if they held the line themselves.
const ANCHOR_LIFT: f64 = 1.0;

/// At most this many documents described by hubs' link lines, and this many
/// passages of each, come in without matching the query's words themselves.
const DESCRIBED_DOCUMENTS: usize = 8;
const DESCRIBED_PASSAGES: usize = 16;

/// Lifts the passages of documents that a matching passage links to with a
/// line in the query's words (`- [[sessions/s25]]: Marcus's Brightwater
/// interview`): a hub's line about a child says what the child is about, as
/// anchor text does on the web, where the child's own lines may not use
/// those words. Each passage of the child gains the hub passage's score
/// times the share of the query's weight the line holds (a tenth of it
/// going by the share its own text holds, to order the child's passages);
/// the passages of the best described documents that did not match at all
/// are brought in (`passages_of`).
fn lift_described(
    matches: &mut Vec<Match>,
    terms: &[QueryTerm],
    mut passages_of: impl FnMut(&DocId) -> rusqlite::Result<Vec<Match>>,
) -> rusqlite::Result<()> {
    let matcher = Matcher::new(terms);
    let described = described(matches.iter(), &matcher);
    if described.is_empty() {
        return Ok(());
    }
    let matched: HashSet<DocId> = matches.iter().map(|m| m.hit.id.clone()).collect();
    let mut unmatched: Vec<(&DocId, f64)> =
        described.iter().filter(|(id, _)| !matched.contains(*id)).map(|(id, gain)| (id, *gain)).collect();
    unmatched.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    for (id, _) in unmatched.into_iter().take(DESCRIBED_DOCUMENTS) {
        matches.extend(passages_of(id)?);
    }
    for m in matches.iter_mut() {
        if let Some(gain) = described.get(&m.hit.id) {
            let own = 0.9 + 0.1 * matcher.coverage(&m.hit.text);
            m.hit.score += ANCHOR_LIFT * gain * own;
        }
    }
    matches.sort_by(|a, b| b.hit.score.total_cmp(&a.hit.score));
    Ok(())
}

/// The documents that the link lines of `matches` describe in the words of
/// the query, each with the most a line gains it: the linking passage's
/// score times the share of the query's weight the line holds.
fn described<'a>(matches: impl Iterator<Item = &'a Match>, matcher: &Matcher<'_>) -> HashMap<DocId, f64> {
    let mut described: HashMap<DocId, f64> = HashMap::new();
    for m in matches {
        for line in m.hit.text.lines().filter(|l| l.contains(LINK_OPENING)) {
            let gain = m.hit.score * matcher.coverage(line);
            if gain > 0.0 {
                for id in parse_links(line).ids {
                    let best = described.entry(id).or_default();
                    *best = best.max(gain);
                }
            }
        }
    }
    described
}

/// What opens a link: only a passage holding it can describe another.
const LINK_OPENING: &str = "[[";

/// The flags a passage of `text` is stored with ([`Passage`]).
fn passage_flags(text: &str) -> u8 {
    let links = if text.contains(LINK_OPENING) { LINKS } else { 0 };
    let cjk = crate::text::is_cjk;
    let mixed = words(text).any(|w| w.chars().any(cjk) && w.split(cjk).any(|piece| !piece.is_empty()));
    links | if mixed { MIXED_WORDS } else { 0 }
}

/// The `k` passages nearest the query's vector, with their cosines.
type Nearest<'a> = &'a dyn Fn(usize) -> Vec<(i64, f32, usize)>;

/// How much of the query the passage BM25 ranks first covers
/// ([`coverage`]); 0 when none matches.
fn best_coverage(conn: &Connection, plan: &QueryPlan, ranked: &[(i64, f64)]) -> rusqlite::Result<f64> {
    match ranked.first() {
        Some(&(rowid, _)) => Ok(coverage(&searched_text(conn, rowid)?, &plan.words)),
        None => Ok(0.0),
    }
}

/// The text of a passage that full-text search looks at: its document's
/// id and title, its headings, the summary and tags, and its own text.
fn searched_text(conn: &Connection, passage: i64) -> rusqlite::Result<String> {
    conn.prepare_cached(
        "SELECT p.doc || ' ' || d.title || ' ' || p.heading_path || ' ' || coalesce(d.summary, '') || ' '
                || d.tags || ' ' || p.text
         FROM passages p JOIN docs d ON d.id = p.doc WHERE p.rowid = ?1",
    )?
    .query_row([passage], |r| r.get(0))
}

/// A passage as a match of `document`, with its score (BM25, or fused)
/// and the rankings that found it, its heading, line and text not read yet
/// ([`read_passage`]).
fn unread(document: &Document, score: f64, signals: Signals) -> Match {
    Match {
        hit: Hit {
            id: document.id.clone(),
            heading: String::new(),
            heading_path: Vec::new(),
            score,
            path: Vec::new(),
            excerpt: String::new(),
            text: String::new(),
            after: String::new(),
            focus: None,
            line: 0,
            scope: document.scope,
            stamp: document.stamp,
            shared: false,
            signals,
        },
        document: document.signals.clone(),
    }
}

/// Reads the heading, line and text of passage `rowid` into `hit`; false
/// if the passage is gone, or is not its document's any more (rowids start
/// again in a new index).
fn read_passage(conn: &Connection, rowid: i64, hit: &mut Hit) -> rusqlite::Result<bool> {
    let row = conn
        .prepare_cached("SELECT heading_path, text, line, after FROM passages WHERE rowid = ?1 AND doc = ?2")?
        .query_row(params![rowid, hit.id.as_str()], |r| {
            Ok((r.get::<_, String>(0)?, r.get(1)?, r.get::<_, i64>(2)?, r.get(3)?))
        })
        .optional()?;
    let Some((heading_path, text, line, after)) = row else { return Ok(false) };
    let heading_path: Vec<String> = serde_json::from_str(&heading_path).unwrap_or_default();
    hit.heading = heading_path.last().cloned().unwrap_or_default();
    hit.heading_path = heading_path;
    (hit.text, hit.line, hit.after) = (text, line as usize, after);
    Ok(true)
}

/// Words of the store one edit from `term` (two for words of eight
/// letters or more; a swap of neighbours is one), most common first, at
/// most three; without any, the store's shortened form of it. Candidates
/// start with the term's first letter, or its second (for a swap at the
/// start).
fn near_words(conn: &Connection, term: &str) -> rusqlite::Result<Vec<String>> {
    let letters: Vec<char> = term.chars().collect();
    let limit = if letters.len() >= 8 { 2 } else { 1 };
    let mut stmt = conn.prepare_cached(
        "SELECT word, docs FROM spellings WHERE word >= ?1 AND word < ?1 || char(1114111)
         AND length(word) BETWEEN ?2 AND ?3",
    )?;
    let mut firsts = vec![letters[0]];
    if letters.len() > 1 && letters[1] != letters[0] {
        firsts.push(letters[1]);
    }
    let (shortest, longest) = (letters.len().saturating_sub(limit) as i64, (letters.len() + limit) as i64);
    let mut near: Vec<(usize, i64, String)> = Vec::new();
    for first in firsts {
        let rows = stmt.query_map(params![first.to_string(), shortest, longest], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?;
        for (word, docs) in rows.filter_map(Result::ok) {
            let d = edit_distance(term, &word, limit);
            if d <= limit && word != term {
                near.push((d, -docs, word));
            }
        }
    }
    near.sort();
    near.dedup_by(|a, b| a.2 == b.2);
    if near.is_empty() {
        return shortened_form(conn, &letters).map(|word| word.into_iter().collect());
    }
    Ok(near.into_iter().take(3).map(|(_, _, w)| w).collect())
}

/// Fewer letters than this do not stand for a longer word.
const SHORTENED_MIN: usize = 5;

/// The longest word of the store that `letters` starts with, of at least
/// [`SHORTENED_MIN`] letters: the shortened form a store may use for a long
/// word (`physio` for `physiotherapist`, `config` for `configuration`).
fn shortened_form(conn: &Connection, letters: &[char]) -> rusqlite::Result<Option<String>> {
    let mut held = conn.prepare_cached("SELECT 1 FROM spellings WHERE word = ?1")?;
    for len in (SHORTENED_MIN..letters.len()).rev() {
        let prefix: String = letters[..len].iter().collect();
        if held.exists([&prefix])? {
            return Ok(Some(prefix));
        }
    }
    Ok(None)
}

/// Ids from root down to the parent of `id`, following the indexed links
/// (`documents` keeps the parents looked up: hits share their ancestors).
fn path_to(conn: &Connection, documents: &mut Documents, id: &DocId) -> rusqlite::Result<Vec<DocId>> {
    let mut path = Vec::new();
    let mut seen = HashSet::from([id.as_str().to_owned()]);
    let mut current = id.as_str().to_owned();
    while let Some(parent) = documents.parent(conn, &current)? {
        if !seen.insert(parent.clone()) {
            break;
        }
        if let Ok(p) = DocId::parse(&parent) {
            path.push(p);
        }
        current = parent;
    }
    path.reverse();
    Ok(path)
}

/// `under` and every document below it, by the indexed links.
fn subtree(conn: &Connection, under: &str) -> rusqlite::Result<HashSet<String>> {
    let mut stmt = conn.prepare_cached(
        "WITH RECURSIVE sub(id) AS (SELECT ?1 UNION SELECT l.child FROM links l JOIN sub ON l.parent = sub.id)
         SELECT id FROM sub",
    )?;
    stmt.query_map([under], |r| r.get(0))?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `query` in a store of 100 passages where each word is in
    /// as many passages as `df` says (0 when not listed).
    fn plan_of(query: &str, df: &[(&str, i64)]) -> Option<QueryPlan> {
        let count = |term: &str| Ok(df.iter().find(|(w, _)| *w == term).map_or(0, |(_, n)| *n));
        plan_from(query_terms(query), 100, count, |term| {
            Ok(if term == "databse" { vec!["database".into()] } else { vec![] })
        })
        .unwrap()
    }

    #[test]
    fn a_query_plan_weighs_words_by_how_many_passages_hold_them() {
        let plan =
            plan_of("postgres port service", &[("postgres", 3), ("port", 20), ("service", 90)]).unwrap();
        // Rare words match alone; a frequent one only beside a rare one;
        // one in most passages not at all.
        assert_eq!(
            (plan.rare, plan.frequent, plan.useless),
            (vec!["postgres".into()], vec!["port".into()], vec!["service".into()])
        );
        let words: Vec<&str> = plan.terms.iter().map(|t| t.word.as_str()).collect();
        assert_eq!(words, ["postgres", "port", "service"]);
        let weights: Vec<f64> = plan.terms.iter().map(|t| t.weight).collect();
        assert!(weights[0] > weights[1] && weights[1] > weights[2], "the rarer, the heavier: {weights:?}");
        let only_common = plan_of("the and", &[("the", 90), ("and", 95)]).unwrap();
        assert_eq!(only_common.useless, ["the", "and"], "with nothing better, common words still match");
        assert_eq!(plan_of("zzz", &[]), None, "nothing can match");
    }

    #[test]
    fn a_short_query_s_unknown_word_brings_its_near_words() {
        let plan = plan_of("databse", &[]).unwrap();
        assert_eq!(plan.rare, ["database"]);
        let words: Vec<(&str, bool)> = plan.terms.iter().map(|t| (t.word.as_str(), t.weight > 0.0)).collect();
        assert_eq!(
            words,
            [("databse", false), ("database", true)],
            "the typo weighs nothing, its stand-in does"
        );
        // What a passage covers of the query is measured by the stand-in.
        let covered: Vec<&str> = plan.words.iter().map(|t| t.word.as_str()).collect();
        assert_eq!(covered, ["database"]);
    }

    #[test]
    fn a_short_query_s_neighbouring_words_are_its_phrases() {
        let df = [("release", 9), ("train", 9), ("schedule", 9), ("postgres", 3)];
        let plan = plan_of("release train", &df).unwrap();
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(plan.pairs, [pair("release", "train")]);
        let three = plan_of("the release train schedule", &df).unwrap();
        assert_eq!(
            three.pairs,
            [pair("release", "train"), pair("train", "schedule")],
            "stop words are not words of a phrase"
        );
        assert_eq!(plan_of("postgres", &df).unwrap().pairs, [], "one word");
        assert_eq!(
            plan_of("release zzz train", &df).unwrap().pairs,
            [],
            "a word no passage holds breaks the pair"
        );
        let long = plan_of("release train schedule postgres", &df).unwrap();
        assert_eq!(long.pairs, [], "a longer question is not lifted");
    }

    #[test]
    fn a_word_no_passage_holds_weighs_most_in_coverage() {
        let plan = plan_of("postgres pgbouncer port", &[("postgres", 3), ("port", 20)]).unwrap();
        let weights: Vec<(&str, f64)> = plan.words.iter().map(|t| (t.word.as_str(), t.weight)).collect();
        assert_eq!(weights.iter().map(|w| w.0).collect::<Vec<_>>(), ["postgres", "pgbouncer", "port"]);
        assert!(weights[1].1 > weights[0].1 && weights[0].1 > weights[2].1, "{weights:?}");
    }

    /// An index of `docs` (id, Markdown).
    fn indexed(docs: &[(&str, &str)]) -> (tempfile::TempDir, SqliteIndex) {
        let dir = tempfile::tempdir().unwrap();
        let index = SqliteIndex::open(dir.path().join("index.sqlite")).unwrap();
        let stamp = |text: &str| Stamp { len: text.len() as u64, modified_ns: 1, tag: 0 };
        let docs: Vec<IndexedDoc> = docs
            .iter()
            .map(|(id, text)| IndexedDoc::from_text(DocId::parse(id).unwrap(), text, stamp(text)))
            .collect();
        index.replace(&docs, &[], 0).unwrap();
        (dir, index)
    }

    #[test]
    fn an_index_whose_making_a_crash_cut_short_is_made_again() {
        // What a crash of the machine may leave of a new file, which
        // nothing synced: nothing, its first page alone (WAL mode, the
        // schema lost with the log), or part of that page.
        let first_page = |path: &Path| {
            let conn = Connection::open(path).unwrap();
            conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        };
        let part = |path: &Path| {
            first_page(path);
            let bytes = std::fs::read(path).unwrap();
            std::fs::write(path, &bytes[..100]).unwrap();
        };
        let nothing = |path: &Path| std::fs::write(path, b"").unwrap();
        let left: [&dyn Fn(&Path); 3] = [&nothing, &first_page, &part];
        for leave in left {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index.sqlite");
            leave(&path);
            let index = SqliteIndex::open(&path).unwrap();
            let text = "# Ops\n\nThe runbook.\n";
            let stamp = Stamp { len: text.len() as u64, modified_ns: 1, tag: 0 };
            index
                .replace(&[IndexedDoc::from_text(DocId::parse("ops").unwrap(), text, stamp)], &[], 0)
                .unwrap();
            let conn = index.conn();
            let count: i64 = conn.query_row("SELECT count(*) FROM docs", [], |r| r.get(0)).unwrap();
            assert_eq!(count, 1);
            // Writes after the making are synced as WAL's NORMAL syncs them.
            let synchronous: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
            assert_eq!(synchronous, 1);
        }
    }

    #[test]
    fn the_terms_bounding_closeness_are_those_of_the_words_excerpts_match() {
        let (_dir, index) = indexed(&[(
            "db",
            "# DB\n\nPostgreSQL and postgres, on the internet or the internal network; config in configs.\n\
             The alert is firing, fires everywhere.\n",
        )]);
        let conn = index.conn();
        let close = |words: &[&str]| {
            let terms: Vec<QueryTerm> =
                words.iter().map(|w| QueryTerm { word: (*w).into(), weight: 1.0 }).collect();
            close_terms(&conn, &terms).unwrap()
        };
        let counted = |pairs: &[(&str, usize)]| -> Option<Vec<(String, usize)>> {
            Some(pairs.iter().map(|(t, i)| ((*t).to_owned(), *i)).collect())
        };
        assert_eq!(
            close(&["postgres", "internal", "configuration", "fire"]),
            counted(&[("config", 2), ("intern", 1), ("postgr", 0), ("postgresql", 0)]),
            "`internet` is not `internal`; `firing` and `fires` are not `fire` to the text's matcher"
        );
        assert_eq!(close(&["db", "on"]), counted(&[("db", 0), ("on", 1)]), "short words only as themselves");
        assert_eq!(close(&["东京", "db"]), None, "a CJK bigram is found inside words: no bound");
    }

    #[test]
    fn bounds_leave_out_only_what_reading_every_row_would_not_rank() {
        // `team` is in most passages: taken to be in every window, its
        // postings are not read for the bounds.
        let mut docs: Vec<(String, String)> = (0..12)
            .map(|i| (format!("n{i}"), format!("# Note {i}\n\nThe team met about item {i}, then lunch.\n")))
            .collect();
        docs.extend((0..12).map(|i| {
            let filler = "word ".repeat(i * 7);
            (format!("c{i}"), format!("# Cello {i}\n\nThe cello {filler} exam with the team, lesson {i}.\n"))
        }));
        let docs: Vec<(&str, &str)> = docs.iter().map(|(id, text)| (id.as_str(), text.as_str())).collect();
        let (_dir, index) = indexed(&docs);
        let bounds = bounds_hold(&index, "team cello exam");
        assert!(bounds.contains(&1.0), "`cello exam with the team` holds every word together");
        let conn = index.conn();
        let request =
            SearchRequest { query: "team cello exam".into(), limit: 3, scope: None, under: None, now_ns: 10 };
        // With a limit past the candidates, no candidate can be left out:
        // every row is read.
        let search = |limit: usize| {
            let mut reader = index.reader.lock().unwrap();
            let mut ranked = rank_query(&conn, &mut reader, &request.query).unwrap().unwrap();
            let close = ranked.close.as_ref().unwrap();
            assert_eq!(close.everywhere, [true, false, false], "`team` is in most passages");
            let mut documents = index.documents.lock().unwrap();
            let request = SearchRequest { limit, ..request.clone() };
            let matched = execute(&conn, &reader, &mut documents, Some(&mut ranked), None, &request).unwrap();
            let read = matched.matches.len();
            let hits = memtree_core::ranking::rank(matched.matches, 3, request.now_ns);
            (hits.into_iter().map(|h| (h.id.to_string(), h.score.to_bits())).collect::<Vec<_>>(), read)
        };
        let ((bounded, read), (every, all)) = (search(3), search(1000));
        assert_eq!(bounded, every);
        assert_eq!(all, 12, "the passages holding `cello` or `exam`");
        assert!(read < all, "{read} of {all} candidates read");
    }

    /// Checks that no passage's text holds the words of `query` closer
    /// than its bound; returns the bounds.
    fn bounds_hold(index: &SqliteIndex, query: &str) -> Vec<f64> {
        let conn = index.conn();
        let mut reader = index.reader.lock().unwrap();
        let ranked = rank_query(&conn, &mut reader, query).unwrap().unwrap();
        let matcher = Matcher::new(&ranked.plan.terms);
        let texts: Vec<(i64, String)> = conn
            .prepare("SELECT rowid, text FROM passages")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let passages: Vec<(i64, Passage)> =
            texts.iter().map(|(rowid, _)| (*rowid, reader.passage(*rowid).unwrap())).collect();
        let bounds = closeness_bounds(&passages, &matcher, ranked.close.as_ref());
        for ((_, text), bound) in texts.iter().zip(&bounds) {
            let closeness = matcher.window_coverage(text, PROXIMITY_WORDS);
            assert!(closeness <= bound + 1e-12, "{closeness} > {bound}: {text}");
        }
        bounds
    }

    #[test]
    fn a_passage_whose_words_mix_scripts_is_not_bounded() {
        // `violin` is a word of the text (`violin東京`) but not of the typo
        // vocabulary, which leaves out words with CJK.
        let (_dir, index) = indexed(&[
            ("m", "# M\n\nviolin東京 exam\n"),
            ("n", "# N\n\nexam alone\n"),
            ("o", "# O\n\nNothing.\n"),
        ]);
        let bounds = bounds_hold(&index, "violin exam");
        assert!(bounds.contains(&1.0));
    }

    #[test]
    fn a_passage_is_stored_with_whether_it_links_and_whether_its_words_mix_scripts() {
        assert_eq!(passage_flags("See [[infra]]."), LINKS);
        assert_eq!(
            passage_flags("ReactとVueの比較"),
            MIXED_WORDS,
            "`React` and `Vue`: two terms of one word"
        );
        assert_eq!(passage_flags("東京でReact"), MIXED_WORDS, "`React`: a term the typo vocabulary lacks");
        assert_eq!(passage_flags("東京 tokyo, 東京タワー: v2"), 0, "CJK alone, letters alone");
        assert_eq!(passage_flags("- [[a]] v2東京v3"), LINKS | MIXED_WORDS);
    }

    /// The indexing thread reads the queue, then the files, then writes
    /// what it read; a write of the same document can land in between.
    #[test]
    fn links_queued_after_the_text_was_read_are_kept() {
        let (_dir, index) = indexed(&[("b", "# B\n")]);
        let id = |s: &str| DocId::parse(s).unwrap();
        let text = |s: &str| {
            IndexedDoc::from_text(id("b"), s, Stamp { len: s.len() as u64, modified_ns: 2, tag: 0 })
        };
        let parents = |child: &str| index.parents(&id(child)).unwrap();
        index.enqueue(&[Queued::put(id("b"), "- [[c]]\n")]).unwrap();

        let read_after = index.queue_end().unwrap();
        let read = text("- [[c]]\n");
        index.enqueue(&[Queued::put(id("b"), "- [[c]]\n- [[d]]\n")]).unwrap();
        index.replace(&[read], &[], read_after).unwrap();
        assert_eq!((parents("c"), parents("d")), (vec![id("b")], vec![id("b")]), "the newer write's links");

        // Read after every queued write: the text's links are the newest
        // (an edit made outside memtree).
        let read_after = index.queue_end().unwrap();
        index.replace(&[text("- [[e]]\n")], &[], read_after).unwrap();
        assert_eq!((parents("c"), parents("e")), (vec![], vec![id("b")]));

        // Read as gone, and written again since.
        let read_after = index.queue_end().unwrap();
        index.enqueue(&[Queued::put(id("b"), "- [[f]]\n")]).unwrap();
        index.replace(&[], &[id("b")], read_after).unwrap();
        assert_eq!((parents("e"), parents("f")), (vec![], vec![id("b")]));
        assert_eq!(index.stamp(&id("b")).unwrap(), None, "its text is the queue's to index again");
        index.replace(&[], &[id("b")], index.queue_end().unwrap()).unwrap();
        assert_eq!(parents("f"), vec![]);
    }

    #[test]
    fn a_restamp_sets_the_stamps_of_unchanged_texts_only() {
        let (_dir, index) = indexed(&[("a", "# A\n"), ("b", "# B\n")]);
        let id = |s: &str| DocId::parse(s).unwrap();
        let hashes: HashMap<DocId, u64> =
            index.stamps().unwrap().into_iter().map(|(id, _, h)| (id, h)).collect();
        let copied = Stamp { len: 4, modified_ns: 7, tag: 9 };
        // `b` was rewritten after its text was read: its hash moved on.
        index
            .restamp(&[(id("a"), copied, hashes[&id("a")]), (id("b"), copied, hashes[&id("b")] ^ 1)])
            .unwrap();
        assert_eq!(index.stamp(&id("a")).unwrap(), Some(copied));
        assert_eq!(index.stamp(&id("b")).unwrap(), Some(Stamp { len: 4, modified_ns: 1, tag: 0 }), "kept");
    }

    #[test]
    fn a_backend_error_keeps_its_sqlite_cause() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        // Under a file: no folder can be made there, even by root.
        let path = dir.path().join("file").join("index.sqlite");
        let error = SqliteIndex::open(&path).err().expect("no index under a file");
        let cause = std::error::Error::source(&error).expect("a cause");
        assert!(cause.is::<rusqlite::Error>(), "{cause:?}");
        assert_eq!(error.to_string(), format!("index {}: {cause}", path.display()));
    }

    #[test]
    fn a_statement_taken_again_from_the_cache_is_not_prepared_again() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_writable(&dir.path().join("index.sqlite")).unwrap();
        // SQLite's planner looks at a value bound for `?1` when it weighs
        // the join's other table.
        let sql = "SELECT d.title FROM passages p JOIN docs d ON d.id = p.doc WHERE p.rowid = ?1";
        for rowid in 0..3 {
            let mut stmt = conn.prepare_cached(sql).unwrap();
            let _: Option<String> = stmt.query_row([rowid], |r| r.get(0)).optional().unwrap();
        }
        let stmt = conn.prepare_cached(sql).unwrap();
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0);
    }
}
