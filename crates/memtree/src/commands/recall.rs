//! `memtree recall TASK --budget N --scope S` (alias `query`): a memory
//! pack, as the `recall` tool makes it.

use std::process::ExitCode;

use memtree_core::{defaults, parse_scope_argument};

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task or question
    #[arg(required = true, num_args = 1..)]
    task: Vec<String>,
    /// Token budget
    #[arg(long, default_value_t = defaults::PACK_BUDGET)]
    budget: usize,
    /// global, agent, project or ephemeral
    #[arg(long)]
    scope: Option<String>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let scope = parse_scope_argument(args.scope.as_deref())?;
    let trees = super::open_reconciled(settings)?;
    let pack = trees.recall(&args.task.join(" "), args.budget, scope)?;
    if settings.json {
        super::print_json(&pack)?;
    } else {
        super::print(&pack.render())?;
    }
    Ok(ExitCode::SUCCESS)
}
