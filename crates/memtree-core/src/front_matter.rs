//! YAML front-matter: finding the block, validating its known keys.
//!
//! The block is kept byte for byte as the author wrote it (unknown keys,
//! comments and key order included); this module only splits it from the
//! body and checks it, so that a document is never rewritten by a parser.

use yaml_serde::Value;

use crate::line_ending::{self, BOM, LineEnding};

/// A document split into its front-matter block and its Markdown body:
/// `head` (a byte-order mark, then the block) followed by `body` is the
/// whole text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// Everything before the body: the byte-order mark and the block.
    pub head: &'a str,
    /// The whole block including both delimiter lines and the final line
    /// break.
    pub block: Option<&'a str>,
    /// The YAML between the delimiters.
    pub yaml: Option<&'a str>,
    pub body: &'a str,
}

/// Splits `text` at its front-matter block, if it starts with one (after
/// a byte-order mark, if any).
///
/// A block opens with `---` on the first line and closes with the next line
/// that is `---` or `...`; lines end in `\n`, `\r\n` or `\r`. An opening
/// line with no closing line is not a block: it is a Markdown thematic
/// break, and the text is all body.
pub fn split(text: &str) -> Split<'_> {
    let after_bom = text.strip_prefix(BOM).unwrap_or(text);
    let bom = &text[..text.len() - after_bom.len()];
    let no_block = Split { head: bom, block: None, yaml: None, body: after_bom };
    let mut lines = line_ending::lines(after_bom);
    match lines.next() {
        Some(open) if line_ending::content(open) == "---" && !line_ending::ending(open).is_empty() => {
            let mut offset = open.len();
            for line in lines {
                offset += line.len();
                if matches!(line_ending::content(line), "---" | "...") {
                    let (block, body) = after_bom.split_at(offset);
                    let yaml = &block[open.len()..block.len() - line.len()];
                    return Split {
                        head: &text[..bom.len() + offset],
                        block: Some(block),
                        yaml: Some(yaml),
                        body,
                    };
                }
            }
            no_block
        }
        _ => no_block,
    }
}

/// The known keys of a front-matter block. Unknown keys are allowed and kept
/// in the document, but not interpreted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrontMatter {
    pub summary: Option<String>,
    pub tags: Vec<String>,
    pub scope: Option<Scope>,
    pub priority: Option<f64>,
    pub confidence: Option<Confidence>,
    pub status: Option<Status>,
    /// `YYYY-MM-DD`, possibly followed by a time.
    pub expires: Option<String>,
    /// The id of the document that replaces this one.
    pub superseded_by: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    Agent,
    Project,
    Ephemeral,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Global, Scope::Agent, Scope::Project, Scope::Ephemeral];

    /// The scope a front-matter word names.
    pub fn parse(word: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == word)
    }

    /// The word front-matter uses for the scope.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Agent => "agent",
            Scope::Project => "project",
            Scope::Ephemeral => "ephemeral",
        }
    }
}

