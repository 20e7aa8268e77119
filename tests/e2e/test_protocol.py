"""MCP lifecycles (2025-11-25 initialize via the SDK and raw; 2026-07-28 server/discover raw),
tools/list, instructions, stdout purity, protocol-level bad input."""

from __future__ import annotations

import json

import pytest

from helpers import (
    DISCOVER_VERSION,
    HANDSHAKE_VERSION,
    NOT_FOUND,
    cross_tree,
    ok,
    modern_meta,
    tool_text,
)

SEED_TOOLS = {"read_document", "update_document", "get_document_tree"}
TOOLS = SEED_TOOLS | {
    "edit_document", "move_document", "remember", "lifecycle", "split_document", "search", "recall", "history", "restore", "validate",
}


def _check_tool_schemas(tools: dict[str, dict]) -> None:
    assert set(tools) == TOOLS
    for name, t in tools.items():
        assert isinstance(t.get("description"), str) and t["description"].strip(), name
        assert t["inputSchema"]["type"] == "object", name

    read = tools["read_document"]["inputSchema"]
    assert set(read.get("properties", {})) == {"id", "section", "version"}
    assert "id" not in read.get("required", [])
    assert "string" in _types(read["properties"]["id"])

    upd = tools["update_document"]["inputSchema"]
    assert set(upd.get("properties", {})) == {"id", "content", "base"}
    assert upd.get("required", []) == ["content"]
    assert "string" in _types(upd["properties"]["id"])
    assert _types(upd["properties"]["content"]) == ["string"]

    tree = tools["get_document_tree"]["inputSchema"]
    assert set(tree.get("properties", {})) == {"summaries"}
    assert tree.get("required", []) == []

    search = tools["search"]["inputSchema"]
    assert set(search.get("properties", {})) == {"query", "limit", "scope", "under", "json"}
    assert search.get("required", []) == ["query"]

    edit = tools["edit_document"]["inputSchema"]
    assert set(edit.get("properties", {})) == {"id", "old", "new", "section", "base"}
    assert sorted(edit.get("required", [])) == ["id", "new"]

    recall = tools["recall"]["inputSchema"]
    assert set(recall.get("properties", {})) == {"task", "budget", "scope"}
    assert recall.get("required", []) == ["task"]


def _types(schema: dict) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return t
    return [s.get("type") for s in schema.get("anyOf", []) + schema.get("oneOf", [])]


def _assert_jsonrpc_only(lines: list[bytes]) -> None:
    assert lines, "server wrote nothing to stdout"
    for line in lines:
        assert line.endswith(b"\n"), line
        msg = json.loads(line)
        assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", line


# ---------------------------------------------------------------- SDK, initialize


@pytest.mark.anyio
async def test_sdk_initialize_lifecycle(serve):
    async with serve() as m:
        init = m.init
        assert init.protocol_version == HANDSHAKE_VERSION
        assert init.server_info.name == "memtree"
        assert init.instructions and init.instructions.strip()
        assert "[[" in init.instructions
        assert init.capabilities.tools is not None
        listed = await m.session.list_tools()
        tools = {t.name: {"description": t.description, "inputSchema": t.input_schema} for t in listed.tools}
        _check_tool_schemas(tools)
        assert await m.read() == ok("# Memory\n")
        assert await m.update("[[a]]") == ok("Succeeded\nCreated: a")
        assert await m.tree() == ok("root:\n  - a\n")


@pytest.mark.anyio
async def test_sdk_discover_lifecycle(serve, store):
    async with serve(lifecycle="discover") as m:
        assert m.session.protocol_version == DISCOVER_VERSION
        assert "[[" in m.init.instructions
        listed = await m.session.list_tools()
        tools = {t.name: {"description": t.description, "inputSchema": t.input_schema} for t in listed.tools}
        _check_tool_schemas(tools)
        assert await m.read() == ok("# Memory\n")
        assert await m.update("[[a]] [[b]]") == ok("Succeeded\nCreated: a, b")
        assert await m.update("[[b]]", "a") == cross_tree("[[b]] is a child of root")
        assert await m.read("zz") == NOT_FOUND
        assert await m.update("[[b]]") == ok("Succeeded\nDeleted: a")
        assert await m.tree() == ok("root:\n  - b\n")
    assert (store / "root.md").read_text() == "[[b]]"


