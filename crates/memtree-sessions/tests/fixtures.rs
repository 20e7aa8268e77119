//! The readers and the scan on `tests/fixtures/sessions`: transcripts
//! written to resemble the real files (see its README for every count
//! checked here), with sub-agents, huge outputs, unknown and broken lines,
//! a last line still being written, and secrets.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use memtree_sessions::{Filter, ScanOptions, SessionIndex, Summary};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sessions")
}

/// A copy of the fixtures (a test appends to them) and an index over it.
struct Scan {
    dir: tempfile::TempDir,
    index: SessionIndex,
    options: ScanOptions,
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn scan(exclude: &[&str]) -> Scan {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures(), dir.path());
    let index = SessionIndex::open(&dir.path().join("sessions.sqlite")).unwrap();
    let options = ScanOptions {
        claude: Some(dir.path().join("claude")),
        codex: Some(dir.path().join("codex")),
        days: None,
        exclude: exclude.iter().map(|e| (*e).to_owned()).collect(),
    };
    Scan { dir, index, options }
}

fn summaries(index: &SessionIndex) -> BTreeMap<String, Summary> {
    index
        .recent(&Filter::default(), 100)
        .unwrap()
        .into_iter()
        .map(|s| (s.session[..8].to_owned(), s))
        .collect()
}

fn tools(s: &Summary) -> Vec<(&str, u32)> {
    s.tools.iter().map(|(k, v)| (k.as_str(), *v)).collect()
}

#[test]
fn every_session_is_summarised_as_the_readme_counts() {
    let s = scan(&[]);
    let scanned = s.index.scan(&s.options).unwrap();
    assert_eq!(scanned.files, 12, "{scanned:?}");
    assert_eq!(scanned.malformed, 1, "the partial assistant record in 6c56b958");
    assert_eq!(scanned.unknown, 1, "telemetry-flush");
    assert_eq!(scanned.partial, 2, "e7a57373 and 019aa249 are still being written");

    let all = summaries(&s.index);
    let f = &all["f1841639"];
    assert_eq!((f.project.as_str(), f.requests.len()), ("payments-api", 3));
    assert_eq!(tools(f), [("Bash", 2), ("Edit", 1), ("Grep", 1), ("Read", 1), ("Write", 2)]);
    assert_eq!(
        f.files,
        ["src/jobs/queue.ts", "migrations/0042_job_claims_index.sql", "docs/adr/0007-job-queue-locking.md"]
    );
    assert_eq!(
        (f.from.as_deref(), f.to.as_deref()),
        (Some("2025-11-03T09:12:05.376Z"), Some("2025-11-03T09:17:15.439Z"))
    );
    assert!(f.title.as_deref().unwrap().contains("advisory locks"));

    // Inline sidechain: its prompt is not a request, its tools are counted.
    let side = &all["3e32cf45"];
    assert_eq!(side.requests.len(), 1);
    assert_eq!(tools(side), [("Bash", 1), ("Edit", 1), ("Grep", 1), ("Read", 1), ("Task", 1)]);
    assert!(side.subagent_records > 0);
    // Still being written: what is complete is there.
    assert_eq!(tools(&all["e7a57373"]), [("Bash", 1), ("Edit", 1), ("Read", 1)]);
    assert_eq!(all["6c56b958"].requests.len(), 2, "a compact summary is not a request");
    assert_eq!(all["ec56e896"].requests.len(), 2, "an interrupt marker is not a request");
    // The sub-agent file's records join its parent session.
    let deploy = &all["38b13239"];
    assert_eq!(deploy.requests.len(), 3, "a queued message is counted once");
    assert_eq!(deploy.tools["Task"], 1);
    assert_eq!(deploy.tools["Glob"], 1, "from agent-7c1e4b9a.jsonl");

    let codex = &all["019a963e"];
    assert_eq!((codex.project.as_str(), codex.requests.len()), ("ledger-sync", 3));
    assert_eq!(tools(codex), [("apply_patch", 1), ("shell", 4)]);
    assert_eq!(codex.files, ["Cargo.toml", "src/main.rs"]);
    let ws = &all["019a9c36"];
    assert_eq!(ws.requests.len(), 4);
    assert_eq!(tools(ws), [("apply_patch", 2), ("local_shell", 1), ("shell", 4)]);
    assert_eq!(all["019aa249"].requests.len(), 2, "developer and injected messages are not requests");
    let legacy = &all["8856366d"];
    assert_eq!(
        (legacy.project.as_str(), legacy.requests.len(), legacy.tools["apply_patch"]),
        ("payments-api", 1, 1)
    );
    assert_eq!(legacy.files.len(), 3);
}

