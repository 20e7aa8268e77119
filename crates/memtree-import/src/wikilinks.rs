//! Obsidian's links as written: `[[target#fragment|alias]]` and embeds
//! `![[target]]`, found outside code by pulldown-cmark, with their byte
//! ranges so they can be replaced in place.

use std::ops::Range;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag};

/// One wiki link or embed of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WikiLink {
    /// The bytes of `[[…]]` (with the `!` of an embed).
    pub range: Range<usize>,
    pub embed: bool,
    /// What it names: a note's name or path, or a file with its extension.
    pub target: String,
    /// After `#`: a heading, or `^id` for a block.
    pub fragment: Option<String>,
    /// After `|`.
    pub alias: Option<String>,
}

impl WikiLink {
    /// The text Obsidian shows for it.
    pub fn label(&self) -> String {
        if let Some(alias) = &self.alias {
            return alias.clone();
        }
        match &self.fragment {
            Some(f) if self.target.is_empty() => f.clone(),
            Some(f) => format!("{} > {f}", self.target),
            None => self.target.clone(),
        }
    }
}

/// Every wiki link and embed of `body`, in order, outside code.
pub fn find(body: &str) -> Vec<WikiLink> {
    let mut found = Vec::new();
    for (event, range) in Parser::new_ext(body, Options::ENABLE_WIKILINKS).into_offset_iter() {
        let embed = match event {
            Event::Start(Tag::Link { link_type: LinkType::WikiLink { .. }, .. }) => false,
            Event::Start(Tag::Image { link_type: LinkType::WikiLink { .. }, .. }) => true,
            _ => continue,
        };
        let written = &body[range.clone()];
        let start =
            range.start + written.find("[[").unwrap_or(0) - usize::from(embed && written.starts_with('!'));
        let Some(inner) =
            written.trim_start_matches('!').strip_prefix("[[").and_then(|w| w.strip_suffix("]]"))
        else {
            continue;
        };
        // In a table the alias bar is escaped: `[[note\|alias]]`.
        let (target, alias) = match inner.split_once('|') {
            Some((t, a)) => (t.strip_suffix('\\').unwrap_or(t), Some(a.trim().to_owned())),
            None => (inner, None),
        };
        let (target, fragment) = match target.split_once('#') {
            Some((t, f)) => (t, Some(f.trim().to_owned()).filter(|f| !f.is_empty())),
            None => (target, None),
        };
        found.push(WikiLink {
            range: start..range.end,
            embed,
            target: target.trim().to_owned(),
            fragment,
            alias: alias.filter(|a| !a.is_empty()),
        });
    }
    found
}

/// `body` with each of `links` replaced by what `replace` answers for it.
pub fn replace(body: &str, links: &[WikiLink], mut replace: impl FnMut(&WikiLink) -> String) -> String {
    let mut out = String::with_capacity(body.len());
    let mut cursor = 0;
    for link in links {
        out.push_str(&body[cursor..link.range.start]);
        out.push_str(&replace(link));
        cursor = link.range.end;
    }
    out.push_str(&body[cursor..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_is_found_with_its_parts() {
        let body = "See [[Design Notes]], [[Projects/API#Goals|the goals]], [[Log#^b1c2]].\n\n\
                    | a | [[Table Note\\|in a table]] |\n\n\
                    ![[diagram.png]] ![[Other Note]]\n\n`[[in code]]`\n\n```\n[[fenced]]\n```\n";
        let links = find(body);
        let parts: Vec<(bool, &str, Option<&str>, Option<&str>)> = links
            .iter()
            .map(|l| (l.embed, l.target.as_str(), l.fragment.as_deref(), l.alias.as_deref()))
            .collect();
        assert_eq!(
            parts,
            [
                (false, "Design Notes", None, None),
                (false, "Projects/API", Some("Goals"), Some("the goals")),
                (false, "Log", Some("^b1c2"), None),
                (false, "Table Note", None, Some("in a table")),
                (true, "diagram.png", None, None),
                (true, "Other Note", None, None),
            ]
        );
        for l in &links {
            let written = &body[l.range.clone()];
            assert!(
                written.starts_with(if l.embed { "![[" } else { "[[" }) && written.ends_with("]]"),
                "{written}"
            );
        }
        assert_eq!(links[1].label(), "the goals");
        assert_eq!(links[2].label(), "Log > ^b1c2");
    }

    #[test]
    fn replacing_keeps_every_other_byte() {
        let body = "a [[x]] b ![[y.png]] c";
        let out = replace(body, &find(body), |l| format!("<{}>", l.target));
        assert_eq!(out, "a <x> b <y.png> c");
    }
}
