//! The outline (the spec's "L0 index"): a table of contents of the memory
//! small enough to give an agent every session — the tree from root with
//! one line per document, within a byte budget. Levels fill breadth first,
//! so the top of the tree is always there; what does not fit is folded
//! into a count.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::doc_id::DocId;

/// What the outline shows of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub summary: String,
    pub children: Vec<DocId>,
}

/// Room kept on each line for a ` (+N more)` suffix added later.
const SUFFIX_ROOM: usize = 12;
/// Room kept for the `(+N more at the top level)` line.
const TOP_FOLD_ROOM: usize = 32;

/// Builds the index: `entry(id)` gives a document's summary and children
/// (`None` when it does not exist); only the documents shown are asked for.
pub fn render(budget: usize, mut entry: impl FnMut(&DocId) -> Option<Entry>) -> String {
    let root = DocId::root();
    let Some(root_entry) = entry(&root) else {
        return String::new();
    };
    let header = format!("root: {}\n", root_entry.summary);
    let mut used = header.len() + TOP_FOLD_ROOM;
    let mut shown: HashMap<DocId, (usize, Entry)> = HashMap::new();
    let mut frontier: Vec<DocId> = root_entry.children.clone();
    shown.insert(root.clone(), (0, root_entry));
    let mut depth = 1;
    'levels: while !frontier.is_empty() {
        let mut next = Vec::new();
        for id in frontier {
            if shown.contains_key(&id) {
                continue; // A broken store may link a document twice.
            }
            let Some(e) = entry(&id) else { continue };
            let cost = 2 * depth + line(&id, &e.summary).len() + SUFFIX_ROOM;
            if used + cost > budget {
                break 'levels;
            }
            used += cost;
            next.extend(e.children.iter().cloned());
            shown.insert(id, (depth, e));
        }
        frontier = next;
        depth += 1;
    }
    let mut out = header;
    let mut top_hidden = 0;
    let mut stack: Vec<(&DocId, usize)> = vec![(&root, 0)];
    while let Some((id, depth)) = stack.pop() {
        let (_, e) = &shown[id];
        let visible: Vec<&DocId> =
            e.children.iter().filter(|c| shown.get(*c).is_some_and(|(d, _)| *d == depth + 1)).collect();
        let hidden = e.children.len() - visible.len();
        if depth > 0 {
            out.extend(std::iter::repeat_n(' ', 2 * (depth - 1)));
            out.push_str(&line(id, &e.summary));
            if hidden > 0 {
                let _ = write!(out, " (+{hidden} more)");
            }
            out.push('\n');
        } else {
            top_hidden = hidden;
        }
        stack.extend(visible.into_iter().rev().map(|c| (c, depth + 1)));
    }
    if top_hidden > 0 {
        let _ = writeln!(out, "(+{top_hidden} more at the top level)");
    }
    out
}

/// A line of the index; a summary that only repeats the id (the title of a
/// document created through a link) is left out.
fn line(id: &DocId, summary: &str) -> String {
    if summary.is_empty() || summary == id.as_str() {
        format!("- {id}")
    } else {
        format!("- {id}: {summary}")
    }
}

/// A document's one-line summary: its front-matter `summary`, else its
/// first sentence.
pub fn summary(split: &crate::front_matter::Split<'_>) -> String {
    split
        .yaml
        .and_then(|y| crate::front_matter::FrontMatter::parse(y).ok())
        .and_then(|fm| fm.summary)
        .map_or_else(|| first_sentence(split.body), |s| shorten(&s, 80))
}