#[test]
fn each_fact_is_found_in_its_session() {
    let s = scan(&[]);
    s.index.scan(&s.options).unwrap();
    let cases = [
        ("Postgres advisory locks Redis job queue", "f1841639"),
        ("late fees a day early Sao_Paulo grace period", "3e32cf45"),
        ("flaky test timezone in CI", "6c56b958"),
        ("nightly S3 backup stale key cron", "38b13239"),
        ("pinned rustls ring backend Alpine", "019a963e"),
        ("memory leak unbounded mpsc channel websocket", "019a9c36"),
        ("CSV export streaming Lambda memory limit", "019aa249"),
        ("idempotency keys kept 24 hours", "8856366d"),
    ];
    for (query, session) in cases {
        let hits = s.index.search(query, &Filter::default(), 5).unwrap();
        assert!(!hits.is_empty(), "{query}");
        assert!(hits[0].session.starts_with(session), "{query}: {:?}", &hits[..hits.len().min(2)]);
    }
    let only_web = Filter { project: Some("web.dashboard".into()), since: None };
    assert!(s.index.search("Postgres advisory locks", &only_web, 5).unwrap().is_empty());
    let recent = Filter { project: None, since: Some("2025-11-15".into()) };
    let hits = s.index.search("Postgres advisory locks", &recent, 5).unwrap();
    assert!(
        hits.iter().all(|h| h.time.as_str() >= "2025-11-15" && !h.session.starts_with("f1841639")),
        "{hits:?}"
    );
}

#[test]
fn no_secret_is_indexed_or_shown() {
    let s = scan(&[]);
    s.index.scan(&s.options).unwrap();
    let secrets = [
        "AKIAQ3EGRTV7XK2PLM5N",
        "W/crY2F6zkIO+OSoFPso+FFxc6dADvL20eEGEq5b",
        "ghp_X8XnfCEjRw456fLoewD91ezO35pSneocTOpV",
        "sk-RlclPEm3w2UtaDzmwDh364dDhBibSdXvXFweq8XYkxRsTusj",
        "Pg-dev-7731-hunter2",
        "sk-proj-GoTn0P6bqFb2cNjMtqr4EV5T2i8A7yFHNyoeYubnf2Vdmzel5Zd3uOoL",
        "b3BlbnNzaC1rZXktdjE",
    ];
    // Every byte of the index file, its write-ahead log included.
    drop(s.index);
    let mut stored = Vec::new();
    for name in ["sessions.sqlite", "sessions.sqlite-wal"] {
        stored.extend(std::fs::read(s.dir.path().join(name)).unwrap_or_default());
    }
    let stored = String::from_utf8_lossy(&stored);
    for secret in secrets {
        assert!(!stored.contains(secret), "{secret} is in the index");
    }
    assert!(stored.contains("[masked GitHub token]"));
}

#[test]
fn a_rescan_reads_only_what_was_appended() {
    let s = scan(&[]);
    let first = s.index.scan(&s.options).unwrap();
    let again = s.index.scan(&s.options).unwrap();
    assert_eq!((again.read, again.bytes, again.passages), (0, 0, 0), "nothing new: {again:?}");
    assert_eq!(again.partial, first.partial, "the lines still being written wait");

    // The line being written is finished, and another request follows.
    let path =
        s.dir.path().join("claude/-home-ana-src-payments-api/e7a57373-5aa2-42b7-9ad1-d5e1b9a4e9ca.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = text.rsplit_once('\n').unwrap().1.len();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    let request = r#"{"type":"user","sessionId":"e7a57373-5aa2-42b7-9ad1-d5e1b9a4e9ca","cwd":"/home/ana/src/payments-api","timestamp":"2025-11-21T16:50:00.000Z","isSidechain":false,"message":{"role":"user","content":"also cover the zanzibar refund edge case"}}"#;
    // A stand-in for the rest of the cut line: it becomes one malformed line.
    writeln!(file, "\"}}]}}}}\n{request}").unwrap();
    let third = s.index.scan(&s.options).unwrap();
    assert_eq!(third.read, 1, "{third:?}");
    assert!(
        third.bytes > 0 && (third.bytes as usize) < cut + request.len() + 20,
        "read from the offset: {third:?}"
    );
    assert_eq!(third.partial, first.partial - 1);
    let hits = s.index.search("zanzibar refund", &Filter::default(), 3).unwrap();
    assert!(hits[0].session.starts_with("e7a57373"));
    assert_eq!(summaries(&s.index)["e7a57373"].requests.len(), 2);
}

#[test]
fn excluded_projects_are_never_indexed_and_forgotten_when_excluded_later() {
    let deploy = |index: &SessionIndex| {
        let hits = index.search("nightly S3 backup stale key", &Filter::default(), 20).unwrap();
        hits.iter().filter(|h| h.project.contains("deploy-scripts")).count()
    };
    let s = scan(&["deploy-scripts"]);
    let scanned = s.index.scan(&s.options).unwrap();
    assert_eq!(scanned.excluded, 3, "{scanned:?}");
    assert_eq!(deploy(&s.index), 0);
    assert!(summaries(&s.index).keys().all(|k| k != "38b13239" && k != "7f2bc1b3"));

    let mut later = scan(&[]);
    later.index.scan(&later.options).unwrap();
    assert!(deploy(&later.index) > 0);
    later.options.exclude = vec!["/ops/".into()];
    later.index.scan(&later.options).unwrap();
    assert_eq!(deploy(&later.index), 0);
    // And back in when the exclusion is lifted.
    later.options.exclude.clear();
    later.index.scan(&later.options).unwrap();
    assert!(deploy(&later.index) > 0);
}
