//! The fsync floor of the machine the benchmark runs on: what one durable
//! replacement of a small file costs at the least, measured beside the
//! store (same file system) just before the sessions. A write that must
//! survive a power cut cannot be cheaper than this; memtree's updates are
//! judged by their ratio to it, which holds across machines where absolute
//! times do not.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;

/// Bytes per write: a short note.
const BYTES: usize = 1024;

/// `samples` times: write 1 KiB to a new file, fsync it, rename it over
/// the last one, fsync the folder. Returns each round's milliseconds.
pub fn measure(dir: &Path, samples: usize) -> anyhow::Result<Vec<f64>> {
    let folder = tempfile::Builder::new().prefix("memtree-floor-").tempdir_in(dir)?;
    let target = folder.path().join("note.md");
    let bytes = vec![b'x'; BYTES];
    let mut times = Vec::with_capacity(samples);
    for i in 0..samples + 3 {
        let temp = folder.path().join(format!("{i}.tmp"));
        let started = Instant::now();
        let mut file = OpenOptions::new().write(true).create_new(true).open(&temp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, &target)?;
        File::open(folder.path())?.sync_all().context("fsync the folder")?;
        // The first rounds create the target and warm the folder's blocks.
        if i >= 3 {
            times.push(started.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(times)
}
