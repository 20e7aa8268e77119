//! `memtree index` (alias `outline`): the outline, the table of contents an
//! agent gets at the start of every session.

use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let index = super::open_trees(settings)?.outline()?;
    if settings.json {
        super::print_json(&serde_json::json!({ "index": index, "bytes": index.len() }))?;
    } else {
        super::print(&index)?;
    }
    Ok(ExitCode::SUCCESS)
}
