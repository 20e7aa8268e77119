//! Conflicting memory (the conflict flags `validate` raises): two passages in
//! different documents that say nearly the same thing, each with a word the
//! other lacks — "staging listens on port 5433" beside "… port 6543".
//!
//! Comparing every pair would be quadratic in the store, so candidates
//! share one of their rarest words: two statements of the same fact share
//! its specific words, whatever else they say. To keep lists of similar
//! records ("fact 3 value 17", "fact 4 value 90") out, the two must share
//! several content words, and a word naming the document itself (its id)
//! is no difference.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::doc_id::DocId;

/// Share of the shorter passage's words the longer one must hold.
const OVERLAP: f64 = 0.7;
/// Passages with fewer distinct words say too little to compare.
const MIN_WORDS: usize = 4;
/// Content words (three letters or more, not only digits) both must hold.
const MIN_SHARED_CONTENT: usize = 3;
/// Candidate keys per passage: its rarest shared words.
const KEYS: usize = 3;
/// A word in more passages than this is no evidence of one fact.
const MAX_BUCKET: usize = 64;

/// Two passages that nearly agree, and the words where they differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub a: (DocId, String),
    pub b: (DocId, String),
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
}

/// The passages to compare, gathered one at a time so that their texts
/// need not be held: each keeps its distinct words as numbers into one
/// vocabulary, a few bytes a word. (A set of strings per passage took 916
/// MB to validate a store of 100,000 documents.)
#[derive(Default)]
pub struct Statements {
    numbers: HashMap<Box<str>, u32>,
    passages: Vec<Passage>,
}

struct Passage {
    id: DocId,
    heading: String,
    /// Its distinct words' numbers, ascending.
    words: Vec<u32>,
}

/// The words of `text`, lower-cased.
fn words(text: &str) -> impl Iterator<Item = Cow<'_, str>> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| {
        if w.chars().any(char::is_uppercase) { Cow::Owned(w.to_lowercase()) } else { Cow::Borrowed(w) }
    })
}

fn is_content(word: &str) -> bool {
    word.chars().count() >= 3 && word.chars().any(char::is_alphabetic)
}

impl Statements {
    /// Adds the passage of document `id` under `heading`.
    pub fn add(&mut self, id: &DocId, heading: &str, text: &str) {
        let mut numbers: Vec<u32> = words(text)
            .map(|word| match self.numbers.get(&*word) {
                Some(&n) => n,
                None => {
                    let n = self.numbers.len() as u32;
                    self.numbers.insert(word.into(), n);
                    n
                }
            })
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        self.passages.push(Passage { id: id.clone(), heading: heading.to_owned(), words: numbers });
    }

    /// Every pair of passages from different documents that conflict, each
    /// once, in the order of their documents and headings.
    pub fn conflicts(self) -> Vec<Conflict> {
        // Numbered again in alphabetical order, so that ordering numbers
        // orders words: ties among keys, and the differing words' order.
        let mut vocabulary: Vec<(Box<str>, u32)> = self.numbers.into_iter().collect();
        vocabulary.sort_unstable();
        let mut renumbered = vec![0u32; vocabulary.len()];
        for (new, (_, old)) in vocabulary.iter().enumerate() {
            renumbered[*old as usize] = new as u32;
        }
        let vocabulary: Vec<Box<str>> = vocabulary.into_iter().map(|(word, _)| word).collect();
        let mut passages = self.passages;
        for passage in &mut passages {
            for n in &mut passage.words {
                *n = renumbered[*n as usize];
            }
            passage.words.sort_unstable();
        }
        find(&passages, &vocabulary)
    }
}

/// The numbers of the words of a document's id, which are no difference.
fn name_words(id: &DocId, vocabulary: &[Box<str>]) -> Vec<u32> {
    words(id.as_str())
        .filter_map(|w| vocabulary.binary_search_by(|v| (**v).cmp(&*w)).ok())
        .map(|n| n as u32)
        .collect()
}

