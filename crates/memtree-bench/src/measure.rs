//! Measurement: one `memtree serve` session per repetition, driven by rmcp's
//! client through the child's real stdin/stdout.
//!
//! Each call is timed around the client call alone (arguments are built and
//! targets picked before the clock starts), one call at a time: the figures
//! are what an MCP client sees, JSON-RPC framing and the process boundary
//! included. A few untimed calls of each kind come first, so one-time costs
//! (page faults, first allocation, lazy statics) do not land in the samples;
//! the first `get_document_tree` of a session is kept apart because it is
//! the one that parses every document.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, bail, ensure};
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::generate::{Prose, Rng, doc_path};

type Client = RunningService<RoleClient, ClientConfig>;

/// Untimed calls before each timed series.
const WARMUP: usize = 3;

/// Ids of the documents the benchmark creates (the generator never makes them).
const BENCH_PREFIX: &str = "bench_";

/// What one repetition should do.
pub struct Plan<'a> {
    pub bin: &'a Path,
    pub store: &'a Path,
    /// Timed reads, leaf rewrites and new-link updates.
    pub ops: usize,
    /// Timed tree calls and prunes: fewer, since each one covers the store.
    pub tree_ops: usize,
    pub seed: u64,
    /// Which repetition: seeds its choices and names its new documents.
    pub rep: usize,
}

/// The ids the benchmark knows; updates with new links change both lists.
pub struct Targets {
    pub ids: Vec<String>,
    pub leaves: Vec<String>,
}

/// Raw figures of one session, in milliseconds and KiB.
#[derive(Debug, serde::Serialize)]
pub struct RepResult {
    pub protocol_version: String,
    pub spawn_to_initialized_ms: f64,
    pub spawn_to_first_read_ms: f64,
    pub read_ms: Vec<f64>,
    pub update_same_links_ms: Vec<f64>,
    pub update_new_link_ms: Vec<f64>,
    pub update_remove_link_ms: Vec<f64>,
    pub tree_first_call_ms: f64,
    pub tree_ms: Vec<f64>,
    /// VmHWM just before the tree phase: reads and writes alone.
    pub peak_rss_before_tree_kib: u64,
    /// VmHWM at the end of the session.
    pub peak_rss_kib: u64,
    pub shutdown_ms: f64,
}

