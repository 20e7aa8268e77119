//! Text as the index sees it: words for the full-text engine, CJK runs as
//! overlapping bigrams (CJK has no spaces between words, and a bigram index
//! finds any word of two or more characters), English stop words, edit
//! distance for typo tolerance, and excerpts with the matches marked.

use memtree_core::QueryTerm;

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
    "using", "s", "t", "he", "she", "him", "his", "her", "hers", "us", "ours", "yours", "theirs",
];

/// The search terms of a plain-words query, lower-cased, each once: words
/// (stop words dropped unless nothing else is left) and CJK bigrams. Every
/// character is text; nothing is query syntax.
pub fn query_terms(query: &str) -> Vec<String> {
    let tokens = words(query);
    let mut words: Vec<String> = Vec::new();
    let mut cjk = String::new();
    for token in tokens {
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
/// Snowball's English stemmer (`terms.rs`).
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

/// Tells which query term a word of the text is, the terms' stems worked
/// out once for all the words an excerpt looks at.
pub(crate) struct Matcher<'a> {
    terms: &'a [QueryTerm],
    /// Each term's stem, or `None` for a CJK bigram (found inside words).
    stems: Vec<Option<String>>,
    /// The first [`HEAD_LETTERS`] letters of the stems, when no term is a
    /// CJK bigram. A word's stem is a start of its lowercase, so a word
    /// matches a term only if its lowercase starts with the term's head:
    /// the others are not stemmed (for a word not in ASCII, only the first
    /// letter is compared).
    heads: Option<Vec<String>>,
    /// Which ASCII bytes, lower-cased, a head starts with (every byte when a
    /// head is empty): most words are passed over on their first letter.
    firsts: [bool; 128],
}

/// [`Matcher::term_of`] matches a stem of at least this many letters as the
/// start of a longer one.
const HEAD_LETTERS: usize = 4;

impl<'a> Matcher<'a> {
    pub(crate) fn new(terms: &'a [QueryTerm]) -> Matcher<'a> {
        let stems: Vec<Option<String>> =
            terms.iter().map(|t| (!t.word.chars().any(is_cjk)).then(|| light_stem(&t.word))).collect();
        let heads: Option<Vec<String>> =
            stems.iter().map(|s| s.as_ref().map(|s| s.chars().take(HEAD_LETTERS).collect())).collect();
        let mut firsts = [false; 128];
        for head in heads.iter().flatten() {
            match head.as_bytes().first() {
                Some(&first) if first.is_ascii() => firsts[usize::from(first)] = true,
                Some(_) => {}
                None => firsts = [true; 128],
            }
        }
        Matcher { terms, stems, heads, firsts }
    }

    pub(crate) fn terms(&self) -> &[QueryTerm] {
        self.terms
    }

    /// What every word that matches a term starts with, lower-cased (each
    /// term's head); none when a term is a CJK bigram, found inside words.
    pub(crate) fn heads(&self) -> Option<&[String]> {
        self.heads.as_deref()
    }

    /// The first term `word` matches.
    pub(crate) fn term_of(&self, word: &str) -> Option<usize> {
        if let Some(heads) = &self.heads {
            let may = if word.is_ascii() {
                let first = word.as_bytes().first().map_or(0, u8::to_ascii_lowercase);
                if !self.firsts[usize::from(first)] {
                    return None;
                }
                let starts =
                    |head: &String| word.get(..head.len()).is_some_and(|w| w.eq_ignore_ascii_case(head));
                heads.iter().any(starts)
            } else {
                let first = word.chars().next()?.to_lowercase().next()?;
                heads.iter().any(|head| head.starts_with(first))
            };
            if !may {
                return None;
            }
        }
        let mut stem: Option<String> = None;
        self.terms.iter().zip(&self.stems).position(|(term, t)| match t {
            None => word.contains(term.word.as_str()),
            Some(t) => {
                let w = stem.get_or_insert_with(|| light_stem(word));
                w == t
                    || (t.chars().count() >= HEAD_LETTERS && w.starts_with(t.as_str()))
                    || (w.chars().count() >= HEAD_LETTERS && t.starts_with(w.as_str()))
            }
        })
    }

    /// How much `text` says about the query, and the terms it holds (each
    /// once, in the terms' order): the weights of the distinct terms it
    /// holds, and for each two terms it holds side by side (a phrase of the
    /// query) the smaller of their weights again.
    fn weigh(&self, text: &str) -> (f64, Vec<usize>) {
        let mut held = vec![false; self.terms.len()];
        let mut score = 0.0;
        let mut previous: Option<usize> = None;
        for word in words(text) {
            let term = self.term_of(word);
            if let Some(i) = term {
                if !std::mem::replace(&mut held[i], true) {
                    score += self.terms[i].weight;
                }
                if let Some(p) = previous
                    && p != i
                {
                    score += self.terms[p].weight.min(self.terms[i].weight);
                }
            }
            previous = term;
        }
        (score, held.iter().enumerate().filter(|(_, h)| **h).map(|(i, _)| i).collect())
    }
}

/// The share of `terms`' weight whose words `text` holds (0 without any
/// weight): how much of a query a passage covers.
pub fn coverage(text: &str, terms: &[QueryTerm]) -> f64 {
    Matcher::new(terms).coverage(text)
}

impl Matcher<'_> {
    /// The terms' total weight.
    fn total(&self) -> f64 {
        self.terms.iter().map(|t| t.weight).sum()
    }

    /// [`coverage`] of `text`, for a matcher used on many texts.
    pub(crate) fn coverage(&self, text: &str) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.0;
        }
        let mut held = vec![false; self.terms.len()];
        for i in words(text).filter_map(|w| self.term_of(w)) {
            held[i] = true;
        }
        self.terms.iter().zip(held).filter(|(_, h)| *h).map(|(t, _)| t.weight).sum::<f64>() / total
    }

    /// The largest share of the terms' weight that `window` neighbouring
    /// words of `text` hold together (0 without any weight): whether a
    /// passage says the query's words in one place or scatters them.
    pub(crate) fn window_coverage(&self, text: &str, window: usize) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.0;
        }
        let terms = self.terms;
        // Where each word that matches a term stands, and which it matches.
        let held: Vec<(usize, usize)> =
            words(text).enumerate().filter_map(|(at, word)| Some((at, self.term_of(word)?))).collect();
        // Each term's count inside the window (the `window` words up to the
        // latest match), which slides from match to match: the weight held
        // only falls between them.
        let mut inside = vec![0usize; terms.len()];
        let mut weight = 0.0;
        let mut best: f64 = 0.0;
        let mut oldest = 0;
        for (latest, &(at, t)) in held.iter().enumerate() {
            inside[t] += 1;
            if inside[t] == 1 {
                weight += terms[t].weight;
            }
            while oldest <= latest && held[oldest].0 + window <= at {
                let gone = held[oldest].1;
                inside[gone] -= 1;
                if inside[gone] == 0 {
                    weight -= terms[gone].weight;
                }
                oldest += 1;
            }
            best = best.max(weight);
        }
        best / total
    }
}