# ---------------------------------------------------------------- raw, 2025-11-25


def test_raw_initialize_and_stdout_purity(raw_server, store):
    s = raw_server()
    init = s.initialize()
    assert init["result"]["protocolVersion"] == HANDSHAKE_VERSION
    assert "[[" in init["result"]["instructions"]
    listed = s.request("tools/list", {})
    _check_tool_schemas({t["name"]: t for t in listed["result"]["tools"]})
    assert tool_text(s.call_tool("update_document", {"content": "# R\n[[a]] [[b]]\n"})) == (
        "Succeeded\nCreated: a, b", False)
    assert tool_text(s.call_tool("update_document", {"id": "a", "content": "[[b]]"})) == (
        "Error: content: cross-tree reference not allowed\n[[b]] is a child of root", True)
    assert tool_text(s.call_tool("read_document", {"id": "nope"})) == ("Error: id: not found", True)
    assert tool_text(s.call_tool("read_document", {})) == ("# R\n[[a]] [[b]]\n", False)
    assert tool_text(s.call_tool("get_document_tree", {})) == ("root:\n  - a\n  - b\n", False)
    assert tool_text(s.call_tool("update_document", {"content": "[[a]]"})) == ("Succeeded\nDeleted: b", False)
    # unknown tool and ping, for more traffic on stdout
    assert "error" in s.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert s.request("ping")["result"] == {}
    assert s.close() == 0
    _assert_jsonrpc_only(s.all_lines)
    assert len(s.all_lines) == 10


def test_raw_pipelined_requests_all_answered(raw_server):
    """Twenty requests written at once get twenty answers with matching ids."""
    s = raw_server()
    s.initialize()
    s.call_tool("update_document", {"content": " ".join(f"[[d{i}]]" for i in range(20))})
    ids = []
    for i in range(20):
        rid = s.next_id()
        ids.append(rid)
        s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "update_document", "arguments": {"id": f"d{i}", "content": f"body {i}"}}})
    for rid in ids:
        assert tool_text(s.wait_for(rid)) == ("Succeeded", False)
    for i in range(20):
        assert tool_text(s.call_tool("read_document", {"id": f"d{i}"})) == (f"body {i}", False)
    assert s.close() == 0
    _assert_jsonrpc_only(s.all_lines)


# ---------------------------------------------------------------- raw, 2026-07-28 server/discover


def test_raw_discover_lifecycle(raw_server, store):
    s = raw_server()
    disc = s.request("server/discover", {"_meta": modern_meta()})
    res = disc["result"]
    assert DISCOVER_VERSION in res["supportedVersions"]
    assert HANDSHAKE_VERSION in res["supportedVersions"]
    assert "tools" in res["capabilities"]
    assert "[[" in res["instructions"]
    listed = s.request("tools/list", {"_meta": modern_meta()})
    _check_tool_schemas({t["name"]: t for t in listed["result"]["tools"]})
    meta = modern_meta()
    assert tool_text(s.call_tool("read_document", {}, meta)) == ("# Memory\n", False)
    assert tool_text(s.call_tool("update_document", {"content": "[[x]] [[y]]"}, meta)) == (
        "Succeeded\nCreated: x, y", False)
    assert tool_text(s.call_tool("update_document", {"id": "x", "content": "[[root]]"}, meta)) == (
        "Error: content: cross-tree reference not allowed\n[[root]] is the root document", True)
    assert tool_text(s.call_tool("read_document", {"id": "x"}, meta)) == ("# x\n\n", False)
    assert tool_text(s.call_tool("get_document_tree", {}, meta)) == ("root:\n  - x\n  - 'y'\n", False)
    assert tool_text(s.call_tool("read_document", {"id": "zz"}, meta)) == ("Error: id: not found", True)
    assert s.close() == 0
    _assert_jsonrpc_only(s.all_lines)
    assert (store / "x.md").read_text() == "# x\n\n"


