"""Tree integrity: child-only links, cross-tree rejections, pruning, trash, link syntax."""

from __future__ import annotations

import pytest

from helpers import NOT_FOUND, SUCCEEDED, cross_tree, docs, err, ok, snapshot, trash_batches

pytestmark = pytest.mark.anyio


async def _family(m):
    """root → a(a1(a1x), a2), b(b1); used by most rule tests."""
    await m.build([
        (None, "# Root\n[[a]]\n[[b]]\n"),
        ("a", "# A\n[[a1]]\n[[a2]]\n"),
        ("a1", "# A1\n[[a1x]]\n"),
        ("b", "# B\n[[b1]]\n"),
    ])


FAMILY_TREE = "root:\n  - a:\n    - a1:\n      - a1x\n    - a2\n  - b:\n    - b1\n"


# ---------------------------------------------------------------- accepted links


async def test_family_tree_shape(serve):
    async with serve() as m:
        await _family(m)
        assert await m.tree() == ok(FAMILY_TREE)


async def test_linking_own_existing_children_is_accepted(serve, store):
    async with serve() as m:
        await _family(m)
        assert await m.update("# A again\n[[a2]] then [[a1]]\n", "a") == SUCCEEDED
        assert await m.tree() == ok("root:\n  - a:\n    - a2\n    - a1:\n      - a1x\n  - b:\n    - b1\n")
        assert await m.read("a1x") == ok("# a1x\n\n")


# ---------------------------------------------------------------- rejected links


