//! `BpeCounter`: exact token counts of OpenAI's BPE encodings, from tables
//! that ship inside the binary (`build.rs` writes them from tiktoken-rs's
//! copy of the published files): no download at run time.
//!
//! Only counts are needed, never the tokens, so a table is the ranks' bytes
//! where the binary holds them and one `u32` per rank in a hash table over
//! them: about 1 MiB for `cl100k_base` where tiktoken-rs's two hash maps of
//! boxed byte strings took 20 MiB. Text is split as tiktoken splits it (the
//! encoding's own pattern), and a piece that is not a token is merged by
//! rank as tiktoken merges it; a test compares the counts with tiktoken-rs.

use std::collections::BinaryHeap;
use std::hash::BuildHasher as _;
use std::sync::OnceLock;

use hashbrown::{DefaultHashBuilder, HashTable};
use memtree_core::TokenCounter;

/// A tokenizer name without a BPE table here.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("unknown tokenizer {name:?} (cl100k_base or o200k_base)")]
    Unknown { name: String },
}

/// The pre-tokenisation patterns, as tiktoken has them.
const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);

static CL100K: OnceLock<Table> = OnceLock::new();
static O200K: OnceLock<Table> = OnceLock::new();

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Cl100k,
    O200k,
}

pub struct BpeCounter {
    encoding: Encoding,
}

impl BpeCounter {
    /// `cl100k_base` (GPT-4, a close stand-in for Claude's counts) or
    /// `o200k_base`. The table loads on first use (a few milliseconds).
    pub fn new(name: &str) -> Result<BpeCounter, TokenizerError> {
        let encoding = match name {
            "cl100k_base" | "cl100k" => Encoding::Cl100k,
            "o200k_base" | "o200k" => Encoding::O200k,
            other => return Err(TokenizerError::Unknown { name: other.to_owned() }),
        };
        Ok(BpeCounter { encoding })
    }

    fn table(&self) -> &'static Table {
        match self.encoding {
            Encoding::Cl100k => CL100K.get_or_init(|| {
                Table::new(include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.bpe")), CL100K_PATTERN)
            }),
            Encoding::O200k => O200K.get_or_init(|| {
                Table::new(include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.bpe")), O200K_PATTERN)
            }),
        }
    }
}

impl TokenCounter for BpeCounter {
    fn count(&self, text: &str) -> usize {
        self.table().count(text)
    }

    fn name(&self) -> &str {
        match self.encoding {
            Encoding::Cl100k => "cl100k_base",
            Encoding::O200k => "o200k_base",
        }
    }
}

/// One encoding's ranks and pattern.
struct Table {
    /// Each rank's bytes after their two-byte length, in rank order.
    blob: &'static [u8],
    /// Where each rank's bytes start in `blob`.
    starts: Vec<u32>,
    /// Ranks, found by their bytes.
    ranks: HashTable<u32>,
    hasher: DefaultHashBuilder,
    pattern: fancy_regex::Regex,
}

impl Table {
    fn new(blob: &'static [u8], pattern: &str) -> Table {
        let mut starts = Vec::new();
        let mut at = 0;
        while at + 2 <= blob.len() {
            let len = usize::from(u16::from_le_bytes([blob[at], blob[at + 1]]));
            starts.push((at + 2) as u32);
            at += 2 + len;
        }
        let hasher = DefaultHashBuilder::default();
        let mut ranks = HashTable::with_capacity(starts.len());
        let mut table = Table {
            blob,
            starts,
            ranks: HashTable::new(),
            hasher,
            pattern: fancy_regex::Regex::new(pattern).expect("tiktoken's patterns compile"),
        };
        for rank in 0..table.starts.len() as u32 {
            let bytes = table.token(rank);
            if !bytes.is_empty() {
                let hash = table.hasher.hash_one(bytes);
                ranks.insert_unique(hash, rank, |&r| table.hasher.hash_one(table.token(r)));
            }
        }
        table.ranks = ranks;
        table
    }

