//! `memtree status`: how big the store is and where it lives.

use std::process::ExitCode;

use memtree_core::{Finding, Usage};

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    // With the model, if one is set: the status says how far embedding is.
    let (memory, _) = super::open_own_with_index(settings)?;
    let status = memory.status()?;
    let (index, usage) = memory.index_status()?;
    let fresh = memory.validate()?.findings.into_iter().find(|f| matches!(f, Finding::IndexOutOfDate { .. }));
    let most: Vec<&Usage> = usage.iter().take(5).collect();
    let least: Vec<&Usage> = usage.iter().rev().take(5).collect();
    let suggestions = memory.suggestions()?;
    let history = match memory.history_health() {
        None => "off (MEMTREE_HISTORY=off)".to_owned(),
        Some(Ok(())) => "recording every change".to_owned(),
        Some(Err(problem)) => Finding::HistoryBroken { reason: problem.reason, queued: problem.queued }
            .to_string()
            .trim_start_matches("history: ")
            .to_owned(),
    };
    if settings.json {
        super::print_json(&serde_json::json!({
            "store": status,
            "index": index,
            "index_fresh": fresh.is_none(),
            "embeddings": index.embeddings,
            "history": history,
            "most_used": most,
            "least_used": least,
            "suggestions": suggestions,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!(
        "data folder: {}\ndocuments: {}\ntotal size: {} bytes\ntrash: {} documents\n",
        status.location, status.documents, status.total_bytes, status.trash
    );
    if !status.largest.is_empty() {
        out.push_str("largest:\n");
        for (id, len) in &status.largest {
            out.push_str(&format!("  {id}: {len} bytes\n"));
        }
    }
    out.push_str(&format!(
        "index: {} documents, {} passages, {} bytes, {}\n",
        index.documents,
        index.passages,
        index.bytes,
        fresh.map_or_else(|| "up to date".to_owned(), |f| f.to_string())
    ));
    out.push_str(&match &index.embeddings {
        Some(e) => format!("embeddings: {}, {} of {} passages embedded\n", e.model, e.embedded, e.passages),
        None => "embeddings: off (BM25 only; see --embedding-model)\n".to_owned(),
    });
    out.push_str(&format!("history: {history}\n"));
    let line = |u: &&Usage| format!("  {}: {} packs\n", u.id, u.count);
    if !most.is_empty() {
        out.push_str("most used in memory packs:\n");
        out.extend(most.iter().map(line));
        out.push_str("least used:\n");
        out.extend(least.iter().map(line));
    }
    out.push_str("suggestions:\n");
    out.extend(suggestions.iter().map(|s| format!("  {s}\n")));
    super::print(&out)?;
    Ok(ExitCode::SUCCESS)
}
