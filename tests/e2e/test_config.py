"""Data folder resolution and the root template, for the CLI and for `serve`."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pytest

from helpers import BIN, ok, open_server, run_cli


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {
        "flag": tmp_path / "flag_dir",
        "memtree": tmp_path / "memtree_env_dir",
        "data": tmp_path / "data_env_dir",
    }


def _write(base_env, store, env, text="[[probe]]"):
    r = run_cli(base_env, store, "write", input=text, env=env)
    assert r.rc == 0, r.err
    return r


def test_data_dir_flag_wins(base_env, dirs):
    env = {"MEMTREE_DATA_DIR": str(dirs["memtree"]), "DATA_DIR": str(dirs["data"])}
    _write(base_env, dirs["flag"], env)
    assert (dirs["flag"] / "root.md").read_text() == "[[probe]]"
    assert (dirs["flag"] / "probe.md").read_text() == "# probe\n\n"
    assert not dirs["memtree"].exists()
    assert not dirs["data"].exists()


def test_memtree_data_dir_beats_data_dir(base_env, dirs):
    env = {"MEMTREE_DATA_DIR": str(dirs["memtree"]), "DATA_DIR": str(dirs["data"])}
    _write(base_env, None, env)
    assert (dirs["memtree"] / "root.md").read_text() == "[[probe]]"
    assert not dirs["data"].exists()


def test_data_dir_env_uses_structured_memory_subfolder(base_env, dirs):
    _write(base_env, None, {"DATA_DIR": str(dirs["data"])})
    assert (dirs["data"] / "structured_memory" / "root.md").read_text() == "[[probe]]"
    assert (dirs["data"] / "structured_memory" / "probe.md").read_text() == "# probe\n\n"
    assert not (dirs["data"] / "root.md").exists()


def test_store_as_a_folder_is_the_data_folder(base_env, dirs):
    _write(base_env, None, {"MEMTREE_STORE": str(dirs["memtree"])})
    assert (dirs["memtree"] / "root.md").read_text() == "[[probe]]"
    r = run_cli(base_env, dirs["flag"], "--store", str(dirs["data"]), "read")
    assert r.rc != 0 and "name two stores" in r.err, r.err
    assert not dirs["flag"].exists() and not dirs["data"].exists()


def test_a_store_url_that_is_not_s3_is_refused(base_env):
    r = run_cli(base_env, None, "--store", "gs://bucket/memory", "read")
    assert r.rc != 0 and "is not a store: use a folder or s3://BUCKET/PREFIX" in r.err, r.err


@pytest.mark.skipif(bool(os.environ.get("MEMTREE_TEST_S3")), reason="the binary has S3 there")
def test_a_store_on_s3_needs_a_binary_built_with_it(base_env):
    r = run_cli(base_env, None, "read", env={"MEMTREE_STORE": "s3://team-bucket/memory"})
    assert r.rc != 0 and "install it with `--features s3`" in r.err, r.err


def test_platform_data_dir_fallback(base_env, home):
    _write(base_env, None, None)
    assert (home / ".local" / "share" / "memtree" / "root.md").read_text() == "[[probe]]"


def test_xdg_data_home_fallback(base_env, tmp_path):
    xdg = tmp_path / "xdg"
    _write(base_env, None, {"XDG_DATA_HOME": str(xdg)})
    assert (xdg / "memtree" / "root.md").read_text() == "[[probe]]"


def test_status_reports_resolved_folder(base_env, dirs):
    r = run_cli(base_env, None, "status", env={"DATA_DIR": str(dirs["data"])})
    assert r.rc == 0
    assert str(dirs["data"] / "structured_memory") in r.out


def test_root_template_env_with_escaped_newline(base_env, store):
    r = run_cli(base_env, store, "read", env={"ROOT_TEMPLATE": "# メモ帳\\n"})
    assert (r.rc, r.raw_out) == (0, "# メモ帳\n".encode())
    assert (store / "root.md").read_bytes() == "# メモ帳\n".encode()


def test_root_template_env_multiline(base_env, store):
    r = run_cli(base_env, store, "read", env={"ROOT_TEMPLATE": "# Memory\\n\\n- start here\\n"})
    assert r.out == "# Memory\n\n- start here\n"


def test_root_template_flag(base_env, store):
    r = run_cli(base_env, store, "--root-template", "# From flag\n", "read")
    assert (r.rc, r.out) == (0, "# From flag\n")


def test_root_template_flag_beats_env(base_env, store):
    r = run_cli(base_env, store, "--root-template", "# From flag\n", "read", env={"ROOT_TEMPLATE": "# From env\\n"})
    assert (r.rc, r.out) == (0, "# From flag\n")


def test_root_template_only_used_when_creating(base_env, store):
    run_cli(base_env, store, "write", input="# existing\n")
    r = run_cli(base_env, store, "read", env={"ROOT_TEMPLATE": "# other\\n"})
    assert r.out == "# existing\n"
    assert (store / "root.md").read_text() == "# existing\n"


@pytest.mark.anyio
async def test_serve_root_template_and_data_dir_env(base_env, tmp_path):
    data = tmp_path / "d"
    env = {"DATA_DIR": str(data), "ROOT_TEMPLATE": "# メモ帳\\n"}
    async with open_server(None, base_env, env=env) as m:
        assert await m.read() == ok("# メモ帳\n")
        r = await m.update("# メモ帳\n[[日本]]\n")  # not an id: non-ASCII
        assert r.error and r.text.startswith("Error: content: invalid link [[日本]]: "), r
        assert await m.update("# メモ帳\n[[nihon]]\n") == ok("Succeeded\nCreated: nihon")
    assert (data / "structured_memory" / "root.md").read_text() == "# メモ帳\n[[nihon]]\n"
    assert (data / "structured_memory" / "nihon.md").read_text() == "# nihon\n\n"


@pytest.mark.anyio
async def test_serve_flags_after_subcommand(base_env, tmp_path):
    store = tmp_path / "s"
    async with open_server(None, base_env, args=["--data-dir", str(store), "--root-template", "# T\n"],
                           env={"MEMTREE_DATA_DIR": str(tmp_path / "not_this")}) as m:
        assert await m.read() == ok("# T\n")
    assert (store / "root.md").read_text() == "# T\n"
    assert not (tmp_path / "not_this").exists()


@pytest.mark.anyio
async def test_serve_memtree_data_dir_env(base_env, tmp_path):
    store = tmp_path / "via_env"
    async with open_server(None, base_env, env={"MEMTREE_DATA_DIR": str(store), "DATA_DIR": str(tmp_path / "no")}) as m:
        assert await m.update("[[k]]") == ok("Succeeded\nCreated: k")
    assert (store / "k.md").read_text() == "# k\n\n"
    assert not (tmp_path / "no").exists()


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(v.decode().split("=", 1) for v in raw.split(b"\0") if b"=" in v)


HEAP = 64 << 20  # a glibc thread arena's reservation (HEAP_MAX_SIZE on 64-bit)


def _thread_arenas(pid: int) -> int:
    """glibc's arenas besides the main one: each a reservation of `HEAP`
    bytes at a multiple of `HEAP`, its used part read-write, the rest not
    mapped for access."""
    maps = [line.split() for line in Path(f"/proc/{pid}/maps").read_text().splitlines()]
    spans = [(int(a, 16), int(b, 16), m[1], len(m)) for m in maps for a, b in [m[0].split("-")]]
    arenas = 0
    for (start, end, perms, fields), after in zip(spans, spans[1:] + [None]):
        rest_ok = end == start + HEAP or (after is not None and after[0] == end and after[1] == start + HEAP
                                          and after[2] == "---p")
        arenas += fields == 5 and perms == "rw-p" and start % HEAP == 0 and rest_ok
    return arenas


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc on Linux only")
@pytest.mark.parametrize(("env", "arenas"), [
    ({}, "none"),
    ({"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}, "none"),
    # glibc's own choice: an arena for each thread that allocates, up to
    # eight per core; or the user's.
    ({"MEMTREE_ALLOCATOR": "default"}, "some"),
    ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}, "up to 3"),
])
def test_serve_holds_malloc_to_one_arena_unless_told(raw_server, env, arenas):
    s = raw_server(env=env)
    assert s.initialize()["result"]["serverInfo"]["name"]
    # Work on several threads (the runtime, the indexer, the committer),
    # each of which glibc would give an arena of its own.
    for i in range(3):
        for tool, args in [("update_document", {"content": f"# Memory {i}\n"}), ("search", {"query": "memory"})]:
            assert not s.call_tool(tool, args)["result"].get("isError"), tool
    # The process the client started answers as it was started, not run
    # again with an environment of its own.
    assert Path(f"/proc/{s.proc.pid}/exe").resolve() == BIN.resolve()
    environ = _environ(s.proc.pid)
    for name in ["MEMTREE_ALLOCATOR", "GLIBC_TUNABLES"]:
        assert environ.get(name) == env.get(name), (name, environ.get(name))
    found = _thread_arenas(s.proc.pid)
    expected = {"none": found == 0, "some": found > 0, "up to 3": 0 < found <= 3}[arenas]
    assert expected, f"{found} thread arenas, expected {arenas}"
    assert s.close() == 0
    assert "Error" not in s.stderr()
