//! `memtree remember [--document ID] [--parent ID] [--section S] [--mode M] < fact`:
//! the `remember` tool's CLI.

use std::io::Read as _;
use std::process::ExitCode;

use memtree_core::{FactPlace, parse_mode_argument};

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Target document, created if new (default: the best match, else a new one)
    #[arg(long)]
    document: Option<String>,
    /// Where a new document goes (default: root)
    #[arg(long)]
    parent: Option<String>,
    /// `##` section (default: Notes)
    #[arg(long)]
    section: Option<String>,
    /// upsert, append or merge
    #[arg(long, default_value = "upsert")]
    mode: String,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let mode = parse_mode_argument(Some(&args.mode))?;
    let mut fact = String::new();
    std::io::stdin()
        .read_to_string(&mut fact)
        .map_err(|_| Failure::User("Error: content: not valid UTF-8".to_owned()))?;
    let trees = super::open_reconciled(settings)?;
    let (memory, document, parent) = trees.for_remember(args.document.as_deref(), args.parent.as_deref())?;
    let place =
        FactPlace { document: document.as_ref(), section: args.section.as_deref(), parent: parent.as_ref() };
    let done = memory.remember(&fact, &place, mode)?;
    super::print(&done.report())?;
    Ok(ExitCode::SUCCESS)
}
