"""Tree rules as a client sees them: a cross-tree refusal's two lines reach it
exactly, a file another program adds is linked only under the rules, and
pruning moves whole subtrees into the trash folder, one batch per update.

The rules themselves, case by case (every relative a link can name, link
syntax, labels, letter case, code, pruning order, wide and deep trees), are
tables in crates/memtree-core/tests/engine.rs:
`every_cross_tree_link_is_refused_with_its_reason`,
`updates_say_what_they_created_and_deleted`,
`letter_case_collisions_are_refused`, `a_wide_tree_is_made_and_pruned_in_one_update_each`
and `a_deep_chain_keeps_the_rules_at_every_level`.
"""

from __future__ import annotations

import pytest

from helpers import NOT_FOUND, cross_tree, docs, ok, snapshot, trash_batches

pytestmark = pytest.mark.anyio


async def _family(m):
    """root → a(a1(a1x), a2), b(b1)."""
    await m.build([
        (None, "# Root\n[[a]]\n[[b]]\n"),
        ("a", "# A\n[[a1]]\n[[a2]]\n"),
        ("a1", "# A1\n[[a1x]]\n"),
        ("b", "# B\n[[b1]]\n"),
    ])


FAMILY_TREE = "root:\n  - a:\n    - a1:\n      - a1x\n    - a2\n  - b:\n    - b1\n"


# ---------------------------------------------------------------- rejected links


# Two of the engine's rows, end to end (test_tools.py has "is a child of").
@pytest.mark.parametrize(
    ("doc", "content", "detail"),
    [
        ("a1x", "[[a]]", "[[a]] is an ancestor of a1x"),
        ("a", "[[a1]] [[a2]] [[root]]", "[[root]] is the root document"),
    ],
)
async def test_cross_tree_reference_rejected(serve, store, doc, content, detail):
    async with serve() as m:
        await _family(m)
        before = snapshot(store)
        assert await m.update(content, doc) == cross_tree(detail)
        assert snapshot(store) == before
        assert await m.tree() == ok(FAMILY_TREE)
        assert trash_batches(store) == {}


async def test_link_to_orphan_file_is_rejected(serve, store):
    """A document that exists on disk but has no parent is not a new id: linking it is refused."""
    async with serve() as m:
        await m.put(None, "[[a]]")
        (store / "stray.md").write_text("# stray\n")
        before = snapshot(store)
        assert await m.update("[[a]] [[stray]]") == cross_tree(
            "[[stray]] exists but no document links it (see `memtree validate`)"
        )
        assert snapshot(store) == before


# ---------------------------------------------------------------- pruning


async def test_prune_single_leaf(serve, store):
    async with serve() as m:
        await m.put(None, "[[a]] [[b]]")
        await m.put("b", "# B body\n")
        assert await m.update("[[a]]") == ok("Succeeded\nDeleted: b")
        assert await m.read("b") == NOT_FOUND
        assert await m.tree() == ok("root:\n  - a\n")
    assert docs(store) == {"root": "[[a]]", "a": "# a\n\n"}
    batches = trash_batches(store)
    assert list(batches.values()) == [{"b.md": b"# B body\n"}]


async def test_prune_branching_subtree_parent_before_children(serve, store):
    async with serve() as m:
        await _family(m)
        r = await m.update("# Root\n[[b]]\n")
        assert not r.error
        lines = r.text.split("\n")
        assert lines[0] == "Succeeded" and len(lines) == 2 and lines[1].startswith("Deleted: ")
        deleted = lines[1][len("Deleted: "):].split(", ")
        assert sorted(deleted) == ["a", "a1", "a1x", "a2"]
        pos = {d: i for i, d in enumerate(deleted)}
        assert pos["a"] < pos["a1"] < pos["a1x"] and pos["a"] < pos["a2"]
        assert await m.tree() == ok("root:\n  - b:\n    - b1\n")
    assert docs(store) == {"root": "# Root\n[[b]]\n", "b": "# B\n[[b1]]\n", "b1": "# b1\n\n"}
    assert list(trash_batches(store).values()) == [{
        "a.md": b"# A\n[[a1]]\n[[a2]]\n",
        "a1.md": b"# A1\n[[a1x]]\n",
        "a1x.md": b"# a1x\n\n",
        "a2.md": b"# a2\n\n",
    }]


async def test_each_prune_gets_its_own_trash_batch(serve, store):
    async with serve() as m:
        await m.put(None, "[[p]] [[q]]")
        await m.put("p", "P1")
        assert await m.update("[[q]]") == ok("Succeeded\nDeleted: p")
        await m.put(None, "[[q]] [[p]]")
        await m.put("p", "P2")
        assert await m.update("[[q]]") == ok("Succeeded\nDeleted: p")
    batches = trash_batches(store)
    assert len(batches) == 2
    assert sorted(b["p.md"] for b in batches.values()) == [b"P1", b"P2"]
    assert all(list(b) == ["p.md"] for b in batches.values())


async def test_slash_id_pruned_into_trash_with_folders(serve, store):
    async with serve() as m:
        await m.put(None, "[[team/alice]] [[keep]]")
        await m.put("team/alice", "Alice [[team/alice/todo]]")
        assert await m.update("[[keep]]") == ok("Succeeded\nDeleted: team/alice, team/alice/todo")
        assert await m.read("team/alice") == NOT_FOUND
    assert not (store / "team" / "alice.md").exists()
    assert not (store / "team" / "alice" / "todo.md").exists()
    assert list(trash_batches(store).values()) == [
        {"team/alice.md": b"Alice [[team/alice/todo]]", "team/alice/todo.md": b"# team/alice/todo\n\n"}
    ]


async def test_pruned_documents_keep_front_matter_in_trash(serve, store):
    fm_doc = "---\nsummary: keep me\ntags: [x]\n---\n# K\n"
    async with serve() as m:
        await m.build([(None, "[[k]]"), ("k", fm_doc)])
        assert await m.update("gone") == ok("Succeeded\nDeleted: k")
    assert list(trash_batches(store).values()) == [{"k.md": fm_doc.encode()}]