    fn token(&self, rank: u32) -> &'static [u8] {
        let start = self.starts[rank as usize] as usize;
        let len = usize::from(u16::from_le_bytes([self.blob[start - 2], self.blob[start - 1]]));
        &self.blob[start..start + len]
    }

    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        self.ranks.find(self.hasher.hash_one(bytes), |&r| self.token(r) == bytes).copied()
    }

    fn count(&self, text: &str) -> usize {
        let mut count = 0;
        let mut done = 0;
        for piece in self.pattern.find_iter(text) {
            let Ok(piece) = piece else {
                // The backtracking limit, on some pathological run: count
                // the rest a token a byte, which no BPE count exceeds, so a
                // budget is never overrun.
                return count + text.len() - done;
            };
            done = piece.end();
            let bytes = piece.as_str().as_bytes();
            count += match self.rank(bytes) {
                Some(_) => 1,
                None => self.merged(bytes),
            };
        }
        count
    }

    /// How many tokens byte-pair merging leaves of `piece`: the pair of
    /// lowest rank merges first, the leftmost of equal ones (tiktoken's
    /// `_byte_pair_merge_large`, which gives its short-piece algorithm's
    /// result in O(n log n)).
    fn merged(&self, piece: &[u8]) -> usize {
        if piece.len() < 2 {
            return piece.len();
        }
        struct Part {
            prev: usize,
            end: usize,
            next_end: usize,
            /// The rank of the merge with the part after, if there is one.
            next_rank: u32,
        }
        #[derive(PartialEq, Eq)]
        struct Merge {
            start: usize,
            rank: u32,
        }
        impl Ord for Merge {
            // A max-heap: lowest rank, then leftmost, first.
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                other.rank.cmp(&self.rank).then_with(|| other.start.cmp(&self.start))
            }
        }
        impl PartialOrd for Merge {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        const NONE: u32 = u32::MAX;
        let mut parts = Vec::with_capacity(piece.len());
        parts.push(Part { prev: usize::MAX, end: 1, next_end: 2, next_rank: NONE });
        let mut heap = BinaryHeap::with_capacity(piece.len());
        for i in 0..piece.len() - 1 {
            if let Some(rank) = self.rank(&piece[i..i + 2]) {
                heap.push(Merge { start: i, rank });
                parts[i].next_rank = rank;
            }
            parts.push(Part { prev: i, end: i + 2, next_end: i + 3, next_rank: NONE });
        }
        let propose = |parts: &mut Vec<Part>, heap: &mut BinaryHeap<Merge>, start: usize, next_end: usize| {
            parts[start].next_end = next_end;
            parts[start].next_rank = NONE;
            if next_end <= piece.len()
                && let Some(rank) = self.rank(&piece[start..next_end])
            {
                heap.push(Merge { start, rank });
                parts[start].next_rank = rank;
            }
        };
        while let Some(left) = heap.pop() {
            if left.rank != parts[left.start].next_rank {
                continue; // Made stale by a merge next to it.
            }
            let right = parts[left.start].end;
            let right_end = parts[left.start].next_end;
            let right_next_end = parts[right].next_end;
            parts[left.start].end = right_end;
            propose(&mut parts, &mut heap, left.start, right_next_end);
            if right_end < parts.len() {
                parts[right_end].prev = left.start;
            }
            if left.start > 0 {
                let prev = parts[left.start].prev;
                propose(&mut parts, &mut heap, prev, right_end);
            }
            parts[right].next_rank = NONE;
        }
        let (mut count, mut at) = (0, 0);
        while at < piece.len() {
            count += 1;
            at = parts[at].end;
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_bpe_tokens() {
        let counter = BpeCounter::new("cl100k_base").unwrap();
        assert_eq!(counter.count("hello world"), 2);
        assert_eq!(counter.count(""), 0);
        assert!(counter.count("メモ帳") >= 2);
        let unknown = BpeCounter::new("gpt2").err().unwrap();
        assert_eq!(unknown.to_string(), r#"unknown tokenizer "gpt2" (cl100k_base or o200k_base)"#);
    }

    #[test]
    fn the_tables_hold_every_rank() {
        for (name, ranks) in [("cl100k_base", 100_256), ("o200k_base", 199_998)] {
            let table = BpeCounter::new(name).unwrap().table();
            let held = (0..table.starts.len() as u32).filter(|&r| !table.token(r).is_empty()).count();
            assert_eq!(held, ranks, "{name}");
            assert!((0..=255u8).all(|b| table.rank(&[b]).is_some()), "{name}: every byte is a token");
        }
    }
}
