//! `memtree serve`: the MCP server over stdio, or over HTTP (`--http`).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use memtree_history::CommitTiming;
use memtree_mcp::{LayeredServer, MemtreeServer, Profile, V2Server};

use crate::cli::Failure;
use crate::settings::{Place, Settings};

/// Messages up to this size are read whatever the document limit.
const MIN_MESSAGE_BYTES: usize = 16 << 20;
/// How long engine calls may go on after the client left.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tools to expose, comma-separated [env: MEMTREE_TOOLS; default: all]
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    tools: Option<Vec<String>>,
    /// Serve MCP over HTTP at /mcp instead of stdio [env: MEMTREE_HTTP; default address: 127.0.0.1:7821]
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_HTTP)]
    http: Option<String>,
    /// The bearer token every HTTP request must carry; required off loopback [env: MEMTREE_TOKEN]
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// An origin allowed besides the server's own (a web page calling it), repeatable
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Scan agent session transcripts (Claude Code, Codex) in the background and offer scan_sessions and search_sessions [env: MEMTREE_SESSIONS=on]
    #[arg(long)]
    sessions: bool,
    /// The tools to speak: memtree's own, seed 002's layered-memory-mcp (layered, with session scanning) or seed 004's Memory V2 (v2) [env: MEMTREE_PROFILE]
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(Profile::NAMES))]
    profile: Option<String>,
}

