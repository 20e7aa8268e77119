//! How a write tells a background thread (the indexer, the history
//! committer, the journal settler) that there is work, when that thread
//! waits for writes to pause before it does it.
//!
//! Waking a sleeping thread is a system call for the writer and a context
//! switch on the other core, tens of µs on a VM. A condvar notified at
//! every write paid that once per write of a burst, only for the woken
//! thread to see that writes had not paused and sleep again. Here a ring
//! wakes the thread only when it sleeps waiting for a first ring; once it
//! waits for the pause, it wakes at the deadline it set itself and reads
//! the time of the last ring to know whether to wait on.
//!
//! A server that answers one client in turn, on one thread, can also
//! [`hold_rings`]: a ring that would wake a sleeping thread then wakes it
//! only at [`release_rings`], once the answer is written, so that no wake-up
//! is on the answer's path.

use std::cell::RefCell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

thread_local! {
    /// The bells rung on this thread, since it holds its rings, whose
    /// waiters sleep until woken; `None` while it does not hold them.
    static HELD: RefCell<Option<Vec<Arc<Doorbell>>>> = const { RefCell::new(None) };
}

/// Rings on this thread wake no thread until [`release_rings`].
pub fn hold_rings() {
    HELD.with(|held| {
        held.borrow_mut().get_or_insert_with(Vec::new);
    });
}

/// Wakes the waiters of the bells this thread rang while holding them.
pub fn release_rings() {
    let rung = HELD.with(|held| held.borrow_mut().as_mut().map(std::mem::take)).unwrap_or_default();
    for bell in rung {
        bell.wake_idle();
    }
}

/// Whether `bell` was kept for [`release_rings`]: this thread holds its rings.
fn held(bell: &Arc<Doorbell>) -> bool {
    HELD.with(|held| match held.borrow_mut().as_mut() {
        Some(rung) => {
            if !rung.iter().any(|kept| Arc::ptr_eq(kept, bell)) {
                rung.push(Arc::clone(bell));
            }
            true
        }
        None => false,
    })
}

/// A bell rung by writers and waited at by one background thread.
#[derive(Debug, Default)]
pub struct Doorbell {
    state: Mutex<State>,
    bell: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// The first and the last ring since the waiter last took them.
    rung: Option<(Instant, Instant)>,
    closed: bool,
    /// The waiter sleeps until a first ring: the next ring must wake it.
    idle: bool,
    #[cfg(test)]
    wakes: usize,
}

/// Why [`Doorbell::wait_for_pause`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// Rung, then no ring for the quiet time (or the longest wait is over).
    Paused,
    /// Not rung within the idle time.
    Idle,
    /// Closed: the thread is to end; `rung` if work was rung for and not
    /// taken yet, which is the thread's to finish.
    Closed { rung: bool },
}

/// How [`Doorbell::wait_for_pause`] waits.
#[derive(Debug, Clone, Copy)]
pub struct Pause {
    /// How long rings must stop for the work to start.
    pub quiet: Duration,
    /// At most this long after the first ring, even if rings go on.
    pub longest: Option<Duration>,
    /// Without a ring for this long, [`Woken::Idle`].
    pub idle: Option<Duration>,
}