/// An excerpt takes lines until it shows this many words: a budget in
/// words, not lines, so that a few one-word replies (`AAAAH!`) do not crowd
/// out the line that answers (over the conversation set, 60 words gave
/// more answers in fewer words than four lines did).
const EXCERPT_WORDS: usize = 60;
/// Most lines of context after the best line.
const CONTEXT_LINES: usize = 3;
/// A line of at least this many words says something of its own.
const SUBSTANTIAL_WORDS: usize = 6;

/// Whether a line leads on to the next rather than saying something of its
/// own: a question (`Oh! When is it?`), a lead-in (`Steps:`), a few words
/// past its label (`- [S3:7] Lena: That sounds terrifying.`).
fn leads_on(line: &str) -> bool {
    line.ends_with(['?', ':']) || words(unlabelled(line)).count() < SUBSTANTIAL_WORDS
}

/// Most words of a line's label: `- [12:04] Priya:`, `**Tom**:`, `Q:`.
const LABEL_WORDS: usize = 4;

/// A line without its label: what comes after a colon that closes its first
/// few words (a speaker's name, a time, a turn's number), or the line.
fn unlabelled(line: &str) -> &str {
    let mut from = 0;
    while let Some(at) = line[from..].find(": ").map(|at| from + at) {
        if words(&line[..at]).count() > LABEL_WORDS {
            break;
        }
        from = at + 2;
    }
    &line[from..]
}
/// A line longer than this (in bytes) is shown as its start and the
/// sentence that best matches.
const LONG_LINE: usize = 320;
/// How much of a long line's start is kept before its best sentence.
const LINE_START: usize = 80;

/// The words of `text`, as written, in order: runs of letters and digits.
/// Query words, excerpts and the typo vocabulary all split text this way.
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    Words { text, at: 0 }
}

