//! `memtree remember [--document ID] [--section S] [--mode M] < fact`:
//! the `remember` tool's CLI.

use std::io::Read as _;
use std::process::ExitCode;

use memtree_core::remember::Mode;
use memtree_core::{MemoryError, parse_id_argument};

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
    let document = args.document.as_deref().map(|d| parse_id_argument("document", Some(d))).transpose()?;
    let mode: Mode =
        args.mode.parse().map_err(|what| MemoryError::InvalidArgument { argument: "mode", what })?;
    let mut fact = String::new();
    std::io::stdin()
        .read_to_string(&mut fact)
        .map_err(|_| Failure::User("Error: content: not valid UTF-8".to_owned()))?;
    let memory = super::open_reconciled(settings)?;
    let done = memory.remember(&fact, document.as_ref(), args.section.as_deref(), mode)?;
    super::print(&done.report())?;
    Ok(ExitCode::SUCCESS)
}
