//! Keeps the search index current while serving: a file watcher (`notify`)
//! reports documents changed by other programs, which are indexed again
//! after a short debounce. Start-up reconciliation covers what changed while
//! no server ran; each search also checks its hits against the files.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use memtree_core::{DocId, Memory};
use notify::{EventKind, RecursiveMode, Watcher};

/// Events arriving within this window of each other are indexed together.
const DEBOUNCE: Duration = Duration::from_millis(50);
/// A batch is indexed (and pages told) at the latest this long after its
/// first event, or a steady stream of writes would never end one.
const MAX_BATCH: Duration = Duration::from_millis(500);

/// The document id of a path inside the store, if it is one.
fn doc_id(root: &Path, path: &Path) -> Option<DocId> {
    let relative = path.strip_prefix(root).ok()?;
    let text = relative.to_str()?.strip_suffix(".md")?;
    if relative.components().any(|c| c.as_os_str().to_str().is_none_or(|s| s.starts_with('.'))) {
        return None;
    }
    DocId::parse(&text.replace(std::path::MAIN_SEPARATOR, "/")).ok()
}

/// A folder whose files can hold documents: none under a hidden one
/// (`.git`, whose every commit writes objects, `.memtree`, an editor's).
fn holds_documents(root: &Path, dir: &Path) -> bool {
    dir.strip_prefix(root).is_ok_and(|rel| {
        rel.components().all(|c| c.as_os_str().to_str().is_some_and(|s| !s.starts_with('.')))
    })
}

/// Watches `dir` and the folders under it that can hold documents, each on
/// its own: a recursive watch would also follow `.git` and `.memtree`,
/// where history and memtree's own bookkeeping write on every change and
/// would wake this thread for nothing. With `new`, returns the documents
/// found (a folder made and filled before its watch was set).
fn watch_tree(watcher: &mut impl Watcher, root: &Path, dir: &Path, new: bool) -> notify::Result<Vec<DocId>> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        watcher.watch(&folder, RecursiveMode::NonRecursive)?;
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            // Not followed through a symlink, as the store's listing does
            // not. A path is made only where needed: a store's folder may
            // hold 100,000 files.
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && holds_documents(root, &entry.path()) => {
                    folders.push(entry.path())
                }
                Ok(kind) if kind.is_file() && new => found.extend(doc_id(root, &entry.path())),
                _ => {}
            }
        }
    }
    Ok(found)
}

/// A file watcher told of changes only (files made, removed, written,
/// renamed), not of access: notify's default also asks inotify for every
/// open and close, so each file memtree read itself (every `read_document`,
/// every check of a search's hits) woke the watcher's two threads, and the
/// read paid for waking them (0.14 ms a read at 10k, 0.04 ms without).
pub fn watcher(handler: impl notify::EventHandler) -> notify::Result<notify::RecommendedWatcher> {
    let config = notify::Config::default().with_event_kinds(notify::EventKindMask::CORE);
    notify::RecommendedWatcher::new(handler, config)
}

