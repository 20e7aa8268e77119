//! The change feed of a store in a bucket: what the file watcher is to a
//! folder. Other machines' changes reach the bucket, not this machine's
//! disk, so a thread polls the store's commit mark (one HEAD request) and
//! brings the index up to date when it moves, within one poll interval
//! and a reconciliation. Objects edited in the bucket by other tools move
//! no mark; a full reconciliation every [`FULL_EVERY`] polls finds them.

use std::sync::Arc;
use std::time::Duration;

use memtree_core::{DocId, Memory};

/// Polls between two full reconciliations (a minute at the default poll).
const FULL_EVERY: u32 = 60;

/// Polls `memory`'s store every `interval` until the process ends,
/// telling `changed` when anything may have changed (no ids: any).
pub fn spawn(memory: Arc<Memory>, interval: Duration, changed: impl Fn(&[DocId]) + Send + 'static) {
    let poll = move || {
        let mut last = memory.commit_mark().ok().flatten();
        let mut polls = 0;
        loop {
            std::thread::sleep(interval);
            polls += 1;
            let mark = match memory.commit_mark() {
                Ok(mark) => mark,
                Err(error) => {
                    tracing::warn!(%error, "cannot reach the store; polling on");
                    continue;
                }
            };
            if mark == last && polls < FULL_EVERY {
                continue;
            }
            match memory.reconcile() {
                Ok(report) => {
                    tracing::debug!(?report, "index brought up to date with the bucket");
                    if mark != last || report.indexed + report.removed > 0 {
                        changed(&[]);
                    }
                    last = mark;
                    polls = 0;
                }
                Err(error) => tracing::warn!(%error, "bringing the index up to date failed; retrying"),
            }
        }
    };
    std::thread::Builder::new().name("memtree-feed".into()).spawn(poll).expect("spawning a thread");
}
