#!/usr/bin/env python3
"""Crash harness: a long random stream of writes through `memtree serve`, killed with SIGKILL at random instants.

    .venv/bin/python tests/harness/crash.py --kills 500

Each "life" starts a server (`memtree serve` over stdio, spoken to with raw
newline-delimited JSON-RPC), sends bursts of pipelined mutating tool calls
(update_document, edit_document, remember, move_document, lifecycle), and
kills the server with SIGKILL a random delay after sending its last burst, so
that kills land before, during and after the writes. Then the store is
checked and a new server is started.

The model. Every burst is a set of operations on disjoint sets of documents,
so their effects do not depend on the order in which the server applies
them. Before a burst is sent, each operation is applied to a shadow store
with the CLI (the oracle): that gives, for each operation, the exact content
of every document it touches before and after, and the exact answer. After a
kill:

- an operation whose success answer was read before the kill is
  acknowledged: its documents must be in their after-state, and its answer
  must be the oracle's;
- an operation sent but not answered may or may not have applied: its
  documents must be all in the before-state or all in the after-state (never
  a mix, never a third content: that would be a torn file or a half-applied
  multi-document change);
- every other document is exactly as it was.

The checks are plain functions in CHECKS (see "Checks" below); each gets a
CheckContext and returns a list of violations. `check_history_no_gap` runs
`memtree history` (which commits what the killed server had queued) and then
reads the store's git repository with the git command line.

Exit code 0 when no check found a violation, 1 otherwise (the store and the
scratch folder are then kept and their paths printed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
META = ".memtree"

# Environment variables that change memtree's behaviour; never inherited.
MEMTREE_VARS = ("MEMTREE_DATA_DIR", "DATA_DIR", "ROOT_TEMPLATE", "MEMTREE_FAULT", "XDG_DATA_HOME", "RUST_LOG")

ID_RE = re.compile(r"[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*")
LINK_RE = re.compile(r"\[\[([A-Za-z0-9_/-]+)(?:\|[^\]]*)?\]\]")
TOKEN_RE = re.compile(r"\btok\d{6}\b")
HEADING_RE = re.compile(r"^## (.+)$", re.M)

WORDS = (
    "amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lantern meadow nectar "
    "orchid pepper quartz raven saffron timber umber velvet willow yarrow zephyr anchor bramble copper "
    "dune falcon glacier hazel iris jasper lilac marble nutmeg olive pebble quill ridge spruce thistle "
    "valley walnut birch clover drift fennel"
).split()


# --------------------------------------------------------------------------
# Binary, environment, CLI
# --------------------------------------------------------------------------


def default_binary() -> Path:
    """$MEMTREE_BIN, else the release build, else the debug build under the repo."""
    env = os.environ.get("MEMTREE_BIN")
    if env:
        return Path(env).resolve()
    for profile in ("release", "debug"):
        p = REPO_ROOT / "target" / profile / "memtree"
        if p.is_file():
            return p
    return REPO_ROOT / "target" / "release" / "memtree"


def sealed_env(home: Path) -> dict[str, str]:
    """The caller's environment without anything that changes memtree's behaviour."""
    env = {k: v for k, v in os.environ.items() if k not in MEMTREE_VARS and not k.startswith("MEMTREE_")}
    env["HOME"] = str(home)
    env["RUST_BACKTRACE"] = "1"
    return env


@dataclass
class Run:
    rc: int
    out: str
    err: str

    @property
    def text(self) -> str:
        """stdout as a tool text (the CLI adds one newline)."""
        return self.out[:-1] if self.out.endswith("\n") else self.out


# A store: a folder, or an `s3://BUCKET/PREFIX` URL (`--store`).
Store = Path | str


def place_args(store: Store) -> list[str]:
    """The flag naming the store for the binary."""
    return ["--store", store] if isinstance(store, str) else ["--data-dir", str(store)]


class Cli:
    def __init__(self, binary: Path, env: Mapping[str, str]) -> None:
        self.binary = binary
        self.env = dict(env)
        self.calls = 0

    def run(self, store: Store, *args: str, input: str | None = None, timeout: float = 120) -> Run:
        self.calls += 1
        p = subprocess.run(
            [str(self.binary), *place_args(store), *args],
            input=(input or "").encode(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env,
            timeout=timeout,
        )
        return Run(p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"))

    def answer(self, store: Store, *args: str, input: str | None = None) -> tuple[str, bool]:
        """(text, is_error) of a CLI command that prints a tool answer (errors on stderr, exit 1)."""
        r = self.run(store, *args, input=input)
        if r.rc == 0:
            return r.text, False
        if r.rc == 1:
            return r.err.rstrip("\n"), True
        raise HarnessError(f"oracle command {args} exited {r.rc}: {r.err.strip()}")


class HarnessError(Exception):
    """The harness itself went wrong (not a finding about memtree)."""


# --------------------------------------------------------------------------
# Raw JSON-RPC over stdio
# --------------------------------------------------------------------------


class Server:
    """`memtree serve` spoken to with newline-delimited JSON-RPC; responses are
    collected by a reader thread (with the instant each arrived), so requests
    can be pipelined and the process killed at any moment."""

    def __init__(self, binary: Path, store: Store, env: Mapping[str, str], stderr_path: Path,
                 args: Iterable[str] = ()) -> None:
        self.stderr_path = stderr_path
        self._errf = open(stderr_path, "ab")
        self.proc = subprocess.Popen(
            [str(binary), "serve", *place_args(store), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errf, env=dict(env),
        )
        self._cond = threading.Condition()
        self.responses: dict[Any, dict] = {}
        self.arrived: dict[Any, float] = {}
        self.eof = False
        self._next = 0
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a line cut by the kill: not an answer
            if isinstance(msg, dict) and "id" in msg and ("result" in msg or "error" in msg):
                with self._cond:
                    self.responses[msg["id"]] = msg
                    self.arrived[msg["id"]] = time.monotonic()
                    self._cond.notify_all()
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def _write(self, obj: Any) -> bool:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def send(self, method: str, params: dict | None = None) -> int:
        self._next += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)
        return self._next

    def send_call(self, name: str, args: Mapping[str, Any]) -> int:
        return self.send("tools/call", {"name": name, "arguments": dict(args)})

    def wait(self, rid: int, timeout: float) -> dict | None:
        """The response to `rid`; None when the server closed stdout first; TimeoutError after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self.responses:
                if self.eof:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer to request {rid} within {timeout} s")
                self._cond.wait(left)
            return self.responses[rid]

    def wait_all(self, rids: Iterable[int], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for rid in rids:
            if self.wait(rid, max(0.0, deadline - time.monotonic())) is None:
                return False
        return True

    def call(self, name: str, args: Mapping[str, Any], timeout: float = 60) -> tuple[str, bool]:
        m = self.wait(self.send_call(name, args), timeout)
        if m is None:
            raise HarnessError(f"server exited during {name}; stderr: {self.stderr_tail()}")
        return tool_text(m)

    def initialize(self, timeout: float = 60) -> None:
        rid = self.send("initialize", {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "memtree-harness", "version": "0.0.1"},
        })
        m = self.wait(rid, timeout)
        if m is None or "result" not in m:
            raise HarnessError(f"initialize failed: {m!r}; stderr: {self.stderr_tail()}")
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def kill(self) -> None:
        """SIGKILL, then wait until every line the server wrote has been read."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._thread.join(timeout=30)
        self._finish()

    def close(self, timeout: float = 30) -> int:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise HarnessError("server did not exit after its stdin was closed")
        self._thread.join(timeout=30)
        self._finish()
        return rc

    def _finish(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        if not self._errf.closed:
            self._errf.close()

    def stderr_tail(self, n: int = 2000) -> str:
        if not self._errf.closed:
            self._errf.flush()
        return self.stderr_path.read_text(errors="replace")[-n:]


def tool_text(resp: dict) -> tuple[str, bool]:
    """(text, isError) of a tools/call response; a JSON-RPC error becomes ("JSON-RPC error: …", True)."""
    if "error" in resp:
        return f"JSON-RPC error: {json.dumps(resp['error'])}", True
    content = resp["result"].get("content") or []
    texts = [c.get("text", "") for c in content if c.get("type") == "text"]
    return "\n".join(texts), bool(resp["result"].get("isError", False))


# --------------------------------------------------------------------------
# Store inspection
# --------------------------------------------------------------------------


def read_docs(store: Path) -> dict[str, str]:
    """Every document: id → text (from `<id>.md` outside `.memtree/`)."""
    out: dict[str, str] = {}
    if not store.is_dir():
        return out
    for p in store.rglob("*.md"):
        rel = p.relative_to(store).as_posix()
        if rel.startswith(META + "/") or not p.is_file():
            continue
        out[rel[:-3]] = p.read_bytes().decode("utf-8", "replace")
    return out


def stray_files(store: Path) -> list[str]:
    """Files outside `.memtree/` that are not `<valid id>.md` documents (temp files, leftovers)."""
    bad = []
    for p in store.rglob("*"):
        rel = p.relative_to(store).as_posix()
        if rel == META or rel.startswith(META + "/") or rel == ".git" or rel.startswith(".git/"):
            continue  # memtree's state, and the history repository
        if p.is_symlink() or (not p.is_dir() and not (rel.endswith(".md") and ID_RE.fullmatch(rel[:-3]))):
            bad.append(rel)
    return sorted(bad)


def body_of(text: str) -> str:
    """The text after a leading front-matter block."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 3)
        if end >= 0:
            return text[end + 5:]
    return text


