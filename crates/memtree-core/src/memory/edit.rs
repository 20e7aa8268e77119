//! `edit_document`: a change to part of a document, a text replaced once or
//! a section's body.

use super::Memory;
use crate::answer::UpdateOutcome;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter;
use crate::line_ending::{self, LineEnding};
use crate::refusal::{Refusal, Subject};
use crate::sections::{self, SectionLookup, SectionSpan};

/// A change to part of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Replace the one occurrence of `old` with `new`.
    Replace { old: String, new: String },
    /// Replace the text under the heading `section` (subsections included)
    /// with `body`; the heading line stays.
    Section { section: String, body: String },
}

impl Edit {
    /// The document's new text. Text put in takes the document's line
    /// ending; `old` written with `\n` also finds the same lines written
    /// with the document's `\r\n` or `\r`.
    fn apply(&self, id: &DocId, text: &str) -> Result<String, MemoryError> {
        let eol = LineEnding::of(text);
        match self {
            Edit::Replace { old, new } => {
                if old.is_empty() {
                    return Err(Refusal::Empty(Subject::Old).into());
                }
                let mut count = text.matches(old.as_str()).count();
                let mut old = old.clone();
                if count == 0 && eol != LineEnding::Lf && old.contains(['\n', '\r']) {
                    old = eol.apply(&old);
                    count = text.matches(old.as_str()).count();
                }
                match count {
                    0 => Err(Refusal::TextNotFound { id: id.clone() }.into()),
                    1 => Ok(text.replacen(old.as_str(), &eol.apply(new), 1)),
                    count => Err(Refusal::TextRepeated { id: id.clone(), count }.into()),
                }
            }
            Edit::Section { section, body } => {
                let span = section_span(id, text, section)?;
                let split = front_matter::split(text);
                let offset = text.len() - split.body.len();
                let eol = eol.as_str();
                let mut body = LineEnding::of(text).apply(body.trim_end());
                body.push_str(eol);
                if span.end < split.body.len() {
                    body.push_str(eol); // A blank line before the next heading.
                }
                if body.trim().is_empty() {
                    body.clear();
                }
                let before = &text[..offset + span.body_start];
                let sep = if line_ending::ends_with_break(before) || body.is_empty() { "" } else { eol };
                Ok(format!("{before}{sep}{body}{}", &text[offset + span.end..]))
            }
        }
    }
}

/// The span of the section `heading` in a document's body, or the error
/// that names what there is (with line numbers of the whole file).
pub(super) fn section_span(id: &DocId, text: &str, heading: &str) -> Result<SectionSpan, MemoryError> {
    let split = front_matter::split(text);
    let lines_before = line_ending::count_breaks(split.head);
    match sections::find_section(split.body, heading) {
        SectionLookup::Found(span) => Ok(span),
        SectionLookup::NotFound { headings } => {
            Err(Refusal::SectionNotFound { id: id.clone(), heading: heading.to_owned(), headings }.into())
        }
        SectionLookup::Ambiguous { candidates } => Err(Refusal::SectionAmbiguous {
            id: id.clone(),
            heading: heading.to_owned(),
            candidates: candidates
                .iter()
                .map(|(line, h)| format!("line {}: {h}", line + lines_before))
                .collect(),
        }
        .into()),
    }
}

impl Memory {
    /// Changes part of a document, under the same rules and with the same
    /// answer as [`Memory::update_document`], and from version `base` merged
    /// as it does.
    pub fn edit_document(
        &self,
        id: &DocId,
        edit: &Edit,
        base: Option<&str>,
    ) -> Result<UpdateOutcome, MemoryError> {
        let mut merged = None;
        let mut outcome = self.rewrite(id, &format!("edit {id}"), |old_text| {
            self.based_on(id, base, old_text, |text| edit.apply(id, text), &mut merged)
        })?;
        outcome.merged = merged;
        Ok(self.after_growth(id, outcome))
    }
}