/// Watches `root` until the process ends, telling `changed` the documents
/// written once they are indexed (none: anything may have changed).
/// Failing to watch is logged, not fatal: searches still check their hits,
/// and restarts reconcile.
pub fn spawn(root: PathBuf, memory: Arc<Memory>, changed: impl Fn(&[DocId]) + Send + 'static) {
    // Each event with the number of the engine's report of it.
    let (sender, receiver) = mpsc::channel::<(u64, notify::Result<notify::Event>)>();
    let reporter = Arc::clone(&memory);
    let report = move |event: notify::Result<notify::Event>| {
        // Told at once, not after the debounce: the store's listing keeps
        // what it read of folders where nothing changed, and the engine
        // knows its index lags an edit from outside until it is indexed.
        let number = match &event {
            Ok(event) if event.need_rescan() => reporter.changed_on_disk(None),
            Ok(event) => reporter.changed_on_disk(Some(&event.paths)),
            Err(_) => reporter.changed_on_disk(None),
        };
        let _ = sender.send((number, event));
    };
    let mut watcher = match watcher(report) {
        Ok(w) => w,
        Err(error) => {
            tracing::warn!(%error, "no file watcher; external edits are indexed at the next search or start");
            return;
        }
    };
    if let Err(error) = watch_tree(&mut watcher, &root, &root, false) {
        tracing::warn!(%error, "cannot watch the store; external edits are indexed at the next search or start");
        return;
    }
    memory.watched(true);
    std::thread::Builder::new()
        .name("memtree-watch".into())
        .spawn(move || {
            // Dropping the watcher would stop the events.
            while let Ok(first) = receiver.recv() {
                let mut batch = vec![first];
                let started = std::time::Instant::now();
                while started.elapsed() < MAX_BATCH
                    && let Ok(event) = receiver.recv_timeout(DEBOUNCE)
                {
                    batch.push(event);
                }
                let mut rescan = false;
                let mut ids: HashSet<DocId> = HashSet::new();
                let through = batch.iter().map(|(number, _)| *number).max().unwrap_or(0);
                for (_, event) in batch {
                    match event {
                        Ok(event) if event.need_rescan() => rescan = true,
                        Ok(event) => {
                            for path in &event.paths {
                                // A folder made or moved in: watched from now
                                // on, with what it already holds.
                                if matches!(event.kind, EventKind::Create(_) | EventKind::Modify(_))
                                    && holds_documents(&root, path)
                                    && path.symlink_metadata().is_ok_and(|m| m.is_dir())
                                {
                                    match watch_tree(&mut watcher, &root, path, true) {
                                        Ok(found) => {
                                            // Edited before its watch was set:
                                            // the listing reads it again.
                                            memory.changed_on_disk(Some(std::slice::from_ref(path)));
                                            ids.extend(found);
                                        }
                                        Err(error) => {
                                            tracing::warn!(%error, "cannot watch a new folder; reconciling");
                                            // Edits in it would go unseen.
                                            memory.watched(false);
                                            rescan = true;
                                        }
                                    }
                                }
                                ids.extend(doc_id(&root, path));
                            }
                        }
                        Err(error) => {
                            tracing::warn!(%error, "file watcher error; reconciling");
                            rescan = true;
                        }
                    }
                }
                // What another program changed is indexed again and
                // committed to history as changed outside memtree.
                let ids: Vec<DocId> = if rescan { Vec::new() } else { ids.into_iter().collect() };
                let outcome = if rescan {
                    memory.reconcile().and_then(|_| memory.flush_history(None))
                } else {
                    memory.reindex_changed(&ids).and_then(|outside| match outside.is_empty() {
                        true => Ok(()),
                        false => memory.flush_history(Some(&outside)),
                    })
                };
                match outcome {
                    Ok(()) => memory.indexed_outside(through),
                    Err(error) => tracing::warn!(%error, "indexing changed files failed"),
                }
                if rescan || !ids.is_empty() {
                    changed(&ids);
                }
            }
        })
        .expect("spawning a thread");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paths of the events that arrive within `wait`.
    fn paths_seen(receiver: &mpsc::Receiver<notify::Result<notify::Event>>, wait: Duration) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        while let Ok(event) = receiver.recv_timeout(wait) {
            paths.extend(event.unwrap().paths);
        }
        paths
    }

    #[test]
    fn hidden_folders_are_not_watched_and_new_folders_report_what_they_hold() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for folder in ["notes/deep", ".git/objects/ab", ".memtree/history"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        let (sender, receiver) = mpsc::channel();
        let mut watcher = watcher(sender).unwrap();
        assert!(watch_tree(&mut watcher, &root, &root, false).unwrap().is_empty());
        std::fs::write(root.join(".git/objects/ab/cdef"), "blob").unwrap();
        std::fs::write(root.join(".memtree/history/1.json"), "{}").unwrap();
        std::fs::write(root.join("notes/deep/a.md"), "# a").unwrap();
        let seen = paths_seen(&receiver, Duration::from_millis(300));
        assert!(seen.contains(&root.join("notes/deep/a.md")), "{seen:?}");
        assert!(seen.iter().all(|p| holds_documents(&root, p)), "nothing under a hidden folder: {seen:?}");
        // A folder made and filled before its watch: its documents come back.
        std::fs::create_dir_all(root.join("new/sub")).unwrap();
        std::fs::write(root.join("new/sub/b.md"), "# b").unwrap();
        let found = watch_tree(&mut watcher, &root, &root.join("new"), true).unwrap();
        assert_eq!(found, [DocId::parse("new/sub/b").unwrap()]);
    }

    #[test]
    fn reading_a_document_tells_the_watcher_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.md"), "# a").unwrap();
        let (sender, receiver) = mpsc::channel();
        let mut watcher = watcher(sender).unwrap();
        watch_tree(&mut watcher, &root, &root, false).unwrap();
        for _ in 0..3 {
            assert_eq!(std::fs::read_to_string(root.join("a.md")).unwrap(), "# a");
        }
        let read = paths_seen(&receiver, Duration::from_millis(200));
        assert!(read.is_empty(), "reads reported: {read:?}");
        std::fs::write(root.join("a.md"), "# a, again").unwrap();
        assert!(paths_seen(&receiver, Duration::from_millis(300)).contains(&root.join("a.md")));
    }

    #[test]
    fn only_document_paths_become_ids() {
        let root = Path::new("/s");
        assert_eq!(doc_id(root, Path::new("/s/a.md")), DocId::parse("a").ok());
        assert_eq!(doc_id(root, Path::new("/s/projects/silica.md")), DocId::parse("projects/silica").ok());
        assert_eq!(doc_id(root, Path::new("/s/.memtree/tmp/1.md")), None);
        assert_eq!(doc_id(root, Path::new("/s/.git/x.md")), None);
        assert_eq!(doc_id(root, Path::new("/s/a.txt")), None);
        assert_eq!(doc_id(root, Path::new("/s/My Note.md")), None);
        assert_eq!(doc_id(root, Path::new("/elsewhere/a.md")), None);
    }
}
