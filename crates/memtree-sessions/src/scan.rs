//! Scanning transcript folders into the session index, incrementally: each
//! file's read offset is kept, so a re-scan reads only what was appended
//! since, and a last line still being written is left for the next scan.
//! One transaction per file, taken before the file's row is read: two
//! processes scanning at once never index a line twice.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memtree_core::secrets;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::index::SessionIndex;
use crate::record::{Agent, Event, FileState, Item, MAX_INDEXED, Parsed, capped};
use crate::summary::Summary;
use crate::{SessionError, claude, codex};

/// Bytes read from a transcript at a time (tiny in unit tests, so that
/// they cross chunk ends).
const CHUNK: u64 = if cfg!(test) { 97 } else { 16 << 20 };
/// A line longer than this is skipped (counted malformed), not held whole.
const MAX_LINE: usize = if cfg!(test) { 1000 } else { 64 << 20 };

/// Where transcripts are, and what to leave out.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    pub claude: Option<PathBuf>,
    pub codex: Option<PathBuf>,
    /// Only files changed in the last this many days.
    pub days: Option<u32>,
    /// Projects kept out: a project's name, or part of its folder's path.
    pub exclude: Vec<String>,
}

/// What a scan did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Scanned {
    /// Transcript files found.
    pub files: usize,
    /// Of them, read (new or grown).
    pub read: usize,
    pub bytes: u64,
    pub lines: usize,
    /// Passages added to the index.
    pub passages: usize,
    /// Lines that are not JSON (or not the shape of their kind).
    pub malformed: usize,
    /// Lines of a kind the readers do not know.
    pub unknown: usize,
    /// Files whose last line is still being written (left for next time).
    pub partial: usize,
    /// Files of excluded projects.
    pub excluded: usize,
}

impl SessionIndex {
    /// Indexes what the transcript folders hold that is not indexed yet.
    pub fn scan(&self, options: &ScanOptions) -> Result<Scanned, SessionError> {
        let mut scanned = Scanned::default();
        let mut conn = self.lock();
        forget_excluded(&conn, &options.exclude)?;
        let cutoff = options.days.map(|d| SystemTime::now() - Duration::from_secs(u64::from(d) * 86_400));
        for (agent, root) in [(Agent::Claude, &options.claude), (Agent::Codex, &options.codex)] {
            let Some(root) = root.as_deref().filter(|r| r.is_dir()) else { continue };
            for path in transcripts(agent, root) {
                let Ok(meta) = std::fs::metadata(&path) else { continue };
                let modified = meta.modified().unwrap_or(UNIX_EPOCH);
                if cutoff.is_some_and(|c| modified < c) {
                    continue;
                }
                scanned.files += 1;
                scan_file(&mut conn, agent, &path, meta.len(), modified, options, &mut scanned)?;
            }
        }
        Ok(scanned)
    }
}

/// The transcript files under `root`, in path order.
fn transcripts(agent: Agent, root: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            let name = e.file_name().to_string_lossy();
            name.ends_with(".jsonl") && (agent == Agent::Claude || name.starts_with("rollout-"))
        })
        .map(walkdir::DirEntry::into_path)
        .collect()
}

/// Drops what was indexed of projects now excluded, and marks their files
/// so that lifting the exclusion reads them again.
fn forget_excluded(conn: &Connection, exclude: &[String]) -> Result<(), SessionError> {
    if exclude.is_empty() {
        return Ok(());
    }
    let mut forget = Vec::new();
    {
        let mut all = conn.prepare("SELECT key, summary FROM sessions")?;
        let rows = all.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (key, json) = row?;
            let Ok(summary) = serde_json::from_str::<Summary>(&json) else { continue };
            if excluded(&summary.project, summary.cwd.as_deref(), exclude) {
                forget.push(key);
            }
        }
    }
    for key in forget {
        conn.execute("DELETE FROM passages WHERE key = ?1", [&key])?;
        conn.execute("DELETE FROM sessions WHERE key = ?1", [&key])?;
        conn.execute(
            "UPDATE files SET state = json_set(state, '$.excluded', json('true')) WHERE key = ?1",
            [&key],
        )?;
    }
    Ok(())
}

