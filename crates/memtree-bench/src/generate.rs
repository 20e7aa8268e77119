//! Store generation: writes N realistic Markdown notes straight to disk.
//!
//! Filling a store through MCP would take minutes at 100k documents and would
//! measure memtree while it fills, so the files are written directly in
//! memtree's layout (`<id>.md`, `/` in an id is a sub-folder, `root.md`).
//! Each parent links its children as `[[id]]` bullets in link order, so the
//! result obeys the tree rules and must pass `memtree validate`.
//!
//! Everything comes from one seeded generator: a seed gives the same store,
//! byte for byte, on every run and every machine.

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};

/// splitmix64: tiny and good enough for test data. Hand-rolled rather than
/// `rand`, whose streams may change between versions and so change the stores.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (the modulo bias is irrelevant at these sizes).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Smallest and largest generated note, in bytes (a parent with many
/// children may pass the maximum by its link bullets).
const MIN_BYTES: usize = 300;
const MAX_BYTES: usize = 1536;

/// Top-level areas under root. The ones in `SLASH_AREAS` name their upper
/// levels with slash ids (`projects/silica_1x`), as stores grown by agents do, so the
/// store has sub-folders as well as a large flat top folder.
#[rustfmt::skip]
const AREAS: &[&str] = &[
    "projects", "people", "decisions", "research", "operations", "infrastructure", "customers",
    "meetings", "reading", "ideas", "incidents", "tooling", "security", "design", "hiring", "finance",
    "writing", "learning", "health", "travel",
];
const SLASH_AREAS: &[&str] = &["projects", "people", "research", "incidents", "reading"];
/// Slash ids stop this deep (root = 0), to stay well inside 128 bytes.
const SLASH_MAX_DEPTH: usize = 3;
/// No document deeper than this (root = 0).
const MAX_DEPTH: usize = 6;

/// Short words that carry no topic; queries leave them out.
pub const FUNCTION_WORDS: &[&str] = &[
    "the", "a", "of", "to", "and", "in", "for", "is", "on", "that", "with", "as", "it", "by", "this", "be",
    "are", "from", "at", "or", "we", "not", "when", "which", "after", "before", "each", "every", "only",
    "then", "because", "still", "also", "but", "so", "if", "until", "while", "than", "into", "over", "under",
    "about", "should", "must", "can", "will", "may", "was", "were", "has", "had",
];

/// Content words, most frequent first (picked with a Zipf-like skew).
#[rustfmt::skip]
const CONTENT_WORDS: &[&str] = &[
    "cache", "index", "query", "latency", "schema", "migration", "deploy", "rollback", "tenant",
    "billing", "invoice", "queue", "worker", "retry", "timeout", "budget", "token", "embedding",
    "vector", "shard", "replica", "backup", "snapshot", "journal", "lock", "mutex", "thread", "async",
    "runtime", "parser", "lexer", "grammar", "compiler", "linker", "crate", "module", "trait",
    "closure", "iterator", "allocator", "buffer", "socket", "handshake", "protocol", "session",
    "cookie", "header", "payload", "endpoint", "router", "handler", "middleware", "gateway", "proxy",
    "firewall", "certificate", "secret", "rotation", "audit", "metric", "dashboard", "alert", "pager",
    "incident", "postmortem", "runbook", "roadmap", "milestone", "deadline", "estimate", "sprint",
    "backlog", "ticket", "review", "merge", "branch", "release", "changelog", "version", "license",
    "contract", "vendor", "customer", "meeting", "decision", "tradeoff", "prototype", "benchmark",
    "profile", "flamegraph", "regression", "fixture", "mock", "coverage", "flaky", "pipeline",
    "artifact", "container", "image", "volume", "cluster", "node", "pod", "scheduler", "quota",
    "region", "zone", "throughput", "bandwidth", "storage", "bucket", "object", "blob", "table",
    "column", "row", "join", "transaction", "isolation", "deadlock", "vacuum", "compaction", "segment",
    "posting", "ranking", "recall", "precision", "summary", "outline", "draft", "note", "idea",
    "question", "answer", "risk", "assumption", "constraint", "requirement", "feature", "bug", "fix",
    "patch", "hotfix", "design", "architecture", "interface", "boundary", "layer", "adapter", "service",
    "client", "server", "user", "team", "owner", "reviewer", "maintainer", "onboarding", "handover",
    "quarter", "forecast", "hypothesis", "experiment", "dataset", "sample", "outlier", "baseline",
    "variance", "median", "percentile", "histogram", "garden", "kitchen", "library", "river",
    "mountain", "harbor", "lantern", "compass", "ledger", "atlas", "orchard", "meadow",
];

