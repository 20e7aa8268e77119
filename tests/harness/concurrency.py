#!/usr/bin/env python3
"""Concurrency harness: several `memtree serve` processes writing to one store at once.

    .venv/bin/python tests/harness/concurrency.py --processes 4 --ops 300

Phase 1. `--processes` servers (default 4) on ONE store, each driven by its
own client thread, each running `--ops` operations (default 300) as fast as
it can, all at the same time:

- shared documents: `remember` (mode append) of a distinct fact into
  `shared/log#Log` and into `shared#Board` (the same document whose slots the
  others edit); `edit_document` of the process's own slot line in `shared`
  (exact-string replace), which also adds a fresh child link of `shared` and
  drops the previous one (so every process creates and prunes children of the
  same parent);
- private documents (process k owns the subtree `pk`): `update_document`
  (whole content, adding and dropping child links), `remember`, `lifecycle`,
  `edit_document` and `move_document` inside the subtree.

Afterwards: every acknowledged fact is in its section exactly once; every
slot line holds its process's last acknowledged value; `shared` has exactly
the children its slots link and the pruned ones are gone; every private
document holds its last acknowledged content (exact after an update; the
acknowledged fact, edit, lifecycle or move present after one); the set of
documents and their parents is exactly the model's; `memtree validate` exits 0.

Phase 2 ("20 concurrent appends to one document"): 20 separate servers
(separate clients) each send one `remember` mode=append of a distinct fact
into one document at the same instant, `--rounds` times (default 3): all
20 facts of every round must be kept.

Prints operations, processes, acknowledged, lost (must be 0), wall time and
ops/s; exit code 1 on any lost write or violation.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crash import (  # noqa: E402  (the raw JSON-RPC client and store helpers live in crash.py)
    WORDS,
    Cli,
    HarnessError,
    Server,
    default_binary,
    links,
    read_docs,
    sealed_env,
    stray_files,
    tool_text,
)


@dataclass
class PDoc:
    """What a private document must look like: exact text, or lines it must / must not hold."""

    exact: str | None
    children: list[str]
    token: str | None = None
    required: list[str] = field(default_factory=list)
    forbidden: list[str] = field(default_factory=list)
    why: str | None = None


@dataclass
class Worker:
    k: int
    ops: int
    rng: random.Random
    server: Server | None = None
    sent: int = 0
    acked: int = 0
    by_tool: dict[str, int] = field(default_factory=dict)
    facts: list[tuple[str, str, str]] = field(default_factory=list)  # (document, section, fact) acknowledged
    slot: str = ""                    # the acknowledged slot text (after "- ")
    slot_child: str | None = None
    shared_created: list[str] = field(default_factory=list)
    private: dict[str, PDoc] = field(default_factory=dict)
    counter: int = 0
    problems: list[str] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    failed: BaseException | None = None

    @property
    def root(self) -> str:
        return f"p{self.k}"

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(lo, hi)))

    def fresh(self) -> int:
        self.counter += 1
        return self.counter

    # ---------------------------------------------------------------- calls

    def call(self, tool: str, args: Mapping[str, Any]) -> tuple[str, bool]:
        assert self.server is not None
        self.sent += 1
        self.by_tool[tool] = self.by_tool.get(tool, 0) + 1
        t0 = time.monotonic()
        rid = self.server.send_call(tool, args)
        m = self.server.wait(rid, timeout=120)
        if m is None:
            raise HarnessError(f"p{self.k}: server exited during {tool}; stderr: {self.server.stderr_tail()}")
        self.latency.append(time.monotonic() - t0)
        text, is_error = tool_text(m)
        if not is_error:
            self.acked += 1
        return text, is_error

    def expect(self, what: str, got: tuple[str, bool], ok: bool) -> bool:
        if not ok:
            self.problems.append(f"p{self.k}: {what}: unexpected answer {got!r}")
        return ok

    # ---------------------------------------------------------------- tree model

    def parent_of(self, d: str) -> str | None:
        for p, doc in self.private.items():
            if d in doc.children:
                return p
        return None

    def subtree(self, d: str) -> set[str]:
        out, stack = set(), [d]
        while stack:
            x = stack.pop()
            if x not in out:
                out.add(x)
                stack.extend(self.private[x].children)
        return out

    # ---------------------------------------------------------------- operations

    def run(self) -> None:
        for i in range(1, self.ops + 1):
            r = self.rng.random()
            if r < 0.28:
                self.remember_shared(i, "shared/log", "Log")
            elif r < 0.38:
                self.remember_shared(i, "shared", "Board")
            elif r < 0.53:
                self.edit_slot(i)
            elif r < 0.73:
                self.update_private(i)
            elif r < 0.83:
                self.remember_private(i)
            elif r < 0.89:
                self.edit_private(i)
            elif r < 0.94:
                self.lifecycle_private(i)
            else:
                self.move_private(i)

    def remember_shared(self, i: int, doc: str, section: str) -> None:
        fact = f"fact p{self.k} n{i} {self.words(3, 8)}"
        got = self.call("remember", {"content": fact, "document": doc, "section": section, "mode": "append"})
        if self.expect(f"remember into {doc}#{section}", got, got == (f"Added to {doc}#{section}", False)):
            self.facts.append((doc, section, fact))

    def edit_slot(self, i: int) -> None:
        child = f"shared/s{self.k}_{i}" if self.rng.random() < 0.6 else None
        new = f"slot-{self.k}=v{i:04d};" + (f" [[{child}]]" if child else "")
        got = self.call("edit_document", {"id": "shared", "old": self.slot, "new": new})
        expected = "Succeeded"
        if child:
            expected += f"\nCreated: {child}"
        if self.slot_child:
            expected += f"\nDeleted: {self.slot_child}"
        if self.expect(f"edit of slot {self.slot!r} → {new!r}", got, got == (expected, False)):
            self.slot, self.slot_child = new, child
            if child:
                self.shared_created.append(child)

    def pick_private(self, with_token: bool = False) -> str | None:
        ids = [d for d, doc in self.private.items() if not with_token or doc.token]
        return self.rng.choice(sorted(ids)) if ids else None

    def update_private(self, i: int) -> None:
        rng = self.rng
        d = self.pick_private()
        assert d is not None
        doc = self.private[d]
        kept = [c for c in doc.children if rng.random() < 0.85]
        dropped = [c for c in doc.children if c not in kept]
        grow = 0 if len(self.private) > 40 else rng.choice([0, 0, 1, 1, 2])
        new = [f"{self.root}/d{self.fresh()}" for _ in range(grow)]
        order = kept + new
        rng.shuffle(order)
        token = ptok(self.k, i)
        content = (f"---\nsummary: {self.words(2, 4)}\n---\n# {d} v{i}\n\nToken {token} {self.words(3, 10)}.\n\n"
                   + "".join(f"- [[{c}]]\n" for c in order))
        gone: set[str] = set()
        for c in dropped:
            gone |= self.subtree(c)
        got = self.call("update_document", {"id": d, "content": content})
        created = [c for c in order if c in new]
        lines = got[0].split("\n")
        ok = not got[1] and lines[0] == "Succeeded"
        seen_created: list[str] = []
        seen_deleted: set[str] = set()
        for line in lines[1:]:
            if line.startswith("Created: "):
                seen_created = line[len("Created: "):].split(", ")
            elif line.startswith("Deleted: "):
                seen_deleted = set(line[len("Deleted: "):].split(", "))
            else:
                ok = False
        ok = ok and seen_created == created and seen_deleted == gone
        if not self.expect(f"update of {d} (created {created}, deleted {sorted(gone)})", got, ok):
            return
        for g in gone:
            self.private.pop(g, None)
        self.private[d] = PDoc(content, order, token)
        for c in new:
            self.private[c] = PDoc(f"# {c}\n\n", [])

    def remember_private(self, i: int) -> None:
        d = self.pick_private()
        assert d is not None
        section = self.rng.choice(["Notes", "Log"])
        fact = f"private fact p{self.k} n{i} {self.words(3, 8)}"
        got = self.call("remember", {"content": fact, "document": d, "section": section, "mode": "append"})
        if self.expect(f"remember into {d}#{section}", got, got == (f"Added to {d}#{section}", False)):
            doc = self.private[d]
            doc.exact = None
            doc.required.append(f"- {fact}")

    def edit_private(self, i: int) -> None:
        d = self.pick_private(with_token=True)
        if d is None:
            return self.update_private(i)
        doc = self.private[d]
        new = ptok(self.k, i)
        got = self.call("edit_document", {"id": d, "old": doc.token, "new": new})
        if self.expect(f"edit of {d}: {doc.token} → {new}", got, got == ("Succeeded", False)):
            assert doc.token is not None
            if doc.exact is not None:
                doc.exact = doc.exact.replace(doc.token, new, 1)
            doc.forbidden.append(doc.token)
            doc.token = new

    def lifecycle_private(self, i: int) -> None:
        d = self.pick_private()
        assert d is not None
        why = f"reason p{self.k} n{i} {self.words(1, 3)}"
        status = self.rng.choice(["active", "deprecated"])
        priority = round(self.rng.random(), 2)
        got = self.call("lifecycle", {"id": d, "why": why, "status": status, "priority": priority})
        removed = ", superseded_by: (removed)" if status == "active" else ""
        shown = int(priority) if priority == int(priority) else priority  # as Rust prints an f64
        expected = f"Succeeded\n{d}: status: {status}{removed}, priority: {shown}"
        if self.expect(f"lifecycle of {d}", got, got == (expected, False)):
            doc = self.private[d]
            doc.exact = None
            doc.why = why

    def move_private(self, i: int) -> None:
        movable = [d for d in self.private if d != self.root]
        if not movable:
            return self.update_private(i)
        x = self.rng.choice(sorted(movable))
        p = self.parent_of(x)
        sub = self.subtree(x)
        targets = sorted(d for d in self.private if d not in sub and d != p)
        if p is None or not targets:
            return self.update_private(i)
        n = self.rng.choice(targets)
        got = self.call("move_document", {"id": x, "new_parent": n})
        if self.expect(f"move of {x} from {p} to {n}", got, got == (f"Succeeded\nMoved: {x} from {p} to {n}", False)):
            old, new = self.private[p], self.private[n]
            old.children.remove(x)
            old.exact = None
            old.forbidden.append(f"[[{x}]]")
            old.required = [r for r in old.required if r != f"- [[{x}]]"]
            new.children.append(x)
            new.exact = None
            new.required.append(f"- [[{x}]]")
            new.forbidden = [f for f in new.forbidden if f != f"[[{x}]]"]


class ConcurrencyHarness:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.binary = Path(args.binary).resolve()
        self.scratch = Path(tempfile.mkdtemp(prefix="memtree-concurrency-"))
        self.store = Path(args.data_dir).resolve() if args.data_dir else self.scratch / "store"
        home = self.scratch / "home"
        home.mkdir()
        self.env = sealed_env(home)
        self.cli = Cli(self.binary, self.env)
        self.rng = random.Random(args.seed)
        self.violations: list[str] = []
        self.lost: list[str] = []
        self.servers = 0

    def server(self) -> Server:
        self.servers += 1
        return Server(self.binary, self.store, self.env, self.scratch / f"serve-{self.servers}.stderr")

    def write(self, doc: str, text: str) -> None:
        r = self.cli.run(self.store, "write", doc, input=text)
        if r.rc != 0:
            raise HarnessError(f"setup: write {doc} failed: {r.err}")

    def setup(self, workers: list[Worker]) -> None:
        if not (self.binary.is_file()):
            raise SystemExit(f"memtree binary not found at {self.binary}; build it or pass --binary / MEMTREE_BIN")
        if self.store.exists() and any(self.store.iterdir()):
            raise SystemExit(f"--data-dir {self.store} is not empty")
        root = "# Root\n\nConcurrency harness store.\n\n- [[shared]]\n- [[burst20]]\n" + "".join(
            f"- [[{w.root}]]\n" for w in workers)
        self.write("root", root)
        self.write("shared", "# shared\n\nWritten by every process.\n\n- [[shared/log]]\n\n## Slots\n"
                   + "".join(f"- slot-{w.k}=v0000;\n" for w in workers))
        self.write("shared/log", "# log\n\nFacts from every process.\n\n## Log\n- the first line\n")
        self.write("burst20", "# burst20\n\nTwenty clients append here at once.\n\n## Log\n- the first line\n")
        for w in workers:
            w.slot = f"slot-{w.k}=v0000;"
            kids = [f"{w.root}/d{w.fresh()}" for _ in range(3)]
            text = f"---\nsummary: private {w.k}\n---\n# {w.root}\n\nToken {ptok(w.k, 0)} private subtree.\n\n" + "".join(
                f"- [[{c}]]\n" for c in kids)
            self.write(w.root, text)
            w.private[w.root] = PDoc(text, kids, ptok(w.k, 0))
            for c in kids:
                w.private[c] = PDoc(f"# {c}\n\n", [])

    # ---------------------------------------------------------------- phase 1

    def phase1(self, workers: list[Worker]) -> float:
        for w in workers:
            w.server = self.server()
        for w in workers:
            w.server.initialize()
        barrier = threading.Barrier(len(workers))

        def drive(w: Worker) -> None:
            try:
                barrier.wait(timeout=60)
                w.run()
            except BaseException as e:  # reported below
                w.failed = e

        threads = [threading.Thread(target=drive, args=(w,)) for w in workers]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - t0
        for w in workers:
            assert w.server is not None
            rc = w.server.close()
            if rc != 0:
                self.violations.append(f"server of p{w.k} exited {rc} after its stdin closed")
            if "panicked" in w.server.stderr_tail(20000):
                self.violations.append(f"server of p{w.k} panicked: {w.server.stderr_tail()}")
            if w.failed is not None:
                self.violations.append(f"p{w.k}: {type(w.failed).__name__}: {w.failed}")
            self.violations.extend(w.problems)
        return took

    def check_phase1(self, workers: list[Worker]) -> None:
        docs = read_docs(self.store)
        # facts: every acknowledged one exactly once in its section
        for w in workers:
            for doc, section, fact in w.facts:
                text = docs.get(doc, "")
                count = text.split("\n").count(f"- {fact}")
                if count == 0:
                    self.lost.append(f"fact of p{w.k} missing from {doc}#{section}: {fact!r}")
                elif count > 1:
                    self.violations.append(f"fact of p{w.k} {count} times in {doc}: {fact!r}")
                elif section_of(text, f"- {fact}") != section:
                    self.violations.append(f"fact of p{w.k} not under ## {section} in {doc}: {fact!r}")
        # slots and the children of shared
        shared = docs.get("shared", "")
        for w in workers:
            lines = [ln for ln in shared.split("\n") if ln.startswith(f"- slot-{w.k}=")]
            if lines != [f"- {w.slot}"]:
                self.lost.append(f"slot of p{w.k}: expected {w.slot!r}, found {lines!r}")
        want_shared = {"shared/log"} | {w.slot_child for w in workers if w.slot_child}
        if set(links(shared)) != want_shared:
            self.violations.append(f"shared links {sorted(links(shared))}, expected {sorted(want_shared)}")
        on_disk_shared = {d for d in docs if d.startswith("shared/")}
        if on_disk_shared != want_shared:
            self.violations.append(f"documents under shared/: extra {sorted(on_disk_shared - want_shared)}, "
                                   f"missing {sorted(want_shared - on_disk_shared)}")
        # private subtrees
        expected_ids = {"root", "shared", "burst20"} | want_shared
        parents: dict[str, str] = {"shared": "root", "burst20": "root"} | {c: "shared" for c in want_shared}
        for w in workers:
            expected_ids |= set(w.private)
            parents[w.root] = "root"
            for d, doc in w.private.items():
                for c in doc.children:
                    parents[c] = d
                text = docs.get(d)
                if text is None:
                    self.lost.append(f"private document {d} of p{w.k} missing")
                    continue
                problems = []
                if doc.exact is not None and text != doc.exact:
                    problems.append(f"content differs from the last acknowledged update: expected {doc.exact!r}")
                problems += [f"lacks {r!r}" for r in doc.required if r not in text.split("\n")]
                problems += [f"still holds {f!r}" for f in doc.forbidden if f in text]
                if doc.token and doc.token not in text:
                    problems.append(f"lacks its token {doc.token!r}")
                if doc.why and f"why: {doc.why}" not in text.split("\n"):
                    problems.append(f"lacks 'why: {doc.why}'")
                if set(links(text)) != set(doc.children):
                    problems.append(f"links {sorted(links(text))}, expected {sorted(doc.children)}")
                if problems:
                    self.lost.append(f"private document {d} of p{w.k}: {'; '.join(problems)}; found {text!r}")
        extra = set(docs) - expected_ids
        if extra:
            self.violations.append(f"documents no acknowledged write explains: {sorted(extra)}")
        # the tree as memtree sees it
        r = self.cli.run(self.store, "--json", "ls")
        if r.rc != 0:
            self.violations.append(f"memtree ls exited {r.rc}: {r.err}")
        else:
            listed = {d["id"]: d.get("parent") for d in json.loads(r.out)["documents"]}
            for d, p in sorted(parents.items()):
                if d in listed and listed[d] != p:
                    self.violations.append(f"memtree ls: parent of {d} is {listed[d]}, expected {p}")
        self.validate()

    def validate(self) -> None:
        r = self.cli.run(self.store, "validate")
        if r.rc != 0:
            self.violations.append(f"memtree validate exited {r.rc}:\n{r.out}{r.err}")
        bad = stray_files(self.store)
        if bad:
            self.violations.append(f"stray files outside .memtree/: {bad}")

    # ---------------------------------------------------------------- phase 2

    def phase2(self) -> tuple[int, int, int]:
        """20 clients, one append each, at the same instant; returns (sent, acknowledged, kept)."""
        clients = self.args.clients
        sent = acked = kept = 0
        for rnd in range(1, self.args.rounds + 1):
            servers = [self.server() for _ in range(clients)]
            for s in servers:
                s.initialize()
            facts = [f"round {rnd} client {j} appends {' '.join(self.rng.choice(WORDS) for _ in range(4))}"
                     for j in range(clients)]
            answers: list[tuple[str, bool] | None] = [None] * clients
            barrier = threading.Barrier(clients)

            def one(j: int) -> None:
                barrier.wait(timeout=60)
                rid = servers[j].send_call("remember", {"content": facts[j], "document": "burst20",
                                                        "section": "Log", "mode": "append"})
                m = servers[j].wait(rid, timeout=120)
                answers[j] = tool_text(m) if m is not None else None

            threads = [threading.Thread(target=one, args=(j,)) for j in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for s in servers:
                s.close()
            sent += clients
            text = read_docs(self.store).get("burst20", "")
            lines = text.split("\n")
            round_kept = 0
            for j, fact in enumerate(facts):
                ok = answers[j] == ("Added to burst20#Log", False)
                if ok:
                    acked += 1
                else:
                    self.violations.append(f"20 appends, round {rnd}, client {j}: answer {answers[j]!r}")
                n = lines.count(f"- {fact}")
                if n == 1:
                    round_kept += 1
                elif ok and n == 0:
                    self.lost.append(f"20 appends, round {rnd}: acknowledged fact of client {j} lost: {fact!r}")
                elif n > 1:
                    self.violations.append(f"20 appends, round {rnd}: fact of client {j} kept {n} times")
            kept += round_kept
            print(f"  20 concurrent appends, round {rnd}: {round_kept}/{clients} kept", flush=True)
        self.validate()
        return sent, acked, kept

    # ---------------------------------------------------------------- run

    def run(self) -> int:
        a = self.args
        print(f"concurrency harness: seed {a.seed}, {a.processes} processes × {a.ops} operations\n"
              f"  binary {self.binary}\n  store {self.store}", flush=True)
        workers = [Worker(k, a.ops, random.Random(f"{a.seed}-{k}")) for k in range(a.processes)]
        self.setup(workers)
        started = time.monotonic()
        took = self.phase1(workers)
        self.check_phase1(workers)
        sent1 = sum(w.sent for w in workers)
        acked1 = sum(w.acked for w in workers)
        lost1 = len(self.lost)
        sent2, acked2, kept2 = self.phase2()
        wall = time.monotonic() - started
        tools: dict[str, int] = {}
        for w in workers:
            for t, n in w.by_tool.items():
                tools[t] = tools.get(t, 0) + n
        lat = sorted(x for w in workers for x in w.latency)
        p50 = lat[len(lat) // 2] * 1000 if lat else 0
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else 0
        facts = sum(len(w.facts) for w in workers)
        print()
        print("concurrency harness results")
        print(f"  seed:                 {a.seed}")
        print(f"  processes:            {a.processes} servers on one store")
        print(f"  operations:           {sent1} ({', '.join(f'{k} {v}' for k, v in sorted(tools.items()))})")
        print(f"  acknowledged:         {acked1} (shared facts {facts}, slot edits with children created "
              f"{sum(len(w.shared_created) for w in workers)})")
        print(f"  lost:                 {lost1}")
        print(f"  phase 1 time:         {took:.2f} s, {acked1 / took if took else 0:.0f} ops/s "
              f"(latency p50 {p50:.1f} ms, p99 {p99:.1f} ms)")
        print(f"  20 concurrent appends: {a.rounds} rounds × {a.clients} clients: sent {sent2}, "
              f"acknowledged {acked2}, kept {kept2}, lost {len(self.lost) - lost1}")
        print(f"  violations:           {len(self.violations)}")
        for v in self.violations[:50]:
            print(f"    {v}")
        for lost in self.lost[:50]:
            print(f"    LOST: {lost}")
        print(f"  wall time:            {wall:.1f} s ({(sent1 + sent2) / wall:.0f} ops/s overall)")
        if self.lost or self.violations:
            print(f"\nstore kept at {self.store}; server logs in {self.scratch}")
            print(f"reproduce: MEMTREE_BIN={self.binary} .venv/bin/python tests/harness/concurrency.py "
                  f"--seed {a.seed} --processes {a.processes} --ops {a.ops}")
            return 1
        if not a.keep:
            shutil.rmtree(self.scratch, ignore_errors=True)
        return 0


def ptok(k: int, i: int) -> str:
    """A private token; fixed width, so no token is a substring of another."""
    return f"ptok{k:02d}x{i:05d}"


def section_of(text: str, line: str) -> str | None:
    """The `##` heading above the first occurrence of `line`."""
    current = None
    for ln in text.split("\n"):
        m = re.match(r"^## (.+)$", ln)
        if m:
            current = m.group(1)
        elif ln == line:
            return current
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--processes", type=int, default=4, help="server processes on the store (default 4)")
    p.add_argument("--ops", type=int, default=300, help="operations per process (default 300)")
    p.add_argument("--clients", type=int, default=20, help="clients of the concurrent-append scenario (default 20)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the concurrent-append scenario (default 3)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    p.add_argument("--data-dir", default=None, help="the store (must be empty or absent; default: a temporary folder)")
    p.add_argument("--binary", default=str(default_binary()),
                   help="memtree binary (default: $MEMTREE_BIN, else target/release, else target/debug)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder even when all checks pass")
    args = p.parse_args(argv)
    if args.processes < 1 or args.ops < 1:
        raise SystemExit("--processes and --ops must be at least 1")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 32)
    return ConcurrencyHarness(args).run()


if __name__ == "__main__":
    sys.exit(main())