fn scan_file(
    conn: &mut Connection,
    agent: Agent,
    path: &Path,
    size: u64,
    modified: SystemTime,
    options: &ScanOptions,
    scanned: &mut Scanned,
) -> Result<(), SessionError> {
    let key = path.to_string_lossy().into_owned();
    let mtime = modified.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let row: Option<(i64, String)> = tx
        .query_row("SELECT offset, state FROM files WHERE path = ?1", [&key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let (mut offset, mut state) = match row {
        Some((offset, state)) => {
            (offset as u64, serde_json::from_str::<FileState>(&state).unwrap_or_default())
        }
        None => (0, FileState::default()),
    };
    if size < offset {
        // Rewritten shorter: read it again from the start.
        tx.execute("DELETE FROM passages WHERE file = ?1", [&key])?;
        (offset, state) = (0, FileState::default());
    }
    let was_excluded = state.excluded;
    if was_excluded && !excluded(&project_of(agent, path, &state), state.cwd.as_deref(), &options.exclude) {
        (offset, state) = (0, FileState::default());
    }
    if size == offset {
        scanned.excluded += usize::from(state.excluded);
        return Ok(tx.commit()?);
    }
    let io = |e: std::io::Error| SessionError::Io { path: path.into(), why: e.to_string() };
    let mut file = std::fs::File::open(path).map_err(io)?;
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    // Read a chunk at a time, so that memory stays bounded whatever the
    // file's size; a line is parsed once it is complete.
    let mut carry: Vec<u8> = Vec::new();
    let mut consumed = 0u64;
    let mut skipping = false;
    let mut any = false;
    loop {
        let read = (&mut file).take(CHUNK).read_to_end(&mut carry).map_err(io)?;
        if read == 0 {
            break;
        }
        if skipping {
            // The rest of a line too long to index.
            let Some(end) = carry.iter().position(|b| *b == b'\n') else {
                consumed += carry.len() as u64;
                carry.clear();
                continue;
            };
            consumed += end as u64 + 1;
            carry.drain(..=end);
            skipping = false;
        }
        let Some(last) = carry.iter().rposition(|b| *b == b'\n') else {
            if carry.len() > MAX_LINE {
                scanned.malformed += 1;
                consumed += carry.len() as u64;
                carry.clear();
                skipping = true;
            }
            continue;
        };
        let complete = last + 1;
        let events = parse_lines(agent, &carry[..complete], &mut state, scanned);
        let project = project_of(agent, path, &state);
        state.excluded = excluded(&project, state.cwd.as_deref(), &options.exclude);
        if !state.excluded && !events.is_empty() {
            scanned.passages += index_events(&tx, agent, path, &key, &project, &state, &events)?;
        }
        any = true;
        scanned.bytes += complete as u64;
        consumed += complete as u64;
        carry.drain(..complete);
    }
    if !carry.is_empty() {
        scanned.partial += 1;
    }
    scanned.read += usize::from(any);
    scanned.excluded += usize::from(state.excluded);
    let offset = offset + consumed;
    let session_key = format!("{}:{}", agent.as_str(), session_of(path, &state));
    let state_json = serde_json::to_string(&state).expect("file state serialises");
    tx.execute(
        "INSERT INTO files(path, agent, key, offset, size, mtime, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(path) DO UPDATE SET key = ?3, offset = ?4, size = ?5, mtime = ?6, state = ?7",
        params![key, agent.as_str(), session_key, offset as i64, size as i64, mtime, state_json],
    )?;
    Ok(tx.commit()?)
}

/// The events of complete lines, counting what is skipped.
fn parse_lines(agent: Agent, bytes: &[u8], state: &mut FileState, scanned: &mut Scanned) -> Vec<Event> {
    let mut events = Vec::new();
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else {
            scanned.malformed += 1;
            continue;
        };
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        scanned.lines += 1;
        let parsed = match agent {
            Agent::Claude => claude::parse(line, state),
            Agent::Codex => codex::parse(line, state),
        };
        match parsed {
            Parsed::Events(found) => events.extend(found),
            Parsed::Skipped => {}
            Parsed::Unknown => scanned.unknown += 1,
            Parsed::Malformed => scanned.malformed += 1,
        }
    }
    events
}

/// Adds a file's new events to the passages and its session's summary.
fn index_events(
    tx: &Connection,
    agent: Agent,
    path: &Path,
    file: &str,
    project: &str,
    state: &FileState,
    events: &[Event],
) -> Result<usize, SessionError> {
    let session = session_of(path, state);
    let key = format!("{}:{session}", agent.as_str());
    let mut summary = SessionIndex::summary(tx, &key)?
        .unwrap_or_else(|| Summary::new(session, agent, project.to_owned(), state.cwd.clone()));
    if summary.cwd.is_none() {
        summary.cwd.clone_from(&state.cwd);
    }
    let mask = |text: &str| secrets::mask(text).into_owned();
    let mut insert = tx.prepare_cached(
        "INSERT INTO passages(text, key, project, time, role, file) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut added = 0;
    // A line without a time (a title at the top) takes the nearest before
    // it, else the first after it.
    let mut last_time = events.iter().find_map(|e| e.time.as_ref());
    for event in events {
        summary.add(event, mask);
        last_time = event.time.as_ref().or(last_time);
        let (role, text) = match &event.item {
            Item::Request(text) => ("user", text.clone()),
            Item::Reply(text) if event.sidechain => ("subagent", text.clone()),
            Item::Reply(text) => ("agent", text.clone()),
            Item::Tool { name, detail, .. } => ("tool", format!("{name}: {detail}")),
            Item::Output(text) => ("output", text.clone()),
            Item::Title(text) => ("title", text.clone()),
            Item::Mark => continue,
        };
        let time = event.time.as_ref().or(last_time).or(summary.to.as_ref()).cloned();
        insert.execute(params![mask(capped(&text, MAX_INDEXED)), key, project, time, role, file])?;
        added += 1;
    }
    let json = serde_json::to_string(&summary).expect("summaries serialise");
    tx.execute(
        "INSERT INTO sessions(key, project, ended, summary) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(key) DO UPDATE SET project = ?2, ended = ?3, summary = ?4",
        params![key, summary.project, summary.to, json],
    )?;
    Ok(added)
}

/// The session a file's lines belong to.
fn session_of(path: &Path, state: &FileState) -> String {
    state.session.clone().unwrap_or_else(|| session_from_name(path))
}

/// A session's id from its file name: Claude Code's `<uuid>.jsonl`, Codex's
/// `rollout-<time>-<uuid>.jsonl`.
fn session_from_name(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    // A uuid is the last five dash-separated groups.
    let parts: Vec<&str> = stem.rsplitn(6, '-').collect();
    if parts.len() == 6 { parts[..5].iter().rev().copied().collect::<Vec<_>>().join("-") } else { stem }
}

/// A session's project: the last folder of its working directory, or the
/// Claude Code project folder it sits in.
fn project_of(agent: Agent, path: &Path, state: &FileState) -> String {
    if let Some(name) = state
        .cwd
        .as_deref()
        .and_then(|c| c.trim_end_matches('/').rsplit('/').next())
        .filter(|n| !n.is_empty())
    {
        return name.to_owned();
    }
    match agent {
        Agent::Claude => path
            .parent()
            .and_then(Path::file_name)
            .map_or_else(|| "unknown".to_owned(), |n| n.to_string_lossy().into_owned()),
        Agent::Codex => "unknown".to_owned(),
    }
}

/// Whether a project is kept out: by its name, or by part of its folder.
/// A Claude Code transcript that names no folder is known by its project
/// folder's name, the folder's path with `/` and `.` made `-`.
fn excluded(project: &str, cwd: Option<&str>, exclude: &[String]) -> bool {
    let folder = project.to_ascii_lowercase();
    exclude.iter().any(|e| {
        let dashed = e.replace(['/', '.'], "-").to_ascii_lowercase();
        let by_folder_name = cwd.is_none()
            && folder.starts_with('-')
            && if e.contains('/') {
                folder.contains(&dashed)
            } else {
                folder.ends_with(&format!("-{dashed}"))
            };
        e.eq_ignore_ascii_case(project)
            || (e.contains('/') && cwd.is_some_and(|c| c.contains(e.as_str())))
            || by_folder_name
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_come_from_file_names_too() {
        let codex = Path::new("rollout-2025-11-18T09-14-03-019a963e-17ee-75a6-a04f-54225a3a80c4.jsonl");
        assert_eq!(session_from_name(codex), "019a963e-17ee-75a6-a04f-54225a3a80c4");
        assert_eq!(
            session_from_name(Path::new("f1841639-d15f-4a27-8106-f89023b3ea24.jsonl")),
            "f1841639-d15f-4a27-8106-f89023b3ea24"
        );
    }

    #[test]
    fn lines_cross_chunks_and_an_overlong_one_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("claude").join("-p");
        std::fs::create_dir_all(&project).unwrap();
        let line = |text: &str| {
            format!(
                r#"{{"type":"user","sessionId":"s1","cwd":"/p","timestamp":"2026-01-01T00:00:00Z","message":{{"content":"{text}"}}}}"#
            )
        };
        let body = format!(
            "{}\n{}\n{}\n{}",
            line("first request"),
            line(&"x".repeat(3000)),
            line("last request"),
            "{\"type\""
        );
        std::fs::write(project.join("s1.jsonl"), &body).unwrap();
        let index = SessionIndex::open(&dir.path().join("s.sqlite")).unwrap();
        let options = ScanOptions { claude: Some(dir.path().join("claude")), ..ScanOptions::default() };
        let scanned = index.scan(&options).unwrap();
        assert_eq!((scanned.malformed, scanned.partial, scanned.passages), (1, 1, 2), "{scanned:?}");
        let summary = index.recent(&crate::Filter::default(), 5).unwrap().remove(0);
        assert_eq!(summary.requests, ["first request", "last request"]);
        // The unfinished last line waits; nothing before it is read again.
        let again = index.scan(&options).unwrap();
        assert_eq!((again.bytes, again.passages, again.partial), (0, 0, 1));
    }

    #[test]
    fn exclusions_match_a_name_or_a_folder() {
        let ex = vec!["payments-api".to_owned(), "/ops/".to_owned()];
        assert!(excluded("Payments-API", None, &ex));
        assert!(excluded("deploy", Some("/home/a/ops/deploy"), &ex));
        assert!(!excluded("web", Some("/home/a/web"), &ex));
        assert!(excluded("-home-a-src-payments-api", None, &ex), "a project folder's name");
        assert!(!excluded("-home-a-src-payments-api-v2", None, &ex));
    }
}
