//! `set_lifecycle`: status, scope, priority, expiry or successor, with why.

use super::Memory;
use crate::answer::push_warning;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter::{self, Scope, Status};
use crate::refusal::Refusal;

/// A lifecycle change; `None` fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lifecycle {
    pub status: Option<Status>,
    pub scope: Option<Scope>,
    pub priority: Option<f64>,
    /// `YYYY-MM-DD`.
    pub expires: Option<String>,
    pub superseded_by: Option<DocId>,
}

impl Memory {
    /// Changes a document's lifecycle (status, scope, priority, expiry, or
    /// the document that supersedes it), recording `why` with it.
    /// Deprecated and superseded memory leaves search and packs but stays in
    /// the tree.
    pub fn set_lifecycle(&self, id: &DocId, change: &Lifecycle, why: &str) -> Result<String, MemoryError> {
        let why = why.trim();
        if why.is_empty() {
            return Err(Refusal::NoReason.into());
        }
        if let Some(p) = change.priority
            && !(0.0..=1.0).contains(&p)
        {
            return Err(Refusal::PriorityOutOfRange { priority: p }.into());
        }
        if let Some(expires) = &change.expires
            && !crate::date::is_date_prefix(expires)
        {
            return Err(Refusal::NotADate { shown: expires.chars().take(40).collect() }.into());
        }
        if let Some(new) = &change.superseded_by {
            if new == id {
                return Err(Refusal::SupersedesItself.into());
            }
            if self.storage.stamp(new)?.is_none() {
                return Err(Refusal::SuccessorNotFound { successor: new.clone() }.into());
            }
        }
        let status = change.superseded_by.as_ref().map(|_| Status::Deprecated).or(change.status);
        let mut keys: Vec<(&str, Option<String>)> = vec![("why", Some(why.to_owned()))];
        if let Some(status) = status {
            keys.push(("status", Some(status.as_str().to_owned())));
            if status == Status::Active {
                keys.push(("superseded_by", None));
            }
        }
        if let Some(new) = &change.superseded_by {
            keys.push(("superseded_by", Some(new.to_string())));
        }
        if let Some(scope) = change.scope {
            keys.push(("scope", Some(scope.as_str().to_owned())));
        }
        if let Some(p) = change.priority {
            keys.push(("priority", Some(p.to_string())));
        }
        if let Some(expires) = &change.expires {
            keys.push(("expires", Some(expires.clone())));
        }
        if keys.len() == 1 {
            return Err(Refusal::NothingToChange.into());
        }
        let described: Vec<String> =
            keys[1..].iter().map(|(k, v)| format!("{k}: {}", v.as_deref().unwrap_or("(removed)"))).collect();
        let label = format!("lifecycle {id}: {} (why: {why})", described.join(", "));
        let outcome = self.rewrite(id, &label, |text| Ok(front_matter::set_keys(text, &keys)))?;
        let mut out = format!("Succeeded\n{id}: {}", described.join(", "));
        push_warning(&mut out, outcome.warning.as_deref());
        Ok(out)
    }
}
