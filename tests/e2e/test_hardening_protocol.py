"""What a hostile or careless MCP client found (issue 10), each test failed
before its fix:

- every request with an id is answered with that id, as written, even a
  malformed one (`-32600`, or `-32602` naming the bad parameter); no
  notification is ever answered;
- a cancelled write is applied whole and answered (cancellation is not
  honoured), never applied silently;
- a client that does not read its stdout stops the server reading, instead
  of answers piling up in the server's memory.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from helpers import BIN, docs, tool_text

pytestmark = pytest.mark.anyio

# (the raw line after the id placeholder is filled, the id as it must come back, the code)
MALFORMED = [
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', 1.5, -32600),
    ('{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}', 18446744073709551616, -32600),
    ('{"jsonrpc":"2.0","id":"p-str","method":"tools/list","params":"x"}', "p-str", -32602),
    ('{"jsonrpc":"2.0","id":41,"method":"tools/call","params":[1,2]}', 41, -32602),
    ('{"jsonrpc":"2.0","id":42,"id":43,"method":"ping"}', 42, -32600),
    ('{"jsonrpc":"2.0","id":44,"method":"tools/call","params":{"name":"search","arguments":{"query":"\\ud800"}}}', 44, -32602),
    ('{"jsonrpc":"2.0","id":45,"method":"tools/call","params":{"name":"search","arguments":[1]}}', 45, -32602),
    ('{"jsonrpc":"2.0","id":46,"method":"resources/read","params":{}}', 46, -32602),
    ('{"jsonrpc":"2.0","id":47,"method":"tools/call","params":{"arguments":{}}}', 47, -32602),
]


async def test_every_malformed_request_is_answered_with_its_own_id(raw_server, store):
    """Finding 11: id `1.5`, id 2^64, `params: "x"`, `params: [1,2]`, a
    duplicate `id` key and a lone surrogate got an error without the id (a
    client waits forever); `arguments: [1]` got `-32601`."""
    s = raw_server()
    s.initialize()
    for line, rid, code in MALFORMED:
        s.send((line + "\n").encode())
        answer = s.recv()
        assert answer is not None and answer.get("id") == rid, (line, answer)
        assert answer["error"]["code"] == code, (line, answer)
        if code == -32602:
            assert answer["error"]["message"].startswith("Invalid params: "), answer
    surrogate = next(line for line, rid, _ in MALFORMED if rid == 44)
    s.send((surrogate + "\n").encode())
    assert "argument query" in s.recv()["error"]["message"]
    # Notifications, malformed or not, are never answered: the next line
    # out is the ping's answer.
    for line in ['{"jsonrpc":"2.0","method":42}', '{"jsonrpc":"2.0","method":"notifications/x","params":"x"}',
                 '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}']:
        s.send((line + "\n").encode())
    s.send(b'{"jsonrpc":"2.0","id":"after","method":"ping"}\n')
    answer = s.recv()
    assert answer == {"jsonrpc": "2.0", "id": "after", "result": {}}, answer
    assert s.close() == 0


async def test_a_cancelled_write_is_applied_whole_and_answered(raw_server, cli, store):
    """Finding 12: an `update_document` pruning 1,499 documents that the
    client cancelled was applied anyway and never answered. Cancellation
    is not honoured: the write is applied whole, and answered."""
    kids = [f"k{i}" for i in range(1499)]
    assert cli("write", "root", input="# Memory\n" + "".join(f"- [[{k}]]\n" for k in kids), timeout=120).rc == 0
    s = raw_server()
    s.initialize()
    rid = s.next_id()
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "update_document", "arguments": {"content": "# Memory\n"}}})
    s.notify("notifications/cancelled", {"requestId": rid, "reason": "user pressed stop"})
    answer = s.wait_for(rid, timeout=120)
    text, is_error = tool_text(answer)
    assert not is_error and text.startswith("Succeeded\nDeleted: k0, k1, k2"), text[:200]
    assert text.count(", ") == len(kids) - 1
    assert s.close() == 0
    assert docs(store) == {"root": "# Memory\n"}
    assert cli("validate").rc == 0


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.slow
def test_a_client_that_does_not_read_cannot_grow_the_server(base_env, cli, store):
    """Finding 7: 3,000 pipelined reads of a 0.9 MB document, from a client
    that did not read its stdout, took the server to 2.6 GB. Here 300 such
    reads must keep it small while the client does not read, and all be
    answered once it does."""
    doc = "# big\n" + ("x" * 99 + "\n") * 9000
    assert cli("write", "root", input="# Memory\n- [[big]]\n").rc == 0
    assert cli("write", "big", input=doc).rc == 0
    proc = subprocess.Popen([str(BIN), "serve", "--data-dir", str(store)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=base_env)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "slow", "version": "0"}}}
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        requests = 300
        lines = b"".join(
            (json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                         "params": {"name": "read_document", "arguments": {"id": "big"}}}) + "\n").encode()
            for i in range(1, requests + 1))
        writer = threading.Thread(target=lambda: (proc.stdin.write(lines), proc.stdin.flush()), daemon=True)
        writer.start()
        peak = 0.0
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            peak = max(peak, rss_mib(proc.pid))
            time.sleep(0.1)
        assert peak < 200, f"the server grew to {peak:.0f} MiB while its client did not read"
        seen = set()
        while len(seen) < requests + 1:
            line = proc.stdout.readline()
            assert line, f"the server stopped after {len(seen)} answers"
            seen.add(json.loads(line)["id"])
        assert seen == set(range(requests + 1))
        writer.join(timeout=10)
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
