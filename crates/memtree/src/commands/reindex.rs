//! `memtree reindex`: rebuild the search index from the documents.

use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use memtree_core::{MemoryError, SearchIndex as _};

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let (memory, index) = super::open_own_with_index(settings)?;
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
    // With a model, the passages no vector is kept for are embedded now
    // (a server does it in the background).
    let mut embedded = 0;
    if let Some(index) = index.filter(|index| index.has_encoder()) {
        let bar = ProgressBar::new(0).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} passages embedded {elapsed}")
                .expect("valid template"),
        );
        loop {
            if let Some(progress) = index.embeddings().map_err(MemoryError::from)? {
                bar.set_length(progress.passages as u64);
                bar.set_position(progress.embedded as u64);
            }
            match index.embed_pending(32).map_err(MemoryError::from)? {
                0 => break,
                n => embedded += n,
            }
        }
        index.prune_vectors().map_err(MemoryError::from)?;
        bar.finish_and_clear();
    }
    let embedding_seconds = started.elapsed().as_secs_f64() - seconds;
    if settings.json {
        super::print_json(&serde_json::json!({
            "documents": total,
            "seconds": seconds,
            "chunks_embedded": embedded,
            "embedding_seconds": embedding_seconds,
        }))?;
    } else if embedded > 0 {
        super::print(&format!(
            "indexed {total} documents in {seconds:.2} s; embedded {embedded} chunks in {embedding_seconds:.2} s"
        ))?;
    } else {
        super::print(&format!("indexed {total} documents in {seconds:.2} s"))?;
    }
    Ok(ExitCode::SUCCESS)
}
