//! Claude Code transcripts: `~/.claude/projects/<project>/<session>.jsonl`,
//! one record per line. `user` and `assistant` records carry `sessionId`,
//! `cwd`, `timestamp` and `isSidechain` (a sub-agent's records, inline or
//! in an `agent-<id>.jsonl` of their own with `agentId`); `message.content`
//! is a string or an array of `text`, `tool_use`, `tool_result` and
//! `thinking` parts. Records of other kinds (`summary`, `system`,
//! snapshots, queue operations) are known and skipped or used for the
//! title; kinds not known are counted, never fatal.

use serde_json::Value;

use crate::record::{Event, FileState, Item, MAX_OUTPUT, Parsed, capped};

/// User texts that Claude Code injects rather than the user typing them.
const NOT_TYPED: &[&str] = &[
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<command-args>",
    "[Request interrupted by user",
];

/// The tools whose `file_path` is a file they touch.
const FILE_TOOLS: &[&str] = &["Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "NotebookRead"];

pub fn parse(line: &str, state: &mut FileState) -> Parsed {
    let Ok(record) = serde_json::from_str::<Value>(line) else { return Parsed::Malformed };
    let str_of = |key: &str| record.get(key).and_then(Value::as_str);
    match str_of("type") {
        Some("summary") => match str_of("summary") {
            Some(title) => {
                Parsed::Events(vec![Event { time: None, sidechain: false, item: Item::Title(title.into()) }])
            }
            None => Parsed::Malformed,
        },
        Some(kind @ ("user" | "assistant")) => {
            if let Some(session) = str_of("sessionId") {
                state.session.get_or_insert_with(|| session.to_owned());
            }
            if let Some(cwd) = str_of("cwd") {
                state.cwd.get_or_insert_with(|| cwd.to_owned());
            }
            if let Some(agent) = str_of("agentId") {
                state.agent.get_or_insert_with(|| agent.to_owned());
            }
            let Some(message) = record.get("message") else { return Parsed::Malformed };
            let time = str_of("timestamp").map(str::to_owned);
            let sidechain = record.get("isSidechain").and_then(Value::as_bool).unwrap_or(false);
            let injected = ["isMeta", "isCompactSummary"]
                .iter()
                .any(|k| record.get(*k).and_then(Value::as_bool) == Some(true));
            let items = if kind == "user" {
                user_items(message, sidechain, injected)
            } else {
                assistant_items(message, state)
            };
            Parsed::Events(
                items.into_iter().map(|item| Event { time: time.clone(), sidechain, item }).collect(),
            )
        }
        Some("system" | "file-history-snapshot" | "queue-operation") => Parsed::Skipped,
        Some(_) | None => Parsed::Unknown,
    }
}

fn user_items(message: &Value, sidechain: bool, injected: bool) -> Vec<Item> {
    let mut items = Vec::new();
    let mut text = String::new();
    match message.get("content") {
        Some(Value::String(s)) => text.push_str(s),
        Some(Value::Array(parts)) => {
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        text.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default())
                    }
                    Some("tool_result") => {
                        let output = result_text(part.get("content"));
                        if !output.is_empty() {
                            items.push(Item::Output(capped(&output, MAX_OUTPUT).to_owned()));
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    let text = text.trim();
    if text.is_empty() || injected || NOT_TYPED.iter().any(|p| text.starts_with(p)) {
        return items;
    }
    // A sub-agent's prompt is the parent agent's words, not the user's.
    items.push(if sidechain || !items.is_empty() {
        Item::Reply(text.into())
    } else {
        Item::Request(text.into())
    });
    items
}

fn assistant_items(message: &Value, state: &FileState) -> Vec<Item> {
    let Some(Value::Array(parts)) = message.get("content") else {
        return match message.get("content").and_then(Value::as_str) {
            Some(text) if !text.trim().is_empty() => vec![Item::Reply(text.trim().into())],
            _ => Vec::new(),
        };
    };
    let mut items = Vec::new();
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = part.get("text").and_then(Value::as_str).unwrap_or_default().trim();
                if !text.is_empty() {
                    items.push(Item::Reply(text.into()));
                }
            }
            Some("tool_use") => {
                let name = part.get("name").and_then(Value::as_str).unwrap_or("tool").to_owned();
                let input = part.get("input").cloned().unwrap_or(Value::Null);
                let arg = |k: &str| input.get(k).and_then(Value::as_str);
                let detail = ["command", "file_path", "pattern", "description", "url", "query", "path"]
                    .iter()
                    .find_map(|k| arg(k))
                    .map_or_else(|| capped(&input.to_string(), 200).to_owned(), str::to_owned);
                let files = match arg("file_path").or_else(|| arg("notebook_path")) {
                    Some(path) if FILE_TOOLS.contains(&name.as_str()) => {
                        vec![relative(path, state.cwd.as_deref())]
                    }
                    _ => Vec::new(),
                };
                items.push(Item::Tool { name, detail, files });
            }
            _ => {}
        }
    }
    items
}

