//! Checkpoints the journal once this process's changes pause (see
//! [`crate::journal`]): syncs the documents of the applied record and
//! clears it. Waiting for a quiet moment lets a burst of changes, each
//! writing a record that carries the last ones' operations, go by with one
//! sync each, and syncs every document of the burst once.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use memtree_core::doorbell::{Doorbell, Pause, Woken};

use crate::checkpoint::{self, Places};
use crate::journal_slots::{Heads, JournalSlots};

/// How long changes must pause before the checkpoint.
const PAUSE: Pause = Pause { quiet: Duration::from_millis(20), longest: None, idle: None };
/// How long the thread tries for the store's lock before it leaves the
/// record to the holder: any write carries it, and rings again.
const LOCK_PATIENCE: Duration = Duration::from_secs(1);

pub(crate) struct DoneSettler {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    journals: JournalSlots,
    lock_path: PathBuf,
    places: Places,
    /// Rung at each record applied.
    marks: Arc<Doorbell>,
    /// The journal's heads as this process's last record left them.
    left: Mutex<Option<Heads>>,
}

impl DoneSettler {
    pub fn new(journals: JournalSlots, lock_path: PathBuf, places: Places) -> DoneSettler {
        let shared = Arc::new(Shared {
            journals,
            lock_path,
            places,
            marks: Arc::new(Doorbell::new()),
            left: Mutex::new(None),
        });
        DoneSettler { shared, thread: Mutex::new(None) }
    }

    /// A record was just applied, leaving the journal's heads as `heads`;
    /// the thread starts with the first.
    pub fn marked(&self, heads: Heads) {
        *self.shared.left.lock().unwrap_or_else(|e| e.into_inner()) = Some(heads);
        self.shared.marks.ring();
        let mut thread = self.thread.lock().unwrap_or_else(|e| e.into_inner());
        if thread.is_none() {
            let shared = Arc::clone(&self.shared);
            let spawned =
                std::thread::Builder::new().name("memtree-settle".into()).spawn(move || shared.run());
            match spawned {
                Ok(handle) => *thread = Some(handle),
                // Without the thread, the record's documents wait for the
                // next record too large to carry them, or this process's end.
                Err(error) => tracing::warn!(%error, "no thread to settle journal marks"),
            }
        }
    }
}

#[cfg(test)]
impl DoneSettler {
    pub fn owns_newest(&self) -> bool {
        self.shared.owns_newest()
    }
}

impl Drop for DoneSettler {
    /// Checkpoints what is left before the store is let go.
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
    /// Whether the journal's newest record is still the one this process
    /// wrote last (read without the lock: a hint).
    fn owns_newest(&self) -> bool {
        let left = *self.left.lock().unwrap_or_else(|e| e.into_inner());
        left.is_none() || self.journals.heads().ok() == left
    }

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

    /// Checkpoints under the store's exclusive lock, so that no record is
    /// written meanwhile. Once another process wrote a record after this
    /// one's last, that record carries ours and its writer checkpoints at
    /// its own pause: this process's pause is no quiet moment of the
    /// store, and taking the lock would only hold up the writers.
    fn settle(&self) {
        if !self.owns_newest() {
            return;
        }
        let Some(_lock) = checkpoint::lock_within(&self.lock_path, LOCK_PATIENCE) else { return };
        if let Err(error) = checkpoint::settle(&self.journals, &self.places) {
            tracing::warn!(%error, "cannot sync the journal's documents; the next quiet moment tries again");
        }
    }
}
