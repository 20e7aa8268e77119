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

use std::collections::{BTreeSet, HashMap, HashSet};

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

/// A passage to compare.
pub struct Statement<'a> {
    pub id: &'a DocId,
    pub heading: &'a str,
    pub text: &'a str,
}

/// Two passages that nearly agree, and the words where they differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub a: (DocId, String),
    pub b: (DocId, String),
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
}

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn is_content(word: &str) -> bool {
    word.chars().count() >= 3 && word.chars().any(char::is_alphabetic)
}

/// Every pair of statements from different documents that conflict, each once.
pub fn find(statements: &[Statement<'_>]) -> Vec<Conflict> {
    let sets: Vec<BTreeSet<String>> = statements.iter().map(|s| words(s.text)).collect();
    let mut frequency: HashMap<&str, usize> = HashMap::new();
    for set in &sets {
        for word in set {
            *frequency.entry(word).or_default() += 1;
        }
    }
    let mut buckets: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, set) in sets.iter().enumerate().filter(|(_, s)| s.len() >= MIN_WORDS) {
        let mut shared: Vec<&str> =
            set.iter().map(String::as_str).filter(|w| (2..=MAX_BUCKET).contains(&frequency[w])).collect();
        shared.sort_by_key(|w| (frequency[w], *w));
        for key in shared.into_iter().take(KEYS) {
            buckets.entry(key).or_default().push(i);
        }
    }
    let mut seen = HashSet::new();
    let mut conflicts = Vec::new();
    let mut keys: Vec<&&str> = buckets.keys().collect();
    keys.sort();
    for key in keys {
        let members = &buckets[*key];
        for (n, &i) in members.iter().enumerate() {
            for &j in &members[n + 1..] {
                if statements[i].id == statements[j].id || !seen.insert((i, j)) {
                    continue;
                }
                let (a, b) = (&sets[i], &sets[j]);
                let common: Vec<&String> = a.intersection(b).collect();
                let (names_a, names_b) = (words(statements[i].id.as_str()), words(statements[j].id.as_str()));
                let only_a: Vec<String> =
                    a.difference(b).filter(|w| !names_a.contains(*w)).cloned().collect();
                let only_b: Vec<String> =
                    b.difference(a).filter(|w| !names_b.contains(*w)).cloned().collect();
                if (common.len() as f64) < OVERLAP * a.len().min(b.len()) as f64
                    || common.iter().filter(|w| is_content(w)).count() < MIN_SHARED_CONTENT
                    || only_a.is_empty()
                    || only_b.is_empty()
                {
                    continue;
                }
                let side = |s: &Statement<'_>| (s.id.clone(), s.heading.to_owned());
                conflicts.push(Conflict { a: side(&statements[i]), b: side(&statements[j]), only_a, only_b });
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
        let ids: Vec<DocId> = docs.iter().map(|(id, _, _)| DocId::parse(id).unwrap()).collect();
        let statements: Vec<Statement<'_>> =
            docs.iter().zip(&ids).map(|((_, heading, text), id)| Statement { id, heading, text }).collect();
        find(&statements)
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
