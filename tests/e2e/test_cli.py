"""The CLI: read, write (stdin), tree, validate, status, --json, global option placement."""

from __future__ import annotations

import json
import re

import pytest

from helpers import LIMIT, cli_text, docs, run_cli, snapshot, write_file


def _strings(value) -> list[str]:
    """Every string (keys and values) inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _numbers(value) -> list:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


# ---------------------------------------------------------------- read / write


def test_read_default_root(cli, store):
    r = cli("read")
    assert (r.rc, r.out, r.err) == (0, "# Memory\n", "")
    assert docs(store) == {"root": "# Memory\n"}


def test_read_prints_document_bytes_exactly(cli):
    content = "# Ünïcode 🌲\n\nlast line without newline"
    assert cli("write", input=content).rc == 0
    r = cli("read", "root")
    assert r.rc == 0
    assert r.raw_out == content.encode()


def test_read_not_found(cli):
    r = cli("read", "ghost")
    assert (r.rc, r.out, r.err) == (1, "", "Error: id: not found\n")


def test_write_prints_tool_text(cli, store):
    r = cli("write", input="# R\n[[b]] [[a]]\n")
    assert r.rc == 0 and r.err == ""
    assert cli_text(r) == "Succeeded\nCreated: b, a"
    r = cli("write", "a", input="# A\n[[a1]]\n")
    assert r.rc == 0 and cli_text(r) == "Succeeded\nCreated: a1"
    r = cli("write", "a", input="# A\n")
    assert r.rc == 0 and cli_text(r) == "Succeeded\nDeleted: a1"
    r = cli("write", "b", input="plain")
    assert r.rc == 0 and cli_text(r) == "Succeeded"
    assert docs(store) == {"root": "# R\n[[b]] [[a]]\n", "a": "# A\n", "b": "plain"}
    assert cli("read", "a").out == "# A\n"


def test_write_cross_tree_error(cli, store):
    cli("write", input="[[a]] [[b]]")
    before = snapshot(store)
    r = cli("write", "a", input="[[b]]")
    assert r.rc == 1
    assert r.out == ""
    assert r.err.rstrip("\n") == "Error: content: cross-tree reference not allowed\n[[b]] is a child of root"
    assert snapshot(store) == before


def test_write_not_found(cli, store):
    cli("read")
    before = snapshot(store)
    r = cli("write", "ghost", input="x")
    assert (r.rc, r.out, r.err.rstrip("\n")) == (1, "", "Error: id: not found")
    assert snapshot(store) == before


def test_write_too_large(cli, store):
    cli("read")
    before = snapshot(store)
    r = cli("write", input="x" * (LIMIT + 1))
    assert (r.rc, r.out, r.err.rstrip("\n")) == (
        1, "", f"Error: content: too large ({LIMIT + 1} bytes; the limit is {LIMIT})"
    )
    assert snapshot(store) == before
    r = cli("write", input="y" * LIMIT)
    # A document this large is over the split threshold: the write succeeds
    # and advises (it has no sections to split along).
    assert r.rc == 0 and cli_text(r) == (
        f"Succeeded\nAdvice: root is {LIMIT} bytes (over 10240); give it ## sections or move parts into children"
    ), r.out
    assert (store / "root.md").stat().st_size == LIMIT


def test_write_invalid_utf8_stdin(cli, store):
    cli("read")
    before = snapshot(store)
    r = cli("write", input=b"# bad \xff\xfe bytes\n")
    assert r.rc == 1 and r.out == ""
    assert r.err.startswith("Error: content: "), r.err
    assert snapshot(store) == before


def test_write_invalid_id(cli, store):
    cli("read")
    before = snapshot(store)
    r = cli("write", "../escape", input="x")
    assert r.rc == 1 and r.out == ""
    assert r.err.startswith('Error: id: invalid id "../escape": '), r.err
    assert snapshot(store) == before
    assert not (store.parent / "escape.md").exists()


def test_global_options_before_or_after_subcommand(cli, base_env, store, tmp_path):
    other = tmp_path / "other"
    assert run_cli(base_env, None, "--data-dir", str(other), "write", input="[[x]]").rc == 0
    r = run_cli(base_env, None, "read", "--data-dir", str(other))
    assert (r.rc, r.out) == (0, "[[x]]")
    r = run_cli(base_env, None, "tree", "--data-dir", str(other))
    assert (r.rc, r.out) == (0, "root:\n  - x\n")
    r = run_cli(base_env, None, "--json", "--data-dir", str(other), "tree")
    assert r.rc == 0 and "x" in _strings(json.loads(r.out))
    r = run_cli(base_env, None, "tree", "--json", "--data-dir", str(other))
    assert r.rc == 0 and "x" in _strings(json.loads(r.out))
    assert not store.exists()


# ---------------------------------------------------------------- tree


def test_tree_yaml(cli):
    assert cli("tree").out == "root: []\n"
    cli("write", input="[[project_overview]] [[tech_decisions]]")
    cli("write", "project_overview", input="[[architecture]] [[dependencies]]")
    cli("write", "architecture", input="[[db_schema]] [[service_layer]]")
    r = cli("tree")
    assert r.rc == 0
    assert r.out == (
        "root:\n"
        "  - project_overview:\n"
        "    - architecture:\n"
        "      - db_schema\n"
        "      - service_layer\n"
        "    - dependencies\n"
        "  - tech_decisions\n"
    )


def test_tree_json(cli):
    cli("write", input="[[a]] [[b]]")
    cli("write", "a", input="[[a1]]")
    r = cli("--json", "tree")
    assert r.rc == 0
    data = json.loads(r.out)
    strings = _strings(data)
    for i in ("root", "a", "a1", "b"):
        assert i in strings
    # link order survives: a before a1 before b in document order of the JSON text
    assert r.out.index('"a"') < r.out.index('"a1"') < r.out.index('"b"')


# ---------------------------------------------------------------- validate


def test_validate_healthy(cli):
    cli("write", input="[[a]] [[b/c]]")
    cli("write", "a", input="---\nscope: global\n---\n[[a1]]")
    r = cli("validate")
    assert r.rc == 0, (r.out, r.err)
    r = cli("--json", "validate")
    assert r.rc == 0
    json.loads(r.out)


def test_validate_fresh_store(cli):
    assert cli("validate").rc == 0


@pytest.mark.parametrize(
    ("name", "files", "bad_id"),
    [
        ("orphan", {"lost.md": "# nobody links me\n"}, "lost"),
        ("orphan_in_folder", {"deep/lost.md": "# nobody links me\n"}, "deep/lost"),
        ("several_parents", {"root.md": "[[a]] [[b]]", "b.md": "[[a]]"}, "a"),
        ("root_linked", {"a.md": "[[root]]"}, "root"),
        ("invalid_utf8", {"a.md": b"\xff\xfe\xfd"}, "a"),
        ("invalid_front_matter", {"a.md": "---\nsummary: [oops\n---\nbody\n"}, "a"),
        ("invalid_link", {"a.md": "bad [[my note]] link\n"}, "a"),
        ("cycle", {"a.md": "[[b]]", "b.md": "[[c]]", "c.md": "[[b]]"}, "b"),
    ],
)
def test_validate_reports_errors(cli, store, name, files, bad_id):
    cli("write", input="[[a]] [[b]]")
    for rel, data in files.items():
        write_file(store, rel, data)
    before = snapshot(store)
    r = cli("validate")
    assert r.rc == 1, (name, r.out, r.err)
    assert bad_id in (r.out + r.err)
    rj = cli("--json", "validate")
    assert rj.rc == 1
    assert any(bad_id in s for s in _strings(json.loads(rj.out)))
    # validate reports, it never deletes or rewrites
    assert snapshot(store) == before


def test_validate_does_not_touch_files(cli, store):
    cli("write", input="[[a]]")
    write_file(store, "orphan.md", "keep me")
    before = snapshot(store, include_meta=False)
    cli("validate")
    cli("validate")
    assert snapshot(store) == before
    assert (store / "orphan.md").read_text() == "keep me"


# ---------------------------------------------------------------- status


def test_status(cli, store):
    cli("write", input="[[a]] [[b]]")
    cli("write", "a", input="12345")
    r = cli("status")
    assert r.rc == 0
    assert str(store) in r.out
    assert "3" in r.out
    rj = cli("--json", "status")
    assert rj.rc == 0
    data = json.loads(rj.out)
    assert str(store) in _strings(data)
    assert 3 in _numbers(data)
    total = sum(len(v) for v in snapshot(store).values())
    assert total in _numbers(data)
    # No embedding model: BM25 only, and both forms say so.
    assert data["embeddings"] is None
    assert "embeddings: off (BM25 only; see --embedding-model)\n" in r.out
    # A command commits its change before it exits: no history backlog.
    assert re.search(r"^history: recording every change \(every change has its version; \d+ pack files\)$", r.out, re.M), r.out


def test_an_embedding_model_needs_a_build_with_embeddings(cli, store, tmp_path):
    """A plain build refuses the model setting rather than ignore it."""
    for args, env in [(["--embedding-model", str(tmp_path)], None), ([], {"MEMTREE_EMBEDDING_MODEL": str(tmp_path)})]:
        r = cli(*args, "search", "x", env=env)
        assert r.rc != 0 and r.out == "", (r.rc, r.out)
        assert "built without embeddings: install it with `--features embeddings`" in r.err, r.err
    assert not store.exists()


def test_status_on_new_store_creates_it(cli, store):
    r = cli("status")
    assert r.rc == 0
    assert (store / "root.md").read_text() == "# Memory\n"


def test_unknown_subcommand_fails(cli, store):
    r = cli("frobnicate")
    assert r.rc != 0
    assert r.out == ""
    assert not store.exists() or (store / "root.md").exists()


def test_validate_ignores_non_document_files(cli, store):
    """A store under git (its own audit trail) or holding other files stays healthy."""
    cli("write", input="[[a]]")
    write_file(store, ".git/HEAD", "ref: refs/heads/main\n")
    write_file(store, ".git/objects/ab/cdef.md", "not a document")
    write_file(store, "notes.txt", "plain text, not Markdown")
    write_file(store, ".obsidian/workspace.json", "{}")
    r = cli("validate")
    assert r.rc == 0, (r.out, r.err)
    assert cli("tree").out == "root:\n  - a\n"


def test_validate_case_collision_on_disk(cli, store):
    cli("write", input="[[foo]]")
    write_file(store, "Foo.md", "twin")
    r = cli("validate")
    assert r.rc == 1
    assert "Foo" in r.out + r.err and "foo" in r.out + r.err


def test_ls_and_lifecycle_commands(cli):
    assert cli("write", input="# Memory\n- [[a]]\n- [[b]]\n").rc == 0
    assert cli("write", "a", input="# A\n- [[a1]]\n").rc == 0
    r = cli("ls", "--json")
    assert r.rc == 0, r.err
    data = json.loads(r.out)
    by_id = {d["id"]: d for d in data["documents"]}
    assert set(by_id) == {"root", "a", "a1", "b"}
    assert by_id["a"]["parent"] == "root" and by_id["a"]["children"] == ["a1"] and by_id["root"]["parent"] is None
    assert by_id["a1"]["bytes"] == len("# a1\n\n")
    assert sorted((e["from"], e["to"]) for e in data["edges"]) == [("a", "a1"), ("root", "a"), ("root", "b")]
    plain = cli("ls")
    assert plain.rc == 0 and plain.out.splitlines()[0].startswith("a\t") and "parent root\t1 children" in plain.out
    r = cli("lifecycle", "b", "--why", "replaced", "--superseded-by", "a")
    assert r.rc == 0 and r.out == "Succeeded\nb: status: deprecated, superseded_by: a\n", (r.out, r.err)
    r = cli("lifecycle", "b", "--why", "x", "--status", "gone")
    assert r.rc == 1 and r.err.startswith('Error: status: "gone" is not active or deprecated'), r.err


def test_split_and_remember_commands(cli, store):
    assert cli("write", input="# Memory\n- [[big]]\n").rc == 0
    assert cli("write", "big", input="# Big\nintro\n## Setup\nInstall it.\n## Usage\nRun it.\n").rc == 0
    r = cli("split", "big", "--into", "big/howto=Setup,Usage")
    assert (r.rc, r.out) == (0, "Succeeded\nSplit into: big/howto\n"), r.err
    r = cli("remember", "--document", "big", "--section", "Facts", input="Runs on port 8080")
    assert (r.rc, r.out) == (0, "Added to big#Facts\n"), r.err
    r = cli("remember", "--document", "big", "--section", "Facts", input="runs on port 8080")
    assert r.out.startswith("Skipped: big#Facts already says: - Runs on port 8080"), r.out
    r = cli("split", "big", "--into", "nonsense")
    assert r.rc == 1 and r.err.startswith('Error: into: "nonsense" is not CHILD=HEADING,HEADING'), r.err
    # The engine's refusal of a plan names the flag the command takes.
    r = cli("split", "big/howto", "--into", "big/howto/x=Nowhere")
    assert r.rc == 1 and r.err.startswith('Error: into: no single section "Nowhere"'), r.err
    assert cli("validate").rc == 0


def test_edit_command(cli, store):
    assert cli("write", input="# Memory\n## Notes\nold note\n").rc == 0
    r = cli("edit", "root", "--old", "old note", "--new", "new note with [[child]]")
    assert (r.rc, r.out) == (0, "Succeeded\nCreated: child\n"), r.err
    r = cli("edit", "root", "--section", "Notes", input="replaced body with [[child]]")
    assert (r.rc, r.out) == (0, "Succeeded\n"), r.err
    assert docs(store)["root"] == "# Memory\n## Notes\nreplaced body with [[child]]\n"
    r = cli("edit", "root", "--old", "absent", "--new", "x")
    assert (r.rc, r.err.strip()) == (1, "Error: old: not found in root")


def test_validate_reports_conflicting_memory(cli):
    assert cli("write", input="# Memory\n- [[infra]]\n- [[notes]]\n- [[old]]\n").rc == 0
    assert cli("write", "infra", input="# Infra\n## Database\nStaging PostgreSQL listens on port 5433.\n").rc == 0
    assert cli("write", "notes", input="# Notes\n## Databases\nStaging PostgreSQL listens on port 6543.\n").rc == 0
    r = cli("--json", "validate")
    assert r.rc == 0, "a conflict is a warning, not an unhealthy store"
    conflicts = [f for f in json.loads(r.out)["findings"] if "conflict" in f["message"]]
    assert [f["message"] for f in conflicts] == [
        'possible conflict: [infra#Database] says "5433", [notes#Databases] says "6543"; '
        "keep one (edit, or lifecycle superseded_by)"
    ]
    assert conflicts[0]["severity"] == "warning"
    # Once the stale one is deprecated, the current memory agrees with itself.
    assert cli("lifecycle", "notes", "--status", "deprecated", "--why", "port moved").rc == 0
    assert "conflict" not in cli("validate").out


def _messages(r) -> list[str]:
    assert r.rc == 0, r.err
    return [line.split(" ", 3)[3] for line in r.out.splitlines()]


def test_copy_brings_the_documents_and_every_version_into_a_new_store(cli, store, base_env, tmp_path):
    assert cli("write", input="# M\n- [[a]]\n- [[b]]\n").rc == 0
    assert cli("write", "a", input="# a\none\n").rc == 0
    assert cli("write", "a", input="# a\ntwo\n").rc == 0
    assert cli("write", input="# M\n- [[a]]\n").rc == 0
    copy = tmp_path / "copy"
    r = run_cli(base_env, None, "copy", str(store), str(copy))
    assert r.rc == 0 and r.out.startswith("Copied 2 documents and 5 versions"), (r.out, r.err)
    assert docs(copy) == docs(store)
    theirs = _messages(run_cli(base_env, copy, "history"))
    assert theirs == _messages(cli("history")), theirs
    # An earlier version is there to restore.
    assert run_cli(base_env, copy, "restore", "b").rc == 0
    assert run_cli(base_env, copy, "read", "b").out == "# b\n\n"
    # Never over a store that holds documents, nor onto itself.
    again = run_cli(base_env, None, "copy", str(store), str(copy))
    assert again.rc == 1 and "already holds documents" in again.err, again.err
    assert run_cli(base_env, None, "copy", str(store), str(store)).rc == 1
    only = tmp_path / "only"
    r = run_cli(base_env, None, "copy", "--no-history", str(store), str(only))
    assert r.rc == 0 and "and 0 versions" in r.out, r.out
    assert docs(only) == docs(store)
