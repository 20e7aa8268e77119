//! The compact counter against tiktoken-rs itself: the same counts on the
//! repository's Markdown, and on generated text made to stress the
//! pre-tokeniser and the merges (mixed scripts, long runs, odd spaces).

use memtree_core::TokenCounter as _;
use memtree_index::BpeCounter;

/// Every Markdown file under the repository's `tests/` and `docs/`.
fn markdown() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut texts = Vec::new();
    let mut folders = vec![root.join("tests"), root.join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                texts.push(text);
            }
        }
    }
    texts
}

/// Seeded text from pieces chosen to meet every branch of the patterns.
fn generated(seed: u64, count: usize) -> Vec<String> {
    const PIECES: &[&str] = &[
        "the",
        " The",
        "don't",
        "WE'LL",
        "I'm",
        " 12345",
        "3.14159",
        "\n",
        "\r\n",
        "   ",
        "\t",
        " \n ",
        "メモ帳",
        "記憶",
        "한국어",
        "Ελληνικά",
        "русский",
        "العربية",
        "🙂",
        "👩‍💻",
        "é",
        "e\u{301}",
        "ﬁ",
        "!!!",
        "...",
        "—",
        "«»",
        "```rust",
        "fn main() {}",
        "[[child]]",
        "https://example.com/a?b=c",
        "    indented",
        "\u{a0}",
        "\u{2003}",
        "x=1;y=2",
        "////",
        "##",
        "- [ ]",
        "ÄÖÜß",
        "0x7fff",
        "_snake_",
    ];
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let len = (next() % 60) as usize;
            let mut text = String::new();
            for _ in 0..len {
                let piece = PIECES[(next() % PIECES.len() as u64) as usize];
                // Long runs make pieces of hundreds of bytes, which tiktoken
                // merges with its other algorithm.
                let times = if next() % 20 == 0 { 1 + (next() % 300) as usize } else { 1 };
                text.push_str(&piece.repeat(times));
            }
            text
        })
        .collect()
}

#[test]
fn counts_equal_tiktokens_on_markdown_and_generated_text() {
    let mut texts = markdown();
    assert!(texts.len() > 20, "the repository's Markdown was found: {}", texts.len());
    texts.extend(generated(0x9E37_79B9_7F4A_7C15, 800));
    for (name, reference) in [
        ("cl100k_base", tiktoken_rs::cl100k_base_singleton()),
        ("o200k_base", tiktoken_rs::o200k_base_singleton()),
    ] {
        let counter = BpeCounter::new(name).unwrap();
        for text in &texts {
            assert_eq!(counter.count(text), reference.encode_ordinary(text).len(), "{name} on {text:?}");
        }
    }
}