/// A one-line summary of a document body: its first line of text that is
/// neither a heading nor only links, without Markdown decoration, at most
/// about 80 characters; else its title.
pub fn first_sentence(body: &str) -> String {
    let only_links = |l: &str| {
        let mut rest = l.trim_start_matches(['-', '*', '+', ' ']).trim();
        while let Some(after) =
            rest.strip_prefix("[[").and_then(|r| r.split_once("]]")).map(|(_, a)| a.trim())
        {
            rest = after.trim_start_matches([',', ';', '-', ' ']);
        }
        rest.is_empty()
    };
    let text = body.lines().map(str::trim).find(|l| {
        !l.is_empty()
            && !l.starts_with('#')
            && !l.starts_with("```")
            && !l.starts_with("---")
            && !only_links(l)
    });
    let Some(text) = text else {
        return crate::sections::title(body).map(|t| shorten(&t, 80)).unwrap_or_default();
    };
    let text = text
        .trim_start_matches(['-', '*', '+', '>', ' '])
        .replace("[[", "")
        .replace("]]", "")
        .replace('`', "");
    let sentence = text.split(". ").next().unwrap_or("").trim_end_matches('.');
    shorten(sentence, 80)
}

/// `text` cut at a word boundary to at most `max` characters, with `…`.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", cut.trim_end_matches([',', ';', ':']))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(spec: &[(&str, &str, &[&str])]) -> HashMap<DocId, Entry> {
        spec.iter()
            .map(|(id, summary, children)| {
                let children = children.iter().map(|c| DocId::parse(c).unwrap()).collect();
                (DocId::parse(id).unwrap(), Entry { summary: (*summary).into(), children })
            })
            .collect()
    }

    #[test]
    fn shows_the_tree_with_summaries_when_it_fits() {
        let s = store(&[
            ("root", "Memory", &["projects", "people"]),
            ("projects", "Software projects", &["silica"]),
            ("silica", "Agent framework", &[]),
            ("people", "", &[]),
        ]);
        assert_eq!(
            render(2048, |id| s.get(id).cloned()),
            "root: Memory\n- projects: Software projects\n  - silica: Agent framework\n- people\n"
        );
    }

    #[test]
    fn fills_breadth_first_and_folds_the_rest_into_counts() {
        let children: Vec<String> = (0..30).map(|i| format!("n{i}")).collect();
        let child_refs: Vec<&str> = children.iter().map(String::as_str).collect();
        let mut spec: Vec<(&str, &str, &[&str])> = vec![
            ("root", "Memory", &["a", "b"]),
            ("a", "first area", &child_refs),
            ("b", "second area", &[]),
        ];
        spec.extend(child_refs.iter().map(|c| (*c, "a note about something", &[] as &[&str])));
        let s = store(&spec);
        let out = render(400, |id| s.get(id).cloned());
        assert!(out.len() <= 400, "{} bytes:\n{out}", out.len());
        assert!(out.starts_with("root: Memory\n- a: first area (+"), "{out}");
        assert!(
            out.contains("\n- b: second area\n") || out.ends_with("- b: second area\n"),
            "both areas are shown before any note:\n{out}"
        );
        let shown = out.matches("  - n").count();
        assert!(shown > 0 && out.contains(&format!("(+{} more)", 30 - shown)), "{out}");
    }

    #[test]
    fn a_tiny_budget_still_names_the_top_level() {
        let s =
            store(&[("root", "Memory", &["a", "b", "c"]), ("a", "x", &[]), ("b", "y", &[]), ("c", "z", &[])]);
        assert_eq!(render(40, |id| s.get(id).cloned()), "root: Memory\n(+3 more at the top level)\n");
        assert_eq!(render(70, |id| s.get(id).cloned()), "root: Memory\n- a: x\n(+2 more at the top level)\n");
    }

    #[test]
    fn summaries_come_from_the_first_line_of_text() {
        assert_eq!(
            first_sentence("# Title\n\n- See [[db]] for `psql` access. More here.\n"),
            "See db for psql access"
        );
        assert_eq!(first_sentence("# Only a title\n"), "Only a title");
        assert_eq!(first_sentence("# Memory\n- [[projects]]\n- [[a|A]], [[b]]\n"), "Memory");
        assert_eq!(first_sentence("- [[a]]\n"), "");
        assert_eq!(shorten("one two three four", 9), "one two…");
    }
}
