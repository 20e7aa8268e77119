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
use notify::{EventKind, RecursiveMode, Watcher as _};

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

/// Watches `root` until the process ends, telling `changed` the documents
/// written once they are indexed (none: anything may have changed).
/// Failing to watch is logged, not fatal: searches still check their hits,
/// and restarts reconcile.
pub fn spawn(root: PathBuf, memory: Arc<Memory>, changed: impl Fn(&[DocId]) + Send + 'static) {
    let (sender, receiver) = mpsc::channel::<notify::Result<notify::Event>>();
    let mut watcher = match notify::recommended_watcher(sender) {
        Ok(w) => w,
        Err(error) => {
            tracing::warn!(%error, "no file watcher; external edits are indexed at the next search or start");
            return;
        }
    };
    if let Err(error) = watcher.watch(&root, RecursiveMode::Recursive) {
        tracing::warn!(%error, "cannot watch the store; external edits are indexed at the next search or start");
        return;
    }
    std::thread::Builder::new()
        .name("memtree-watch".into())
        .spawn(move || {
            let _watcher = watcher; // Dropping it would stop the events.
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
                for event in batch {
                    match event {
                        Ok(event) if event.need_rescan() => rescan = true,
                        Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
                        Ok(event) => ids.extend(event.paths.iter().filter_map(|p| doc_id(&root, p))),
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
                if let Err(error) = outcome {
                    tracing::warn!(%error, "indexing changed files failed");
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
