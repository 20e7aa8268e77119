//! The session index: a SQLite file of its own beside the documents'
//! index (a long scan never holds the documents' index), with each
//! transcript file's read offset and state, each session's summary, and
//! an FTS5 table of the indexed text (secrets masked).

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use crate::SessionError;
use crate::summary::Summary;

/// Bumped when the tables change: an index of another version is rebuilt
/// by the next scan.
const SCHEMA_VERSION: i64 = 1;

pub struct SessionIndex {
    pub(crate) conn: Mutex<Connection>,
}

/// Which sessions a search or a listing looks at.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// A project's name, or part of its folder.
    pub project: Option<String>,
    /// Only what happened at or after this time (ISO 8601).
    pub since: Option<String>,
}

/// One ranked passage of a transcript.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Excerpt {
    pub session: String,
    pub agent: String,
    pub project: String,
    pub time: String,
    /// user, agent, tool, output or title.
    pub role: String,
    pub text: String,
    pub score: f64,
}

impl SessionIndex {
    pub fn open(path: &Path) -> Result<SessionIndex, SessionError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| SessionError::Io { path: path.into(), why: e.to_string() })?;
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            conn.execute_batch(
                "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS sessions; DROP TABLE IF EXISTS passages;",
            )?;
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS files(
                 path TEXT PRIMARY KEY, agent TEXT NOT NULL, key TEXT, offset INTEGER NOT NULL,
                 size INTEGER NOT NULL, mtime INTEGER NOT NULL, state TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS sessions(
                 key TEXT PRIMARY KEY, project TEXT NOT NULL, ended TEXT, summary TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS sessions_ended ON sessions(ended);
             CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
                 text, key UNINDEXED, project UNINDEXED, time UNINDEXED, role UNINDEXED, file UNINDEXED,
                 tokenize = 'porter unicode61 remove_diacritics 2');",
        )?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        Ok(SessionIndex { conn: Mutex::new(conn) })
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The passages that best match `query`, best first: every word if
    /// some passage has them all, else any.
    pub fn search(&self, query: &str, filter: &Filter, limit: usize) -> Result<Vec<Excerpt>, SessionError> {
        let conn = self.lock();
        for any in [false, true] {
            let Some(matching) = fts_query(query, any) else { return Ok(Vec::new()) };
            let mut statement = conn.prepare_cached(
                "SELECT p.key, p.project, p.time, p.role, snippet(passages, 0, '', '', '…', 24), bm25(passages)
                 FROM passages p
                 WHERE passages MATCH ?1
                   AND (?2 IS NULL OR p.project LIKE ?2 ESCAPE '\\')
                   AND (?3 IS NULL OR p.time >= ?3)
                 ORDER BY bm25(passages) LIMIT ?4",
            )?;
            let project = filter.project.as_deref().map(like);
            let rows = statement.query_map(params![matching, project, filter.since, limit as i64], |r| {
                let key: String = r.get(0)?;
                let (agent, session) = key.split_once(':').map_or(("", key.as_str()), |(a, s)| (a, s));
                Ok(Excerpt {
                    session: session.to_owned(),
                    agent: agent.to_owned(),
                    project: r.get(1)?,
                    time: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                    role: r.get(3)?,
                    text: r.get(4)?,
                    score: -r.get::<_, f64>(5)?,
                })
            })?;
            let found = rows.collect::<Result<Vec<_>, _>>()?;
            if !found.is_empty() || any {
                return Ok(found);
            }
        }
        Ok(Vec::new())
    }

    /// The sessions that ended most recently, newest first.
    pub fn recent(&self, filter: &Filter, limit: usize) -> Result<Vec<Summary>, SessionError> {
        let conn = self.lock();
        let mut statement = conn.prepare_cached(
            "SELECT summary FROM sessions
             WHERE (?1 IS NULL OR project LIKE ?1 ESCAPE '\\' OR summary LIKE ?4 ESCAPE '\\')
               AND (?2 IS NULL OR ended >= ?2)
             ORDER BY ended DESC LIMIT ?3",
        )?;
        let project = filter.project.as_deref().map(like);
        let in_cwd = filter.project.as_deref().map(|p| format!("%\"cwd\":\"%{}%\"%", escape_like(p)));
        let rows = statement
            .query_map(params![project, filter.since, limit as i64, in_cwd], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for json in rows {
            if let Ok(summary) = serde_json::from_str(&json?) {
                out.push(summary);
            }
        }
        Ok(out)
    }

    /// How many sessions and passages are indexed.
    pub fn counts(&self) -> Result<(usize, usize), SessionError> {
        let conn = self.lock();
        let sessions: i64 = conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?;
        let passages: i64 = conn.query_row("SELECT count(*) FROM passages", [], |r| r.get(0))?;
        Ok((sessions as usize, passages as usize))
    }

    pub(crate) fn summary(conn: &Connection, key: &str) -> Result<Option<Summary>, SessionError> {
        let json: Option<String> =
            conn.query_row("SELECT summary FROM sessions WHERE key = ?1", [key], |r| r.get(0)).optional()?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }
}

/// A `LIKE` pattern for a project filter: its name or part of it.
fn like(project: &str) -> String {
    format!("%{}%", escape_like(project))
}

fn escape_like(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// An FTS5 query of `query`'s words, each quoted (so no word is read as
/// an operator): all of them, or any.
fn fts_query(query: &str, any: bool) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(if any { " OR " } else { " " }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_words_never_operators() {
        assert_eq!(fts_query("NOT a-b \"c\"", false).as_deref(), Some("\"NOT\" \"a\" \"b\" \"c\""));
        assert_eq!(fts_query("x y", true).as_deref(), Some("\"x\" OR \"y\""));
        assert_eq!(fts_query("—", false), None);
    }
}
