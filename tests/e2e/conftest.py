"""pytest fixtures for the memtree end-to-end suite (helpers live in helpers.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from helpers import BIN, MEMTREE_VARS, RawServer, open_server, run_cli

@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_sessionstart(session: pytest.Session) -> None:
    if not BIN.is_file() or not os.access(BIN, os.X_OK):
        raise pytest.UsageError(f"memtree binary not found at {BIN}; build it or set MEMTREE_BIN")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A fresh, not yet existing, store folder (memtree creates it on first use)."""
    return tmp_path / "store"


@pytest.fixture
def base_env(home: Path) -> dict[str, str]:
    """A minimal, sealed environment for every process the suite starts."""
    env = {k: v for k, v in os.environ.items()
           if k not in MEMTREE_VARS and k != "GLIBC_TUNABLES" and not k.startswith("MEMTREE_")}
    env["HOME"] = str(home)
    env["RUST_BACKTRACE"] = "0"
    return env


@pytest.fixture
def serve(store: Path, base_env: dict[str, str]):
    """`async with serve() as m:` starts a server on the test's store."""

    def _open(*, store_dir: Path | None = store, args: Iterable[str] = (), env: Mapping[str, str] | None = None,
              lifecycle: str = "initialize", wrap: Iterable[str] = ()):
        return open_server(store_dir, base_env, args=args, env=env, lifecycle=lifecycle, wrap=wrap)

    return _open


@pytest.fixture
def cli(store: Path, base_env: dict[str, str]):
    """`cli("read", "a")` runs `memtree --data-dir <store> read a`."""

    def _run(*args: str, input: bytes | str | None = None, env: Mapping[str, str] | None = None,
             store_dir: Path | None = store, timeout: float = 30) -> Run:
        return run_cli(base_env, store_dir, *args, input=input, env=env, timeout=timeout)

    return _run


@pytest.fixture
def raw_server(store: Path, base_env: dict[str, str]):
    started: list[RawServer] = []

    def _start(*, store_dir: Path | None = store, args: Iterable[str] = (), env: Mapping[str, str] | None = None):
        s = RawServer(store_dir, base_env, args, env)
        started.append(s)
        return s

    yield _start
    for s in started:
        if s.proc.poll() is None:
            s.kill()
