//! `split_document`, and the split policy applied after a write that makes
//! a document larger than the split threshold.

use std::collections::{HashMap, HashSet};

use super::Memory;
use super::settings::SplitPolicy;
use crate::answer::{SplitOutcome, UpdateOutcome};
use crate::cite::join;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter;
use crate::line_ending::LineEnding;
use crate::outline;
use crate::references::{self, Reference};
use crate::refusal::{PlanConflict, Refusal, Subject};
use crate::sections;
use crate::storage::Change;

/// Lower-case words of `name` joined by `_`; `note` when none is left.
fn slug(name: &str) -> String {
    let words: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    if words.is_empty() { "note".to_owned() } else { words.join("_") }
}

/// A top-level section: its heading and its body.
type Section = (String, String);

/// A new document a split makes: its id, its title and its body.
struct Piece {
    id: DocId,
    title: String,
    body: String,
}

impl Memory {
    /// Splits a document into children: one per top-level section (`plan`
    /// `None`), or as the plan says (child id → the headings it takes; the
    /// other sections stay). The parent keeps its front-matter, its
    /// preamble and whatever the plan leaves, plus a `- [[child]]: summary`
    /// line per child. One atomic change; no line of text is lost.
    pub fn split_document(
        &self,
        id: &DocId,
        plan: Option<&[(DocId, Vec<String>)]>,
    ) -> Result<SplitOutcome, MemoryError> {
        self.write(|| self.split_locked(id, plan))
    }

    fn split_locked(
        &self,
        id: &DocId,
        plan: Option<&[(DocId, Vec<String>)]>,
    ) -> Result<SplitOutcome, MemoryError> {
        let text = self.read_existing(id)?;
        let eol = LineEnding::of(&text).as_str();
        let split = front_matter::split(&text);
        let tops = sections::top_sections(split.body);
        if tops.sections.is_empty() {
            return Err(Refusal::NoSections { id: id.clone() }.into());
        }
        let (pieces, kept) = match plan {
            None => (self.one_per_section(id, &tops.sections)?, Vec::new()),
            Some(plan) => self.as_planned(&tops.sections, plan, eol)?,
        };
        let mut puts = vec![(id.clone(), parent_text(split.head, &tops.preamble, &kept, &pieces, eol))];
        puts.extend(pieces.iter().map(|p| {
            // The section's references were written from the split
            // document's folder; the child may sit in another.
            let body = rewrite_from(p.body.trim(), id, &p.id);
            (p.id.clone(), format!("# {}{eol}{eol}{body}{eol}", p.title))
        }));
        let referrers = self.follow_moved_sections(id, &pieces, &mut puts)?;
        let templates = self.check_split(id, &puts, &pieces)?;
        puts.extend(referrers);
        puts.extend(templates.iter().map(|t| (t.clone(), format!("# {t}\n\n"))));
        let change = Change { puts, deletes: vec![], label: format!("split {id}") };
        let warning = self.apply_change(&change)?;
        Ok(SplitOutcome { children: pieces.into_iter().map(|p| p.id).collect(), created: templates, warning })
    }

    /// A child of `id` per section, named after its heading.
    fn one_per_section(&self, id: &DocId, sections: &[Section]) -> Result<Vec<Piece>, MemoryError> {
        let mut taken = HashSet::new();
        let mut pieces = Vec::with_capacity(sections.len());
        for (heading, body) in sections {
            let child = self.free_id(Some(id), heading, &taken)?;
            taken.insert(child.folded());
            pieces.push(Piece { id: child, title: heading.clone(), body: body.clone() });
        }
        Ok(pieces)
    }

