//! `remember`: one fact put into the right section of the right document,
//! compared first with what the section says.

use std::collections::{HashMap, HashSet};

use super::Memory;
use super::edit::section_span;
use crate::answer::Remembered;
use crate::doc_id::DocId;
use crate::error::{CrossTreeReason, MemoryError};
use crate::front_matter;
use crate::line_ending::{self, LineEnding};
use crate::refusal::{Refusal, Subject};
use crate::remember;
use crate::sections::{self, SectionLookup};

/// Where `remember` puts a fact.
#[derive(Debug, Clone, Copy, Default)]
pub struct FactPlace<'a> {
    /// The document (created when it does not exist); default: the best
    /// match by search, else a new one named after the section.
    pub document: Option<&'a DocId>,
    /// The `##` section; default `Notes`.
    pub section: Option<&'a str>,
    /// Where a new document goes; default root.
    pub parent: Option<&'a DocId>,
}

/// `text` with `fact` put into its section `section` (added at the end
/// when there is none), and what became of it; lines added take the
/// document's line ending.
fn with_fact(
    id: &DocId,
    text: &str,
    section: &str,
    fact: &str,
    mode: remember::Mode,
    threshold: f64,
) -> Result<(String, remember::Action), MemoryError> {
    let eol = LineEnding::of(text);
    let split = front_matter::split(text);
    let offset = text.len() - split.body.len();
    match sections::find_section(split.body, section) {
        SectionLookup::Found(span) => {
            let body = &split.body[span.body_start..span.end];
            let (new_body, action) = remember::apply(body, fact, mode, threshold, eol);
            let blank_after =
                new_body.trim_end_matches([' ', '\t']).ends_with(&format!("{0}{0}", eol.as_str()));
            let gap = if span.end < split.body.len() && !blank_after { eol.as_str() } else { "" };
            let before = &text[..offset + span.body_start];
            // A heading on the last line without a line break gets one.
            let sep = if line_ending::ends_with_break(before) { "" } else { eol.as_str() };
            Ok((format!("{before}{sep}{new_body}{gap}{}", &text[offset + span.end..]), action))
        }
        SectionLookup::NotFound { .. } => {
            let line = remember::fact_line(fact, eol);
            let eol = eol.as_str();
            Ok((
                format!("{}{eol}{eol}## {section}{eol}{line}{eol}", text.trim_end()),
                remember::Action::Added,
            ))
        }
        SectionLookup::Ambiguous { .. } => {
            Err(section_span(id, text, section).expect_err("an ambiguous heading is an error"))
        }
    }
}

impl Memory {
    /// Puts a fact into the `##` section `section` (default `Notes`) of
    /// `document`, or of the best match for it by search, or of a new
    /// document named after the section; compares it with what the section
    /// says first (see [`remember::Mode`]). A document that does not exist
    /// yet (named, or made for the fact) is created under `parent` (default
    /// root) in the same atomic change as the fact.
    pub fn remember(
        &self,
        fact: &str,
        place: &FactPlace<'_>,
        mode: remember::Mode,
    ) -> Result<Remembered, MemoryError> {
        if fact.trim().is_empty() {
            return Err(Refusal::Empty(Subject::Content).into());
        }
        let section = place.section.map_or("", |s| s.trim().trim_start_matches('#').trim());
        if section.chars().any(char::is_control) {
            return Err(Refusal::SectionNotOneLine.into());
        }
        let section = if section.is_empty() { "Notes" } else { section };
        let parent = place.parent.cloned().unwrap_or_else(DocId::root);
        if !self.exists(&parent)? {
            return Err(Refusal::Missing(Subject::Parent).into());
        }
        let target = match place.document {
            Some(id) => id.clone(),
            None => {
                if self.index.is_some() {
                    self.index_progress();
                }
                match self.index.as_ref().map(|_| self.search(&format!("{section} {fact}"), 1, None, None)) {
                    Some(Ok(hits)) if !hits.is_empty() => hits[0].id.clone(),
                    Some(Err(e)) => return Err(e),
                    _ => self.free_id(Some(&parent), section, &HashSet::new())?,
                }
            }
        };
        self.write(|| self.remember_locked(fact, section, &parent, &target, mode))
    }

    /// [`Memory::remember`] in `target`, with the locks held.
    fn remember_locked(
        &self,
        fact: &str,
        section: &str,
        parent: &DocId,
        target: &DocId,
        mode: remember::Mode,
    ) -> Result<Remembered, MemoryError> {
        let threshold = self.settings.dedup_threshold;
        let label = format!("remember in {target}#{section}");
        let mut action = remember::Action::Added;
        let mut put_fact = |text: &str| {
            let (text, done) = with_fact(target, text, section, fact, mode, threshold)?;
            action = done;
            Ok(text)
        };
        if self.exists(target)? {
            let update = self.rewrite_locked(target, &label, put_fact, &HashMap::new())?;
            return Ok(Remembered {
                id: target.clone(),
                section: section.to_owned(),
                action,
                created: None,
                update,
            });
        }
        // A new document: the parent's link to it and its text with the
        // fact are one change, checked whole before anything is written.
        let parent_old = self.read_existing(parent)?;
        let parent_new = line_ending::append_line(&parent_old, &format!("- [[{target}]]"));
        let label = format!("{label} (new, under {parent})");
        let (mut change, _) = self.plan_rewrite(parent, &parent_old, parent_new, &HashMap::new(), &label)?;
        let template = format!("# {target}\n\n");
        let text = put_fact(&template)?;
        let (doc_change, mut update) = self.plan_rewrite(target, &template, text, &HashMap::new(), &label)?;
        if update.created.contains(target) {
            return Err(MemoryError::CrossTree { link: target.clone(), reason: CrossTreeReason::ItSelf });
        }
        let mut doc_puts = doc_change.puts.into_iter();
        for (id, text) in &mut change.puts {
            if id == target {
                *text = doc_puts.next().expect("the document's own text comes first").1;
            }
        }
        change.puts.extend(doc_puts);
        update.warning = self.apply_change(&change)?;
        Ok(Remembered {
            id: target.clone(),
            section: section.to_owned(),
            action,
            created: Some(target.clone()),
            update,
        })
    }
}
