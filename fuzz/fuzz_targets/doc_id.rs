//! `DocId::parse` on arbitrary strings, against an independent statement of
//! the rule: one or more `[A-Za-z0-9_-]+` segments joined by `/`, at most
//! 128 bytes. Accepted ids round-trip through `as_str`, `Display`,
//! `FromStr` and serde; refused ones give the error the rule names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memtree_core::{DocId, IdError};

/// The rule, written out again without looking at how `parse` does it.
fn expected(raw: &str) -> Result<(), IdError> {
    if raw.is_empty() {
        return Err(IdError::Empty);
    }
    if raw.len() > DocId::MAX_LEN {
        return Err(IdError::TooLong { len: raw.len() });
    }
    for segment in raw.split('/') {
        if segment.is_empty() {
            return Err(IdError::EmptySegment);
        }
        for c in segment.chars() {
            if !matches!(c, 'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '-') {
                return Err(IdError::InvalidChar { found: c });
            }
        }
    }
    Ok(())
}

fn check(raw: &str) {
    let parsed = DocId::parse(raw);
    assert_eq!(parsed.as_ref().map(|_| ()).map_err(Clone::clone), expected(raw), "{raw:?}");
    let from_str = raw.parse::<DocId>();
    assert_eq!(from_str, parsed, "FromStr disagrees with parse for {raw:?}");
    let from_serde = serde_json::from_value::<DocId>(serde_json::Value::String(raw.to_owned()));
    assert_eq!(from_serde.is_ok(), parsed.is_ok(), "serde disagrees with parse for {raw:?}");
    match parsed {
        Ok(id) => {
            assert!(raw.len() <= DocId::MAX_LEN);
            assert!(raw.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'/'));
            assert!(!raw.starts_with('/') && !raw.ends_with('/') && !raw.contains("//"));
            assert_eq!(id.as_str(), raw);
            assert_eq!(id.to_string(), raw);
            assert_eq!(String::from(id.clone()), raw);
            assert_eq!(id.segments().collect::<Vec<_>>().join("/"), raw);
            assert!(id.segments().all(|s| !s.is_empty()));
            assert_eq!(id.folded(), raw.to_ascii_lowercase());
            assert_eq!(id.is_root(), raw == DocId::ROOT);
            // No path trick survives validation.
            assert!(!id.segments().any(|s| s == "." || s == ".."));
            let json = serde_json::to_string(&id).expect("an id serialises");
            assert_eq!(json, format!("\"{raw}\""));
            assert_eq!(serde_json::from_str::<DocId>(&json).expect("and reads back"), id);
            assert_eq!(from_serde.expect("checked"), id);
        }
        Err(error) => {
            // The message names the problem and never panics to format.
            assert!(!error.to_string().is_empty());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    match std::str::from_utf8(data) {
        Ok(raw) => check(raw),
        // Bytes that are not UTF-8 still reach `parse` as text, lossily.
        Err(_) => check(&String::from_utf8_lossy(data)),
    }
});
