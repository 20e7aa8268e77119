//! The MCP server in process, through an in-memory duplex pipe and rmcp's
//! own client: tool surface, instructions, answers and concurrency.

use std::sync::Arc;

use memtree_core::Namespaced;
use memtree_mcp::{MemtreeServer, SESSION_TOOLS, TOOL_NAMES};
use memtree_test::in_memory;
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};

async fn connect(tools: Option<&[String]>) -> RunningService<RoleClient, ()> {
    connect_with(tools, None).await
}

async fn connect_with(
    tools: Option<&[String]>,
    sessions: Option<Arc<memtree_sessions::Sessions>>,
) -> RunningService<RoleClient, ()> {
    let memory = Arc::new(in_memory());
    let server = MemtreeServer::new(Arc::new(Namespaced::single(memory)), tools, sessions).unwrap();
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        running.waiting().await.unwrap();
    });
    ().serve(client_io).await.unwrap()
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    args: serde_json::Value,
) -> CallToolResult {
    let args = args.as_object().unwrap().clone();
    client.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await.unwrap()
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect()
}

fn list_size(tools: &[rmcp::model::Tool]) -> usize {
    serde_json::to_string(&serde_json::json!({ "tools": tools })).unwrap().len()
}

#[tokio::test]
async fn lists_the_tools_within_the_budgets() {
    let client = connect(None).await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "edit_document",
            "get_document_tree",
            "history",
            "lifecycle",
            "move_document",
            "read_document",
            "recall",
            "remember",
            "restore",
            "search",
            "split_document",
            "update_document",
            "validate"
        ]
    );
    let size = list_size(&tools);
    eprintln!("tools/list: {size} characters");
    assert!(size <= 6000, "tools/list is {size} characters; the default set must fit in 6,000");
    let instructions = client.peer_info().unwrap().instructions.clone().unwrap();
    assert!(instructions.contains("[[") && instructions.len() < 1000, "{instructions}");

    // The session layer adds its two tools, and little more.
    let dir = tempfile::tempdir().unwrap();
    let sessions =
        memtree_sessions::Sessions::open(&dir.path().join("s.sqlite"), Default::default()).unwrap();
    let with_sessions = connect_with(None, Some(Arc::new(sessions))).await.list_all_tools().await.unwrap();
    let more = list_size(&with_sessions) - size;
    eprintln!("tools/list with sessions: {} characters", list_size(&with_sessions));
    assert_eq!(with_sessions.len(), tools.len() + SESSION_TOOLS.len());
    assert!(more <= 800, "the session tools add {more} characters");

    let seed: Vec<String> =
        ["read_document", "update_document", "get_document_tree"].map(String::from).to_vec();
    let client = connect(Some(&seed)).await;
    let size = list_size(&client.list_all_tools().await.unwrap());
    assert!(size <= 1500, "tools/list is {size} characters; the three seed tools must fit in 1,500");
}

/// The defaults the tools apply are the shared ones, and their
/// descriptions say so.
#[tokio::test]
async fn tool_descriptions_state_the_shared_defaults() {
    use memtree_core::defaults::{HISTORY_VERSIONS, PACK_BUDGET, SEARCH_HITS};
    let client = connect(None).await;
    let tools = client.list_all_tools().await.unwrap();
    for (tool, argument, default) in [
        ("search", "limit", SEARCH_HITS),
        ("recall", "budget", PACK_BUDGET),
        ("history", "limit", HISTORY_VERSIONS),
    ] {
        let schema = &tools.iter().find(|t| t.name == tool).unwrap().input_schema;
        let description = schema["properties"][argument]["description"].as_str().unwrap_or_default();
        assert!(description.contains(&format!("default {default}")), "{tool}.{argument}: {description:?}");
    }
}

