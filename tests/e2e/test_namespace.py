"""Namespaces through the real MCP client and the CLI: each agent has its own
tree (`@NAME/` in the store) beside the shared one; reads and searches see
its own first, then the shared one; writes stay in its own unless the id
says `shared:`."""

from __future__ import annotations

import pytest

from helpers import NOT_FOUND, SUCCEEDED, docs, err, ok, snapshot

pytestmark = pytest.mark.anyio

SHARED = [
    (None, "# Team memory\n- [[infra]]\n- [[style]]\n"),
    ("infra", "# Infra\n## Database\nStaging postgres listens on port 5433.\n"),
    ("style", "# Style\nTeam style: tabs for indentation.\n"),
]


async def test_each_agent_has_its_own_tree_beside_the_shared_one(serve, store, cli):
    async with serve() as team:
        await team.build(SHARED)
    async with serve(args=["--namespace", "alice"]) as alice:
        assert "shared:<id>" in alice.init.instructions
        assert "Team memory" in alice.init.instructions, "the shared L0 index rides along"
        assert await alice.read() == ok("# Memory\n")
        await alice.build([(None, "# Alice\n- [[style]]\n- [[todo]]\n"), ("style", "# Style\nMine: spaces.\n")])
        assert await alice.read("style") == ok("# Style\nMine: spaces.\n")
        assert await alice.read("shared:style") == ok("# Style\nTeam style: tabs for indentation.\n")
        assert await alice.read("infra") == ok(SHARED[1][1]), "falls back to the shared tree"
        assert await alice.call("read_document", {"id": "infra", "section": "Database"}) == ok(
            "## Database\nStaging postgres listens on port 5433.\n"
        )
        before = snapshot(store)
        assert await alice.update("# Infra\nchanged\n", "infra") == err(
            "Error: id: infra is in the shared tree, not yours; name it shared:infra to change it"
        )
        assert snapshot(store) == before
        assert await alice.call("edit_document", {"id": "shared:infra", "old": "5433", "new": "6000"}) == SUCCEEDED
        tree = await alice.tree()
        assert tree == ok(
            "root:\n  - style\n  - todo\n--- # the shared tree: name its ids shared:<id>\n"
            "root:\n  - infra\n  - style\n"
        )
    assert {k: v for k, v in docs(store).items() if not k.startswith("@")} == {
        "root": SHARED[0][1],
        "infra": SHARED[1][1].replace("5433", "6000"),
        "style": SHARED[2][1],
    }, "alice's documents are not part of the shared tree"
    assert (store / "@alice" / "style.md").read_text() == "# Style\nMine: spaces.\n"
    assert (store / "@alice" / "todo.md").exists()
    assert cli("validate").rc == 0

    async with serve(env={"MEMTREE_NAMESPACE": "bob"}) as bob:
        assert await bob.read("todo") == NOT_FOUND, "bob does not see alice's tree"
        assert await bob.read("style") == ok(SHARED[2][1])
        r = await bob.call("remember", {"content": "bob prefers short answers", "section": "Prefs"})
        assert not r.error and "bob" not in docs(store)["root"], r
    assert "bob prefers short answers" in "".join(p.read_text() for p in (store / "@bob").glob("*.md"))


async def test_search_and_recall_rank_both_trees(serve, store):
    async with serve() as team:
        await team.build(SHARED)
    async with serve(args=["--namespace", "alice"]) as alice:
        await alice.build([
            (None, "# Alice\n- [[notes]]\n- [[todo]]\n"),
            ("notes", "# Notes\n## Database\nI restarted postgres on port 5433.\n"),
            ("todo", "# Todo\nWrite the release notes.\n"),
        ])
        r = await alice.call("search", {"query": "postgres port 5433"})
        assert not r.error
        assert "[shared:infra#Database]" in r.text and "[notes#Database]" in r.text, r.text
        r = await alice.call("search", {"query": "postgres", "under": "shared:infra"})
        assert "[shared:infra#Database]" in r.text and "[notes" not in r.text, r.text
        r = await alice.call("recall", {"task": "which port does postgres use"})
        assert "[shared:infra#Database]" in r.text and "[notes#Database]" in r.text, r.text
        r = await alice.call("move_document", {"id": "notes", "new_parent": "shared:infra"})
        assert r == err("Error: new_parent: shared:infra is in the shared tree; notes is in yours")


def test_cli_takes_the_namespace_too(cli, store):
    assert cli("write", input=SHARED[0][1]).rc == 0
    assert cli("write", "infra", input=SHARED[1][1]).rc == 0
    assert cli("--namespace", "alice", "write", input="# Alice\n- [[todo]]\n").rc == 0
    r = cli("--namespace", "alice", "read", "infra")
    assert (r.rc, r.out) == (0, SHARED[1][1])
    r = cli("--namespace", "alice", "write", "infra", input="# nope\n")
    assert r.rc == 1 and "name it shared:infra" in r.err
    r = cli("--namespace", "alice", "search", "postgres")
    assert r.rc == 0 and "[shared:infra#Database]" in r.out, r.out
    r = cli("--namespace", "alice", "index")
    assert r.rc == 0 and r.out.startswith("root: Alice") and "root: Team memory" in r.out, r.out
    assert cli("--namespace", "alice", "validate").rc == 0
    # `shared` is no namespace at all; a bad name is refused before any work.
    r = cli("--namespace", "shared", "read")
    assert r.out == SHARED[0][1]
    r = cli("--namespace", "../x", "read")
    assert r.rc != 0 and "invalid namespace" in r.err
    assert sorted(p.name for p in store.iterdir() if p.name.startswith("@")) == ["@alice"]
