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
//! `mallopt` would set both in the process, but is a foreign call, and the
//! workspace forbids `unsafe`. glibc reads `GLIBC_TUNABLES` once, at start,
//! so `serve` executes itself again with them set, before any thread starts.

use std::ffi::OsString;

use crate::settings::{env, var};

/// What `serve` runs with, each unless the user's own tunables set it.
const TUNABLES: [(&str, &str); 2] =
    [("glibc.malloc.arena_max", "1"), ("glibc.malloc.mmap_threshold", "1048576")];

/// Runs this binary again with [`TUNABLES`], unless `MEMTREE_ALLOCATOR` is
/// set (by that very run, or by a user who wants glibc's default) or
/// `GLIBC_TUNABLES` already sets them all. Returns only if it did not (or
/// could not) execute.
pub fn tune() {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) || var(env::ALLOCATOR).is_some() {
        return;
    }
    let Some(tunables) = with_ours(&var(env::GLIBC_TUNABLES).unwrap_or_default()) else {
        return;
    };
    if let Err(error) = execute_again(&tunables) {
        tracing::debug!(%error, "serving with glibc's default malloc");
    }
}

/// `tunables` (`GLIBC_TUNABLES`) with [`TUNABLES`] they do not set added,
/// or `None` when they set them all.
fn with_ours(tunables: &str) -> Option<String> {
    let set: Vec<&str> = tunables.split(':').filter_map(|t| t.split('=').next()).collect();
    let added: Vec<String> = TUNABLES
        .iter()
        .filter(|(name, _)| !set.contains(name))
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    if added.is_empty() {
        return None;
    }
    let kept = tunables.split(':').filter(|t| !t.is_empty()).map(str::to_owned);
    Some(kept.chain(added).collect::<Vec<_>>().join(":"))
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
        .env(env::ALLOCATOR, "tuned")
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
    fn ours_are_added_to_the_tunables_unless_they_set_them() {
        let ours = "glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=1048576";
        assert_eq!(with_ours("").as_deref(), Some(ours));
        assert_eq!(
            with_ours("glibc.malloc.tcache_count=0").as_deref(),
            Some(format!("glibc.malloc.tcache_count=0:{ours}").as_str())
        );
        assert_eq!(
            with_ours("glibc.malloc.arena_max=4").as_deref(),
            Some("glibc.malloc.arena_max=4:glibc.malloc.mmap_threshold=1048576")
        );
        assert_eq!(
            with_ours("glibc.malloc.mmap_threshold=65536:glibc.malloc.arena_test=2").as_deref(),
            Some("glibc.malloc.mmap_threshold=65536:glibc.malloc.arena_test=2:glibc.malloc.arena_max=1")
        );
        assert_eq!(with_ours("glibc.malloc.mmap_threshold=0:glibc.malloc.arena_max=8"), None);
    }
}