/// Syllables for the made-up words.
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "tal", "vor", "zen", "qui", "sil", "ica", "bra", "dun", "fel", "gor", "hax",
    "ith", "jol", "kin", "lum", "mar", "nex", "oph", "pra", "rud", "sto", "tri", "umb", "vel", "wyn", "xan",
    "yor", "zed",
];

const CODE_LANGS: &[&str] = &["rust", "sh", "python", "toml", "sql"];
const CHILD_HEADINGS: &[&str] = &["Contents", "Subtopics", "Notes", "Children", "Index"];

/// Writes notes from a fixed vocabulary; shared with the benchmark, which
/// needs fresh text for its updates.
pub struct Prose {
    /// Made-up words: the long tail of a real vocabulary (names, jargon,
    /// typos) that a fixed list cannot give.
    rare: Vec<String>,
}

impl Default for Prose {
    fn default() -> Prose {
        Prose::new()
    }
}

impl Prose {
    pub fn new() -> Prose {
        let mut rng = Rng::new(VOCABULARY_SEED);
        let mut seen: HashSet<String> = CONTENT_WORDS.iter().map(|w| (*w).to_owned()).collect();
        let mut rare = Vec::new();
        while rare.len() < 4000 {
            let syllables = rng.range(2, 3);
            let word: String = (0..syllables).map(|_| *rng.pick(SYLLABLES)).collect();
            if seen.insert(word.clone()) {
                rare.push(word);
            }
        }
        Prose { rare }
    }

    /// A content word: mostly a real one, a quarter of the time a rare
    /// made-up one; both skewed towards the front of their list, so a few
    /// words are frequent and most are rare, as in real text.
    pub fn word(&self, rng: &mut Rng) -> &str {
        if rng.chance(0.75) {
            let skew = rng.unit().powi(2);
            CONTENT_WORDS[(skew * CONTENT_WORDS.len() as f64) as usize]
        } else {
            let skew = rng.unit().powf(1.5);
            &self.rare[(skew * self.rare.len() as f64) as usize]
        }
    }

    fn any_word(&self, rng: &mut Rng) -> &str {
        if rng.chance(0.35) { FUNCTION_WORDS[rng.below(FUNCTION_WORDS.len())] } else { self.word(rng) }
    }

    /// Plain words only: safe as a YAML scalar and as a heading.
    fn phrase(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
        let n = rng.range(lo, hi);
        let mut out: Vec<&str> = Vec::with_capacity(n);
        out.push(self.word(rng));
        for _ in 1..n {
            out.push(self.any_word(rng));
        }
        capitalise(&out.join(" "))
    }

    /// A sentence, now and then with a code span, a number or bold text.
    fn sentence(&self, rng: &mut Rng) -> String {
        let n = rng.range(5, 14);
        let mut parts: Vec<String> = Vec::with_capacity(n + 1);
        for i in 0..n {
            let roll = rng.unit();
            let part = if i > 0 && roll < 0.05 {
                match rng.below(3) {
                    0 => format!("`{}_{}()`", self.word(rng), self.word(rng)),
                    1 => format!("`--{}`", self.word(rng)),
                    _ => format!("`{}.toml`", self.word(rng)),
                }
            } else if i > 0 && roll < 0.08 {
                rng.range(2, 2048).to_string()
            } else if i > 0 && roll < 0.10 {
                format!("**{}**", self.word(rng))
            } else {
                self.any_word(rng).to_owned()
            };
            parts.push(part);
        }
        let mut s = capitalise(&parts.join(" "));
        s.push(if rng.chance(0.1) { '?' } else { '.' });
        s
    }

    fn paragraph(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
        let n = rng.range(lo, hi);
        let sentences: Vec<String> = (0..n).map(|_| self.sentence(rng)).collect();
        format!("{}\n\n", sentences.join(" "))
    }

