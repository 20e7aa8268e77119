//! `--s3 URL`: the generated store copied into a bucket, and two `memtree
//! serve` on it with caches of their own (two machines) measured beside
//! one on the local folder: reads from the mirror (hit) and right after
//! the other machine wrote (miss: the record replayed), updates, searches,
//! and how long another machine's write takes to be found by search.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use rmcp::ServiceExt as _;
use rmcp::model::{ClientConfig, ProtocolVersion};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::generate::{Rng, doc_path};
use crate::measure::{Client, call, ms, read_args, search_args, tool, update_args};
use crate::{median, percentile, queries};

pub struct BucketPlan<'a> {
    pub bin: &'a Path,
    /// The generated store (a folder).
    pub store: &'a Path,
    /// `s3://BUCKET/PREFIX`, new.
    pub url: &'a str,
    pub ids: &'a [String],
    pub leaves: &'a [String],
    pub ops: usize,
    pub seed: u64,
}

/// How many times another machine's write is timed until search finds it.
const VISIBILITY_SAMPLES: usize = 10;

async fn serve(bin: &Path, args: &[&str], env: &[(&str, &Path)]) -> anyhow::Result<(Client, f64)> {
    let mut command = tokio::process::Command::new(bin);
    command.arg("serve").args(args).stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let started = Instant::now();
    let transport = TokioChildProcess::new(command).context("cannot spawn memtree serve")?;
    let client = ClientConfig::default()
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
        .serve(transport)
        .await
        .context("MCP initialize failed")?;
    Ok((client, ms(started)))
}

/// A search that finds something, once the start-up reconciliation is done.
async fn when_indexed(client: &Client, query: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while queries::hit_ids(&call(client, search_args(query)).await?.1).is_empty() {
        ensure!(Instant::now() < deadline, "search for {query:?} found nothing for 2 minutes");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Median-of-samples figures of one server: reads, updates, searches.
async fn figures(
    client: &Client,
    plan: &BucketPlan<'_>,
    rng: &mut Rng,
    queries: &[String],
) -> anyhow::Result<[f64; 3]> {
    let mut reads = Vec::new();
    for _ in 0..plan.ops {
        reads.push(call(client, read_args(&plan.ids[rng.below(plan.ids.len())])).await?.0);
    }
    let mut updates = Vec::new();
    for i in 0..plan.ops / 3 {
        let id = &plan.leaves[rng.below(plan.leaves.len())];
        updates.push(
            call(client, update_args(id, &format!("# {id}\n\nrevision {i} of the benchmark\n"))).await?.0,
        );
    }
    let mut searches = Vec::new();
    for query in queries {
        searches.push(call(client, search_args(query)).await?.0);
    }
    Ok([median(&reads), median(&updates), median(&searches)])
}

pub async fn run(plan: &BucketPlan<'_>) -> anyhow::Result<(String, Value)> {
    let scratch = tempfile::tempdir()?;
    let cache = |name: &str| scratch.path().join(name);
    let copied = std::process::Command::new(plan.bin)
        .args(["copy", "--no-history"])
        .arg(plan.store)
        .arg(plan.url)
        .env("MEMTREE_CACHE_DIR", cache("copy"))
        .output()?;
    if !copied.status.success() {
        bail!("memtree copy into {} failed: {}", plan.url, String::from_utf8_lossy(&copied.stderr));
    }
    let mut rng = Rng::new(plan.seed);
    let mut queries = Vec::new();
    while queries.len() < plan.ops {
        let id = &plan.ids[rng.below(plan.ids.len())];
        let note = std::fs::read_to_string(doc_path(plan.store, id))?;
        if let Some(query) = queries::query(&mut rng, id, &note) {
            queries.push(query.text);
        }
    }
    let (local, local_start) = serve(plan.bin, &["--data-dir", &plan.store.to_string_lossy()], &[]).await?;
    let store = [("MEMTREE_STORE", Path::new(plan.url))];
    let (a, a_start) = serve(plan.bin, &[], &[store[0], ("MEMTREE_CACHE_DIR", &cache("a"))]).await?;
    let (b, b_start) = serve(plan.bin, &[], &[store[0], ("MEMTREE_CACHE_DIR", &cache("b"))]).await?;
    for client in [&local, &a, &b] {
        when_indexed(client, &queries[0]).await?;
    }
    let on_disk = figures(&local, plan, &mut rng, &queries).await?;
    let on_s3 = figures(&a, plan, &mut rng, &queries).await?;

    // A read on one machine of a document the other changed: past the
    // 100 ms for which a read outside a write trusts the last sync, so
    // that it asks the head and replays the record.
    let mut misses = Vec::new();
    for i in 0..plan.ops / 3 {
        let id = &plan.leaves[rng.below(plan.leaves.len())];
        call(&a, update_args(id, &format!("# {id}\n\nwritten elsewhere, {i}\n"))).await?;
        tokio::time::sleep(Duration::from_millis(150)).await;
        let (t, text) = call(&b, read_args(id)).await?;
        ensure!(text.contains(&format!("written elsewhere, {i}\n")), "{id} read elsewhere as {text:?}");
        misses.push(t);
    }

    // Another machine's fact found by search, timed from its answer.
    let mut visible = Vec::new();
    for i in 0..VISIBILITY_SAMPLES {
        let token = format!("zqvis{}x{i}", rng.below(1_000_000));
        let fact =
            json!({ "content": format!("The visibility probe is {token}."), "document": "visibility" });
        call(&a, tool("remember", fact)).await?;
        let written = Instant::now();
        while queries::hit_ids(&call(&b, search_args(&token)).await?.1).is_empty() {
            ensure!(written.elapsed() < Duration::from_secs(30), "{token} not found elsewhere after 30 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        visible.push(ms(written));
    }
    for client in [local, a, b] {
        client.cancel().await?;
    }

    let row = |name: &str, disk: String, s3: String| format!("| {name} | {disk} | {s3} |\n");
    let f = |v: f64| format!("{v:.2} ms");
    let mut table = format!(
        "## memtree on S3: {} documents, {} ops per measure\n\n| measure (p50) | local folder | S3 bucket |\n|---|---|---|\n",
        plan.ids.len(),
        plan.ops
    );
    table.push_str(&row(
        "start until the first answer (S3: mirror filled from the bucket)",
        f(local_start),
        f(a_start.max(b_start)),
    ));
    table.push_str(&row("read", f(on_disk[0]), format!("{} (mirror hit)", f(on_s3[0]))));
    table.push_str(&row(
        "read of a document another machine changed",
        "—".into(),
        format!("{} (record replayed)", f(median(&misses))),
    ));
    table.push_str(&row("update (same links)", f(on_disk[1]), f(on_s3[1])));
    table.push_str(&row("search", f(on_disk[2]), f(on_s3[2])));
    table.push_str(&row(
        "another machine's write found by search",
        "—".into(),
        format!("{} (max {})", f(median(&visible)), f(percentile(&visible, 100.0))),
    ));
    let raw = json!({
        "documents": plan.ids.len(),
        "local": { "start_ms": local_start, "read_ms": on_disk[0], "update_ms": on_disk[1], "search_ms": on_disk[2] },
        "s3": {
            "start_ms": [a_start, b_start], "read_ms": on_s3[0], "update_ms": on_s3[1], "search_ms": on_s3[2],
            "read_after_remote_write_ms": misses, "visible_ms": visible,
        },
    });
    Ok((table, raw))
}
