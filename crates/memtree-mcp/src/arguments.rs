//! Checks a tool call's arguments against the tool's input schema before
//! dispatch, so that a wrong argument gets the spec's `Error: <argument>:
//! <what is wrong>` text (as a tool error the agent can correct, which is
//! what MCP 2025-11-25 asks for input validation) instead of a serde message.
//!
//! Tool inputs here are flat objects of strings, so the check covers what
//! such a schema can say: known names, required names, JSON types. An
//! optional argument may be `null`, meaning absent.
//!
//! [`compact_schema`] shrinks the schemas schemars generates to what a
//! client needs, since every client pays for `tools/list` in every session.

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

/// The spec-form error for the first problem in `arguments`, if any.
pub fn check(tool: &Tool, arguments: Option<&JsonObject>) -> Result<(), String> {
    let schema = &tool.input_schema;
    let properties = schema.get("properties").and_then(Value::as_object);
    let known = || properties.map(|p| p.keys().cloned().collect::<Vec<_>>().join(", ")).unwrap_or_default();
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, value) in arguments {
        let Some(property) = properties.and_then(|p| p.get(name)) else {
            let expected = match known() {
                k if k.is_empty() => "this tool takes no arguments".to_owned(),
                k => format!("expected one of: {k}"),
            };
            return Err(format!("Error: {}: unknown argument ({expected})", printable(name)));
        };
        if value.is_null() && !required.contains(&name.as_str()) {
            continue;
        }
        if let Some(what) = mismatch(value, property) {
            return Err(format!("Error: {name}: {what}"));
        }
    }
    if let Some(name) = required.into_iter().find(|n| !arguments.contains_key(*n)) {
        return Err(format!("Error: {name}: missing (required)"));
    }
    Ok(())
}

