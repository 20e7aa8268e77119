//! Text as the index sees it: words for the full-text engine, CJK runs as
//! overlapping bigrams (CJK has no spaces between words, and a bigram index
//! finds any word of two or more characters), English stop words, edit
//! distance for typo tolerance, and excerpts with the matches marked.

/// Whether `c` belongs to a script written without spaces between words.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3400..=0x4DBF   // CJK Extension A
        | 0x4E00..=0x9FFF   // CJK Unified Ideographs
        | 0xF900..=0xFAFF   // CJK Compatibility Ideographs
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0xFF66..=0xFF9D   // Half-width Katakana
        | 0x20000..=0x2FA1F)
}

/// The CJK bigrams of `text`, space-separated (a lone character stays).
pub fn cjk_bigrams(text: &str) -> String {
    let mut out = String::new();
    let mut run: Vec<char> = Vec::new();
    let flush = |run: &mut Vec<char>, out: &mut String| {
        if run.len() == 1 {
            out.push(run[0]);
            out.push(' ');
        }
        for pair in run.windows(2) {
            out.extend(pair);
            out.push(' ');
        }
        run.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
        }
    }
    flush(&mut run, &mut out);
    out.truncate(out.trim_end().len());
    out
}

const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me",
    "my", "of", "on", "or", "our", "should", "so", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "whom",
    "why", "will", "with", "would", "you", "your", "not", "no", "any", "all", "again", "also", "use", "used",
    "using", "s", "t",
];

/// The search terms of a plain-words query, lower-cased, each once: words
/// (stop words dropped unless nothing else is left) and CJK bigrams. Every
/// character is text; nothing is query syntax.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut cjk = String::new();
    for token in query.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()) {
        if token.chars().any(is_cjk) {
            cjk.push_str(token);
            cjk.push(' ');
            let latin: String = token.chars().map(|c| if is_cjk(c) { ' ' } else { c }).collect();
            words.extend(latin.split_whitespace().map(str::to_lowercase));
        } else {
            words.push(token.to_lowercase());
        }
    }
    let content: Vec<String> = words.iter().filter(|w| !STOP_WORDS.contains(&w.as_str())).cloned().collect();
    let mut terms = if content.is_empty() { words } else { content };
    terms.extend(cjk_bigrams(&cjk).split_whitespace().map(str::to_owned));
    let mut seen = std::collections::HashSet::new();
    terms.retain(|t| seen.insert(t.clone()));
    terms.truncate(32);
    terms
}

/// An FTS5 string literal: the term in double quotes, quotes doubled.
pub fn fts_literal(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// Edit distance in which swapping two neighbouring letters is one edit,
/// as a typing slip is (optimal string alignment: `recieve` is one edit
/// from `receive`), giving up (returning `limit + 1`) past `limit`.
pub fn edit_distance(a: &str, b: &str, limit: usize) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let n = b.len();
    // Rows i-2, i-1 and i of the distance table.
    let mut before = vec![0; n + 1];
    let mut prev: Vec<usize> = (0..=n).collect();
    let mut row = vec![0; n + 1];
    for i in 1..=a.len() {
        row[0] = i;
        let mut best = i;
        for j in 1..=n {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            row[j] = d;
            best = best.min(d);
        }
        // A row's smallest value never falls in the rows below it.
        if best > limit {
            return limit + 1;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[n]
}

/// A word without its common English inflection (`testing` → `test`), for
/// telling which words of an excerpt matched; the index itself stems with
/// FTS5's Porter stemmer.
fn light_stem(word: &str) -> String {
    let word = word.to_lowercase();
    for suffix in
        ["ations", "ation", "ments", "ment", "ings", "ing", "ers", "er", "ies", "es", "ed", "ly", "s"]
    {
        if let Some(stem) = word.strip_suffix(suffix)
            && stem.chars().count() >= 3
        {
            return stem.to_owned();
        }
    }
    word
}

/// Whether a word of the text matches a query term: the same word up to an
/// inflection, or a CJK bigram inside it.
fn matches_term(word: &str, term: &str) -> bool {
    if term.chars().any(is_cjk) {
        return word.contains(term);
    }
    let (w, t) = (light_stem(word), light_stem(term));
    w == t || (t.chars().count() >= 4 && w.starts_with(&t)) || (w.chars().count() >= 4 && t.starts_with(&w))
}

/// Up to three lines of `text` that contain a term, with the line before
/// the first one, the matches marked `**…**`; the first lines when none do.
pub fn excerpt(text: &str, terms: &[String]) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let hits: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.split(|c: char| !c.is_alphanumeric())
                .any(|w| !w.is_empty() && terms.iter().any(|t| matches_term(w, t)))
        })
        .map(|(i, _)| i)
        .take(3)
        .collect();
    let chosen: Vec<usize> = match hits.first() {
        None => (0..lines.len().min(2)).collect(),
        Some(&first) if first > 0 && hits.len() < 3 => std::iter::once(first - 1).chain(hits).collect(),
        Some(_) => hits,
    };
    chosen.iter().map(|&i| mark(shorten(lines[i].trim(), terms), terms)).collect::<Vec<_>>().join("\n")
}