    /// The children a plan names, each with the sections it takes, and the
    /// sections that stay; refused when a child exists or a heading is not
    /// exactly one section, or is given twice.
    fn as_planned(
        &self,
        sections: &[Section],
        plan: &[(DocId, Vec<String>)],
        eol: &str,
    ) -> Result<(Vec<Piece>, Vec<Section>), MemoryError> {
        let conflict = |c: PlanConflict| MemoryError::from(Refusal::Plan(c));
        let mut assigned: HashMap<&str, &DocId> = HashMap::new();
        let mut occurs: HashMap<&str, usize> = HashMap::new();
        for (t, _) in sections {
            *occurs.entry(t.as_str()).or_default() += 1;
        }
        for (child, headings) in plan {
            if self.storage.stamp(child)?.is_some() || self.storage.find_folded(child)?.is_some() {
                return Err(conflict(PlanConflict::ChildExists { child: child.clone() }));
            }
            for h in headings {
                if occurs.get(h.as_str()) != Some(&1) {
                    return Err(conflict(PlanConflict::NoSingleSection {
                        heading: h.clone(),
                        sections: sections.iter().map(|(t, _)| t.clone()).collect(),
                    }));
                }
                if let Some(other) = assigned.insert(h.as_str(), child) {
                    return Err(conflict(PlanConflict::SectionTwice {
                        heading: h.clone(),
                        first: other.clone(),
                        second: child.clone(),
                    }));
                }
            }
        }
        let mut bodies: HashMap<&DocId, String> = HashMap::new();
        for (t, b) in sections {
            if let Some(child) = assigned.get(t.as_str()) {
                bodies.entry(child).or_default().push_str(&format!("## {t}{eol}{b}"));
            }
        }
        let pieces = plan
            .iter()
            .map(|(child, _)| Piece {
                id: child.clone(),
                title: child.as_str().rsplit('/').next().unwrap_or("").to_owned(),
                body: bodies.remove(child).unwrap_or_default(),
            })
            .collect();
        let kept = sections.iter().filter(|(t, _)| !assigned.contains_key(t.as_str())).cloned().collect();
        Ok((pieces, kept))
    }

    /// Points the references to a section of `id` that moved into a new
    /// child at that child instead: in the texts the split puts, and in
    /// the other documents that reference `id`, whose new texts are
    /// returned.
    fn follow_moved_sections(
        &self,
        id: &DocId,
        pieces: &[Piece],
        puts: &mut [(DocId, String)],
    ) -> Result<Vec<(DocId, String)>, MemoryError> {
        let moved: Vec<(&DocId, Vec<String>)> = pieces
            .iter()
            .map(|p| {
                let mut headings = vec![p.title.clone()];
                headings.extend(sections::heading_texts(&p.body));
                (&p.id, headings)
            })
            .collect();
        let new_home = |anchor: &str| {
            moved
                .iter()
                .find(|(_, hs)| hs.iter().any(|h| references::anchor_matches(anchor, h)))
                .map(|(c, _)| *c)
        };
        let follow = |from: &DocId, text: &str| {
            let split = front_matter::split(text);
            let body = references::rewrite_destinations(split.body, |dest| {
                let r = references::resolve(from, dest).filter(|r| &r.target == id)?;
                let child = new_home(r.anchor.as_deref()?)?;
                Some(references::destination(from, &Reference { target: child.clone(), ..r }))
            });
            (body != split.body).then(|| format!("{}{body}", split.head))
        };
        for (doc, text) in puts.iter_mut() {
            if let Some(new) = follow(doc, text) {
                *text = new;
            }
        }
        let tree = self.tree_unlocked()?.0;
        let mut others = Vec::new();
        for referrer in tree.referrers(id) {
            if puts.iter().any(|(d, _)| d == referrer) {
                continue;
            }
            let Some(text) = self.storage.read(referrer)? else { continue };
            if let Some(new) = follow(referrer, &text) {
                others.push((referrer.clone(), new));
            }
        }
        Ok(others)
    }

    /// Checks the texts a split of `id` puts: sizes, links per document,
    /// and that every link ends up with one parent (a child of the split
    /// document moves with its section, a level deeper with its subtree).
    /// Returns the ids linked that do not exist yet, to be created.
    fn check_split(
        &self,
        id: &DocId,
        puts: &[(DocId, String)],
        pieces: &[Piece],
    ) -> Result<Vec<DocId>, MemoryError> {
        let new_children: HashSet<&DocId> = pieces.iter().map(|p| &p.id).collect();
        let mut owner: HashMap<DocId, DocId> = HashMap::new();
        let mut templates = Vec::new();
        let mut moved_down = Vec::new();
        for (doc, doc_text) in puts {
            let limit = self.settings.max_document_bytes;
            if doc_text.len() > limit {
                return Err(MemoryError::TooLarge { len: doc_text.len(), limit });
            }
            let links = crate::links::children(doc_text);
            if links.len() > self.settings.max_links {
                return Err(MemoryError::TooManyLinks { links: links.len(), limit: self.settings.max_links });
            }
            for link in links {
                if let Some(first) = owner.insert(link.clone(), doc.clone()) {
                    let twice = PlanConflict::LinkedTwice { link, first, second: doc.clone() };
                    return Err(Refusal::Plan(twice).into());
                }
                if new_children.contains(&link) {
                    continue;
                }
                if self.storage.stamp(&link)?.is_none() {
                    templates.push(link);
                } else if doc != id {
                    moved_down.push(link);
                }
            }
        }
        if !moved_down.is_empty() {
            let tree = self.tree_unlocked()?.0;
            let depth = tree.depth(id) + 2;
            for link in &moved_down {
                self.check_depth(Subject::Id, link, depth + tree.height(link))?;
            }
        }
        Ok(templates)
    }

