"""What a hostile or careless user found in how memtree rewrites text, and
in the seed features (issue 10): each test failed before its fix.

- line endings: every text-rewriting tool keeps a document's `\\r\\n`, `\\r`
  or mixed endings and its byte-order mark, and loses no line;
- a refused write changes nothing, on every path;
- front-matter after a byte-order mark or with `\\r` endings is recognised;
- unclear answers (`base`, `section`, `expires`) name what is wrong;
- the seeds' features: packs within small budgets, `remember` merge and
  new documents, restored children, scores, `ls` dates.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import cli_text, docs, err, ok, snapshot

pytestmark = pytest.mark.anyio

BOM = "\ufeff"

# The parent of the report, in LF; each case writes it with other endings.
PARENT = "# par\n\nYear:\n2024\n```\n1\n2\n-\n```\n- [[kid]]\nend\n"
ENDINGS = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "cr": lambda t: t.replace("\n", "\r"),
    "bom-crlf": lambda t: BOM + t.replace("\n", "\r\n"),
    "mixed": lambda t: t.replace("\n", "\r\n", 3).replace("2\n-", "2\r-"),
}


def raw(store, id: str) -> bytes:
    return (store / f"{id}.md").read_bytes()


def git_count(store) -> int:
    if not (store / ".git").exists():
        return 0
    out = subprocess.run(["git", "-C", str(store), "rev-list", "--count", "--all"], capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


@pytest.mark.parametrize("style", sorted(ENDINGS))
async def test_a_move_takes_out_only_the_link_whatever_the_line_endings(serve, cli, store, style):
    """Finding 1: moving a child out of a CRLF parent deleted every line of
    only digits or list markers, even in code."""
    styled = ENDINGS[style]
    assert cli("write", "root", input="# Memory\n- [[par]]\n- [[other]]\n").rc == 0
    (store / "par.md").write_bytes(styled(PARENT).encode())
    (store / "other.md").write_bytes(styled("# other\n").encode())
    assert cli("write", "par", input=styled(PARENT)).rc == 0  # creates kid
    r = cli("move", "kid", "other")
    assert (r.rc, r.out) == (0, "Succeeded\nMoved: kid from par to other\n"), r
    link_line = next(line for line in styled(PARENT).splitlines(keepends=True) if "[[kid]]" in line)
    assert raw(store, "par") == styled(PARENT).replace(link_line, "", 1).encode()
    other = raw(store, "other").decode()
    eol = "\r" if style == "cr" else "\r\n"  # other.md's own ending
    assert other == styled("# other\n") + f"- [[kid]]{eol}", repr(other)
    # And back through the MCP tool.
    async with serve() as m:
        assert await m.call("move_document", {"id": "kid", "new_parent": "par"}) == ok(
            "Succeeded\nMoved: kid from other to par"
        )
    assert raw(store, "other") == styled("# other\n").encode()


@pytest.mark.parametrize("style", ["crlf", "cr", "bom-crlf"])
async def test_every_rewriting_tool_keeps_the_documents_line_endings(serve, cli, store, style):
    """Finding 1's neighbours: edit (text and section), remember, lifecycle,
    split and an update that keeps the front-matter write new lines with the
    document's own ending and keep its byte-order mark."""
    styled = ENDINGS[style]
    eol = "\r" if style == "cr" else "\r\n"
    doc = styled("---\nsummary: S\n---\n# d\n\nintro\n\n## A\n- a1\n\n## B\n2024\n-\n")
    assert cli("write", "root", input="# Memory\n- [[d]]\n").rc == 0
    (store / "d.md").write_bytes(doc.encode())
    async with serve() as m:
        for name, args in [
            ("edit_document", {"id": "d", "old": "intro", "new": "intro\nsecond line"}),
            ("edit_document", {"id": "d", "section": "A", "new": "- a1\n- a2"}),
            ("remember", {"content": "a fact", "document": "d", "section": "B"}),
            ("remember", {"content": "new section", "document": "d", "section": "C"}),
            ("lifecycle", {"id": "d", "why": "testing", "priority": 0.9}),
        ]:
            r = await m.call(name, args)
            assert not r.error, (name, r)
            text = raw(store, "d").decode()
            assert text.startswith(BOM) == style.startswith("bom"), (name, repr(text))
            body = text.lstrip(BOM)
            others = body.replace(eol, "")
            assert "\n" not in others and "\r" not in others, (name, repr(text))
        text = raw(store, "d").decode()
        for line in ["summary: S", "priority: 0.9", "second line", "- a2", "2024", "-", "- a fact", "## C", "- new section"]:
            assert f"{eol}{line}{eol}" in text, (line, repr(text))
        assert text.count("---") == 2, "one front-matter block"
        # An update without a block keeps the stored block, and the mark.
        head = text[: text.index("# d")]
        assert (await m.update(styled("# d\n\nnew body\n"), "d")).text == "Succeeded"
        assert raw(store, "d").decode() == head + styled("# d\n\nnew body\n").lstrip(BOM)
        r = await m.call("split_document", {"id": "d", "plan": {"d_body": ["d"]}})
        assert r.error  # no such section: nothing to split along
    assert cli("validate").rc == 0


