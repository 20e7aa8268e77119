"""edit_document and section reads through the real MCP client: part of a
document changes under the same link rules and answers as update_document."""

from __future__ import annotations

import json

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


async def test_l0_index_in_tool_resource_cli_and_instructions(serve, cli):
    async with serve() as m:
        await m.build([
            (None, "# Memory\n- [[projects]]\n- [[people]]\n"),
            ("projects", "---\nsummary: Software projects I work on\n---\n# Projects\n- [[silica]]\n"),
            ("silica", "# Silica\nA Python agent framework. Uses pytest.\n"),
        ])
        expected = "root: Memory\n- projects: Software projects I work on\n  - silica: A Python agent framework\n- people\n"
        assert await m.call("get_document_tree", {"summaries": True}) == ok(expected)
        resources = await m.session.list_resources()
        assert [str(r.uri) for r in resources.resources] == ["memtree://index", "memtree://status", "memtree://documents"]
        listed = json.loads((await m.session.read_resource("memtree://documents")).contents[0].text)
        assert [(d["id"], d["parent"], d["children"]) for d in listed] == [
            ("people", "root", []), ("projects", "root", ["silica"]), ("root", None, ["projects", "people"]),
            ("silica", "projects", []),
        ]
        read = await m.session.read_resource("memtree://index")
        assert read.contents[0].text == expected
        templates = await m.session.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["memtree://doc/{id}"]
        doc = await m.session.read_resource("memtree://doc/silica")
        assert doc.contents[0].text == "# Silica\nA Python agent framework. Uses pytest.\n"
        status = json.loads((await m.session.read_resource("memtree://status")).contents[0].text)
        assert status["store"]["documents"] == 4 and "index" in status
        with pytest.raises(Exception):
            await m.session.read_resource("memtree://doc/nope")
    async with serve() as m:
        assert m.init.instructions.endswith("What the memory holds:\n" + expected), m.init.instructions
    r = cli("index")
    assert r.rc == 0 and r.out == expected, r.out
    small = cli("--index-budget", "60", "index")
    assert small.rc == 0 and len(small.out.encode()) <= 61 and "more at the top level" in small.out, small.out


async def test_remember_through_the_tool(serve, store):
    async with serve() as m:
        await m.build([(None, "# Memory\n- [[infra]]\n"), ("infra", "# Infra\n\n## Database\n- Production DB is PostgreSQL 14\n")])
        r = await m.call("remember", {"content": "Production DB is PostgreSQL 15", "document": "infra", "section": "Database"})
        assert r == ok("Replaced in infra#Database: - Production DB is PostgreSQL 14")
        r = await m.call("remember", {"content": "Nightly backups", "document": "infra", "section": "Backups"})
        assert r == ok("Added to infra#Backups")
        assert docs(store)["infra"] == "# Infra\n\n## Database\n- Production DB is PostgreSQL 15\n\n## Backups\n- Nightly backups\n"
        r = await m.call("remember", {"content": "x", "mode": "replace"})
        assert r == err('Error: mode: "replace" is not one of upsert, append, merge')


async def test_lifecycle_through_the_tool(serve, store):
    async with serve() as m:
        await m.build([(None, "# Memory\n- [[old_db]]\n- [[db]]\n"),
                       ("old_db", "# Old DB\nStaging Postgres listens on port 6432.\n"),
                       ("db", "# DB\nStaging Postgres listens on port 5433.\n")])
        r = await m.call("lifecycle", {"id": "old_db", "superseded_by": "db", "why": "port changed in March"})
        assert r == ok("Succeeded\nold_db: status: deprecated, superseded_by: db")
        assert docs(store)["old_db"].startswith("---\nwhy: port changed in March\nstatus: deprecated\nsuperseded_by: db\n---\n")
        read = await m.read("old_db")
        assert read.text.startswith("> Superseded by db: read that for the current version.\n\n"), read
        found = await m.call("search", {"query": "staging postgres port"})
        assert "[old_db" not in found.text and "[db#DB]" in found.text, found.text
        assert await m.call("lifecycle", {"id": "db", "status": "gone", "why": "x"}) == err(
            'Error: status: "gone" is not active or deprecated'
        )


async def test_prompts_for_memory_rules_and_transcripts(serve):
    async with serve() as m:
        listed = await m.session.list_prompts()
        assert sorted(p.name for p in listed.prompts) == ["compress_transcript", "memory_rules"]
        rules = await m.session.get_prompt("memory_rules")
        text = rules.messages[0].content.text
        assert "## When to read" in text and "## When memories conflict" in text and "recall(task)" in text
        compress = await m.session.get_prompt("compress_transcript", {"transcript": "user: we moved to port 5433"})
        assert compress.messages[0].content.text.endswith("Transcript:\nuser: we moved to port 5433")


async def test_split_document_through_the_tool(serve, store):
    async with serve() as m:
        await m.build([(None, "# Memory\n- [[big]]\n"),
                       ("big", "# Big\nintro\n## Setup\nInstall it.\n## Usage\nRun it.\n## Notes\nMisc.\n")])
        r = await m.call("split_document", {"id": "big", "plan": {"big/howto": ["Setup", "Usage"]}})
        assert r == ok("Succeeded\nSplit into: big/howto")
        assert docs(store)["big"] == "# Big\nintro\n\n## Notes\nMisc.\n\n- [[big/howto]]: Install it\n"
        assert docs(store)["big/howto"] == "# howto\n\n## Setup\nInstall it.\n## Usage\nRun it.\n"
        r = await m.call("split_document", {"id": "big/howto"})
        assert r == ok("Succeeded\nSplit into: big/howto/setup, big/howto/usage")
        assert (await m.tree()).text == "root:\n  - big:\n    - big/howto:\n      - big/howto/setup\n      - big/howto/usage\n"
        assert await m.call("split_document", {"id": "big/howto/setup"}) == err(
            "Error: id: big/howto/setup has no sections to split along"
        )
