//! Embedding in the background: a low-priority thread that embeds the
//! passages the index has no vectors for yet, a batch at a time, for as
//! long as the index is in use. A request never waits for it; passages not
//! embedded yet are found by BM25 alone.

use std::sync::Weak;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::SqliteIndex;

/// Chunks embedded per batch: large enough for the encoder's batching to
/// pay, small enough that a new passage waits little behind a backlog.
const BATCH: usize = 16;

/// How often an idle thread looks for passages to embed (written by this
/// process or another).
const IDLE: Duration = Duration::from_secs(2);

/// After a failure (a read-only index, a full disk), how long to wait
/// before trying again.
const AFTER_FAILURE: Duration = Duration::from_secs(30);

/// Starts the thread; it stops once `index` is dropped.
pub fn embed_in_background(index: Weak<SqliteIndex>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name("memtree-embed".into()).spawn(move || {
        if let Err(error) = thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min)
        {
            tracing::debug!(?error, "embedding at normal priority");
        }
        let mut caught_up = true;
        loop {
            let Some(index) = index.upgrade() else { return };
            let pause = match index.embed_pending(BATCH) {
                Ok(0) => {
                    if !caught_up {
                        caught_up = true;
                        match index.prune_vectors() {
                            Ok(pruned) => tracing::info!(pruned, "embedding caught up"),
                            Err(error) => tracing::warn!(%error, "cannot drop unused vectors"),
                        }
                    }
                    IDLE
                }
                Ok(_) => {
                    caught_up = false;
                    Duration::ZERO
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot embed passages; trying again later");
                    AFTER_FAILURE
                }
            };
            drop(index);
            std::thread::sleep(pause);
        }
    })
}
