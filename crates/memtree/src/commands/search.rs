//! `memtree search QUERY`: ranked passages with their place in the tree.

use std::process::ExitCode;

use memtree_core::{defaults, pack, parse_scope_argument};

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Plain words or a question
    #[arg(required = true, num_args = 1..)]
    query: Vec<String>,
    /// Most hits
    #[arg(long, default_value_t = defaults::SEARCH_HITS)]
    limit: usize,
    /// global, agent, project or ephemeral
    #[arg(long)]
    scope: Option<String>,
    /// Only this document's subtree
    #[arg(long, value_name = "ID")]
    under: Option<String>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let scope = parse_scope_argument(args.scope.as_deref())?;
    let trees = super::open_reconciled(settings)?;
    let hits = trees.search(&args.query.join(" "), args.limit, scope, args.under.as_deref())?;
    if settings.json {
        super::print_json(&hits)?;
    } else {
        super::print(&pack::render_hits(&hits))?;
    }
    Ok(ExitCode::SUCCESS)
}
