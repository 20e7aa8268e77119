"""Files changed, added or deleted by another program are seen at the next request."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from helpers import NOT_FOUND, SUCCEEDED, cross_tree, docs, ok, write_file

pytestmark = pytest.mark.anyio


async def test_changed_document_is_reread(serve, store):
    async with serve() as m:
        await m.put(None, "[[a]]")
        assert await m.read("a") == ok("# a\n\n")
        write_file(store, "a.md", "# edited in vim\nlonger text\n")
        assert await m.read("a") == ok("# edited in vim\nlonger text\n")
        write_file(store, "a.md", "short")
        assert await m.read("a") == ok("short")


async def test_same_size_edit_with_same_mtime_is_reread(serve, store):
    """An edit that keeps the size and the modification time is still seen."""
    async with serve() as m:
        await m.put(None, "[[a]]")
        await m.put("a", "version-1")
        assert await m.read("a") == ok("version-1")
        p = store / "a.md"
        st = p.stat()
        p.write_text("version-2")
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert await m.read("a") == ok("version-2")


async def test_root_edited_externally_changes_tree(serve, store):
    async with serve() as m:
        await m.put(None, "[[a]]")
        assert await m.tree() == ok("root:\n  - a\n")
        write_file(store, "ext.md", "# ext\nwritten by git pull\n")
        write_file(store, "root.md", "# Root\n[[ext]]\n[[a]]\n")
        assert await m.read() == ok("# Root\n[[ext]]\n[[a]]\n")
        assert await m.tree() == ok("root:\n  - ext\n  - a\n")
        assert await m.read("ext") == ok("# ext\nwritten by git pull\n")


async def test_edit_in_place_is_in_the_tree_once_the_watcher_reports_it(serve, store):
    """While serving, a folder's listing is kept as long as nothing in it
    changes; a file rewritten in place (its folder untouched) is reported by
    the file watcher and in the tree from then on, as it is in reads at once."""
    async with serve() as m:
        await m.put(None, "[[a]]")
        write_file(store, "b.md", "# b, written by another program\n")
        await asyncio.sleep(0.5)  # the watcher is up, the listing kept
        assert "  - a\n" in (await m.tree()).text
        with open(store / "root.md", "r+", encoding="utf-8") as f:
            f.write("[[a]]\n[[b]]\n")  # the same file: no folder change
        assert await m.read() == ok("[[a]]\n[[b]]\n")
        for _ in range(100):
            if (tree := (await m.tree()).text) == "root:\n  - a\n  - b\n":
                break
            await asyncio.sleep(0.02)
        assert tree == "root:\n  - a\n  - b\n"


async def test_added_file_with_folder_is_served(serve, store):
    async with serve() as m:
        await m.put(None, "[[notes/today]]")
        write_file(store, "notes/today.md", "# today\n[[notes/today/detail]]\n")
        write_file(store, "notes/today/detail.md", "detail from Obsidian\n")
        assert await m.read("notes/today/detail") == ok("detail from Obsidian\n")
        assert await m.tree() == ok("root:\n  - notes/today:\n    - notes/today/detail\n")


async def test_deleted_file_is_not_found(serve, store):
    async with serve() as m:
        await m.put(None, "[[a]] [[b]]")
        await m.put("b", "# B\n")
        assert await m.read("b") == ok("# B\n")
        (store / "b.md").unlink()
        assert await m.read("b") == NOT_FOUND
        assert await m.update("x", "b") == NOT_FOUND


async def test_external_links_are_enforced_by_next_update(serve, store):
    """After an external edit adds a child, the tool treats it as that parent's child."""
    async with serve() as m:
        await m.put(None, "[[a]] [[b]]")
        write_file(store, "c.md", "# c\n")
        write_file(store, "a.md", "# a\n[[c]]\n")
        assert await m.update("[[c]]", "b") == cross_tree("[[c]] is a child of a")
        assert await m.update("# a v2\n", "a") == ok("Succeeded\nDeleted: c")
        assert not (store / "c.md").exists()


async def test_external_front_matter_is_kept_by_next_update(serve, store):
    async with serve() as m:
        await m.put(None, "[[a]]")
        write_file(store, "a.md", "---\nsummary: added by hand\n---\nold\n")
        assert await m.update("new\n", "a") == SUCCEEDED
        assert await m.read("a") == ok("---\nsummary: added by hand\n---\nnew\n")
    assert (store / "a.md").read_text() == "---\nsummary: added by hand\n---\nnew\n"


