"""References (standard Markdown links between documents) through the binary:
allowed anywhere, listed both ways, drawn as graph edges of their own kind,
reported by `validate` when broken, followed when a split moves their section."""

from __future__ import annotations

import json

import pytest

from helpers import SUCCEEDED, docs, ok, run_cli

pytestmark = pytest.mark.anyio


async def test_references_are_allowed_anywhere_and_listed_both_ways(serve, store):
    async with serve() as m:
        await m.build([
            (None, "# Memory\n- [[people]]\n- [[projects]]\n"),
            ("projects", "# Projects\n- [[projects/silica]]\n"),
            ("projects/silica", "# Silica\nOwned by [Ana](../people.md#Ana); see [root](../root.md).\n"),
        ])
        # A reference to a sibling's child, to root and to itself: each a
        # cross-tree [[link]], each fine as a reference.
        text = "# People\n## Ana\nLeads [silica](projects/silica.md). [Home](root.md) [me](people.md)\n"
        assert await m.update(text, "people") == SUCCEEDED
        assert await m.tree() == ok("root:\n  - people\n  - projects:\n    - projects/silica\n")
        listed = json.loads((await m.session.read_resource("memtree://documents")).contents[0].text)
        by_id = {d["id"]: d for d in listed}
        assert by_id["projects/silica"]["references"] == ["people", "root"]
        assert by_id["projects/silica"]["referenced_by"] == ["people"]
        assert by_id["people"]["references"] == ["projects/silica", "root", "people"]
        assert by_id["root"]["referenced_by"] == ["people", "projects/silica"]
        assert await m.call("validate") == ok("4 documents, 0 findings: healthy")


async def test_validate_reports_broken_references(serve, store):
    async with serve() as m:
        await m.put(None, "# Memory\n- [[a]]\n")
        await m.put("a", "# A\n[gone](gone.md) [out](../../etc/passwd.md) [web](https://x.io/y.md)\n")
        r = await m.call("validate")
        assert not r.error
        assert r.text == (
            "warning: a: references ../../etc/passwd.md, which is not a document of the store\n"
            "warning: a: references gone.md, which is not a document of the store\n"
            "2 documents, 2 findings: healthy"
        )
        # Nothing was created for them.
        assert await m.tree() == ok("root:\n  - a\n")


async def test_a_split_leads_references_to_the_moved_section(serve, store):
    async with serve() as m:
        await m.build([
            (None, "# Memory\n- [[notes]]\n- [[index]]\n"),
            ("notes", "# Notes\n## Design\nSee the [index](index.md).\n## Operations\nRunbooks.\n"),
            ("index", "# Index\n[design](notes.md#Design) and [ops](notes.md#operations)\n"),
        ])
        r = await m.call("split_document", {"id": "notes"})
        assert r.text.startswith("Succeeded"), r
    stored = docs(store)
    assert stored["index"] == "# Index\n[design](notes/design.md#Design) and [ops](notes/operations.md#operations)\n"
    assert "See the [index](../index.md)." in stored["notes/design"]


def test_ls_json_draws_references_as_their_own_edges(base_env, store):
    assert run_cli(base_env, store, "write", "root", input="# M\n- [[a]]\n- [[b]]\n").rc == 0
    assert run_cli(base_env, store, "write", "b", input="# B\nlike [a](a.md)\n").rc == 0
    r = run_cli(base_env, store, "ls", "--json")
    assert r.rc == 0, r.err
    edges = json.loads(r.out)["edges"]
    assert sorted((e["from"], e["to"], e["kind"]) for e in edges) == [
        ("b", "a", "reference"),
        ("root", "a", "child"),
        ("root", "b", "child"),
    ]
    r = run_cli(base_env, store, "validate")
    assert r.rc == 0 and r.out.endswith("3 documents, 0 findings: healthy\n"), r
