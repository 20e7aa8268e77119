"""Helpers for the memtree end-to-end suite (imported by conftest and tests).

The suite drives the real `memtree` binary: over MCP stdio through the
official Python SDK (`mcp.ClientSession` + `stdio_client`), over raw
newline-delimited JSON-RPC (for the 2026-07-28 `server/discover` lifecycle
and for stdout-purity checks), and through the CLI with `subprocess`.

Binary: `$MEMTREE_BIN`, else `<repo>/target/debug/memtree`, the repo root
being two levels above this file.

`MEMTREE_E2E_TRANSPORT=http` runs every MCP session of `open_server` over
Streamable HTTP instead (`memtree serve --http`, the SDK's
`streamable_http_client`): the same checks, on the other transport.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MEMTREE_BIN") or REPO_ROOT / "target" / "debug" / "memtree").resolve()

# Environment variables that change memtree's behaviour; never inherited from
# the developer's shell so that each test states exactly what it sets.
MEMTREE_VARS = ("MEMTREE_DATA_DIR", "DATA_DIR", "ROOT_TEMPLATE", "MEMTREE_FAULT", "XDG_DATA_HOME", "RUST_LOG")

LIMIT = 1048576

SIGABRT_RC = -6

HTTP = os.environ.get("MEMTREE_E2E_TRANSPORT") == "http"


# --------------------------------------------------------------------------
# pytest plumbing
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# Tool results
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class R:
    """A tool result reduced to what the spec defines: its text and isError."""

    text: str
    error: bool


def ok(text: str) -> R:
    return R(text, False)


def err(text: str) -> R:
    return R(text, True)


def cross_tree(detail: str) -> R:
    return err(f"Error: content: cross-tree reference not allowed\n{detail}")


NOT_FOUND = R("Error: id: not found", True)
SUCCEEDED = R("Succeeded", False)


def to_r(result: Any) -> R:
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    assert len(texts) == len(result.content) == 1, f"expected exactly one text content, got {result.content!r}"
    return R(texts[0], bool(result.is_error))


# --------------------------------------------------------------------------
# MCP client (Python SDK, initialize lifecycle)
# --------------------------------------------------------------------------


class Mcp:
    """A connected MCP session with short helpers for the three tools."""

    def __init__(self, session: ClientSession, init: Any) -> None:
        self.session = session
        self.init = init

    async def call(self, name: str, args: Mapping[str, Any] | None = None) -> R:
        res = await self.session.call_tool(name, dict(args) if args is not None else {})
        return to_r(res)

    async def read(self, id: str | None = None) -> R:
        return await self.call("read_document", {} if id is None else {"id": id})

    async def update(self, content: str, id: str | None = None) -> R:
        args: dict[str, Any] = {"content": content}
        if id is not None:
            args["id"] = id
        return await self.call("update_document", args)

    async def tree(self) -> R:
        return await self.call("get_document_tree", {})

    async def put(self, id: str | None, content: str) -> None:
        """Update a document and insist it was accepted (any Succeeded... text)."""
        r = await self.update(content, id)
        assert not r.error and r.text.startswith("Succeeded"), r

    async def build(self, docs: Iterable[tuple[str | None, str]]) -> None:
        for id, content in docs:
            await self.put(id, content)


_serve_counter = 0


@asynccontextmanager
async def open_server(
    store: Path | None,
    base_env: Mapping[str, str],
    *,
    args: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
    stderr_path: Path | None = None,
    lifecycle: str = "initialize",
    wrap: Iterable[str] = (),
) -> AsyncIterator[Mcp]:
    """Start `memtree serve` and open an MCP session.

    `lifecycle="initialize"` negotiates protocol 2025-11-25 with `initialize`;
    `lifecycle="discover"` uses the 2026-07-28 `server/discover` (no handshake,
    the SDK stamps `_meta` on every request).

    `wrap` is a command the server runs under (`unshare …`).

    `store=None` omits `--data-dir` (for data dir resolution tests). The
    SDK passes only a whitelist of variables to the child, so the full sealed
    environment is passed explicitly.
    """
    global _serve_counter
    _serve_counter += 1
    argv = ["serve", *args]
    if store is not None:
        argv += ["--data-dir", str(store)]
    full_env = dict(base_env)
    if env:
        full_env.update(env)
    command = [*wrap, str(BIN), *argv]
    params = StdioServerParameters(command=command[0], args=command[1:], env=full_env)
    if stderr_path is None:
        stderr_path = Path(full_env["HOME"]).parent / f"serve-{_serve_counter}.stderr"
    with open(stderr_path, "w") as errlog:
        try:
            if HTTP and not wrap and lifecycle == "initialize":
                argv[1:1] = ["--http", "127.0.0.1:0"]
                with http_server_at(argv, full_env, errlog, stderr_path) as addr:
                    async with create_mcp_http_client() as client:
                        async with streamable_http_client(f"http://{addr}/mcp", http_client=client) as streams:
                            async with ClientSession(streams[0], streams[1], read_timeout_seconds=30) as session:
                                yield Mcp(session, await session.initialize())
                return
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=30) as session:
                    if lifecycle == "discover":
                        init = await session.discover()
                    else:
                        init = await session.initialize()
                    yield Mcp(session, init)
        except BaseExceptionGroup as group:
            # The SDK's task groups wrap a failing assertion in the test body;
            # unwrap a lone exception so pytest reports it plainly.
            leaf: BaseException = group
            while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
                leaf = leaf.exceptions[0]
            if leaf is group:
                raise
            raise leaf from None


@contextmanager
def http_server_at(argv: list[str], env: Mapping[str, str], errlog: Any, log_path: Path) -> Iterator[str]:
    """Runs `memtree ARGV` (a `serve --http` on port 0), its stderr to
    `errlog`, and yields the `host:port` it says it serves at."""
    proc = subprocess.Popen([str(BIN), *argv], env=dict(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        deadline = time.monotonic() + 30
        while True:
            # Whole lines only: the server may be writing this one.
            for line in log_path.read_text().split("\n")[:-1]:
                if "serving MCP at http://" in line:
                    url = line.split("serving MCP at http://", 1)[1].split()[0]
                    break
            else:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the HTTP server did not start: {log_path.read_text()}")
                time.sleep(0.02)
                continue
            break
        yield url.removesuffix("/mcp")
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0, "a stopped HTTP server exits cleanly"


@contextmanager
def http_server(store: Path, env: Mapping[str, str], *args: str) -> Iterator[str]:
    """Starts `memtree --data-dir STORE serve --http 127.0.0.1:0 ARGS` and
    yields its `host:port`; its stderr goes beside the test's home."""
    log_path = Path(env["HOME"]).parent / f"http-{time.monotonic_ns()}.stderr"
    with open(log_path, "w") as errlog:
        argv = ["--data-dir", str(store), "serve", "--http", "127.0.0.1:0", *args]
        with http_server_at(argv, env, errlog, log_path) as addr:
            yield addr


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


