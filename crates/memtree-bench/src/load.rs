//! `memtree-bench --http-load SECONDS`: one `memtree serve --http` on a
//! generated store, driven for a bounded time by MCP sessions (agents
//! calling tools back to back) and browsers (pages at a person's pace, each
//! holding the change stream open), all on loopback. Reports p50/p95/max
//! per operation and every error; none is expected.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::generate::{Rng, doc_path};
use crate::measure::{ms, vm_hwm_kib};
use crate::percentile;
use crate::queries;

pub struct LoadPlan<'a> {
    pub bin: &'a Path,
    pub store: &'a Path,
    pub ids: &'a [String],
    pub leaves: &'a [String],
    pub seconds: u64,
    pub sessions: usize,
    pub browsers: usize,
    /// Pause between two pages of one browser (a person reads).
    pub think: Duration,
    pub seed: u64,
}

/// Latencies (ms) and failures per operation.
#[derive(Default)]
struct Tally {
    ms: BTreeMap<&'static str, Vec<f64>>,
    errors: BTreeMap<&'static str, Vec<String>>,
}

impl Tally {
    fn record(&mut self, op: &'static str, ms: f64, outcome: Result<(), String>) {
        self.ms.entry(op).or_default().push(ms);
        if let Err(error) = outcome {
            self.errors.entry(op).or_default().push(error);
        }
    }
}

pub fn run(plan: &LoadPlan<'_>) -> anyhow::Result<(String, Value)> {
    let mut server = Server::start(plan.bin, plan.store)?;
    let base = format!("http://{}", server.addr);
    let deadline = Instant::now() + Duration::from_secs(plan.seconds);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let events = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for s in 0..plan.sessions {
        let work = Work::new(plan, plan.seed ^ (s as u64 + 1), &base)?;
        let tally = Arc::clone(&tally);
        workers.push(std::thread::spawn(move || work.session(deadline, &tally)));
    }
    for b in 0..plan.browsers {
        let work = Work::new(plan, plan.seed ^ (b as u64 + 101), &base)?;
        let (tally, events, stop) = (Arc::clone(&tally), Arc::clone(&events), Arc::clone(&stop));
        let think = plan.think;
        workers.push(std::thread::spawn(move || work.browser(deadline, think, &tally, &events, &stop)));
    }
    for worker in workers {
        worker.join().map_err(|_| anyhow::anyhow!("a load thread panicked"))??;
    }
    stop.store(true, Ordering::Relaxed);
    let peak_kib = vm_hwm_kib(server.child.id()).unwrap_or(0);
    server.stop()?;
    let tally = std::mem::take(&mut *tally.lock().expect("tally"));
    Ok(report(plan, &tally, events.load(Ordering::Relaxed), peak_kib))
}

fn report(plan: &LoadPlan<'_>, tally: &Tally, events: usize, peak_kib: u64) -> (String, Value) {
    let mut table = format!(
        "### HTTP load: {} MCP sessions + {} browsers for {} s, {} documents\n\n\
         | operation | calls | per s | p50 ms | p95 ms | max ms | errors |\n|---|---|---|---|---|---|---|\n",
        plan.sessions,
        plan.browsers,
        plan.seconds,
        plan.ids.len()
    );
    let mut rows = Vec::new();
    let mut total_errors = 0;
    for (op, ms) in &tally.ms {
        let errors = tally.errors.get(op).map_or(0, Vec::len);
        total_errors += errors;
        let (p50, p95) = (percentile(ms, 50.0), percentile(ms, 95.0));
        let max = ms.iter().copied().fold(0.0, f64::max);
        table.push_str(&format!(
            "| {op} | {} | {:.1} | {p50:.2} | {p95:.2} | {max:.1} | {errors} |\n",
            ms.len(),
            ms.len() as f64 / plan.seconds as f64
        ));
        rows.push(json!({ "op": op, "calls": ms.len(), "p50_ms": p50, "p95_ms": p95, "max_ms": max,
                          "errors": tally.errors.get(op).cloned().unwrap_or_default() }));
    }
    table.push_str(&format!(
        "\nErrors: {total_errors}. Change events received by the browsers: {events}. \
         Server peak RSS: {:.0} MiB.\n\n",
        peak_kib as f64 / 1024.0
    ));
    for (op, errors) in &tally.errors {
        for error in errors.iter().take(3) {
            table.push_str(&format!("- {op}: {error}\n"));
        }
    }
    let raw = json!({ "sessions": plan.sessions, "browsers": plan.browsers, "seconds": plan.seconds,
                      "documents": plan.ids.len(), "events": events, "peak_rss_kib": peak_kib, "ops": rows });
    (table, raw)
}

