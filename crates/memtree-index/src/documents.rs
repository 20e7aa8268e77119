//! What searches look up of documents, kept until the index changes: each
//! document's parent (for the hits' paths) and its row (id, stamp, scope,
//! the signals ranking weighs), by the rowid its passages name. A search
//! joins some sixty candidate passages to their documents, and the next
//! search mostly the same ones: held here, each is a hash lookup instead of
//! B-tree descents, which were a third of a search's reading of the index
//! file.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use memtree_core::DocId;
use memtree_core::front_matter::Scope;
use memtree_core::index::DocumentSignals;
use memtree_core::storage::Stamp;
use rusqlite::{Connection, OptionalExtension};

use crate::postings::counters;

/// Past this many documents looked up, the ones held are forgotten (about
/// 3 MiB): a session that searches a whole large store keeps no more.
const HELD: usize = 20_000;

/// Documents looked up since the index last changed.
#[derive(Default)]
pub struct Documents {
    /// The index's change counters the documents are current at.
    at: (i64, u64),
    parents: HashMap<String, Option<String>>,
    /// By the rows' rowids, which passages name.
    rows: HashMap<i64, Option<Document>>,
}

/// A document's row as its passages' matches carry it.
#[derive(Debug, Clone)]
pub struct Document {
    pub id: DocId,
    pub stamp: Stamp,
    pub scope: Option<Scope>,
    pub signals: DocumentSignals,
}

impl Documents {
    /// Forgets the documents looked up if the index changed since.
    pub fn check(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let at = counters(conn)?;
        if at != self.at || self.parents.len() + self.rows.len() > HELD {
            self.at = at;
            self.parents.clear();
            self.rows.clear();
        }
        Ok(())
    }

    /// The parent of document `id` by the indexed links, if it has one, as
    /// of the last [`Documents::check`].
    pub fn parent(&mut self, conn: &Connection, id: &str) -> rusqlite::Result<Option<String>> {
        if let Some(parent) = self.parents.get(id) {
            return Ok(parent.clone());
        }
        let parent: Option<String> = conn
            .prepare_cached("SELECT parent FROM links WHERE child = ?1 LIMIT 1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        self.parents.insert(id.to_owned(), parent.clone());
        Ok(parent)
    }

    /// The document of `docs` row `rowid` (none for a row gone), as of the
    /// last [`Documents::check`].
    pub fn row(&mut self, conn: &Connection, rowid: i64) -> rusqlite::Result<Option<&Document>> {
        let row = match self.rows.entry(rowid) {
            Entry::Occupied(held) => held.into_mut(),
            Entry::Vacant(entry) => entry.insert(
                conn.prepare_cached(
                    "SELECT d.len, d.mtime, d.tag, d.scope, d.priority, d.confidence, d.status, d.expires, u.count, d.id
                     FROM docs d LEFT JOIN usage u ON u.id = d.id WHERE d.rowid = ?1",
                )?
                .query_row([rowid], document)
                .optional()?
                .flatten(),
            ),
        };
        Ok(row.as_ref())
    }
}

/// A `docs` row as a document; none if its id is not one.
fn document(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<Document>> {
    let confidence: Option<String> = r.get(5)?;
    let status: Option<String> = r.get(6)?;
    let scope: Option<String> = r.get(3)?;
    let Ok(id) = DocId::parse(&r.get::<_, String>(9)?) else { return Ok(None) };
    Ok(Some(Document {
        id,
        stamp: Stamp {
            len: r.get::<_, i64>(0)? as u64,
            modified_ns: r.get::<_, i64>(1)? as u64,
            tag: r.get::<_, i64>(2)? as u64,
        },
        scope: scope.as_deref().and_then(Scope::parse),
        signals: DocumentSignals {
            priority: r.get(4)?,
            tentative: confidence.as_deref() == Some("tentative"),
            deprecated: status.as_deref() == Some("deprecated"),
            expires: r.get(7)?,
            uses: r.get::<_, Option<i64>>(8)?.unwrap_or(0) as u64,
        },
    }))
}