async def test_front_matter_after_a_bom_or_with_cr_endings_is_honoured(serve, cli, store):
    """Finding 8: a block after a BOM (or with CR-only line endings) was
    ignored: `status: deprecated` not honoured, the summary became `\\ufeff---`,
    and lifecycle added a second block."""
    assert cli("write", "root", input="# Memory\n- [[bom]]\n- [[mac]]\n- [[live]]\n").rc == 0
    (store / "bom.md").write_bytes(f"{BOM}---\nstatus: deprecated\nsummary: Old plan\n---\n# Bom\nquartz plan\n".encode())
    (store / "mac.md").write_bytes(b"---\rstatus: deprecated\rsummary: Mac plan\r---\r# Mac\rquartz plan\r")
    (store / "live.md").write_bytes(f"{BOM}---\r\nsummary: Live plan\r\n---\r\n# Live\r\nquartz plan\r\n".encode())
    assert cli("reindex").rc == 0
    async with serve() as m:
        r = await m.call("search", {"query": "quartz plan"})
        assert "[live#" in r.text and "[bom" not in r.text and "[mac" not in r.text, r.text
        r = await m.call("get_document_tree", {"summaries": True})
        assert "Live plan" in r.text and "\ufeff" not in r.text and "---" not in r.text, r.text
        r = await m.call("lifecycle", {"id": "live", "why": "replaced", "status": "deprecated"})
        assert r == ok("Succeeded\nlive: status: deprecated"), r
        r = await m.call("update_document", {"id": "mac", "content": "# Mac\rnew text\r"})
        assert r.text == "Succeeded"
    live = raw(store, "live").decode()
    assert live == f"{BOM}---\r\nsummary: Live plan\r\nwhy: replaced\r\nstatus: deprecated\r\n---\r\n# Live\r\nquartz plan\r\n"
    assert raw(store, "mac") == b"---\rstatus: deprecated\rsummary: Mac plan\r---\r# Mac\rnew text\r"


async def test_a_refused_remember_writes_nothing(serve, cli, store):
    """Finding 2: a `remember` refused as a secret created and linked a
    document named after it, and committed it to git."""
    assert cli("write", "root", input="# Memory\n").rc == 0
    before, commits = snapshot(store), git_count(store)
    token = "ghp_" + "A1b2C3d4" * 4 + "wxyz"
    r = cli("remember", "--section", f"deploy {token}", input="fact\n")
    assert r.rc == 1 and "looks like a secret (GitHub token)" in r.err, r
    r = cli("remember", "--section", "Deploy", input=f"use {token}\n")
    assert r.rc == 1 and "looks like a secret" in r.err, r
    async with serve() as m:
        for args in [
            {"content": "fact", "section": f"deploy {token}"},
            {"content": f"token {token}", "document": "brand_new"},
            {"content": "see [[root]]", "section": "Links"},
            {"content": "fact", "section": "two\nlines"},
            {"content": "fact", "parent": "nowhere"},
        ]:
            r = await m.call("remember", args)
            assert r.error, (args, r)
    assert snapshot(store) == before
    assert git_count(store) == commits


async def test_remember_makes_a_named_document_and_merges_without_repeating(serve, cli, store):
    """Finding 15: `remember` into a document that does not exist answered
    `not found`; merge repeated text after a comma."""
    assert cli("write", "root", input="# Memory\n- [[infra]]\n").rc == 0
    async with serve() as m:
        r = await m.call("remember", {"content": "Read replica on prod-db-ro:5432", "document": "db", "section": "Hosts"})
        assert r == ok("Created document db\nAdded to db#Hosts"), r
        r = await m.call("remember", {"content": "Read replica on prod-db-ro:5432, lag under 1s",
                                      "document": "db", "section": "Hosts", "mode": "merge"})
        assert r == ok("Merged into db#Hosts: - Read replica on prod-db-ro:5432"), r
        assert (await m.read("db")).text == "# db\n\n## Hosts\n- Read replica on prod-db-ro:5432, lag under 1s\n"
        r = await m.call("remember", {"content": "restart with systemctl", "section": "Runbook", "parent": "infra"})
        assert r == ok("Created document infra/runbook\nAdded to infra/runbook#Runbook"), r
        assert (await m.read("infra")).text.endswith("- [[infra/runbook]]\n")
        assert await m.call("remember", {"content": "x", "section": "a\nb"}) == err(
            "Error: section: must be one line of text (no line breaks or control characters)"
        )
    assert docs(store)["root"] == "# Memory\n- [[infra]]\n- [[db]]\n"


