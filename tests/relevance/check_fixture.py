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

import collections
import datetime as dt
import re
import sys
from pathlib import Path

import yaml

import fixture_checks as checks

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
QUERY_KEYS = ("query", "kind", "expect", "absent", "note")
SCOPES = {"global", "agent", "project", "ephemeral"}
DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}(?:$|[T ])")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
JAPANESE_CHAR = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u4e00-\u9fff\u3005\u30fc]")


# ---------------------------------------------------------------- documents


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


def check_front_matter(where: str, raw: str, report: checks.Report) -> dict:
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
                    links.extend(checks.WIKI.findall(strip_code_spans("\n".join(paragraph))))
                    paragraph = []
                heading = (m.group(2) or "").strip()
                links.extend(checks.WIKI.findall(strip_code_spans(heading)))
                current = (len(m.group(1)), heading, [])
                sections.append(current)
            else:
                paragraph.append(line)
                (current[2] if current else preamble).append(line)
        if paragraph:
            links.extend(checks.WIKI.findall(strip_code_spans("\n".join(paragraph))))
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


def describe_note(doc_id: str, raw: bytes, text: str, report: checks.Report) -> dict:
    """A note's entry in the store: its front-matter checked, links and sections."""
    yaml_block, body = split_front_matter(text)
    fm = check_front_matter(doc_id, yaml_block, report) if yaml_block is not None else {}
    links, sections = parse_document(body)
    return {
        "bytes": len(raw),
        "text": text,
        "body": body,
        "has_fm": yaml_block is not None,
        "fm": fm,
        "links": links,
        "sections": sections,
    }


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


def check_queries(docs: dict[str, dict], report: checks.Report, today: dt.date) -> list[dict]:
    entries = checks.load_queries(QUERIES, report)
    for where, entry in checks.query_entries(entries, report, KINDS, QUERY_KEYS, exact=False):
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


# -------------------------------------------------------------------- main


def main() -> int:
    ap = checks.argument_parser(__doc__, REPO)
    ap.add_argument("--today", type=dt.date.fromisoformat, default=dt.date.today(),
                    help="date used to decide which ephemeral notes have expired")
    args = ap.parse_args()

    report = checks.Report()
    docs = checks.load_store(STORE, report, describe_note)
    checks.check_tree(docs, report, many_parents_note=" (cross-tree link)")
    entries = check_queries(docs, report, args.today)

    japanese = [d for d, doc in docs.items() if japanese_chars(doc["body"]) >= JAPANESE_DOC_MIN_CHARS]
    if len(docs) < MIN_DOCS:
        report.error("store", f"{len(docs)} documents, need at least {MIN_DOCS}")
    if len(entries) < MIN_QUERIES:
        report.error("queries.yaml", f"{len(entries)} queries, need at least {MIN_QUERIES}")
    if len(japanese) < MIN_JAPANESE_DOCS:
        report.error("store", f"{len(japanese)} Japanese documents, need at least {MIN_JAPANESE_DOCS}")

    memtree_line = checks.memtree_validate(args, STORE, "memtree-relevance-", report)

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
    print(checks.bytes_line(sizes))
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

    return checks.finish(report)


if __name__ == "__main__":
    sys.exit(main())
