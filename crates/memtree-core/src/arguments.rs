//! Arguments as an adapter receives them (the strings of a tool call or a
//! command line) made into the engine's values the same way for every
//! adapter; an error names the argument as the adapter calls it.

use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter::{Scope, Status};
use crate::memory::Lifecycle;
use crate::namespace::{Namespaced, Target};
use crate::remember::Mode;

/// Turns an optional raw id argument into a `DocId`; omitted or empty means
/// `root`, as the seed tools have it.
pub fn parse_id_argument(argument: &'static str, raw: Option<&str>) -> Result<DocId, MemoryError> {
    match raw {
        None | Some("") => Ok(DocId::root()),
        Some(raw) => DocId::parse(raw).map_err(|error| MemoryError::InvalidId {
            argument,
            raw: raw.chars().take(DocId::MAX_LEN + 8).collect(),
            error,
        }),
    }
}

/// Turns an optional raw scope argument into a `Scope`.
pub fn parse_scope_argument(raw: Option<&str>) -> Result<Option<Scope>, MemoryError> {
    parse_word_argument("scope", raw, Scope::parse, "one of global, agent, project, ephemeral")
}

/// Turns an optional raw status argument into a `Status`.
pub fn parse_status_argument(raw: Option<&str>) -> Result<Option<Status>, MemoryError> {
    parse_word_argument("status", raw, Status::parse, "active or deprecated")
}

/// An optional word argument (omitted or empty: `None`), or an error that
/// says which words there are.
fn parse_word_argument<T>(
    argument: &'static str,
    raw: Option<&str>,
    parse: fn(&str) -> Option<T>,
    expected: &str,
) -> Result<Option<T>, MemoryError> {
    match raw.map(str::trim) {
        None | Some("") => Ok(None),
        Some(word) => parse(word).map(Some).ok_or_else(|| MemoryError::InvalidArgument {
            argument,
            what: format!("{word:?} is not {expected}"),
        }),
    }
}

/// Turns an optional raw `remember` mode into a [`Mode`]; omitted or empty
/// means upsert.
pub fn parse_mode_argument(raw: Option<&str>) -> Result<Mode, MemoryError> {
    match raw.map(str::trim) {
        None | Some("") => Ok(Mode::Upsert),
        Some(word) => word.parse().map_err(|what| MemoryError::InvalidArgument { argument: "mode", what }),
    }
}

/// A lifecycle change as an adapter receives it.
#[derive(Debug, Clone, Default)]
pub struct LifecycleArguments<'a> {
    pub status: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub priority: Option<f64>,
    pub expires: Option<String>,
    pub superseded_by: Option<&'a str>,
}

impl Namespaced {
    /// The lifecycle change `raw` asks of `target`; a successor is in the
    /// same tree.
    pub fn lifecycle_change(
        &self,
        target: &Target<'_>,
        raw: LifecycleArguments<'_>,
    ) -> Result<Lifecycle, MemoryError> {
        Ok(Lifecycle {
            status: parse_status_argument(raw.status)?,
            scope: parse_scope_argument(raw.scope)?,
            priority: raw.priority,
            expires: raw.expires,
            superseded_by: raw.superseded_by.map(|s| self.beside(target, "superseded_by", s)).transpose()?,
        })
    }

    /// A split plan for `target` (the `argument` naming it): each new
    /// child, in the same tree, and the headings it takes.
    pub fn split_plan(
        &self,
        target: &Target<'_>,
        argument: &'static str,
        plan: impl IntoIterator<Item = (String, Vec<String>)>,
    ) -> Result<Vec<(DocId, Vec<String>)>, MemoryError> {
        plan.into_iter()
            .map(|(child, headings)| Ok((self.beside(target, argument, &child)?, headings)))
            .collect()
    }
}
