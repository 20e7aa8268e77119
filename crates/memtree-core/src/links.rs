//! `[[id]]` links found by a real Markdown parser.
//!
//! pulldown-cmark reports `[[id]]` and `[[id|label]]` as wiki links and never
//! looks for links inside code spans or code blocks, so `` `[[x]]` `` stays text.

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag};

use crate::doc_id::{DocId, IdError};
use crate::line_ending;

/// The links of one document body, in order of first appearance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    /// Valid ids, each once, in the order they first appear.
    pub ids: Vec<DocId>,
    /// Wiki links whose target is not a valid id, as written.
    pub invalid: Vec<InvalidLink>,
    /// Standard links to Markdown files of the store (references, not
    /// tree edges), each destination once, as written.
    pub references: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidLink {
    pub target: String,
    pub error: IdError,
}

/// The valid ids a whole document's text links, in order (its
/// front-matter set aside).
pub fn children(text: &str) -> Vec<DocId> {
    parse_links(crate::front_matter::split(text).body).ids
}

/// Finds every wiki link in a Markdown body (front-matter already removed).
pub fn parse_links(body: &str) -> Links {
    let mut links = Links::default();
    let mut seen = std::collections::HashSet::new();
    let mut seen_references = std::collections::HashSet::new();
    for event in Parser::new_ext(&line_ending::for_parser(body), Options::ENABLE_WIKILINKS) {
        // An image of a Markdown file is an embed: a reference too. An
        // Obsidian embed `![[x]]` is not a tree edge.
        let (wiki, dest_url) = match event {
            Event::Start(Tag::Link { link_type, dest_url, .. }) => {
                (matches!(link_type, LinkType::WikiLink { .. }), dest_url)
            }
            Event::Start(Tag::Image { link_type, dest_url, .. })
                if !matches!(link_type, LinkType::WikiLink { .. }) =>
            {
                (false, dest_url)
            }
            _ => continue,
        };
        if !wiki {
            if crate::references::is_local_markdown(&dest_url) && seen_references.insert(dest_url.clone()) {
                links.references.push(dest_url.into_string());
            }
            continue;
        }
        match DocId::parse(&dest_url) {
            Ok(id) => {
                if seen.insert(id.clone()) {
                    links.ids.push(id);
                }
            }
            Err(error) => links.invalid.push(InvalidLink { target: dest_url.into_string(), error }),
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(body: &str, expect: &[&str]) {
        let links = parse_links(body);
        let got: Vec<&str> = links.ids.iter().map(DocId::as_str).collect();
        assert_eq!(got, expect, "{body:?}");
        assert!(links.invalid.is_empty(), "{:?}", links.invalid);
    }

    #[test]
    fn finds_links_in_order_once_each() {
        check("- [[b]]\n- [[a]] and [[b]]\n", &["b", "a"]);
        check("See [[projects/silica|the Silica notes]].", &["projects/silica"]);
        check("# Title\n\n> quoted [[q]]\n\n1. [[n]]\n", &["q", "n"]);
        check("**[[bold]]** _[[em]]_", &["bold", "em"]);
    }

    #[test]
    fn code_is_text() {
        check("`[[span]]` and ``[[also]]``", &[]);
        check("```\n[[fenced]]\n```\n", &[]);
        check("~~~md\n[[tilde]]\n~~~\n", &[]);
        check("para\n\n    [[indented]]\n", &[]);
        check("```\n[[in]]\n```\n[[out]]\n", &["out"]);
    }

    #[test]
    fn escaped_and_plain_brackets_are_not_links() {
        check(r"\[\[nope]] [single](x) [ [spaced] ]", &[]);
    }

    #[test]
    fn invalid_targets_are_reported() {
        let links = parse_links("[[ok]] [[my note]] [[../etc]]");
        assert_eq!(links.ids, [DocId::parse("ok").unwrap()]);
        let targets: Vec<&str> = links.invalid.iter().map(|l| l.target.as_str()).collect();
        assert_eq!(targets, ["my note", "../etc"]);
    }
}

/// `body` without its links to `id` (`[[id]]` and `[[id|label]]`, outside
/// code); a line the removal leaves holding only a list marker goes with
/// them. Every other byte stays, line endings included.
pub fn remove_links_to(body: &str, id: &DocId) -> String {
    let ranges = link_ranges(body, id);
    if ranges.is_empty() {
        return body.to_owned();
    }
    let mut out = String::with_capacity(body.len());
    let mut next = ranges.iter().peekable();
    let mut start = 0;
    for line in line_ending::lines(body) {
        let end = start + line.len();
        // The line without the parts of removed links that lie on it.
        let (mut kept, mut cursor, mut touched) = (String::new(), start, false);
        while let Some(range) = next.peek() {
            if range.start >= end {
                break;
            }
            let cut = range.start.max(cursor)..range.end.min(end);
            kept.push_str(&body[cursor..cut.start]);
            cursor = cut.end;
            touched = true;
            if range.end > end {
                break; // The link goes on over the next line.
            }
            next.next();
        }
        kept.push_str(&body[cursor.min(end)..end]);
        if !(touched
            && only_list_marker(line_ending::content(&kept))
            && !only_list_marker(line_ending::content(line)))
        {
            out.push_str(&kept);
        }
        start = end;
    }
    out
}

/// The byte ranges of the wiki links to `id` in `body`, outside code.
pub fn link_ranges(body: &str, id: &DocId) -> Vec<std::ops::Range<usize>> {
    Parser::new_ext(&line_ending::for_parser(body), Options::ENABLE_WIKILINKS)
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link { link_type: LinkType::WikiLink { .. }, dest_url, .. })
                if dest_url.as_ref() == id.as_str() =>
            {
                Some(range)
            }
            _ => None,
        })
        .collect()
}

