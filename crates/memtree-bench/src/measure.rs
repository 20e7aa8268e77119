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
//!
//! The server runs with `MEMTREE_LOG=info` and its log is read as it comes:
//! the `index reconciled` line marks the end of the start-up reconciliation
//! of the search index, which each session waits for before it searches.
//! After each session, two more start the server with no other request, to
//! time that reconciliation alone: once with nothing changed, once after 1 %
//! of the documents were changed on disk behind memtree's back.

use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail, ensure};
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::oneshot;

use crate::generate::{Prose, Rng, doc_path};
use crate::queries::{self, Query};

pub(crate) type Client = RunningService<RoleClient, ClientConfig>;

/// Untimed calls before each timed series.
const WARMUP: usize = 3;

/// Ids of the documents the benchmark creates (the generator never makes them).
const BENCH_PREFIX: &str = "bench_";

/// Hits asked of `search`, and the token budget of `recall`.
pub const SEARCH_LIMIT: usize = 8;
pub const RECALL_BUDGET: usize = 1200;

/// How long a server may take to log the end of its start-up reconciliation.
const RECONCILE_TIMEOUT: Duration = Duration::from_secs(600);

/// What one repetition should do.
pub struct Plan<'a> {
    pub bin: &'a Path,
    pub store: &'a Path,
    /// Timed reads, leaf rewrites and new-link updates.
    pub ops: usize,
    /// Timed searches and recalls: fewer on large stores, where each one
    /// ranks many passages.
    pub search_ops: usize,
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
    /// The start-up reconciliation of this session, beside its first requests.
    pub reconciled: Reconciled,
    pub search_ms: Vec<f64>,
    pub search_queries: Vec<SearchSample>,
    pub recall_ms: Vec<f64>,
    /// The N of each pack's `# Memory pack (N/B tokens)`.
    pub recall_tokens: Vec<usize>,
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
    /// A server started on the store as the session left it.
    pub reconcile_unchanged: Reconciled,
    /// Documents changed on disk (1 %) before the next start.
    pub changed_files: usize,
    pub reconcile_changed: Reconciled,
}

/// A timed search query and whether its target was among the hits.
#[derive(Debug, serde::Serialize)]
pub struct SearchSample {
    #[serde(flatten)]
    pub query: Query,
    pub hit: bool,
}

/// The server's `index reconciled` log line: when it came and what it says.
#[derive(Debug, serde::Serialize)]
pub struct Reconciled {
    /// From just before the spawn until the line was read.
    pub ms: f64,
    pub unchanged: usize,
    pub restamped: usize,
    pub indexed: usize,
    pub removed: usize,
}