@pytest.mark.parametrize(
    ("doc", "content", "detail"),
    [
        # sibling
        ("a", "[[a1]] [[a2]] [[b]]", "[[b]] is a child of root"),
        ("a1", "[[a1x]] [[a2]]", "[[a2]] is a child of a"),
        # cousin
        ("a", "[[a1]] [[a2]] [[b1]]", "[[b1]] is a child of b"),
        ("b1", "[[a1x]]", "[[a1x]] is a child of a1"),
        # merge: linking another parent's child would give it two parents
        ("b", "[[b1]] [[a2]]", "[[a2]] is a child of a"),
        # parent and grandparent
        ("a1", "[[a1x]] [[a]]", "[[a]] is an ancestor of a1"),
        ("a1x", "[[a]]", "[[a]] is an ancestor of a1x"),
        ("a1x", "[[a1]]", "[[a1]] is an ancestor of a1x"),
        # itself
        ("a", "[[a1]] [[a2]] [[a]]", "[[a]] is the document itself"),
        ("a1x", "[[a1x]]", "[[a1x]] is the document itself"),
        # root
        ("a", "[[a1]] [[a2]] [[root]]", "[[root]] is the root document"),
        ("b1", "[[root]]", "[[root]] is the root document"),
        # root linking a grandchild (not its own child)
        (None, "[[a]] [[b]] [[a1]]", "[[a1]] is a child of a"),
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


async def test_root_linking_itself_rejected(serve, store):
    async with serve() as m:
        await m.put(None, "[[a]]")
        before = snapshot(store)
        r = await m.update("[[a]] [[root]]")
        assert r.error
        assert r.text in (
            "Error: content: cross-tree reference not allowed\n[[root]] is the root document",
            "Error: content: cross-tree reference not allowed\n[[root]] is the document itself",
        )
        assert snapshot(store) == before


async def test_label_link_to_foreign_document_rejected(serve, store):
    async with serve() as m:
        await _family(m)
        before = snapshot(store)
        assert await m.update("[[a1]] [[a2]] [[b|see B]]", "a") == cross_tree("[[b]] is a child of root")
        assert snapshot(store) == before


async def test_merge_prevention_keeps_single_parent(serve, store):
    """Moving a child by linking it from a new parent is refused; the old parent keeps it."""
    async with serve() as m:
        await m.build([(None, "[[x]] [[z]]"), ("x", "[[shared]]")])
        assert await m.update("[[shared]]", "z") == cross_tree("[[shared]] is a child of x")
        assert await m.tree() == ok("root:\n  - x:\n    - shared\n  - z\n")
    assert sorted(docs(store)) == ["root", "shared", "x", "z"]


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


async def test_prune_whole_chain(serve, store):
    async with serve() as m:
        await m.build([(None, "[[keep]] [[c1]]"), ("c1", "one [[c2]]"), ("c2", "two [[c3]]"), ("c3", "three")])
        assert await m.update("[[keep]]") == ok("Succeeded\nDeleted: c1, c2, c3")
        for i in ("c1", "c2", "c3"):
            assert await m.read(i) == NOT_FOUND
        assert await m.tree() == ok("root:\n  - keep\n")
    assert docs(store) == {"root": "[[keep]]", "keep": "# keep\n\n"}
    assert list(trash_batches(store).values()) == [
        {"c1.md": b"one [[c2]]", "c2.md": b"two [[c3]]", "c3.md": b"three"}
    ]


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


async def test_prune_inside_child(serve, store):
    async with serve() as m:
        await _family(m)
        assert await m.update("# A\n[[a2]]\n", "a") == ok("Succeeded\nDeleted: a1, a1x")
        assert await m.tree() == ok("root:\n  - a:\n    - a2\n  - b:\n    - b1\n")
    assert sorted(docs(store)) == ["a", "a2", "b", "b1", "root"]


async def test_create_and_delete_in_one_update(serve, store):
    async with serve() as m:
        await m.build([(None, "[[old]] [[stay]]"), ("old", "[[old_kid]]")])
        assert await m.update("[[new1]] [[stay]] [[new2]]") == ok(
            "Succeeded\nCreated: new1, new2\nDeleted: old, old_kid"
        )
        assert await m.tree() == ok("root:\n  - new1\n  - stay\n  - new2\n")
    assert docs(store) == {
        "root": "[[new1]] [[stay]] [[new2]]",
        "new1": "# new1\n\n",
        "new2": "# new2\n\n",
        "stay": "# stay\n\n",
    }


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


async def test_readding_link_creates_fresh_document(serve, store):
    async with serve() as m:
        await m.build([(None, "[[a]]"), ("a", "# My precious notes\n[[deep]]\n"), ("deep", "deep notes")])
        assert await m.update("# empty\n") == ok("Succeeded\nDeleted: a, deep")
        assert await m.update("[[a]]") == ok("Succeeded\nCreated: a")
        assert await m.read("a") == ok("# a\n\n")
        assert await m.read("deep") == NOT_FOUND
        assert await m.tree() == ok("root:\n  - a\n")
    assert docs(store) == {"root": "[[a]]", "a": "# a\n\n"}


# ---------------------------------------------------------------- link syntax


async def test_links_in_code_are_text(serve, store):
    content = (
        "# Root\n"
        "inline `[[span]]` code\n"
        "\n"
        "```\n"
        "[[fenced]]\n"
        "```\n"
        "\n"
        "~~~md\n"
        "[[tilde]]\n"
        "~~~\n"
        "\n"
        "    [[indented]]\n"
        "\n"
        "real [[real]] link\n"
    )
    async with serve() as m:
        assert await m.update(content) == ok("Succeeded\nCreated: real")
        for i in ("span", "fenced", "tilde", "indented"):
            assert await m.read(i) == NOT_FOUND
        assert await m.tree() == ok("root:\n  - real\n")
        assert await m.read() == ok(content)
    assert sorted(docs(store)) == ["real", "root"]


async def test_code_link_to_foreign_document_is_not_cross_tree(serve):
    async with serve() as m:
        await m.put(None, "[[a]] [[b]]")
        assert await m.update("see `[[b]]` and\n\n```\n[[root]] [[a]]\n```\n", "a") == SUCCEEDED
        assert await m.tree() == ok("root:\n  - a\n  - b\n")


async def test_removing_link_into_code_prunes(serve):
    async with serve() as m:
        await m.put(None, "[[a]] [[b]]")
        assert await m.update("[[a]] `[[b]]`") == ok("Succeeded\nDeleted: b")


async def test_label_links(serve, store):
    async with serve() as m:
        assert await m.update("- [[child|My Child]]\n- [[other|Other one]]\n") == ok(
            "Succeeded\nCreated: child, other"
        )
        assert await m.read("child") == ok("# child\n\n")
        assert await m.tree() == ok("root:\n  - child\n  - other\n")
        assert await m.update("- [[child]]\n- [[other|renamed label]]\n") == SUCCEEDED
        assert await m.update("- [[other|only]]\n") == ok("Succeeded\nDeleted: child")
    assert docs(store) == {"root": "- [[other|only]]\n", "other": "# other\n\n"}


async def test_slash_ids_create_folders(serve, store):
    async with serve() as m:
        assert await m.update("[[projects/silica]] [[projects]]") == ok(
            "Succeeded\nCreated: projects/silica, projects"
        )
        assert await m.read("projects/silica") == ok("# projects/silica\n\n")
        await m.put("projects/silica", "[[projects/silica/notes]]")
        assert await m.read("projects/silica/notes") == ok("# projects/silica/notes\n\n")
        assert await m.tree() == ok(
            "root:\n  - projects/silica:\n    - projects/silica/notes\n  - projects\n"
        )
    assert (store / "projects" / "silica.md").read_text() == "[[projects/silica/notes]]"
    assert (store / "projects" / "silica" / "notes.md").read_text() == "# projects/silica/notes\n\n"
    assert (store / "projects.md").read_text() == "# projects\n\n"


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


async def test_case_collision_with_existing_document(serve, store):
    async with serve() as m:
        await m.put(None, "[[foo]]")
        await m.put("foo", "[[bar]]")
        before = snapshot(store)
        assert await m.update("[[foo]] [[Foo]]") == err(
            "Error: content: [[Foo]] differs only in letter case from existing document foo"
        )
        assert await m.update("[[bar]] [[BAR]]", "foo") == err(
            "Error: content: [[BAR]] differs only in letter case from existing document bar"
        )
        # an existing document elsewhere in the tree: either rule may name it, but it is refused
        assert await m.update("[[foo]] [[Bar]]") in (
            err("Error: content: [[Bar]] differs only in letter case from existing document bar"),
            cross_tree("[[Bar]] is a child of foo"),
        )
        assert snapshot(store) == before
        assert await m.read("Foo") == NOT_FOUND


async def test_links_inside_other_markdown_constructs_are_links(serve):
    content = (
        "# Heading [[h]]\n"
        "\n"
        "> quoted [[q]]\n"
        "\n"
        "- **bold [[bold]]** and _[[em|emphasised]]_\n"
        "\n"
        "| col |\n"
        "|-----|\n"
        "| [[cell]] |\n"
    )
    async with serve() as m:
        assert await m.update(content) == ok("Succeeded\nCreated: h, q, bold, em, cell")
        assert await m.tree() == ok("root:\n  - h\n  - q\n  - bold\n  - em\n  - cell\n")


async def test_escaped_link_is_text(serve, store):
    async with serve() as m:
        assert await m.update("[[a]] and \\[[not_a_link]]") == ok("Succeeded\nCreated: a")
        assert await m.read("not_a_link") == NOT_FOUND
    assert sorted(docs(store)) == ["a", "root"]


async def test_link_to_orphan_file_is_rejected(serve, store):
    """A document that exists on disk but has no parent is not a new id: linking it is refused."""
    async with serve() as m:
        await m.put(None, "[[a]]")
        (store / "stray.md").write_text("# stray\n")
        before = snapshot(store)
        r = await m.update("[[a]] [[stray]]")
        assert r.error
        first, _, detail = r.text.partition("\n")
        assert first == "Error: content: cross-tree reference not allowed"
        assert detail.startswith("[[stray]] "), r.text
        assert snapshot(store) == before


async def test_mixed_case_ids_are_kept(serve, store):
    async with serve() as m:
        assert await m.update("[[CamelCase]] [[UPPER/Sub_1]]") == ok("Succeeded\nCreated: CamelCase, UPPER/Sub_1")
        assert await m.read("CamelCase") == ok("# CamelCase\n\n")
        assert await m.read("camelcase") == NOT_FOUND
    assert (store / "CamelCase.md").exists()
    assert (store / "UPPER" / "Sub_1.md").exists()


async def test_case_collision_with_root(serve, store):
    async with serve() as m:
        before = snapshot(store)
        r = await m.update("[[Root]]")
        assert r in (
            err("Error: content: [[Root]] differs only in letter case from existing document root"),
            cross_tree("[[Root]] is the root document"),
        )
        assert snapshot(store) == before


async def test_pruned_documents_keep_front_matter_in_trash(serve, store):
    fm_doc = "---\nsummary: keep me\ntags: [x]\n---\n# K\n"
    async with serve() as m:
        await m.build([(None, "[[k]]"), ("k", fm_doc)])
        assert await m.update("gone") == ok("Succeeded\nDeleted: k")
    assert list(trash_batches(store).values()) == [{"k.md": fm_doc.encode()}]


async def test_wide_tree_in_one_update(serve, store):
    ids = [f"n{i:03d}" for i in range(300)]
    async with serve() as m:
        content = "# Wide\n" + "".join(f"- [[{i}]]\n" for i in reversed(ids))
        assert await m.update(content) == ok("Succeeded\nCreated: " + ", ".join(reversed(ids)))
        assert await m.tree() == ok("root:\n" + "".join(f"  - {i}\n" for i in reversed(ids)))
        r = await m.update("# Narrow\n[[n150]]\n")
        assert not r.error
        head, deleted = r.text.split("\n")
        assert head == "Succeeded" and deleted.startswith("Deleted: ")
        assert sorted(deleted[len("Deleted: "):].split(", ")) == [i for i in ids if i != "n150"]
    assert docs(store) == {"root": "# Narrow\n[[n150]]\n", "n150": "# n150\n\n"}
    assert sorted(next(iter(trash_batches(store).values()))) == [f"{i}.md" for i in ids if i != "n150"]


async def test_deep_tree(serve, store):
    depth = 30
    async with serve() as m:
        await m.put(None, "[[l0]]")
        for d in range(depth - 1):
            assert await m.update(f"level {d} [[l{d + 1}]]", f"l{d}") == ok(f"Succeeded\nCreated: l{d + 1}")
        expected = "root:\n" + "".join(
            "  " * (d + 1) + f"- l{d}" + (":" if d < depth - 1 else "") + "\n" for d in range(depth)
        )
        assert await m.tree() == ok(expected)
        # the deepest document may not link any ancestor
        assert await m.update("[[l0]]", f"l{depth - 1}") == cross_tree(f"[[l0]] is an ancestor of l{depth - 1}")
        assert await m.update("gone") == ok(
            "Succeeded\nDeleted: " + ", ".join(f"l{d}" for d in range(depth))
        )
    assert docs(store) == {"root": "gone"}
