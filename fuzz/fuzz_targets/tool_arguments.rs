//! Tool-call arguments: `memtree_mcp::arguments::check` (the pre-dispatch
//! schema check) against serde, which rmcp then runs on the same object
//! (`serde_json::from_value` into the tool's argument struct).
//!
//! Input: bytes; when they are a JSON object, it is checked as the
//! arguments of every tool of a `MemtreeServer` over an in-memory store.
//!
//! Invariants: `check` never panics and its error is one printable line
//! starting `Error: `; `check` accepts exactly what serde accepts (a
//! disagreement either lets a malformed call through to a serde error, or
//! refuses a valid call).
//!
//! The argument structs live in memtree-mcp's private `server` module, so
//! the target mirrors them below; at start-up it checks that each mirror's
//! schema (by rmcp's own generator, compacted as the server does) equals
//! the server's, so a mirror that falls behind the server stops the target
//! instead of fuzzing the wrong thing.
//!
//! The disagreements found (saved in `fuzz/regressions/tool_arguments/`)
//! were fixed in a3798d5; the target now fails on any.
#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use libfuzzer_sys::fuzz_target;
use memtree_core::{Memory, MemorySettings, Namespaced};
use memtree_mcp::MemtreeServer;
use rmcp::model::{JsonObject, Tool};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

mod mirror {
    //! Field for field the structs of crates/memtree-mcp/src/server.rs.
    #![allow(dead_code)]
    use super::*;

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ReadDocumentArgs {
        pub id: Option<String>,
        pub section: Option<String>,
        pub version: Option<bool>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct EditDocumentArgs {
        pub id: String,
        pub old: Option<String>,
        pub new: String,
        pub section: Option<String>,
        pub base: Option<String>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct UpdateDocumentArgs {
        pub id: Option<String>,
        pub content: String,
        pub base: Option<String>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct HistoryArgs {
        pub id: Option<String>,
        pub limit: Option<u32>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RestoreArgs {
        pub id: String,
        pub version: Option<String>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct TreeArgs {
        pub summaries: Option<bool>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RememberArgs {
        pub content: String,
        pub document: Option<String>,
        pub section: Option<String>,
        pub mode: Option<String>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct LifecycleArgs {
        pub id: String,
        pub why: String,
        pub status: Option<String>,
        pub scope: Option<String>,
        pub priority: Option<f64>,
        pub expires: Option<String>,
        pub superseded_by: Option<String>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct SplitDocumentArgs {
        pub id: String,
        pub plan: Option<BTreeMap<String, Vec<String>>>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct MoveDocumentArgs {
        pub id: String,
        pub new_parent: String,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct SearchArgs {
        pub query: String,
        pub limit: Option<u32>,
        pub scope: Option<String>,
        pub under: Option<String>,
        pub json: Option<bool>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RecallArgs {
        pub task: String,
        pub budget: Option<u32>,
        pub scope: Option<String>,
    }
}

/// Serde's verdict on `args` as the arguments of the tool `name`.
type Deserializer = fn(&JsonObject) -> Result<(), String>;

fn de<T: DeserializeOwned>(args: &JsonObject) -> Result<(), String> {
    serde_json::from_value::<T>(Value::Object(args.clone())).map(drop).map_err(|e| e.to_string())
}

/// The schema the server gives for `T`: rmcp's, then compacted as
/// `MemtreeServer::new` does.
fn schema<T: schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    let generated = rmcp::handler::server::common::schema_for_input::<T>().expect("an object schema");
    Arc::new(memtree_mcp::arguments::compact_schema(&generated))
}

/// Each tool's mirror: its deserializer and its schema.
fn mirrors() -> Vec<(&'static str, Deserializer, Arc<JsonObject>)> {
    use mirror::*;
    vec![
        ("read_document", de::<ReadDocumentArgs>, schema::<ReadDocumentArgs>()),
        ("edit_document", de::<EditDocumentArgs>, schema::<EditDocumentArgs>()),
        ("update_document", de::<UpdateDocumentArgs>, schema::<UpdateDocumentArgs>()),
        ("get_document_tree", de::<TreeArgs>, schema::<TreeArgs>()),
        ("remember", de::<RememberArgs>, schema::<RememberArgs>()),
        ("lifecycle", de::<LifecycleArgs>, schema::<LifecycleArgs>()),
        ("split_document", de::<SplitDocumentArgs>, schema::<SplitDocumentArgs>()),
        ("move_document", de::<MoveDocumentArgs>, schema::<MoveDocumentArgs>()),
        ("search", de::<SearchArgs>, schema::<SearchArgs>()),
        ("recall", de::<RecallArgs>, schema::<RecallArgs>()),
        ("history", de::<HistoryArgs>, schema::<HistoryArgs>()),
        ("restore", de::<RestoreArgs>, schema::<RestoreArgs>()),
    ]
}

/// A schema without its `description`s (doc comments are not mirrored).
fn undescribed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "description")
                .map(|(k, v)| (k.clone(), undescribed(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(undescribed).collect()),
        other => other.clone(),
    }
}

struct Case {
    tool: Tool,
    deserialize: Deserializer,
}

static CASES: LazyLock<Vec<Case>> = LazyLock::new(|| {
    let memory = Memory::open(Arc::new(memtree_store::InMemoryStorage::new()), MemorySettings::default())
        .expect("an in-memory store opens");
    let server = MemtreeServer::new(Arc::new(Namespaced::single(Arc::new(memory))), None)
        .expect("all tools are known");
    let tools = server.tools();
    let mirrors = mirrors();
    assert_eq!(tools.len(), mirrors.len(), "the server's tools changed; update the mirrors in this target");
    tools
        .into_iter()
        .map(|tool| {
            let (_, deserialize, schema) = mirrors
                .iter()
                .find(|(name, ..)| *name == tool.name)
                .unwrap_or_else(|| panic!("no mirror for tool {}; add one to this target", tool.name));
            assert_eq!(
                undescribed(&Value::Object(tool.input_schema.as_ref().clone())),
                undescribed(&Value::Object(schema.as_ref().clone())),
                "the arguments of {} changed; update its mirror in this target",
                tool.name
            );
            Case { tool, deserialize: *deserialize }
        })
        .collect()
});

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(args)) = serde_json::from_slice::<Value>(data) else { return };
    for case in CASES.iter() {
        let checked = memtree_mcp::arguments::check(&case.tool, Some(&args));
        if let Err(message) = &checked {
            assert!(message.starts_with("Error: "), "{message:?}");
            assert!(!message.chars().any(char::is_control), "{message:?}");
        }
        let deserialized = (case.deserialize)(&args);
        if checked.is_ok() != deserialized.is_ok() {
            panic!(
                "{}: check says {checked:?} but serde says {deserialized:?} for {}",
                case.tool.name,
                Value::Object(args.clone())
            );
        }
    }
});