def is_deprecated(text: str) -> bool:
    if text.startswith("---\n"):
        end = text.find("\n---\n", 3)
        if end >= 0:
            return re.search(r"^status:\s*deprecated\s*$", text[4:end], re.M) is not None
    return False


def links(text: str) -> list[str]:
    seen: list[str] = []
    for m in LINK_RE.finditer(body_of(text)):
        if m.group(1) not in seen:
            seen.append(m.group(1))
    return seen


class TreeView:
    """Parent/children of a set of documents, from their links."""

    def __init__(self, docs: Mapping[str, str]) -> None:
        self.children = {d: [c for c in links(t) if c in docs] for d, t in docs.items()}
        self.parents: dict[str, list[str]] = {d: [] for d in docs}
        for d, cs in self.children.items():
            for c in cs:
                self.parents[c].append(d)

    def subtree(self, root: str) -> set[str]:
        out, stack = set(), [root]
        while stack:
            d = stack.pop()
            if d in out:
                continue
            out.add(d)
            stack.extend(self.children.get(d, []))
        return out


def replace_docs(store: Path, docs: Mapping[str, str]) -> None:
    """Make the documents of `store` exactly `docs` (files only; `.memtree/` untouched)."""
    for p in list(store.rglob("*.md")):
        if not p.relative_to(store).as_posix().startswith(META + "/"):
            p.unlink()
    for p in sorted((p for p in store.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not p.relative_to(store).as_posix().startswith(META) and not any(p.iterdir()):
            p.rmdir()
    for d, text in docs.items():
        f = store / f"{d}.md"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(text.encode())


# --------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------


@dataclass
class Op:
    n: int
    kind: str
    tool: str
    args: dict[str, Any]
    cli: list[str]
    cli_input: str | None
    touched: set[str]
    # filled by the oracle
    pre: dict[str, str | None] = field(default_factory=dict)
    post: dict[str, str | None] = field(default_factory=dict)
    answer: tuple[str, bool] = ("", False)
    # filled by the run
    rid: int | None = None
    reply: tuple[str, bool] | None = None
    applied: bool | None = None

    def describe(self) -> str:
        args = {k: (v if not isinstance(v, str) or len(v) < 80 else v[:77] + "...") for k, v in self.args.items()}
        return f"#{self.n} {self.tool} {json.dumps(args)}"


class Generator:
    """Random operations on a model of the store, each with the documents it touches."""

    def __init__(self, rng: random.Random, min_docs: int = 8, max_docs: int = 60) -> None:
        self.rng = rng
        self.counter = 0
        self.tokens = 0
        self.min_docs = min_docs
        self.max_docs = max_docs

    def next(self) -> int:
        self.counter += 1
        return self.counter

    def token(self) -> str:
        self.tokens += 1
        return f"tok{self.tokens:06d}"

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(lo, hi)))

    def fresh_id(self, parent: str) -> str:
        n = self.next()
        r = self.rng.random()
        if r < 0.5:
            return f"c{n}"
        if r < 0.75:
            return f"g{self.rng.randint(0, 4)}/c{n}"
        if parent != "root" and len(parent) < 90:
            return f"{parent}/k{n}"
        return f"c{n}"

    def burst(self, docs: Mapping[str, str], size: int) -> list[Op]:
        tree = TreeView(docs)
        ops: list[Op] = []
        used: set[str] = set()
        moved = False
        for _ in range(size * 6):
            if len(ops) >= size:
                break
            op = self.one(docs, tree, allow_move=not moved)
            if op is None or op.touched & used:
                continue
            used |= op.touched
            moved = moved or op.kind == "move"
            ops.append(op)
        return ops

    def one(self, docs: Mapping[str, str], tree: TreeView, allow_move: bool) -> Op | None:
        rng = self.rng
        ids = sorted(docs)
        non_root = [d for d in ids if d != "root"]
        doc = "root" if (not non_root or rng.random() < 0.04) else rng.choice(non_root)
        text = docs[doc]
        kinds = ["update"] * 30 + ["edit_replace"] * 18 + ["edit_section"] * 8 + ["remember"] * 22 + \
            ["lifecycle"] * 10 + (["move"] * 12 if allow_move and len(non_root) >= 2 else [])
        if not TOKEN_RE.search(text):
            kinds += ["update"] * 40  # a template child: give it content first
        kind = rng.choice(kinds)
        n = self.next()
        if kind == "update":
            return self.update(n, doc, text, docs, tree)
        if kind == "edit_replace":
            return self.edit_replace(n, doc, text, docs, tree)
        if kind == "edit_section":
            return self.edit_section(n, doc, text, docs, tree)
        if kind == "remember":
            section = rng.choice(["Notes", "Facts", "Log"])
            mode = rng.choice(["append", "append", "upsert", "merge"])
            fact = f"fact f{n} {self.words(3, 9)}."
            return Op(n, kind, "remember", {"content": fact, "document": doc, "section": section, "mode": mode},
                      ["remember", f"--document={doc}", f"--section={section}", f"--mode={mode}"], fact, {doc})
        if kind == "lifecycle":
            args: dict[str, Any] = {"id": doc, "why": f"harness reason r{n} {self.words(1, 3)}"}
            cli = ["lifecycle", doc, f"--why={args['why']}"]
            picks = [k for k in ("status", "scope", "priority") if rng.random() < 0.5] or ["status"]
            if "status" in picks:
                args["status"] = rng.choice(["active", "deprecated", "active"])
                cli.append(f"--status={args['status']}")
            if "scope" in picks:
                args["scope"] = rng.choice(["global", "agent", "project", "ephemeral"])
                cli.append(f"--scope={args['scope']}")
            if "priority" in picks:
                args["priority"] = round(rng.random(), 2)
                cli.append(f"--priority={args['priority']}")
            return Op(n, kind, "lifecycle", args, cli, None, {doc})
        # move
        movable = [d for d in non_root if len(tree.parents.get(d, [])) == 1]
        if not movable:
            return None
        x = rng.choice(movable)
        p = tree.parents[x][0]
        sub = tree.subtree(x)
        targets = [d for d in ids if d not in sub and d != p]
        if not targets:
            return None
        target = rng.choice(targets)
        return Op(n, kind, "move_document", {"id": x, "new_parent": target}, ["move", x, target], None, {p, target})

    def _children_plan(self, doc: str, docs: Mapping[str, str], tree: TreeView) -> tuple[list[str], list[str], list[str]]:
        """(kept, dropped, new) children for a rewrite of `doc`."""
        rng = self.rng
        count = len(docs)
        keep_p = 0.9 if count <= self.max_docs else 0.55
        current = tree.children.get(doc, [])
        kept = [c for c in current if rng.random() < keep_p]
        dropped = [c for c in current if c not in kept]
        if count < self.min_docs:
            k = rng.randint(1, 3)
        elif count > self.max_docs:
            k = 0
        else:
            k = rng.choice([0, 0, 0, 1, 1, 2])
        new = [self.fresh_id(doc) for _ in range(k)]
        return kept, dropped, new

    def update(self, n: int, doc: str, text: str, docs: Mapping[str, str], tree: TreeView) -> Op:
        rng = self.rng
        kept, dropped, new = self._children_plan(doc, docs, tree)
        order = kept + new
        rng.shuffle(order)
        parts = []
        if rng.random() < 0.3:
            parts.append(f"---\nsummary: s{n} {self.words(2, 5)}\ntags: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]\n---\n")
        parts.append(f"# {doc.rsplit('/', 1)[-1]} v{n}\n\nToken {self.token()} {self.words(4, 12)}.\n")
        if rng.random() < 0.25:
            # a larger document: a longer write, more room for a kill to land in it
            lines = rng.randint(20, 120)
            parts.append("\n" + "".join(f"Line {i}: {self.words(6, 14)}.\n" for i in range(lines)))
        link_lines = "".join(f"- [[{c}]]{rng.choice(['', ': ' + self.words(1, 4)])}\n" for c in order)
        # A blank line first: a link line right under a paragraph, once an edit
        # removes its link ("- "), would turn that paragraph into a setext
        # heading with an empty body, which memtree does not index (see README).
        if order and rng.random() < 0.5:
            parts.append("\n## Children\n" + link_lines)
        else:
            parts.append("\n" + link_lines)
        if rng.random() < 0.3:
            parts.append(f"\n## Notes\n- note n{n} {self.words(3, 8)}\n")
        content = "".join(parts)
        touched = {doc, *new}
        for c in dropped:
            touched |= tree.subtree(c)
        return Op(n, "update", "update_document", {"id": doc, "content": content}, ["write", doc], content, touched)

    def edit_replace(self, n: int, doc: str, text: str, docs: Mapping[str, str], tree: TreeView) -> Op | None:
        rng = self.rng
        body = body_of(text)
        children = [c for c in tree.children.get(doc, []) if body.count(f"[[{c}]]") == 1]
        tokens = [t for t in TOKEN_RE.findall(body) if text.count(t) == 1]
        if children and (not tokens or rng.random() < 0.35):
            c = rng.choice(children)
            # never "": a bare "- " under a paragraph is a setext heading underline (see README, known finding)
            new = rng.choice(["(gone)", "gone"])
            return Op(n, "edit_replace", "edit_document", {"id": doc, "old": f"[[{c}]]", "new": new},
                      ["edit", doc, f"--old=[[{c}]]", f"--new={new}"], None, tree.subtree(c) | {doc})
        if not tokens:
            return None
        old = rng.choice(tokens)
        new = self.token()
        touched = {doc}
        if rng.random() < 0.3 and len(docs) <= self.max_docs:
            child = self.fresh_id(doc)
            new += f" [[{child}]]"
            touched.add(child)
        return Op(n, "edit_replace", "edit_document", {"id": doc, "old": old, "new": new},
                  ["edit", doc, f"--old={old}", f"--new={new}"], None, touched)

    def edit_section(self, n: int, doc: str, text: str, docs: Mapping[str, str], tree: TreeView) -> Op | None:
        rng = self.rng
        headings = HEADING_RE.findall(body_of(text))
        once = [h for h in headings if headings.count(h) == 1 and h.strip() == h]
        if not once:
            return None
        section = rng.choice(once)
        body = "".join(f"- rewritten w{n} {self.words(2, 6)}\n" for _ in range(rng.randint(1, 4)))
        touched = tree.subtree(doc)
        if rng.random() < 0.2 and len(docs) <= self.max_docs:
            child = self.fresh_id(doc)
            body += f"- [[{child}]]\n"
            touched.add(child)
        return Op(n, "edit_section", "edit_document", {"id": doc, "section": section, "new": body},
                  ["edit", doc, f"--section={section}"], body, touched)


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


