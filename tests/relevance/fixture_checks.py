"""Checks shared by the relevance fixtures' check_fixture.py scripts (notes here, conversations/ below).

What both do the same way: the error report, ids, reading a store into
documents, the `[[id]]` link tree rooted at `root`, reading queries.yaml and
the checks every query entry gets, the command-line options for memtree, and
running `memtree validate` on a temporary copy of a store. Each script keeps
what is its own (document format, query fields, counts, statistics).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
WIKI = re.compile(r"(?<!\\)\[\[([^\[\]|\n]+)(?:\|[^\[\]\n]*)?\]\]")


class Report:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, where: str, what: str) -> None:
        self.errors.append(f"{where}: {what}")


def valid_id(doc_id: str) -> str | None:
    """Returns why `doc_id` is not a valid id, or None."""
    if not doc_id:
        return "empty id"
    if len(doc_id.encode()) > 128:
        return f"longer than 128 bytes ({len(doc_id.encode())})"
    for segment in doc_id.split("/"):
        if not segment:
            return "empty segment"
        if not SEGMENT.fullmatch(segment):
            return f"invalid characters in segment {segment!r}"
    return None


def load_store(
    store: Path,
    report: Report,
    describe: Callable[[str, bytes, str, Report], dict],
    max_bytes: int | None = None,
) -> dict[str, dict]:
    """Reads every `<id>.md` under `store` (but .memtree/): checks the id, that
    no two ids differ only in letter case, the size (under `max_bytes` when
    given) and UTF-8; `describe(doc_id, raw, text, report)` makes a document's
    entry of the returned {id: document}."""
    docs: dict[str, dict] = {}
    lower: dict[str, str] = {}
    if not store.is_dir():
        report.error(str(store), "store folder is missing")
        return docs
    for path in sorted(store.rglob("*")):
        rel = path.relative_to(store).as_posix()
        if rel.startswith(".memtree") or path.is_dir():
            continue
        if not rel.endswith(".md"):
            report.error(rel, "not a .md file")
            continue
        doc_id = rel[: -len(".md")]
        why = valid_id(doc_id)
        if why:
            report.error(rel, f"invalid id {doc_id!r}: {why}")
            continue
        if doc_id.lower() in lower:
            report.error(rel, f"id differs only in letter case from {lower[doc_id.lower()]!r}")
        lower[doc_id.lower()] = doc_id
        raw = path.read_bytes()
        if max_bytes is not None and len(raw) >= max_bytes:
            report.error(doc_id, f"{len(raw)} bytes, must stay under {max_bytes}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            report.error(doc_id, f"not UTF-8: {e}")
            continue
        docs[doc_id] = describe(doc_id, raw, text, report)
    return docs


def check_tree(docs: dict[str, dict], report: Report, many_parents_note: str = "") -> None:
    """The `links` of `docs` form a tree rooted at `root`: every other document
    has exactly one parent, no link is invalid, missing, to root or to itself,
    everything is reachable from root. `many_parents_note` is appended to the
    error for a document with several parents."""
    if "root" not in docs:
        report.error("root", "root.md is missing")
        return
    parents: dict[str, list[str]] = collections.defaultdict(list)
    for doc_id, doc in docs.items():
        for target in doc["links"]:
            why = valid_id(target)
            if why:
                report.error(doc_id, f"link [[{target}]] is not a valid id: {why}")
            elif target == doc_id:
                report.error(doc_id, f"links to itself [[{target}]]")
            elif target == "root":
                report.error(doc_id, "links to root")
            elif target not in docs:
                report.error(doc_id, f"links to missing document [[{target}]]")
            else:
                parents[target].append(doc_id)
    for doc_id in docs:
        if doc_id == "root":
            continue
        ps = parents.get(doc_id, [])
        if not ps:
            report.error(doc_id, "has no parent (orphan)")
        elif len(ps) > 1:
            report.error(doc_id, f"has {len(ps)} parents: {', '.join(ps)}{many_parents_note}")
    reachable = set()
    stack = ["root"]
    while stack:
        cur = stack.pop()
        if cur in reachable:
            continue
        reachable.add(cur)
        stack.extend(t for t in docs[cur]["links"] if t in docs and t != "root")
    for doc_id in sorted(set(docs) - reachable):
        if parents.get(doc_id):
            report.error(doc_id, "not reachable from root (cycle)")


# ------------------------------------------------------------------ queries


def load_queries(path: Path, report: Report) -> list:
    """The entries of queries.yaml, or [] (with an error) when it is missing,
    not YAML or not a list."""
    if not path.is_file():
        report.error(str(path), "queries.yaml is missing")
        return []
    try:
        entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        report.error("queries.yaml", f"not valid YAML: {e}")
        return []
    if not isinstance(entries, list):
        report.error("queries.yaml", "must be a YAML list")
        return []
    return entries


def query_entries(
    entries: list, report: Report, kinds: set[str], keys: tuple[str, ...], exact: bool
) -> Iterator[tuple[str, dict]]:
    """Checks what every query entry needs: a mapping, its keys (exactly `keys`
    when `exact`, else none but `keys`), a non-empty unique query and a known
    kind. Yields (where, entry) for the entries with a query, for the
    fixture's own checks."""
    seen: set[str] = set()
    for n, entry in enumerate(entries, 1):
        where = f"queries.yaml entry {n}"
        if not isinstance(entry, dict):
            report.error(where, "not a mapping")
            continue
        if exact:
            if set(entry) != set(keys):
                report.error(where, f"keys {sorted(entry)}, need exactly {', '.join(keys)}")
        else:
            unknown = set(entry) - set(keys)
            if unknown:
                report.error(where, f"unknown keys {sorted(unknown)}")
        q = entry.get("query")
        if not isinstance(q, str) or not q.strip():
            report.error(where, "query must be a non-empty string")
            continue
        where = f"{where} ({q!r})"
        if q in seen:
            report.error(where, "duplicate query")
        seen.add(q)
        if entry.get("kind") not in kinds:
            report.error(where, f"kind {entry.get('kind')!r} is not one of {sorted(kinds)}")
        yield where, entry


