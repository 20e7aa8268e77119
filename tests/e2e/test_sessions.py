"""Agent session transcripts through the binary: `memtree sessions scan | search
| list`, and `serve --sessions` with `scan_sessions` and `search_sessions` over
MCP, on copies of tests/fixtures/sessions (Claude Code and Codex files written
to resemble the real ones; its README has every count checked here)."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest

from helpers import REPO_ROOT, run_cli

pytestmark = pytest.mark.anyio

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sessions"
SECRETS = [
    "AKIAQ3EGRTV7XK2PLM5N",
    "ghp_X8XnfCEjRw456fLoewD91ezO35pSneocTOpV",
    "sk-RlclPEm3w2UtaDzmwDh364dDhBibSdXvXFweq8XYkxRsTusj",
    "Pg-dev-7731-hunter2",
    "sk-proj-GoTn0P6bqFb2cNjMtqr4EV5T2i8A7yFHNyoeYubnf2Vdmzel5Zd3uOoL",
]
FACTS = {
    "Postgres advisory locks over Redis for the job queue": "f1841639",
    "the flaky test was caused by a timezone in CI": "6c56b958",
    "the nightly S3 backup failed because cron sourced the stale key": "38b13239",
    "pinned rustls to 0.23 with the ring backend": "019a963e",
    "the memory leak came from an unbounded mpsc channel per websocket connection": "019a9c36",
    "idempotency keys are kept for 24 hours": "8856366d",
}


@pytest.fixture
def transcripts(tmp_path: Path) -> dict[str, str]:
    """Copies of the fixtures, and the environment that points memtree at them."""
    root = tmp_path / "transcripts"
    shutil.copytree(FIXTURES / "claude", root / "claude")
    shutil.copytree(FIXTURES / "codex", root / "codex")
    return {"MEMTREE_CLAUDE_PROJECTS": str(root / "claude"), "MEMTREE_CODEX_SESSIONS": str(root / "codex")}


def test_scan_search_and_list_from_the_cli(base_env, store, transcripts):
    env = {**base_env, **transcripts}
    r = run_cli(env, store, "--json", "sessions", "scan")
    assert r.rc == 0, r.err
    first = json.loads(r.out)
    assert (first["files"], first["malformed"], first["unknown"], first["partial"]) == (12, 1, 1, 2)
    assert first["sessions"] == 11
    again = json.loads(run_cli(env, store, "--json", "sessions", "scan").out)
    assert (again["read"], again["bytes"], again["passages"]) == (0, 0, 0), "a re-scan reads nothing unchanged"

    for fact, session in FACTS.items():
        r = run_cli(env, store, "--json", "sessions", "search", fact)
        hits = json.loads(r.out)
        assert hits and hits[0]["session"].startswith(session), (fact, hits[:1])
    r = run_cli(env, store, "sessions", "search", "advisory locks", "--project", "payments-api")
    assert r.rc == 0 and r.out.startswith("[claude f1841639 · payments-api · 2025-11-03T09:1"), r.out
    assert run_cli(env, store, "sessions", "search", "advisory", "--project", "ledger-sync").out.strip() \
        == "No session matches."

    listed = json.loads(run_cli(env, store, "--json", "sessions", "list", "--days", "100000", "--limit", "50").out)
    by_id = {s["session"][:8]: s for s in listed}
    assert len(by_id["f1841639"]["requests"]) == 3
    assert by_id["019a963e"]["files"] == ["Cargo.toml", "src/main.rs"]
    everything = run_cli(env, store, "sessions", "search", "key token password secret", "--limit", "50").out
    everything += json.dumps(listed)
    for secret in SECRETS:
        assert secret not in everything


def test_excluded_projects_stay_out(base_env, store, transcripts):
    env = {**base_env, **transcripts, "MEMTREE_SESSIONS_EXCLUDE": "web.dashboard"}
    r = run_cli(env, store, "--json", "sessions", "scan", "--exclude-project", "deploy-scripts")
    assert r.rc == 0, r.err
    assert json.loads(r.out)["excluded"] == 5
    listed = json.loads(run_cli(env, store, "--json", "sessions", "list", "--days", "100000", "--limit", "50").out)
    assert {s["project"] for s in listed}.isdisjoint({"web.dashboard", "deploy-scripts"})
    hits = json.loads(run_cli(env, store, "--json", "sessions", "search", "flaky test timezone", "--limit", "50").out)
    assert hits and {h["project"] for h in hits}.isdisjoint({"web.dashboard", "deploy-scripts"})


async def test_an_agent_scans_and_searches_its_sessions(serve, store, transcripts, tmp_path):
    async with serve(args=["--sessions"], env=transcripts) as m:
        tools = {t.name for t in (await m.session.list_tools()).tools}
        assert {"scan_sessions", "search_sessions"} <= tools
        r = await m.call("scan_sessions", {"days": 100000, "limit": 20})
        assert not r.error, r
        sessions = {s["session"]: s for s in json.loads(r.text)["sessions"]}
        assert len(sessions) == 10, "11 sessions, one of them a title alone with no time"
        assert sessions["f1841639"]["project"] == "payments-api"
        assert sessions["f1841639"]["tools"] == {"Bash": 2, "Edit": 1, "Grep": 1, "Read": 1, "Write": 2}
        assert len(sessions["019a9c36"]["requests"]) == 4
        for fact, session in FACTS.items():
            r = await m.call("search_sessions", {"query": fact, "limit": 3})
            assert r.text.split("\n")[0].split()[1] == session, (fact, r.text[:200])
        for secret in SECRETS:
            assert secret not in json.dumps(sessions)

        # A session written while the server runs is found within seconds.
        fresh = Path(transcripts["MEMTREE_CLAUDE_PROJECTS"]) / "-home-ana-src-new-thing" / "0f0e0d0c-1111-4222-8333-944445555666.jsonl"
        fresh.parent.mkdir()
        record = {"type": "user", "sessionId": fresh.stem, "cwd": "/home/ana/src/new-thing", "isSidechain": False,
                  "timestamp": "2026-11-27T08:00:00.000Z",
                  "message": {"role": "user", "content": "remember that the quokka cluster runs on port 7443"}}
        fresh.write_text(json.dumps(record) + "\n")
        deadline = time.monotonic() + 15
        while True:
            r = await m.call("search_sessions", {"query": "quokka cluster port"})
            if "0f0e0d0c" in r.text or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.3)
        assert "[claude 0f0e0d0c · new-thing · 2026-11-27T08:00Z] user: remember that the quokka" in r.text, r.text

        prompt = await m.session.get_prompt("compress_transcript", {})
        text = prompt.messages[0].content.text
        assert "scan_sessions" in text and "remember(" in text


async def test_without_sessions_the_tools_are_not_offered(serve, store, transcripts):
    async with serve(env=transcripts) as m:
        tools = {t.name for t in (await m.session.list_tools()).tools}
        assert not {"scan_sessions", "search_sessions"} & tools
        assert "validate" in tools
    assert not (store / ".memtree" / "sessions.sqlite").exists(), "nothing scanned unless asked"
