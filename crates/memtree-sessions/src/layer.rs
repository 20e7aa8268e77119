//! `Sessions`: the layer as its adapters (MCP tools, CLI) use it: one
//! index, the folders it scans, scans one at a time in this process, and
//! the answers rendered for an agent (compact, secrets already masked).

use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::SessionError;
use crate::index::{Excerpt, Filter, SessionIndex};
use crate::scan::{ScanOptions, Scanned};
use crate::summary::Summary;

/// Days an agent's look at recent sessions goes back unless told.
pub const RECENT_DAYS: u32 = 7;
/// Sessions listed, and excerpts found, unless told.
pub const RECENT_SESSIONS: usize = 10;
pub const SEARCH_HITS: usize = 8;

pub struct Sessions {
    index: SessionIndex,
    options: ScanOptions,
    scanning: Mutex<()>,
}

impl Sessions {
    pub fn open(index_file: &Path, options: ScanOptions) -> Result<Sessions, SessionError> {
        Ok(Sessions { index: SessionIndex::open(index_file)?, options, scanning: Mutex::new(()) })
    }

    pub fn options(&self) -> &ScanOptions {
        &self.options
    }

    /// Indexes what was appended since the last scan (one scan at a time).
    pub fn scan(&self) -> Result<Scanned, SessionError> {
        let _one = self.scanning.lock().unwrap_or_else(|e| e.into_inner());
        self.index.scan(&self.options)
    }

    pub fn search(&self, query: &str, filter: &Filter, limit: usize) -> Result<Vec<Excerpt>, SessionError> {
        self.index.search(query, filter, limit)
    }

    pub fn recent(&self, filter: &Filter, limit: usize) -> Result<Vec<Summary>, SessionError> {
        self.index.recent(filter, limit)
    }

    pub fn counts(&self) -> Result<(usize, usize), SessionError> {
        self.index.counts()
    }
}

/// A filter for `project` and the last `days` days.
pub fn filter(project: Option<String>, days: Option<u32>) -> Filter {
    let since = days.map(|d| {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |t| t.as_secs());
        let then = now.saturating_sub(u64::from(d) * 86_400);
        memtree_core::date::iso_datetime(then * 1_000_000_000)
    });
    Filter { project: project.filter(|p| !p.trim().is_empty()), since }
}

/// Excerpts as an agent reads them: one block per hit, its place first.
pub fn render_excerpts(hits: &[Excerpt]) -> String {
    if hits.is_empty() {
        return "No session matches.".to_owned();
    }
    hits.iter()
        .map(|h| {
            let text = h.text.split_whitespace().collect::<Vec<_>>().join(" ");
            format!(
                "[{} {} · {} · {}] {}: {text}",
                h.agent,
                short(&h.session),
                h.project,
                minutes(&h.time),
                h.role
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Sessions as compact JSON, for an agent to pick what to remember.
pub fn render_recent(sessions: &[Summary]) -> String {
    let list: Vec<serde_json::Value> = sessions
        .iter()
        .map(|s| {
            let mut v = serde_json::json!({
                "session": short(&s.session),
                "agent": s.agent,
                "project": s.project,
                "from": s.from.as_deref().map(minutes),
                "to": s.to.as_deref().map(minutes),
                "requests": s.requests,
                "files": s.files,
                "tools": s.tools,
            });
            if let Some(title) = &s.title {
                v["title"] = title.as_str().into();
            }
            v
        })
        .collect();
    serde_json::to_string(&serde_json::json!({ "sessions": list })).expect("JSON values serialise")
}

/// A session id's first eight characters: enough to tell sessions apart.
fn short(session: &str) -> &str {
    session.get(..8).unwrap_or(session)
}

/// An ISO time to the minute: `2025-11-03T09:12Z`.
fn minutes(time: &str) -> String {
    match time.get(..16) {
        Some(head) if time.len() > 16 => format!("{head}Z"),
        _ => time.to_owned(),
    }
}