    /// One Markdown block: paragraph, section, bullets, code or a quote.
    fn block(&self, rng: &mut Rng) -> String {
        let roll = rng.unit();
        if roll < 0.30 {
            self.paragraph(rng, 2, 4)
        } else if roll < 0.55 {
            format!("## {}\n\n{}", self.phrase(rng, 1, 4), self.paragraph(rng, 1, 3))
        } else if roll < 0.85 {
            let mut out = String::new();
            for _ in 0..rng.range(2, 6) {
                out.push_str(&format!("- {}\n", self.sentence(rng)));
            }
            out.push('\n');
            out
        } else if roll < 0.93 {
            let lang = rng.pick(CODE_LANGS);
            let mut out = format!("```{lang}\n");
            for _ in 0..rng.range(2, 5) {
                out.push_str(&format!(
                    "{} = {}({}, {})\n",
                    self.word(rng),
                    self.word(rng),
                    self.word(rng),
                    rng.below(100)
                ));
            }
            out.push_str("```\n\n");
            out
        } else {
            let mut out = String::new();
            for i in 1..=rng.range(2, 4) {
                out.push_str(&format!("{i}. {}\n", self.sentence(rng)));
            }
            out.push_str(&format!("\n> {}\n\n", self.sentence(rng)));
            out
        }
    }

    /// A note of 0.3–1.5 KiB that links `children`, in order.
    pub fn note(&self, rng: &mut Rng, title: &str, children: &[&str]) -> String {
        let target = rng.range(MIN_BYTES, MAX_BYTES);
        let mut s = String::with_capacity(MAX_BYTES + 256);
        if rng.chance(0.3) {
            s.push_str(&format!("---\nsummary: {}\n", self.phrase(rng, 4, 10)));
            let tags: Vec<&str> = (0..rng.range(1, 4)).map(|_| self.word(rng)).collect();
            s.push_str(&format!("tags: [{}]\n", tags.join(", ")));
            if rng.chance(0.5) {
                s.push_str(if rng.chance(0.7) { "confidence: stable\n" } else { "confidence: tentative\n" });
            }
            if rng.chance(0.3) {
                s.push_str(&format!("priority: 0.{}\n", rng.range(1, 9)));
            }
            s.push_str("---\n");
        }
        s.push_str(&format!("# {title}\n\n"));
        s.push_str(&self.paragraph(rng, 1, 3));
        if !children.is_empty() {
            s.push_str(&format!("## {}\n\n", rng.pick(CHILD_HEADINGS)));
            for child in children {
                // A few links carry a label, which memtree must treat as the same edge.
                if rng.chance(0.05) {
                    s.push_str(&format!("- [[{child}|{}]]\n", self.phrase(rng, 1, 3)));
                } else {
                    s.push_str(&format!("- [[{child}]] {}\n", self.phrase(rng, 2, 6)));
                }
            }
            s.push('\n');
        }
        while s.len() < target {
            let block = self.block(rng);
            if s.len() + block.len() > MAX_BYTES && s.len() >= MIN_BYTES {
                break;
            }
            s.push_str(&block);
        }
        s
    }
}

fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The vocabulary's own seed, so `--seed` changes the notes, not the words.
const VOCABULARY_SEED: u64 = 0x5EED_0F00_0D05;

/// What was written, for the benchmark to pick its targets from.
#[derive(Debug, serde::Serialize)]
pub struct Generated {
    pub documents: usize,
    /// Every id, root included, in generation order.
    #[serde(skip)]
    pub ids: Vec<String>,
    /// Documents without children: update targets that keep their links.
    #[serde(skip)]
    pub leaves: Vec<String>,
    pub leaf_count: usize,
    pub slash_ids: usize,
    pub max_depth: usize,
    pub max_children: usize,
    pub markdown_bytes: u64,
    pub seconds: f64,
}

struct Node {
    id: String,
    depth: usize,
    /// Whether this node's children get slash ids below it.
    slash: bool,
    children: Vec<usize>,
}