@dataclass
class Violation:
    check: str
    life: int
    detail: str


@dataclass
class CheckContext:
    """What a check may look at after a kill and restart."""

    harness: "CrashHarness"
    life: int
    base: dict[str, str]        # the documents when the last burst was sent (all earlier writes acknowledged)
    burst: list[Op]             # the last burst: acknowledged and unanswered operations
    actual: dict[str, str] = field(default_factory=dict)  # the documents after recovery (read by check_documents)

    @property
    def store(self) -> Store:
        return self.harness.store

    def in_bucket(self) -> None:
        """Raises Skip for a check of files that a store in a bucket does not have."""
        if isinstance(self.store, str):
            raise Skip("the store is in a bucket: no journal, stray files or git repository to look at "
                       "(a change's record is its version, written before its commit point)")

    def cli(self, *args: str, input: str | None = None) -> Run:
        return self.harness.cli.run(self.store, *args, input=input)


class Skip(Exception):
    """Raised by a check that cannot run here (counted as skipped, with its note printed once)."""


def check_validate(ctx: CheckContext) -> list[str]:
    """`memtree validate` exits 0. As the first process to open the store
    after the kill (unless the new server was started first), it also
    completes or discards an interrupted change."""
    r = ctx.cli("validate")
    if r.rc != 0:
        return [f"memtree validate exited {r.rc}:\n{r.out}{r.err}"]
    return []