/// A line cut to about 200 characters around its first match.
fn shorten<'a>(line: &'a str, terms: &[String]) -> &'a str {
    const MAX: usize = 200;
    if line.len() <= MAX {
        return line;
    }
    let lower = line.to_lowercase();
    let at = terms.iter().filter_map(|t| lower.find(t.as_str())).min().unwrap_or(0);
    let mut start = at.saturating_sub(60);
    while !line.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + MAX).min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[start..end]
}

fn mark(line: &str, terms: &[String]) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut word_start: Option<usize> = None;
    let bytes_end = line.len();
    let push_word = |out: &mut String, word: &str| {
        if terms.iter().any(|t| matches_term(word, t)) {
            out.push_str("**");
            out.push_str(word);
            out.push_str("**");
        } else {
            out.push_str(word);
        }
    };
    for (i, c) in line.char_indices() {
        if c.is_alphanumeric() {
            word_start.get_or_insert(i);
        } else {
            if let Some(s) = word_start.take() {
                push_word(&mut out, &line[s..i]);
            }
            out.push(c);
        }
    }
    if let Some(s) = word_start {
        push_word(&mut out, &line[s..bytes_end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_plain_words() {
        assert_eq!(query_terms("What port does the staging DB use?"), ["port", "staging", "db"]);
        assert_eq!(
            query_terms("\"connection refused\" (port 5432) -- AND fix: now"),
            ["connection", "refused", "port", "5432", "fix", "now"]
        );
        assert_eq!(query_terms("the"), ["the"]);
        assert_eq!(
            query_terms("PostgreSQL 15.4 on 2026-03-14"),
            ["postgresql", "15", "4", "2026", "03", "14"]
        );
        assert_eq!(query_terms("メモ帳の使い方"), ["メモ", "モ帳", "帳の", "の使", "使い", "い方"]);
        assert_eq!(query_terms("deploy手順"), ["deploy", "手順"]);
        assert!(query_terms("?!:()").is_empty());
    }

    #[test]
    fn fts_literals_escape_quotes() {
        assert_eq!(fts_literal("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn cjk_text_becomes_bigrams() {
        assert_eq!(cjk_bigrams("# メモ帳 and 東"), "メモ モ帳 東");
        assert_eq!(cjk_bigrams("plain text"), "");
    }

    #[test]
    fn edit_distance_with_a_limit() {
        assert_eq!(edit_distance("postgress", "postgres", 2), 1);
        assert_eq!(edit_distance("kubernets", "kubernetes", 2), 1);
        assert_eq!(edit_distance("abc", "xyz", 1), 2);
        assert_eq!(edit_distance("a", "abcdef", 2), 3);
        // A swap of neighbours is one edit.
        for (typo, word) in
            [("recieve", "receive"), ("restrats", "restarts"), ("nightyl", "nightly"), ("teh", "the")]
        {
            assert_eq!(edit_distance(typo, word, 2), 1, "{typo}");
        }
        assert_eq!(edit_distance("databse", "database", 1), 1);
        assert_eq!(edit_distance("configuraton", "configuration", 2), 1);
        assert_eq!(edit_distance("abcd", "badc", 2), 2);
        assert_eq!(edit_distance("same", "same", 0), 0);
    }

    #[test]
    fn excerpts_mark_matching_lines() {
        let text = "# Setup\nInstall the tools.\nRun the tests with pytest -q.\nDone.\nTesting notes.";
        let terms = vec!["testing".to_owned()];
        assert_eq!(
            excerpt(text, &terms),
            "Install the tools.\nRun the **tests** with pytest -q.\n**Testing** notes."
        );
        assert_eq!(excerpt("a\nb\nc", &["zzz".to_owned()]), "a\nb");
        assert_eq!(excerpt("会議のメモ帳です", &["メモ".to_owned()]), "**会議のメモ帳です**");
    }
}