/// `memtree serve --http 127.0.0.1:0` on the store.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(bin: &Path, store: &Path) -> anyhow::Result<Server> {
        let mut child = Command::new(bin)
            .arg("--data-dir")
            .arg(store)
            .args(["serve", "--http", "127.0.0.1:0"])
            .env("MEMTREE_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let mut lines = BufReader::new(child.stderr.take().context("no stderr")?).lines();
        let addr = loop {
            let Some(line) = lines.next() else { bail!("the server exited before serving") };
            if let Some(rest) = line?.split("serving MCP at http://").nth(1) {
                break rest.split('/').next().unwrap_or_default().to_owned();
            }
        };
        // Keep reading its log, so a full pipe never blocks it.
        std::thread::spawn(move || lines.for_each(drop));
        // Let start-up reconciliation finish before timing anything.
        std::thread::sleep(Duration::from_secs(2));
        Ok(Server { child, addr })
    }

    fn stop(&mut self) -> anyhow::Result<()> {
        // SIGTERM: how an HTTP server is stopped; it exits 0.
        Command::new("kill").arg(self.child.id().to_string()).status()?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the server exited with {status}");
        }
        Ok(())
    }
}

/// One client thread's connection and choices.
struct Work {
    agent: ureq::Agent,
    base: String,
    rng: Rng,
    ids: Vec<String>,
    leaves: Vec<String>,
    /// Search queries and pack tasks drawn from the notes.
    queries: Vec<String>,
    tasks: Vec<String>,
}