def check_journal_done(ctx: CheckContext) -> list[str]:
    """After recovery no intent journal holds a change: each of its two
    files, written over in place, is gone or starts with the zeros of a
    done journal."""
    ctx.in_bucket()
    problems = []
    for name in ("journal.json", "journal-2.json"):
        j = ctx.store / META / name
        start = j.read_bytes()[:8] if j.exists() else b""
        if any(start):
            problems.append(f"{j} still holds a change after recovery: {start!r}")
    return problems


def check_no_stray_files(ctx: CheckContext) -> list[str]:
    """Outside `.memtree/` there are only `<id>.md` documents (no temp files)."""
    ctx.in_bucket()
    bad = stray_files(ctx.store)
    return [f"stray files outside {META}/: {bad}"] if bad else []


def _state(value: str | None, op: Op, doc: str) -> str:
    if value == op.post.get(doc) and value == op.pre.get(doc):
        return "unchanged"
    if value == op.post.get(doc):
        return "after"
    if value == op.pre.get(doc):
        return "before"
    return "NEITHER (torn or foreign content)"


def _excerpt(value: str | None, n: int = 300) -> str:
    if value is None:
        return "<absent>"
    return json.dumps(value if len(value) <= n else value[:n] + "…")


def check_documents(ctx: CheckContext) -> list[str]:
    """Acknowledged writes are present; unanswered ones applied wholly or not
    at all; no file torn; documents no operation touched are unchanged."""
    ctx.actual = ctx.harness.read_store()
    out: list[str] = []
    touched_all: set[str] = set().union(*(op.touched for op in ctx.burst)) if ctx.burst else set()
    for d in sorted(set(ctx.actual) | set(ctx.base)):
        if d in touched_all:
            continue
        if ctx.actual.get(d) != ctx.base.get(d):
            out.append(f"document {d} changed though no operation touched it: expected {_excerpt(ctx.base.get(d))}, "
                       f"found {_excerpt(ctx.actual.get(d))}")
    for op in ctx.burst:
        got = {d: ctx.actual.get(d) for d in op.touched}
        acked = op.reply is not None
        if got == op.post:
            op.applied = True if op.pre != op.post else None
            continue
        if got == op.pre and not acked:
            op.applied = False
            continue
        op.applied = None
        states = ", ".join(f"{d}: {_state(got[d], op, d)}" for d in sorted(op.touched))
        what = "acknowledged write missing or partial" if acked else "unanswered write half-applied or torn"
        lines = [f"{what}: {op.describe()} (answer {op.reply!r}); documents: {states}"]
        for d in sorted(op.touched):
            if got[d] != op.post.get(d):
                lines.append(f"    {d}: found {_excerpt(got[d])}\n    {d}: after-state {_excerpt(op.post.get(d))}")
        out.append("\n".join(lines))
    return out


