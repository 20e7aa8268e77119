//! glibc's malloc set for a long-running server: one arena, and large
//! buffers mapped on their own.
//!
//! glibc gives a thread that meets a busy arena one of its own, up to eight
//! per core, and keeps what is freed in the arena it came from. A server's
//! calls run on whichever runtime or blocking thread is free, so the
//! transient buffers of a store walk, a tree view or a history round end up
//! spread over a dozen arenas, each keeping its share resident: the peak
//! was three times the live heap. With one arena, what one call frees the
//! next one reuses (see BENCHMARKS.md, "Performance, sixth part").
//!
//! glibc maps a buffer on its own (and unmaps it when freed) from a size
//! that rises to that of the largest mapped buffer freed, up to 32 MiB. A
//! large store's buffers of megabytes (a listing, a tree, a git index, an
//! answer) then come from the heap, and once freed leave holes that stay
//! resident: 12 MiB of a 100,000-document session's peak. Fixed at 1 MiB,
//! they go back to the system when freed ("Performance, seventh part").
//!
//! Both are set with `mallopt`, the workspace's one `unsafe` call, as
//! `serve` starts and before any thread does. `serve` used to run itself
//! again with `GLIBC_TUNABLES` instead, which glibc reads only at start: a
//! second start of the executable, about 4 ms of every server's start
//! ("Performance, twenty-third part").

use crate::settings::{env, var};

/// One of glibc's malloc parameters, by its tunable's name (which a user's
/// `GLIBC_TUNABLES` may set instead) and its `mallopt` number.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parameter {
    tunable: &'static str,
    number: i32,
    value: i32,
}

/// What `serve` runs with, each unless the user's own tunables set it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const OURS: [Parameter; 2] = [
    Parameter { tunable: "glibc.malloc.arena_max", number: libc::M_ARENA_MAX, value: 1 },
    Parameter { tunable: "glibc.malloc.mmap_threshold", number: libc::M_MMAP_THRESHOLD, value: 1 << 20 },
];

/// Sets [`OURS`] in this process, unless `MEMTREE_ALLOCATOR` is set (by a
/// user who wants glibc's default) or `GLIBC_TUNABLES` sets them. Called
/// before any thread starts: an arena made before it stays.
pub fn tune() {
    if var(env::ALLOCATOR).is_some() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for parameter in unset_by(&var(env::GLIBC_TUNABLES).unwrap_or_default()) {
        if !set(parameter) {
            tracing::debug!(tunable = parameter.tunable, "glibc refused the setting; keeping its default");
        }
    }
}

/// The parameters of [`OURS`] that `tunables` (`GLIBC_TUNABLES`, which
/// glibc applied at start) leave unset.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn unset_by(tunables: &str) -> Vec<Parameter> {
    let set: Vec<&str> = tunables.split(':').filter_map(|t| t.split('=').next()).collect();
    OURS.into_iter().filter(|parameter| !set.contains(&parameter.tunable)).collect()
}

/// Whether glibc took the setting.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "mallopt has no safe binding; see the module's notes")]
fn set(parameter: Parameter) -> bool {
    // SAFETY: `mallopt` takes two integers and no pointer, checks them
    // itself (answering 0 for one it refuses) and changes malloc's state
    // under the main arena's lock; `serve` calls it before any other
    // thread exists.
    unsafe { libc::mallopt(parameter.number, parameter.value) == 1 }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    #[test]
    fn ours_are_set_unless_the_users_tunables_set_them() {
        let [arenas, threshold] = OURS;
        assert_eq!(unset_by(""), [arenas, threshold]);
        assert_eq!(unset_by("glibc.malloc.tcache_count=0"), [arenas, threshold]);
        assert_eq!(unset_by("glibc.malloc.arena_max=4"), [threshold]);
        assert_eq!(unset_by("glibc.malloc.mmap_threshold=65536:glibc.malloc.arena_test=2"), [arenas]);
        assert_eq!(unset_by("glibc.malloc.mmap_threshold=0:glibc.malloc.arena_max=8"), []);
        // A name is a whole tunable, not a prefix of one.
        assert_eq!(unset_by("glibc.malloc.arena_max_x=2"), [arenas, threshold]);
    }

    #[test]
    fn glibc_takes_our_settings() {
        // glibc answers for itself: it refuses fast bins past 160 bytes.
        let too_fast = Parameter { tunable: "glibc.malloc.mxfast", number: libc::M_MXFAST, value: 1 << 20 };
        assert!(!set(too_fast));
        assert!(OURS.into_iter().all(set));
    }
}
