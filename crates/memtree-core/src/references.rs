//! References: standard Markdown links from one document to another
//! (`[label](../other/doc.md#heading)`). Unlike `[[id]]` links they are not
//! tree edges: any document may reference any other, and a reference never
//! creates or prunes anything.
//!
//! A reference's path is relative to the folder of the document that holds
//! it, as every Markdown viewer and Obsidian read it: in `projects/silica`,
//! `notes.md` is `projects/notes` and `../root.md` is `root`.

use std::borrow::Cow;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag};

use crate::doc_id::DocId;
use crate::line_ending;

/// A reference resolved to a document id, with the heading it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub target: DocId,
    /// The part after `#`, percent-decoded.
    pub anchor: Option<String>,
}

/// Whether a link destination is a path (no scheme, not only an anchor).
pub fn is_local(dest: &str) -> bool {
    !has_scheme(dest) && !dest.starts_with('#') && !dest.is_empty() && !dest.starts_with("//")
}

/// Percent-decoding, leaving anything that does not decode to UTF-8 as is.
pub fn decode(s: &str) -> Cow<'_, str> {
    if !s.contains('%') {
        return Cow::Borrowed(s);
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_or(Cow::Borrowed(s), Cow::Owned)
}

/// A path as a link destination carries it: spaces, brackets and the
/// characters that would end or break the destination percent-encoded.
pub fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            ' ' | '(' | ')' | '<' | '>' | '%' | '#' | '?' | '\\' | '[' | ']' | '"' => {
                out.push_str(&format!("%{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether a link destination points at a Markdown file of this store:
/// no scheme, not only an anchor, and a path ending in `.md`.
pub fn is_local_markdown(dest: &str) -> bool {
    let path = dest.split(['#', '?']).next().unwrap_or_default();
    !has_scheme(dest) && !path.is_empty() && decode(path).to_ascii_lowercase().ends_with(".md")
}

/// What `dest`, written in document `from`, points at; `None` when it
/// leaves the store or names no valid id.
pub fn resolve(from: &DocId, dest: &str) -> Option<Reference> {
    let (path, anchor) = match dest.split_once('#') {
        Some((p, a)) => (p, Some(decode(a).into_owned()).filter(|a| !a.is_empty())),
        None => (dest, None),
    };
    let path = path.split('?').next().unwrap_or_default();
    let path = decode(path);
    let stem = path.strip_suffix(".md").or_else(|| path.strip_suffix(".MD"))?;
    let folder = from.as_str().rsplit_once('/').map_or("", |(f, _)| f);
    let target = DocId::parse(&join_path(folder, stem)?).ok()?;
    Some(Reference { target, anchor })
}

/// The path to write in document `from` to reference `to`.
pub fn relative_path(from: &DocId, to: &DocId) -> String {
    relative_to(from, &format!("{to}.md"))
}

/// The path to write in document `from` to reach the file at `path`
/// (`/`-separated, from the store's folder).
pub fn relative_to(from: &DocId, path: &str) -> String {
    let mut folder: Vec<&str> = from.segments().collect();
    folder.pop();
    let target: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let Some((file, target_folder)) = target.split_last() else { return String::new() };
    let common = folder.iter().zip(target_folder).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; folder.len() - common];
    parts.extend(&target_folder[common..]);
    parts.push(file);
    parts.join("/")
}

/// `path` (`/`-separated) taken from `folder`: `.` and `..` resolved, a
/// leading `/` from the top; `None` when it climbs above the top.
pub fn join_path(folder: &str, path: &str) -> Option<String> {
    let mut segments: Vec<&str> = if path.starts_with('/') {
        Vec::new()
    } else {
        folder.split('/').filter(|s| !s.is_empty()).collect()
    };
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                segments.pop()?;
            }
            part => segments.push(part),
        }
    }
    Some(segments.join("/"))
}

/// Every local Markdown link of `body` (outside code), each with the byte
/// range of its destination as written, in order.
pub fn destinations(body: &str) -> Vec<(String, std::ops::Range<usize>)> {
    destinations_where(body, is_local_markdown)
}

/// The destinations of `body`'s inline links and images (outside code)
/// that `keep` accepts, each with its byte range as written, in order.
pub fn destinations_where(body: &str, keep: impl Fn(&str) -> bool) -> Vec<(String, std::ops::Range<usize>)> {
    let parsed = line_ending::for_parser(body);
    let mut found = Vec::new();
    for (event, range) in Parser::new_ext(&parsed, Options::ENABLE_WIKILINKS).into_offset_iter() {
        let (Event::Start(Tag::Link { link_type: LinkType::Inline, dest_url, .. })
        | Event::Start(Tag::Image { link_type: LinkType::Inline, dest_url, .. })) = event
        else {
            continue;
        };
        if !keep(&dest_url) {
            continue;
        }
        // The destination follows the label's `](`, optionally in `<…>`.
        let written = &body[range.clone()];
        let Some(open) = written.rfind("](") else { continue };
        let after = open + 2;
        let rest = &written[after..];
        let skip = rest.len() - rest.trim_start().len() + usize::from(rest.trim_start().starts_with('<'));
        let start = range.start + after + skip;
        if body[start..].starts_with(dest_url.as_ref()) {
            let end = start + dest_url.len();
            found.push((dest_url.into_string(), start..end));
        }
    }
    found
}