impl Work {
    fn new(plan: &LoadPlan<'_>, seed: u64, base: &str) -> anyhow::Result<Work> {
        let mut rng = Rng::new(seed);
        let (mut queries, mut tasks) = (Vec::new(), Vec::new());
        while queries.len() < 50 {
            let id = rng.pick(plan.ids).clone();
            let note = std::fs::read_to_string(doc_path(plan.store, &id))?;
            queries.extend(queries::query(&mut rng, &id, &note).map(|q| q.text));
            tasks.extend(queries::task(&mut rng, &note));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build();
        Ok(Work {
            agent: config.into(),
            base: base.to_owned(),
            rng,
            ids: plan.ids.to_vec(),
            leaves: plan.leaves.to_vec(),
            queries,
            tasks,
        })
    }

    /// An agent: initialize, then tool calls back to back.
    fn session(mut self, deadline: Instant, tally: &Mutex<Tally>) -> anyhow::Result<()> {
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "memtree-bench", "version": "1"}});
        let started = Instant::now();
        let outcome = self.rpc("initialize", init).map(drop);
        tally.lock().expect("tally").record("mcp initialize", ms(started), outcome);
        let mut n = 0u64;
        while Instant::now() < deadline {
            n += 1;
            let roll = self.rng.unit();
            let (op, name, args) = if roll < 0.35 {
                ("mcp read_document", "read_document", json!({ "id": self.rng.pick(&self.ids) }))
            } else if roll < 0.65 {
                ("mcp search", "search", json!({ "query": self.rng.pick(&self.queries) }))
            } else if roll < 0.75 {
                ("mcp recall", "recall", json!({ "task": self.rng.pick(&self.tasks) }))
            } else if roll < 0.95 {
                let fact = format!(
                    "load note {n}: the {} service answered in {} ms",
                    self.rng.below(900),
                    self.rng.below(90)
                );
                let doc = self.rng.pick(&self.leaves).clone();
                ("mcp remember", "remember", json!({ "content": fact, "document": doc, "mode": "append" }))
            } else {
                ("mcp history", "history", json!({ "id": self.rng.pick(&self.ids), "limit": 5 }))
            };
            let started = Instant::now();
            let outcome =
                self.rpc("tools/call", json!({ "name": name, "arguments": args })).and_then(|result| {
                    match result["isError"].as_bool() {
                        Some(true) => {
                            Err(result["content"][0]["text"].as_str().unwrap_or("isError").to_owned())
                        }
                        _ => Ok(()),
                    }
                });
            tally.lock().expect("tally").record(op, ms(started), outcome);
        }
        Ok(())
    }

    /// A JSON-RPC request on the MCP endpoint: its `result`.
    fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
        let mut response = self
            .agent
            .post(format!("{}/mcp", self.base))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25")
            .send(body.as_bytes())
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let text =
            response.body_mut().with_config().limit(64 << 20).read_to_string().map_err(|e| e.to_string())?;
        if status != 200 {
            return Err(format!("HTTP {status}: {}", text.chars().take(200).collect::<String>()));
        }
        let answer: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text:.200}"))?;
        match answer.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(format!("no result: {text:.200}")),
        }
    }

    /// A person: the change stream open, pages with a pause between them.
    fn browser(
        mut self,
        deadline: Instant,
        think: Duration,
        tally: &Mutex<Tally>,
        events: &Arc<AtomicUsize>,
        stop: &Arc<AtomicBool>,
    ) -> anyhow::Result<()> {
        let stream = format!("{}/events", self.base);
        let (events, stop) = (Arc::clone(events), Arc::clone(stop));
        std::thread::spawn(move || listen(&stream, &events, &stop));
        while Instant::now() < deadline {
            let roll = self.rng.unit();
            let (op, path) = if roll < 0.10 {
                ("page tree", "/".to_owned())
            } else if roll < 0.55 {
                ("page document", format!("/doc/{}", self.rng.pick(&self.ids)))
            } else if roll < 0.75 {
                let q = self.rng.pick(&self.queries).clone();
                ("page search", format!("/search?q={}", encode(&q)))
            } else if roll < 0.85 {
                ("page history", format!("/history/{}", self.rng.pick(&self.ids)))
            } else if roll < 0.90 {
                ("page graph", "/graph".to_owned())
            } else if roll < 0.95 {
                ("page status", "/status".to_owned())
            } else {
                ("page outline", "/outline".to_owned())
            };
            let started = Instant::now();
            let outcome = self.page(&path);
            tally.lock().expect("tally").record(op, ms(started), outcome);
            std::thread::sleep(think);
        }
        Ok(())
    }

    fn page(&self, path: &str) -> Result<(), String> {
        let mut response =
            self.agent.get(format!("{}{path}", self.base)).call().map_err(|e| e.to_string())?;
        let status = response.status();
        let text =
            response.body_mut().with_config().limit(64 << 20).read_to_string().map_err(|e| e.to_string())?;
        match status.as_u16() {
            200 => Ok(()),
            _ => Err(format!("{path}: HTTP {status}: {}", text.chars().take(200).collect::<String>())),
        }
    }
}

/// Reads the change stream until the run ends, counting events.
fn listen(url: &str, events: &AtomicUsize, stop: &AtomicBool) {
    let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
    let Ok(mut response) = agent.get(url).call() else { return };
    let mut reader = BufReader::new(response.body_mut().as_reader());
    let mut line = String::new();
    while !stop.load(Ordering::Relaxed) {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.starts_with("event: change") => {
                events.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {}
        }
    }
}

/// A query string's value, percent-encoded.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
