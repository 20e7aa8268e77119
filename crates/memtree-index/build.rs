//! Writes the BPE tables of `cl100k_base` and `o200k_base` into `OUT_DIR`
//! in a compact form (each rank's bytes after a two-byte length, in rank
//! order), taken from tiktoken-rs, which carries OpenAI's published files.
//! tiktoken-rs is only a build (and test) dependency: its tables in memory,
//! two hash maps of 100,000 to 200,000 boxed byte strings, cost a server
//! 20 MiB, where `tokens.rs` needs 1 to 2 MiB for the same exact counts.

use std::io::Write as _;

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    write_table(&out.join("cl100k_base.bpe"), &tiktoken_rs::cl100k_base().expect("cl100k_base loads"));
    write_table(&out.join("o200k_base.bpe"), &tiktoken_rs::o200k_base().expect("o200k_base loads"));
    println!("cargo::rerun-if-changed=build.rs");
}

/// Ranks are dense but for a few gaps (special tokens sit past them), so
/// every rank up to the first run of misses gets an entry, empty for a gap.
fn write_table(path: &std::path::Path, bpe: &tiktoken_rs::CoreBPE) {
    let mut table = Vec::new();
    let mut misses = 0;
    for rank in 0u32.. {
        match bpe.decode_bytes(&[rank]) {
            Ok(bytes) => {
                // Special tokens are text the counter never looks up.
                let special = bpe.special_tokens().iter().any(|s| s.as_bytes() == bytes.as_slice());
                let bytes: &[u8] = if special { &[] } else { &bytes };
                table.extend_from_slice(&[0u8, 0].repeat(misses));
                misses = 0;
                table.extend_from_slice(&u16::try_from(bytes.len()).expect("tokens are short").to_le_bytes());
                table.extend_from_slice(bytes);
            }
            Err(_) if misses < 1024 => misses += 1,
            Err(_) => break,
        }
    }
    std::fs::File::create(path)
        .and_then(|mut file| file.write_all(&table))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
