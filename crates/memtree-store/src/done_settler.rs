//! Makes a journal's done mark durable once this process's changes pause
//! (see [`crate::journal`]). Until then, a crash of the machine could leave
//! the disk holding the last change's record, which a restart would replay
//! over an edit made since by another program. Waiting for a quiet moment
//! lets a burst of multi-document changes, each of which writes its record
//! over the last, go by without a sync for the mark.

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memtree_core::doorbell::{Doorbell, Pause, Woken};

use crate::journal;

/// How long changes must pause before the mark is made durable.
const PAUSE: Pause = Pause { quiet: Duration::from_millis(20), longest: None, idle: None };
/// How long the thread tries for the store's lock before it leaves the
/// mark to the holder: any write settles or replaces it first.
const LOCK_PATIENCE: Duration = Duration::from_secs(1);

pub(crate) struct DoneSettler {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    journal: PathBuf,
    lock_path: PathBuf,
    /// Rung at each mark written.
    marks: Arc<Doorbell>,
}

impl DoneSettler {
    pub fn new(journal: PathBuf, lock_path: PathBuf) -> DoneSettler {
        let shared = Arc::new(Shared { journal, lock_path, marks: Arc::new(Doorbell::new()) });
        DoneSettler { shared, thread: Mutex::new(None) }
    }

    /// A done mark was just written; the thread starts with the first.
    pub fn marked(&self) {
        self.shared.marks.ring();
        let mut thread = self.thread.lock().unwrap_or_else(|e| e.into_inner());
        if thread.is_none() {
            let shared = Arc::clone(&self.shared);
            let spawned =
                std::thread::Builder::new().name("memtree-settle".into()).spawn(move || shared.run());
            match spawned {
                Ok(handle) => *thread = Some(handle),
                // Without the thread, the mark waits for the next write or
                // for this process's end.
                Err(error) => tracing::warn!(%error, "no thread to settle journal marks"),
            }
        }
    }
}

impl Drop for DoneSettler {
    /// Settles what is left before the store is let go.
    fn drop(&mut self) {
        self.shared.marks.close();
        let thread = self.thread.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        match thread {
            Some(thread) => drop(thread.join()),
            // Closed, the bell says at once whether a mark is left.
            None => self.shared.run(),
        }
    }
}

impl Shared {
    fn run(&self) {
        loop {
            match self.marks.wait_for_pause(PAUSE) {
                Woken::Paused => self.settle(),
                Woken::Closed { rung } => {
                    if rung {
                        self.settle();
                    }
                    return;
                }
                Woken::Idle => unreachable!("no idle time was asked for"),
            }
        }
    }

    /// Settles the mark under the store's exclusive lock, so that no record
    /// is written meanwhile.
    fn settle(&self) {
        let Ok(lock) = File::open(&self.lock_path) else { return };
        let deadline = Instant::now() + LOCK_PATIENCE;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(std::fs::TryLockError::WouldBlock) => return,
                Err(std::fs::TryLockError::Error(error)) => {
                    tracing::warn!(%error, "cannot lock the store to settle the journal");
                    return;
                }
            }
        }
        if let Err(error) = journal::settle(&self.journal) {
            tracing::warn!(%error, "cannot settle the journal's done mark; the next write does");
        }
    }
}
