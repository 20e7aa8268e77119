//! glibc's malloc set for a long-running server: one arena.
//!
//! glibc gives a thread that meets a busy arena one of its own, up to eight
//! per core, and keeps what is freed in the arena it came from. A server's
//! calls run on whichever runtime or blocking thread is free, so the
//! transient buffers of a store walk, a tree view or a history round end up
//! spread over a dozen arenas, each keeping its share resident: the peak
//! was three times the live heap. With one arena, what one call frees the
//! next one reuses (see BENCHMARKS.md, "Performance, sixth part").
//!
//! `mallopt` would set it in the process, but is a foreign call, and the
//! workspace forbids `unsafe`. glibc reads `GLIBC_TUNABLES` once, at start,
//! so `serve` executes itself again with it set, before any thread starts.

use std::ffi::OsString;

use crate::settings::{env, var};

const ONE_ARENA: &str = "glibc.malloc.arena_max=1";

/// Runs this binary again with one malloc arena, unless `MEMTREE_ALLOCATOR`
/// is set (by that very run, or by a user who wants glibc's default) or
/// `GLIBC_TUNABLES` already chooses the arenas. Returns only if it did not
/// (or could not) execute.
pub fn one_arena() {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) || var(env::ALLOCATOR).is_some() {
        return;
    }
    let Some(tunables) = with_one_arena(&var(env::GLIBC_TUNABLES).unwrap_or_default()) else {
        return;
    };
    if let Err(error) = execute_again(&tunables) {
        tracing::debug!(%error, "serving with glibc's default arenas");
    }
}

/// `tunables` (`GLIBC_TUNABLES`) with one arena added, or `None` when they
/// already say how many.
fn with_one_arena(tunables: &str) -> Option<String> {
    let chosen = tunables.split(':').any(|t| t.split('=').next() == Some("glibc.malloc.arena_max"));
    match (chosen, tunables) {
        (true, _) => None,
        (false, "") => Some(ONE_ARENA.to_owned()),
        (false, _) => Some(format!("{tunables}:{ONE_ARENA}")),
    }
}

#[cfg(unix)]
fn execute_again(tunables: &str) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe()?;
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| OsString::from("memtree"));
    // Only returns when it failed: the binary is gone (replaced by an
    // install while running), or the system refuses.
    Err(std::process::Command::new(exe)
        .arg0(argv0)
        .args(args)
        .env(env::ALLOCATOR, "one-arena")
        .env(env::GLIBC_TUNABLES, tunables)
        .exec())
}

#[cfg(not(unix))]
fn execute_again(_: &str) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_arena_is_added_to_the_tunables_unless_they_choose() {
        assert_eq!(with_one_arena("").as_deref(), Some(ONE_ARENA));
        assert_eq!(
            with_one_arena("glibc.malloc.tcache_count=0").as_deref(),
            Some("glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1")
        );
        assert_eq!(with_one_arena("glibc.malloc.arena_max=4"), None);
        assert_eq!(with_one_arena("glibc.malloc.tcache_count=0:glibc.malloc.arena_max=8"), None);
        assert_eq!(
            with_one_arena("glibc.malloc.arena_test=2").as_deref(),
            Some("glibc.malloc.arena_test=2:glibc.malloc.arena_max=1")
        );
    }
}