pub async fn run_rep(plan: &Plan<'_>, targets: &mut Targets, prose: &Prose) -> anyhow::Result<RepResult> {
    let mut rng = Rng::new(plan.seed ^ (plan.rep as u64 + 1).wrapping_mul(0x1000_0000_01B3));
    let mut command = tokio::process::Command::new(plan.bin);
    command.arg("serve").arg("--data-dir").arg(plan.store);

    // Cold start: the clock starts before the process exists.
    let started = Instant::now();
    let transport =
        TokioChildProcess::new(command).with_context(|| format!("cannot spawn {}", plan.bin.display()))?;
    let pid = transport.id().context("the server has no pid")?;
    let client = ClientConfig::default()
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
        .serve(transport)
        .await
        .context("MCP initialize failed")?;
    let spawn_to_initialized_ms = ms(started);
    let first = read_args("root");
    let (_, root) = call(&client, first).await?;
    let spawn_to_first_read_ms = ms(started);
    ensure!(root.starts_with("# Memory"), "root reads back as {root:?}");
    let protocol_version = client
        .peer_info()
        .map(|info| info.protocol_version.to_string())
        .unwrap_or_else(|| "unknown".to_owned());

    // read_document on random existing ids.
    let mut read_ms = Vec::with_capacity(plan.ops);
    for i in 0..WARMUP + plan.ops {
        let id = rng.pick(&targets.ids).clone();
        let (t, text) = call(&client, read_args(&id)).await?;
        ensure!(text.starts_with("---\n") || text.starts_with("# "), "{id} reads back as {text:?}");
        if i >= WARMUP {
            read_ms.push(t);
        }
    }

    // update_document on random leaves with new text and the same (no) links.
    let mut update_same_links_ms = Vec::with_capacity(plan.ops);
    for i in 0..WARMUP + plan.ops {
        let id = rng.pick(&targets.leaves).clone();
        let content = prose.note(&mut rng, &format!("Rewritten {id}"), &[]);
        let (t, text) = call(&client, update_args(&id, &content)).await?;
        ensure!(text == "Succeeded", "update of {id} answered {text:?}");
        if i >= WARMUP {
            update_same_links_ms.push(t);
        }
    }

    // update_document adding one new link to a random document: one new
    // child per call, so this write goes through the journal.
    let mut update_new_link_ms = Vec::with_capacity(plan.ops);
    let mut added: Vec<(String, String)> = Vec::with_capacity(WARMUP + plan.ops);
    for i in 0..WARMUP + plan.ops {
        // Never under a document the benchmark made: pruning that one later
        // would take a grandchild with it.
        let id = loop {
            let id = rng.pick(&targets.ids);
            if !id.starts_with(BENCH_PREFIX) {
                break id.clone();
            }
        };
        let new = format!("{BENCH_PREFIX}r{}_{i}", plan.rep);
        let path = doc_path(plan.store, &id);
        let old = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let sep = if old.ends_with('\n') { "" } else { "\n" };
        let content = format!("{old}{sep}\n- [[{new}]] added by the benchmark\n");
        let (t, text) = call(&client, update_args(&id, &content)).await?;
        ensure!(text == format!("Succeeded\nCreated: {new}"), "update of {id} answered {text:?}");
        targets.leaves.retain(|leaf| *leaf != id);
        targets.leaves.push(new.clone());
        targets.ids.push(new.clone());
        added.push((id, new));
        if i >= WARMUP {
            update_new_link_ms.push(t);
        }
    }

    let peak_rss_before_tree_kib = vm_hwm_kib(pid)?;

    // get_document_tree: the first call of a session parses every document;
    // later ones only re-list the store and re-read what changed.
    let (tree_first_call_ms, tree) = call(&client, tree_args()).await?;
    ensure!(
        tree.lines().count() == targets.ids.len(),
        "the tree has {} lines for {} documents",
        tree.lines().count(),
        targets.ids.len()
    );
    call(&client, tree_args()).await?;
    let mut tree_ms = Vec::with_capacity(plan.tree_ops);
    for _ in 0..plan.tree_ops {
        tree_ms.push(call(&client, tree_args()).await?.0);
    }

    // update_document dropping some of those links again: each call prunes
    // one leaf (moved to the trash through the journal). After the tree
    // phase, so the first tree call still finds nothing parsed; as few calls
    // as the tree phase, because pruning builds the whole tree too.
    let mut update_remove_link_ms = Vec::with_capacity(plan.tree_ops);
    for (i, (id, new)) in added.into_iter().take(WARMUP + plan.tree_ops).enumerate() {
        let path = doc_path(plan.store, &id);
        let old = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let content = old.replacen(&format!("\n- [[{new}]] added by the benchmark\n"), "", 1);
        let (t, text) = call(&client, update_args(&id, &content)).await?;
        ensure!(text == format!("Succeeded\nDeleted: {new}"), "update of {id} answered {text:?}");
        targets.leaves.retain(|leaf| *leaf != new);
        targets.ids.retain(|known| *known != new);
        if i >= WARMUP {
            update_remove_link_ms.push(t);
        }
    }

    // Read before shutting down: the process and its /proc entry go away.
    let peak_rss_kib = vm_hwm_kib(pid)?;
    let stopping = Instant::now();
    client.cancel().await.context("MCP shutdown failed")?;
    let shutdown_ms = ms(stopping);

    Ok(RepResult {
        protocol_version,
        spawn_to_initialized_ms,
        spawn_to_first_read_ms,
        read_ms,
        update_same_links_ms,
        update_new_link_ms,
        update_remove_link_ms,
        tree_first_call_ms,
        tree_ms,
        peak_rss_before_tree_kib,
        peak_rss_kib,
        shutdown_ms,
    })
}

fn read_args(id: &str) -> CallToolRequestParams {
    tool("read_document", json!({ "id": id }))
}

fn update_args(id: &str, content: &str) -> CallToolRequestParams {
    tool("update_document", json!({ "id": id, "content": content }))
}

fn tree_args() -> CallToolRequestParams {
    tool("get_document_tree", json!({}))
}

fn tool(name: &'static str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else { unreachable!("tool arguments are objects") };
    CallToolRequestParams::new(name).with_arguments(args)
}

/// One tool call, timed around the client call alone. A tool error fails
/// the benchmark: figures of calls that did not do their work mean nothing.
async fn call(client: &Client, params: CallToolRequestParams) -> anyhow::Result<(f64, String)> {
    let name = params.name.clone();
    let started = Instant::now();
    let result = client.call_tool(params).await.with_context(|| format!("{name} failed"))?;
    let elapsed = ms(started);
    let text: String = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect();
    if result.is_error == Some(true) {
        bail!("{name} answered an error: {text}");
    }
    Ok((elapsed, text))
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The process's peak resident set (VmHWM), in KiB.
fn vm_hwm_kib(pid: u32) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).context("no VmHWM in /proc status")?;
    line.split_whitespace().nth(1).context("empty VmHWM")?.parse().context("VmHWM is not a number")
}
