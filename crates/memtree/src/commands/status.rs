//! `memtree status`: how big the store is and where it lives.

use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let status = super::open_memory(settings)?.status()?;
    if settings.json {
        super::print_json(&status)?;
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
    super::print(&out)?;
    Ok(ExitCode::SUCCESS)
}