/// The schema without what a client can do without: `$schema` (MCP's
/// default dialect is the one schemars writes), `minimum` (an unsigned
/// format says it) and other formats, and `null` in the types of optional
/// arguments (leaving an argument out says the same).
pub fn compact_schema(schema: &JsonObject) -> JsonObject {
    let mut out = JsonObject::new();
    for (key, value) in schema {
        match (key.as_str(), value) {
            ("format", Value::String(f)) if f.starts_with("uint") => {
                out.insert(key.clone(), value.clone());
            }
            ("$schema" | "format" | "minimum", _) => {}
            ("type", Value::Array(types)) => {
                let types: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
                out.insert(
                    key.clone(),
                    if types.len() == 1 {
                        types[0].clone()
                    } else {
                        Value::from_iter(types.into_iter().cloned())
                    },
                );
            }
            ("properties", Value::Object(properties)) => {
                let properties = properties.iter().map(|(name, property)| match property {
                    Value::Object(p) => (name.clone(), Value::Object(compact_schema(p))),
                    other => (name.clone(), other.clone()),
                });
                out.insert(key.clone(), Value::Object(properties.collect()));
            }
            (_, Value::Object(inner)) => {
                out.insert(key.clone(), Value::Object(compact_schema(inner)));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// What is wrong with `value` against `schema`, if anything: its type (an
/// integer is a number too), the range of an unsigned integer format, and
/// the items of an array and the values of a map, recursively.
fn mismatch(value: &Value, schema: &Value) -> Option<String> {
    if let Some(types) = schema.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let found = json_type(value);
        let fits = allowed.contains(&found) || (found == "integer" && allowed.contains(&"number"));
        if !allowed.is_empty() && !fits {
            let wanted = allowed.iter().filter(|t| **t != "null").copied().collect::<Vec<_>>().join(" or ");
            return Some(format!("expected {wanted}, got {found}"));
        }
    }
    let max = match schema.get("format").and_then(Value::as_str) {
        Some("uint8") => Some(u64::from(u8::MAX)),
        Some("uint16") => Some(u64::from(u16::MAX)),
        Some("uint32") => Some(u64::from(u32::MAX)),
        Some("uint64" | "uint") => Some(u64::MAX),
        _ => None,
    };
    if let (Some(max), Value::Number(n)) = (max, value)
        && n.as_u64().is_none_or(|n| n > max)
    {
        return Some(format!("expected an integer from 0 to {max}, got {n}"));
    }
    match value {
        Value::Array(items) => {
            let item = schema.get("items")?;
            items.iter().find_map(|v| mismatch(v, item))
        }
        Value::Object(map) => {
            let each = schema.get("additionalProperties").filter(|s| s.is_object())?;
            map.values().find_map(|v| mismatch(v, each))
        }
        _ => None,
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An argument name as it can be shown: at most 64 characters, no controls.
fn printable(name: &str) -> String {
    name.chars().filter(|c| !c.is_control()).take(64).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn tool() -> Tool {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "id": { "type": ["string", "null"] }, "content": { "type": "string" } },
            "required": ["content"],
        });
        Tool::new("t", "d", Arc::new(schema.as_object().unwrap().clone()))
    }

    fn check_json(args: Value) -> Result<(), String> {
        check(&tool(), args.as_object())
    }

    #[test]
    fn accepts_what_the_schema_allows() {
        assert_eq!(check_json(serde_json::json!({ "content": "x" })), Ok(()));
        assert_eq!(check_json(serde_json::json!({ "id": null, "content": "x" })), Ok(()));
    }

    #[test]
    fn names_the_argument_that_is_wrong() {
        let cases = [
            (
                serde_json::json!({ "content": "x", "bogus": 1 }),
                "Error: bogus: unknown argument (expected one of: content, id)",
            ),
            (serde_json::json!({ "content": 5 }), "Error: content: expected string, got integer"),
            (serde_json::json!({ "id": ["a"], "content": "x" }), "Error: id: expected string, got array"),
            (serde_json::json!({ "id": "a" }), "Error: content: missing (required)"),
        ];
        for (args, expected) in cases {
            assert_eq!(check_json(args.clone()), Err(expected.to_owned()), "{args}");
        }
        let bare = Tool::new(
            "t",
            "d",
            Arc::new(serde_json::json!({ "type": "object" }).as_object().unwrap().clone()),
        );
        assert_eq!(
            check(&bare, serde_json::json!({ "x": 1 }).as_object()),
            Err("Error: x: unknown argument (this tool takes no arguments)".to_owned())
        );
    }

    /// Disagreements with serde that the tool_arguments fuzz target found.
    #[test]
    fn agrees_with_what_serde_accepts() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "limit": { "type": "integer", "format": "uint32" },
                "priority": { "type": "number" },
                "plan": { "type": "object", "additionalProperties": { "type": "array", "items": { "type": "string" } } },
            },
        });
        let t = Tool::new("t", "d", Arc::new(schema.as_object().unwrap().clone()));
        let run = |args: Value| check(&t, args.as_object());
        assert_eq!(run(serde_json::json!({ "priority": 1 })), Ok(()), "an integer is a number");
        assert_eq!(
            run(serde_json::json!({ "limit": -1 })),
            Err("Error: limit: expected an integer from 0 to 4294967295, got -1".to_owned())
        );
        assert_eq!(
            run(serde_json::json!({ "limit": 4294967296u64 })),
            Err("Error: limit: expected an integer from 0 to 4294967295, got 4294967296".to_owned())
        );
        assert_eq!(run(serde_json::json!({ "plan": { "a": ["x"] } })), Ok(()));
        assert_eq!(
            run(serde_json::json!({ "plan": { "a": "x" } })),
            Err("Error: plan: expected array, got string".to_owned())
        );
        assert_eq!(
            run(serde_json::json!({ "plan": { "a": [1] } })),
            Err("Error: plan: expected string, got integer".to_owned())
        );
        assert_eq!(
            run(serde_json::json!({ "nope": null })),
            Err("Error: nope: unknown argument (expected one of: limit, plan, priority)".to_owned())
        );
    }
}