/// Where `serve --http` listens unless told.
const DEFAULT_HTTP: &str = "127.0.0.1:7821";

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let tools = args.tools.or_else(|| settings.tools.clone());
    let profile = match args.profile.or_else(|| settings.profile.clone()) {
        None => Profile::Memtree,
        Some(name) => Profile::parse(&name).ok_or_else(|| {
            Failure::User(format!("Error: profile: {name:?} is not one of {}", Profile::NAMES.join(", ")))
        })?,
    };
    if profile != Profile::Memtree && tools.is_some() {
        return Err(Failure::User(
            "Error: tools: --tools chooses among memtree's own tools, not a profile's".into(),
        ));
    }
    // A message (a line on stdin, a request body over HTTP) may carry a
    // whole document, escaped: room for the largest.
    let max_message = (8 * settings.memory.max_document_bytes).max(MIN_MESSAGE_BYTES);
    // A bad address or a missing token is refused before anything opens.
    let http = match args.http.or_else(|| settings.http.clone()) {
        None => None,
        Some(addr) => {
            let config = memtree_web::HttpConfig {
                addr: addr.parse().map_err(|_| {
                    Failure::User(format!("Error: http: {addr:?} is not an address such as {DEFAULT_HTTP}"))
                })?,
                token: args.token.or_else(|| settings.token.clone()).filter(|t| !t.is_empty()),
                allowed_origins: args.allow_origin,
                max_body: max_message,
            };
            memtree_web::check(&config).map_err(|e| Failure::User(format!("Error: http: {e}")))?;
            Some(config)
        }
    };
    let (trees, indexes) = super::open_trees_with(settings, CommitTiming::InBackground, None)?;
    let trees = Arc::new(trees);
    // The embedding model loads off the request path (a few hundred ms):
    // until it has, searches are BM25 alone. Then passages are embedded for
    // dense retrieval while the server runs.
    if settings.embedding_model.is_some() {
        let settings = settings.clone();
        let indexes: Vec<_> = indexes.iter().map(Arc::downgrade).collect();
        std::thread::Builder::new()
            .name("memtree-model".into())
            .spawn(move || match settings.encoder() {
                Ok(Some(encoder)) => {
                    for index in indexes.iter().filter_map(std::sync::Weak::upgrade) {
                        index.set_encoder(Arc::clone(&encoder));
                        if let Err(error) = memtree_index::embed_in_background(Arc::downgrade(&index)) {
                            tracing::error!(%error, "cannot start embedding");
                        }
                    }
                }
                Ok(None) => {}
                Err(error) => tracing::error!(error = format!("{error:#}"), "searching by BM25 alone"),
            })
            .context("cannot start loading the embedding model")?;
    }
    // Off the request path: watch for edits by other programs (setting up
    // inotify walks the whole store), then index what changed while no
    // server ran; an edit in between is seen by both. The first request is
    // served at once, and searches check their hits against the files
    // anyway. The BPE table loads at the first memory pack, not here: it
    // costs 25 MiB that a session may never need.
    // Pages open in a browser are told what changed (HTTP only).
    let changes = memtree_web::Changes::default();
    let mut background = vec![(settings.own_place(), Arc::clone(trees.own()), "")];
    background.extend(
        trees
            .shared()
            .map(|shared| (settings.shared_place(), Arc::clone(shared), memtree_core::SHARED_PREFIX)),
    );
    // A search before the index has caught up waits for it a while, then
    // says how far it is, rather than answer "no matches" from a stale index.
    for (_, memory, _) in &background {
        memory.expect_reconcile();
    }
    let told = changes.clone();
    let (handshake_done, handshake) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        // Let the client's handshake go first: on two cores, walking a
        // large store competes with it for the CPU.
        let _ = handshake.recv_timeout(HANDSHAKE_WAIT);
        for (place, memory, prefix) in background {
            let changes = told.clone();
            let tell = move |ids: &[memtree_core::DocId]| {
                changes.send(ids.iter().map(|id| format!("{prefix}{id}")).collect());
            };
            match place {
                Place::Folder(dir) => crate::watch::spawn(dir, Arc::clone(&memory), tell),
                Place::Bucket(bucket) => crate::feed::spawn(Arc::clone(&memory), bucket.poll, tell),
            }
            match memory.reconcile() {
                Ok(report) => tracing::info!(?report, "index reconciled"),
                Err(error) => tracing::error!(%error, "index reconciliation failed"),
            }
            // Changes queued by a process that died, and edits made while
            // no server ran, go into history.
            if let Err(error) = memory.flush_history(None) {
                tracing::error!(%error, "bringing history up to date failed");
            }
            match memory.read_ahead() {
                Ok(words) => tracing::info!(words, "search index read ahead"),
                Err(error) => tracing::warn!(%error, "cannot read the search index ahead"),
            }
        }
    });
    // Seed 002's surface scans sessions: its profile turns the layer on.
    let sessions = match args.sessions || settings.sessions.serve || profile == Profile::Layered {
        true => {
            let sessions = super::sessions::open(settings, None)?;
            crate::transcripts::spawn(Arc::clone(&sessions));
            Some(sessions)
        }
        false => None,
    };
    // HTTP serves many clients at once, each engine call on the blocking
    // pool; stdio serves one, whose requests are read, carried out and
    // answered on this thread, with no thread woken between (see
    // `memtree_mcp::blocking` and `memtree_mcp::stdio`).
    let runtime = match http.is_some() {
        true => tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build(),
        false => tokio::runtime::Builder::new_current_thread().enable_all().build(),
    }
    .context("cannot start the async runtime")?;
    let transport =
        Transport { http, changes, max_message, store: settings.own_place().to_string(), handshake_done };
    let served = match profile {
        Profile::Memtree => {
            let server = MemtreeServer::new(Arc::clone(&trees), tools.as_deref(), sessions)
                .map_err(|e| Failure::User(format!("Error: tools: {e}")))?;
            runtime.block_on(transport.serve(server, Arc::clone(&trees)))
        }
        Profile::Layered => {
            let server = LayeredServer::new(Arc::clone(&trees), sessions, settings.l0_format);
            runtime.block_on(transport.serve(server, Arc::clone(&trees)))
        }
        Profile::V2 => {
            runtime.block_on(transport.serve(V2Server::new(Arc::clone(&trees)), Arc::clone(&trees)))
        }
    };
    // An engine call still running when the client left (or the server was
    // stopped) is let finish a
    // while (a write is atomic however it ends), but a server never
    // outlives its client for long.
    runtime.shutdown_timeout(SHUTDOWN_WAIT);
    served?;
    // The client left: commit what is queued and bring the git index
    // along now, rather than leave it to the next process.
    for memory in trees.each() {
        if let Err(error) = memory.flush_history(None) {
            tracing::warn!(%error, "history not brought up to date at exit");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The longest the store's walk at start waits for the client's handshake.
const HANDSHAKE_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// How the server is reached: over HTTP (with the UI) or stdio.
struct Transport {
    http: Option<memtree_web::HttpConfig>,
    changes: memtree_web::Changes,
    max_message: usize,
    store: String,
    /// Told once a client may send requests: the stdio handshake is done,
    /// or the HTTP port is open.
    handshake_done: std::sync::mpsc::Sender<()>,
}

impl Transport {
    async fn serve<S>(self, server: S, trees: Arc<memtree_core::Namespaced>) -> anyhow::Result<()>
    where
        S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
    {
        match self.http {
            Some(config) => {
                // The address is printed for a person or a script that
                // asked for port 0; logs go to stderr.
                let bound = |addr| {
                    eprintln!("memtree: serving MCP at http://{addr}/mcp and the UI at http://{addr}/");
                    let _ = self.handshake_done.send(());
                };
                memtree_web::serve(server, trees, self.changes, config, bound, stopped())
                    .await
                    .context("MCP over HTTP failed")
            }
            None => {
                tracing::info!(store = %self.store, "serving over stdio");
                let (input, output) = memtree_mcp::stdio::pipes();
                let ready = move || {
                    let _ = self.handshake_done.send(());
                };
                memtree_mcp::framing::serve(server, input, output, self.max_message, ready)
                    .await
                    .context("MCP service failed")
            }
        }
    }
}

/// Completes at Ctrl-C or SIGTERM: how an HTTP server, which has no client
/// to leave, is stopped. The handlers are set when this is called, before
/// the address is printed: a future sets them only once polled, and a
/// SIGTERM sent as soon as a script read the address killed the server
/// instead of stopping it.
fn stopped() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let signals = signal(SignalKind::interrupt()).and_then(|i| Ok((i, signal(SignalKind::terminate())?)));
        async move {
            let Ok((mut interrupt, mut term)) = signals else { return std::future::pending().await };
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = term.recv() => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