    /// A free id for a new document named `name` (under `parent`'s folder
    /// when there is a parent other than root), avoiding the ids `taken`
    /// (folded to lower case).
    pub(super) fn free_id(
        &self,
        parent: Option<&DocId>,
        name: &str,
        taken: &HashSet<String>,
    ) -> Result<DocId, MemoryError> {
        let prefix = parent.filter(|p| !p.is_root()).map(|p| format!("{p}/")).unwrap_or_default();
        let room = DocId::MAX_LEN.saturating_sub(prefix.len() + 4).max(1);
        let slug = slug(name);
        let base: String = slug.chars().take(room).collect();
        for n in 1.. {
            let candidate = if n == 1 { format!("{prefix}{base}") } else { format!("{prefix}{base}_{n}") };
            let Ok(id) = DocId::parse(&candidate) else {
                return Err(Refusal::NoRoomForId { prefix }.into());
            };
            let free = !taken.contains(&id.folded())
                && self.storage.stamp(&id)?.is_none()
                && self.storage.find_folded(&id)?.is_none();
            if free {
                return Ok(id);
            }
        }
        unreachable!("some numbered id is free")
    }

    /// Applies the split policy to a document a write just changed. The
    /// write is done: nothing here turns it into an error (a split that
    /// fails is said in the answer, with why).
    pub(super) fn after_growth(&self, id: &DocId, mut outcome: UpdateOutcome) -> UpdateOutcome {
        match self.split_advice(id) {
            Ok(advice) => outcome.split = advice,
            Err(error) => tracing::warn!(%error, %id, "no split advice"),
        }
        outcome
    }

    /// What the split policy says, or did, about a document over the split
    /// threshold.
    fn split_advice(&self, id: &DocId) -> Result<Option<String>, MemoryError> {
        let threshold = self.settings.split_threshold;
        let Some(stamp) = self.storage.stamp(id)? else { return Ok(None) };
        if self.settings.split_policy == SplitPolicy::Off || (stamp.len as usize) <= threshold {
            return Ok(None);
        }
        let text = self.read_existing(id)?;
        let sections = sections::top_sections(front_matter::split(&text).body).sections.len();
        let over = format!("{id} is {} bytes (over {threshold})", stamp.len);
        Ok(Some(match (self.settings.split_policy, sections) {
            (SplitPolicy::Auto, n) if n > 0 => match self.split_document(id, None) {
                Ok(done) => format!("Split (over {threshold} bytes): {}", join(&done.children)),
                Err(error) => {
                    format!("Advice: {over}; splitting it along its sections failed: {}", error.report())
                }
            },
            (_, 0) => format!("Advice: {over}; give it ## sections or move parts into children"),
            (_, n) => {
                format!(
                    "Advice: {over}; split_document(id=\"{id}\") would make {n} children from its sections"
                )
            }
        }))
    }
}

/// `body`, written in document `from`, with its references rewritten to
/// lead to the same places from document `to`.
fn rewrite_from(body: &str, from: &DocId, to: &DocId) -> String {
    references::rewrite_destinations(body, |dest| {
        let r = references::resolve(from, dest)?;
        let new = references::destination(to, &r);
        (new != dest).then_some(new)
    })
}

/// The split document's new text: its front-matter and preamble, the
/// sections it keeps, then a `- [[child]]: summary` line per new child.
fn parent_text(head: &str, preamble: &str, kept: &[Section], pieces: &[Piece], eol: &str) -> String {
    let mut parent = format!("{head}{}", preamble.trim_end());
    for (heading, body) in kept {
        parent.push_str(&format!("{eol}{eol}## {heading}{eol}{}", body.trim_end()));
    }
    parent.push_str(&format!("{eol}{eol}"));
    for piece in pieces {
        let summary = outline::first_sentence(&piece.body);
        let summary = if summary.is_empty() { piece.title.clone() } else { summary };
        parent.push_str(&format!("- [[{}]]: {summary}{eol}", piece.id));
    }
    parent
}