#[tokio::test]
async fn tools_answer_with_the_spec_strings() {
    let client = connect(None).await;
    let r = call(&client, "update_document", serde_json::json!({ "content": "# M\n[[a]] [[b]]" })).await;
    assert_eq!((text(&r), r.is_error), ("Succeeded\nCreated: a, b".into(), Some(false)));
    let r = call(&client, "read_document", serde_json::json!({})).await;
    assert_eq!(text(&r), "# M\n[[a]] [[b]]");
    let r = call(&client, "read_document", serde_json::json!({ "id": "a" })).await;
    assert_eq!(text(&r), "# a\n\n");
    let r = call(&client, "read_document", serde_json::json!({ "id": "zz" })).await;
    assert_eq!((text(&r), r.is_error), ("Error: id: not found".into(), Some(true)));
    let r = call(&client, "update_document", serde_json::json!({ "id": "a", "content": "[[b]]" })).await;
    assert_eq!(text(&r), "Error: content: cross-tree reference not allowed\n[[b]] is a child of root");
    assert_eq!(r.is_error, Some(true));
    let r = call(&client, "update_document", serde_json::json!({ "id": "../x", "content": "" })).await;
    assert!(text(&r).starts_with("Error: id: invalid id \"../x\""), "{}", text(&r));
    let r = call(&client, "get_document_tree", serde_json::json!({})).await;
    assert_eq!(text(&r), "root:\n  - a\n  - b\n");
    let r = call(&client, "update_document", serde_json::json!({ "content": "[[b]]" })).await;
    assert_eq!(text(&r), "Succeeded\nDeleted: a");
}

#[tokio::test]
async fn malformed_arguments_get_spec_form_errors() {
    let client = connect(None).await;
    let cases = [
        (
            "read_document",
            serde_json::json!({ "id": "root", "bogus": 1 }),
            "Error: bogus: unknown argument (expected one of: id, section, version)",
        ),
        ("read_document", serde_json::json!({ "id": 5 }), "Error: id: expected string, got integer"),
        ("update_document", serde_json::json!({ "id": "root" }), "Error: content: missing (required)"),
        (
            "get_document_tree",
            serde_json::json!({ "x": 1 }),
            "Error: x: unknown argument (expected one of: summaries)",
        ),
    ];
    for (tool, args, expected) in cases {
        let r = call(&client, tool, args).await;
        assert_eq!((text(&r), r.is_error), (expected.to_owned(), Some(true)), "{tool}");
    }
    assert!(client.call_tool(CallToolRequestParams::new("no_such_tool")).await.is_err());
    // The server keeps serving, and nothing was written.
    assert_eq!(text(&call(&client, "read_document", serde_json::json!({})).await), "# Memory\n");
}

#[tokio::test]
async fn tools_option_narrows_the_surface() {
    let wanted = vec!["read_document".to_owned()];
    let client = connect(Some(&wanted)).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), ["read_document"]);
    assert!(client.call_tool(CallToolRequestParams::new("update_document")).await.is_err());
    let memory = Arc::new(in_memory());
    assert!(
        MemtreeServer::new(Arc::new(Namespaced::single(memory)), Some(&["nope".to_owned()]), None).is_err()
    );
    let all = connect(None).await.list_all_tools().await.unwrap();
    let mut listed: Vec<&str> = all.iter().map(|t| t.name.as_ref()).collect();
    let mut known: Vec<&str> = TOOL_NAMES.iter().filter(|t| !SESSION_TOOLS.contains(t)).copied().collect();
    listed.sort();
    known.sort();
    assert_eq!(listed, known, "TOOL_NAMES is what --tools chooses from");
}

#[tokio::test]
async fn concurrent_calls_lose_no_write() {
    let client = Arc::new(connect(None).await);
    let links: String = (0..20).map(|i| format!("[[n{i}]]\n")).collect();
    call(&client, "update_document", serde_json::json!({ "content": links })).await;
    let calls = (0..20).map(|i| {
        let client = Arc::clone(&client);
        tokio::spawn(async move {
            let args = serde_json::json!({ "id": format!("n{i}"), "content": format!("fact {i}") });
            text(&call(&client, "update_document", args).await)
        })
    });
    for answer in futures_join(calls).await {
        assert_eq!(answer, "Succeeded");
    }
    for i in 0..20 {
        let r = call(&client, "read_document", serde_json::json!({ "id": format!("n{i}") })).await;
        assert_eq!(text(&r), format!("fact {i}"));
    }
}

async fn futures_join<T>(handles: impl Iterator<Item = tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
