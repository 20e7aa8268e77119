#!/usr/bin/env python3
"""Checks the relevance fixture: the store under store/ and queries.yaml.

    /work/main/.venv/bin/python tests/relevance/check_fixture.py [--memtree PATH | --no-memtree]

Verifies that
  * every file is `<id>.md` with a valid id (segments of [A-Za-z0-9_-]+ joined
    by '/', at most 128 bytes), no two ids differ only in letter case, and
    every file is UTF-8;
  * front-matter (a block between `---` lines at the very top) is a YAML
    mapping and the known keys have valid values (summary, tags, scope,
    priority, confidence, status, expires);
  * the `[[id]]` / `[[id|label]]` links outside code spans and code blocks form
    a tree rooted at `root`: every other document has exactly one parent, no
    document links to root or to itself, no link points to a missing document
    or is not a valid id, everything is reachable from root;
  * queries.yaml is a list of {query, kind, expect, absent?}: every expected
    doc exists, every expected heading exists exactly once in its doc, no
    expected doc is stale, every `absent` doc exists and is stale (deprecated,
    or ephemeral memory whose `expires` date has passed);
  * the counts the set promises: >= 220 documents, >= 70 queries, >= 12
    Japanese documents.

When a memtree binary is found (default: target/debug/memtree under the repo),
it also runs `memtree --data-dir <temporary copy of the store> validate` and
requires exit status 0 and "0 findings".

Prints statistics at the end. Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
STORE = HERE / "store"
QUERIES = HERE / "queries.yaml"
REPO = HERE.parent.parent

MIN_DOCS = 220
MIN_QUERIES = 70
MIN_JAPANESE_DOCS = 12
JAPANESE_DOC_MIN_CHARS = 100  # kana/kanji characters for a doc to count as Japanese
LONG_SECTION_WORDS = 400

KINDS = {"keyword", "paraphrase", "question", "cjk", "digits", "quotes", "syntax", "typo"}
SCOPES = {"global", "agent", "project", "ephemeral"}
SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}(?:$|[T ])")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
WIKI = re.compile(r"(?<!\\)\[\[([^\[\]|\n]+)(?:\|[^\[\]\n]*)?\]\]")
JAPANESE_CHAR = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u4e00-\u9fff\u3005\u30fc]")


class Report:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, where: str, what: str) -> None:
        self.errors.append(f"{where}: {what}")


# ---------------------------------------------------------------- documents


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


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(yaml, body) the way memtree splits them: an opening `---` line and the
    next `---` or `...` line; an unclosed opening line is a thematic break."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None, text


def scalar_string(value: object) -> str | None:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return None


def check_front_matter(where: str, raw: str, report: Report) -> dict:
    """Parses and validates a front-matter block; returns the known keys."""
    try:
        data = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as e:
        report.error(where, f"front-matter is not valid YAML: {e}")
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        report.error(where, "front-matter is not a mapping")
        return {}
    fm: dict = {}
    get = {k: v for k, v in data.items() if v is not None}
    if "summary" in get:
        s = scalar_string(get["summary"])
        if s is None or "\n" in s:
            report.error(where, "summary must be one line of text")
        else:
            fm["summary"] = s
    if "tags" in get:
        tags = get["tags"] if isinstance(get["tags"], list) else [get["tags"]]
        strs = [scalar_string(t) for t in tags]
        if any(t is None for t in strs):
            report.error(where, "tags must be a list of words")
        else:
            fm["tags"] = strs
    if "scope" in get:
        if get["scope"] not in SCOPES:
            report.error(where, f"scope {get['scope']!r} is not one of {sorted(SCOPES)}")
        else:
            fm["scope"] = get["scope"]
    if "priority" in get:
        p = get["priority"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            report.error(where, f"priority {p!r} is not a number from 0 to 1")
        else:
            fm["priority"] = float(p)
    if "confidence" in get:
        if get["confidence"] not in ("stable", "tentative"):
            report.error(where, f"confidence {get['confidence']!r} is not stable or tentative")
        else:
            fm["confidence"] = get["confidence"]
    if "status" in get:
        if get["status"] not in ("active", "deprecated"):
            report.error(where, f"status {get['status']!r} is not active or deprecated")
        else:
            fm["status"] = get["status"]
    if "expires" in get:
        s = scalar_string(get["expires"])
        if s is None or not DATE_PREFIX.match(s):
            report.error(where, f"expires {get['expires']!r} is not a date (YYYY-MM-DD)")
        else:
            try:
                fm["expires"] = dt.date.fromisoformat(s[:10])
            except ValueError:
                report.error(where, f"expires {s!r} is not a real date")
    return fm


def markdown_blocks(body: str):
    """Yields ("code", lines) and ("text", lines) blocks of a Markdown body.

    Fenced blocks (``` or ~~~, at any indentation so that fences inside list
    items count) and indented code blocks (4+ spaces after a blank line, not
    inside a list) are code; everything else is grouped into text blocks
    separated by blank lines, which is where code spans can live.
    """
    lines = body.splitlines()
    i = 0
    text: list[str] = []
    in_list = False
    prev_blank = True
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
            if text:
                yield "text", text
                text = []
            fence_char, fence_len = m.group(2)[0], len(m.group(2))
            code = [line]
            i += 1
            while i < len(lines):
                close = FENCE.match(lines[i])
                code.append(lines[i])
                i += 1
                if (
                    close
                    and close.group(2)[0] == fence_char
                    and len(close.group(2)) >= fence_len
                    and not close.group(3).strip()
                ):
                    break
            yield "code", code
            prev_blank = False
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        if line.strip() and indent >= 4 and prev_blank and not in_list:
            if text:
                yield "text", text
                text = []
            code = []
            while i < len(lines) and (
                not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip(" \t")) >= 4
            ):
                code.append(lines[i])
                i += 1
            yield "code", code
            prev_blank = not code[-1].strip()
            continue
        if not line.strip():
            if text:
                yield "text", text
                text = []
            prev_blank = True
        else:
            if LIST_ITEM.match(line):
                in_list = True
            elif indent == 0:
                in_list = False
            text.append(line)
            prev_blank = False
        i += 1
    if text:
        yield "text", text


def strip_code_spans(text: str) -> str:
    """Replaces code spans (backtick runs matched by an equal run) with spaces."""
    out = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == "`":
            j = i
            while j < len(text) and text[j] == "`":
                j += 1
            run = text[i:j]
            k = j
            close = -1
            while k < len(text):
                if text[k] == "`":
                    m = k
                    while m < len(text) and text[m] == "`":
                        m += 1
                    if m - k == len(run):
                        close = k
                        break
                    k = m
                else:
                    k += 1
            if close < 0:
                out.append(run)
                i = j
            else:
                out.append(" " * (close + len(run) - i))
                i = close + len(run)
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def parse_document(body: str) -> tuple[list[str], list[tuple[int, str, list[str]]]]:
    """Returns (links in order, sections) of a body. A section is
    (level, heading text, body lines including code)."""
    links: list[str] = []
    sections: list[tuple[int, str, list[str]]] = []
    current: tuple[int, str, list[str]] | None = None
    preamble: list[str] = []
    for kind, lines in markdown_blocks(body):
        if kind == "code":
            (current[2] if current else preamble).extend(lines)
            continue
        paragraph: list[str] = []
        for line in lines:
            m = ATX.match(line)
            if m:
                if paragraph:
                    links.extend(WIKI.findall(strip_code_spans("\n".join(paragraph))))
                    paragraph = []
                heading = (m.group(2) or "").strip()
                links.extend(WIKI.findall(strip_code_spans(heading)))
                current = (len(m.group(1)), heading, [])
                sections.append(current)
            else:
                paragraph.append(line)
                (current[2] if current else preamble).append(line)
        if paragraph:
            links.extend(WIKI.findall(strip_code_spans("\n".join(paragraph))))
    seen: list[str] = []
    for link in links:
        link = link.strip()
        if link not in seen:
            seen.append(link)
    return seen, sections


def japanese_chars(text: str) -> int:
    return len(JAPANESE_CHAR.findall(text))


def section_words(lines: list[str]) -> int:
    return len(" ".join(lines).split())


# ------------------------------------------------------------------- checks


def load_store(report: Report) -> dict[str, dict]:
    docs: dict[str, dict] = {}
    lower: dict[str, str] = {}
    if not STORE.is_dir():
        report.error(str(STORE), "store folder is missing")
        return docs
    for path in sorted(STORE.rglob("*")):
        rel = path.relative_to(STORE).as_posix()
        if rel.startswith(".memtree"):
            continue
        if path.is_dir():
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
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            report.error(doc_id, f"not UTF-8: {e}")
            continue
        yaml_block, body = split_front_matter(text)
        fm = check_front_matter(doc_id, yaml_block, report) if yaml_block is not None else {}
        links, sections = parse_document(body)
        docs[doc_id] = {
            "bytes": len(raw),
            "text": text,
            "body": body,
            "has_fm": yaml_block is not None,
            "fm": fm,
            "links": links,
            "sections": sections,
        }
    return docs


def check_tree(docs: dict[str, dict], report: Report) -> None:
    if "root" not in docs:
        report.error("root", "root.md is missing")
        return
    parents: dict[str, list[str]] = collections.defaultdict(list)
    for doc_id, doc in docs.items():
        for target in doc["links"]:
            why = valid_id(target)
            if why:
                report.error(doc_id, f"link [[{target}]] is not a valid id: {why}")
                continue
            if target == doc_id:
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
            report.error(doc_id, f"has {len(ps)} parents: {', '.join(ps)} (cross-tree link)")
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


def depth_map(docs: dict[str, dict]) -> dict[str, int]:
    depth = {"root": 0}
    queue = ["root"]
    while queue:
        cur = queue.pop(0)
        for t in docs[cur]["links"]:
            if t in docs and t not in depth:
                depth[t] = depth[cur] + 1
                queue.append(t)
    return depth


def is_stale(doc: dict, today: dt.date) -> bool:
    fm = doc["fm"]
    if fm.get("status") == "deprecated":
        return True
    return fm.get("scope") == "ephemeral" and "expires" in fm and fm["expires"] < today


def check_queries(docs: dict[str, dict], report: Report, today: dt.date) -> list[dict]:
    if not QUERIES.is_file():
        report.error(str(QUERIES), "queries.yaml is missing")
        return []
    try:
        entries = yaml.safe_load(QUERIES.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        report.error("queries.yaml", f"not valid YAML: {e}")
        return []
    if not isinstance(entries, list):
        report.error("queries.yaml", "must be a YAML list")
        return []
    seen_queries: set[str] = set()
    for n, entry in enumerate(entries, 1):
        where = f"queries.yaml entry {n}"
        if not isinstance(entry, dict):
            report.error(where, "not a mapping")
            continue
        unknown = set(entry) - {"query", "kind", "expect", "absent", "note"}
        if unknown:
            report.error(where, f"unknown keys {sorted(unknown)}")
        q = entry.get("query")
        if not isinstance(q, str) or not q.strip():
            report.error(where, "query must be a non-empty string")
            continue
        where = f"{where} ({q!r})"
        if q in seen_queries:
            report.error(where, "duplicate query")
        seen_queries.add(q)
        if entry.get("kind") not in KINDS:
            report.error(where, f"kind {entry.get('kind')!r} is not one of {sorted(KINDS)}")
        expect = entry.get("expect")
        if not isinstance(expect, list) or not expect or not all(isinstance(t, str) for t in expect):
            report.error(where, "expect must be a non-empty list of strings")
            expect = []
        expected_docs = set()
        for target in expect:
            doc_id, _, heading = target.partition("#")
            expected_docs.add(doc_id)
            if doc_id not in docs:
                report.error(where, f"expected doc {doc_id!r} does not exist")
                continue
            if is_stale(docs[doc_id], today):
                report.error(where, f"expected doc {doc_id!r} is deprecated or expired")
            if "#" in target:
                matches = [s for s in docs[doc_id]["sections"] if s[1] == heading]
                if not matches:
                    have = [s[1] for s in docs[doc_id]["sections"]]
                    report.error(where, f"heading {heading!r} not in {doc_id!r} (has {have})")
                elif len(matches) > 1:
                    report.error(where, f"heading {heading!r} is ambiguous in {doc_id!r}")
        absent = entry.get("absent", [])
        if not isinstance(absent, list) or not all(isinstance(t, str) for t in absent):
            report.error(where, "absent must be a list of doc ids")
            absent = []
        for doc_id in absent:
            if "#" in doc_id:
                report.error(where, f"absent entries are doc ids, not sections: {doc_id!r}")
                continue
            if doc_id not in docs:
                report.error(where, f"absent doc {doc_id!r} does not exist")
            elif not is_stale(docs[doc_id], today):
                report.error(where, f"absent doc {doc_id!r} is neither deprecated nor expired")
            if doc_id in expected_docs:
                report.error(where, f"{doc_id!r} is both expected and absent")
    return [e for e in entries if isinstance(e, dict)]


def run_memtree(binary: Path, report: Report) -> str:
    with tempfile.TemporaryDirectory(prefix="memtree-relevance-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(STORE, copy, ignore=shutil.ignore_patterns(".memtree"))
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
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        out = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            report.error("memtree validate", f"exit status {proc.returncode}:\n{out}")
        elif not re.search(r"\b0 findings\b", out):
            report.error("memtree validate", f"reported findings:\n{out}")
        return out.splitlines()[-1] if out else ""


# -------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memtree", type=Path, default=REPO / "target" / "debug" / "memtree")
    ap.add_argument("--no-memtree", action="store_true", help="skip `memtree validate`")
    ap.add_argument("--today", type=dt.date.fromisoformat, default=dt.date.today(),
                    help="date used to decide which ephemeral notes have expired")
    args = ap.parse_args()

    report = Report()
    docs = load_store(report)
    check_tree(docs, report)
    entries = check_queries(docs, report, args.today)

    japanese = [d for d, doc in docs.items() if japanese_chars(doc["body"]) >= JAPANESE_DOC_MIN_CHARS]
    if len(docs) < MIN_DOCS:
        report.error("store", f"{len(docs)} documents, need at least {MIN_DOCS}")
    if len(entries) < MIN_QUERIES:
        report.error("queries.yaml", f"{len(entries)} queries, need at least {MIN_QUERIES}")
    if len(japanese) < MIN_JAPANESE_DOCS:
        report.error("store", f"{len(japanese)} Japanese documents, need at least {MIN_JAPANESE_DOCS}")

    memtree_line = "skipped"
    if not args.no_memtree:
        if args.memtree.is_file() and os.access(args.memtree, os.X_OK):
            memtree_line = run_memtree(args.memtree, report)
        else:
            memtree_line = f"skipped ({args.memtree} not found)"

    # statistics
    sizes = sorted(doc["bytes"] for doc in docs.values())
    sections = sum(len(doc["sections"]) for doc in docs.values())
    long_docs = [d for d, doc in docs.items() if 3000 <= doc["bytes"] <= 8192]
    long_sections = [
        f"{d}#{s[1]}" for d, doc in docs.items() for s in doc["sections"]
        if section_words(s[2]) > LONG_SECTION_WORDS
    ]
    deprecated = sorted(d for d, doc in docs.items() if doc["fm"].get("status") == "deprecated")
    expired = sorted(
        d for d, doc in docs.items()
        if doc["fm"].get("scope") == "ephemeral" and doc["fm"].get("expires", args.today) < args.today
    )
    scopes = collections.Counter(doc["fm"].get("scope", "-") for doc in docs.values())
    depth = depth_map(docs) if "root" in docs else {}
    kinds = collections.Counter(e.get("kind") for e in entries)
    with_absent = sum(1 for e in entries if e.get("absent"))

    print(f"documents:            {len(docs)}")
    print(f"sections (headings):  {sections}")
    print(f"bytes: min {sizes[0] if sizes else 0}, median {sizes[len(sizes)//2] if sizes else 0}, "
          f"max {sizes[-1] if sizes else 0}, total {sum(sizes)}")
    print(f"300-1500 bytes:       {sum(1 for s in sizes if 300 <= s <= 1500)}")
    print(f"3-8 KB documents:     {len(long_docs)}")
    print(f"sections > {LONG_SECTION_WORDS} words: {len(long_sections)}")
    for s in long_sections:
        print(f"    {s}")
    print(f"with front-matter:    {sum(1 for doc in docs.values() if doc['has_fm'])}")
    print(f"scopes:               {dict(sorted(scopes.items()))}")
    print(f"deprecated:           {len(deprecated)}  {deprecated}")
    print(f"expired ephemeral:    {len(expired)}  {expired}")
    print(f"Japanese documents:   {len(japanese)}  (>= {JAPANESE_DOC_MIN_CHARS} kana/kanji)")
    print(f"tree depth:           max {max(depth.values()) if depth else 0}, "
          f"by depth {dict(sorted(collections.Counter(depth.values()).items()))}")
    print(f"queries:              {len(entries)}  {dict(sorted(kinds.items()))}, {with_absent} with absent")
    print(f"memtree validate:     {memtree_line}")

    if report.errors:
        print(f"\nFAILED: {len(report.errors)} problem(s)")
        for e in report.errors:
            print(f"  - {e}")
        return 1
    print("\nOK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
