//! `memtree history [ID]`: the versions in which a document (or anything)
//! changed, newest first.

use std::process::ExitCode;

use memtree_core::defaults;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The document (default: every change)
    id: Option<String>,
    /// Most versions to list
    #[arg(long, default_value_t = defaults::HISTORY_VERSIONS)]
    limit: usize,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    let versions = match args.id.as_deref() {
        Some(raw) => {
            let target = trees.for_read("id", Some(raw))?;
            target.memory.history(Some(&target.id), args.limit)?
        }
        None => trees.own().history(None, args.limit)?,
    };
    if settings.json {
        super::print_json(&versions)?;
    } else {
        super::print(&memtree_core::history::render(&versions))?;
    }
    Ok(ExitCode::SUCCESS)
}
