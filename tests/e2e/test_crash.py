"""Crash safety: injected aborts around the intent journal, and kill -9 at random instants.

`MEMTREE_FAULT=journal` aborts just before the journal record of a change is
committed: after restart the store is exactly the before-state.
`MEMTREE_FAULT=apply:N` aborts after N operations of a committed journal: the
next open completes it, so the store is exactly the after-state.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from helpers import SIGABRT_RC, cli_text, docs, snapshot, tool_text, trash_batches

BEFORE_DOCS = {
    "root": "# Root\n[[a]]\n[[b]]\n",
    "a": "# A\nnotes on a\n[[a1]]\n",
    "a1": "# A1\nprecious\n",
    "b": "---\nsummary: B\n---\n# B\n",
}
CHANGE = "# Root v2\n[[b]]\n[[c]]\n[[d]]\n"
AFTER_DOCS = {
    "root": CHANGE,
    "b": "---\nsummary: B\n---\n# B\n",
    "c": "# c\n\n",
    "d": "# d\n\n",
}
CHANGE_TEXT = "Succeeded\nCreated: c, d\nDeleted: a, a1"


@pytest.fixture
def prepared(cli, store):
    assert cli("write", input=BEFORE_DOCS["root"]).rc == 0
    assert cli("write", "a", input=BEFORE_DOCS["a"]).rc == 0
    assert cli("write", "a1", input=BEFORE_DOCS["a1"]).rc == 0
    assert cli("write", "b", input=BEFORE_DOCS["b"]).rc == 0
    assert docs(store) == BEFORE_DOCS
    assert trash_batches(store) == {}
    return snapshot(store)


def _assert_after_state(store):
    assert docs(store) == AFTER_DOCS
    batches = trash_batches(store)
    assert list(batches.values()) == [{"a.md": BEFORE_DOCS["a"].encode(), "a1.md": BEFORE_DOCS["a1"].encode()}]


def test_fault_journal_leaves_before_state(cli, store, prepared):
    r = cli("write", input=CHANGE, env={"MEMTREE_FAULT": "journal"})
    assert r.rc == SIGABRT_RC, (r.rc, r.out, r.err)
    assert r.out == ""
    v = cli("validate")
    assert v.rc == 0, (v.out, v.err)
    assert snapshot(store) == prepared
    assert trash_batches(store) == {}
    # the store still works, and the same change then applies in full
    r = cli("write", input=CHANGE)
    assert r.rc == 0 and cli_text(r) == CHANGE_TEXT
    _assert_after_state(store)
    assert cli("validate").rc == 0


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 6, 8, 50])
def test_fault_apply_n_completes_to_after_state(cli, store, prepared, n):
    r = cli("write", input=CHANGE, env={"MEMTREE_FAULT": f"apply:{n}"})
    if n <= 2:
        # the change has at least 3 operations (2 creates, a rewrite, prunes)
        assert r.rc == SIGABRT_RC, (r.rc, r.out, r.err)
    if r.rc == SIGABRT_RC:
        assert r.out == ""
    else:
        # N past the journal's end: nothing to interrupt, the write just succeeds
        assert r.rc == 0 and cli_text(r) == CHANGE_TEXT, (r.rc, r.out, r.err)
    v = cli("validate")
    assert v.rc == 0, (v.out, v.err)
    _assert_after_state(store)
    # recovery is done once: a second open changes nothing more
    snap = snapshot(store, include_meta=True)
    assert cli("validate").rc == 0
    assert cli("read", "c").out == "# c\n\n"
    assert {k: v for k, v in snapshot(store, include_meta=True).items() if "/trash/" in k or not k.startswith(".memtree")} == {
        k: v for k, v in snap.items() if "/trash/" in k or not k.startswith(".memtree")}


@pytest.mark.parametrize("n", [0, 1, 2])
def test_recovery_happens_at_any_next_open(cli, store, prepared, n):
    """The first command after the crash is a read: it sees the after-state."""
    r = cli("write", input=CHANGE, env={"MEMTREE_FAULT": f"apply:{n}"})
    assert r.rc == SIGABRT_RC
    assert cli("read", "d").out == "# d\n\n"
    assert cli("read").out == CHANGE
    r = cli("read", "a")
    assert (r.rc, r.err.rstrip("\n")) == (1, "Error: id: not found")
    _assert_after_state(store)
    assert cli("validate").rc == 0


@pytest.mark.parametrize("fault", ["journal", "apply:0", "apply:1"])
def test_fault_on_create_only_change(cli, store, prepared, fault):
    change = BEFORE_DOCS["b"] + "[[b1]] [[b2]]\n"
    r = cli("write", "b", input=change, env={"MEMTREE_FAULT": fault})
    assert r.rc == SIGABRT_RC, (r.rc, r.out, r.err)
    assert cli("validate").rc == 0
    if fault == "journal":
        assert snapshot(store) == prepared
    else:
        assert docs(store) == BEFORE_DOCS | {"b": change, "b1": "# b1\n\n", "b2": "# b2\n\n"}
        assert trash_batches(store) == {}


@pytest.mark.parametrize("fault", ["journal", "apply:0", "apply:1"])
def test_fault_on_prune_only_change(cli, store, prepared, fault):
    r = cli("write", input="# Root\n[[b]]\n", env={"MEMTREE_FAULT": fault})
    assert r.rc == SIGABRT_RC, (r.rc, r.out, r.err)
    assert cli("validate").rc == 0
    if fault == "journal":
        assert snapshot(store) == prepared
        assert trash_batches(store) == {}
    else:
        assert docs(store) == {"root": "# Root\n[[b]]\n", "b": BEFORE_DOCS["b"]}
        assert list(trash_batches(store).values()) == [
            {"a.md": BEFORE_DOCS["a"].encode(), "a1.md": BEFORE_DOCS["a1"].encode()}
        ]


@pytest.mark.parametrize("fault", ["journal", "apply:0", "apply:1", "apply:2"])
def test_single_document_update_is_journaled_too(cli, store, prepared, fault):
    """One document's write is a one-operation record: cut before its
    commit it leaves the before-state, after it the after-state."""
    r = cli("write", "a1", input="# A1\nedited\n", env={"MEMTREE_FAULT": fault})
    if fault == "apply:2":
        # Past the record's end: nothing to interrupt.
        assert r.rc == 0 and cli_text(r) == "Succeeded", (r.rc, r.out, r.err)
    else:
        assert r.rc == SIGABRT_RC and r.out == "", (r.rc, r.out, r.err)
    assert cli("validate").rc == 0
    edited = fault != "journal"
    assert docs(store) == BEFORE_DOCS | ({"a1": "# A1\nedited\n"} if edited else {})


@pytest.mark.parametrize("fault", ["journal", "apply:1"])
def test_fault_inside_mcp_server(raw_server, cli, store, prepared, fault):
    s = raw_server(env={"MEMTREE_FAULT": fault})
    s.initialize()
    rid = s.next_id()
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "update_document", "arguments": {"content": CHANGE}}})
    assert s.recv(timeout=15) is None, "the server should have aborted without answering"
    assert s.proc.wait(timeout=10) == SIGABRT_RC
    # a fresh server (the client respawns it) serves the recovered store
    s2 = raw_server()
    s2.initialize()
    expected_root = BEFORE_DOCS["root"] if fault == "journal" else CHANGE
    assert tool_text(s2.call_tool("read_document", {})) == (expected_root, False)
    assert s2.close() == 0
    assert cli("validate").rc == 0
    if fault == "journal":
        assert snapshot(store) == prepared
    else:
        _assert_after_state(store)


# ---------------------------------------------------------------- kill -9


def _state_after(i: int) -> dict[str, str]:
    return {"root": f"# v{i}\n[[c{i}]]\n", f"c{i}": f"# c{i}\n\n"}


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_kill_9_at_random_instant(raw_server, cli, store, seed):
    """Sequential acknowledged multi-file writes, then SIGKILL at a random instant:
    the store is exactly the state of the last acknowledged write or of the one in flight."""
    assert cli("write", input="# start\n").rc == 0
    s = raw_server()
    s.initialize()
    rng = random.Random(seed)
    delay = rng.uniform(0.0, 0.3)
    killer = threading.Timer(delay, s.proc.kill)
    assert tool_text(s.call_tool("update_document", {"content": "# v0\n[[c0]]\n"})) == ("Succeeded\nCreated: c0", False)
    last_acked = 0
    in_flight = None
    killer.start()  # only after a first acknowledged write, however slow the machine
    try:
        deadline = time.monotonic() + 10
        for i in range(1, 100_000):
            rid = s.next_id()
            in_flight = i
            try:
                s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "update_document",
                                   "arguments": {"content": f"# v{i}\n[[c{i}]]\n"}}})
            except (BrokenPipeError, OSError):
                break
            m = s.recv(timeout=10)
            if m is None:
                break
            text, is_error = tool_text(m)
            expected = f"Succeeded\nCreated: c{i}\nDeleted: c{i - 1}"
            assert (text, is_error) == (expected, False)
            last_acked = i
            in_flight = None
            assert time.monotonic() < deadline
    finally:
        killer.cancel()
        s.kill()
    v = cli("validate")
    assert v.rc == 0, (v.out, v.err)
    state = docs(store)
    allowed = [_state_after(last_acked)]
    if in_flight is not None:
        allowed.append(_state_after(in_flight))
    assert state in allowed, (last_acked, in_flight, state)


@pytest.mark.parametrize("fault", ["journal", "apply:0", "apply:2"])
def test_running_server_sees_consistent_state_after_peer_crash(raw_server, cli, store, prepared, fault):
    """A server that was already running when a peer crashed mid-change serves the
    before- or after-state at its next request, never a half-applied one."""
    s = raw_server()
    s.initialize()
    assert tool_text(s.call_tool("read_document", {})) == (BEFORE_DOCS["root"], False)
    r = cli("write", input=CHANGE, env={"MEMTREE_FAULT": fault})
    assert r.rc == SIGABRT_RC
    expected = BEFORE_DOCS if fault == "journal" else AFTER_DOCS
    assert tool_text(s.call_tool("read_document", {})) == (expected["root"], False)
    for doc in ("a", "a1", "b", "c", "d"):
        want = (expected[doc], False) if doc in expected else ("Error: id: not found", True)
        assert tool_text(s.call_tool("read_document", {"id": doc})) == want, doc
    tree = "root:\n  - a:\n    - a1\n  - b\n" if fault == "journal" else "root:\n  - b\n  - c\n  - d\n"
    assert tool_text(s.call_tool("get_document_tree", {})) == (tree, False)
    # and its next write builds on that state
    assert tool_text(s.call_tool("update_document", {"id": "b", "content": "# B2\n"})) == ("Succeeded", False)
    assert s.close() == 0
    assert cli("validate").rc == 0
    assert docs(store) == expected | {"b": "---\nsummary: B\n---\n# B2\n"}


def test_kill_9_of_one_server_does_not_block_or_corrupt_another(raw_server, cli, store):
    """A server killed while writing (maybe holding the store lock) leaves a store
    the other server keeps writing to; its acknowledged writes are all there."""
    assert cli("write", input="# start\n").rc == 0
    victim = raw_server()
    victim.initialize()
    other = raw_server()
    other.initialize()
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            rid = victim.next_id()
            try:
                victim.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                             "params": {"name": "update_document",
                                        "arguments": {"content": f"# victim {i}\n[[v{i}]]\n"}}})
            except (BrokenPipeError, OSError):
                return
            if victim.recv(timeout=10) is None:
                return
            i += 1

    t = threading.Thread(target=churn)
    t.start()
    try:
        for k in range(3):
            text, is_error = tool_text(other.call_tool("update_document", {"id": "root", "content": f"# other {k}\n[[o{k}]]\n"}))
            assert not is_error and text.startswith(f"Succeeded\nCreated: o{k}"), text
        time.sleep(0.15)
        victim.proc.kill()
    finally:
        stop.set()
        t.join(timeout=15)
        victim.kill()
    # the survivor gets the lock and its writes land
    for k in range(3, 8):
        text, is_error = tool_text(other.call_tool("update_document", {"content": f"# other {k}\n[[o{k}]]\n"}))
        assert not is_error and text.startswith(f"Succeeded\nCreated: o{k}\nDeleted: "), text
    assert other.close() == 0
    assert cli("validate").rc == 0
    assert docs(store) == {"root": "# other 7\n[[o7]]\n", "o7": "# o7\n\n"}
