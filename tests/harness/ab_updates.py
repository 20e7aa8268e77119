"""Update latency of memtree servers taken in turn, one call each, so that
a noisy machine's drift falls on all of them alike.

Each variant is a `memtree serve` on its own copy of a store; the client
updates one random document after another, asking every server in a
shuffled order, and prints the p50 and p90 of each. Variants:

- `on`, `on2`, …: history on (`MEMTREE_HISTORY=on`);
- `off`, `off2`, …: history off;
- `onram`: history on, its copy of the store in `/dev/shm` (so its disk
  writes cost the others nothing: what is left of its effect is CPU);
- any of them `@PATH`: served by the binary at PATH, so that two builds
  are compared call by call (`on@/tmp/before,on@target/release/memtree`).

Make a store first (the benchmark's generator, kept):

    target/release/memtree-bench --sizes 10000 --reps 1 --ops 10 --keep --work-dir /tmp/stores
    .venv/bin/python tests/harness/ab_updates.py /tmp/stores/memtree-bench-10000-* on,off 300

`on,off` compares the request paths (each server's committer runs beside
both); `off,off2` against `on,off` shows what a committer running beside a
server costs it.
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
    parser.add_argument("store", type=Path, help="a store to copy for each server")
    parser.add_argument("variants", help="comma-separated: on, off, onram (a suffix tells copies apart)")
    parser.add_argument("calls", type=int, nargs="?", default=300, help="updates per server")
    parser.add_argument("--binary", default=os.environ.get("MEMTREE_BIN", "target/release/memtree"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    variants = args.variants.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="memtree-ab-"))
    ram = Path(tempfile.mkdtemp(prefix="memtree-ab-", dir="/dev/shm"))
    servers: dict[str, subprocess.Popen] = {}
    try:
        for variant in variants:
            store = (ram if variant.startswith("onram") else scratch) / str(len(servers))
            shutil.copytree(args.store, store, symlinks=True)
            env = dict(os.environ, MEMTREE_HISTORY="off" if variant.startswith("off") else "on")
            binary = variant.split("@", 1)[1] if "@" in variant else args.binary
            servers[variant] = subprocess.Popen(
                [binary, "serve", "--data-dir", str(store)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        for server in servers.values():
            call(server, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "ab", "version": "1"}})
            notify(server, "notifications/initialized")
        time.sleep(4)  # Start-up work (reconciling, history) done.
        ids = sorted(p.stem for p in args.store.glob("*.md"))
        rng = random.Random(args.seed)
        latencies: dict[str, list[float]] = {v: [] for v in variants}
        for i in range(args.calls):
            doc = rng.choice(ids)
            order = list(variants)
            rng.shuffle(order)
            for variant in order:
                server = servers[variant]
                text = tool(server, "read_document", {"id": doc})["content"][0]["text"]
                started = time.perf_counter()
                answer = tool(server, "update_document", {"id": doc, "content": f"{text}\nab {i}\n"})
                latencies[variant].append((time.perf_counter() - started) * 1000)
                if answer.get("isError"):
                    raise SystemExit(f"{variant}: {answer}")
        for variant in variants:
            values = sorted(latencies[variant])
            print(f"{variant}: p50 {statistics.median(values):.2f} ms, p90 {values[int(len(values) * 0.9)]:.2f} ms")
    finally:
        for server in servers.values():
            server.stdin.close()
        for server in servers.values():
            server.wait()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(ram, ignore_errors=True)


_ids = iter(range(1, 1 << 62))


def call(server: subprocess.Popen, method: str, params: dict) -> dict:
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()
    return json.loads(server.stdout.readline())["result"]


def notify(server: subprocess.Popen, method: str) -> None:
    server.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())
    server.stdin.flush()


def tool(server: subprocess.Popen, name: str, arguments: dict) -> dict:
    return call(server, "tools/call", {"name": name, "arguments": arguments})


if __name__ == "__main__":
    main()