/// A tool result's text: a string, or its `text` parts.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

/// `path` relative to `cwd` when it is under it.
fn relative(path: &str, cwd: Option<&str>) -> String {
    cwd.and_then(|c| path.strip_prefix(c.trim_end_matches('/')))
        .and_then(|p| p.strip_prefix('/'))
        .unwrap_or(path)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(line: &str) -> Vec<Item> {
        match parse(line, &mut FileState::default()) {
            Parsed::Events(events) => events.into_iter().map(|e| e.item).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn requests_are_what_the_user_typed() {
        let typed = r#"{"type":"user","sessionId":"s","cwd":"/p","timestamp":"t","message":{"role":"user","content":"fix it"}}"#;
        assert_eq!(events(typed), [Item::Request("fix it".into())]);
        let meta = r#"{"type":"user","isMeta":true,"message":{"content":"Caveat: …"}}"#;
        assert_eq!(events(meta), []);
        let command = r#"{"type":"user","message":{"content":"<command-name>/model</command-name>"}}"#;
        assert_eq!(events(command), []);
        let side = r#"{"type":"user","isSidechain":true,"message":{"content":"search the code"}}"#;
        assert_eq!(events(side), [Item::Reply("search the code".into())]);
    }

    #[test]
    fn tool_calls_name_their_files_relative_to_the_cwd() {
        let mut state = FileState { cwd: Some("/home/a/p".into()), ..FileState::default() };
        let line = r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hm"},
            {"type":"text","text":"Reading."},
            {"type":"tool_use","id":"t","name":"Read","input":{"file_path":"/home/a/p/src/q.ts"}},
            {"type":"tool_use","id":"u","name":"Bash","input":{"command":"npm test"}}]}}"#
            .replace('\n', "");
        let Parsed::Events(got) = parse(&line, &mut state) else { panic!() };
        let items: Vec<Item> = got.into_iter().map(|e| e.item).collect();
        assert_eq!(
            items,
            [
                Item::Reply("Reading.".into()),
                Item::Tool {
                    name: "Read".into(),
                    detail: "/home/a/p/src/q.ts".into(),
                    files: vec!["src/q.ts".into()]
                },
                Item::Tool { name: "Bash".into(), detail: "npm test".into(), files: vec![] },
            ]
        );
    }

    #[test]
    fn unknown_and_broken_lines_are_told_apart() {
        let mut state = FileState::default();
        assert_eq!(parse(r#"{"type":"telemetry-flush"}"#, &mut state), Parsed::Unknown);
        assert_eq!(parse(r#"{"type":"assistant","mess"#, &mut state), Parsed::Malformed);
        assert_eq!(parse(r#"{"type":"system","content":"hook"}"#, &mut state), Parsed::Skipped);
    }
}
