//! Ids for the files and folders of a source: each name made a valid id
//! segment (transliterated to ASCII, lower case, other characters `_`),
//! under its parent's id, numbered when taken, and why it changed.

use std::collections::HashSet;

use memtree_core::DocId;

/// Longest segment an import makes, so that nested folders keep room
/// within the id length limit.
const MAX_SEGMENT: usize = 60;

/// Hands out ids no document has and no earlier name took.
#[derive(Debug, Default)]
pub struct Namer {
    /// Folded (lower-case) ids taken.
    taken: HashSet<String>,
}

/// An id given to a name, and why it is not the name itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub id: DocId,
    pub why: Option<String>,
}

impl Namer {
    /// A namer that avoids `existing` ids (the store's documents).
    pub fn new(existing: impl IntoIterator<Item = DocId>) -> Namer {
        Namer { taken: existing.into_iter().map(|id| id.folded()).collect() }
    }

    /// Takes `id` as it is, when it is free.
    pub fn take(&mut self, id: &DocId) -> bool {
        self.taken.insert(id.folded())
    }

    /// An id for `name` under `parent`'s folder (the top when `None`).
    /// `None` when the parent's id leaves no room for a segment.
    pub fn name(&mut self, parent: Option<&DocId>, name: &str) -> Option<Named> {
        let prefix = parent.map(|p| format!("{p}/")).unwrap_or_default();
        let room = DocId::MAX_LEN.checked_sub(prefix.len() + 4).filter(|r| *r >= 8)?.min(MAX_SEGMENT);
        let (slug, mut why) = slug(name);
        let short: String = slug.chars().take(room).collect();
        if short.len() < slug.len() {
            why.push("shortened".into());
        }
        for n in 1.. {
            let candidate = if n == 1 { format!("{prefix}{short}") } else { format!("{prefix}{short}_{n}") };
            let id = DocId::parse(&candidate).ok()?;
            if self.taken.insert(id.folded()) {
                if n > 1 {
                    why.push(format!("{prefix}{short} was taken"));
                }
                let why = (!why.is_empty()).then(|| why.join("; "));
                return Some(Named { id, why });
            }
        }
        unreachable!("some numbered id is free")
    }
}

/// `name` as an id segment, and what had to change.
fn slug(name: &str) -> (String, Vec<String>) {
    let mut why = Vec::new();
    let ascii = if name.is_ascii() {
        name.to_owned()
    } else {
        why.push("non-ASCII letters transliterated".to_owned());
        deunicode::deunicode(name)
    };
    let mut out = String::with_capacity(ascii.len());
    let mut replaced = false;
    for c in ascii.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c.to_ascii_lowercase());
        } else {
            replaced |= c != '_';
            if !out.ends_with('_') {
                out.push('_');
            }
        }
    }
    let out = out.trim_matches('_').to_owned();
    if replaced {
        why.push("spaces and punctuation made _".to_owned());
    }
    if out.is_empty() {
        why.push("nothing of the name is left".to_owned());
        return ("note".to_owned(), why);
    }
    (out, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> DocId {
        DocId::parse(s).unwrap()
    }

    #[test]
    fn names_become_ids_and_say_why() {
        let mut namer = Namer::new([DocId::root()]);
        let named = |namer: &mut Namer, parent: Option<&str>, name: &str| {
            let n = namer.name(parent.map(id).as_ref(), name).unwrap();
            (n.id.to_string(), n.why.unwrap_or_default())
        };
        assert_eq!(named(&mut namer, None, "Projects"), ("projects".into(), String::new()));
        assert_eq!(
            named(&mut namer, Some("projects"), "Q3 plan (draft)"),
            ("projects/q3_plan_draft".into(), "spaces and punctuation made _".into())
        );
        assert_eq!(named(&mut namer, None, "Café Ideas").0, "cafe_ideas");
        assert_eq!(named(&mut namer, None, "日本語メモ").0, "ri_ben_yu_memo");
        assert_eq!(named(&mut namer, None, "🎉").0, "tada");
        assert_eq!(named(&mut namer, None, "root"), ("root_2".into(), "root was taken".into()));
        assert_eq!(named(&mut namer, None, "PROJECTS").0, "projects_2", "letter case aside, taken");
        assert_eq!(named(&mut namer, None, "a.b.c").0, "a_b_c");
        assert_eq!(named(&mut namer, None, "...").0, "note");
    }

    #[test]
    fn long_names_are_shortened_to_leave_room() {
        let mut namer = Namer::default();
        let long = "x".repeat(300);
        let top = namer.name(None, &long).unwrap();
        assert_eq!(top.id.as_str().len(), MAX_SEGMENT);
        let mut parent = top.id;
        while let Some(next) = namer.name(Some(&parent), &long) {
            assert!(next.id.as_str().len() <= DocId::MAX_LEN);
            parent = next.id;
        }
        assert!(parent.as_str().len() > 100, "ids go as deep as the limit allows");
    }
}
