//! How fast the embedding model loads and embeds on this machine: load
//! time, sentences per second (about 25 tokens each) at batch 1, 16 and
//! 32, passages per second (about 120 words each), and memory. Run in
//! release, with the model folder `scripts/embedding-model.sh` prints:
//!
//! ```text
//! cargo run --release -p memtree-index --features embeddings --example embed_speed -- FOLDER
//! ```
//!
//! It writes to stderr, like memtree's other measuring tools.

use std::path::PathBuf;
use std::time::Instant;

use memtree_index::Embedder;

const SUBJECTS: [&str; 8] =
    ["gardener", "committee", "engineer", "museum", "pilot", "library", "farmer", "startup"];
const PLACES: [&str; 6] =
    ["harbour", "old mill", "city council", "mountain pass", "train station", "warehouse"];

/// About 24 tokens each, with the two markers; no two alike.
fn sentence(i: usize) -> String {
    format!(
        "On day {i}, the {} near the {} reported that the new schedule works better than the previous one.",
        SUBJECTS[i % SUBJECTS.len()],
        PLACES[i / SUBJECTS.len() % PLACES.len()],
    )
}

/// About 120 words (about 135 tokens): five sentences of about 24 words.
fn passage(i: usize) -> String {
    (0..5)
        .map(|j| {
            format!(
                "In week {} the {} at the {} moved its meetings to the morning, wrote notes, \
                 and kept a list of open questions.",
                i * 5 + j,
                SUBJECTS[(i + j) % SUBJECTS.len()],
                PLACES[(i * 5 + j) % PLACES.len()],
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Texts per second embedding `texts` in calls of `batch` texts.
fn rate(embedder: &Embedder, texts: &[String], batch: usize) -> f64 {
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let start = Instant::now();
    for chunk in texts.chunks(batch) {
        embedder.embed(chunk).expect("embedding failed");
    }
    texts.len() as f64 / start.elapsed().as_secs_f64()
}

/// A line of /proc/self/status (Linux), such as `VmHWM` (peak resident).
fn status(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(key)).map(|l| l.split_whitespace().skip(1).collect()))
        .unwrap_or_else(|| "?".into())
}

fn main() {
    let Some(folder) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: embed_speed MODEL_FOLDER");
        std::process::exit(2);
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("load average at start: {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    let start = Instant::now();
    let embedder = Embedder::load(&folder).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    });
    eprintln!(
        "loaded {} ({} dimensions, {} tokens at most) in {:.3} s; resident {}, peak {}",
        embedder.id(),
        embedder.dimensions(),
        embedder.max_tokens(),
        start.elapsed().as_secs_f64(),
        status("VmRSS"),
        status("VmHWM"),
    );
    // A first call warms the allocator and the thread pool.
    embedder.embed(&["warm up"]).expect("embedding failed");

    let sentences: Vec<String> = (0..256).map(sentence).collect();
    eprintln!("sentences, batch 1:  {:6.1} /s", rate(&embedder, &sentences[..64], 1));
    eprintln!("sentences, batch 16: {:6.1} /s", rate(&embedder, &sentences, 16));
    eprintln!("sentences, batch 32: {:6.1} /s", rate(&embedder, &sentences, 32));
    let passages: Vec<String> = (0..48).map(passage).collect();
    eprintln!("passages (~120 words), batch 1:  {:6.1} /s", rate(&embedder, &passages[..16], 1));
    eprintln!("passages (~120 words), batch 16: {:6.1} /s", rate(&embedder, &passages, 16));
    eprintln!("peak resident {}", status("VmHWM"));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("load average at end: {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
}
