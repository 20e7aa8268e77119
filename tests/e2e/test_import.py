"""`memtree import` and `export` through the binary: a generated Obsidian vault
of 320 notes (nested folders, name collisions, non-ASCII and spaces, embeds,
aliases, headings, block refs, tags, attachments), every link counted before
and after against the generator's own manifest, then searched from an agent;
an export imported back is the same store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO_ROOT, docs, run_cli

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("vault") / "My Vault"
    subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "gen_vault.py"), str(root)], check=True,
                   capture_output=True)
    return root, json.loads((root / ".vault-manifest.json").read_text())


def imported(base_env: dict, store: Path, *args: str) -> dict:
    r = run_cli(base_env, store, "--json", "import", *args, timeout=120)
    assert r.rc == 0, r.err
    return json.loads(r.out)


def test_a_vault_keeps_every_note_and_every_link(base_env, store, vault):
    root, manifest = vault
    report = imported(base_env, store, str(root))
    assert report["format"] == "obsidian" and report["written"]
    wiki, md = manifest["wikilinks"], manifest["markdown_links"]
    expected = {
        "to_notes": wiki["resolved_to_note"] + md["to_note"],
        "to_files": wiki["resolved_to_attachment"] + md["images"],
        "in_note": wiki["same_note"],
        "unresolved": wiki["unresolved"] + md["unresolved"],
    }
    assert report["links"]["before"] == expected
    assert report["links"]["after"] == expected, "no link of the source is lost"
    notes = [e for e in report["documents"] if not e["from"].endswith("/")]
    assert len([e for e in notes if e["from"].endswith(".md")]) == manifest["counts"]["notes"]
    assert report["skipped"] == []
    # Name collisions: one file name in several folders, several documents.
    meeting = [e["id"] for e in notes if e["from"].endswith("/Meeting Notes.md")]
    assert len(meeting) == len(set(meeting)) >= 2
    # Attachments copied beside the notes, not indexed as documents.
    for a in report["attachments"]:
        assert (store / a["to"]).is_file(), a
    assert (store / "attachments" / "diagram.png").read_bytes() == (root / "attachments" / "diagram.png").read_bytes()

    r = run_cli(base_env, store, "--json", "validate")
    assert r.rc == 0, r.out
    findings = json.loads(r.out)["findings"]
    assert not [f for f in findings if f["severity"] == "error"], findings
    broken = [f for f in findings if f["kind"] == "broken_reference"]
    assert 0 < len(broken) <= expected["unresolved"]

    r = run_cli(base_env, store, "--json", "ls")
    kinds = [e["kind"] for e in json.loads(r.out)["edges"]]
    assert kinds.count("child") == len(report["documents"])
    assert kinds.count("reference") > 1000


async def test_an_agent_finds_the_vault_s_notes(serve, base_env, store, vault):
    root, manifest = vault
    report = imported(base_env, store, str(root))
    # A folder's own note is reported with its folder: `Folder/ + Folder.md`.
    by_path = {e["from"].split(" + ")[-1]: e["id"] for e in report["documents"]}
    async with serve() as m:
        for probe, path in manifest["probes"].items():
            r = await m.call("search", {"query": probe, "json": True})
            hits = json.loads(r.text)
            assert hits and hits[0]["id"] == by_path[path], (probe, path, hits[:2])
        text = (await m.call("read_document", {"id": by_path["Areas/Japan/日本語メモ.md"]})).text
        assert "日本語" in text


def test_a_dry_run_writes_nothing(base_env, store, vault, tmp_path):
    root, _ = vault
    assert run_cli(base_env, store, "status").rc == 0
    before = docs(store)
    report = imported(base_env, store, "--dry-run", str(root))
    assert not report["written"] and len(report["documents"]) > 300
    assert docs(store) == before
    assert not (store / "attachments").exists()


def test_an_export_imported_back_is_the_same_store(base_env, store, vault, tmp_path):
    root, _ = vault
    imported(base_env, store, str(root))
    out = tmp_path / "export"
    r = run_cli(base_env, store, "export", str(out))
    assert r.rc == 0, r.err
    again = tmp_path / "again"
    report = imported(base_env, again, str(out))
    assert report["format"] == "structured-memory"
    assert docs(again) == docs(store)
    assert (again / "attachments" / "diagram.png").is_file()

    vault_out = tmp_path / "vault-out"
    assert run_cli(base_env, store, "export", "--format", "obsidian", str(vault_out)).rc == 0
    assert json.loads((vault_out / ".obsidian" / "app.json").read_text())["useMarkdownLinks"] is True
    json_out = tmp_path / "json-out"
    assert run_cli(base_env, store, "export", "--format", "json", str(json_out)).rc == 0
    exported = json.loads((json_out / "memory.json").read_text())["documents"]
    assert {d["id"]: d["text"] for d in exported} == docs(store)
    assert all("references" in d and "children" in d for d in exported)


def test_import_under_a_document_of_a_store_in_use(base_env, store, vault):
    root, _ = vault
    assert run_cli(base_env, store, "write", "root", input="# M\n- [[notes]]\n").rc == 0
    report = imported(base_env, store, "--under", "notes", str(root))
    assert all(e["id"].startswith("notes/") for e in report["documents"])
    tree = run_cli(base_env, store, "tree").out
    assert tree.startswith("root:\n  - notes:\n    - notes/archive:")
    # Again: every id is taken now, so every one is numbered.
    again = imported(base_env, store, "--under", "notes", str(root))
    assert {e["id"] for e in again["documents"]}.isdisjoint({e["id"] for e in report["documents"]})


def test_bad_arguments_are_refused(base_env, store, tmp_path):
    r = run_cli(base_env, store, "import", str(tmp_path / "missing"))
    assert r.rc == 1 and r.err.startswith("Error: path: "), r
    r = run_cli(base_env, store, "import", "--under", "nope", str(tmp_path))
    assert r.rc == 1 and r.err.startswith("Error: under: nope not found"), r
    r = run_cli(base_env, store, "import", "--from", "evernote", str(tmp_path))
    assert r.rc == 2 and "evernote" in r.err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    r = run_cli(base_env, store, "export", str(tmp_path / "full"))
    assert r.rc == 1 and "not empty" in r.err, r


# ------------------------------------------------------------ the seeds' own stores

SEEDS = REPO_ROOT / "tests" / "fixtures" / "import"


def tree_of(text: str) -> dict:
    """`memtree tree` as nested sets, so that sibling order does not matter."""
    import yaml

    def nested(items) -> dict:
        out = {}
        for item in items or []:
            if isinstance(item, dict):
                (name, children), = item.items()
                out[name] = nested(children)
            else:
                out[item] = {}
        return out

    return nested(yaml.safe_load(text)["root"])


@pytest.mark.parametrize("fixture, given, fmt, expected, probes", [
    ("structured-memory", "structured-memory", "structured-memory",
     {"project_overview": {"architecture": {"db_schema": {}, "service_layer": {}}, "dependencies": {}, "api_design": {}},
      "tech_decisions": {"decision_001": {}, "decision_002": {}}, "current_tasks": {}},
     {"sm-probe-db-schema": "db_schema", "sm-probe-decision-001": "decision_001"}),
    ("v1-hierarchy", "v1-hierarchy", "structured-memory",
     {"global": {}, "knowledge": {"knowledge/python": {"knowledge/python/async": {}, "knowledge/python/testing": {}},
                                  "knowledge/typescript": {}},
      "profile": {"profile/preferences": {}},
      "projects": {"projects/personal_website": {},
                   "projects/silica": {"projects/silica/architecture": {}, "projects/silica/features": {}}}},
     {"v1-probe-silica-architecture": "projects/silica/architecture", "v1-probe-preferences": "profile/preferences"}),
    ("layered", "layered", "layered",
     {"claude": {"claude/claude-specific": {}}, "cursor": {"cursor/cursor-config": {}}, "development": {},
      "hermes": {"hermes/hermes-setup": {}}, "shared": {"shared/coding-standards": {}, "shared/infrastructure": {}}},
     {"lm-probe-proxy": "shared/infrastructure", "lm-probe-cursor": "cursor/cursor-config"}),
    ("dmm", "dmm", "dmm",
     {"agent": {"agent/tone": {}, "agent/write_back_workflow": {}}, "boot": {},
      "deprecated": {"deprecated/old_deploy_rule": {}}, "ephemeral": {"ephemeral/flaky_ci_runner": {}},
      "global": {"global/naming_conventions": {}, "global/python_style": {}}, "policy": {},
      "project": {"project/conflict_line_length": {}, "project/constraints": {"project/constraints/no_background_jobs": {}},
                  "project/ruff_config": {}}},
     {"dmm-probe-boot": "boot", "dmm-probe-tone": "agent/tone", "dmm-probe-ruff": "project/ruff_config"}),
])
def test_each_seed_s_store_keeps_its_structure(base_env, store, fixture, given, fmt, expected, probes):
    source = SEEDS / given
    plan = imported(base_env, store, "--dry-run", str(source))
    assert plan["format"] == fmt and not plan["written"], plan
    assert not (store / "root.md").exists() or docs(store) == {"root": "# Memory\n"}, "a dry run writes nothing"
    report = imported(base_env, store, str(source))
    assert report["links"]["before"] == report["links"]["after"]
    assert tree_of(run_cli(base_env, store, "tree").out) == expected
    r = run_cli(base_env, store, "--json", "validate")
    assert r.rc == 0 and not [f for f in json.loads(r.out)["findings"] if f["severity"] == "error"], r.out
    for probe, doc in probes.items():
        hits = json.loads(run_cli(base_env, store, "--json", "search", probe).out)
        assert hits and hits[0]["id"] == doc, (probe, hits[:1])


def test_seed_specifics_survive_the_import(base_env, tmp_path):
    def into(name: str, fixture: str) -> Path:
        store = tmp_path / name
        imported(base_env, store, str(SEEDS / fixture))
        return store

    sm = into("sm", "structured-memory")
    source = SEEDS / "structured-memory" / "structured_memory"
    assert docs(sm) == {p.stem: p.read_text() for p in source.glob("*.md")}, "byte for byte"

    layered = into("layered", "layered")
    assert "summary: Server Configuration" in (layered / "shared" / "infrastructure.md").read_text()
    hits = json.loads(run_cli(base_env, layered, "--json", "search", "PostgreSQL").out)
    assert hits and all(h["id"] == "shared/infrastructure" and "14" not in h["excerpt"] for h in hits), \
        "the .bak is not imported"

    dmm = into("dmm", "dmm")
    assert (dmm / "agent" / "tone.md").read_text().startswith("---\nscope: agent\n---\n")
    assert "status: deprecated" in (dmm / "deprecated" / "old_deploy_rule.md").read_text()
    pack = run_cli(base_env, dmm, "recall", "deploy rule").out
    assert "old_deploy_rule#" not in pack, "deprecated memory stays out of packs"

    v1 = into("v1", "v1-hierarchy")
    testing = (v1 / "knowledge" / "python" / "testing.md").read_text()
    assert testing.startswith("---\nsummary: pytest + pytest-asyncio conventions used in Silica\n---\n")
    assert "1717500000" not in testing, "times stay out of documents"
