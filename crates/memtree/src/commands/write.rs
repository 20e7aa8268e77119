//! `memtree write [ID]`: replace a document with stdin, under the same rules
//! and with the same answers as the `update_document` tool.

use std::io::Read as _;
use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Document id (default: root)
    id: Option<String>,
    /// The version the content is based on (`read --json`); a document
    /// changed since is merged by section, or refused
    #[arg(long, value_name = "VERSION")]
    base: Option<String>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    let target = trees.for_write("id", args.id.as_deref())?;
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes).map_err(anyhow::Error::from)?;
    let content =
        String::from_utf8(bytes).map_err(|_| Failure::User("Error: content: not valid UTF-8".to_owned()))?;
    let outcome = target.memory.update_document(&target.id, &content, args.base.as_deref())?;
    if settings.json {
        super::print_json(&serde_json::json!({ "created": outcome.created, "deleted": outcome.deleted }))?;
    } else {
        super::print(&outcome.report())?;
    }
    Ok(ExitCode::SUCCESS)
}
