#!/usr/bin/env python3
"""Checks the conversation-log relevance fixture: store/ and queries.yaml.

    /work/main/.venv/bin/python tests/relevance/conversations/check_fixture.py [--memtree PATH | --no-memtree]

Verifies that
  * every file is `<id>.md` with a valid id (segments of [A-Za-z0-9_-]+ joined
    by '/', at most 128 bytes), no two ids differ only in letter case, every
    file is UTF-8 and under 10 KB;
  * the `[[id]]` / `[[id|label]]` links form a tree rooted at `root`: every
    other document has exactly one parent, no link points to a missing
    document, to root or to itself, everything is reachable from root;
  * root.md links every session as a list item `- [[sessions/sNN]]: summary`;
  * every session `sessions/sNN` starts with `# Session N · YYYY-MM-DD (Weekday …)`
    (the weekday matching the date), and its turns are list items
    `- [SN:k] Name: text`, numbered 1, 2, 3… in order, 25 to 60 of them, each
    naming one of a small recurring cast (3 to 5 speakers over the set);
    other lines may only be blank or `##` section headings;
  * queries.yaml is a list of {query, kind, doc, answer}: kinds are known,
    queries are unique, `doc` exists, `answer` is 20-80 characters and occurs
    exactly once in that doc, inside one turn line;
  * the counts the set promises: >= 24 sessions, >= 110 queries, >= 15
    queries of each required kind (who, when, paraphrase, keyword, question).

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
REPO = HERE.parent.parent.parent

MIN_SESSIONS = 24
MIN_QUERIES = 110
MIN_PER_KIND = 15
MIN_TURNS, MAX_TURNS = 25, 60
MIN_CAST, MAX_CAST = 3, 5
MAX_DOC_BYTES = 10 * 1024
ANSWER_CHARS = (20, 80)
LONG_TURN = 250

REQUIRED_KINDS = {"who", "when", "paraphrase", "keyword", "question"}
KINDS = REQUIRED_KINDS | {"multi"}
SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
WIKI = re.compile(r"(?<!\\)\[\[([^\[\]|\n]+)(?:\|[^\[\]\n]*)?\]\]")
SESSION_ID = re.compile(r"sessions/s(\d{2,})")
HEADER = re.compile(r"# Session (\d+) · (\d{4}-\d{2}-\d{2}) \((\w+)\b[^)]*\)")
TURN = re.compile(r"- \[S(\d+):(\d+)\] ([A-Z][a-z]+): (\S.*)")
ROOT_ITEM = re.compile(r"- \[\[(sessions/s\d+)\]\]: \S.*")


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


def links_of(text: str) -> list[str]:
    """The `[[id]]` links of a document outside code spans and fenced blocks."""
    kept = []
    fenced = False
    for line in text.splitlines():
        if re.match(r"\s*(```|~~~)", line):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(re.sub(r"`[^`\n]*`", " ", line))
    seen: list[str] = []
    for link in WIKI.findall("\n".join(kept)):
        link = link.strip()
        if link not in seen:
            seen.append(link)
    return seen


# ------------------------------------------------------------------- checks


def load_store(report: Report) -> dict[str, dict]:
    docs: dict[str, dict] = {}
    lower: dict[str, str] = {}
    if not STORE.is_dir():
        report.error(str(STORE), "store folder is missing")
        return docs
    for path in sorted(STORE.rglob("*")):
        rel = path.relative_to(STORE).as_posix()
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
        if len(raw) >= MAX_DOC_BYTES:
            report.error(doc_id, f"{len(raw)} bytes, must stay under {MAX_DOC_BYTES}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            report.error(doc_id, f"not UTF-8: {e}")
            continue
        docs[doc_id] = {"bytes": len(raw), "text": text, "links": links_of(text)}
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
            report.error(doc_id, f"has {len(ps)} parents: {', '.join(ps)}")
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


def check_root(docs: dict[str, dict], sessions: list[str], report: Report) -> None:
    if "root" not in docs:
        return
    listed = []
    for line in docs["root"]["text"].splitlines():
        if "[[" in line:
            m = ROOT_ITEM.fullmatch(line)
            if not m:
                report.error("root", f"link line is not `- [[sessions/sNN]]: summary`: {line!r}")
            else:
                listed.append(m.group(1))
    for s in sessions:
        if s not in listed:
            report.error("root", f"does not list {s}")


def check_sessions(docs: dict[str, dict], report: Report) -> dict[str, dict]:
    """Checks every session's header and turns; returns per-session stats."""
    stats: dict[str, dict] = {}
    for doc_id, doc in sorted(docs.items()):
        if doc_id == "root":
            continue
        m = SESSION_ID.fullmatch(doc_id)
        if not m:
            report.error(doc_id, "not a session id `sessions/sNN`")
            continue
        number = int(m.group(1))
        lines = doc["text"].splitlines()
        header = HEADER.fullmatch(lines[0]) if lines else None
        if not header:
            report.error(doc_id, f"first line is not `# Session N · YYYY-MM-DD (Weekday …)`: {lines[:1]}")
            continue
        if int(header.group(1)) != number:
            report.error(doc_id, f"header says session {header.group(1)}, id says {number}")
        try:
            date = dt.date.fromisoformat(header.group(2))
            if date.strftime("%A") != header.group(3):
                report.error(doc_id, f"{date} is a {date.strftime('%A')}, not a {header.group(3)}")
        except ValueError:
            report.error(doc_id, f"{header.group(2)} is not a real date")
            date = None
        turns = []
        sections = 0
        for n, line in enumerate(lines[1:], 2):
            if not line.strip():
                continue
            if line.startswith("## ") and line[3:].strip():
                sections += 1
                continue
            t = TURN.fullmatch(line)
            if not t:
                report.error(doc_id, f"line {n} is neither a turn, a `##` heading nor blank: {line[:60]!r}")
                continue
            if int(t.group(1)) != number:
                report.error(doc_id, f"line {n}: turn of session {t.group(1)} in session {number}")
            if int(t.group(2)) != len(turns) + 1:
                report.error(doc_id, f"line {n}: turn {t.group(2)}, expected {len(turns) + 1}")
            turns.append((t.group(3), t.group(4)))
        if not MIN_TURNS <= len(turns) <= MAX_TURNS:
            report.error(doc_id, f"{len(turns)} turns, need {MIN_TURNS} to {MAX_TURNS}")
        stats[doc_id] = {
            "date": date,
            "turns": turns,
            "sections": sections,
            "long": sum(1 for _, text in turns if len(text) > LONG_TURN),
        }
    dates = [s["date"] for _, s in sorted(stats.items()) if s["date"]]
    if dates != sorted(dates):
        report.error("sessions", "session dates are not in order")
    cast = {speaker for s in stats.values() for speaker, _ in s["turns"]}
    if not MIN_CAST <= len(cast) <= MAX_CAST:
        report.error("sessions", f"{len(cast)} speakers {sorted(cast)}, need {MIN_CAST} to {MAX_CAST}")
    return stats


