//! Search queries and recall tasks made from the store's own notes.
//!
//! Each one starts from a target note as it is on disk: one of its lines is
//! picked and 1–3 of that line's content words are taken in order, so the
//! words likely share a passage, as when an agent looks up something it wrote
//! down. Some queries are questions ("how do we handle X Y?"), some carry a
//! number from the line, some put words in quotes; memtree takes all of it as
//! plain words. The target is known, so hit@8 (the target among the first 8
//! hits) shows whether the ranking is sane.

use crate::generate::{FUNCTION_WORDS, Rng};

/// A search query and the note it was made from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Query {
    pub text: String,
    pub target: String,
    /// Words taken from the note (numbers and question words not counted).
    pub words: usize,
}

const QUESTIONS: &[(&str, &str)] = &[
    ("how do we handle ", "?"),
    ("what did we decide about ", "?"),
    ("why is the ", " slow?"),
    ("where is ", " configured?"),
];

const TASKS: &[(&str, &str)] = &[
    ("Fix the ", " problem"),
    ("Continue the work on ", ""),
    ("Write up what we know about ", ""),
    ("Review the ", " changes and plan the next step"),
];

/// A query for `target`, whose text is `note`; `None` if no line of it has
/// three content words.
pub fn query(rng: &mut Rng, target: &str, note: &str) -> Option<Query> {
    let lines = lines(note);
    if lines.is_empty() {
        return None;
    }
    let roll = rng.unit();
    let numbered: Vec<&Line> = lines.iter().filter(|l| !l.numbers.is_empty()).collect();
    if roll < 0.15 && !numbered.is_empty() {
        let line = numbered[rng.below(numbered.len())];
        let k = rng.range(1, 2);
        let words = pick(rng, &line.words, k);
        let number = rng.pick(&line.numbers);
        let text = format!("{} {number}", words.join(" "));
        return Some(Query { text, target: target.to_owned(), words: words.len() });
    }
    let line = rng.pick(&lines);
    let k = rng.range(1, 3);
    let words = pick(rng, &line.words, k);
    let joined = words.join(" ");
    let text = if roll < 0.35 {
        let (before, after) = rng.pick(QUESTIONS);
        format!("{before}{joined}{after}")
    } else if roll < 0.50 {
        format!("\"{joined}\"")
    } else {
        joined
    };
    Some(Query { text, target: target.to_owned(), words: words.len() })
}

/// A task for `recall`, from 2–3 words of a line of `note`.
pub fn task(rng: &mut Rng, note: &str) -> Option<String> {
    let lines = lines(note);
    if lines.is_empty() {
        return None;
    }
    let line = rng.pick(&lines);
    let k = rng.range(2, 3);
    let words = pick(rng, &line.words, k);
    let (before, after) = rng.pick(TASKS);
    Some(format!("{before}{}{after}", words.join(" ")))
}

/// The ids of the hits in a `search` answer (`1. [id#Heading] score · path`).
pub fn hit_ids(answer: &str) -> Vec<&str> {
    answer
        .lines()
        .filter_map(|line| {
            let (rank, rest) = line.split_once(". [")?;
            rank.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
            rest.split(['#', ']']).next()
        })
        .collect()
}

/// One line of a note: its distinct content words and its numbers.
struct Line {
    words: Vec<String>,
    numbers: Vec<String>,
}

/// The lines with three or more content words, leaving out front-matter,
/// link bullets and code fences.
fn lines(note: &str) -> Vec<Line> {
    let body = match note.strip_prefix("---\n").and_then(|rest| rest.split_once("\n---\n")) {
        Some((_, body)) => body,
        None => note,
    };
    body.lines()
        .filter(|l| !l.contains("[[") && !l.starts_with("```"))
        .map(|l| {
            let mut line = Line { words: Vec::new(), numbers: Vec::new() };
            for token in l.split(|c: char| !c.is_ascii_alphanumeric()).filter(|t| !t.is_empty()) {
                let word = token.to_ascii_lowercase();
                if token.bytes().all(|b| b.is_ascii_digit()) {
                    line.numbers.push(word);
                } else if word.len() >= 3
                    && word.bytes().all(|b| b.is_ascii_alphabetic())
                    && !FUNCTION_WORDS.contains(&word.as_str())
                    && !line.words.contains(&word)
                {
                    line.words.push(word);
                }
            }
            line
        })
        .filter(|l| l.words.len() >= 3)
        .collect()
}

/// `k` of `words`, chosen at random, in their order on the line.
fn pick<'a>(rng: &mut Rng, words: &'a [String], k: usize) -> Vec<&'a str> {
    let mut order: Vec<usize> = (0..words.len()).collect();
    for i in 0..k {
        let j = i + rng.below(order.len() - i);
        order.swap(i, j);
    }
    let mut chosen = order[..k].to_vec();
    chosen.sort_unstable();
    chosen.into_iter().map(|i| words[i].as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "---\nsummary: Cache notes\ntags: [cache]\n---\n# Cache index\n\n\
        The cache index was rebuilt after 512 writes.\n\n## Children\n\n- [[child_1]] Some child\n";

    #[test]
    fn queries_use_the_notes_own_words() {
        let mut rng = Rng::new(7);
        for _ in 0..50 {
            let q = query(&mut rng, "cache_index_1", NOTE).expect("a line with three words");
            assert!((1..=3).contains(&q.words));
            assert!(!q.text.contains("summary") && !q.text.contains("child"), "{}", q.text);
            let t = task(&mut rng, NOTE).expect("a task");
            assert!(
                t.contains("cache") || t.contains("index") || t.contains("rebuilt") || t.contains("writes")
            );
        }
        assert!(query(&mut rng, "x", "# Two words\n").is_none());
    }

    #[test]
    fn reads_hit_ids() {
        let answer = "1. [a/b#Head] 4.11 · root › a\n   line with [x]\n2. [c] 1.00 · root\n   2. [no\n";
        assert_eq!(hit_ids(answer), vec!["a/b", "c"]);
    }
}
