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

import collections
import datetime as dt
import re
import sys
from pathlib import Path

# fixture_checks.py, the checks shared with the notes fixture, lives one folder up.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fixture_checks as checks  # noqa: E402

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
QUERY_KEYS = ("query", "kind", "doc", "answer")
SESSION_ID = re.compile(r"sessions/s(\d{2,})")
HEADER = re.compile(r"# Session (\d+) · (\d{4}-\d{2}-\d{2}) \((\w+)\b[^)]*\)")
TURN = re.compile(r"- \[S(\d+):(\d+)\] ([A-Z][a-z]+): (\S.*)")
ROOT_ITEM = re.compile(r"- \[\[(sessions/s\d+)\]\]: \S.*")


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
    for link in checks.WIKI.findall("\n".join(kept)):
        link = link.strip()
        if link not in seen:
            seen.append(link)
    return seen


# ------------------------------------------------------------------- checks


def describe_session(doc_id: str, raw: bytes, text: str, report: checks.Report) -> dict:
    """A document's entry in the store: its bytes, text and links."""
    return {"bytes": len(raw), "text": text, "links": links_of(text)}


def check_root(docs: dict[str, dict], sessions: list[str], report: checks.Report) -> None:
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


def check_sessions(docs: dict[str, dict], report: checks.Report) -> dict[str, dict]:
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


def check_queries(docs: dict[str, dict], report: checks.Report) -> list[dict]:
    entries = checks.load_queries(QUERIES, report)
    for where, entry in checks.query_entries(entries, report, KINDS, QUERY_KEYS, exact=True):
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


# -------------------------------------------------------------------- main


def main() -> int:
    ap = checks.argument_parser(__doc__, REPO)
    args = ap.parse_args()

    report = checks.Report()
    docs = checks.load_store(STORE, report, describe_session, max_bytes=MAX_DOC_BYTES)
    checks.check_tree(docs, report)
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

    memtree_line = checks.memtree_validate(args, STORE, "memtree-conversations-", report)

    sizes = sorted(doc["bytes"] for doc in docs.values())
    turns = [t for s in stats.values() for t in s["turns"]]
    per_session = sorted(len(s["turns"]) for s in stats.values())
    speakers = collections.Counter(speaker for speaker, _ in turns)
    dates = sorted(s["date"] for s in stats.values() if s["date"])
    answered = collections.Counter(e.get("doc") for e in entries)

    print(f"documents:            {len(docs)} ({len(stats)} sessions and root)")
    print(checks.bytes_line(sizes))
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

    return checks.finish(report)


if __name__ == "__main__":
    sys.exit(main())
