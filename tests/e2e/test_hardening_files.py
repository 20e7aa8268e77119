"""What a hostile or careless user found in the files under a store
(issue 10), each test failed before its fix:

- reads stay inside the store: symlinks are not followed, special files
  neither block nor run without end, and nothing over the size limit is
  read;
- derived state that is damaged (the index) is set aside and rebuilt, and
  a store that cannot be written (read-only, a full disk) is still read;
- a broken `.git` is reported, and a write says history is not recorded;
- a damaged journal says what to do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from helpers import BIN, docs, err, ok

pytestmark = pytest.mark.anyio


def namespaces_work() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_namespaces = pytest.mark.skipif(not namespaces_work(), reason="needs unshare -rm (user and mount namespaces)")


def under(setup: str) -> list[str]:
    """A command prefix that runs the command after `setup` in a private
    mount namespace (where a bind mount can be made read-only, or a small
    tmpfs filled, without being root)."""
    return ["unshare", "-rm", "sh", "-c", f'{setup} && exec "$@"', "sh"]


def read_only(store) -> list[str]:
    return under(f"mount --bind '{store}' '{store}' && mount -o remount,bind,ro '{store}'")


async def seed(cli, store) -> None:
    assert cli("write", "root", input="# Memory\n- [[a]]\n").rc == 0
    assert cli("write", "a", input="# A\nquartz crystals grow slowly\n").rc == 0
    assert cli("search", "quartz").rc == 0  # the index holds both


async def test_reads_do_not_follow_symlinks_out_of_the_store(serve, cli, store, tmp_path):
    """Finding 3: a file symlink `x.md → /any/file` (or a folder symlink) was
    read by `read_document`, `memtree read` and `memtree://doc/x`."""
    await seed(cli, store)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# secret\nthe outside world\n")
    os.symlink(outside / "secret.md", store / "x.md")
    os.symlink(outside, store / "linked")
    expected = "Error: id: unreadable: a symbolic link; memtree reads only regular files inside the store"
    r = cli("read", "x")
    assert (r.rc, r.err.strip()) == (1, expected), r
    assert cli("read", "linked/secret").err.strip() == "Error: id: not found"
    async with serve() as m:
        assert await m.read("x") == err(expected)
        assert await m.read("linked/secret") == err("Error: id: not found")
        with pytest.raises(Exception, match="symbolic link"):
            await m.session.read_resource("memtree://doc/x")
        r = await m.call("search", {"query": "outside world"})
        assert r == ok("No matches.\n"), r
        # A write does not replace the link unseen either.
        r = await m.update("# Memory\n- [[a]]\n- [[x]]\n")
        assert r.error and "cross-tree" in r.text, r
    r = cli("validate")
    assert r.rc == 1, r
    assert "error: x: a symbolic link; memtree reads only regular files inside the store" in r.out, r.out
    assert "linked: a symbolic link to a folder; memtree does not follow it" in r.out, r.out
    assert (outside / "secret.md").read_text() == "# secret\nthe outside world\n"


async def test_special_files_neither_hang_nor_exhaust_the_server(raw_server, serve, cli, store):
    """Finding 4: `zero.md → /dev/zero` was read without bound; a FIFO
    `f.md` blocked `read_document` forever, and the server outlived its
    client."""
    await seed(cli, store)
    os.symlink("/dev/zero", store / "zero.md")
    os.mkfifo(store / "f.md")
    async with serve() as m:
        assert await m.read("f") == err("Error: id: unreadable: not a regular file (a FIFO, socket or device)")
        assert (await m.read("zero")).text.startswith("Error: id: unreadable: a symbolic link")
        assert (await m.tree()).text == "root:\n  - a\n"
        assert (await m.read("a")).text == "# A\nquartz crystals grow slowly\n"
    s = raw_server()
    s.initialize()
    s.call_tool("read_document", {"id": "f"})
    started = time.monotonic()
    assert s.close(timeout=20) == 0
    assert time.monotonic() - started < 20
    r = cli("validate")
    assert "f: not a regular file" in r.out and "zero: a symbolic link" in r.out, r.out


async def test_a_document_over_the_size_limit_is_reported_not_served(serve, cli, store):
    """Finding 14: an 80 MB document written by another program was returned
    whole and indexed only in its first passage. The size limit applies to
    reads too."""
    await seed(cli, store)
    assert cli("write", "root", input="# Memory\n- [[a]]\n- [[huge]]\n").rc == 0
    (store / "huge.md").write_bytes(b"# huge\n" + b"quartz " * 300_000)
    size = (store / "huge.md").stat().st_size
    expected = (f"Error: id: unreadable: {size} bytes, over the document size limit of 1048576 "
                "(--max-document-bytes); split the file outside memtree or raise the limit")
    async with serve() as m:
        assert await m.read("huge") == err(expected)
        r = await m.call("search", {"query": "quartz"})
        assert "[a#A]" in r.text and "huge" not in r.text, r.text
    assert cli("read", "huge").err.strip() == expected
    assert cli("read", "huge", "--max-document-bytes", str(size)).out.startswith("# huge\nquartz quartz")
    assert f"huge: {size} bytes, over the document size limit" in cli("validate").out


@pytest.mark.parametrize("damage", ["garbage", "folder"])
async def test_a_damaged_index_is_set_aside_and_rebuilt(serve, cli, store, damage):
    """Finding 5: garbage in `.memtree/index.sqlite` (or a folder at that
    path) made read, write, validate, status, reindex and serve all exit 3."""
    await seed(cli, store)
    index = store / ".memtree" / "index.sqlite"
    for extra in store.joinpath(".memtree").glob("index.sqlite-*"):
        extra.unlink()
    index.unlink()
    if damage == "garbage":
        index.write_bytes(b"this is not a database\n" * 100)
    else:
        index.mkdir()
        (index / "file").write_text("x")
    r = cli("read", "a")
    assert (r.rc, r.out) == (0, "# A\nquartz crystals grow slowly\n"), r
    assert "the search index is damaged: set aside" in r.err
    assert (store / ".memtree" / "index.sqlite.damaged").exists()
    for args in (["validate"], ["status"], ["reindex"]):
        r = cli(*args)
        assert r.rc == 0, (args, r)
    async with serve() as m:
        assert (await m.call("search", {"query": "quartz"})).text.startswith("1. [a#A] 1.00")
        assert (await m.update("# A\nquartz and more\n", "a")).text == "Succeeded"


@needs_namespaces
async def test_a_read_only_store_is_still_read_searched_and_validated(serve, cli, store, base_env):
    """Finding 5: a read-only data folder must still allow reads, validate
    and search where the index is readable."""
    await seed(cli, store)
    wrap = read_only(store)
    for args, out in [(["read", "a"], "# A\nquartz crystals grow slowly\n"),
                      (["search", "quartz"], "1. [a#A] 1.00 · root\n   **quartz** crystals grow slowly\n"),
                      (["tree"], "root:\n  - a\n")]:
        p = subprocess.run([*wrap, str(BIN), "--data-dir", str(store), *args], capture_output=True, text=True,
                           env=base_env, timeout=30)
        assert (p.returncode, p.stdout) == (0, out), (args, p.stderr)
    p = subprocess.run([*wrap, str(BIN), "--data-dir", str(store), "validate"], capture_output=True, text=True,
                       env=base_env, timeout=30)
    assert p.returncode == 0 and p.stdout.endswith("healthy\n"), (p.stdout, p.stderr)
    p = subprocess.run([*wrap, str(BIN), "--data-dir", str(store), "write", "a"], input="# A\nchanged\n",
                       capture_output=True, text=True, env=base_env, timeout=30)
    assert p.returncode != 0 and "Read-only file system" in p.stderr, p
    async with serve(wrap=wrap) as m:
        assert (await m.read("a")).text == "# A\nquartz crystals grow slowly\n"
        assert (await m.call("search", {"query": "quartz"})).text.startswith("1. [a#A] 1.00")
        assert (await m.call("get_document_tree", {})).text == "root:\n  - a\n"
    assert docs(store)["a"] == "# A\nquartz crystals grow slowly\n"


@needs_namespaces
async def test_a_server_started_on_a_full_disk_still_serves_reads(serve, cli, store, tmp_path):
    """Finding 5: a server started on a full disk must still serve reads."""
    await seed(cli, store)
    for extra in store.joinpath(".memtree").glob("index.sqlite-*"):
        extra.unlink()
    full = tmp_path / "full"
    full.mkdir()
    setup = (f"mount -t tmpfs -o size=8m tmpfs '{full}' && cp -a '{store}/.' '{full}/' "
             f"&& (dd if=/dev/zero of='{full}/filler' bs=64k 2>/dev/null; true)")
    async with serve(store_dir=full, wrap=under(setup)) as m:
        assert (await m.read("a")).text == "# A\nquartz crystals grow slowly\n"
        assert (await m.call("search", {"query": "quartz"})).text.startswith("1. [a#A] 1.00")
        r = await m.update("# A\n" + "more text " * 1000 + "\n", "a")
        assert r.error and "No space left on device" in r.text, r
        assert (await m.read("a")).text == "# A\nquartz crystals grow slowly\n"


@pytest.mark.parametrize("damage", ["head", "objects", "file"])
async def test_a_broken_git_is_reported_and_writes_say_so(serve, cli, store, damage):
    """Finding 13: a broken `.git` (garbage HEAD, missing objects, `.git` as
    a file) left writes answering `Succeeded` while history silently
    stopped; `validate` said healthy; `history` repeated its error twice."""
    await seed(cli, store)
    git = store / ".git"
    if damage == "head":
        (git / "HEAD").write_text("garbage\n")
    elif damage == "objects":
        shutil.rmtree(git / "objects")
        (git / "objects").mkdir()
    else:
        shutil.rmtree(git)
        git.write_text("gitdir: /nowhere\n")
    r = cli("write", "a", input="# A\nchanged once\n")
    assert r.rc == 0 and r.out.startswith("Succeeded\nWarning: history is not being recorded ("), r
    async with serve() as m:
        r = await m.update("# A\nchanged twice\n", "a")
        assert r.text.startswith("Succeeded\nWarning: history is not being recorded ("), r
        r = await m.call("history", {"id": "a"})
        assert r.error and r.text.count("Error") == 1, r
    r = cli("validate")
    assert r.rc == 1 and "error: history: changes are not being recorded (" in r.out, r.out
    assert "changes wait in .memtree/history/" in r.out, r.out
    assert "history: changes are not being recorded" in cli("status").out
    assert docs(store)["a"] == "# A\nchanged twice\n"


async def test_a_damaged_journal_says_once_what_to_do(cli, store):
    """Finding 14: a damaged `journal.json` gave its message twice and no
    remedy; `validate` printed `(e.g. )` with no id."""
    await seed(cli, store)
    (store / ".memtree" / "journal.json").write_text("garbage")
    r = cli("read", "a")
    assert r.rc == 3, r
    assert r.err.count("is damaged") == 1 and "move it aside" in r.err and "memtree validate" in r.err, r.err
    (store / ".memtree" / "journal.json").unlink()
    (store / "a.md").unlink()
    r = cli("validate")
    assert "(e.g. )" not in r.out and "(e.g. a)" in r.out, r.out


@pytest.mark.parametrize(("path", "kind"), [
    ("lock", "folder"), ("tmp", "file"), ("trash", "file"), ("history", "file"),
    ("history.pending", "file"), ("history.free", "file"), ("history.last", "folder"),
    ("journal.json", "folder"),
])
async def test_memtrees_own_state_of_the_wrong_kind_is_set_aside(serve, cli, store, path, kind):
    """Finding 5's neighbours: a file where one of memtree's folders belongs
    (or a folder where its file does) under `.memtree/` made every command
    exit 3. None holds anything of the user's that could be lost: it is set
    aside as `<name>.damaged` and made anew."""
    await seed(cli, store)
    target = store / ".memtree" / path
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    if kind == "folder":
        target.mkdir()
        (target / "x").write_text("x")
    else:
        target.write_text("garbage\n")
    r = cli("read", "a")
    assert (r.rc, r.out) == (0, "# A\nquartz crystals grow slowly\n"), r
    assert "damaged state set aside" in r.err, r.err
    assert (store / ".memtree" / f"{path}.damaged").exists()
    r = cli("write", "a", input="# A\nquartz and more\n")
    assert (r.rc, r.out) == (0, "Succeeded\n"), r
    async with serve() as m:
        assert (await m.call("search", {"query": "quartz"})).text.startswith("1. [a#A] 1.00")
    assert cli("validate").rc == 0
