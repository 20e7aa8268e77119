//! `memtree restore ID [VERSION]`: bring back an earlier version of a
//! document, or a pruned subtree under its old parent.

use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The document
    id: String,
    /// A version from `memtree history` (default: the one before the last change)
    version: Option<String>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    let target = trees.for_write("id", Some(&args.id))?;
    let restored = target.memory.restore(&target.id, args.version.as_deref())?;
    super::print(&restored.report())?;
    Ok(ExitCode::SUCCESS)
}
