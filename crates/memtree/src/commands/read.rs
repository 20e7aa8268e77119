//! `memtree read [ID] [--section HEADING]`: print a document as stored,
//! or one of its sections.

use std::process::ExitCode;

use memtree_core::Target;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Document id (default: root)
    id: Option<String>,
    /// Only this section: its heading line and everything under it
    #[arg(long, value_name = "HEADING")]
    section: Option<String>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    let Target { memory, id, .. } = trees.for_read("id", args.id.as_deref())?;
    let (text, version) = memory.read_versioned(&id)?;
    let text = match args.section.as_deref() {
        Some(heading) => memory.read_section(&id, heading)?,
        None => text,
    };
    if settings.json {
        super::print_json(&serde_json::json!({ "id": id, "content": text, "version": version }))?;
    } else {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(anyhow::Error::from)?;
    }
    Ok(ExitCode::SUCCESS)
}
