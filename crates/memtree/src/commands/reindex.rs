//! `memtree reindex`: rebuild the search index from the documents.

use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let memory = super::open_own(settings)?;
    let started = Instant::now();
    // Progress goes to stderr (indicatif's default), hidden when not a terminal.
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} documents {elapsed}").expect("valid template"),
    );
    let total = memory.reindex(&mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if settings.json {
        super::print_json(&serde_json::json!({ "documents": total, "seconds": seconds }))?;
    } else {
        super::print(&format!("indexed {total} documents in {seconds:.2} s"))?;
    }
    Ok(ExitCode::SUCCESS)
}
