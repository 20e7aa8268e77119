//! `memtree split ID [--into CHILD=HEADING,HEADING ...]`: split a document
//! along its sections, or as the plan says.

use std::process::ExitCode;

use memtree_core::MemoryError;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    id: String,
    /// A new child and the headings it takes, e.g. `notes/setup=Setup,Linux`; repeatable
    #[arg(long, value_name = "CHILD=HEADINGS")]
    into: Vec<String>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    let target = trees.for_write("id", Some(&args.id))?;
    let mut plan = Vec::new();
    for entry in &args.into {
        let Some((child, headings)) = entry.split_once('=') else {
            let what = format!("{entry:?} is not CHILD=HEADING,HEADING");
            return Err(MemoryError::InvalidArgument { argument: "into", what }.into());
        };
        let headings = headings.split(',').map(|h| h.trim().to_owned()).filter(|h| !h.is_empty()).collect();
        plan.push((child.trim().to_owned(), headings));
    }
    let plan = (!plan.is_empty()).then(|| trees.split_plan(&target, "into", plan)).transpose()?;
    let outcome = target.memory.split_document(&target.id, plan.as_deref())?;
    super::print(&outcome.report())?;
    Ok(ExitCode::SUCCESS)
}
