//! A document body cut into passages: the units of search hits and memory
//! packs.
//!
//! Headings come from the Markdown parser (a `#` line inside a code block is
//! not a heading). Each stretch of text between two headings is one passage,
//! labelled with the path of headings above it; a stretch longer than
//! `max_words` is cut at line boundaries into windows, so that a hit or a
//! pack entry costs a few hundred tokens at most, not a whole document.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::line_ending::{self, LineIndex};

/// One passage of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Headings above the passage, outermost first; empty for text before
    /// the first heading.
    pub heading_path: Vec<String>,
    /// The passage's Markdown, headings excluded.
    pub text: String,
    /// 1-based line of the passage's first line in the body.
    pub line: usize,
    /// The lines of its section that follow it, as context for its last
    /// lines (not searched: they are the next passage's); `\n`-joined.
    pub after: String,
}

impl Passage {
    /// The innermost heading, or `""` for text before the first heading.
    pub fn heading(&self) -> &str {
        self.heading_path.last().map_or("", String::as_str)
    }
}

/// Passages of at most this many words (≈ 250 BPE tokens of English).
pub const PASSAGE_WORDS: usize = 180;

struct Heading {
    level: HeadingLevel,
    text: String,
    /// Byte range of the whole heading line(s).
    start: usize,
    end: usize,
}

/// The text of every heading of `body`, in order.
pub fn heading_texts(body: &str) -> Vec<String> {
    headings(body).into_iter().map(|h| h.text).collect()
}

fn headings(body: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut current: Option<Heading> = None;
    let parsed = line_ending::for_parser(body);
    for (event, range) in Parser::new_ext(&parsed, Options::ENABLE_WIKILINKS).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                current = Some(Heading { level, text: String::new(), start: range.start, end: range.end });
            }
            Event::End(TagEnd::Heading(_)) => out.extend(current.take()),
            Event::Text(t) | Event::Code(t) if current.is_some() => {
                current.as_mut().expect("checked").text.push_str(&t);
            }
            _ => {}
        }
    }
    for h in &mut out {
        h.text = h.text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    out
}

/// The text of the first level-1 heading, if any.
pub fn title(body: &str) -> Option<String> {
    headings(body).into_iter().find(|h| h.level == HeadingLevel::H1).map(|h| h.text).filter(|t| !t.is_empty())
}

/// The body's passages, in document order; blank stretches are skipped. A
/// heading with nothing under it, not even a subsection, is a passage of
/// its own text, so that its words are found (a new child is `# id` alone).
pub fn passages(body: &str, max_words: usize) -> Vec<Passage> {
    let heads = headings(body);
    let line_index = LineIndex::new(body);
    let mut out = Vec::new();
    let mut path: Vec<(HeadingLevel, String)> = Vec::new();
    let mut cursor = 0;
    let mut label: Vec<String> = Vec::new();
    let mut current: Option<(HeadingLevel, usize)> = None;
    for h in heads.iter().map(Some).chain([None]) {
        let end = h.map_or(body.len(), |h| h.start);
        let before = out.len();
        if end > cursor {
            push_windows(body, cursor, end, line_index.line(cursor), &label, max_words, &mut out);
        }
        if let Some((level, line)) = current
            && out.len() == before
            && h.is_none_or(|next| next.level <= level)
            && let Some(text) = label.last().filter(|t| !t.is_empty())
        {
            out.push(Passage { heading_path: label.clone(), text: text.clone(), line, after: String::new() });
        }
        let Some(h) = h else { break };
        current = Some((h.level, line_index.line(h.start)));
        while path.last().is_some_and(|(level, _)| *level >= h.level) {
            path.pop();
        }
        path.push((h.level, h.text.clone()));
        label = path.iter().map(|(_, t)| t.clone()).collect();
        cursor = h.end;
    }
    out
}

/// Lines of the section after a window that a passage carries as its
/// context: the answer a window's last line asks for is in the next window.
const CONTEXT_AFTER: usize = 3;