/// Writes a store of `n` documents (root included) into the empty folder `dir`.
pub fn generate(dir: &Path, n: usize, seed: u64) -> anyhow::Result<Generated> {
    if n < 2 {
        bail!("a store needs at least 2 documents");
    }
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let prose = Prose::new();

    // Plan the whole tree first: a parent's text needs its children's ids.
    let mut nodes = vec![Node { id: "root".to_owned(), depth: 0, slash: false, children: vec![] }];
    let mut queue = VecDeque::new();
    for area in AREAS.iter().take(n - 1) {
        let slash = SLASH_AREAS.contains(area);
        nodes.push(Node { id: (*area).to_owned(), depth: 1, slash, children: vec![] });
        let child = nodes.len() - 1;
        nodes[0].children.push(child);
        queue.push_back(child);
    }
    // Breadth first, with a chance of stopping that grows with depth and a
    // skewed fan-out (mostly 1–4, sometimes 20+), so branches end at
    // different depths and some parents are much wider than others.
    let spread = fan_out_spread(n);
    let mut serial = 0usize;
    while nodes.len() < n {
        let Some(parent) = queue.pop_front() else {
            bail!("tree planning ran out of parents at {}", nodes.len())
        };
        let depth = nodes[parent].depth;
        if rng.chance(stop_chance(depth)) {
            continue;
        }
        let fan_out = 1 + (spread * rng.unit().powi(3)) as usize;
        for _ in 0..fan_out {
            if nodes.len() == n {
                break;
            }
            serial += 1;
            let sep = if rng.chance(0.2) { "-" } else { "_" };
            let mut slug = prose.word(&mut rng).to_owned();
            if rng.chance(0.5) {
                slug = format!("{slug}{sep}{}", prose.word(&mut rng));
            }
            // The serial makes ids unique, also case-insensitively.
            let slug = format!("{slug}{sep}{}", radix36(serial));
            let (id, slash) = if nodes[parent].slash && depth < SLASH_MAX_DEPTH {
                (format!("{}/{slug}", nodes[parent].id), true)
            } else {
                (slug, false)
            };
            nodes.push(Node { id, depth: depth + 1, slash, children: vec![] });
            let child = nodes.len() - 1;
            nodes[parent].children.push(child);
            queue.push_back(child);
        }
    }

    let mut made_dirs: HashSet<PathBuf> = HashSet::new();
    let mut bytes = 0u64;
    for node in &nodes {
        let children: Vec<&str> = node.children.iter().map(|&c| nodes[c].id.as_str()).collect();
        let text = if node.id == "root" {
            let mut text =
                "# Memory\n\nWhat I know, one area per link. Read an area before writing to it.\n\n"
                    .to_owned();
            for child in &children {
                text.push_str(&format!("- [[{child}]]\n"));
            }
            text
        } else {
            // The id's last segment without its serial: `silica_1x` is "Silica".
            let name = node.id.rsplit('/').next().unwrap_or(&node.id);
            let title = capitalise(
                &name.rsplit_once(['_', '-']).map_or(name, |(words, _)| words).replace(['_', '-'], " "),
            );
            prose.note(&mut rng, &title, &children)
        };
        let path = doc_path(dir, &node.id);
        let parent = path.parent().expect("document paths have a parent").to_path_buf();
        if !made_dirs.contains(&parent) {
            fs::create_dir_all(&parent).with_context(|| format!("mkdir {}", parent.display()))?;
            made_dirs.insert(parent);
        }
        fs::write(&path, &text).with_context(|| format!("write {}", path.display()))?;
        bytes += text.len() as u64;
    }

    Ok(Generated {
        documents: nodes.len(),
        leaf_count: nodes.iter().filter(|n| n.children.is_empty()).count(),
        leaves: nodes.iter().filter(|n| n.children.is_empty()).map(|n| n.id.clone()).collect(),
        slash_ids: nodes.iter().filter(|n| n.id.contains('/')).count(),
        max_depth: nodes.iter().map(|n| n.depth).max().unwrap_or(0),
        max_children: nodes.iter().map(|n| n.children.len()).max().unwrap_or(0),
        ids: nodes.into_iter().map(|n| n.id).collect(),
        markdown_bytes: bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// How likely a document at `depth` is to be a leaf: rising with depth, so
/// branches end at different depths; certain at `MAX_DEPTH`.
fn stop_chance(depth: usize) -> f64 {
    match depth {
        0 | 1 => 0.0,
        2 => 0.15,
        3 => 0.30,
        4 => 0.45,
        d if d < MAX_DEPTH => 0.55,
        _ => 1.0,
    }
}

/// The widest fan-out drawn (mean about a quarter of it plus one): 24 unless
/// the tree could not hold `n` documents within `MAX_DEPTH` with a good
/// margin, as at 100k, where parents get wider rather than the tree deeper.
fn fan_out_spread(n: usize) -> f64 {
    let capacity = |spread: f64| {
        let (mut level, mut total) = (AREAS.len() as f64, 1.0 + AREAS.len() as f64);
        for depth in 1..MAX_DEPTH {
            level *= (1.0 - stop_chance(depth)) * (1.0 + spread / 4.0);
            total += level;
        }
        total
    };
    let mut spread = 24.0;
    while capacity(spread) < 2.0 * n as f64 {
        spread += 2.0;
    }
    spread
}

/// Where memtree keeps document `id` inside store `dir`.
pub fn doc_path(dir: &Path, id: &str) -> PathBuf {
    let mut path = dir.to_path_buf();
    path.extend(id.split('/'));
    path.set_extension("md");
    path
}

fn radix36(mut n: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[n % 36]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ascii digits")
}
