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
//! The target maps each tool to memtree-mcp's own argument struct and
//! stops at start-up if the server has a tool it does not map.
//!
//! The disagreements found (saved in `fuzz/regressions/tool_arguments/`)
//! were fixed in a3798d5; the target now fails on any.
#![no_main]

use std::sync::{Arc, LazyLock};

use libfuzzer_sys::fuzz_target;
use memtree_core::{Memory, MemorySettings, Namespaced};
use memtree_mcp::MemtreeServer;
use rmcp::model::{JsonObject, Tool};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Serde's verdict on `args` as the arguments of the tool `name`.
type Deserializer = fn(&JsonObject) -> Result<(), String>;

fn de<T: DeserializeOwned>(args: &JsonObject) -> Result<(), String> {
    serde_json::from_value::<T>(Value::Object(args.clone())).map(drop).map_err(|e| e.to_string())
}

/// Each tool's deserializer.
fn deserializers() -> Vec<(&'static str, Deserializer)> {
    use memtree_mcp::tool_arguments::*;
    vec![
        ("read_document", de::<ReadDocumentArgs>),
        ("edit_document", de::<EditDocumentArgs>),
        ("update_document", de::<UpdateDocumentArgs>),
        ("get_document_tree", de::<TreeArgs>),
        ("remember", de::<RememberArgs>),
        ("lifecycle", de::<LifecycleArgs>),
        ("split_document", de::<SplitDocumentArgs>),
        ("move_document", de::<MoveDocumentArgs>),
        ("search", de::<SearchArgs>),
        ("recall", de::<RecallArgs>),
        ("history", de::<HistoryArgs>),
        ("restore", de::<RestoreArgs>),
        ("validate", de::<NoArgs>),
    ]
}

/// A tool without arguments: any name is unknown.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

struct Case {
    tool: Tool,
    deserialize: Deserializer,
}

static CASES: LazyLock<Vec<Case>> = LazyLock::new(|| {
    let memory = Memory::open(Arc::new(memtree_store::InMemoryStorage::new()), MemorySettings::default())
        .expect("an in-memory store opens");
    let server = MemtreeServer::new(Arc::new(Namespaced::single(Arc::new(memory))), None, None)
        .expect("all tools are known");
    let deserializers = deserializers();
    server
        .tools()
        .into_iter()
        .map(|tool| {
            let (_, deserialize) =
                deserializers.iter().find(|(name, _)| *name == tool.name).unwrap_or_else(|| {
                    panic!("tool {} has no deserializer; add its struct to this target", tool.name)
                });
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
