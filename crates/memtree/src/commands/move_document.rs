//! `memtree move ID NEW_PARENT`: re-parent a subtree in one atomic step.

use std::process::ExitCode;

use memtree_core::parse_id_argument;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The document to move (with its subtree)
    id: String,
    /// Its new parent
    new_parent: String,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let id = parse_id_argument("id", Some(&args.id))?;
    let new_parent = parse_id_argument("new_parent", Some(&args.new_parent))?;
    let outcome = super::open_memory(settings)?.move_document(&id, &new_parent)?;
    super::print(&outcome.report())?;
    Ok(ExitCode::SUCCESS)
}
