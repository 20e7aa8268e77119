//! `BpeCounter`: token counts from OpenAI's BPE tables (tiktoken-rs), which
//! ship inside the crate: no download at run time.

use memtree_core::TokenCounter;
use tiktoken_rs::CoreBPE;

/// A tokenizer name without a BPE table here.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("unknown tokenizer {name:?} (cl100k_base or o200k_base)")]
    Unknown { name: String },
}

pub struct BpeCounter {
    name: &'static str,
    bpe: fn() -> &'static CoreBPE,
}

impl BpeCounter {
    /// `cl100k_base` (GPT-4, a close stand-in for Claude's counts) or
    /// `o200k_base`. The table loads on first use (about 0.2 s).
    pub fn new(name: &str) -> Result<BpeCounter, TokenizerError> {
        match name {
            "cl100k_base" | "cl100k" => {
                Ok(BpeCounter { name: "cl100k_base", bpe: tiktoken_rs::cl100k_base_singleton })
            }
            "o200k_base" | "o200k" => {
                Ok(BpeCounter { name: "o200k_base", bpe: tiktoken_rs::o200k_base_singleton })
            }
            other => Err(TokenizerError::Unknown { name: other.to_owned() }),
        }
    }
}

impl TokenCounter for BpeCounter {
    fn count(&self, text: &str) -> usize {
        (self.bpe)().encode_ordinary(text).len()
    }

    fn name(&self) -> &str {
        self.name
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
}