def check_queries(docs: dict[str, dict], report: Report) -> list[dict]:
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
    seen: set[str] = set()
    for n, entry in enumerate(entries, 1):
        where = f"queries.yaml entry {n}"
        if not isinstance(entry, dict):
            report.error(where, "not a mapping")
            continue
        if set(entry) != {"query", "kind", "doc", "answer"}:
            report.error(where, f"keys {sorted(entry)}, need exactly query, kind, doc, answer")
        q = entry.get("query")
        if not isinstance(q, str) or not q.strip():
            report.error(where, "query must be a non-empty string")
            continue
        where = f"{where} ({q!r})"
        if q in seen:
            report.error(where, "duplicate query")
        seen.add(q)
        if entry.get("kind") not in KINDS:
            report.error(where, f"kind {entry.get('kind')!r} is not one of {sorted(KINDS)}")
        doc_id, answer = entry.get("doc"), entry.get("answer")
        if not isinstance(answer, str):
            report.error(where, "answer must be a string")
            continue
        if not ANSWER_CHARS[0] <= len(answer) <= ANSWER_CHARS[1]:
            report.error(where, f"answer is {len(answer)} characters, need {ANSWER_CHARS[0]} to {ANSWER_CHARS[1]}")
        if doc_id not in docs or doc_id == "root":
            report.error(where, f"doc {doc_id!r} is not a session of the store")
            continue
        text = docs[doc_id]["text"]
        count = text.count(answer)
        if count != 1:
            report.error(where, f"answer occurs {count} times in {doc_id}, need exactly once")
            continue
        line = next(line for line in text.splitlines() if answer in line)
        if not TURN.fullmatch(line):
            report.error(where, f"answer is not inside one turn line of {doc_id}")
    return [e for e in entries if isinstance(e, dict)]