# ------------------------------------------------------------------ memtree


def argument_parser(doc: str, repo: Path) -> argparse.ArgumentParser:
    """The options both scripts take: --memtree PATH and --no-memtree."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memtree", type=Path, default=repo / "target" / "debug" / "memtree")
    ap.add_argument("--no-memtree", action="store_true", help="skip `memtree validate`")
    return ap


def memtree_validate(args: argparse.Namespace, store: Path, prefix: str, report: Report) -> str:
    """Runs `memtree validate` as the options ask; returns the line to print."""
    if args.no_memtree:
        return "skipped"
    if args.memtree.is_file() and os.access(args.memtree, os.X_OK):
        return run_memtree(args.memtree, store, prefix, report)
    return f"skipped ({args.memtree} not found)"


def run_memtree(binary: Path, store: Path, prefix: str, report: Report) -> str:
    """`memtree validate` on a copy of `store` in a temporary folder named
    `prefix…`; requires exit status 0 and "0 findings". Returns its last line."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy, ignore=shutil.ignore_patterns(".memtree"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
        env.pop("DATA_DIR", None)
        env.pop("ROOT_TEMPLATE", None)
        env["HOME"] = tmp
        # A fresh copy has no search index yet; build it first when this
        # memtree has `reindex`, so that an out-of-date index is no finding.
        helptext = subprocess.run([str(binary), "--help"], capture_output=True, text=True, env=env)
        if re.search(r"^\s+reindex\b", helptext.stdout, flags=re.M):
            idx = subprocess.run(
                [str(binary), "--data-dir", str(copy), "reindex"],
                capture_output=True, text=True, env=env, timeout=300,
            )
            if idx.returncode != 0:
                report.error("memtree reindex", f"exit status {idx.returncode}:\n{idx.stderr.strip()}")
        proc = subprocess.run(
            [str(binary), "--data-dir", str(copy), "validate"],
            capture_output=True, text=True, env=env, timeout=300,
        )
        out = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            report.error("memtree validate", f"exit status {proc.returncode}:\n{out}")
        elif not re.search(r"\b0 findings\b", out):
            report.error("memtree validate", f"reported findings:\n{out}")
        return out.splitlines()[-1] if out else ""


# ------------------------------------------------------------------- output


def bytes_line(sizes: list[int]) -> str:
    """The statistics line for the sorted document sizes."""
    return (f"bytes: min {sizes[0] if sizes else 0}, median {sizes[len(sizes) // 2] if sizes else 0}, "
            f"max {sizes[-1] if sizes else 0}, total {sum(sizes)}")


def finish(report: Report) -> int:
    """Prints the verdict and the problems; returns the exit status."""
    if report.errors:
        print(f"\nFAILED: {len(report.errors)} problem(s)")
        for e in report.errors:
            print(f"  - {e}")
        return 1
    print("\nOK")
    return 0
