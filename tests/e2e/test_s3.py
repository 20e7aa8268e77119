"""Team memory on S3: several memtree processes, each with its own cache
folder (standing in for separate machines), on one bucket.

Needs a memtree built with `--features s3` and an S3 server that honours
conditional writes: `bash scripts/test.sh --s3` starts SeaweedFS and runs
these (marker `s3`); elsewhere they are skipped.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest

from helpers import BIN, open_server, run_cli

S3 = os.environ.get("MEMTREE_TEST_S3")

pytestmark = [
    pytest.mark.s3,
    pytest.mark.skipif(not S3, reason="needs an S3 server: bash scripts/test.sh --s3"),
    pytest.mark.anyio,
]


@pytest.fixture
def bucket() -> str:
    """A folder of its own in the test bucket."""
    return f"{S3}/e2e-{uuid.uuid4().hex[:12]}"


def machine(base_env: dict[str, str], tmp_path: Path, bucket: str, name: str) -> dict[str, str]:
    """The environment of one machine: the bucket store, its own cache."""
    return {**base_env, "MEMTREE_STORE": bucket, "MEMTREE_CACHE_DIR": str(tmp_path / f"cache-{name}")}


def remember_all(envs: list[dict[str, str]], facts: list[list[str]], *args: str) -> None:
    """Each process remembers its facts one after another; the processes at once."""

    def run(env: dict[str, str], mine: list[str]) -> None:
        for fact in mine:
            p = subprocess.run(
                [str(BIN), "remember", *args], input=fact.encode(), env=env, capture_output=True, timeout=60
            )
            assert p.returncode == 0, p.stderr.decode()

    import threading

    threads = [threading.Thread(target=run, args=(env, mine)) for env, mine in zip(envs, facts, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("machines", [2, 4])
def test_facts_remembered_at_once_on_several_machines_are_all_kept(
    base_env: dict[str, str], tmp_path: Path, bucket: str, machines: int
) -> None:
    envs = [machine(base_env, tmp_path, bucket, str(m)) for m in range(machines)]
    per = 20 // machines
    facts = [[f"fact {m}-{n}" for n in range(per)] for m in range(machines)]
    remember_all(envs, facts, "--document", "log", "--section", "Facts", "--mode", "append")
    text = run_cli(envs[0], None, "read", "log").out
    for mine in facts:
        for fact in mine:
            assert f"- {fact}\n" in text, f"{fact} lost:\n{text}"
    assert text.count("- fact ") == 20, text
    assert "healthy" in run_cli(envs[-1], None, "validate").out


def test_a_document_created_at_once_by_two_machines_is_created_once(
    base_env: dict[str, str], tmp_path: Path, bucket: str
) -> None:
    envs = [machine(base_env, tmp_path, bucket, m) for m in "ab"]
    remember_all(envs, [["from a"], ["from b"]], "--document", "shared", "--mode", "append")
    root = run_cli(envs[0], None, "read", "root").out
    assert root.count("[[shared]]") == 1, root
    shared = run_cli(envs[1], None, "read", "shared").out
    assert "from a" in shared and "from b" in shared, shared


def test_a_prune_racing_an_update_below_it_leaves_a_valid_tree(
    base_env: dict[str, str], tmp_path: Path, bucket: str
) -> None:
    a, b = (machine(base_env, tmp_path, bucket, m) for m in "ab")
    assert run_cli(a, None, "write", "root", input="# M\n- [[top]]\n").rc == 0
    assert run_cli(a, None, "write", "top", input="# top\n- [[leaf]]\n").rc == 0
    prune = subprocess.Popen([str(BIN), "write", "root"], stdin=subprocess.PIPE, env=a, stderr=subprocess.PIPE)
    update = subprocess.Popen([str(BIN), "write", "leaf"], stdin=subprocess.PIPE, env=b, stderr=subprocess.PIPE)
    prune.communicate(b"# M\n", timeout=60)
    update.communicate(b"# leaf, updated\n", timeout=60)
    assert prune.returncode == 0
    # The update lands before the prune (and is pruned with it) or finds
    # the document gone; either way the tree is whole.
    assert "healthy" in run_cli(b, None, "validate").out
    assert run_cli(b, None, "read", "leaf").rc != 0


async def test_another_machines_write_is_found_by_search_within_two_seconds(
    base_env: dict[str, str], tmp_path: Path, bucket: str
) -> None:
    a, b = (machine(base_env, tmp_path, bucket, m) for m in "ab")
    async with open_server(None, a) as first, open_server(None, b) as second:
        fact = {"content": "The staging database is called quokka-mirror.", "document": "infra"}
        assert not (await first.call("remember", fact)).error
        written = time.monotonic()
        while True:
            found = await second.call("search", {"query": "quokka-mirror"})
            if "infra" in found.text:
                break
            assert time.monotonic() - written < 2.5, f"not seen after 2.5 s: {found.text}"
            time.sleep(0.05)
        # Reads never wait for the feed: they go to the bucket.
        assert "quokka-mirror" in (await second.read("infra")).text


async def test_history_and_restore_work_on_a_bucket_from_any_machine(
    base_env: dict[str, str], tmp_path: Path, bucket: str
) -> None:
    a, b = (machine(base_env, tmp_path, bucket, m) for m in "ab")
    async with open_server(None, a) as m:
        await m.put(None, "# M\n- [[plans]]\n")
        await m.put("plans", "# plans\n- [[q3]]\n")
        await m.put("q3", "# q3\nship the importer\n")
        await m.put(None, "# M\n")
    async with open_server(None, b) as m:
        log = await m.call("history", {"id": "q3"})
        assert not log.error, log
        assert "[deleted]" in log.text.splitlines()[0], log.text
        restored = await m.call("restore", {"id": "plans"})
        assert not restored.error and "q3" in restored.text, restored
        assert "ship the importer" in (await m.read("q3")).text
    # What machine b restored is a version on machine a too.
    r = run_cli(a, None, "history", "plans")
    assert r.rc == 0 and r.out.splitlines()[0].split(" ", 3)[3].startswith("restore plans"), r.out


def test_a_folder_copied_to_a_bucket_and_back_keeps_documents_and_versions(
    base_env: dict[str, str], tmp_path: Path, bucket: str
) -> None:
    folder, back = tmp_path / "folder", tmp_path / "back"
    for doc, text in [("root", "# M\n- [[a]]\n"), ("a", "# a\none\n"), ("a", "# a\ntwo\n")]:
        assert run_cli(base_env, folder, "write", doc, input=text).rc == 0
    env = machine(base_env, tmp_path, bucket, "a")
    up = run_cli(env, None, "copy", str(folder), bucket)
    assert up.rc == 0 and "Copied 2 documents" in up.out, (up.out, up.err)
    assert run_cli(env, None, "read", "a").out == "# a\ntwo\n"
    assert run_cli(env, None, "restore", "a").rc == 0
    assert run_cli(env, None, "read", "a").out == "# a\none\n"
    down = run_cli(env, None, "copy", bucket, str(back))
    assert down.rc == 0, down.err
    assert (back / "a.md").read_text() == "# a\none\n"
    versions = run_cli(base_env, back, "history", "a").out.splitlines()
    assert [v.split(" ", 3)[3] for v in versions][:3] == [
        "restore a from r4; Changed: a",
        "update a; Changed: a",
        "update a; Changed: a",
    ], versions



class Outage:
    """A TCP relay to the S3 server that can go down (connections refused,
    open ones cut) and come back on the same port: the server stopped and
    restarted, as memtree sees it."""

    def __init__(self, target: str) -> None:
        url = urlparse(target)
        self.target = (url.hostname or "127.0.0.1", url.port or 80)
        self.port = 0
        self.conns: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        assert self.listener is not None
        # Shutting a listening socket down wakes the accept() blocked on it.
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.listener = None
        for conn in self.conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self.conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self.conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


async def test_writes_fail_plainly_while_the_server_is_down_and_work_when_it_is_back(
    base_env: dict[str, str], tmp_path: Path, bucket: str
) -> None:
    outage = Outage(os.environ["AWS_ENDPOINT_URL"])
    env = {**machine(base_env, tmp_path, bucket, "a"), "AWS_ENDPOINT_URL": outage.url}
    fact = lambda text: {"content": text, "document": "ops", "mode": "append"}  # noqa: E731
    async with open_server(None, env) as m:
        assert not (await m.call("remember", fact("before the outage"))).error
        outage.down()
        started = time.monotonic()
        during = await m.call("remember", fact("during the outage"))
        assert during.error and during.text.startswith("Error: storage:"), during
        assert time.monotonic() - started < 30, "an answer within seconds, not a hang"
        assert (await m.read("ops")).error
        outage.up()
        assert not (await m.call("remember", fact("after the outage"))).error, "works again once it is back"
        text = (await m.read("ops")).text
    assert "before the outage" in text and "after the outage" in text, text
    assert "during the outage" not in text, "reported as failed, so not saved"
    assert "healthy" in run_cli(env, None, "validate").out


class Careless(BaseHTTPRequestHandler):
    """Enough of S3 for memtree's probe, ignoring If-None-Match and If-Match
    on writes, as Garage 2.5 does."""

    objects: dict[str, bytes] = {}

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, code: int, body: bytes = b"", etag: str | None = None) -> None:
        self.send_response(code)
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Last-Modified", "Fri, 27 Nov 2026 00:00:00 GMT")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_PUT(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.objects[self.path] = body
        self._answer(200, etag=f'"{hashlib.md5(body).hexdigest()}"')

    def do_GET(self) -> None:  # noqa: N802
        body = self.objects.get(self.path)
        if body is None:
            self._answer(404, b"<Error><Code>NoSuchKey</Code></Error>")
        else:
            self._answer(200, body, f'"{hashlib.md5(body).hexdigest()}"')

    do_HEAD = do_GET  # noqa: N815

    def do_DELETE(self) -> None:  # noqa: N802
        self.objects.pop(self.path, None)
        self._answer(204)


def test_a_server_that_ignores_conditional_writes_is_refused(base_env: dict[str, str], tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Careless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            **machine(base_env, tmp_path, "s3://careless/memory", "a"),
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "AWS_ACCESS_KEY_ID": "careless",
            "AWS_SECRET_ACCESS_KEY": "careless-secret",
        }
        r = run_cli(env, None, "write", "root", input="# M\n")
        assert r.rc != 0 and "ignores If-None-Match on writes" in r.err, r.err
        assert not any(key.endswith("/root.md") for key in Careless.objects), "nothing written"
    finally:
        server.shutdown()
