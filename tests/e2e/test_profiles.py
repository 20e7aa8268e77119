"""`serve --profile layered|v2`: the tools of seed 002 (layered-memory-mcp) and
seed 004 (Memory V2) over the same engine, each through the official client,
with the arguments and answers those seeds describe."""

from __future__ import annotations

import json
import shutil

import pytest

from helpers import REPO_ROOT, docs

pytestmark = pytest.mark.anyio

LAYERED_TOOLS = {
    "inject_knowledge", "recall_knowledge", "get_knowledge_file", "get_l0_index", "list_memory_stats",
    "validate_knowledge", "scan_recent_sessions", "search_sessions_by_keyword", "create_knowledge_file",
    "update_knowledge_file", "delete_knowledge_file", "sync_l0_index", "manage_l0_entry",
}
V2_TOOLS = {"read_memory", "write_memory", "search_memory", "list_memory_files", "get_memory_graph", "split_memory"}


async def call(m, name: str, args: dict | None = None) -> dict:
    r = await m.call(name, args or {})
    assert not r.error, (name, r.text)
    return json.loads(r.text)


async def tools_of(m) -> dict:
    return {t.name: t for t in (await m.session.list_tools()).tools}


def list_size(tools: dict) -> int:
    return len(json.dumps({"tools": [t.model_dump(exclude_none=True) for t in tools.values()]}, separators=(",", ":")))


@pytest.fixture
def transcripts(tmp_path) -> dict[str, str]:
    root = tmp_path / "transcripts"
    shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "sessions" / "claude", root / "claude")
    shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "sessions" / "codex", root / "codex")
    return {"MEMTREE_CLAUDE_PROJECTS": str(root / "claude"), "MEMTREE_CODEX_SESSIONS": str(root / "codex")}


