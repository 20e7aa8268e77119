"""`memtree serve` on each kind of stdin a client may hand it: a pipe (the
SDKs'), a socket (Node's child processes get socket pairs), a file of
requests. Stdin is polled where it can be (made non-blocking while served),
and its open file's flags are put back when the server ends: another
process may share it."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess

from helpers import BIN, HANDSHAKE_VERSION

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "stdio", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(rid: int, name: str, arguments: dict) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


SESSION = [INIT, INITIALIZED,
           call(1, "update_document", {"id": "root", "content": "# Memory\n- [[kinds]] what stdin can be\n"}),
           call(2, "update_document", {"id": "kinds", "content": "# Kinds\npipe, socket, file\n"}),
           call(3, "read_document", {"id": "kinds"})]


def lines(requests: list[dict]) -> bytes:
    return b"".join((json.dumps(r) + "\n").encode() for r in requests)


def check_answers(out: bytes) -> None:
    answers = {a["id"]: a for a in map(json.loads, out.splitlines())}
    assert sorted(answers) == [0, 1, 2, 3], out
    assert all("error" not in a and not a["result"].get("isError") for a in answers.values()), out
    assert "pipe, socket, file" in answers[3]["result"]["content"][0]["text"]


def test_a_pipe_is_served_and_its_flags_are_put_back(store, base_env):
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([str(BIN), "serve", "--data-dir", str(store)], stdin=read_end,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=base_env)
    # The test keeps its copy of the read end: the same open file as the
    # server's stdin, so it sees the flags the server sets on it.
    try:
        os.write(write_end, lines(SESSION))
        os.close(write_end)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    check_answers(out)
    assert not fcntl.fcntl(read_end, fcntl.F_GETFL) & os.O_NONBLOCK, "stdin left non-blocking"
    os.close(read_end)


def test_a_socket_for_stdin_and_stdout_is_served(store, base_env):
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen([str(BIN), "serve", "--data-dir", str(store)], stdin=theirs.fileno(),
                            stdout=theirs.fileno(), stderr=subprocess.DEVNULL, env=base_env)
    try:
        ours.settimeout(30)
        ours.sendall(lines(SESSION))
        out = b""
        while out.count(b"\n") < 4:
            chunk = ours.recv(65536)
            assert chunk, out
            out += chunk
        ours.shutdown(socket.SHUT_WR)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    check_answers(out)
    assert not fcntl.fcntl(theirs.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK, "the socket left non-blocking"
    ours.close()
    theirs.close()


def test_a_file_of_requests_is_served(store, base_env, tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(lines(SESSION))
    with open(requests, "rb") as stdin:
        run = subprocess.run([str(BIN), "serve", "--data-dir", str(store)], stdin=stdin, capture_output=True,
                             env=base_env, timeout=30)
    assert run.returncode == 0, run.stderr
    check_answers(run.stdout)
