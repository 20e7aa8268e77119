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