impl Status {
    /// The status a front-matter word names.
    pub fn parse(word: &str) -> Option<Status> {
        [Status::Active, Status::Deprecated].into_iter().find(|s| s.as_str() == word)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Deprecated => "deprecated",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confidence {
    Stable,
    Tentative,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Active,
    Deprecated,
}

/// Why a front-matter block was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    #[error("invalid front-matter YAML: {0}")]
    InvalidYaml(String),
    #[error("front-matter must be a YAML mapping of keys to values")]
    NotAMapping,
    #[error("front-matter key {key:?} must be {expected}")]
    InvalidKey { key: &'static str, expected: &'static str },
}

impl FrontMatter {
    /// Parses and validates the YAML of a block (`Split::yaml`).
    pub fn parse(yaml: &str) -> Result<FrontMatter, FrontMatterError> {
        if yaml.trim().is_empty() {
            return Ok(FrontMatter::default());
        }
        let value: Value =
            yaml_serde::from_str(yaml).map_err(|e| FrontMatterError::InvalidYaml(e.to_string()))?;
        let map = match value {
            Value::Mapping(map) => map,
            Value::Null => return Ok(FrontMatter::default()),
            _ => return Err(FrontMatterError::NotAMapping),
        };
        let get = |key: &str| map.get(key).filter(|v| !v.is_null());
        let mut fm = FrontMatter::default();
        if let Some(v) = get("summary") {
            let s = scalar_string(v).ok_or(invalid("summary", "one line of text"))?;
            if s.contains('\n') {
                return Err(invalid("summary", "one line of text"));
            }
            fm.summary = Some(s);
        }
        if let Some(v) = get("tags") {
            fm.tags = match v {
                Value::Sequence(items) => items
                    .iter()
                    .map(scalar_string)
                    .collect::<Option<Vec<_>>>()
                    .ok_or(invalid("tags", "a list of words"))?,
                other => vec![scalar_string(other).ok_or(invalid("tags", "a list of words"))?],
            };
        }
        if let Some(v) = get("scope") {
            fm.scope = Some(
                v.as_str()
                    .and_then(Scope::parse)
                    .ok_or(invalid("scope", "one of global, agent, project, ephemeral"))?,
            );
        }
        if let Some(v) = get("priority") {
            match v.as_f64() {
                Some(p) if (0.0..=1.0).contains(&p) => fm.priority = Some(p),
                _ => return Err(invalid("priority", "a number from 0 to 1")),
            }
        }
        if let Some(v) = get("confidence") {
            fm.confidence = Some(match v.as_str() {
                Some("stable") => Confidence::Stable,
                Some("tentative") => Confidence::Tentative,
                _ => return Err(invalid("confidence", "stable or tentative")),
            });
        }
        if let Some(v) = get("status") {
            fm.status =
                Some(v.as_str().and_then(Status::parse).ok_or(invalid("status", "active or deprecated"))?);
        }
        if let Some(v) = get("superseded_by") {
            match scalar_string(v) {
                Some(s) if crate::doc_id::DocId::parse(&s).is_ok() => fm.superseded_by = Some(s),
                _ => return Err(invalid("superseded_by", "a document id")),
            }
        }
        if let Some(v) = get("expires") {
            match scalar_string(v) {
                Some(s) if crate::date::is_date_prefix(&s) => fm.expires = Some(s),
                _ => return Err(invalid("expires", "a date (YYYY-MM-DD)")),
            }
        }
        Ok(fm)
    }
}

/// A block's top-level keys and their values as a person reads them: a
/// scalar as written, a list joined with commas, anything else as flow
/// YAML. Empty when the block is not a YAML mapping.
pub fn fields(yaml: &str) -> Vec<(String, String)> {
    let Ok(Value::Mapping(map)) = yaml_serde::from_str::<Value>(yaml) else { return Vec::new() };
    let show = |v: &Value| {
        scalar_string(v).unwrap_or_else(|| match v {
            Value::Null => String::new(),
            Value::Sequence(items) if items.iter().all(|i| scalar_string(i).is_some()) => {
                items.iter().filter_map(scalar_string).collect::<Vec<_>>().join(", ")
            }
            other => yaml_serde::to_string(other).unwrap_or_default().trim().replace('\n', " "),
        })
    };
    map.iter().map(|(k, v)| (scalar_string(k).unwrap_or_else(|| show(k)), show(v))).collect()
}

/// `text` with top-level keys of its front-matter block set (`Some`) or
/// removed (`None`), every other line kept as written (its line ending and
/// a byte-order mark included); a block is created when there is none.
/// Values are YAML scalars, quoted where needed; new lines take the
/// mapping's indentation and the document's line ending.
pub fn set_keys(text: &str, keys: &[(&str, Option<String>)]) -> String {
    let parts = split(text);
    let eol = LineEnding::of(text).as_str();
    let yaml = parts.yaml.unwrap_or("");
    // Each line's text and ending, so untouched lines come back as they were.
    let mut lines: Vec<(String, String)> = line_ending::lines(yaml)
        .map(|l| (line_ending::content(l).to_owned(), line_ending::ending(l).to_owned()))
        .collect();
    let blank = |l: &str| indentation(l).1.trim().is_empty();
    // The mapping's keys are at the indentation of its first line that is
    // not blank or a comment; new keys are written with that line's.
    let first =
        lines.iter().map(|(l, _)| l.as_str()).find(|l| !blank(l) && !indentation(l).1.starts_with('#'));
    let column = first.map_or(0, |l| indentation(l).0);
    let indent = first.map_or("", leading).to_owned();
    for (key, value) in keys {
        let at = lines
            .iter()
            .position(|(l, _)| matches!(indentation(l), (c, rest) if c == column && names_key(rest, key)));
        // A value goes on over lines indented further, blank ones (inside
        // a block scalar) and a sequence written at the mapping's column.
        let continuation = |i: usize| {
            let more = lines[i + 1..]
                .iter()
                .take_while(|(l, _)| {
                    let (c, rest) = indentation(l);
                    blank(l)
                        || c > column
                        || rest.starts_with('\t')
                        || (c == column && (rest == "-" || rest.starts_with("- ")))
                })
                .count();
            // Blank lines at the end separate it from what follows.
            more - lines[i + 1..i + 1 + more].iter().rev().take_while(|(l, _)| blank(l)).count()
        };
        let value_line = |indent: &str| value.as_ref().map(|v| format!("{indent}{key}: {}", scalar(v)));
        match at {
            Some(i) => {
                let end = i + continuation(i);
                match value_line(leading(&lines[i].0)) {
                    Some(line) => {
                        let ending = std::mem::take(&mut lines[end].1);
                        lines.splice(i..=end, [(line, ending)]);
                    }
                    None => drop(lines.drain(i..=end)),
                }
            }
            None => lines.extend(value_line(&indent).map(|line| (line, eol.to_owned()))),
        }
    }
    if lines.is_empty() && parts.block.is_none() {
        return text.to_owned();
    }
    let bom = if text.starts_with(BOM) { BOM } else { "" };
    let block = parts.block.unwrap_or("");
    let mut delimiters = line_ending::lines(block);
    let open = delimiters.next().map_or_else(|| format!("---{eol}"), str::to_owned);
    let mut close = delimiters.last().map_or_else(|| format!("---{eol}"), str::to_owned);
    if close.ends_with('\r') && parts.body.starts_with('\n') {
        // `\r` then the body's `\n` would read as one `\r\n`, taking the
        // body's first line break into the block.
        close.push('\n');
    }
    let mut out = format!("{bom}{open}");
    for (line, ending) in &lines {
        out.push_str(line);
        out.push_str(if ending.is_empty() { eol } else { ending });
    }
    out.push_str(&close);
    out.push_str(parts.body);
    out
}

/// A line's indentation in columns as libyaml counts it, and the rest: its
/// spaces, and a byte-order mark opening it, which libyaml skips but counts
/// as a column.
fn indentation(line: &str) -> (usize, &str) {
    let after_bom = line.strip_prefix(BOM);
    let rest = after_bom.unwrap_or(line).trim_start_matches(' ');
    (usize::from(after_bom.is_some()) + after_bom.unwrap_or(line).len() - rest.len(), rest)
}

/// The indentation a line opens with, as written.
fn leading(line: &str) -> &str {
    &line[..line.len() - indentation(line).1.len()]
}

/// Whether a top-level line of a YAML block mapping, after its
/// indentation, is `key`'s, as YAML reads it: the key plain or quoted,
/// blanks before the `:` allowed.
fn names_key(line: &str, key: &str) -> bool {
    let rest = [String::from(key), format!("\"{key}\""), format!("'{key}'")]
        .iter()
        .find_map(|written| line.strip_prefix(written.as_str()));
    rest.and_then(|r| r.trim_start_matches([' ', '\t']).strip_prefix(':'))
        .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
}

/// A string as a YAML scalar that reads back as the same string (or, for
/// a number, as that number).
fn scalar(value: &str) -> String {
    if value.chars().any(needs_escape) {
        // Only a double-quoted scalar keeps line breaks and controls.
        let mut out = String::from('"');
        for c in value.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if needs_escape(c) => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push(c),
            }
        }
        out.push('"');
        return out;
    }
    let plain = match yaml_serde::from_str::<Value>(value) {
        Ok(Value::String(s)) => s == value,
        Ok(Value::Number(_)) => value.parse::<f64>().is_ok(),
        _ => false,
    };
    if plain && !value.contains(['#', ':']) && !value.starts_with(['\'', '"', ' ']) {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', "''"))
    }
}