/// Cuts `body[start..end]`, which starts on line `first_line`, into
/// passages of at most `max_words` words at line boundaries.
fn push_windows(
    body: &str,
    start: usize,
    end: usize,
    first_line: usize,
    label: &[String],
    max_words: usize,
    out: &mut Vec<Passage>,
) {
    let lines: Vec<&str> = line_ending::lines(&body[start..end]).collect();
    let words: Vec<usize> = lines.iter().map(|l| l.split_whitespace().count()).collect();
    // Windows as ranges of `lines`.
    let mut windows: Vec<(usize, usize)> = Vec::new();
    let mut from = 0;
    let mut count = 0;
    for i in 0..lines.len() {
        if count > 0 && count + words[i] > max_words {
            windows.push((from, i));
            from = i;
            count = 0;
            // The next window starts with the line that ended this one, so
            // that a line and the one after it (a question and its answer)
            // are in one passage together, when the two fit in one window.
            let last = i - 1;
            if !lines[last].trim().is_empty() && words[last] + words[i] <= max_words {
                from = last;
                count = words[last];
            }
        }
        count += words[i];
    }
    windows.push((from, lines.len()));
    for (from, to) in windows {
        let text = lines[from..to].concat();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        let skipped = text.len() - text.trim_start().len();
        let line = first_line + from + line_ending::count_breaks(&text[..skipped]);
        let after: Vec<&str> =
            lines[to..].iter().map(|l| l.trim()).filter(|l| !l.is_empty()).take(CONTEXT_AFTER).collect();
        out.push(Passage {
            heading_path: label.to_vec(),
            text: trimmed.to_owned(),
            line,
            after: after.join("\n"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(body: &str, expect: &[(&[&str], &str, usize)]) {
        let got = passages(body, PASSAGE_WORDS);
        let got: Vec<(Vec<&str>, &str, usize)> = got
            .iter()
            .map(|p| (p.heading_path.iter().map(String::as_str).collect(), p.text.as_str(), p.line))
            .collect();
        let expect: Vec<(Vec<&str>, &str, usize)> =
            expect.iter().map(|(h, t, l)| (h.to_vec(), *t, *l)).collect();
        assert_eq!(got, expect);
    }

    #[test]
    fn text_between_headings_is_labelled_with_the_heading_path() {
        check(
            "intro line\n\n# Title\n\nabout\n\n## Setup\nrun `make`\n\n### Linux\napt\n\n## Usage\nuse it\n",
            &[
                (&[], "intro line", 1),
                (&["Title"], "about", 5),
                (&["Title", "Setup"], "run `make`", 8),
                (&["Title", "Setup", "Linux"], "apt", 11),
                (&["Title", "Usage"], "use it", 14),
            ],
        );
    }

    #[test]
    fn hashes_in_code_are_not_headings_and_empty_sections_are_their_heading() {
        check(
            "# A\n\n```sh\n# not a heading\n```\n# B\n\n# C\ntext\n## D\n### E\n",
            &[
                (&["A"], "```sh\n# not a heading\n```", 3),
                (&["B"], "B", 6),
                (&["C"], "text", 9),
                (&["C", "D", "E"], "E", 11),
            ],
        );
        check("# edited\n", &[(&["edited"], "edited", 1)]);
        // A paragraph over a `-` line is a setext heading (a link removed
        // from `- [[child]]` leaves one).
        check("# a\n\nToken quartz.\n- \n", &[(&["a", "Token quartz."], "Token quartz.", 3)]);
    }

    #[test]
    fn setext_and_inline_markup_in_headings() {
        check(
            "Big *Title*\n===\nbody\n## The `serve` command\nx\n",
            &[(&["Big Title"], "body", 3), (&["Big Title", "The serve command"], "x", 5)],
        );
        assert_eq!(title("# メモ帳\n\n- a\n").as_deref(), Some("メモ帳"));
        assert_eq!(title("## only h2\n"), None);
    }

    #[test]
    fn long_sections_are_cut_at_lines_and_lose_no_text() {
        let lines: Vec<String> = (0..100).map(|i| format!("line {i} has five words")).collect();
        let body = format!("## Log\n{}\n", lines.join("\n"));
        let got = passages(&body, 50);
        assert_eq!(got.len(), 11);
        assert!(got.iter().all(|p| p.heading_path == ["Log"] && p.text.split_whitespace().count() <= 50));
        // Each window starts with the line that ended the one before.
        for pair in got.windows(2) {
            assert_eq!(pair[0].text.lines().last(), pair[1].text.lines().next());
        }
        let mut rejoined: Vec<&str> = got.iter().flat_map(|p| p.text.lines()).collect();
        rejoined.dedup();
        assert_eq!(rejoined, lines);
        assert_eq!(got[1].line, 11);
        // Each carries the three lines after it as context; the last none.
        assert_eq!(got[0].after, "line 10 has five words\nline 11 has five words\nline 12 has five words");
        assert_eq!(got[10].after, "");
    }
}

/// Where a section lies in a body: its heading line starts at `start`, its
/// text at `body_start`; it ends where the next heading of the same or a
/// higher level starts (subsections belong to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionSpan {
    pub start: usize,
    pub body_start: usize,
    pub end: usize,
}

/// The outcome of looking a section up by its heading text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionLookup {
    Found(SectionSpan),
    /// No heading has that text; these are the headings there are.
    NotFound {
        headings: Vec<String>,
    },
    /// Several headings have that text: `(line, heading)` of each.
    Ambiguous {
        candidates: Vec<(usize, String)>,
    },
}

/// Where the text under a heading starts: after the line break that ends
/// the heading, which its range may or may not include.
fn after_heading(body: &str, h: &Heading) -> usize {
    let ended =
        body[..h.end].ends_with('\n') || (body[..h.end].ends_with('\r') && !body[h.end..].starts_with('\n'));
    if ended { h.end } else { line_ending::next_line_start(body, h.end) }
}

/// Finds the section whose heading text is `name` (leading `#`s ignored;
/// exact text first, then ignoring letter case).
pub fn find_section(body: &str, name: &str) -> SectionLookup {
    let name = name.trim().trim_start_matches('#').trim();
    let heads = headings(body);
    let mut matches: Vec<usize> = (0..heads.len()).filter(|&i| heads[i].text == name).collect();
    if matches.is_empty() {
        matches = (0..heads.len()).filter(|&i| heads[i].text.eq_ignore_ascii_case(name)).collect();
    }
    match matches.as_slice() {
        [] => SectionLookup::NotFound { headings: heads.iter().map(|h| h.text.clone()).collect() },
        [i] => {
            let h = &heads[*i];
            let body_start = after_heading(body, h);
            let end = heads[i + 1..].iter().find(|n| n.level <= h.level).map_or(body.len(), |n| n.start);
            SectionLookup::Found(SectionSpan {
                start: h.start,
                body_start: body_start.max(h.end).min(end),
                end,
            })
        }
        several => {
            let line_index = LineIndex::new(body);
            SectionLookup::Ambiguous {
                candidates: several
                    .iter()
                    .map(|&i| (line_index.line(heads[i].start), heads[i].text.clone()))
                    .collect(),
            }
        }
    }
}

#[cfg(test)]
mod section_tests {
    use super::*;

    const DOC: &str = "# Title\nintro\n## Setup\nrun make\n### Linux\napt\n## Usage\nuse it\n## Notes\n";

    fn text(name: &str) -> (String, String) {
        let SectionLookup::Found(span) = find_section(DOC, name) else {
            panic!("{name}: {:?}", find_section(DOC, name))
        };
        (DOC[span.start..span.end].to_owned(), DOC[span.body_start..span.end].to_owned())
    }

    #[test]
    fn a_section_runs_to_the_next_heading_of_its_level() {
        assert_eq!(
            text("Setup"),
            ("## Setup\nrun make\n### Linux\napt\n".into(), "run make\n### Linux\napt\n".into())
        );
        assert_eq!(text("## usage").1, "use it\n");
        assert_eq!(text("Linux").1, "apt\n");
        assert_eq!(text("Notes"), ("## Notes\n".into(), String::new()));
        assert_eq!(
            text("Title").1,
            "intro\n## Setup\nrun make\n### Linux\napt\n## Usage\nuse it\n## Notes\n"
        );
    }

    #[test]
    fn missing_and_ambiguous_sections_say_what_there_is() {
        assert_eq!(
            find_section(DOC, "Deploy"),
            SectionLookup::NotFound {
                headings: vec![
                    "Title".into(),
                    "Setup".into(),
                    "Linux".into(),
                    "Usage".into(),
                    "Notes".into()
                ]
            }
        );
        assert_eq!(
            find_section("## Log\na\n## Log\nb\n", "Log"),
            SectionLookup::Ambiguous { candidates: vec![(1, "Log".into()), (3, "Log".into())] }
        );
    }
}

/// A body cut at its top-level sections: the sections at the shallowest
/// heading level below the title (usually `##`), each with its
/// subsections, and the preamble before the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopSections {
    pub preamble: String,
    /// `(heading text, body under the heading)`.
    pub sections: Vec<(String, String)>,
    /// Each section's whole text, heading line included: with the
    /// preamble, they make up the body exactly.
    pub raw: Vec<String>,
}

pub fn top_sections(body: &str) -> TopSections {
    let heads = headings(body);
    // A lone first-level title stays in the preamble; split below it.
    let titles = heads.iter().filter(|h| h.level == HeadingLevel::H1).count();
    let level = heads.iter().map(|h| h.level).filter(|l| titles != 1 || *l != HeadingLevel::H1).min();
    let Some(level) = level else {
        return TopSections { preamble: body.to_owned(), sections: vec![], raw: vec![] };
    };
    let tops: Vec<&Heading> = heads.iter().filter(|h| h.level == level).collect();
    let preamble = body[..tops.first().map_or(body.len(), |h| h.start)].to_owned();
    let sections = tops
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let end = tops.get(i + 1).map_or(body.len(), |n| n.start);
            let body_start = after_heading(body, h);
            (h.text.clone(), body[body_start.max(h.end).min(end)..end].to_owned())
        })
        .collect();
    let raw = tops
        .iter()
        .enumerate()
        .map(|(i, h)| body[h.start..tops.get(i + 1).map_or(body.len(), |n| n.start)].to_owned())
        .collect();
    TopSections { preamble, sections, raw }
}

#[cfg(test)]
mod top_section_tests {
    use super::*;

    #[test]
    fn a_last_heading_ending_in_a_wide_character_is_cut_at_a_boundary() {
        // Found by the links_sections fuzz target.
        assert_eq!(top_sections("# Doc\n## Café").sections, vec![("Café".to_owned(), String::new())]);
        assert!(matches!(find_section("# Café", "Café"), SectionLookup::Found(_)));
    }

    #[test]
    fn cuts_below_the_title_and_keeps_subsections_inside() {
        let got = top_sections("# Doc\nintro\n## A\na1\n### A.1\na2\n## B\nb\n");
        assert_eq!(got.preamble, "# Doc\nintro\n");
        assert_eq!(got.raw, ["## A\na1\n### A.1\na2\n", "## B\nb\n"]);
        assert_eq!(
            got.sections,
            vec![("A".to_owned(), "a1\n### A.1\na2\n".to_owned()), ("B".to_owned(), "b\n".to_owned())]
        );
        assert_eq!(top_sections("no headings\n").sections, vec![]);
        assert_eq!(top_sections("# One\n# Two\nx\n").sections.len(), 2);
        assert_eq!(top_sections("# Only a title\ntext\n").sections, vec![]);
    }
}