async def test_unclear_answers_name_the_argument_and_what_is_wrong(serve, cli, store):
    """Finding 14: a bogus `base` said `version: conflict`; `expires:
    2024-13-45` was accepted and later reported as expired."""
    async with serve() as m:
        await m.put(None, "# Memory\n- [[a]]\n")
        for base, what in [("zzz", '"zzz" is not a version'), ("", "empty: give the version")]:
            r = await m.call("update_document", {"id": "a", "content": "# a\nx\n", "base": base})
            assert r.error and r.text.startswith(f"Error: base: {what}"), r
            r = await m.call("edit_document", {"id": "a", "old": "# a", "new": "# A", "base": base})
            assert r.error and r.text.startswith(f"Error: base: {what}"), r
        r = await m.call("lifecycle", {"id": "a", "why": "temp", "expires": "2024-13-45"})
        assert r == err('Error: expires: "2024-13-45" is not a date (YYYY-MM-DD)'), r
        r = await m.update("---\nexpires: 2023-02-29\n---\n# a\n", "a")
        assert r.error and 'front-matter key "expires" must be a date' in r.text, r
    r = cli("write", "a", "--base", "zzz", input="# a\n")
    assert r.rc == 1 and r.err.startswith('Error: base: "zzz" is not a version'), r
    assert docs(store)["a"] == "# a\n\n"


async def test_a_small_pack_budget_holds_what_fits_and_a_short_left_out_line(serve, cli, store):
    """Finding 15: the list of left-out passages counted against the budget,
    so `--budget 300` over 50 one-line documents returned nothing."""
    names = [f"n{i}" for i in range(50)]
    assert cli("write", "root", input="# Memory\n" + "".join(f"- [[{n}]]\n" for n in names)).rc == 0
    for i, n in enumerate(names):
        assert cli("write", n, input=f"# {n}\n\nThe database host db{i} listens on port {5400 + i}.\n").rc == 0
    for budget in ["120", "300", "1200"]:
        r = cli("query", "database host port", "--budget", budget)
        assert r.rc == 0, r
        header, *lines = r.out.splitlines()
        used, limit = header.removeprefix("# Memory pack (").removesuffix(" tokens)").split("/")
        assert int(used) <= int(limit) == int(budget), header
        entries = [line for line in lines if line.startswith("- [")]
        assert entries, r.out
        left = [line for line in lines if line.startswith("Left out")]
        if int(budget) < 1200:
            assert len(left) == 1 and left[0].endswith(" more)"), r.out
            named = left[0].removeprefix("Left out (over budget): ").split(" (+")[0].split(", ")
            assert len(named) == len(set(named)) <= 8, left
    r = cli("query", "database host port", "--budget", "300", "--json")
    pack = json.loads(r.out)
    assert pack["used"] <= 300 and pack["entries"] and len(pack["left_out"]) == len(set(pack["left_out"]))


async def test_restoring_a_parent_brings_children_back_as_they_were_last(serve, cli, store):
    """Finding 15: restoring a parent brought its pruned children back empty."""
    assert cli("write", "root", input="# Memory\n- [[a]]\n").rc == 0
    assert cli("write", "a", input="# A\nimportant\n- [[a1]]\n").rc == 0
    assert cli("write", "a1", input="# A1\nalso important\n").rc == 0
    assert cli("write", "root", input="# Memory\n").rc == 0
    r = cli("restore", "root")
    assert r.rc == 0 and r.out.startswith("Succeeded\nRestored: root, a, a1 from "), r
    assert docs(store) == {"root": "# Memory\n- [[a]]\n", "a": "# A\nimportant\n- [[a1]]\n", "a1": "# A1\nalso important\n"}


async def test_search_scores_say_how_good_a_hit_is_and_ls_shows_dates(serve, cli, store):
    """Finding 15: every score showed as `0.00`; `ls` printed epoch seconds."""
    assert cli("write", "root", input="# Memory\n- [[a]]\n- [[b]]\n").rc == 0
    assert cli("write", "a", input="# A\nquartz quartz quartz crystals\n").rc == 0
    assert cli("write", "b", input="# B\nsome text and one quartz\n").rc == 0
    r = cli("search", "quartz")
    first, second = [line for line in r.out.splitlines() if line[0].isdigit()]
    assert first.startswith("1. [a#A] 1.00 · root"), r.out
    score = float(second.split()[2])
    assert 0 < score < 1, r.out
    hits = json.loads(cli("search", "quartz", "--json").out)
    assert hits[0]["score"] == 1.0 and 0 < hits[1]["score"] < 1
    r = cli("ls")
    assert "\tchanged 20" in r.out and " UTC\t" in r.out, r.out
    listed = json.loads(cli("ls", "--json").out)
    modified = listed["documents"][0]["modified"]
    assert len(modified) == 20 and modified[4] == "-" and modified[10] == "T" and modified.endswith("Z"), modified


async def test_a_document_of_many_headings_is_written_in_linear_time(serve, cli, store):
    """Finding 6: write time grew with the square of the number of `##`
    headings (80,000 took 22 s). Here 60,000 must be written, read by
    section and found well inside the test's timeout."""
    doc = "# big\n" + "".join(f"## h{i}\nx\n" for i in range(60_000))
    assert len(doc) < 1_048_576
    assert cli("write", "root", input="# Memory\n- [[big]]\n").rc == 0
    r = cli("write", "big", input=doc, timeout=60)
    assert r.rc == 0 and r.out.startswith("Succeeded\nAdvice: big is "), r
    r = cli("read", "big", "--section", "h59999", timeout=30)
    assert (r.rc, r.out) == (0, "## h59999\nx\n"), r
