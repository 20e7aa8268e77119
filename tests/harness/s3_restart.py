"""The S3 server stopped and restarted under a writing memtree.

Starts SeaweedFS (scripts/seaweedfs.sh) in a scratch folder and one
`memtree serve` on a store in it, which remembers a new fact every 50 ms.
After `--before` seconds the S3 server is stopped; `--down` seconds later it
is started again on the same folder; writing goes on for `--after` seconds.
Then every fact the server answered as saved must be in the document, and
none it answered as failed; writes must fail while the server is down and
succeed again once it is back. Prints the counts; exits 1 on a violation.

    cargo build --release -p memtree --features s3
    .venv/bin/python tests/harness/s3_restart.py [--binary PATH] [--rounds N]

Needs nothing running on SeaweedFS's ports (it starts its own).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from crash import Server, default_binary, sealed_env  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def seaweedfs(action: str, folder: Path) -> dict[str, str]:
    """Starts or stops SeaweedFS on `folder`; the environment it prints."""
    out = subprocess.run(["bash", str(REPO / "scripts" / "seaweedfs.sh"), action, str(folder)],
                         capture_output=True, text=True, check=True).stdout
    return dict(re.findall(r"(\w+)=(\S+)", out))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", default=str(default_binary()))
    p.add_argument("--before", type=float, default=3)
    p.add_argument("--down", type=float, default=5)
    p.add_argument("--after", type=float, default=4)
    p.add_argument("--rounds", type=int, default=2, help="stop-and-restart rounds")
    args = p.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="memtree-s3-restart-"))
    s3 = scratch / "s3"
    (scratch / "home").mkdir()
    env = {**sealed_env(scratch / "home"), **seaweedfs("start", s3)}
    store = f"{env['MEMTREE_TEST_S3']}/restart-{int(time.time())}"
    env.update({"MEMTREE_STORE": store, "MEMTREE_CACHE_DIR": str(scratch / "cache")})
    server = Server(Path(args.binary), store, env, scratch / "serve.stderr")
    violations: list[str] = []
    saved: list[str] = []
    failed: list[str] = []
    phases = {"up": [0, 0], "down": [0, 0]}  # saved, failed
    try:
        server.initialize()
        n = 0
        schedule = []
        for r in range(args.rounds):
            schedule += [("up", args.before if r == 0 else args.after), ("down", args.down)]
        schedule.append(("up", args.after))
        for i, (phase, seconds) in enumerate(schedule):
            if i > 0:
                seaweedfs("stop" if phase == "down" else "start", s3)
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                n += 1
                fact = f"fact {n} during {phase}"
                try:
                    text, error = server.call("remember", {"content": fact, "document": "log", "mode": "append"})
                except TimeoutError:
                    violations.append(f"no answer within 60 s to {fact!r}")
                    break
                (failed if error else saved).append(fact)
                phases[phase][1 if error else 0] += 1
                if error and not text.startswith("Error: storage:"):
                    violations.append(f"{fact!r} failed with {text!r}, not a storage error")
                time.sleep(0.05)
        text, error = server.call("read_document", {"id": "log"})
        if error:
            violations.append(f"the document cannot be read after the last restart: {text}")
        kept = set(re.findall(r"^- (fact \d+ during \w+)$", text, re.M))
        violations += [f"answered saved but missing: {f!r}" for f in saved if f not in kept]
        violations += [f"answered failed but present: {f!r}" for f in failed if f in kept]
        if phases["down"][0]:
            violations.append(f"{phases['down'][0]} writes answered saved while the server was down")
        if not phases["up"][0]:
            violations.append("no write succeeded while the server was up")
    finally:
        server.kill()
        seaweedfs("stop", s3)
    print(f"S3 restart harness: {args.rounds} stops and restarts of SeaweedFS under one memtree serve")
    print(f"  server up:    {phases['up'][0]} writes saved, {phases['up'][1]} failed (the first after a restart may fail)")
    print(f"  server down:  {phases['down'][0]} writes saved, {phases['down'][1]} failed")
    print(f"  kept:         {len(saved)} of {len(saved)} saved facts in the document; {len(failed)} failed ones absent")
    print(f"  violations:   {len(violations)}")
    for v in violations[:20]:
        print(f"    {v}")
    if violations:
        print(f"  scratch (kept): {scratch}")
        return 1
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