async def test_external_edit_seen_by_second_server(serve, store):
    """One server's write is seen by another server's next request (the other is an external editor)."""
    async with serve() as m1, serve() as m2:
        await m1.put(None, "[[a]]")
        assert await m2.read() == ok("[[a]]")
        assert await m2.tree() == ok("root:\n  - a\n")
        await m2.put("a", "from m2")
        assert await m1.read("a") == ok("from m2")
        await m2.put(None, "[[b]]")
        assert await m1.tree() == ok("root:\n  - b\n")
        assert await m1.read("a") == NOT_FOUND


async def test_link_whose_file_was_deleted_is_recreated(serve, store):
    """A link whose document vanished from disk names an id that does not exist:
    the next update that carries the link creates it again (spec: links to ids that
    do not exist yet are created as children)."""
    async with serve() as m:
        await m.put(None, "[[a]] [[b]]")
        (store / "a.md").unlink()
        assert await m.update("[[a]] [[b]] edited") == ok("Succeeded\nCreated: a")
        assert await m.read("a") == ok("# a\n\n")
        assert await m.tree() == ok("root:\n  - a\n  - b\n")
    assert (store / "a.md").read_text() == "# a\n\n"


async def test_deleted_root_is_recreated_from_template(serve, store):
    async with serve(env={"ROOT_TEMPLATE": "# Fresh\\n"}) as m:
        await m.put(None, "# custom\n")
        (store / "root.md").unlink()
        assert await m.read() == ok("# Fresh\n")
        assert await m.tree() == ok("root: []\n")


async def test_dropping_a_stray_second_link_does_not_prune_the_document(serve, store, cli):
    """An editor adds a second link to `a` in `b` (two parents: reported by validate).
    Removing that stray link again must not delete `a`: root still links it, and a
    document that breaks the tree rules is reported, never silently deleted."""
    async with serve() as m:
        await m.build([(None, "[[a]] [[b]]"), ("a", "# A precious\n")])
        write_file(store, "b.md", "see [[a]]\n")
        assert cli("validate").rc == 1
        assert await m.update("nothing\n", "b") == SUCCEEDED
        assert await m.read("a") == ok("# A precious\n")
        assert await m.tree() == ok("root:\n  - a\n  - b\n")
    assert (store / "a.md").read_text() == "# A precious\n"
    assert cli("validate").rc == 0


async def test_cycle_on_disk_does_not_hang_tree_or_reads(serve, store):
    async with serve() as m:
        await m.put(None, "[[a]]")
        write_file(store, "a.md", "[[b]]")
        write_file(store, "b.md", "[[a]] [[b]]")
        r = await m.tree()
        assert not r.error and r.text.startswith("root:\n  - a:\n    - b"), r
        assert await m.read("b") == ok("[[a]] [[b]]")



def test_derived_state_folder_can_be_deleted_between_runs(cli, store):
    assert cli("write", input="[[a]] [[b]]").rc == 0
    assert cli("write", input="[[a]]").rc == 0
    shutil.rmtree(store / ".memtree")
    assert cli("tree").out == "root:\n  - a\n"
    r = cli("write", input="[[c]]")
    assert (r.rc, r.out.rstrip("\n")) == (0, "Succeeded\nCreated: c\nDeleted: a")
    assert docs(store) == {"root": "[[c]]", "c": "# c\n\n"}
    assert cli("validate").rc == 0


async def test_derived_state_folder_can_be_deleted_under_a_running_server(serve, store, cli):
    """Everything under .memtree/ is derived or recoverable: deleting it while a
    server runs loses no document and the server keeps working."""
    async with serve() as m:
        await m.build([(None, "[[a]] [[b]]"), ("a", "[[a1]]")])
        assert await m.update("[[a]]") == ok("Succeeded\nDeleted: b")
        shutil.rmtree(store / ".memtree")
        assert await m.read("a") == ok("[[a1]]")
        assert await m.tree() == ok("root:\n  - a:\n    - a1\n")
        assert await m.update("[[a]] [[c]]") == ok("Succeeded\nCreated: c")
        assert await m.update("[[c]]") == ok("Succeeded\nDeleted: a, a1")
    assert docs(store) == {"root": "[[c]]", "c": "# c\n\n"}
    assert cli("validate").rc == 0
