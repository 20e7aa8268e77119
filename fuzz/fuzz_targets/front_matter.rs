//! `memtree_core::front_matter`: `split`, `FrontMatter::parse` and
//! `set_keys` on arbitrary text.
//!
//! Input: UTF-8, `TEXT` then optional `\0`-separated key operations:
//! `key=value` sets a key, a bare `key` removes it. A key that is not one of
//! the keys `Memory::set_lifecycle` writes (see `KEYS`) is mapped onto one.
//!
//! Findings already reported are tolerated unless `FUZZ_STRICT=1` (see
//! `check_set_keys`); saved examples are in `fuzz/regressions/front_matter/`.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use memtree_core::DocId;
use memtree_core::front_matter::{FrontMatter, set_keys, split};
use memtree_core::line_ending::{self, BOM};
use yaml_serde::Value;

/// The keys `set_lifecycle` sets or removes, the only caller of `set_keys`.
const KEYS: [&str; 6] = ["why", "status", "superseded_by", "scope", "priority", "expires"];

fn check_split(text: &str) {
    let s = split(text);
    // head + body is the text, byte for byte; the head is a BOM and the block.
    assert_eq!(s.head.len() + s.body.len(), text.len());
    assert!(text.starts_with(s.head) && text.ends_with(s.body));
    let after_bom = s.head.strip_prefix(BOM).unwrap_or(s.head);
    match (s.block, s.yaml) {
        (None, None) => assert!(after_bom.is_empty(), "a head without a block: {:?}", s.head),
        (Some(block), Some(yaml)) => {
            assert_eq!(after_bom, block);
            let open = line_ending::lines(block).next().expect("a block has lines");
            assert_eq!(line_ending::content(open), "---", "a block opens with a --- line");
            let close = block[open.len()..].strip_prefix(yaml).expect("the YAML follows the opening line");
            assert!(matches!(line_ending::content(close), "---" | "..."), "closing line {close:?}");
            assert_eq!(line_ending::lines(close).count(), 1, "{close:?}");
            // The block ends at the first closing line.
            assert!(
                line_ending::lines(yaml).all(|l| !matches!(line_ending::content(l), "---" | "...")),
                "the block does not close at its first closing line: {yaml:?}"
            );
        }
        other => panic!("block and yaml disagree: {other:?}"),
    }
}

fn check_parsed(fm: &FrontMatter) {
    if let Some(s) = &fm.summary {
        assert!(!s.contains('\n'), "{s:?}");
    }
    if let Some(p) = fm.priority {
        assert!((0.0..=1.0).contains(&p), "{p}");
    }
    if let Some(id) = &fm.superseded_by {
        assert!(DocId::parse(id).is_ok(), "{id:?}");
    }
    if let Some(e) = &fm.expires {
        let b = e.as_bytes();
        assert!(b.len() >= 10 && b[4] == b'-' && b[7] == b'-', "{e:?}");
    }
}

/// The YAML mapping of a block, if it reads as one (an empty block is one).
fn mapping(yaml: &str) -> Option<yaml_serde::Mapping> {
    if yaml.trim().is_empty() {
        return Some(yaml_serde::Mapping::new());
    }
    match yaml_serde::from_str::<Value>(yaml).ok()? {
        Value::Mapping(m) => Some(m),
        Value::Null => Some(yaml_serde::Mapping::new()),
        _ => None,
    }
}

/// Whether a YAML value reads back as `expected` (a number as a number).
fn reads_back(value: &Value, expected: &str) -> bool {
    match value {
        Value::String(s) => s == expected,
        Value::Number(n) => {
            n.to_string() == expected
                || matches!((n.as_f64(), expected.parse::<f64>()), (Some(a), Ok(b)) if a == b || (a.is_nan() && b.is_nan()))
        }
        _ => false,
    }
}

/// A line's indentation in columns as libyaml counts it (spaces, and a
/// byte-order mark opening the line, skipped but counted as a column) and
/// the rest.
fn indentation(line: &str) -> (usize, &str) {
    let after_bom = line.strip_prefix(BOM);
    let rest = after_bom.unwrap_or(line).trim_start_matches(' ');
    (usize::from(after_bom.is_some()) + after_bom.unwrap_or(line).len() - rest.len(), rest)
}

/// The indentation and rest of a block's first line that is not blank or
/// a comment: the mapping's.
fn first_line(yaml: &str) -> Option<(usize, &str)> {
    yaml.lines().map(indentation).find(|(_, rest)| !rest.trim().is_empty() && !rest.starts_with('#'))
}

static STRICT: LazyLock<bool> = LazyLock::new(|| std::env::var_os("FUZZ_STRICT").is_some_and(|v| v == "1"));

