//! `DocId`: the only way a document name enters the engine.
//!
//! An id is one or more `[A-Za-z0-9_-]+` segments joined by `/`, at most
//! [`DocId::MAX_LEN`] bytes. Because every path the storage builds comes from
//! a `DocId`, a path trick (`..`, absolute paths, NUL, backslashes) cannot
//! reach the file system by construction.

use std::fmt;
use std::sync::Arc;

/// A validated document id. Serialises as its string.
///
/// Shared, not copied, when cloned: a store's tree, listing and caches hold
/// every id several times (a hundred thousand documents: megabytes).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct DocId(Arc<str>);

impl serde::Serialize for DocId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl TryFrom<String> for DocId {
    type Error = IdError;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        DocId::parse(&raw)
    }
}

impl From<DocId> for String {
    fn from(id: DocId) -> String {
        id.0.to_string()
    }
}

/// Why a string is not a valid id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("empty id")]
    Empty,
    #[error("longer than {max} bytes ({len})", max = DocId::MAX_LEN)]
    TooLong { len: usize },
    #[error("empty segment (ids may not start or end with '/' or contain '//')")]
    EmptySegment,
    #[error("invalid character {found:?} (allowed: A-Z a-z 0-9 _ - and / between segments)")]
    InvalidChar { found: char },
}

impl DocId {
    pub const MAX_LEN: usize = 128;
    pub const ROOT: &'static str = "root";

    /// Validates `raw` as an id.
    pub fn parse(raw: &str) -> Result<DocId, IdError> {
        if raw.is_empty() {
            return Err(IdError::Empty);
        }
        if raw.len() > Self::MAX_LEN {
            return Err(IdError::TooLong { len: raw.len() });
        }
        for segment in raw.split('/') {
            if segment.is_empty() {
                return Err(IdError::EmptySegment);
            }
            if let Some(found) =
                segment.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
            {
                return Err(IdError::InvalidChar { found });
            }
        }
        Ok(DocId(raw.into()))
    }

    /// The id of the document that always exists.
    pub fn root() -> DocId {
        DocId(Self::ROOT.into())
    }

    pub fn is_root(&self) -> bool {
        &*self.0 == Self::ROOT
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id's segments, outermost folder first.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The case-folded form: two ids with equal folded forms may not coexist,
    /// since they would collide on a case-insensitive file system.
    pub fn folded(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

/// Maps keyed by id can be searched with a plain string: ids compare,
/// hash and order as their text does.
impl std::borrow::Borrow<str> for DocId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DocId({})", self.0)
    }
}

impl std::str::FromStr for DocId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DocId::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, expect: Result<&str, IdError>) {
        assert_eq!(DocId::parse(raw).map(String::from), expect.map(str::to_owned), "{raw:?}");
    }

    #[test]
    fn accepts_plain_and_nested_ids() {
        check("root", Ok("root"));
        check("project_overview", Ok("project_overview"));
        check("db-schema-2", Ok("db-schema-2"));
        check("projects/silica", Ok("projects/silica"));
        check("a/b/c", Ok("a/b/c"));
        check(&"x".repeat(128), Ok(&"x".repeat(128)));
    }

    #[test]
    fn rejects_everything_else() {
        check("", Err(IdError::Empty));
        check(&"x".repeat(129), Err(IdError::TooLong { len: 129 }));
        check("/a", Err(IdError::EmptySegment));
        check("a/", Err(IdError::EmptySegment));
        check("a//b", Err(IdError::EmptySegment));
        check("..", Err(IdError::InvalidChar { found: '.' }));
        check("a/../b", Err(IdError::InvalidChar { found: '.' }));
        check("a.md", Err(IdError::InvalidChar { found: '.' }));
        check("a b", Err(IdError::InvalidChar { found: ' ' }));
        check("a\0b", Err(IdError::InvalidChar { found: '\0' }));
        check("a\\b", Err(IdError::InvalidChar { found: '\\' }));
        check("a\nb", Err(IdError::InvalidChar { found: '\n' }));
        check("メモ", Err(IdError::InvalidChar { found: 'メ' }));
        check("é", Err(IdError::InvalidChar { found: 'é' }));
    }

    #[test]
    fn folding_ignores_ascii_case_only() {
        assert_eq!(DocId::parse("Foo/Bar").unwrap().folded(), "foo/bar");
    }
}
