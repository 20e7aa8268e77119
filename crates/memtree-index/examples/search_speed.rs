//! Times the index's search alone, without MCP or the engine's ranking, to
//! see where a search's time goes:
//! `cargo run --release -p memtree-index --example search_speed -- INDEX QUERIES.json`
//! where INDEX is a store's `.memtree/index.sqlite` and QUERIES.json a JSON
//! list of query strings (memtree-bench's raw results hold the ones it
//! timed). Each query runs five times (`ROUNDS=1` once, as the bench runs
//! it: the postings and documents it reads are then new to the index's
//! caches); the medians' p50, p90 and maximum are printed, with the
//! slowest queries. `READ_AHEAD=1` reads the index ahead first, as a
//! server does once it has started.

use std::time::Instant;

use memtree_core::index::{SearchIndex, SearchRequest};
use memtree_index::SqliteIndex;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, index, queries] = args.as_slice() else {
        eprintln!("usage: search_speed INDEX QUERIES.json");
        std::process::exit(2);
    };
    let index = SqliteIndex::open(index).expect("open the index");
    if std::env::var_os("READ_AHEAD").is_some() {
        let started = Instant::now();
        let words = index.read_ahead().expect("read ahead");
        eprintln!("read {words} words ahead in {:.0} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    let queries: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(queries).expect("read the queries"))
            .expect("the queries are a JSON list of strings");
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut per_query = vec![Vec::new(); queries.len()];
    for _ in 0..rounds {
        for (i, q) in queries.iter().enumerate() {
            let request = SearchRequest { query: q.clone(), limit: 8, scope: None, under: None, now_ns: 0 };
            let t = Instant::now();
            let found = index.search(&request).expect("search");
            per_query[i].push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(found);
        }
    }
    let mut medians: Vec<(f64, &str)> = per_query
        .iter_mut()
        .zip(&queries)
        .map(|(t, q)| {
            t.sort_by(f64::total_cmp);
            (t[t.len() / 2], q.as_str())
        })
        .collect();
    medians.sort_by(|a, b| a.0.total_cmp(&b.0));
    let p = |f: f64| medians[((medians.len() - 1) as f64 * f) as usize].0;
    eprintln!(
        "{} queries × {rounds}: p50 {:.3} ms, p90 {:.3} ms, max {:.3} ms",
        queries.len(),
        p(0.5),
        p(0.9),
        p(1.0)
    );
    for (t, q) in medians.iter().rev().take(8) {
        eprintln!("  {t:.3} ms  {q}");
    }
}
