//! Codex CLI transcripts: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.
//! Current files wrap every line as `{timestamp, type, payload}`
//! (`session_meta`, `response_item`, `event_msg`, `turn_context`,
//! `compacted`); older ones start with a bare `{id, timestamp,
//! instructions}` header followed by bare items and `record_type` lines.
//! Items are `message`s (the user's requests, once the injected
//! environment and instructions are set aside), tool calls (`shell`,
//! `local_shell_call`, `apply_patch`) and their output. `event_msg`
//! repeats what the items say, so it is skipped.

use serde_json::Value;

use crate::record::{Event, FileState, Item, MAX_OUTPUT, Parsed, capped, patched_files};

/// User messages Codex injects rather than the user typing them.
const INJECTED: &[&str] = &["<environment_context>", "<user_instructions>", "# AGENTS.md instructions"];

pub fn parse(line: &str, state: &mut FileState) -> Parsed {
    let Ok(record) = serde_json::from_str::<Value>(line) else { return Parsed::Malformed };
    let time = record.get("timestamp").and_then(Value::as_str).map(str::to_owned);
    let mark =
        |time: Option<String>| Parsed::Events(vec![Event { time, sidechain: false, item: Item::Mark }]);
    if record.get("record_type").is_some() {
        return Parsed::Skipped;
    }
    let Some(payload) = record.get("payload") else {
        // The older format: a bare header, then bare items.
        if record.get("type").is_none() {
            if let Some(id) = record.get("id").and_then(Value::as_str) {
                state.session.get_or_insert_with(|| id.to_owned());
                return mark(time);
            }
            return Parsed::Unknown;
        }
        return item(&record, None, state);
    };
    match record.get("type").and_then(Value::as_str) {
        Some("session_meta") => {
            if let Some(id) = payload.get("id").and_then(Value::as_str) {
                state.session.get_or_insert_with(|| id.to_owned());
            }
            if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
                state.cwd.get_or_insert_with(|| cwd.to_owned());
            }
            mark(time)
        }
        Some("turn_context") => {
            if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
                state.cwd.get_or_insert_with(|| cwd.to_owned());
            }
            mark(time)
        }
        Some("response_item") => item(payload, time, state),
        Some("event_msg" | "compacted") => Parsed::Skipped,
        _ => Parsed::Unknown,
    }
}

fn item(item: &Value, time: Option<String>, state: &mut FileState) -> Parsed {
    let get = |k: &str| item.get(k).and_then(Value::as_str);
    let found = match get("type") {
        Some("message") => {
            let text: String = match item.get("content") {
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                Some(Value::String(s)) => s.clone(),
                _ => String::new(),
            };
            let text = text.trim();
            match get("role") {
                _ if text.is_empty() => None,
                Some("user") if text.starts_with("<environment_context>") => {
                    if let Some(cwd) = between(text, "<cwd>", "</cwd>") {
                        state.cwd.get_or_insert_with(|| cwd.to_owned());
                    }
                    None
                }
                Some("user") if INJECTED.iter().any(|p| text.starts_with(p)) => None,
                Some("user") => Some(Item::Request(text.into())),
                Some("assistant") => Some(Item::Reply(text.into())),
                _ => None,
            }
        }
        Some("function_call") => {
            let name = get("name").unwrap_or("function");
            let arguments: Value =
                get("arguments").and_then(|a| serde_json::from_str(a).ok()).unwrap_or(Value::Null);
            Some(command_call(name, arguments.get("command")))
        }
        Some("local_shell_call") => {
            Some(command_call("local_shell", item.get("action").and_then(|a| a.get("command"))))
        }
        Some("custom_tool_call") => {
            let name = get("name").unwrap_or("tool").to_owned();
            let input = get("input").unwrap_or_default();
            let files = if name == "apply_patch" { patched_files(input) } else { Vec::new() };
            Some(Item::Tool { name, detail: capped(input, 200).to_owned(), files })
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            let raw = match item.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            // The output is itself JSON with `output` and `metadata`, or plain text.
            let text = serde_json::from_str::<Value>(&raw)
                .ok()
                .and_then(|v| v.get("output").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or(raw);
            (!text.trim().is_empty()).then(|| Item::Output(capped(text.trim(), MAX_OUTPUT).to_owned()))
        }
        Some("reasoning") => None,
        _ => return Parsed::Unknown,
    };
    match found {
        Some(item) => Parsed::Events(vec![Event { time, sidechain: false, item }]),
        None if time.is_some() => Parsed::Events(vec![Event { time, sidechain: false, item: Item::Mark }]),
        None => Parsed::Skipped,
    }
}

/// A shell call: the command as typed (the script of `bash -lc`), or an
/// `apply_patch` run through the shell with the files it patches.
fn command_call(name: &str, command: Option<&Value>) -> Item {
    let words: Vec<&str> = match command {
        Some(Value::Array(words)) => words.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(s)) => vec![s.as_str()],
        _ => Vec::new(),
    };
    match words.as_slice() {
        ["apply_patch", patch, ..] => Item::Tool {
            name: "apply_patch".into(),
            detail: capped(patch, 200).into(),
            files: patched_files(patch),
        },
        [shell, flag, script] if shell.ends_with("sh") && flag.starts_with('-') => {
            match script.trim_start().strip_prefix("apply_patch") {
                Some(rest) => Item::Tool {
                    name: "apply_patch".into(),
                    detail: capped(rest, 200).into(),
                    files: patched_files(rest),
                },
                None => Item::Tool { name: name.into(), detail: (*script).into(), files: Vec::new() },
            }
        }
        words => Item::Tool { name: name.into(), detail: words.join(" "), files: Vec::new() },
    }
}

