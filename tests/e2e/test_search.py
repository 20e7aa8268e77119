"""search and recall through the real MCP client: plain-words queries, CJK,
typos, filters, stale memory left out, freshness after edits by other
programs and other servers, memory packs within their budget."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from helpers import write_file

pytestmark = pytest.mark.anyio

STORE = [
    (None, "# Memory\n- [[infra]]\n- [[people]]\n- [[old_notes]]\n- [[scratch]]\n"),
    ("infra", "---\nsummary: Hosts and databases\nscope: project\n---\n# Infrastructure\n\n## Databases\n"
              "Staging PostgreSQL 15.4 listens on port 5433 on db-staging.\n\n## Deploy\n"
              "Release with `make deploy` once CI is green.\n- [[infra/runbooks]]\n"),
    ("infra/runbooks", "# Runbooks\n\n## Connection refused\n"
                       "If clients get \"connection refused\" (port 5432), restart pgbouncer.\n"),
    ("people", "---\nscope: global\n---\n# People\n\n## Alice\n"
               "Alice is the engineering manager; she prefers written updates.\n\n## 会議\n毎週月曜日にメモ帳を更新する。\n"),
    ("old_notes", "---\nstatus: deprecated\n---\n# Old\n\n## Databases\nStaging PostgreSQL listens on port 6543.\n"),
    ("scratch", "---\nscope: ephemeral\nexpires: 2020-01-01\n---\n# Scratch\nStaging port is being migrated.\n"),
]

HIT = re.compile(r"^(\d+)\. \[([^\]#]+)(?:#([^\]]*))?\] (\d+\.\d+) · (.*)$")


def hits(text: str) -> list[tuple[str, str, str]]:
    """(id, heading, path) of each hit line of a search answer."""
    out = []
    for line in text.splitlines():
        m = HIT.match(line)
        if m:
            out.append((m.group(2), m.group(3) or "", m.group(5)))
    return out


async def search(m, query: str, **args) -> list[tuple[str, str, str]]:
    r = await m.call("search", {"query": query, **args})
    assert not r.error, r
    return hits(r.text)


async def test_search_answers_in_the_documented_form(serve):
    async with serve() as m:
        await m.build(STORE)
        r = await m.call("search", {"query": "What port does the staging postgres listen on?"})
        assert not r.error
        first, excerpt = r.text.splitlines()[:2]
        assert first.startswith("1. [infra#Databases] ") and first.endswith(" · root"), r.text
        assert excerpt == "   **Staging** **PostgreSQL** 15.4 **listens** on **port** 5433 on db-**staging**.", r.text
        r = await m.call("search", {"query": "zyzzyva"})
        assert (r.text, r.error) == ("No matches.\n", False)


async def test_search_json_is_structured(serve):
    async with serve() as m:
        await m.build(STORE)
        r = await m.call("search", {"query": "pgbouncer", "json": True})
        data = json.loads(r.text)
        assert [(h["id"], h["heading"], h["path"], h["line"]) for h in data] == [
            ("infra/runbooks", "Connection refused", ["root", "infra"], 4)
        ]
        assert "**pgbouncer**" in data[0]["excerpt"] and data[0]["score"] > 0
        # Without an embedding model, BM25 alone found it.
        assert data[0]["signals"] == ["bm25"]


@pytest.mark.parametrize(
    "query",
    [
        '"connection refused" (port 5432) -- AND fix:',
        "connection AND refused",
        "-refused NOT",
        "port:5432",
        "pgbouncer*",
        '"unterminated pgbouncer',
        "How do I fix connection refused errors?",
    ],
)
async def test_query_syntax_is_plain_text(serve, query):
    async with serve() as m:
        await m.build(STORE)
        assert (await search(m, query))[0][:2] == ("infra/runbooks", "Connection refused")


async def test_japanese_typos_and_subtrees(serve):
    async with serve() as m:
        await m.build(STORE)
        assert (await search(m, "メモ帳"))[0][:2] == ("people", "会議")
        assert (await search(m, "pgbounser"))[0][:2] == ("infra/runbooks", "Connection refused")
        assert [h[0] for h in await search(m, "port", under="infra/runbooks")] == ["infra/runbooks"]
        found = await search(m, "manager port", scope="global")
        assert found and all(h[0] == "people" for h in found)
        r = await m.call("search", {"query": "port", "scope": "team"})
        assert r.error and r.text.startswith("Error: scope: "), r
        r = await m.call("search", {"query": "  "})
        assert (r.text, r.error) == ("Error: query: empty", True)


async def test_deprecated_and_expired_memory_is_left_out(serve):
    async with serve() as m:
        await m.build(STORE)
        ids = {h[0] for h in await search(m, "staging port", limit=20)}
        assert "infra" in ids and not ids & {"old_notes", "scratch"}, ids
        r = await m.call("recall", {"task": "staging database port"})
        assert "6543" not in r.text and "migrated" not in r.text, r.text


async def test_edits_by_other_programs_and_servers_are_found(serve, store):
    async with serve() as m, serve() as other:
        await m.build(STORE)
        # Another server's write is searchable at once through the shared index.
        await other.put("people", "# People\n\n## Carol\nCarol runs the quokka census.\n")
        assert (await search(m, "quokka census"))[0][:2] == ("people", "Carol")
        assert await search(m, "engineering manager") == []
        # An editor's change: never a stale hit, and the new text is found.
        write_file(store, "infra/runbooks.md", "# Runbooks\n\n## Disk full\nRotate the logs on db-staging.\n")
        assert await search(m, "pgbouncer") == []
        found = []
        for _ in range(40):  # the watcher indexes it within moments
            found = await search(m, "rotate logs")
            if found:
                break
            await asyncio.sleep(0.05)
        assert found[0][:2] == ("infra/runbooks", "Disk full")


async def test_a_document_in_a_folder_made_while_serving_is_found(serve, store):
    """The watcher watches each folder on its own (none under `.git` or
    `.memtree`) and takes up a folder made while it runs, with what the
    folder already held."""
    async with serve() as m:
        await m.build(STORE)
        write_file(store, "projects/zeta/plan.md", "# Plan\n\n## Rollout\nThe quixotic rollout starts in May.\n")
        write_file(store, "projects/zeta/later.md", "# Later\nA marmoset joins the rollout.\n")
        found = []
        for _ in range(60):
            found = [h[0] for h in await search(m, "quixotic")] + [h[0] for h in await search(m, "marmoset")]
            if len(found) == 2:
                break
            await asyncio.sleep(0.05)
        assert found == ["projects/zeta/plan", "projects/zeta/later"], found


async def test_files_changed_while_no_server_ran_are_indexed_at_start(serve, store):
    async with serve() as m:
        await m.build(STORE)
    write_file(store, "people.md", "# People\n\n## Dave\nDave maintains the heliograph.\n")
    async with serve() as m:
        found = []
        for _ in range(40):
            found = await search(m, "heliograph")
            if found:
                break
            await asyncio.sleep(0.05)
        assert found[0][:2] == ("people", "Dave")


PACK_HEAD = re.compile(r"^# Memory pack \((\d+)/(\d+) tokens\)$")


async def test_recall_builds_a_cited_pack_within_the_budget(serve, cli):
    async with serve() as m:
        await m.build(STORE)
        r = await m.call("recall", {"task": "who is the manager and what is the staging database port"})
        assert not r.error
        lines = r.text.splitlines()
        used, budget = map(int, PACK_HEAD.match(lines[0]).groups())
        assert budget == 1200 and 0 < used <= budget
        assert lines[1] == "## Global" and lines[2].startswith("- [people#Alice] Alice is the engineering manager")
        assert "## Project" in lines and any(l.startswith("- [infra#Databases] ") for l in lines)
        assert lines.index("## Global") < lines.index("## Project")
        small = await m.call("recall", {"task": "who is the manager and what is the staging database port", "budget": 50})
        head = small.text.splitlines()
        used, budget = map(int, PACK_HEAD.match(head[0]).groups())
        assert budget == 50 and used <= 50
        assert head[-1] == "Left out (over budget): infra", small.text
        r = await m.call("recall", {"task": "x", "budget": 10})
        assert r.error and r.text.startswith("Error: budget: "), r
    status = cli("status", "--json")
    assert status.rc == 0, status.err
    used = {u["id"]: u["count"] for u in json.loads(status.out)["most_used"]}
    assert used.get("people") == 2, status.out


async def test_the_answer_reaches_the_agent_from_a_chat_log(serve):
    """A hub's line says what its child is about; the child's lines answer
    in other words, a question and a reply after the line that matches."""
    small_talk = "".join(f"- [S1:{k}] Tom: Line {k} of small talk about the weather.\n" for k in range(1, 30))
    log = (
        f"# Session 1\n{small_talk}"
        "- [S1:30] Lena: Nervous. I got the date through for it.\n"
        "- [S1:31] Priya: Oh! When is it?\n"
        "- [S1:32] Lena: Saturday the 15th of June, at the music school.\n"
        "- [S1:33] Priya: Good luck!\n"
    )
    async with serve() as m:
        await m.build([
            (None, "# Memory\n- [[sessions]]: chat logs\n"),
            ("sessions", "# Sessions\n- [[sessions/s1]]: Lena's cello exam date\n- [[sessions/s2]]: the canoe\n"),
            ("sessions/s1", log),
            ("sessions/s2", "# Session 2\n- [S2:1] Tom: The canoe hull is done.\n"),
        ])
        r = await m.call("search", {"query": "When is Lena's cello exam?", "json": True})
        assert not r.error, r
        found = {h["id"]: h for h in json.loads(r.text)}
        assert "sessions/s1" in found, r.text
        assert "Saturday the 15th of June" in found["sessions/s1"]["excerpt"], r.text
        pack = await m.call("recall", {"task": "When is Lena's cello exam?", "budget": 300})
        assert not pack.error and "Saturday the 15th of June, at the music school." in pack.text, pack.text
        assert pack.text.count("- [sessions/s1#") == 1, "one entry, its passages joined: " + pack.text


async def test_cli_search_query_and_reindex(cli, store):
    for id_, text in STORE:
        assert cli("write", *([id_] if id_ else []), input=text).rc == 0
    r = cli("search", "staging", "postgres", "port")
    assert r.rc == 0 and r.out.startswith("1. [infra#Databases] "), r.out
    r = cli("query", "how", "do", "we", "deploy", "--budget", "200")
    assert r.rc == 0 and PACK_HEAD.match(r.out.splitlines()[0]), r.out
    assert "[infra#Deploy]" in r.out
    # `recall` is the command's name, as the tool's; `query` its alias.
    same = cli("recall", "how", "do", "we", "deploy", "--budget", "200")
    assert (same.rc, same.out) == (0, r.out), same.err
    for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"]:
        (store / ".memtree" / name).unlink(missing_ok=True)
    v = cli("validate", "--json")
    findings = json.loads(v.out)["findings"]
    assert any(f["kind"] == "index_out_of_date" and f["missing"] == 6 for f in findings), v.out
    r = cli("reindex")
    assert r.rc == 0 and re.fullmatch(r"indexed 6 documents in \d+\.\d\d s\n", r.out), r.out
    v = cli("validate", "--json")
    assert not any(f["kind"] == "index_out_of_date" for f in json.loads(v.out)["findings"]), v.out
    r = cli("search", "--scope", "nope", "x")
    assert r.rc == 1 and r.err.startswith("Error: scope: "), r.err
