"""The crash and concurrency harnesses (tests/harness/) at a small scale.

The full runs (`crash.py --kills 500`, `concurrency.py` with its defaults)
are documented in tests/harness/README.md; here each harness runs as a
subprocess against the suite's binary ($MEMTREE_BIN) and must exit 0.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers import BIN, REPO_ROOT

HARNESS = REPO_ROOT / "tests" / "harness"


def _run(script: str, *args: str, timeout: float) -> None:
    p = subprocess.run(
        [sys.executable, str(HARNESS / script), "--binary", str(BIN), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
    )
    out = p.stdout.decode("utf-8", "replace")
    print(out)
    assert p.returncode == 0, f"{script} exited {p.returncode}:\n{out[-6000:]}"
    assert re.search(r"^  violations: +0$", out, re.M), out[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(85)
def test_crash_harness_small():
    _run("crash.py", "--kills", "20", "--seed", "1", "--ops-per-life", "1-20", timeout=80)


@pytest.mark.slow
@pytest.mark.timeout(85)
def test_concurrency_harness_small():
    _run("concurrency.py", "--processes", "4", "--ops", "50", "--rounds", "1", "--seed", "1", timeout=80)