async def test_layered_writes_and_reads_knowledge_files(serve, store, transcripts):
    async with serve(args=["--profile", "layered"], env=transcripts) as m:
        tools = await tools_of(m)
        assert set(tools) == LAYERED_TOOLS
        assert list_size(tools) < 5500, list_size(tools)

        fact = "PostgreSQL 15 on prod-db:5432, connection pool: 20 max"
        r = await call(m, "inject_knowledge", {"domain": "infrastructure", "section": "Database", "content": fact})
        assert (r["success"], r["action"], r["file"], r["section"], r["is_new_file"]) == \
            (True, "created", "infrastructure.md", "## Database", True)
        assert r["l0_pointer"].startswith("[L0] infrastructure: ") and r["l0_pointer"].endswith("→ knowledge/infrastructure.md")
        r = await call(m, "inject_knowledge", {"domain": "infrastructure", "section": "Database", "content": fact})
        assert r["action"] == "skipped" and r["dedup"]["similar_found"]
        newer = "PostgreSQL 16 on prod-db:5432, connection pool: 20 max"
        r = await call(m, "inject_knowledge", {"domain": "infrastructure.md", "section": "Database", "content": newer})
        assert r["action"] == "replaced" and r["dedup"]["matched_line"] == f"- {fact}"
        r = await call(m, "inject_knowledge",
                       {"domain": "infrastructure", "section": "Proxy", "content": "nginx in front, TLS at the edge"})
        assert r["action"] == "section_created" and not r["is_new_file"]
        r = await call(m, "inject_knowledge", {"domain": "infrastructure", "section": "Proxy",
                                               "content": "HTTP/2 enabled", "mode": "append"})
        assert r["action"] == "appended"
        r = await call(m, "inject_knowledge", {"domain": "infrastructure", "section": "X", "content": "y", "mode": "fuse"})
        assert r == {"success": False, "error": "Invalid mode: 'fuse'. Must be 'upsert', 'append', or 'merge'."}
        assert "PostgreSQL 16" in docs(store)["infrastructure"] and fact not in docs(store)["infrastructure"]

        r = await call(m, "recall_knowledge", {"keyword": "database"})
        assert r["success"] and r["results"][0]["file"] == "infrastructure.md"
        assert "PostgreSQL 16" in r["results"][0]["sections"][0]["content"]

        r = await call(m, "get_knowledge_file", {"filename": "infrastructure.md"})
        assert r["content"] == docs(store)["infrastructure"]
        assert await call(m, "get_knowledge_file", {"filename": "nope.md"}) == \
            {"success": False, "error": "File not found: nope.md"}
        r = await call(m, "get_knowledge_file", {"filename": "infrastructure"})
        assert r["error"] == "Invalid extension: filename must end with .md, got 'infrastructure'"

        r = await call(m, "create_knowledge_file", {"filename": "api-conventions.md", "content": "# API\n\nREST, JSON.\n"})
        assert (r["action"], r["size_bytes"]) == ("created", 19)
        r = await call(m, "create_knowledge_file", {"filename": "api-conventions.md", "content": "again"})
        assert r["error"] == "File already exists: api-conventions.md. Use update_knowledge_file instead."
        r = await call(m, "update_knowledge_file", {"filename": "api-conventions.md", "content": "# API\n\nREST over HTTPS.\n"})
        assert (r["action"], r["previous_size_bytes"], r["new_size_bytes"]) == ("updated", 19, 24)
        r = await call(m, "update_knowledge_file", {"filename": "ghost.md", "content": "x"})
        assert r["error"] == "File not found: ghost.md. Use create_knowledge_file for new files."

        r = await call(m, "get_l0_index")
        lines = r["content"].split("\n")
        assert r["format"] == "hermes" and r["total_entries"] == 2
        assert "[L0] api-conventions: REST over HTTPS → knowledge/api-conventions.md" in lines
        r = await call(m, "manage_l0_entry", {"action": "add", "domain": "infrastructure", "summary": "Servers, DB and proxy"})
        assert r["success"] and r["total_entries"] == 2
        r = await call(m, "manage_l0_entry", {"action": "add", "domain": "infrastructure", "summary": "again"})
        assert r["error"] == "Entry for 'infrastructure' already exists. Use 'replace'."
        r = await call(m, "sync_l0_index", {"dry_run": True})
        assert "[L0] infrastructure: Servers, DB and proxy → knowledge/infrastructure.md" in r["preview"]
        assert (r["entries_added"], r["entries_removed"], r["total_entries"]) == (0, 0, 2)
        r = await call(m, "manage_l0_entry", {"action": "remove", "domain": "infrastructure"})
        assert r["success"] and "summary:" not in docs(store)["infrastructure"]

        r = await call(m, "list_memory_stats")
        assert r["l1_knowledge"]["total_files"] == 2 and isinstance(r["suggestions"], list)
        r = await call(m, "validate_knowledge")
        assert r["overall_health"] == "good" and r["issues"] == [], r

        for tool, args in [("update_knowledge_file", {"filename": "root.md", "content": "# gone"}),
                           ("delete_knowledge_file", {"filename": "root.md"})]:
            r = await call(m, tool, args)
            assert not r["success"] and "holds the links of every knowledge file" in r["error"], r
        assert "[[infrastructure]]" in docs(store)["root"]
        r = await call(m, "delete_knowledge_file", {"filename": "api-conventions.md"})
        assert (r["action"], r["deleted"]) == ("deleted", ["api-conventions"])
        assert "api-conventions" not in docs(store)

        r = await call(m, "scan_recent_sessions", {"days": 100000, "max_sessions": 3})
        assert r["total_sessions"] == 10 and len(r["sessions"]) == 3
        assert all({"user_messages", "tool_calls", "files_touched", "project"} <= set(s) for s in r["sessions"])
        r = await call(m, "search_sessions_by_keyword", {"keyword": "advisory", "days": 100000})
        assert r["success"] and r["matches"][0]["session"].startswith("f1841639")

        status = json.loads((await m.session.read_resource("memory://status")).contents[0].text)
        assert status["status"] == "healthy" and status["l1_knowledge"]["total_files"] == 1
        files = json.loads((await m.session.read_resource("knowledge://files")).contents[0].text)
        assert [f["file"] for f in files["files"]] == ["infrastructure.md"]
        prompts = {p.name for p in (await m.session.list_prompts()).prompts}
        assert prompts == {"knowledge_compression_prompt", "cognitive_decision_prompt"}
        text = (await m.session.get_prompt("cognitive_decision_prompt")).messages[0].content.text
        assert "Decision Tree" in text and "inject_knowledge" in text
        text = (await m.session.get_prompt("knowledge_compression_prompt")).messages[0].content.text
        assert "scan_recent_sessions" in text


async def test_layered_l0_in_the_generic_format(serve, store):
    async with serve(args=["--profile", "layered"], env={"LAYERED_MEMORY_L0_FORMAT": "generic"}) as m:
        await call(m, "inject_knowledge", {"domain": "dev", "section": "Style", "content": "Four spaces, no tabs."})
        r = await call(m, "get_l0_index")
        assert r["format"] == "generic" and r["content"].startswith("[dev.md] ")


