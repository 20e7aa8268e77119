"""`memtree serve --http`: MCP over Streamable HTTP through the official
Python client, and the transport's guards: loopback unless a token is set,
the token on every request, Host and Origin checked, bodies limited."""

from __future__ import annotations

import http.client
import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from helpers import BIN, docs, err, ok, to_r

TOKEN = "s3cret-token"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@contextmanager
def http_server(store: Path, env: dict[str, str], *args: str) -> Iterator[str]:
    """Starts `memtree serve --http 127.0.0.1:0 ARGS` and yields its address."""
    proc = subprocess.Popen(
        [str(BIN), "--data-dir", str(store), "serve", "--http", "127.0.0.1:0", *args],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "serving MCP at http://" in line:
                url = line.split("serving MCP at ", 1)[1].strip()
                yield url.removeprefix("http://").removesuffix("/mcp")
                break
        else:
            pytest.fail(f"the server did not start: exit {proc.wait(timeout=10)}")
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0, "a stopped HTTP server exits cleanly"


def post(addr: str, headers: dict[str, str], body: bytes | None = None) -> int:
    """The status of a POST of an `initialize` request to /mcp."""
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Host": addr}
    conn.request("POST", "/mcp", body=body if body is not None else json.dumps(INITIALIZE).encode(),
                 headers={**base, **headers})
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.anyio
async def test_the_tools_answer_over_http_as_over_stdio(store: Path, base_env: dict[str, str]) -> None:
    with http_server(store, base_env, "--token", TOKEN) as addr:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(f"http://{addr}/mcp", http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    init = await session.initialize()
                    assert init.instructions, "the instructions are served"
                    tools = {t.name for t in (await session.list_tools()).tools}
                    assert {"read_document", "update_document", "search", "recall"} <= tools
                    call = session.call_tool
                    assert to_r(await call("update_document", {"content": "# Root\n- Keys [[keys]]\n"})) == ok(
                        "Succeeded\nCreated: keys"
                    )
                    text = "# Keys\nThe deploy key rotates monthly.\n"
                    assert to_r(await call("update_document", {"id": "keys", "content": text})) == ok("Succeeded")
                    assert to_r(await call("read_document", {"id": "keys"})) == ok(text)
                    found = to_r(await call("search", {"query": "deploy key"}))
                    assert found.text.startswith("1. [keys#Keys] 1.00 · root"), found
                    assert to_r(await call("read_document", {"id": "nope"})) == err("Error: id: not found")
    assert docs(store) == {"root": "# Root\n- Keys [[keys]]\n", "keys": text}


def test_requests_without_the_token_are_refused(store: Path, base_env: dict[str, str]) -> None:
    with http_server(store, base_env, "--token", TOKEN) as addr:
        assert post(addr, {}) == 401
        assert post(addr, {"Authorization": "Bearer wrong-token-!"}) == 401
        assert post(addr, {"Authorization": TOKEN}) == 401, "the Bearer scheme is required"
        assert post(addr, {"Authorization": f"Bearer {TOKEN}"}) == 200


def test_host_and_origin_are_checked(store: Path, base_env: dict[str, str]) -> None:
    with http_server(store, base_env, "--allow-origin", "http://app.example:3000") as addr:
        port = addr.rsplit(":", 1)[1]
        assert post(addr, {}) == 200, "no Origin: a CLI client"
        assert post(addr, {"Origin": f"http://127.0.0.1:{port}"}) == 200, "the server's own page"
        assert post(addr, {"Origin": "http://app.example:3000"}) == 200, "an allowed origin"
        assert post(addr, {"Origin": "http://evil.example"}) == 403
        assert post(addr, {"Host": f"evil.example:{port}"}) == 403, "a rebound DNS name"


def test_a_body_over_the_limit_is_refused(store: Path, base_env: dict[str, str]) -> None:
    with http_server(store, base_env) as addr:
        assert post(addr, {}, body=b" " * (17 << 20)) == 413


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_bind_off_loopback_without_a_token_refuses_to_start(
    store: Path, base_env: dict[str, str], how: str
) -> None:
    env = dict(base_env)
    args = [str(BIN), "--data-dir", str(store), "serve"]
    if how == "flag":
        args += ["--http", "0.0.0.0:0"]
    else:
        env["MEMTREE_HTTP"] = "0.0.0.0:0"
    r = subprocess.run(args, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout, r.stderr.strip()) == (
        1, "", "Error: http: 0.0.0.0:0 is not a loopback address: serving on it needs a token (--token or MEMTREE_TOKEN)"
    )
    assert not store.exists(), "nothing was opened"
