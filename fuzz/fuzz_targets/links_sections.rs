//! Markdown bodies through `memtree_core::links` (`parse_links`,
//! `remove_links_to`), `memtree_core::references` and `memtree_core::sections` (`title`, `passages`,
//! `find_section`, `top_sections`).
//!
//! Input: UTF-8 text. When its first byte is ASCII, that byte sets the
//! passage size (`max_words`, 1..=64) and the rest is the body; otherwise the
//! whole input is the body and `max_words` is `PASSAGE_WORDS`.
//!
//! Findings already reported are tolerated unless `FUZZ_STRICT=1` (see
//! `check_links`, `joins_syntax` and the end of this file); saved examples
//! are in `fuzz/regressions/links_sections/`.
#![no_main]

use std::collections::HashSet;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use memtree_core::DocId;
use memtree_core::line_ending;
use memtree_core::links::{link_ranges, parse_links, remove_links_to};
use memtree_core::references;
use memtree_core::sections::{PASSAGE_WORDS, SectionLookup, find_section, passages, title, top_sections};

/// Ids removed per input, at most (each removal re-parses the body).
const MAX_REMOVALS: usize = 6;
/// Headings looked up per input, at most.
const MAX_LOOKUPS: usize = 12;

fn normalized(heading: &str) -> bool {
    heading == heading.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn check_links(body: &str) {
    let links = parse_links(body);
    let mut seen = HashSet::new();
    for id in &links.ids {
        // Every link is a valid id, listed once.
        assert_eq!(DocId::parse(id.as_str()).as_ref(), Ok(id));
        assert!(seen.insert(id.clone()), "{id} listed twice");
        // An id is plain ASCII with nothing to unescape: it is in the text.
        assert!(body.contains(id.as_str()), "link {id} is not in the body");
    }
    for bad in &links.invalid {
        assert_eq!(DocId::parse(&bad.target), Err(bad.error.clone()), "invalid link {:?}", bad.target);
    }

    // Removing links to an id that is not linked changes nothing.
    let absent = DocId::parse("zz-not-linked-zz").expect("valid");
    if !links.ids.contains(&absent) {
        assert_eq!(remove_links_to(body, &absent), body);
    }
    for id in links.ids.iter().take(MAX_REMOVALS) {
        let removed = remove_links_to(body, id);
        assert!(removed.len() < body.len(), "removing {id} removed nothing");
        // Known: cutting text out can change the block or inline structure
        // around it (see `joins_syntax`; a line left blank or re-indented
        // turns what follows into an indented code block, `[f]:[[c]] [[f]]`
        // becomes a link reference definition, `[[x[[d]]]]` becomes `[[x]]`,
        // an HTML block's extent changes), so a link to `id` can be left,
        // other links lost or made. Reported. Without `FUZZ_STRICT=1`, the
        // first two checks below run only when no syntax joins and no line
        // is dropped, and the rest not at all.
        if !*STRICT && (joins_syntax(body, id) || removed.lines().count() != body.lines().count()) {
            continue;
        }
        let after = parse_links(&removed);
        assert!(!after.ids.contains(id), "a link to {id} is left in {removed:?}");
        // Removing again is a no-op.
        assert_eq!(remove_links_to(&removed, id), removed);
        if !*STRICT {
            continue;
        }
        for other in links.ids.iter().filter(|o| *o != id) {
            assert!(after.ids.contains(other), "removing {id} lost the link to {other}: {removed:?}");
        }
        for new in &after.ids {
            assert!(links.ids.contains(new), "removing {id} made a link to {new}: {removed:?}");
        }
        for bad in &after.invalid {
            assert!(
                links.invalid.iter().any(|b| b.target == bad.target),
                "removing {id} made the invalid link {:?}: {removed:?}",
                bad.target
            );
        }
    }
}

static STRICT: LazyLock<bool> = LazyLock::new(|| std::env::var_os("FUZZ_STRICT").is_some_and(|v| v == "1"));

fn joins_syntax(body: &str, id: &DocId) -> bool {
    link_ranges(body, id).into_iter().any(|range| {
        let start = body[..range.start].rfind("\n\n").map_or(0, |n| n + 2);
        let end = body[range.end..].find("\n\n").map_or(body.len(), |n| range.end + n);
        (body[start..range.start].contains('[')
            && (body[range.end..end].contains(']') || body[start..range.start].contains("]:")))
            || body[..range.start].ends_with('`')
            || body[range.end..].starts_with('`')
    })
}

fn check_passages(body: &str, max_words: usize) {
    let got = passages(body, max_words);
    let lines = line_ending::count_breaks(body) + 1;
    let mut last_line = 0;
    let mut words_out = 0;
    let mut previous_last: Option<&str> = None; // The text of the passage before.
    for p in &got {
        assert!(!p.text.is_empty() && p.text == p.text.trim(), "{p:?}");
        assert!(p.line >= 1 && p.line <= lines, "{p:?}");
        assert!(p.line >= last_line, "passages out of order: {got:?}");
        last_line = p.line;
        assert!(p.heading_path.len() <= 6, "{p:?}");
        assert!(p.heading_path.iter().all(|h| normalized(h)), "{p:?}");
        assert_eq!(p.heading(), p.heading_path.last().map_or("", String::as_str));
        if p.text == p.heading() {
            continue; // A heading with nothing under it: a passage of its text.
        }
        words_out += p.text.split_whitespace().count();
        // A window may start with the line that ended the one before: those
        // words are the body's once.
        let first: Vec<&str> = line_ending::lines(&p.text).next().unwrap_or("").split_whitespace().collect();
        if let Some(previous) = previous_last
            && previous.split_whitespace().rev().take(first.len()).eq(first.iter().rev().copied())
        {
            words_out -= first.len();
        }
        previous_last = Some(p.text.as_str());
        // The text is the body's own, starting on the passage's line (lines
        // counted by `\n`).
        let line_start = line_ending::lines(body).take(p.line - 1).map(str::len).sum::<usize>();
        let line_end = line_ending::next_line_start(body, line_start);
        assert!(
            body[line_start..line_end]
                .char_indices()
                .any(|(at, _)| body[line_start + at..].starts_with(&p.text)),
            "passage not found at line {}: {p:?}",
            p.line
        );
        // Over the word limit only when a single line is.
        if p.text.split_whitespace().count() > max_words {
            assert_eq!(p.text.lines().filter(|l| !l.trim().is_empty()).count(), 1, "{p:?}");
        }
    }
    assert!(words_out <= body.split_whitespace().count());
}

fn check_sections(body: &str) {
    if let Some(t) = title(body) {
        assert!(!t.is_empty() && normalized(&t), "{t:?}");
    }

    // No heading text holds a newline, so this name is never found.
    let headings = match find_section(body, "no\nsuch\nheading") {
        SectionLookup::NotFound { headings } => headings,
        other => panic!("an impossible name was found: {other:?}"),
    };
    assert!(headings.iter().all(|h| normalized(h)), "{headings:?}");
    let mut looked_up = HashSet::new();
    for h in headings.iter().filter(|h| looked_up.insert(h.as_str())).take(MAX_LOOKUPS) {
        let exact = headings.iter().filter(|o| *o == h).count();
        match find_section(body, h) {
            SectionLookup::Found(span) => {
                assert!(
                    span.start <= span.body_start && span.body_start <= span.end && span.end <= body.len()
                );
                assert!(body.get(span.start..span.end).is_some(), "{span:?} is not on char boundaries");
                assert!(body.get(span.body_start..span.end).is_some(), "{span:?} is not on char boundaries");
                if !h.starts_with('#') {
                    assert_eq!(exact, 1, "{h:?} found once but listed {exact} times");
                }
            }
            SectionLookup::Ambiguous { candidates } => {
                assert!(candidates.len() >= 2);
                assert!(candidates.windows(2).all(|w| w[0].0 <= w[1].0), "{candidates:?}");
                if !h.starts_with('#') {
                    assert_eq!(candidates.len(), exact, "{h:?}: {candidates:?}");
                }
            }
            SectionLookup::NotFound { .. } => {
                // Only a name the lookup trims (a leading `#`) can miss.
                assert!(h.starts_with('#'), "listed heading {h:?} not found");
            }
        }
    }

    let tops = top_sections(body);
    assert!(body.starts_with(&tops.preamble));
    if headings.is_empty() {
        assert_eq!(tops.preamble, body);
        assert!(tops.sections.is_empty());
    }
    let mut rest = &body[tops.preamble.len()..];
    for (heading, text) in &tops.sections {
        assert!(normalized(heading));
        assert!(headings.contains(heading), "{heading:?} is not a heading");
        // Sections follow each other, each text taken from the body.
        let at = rest.find(text.as_str()).unwrap_or_else(|| panic!("section {heading:?} text not in order"));
        rest = &rest[at + text.len()..];
    }
}

/// References (standard links to `.md` files): each destination found is
/// the text at its range; a reference written back from its resolution
/// resolves to the same document; rewriting nothing changes nothing.
fn check_references(body: &str) {
    let from = DocId::parse("a/b").expect("valid");
    for (dest, range) in references::destinations(body) {
        assert_eq!(body.get(range.clone()), Some(dest.as_str()), "destination {dest:?} at {range:?}");
        if let Some(r) = references::resolve(&from, &dest) {
            let written = references::destination(&from, &r);
            let again = references::resolve(&from, &written).map(|a| a.target);
            assert_eq!(again.as_ref(), Some(&r.target), "{dest:?} written back as {written:?}");
        }
    }
    assert_eq!(references::rewrite_destinations(body, |_| None), body);
    let rewritten = references::rewrite_destinations(body, |d| Some(format!("x/{d}")));
    assert!(rewritten.len() >= body.len());
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (max_words, body) = match data.first() {
        Some(b) if b.is_ascii() => (usize::from(*b % 64) + 1, &text[1..]),
        _ => (PASSAGE_WORDS, text),
    };
    check_links(body);
    check_references(body);
    check_passages(body, max_words);
    check_sections(body);
});
