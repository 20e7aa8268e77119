#!/usr/bin/env python3
"""Sustained writes through MCP, the shared bench's way, and what they leave.

    python3 scripts/bench-sustained.py [--notes 10000] [--bin target/release/memtree] [--every 1000]

Starts `memtree serve` on a new store in a temporary folder and adds notes
back to back over raw stdio JSON-RPC, as `../shared/bench`'s `ours` adapter
does: each note is linked from a hub document (50 notes a hub, hubs linked
from root), then written, ~600 bytes. Every `--every` notes it prints the
elapsed time, the history records still queued (`.memtree/history/`), the
pack files of the store's git repository and the server's peak RSS (VmHWM);
then once more 10 s after the last write, when the committer has caught up.
Set MEMTREE_HISTORY=off to compare without history.
"""

import argparse
import glob
import json
import os
import subprocess
import tempfile
import time


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--notes", type=int, default=10000)
    args.add_argument("--bin", default="target/release/memtree")
    args.add_argument("--every", type=int, default=1000)
    opts = args.parse_args()
    store = tempfile.mkdtemp(prefix="memtree-sustained-")
    server = subprocess.Popen(
        [os.path.abspath(opts.bin), "--data-dir", store, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    calls = 0

    def send(message: dict) -> None:
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()

    def call(name: str, arguments: dict) -> str:
        nonlocal calls
        calls += 1
        send({"jsonrpc": "2.0", "id": calls, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        answer = json.loads(server.stdout.readline())
        assert "error" not in answer and not answer["result"].get("isError"), answer
        return answer["result"]["content"][0]["text"]

    def report(label: str) -> None:
        queued = len(glob.glob(f"{store}/.memtree/history/*.json"))
        packs = len(glob.glob(f"{store}/.git/objects/pack/*.pack"))
        with open(f"/proc/{server.pid}/status") as status:
            peak = next(line.split()[1] for line in status if line.startswith("VmHWM"))
        print(f"{label}: {queued} history records queued, {packs} pack files, peak RSS {int(peak) / 1024:.1f} MiB", flush=True)

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    server.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    hubs: list[str] = []
    hub_text = ""
    started = time.monotonic()
    for i in range(opts.notes):
        if i % 50 == 0:
            hubs.append(f"hub{i // 50}")
            call("update_document", {"content": "# Root\n" + "".join(f"- [[{h}]]\n" for h in hubs)})
            hub_text = f"# {hubs[-1]}\n"
        hub_text += f"- [[note{i}]]\n"
        call("update_document", {"id": hubs[-1], "content": hub_text})
        body = f"# Note {i}\nWords about topic {i % 37}, code N{i:05d}.\n" + "lorem ipsum dolor sit amet " * 20
        call("update_document", {"id": f"note{i}", "content": body})
        if (i + 1) % opts.every == 0:
            report(f"{i + 1} notes, {time.monotonic() - started:.0f} s")
    time.sleep(10)
    report("10 s after the last write")
    server.stdin.close()
    server.wait()
    subprocess.run(["rm", "-rf", store], check=True)


if __name__ == "__main__":
    main()
