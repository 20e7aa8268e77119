"""Sustained `update_document` throughput: rewrites back to back, K in
flight, on S servers (processes) over one copy of a store; prints writes/s,
the p50 and p90, and the servers' CPU time per write by thread.

Unlike `memtree-bench`'s timed calls, nothing pauses between writes, so the
checkpoint, the history committer and the file system's state after many
files made and freed all weigh in (docs/BENCHMARKS.md, eighteenth part).
With `--servers S`, S processes write at once, each to its own documents,
as S agents with a server each would: the store's lock, the shared index
and each server's watcher of the others' files weigh in too
(twenty-fourth part). Make a store first, then:

    target/release/memtree-bench --sizes 10000 --reps 1 --ops 10 --keep --work-dir /tmp/stores
    .venv/bin/python tests/harness/sustained_writes.py /tmp/stores/memtree-bench-10000-* --writes 1500 --in-flight 1
    .venv/bin/python tests/harness/sustained_writes.py /tmp/stores/memtree-bench-10000-* --writes 2000 --servers 4

`--copy DIR` keeps the copy at DIR for the next run (copying 10,000 files
and deleting them is itself file churn that slows the next run's writes).
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a store to copy")
    parser.add_argument("--writes", type=int, default=1500, help="in all, shared among the servers")
    parser.add_argument("--in-flight", type=int, default=1, help="requests pipelined per server (K)")
    parser.add_argument("--servers", type=int, default=1, help="server processes writing at once (S)")
    parser.add_argument("--history", choices=["on", "off"], default="on")
    parser.add_argument("--docs", type=int, default=2000, help="documents the rewrites fall on")
    parser.add_argument("--copy", type=Path, help="keep the store's copy here, reusing it when it exists")
    parser.add_argument("--binary", default=os.environ.get("MEMTREE_BIN", "target/release/memtree"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--logs", type=Path, help="write each server's log (MEMTREE_LOG) to server-<n>.log here")
    args = parser.parse_args()
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    scratch = None
    if args.copy:
        work = args.copy
        if not work.exists():
            shutil.copytree(args.store, work, symlinks=True)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="memtree-sustained-"))
        work = scratch / "store"
        shutil.copytree(args.store, work, symlinks=True)
    ids = sorted(p.stem for p in args.store.glob("*.md") if p.stem != "root")[: args.docs]
    random.Random(args.seed).shuffle(ids)
    # Each server its own documents: concurrent rewrites of one document
    # would merge, which is another measurement.
    shares = [ids[s :: args.servers] for s in range(args.servers)]
    try:
        # A client process per server: threads of one Python process would
        # take turns at its interpreter lock, and the clients would set
        # the pace.
        go = multiprocessing.Barrier(args.servers + 1)
        answers = multiprocessing.Queue()
        clients = [
            multiprocessing.Process(target=write, args=(args, work, share, args.writes // args.servers, s, go, answers))
            for s, share in enumerate(shares)
        ]
        for client in clients:
            client.start()
        go.wait()  # Every server started and its documents read.
        begin = time.perf_counter()
        results = [answers.get() for _ in clients]
        elapsed = time.perf_counter() - begin
        for client in clients:
            client.join()
        failed = [failure for _, _, failure in results if failure]
        if failed:
            raise SystemExit(f"refused: {failed[0]}")
        cpu = collections.Counter()
        for _, used, _ in results:
            cpu.update(used)
        latencies = sorted(ms for run, _, _ in results for ms in run)
        done = len(latencies)
        per_write = ", ".join(f"{name} {seconds / done * 1000:.2f}" for name, seconds in cpu.most_common() if seconds)
        print(
            f"{done} writes, {args.servers} servers, {args.in_flight} in flight each, history {args.history}: "
            f"{done / elapsed:.0f} writes/s, p50 {statistics.median(latencies):.3f} ms, "
            f"p90 {latencies[int(done * 0.9)]:.3f} ms, p99 {latencies[int(done * 0.99)]:.3f} ms, "
            f"max {latencies[-1]:.3f} ms\n"
            f"  server CPU per write, ms: {sum(cpu.values()) / done * 1000:.2f} ({per_write})"
        )
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def write(args, store, docs, writes, seed, go, answers) -> None:
    """One client process: its server started, its documents read, then
    (once every client is ready) the rewrites; answers the latencies, the
    server's CPU seconds by thread, and a refusal if one came."""
    writer = Writer(args, store, docs, writes, seed)
    try:
        time.sleep(4)  # Start-up work (reconciling, history) done.
        writer.prepare()
        before = writer.cpu()
        go.wait()
        writer.run()
        used = writer.cpu()
        used.subtract(before)
        answers.put((writer.latencies, dict(used), writer.failure))
    finally:
        writer.stop()