@dataclass
class Run:
    rc: int
    out: str
    err: str
    raw_out: bytes


def run_cli(
    base_env: Mapping[str, str],
    store: Path | None,
    *args: str,
    input: bytes | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 30,
) -> Run:
    argv = [str(BIN)]
    if store is not None:
        argv += ["--data-dir", str(store)]
    argv += list(args)
    full_env = dict(base_env)
    if env:
        full_env.update(env)
    data = input.encode() if isinstance(input, str) else input
    p = subprocess.run(
        argv,
        input=data if data is not None else b"",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        timeout=timeout,
    )
    return Run(p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), p.stdout)


def cli_text(r: Run) -> str:
    """stdout of a CLI command that prints a tool text (one trailing newline allowed)."""
    out = r.out
    return out[:-1] if out.endswith("\n") else out


# --------------------------------------------------------------------------
# Raw JSON-RPC over stdio
# --------------------------------------------------------------------------

DISCOVER_VERSION = "2026-07-28"
HANDSHAKE_VERSION = "2025-11-25"


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": DISCOVER_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "memtree-e2e", "version": "0.0.1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


class RawServer:
    """`memtree serve` spoken to with hand-written newline-delimited JSON-RPC."""

    def __init__(self, store: Path | None, base_env: Mapping[str, str], args: Iterable[str] = (),
                 env: Mapping[str, str] | None = None) -> None:
        argv = [str(BIN), "serve", *args]
        if store is not None:
            argv += ["--data-dir", str(store)]
        full_env = dict(base_env)
        if env:
            full_env.update(env)
        self.stderr_path = Path(full_env["HOME"]).parent / f"raw-{id(self)}.stderr"
        self._errf = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errf,
                                     env=full_env)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.all_lines: list[bytes] = []
        self._next_id = 0
        self._pending: dict[Any, dict] = {}
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.all_lines.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def send(self, obj: Any) -> None:
        data = obj if isinstance(obj, bytes) else (json.dumps(obj) + "\n").encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def recv(self, timeout: float = 15) -> dict | None:
        """Next message from the server, or None at EOF."""
        line = self.lines.get(timeout=timeout)
        if line is None:
            self.lines.put(None)
            return None
        return json.loads(line)

    def request(self, method: str, params: dict | None = None, timeout: float = 15) -> dict:
        rid = self.next_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(rid, timeout)

    def wait_for(self, rid: Any, timeout: float = 15) -> dict:
        if rid in self._pending:
            return self._pending.pop(rid)
        while True:
            m = self.recv(timeout)
            assert m is not None, f"server closed stdout while waiting for {rid}; stderr: {self.stderr()}"
            if m.get("id") == rid and ("result" in m or "error" in m):
                return m
            if "id" in m and ("result" in m or "error" in m):
                self._pending[m["id"]] = m

    def notify(self, method: str, params: dict | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self) -> dict:
        resp = self.request("initialize", {
            "protocolVersion": HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "memtree-e2e-raw", "version": "0.0.1"},
        })
        self.notify("notifications/initialized")
        return resp

    def call_tool(self, name: str, args: dict, meta: dict | None = None) -> dict:
        params: dict[str, Any] = {"name": name, "arguments": args}
        if meta is not None:
            params["_meta"] = meta
        return self.request("tools/call", params)

    def stderr(self) -> str:
        if not self._errf.closed:
            self._errf.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self, timeout: float = 10) -> int:
        """Close stdin and wait for the server to exit; returns its exit code."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("server did not exit after its stdin was closed")
        self._t.join(timeout=5)
        self._errf.close()
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._t.join(timeout=5)
        self._errf.close()


def tool_text(resp: dict) -> tuple[str, bool]:
    """(text, isError) of a raw tools/call response."""
    assert "result" in resp, resp
    content = resp["result"]["content"]
    assert len(content) == 1 and content[0]["type"] == "text", resp
    return content[0]["text"], bool(resp["result"].get("isError", False))


# --------------------------------------------------------------------------
# Store inspection
# --------------------------------------------------------------------------

META = ".memtree"


def snapshot(store: Path, include_meta: bool = False) -> dict[str, bytes]:
    """Every file in the store (relative posix path → bytes).

    By default the derived-state folder `.memtree/` is left out: it holds
    locks, journals and indexes that may legitimately change on any request;
    the documents are the source of truth. With `include_meta`, the journal,
    trash, lock and temporary files are compared too, but not the search
    index (`index.sqlite*`), which a server's background indexing touches.
    The history repository (`.git/`, its queue `.memtree/history/`, the
    files of committed records in `history.free/` and `history.lock`) is
    left out too: a server commits in the background; test_history.py
    checks it (a prepared record, `history.pending/`, is compared). A done or applied journal (its first eight bytes zero) is
    compared as done: the rest is a record that a server checkpoints in the
    background, a moment after the change.
    """
    out: dict[str, bytes] = {}
    if not store.exists():
        return out
    for p in sorted(store.rglob("*")):
        rel = p.relative_to(store).as_posix()
        parts = rel.split("/")
        if ".git" in parts or (not include_meta and META in parts):
            continue  # (namespace trees, `@NAME/`, have their own)
        if META in parts and parts[parts.index(META) + 1 :][:1] in (["index.sqlite"], ["history"], ["history.free"], ["history.lock"]):
            continue
        if any(part.startswith("index.sqlite") for part in parts):
            continue
        if p.is_file() or p.is_symlink():
            out[rel] = p.read_bytes()
            if rel in (f"{META}/journal.json", f"{META}/journal-2.json") and not any(out[rel][:8]):
                out[rel] = b"(done)"
    return out


def docs(store: Path) -> dict[str, str]:
    """Documents in the store: id → text (ids from `<id>.md` paths)."""
    return {k[:-3]: v.decode() for k, v in snapshot(store).items() if k.endswith(".md")}


def trash_batches(store: Path) -> dict[str, dict[str, bytes]]:
    """`.memtree/trash/<batch>/...` → {batch: {relative path: bytes}}."""
    t = store / META / "trash"
    out: dict[str, dict[str, bytes]] = {}
    if not t.is_dir():
        return out
    for b in sorted(t.iterdir()):
        if b.is_dir():
            out[b.name] = {p.relative_to(b).as_posix(): p.read_bytes() for p in sorted(b.rglob("*")) if p.is_file()}
    return out


def write_file(store: Path, rel: str, data: str | bytes) -> Path:
    p = store / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    p.write_bytes(data)
    return p