fn check_set_keys(text: &str, ops: &[(&'static str, Option<String>)]) {
    let before = split(text);
    // Known: lines are split at `\n`, `\r\n` and `\r`, while YAML
    // (libyaml) also breaks lines at U+0085, U+2028 and U+2029. Reported;
    // tolerated unless `FUZZ_STRICT=1`.
    let other_breaks = |yaml: &str| yaml.contains(['\u{85}', '\u{2028}', '\u{2029}']);
    if !*STRICT && before.yaml.is_some_and(other_breaks) {
        return;
    }
    // Known: `split` closes a block only at an exact `---`/`...` line, but
    // YAML also takes `... ` (trailing blanks) as the end of the document, so
    // keys appended after it are in a second document: invalid. Reported;
    // tolerated unless `FUZZ_STRICT=1`.
    let document_end = |yaml: &str| yaml.lines().any(|l| matches!(l.trim_end(), "..." | "---"));
    if !*STRICT && before.yaml.is_some_and(document_end) {
        return;
    }
    // Known: `FrontMatter::parse` takes a block that Rust's `trim` leaves
    // empty as no keys, but YAML refuses some of those characters (a form
    // feed), and `set_keys` keeps them. Reported; tolerated unless
    // `FUZZ_STRICT=1`.
    let yaml_blank_by_trim_only = |yaml: &str| {
        yaml.trim().is_empty()
            && yaml.contains(|c: char| c.is_whitespace() && !matches!(c, ' ' | '\t' | '\n' | '\r'))
    };
    if !*STRICT && before.yaml.is_some_and(yaml_blank_by_trim_only) {
        return;
    }
    // Known: keys are added at the indentation of the mapping's first line,
    // which is invalid YAML when the mapping is not a block mapping (a flow
    // mapping, `{a: 1}`, or one opened by a tag, an anchor or a complex
    // key) or its first line is indented with a tab or a second
    // byte-order mark. Reported; tolerated unless `FUZZ_STRICT=1`.
    let not_a_block_mapping = |yaml: &str| {
        first_line(yaml).is_some_and(|(_, rest)| rest.starts_with(|c: char| "{?&!%\t\u{feff}".contains(c)))
    };
    if !*STRICT && before.yaml.is_some_and(not_a_block_mapping) {
        return;
    }
    // Known: a key's value is taken to go on over the lines after it
    // indented further, but a block sequence may start at the key's column
    // (`tags:\n- a\n- b`), so may other values (`why:\n|`), and a block
    // scalar may hold an empty line
    // (`why: |\n  a\n\n  b`); the lines after are left behind, and the YAML
    // is no longer valid. Reported; tolerated unless `FUZZ_STRICT=1`. Lines
    // are read here with the mapping's indentation taken off.
    let misread_continuation = |yaml: &str| {
        let column = first_line(yaml).map_or(0, |(c, _)| c);
        let lines: Vec<&str> = yaml
            .lines()
            .map(|l| match indentation(l) {
                (c, rest) if column > 0 && c >= column => &l[l.len() - rest.len() - (c - column)..],
                _ => l,
            })
            .collect();
        let indented = |l: &&str| l.starts_with([' ', '\t', '\u{feff}']);
        lines.iter().enumerate().any(|(i, line)| {
            if !ops.iter().any(|(key, _)| line.starts_with(&format!("{key}:"))) {
                return false;
            }
            let rest = &lines[i + 1..];
            let end = rest.iter().position(|l| !indented(l)).unwrap_or(rest.len());
            let value_at_column_0 =
                |l: &&str| l.starts_with(['-', '|', '>', '[', '{', '\'', '"', '!', '&', '*']);
            rest[end..]
                .iter()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| value_at_column_0(l) || (rest[end].trim().is_empty() && indented(l)))
        })
    };
    if !*STRICT && before.yaml.is_some_and(misread_continuation) {
        return;
    }
    // `set_keys` is given documents whose front-matter is valid.
    let Some(old) = mapping(before.yaml.unwrap_or("")) else { return };
    if before.yaml.is_some_and(|y| FrontMatter::parse(y).is_err()) {
        return;
    }
    // The last operation on a key wins.
    let mut last: Vec<(&str, &Option<String>)> = Vec::new();
    for (key, value) in ops {
        last.retain(|(k, _)| k != key);
        last.push((key, value));
    }
    let out = set_keys(text, ops);
    if before.block.is_none() && last.iter().all(|(_, v)| v.is_none()) {
        // Nothing to write and no block to write it in.
        assert_eq!(out, text);
        return;
    }
    let after = split(&out);
    assert_eq!(after.body, before.body, "set_keys changed the body: {out:?}");
    assert_eq!(out.starts_with(BOM), text.starts_with(BOM), "set_keys changed the byte-order mark: {out:?}");
    let yaml = after.yaml.unwrap_or_else(|| panic!("set_keys left no block: {out:?}"));
    let new = mapping(yaml).unwrap_or_else(|| panic!("set_keys made invalid YAML: {yaml:?}"));
    for (key, value) in &last {
        let got = new.get(*key);
        match value {
            Some(v) => assert!(
                got.is_some_and(|g| reads_back(g, v)),
                "{key} set to {v:?} reads back as {got:?} from {yaml:?}"
            ),
            None => assert!(got.is_none(), "{key} removed but reads {got:?} from {yaml:?}"),
        }
    }
    // Keys not touched keep their values.
    for (key, value) in &old {
        if key.as_str().is_some_and(|k| last.iter().any(|(l, _)| *l == k)) {
            continue;
        }
        assert_eq!(new.get(key), Some(value), "untouched key {key:?} changed in {yaml:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let mut parts = input.split('\0');
    let text = parts.next().unwrap_or("");
    let ops: Vec<(&'static str, Option<String>)> = parts
        .take(8)
        .map(|op| {
            let (key, value) = match op.split_once('=') {
                Some((k, v)) => (k, Some(v.to_owned())),
                None => (op, None),
            };
            let key = KEYS.iter().copied().find(|k| *k == key).unwrap_or(KEYS[key.len() % KEYS.len()]);
            (key, value)
        })
        .collect();

    check_split(text);
    // Parsing never panics, on a block's YAML or on any text.
    if let Some(yaml) = split(text).yaml
        && let Ok(fm) = FrontMatter::parse(yaml)
    {
        check_parsed(&fm);
    }
    if let Ok(fm) = FrontMatter::parse(text) {
        check_parsed(&fm);
    }
    check_set_keys(text, &ops);
});
