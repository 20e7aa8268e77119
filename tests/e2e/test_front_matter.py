"""Front-matter: kept when an update has none, replaced when it has one, validated.

Which values each known key takes, and the words for each invalid block, are
tabled in crates/memtree-core/tests/engine.rs (`front_matter_values_are_checked`);
one refusal goes through the binary here.
"""

from __future__ import annotations

import pytest

from helpers import NOT_FOUND, SUCCEEDED, docs, err, ok, snapshot

pytestmark = pytest.mark.anyio

FM = "---\nsummary: Project notes\ntags: [alpha, beta]\nscope: project\n---\n"


async def test_front_matter_stored_verbatim(serve, store):
    content = FM + "# Body\n"
    async with serve() as m:
        assert await m.update(content) == SUCCEEDED
        assert await m.read() == ok(content)
    assert (store / "root.md").read_text() == content


async def test_update_without_front_matter_keeps_existing_block(serve, store):
    async with serve() as m:
        await m.put(None, FM + "# Old body\n")
        assert await m.update("# New body\n") == SUCCEEDED
        assert await m.read() == ok(FM + "# New body\n")
        assert await m.update("third\n") == SUCCEEDED
        assert await m.read() == ok(FM + "third\n")
    assert (store / "root.md").read_text() == FM + "third\n"


async def test_kept_block_is_prepended_verbatim(serve, store):
    """Comments, odd spacing and key order in the old block survive byte for byte."""
    block = "---\n# a YAML comment\nzeta:   1\nsummary:  'spaced'   \nalpha: [1,2]\n---\n"
    async with serve() as m:
        await m.put(None, "[[kid]]")
        await m.put("kid", block + "old")
        assert await m.update("new body", "kid") == SUCCEEDED
        assert await m.read("kid") == ok(block + "new body")
    assert (store / "kid.md").read_text() == block + "new body"


async def test_update_with_block_replaces_it(serve):
    async with serve() as m:
        await m.put(None, FM + "body\n")
        new = "---\nsummary: Replaced\nstatus: deprecated\n---\nbody 2\n"
        assert await m.update(new) == SUCCEEDED
        assert await m.read() == ok(new)
        assert await m.update("body 3\n") == SUCCEEDED
        assert await m.read() == ok("---\nsummary: Replaced\nstatus: deprecated\n---\nbody 3\n")


async def test_unknown_keys_are_kept(serve):
    content = "---\nmy_key: my value\nnested:\n  deep: [1, 2]\nsummary: s\n---\ntext\n"
    async with serve() as m:
        assert await m.update(content) == SUCCEEDED
        assert await m.read() == ok(content)


async def test_all_known_keys_accepted(serve):
    content = (
        "---\n"
        "summary: One line\n"
        "tags: [a, b]\n"
        "scope: ephemeral\n"
        "priority: 0.5\n"
        "confidence: tentative\n"
        "status: active\n"
        "expires: 2030-01-31\n"
        "---\n"
        "body\n"
    )
    async with serve() as m:
        assert await m.update(content) == SUCCEEDED
        assert await m.read() == ok(content)


async def test_links_after_front_matter_create_children(serve, store):
    async with serve() as m:
        assert await m.update(FM + "- [[child]]\n") == ok("Succeeded\nCreated: child")
        assert await m.read("child") == ok("# child\n\n")
        # a kept block does not hide the body's links
        assert await m.update("- [[child]]\n- [[second]]\n") == ok("Succeeded\nCreated: second")
        assert await m.read() == ok(FM + "- [[child]]\n- [[second]]\n")
        assert await m.update("nothing\n") == ok("Succeeded\nDeleted: child, second")
    assert docs(store) == {"root": FM + "nothing\n"}


async def test_document_created_by_link_has_no_front_matter(serve):
    async with serve() as m:
        await m.put(None, FM + "[[kid]]")
        assert await m.read("kid") == ok("# kid\n\n")
        assert await m.update("plain", "kid") == SUCCEEDED
        assert await m.read("kid") == ok("plain")


async def test_invalid_yaml_with_new_link_creates_nothing(serve, store):
    async with serve() as m:
        before = snapshot(store)
        r = await m.update("---\nsummary: [oops\n---\n[[newkid]]\n")
        assert r.error and r.text.startswith("Error: content: invalid front-matter YAML: "), r.text
        assert snapshot(store) == before
        assert await m.read("newkid") == NOT_FOUND


async def test_known_key_with_bad_value_rejected(serve, store):
    async with serve() as m:
        before = snapshot(store)
        assert await m.update("---\nscope: galaxy\n---\nbody\n") == err(
            'Error: content: front-matter key "scope" must be one of global, agent, project, ephemeral'
        )
        assert snapshot(store) == before
        assert await m.read() == ok("# Memory\n")


async def test_links_inside_front_matter_are_not_links(serve, store):
    async with serve() as m:
        assert await m.update("---\nsummary: see [[not_a_child]]\n---\n[[real]]\n") == ok(
            "Succeeded\nCreated: real"
        )
        assert await m.read("not_a_child") == NOT_FOUND
    assert sorted(docs(store)) == ["real", "root"]


async def test_crlf_front_matter_is_recognised_and_kept(serve):
    block = "---\r\nsummary: crlf\r\n---\r\n"
    async with serve() as m:
        assert await m.update(block + "[[a]]\r\n") == ok("Succeeded\nCreated: a")
        assert await m.update("body only\r\n") == ok("Succeeded\nDeleted: a")
        assert await m.read() == ok(block + "body only\r\n")


async def test_empty_content_keeps_front_matter(serve):
    async with serve() as m:
        await m.put(None, FM + "[[kid]]")
        assert await m.update("") == ok("Succeeded\nDeleted: kid")
        assert await m.read() == ok(FM)


async def test_empty_content_without_front_matter(serve, store):
    async with serve() as m:
        assert await m.update("") == SUCCEEDED
        assert await m.read() == ok("")
    assert (store / "root.md").read_bytes() == b""