def check_answers(ctx: CheckContext) -> list[str]:
    """Every answer read before the kill is the oracle's answer to the same operation."""
    return [f"answer differs from the oracle's: {op.describe()}: got {op.reply!r}, oracle {op.answer!r}"
            for op in ctx.burst if op.reply is not None and op.reply != op.answer]


PADDING = ["zqxpadaa", "zqxpadbb", "zqxpadcc", "zqxpaddd", "zqxpadee"]


def _search_ids(ctx: CheckContext, tokens: list[str]) -> set[str] | str:
    # at least 5 words, so the query is not "short" and no typo expansion applies
    words = tokens + PADDING[: max(0, 5 - len(tokens))]
    r = ctx.cli("--json", "search", *words, "--limit", "100000")
    if r.rc != 0:
        return f"memtree search exited {r.rc}: {r.err.strip()}"
    try:
        return {h["id"] for h in json.loads(r.out)}
    except (ValueError, KeyError, TypeError) as e:
        return f"memtree search printed no hit list ({e}): {r.out[:300]}"


def check_search_index(ctx: CheckContext) -> list[str]:
    """The search index agrees with the documents: each current token finds
    exactly the (non-deprecated) documents that contain it, and tokens no
    document holds any more find nothing. A document that a holder's link
    line with the token describes may be found too (search lifts what a
    hub's line says a child is about), but is never required."""
    if not ctx.actual:
        ctx.actual = ctx.harness.read_store()
    holders: dict[str, set[str]] = {}
    described: dict[str, set[str]] = {}
    for d, text in ctx.actual.items():
        for line in body_of(text).splitlines():
            tokens = TOKEN_RE.findall(line)
            for t in tokens:
                holders.setdefault(t, set()).add(d)
                described.setdefault(t, set()).update(m.group(1) for m in LINK_RE.finditer(line))
    out: list[str] = []
    live = sorted(holders)
    for i in range(0, len(live), 25):
        batch = live[i:i + 25]
        expected = {d for t in batch for d in holders[t] if not is_deprecated(ctx.actual[d])}
        allowed = expected | {d for t in batch for d in described[t]}
        got = _search_ids(ctx, batch)
        if isinstance(got, str):
            out.append(got)
        elif not expected <= got <= allowed:
            out.append(f"search {' '.join(batch)}: missing {sorted(expected - got)}, unexpected {sorted(got - allowed)}")
    gone: set[str] = set()
    for text in [*ctx.base.values(), *(v for op in ctx.burst for v in (*op.pre.values(), *op.post.values()))]:
        if text is not None:
            gone.update(TOKEN_RE.findall(text))
    gone -= set(holders)
    if gone:
        batch = sorted(gone)[-25:]
        got = _search_ids(ctx, batch)
        if isinstance(got, str):
            out.append(got)
        elif got:
            out.append(f"search for tokens no document holds ({' '.join(batch)}) found {sorted(got)}")
    return out


def _git(store: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store), *args], check=True, capture_output=True, text=True).stdout