pub async fn run_rep(plan: &Plan<'_>, targets: &mut Targets, prose: &Prose) -> anyhow::Result<RepResult> {
    let mut rng = Rng::new(plan.seed ^ (plan.rep as u64 + 1).wrapping_mul(0x1000_0000_01B3));
    // Cold start: the clock starts before the process exists.
    let Server { client, pid, started, reconciled } = spawn(plan).await?;
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

    // search, once the start-up reconciliation is done (it holds the index
    // while it runs): queries made from random notes' own words.
    let reconciled = wait_reconciled(reconciled).await?;
    let mut search_ms = Vec::with_capacity(plan.search_ops);
    let mut search_queries = Vec::with_capacity(plan.search_ops);
    for i in 0..WARMUP + plan.search_ops {
        let query = loop {
            let (id, note) = random_note(plan.store, targets, &mut rng)?;
            if let Some(query) = queries::query(&mut rng, &id, &note) {
                break query;
            }
        };
        let (t, text) = call(&client, search_args(&query.text)).await?;
        let hits = queries::hit_ids(&text);
        ensure!(!hits.is_empty(), "search {:?}, made from {}, answered {text:?}", query.text, query.target);
        if i >= WARMUP {
            search_ms.push(t);
            search_queries.push(SearchSample { hit: hits.contains(&query.target.as_str()), query });
        }
    }

    // recall: a memory pack for a task made from a random note's words.
    let mut recall_ms = Vec::with_capacity(plan.search_ops);
    let mut recall_tokens = Vec::with_capacity(plan.search_ops);
    for i in 0..WARMUP + plan.search_ops {
        let task = loop {
            let (_, note) = random_note(plan.store, targets, &mut rng)?;
            if let Some(task) = queries::task(&mut rng, &note) {
                break task;
            }
        };
        let (t, text) = call(&client, recall_args(&task)).await?;
        let used = pack_tokens(&text).with_context(|| format!("recall {task:?} answered {text:?}"))?;
        ensure!(used <= RECALL_BUDGET, "recall {task:?} used {used} tokens of {RECALL_BUDGET}");
        if i >= WARMUP {
            recall_ms.push(t);
            recall_tokens.push(used);
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

    // Start-up reconciliation alone: nothing changed since the last server,
    // then 1 % of the documents rewritten on disk while no server runs.
    let reconcile_unchanged = reconcile_session(plan, None).await?;
    ensure!(
        reconcile_unchanged.indexed + reconcile_unchanged.removed == 0,
        "nothing changed outside memtree, but the server found the index out of date: {reconcile_unchanged:?}"
    );
    let (changed_files, check) = edit_outside(plan, targets, &mut rng)?;
    let reconcile_changed = reconcile_session(plan, Some(&check)).await?;
    ensure!(
        reconcile_changed.indexed == changed_files,
        "{changed_files} documents changed on disk, but the server reindexed {}",
        reconcile_changed.indexed
    );

    Ok(RepResult {
        protocol_version,
        spawn_to_initialized_ms,
        spawn_to_first_read_ms,
        read_ms,
        reconciled,
        search_ms,
        search_queries,
        recall_ms,
        recall_tokens,
        update_same_links_ms,
        update_new_link_ms,
        update_remove_link_ms,
        tree_first_call_ms,
        tree_ms,
        peak_rss_before_tree_kib,
        peak_rss_kib,
        shutdown_ms,
        reconcile_unchanged,
        changed_files,
        reconcile_changed,
    })
}

/// A running `memtree serve`, initialized, whose log is being read.
struct Server {
    client: Client,
    pid: u32,
    /// Just before the spawn.
    started: Instant,
    reconciled: oneshot::Receiver<Result<Reconciled, String>>,
}

async fn spawn(plan: &Plan<'_>) -> anyhow::Result<Server> {
    let mut command = tokio::process::Command::new(plan.bin);
    command.arg("serve").arg("--data-dir").arg(plan.store).env("MEMTREE_LOG", "info");
    let started = Instant::now();
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot spawn {}", plan.bin.display()))?;
    let pid = transport.id().context("the server has no pid")?;
    let (sender, receiver) = oneshot::channel();
    tokio::spawn(read_log(stderr.context("no stderr pipe")?, started, sender));
    let client = ClientConfig::default()
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
        .serve(transport)
        .await
        .context("MCP initialize failed")?;
    Ok(Server { client, pid, started, reconciled: receiver })
}

/// Reads the server's log to its end, so that a full pipe never blocks the
/// server; sends on the `index reconciled` line (or the failure) and passes
/// warnings and errors on to stderr.
async fn read_log(
    stderr: ChildStderr,
    started: Instant,
    sender: oneshot::Sender<Result<Reconciled, String>>,
) {
    let mut sender = Some(sender);
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.contains("index reconcil") {
            let at = ms(started);
            let count = |field: &str| -> Option<usize> {
                let rest = &line[line.find(&format!("{field}: "))? + field.len() + 2..];
                rest[..rest.find(|c: char| !c.is_ascii_digit())?].parse().ok()
            };
            let parsed = (|| {
                Some(Reconciled {
                    ms: at,
                    unchanged: count("unchanged")?,
                    restamped: count("restamped")?,
                    indexed: count("indexed")?,
                    removed: count("removed")?,
                })
            })();
            if let Some(sender) = sender.take() {
                let _ = sender.send(parsed.ok_or_else(|| line.clone()));
            }
        } else if line.contains(" WARN ") || line.contains(" ERROR ") {
            eprintln!("memtree serve: {line}");
        }
    }
}

/// Waits for the server to log the end of its start-up reconciliation.
async fn wait_reconciled(
    receiver: oneshot::Receiver<Result<Reconciled, String>>,
) -> anyhow::Result<Reconciled> {
    tokio::time::timeout(RECONCILE_TIMEOUT, receiver)
        .await
        .with_context(|| format!("no `index reconciled` in the log after {} s", RECONCILE_TIMEOUT.as_secs()))?
        .context("the server's log ended before `index reconciled`")?
        .map_err(|line| anyhow!("the server logged: {line}"))
}

/// Starts a server, waits for its start-up reconciliation and stops it; with
/// `check` (a word and the document it was appended to), first checks that
/// searching the word finds that document.
async fn reconcile_session(plan: &Plan<'_>, check: Option<&(String, String)>) -> anyhow::Result<Reconciled> {
    let server = spawn(plan).await?;
    let reconciled = wait_reconciled(server.reconciled).await?;
    if let Some((word, id)) = check {
        let (_, text) = call(&server.client, search_args(word)).await?;
        ensure!(
            queries::hit_ids(&text).first() == Some(&id.as_str()),
            "search {word:?}, appended to {id} while no server ran, answered {text:?}"
        );
    }
    server.client.cancel().await.context("MCP shutdown failed")?;
    Ok(reconciled)
}

/// Appends a line to 1 % of the documents, straight on disk; one of them
/// gets a word found nowhere else. Returns how many changed, and that word
/// with its document.
fn edit_outside(
    plan: &Plan<'_>,
    targets: &Targets,
    rng: &mut Rng,
) -> anyhow::Result<(usize, (String, String))> {
    let count = (targets.ids.len() / 100).max(1);
    let mut chosen: Vec<&String> = Vec::with_capacity(count);
    let mut seen = HashSet::with_capacity(count);
    while chosen.len() < count {
        let id = rng.pick(&targets.ids);
        if seen.insert(id) {
            chosen.push(id);
        }
    }
    let word = format!("zqoutside{}", plan.rep);
    for (i, id) in chosen.iter().enumerate() {
        let path = doc_path(plan.store, id);
        let mut text = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let mark = if i == 0 { format!(": {word}") } else { String::new() };
        text.push_str(&format!("\nEdited outside memtree, rep {}{mark}.\n", plan.rep));
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    }
    Ok((count, (word, chosen[0].clone())))
}

/// A random generated or benchmark-made note (not root) and its text on disk.
fn random_note(store: &Path, targets: &Targets, rng: &mut Rng) -> anyhow::Result<(String, String)> {
    let id = loop {
        let id = rng.pick(&targets.ids);
        if id != "root" {
            break id.clone();
        }
    };
    let path = doc_path(store, &id);
    let text = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    Ok((id, text))
}

/// The N of a pack's first line, `# Memory pack (N/1200 tokens)`.
fn pack_tokens(pack: &str) -> anyhow::Result<usize> {
    let header = pack.lines().next().unwrap_or("");
    let inner = header
        .strip_prefix("# Memory pack (")
        .and_then(|rest| rest.strip_suffix(" tokens)"))
        .context("no `# Memory pack (N/B tokens)` header")?;
    let (used, budget) = inner.split_once('/').context("no N/B in the header")?;
    ensure!(budget == RECALL_BUDGET.to_string(), "the pack's budget is {budget}, not {RECALL_BUDGET}");
    used.parse().context("N is not a number")
}

pub(crate) fn read_args(id: &str) -> CallToolRequestParams {
    tool("read_document", json!({ "id": id }))
}

pub(crate) fn update_args(id: &str, content: &str) -> CallToolRequestParams {
    tool("update_document", json!({ "id": id, "content": content }))
}

pub(crate) fn search_args(query: &str) -> CallToolRequestParams {
    tool("search", json!({ "query": query, "limit": SEARCH_LIMIT }))
}

fn recall_args(task: &str) -> CallToolRequestParams {
    tool("recall", json!({ "task": task, "budget": RECALL_BUDGET }))
}

fn tree_args() -> CallToolRequestParams {
    tool("get_document_tree", json!({}))
}

pub(crate) fn tool(name: &'static str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else { unreachable!("tool arguments are objects") };
    CallToolRequestParams::new(name).with_arguments(args)
}

/// One tool call, timed around the client call alone. A tool error fails
/// the benchmark: figures of calls that did not do their work mean nothing.
pub(crate) async fn call(client: &Client, params: CallToolRequestParams) -> anyhow::Result<(f64, String)> {
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

pub(crate) fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The process's peak resident set (VmHWM), in KiB.
pub(crate) fn vm_hwm_kib(pid: u32) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).context("no VmHWM in /proc status")?;
    line.split_whitespace().nth(1).context("empty VmHWM")?.parse().context("VmHWM is not a number")
}