/// Whether YAML cannot carry `c` as itself in a scalar: controls, the
/// characters outside its printable set (a byte-order mark, U+FFFE, U+FFFF)
/// and the Unicode line and paragraph separators, which it reads as breaks.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}')
}

fn invalid(key: &'static str, expected: &'static str) -> FrontMatterError {
    FrontMatterError::InvalidKey { key, expected }
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_the_top_level_keys_as_a_person_reads_them() {
        let yaml = "summary: Postgres facts\ntags:\n  - db\n  - ops\n# a comment\nstatus: deprecated\n\
                    owner: {name: Ada}\nnote: |\n  two\n  lines\n";
        assert_eq!(
            fields(yaml),
            [
                ("summary", "Postgres facts"),
                ("tags", "db, ops"),
                ("status", "deprecated"),
                ("owner", "name: Ada"),
                ("note", "two\nlines\n"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert!(fields("- not\n- a mapping\n").is_empty());
        assert!(fields(": : bad").is_empty());
    }

    #[test]
    fn splits_a_block_and_keeps_it_verbatim() {
        let text = "---\n# a comment\ntags: [a, b]\nx-custom: 1\n---\n# Title\n";
        let s = split(text);
        assert_eq!(s.block, Some("---\n# a comment\ntags: [a, b]\nx-custom: 1\n---\n"));
        assert_eq!(s.yaml, Some("# a comment\ntags: [a, b]\nx-custom: 1\n"));
        assert_eq!(s.body, "# Title\n");
    }

    #[test]
    fn dots_close_a_block_and_crlf_is_accepted() {
        let s = split("---\r\nsummary: x\r\n...\r\nbody");
        assert_eq!(s.yaml, Some("summary: x\r\n"));
        assert_eq!(s.body, "body");
    }

    #[test]
    fn no_block_without_an_opening_or_closing_line() {
        for text in ["# Title\n---\nx: 1\n---\n", "---\nunclosed: 1\n", " ---\nx: 1\n---\n", ""] {
            let s = split(text);
            assert_eq!((s.block, s.body), (None, text), "{text:?}");
        }
    }

    #[test]
    fn keys_are_set_in_place_and_the_rest_is_kept() {
        let text = "---\n# mine\ntags:\n  - a\nstatus: active\n---\n# Doc\n";
        let set = set_keys(
            text,
            &[("status", Some("deprecated".into())), ("why", Some("moved: see x".into())), ("tags", None)],
        );
        assert_eq!(set, "---\n# mine\nstatus: deprecated\nwhy: 'moved: see x'\n---\n# Doc\n");
        assert_eq!(FrontMatter::parse(split(&set).yaml.unwrap()).unwrap().status, Some(Status::Deprecated));
        assert_eq!(
            set_keys("# Doc\n", &[("priority", Some("0.9".into()))]),
            "---\npriority: 0.9\n---\n# Doc\n"
        );
        assert_eq!(set_keys("# Doc\n", &[("why", None)]), "# Doc\n");
    }

    #[test]
    fn parses_known_keys() {
        let fm = FrontMatter::parse(
            "summary: Where the DB lives\ntags: [db, infra]\nscope: project\npriority: 0.8\n\
             confidence: tentative\nstatus: deprecated\nexpires: 2026-12-31\nowner: me\n",
        )
        .unwrap();
        assert_eq!(fm.summary.as_deref(), Some("Where the DB lives"));
        assert_eq!(fm.tags, ["db", "infra"]);
        assert_eq!(fm.scope, Some(Scope::Project));
        assert_eq!(fm.priority, Some(0.8));
        assert_eq!(fm.confidence, Some(Confidence::Tentative));
        assert_eq!(fm.status, Some(Status::Deprecated));
        assert_eq!(fm.expires.as_deref(), Some("2026-12-31"));
    }

    #[test]
    fn yaml_1_1_booleans_stay_strings_in_unknown_keys() {
        assert!(FrontMatter::parse("on: off\nyes_is_string: yes\n").is_ok());
    }

    #[test]
    fn rejects_invalid_yaml_and_invalid_values() {
        type IsExpected = fn(&FrontMatterError) -> bool;
        let cases: &[(&str, IsExpected)] = &[
            ("tags: [a, b\n", |e| matches!(e, FrontMatterError::InvalidYaml(_))),
            ("key: : :\n  - x\n", |e| matches!(e, FrontMatterError::InvalidYaml(_))),
            ("- a\n- b\n", |e| *e == FrontMatterError::NotAMapping),
            ("scope: team\n", |e| matches!(e, FrontMatterError::InvalidKey { key: "scope", .. })),
            ("priority: 2\n", |e| matches!(e, FrontMatterError::InvalidKey { key: "priority", .. })),
            ("priority: high\n", |e| matches!(e, FrontMatterError::InvalidKey { key: "priority", .. })),
            ("status: gone\n", |e| matches!(e, FrontMatterError::InvalidKey { key: "status", .. })),
            ("confidence: 1\n", |e| matches!(e, FrontMatterError::InvalidKey { key: "confidence", .. })),
            ("expires: soon\n", |e| matches!(e, FrontMatterError::InvalidKey { key: "expires", .. })),
            ("summary: {a: 1}\n", |e| matches!(e, FrontMatterError::InvalidKey { key: "summary", .. })),
            ("summary: \"two\\nlines\"\n", |e| {
                matches!(e, FrontMatterError::InvalidKey { key: "summary", .. })
            }),
        ];
        for (yaml, is_expected) in cases {
            let err = FrontMatter::parse(yaml).unwrap_err();
            assert!(is_expected(&err), "{yaml:?} gave {err:?}");
        }
    }

    #[test]
    fn alias_bomb_is_refused_quickly() {
        let bomb = "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n\
                    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n\
                    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n\
                    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n";
        assert!(matches!(FrontMatter::parse(bomb), Err(FrontMatterError::InvalidYaml(_))));
    }

    /// Inputs the front_matter fuzz target found.
    #[test]
    fn set_keys_values_read_back_and_only_their_key_is_replaced() {
        let reads = |text: &str, key: &str| -> Option<Value> {
            let yaml = split(text).yaml.unwrap();
            let map: std::collections::BTreeMap<String, Value> = yaml_serde::from_str(yaml).unwrap();
            map.get(key).cloned()
        };
        for why in [
            "a\nb",
            "line\n---\nafter",
            "tab\there",
            "bell\u{7}",
            "quote \" and \\ back",
            "0\r\r\u{ffff}\u{1}\u{6}",
            "bom\u{feff}",
            "\u{fffe}",
            "line\u{2028}para\u{2029}end",
            "nel\u{85}",
        ] {
            let text = set_keys("# x\n", &[("why", Some(why.to_owned()))]);
            assert_eq!(reads(&text, "why"), Some(Value::String(why.to_owned())), "{text}");
            assert_eq!(split(&text).body, "# x\n");
        }
        // A new block in an old Mac document whose body starts with `\n`
        // keeps that line break in the body.
        let text = "\u{feff}\n\rbody\rmore\r";
        let set = set_keys(text, &[("why", Some("x".to_owned()))]);
        assert_eq!(split(&set).body, "\n\rbody\rmore\r");
        assert!(set.starts_with('\u{feff}'));
        let big = set_keys("# x\n", &[("priority", Some("44414414411444114441".to_owned()))]);
        assert_eq!(reads(&big, "priority"), Some(Value::String("44414414411444114441".to_owned())));
        let number = set_keys("# x\n", &[("priority", Some("0.5".to_owned()))]);
        assert!(matches!(reads(&number, "priority"), Some(Value::Number(_))));
        // A longer key that starts with the same word is another key.
        let text = "---\nexpires:x: 1\nexpires: 2020-01-01\n---\n# x\n";
        let set = set_keys(text, &[("expires", Some("2030-01-01".to_owned()))]);
        assert_eq!(set, "---\nexpires:x: 1\nexpires: 2030-01-01\n---\n# x\n");
        // A sequence at column 0 and a block scalar with a blank line go with their key.
        let text = "---\nwhy:\n- a\n- b\nnote: |\n  one\n\n  two\nscope: agent\n---\nbody\n";
        let set = set_keys(text, &[("why", Some("c".to_owned())), ("note", None)]);
        assert_eq!(set, "---\nwhy: c\nscope: agent\n---\nbody\n");
        // A byte-order mark opening the YAML does not hide its first key.
        let text = "---\n\u{feff}why: |5-\n---\nbody\n";
        assert_eq!(set_keys(text, &[("why", None)]), "---\n---\nbody\n");
        // Keys go at the mapping's indentation, which a byte-order mark
        // opening a line adds to (libyaml counts it as a column).
        let text = "---\n\u{feff}summary: s\n---\nbody\n";
        let set = set_keys(text, &[("why", Some("w".to_owned()))]);
        assert_eq!(set, "---\n\u{feff}summary: s\n\u{feff}why: w\n---\nbody\n");
        assert_eq!(reads(&set, "summary"), Some(Value::String("s".to_owned())));
        assert_eq!(reads(&set, "why"), Some(Value::String("w".to_owned())));
        let text = "---\n# c\n  a: 1\n  why: x\n  b: |\n    y\n---\nbody\n";
        let set = set_keys(text, &[("why", Some("w".to_owned())), ("status", Some("active".to_owned()))]);
        assert_eq!(set, "---\n# c\n  a: 1\n  why: w\n  b: |\n    y\n  status: active\n---\nbody\n");
        // A line a mark indents under a mapping at column 0 is a value's.
        let text = "---\na:\n\u{feff}why: x\n---\nbody\n";
        let set = set_keys(text, &[("why", Some("w".to_owned()))]);
        assert_eq!(set, "---\na:\n\u{feff}why: x\nwhy: w\n---\nbody\n");
        // Nor do blanks before the colon or quotes around the key.
        let text = "---\nstatus  : active\n'scope': agent\n\"why\"\t: x\n---\nbody\n";
        let set = set_keys(text, &[("status", None), ("scope", None), ("why", Some("y".to_owned()))]);
        assert_eq!(set, "---\nwhy: y\n---\nbody\n");
    }
}