fn find(passages: &[Passage], vocabulary: &[Box<str>]) -> Vec<Conflict> {
    let mut frequency = vec![0usize; vocabulary.len()];
    for passage in passages {
        for &word in &passage.words {
            frequency[word as usize] += 1;
        }
    }
    let mut buckets: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, passage) in passages.iter().enumerate().filter(|(_, p)| p.words.len() >= MIN_WORDS) {
        let mut shared: Vec<u32> = passage
            .words
            .iter()
            .copied()
            .filter(|&w| (2..=MAX_BUCKET).contains(&frequency[w as usize]))
            .collect();
        shared.sort_by_key(|&w| (frequency[w as usize], w));
        for key in shared.into_iter().take(KEYS) {
            buckets.entry(key).or_default().push(i);
        }
    }
    let text = |words: Vec<u32>| -> Vec<String> {
        words.into_iter().map(|w| vocabulary[w as usize].to_string()).collect()
    };
    let mut seen = HashSet::new();
    let mut conflicts = Vec::new();
    let mut keys: Vec<&u32> = buckets.keys().collect();
    keys.sort();
    for key in keys {
        let members = &buckets[key];
        for (n, &i) in members.iter().enumerate() {
            for &j in &members[n + 1..] {
                let (first, second) = (&passages[i], &passages[j]);
                if first.id == second.id || !seen.insert((i, j)) {
                    continue;
                }
                let (a, b) = (&first.words, &second.words);
                let common: Vec<u32> = a.iter().copied().filter(|w| b.binary_search(w).is_ok()).collect();
                let (names_a, names_b) =
                    (name_words(&first.id, vocabulary), name_words(&second.id, vocabulary));
                let only_a: Vec<u32> = a
                    .iter()
                    .copied()
                    .filter(|w| b.binary_search(w).is_err() && !names_a.contains(w))
                    .collect();
                let only_b: Vec<u32> = b
                    .iter()
                    .copied()
                    .filter(|w| a.binary_search(w).is_err() && !names_b.contains(w))
                    .collect();
                if (common.len() as f64) < OVERLAP * a.len().min(b.len()) as f64
                    || common.iter().filter(|&&w| is_content(&vocabulary[w as usize])).count()
                        < MIN_SHARED_CONTENT
                    || only_a.is_empty()
                    || only_b.is_empty()
                {
                    continue;
                }
                let side = |p: &Passage| (p.id.clone(), p.heading.clone());
                conflicts.push(Conflict {
                    a: side(first),
                    b: side(second),
                    only_a: text(only_a),
                    only_b: text(only_b),
                });
            }
        }
    }
    conflicts.sort_by(|x, y| (&x.a, &x.b).cmp(&(&y.a, &y.b)));
    conflicts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find_in(docs: &[(&str, &str, &str)]) -> Vec<Conflict> {
        let mut statements = Statements::default();
        for (id, heading, text) in docs {
            statements.add(&DocId::parse(id).unwrap(), heading, text);
        }
        statements.conflicts()
    }

    #[test]
    fn the_same_fact_with_different_values_conflicts() {
        let conflicts = find_in(&[
            ("infra", "Database", "Staging PostgreSQL listens on port 5433 on db-staging."),
            ("notes", "Databases", "Staging PostgreSQL listens on port 6543 on db-staging."),
            ("people", "Alice", "Alice is the engineering manager and prefers written updates."),
        ]);
        assert_eq!(
            conflicts,
            [Conflict {
                a: (DocId::parse("infra").unwrap(), "Database".into()),
                b: (DocId::parse("notes").unwrap(), "Databases".into()),
                only_a: vec!["5433".into()],
                only_b: vec!["6543".into()],
            }]
        );
    }

    #[test]
    fn agreement_elaboration_and_unrelated_text_do_not_conflict() {
        assert!(
            find_in(&[
                ("a", "Port", "Staging PostgreSQL listens on port 5433."),
                ("b", "Port", "Staging PostgreSQL listens on port 5433."),
                ("c", "Port", "Staging PostgreSQL listens on port 5433 since the March migration."),
                ("d", "Deploy", "Release with make deploy once CI is green on main."),
                ("e", "", "tiny note"),
                ("e", "Other", "Staging PostgreSQL listens on port 7000."),
            ])
            .iter()
            .all(|c| c.a.0.as_str() == "e" || c.b.0.as_str() == "e"),
            "only the differing value in e conflicts"
        );
    }

    #[test]
    fn records_of_one_shape_and_documents_named_in_their_text_do_not_conflict() {
        assert!(
            find_in(&[
                ("a", "", "- fact 1.2.3 value 4411"),
                ("b", "", "- fact 1.2.4 value 9001"),
                ("w0", "", "w0 holds the staging database settings"),
                ("w1", "", "w1 holds the staging database settings"),
            ])
            .is_empty()
        );
    }

    #[test]
    fn the_differing_words_come_in_alphabetical_order() {
        let conflicts = find_in(&[
            ("b", "", "Staging PostgreSQL in Amsterdam listens on port 6543."),
            ("a", "", "Staging PostgreSQL in Zurich listens on port 5433."),
        ]);
        assert_eq!(conflicts.len(), 1);
        // The passage added first is `a`.
        assert_eq!((conflicts[0].a.0.as_str(), conflicts[0].b.0.as_str()), ("b", "a"));
        assert_eq!(conflicts[0].only_a, ["6543", "amsterdam"]);
        assert_eq!(conflicts[0].only_b, ["5433", "zurich"]);
    }

    #[test]
    fn passages_of_one_document_are_not_compared() {
        assert!(
            find_in(&[
                ("a", "Old", "Staging PostgreSQL listens on port 5433."),
                ("a", "New", "Staging PostgreSQL listens on port 6543."),
            ])
            .is_empty()
        );
    }
}
