"""Inputs at the edge of what a store can be: a tree 10,000 levels deep (written
by another program: every walk is iterative, nothing overflows a stack), a
document with 100,000 links (refused by the links limit), and the depth limit
on writes."""

from __future__ import annotations

import json

import pytest

from helpers import docs, err, ok, snapshot

pytestmark = pytest.mark.anyio

DEPTH = 10_000


def _chain(store, depth: int) -> None:
    store.mkdir(parents=True, exist_ok=True)
    (store / "root.md").write_text("# Root\n- [[d0]]\n")
    for i in range(depth):
        below = f"- [[d{i + 1}]]\n" if i < depth - 1 else ""
        (store / f"d{i}.md").write_text(f"# Level {i}\nfact number {i} lives here\n{below}")


@pytest.mark.slow
async def test_a_tree_ten_thousand_levels_deep(serve, store, cli):
    _chain(store, DEPTH)
    for args in (["validate"], ["index"], ["ls"], ["status"], ["tree"]):
        r = cli(*args, timeout=120)
        assert r.rc == 0, (args, r.err[-500:])
    r = cli("--json", "tree", timeout=120)
    assert r.rc == 0 and r.out.count('"id"') == DEPTH + 1, r.err[-500:]
    r = cli("search", "fact", "number", str(DEPTH - 1))
    assert r.rc == 0 and r.out.startswith(f"1. [d{DEPTH - 1}#Level {DEPTH - 1}]"), r.out[:300]
    assert f"… {DEPTH - 6} more …" in r.out.splitlines()[0]
    async with serve() as m:
        r = await m.call("get_document_tree", {"summaries": True})
        assert not r.error and r.text.startswith("root: Root\n- d0: fact number 0 lives here\n"), r.text[:200]
        assert len(r.text.encode()) <= 2048 and r.text.endswith("(+1 more)\n")
        assert await m.read(f"d{DEPTH - 1}") == ok(f"# Level {DEPTH - 1}\nfact number {DEPTH - 1} lives here\n")
        assert await m.update("# edited\n", f"d{DEPTH - 1}") == ok("Succeeded")
        assert await m.update("- [[deeper]]\n", f"d{DEPTH - 1}") == err(
            f"Error: content: deeper would be {DEPTH + 1} levels deep; the limit is 1000"
        )
        r = await m.call("search", {"query": "edited", "json": True})
        assert json.loads(r.text)[0]["id"] == f"d{DEPTH - 1}"
    # Pruning 10,000 documents moves (and fsyncs) each: slow in a debug
    # build, so through the CLI, whose wait is not an MCP request timeout.
    r = cli("write", input="# Root\n", timeout=300)
    assert r.rc == 0 and r.out.startswith("Succeeded\nDeleted: d0, d1, d2"), (r.out[:100], r.err[-300:])
    assert docs(store) == {"root": "# Root\n"}
    assert cli("validate").rc == 0


def test_a_deep_pruned_subtree_comes_back_whole(cli, store):
    _chain(store, 300)
    assert cli("write", input="# Root\n").rc == 0
    r = cli("restore", "d0", timeout=120)
    assert r.rc == 0 and r.out.startswith("Succeeded\nRestored: d0, d1, d10, d100,"), r.out[:200]
    assert len(docs(store)) == 301
    assert cli("validate").rc == 0


async def test_a_document_with_a_hundred_thousand_links_is_refused(serve, store):
    content = "# Wide\n" + "".join(f"[[n{i}]]" for i in range(100_000))
    async with serve(args=["--max-document-bytes", "4000000"]) as m:
        before = snapshot(store, include_meta=True)
        assert await m.update(content) == err(
            "Error: content: 100000 links; the limit is 10000 per document (give it children that link the rest)"
        )
        assert snapshot(store, include_meta=True) == before
        assert await m.read() == ok("# Memory\n")


async def test_the_depth_limit_is_configurable(serve, store):
    async with serve(args=["--max-depth", "3"]) as m:
        await m.build([(None, "- [[a]]\n- [[x]]\n"), ("a", "- [[b]]\n"), ("b", "- [[c]]\n")])
        before = snapshot(store, include_meta=True)
        assert await m.update("- [[d]]\n", "c") == err("Error: content: d would be 4 levels deep; the limit is 3")
        assert await m.call("move_document", {"id": "a", "new_parent": "x"}) == err(
            "Error: new_parent: a would be 4 levels deep; the limit is 3"
        )
        assert snapshot(store, include_meta=True) == before
        assert await m.call("move_document", {"id": "b", "new_parent": "x"}) == ok("Succeeded\nMoved: b from a to x")
