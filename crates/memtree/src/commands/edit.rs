//! `memtree edit ID (--old TEXT --new TEXT | --section HEADING < body)`:
//! the `edit_document` tool's CLI.

use std::io::Read as _;
use std::process::ExitCode;

use memtree_core::{Edit, MemoryError};

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    id: String,
    /// Exact text to replace; must occur once
    #[arg(long, requires = "new", conflicts_with = "section")]
    old: Option<String>,
    /// The replacement text
    #[arg(long)]
    new: Option<String>,
    /// Replace this section's body with stdin
    #[arg(long)]
    section: Option<String>,
    /// The version the edit is based on (`read --json`)
    #[arg(long, value_name = "VERSION")]
    base: Option<String>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    let target = trees.for_write("id", Some(&args.id))?;
    let edit = match (args.old, args.new, args.section) {
        (Some(old), Some(new), None) => Edit::Replace { old, new },
        (None, None, Some(section)) => {
            let mut body = String::new();
            std::io::stdin()
                .read_to_string(&mut body)
                .map_err(|_| Failure::User("Error: content: not valid UTF-8".to_owned()))?;
            Edit::Section { section, body }
        }
        _ => {
            let what = "give --old and --new, or --section with the new body on stdin".to_owned();
            return Err(MemoryError::InvalidArgument { argument: "old", what }.into());
        }
    };
    let outcome = target.memory.edit_document(&target.id, &edit, args.base.as_deref())?;
    super::print(&outcome.report())?;
    Ok(ExitCode::SUCCESS)
}