/// [`words`]' iterator. It looks at bytes, decoding only the characters
/// past ASCII: splitting passages into words was half of weighing how close
/// together they hold a query's words.
struct Words<'a> {
    text: &'a str,
    at: usize,
}

impl Words<'_> {
    /// The first byte at or past `at` that starts a character which is a
    /// letter or digit (`inside` false) or is not (`inside` true), or the
    /// text's end.
    #[inline]
    fn past(&self, mut at: usize, inside: bool) -> usize {
        let bytes = self.text.as_bytes();
        loop {
            // The ASCII run first, a byte at a time, without decoding.
            while let Some(&byte) = bytes.get(at)
                && byte.is_ascii()
            {
                if byte.is_ascii_alphanumeric() != inside {
                    return at;
                }
                at += 1;
            }
            let Some(c) = self.text.get(at..).and_then(|rest| rest.chars().next()) else { return at };
            if c.is_alphanumeric() != inside {
                return at;
            }
            at += c.len_utf8();
        }
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let start = self.past(self.at, false);
        self.at = self.past(start, true);
        (self.at > start).then(|| &self.text[start..self.at])
    }
}

/// The lines of `text` that say most about the query, in their order, the
/// matches marked `**…**`. The first is the line whose words weigh most (a
/// rare word outweighs one on every line), with the lines after it up to
/// one that does not [lead on](leads_on) (an answer after its question, a
/// list after its lead-in), taken from `after` (the lines that follow the
/// passage) past its end; the next adds the most weight of the query words
/// not shown yet, a question with the line that answers it, until the
/// excerpt shows [`EXCERPT_WORDS`] words. Lines are whole; a long one keeps
/// its start. The first lines when no line holds a term.
pub fn excerpt(text: &str, after: &str, terms: &[QueryTerm]) -> String {
    let non_blank =
        |text| -> Vec<&str> { str::lines(text).map(str::trim).filter(|l| !l.is_empty()).collect() };
    let mut lines = non_blank(text);
    let own = lines.len();
    lines.extend(non_blank(after));
    let matcher = Matcher::new(terms);
    let (weights, matched): (Vec<f64>, Vec<Vec<usize>>) =
        lines[..own].iter().map(|l| matcher.weigh(l)).unzip();
    let mut shown = vec![false; terms.len()];
    let mut chosen: Vec<usize> = Vec::new();
    // The words the chosen lines show, counted once as each is taken.
    let mut shown_words = 0;
    while shown_words < EXCERPT_WORDS {
        let gain = |i: usize| -> f64 {
            let new: f64 = matched[i].iter().filter(|&&t| !shown[t]).map(|&t| terms[t].weight).sum();
            // The first line is chosen by its whole weight, phrases included.
            if chosen.is_empty() { weights[i] } else { new }
        };
        let Some(best) = (0..own)
            .filter(|i| !chosen.contains(i))
            .map(|i| (i, gain(i)))
            .filter(|&(_, g)| g > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(i, _)| i)
        else {
            break;
        };
        for &t in &matched[best] {
            shown[t] = true;
        }
        let first = chosen.is_empty();
        let mut take = |line: usize| {
            if !chosen.contains(&line) {
                chosen.push(line);
                shown_words += words(&shorten(lines[line], &matcher)).count();
            }
        };
        take(best);
        if first {
            for next in (best + 1..lines.len()).take(CONTEXT_LINES) {
                take(next);
                if !leads_on(lines[next]) {
                    break;
                }
            }
        } else if lines[best].ends_with('?') && best + 1 < lines.len() {
            // A question's words are the query's; its answer is the next line.
            take(best + 1);
        }
    }
    if chosen.is_empty() {
        chosen = (0..own.min(2)).collect();
    }
    chosen.sort_unstable();
    chosen.dedup();
    chosen.iter().map(|&i| mark(&shorten(lines[i], &matcher), &matcher)).collect::<Vec<_>>().join("\n")
}

