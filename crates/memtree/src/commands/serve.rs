//! `memtree serve`: the MCP server over stdio.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use memtree_mcp::MemtreeServer;
use rmcp::ServiceExt as _;

use crate::cli::Failure;
use crate::settings::{Settings, env, var};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tools to expose, comma-separated [env: MEMTREE_TOOLS; default: all]
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    tools: Option<Vec<String>>,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let tools =
        args.tools.or_else(|| var(env::TOOLS).map(|v| v.split(',').map(|t| t.trim().to_owned()).collect()));
    let memory = Arc::new(super::open_memory(settings)?);
    // Index what changed while no server ran, off the request path: the
    // first request is served at once, and searches check their hits anyway.
    let background = Arc::clone(&memory);
    let tokenizer = settings.tokenizer.clone();
    std::thread::spawn(move || {
        match background.reconcile() {
            Ok(report) => tracing::info!(?report, "index reconciled"),
            Err(error) => tracing::error!(%error, "index reconciliation failed"),
        }
        if let Ok(counter) = memtree_index::BpeCounter::new(&tokenizer) {
            counter.warm_up();
        }
    });
    crate::watch::spawn(settings.data_dir.clone(), Arc::clone(&memory));
    let server = MemtreeServer::new(memory, tools.as_deref())
        .map_err(|e| Failure::User(format!("Error: tools: {e}")))?;
    tracing::info!(data_dir = %settings.data_dir.display(), "serving over stdio");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let service =
            server.serve(rmcp::transport::io::stdio_pipes()).await.context("MCP handshake failed")?;
        service.waiting().await.context("MCP service failed")?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