/// Whether a line is a list item with nothing in it: `-`, `*`, `+` or a
/// number with `.` or `)`, possibly in a block quote.
fn only_list_marker(line: &str) -> bool {
    let t = line.trim_start_matches(|c: char| c == '>' || c.is_whitespace()).trim_end();
    let number = t.strip_suffix(['.', ')']).filter(|n| (1..=9).contains(&n.len()));
    matches!(t, "-" | "*" | "+") || number.is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod removal_tests {
    use super::*;

    fn check(body: &str, expect: &str) {
        assert_eq!(remove_links_to(body, &DocId::parse("a").unwrap()), expect, "{body:?}");
    }

    #[test]
    fn removes_links_and_the_list_items_they_leave_empty() {
        check("- [[a]]\n- [[b]]\n", "- [[b]]\n");
        check("* [[a|Alpha]]\n1. [[a]]\ntext [[a]] and [[b]]\n", "text  and [[b]]\n");
        check("`[[a]]` stays\n```\n[[a]]\n```\n", "`[[a]]` stays\n```\n[[a]]\n```\n");
        check("- \n- [[b]]\n", "- \n- [[b]]\n");
        check("no links\n", "no links\n");
        check("> - [[a]]\n> - [[b]]\n", "> - [[b]]\n");
    }

    #[test]
    fn only_the_link_goes_whatever_the_line_endings() {
        // Lines of digits and markers that the removal does not touch stay,
        // in code and out of it.
        let body = "# par\r\n\r\nYear:\r\n2024\r\n```\r\n1\r\n2\r\n-\r\n```\r\n- [[a]]\r\nend\r\n";
        check(body, &body.replace("- [[a]]\r\n", ""));
        let cr = body.replace("\r\n", "\r");
        check(&cr, &cr.replace("- [[a]]\r", ""));
        check("1.\n2)\n- [[a]]\r\n3. [[a]]\rtail\n", "1.\n2)\ntail\n");
        check("x [[a|two\nlines]] y\n", "x  y\n");
    }
}