async def test_layered_l0_stays_within_its_budget(serve, store):
    # The tool's answer gets 16 times the index budget: 320 bytes here.
    async with serve(args=["--profile", "layered"], env={"MEMTREE_INDEX_BUDGET": "20"}) as m:
        for i in range(12):
            await call(m, "inject_knowledge", {"domain": f"topic{i:02}", "section": "Notes", "content": f"Fact {i}."})
        r = await call(m, "get_l0_index")
        lines = r["content"].split("\n")
        assert r["total_entries"] == 12
        assert len(r["content"]) < 400 and lines[-1] == f"# … and {12 - (len(lines) - 1)} more files (recall_knowledge finds them)"
        assert lines[0] == "[L0] topic00: Fact 0 → knowledge/topic00.md"


async def test_v2_writes_reads_searches_and_splits(serve, store):
    async with serve(args=["--profile", "v2"]) as m:
        tools = await tools_of(m)
        assert set(tools) == V2_TOOLS
        assert list_size(tools) < 2500, list_size(tools)

        root = "# Memory\n\n- [[projects]]: what I work on\n"
        r = await call(m, "write_memory", {"content": root, "path": "memory", "mode": "replace"})
        assert r == {"success": True, "path": "memory", "size_bytes": len(root), "split_triggered": False,
                     "new_files": ["projects"]}
        r = await call(m, "write_memory", {"content": "# Silica\n\n## Goals\nship v1\n\n## Stack\nRust\n", "path": "projects/silica"})
        assert (r["success"], r["path"], r["new_files"]) == (True, "projects/silica", [])
        assert (await m.call("read_memory", {})).text == (await m.call("read_memory", {"path": "memory"})).text
        r = await call(m, "write_memory", {"content": "## Goals\nship v2\n\n## Risks\nnone yet\n", "path": "projects/silica"})
        assert r["success"]
        silica = (await m.call("read_memory", {"path": "projects/silica"})).text
        assert "ship v2" in silica and "ship v1" not in silica and "## Stack\nRust" in silica and "## Risks" in silica
        await call(m, "write_memory", {"content": "Owner: Ana.", "path": "projects/silica", "mode": "append"})
        assert (await m.call("read_memory", {"path": "projects/silica"})).text.endswith("Owner: Ana.")

        r = await m.call("read_memory", {"path": "nope"})
        assert r.error and r.text == "Error: path: not found"
        r = await m.call("write_memory", {"content": "x", "path": "memory", "mode": "merge"})
        assert r.error and r.text.startswith("Error: mode:")

        hits = await call(m, "search_memory", {"query": "ship v2", "max_results": 3})
        assert hits[0]["path"] == "projects/silica" and 0 < hits[0]["relevance_score"] <= 1
        assert hits[0]["context"].startswith("memory → projects → projects/silica")

        files = {f["path"]: f for f in await call(m, "list_memory_files")}
        assert files["projects"]["links_to"] == ["projects/silica"]
        assert files["projects/silica"]["linked_from"] == ["projects"]
        assert files["memory"]["last_updated"].endswith("Z")

        graph = await call(m, "get_memory_graph")
        labels = {n["id"]: n["label"] for n in graph["nodes"]}
        assert labels["memory"] == "Root" and labels["projects/silica"] == "Silica"
        assert {"from": "memory", "to": "projects", "label": "what I work on"} in graph["edges"]

        big = "# Big\n\n" + "".join(f"## Part {i}\n" + ("word " * 500) + "\n\n" for i in range(6))
        r = await call(m, "write_memory", {"content": big, "path": "projects/big"})
        r = await call(m, "write_memory", {"content": big.replace("word", "term"), "path": "projects/big", "mode": "replace"})
        assert r["split_triggered"] is True, r
        r = await call(m, "split_memory", {"path": "projects/big"})
        assert r["success"] and r["split_triggered"] and len(r["new_files"]) == 6
        assert r["new_files"][0] == "projects/big/part_0"
        assert r["size_bytes"] < 1000


async def test_a_profile_is_served_over_http_too(store, base_env):
    from mcp import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    from helpers import http_server

    with http_server(store, base_env, "--token", "t0ken", "--profile", "v2") as addr:
        async with create_mcp_http_client(headers={"Authorization": "Bearer t0ken"}) as client:
            async with streamable_http_client(f"http://{addr}/mcp", http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    assert {t.name for t in (await session.list_tools()).tools} == V2_TOOLS
                    r = await session.call_tool("write_memory", {"content": "# Notes\n", "path": "notes"})
                    assert json.loads(r.content[0].text)["path"] == "notes"
    assert docs(store)["notes"] == "# Notes\n"