def test_raw_discover_without_meta_is_rejected_but_server_survives(raw_server):
    s = raw_server()
    s.request("server/discover", {"_meta": modern_meta()})
    resp = s.call_tool("read_document", {})  # no _meta on a modern connection
    assert "error" in resp or resp["result"].get("isError")
    assert tool_text(s.call_tool("read_document", {}, modern_meta())) == ("# Memory\n", False)
    assert s.close() == 0


# ---------------------------------------------------------------- protocol-level bad input


def test_malformed_json_gets_parse_error_and_server_keeps_serving(raw_server):
    """JSON-RPC 2.0 §5: a parse error is answered with code -32700 and "id": null."""
    s = raw_server()
    s.initialize()
    s.send(b"{this is not json\n")
    s.send(b"[1, 2\n")
    assert tool_text(s.call_tool("read_document", {})) == ("# Memory\n", False)
    assert s.close() == 0
    _assert_jsonrpc_only(s.all_lines)
    errors = [m for m in map(json.loads, s.all_lines) if "error" in m]
    assert [(e["error"]["code"], "id" in e, e.get("id")) for e in errors] == [(-32700, True, None)] * 2, errors


def test_invalid_request_objects_get_invalid_request_errors(raw_server):
    """JSON-RPC 2.0 §5: every response, error responses included, carries "id"
    (the request's id, or null when it cannot be determined)."""
    s = raw_server()
    s.initialize()
    s.send(b'{"jsonrpc":"2.0","id":91,"method":42}\n')
    s.send(b'{"jsonrpc":"2.0","id":93}\n')
    assert s.request("ping")["result"] == {}
    assert s.close() == 0
    _assert_jsonrpc_only(s.all_lines)
    errors = [m for m in map(json.loads, s.all_lines) if "error" in m]
    assert len(errors) == 2, errors
    for e in errors:
        assert e["error"]["code"] == -32600, e
        assert "id" in e and e["id"] in (91, 93, None), e


def test_missing_or_wrong_arguments_are_clear_errors(raw_server, store):
    s = raw_server()
    s.initialize()
    for args, arg in [({}, "content"), ({"content": 5}, "content"), ({"id": 7, "content": "x"}, "id")]:
        resp = s.request("tools/call", {"name": "update_document", "arguments": args})
        if "error" in resp:
            assert resp["error"]["code"] == -32602, resp
        else:
            text, is_error = tool_text(resp)
            assert is_error and text.startswith(f"Error: {arg}: "), resp
    assert tool_text(s.call_tool("read_document", {})) == ("# Memory\n", False)
    assert (store / "root.md").read_text() == "# Memory\n"
    assert s.close() == 0


def test_server_exits_cleanly_on_stdin_eof(raw_server):
    s = raw_server()
    s.initialize()
    assert s.close(timeout=5) == 0
    _assert_jsonrpc_only(s.all_lines)


def test_stdout_stays_pure_with_verbose_logging(raw_server):
    s = raw_server(env={"RUST_LOG": "trace"})
    s.initialize()
    s.call_tool("update_document", {"content": "[[a]]"})
    s.call_tool("update_document", {"id": "a", "content": "[[root]]"})
    s.call_tool("read_document", {"id": "../x"})
    s.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert s.close() == 0
    _assert_jsonrpc_only(s.all_lines)
    assert len(s.all_lines) == 5


def test_oversized_message_is_refused_and_server_keeps_serving(raw_server, store):
    """A line over the message limit (16 MiB, or 8 × the document limit) is read
    and dropped without being parsed, answered -32600 with id null."""
    s = raw_server()
    s.initialize()
    huge = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"update_document","arguments":{"content":"' \
        + b"x" * (17 << 20) + b'"}}}\n'
    s.send(huge)
    assert s.request("ping")["result"] == {}
    assert tool_text(s.call_tool("read_document", {})) == ("# Memory\n", False)
    assert s.close() == 0
    errors = [m for m in map(json.loads, s.all_lines) if "error" in m]
    assert [(e["id"], e["error"]["code"]) for e in errors] == [(None, -32600)], errors
    assert "over 16777216 bytes" in errors[0]["error"]["message"]
