//! Engine calls from the async handlers. The engine blocks (it reads,
//! writes and syncs files), so where it runs depends on the runtime:
//!
//! - on a multi-thread runtime (HTTP: many clients at once) a call goes to
//!   tokio's blocking pool, so the workers keep serving the others;
//! - on a current-thread runtime (stdio: one client, answered in turn) it
//!   runs in place. Handing it to a pool thread and back woke two threads
//!   per request, which cost more than a read itself once the client paused
//!   between calls (a `ping` 0.37 ms, against 0.10 back to back).

use std::panic::{AssertUnwindSafe, catch_unwind};

use tokio::runtime::{Handle, RuntimeFlavor};

/// A blocking call that panicked, with what it said.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(String);

/// Runs `call` where the current runtime wants blocking work done, and
/// returns what it returned; a panic is caught and returned as
/// [`Panicked`], on either runtime, so the request is still answered.
pub async fn run<T: Send + 'static>(call: impl FnOnce() -> T + Send + 'static) -> Result<T, Panicked> {
    match Handle::current().runtime_flavor() {
        RuntimeFlavor::CurrentThread => catch_unwind(AssertUnwindSafe(call)).map_err(|panic| {
            let said = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            Panicked(said)
        }),
        _ => tokio::task::spawn_blocking(call).await.map_err(|e| Panicked(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(runtime: tokio::runtime::Runtime) {
        let thread = std::thread::current().id();
        let (ran_on, panicked) = runtime.block_on(async {
            let ran_on = run(|| std::thread::current().id()).await.unwrap();
            (ran_on, run::<()>(|| panic!("boom")).await.unwrap_err())
        });
        let flavor = runtime.handle().runtime_flavor();
        assert_eq!(ran_on == thread, flavor == RuntimeFlavor::CurrentThread, "{flavor:?}");
        assert!(panicked.to_string().contains("boom"), "{panicked}");
    }

    #[test]
    fn a_call_runs_in_place_on_one_thread_and_in_the_pool_on_many() {
        on(tokio::runtime::Builder::new_current_thread().build().unwrap());
        on(tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap());
    }
}
