//! `memtree move ID NEW_PARENT`: re-parent a subtree in one atomic step.

use std::process::ExitCode;

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
    let trees = super::open_trees(settings)?;
    let target = trees.for_write("id", Some(&args.id))?;
    let new_parent = trees.beside(&target, "new_parent", &args.new_parent)?;
    let outcome = target.memory.move_document(&target.id, &new_parent)?;
    super::print(&outcome.report())?;
    Ok(ExitCode::SUCCESS)
}
