//! `memtree remember [--document ID] [--section S] [--mode M] < fact`:
//! the `remember` tool's CLI.

use std::io::Read as _;
use std::process::ExitCode;

use memtree_core::MemoryError;
use memtree_core::remember::Mode;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Target document (default: the best match, else a new one)
    #[arg(long)]
    document: Option<String>,
    /// `##` section (default: Notes)
    #[arg(long)]
    section: Option<String>,
    /// upsert, append or merge
    #[arg(long, default_value = "upsert")]
    mode: String,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let mode: Mode =
        args.mode.parse().map_err(|what| MemoryError::InvalidArgument { argument: "mode", what })?;
    let mut fact = String::new();
    std::io::stdin()
        .read_to_string(&mut fact)
        .map_err(|_| Failure::User("Error: content: not valid UTF-8".to_owned()))?;
    let trees = super::open_reconciled(settings)?;
    let (memory, document) = match args.document.as_deref() {
        Some(raw) => {
            let target = trees.for_write("document", Some(raw))?;
            (target.memory, Some(target.id))
        }
        None => (&**trees.own(), None),
    };
    let done = memory.remember(&fact, document.as_ref(), args.section.as_deref(), mode)?;
    super::print(&done.report())?;
    Ok(ExitCode::SUCCESS)
}