fn between<'t>(text: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(text[start..end].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(lines: &[&str]) -> (Vec<Item>, FileState) {
        let mut state = FileState::default();
        let mut out = Vec::new();
        for line in lines {
            if let Parsed::Events(events) = parse(line, &mut state) {
                out.extend(events.into_iter().map(|e| e.item).filter(|i| *i != Item::Mark));
            }
        }
        (out, state)
    }

    #[test]
    fn the_current_format_gives_requests_calls_and_files() {
        let (got, state) = items(&[
            r#"{"timestamp":"t0","type":"session_meta","payload":{"id":"019a","cwd":"/home/a/svc"}}"#,
            r#"{"timestamp":"t1","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/x</cwd>"}]}}"#,
            r#"{"timestamp":"t2","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the build"}]}}"#,
            r#"{"timestamp":"t2","type":"event_msg","payload":{"type":"user_message","message":"fix the build"}}"#,
            r#"{"timestamp":"t3","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cargo build\"]}","call_id":"c"}}"#,
            r#"{"timestamp":"t4","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Update File: src/main.rs\n*** End Patch","call_id":"d"}}"#,
            r#"{"timestamp":"t5","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"{\"output\":\"ok\",\"metadata\":{}}"}}"#,
        ]);
        assert_eq!(state.session.as_deref(), Some("019a"));
        assert_eq!(state.cwd.as_deref(), Some("/home/a/svc"));
        assert_eq!(
            got,
            [
                Item::Request("fix the build".into()),
                Item::Tool { name: "shell".into(), detail: "cargo build".into(), files: vec![] },
                Item::Tool {
                    name: "apply_patch".into(),
                    detail: "*** Begin Patch\n*** Update File: src/main.rs\n*** End Patch".into(),
                    files: vec!["src/main.rs".into()]
                },
                Item::Output("ok".into()),
            ]
        );
    }

    #[test]
    fn the_older_format_has_a_bare_header_and_items() {
        let (got, state) = items(&[
            r#"{"id":"8856","timestamp":"2025-08-21T16:40:12.904Z","instructions":"AGENTS"}"#,
            r#"{"record_type":"state"}"#,
            r#"{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/a/pay</cwd>\n</environment_context>"}]}"#,
            r#"{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"add idempotency keys"}]}"#,
            r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"apply_patch\",\"*** Add File: a.sql\\n\"]}","call_id":"c"}"#,
        ]);
        assert_eq!((state.session.as_deref(), state.cwd.as_deref()), (Some("8856"), Some("/home/a/pay")));
        assert_eq!(got[0], Item::Request("add idempotency keys".into()));
        assert!(
            matches!(&got[1], Item::Tool { name, files, .. } if name == "apply_patch" && files == &["a.sql"])
        );
    }
}
