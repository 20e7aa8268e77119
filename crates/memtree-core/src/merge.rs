//! Three-way merge by section, for optimistic concurrency: two writes based
//! on the same version of a document are combined when they changed
//! different sections (the front-matter and the text before the first
//! section count as one), and refused when they changed the same one.

use std::collections::HashMap;

use crate::front_matter;
use crate::index::content_hash;
use crate::refusal::Refusal;
use crate::sections::top_sections;

/// A document's version: a hash of its stored bytes, which a reader passes
/// back with its write so that a write based on an older version is seen.
pub fn version(text: &str) -> String {
    format!("{:012x}", content_hash(text.as_bytes()) & 0xffff_ffff_ffff)
}

/// Refuses what cannot be a [`version`]: it is 12 hex digits.
pub fn check_version(version: &str) -> Result<(), Refusal> {
    if version.is_empty() {
        return Err(Refusal::EmptyBase);
    }
    if version.len() != 12 || !version.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(Refusal::NotAVersion { shown: version.chars().take(40).collect() });
    }
    Ok(())
}

/// A merged text, and the sections whose text came from the concurrent
/// change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub text: String,
    pub theirs: Vec<String>,
}

/// The preamble's key among the sections.
const PREAMBLE: &str = "";

/// `(heading, whole text)` per top-level section, the preamble (with the
/// front-matter) first; `None` when a heading repeats, which makes
/// sections ambiguous.
fn chunks(text: &str) -> Option<Vec<(String, String)>> {
    let split = front_matter::split(text);
    let tops = top_sections(split.body);
    let mut out = vec![(PREAMBLE.to_owned(), format!("{}{}", split.head, tops.preamble))];
    let mut seen = std::collections::HashSet::new();
    for ((heading, _), raw) in tops.sections.into_iter().zip(tops.raw) {
        if !seen.insert(heading.clone()) {
            return None;
        }
        out.push((heading, raw));
    }
    Some(out)
}

/// Merges `mine` and `theirs`, both changed from `base`. The error lists
/// the sections both changed differently.
pub fn merge(base: &str, theirs: &str, mine: &str) -> Result<Merged, Vec<String>> {
    let (Some(b), Some(t), Some(m)) = (chunks(base), chunks(theirs), chunks(mine)) else {
        return Err(vec!["(a heading repeats, so sections are ambiguous)".to_owned()]);
    };
    let by_key =
        |chunks: &[(String, String)]| -> HashMap<String, String> { chunks.iter().cloned().collect() };
    let (bm, tm, mm) = (by_key(&b), by_key(&t), by_key(&m));
    let find = |chunks: &HashMap<String, String>, key: &str| chunks.get(key).cloned();
    let mut keys: Vec<&String> = m.iter().map(|(k, _)| k).collect();
    keys.extend(t.iter().map(|(k, _)| k).filter(|k| !mm.contains_key(*k)));
    let (mut parts, mut from_theirs, mut conflicts) = (Vec::new(), Vec::new(), Vec::new());
    for key in keys {
        let (bv, tv, mv) = (find(&bm, key), find(&tm, key), find(&mm, key));
        let part = if tv == mv || tv == bv {
            mv
        } else if mv == bv {
            from_theirs.push(key.clone());
            tv
        } else {
            conflicts.push(if key.is_empty() {
                "(text before the first section)".to_owned()
            } else {
                key.clone()
            });
            continue;
        };
        parts.extend(part);
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }
    let mut text = String::new();
    for part in parts {
        if !crate::line_ending::ends_with_break(&text) {
            text.push_str(crate::line_ending::LineEnding::of(base).as_str());
        }
        text.push_str(&part);
    }
    Ok(Merged { text, theirs: from_theirs })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "---\nscope: project\n---\n# Doc\nintro\n## A\na\n## B\nb\n## C\nc\n";

    #[test]
    fn changes_to_different_sections_merge() {
        let theirs = BASE.replace("## B\nb\n", "## B\nb, changed by them\n");
        let mine = BASE.replace("## A\na\n", "## A\na, changed by me\n");
        let merged = merge(BASE, &theirs, &mine).unwrap();
        assert_eq!(
            merged.text,
            BASE.replace("b\n", "b, changed by them\n").replace("a\n", "a, changed by me\n")
        );
        assert_eq!(merged.theirs, ["B"]);
    }

    #[test]
    fn added_and_deleted_sections_merge() {
        let theirs = format!("{BASE}## D\nd\n");
        let mine = BASE.replace("## C\nc\n", "").replace("intro\n", "intro, mine\n");
        let merged = merge(BASE, &theirs, &mine).unwrap();
        assert_eq!(merged.text, "---\nscope: project\n---\n# Doc\nintro, mine\n## A\na\n## B\nb\n## D\nd\n");
        assert_eq!(merged.theirs, ["D"]);
    }

    #[test]
    fn the_same_section_changed_twice_is_a_conflict() {
        let theirs = BASE.replace("## B\nb\n", "## B\ntheirs\n").replace("scope: project", "scope: global");
        let mine = BASE.replace("## B\nb\n", "## B\nmine\n").replace("scope: project", "scope: agent");
        assert_eq!(merge(BASE, &theirs, &mine).unwrap_err(), ["(text before the first section)", "B"]);
        let deleted = BASE.replace("## B\nb\n", "");
        assert_eq!(merge(BASE, &theirs, &deleted).unwrap_err(), ["B"], "deleted by me, changed by them");
    }

    #[test]
    fn identical_changes_and_repeated_headings() {
        let same = BASE.replace("c\n", "c2\n");
        assert_eq!(merge(BASE, &same, &same).unwrap().text, same);
        let repeated = format!("{BASE}## A\nagain\n");
        assert!(merge(BASE, &repeated, BASE).is_err());
    }
}