def run_memtree(binary: Path, report: Report) -> str:
    with tempfile.TemporaryDirectory(prefix="memtree-conversations-") as tmp:
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
            capture_output=True, text=True, env=env, timeout=300,
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
    args = ap.parse_args()

    report = Report()
    docs = load_store(report)
    check_tree(docs, report)
    stats = check_sessions(docs, report)
    check_root(docs, sorted(stats), report)
    entries = check_queries(docs, report)

    kinds = collections.Counter(e.get("kind") for e in entries)
    if len(stats) < MIN_SESSIONS:
        report.error("store", f"{len(stats)} sessions, need at least {MIN_SESSIONS}")
    if len(entries) < MIN_QUERIES:
        report.error("queries.yaml", f"{len(entries)} queries, need at least {MIN_QUERIES}")
    for kind in sorted(REQUIRED_KINDS):
        if kinds[kind] < MIN_PER_KIND:
            report.error("queries.yaml", f"{kinds[kind]} {kind!r} queries, need at least {MIN_PER_KIND}")

    memtree_line = "skipped"
    if not args.no_memtree:
        if args.memtree.is_file() and os.access(args.memtree, os.X_OK):
            memtree_line = run_memtree(args.memtree, report)
        else:
            memtree_line = f"skipped ({args.memtree} not found)"

    sizes = sorted(doc["bytes"] for doc in docs.values())
    turns = [t for s in stats.values() for t in s["turns"]]
    per_session = sorted(len(s["turns"]) for s in stats.values())
    speakers = collections.Counter(speaker for speaker, _ in turns)
    dates = sorted(s["date"] for s in stats.values() if s["date"])
    answered = collections.Counter(e.get("doc") for e in entries)

    print(f"documents:            {len(docs)} ({len(stats)} sessions and root)")
    print(f"bytes: min {sizes[0] if sizes else 0}, median {sizes[len(sizes) // 2] if sizes else 0}, "
          f"max {sizes[-1] if sizes else 0}, total {sum(sizes)}")
    print(f"dates:                {dates[0] if dates else '-'} to {dates[-1] if dates else '-'}")
    print(f"turns:                {len(turns)} (per session min {per_session[0] if per_session else 0}, "
          f"max {per_session[-1] if per_session else 0})")
    print(f"turns > {LONG_TURN} chars:    {sum(s['long'] for s in stats.values())}")
    print(f"sessions with ##:     {sum(1 for s in stats.values() if s['sections'])}")
    print(f"speakers:             {dict(speakers.most_common())}")
    print(f"queries:              {len(entries)}  {dict(sorted(kinds.items()))}")
    print(f"queries per session:  min {min(answered.values(), default=0)}, max {max(answered.values(), default=0)}, "
          f"sessions without any: {sorted(set(stats) - set(answered))}")
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
