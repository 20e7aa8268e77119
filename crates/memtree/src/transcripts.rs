//! Keeps the session index current under `serve --sessions`: a scan at
//! start, then one whenever the transcript folders change (a file watcher,
//! debounced: an agent writing its transcript appends many lines a
//! second). Scans read only what was appended, off the request path.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use memtree_sessions::Sessions;
use notify::{RecursiveMode, Watcher as _};

/// Changes arriving within this window are scanned together.
const QUIET: Duration = Duration::from_millis(500);
/// A scan starts at the latest this long after the first change.
const MAX_WAIT: Duration = Duration::from_secs(5);

pub fn spawn(sessions: Arc<Sessions>) {
    let spawned = std::thread::Builder::new().name("memtree-sessions".into()).spawn(move || {
        // Let the client's handshake and first requests go first.
        std::thread::sleep(Duration::from_millis(200));
        scan(&sessions);
        let (sender, receiver) = mpsc::channel::<notify::Result<notify::Event>>();
        // Changes only: the scan's own reads must not set off the next one.
        let mut watcher = match crate::watch::watcher(sender) {
            Ok(w) => w,
            Err(error) => return tracing::warn!(%error, "no watcher for transcripts; scan_sessions scans"),
        };
        let folders = [&sessions.options().claude, &sessions.options().codex];
        let watched =
            folders.into_iter().flatten().filter(|dir| match watcher.watch(dir, RecursiveMode::Recursive) {
                Ok(()) => true,
                Err(error) => {
                    tracing::info!(%error, folder = %dir.display(), "transcripts not watched");
                    false
                }
            });
        if watched.count() == 0 {
            return;
        }
        while receiver.recv().is_ok() {
            let started = std::time::Instant::now();
            while started.elapsed() < MAX_WAIT && receiver.recv_timeout(QUIET).is_ok() {}
            scan(&sessions);
        }
    });
    if let Err(error) = spawned {
        tracing::error!(%error, "cannot start scanning transcripts");
    }
}

fn scan(sessions: &Sessions) {
    match sessions.scan() {
        Ok(scanned) => tracing::info!(?scanned, "transcripts scanned"),
        Err(error) => tracing::error!(%error, "scanning transcripts failed"),
    }
}