/// A line as an excerpt shows it: whole up to [`LONG_LINE`] bytes; longer,
/// its start (who speaks, what the item is) and its best sentence.
fn shorten(line: &str, matcher: &Matcher<'_>) -> String {
    if line.len() <= LONG_LINE {
        return line.to_owned();
    }
    let sentences = sentences(line);
    let best = sentences
        .iter()
        .copied()
        .map(|sentence| (sentence, matcher.weigh(sentence).0))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.len().cmp(&a.0.len())))
        .map(|(sentence, _)| sentence)
        .unwrap_or(line);
    let start = &line[..cut_at_word(line, LINE_START)];
    let best = if best.len() > LONG_LINE { &best[..cut_at_word(best, LONG_LINE)] } else { best };
    let best_at = best.as_ptr() as usize - line.as_ptr() as usize;
    if best_at <= start.len() {
        // The best sentence is at the start: show the line up to its end.
        let end = best_at + best.len();
        return if end < line.len() { format!("{} …", &line[..end]) } else { line.to_owned() };
    }
    let tail = if best_at + best.len() < line.len() { " …" } else { "" };
    format!("{start} … {best}{tail}")
}

/// The sentences of a line: cut after `.`, `!` or `?` followed by a space.
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = line.as_bytes();
    for (i, c) in line.char_indices() {
        if matches!(c, '.' | '!' | '?') && bytes.get(i + 1) == Some(&b' ') {
            out.push(line[start..=i].trim());
            start = i + 1;
        }
    }
    if start < line.len() && !line[start..].trim().is_empty() {
        out.push(line[start..].trim());
    }
    out
}

/// The length of `text`'s start of at most `max` bytes, ending at a word's
/// end (or a character boundary when one word is longer).
fn cut_at_word(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].rfind(char::is_whitespace).filter(|&at| at > 0).unwrap_or(end)
}