def _blob_id(text: str) -> str:
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def check_history_no_gap(ctx: CheckContext) -> list[str]:
    """History has no gap: after `memtree history` (which commits what the
    killed server had queued, and anything else that differs), the queue is
    empty, the last commit holds exactly the documents (`git status` clean),
    and every acknowledged change of the last burst is a version of its own:
    its after-state is a blob that a commit since the previous check added
    at that document's path."""
    if not ctx.harness.history_available:
        raise Skip("`memtree history --help` failed: history not built, check_history_no_gap skipped")
    ctx.in_bucket()
    r = ctx.cli("history", "--limit", "1")
    if r.rc != 0:
        return [f"memtree history exited {r.rc}: {r.err.strip()}"]
    out: list[str] = []
    queue = ctx.store / META / "history"
    left = sorted(p.name for p in queue.glob("*.json")) if queue.is_dir() else []
    if left:
        out.append(f"history queue not drained after `memtree history`: {left}")
    prepared = ctx.store / META / "history.pending"
    unsettled = sorted(p.name for p in prepared.iterdir()) if prepared.is_dir() else []
    if unsettled:
        out.append(f"prepared history records left unsettled: {unsettled}")
    status = _git(ctx.store, "status", "--porcelain", "--untracked-files=all")
    if status:
        out.append(f"the last commit differs from the documents (git status):\n{status[:2000]}")
    head = _git(ctx.store, "rev-parse", "HEAD").strip()
    since = ctx.harness.history_head
    span = f"{since}..{head}" if since else head
    added: set[tuple[str, str]] = set()
    for line in _git(ctx.store, "log", "--format=", "--raw", "--no-abbrev", "--no-renames", span).splitlines():
        meta, _, path = line.partition("\t")
        fields = meta.split()
        if len(fields) >= 4 and fields[3] != "0" * 40:
            added.add((path, fields[3]))
    # Nothing but memtree writes here: a change committed as made outside
    # memtree is one whose own record was lost.
    outside = _git(ctx.store, "log", "--format=%s", span).splitlines().count("changed outside memtree")
    ctx.harness.stats.recorded_outside += outside
    if outside:
        out.append(f"{outside} change(s) committed as 'changed outside memtree': their own records were lost")
    for op in ctx.burst:
        if op.reply is None or op.reply[1] or not op.applied:
            continue
        for d, text in op.post.items():
            if text is not None and text != op.pre.get(d) and (f"{d}.md", _blob_id(text)) not in added:
                out.append(f"acknowledged {op.describe()}: no commit since {since or 'the start'} records "
                           f"{d} as it wrote it")
    ctx.harness.history_head = head
    return out


# Run in this order after every restart; check_validate first (it recovers the store).
CHECKS: list[Callable[[CheckContext], list[str]]] = [
    check_validate,
    check_journal_done,
    check_no_stray_files,
    check_documents,
    check_answers,
    check_search_index,
    check_history_no_gap,
]


# --------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------


@dataclass
class Stats:
    sent: int = 0
    acked: int = 0
    acked_errors: int = 0
    unanswered: int = 0
    unanswered_applied: int = 0
    unanswered_not_applied: int = 0
    kills: int = 0
    kills_in_flight: int = 0
    kills_at_startup: int = 0
    restarts: int = 0
    lives: int = 0
    checks_run: int = 0
    by_check: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    by_tool: dict[str, int] = field(default_factory=dict)
    # Changes whose own history record was lost, committed (content intact)
    # as "changed outside memtree": must stay 0.
    recorded_outside: int = 0


SEED_DOCS = [
    ("root", "# Root\n\nToken {tok} the top of the crash harness store.\n\n- [[alpha]]\n- [[beta]]\n- [[g0/gamma]]\n"),
    ("alpha", "# alpha\n\nToken {tok} first branch.\n\n## Children\n- [[alpha/one]]\n- [[alpha/two]]\n"),
    ("beta", "---\nsummary: second branch\n---\n# beta\n\nToken {tok} second branch.\n\n- [[c_b1]]\n"),
    ("g0/gamma", "# gamma\n\nToken {tok} third branch.\n\n## Notes\n- a first note\n"),
    ("alpha/one", "# one\n\nToken {tok} leaf one.\n"),
    ("alpha/two", "# two\n\nToken {tok} leaf two.\n\n- [[alpha/two/x]]\n"),
    ("c_b1", "# c_b1\n\nToken {tok} leaf under beta.\n"),
    ("alpha/two/x", "# x\n\nToken {tok} a deeper leaf.\n"),
]


