"""Sustained `update_document` throughput: N rewrites back to back, K in
flight, on one server over a copy of a store; prints writes/s and the p50.

Unlike `memtree-bench`'s timed calls, nothing pauses between writes, so the
checkpoint, the history committer and the file system's state after many
files made and freed all weigh in (docs/BENCHMARKS.md, eighteenth part).
Make a store first, then:

    target/release/memtree-bench --sizes 10000 --reps 1 --ops 10 --keep --work-dir /tmp/stores
    .venv/bin/python tests/harness/sustained_writes.py /tmp/stores/memtree-bench-10000-* --writes 1500 --in-flight 1

`--copy DIR` keeps the copy at DIR for the next run (copying 10,000 files
and deleting them is itself file churn that slows the next run's writes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a store to copy")
    parser.add_argument("--writes", type=int, default=1500)
    parser.add_argument("--in-flight", type=int, default=1, help="requests pipelined (K)")
    parser.add_argument("--history", choices=["on", "off"], default="on")
    parser.add_argument("--docs", type=int, default=2000, help="documents the rewrites fall on")
    parser.add_argument("--copy", type=Path, help="keep the store's copy here, reusing it when it exists")
    parser.add_argument("--binary", default=os.environ.get("MEMTREE_BIN", "target/release/memtree"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scratch = None
    if args.copy:
        work = args.copy
        if not work.exists():
            shutil.copytree(args.store, work, symlinks=True)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="memtree-sustained-"))
        work = scratch / "store"
        shutil.copytree(args.store, work, symlinks=True)
    server = subprocess.Popen(
        [args.binary, "serve", "--data-dir", str(work)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, MEMTREE_HISTORY=args.history),
    )
    rpc = Rpc(server)
    try:
        rpc.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "sustained", "version": "1"}})
        rpc.notify("notifications/initialized")
        time.sleep(4)  # Start-up work (reconciling, history) done.
        ids = sorted(p.stem for p in args.store.glob("*.md") if p.stem != "root")[: args.docs]
        rng = random.Random(args.seed)
        chosen = [rng.choice(ids) for _ in range(args.writes)]
        texts = {}
        for doc in set(chosen):
            texts[doc] = rpc.call("tools/call", {"name": "read_document", "arguments": {"id": doc}})["content"][0]["text"]
        started: dict[int, float] = {}
        latencies: list[float] = []
        begin = time.perf_counter()
        sent = 0
        while len(latencies) < args.writes:
            while sent < args.writes and sent - len(latencies) < args.in_flight:
                doc = chosen[sent]
                texts[doc] += f"\nwrite {sent}\n"
                call = {"name": "update_document", "arguments": {"id": doc, "content": texts[doc]}}
                started[rpc.send("tools/call", call)] = time.perf_counter()
                sent += 1
            answer = rpc.receive()
            if answer.get("id") in started:
                latencies.append((time.perf_counter() - started.pop(answer["id"])) * 1000)
                if answer["result"].get("isError"):
                    raise SystemExit(f"refused: {answer}")
        elapsed = time.perf_counter() - begin
        print(
            f"{args.writes} writes, {args.in_flight} in flight, history {args.history}: "
            f"{args.writes / elapsed:.0f} writes/s, p50 {statistics.median(latencies):.3f} ms"
        )
    finally:
        server.stdin.close()
        server.wait()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


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
