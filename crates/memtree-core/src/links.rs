//! `[[id]]` links found by a real Markdown parser.
//!
//! pulldown-cmark reports `[[id]]` and `[[id|label]]` as wiki links and never
//! looks for links inside code spans or code blocks, so `` `[[x]]` `` stays text.

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag};

use crate::doc_id::{DocId, IdError};

/// The links of one document body, in order of first appearance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    /// Valid ids, each once, in the order they first appear.
    pub ids: Vec<DocId>,
    /// Wiki links whose target is not a valid id, as written.
    pub invalid: Vec<InvalidLink>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidLink {
    pub target: String,
    pub error: IdError,
}

/// Finds every wiki link in a Markdown body (front-matter already removed).
pub fn parse_links(body: &str) -> Links {
    let mut links = Links::default();
    let mut seen = std::collections::HashSet::new();
    for event in Parser::new_ext(body, Options::ENABLE_WIKILINKS) {
        let Event::Start(Tag::Link { link_type: LinkType::WikiLink { .. }, dest_url, .. }) = event else {
            continue;
        };
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
/// code); a line left holding only a list marker goes with them.
pub fn remove_links_to(body: &str, id: &DocId) -> String {
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    for (event, range) in Parser::new_ext(body, Options::ENABLE_WIKILINKS).into_offset_iter() {
        if let Event::Start(Tag::Link { link_type: LinkType::WikiLink { .. }, dest_url, .. }) = event
            && dest_url.as_ref() == id.as_str()
        {
            ranges.push(range);
        }
    }
    let mut out = String::with_capacity(body.len());
    let mut cursor = 0;
    for range in &ranges {
        out.push_str(&body[cursor..range.start]);
        cursor = range.end;
    }
    out.push_str(&body[cursor..]);
    if ranges.is_empty() {
        return out;
    }
    // Lines the removal emptied (only a list marker and spaces are left).
    let emptied = |line: &str| {
        let t = line.trim();
        let marker = t.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start_matches(['.', ')']);
        !line.trim().is_empty() && (matches!(t, "-" | "*" | "+") || (marker.is_empty() && t != marker))
    };
    let original: std::collections::HashSet<&str> = body.lines().filter(|l| emptied(l)).collect();
    out.split_inclusive('\n')
        .filter(|line| !emptied(line) || original.contains(line.trim_end_matches('\n')))
        .collect()
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
    }
}
