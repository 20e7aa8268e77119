"""edit_document and section reads through the real MCP client: part of a
document changes under the same link rules and answers as update_document."""

from __future__ import annotations

import pytest

from helpers import NOT_FOUND, SUCCEEDED, cross_tree, docs, err, ok, snapshot

pytestmark = pytest.mark.anyio

NOTES = "---\nscope: project\n---\n# Notes\nintro\n## Setup\nold setup\n### Linux\napt\n## Usage\nuse it\n"


async def test_replace_one_occurrence(serve, store):
    async with serve() as m:
        await m.build([(None, "# Memory\n- [[notes]]\n- [[other]]\n"), ("notes", NOTES)])
        assert await m.call("edit_document", {"id": "notes", "old": "use it", "new": "use it daily"}) == SUCCEEDED
        assert docs(store)["notes"] == NOTES.replace("use it", "use it daily")
        r = await m.call("edit_document", {"id": "notes", "old": "apt", "new": "apt, see [[linux_tips]]"})
        assert r == ok("Succeeded\nCreated: linux_tips")
        before = snapshot(store)
        assert await m.call("edit_document", {"id": "notes", "old": "nowhere", "new": "x"}) == err(
            "Error: old: not found in notes"
        )
        assert await m.call("edit_document", {"id": "notes", "old": "##", "new": "#"}) == err(
            "Error: old: occurs 3 times in notes; include more of the text around it"
        )
        assert await m.call("edit_document", {"id": "notes", "old": "intro", "new": "[[other]]"}) == cross_tree(
            "[[other]] is a child of root"
        )
        assert await m.call("edit_document", {"id": "gone", "old": "a", "new": "b"}) == NOT_FOUND
        assert await m.call("edit_document", {"id": "notes", "new": "b"}) == err(
            "Error: old: give either old or section"
        )
        assert snapshot(store) == before


async def test_sections_are_read_and_replaced(serve, store):
    async with serve() as m:
        await m.build([(None, "# Memory\n- [[notes]]\n"), ("notes", NOTES)])
        assert await m.call("read_document", {"id": "notes", "section": "Setup"}) == ok(
            "## Setup\nold setup\n### Linux\napt\n"
        )
        r = await m.call("edit_document", {"id": "notes", "section": "setup", "new": "new setup"})
        assert r == SUCCEEDED
        assert docs(store)["notes"] == "---\nscope: project\n---\n# Notes\nintro\n## Setup\nnew setup\n\n## Usage\nuse it\n"
        assert await m.call("read_document", {"id": "notes", "section": "Deploy"}) == err(
            'Error: section: no heading "Deploy" in notes (headings: Notes, Setup, Usage)'
        )


async def test_move_document_re_parents_a_subtree(serve, store, cli):
    async with serve() as m:
        await m.build([
            (None, "# Memory\n- [[projects]]\n- [[archive]]\n"),
            ("projects", "# Projects\n- [[silica]]\n- [[harbor]]\n"),
            ("silica", "# Silica\n- [[silica_notes]]\n"),
        ])
        r = await m.call("move_document", {"id": "silica", "new_parent": "archive"})
        assert r == ok("Succeeded\nMoved: silica from projects to archive")
        assert (await m.tree()).text == "root:\n  - projects:\n    - harbor\n  - archive:\n    - silica:\n      - silica_notes\n"
        assert docs(store)["projects"] == "# Projects\n- [[harbor]]\n"
        before = snapshot(store)
        assert await m.call("move_document", {"id": "archive", "new_parent": "silica_notes"}) == err(
            "Error: new_parent: silica_notes is in the subtree of archive; that would make a cycle"
        )
        assert await m.call("move_document", {"id": "root", "new_parent": "archive"}) == err("Error: id: root cannot move")
        assert snapshot(store) == before
    r = cli("move", "silica", "projects")
    assert r.rc == 0 and r.out == "Succeeded\nMoved: silica from archive to projects\n", (r.out, r.err)
    assert cli("validate").rc == 0
