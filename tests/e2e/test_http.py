"""`memtree serve --http`: MCP over Streamable HTTP through the official
Python client (several sessions at once, beside a stdio server on the same
store), and the guards of the transport and of the UI's pages: loopback
unless a token is set, the token on every request (or the UI's cookie),
Host and Origin checked, bodies limited, forms only from the server's own
pages. The UI itself, in a browser: test_ui.py."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlencode

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from helpers import BIN, docs, err, http_server, ok, to_r

TOKEN = "s3cret-token"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


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
    # Announced over the limit, it is refused before it is read: the body is
    # not sent at all (the server closes on its refusal, so a client still
    # sending could meet a broken pipe instead of the answer).
    with http_server(store, base_env) as addr:
        host, port = addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
        headers = {"Host": addr, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Content-Length": str(17 << 20)}
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        assert (response.status, response.read()) == (413, f"Error: request: over {16 << 20} bytes".encode())
        conn.close()


def test_a_streamed_body_over_the_limit_is_refused(store: Path, base_env: dict[str, str]) -> None:
    # No length announced: refused once the limit is passed. The body goes
    # from a thread while this one waits for the answer, which comes before
    # the server closes (and the sender meets a broken pipe).
    with http_server(store, base_env) as addr:
        host, port = addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n"
                         "Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".encode())

            def send_body() -> None:
                chunk = b"%x\r\n%s\r\n" % (1 << 16, b" " * (1 << 16))
                with contextlib.suppress(OSError):
                    for _ in range(17 << 4):
                        sock.sendall(chunk)
                    sock.sendall(b"0\r\n\r\n")

            sender = threading.Thread(target=send_body)
            sender.start()
            answer = sock.recv(4096)
            sender.join()
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]


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


def request(addr: str, method: str, path: str, headers: dict[str, str] | None = None,
            body: bytes | None = None) -> tuple[int, dict[str, str], str]:
    """A plain HTTP request to the server: status, headers, body."""
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request(method, path, body=body, headers={"Host": addr, **(headers or {})})
    response = conn.getresponse()
    answer = (response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode())
    conn.close()
    return answer


def form_secret(page: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert match, page
    return match.group(1)


def test_pages_need_the_token_which_a_login_keeps_in_a_strict_cookie(store: Path, base_env: dict[str, str]) -> None:
    with http_server(store, base_env, "--token", TOKEN) as addr:
        status, _, page = request(addr, "GET", "/doc/root")
        assert status == 401 and 'name="token"' in page, "the login form"
        assert TOKEN not in page
        assert request(addr, "GET", "/doc/root", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert request(addr, "GET", "/doc/root", {"Cookie": "memtree_token=" + TOKEN.encode().hex()})[0] == 200
        assert request(addr, "GET", "/doc/root", {"Cookie": "memtree_token=" + b"wrong".hex()})[0] == 401
        assert request(addr, "GET", "/events")[0] == 401
        origin = {"Origin": f"http://{addr}", "Content-Type": "application/x-www-form-urlencoded"}
        secret = form_secret(page)
        wrong = urlencode({"csrf": secret, "token": "wrong", "next": "/doc/root"}).encode()
        assert request(addr, "POST", "/login", origin, wrong)[0] == 401
        right = urlencode({"csrf": secret, "token": TOKEN, "next": "//evil.example/"}).encode()
        status, headers, _ = request(addr, "POST", "/login", origin, right)
        assert (status, headers["location"]) == (303, "/"), "never sent to another site"
        assert headers["set-cookie"] == f"memtree_token={TOKEN.encode().hex()}; HttpOnly; SameSite=Strict; Path=/"


def test_a_form_post_from_another_site_changes_nothing(store: Path, base_env: dict[str, str]) -> None:
    with http_server(store, base_env) as addr:
        status, headers, page = request(addr, "GET", "/edit/root")
        assert status == 200
        assert "script-src" not in headers["content-security-policy"]
        assert headers["content-security-policy"].startswith("default-src 'self'")
        before = docs(store)
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        body = urlencode({"csrf": form_secret(page), "content": "# Root\nchanged\n"}).encode()
        forged = urlencode({"csrf": "0" * 32, "content": "# Root\nchanged\n"}).encode()
        assert request(addr, "POST", "/edit/root", form, body)[0] == 403, "no Origin"
        assert request(addr, "POST", "/edit/root", {**form, "Origin": "http://evil.example"}, body)[0] == 403
        own = {**form, "Origin": f"http://{addr}"}
        assert request(addr, "POST", "/edit/root", own, forged)[0] == 403, "not this server's form"
        assert request(addr, "POST", "/edit/root", own, urlencode({"content": "x"}).encode())[0] == 403
        assert docs(store) == before
        status, _, page = request(addr, "POST", "/edit/root", own, body)
        assert status == 200 and "Succeeded" in page
        assert docs(store)["root"] == "# Root\nchanged\n"


def test_pages_check_the_host_too(store: Path, base_env: dict[str, str]) -> None:
    with http_server(store, base_env) as addr:
        port = addr.rsplit(":", 1)[1]
        assert request(addr, "GET", "/", {"Host": f"evil.example:{port}"})[0] == 403
        assert request(addr, "GET", "/", {"Host": f"localhost:{port}"})[0] == 200
        assert request(addr, "GET", "/status", {"Origin": "http://evil.example"})[0] == 403


@pytest.mark.anyio
async def test_several_sessions_at_once(store: Path, base_env: dict[str, str]) -> None:
    with http_server(store, base_env) as addr:
        async def agent(n: int) -> None:
            async with streamable_http_client(f"http://{addr}/mcp") as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    for i in range(5):
                        fact = f"agent {n} fact {i}: the build cache lives in bucket b{n}x{i}"
                        r = to_r(await session.call_tool("remember", {"content": fact, "document": f"agent{n}", "mode": "append"}))
                        assert not r.error and f"agent{n}#Notes" in r.text, r
                    found = to_r(await session.call_tool("search", {"query": f"bucket b{n}x4"}))
                    assert f"[agent{n}#Notes]" in found.text, found

        async with anyio.create_task_group() as group:
            for n in range(6):
                group.start_soon(agent, n)
    on_disk = docs(store)
    for n in range(6):
        assert all(f"bucket b{n}x{i}" in on_disk[f"agent{n}"] for i in range(5)), on_disk.get(f"agent{n}")
        assert f"[[agent{n}]]" in on_disk["root"]


@pytest.mark.anyio
async def test_a_stdio_and_an_http_server_share_one_store(store: Path, base_env: dict[str, str]) -> None:
    params = StdioServerParameters(command=str(BIN), args=["--data-dir", str(store), "serve"], env=base_env)
    with http_server(store, base_env) as addr:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as local:
            await local.initialize()
            async with streamable_http_client(f"http://{addr}/mcp") as streams:
                async with ClientSession(streams[0], streams[1]) as remote:
                    await remote.initialize()
                    await local.call_tool("update_document", {"content": "# Root\n- [[shared]]\n"})
                    r = to_r(await remote.call_tool("update_document",
                                                    {"id": "shared", "content": "# Shared\n\n## A\n\none\n\n## B\n\ntwo\n"}))
                    assert r == ok("Succeeded")
                    read_back = await local.call_tool("read_document", {"id": "shared", "version": True})
                    version = read_back.content[1].text.removeprefix("version: ")
                    # Each writes one section on the same version: both kept.
                    r = to_r(await remote.call_tool("edit_document", {"id": "shared", "section": "A", "new": "uno\n"}))
                    assert r == ok("Succeeded")
                    r = to_r(await local.call_tool("update_document", {
                        "id": "shared", "content": "# Shared\n\n## A\n\none\n\n## B\n\ndos\n", "base": version}))
                    assert r.text.startswith("Succeeded\nMerged:"), r
                    found = to_r(await remote.call_tool("search", {"query": "dos"}))
                    assert "[shared#B]" in found.text, found
    assert docs(store)["shared"] == "# Shared\n\n## A\nuno\n\n## B\n\ndos\n"