fn mark(line: &str, matcher: &Matcher<'_>) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut word_start: Option<usize> = None;
    let bytes_end = line.len();
    let push_word = |out: &mut String, word: &str| {
        if matcher.term_of(word).is_some() {
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
    fn coverage_is_the_share_of_the_query_weight_a_text_holds() {
        let terms = [
            QueryTerm { word: "postgres".into(), weight: 3.0 },
            QueryTerm { word: "port".into(), weight: 1.0 },
        ];
        assert_eq!(coverage("Postgres listens on ports 5432", &terms), 1.0, "inflections count");
        assert_eq!(coverage("postgres only", &terms), 0.75);
        assert_eq!(coverage("nothing here", &terms), 0.0);
        assert_eq!(coverage("postgres", &[]), 0.0);
        let cjk = [QueryTerm { word: "手順".into(), weight: 1.0 }];
        assert_eq!(coverage("デプロイ手順です", &cjk), 1.0, "a bigram inside a run");
    }

    /// The heads only spare stemming words that match no term.
    #[test]
    fn a_word_the_heads_pass_over_matches_no_term() {
        let query =
            terms(&[("deploy", 1.0), ("db", 1.0), ("configuration", 1.0), ("ÉTÉ", 1.0), ("cats", 1.0)]);
        let text = "Deployed deploys DEPLOYMENT dep de DB dbs config configs configurations conf configur \
                    été Étés ete cat cats category catalogue ca Dbx deplo déploy";
        let fast = Matcher::new(&query);
        let every = Matcher { heads: None, ..Matcher::new(&query) };
        for word in words(text) {
            assert_eq!(fast.term_of(word), every.term_of(word), "{word}");
        }
        assert!(words(text).filter(|w| fast.term_of(w).is_some()).count() > 10);
    }

    #[test]
    fn window_coverage_is_the_weight_held_close_together() {
        let terms =
            [QueryTerm { word: "cello".into(), weight: 3.0 }, QueryTerm { word: "exam".into(), weight: 1.0 }];
        let apart = format!("cello {} exam", "word ".repeat(50));
        assert_eq!(Matcher::new(&terms).window_coverage(&apart, 40), 0.75, "the heavier word alone");
        assert_eq!(Matcher::new(&terms).window_coverage(&apart, 60), 1.0);
        assert_eq!(Matcher::new(&terms).window_coverage("the cello exam", 40), 1.0);
        assert_eq!(Matcher::new(&terms).window_coverage("nothing", 40), 0.0);
        assert_eq!(Matcher::new(&[]).window_coverage("cello", 40), 0.0);
    }

    /// Sliding from match to match finds what sliding a word at a time
    /// does, at every width, the exact edge included.
    #[test]
    fn window_coverage_slides_over_every_word() {
        let terms = [
            QueryTerm { word: "cello".into(), weight: 3.0 },
            QueryTerm { word: "exam".into(), weight: 1.0 },
            QueryTerm { word: "tuesday".into(), weight: 2.0 },
        ];
        let matcher = Matcher::new(&terms);
        let vocabulary = ["cello", "exam", "tuesday", "the", "on", "cellos", "word"];
        let mut state = 7u64;
        for _ in 0..300 {
            let length = 1 + (state % 30) as usize;
            let text: Vec<&str> = (0..length)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    vocabulary[(state >> 33) as usize % vocabulary.len()]
                })
                .collect();
            let sequence: Vec<Option<usize>> = text.iter().map(|w| matcher.term_of(w)).collect();
            for window in 0..8 {
                let best = (0..sequence.len())
                    .map(|end| {
                        let mut held = [false; 3];
                        for t in sequence[(end + 1).saturating_sub(window)..=end].iter().flatten() {
                            held[*t] = true;
                        }
                        terms.iter().zip(held).filter(|(_, h)| *h).map(|(t, _)| t.weight).sum::<f64>()
                    })
                    .fold(0.0, f64::max);
                assert_eq!(
                    matcher.window_coverage(&text.join(" "), window),
                    best / 6.0,
                    "{text:?} in {window}"
                );
            }
        }
    }

    #[test]
    fn queries_are_plain_words() {
        assert_eq!(query_terms("What port does the staging DB use?"), ["port", "staging", "db"]);
        assert_eq!(
            query_terms("\"connection refused\" (port 5432) -- AND fix: now"),
            ["connection", "refused", "port", "5432", "fix", "now"]
        );
        assert_eq!(query_terms("the"), ["the"]);
        assert_eq!(query_terms("Why does Marcus have to leave his flat?"), ["marcus", "leave", "flat"]);
        assert_eq!(
            query_terms("PostgreSQL 15.4 on 2026-03-14"),
            ["postgresql", "15", "4", "2026", "03", "14"]
        );
        assert_eq!(query_terms("メモ帳の使い方"), ["メモ", "モ帳", "帳の", "の使", "使い", "い方"]);
        assert_eq!(query_terms("deploy手順"), ["deploy", "手順"]);
        assert!(query_terms("?!:()").is_empty());
    }

    #[test]
    fn words_are_runs_of_letters_and_digits() {
        let text = "  Ünïcode-ok, naïve café's Σίσυφος; x2=½ ٣٤ 東京タワー🙂emoji e\u{301}t\u{e9} end";
        let by_chars: Vec<&str> =
            text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        assert_eq!(words(text).collect::<Vec<_>>(), by_chars);
        assert_eq!(words("one, two").collect::<Vec<_>>(), ["one", "two"]);
        assert_eq!(words(" -- ").count(), 0);
        assert_eq!(words("").count(), 0);
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
        // The first match and the lines after it up to one of some words
        // (here the text ends first); a second line only for query words
        // not shown yet.
        assert_eq!(
            excerpt(text, "", &terms(&[("testing", 1.0)])),
            "Run the **tests** with pytest -q.\nDone.\n**Testing** notes."
        );
        assert_eq!(
            excerpt(text, "", &terms(&[("tools", 1.0), ("notes", 1.0)])),
            "Install the **tools**.\nRun the tests with pytest -q.\nTesting **notes**."
        );
        assert_eq!(excerpt("a\nb\nc", "", &terms(&[("zzz", 1.0)])), "a\nb");
        assert_eq!(excerpt("会議のメモ帳です", "", &terms(&[("メモ", 1.0)])), "**会議のメモ帳です**");
    }

    fn terms(weighted: &[(&str, f64)]) -> Vec<QueryTerm> {
        weighted.iter().map(|(w, weight)| QueryTerm { word: (*w).to_owned(), weight: *weight }).collect()
    }

    /// A word on every line (a speaker's name) does not choose the lines:
    /// the rare words of the question do.
    #[test]
    fn rare_words_choose_the_lines_not_common_ones() {
        let log = "- [S3:1] Caroline: Hey Mel! Good to see you!\n\
                   - [S3:2] Melanie: Hi Caroline! How have you been?\n\
                   - [S3:3] Caroline: Busy! I went to a LGBTQ support group yesterday.\n\
                   - [S3:4] Melanie: That sounds great.\n\
                   - [S3:5] Caroline: Also painted a bit.";
        let query = terms(&[("caroline", 0.2), ("lgbtq", 4.0), ("support", 2.5), ("group", 2.0)]);
        let shown = excerpt(log, "", &query);
        assert!(shown.contains("**LGBTQ** **support** **group** yesterday"), "{shown}");
        assert!(shown.contains("That sounds great."), "the line after the best one is its context: {shown}");
        assert!(!shown.contains("Good to see you"), "{shown}");
    }

    #[test]
    fn words_side_by_side_outweigh_the_same_words_apart() {
        let text = "the support desk moved; a new group formed\nthe support group meets on Mondays";
        let query = terms(&[("support", 1.0), ("group", 1.0)]);
        let matcher = Matcher::new(&query);
        let weigh = |text: &str| matcher.weigh(text).0;
        assert!(weigh("the support group meets") > weigh("the support desk; a new group"));
        let shown = excerpt(text, "", &query);
        assert!(shown.ends_with("the **support** **group** meets on Mondays"), "{shown}");
    }

    /// The answer to the passage's last line is in the next passage: the
    /// lines after the passage carry it, past a short lead-in.
    #[test]
    fn context_runs_past_the_passage_to_the_line_that_answers() {
        let log =
            "- [S15:10] Priya: How's the cello?\n- [S15:11] Lena: Nervous. I got the exam date through.";
        let after = "- [S15:12] Priya: Oh! When is it?\n\
                     - [S15:13] Lena: Saturday the 15th of June, at 11:40, at the music school.";
        let shown = excerpt(log, after, &terms(&[("lena", 0.2), ("cello", 2.0), ("exam", 3.0)]));
        assert!(shown.ends_with("Oh! When is it?\n- [S15:13] **Lena**: Saturday the 15th of June, at 11:40, at the music school."), "{shown}");
        // A line that says something of its own ends the context.
        let after =
            "- [S15:12] Priya: Oh no, that is sooner than you expected then.\n- [S15:13] Lena: Saturday.";
        let shown = excerpt(log, after, &terms(&[("exam", 3.0)]));
        assert!(shown.ends_with("sooner than you expected then."), "{shown}");
    }

    /// A question chosen for the query's words brings the line that answers
    /// it, even when it is not the best line.
    #[test]
    fn a_question_shown_for_its_words_brings_its_answer() {
        let log = "- [S13:10] Marcus: The sofa.\n\
                   - [S13:11] Priya: Hahaha I knew it!\n\
                   - [S13:12] Marcus: It got stuck on the stairs, so we carried it all the way back down again.\n\
                   - [S13:13] Priya: Nooo. So where is it now?\n\
                   - [S13:14] Marcus: In my garage. Next to the canoe.\n\
                   - [S13:15] Priya: Of course it is.";
        let shown = excerpt(log, "", &terms(&[("sofa", 3.0), ("now", 1.0)]));
        assert!(
            shown.ends_with("So where is it **now**?\n- [S13:14] Marcus: In my garage. Next to the canoe."),
            "{shown}"
        );
        assert!(!shown.contains("Of course"), "{shown}");
    }

    /// Short replies after the best line cost the excerpt few of its words:
    /// the next line holding a query word still has room.
    #[test]
    fn short_replies_leave_room_for_the_line_that_answers() {
        let log = "- [S26:20] Marcus: Brightwater rang me on Tuesday. I got the job.\n\
                   - [S26:21] Priya: AAAAH!\n\
                   - [S26:22] Lena: MARCUS!\n\
                   - [S26:23] Tom: Yes! Get in!\n\
                   - [S26:24] Lena: Tell us everything.\n\
                   - [S26:25] Marcus: I start on Monday the 4th of November, as a visual designer.";
        let query = terms(&[("marcus", 0.3), ("start", 1.5), ("brightwater", 3.0)]);
        let shown = excerpt(log, "", &query);
        assert!(shown.starts_with("- [S26:20] **Marcus**: **Brightwater** rang me"), "{shown}");
        assert!(
            shown.ends_with("I **start** on Monday the 4th of November, as a visual designer."),
            "{shown}"
        );
    }

    /// A long line keeps its start (who speaks) and shows its best sentence
    /// whole, never a cut into the middle of either.
    #[test]
    fn a_long_line_keeps_its_start_and_its_best_sentence() {
        let filler =
            "We talked about the weather and the traffic for a while, and then about lunch. ".repeat(4);
        let line =
            format!("- [D10:20] Melanie: {filler}By the way, the pottery class starts on 12 May. See you!");
        let shown = excerpt(&line, "", &terms(&[("pottery", 3.0), ("class", 2.0)]));
        assert!(shown.starts_with("- [D10:20] Melanie: We talked about"), "{shown}");
        assert!(shown.contains("… By the way, the **pottery** **class** starts on 12 May. …"), "{shown}");
        assert!(shown.len() < line.len(), "{shown}");
    }
}