class Writer:
    """One server and the client that rewrites its documents."""

    def __init__(self, args: argparse.Namespace, store: Path, docs: list[str], writes: int, seed: int) -> None:
        self.server = subprocess.Popen(
            [args.binary, "serve", "--data-dir", str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(args.logs / f"server-{seed}.log", "w") if args.logs else subprocess.DEVNULL,
            env=dict(os.environ, MEMTREE_HISTORY=args.history),
        )
        self.rpc = Rpc(self.server)
        self.in_flight = args.in_flight
        rng = random.Random(args.seed * 1000 + seed)
        self.chosen = [rng.choice(docs) for _ in range(writes)]
        self.texts: dict[str, str] = {}
        self.latencies: list[float] = []
        self.failure: dict | None = None
        self.rpc.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "sustained", "version": "1"}})
        self.rpc.notify("notifications/initialized")

    def prepare(self) -> None:
        for doc in set(self.chosen):
            answer = self.rpc.call("tools/call", {"name": "read_document", "arguments": {"id": doc}})
            self.texts[doc] = answer["content"][0]["text"]

    def run(self) -> None:
        started: dict[int, float] = {}
        sent = 0
        while len(self.latencies) < len(self.chosen):
            while sent < len(self.chosen) and sent - len(self.latencies) < self.in_flight:
                doc = self.chosen[sent]
                self.texts[doc] += f"\nwrite {sent}\n"
                call = {"name": "update_document", "arguments": {"id": doc, "content": self.texts[doc]}}
                started[self.rpc.send("tools/call", call)] = time.perf_counter()
                sent += 1
            answer = self.rpc.receive()
            if answer.get("id") in started:
                self.latencies.append((time.perf_counter() - started.pop(answer["id"])) * 1000)
                if answer["result"].get("isError"):
                    self.failure = answer
                    return

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of each of the server's threads, by name."""
        seconds: collections.Counter[str] = collections.Counter()
        task = Path(f"/proc/{self.server.pid}/task")
        for thread in task.iterdir():
            try:
                name = (thread / "comm").read_text().strip()
                fields = (thread / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # A thread that ended meanwhile.
            seconds[name] += (int(fields[11]) + int(fields[12])) / TICKS
        return seconds

    def stop(self) -> None:
        self.server.stdin.close()
        self.server.wait()


class Rpc:
    def __init__(self, server: subprocess.Popen) -> None:
        self.server = server
        self.ids = iter(range(1, 1 << 62))

    def send(self, method: str, params: dict) -> int:
        id_ = next(self.ids)
        self._write({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        return id_

    def notify(self, method: str) -> None:
        self._write({"jsonrpc": "2.0", "method": method})

    def receive(self) -> dict:
        return json.loads(self.server.stdout.readline())

    def call(self, method: str, params: dict) -> dict:
        id_ = self.send(method, params)
        while (answer := self.receive()).get("id") != id_:
            pass
        return answer["result"]

    def _write(self, message: dict) -> None:
        self.server.stdin.write((json.dumps(message) + "\n").encode())
        self.server.stdin.flush()


if __name__ == "__main__":
    main()
