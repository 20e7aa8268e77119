//! `memtree lifecycle ID --why W [--status S] [--scope S] [--priority P]
//! [--expires DATE] [--superseded-by ID]`: the `lifecycle` tool's CLI.

use std::process::ExitCode;

use memtree_core::LifecycleArguments;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    id: String,
    /// Why the memory changes (recorded)
    #[arg(long)]
    why: String,
    /// active or deprecated
    #[arg(long)]
    status: Option<String>,
    /// global, agent, project or ephemeral
    #[arg(long)]
    scope: Option<String>,
    /// 0 to 1
    #[arg(long)]
    priority: Option<f64>,
    /// YYYY-MM-DD
    #[arg(long)]
    expires: Option<String>,
    /// The document that replaces this one
    #[arg(long, value_name = "ID")]
    superseded_by: Option<String>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    let target = trees.for_write("id", Some(&args.id))?;
    let change = trees.lifecycle_change(
        &target,
        LifecycleArguments {
            status: args.status.as_deref(),
            scope: args.scope.as_deref(),
            priority: args.priority,
            expires: args.expires,
            superseded_by: args.superseded_by.as_deref(),
        },
    )?;
    let answer = target.memory.set_lifecycle(&target.id, &change, &args.why)?;
    super::print(&answer)?;
    Ok(ExitCode::SUCCESS)
}
