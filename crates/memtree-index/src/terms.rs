//! The terms the full-text index holds and a query looks up: each word
//! lower-cased, without its diacritics, and stemmed when it is made of
//! plain letters (Snowball's English stemmer, Porter's second version:
//! `running` → `run`). CJK runs are left to their bigrams (`text.rs`).
//!
//! A column's terms are stored space-separated (`Stems::column`) and the
//! inverted index splits them at spaces alone, so the terms a search reads
//! back with their positions are exactly the ones written, and a query's
//! words become terms by the same function.

use std::collections::HashMap;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::text::{is_cjk, words};

static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Longer words are not stemmed, as SQLite's Porter stemmer did not stem them.
const STEMMED_MAX: usize = 64;

/// The index term of one word (a run of letters and digits).
pub fn term(word: &str) -> String {
    let lower = word.to_lowercase();
    let plain: String = if lower.is_ascii() || lower.chars().any(is_cjk) {
        lower
    } else {
        lower.nfd().filter(|c| !is_combining_mark(*c)).collect()
    };
    // Numbers, codes (`v2`) and words of other alphabets are kept whole:
    // an English stemmer would only mangle them. So is a word longer than
    // any English one, on which the stemmer's time grows with the square
    // of its length (a megabyte of `y` took over 30 seconds).
    if (3..=STEMMED_MAX).contains(&plain.len()) && plain.bytes().all(|b| b.is_ascii_lowercase()) {
        ENGLISH.stem(&plain).into_owned()
    } else {
        plain
    }
}

/// The terms of the words seen so far: a store says the same words over
/// and over, and stemming them was most of a write's work in the index.
#[derive(Default)]
pub struct Stems(HashMap<String, String>);

/// The most words [`Stems`] keeps (a few MiB); past it, it starts over.
const STEMS_HELD: usize = 100_000;

impl Stems {
    /// A column's text as the index stores it: its terms, space-separated.
    pub fn column(&mut self, text: &str) -> String {
        if self.0.len() > STEMS_HELD {
            self.0.clear();
        }
        let mut out = String::with_capacity(text.len());
        for piece in words(text).flat_map(|w| w.split(is_cjk)).filter(|piece| !piece.is_empty()) {
            if !out.is_empty() {
                out.push(' ');
            }
            match self.0.get(piece) {
                Some(t) => out.push_str(t),
                None => {
                    let t = term(piece);
                    out.push_str(&t);
                    self.0.insert(piece.to_owned(), t);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_s_term_is_its_lower_cased_stem_without_diacritics() {
        assert_eq!(term("Running"), "run");
        assert_eq!(term("deployments"), "deploy");
        assert_eq!(term("Café"), "cafe");
        assert_eq!(term("naïve"), "naiv");
        // Numbers, codes and other alphabets are not stemmed.
        assert_eq!(term("2024"), "2024");
        assert_eq!(term("v2s"), "v2s");
        assert_eq!(term("Ключи"), "ключи");
        assert_eq!(term("is"), "is");
        let long = "y".repeat(1 << 20);
        assert_eq!(term(&long), long, "a megabyte-long word is kept whole, at once");
    }

    #[test]
    fn a_column_holds_the_terms_of_its_words_but_not_cjk() {
        let mut stems = Stems::default();
        assert_eq!(stems.column("Deploying the API-gateway, twice!"), "deploy the api gateway twice");
        assert_eq!(stems.column("port 5432 東京タワー tokyo東京"), "port 5432 tokyo");
        assert_eq!(stems.column("…"), "");
        assert_eq!(
            stems.column("deploying Deploying"),
            "deploy deploy",
            "the words seen give the same terms"
        );
    }
}