impl Doorbell {
    pub fn new() -> Doorbell {
        Doorbell::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// There is work: the waiter does it once rings pause.
    pub fn ring(self: &Arc<Self>) {
        let now = Instant::now();
        let mut state = self.state();
        let first = state.rung.map_or(now, |(first, _)| first);
        state.rung = Some((first, now));
        if state.idle && !held(self) {
            self.wake(state);
        }
    }

    fn wake_idle(&self) {
        let state = self.state();
        if state.idle {
            self.wake(state);
        }
    }

    fn wake(&self, mut state: MutexGuard<'_, State>) {
        state.idle = false;
        #[cfg(test)]
        {
            state.wakes += 1;
        }
        self.bell.notify_one();
    }

    /// The waiter is to end.
    pub fn close(&self) {
        self.state().closed = true;
        self.bell.notify_one();
    }

    /// Waits for a ring, then for rings to pause as `pause` says.
    pub fn wait_for_pause(&self, pause: Pause) -> Woken {
        let mut state = self.state();
        loop {
            if state.closed {
                return Woken::Closed { rung: state.rung.take().is_some() };
            }
            let Some((first, last)) = state.rung else {
                state.idle = true;
                let timed_out;
                (state, timed_out) = match pause.idle {
                    Some(idle) => {
                        let (state, waited) =
                            self.bell.wait_timeout(state, idle).unwrap_or_else(|e| e.into_inner());
                        (state, waited.timed_out())
                    }
                    None => (self.bell.wait(state).unwrap_or_else(|e| e.into_inner()), false),
                };
                state.idle = false;
                if timed_out && state.rung.is_none() && !state.closed {
                    return Woken::Idle;
                }
                continue;
            };
            let quiet_until = last + pause.quiet;
            let due = pause
                .longest
                .and_then(|longest| first.checked_add(longest))
                .map_or(quiet_until, |cap| cap.min(quiet_until));
            let now = Instant::now();
            if now >= due {
                state.rung = None;
                return Woken::Paused;
            }
            state = self.bell.wait_timeout(state, due - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Far longer than the rings' spacing, so that a slow machine does not
    /// see a pause where there is none.
    const QUIET: Duration = Duration::from_millis(200);

    fn waiter(bell: &Arc<Doorbell>, pause: Pause) -> std::thread::JoinHandle<(Woken, Instant)> {
        let bell = Arc::clone(bell);
        std::thread::spawn(move || {
            let woken = bell.wait_for_pause(pause);
            (woken, Instant::now())
        })
    }

    /// Until the waiter sleeps.
    fn settle_in(bell: &Doorbell) {
        while !bell.state().idle {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_burst_wakes_the_waiter_once_and_it_returns_when_the_rings_pause() {
        let bell = Arc::new(Doorbell::new());
        let waiting = waiter(&bell, Pause { quiet: QUIET, longest: None, idle: None });
        settle_in(&bell);
        let mut last = Instant::now();
        for _ in 0..20 {
            last = Instant::now();
            bell.ring();
            std::thread::sleep(Duration::from_millis(1));
        }
        let (woken, at) = waiting.join().unwrap();
        assert_eq!(woken, Woken::Paused);
        assert!(at >= last + QUIET, "returned {:?} after the last ring", at - last);
        assert_eq!(bell.state().wakes, 1, "only the first ring wakes the waiter");
    }

    #[test]
    fn rings_that_never_pause_are_answered_after_the_longest_wait() {
        let bell = Arc::new(Doorbell::new());
        let longest = Duration::from_millis(60);
        let waiting = waiter(&bell, Pause { quiet: QUIET, longest: Some(longest), idle: None });
        settle_in(&bell);
        let first = Instant::now();
        bell.ring();
        while !waiting.is_finished() {
            bell.ring();
            std::thread::sleep(Duration::from_millis(2));
            assert!(first.elapsed() < Duration::from_secs(5), "the waiter never returned");
        }
        let (woken, at) = waiting.join().unwrap();
        assert_eq!(woken, Woken::Paused);
        assert!(at >= first + longest, "returned after {:?}", at - first);
    }

    #[test]
    fn without_a_ring_the_waiter_is_told_it_is_idle_and_closing_ends_any_wait() {
        let bell = Arc::new(Doorbell::new());
        let idle = Some(Duration::from_millis(20));
        assert_eq!(bell.wait_for_pause(Pause { quiet: QUIET, longest: None, idle }), Woken::Idle);

        let waiting = waiter(&bell, Pause { quiet: Duration::from_secs(60), longest: None, idle: None });
        settle_in(&bell);
        bell.ring();
        bell.close();
        assert_eq!(waiting.join().unwrap().0, Woken::Closed { rung: true });
    }

    #[test]
    fn a_held_ring_wakes_the_waiter_at_its_release_only() {
        let bell = Arc::new(Doorbell::new());
        let waiting = waiter(&bell, Pause { quiet: Duration::ZERO, longest: None, idle: None });
        settle_in(&bell);
        hold_rings();
        bell.ring();
        bell.ring();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiting.is_finished(), "a held ring woke the waiter");
        assert_eq!(bell.state().wakes, 0);
        release_rings();
        assert_eq!(waiting.join().unwrap().0, Woken::Paused);
        assert_eq!(bell.state().wakes, 1);
    }

    #[test]
    fn a_ring_before_the_wait_is_not_lost() {
        let bell = Arc::new(Doorbell::new());
        bell.ring();
        let pause = Pause { quiet: Duration::ZERO, longest: None, idle: Some(Duration::from_secs(60)) };
        assert_eq!(bell.wait_for_pause(pause), Woken::Paused);
    }
}
