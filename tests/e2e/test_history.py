"""History through the real MCP client and the CLI: every change one commit
in the store's git repository, history/restore tools, versions and writes
based on them (merged by section or refused), nothing lost by a kill -9."""

from __future__ import annotations

import subprocess
import time

import anyio
import pytest

from helpers import docs, err, ok, snapshot, tool_text

pytestmark = pytest.mark.anyio


def git(store, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store), *args], check=True, capture_output=True, text=True).stdout


def settled(store, timeout: float = 10) -> None:
    """Waits until a server has committed every queued change."""
    queue = store / ".memtree" / "history"
    deadline = time.monotonic() + timeout
    while queue.exists() and any(p.suffix == ".json" for p in queue.iterdir()):
        assert time.monotonic() < deadline, "history queue not drained"
        time.sleep(0.02)


async def test_every_change_is_a_commit_and_a_pruned_subtree_comes_back(serve, store, cli):
    async with serve() as m:
        await m.build([(None, "# Root\n- [[a]]\n- [[b]]\n"), ("a", "# A\nfacts\n- [[a1]]\n"), ("a1", "# A1\nprecious\n")])
        assert await m.update("# Root\n- [[b]]\n") == ok("Succeeded\nDeleted: a, a1")
        settled(store)
        r = await m.call("history", {"id": "a1"})
        lines = r.text.splitlines()
        assert [line.split(" ", 3)[3] for line in lines] == [
            "update root; Changed: root; Deleted: a, a1 [deleted]",
            "update a1; Changed: a1",
            "update a; Added: a1; Changed: a",
        ], r.text
        r = await m.call("restore", {"id": "a"})
        assert r.text.startswith("Succeeded\nRestored: a, a1 from ") and r.text.endswith(" under root"), r
        assert docs(store) == {
            "root": "# Root\n- [[b]]\n- [[a]]\n",
            "a": "# A\nfacts\n- [[a1]]\n",
            "a1": "# A1\nprecious\n",
            "b": "# b\n\n",
        }
        assert await m.call("restore", {"id": "a", "version": "zzz"}) == err('Error: version: no version "zzz"')
        settled(store)
    assert git(store, "status", "--porcelain") == "", "the repository follows every change"
    log = git(store, "log", "--format=%s")
    assert log.splitlines()[0].startswith("restore a from "), log
    assert len(log.splitlines()) == 6, log  # history starts, 4 updates, the restore
    assert cli("history", "a1").out.count("\n") == 4
    r = cli("restore", "a1")
    assert r.rc == 0 and r.out.startswith("Succeeded\nRestored: a1 from "), r


async def test_a_write_from_an_old_version_is_merged_or_refused(serve, store):
    notes = "# Notes\n## Setup\nold setup\n## Usage\nold usage\n"
    async with serve() as m:
        await m.build([(None, "# Root\n- [[notes]]\n"), ("notes", notes)])
        read = await m.session.call_tool("read_document", {"id": "notes", "version": True})
        assert [c.text for c in read.content][0] == notes
        version = [c.text for c in read.content][1].removeprefix("version: ")
        assert len(version) == 12
        async with serve() as other:
            await other.put("notes", notes.replace("old usage", "new usage"))
        mine = notes.replace("old setup", "new setup")
        r = await m.call("update_document", {"id": "notes", "content": mine, "base": version})
        assert r == ok("Succeeded\nMerged: the document had changed since your version; kept those changes to Usage")
        assert docs(store)["notes"] == "# Notes\n## Setup\nnew setup\n## Usage\nnew usage\n"
        before = snapshot(store)
        r = await m.call("edit_document", {"id": "notes", "section": "Usage", "new": "mine\n", "base": version})
        assert r == err("Error: version: conflict\nchanged since that version, differently: Usage; read it again")
        assert snapshot(store) == before


async def test_twenty_concurrent_appends_from_stale_versions_all_survive(serve, store):
    """Twenty writers read one version, then each adds its own section: every one is kept."""
    async with serve() as m:
        await m.build([(None, "# Root\n- [[log]]\n"), ("log", "# Log\n")])
        read = await m.session.call_tool("read_document", {"id": "log", "version": True})
        version = read.content[1].text.removeprefix("version: ")

        results: list = []

        async def append(i: int) -> None:
            content = f"# Log\n## Entry {i}\nwriter {i} was here\n"
            results.append(await m.call("update_document", {"id": "log", "content": content, "base": version}))

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(append, i)
        assert all(not r.error for r in results), results
        text = docs(store)["log"]
        assert all(f"writer {i} was here" in text for i in range(20)), text


def test_nothing_acknowledged_is_missing_from_history_after_kill_9(raw_server, cli, store):
    s = raw_server()
    s.initialize()
    for i in range(30):
        assert tool_text(s.call_tool("update_document", {"content": f"# v{i}\n"}))[1] is False
    s.kill()  # before the background committer caught up, most likely
    r = cli("history", "root", "--limit", "100")
    assert r.rc == 0
    assert [line.split(" ", 3)[3] for line in r.out.splitlines()][:30] == ["update root; Changed: root"] * 30
    assert not any((store / ".memtree" / "history").glob("*.json")), "the queue is drained"


async def test_edits_by_other_programs_are_committed_as_such(serve, store):
    async with serve() as m:
        await m.put(None, "# Root\n- [[a]]\n")
        settled(store)
        (store / "a.md").write_text("# A\nfrom an editor\n")
        deadline = time.monotonic() + 10
        while "changed outside memtree" not in (await m.call("history", {"id": "a"})).text:
            assert time.monotonic() < deadline
            time.sleep(0.05)


async def test_history_can_be_turned_off(serve, store):
    async with serve(env={"MEMTREE_HISTORY": "off"}) as m:
        await m.put(None, "# Root\n- [[a]]\n")
        assert await m.call("history", {}) == err(
            "Error: history: history is off (MEMTREE_HISTORY=off); deleted documents are in .memtree/trash/"
        )
    assert not (store / ".git").exists()
