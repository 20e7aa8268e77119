//! `memtree status`: how big the store is and where it lives.

use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    // With the model, if one is set: the status says how far embedding is.
    let (memory, _) = super::open_own_with_index(settings)?;
    let report = memory.status_report()?;
    if settings.json {
        super::print_json(&report)?;
    } else {
        super::print(&report.render())?;
    }
    Ok(ExitCode::SUCCESS)
}