class CrashHarness:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.binary = Path(args.binary).resolve()
        self.rng = random.Random(args.seed)
        self.scratch = Path(tempfile.mkdtemp(prefix="memtree-crash-"))
        self.store: Store = Path(args.data_dir).resolve() if args.data_dir else self.scratch / "store"
        if args.store:
            self.store = args.store
        self.shadow = self.scratch / "shadow"
        home = self.scratch / "home"
        home.mkdir()
        cache = {"MEMTREE_CACHE_DIR": str(self.scratch / "cache")} if args.store else {}
        self.cli = Cli(self.binary, {**sealed_env(home), **cache})
        # The oracle's shadow store needs no history.
        self.shadow_cli = Cli(self.binary, {**sealed_env(home), "MEMTREE_HISTORY": "off"})
        self.env = {**sealed_env(home), **cache}
        self.gen = Generator(self.rng)
        self.stats = Stats()
        self.violations: list[Violation] = []
        self.notes: list[str] = []
        self.server: Server | None = None
        self.model: dict[str, str] = {}
        self.per_op = 0.004  # running estimate of seconds per operation in a burst
        self.history_available = False
        self.history_head: str | None = None  # HEAD at the last history check
        lo, _, hi = args.ops_per_life.replace(":", "-").partition("-")
        self.ops_lo, self.ops_hi = int(lo), int(hi or lo)
        if self.ops_lo < 0 or self.ops_hi < self.ops_lo:
            raise SystemExit(f"--ops-per-life: bad range {args.ops_per_life!r}")

    # ---------------------------------------------------------------- setup

    def setup(self) -> None:
        if not (self.binary.is_file() and os.access(self.binary, os.X_OK)):
            raise SystemExit(f"memtree binary not found at {self.binary}; build it or pass --binary / MEMTREE_BIN")
        if isinstance(self.store, Path) and self.store.exists() and any(self.store.iterdir()):
            raise SystemExit(f"--data-dir {self.store} is not empty")
        h = self.cli.run(self.store, "history", "--help")
        self.history_available = h.rc == 0
        for d, template in SEED_DOCS:
            text = template.format(tok=self.gen.token())
            r = self.cli.run(self.store, "write", d, input=text)
            if r.rc != 0:
                raise HarnessError(f"seeding {d} failed: {r.err}")
        self.model = self.read_store()
        self.shadow.mkdir()
        replace_docs(self.shadow, self.model)

    def read_store(self) -> dict[str, str]:
        """Every document of the store under test; a bucket's through a copy
        into a scratch folder (`memtree copy --no-history`, which, as the
        first process to open the store, also completes an interrupted
        change)."""
        if isinstance(self.store, Path):
            return read_docs(self.store)
        mirror = Path(tempfile.mkdtemp(prefix="mirror-", dir=self.scratch))
        try:
            env = {**self.cli.env, "MEMTREE_HISTORY": "off"}
            p = subprocess.run([str(self.binary), "copy", "--no-history", self.store, str(mirror / "store")],
                               capture_output=True, env=env, timeout=300)
            if p.returncode != 0:
                raise HarnessError(f"copying the bucket to read it failed: {p.stderr.decode(errors='replace')}")
            return read_docs(mirror / "store")
        finally:
            shutil.rmtree(mirror, ignore_errors=True)

    def start_server(self) -> Server:
        n = self.stats.restarts + self.stats.kills_at_startup + 1
        return Server(self.binary, self.store, self.env, self.scratch / f"serve-{n % 50}.stderr")

    # ---------------------------------------------------------------- oracle

    def oracle(self, ops: list[Op]) -> None:
        """Apply each operation to the shadow store: its exact before/after and answer."""
        before = dict(self.model)
        for op in ops:
            op.answer = self.shadow_cli.answer(self.shadow, *op.cli, input=op.cli_input)
            after = read_docs(self.shadow)
            changed = {d for d in set(before) | set(after) if before.get(d) != after.get(d)}
            if not changed <= op.touched:
                # The op reached documents its footprint did not include: the burst
                # may then depend on the order of application. A memtree bug or a
                # harness bug; either way, report it.
                self.violate("footprint", f"{op.describe()} changed {sorted(changed - op.touched)} outside its "
                             f"expected footprint {sorted(op.touched)} (oracle answer {op.answer!r})")
            op.pre = {d: self.model.get(d) for d in op.touched}
            op.post = {d: after.get(d) for d in op.touched}
            before = after

    # ---------------------------------------------------------------- run

    def violate(self, check: str, detail: str) -> None:
        self.violations.append(Violation(check, self.stats.lives, detail))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            print(f"note: {text}", flush=True)

    def send_burst(self, server: Server, ops: list[Op]) -> float:
        for op in ops:
            op.rid = server.send_call(op.tool, op.args)
            self.stats.sent += 1
            self.stats.by_tool[op.tool] = self.stats.by_tool.get(op.tool, 0) + 1
        return time.monotonic()

    def collect(self, server: Server, ops: list[Op]) -> None:
        for op in ops:
            m = server.responses.get(op.rid)
            if m is not None:
                op.reply = tool_text(m)
                self.stats.acked += 1
                if op.reply[1]:
                    self.stats.acked_errors += 1
            else:
                self.stats.unanswered += 1

    def life(self) -> None:
        """One server life: bursts of operations, the last one cut by SIGKILL."""
        rng = self.rng
        self.stats.lives += 1
        assert self.server is not None
        server = self.server
        n_ops = rng.randint(self.ops_lo, self.ops_hi)
        sent = 0
        base = dict(self.model)
        burst: list[Op] = []
        while True:
            size = min(rng.choice([1, 1, 2, 3, 4, 6, 8]), max(0, n_ops - sent))
            base = dict(self.model)
            burst = self.gen.burst(self.model, size) if size else []
            self.oracle(burst)
            sent += len(burst)
            final = sent >= n_ops or not burst
            t0 = self.send_burst(server, burst)
            if not final:
                try:
                    server.wait_all([op.rid for op in burst], timeout=self.args.timeout)
                except TimeoutError as e:
                    self.violate("hang", f"{e}; burst: {[op.describe() for op in burst]}")
                    server.kill()
                    self.collect(server, burst)
                    self.stats.kills += 1
                    break
                self.collect(server, burst)
                self._learn(server, burst, t0)
                for op in burst:
                    if op.reply != op.answer:
                        self.violate("answers", f"answer differs from the oracle's: {op.describe()}: "
                                     f"got {op.reply!r}, oracle {op.answer!r}")
                self.model = read_docs(self.shadow)
                if self.violations:
                    return
                continue
            # the last burst: kill at a random instant
            expected = self.per_op * max(1, len(burst))
            delay = rng.uniform(0, 3 * expected) if rng.random() < 0.1 else rng.uniform(0, 1.2 * expected)
            time.sleep(delay)
            in_flight = any(op.rid not in server.responses for op in burst)
            server.kill()
            self.stats.kills += 1
            if in_flight:
                self.stats.kills_in_flight += 1
            self.collect(server, burst)
            if burst and all(op.reply is not None for op in burst):
                self._learn(server, burst, t0)
            break
        self.server = None
        self._panic_check(server)
        self.after_kill(base, burst)

    def _learn(self, server: Server, burst: list[Op], t0: float) -> None:
        if not burst:
            return
        took = max(server.arrived[op.rid] for op in burst) - t0
        self.per_op = 0.8 * self.per_op + 0.2 * (took / len(burst))

    def _panic_check(self, server: Server) -> None:
        tail = server.stderr_tail(20000)
        if "panicked" in tail:
            self.violate("panic", f"server stderr shows a panic:\n{tail[-3000:]}")

    def after_kill(self, base: dict[str, str], burst: list[Op]) -> None:
        rng = self.rng
        # Sometimes kill the next server too while it starts (recovery, index reconciliation).
        while rng.random() < 0.1 and self.stats.kills < self.args.kills:
            s = self.start_server()
            self.stats.restarts += 1
            time.sleep(rng.uniform(0, 0.03))
            s.kill()
            self.stats.kills += 1
            self.stats.kills_at_startup += 1
            self._panic_check(s)
        last = self.stats.kills >= self.args.kills
        server_first = not last and rng.random() < 0.5
        if server_first:
            # the new server is the first to open the store: it recovers it
            self.server = self.start_server()
            self.stats.restarts += 1
            self.server.initialize()
            self.server.call("read_document", {"id": "root"})
        ctx = CheckContext(self, self.stats.lives, base, burst)
        self.run_checks(ctx)
        for op in burst:
            if op.reply is None:
                if op.applied is True:
                    self.stats.unanswered_applied += 1
                elif op.applied is False:
                    self.stats.unanswered_not_applied += 1
        # the model follows the store as it is now (verified above)
        self.model = ctx.actual if ctx.actual else self.read_store()
        if read_docs(self.shadow) != self.model:
            replace_docs(self.shadow, self.model)
        if not last and self.server is None:
            self.server = self.start_server()
            self.stats.restarts += 1
            self.server.initialize()

    def run_checks(self, ctx: CheckContext) -> None:
        for check in CHECKS:
            name = check.__name__
            try:
                found = check(ctx)
            except Skip as s:
                self.stats.skipped[name] = self.stats.skipped.get(name, 0) + 1
                self.note(str(s))
                continue
            self.stats.checks_run += 1
            self.stats.by_check[name] = self.stats.by_check.get(name, 0) + 1
            for detail in found:
                self.violate(name, detail)

    def run(self) -> int:
        started = time.monotonic()
        print(f"crash harness: seed {self.args.seed}, kills {self.args.kills}, ops per life "
              f"{self.ops_lo}-{self.ops_hi}\n  binary {self.binary}\n  store {self.store}\n  scratch {self.scratch}",
              flush=True)
        self.setup()
        self.server = self.start_server()
        self.server.initialize()
        last_print = started
        try:
            while self.stats.kills < self.args.kills and not self.violations:
                self.life()
                now = time.monotonic()
                if now - last_print > self.args.progress:
                    last_print = now
                    print(f"  … {self.stats.kills} kills, {self.stats.sent} ops sent, {self.stats.acked} acknowledged, "
                          f"{now - started:.0f} s", flush=True)
        finally:
            if self.server is not None:
                self.server.kill()
        wall = time.monotonic() - started
        self.report(wall)
        if self.violations:
            print(f"\nstore kept at {self.store}; scratch (shadow store, server logs) at {self.scratch}")
            print(f"reproduce (same seed; kill instants are timing-dependent): {self.command_line()}")
            return 1
        if not self.args.keep:
            shutil.rmtree(self.scratch, ignore_errors=True)  # holds the store unless --data-dir was given
        return 0

    def command_line(self) -> str:
        a = self.args
        return (f"MEMTREE_BIN={self.binary} .venv/bin/python tests/harness/crash.py --seed {a.seed} "
                f"--kills {a.kills} --ops-per-life {self.ops_lo}-{self.ops_hi}")

    def report(self, wall: float) -> None:
        s = self.stats
        tools = ", ".join(f"{k} {v}" for k, v in sorted(s.by_tool.items()))
        checks = ", ".join(f"{k.removeprefix('check_')} {v}" for k, v in s.by_check.items())
        skipped = ", ".join(f"{k.removeprefix('check_')} {v}" for k, v in s.skipped.items()) or "none"
        print()
        print("crash harness results")
        print(f"  seed:                 {self.args.seed}")
        print(f"  operations sent:      {s.sent} ({tools})")
        print(f"  acknowledged:         {s.acked} (of which error answers: {s.acked_errors})")
        print(f"  unanswered at kill:   {s.unanswered} (found applied: {s.unanswered_applied}, "
              f"not applied: {s.unanswered_not_applied})")
        print(f"  kills:                {s.kills} (with writes in flight: {s.kills_in_flight}, "
              f"during server start: {s.kills_at_startup})")
        print(f"  restarts:             {s.restarts}")
        print(f"  lives:                {s.lives}")
        print(f"  checks run:           {s.checks_run} ({checks}); skipped: {skipped}")
        print(f"  history:              {s.recorded_outside} changes without their own commit (committed as changed outside memtree)")
        print(f"  documents at the end: {len(self.model)}")
        print(f"  violations:           {len(self.violations)}")
        for v in self.violations:
            print(f"    [{v.check}] life {v.life}: {v.detail}")
        print(f"  wall time:            {wall:.1f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kills", type=int, default=500, help="SIGKILLs to deliver (default 500)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    p.add_argument("--data-dir", default=None,
                   help="the store under test (must be empty or absent; default: a temporary folder)")
    p.add_argument("--store", default=None,
                   help="the store under test in a bucket, s3://BUCKET/PREFIX (new; the AWS variables say where), "
                        "instead of a folder; needs a binary built with --features s3")
    p.add_argument("--ops-per-life", default="1-30", help="operations per server life, LO-HI (default 1-30)")
    p.add_argument("--binary", default=str(default_binary()),
                   help="memtree binary (default: $MEMTREE_BIN, else target/release, else target/debug)")
    p.add_argument("--timeout", type=float, default=60, help="seconds before an unanswered request is a hang")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder even when all checks pass")
    p.add_argument("--progress", type=float, default=30, help="seconds between progress lines")
    args = p.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 32)
    return CrashHarness(args).run()


if __name__ == "__main__":
    sys.exit(main())