/// `body` with each local link destination replaced by what `rewrite`
/// answers for it (`None` keeps it). Every other byte stays.
pub fn rewrite_destinations(body: &str, rewrite: impl FnMut(&str) -> Option<String>) -> String {
    rewrite_found(body, destinations(body), rewrite)
}

/// `body` with each of `found` (from [`destinations_where`]) replaced by
/// what `rewrite` answers for it (`None` keeps it).
pub fn rewrite_found(
    body: &str,
    found: Vec<(String, std::ops::Range<usize>)>,
    mut rewrite: impl FnMut(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(body.len());
    let mut cursor = 0;
    for (dest, range) in found {
        if let Some(new) = rewrite(&dest) {
            out.push_str(&body[cursor..range.start]);
            out.push_str(&new);
            cursor = range.end;
        }
    }
    out.push_str(&body[cursor..]);
    out
}

/// The destination to write for `reference` from document `from`.
pub fn destination(from: &DocId, reference: &Reference) -> String {
    let path = relative_path(from, &reference.target);
    match &reference.anchor {
        Some(anchor) => format!("{path}#{}", encode_path(anchor)),
        None => path,
    }
}

/// Whether `anchor` points at `heading`: its text (letter case aside), or
/// the slug GitHub and most viewers make of it (`Open questions` →
/// `open-questions`).
pub fn anchor_matches(anchor: &str, heading: &str) -> bool {
    let slug: String = heading
        .trim()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .flat_map(char::to_lowercase)
        .collect();
    anchor.trim().eq_ignore_ascii_case(heading.trim()) || anchor.to_lowercase() == slug
}

fn has_scheme(dest: &str) -> bool {
    let Some((scheme, _)) = dest.split_once(':') else { return false };
    scheme.len() > 1 && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> DocId {
        DocId::parse(s).unwrap()
    }

    fn target(from: &str, dest: &str) -> Option<String> {
        resolve(&id(from), dest).map(|r| r.target.to_string())
    }

    #[test]
    fn paths_are_relative_to_the_document_s_folder() {
        assert_eq!(target("projects/silica", "notes.md").as_deref(), Some("projects/notes"));
        assert_eq!(target("projects/silica", "../root.md").as_deref(), Some("root"));
        assert_eq!(target("projects/silica", "./a/b.md").as_deref(), Some("projects/a/b"));
        assert_eq!(target("root", "projects/silica.md").as_deref(), Some("projects/silica"));
        assert_eq!(target("a/b/c", "/x/y.md").as_deref(), Some("x/y"), "a leading / is the store");
        assert_eq!(target("a/b", "%2E%2E/q.md").as_deref(), Some("q"));
    }

    #[test]
    fn what_leaves_the_store_or_is_no_id_resolves_to_nothing() {
        assert_eq!(target("root", "../outside.md"), None);
        assert_eq!(target("a/b", "../../etc/passwd.md"), None);
        assert_eq!(target("root", "My%20Note.md"), None, "a space is not in an id");
        assert_eq!(target("root", "image.png"), None);
    }

    #[test]
    fn anchors_are_kept_decoded() {
        let r = resolve(&id("root"), "a.md#Design%20notes").unwrap();
        assert_eq!(r.anchor.as_deref(), Some("Design notes"));
        assert_eq!(destination(&id("x/y"), &r), "../a.md#Design%20notes");
    }

    #[test]
    fn only_local_markdown_counts() {
        assert!(is_local_markdown("a.md"));
        assert!(is_local_markdown("../A%20b.md#x"));
        assert!(!is_local_markdown("https://example.com/a.md"));
        assert!(!is_local_markdown("mailto:x@y.md"));
        assert!(!is_local_markdown("#heading"));
        assert!(!is_local_markdown("pic.png"));
    }

    #[test]
    fn anchors_match_a_heading_s_text_or_slug() {
        assert!(anchor_matches("Open questions", "Open questions"));
        assert!(anchor_matches("open QUESTIONS", "Open questions"));
        assert!(anchor_matches("open-questions", "Open questions"));
        assert!(!anchor_matches("what-s-next", "What's next"), "GitHub drops the apostrophe");
        assert!(anchor_matches("whats-next", "What's next"));
        assert!(!anchor_matches("goals", "Open questions"));
    }

    #[test]
    fn relative_paths_round_trip() {
        for (from, to) in [("root", "a"), ("a/b/c", "a/x"), ("a/b", "c/d/e"), ("p/q", "p/r"), ("x", "y/z")] {
            let path = relative_path(&id(from), &id(to));
            assert_eq!(target(from, &path).as_deref(), Some(to), "{from} → {to}: {path}");
        }
        assert_eq!(relative_path(&id("a/b/c"), &id("root")), "../../root.md");
    }

    #[test]
    fn destinations_outside_code_are_found_and_rewritten_in_place() {
        let body = "See [the plan](plan.md#Goals) and [site](https://x.io/a.md).\n\n`[no](code.md)`\n\n\
                    ```\n[no](fenced.md)\n```\n[angle](<b.md>) [[child]]\n";
        let found: Vec<String> = destinations(body).into_iter().map(|(d, _)| d).collect();
        assert_eq!(found, ["plan.md#Goals", "b.md"]);
        let out = rewrite_destinations(body, |d| (d == "b.md").then(|| "../b.md".to_owned()));
        assert_eq!(out, body.replace("<b.md>", "<../b.md>"));
    }
}
