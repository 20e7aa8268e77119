#!/usr/bin/env python3
"""Generate a deterministic Obsidian vault for testing `memtree import --from obsidian`.

    python3 scripts/gen_vault.py OUT_DIR [--notes 320] [--seed 1] [--manifest FILE]

The same arguments always give byte-identical files. OUT_DIR must be missing,
empty, or a vault this script wrote before (it is then replaced). The manifest
(exact counts a test asserts on; see tests/fixtures/import/README.md) goes to
FILE, or to OUT_DIR/.vault-manifest.json when --manifest is not given: a dot
file, like `.obsidian/`, that an importer skips.

Link resolution rules the manifest's counts follow (Obsidian's, as far as this
vault exercises them; every link is written so that they are unambiguous):
  * a wikilink is `[[target#subpath|alias]]`, an embed the same with `!` before;
    in a table the alias separator is written `\\|` (the `\\` is dropped);
  * `[[#Heading]]` (empty target) points into its own note ("same_note");
  * matching ignores letter case; a trailing `.md` on the target is dropped;
  * a target with `/` is a full path from the vault root (without `.md` for a
    note, with its extension for an attachment);
  * a bare target is first an attachment file name (`diagram.png`), then a
    note file name without `.md`: one such note -> it; several -> the one in
    the linking note's own folder, else the shortest path (then the first in
    code-point order); none -> unresolved;
  * Markdown links `[text](dest)` are relative to the linking note's folder,
    percent-encoded, optionally with `#fragment`; `http(s)://` ones are external;
  * nothing inside fenced code, indented code, inline code spans or the
    front-matter block is a link or a tag.
Only the Python standard library is used.
"""

import argparse
import json
import os
import posixpath
import random
import re
import shutil
import struct
import sys
import unicodedata
import zlib
from urllib.parse import quote

MARKER = ".obsidian/gen_vault.marker"  # lets a rerun replace its own output

# Folders that hold generic topic notes (weights: how many of them land there).
TOPIC_FOLDERS = [
    ("Projects/Payments API", 4), ("Projects/Payments API/Specs", 3),
    ("Projects/Mobile App", 3), ("Projects/Mobile App/Research", 3),
    ("Projects/Data Platform", 3), ("Projects/Data Platform/Pipelines", 3),
    ("Projects/Website Redesign", 3), ("Areas/Engineering", 2),
    ("Areas/Engineering/Backend", 4), ("Areas/Engineering/Frontend", 3),
    ("Areas/Engineering/Infra", 4), ("Areas/Hiring", 2), ("Areas/Health", 2),
    ("Areas/Finance", 2), ("Areas/Japan", 1), ("Resources", 1),
    ("Resources/Books", 3), ("Resources/Articles", 3), ("Resources/Recipes", 2),
    ("Resources/Languages", 1), ("Resources/Languages/German", 2),
    ("Archive", 1), ("Archive/2022", 2), ("Archive/2023", 2),
    ("Archive/2023/Q1", 2), ("Projects", 1), ("Areas", 1),
]

ADJECTIVES = [
    "Async", "Atomic", "Batch", "Blue", "Bounded", "Cached", "Cold", "Composite",
    "Concurrent", "Curated", "Daily", "Deferred", "Distributed", "Durable",
    "Eager", "Elastic", "Encrypted", "Ephemeral", "Fast", "Federated", "Green",
    "Hidden", "Hybrid", "Idempotent", "Incremental", "Indexed", "Lazy", "Layered",
    "Lean", "Local", "Manual", "Minimal", "Modular", "Nested", "Offline",
    "Optimistic", "Partial", "Pinned", "Quiet", "Remote", "Resilient", "Rolling",
    "Sharded", "Silent", "Sliding", "Slow", "Sparse", "Stable", "Static",
    "Streaming", "Tiered", "Typed", "Versioned", "Warm",
]
NOUNS = [
    "Allocation", "Audit", "Backfill", "Backups", "Billing", "Boundaries",
    "Budgets", "Caching", "Checkpoints", "Compaction", "Contracts", "Cutover",
    "Dashboards", "Deploys", "Dependencies", "Drift", "Estimates", "Exports",
    "Failover", "Feedback", "Flags", "Forecasts", "Gateways", "Handoffs",
    "Heuristics", "Indexes", "Invoices", "Journals", "Leases", "Ledgers",
    "Limits", "Locks", "Metrics", "Migrations", "Onboarding", "Partitions",
    "Payloads", "Pipelines", "Queues", "Quotas", "Receipts", "Refunds",
    "Releases", "Retries", "Reviews", "Rollouts", "Schemas", "Secrets",
    "Sessions", "Snapshots", "Tokens", "Traces", "Webhooks", "Workflows",
]
FIRST_NAMES = [
    "Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Gustav", "Hana",
    "Ivan", "Jonas", "Keiko", "Lena", "Mateo", "Nadia", "Omar", "Priya",
    "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen", "Yusuf",
]
LAST_NAMES = [
    "Martin", "Okafor", "Lindqvist", "Tanaka", "Schulz", "Moreau", "Haddad",
    "Kowalski", "Silva", "Novak", "Ibrahim", "Costa", "Brandt", "Sato",
]
WORDS = (
    "the team agreed to move the rollout behind a flag until the load test "
    "passes and the dashboard shows a steady error rate below one percent "
    "we keep the old path for a week then remove it after the review the "
    "ledger is append only so corrections are new entries never edits a "
    "retry waits with jitter and gives up after five attempts the queue "
    "drains before each deploy invoices are rendered from the snapshot not "
    "from live data the schema change needs a backfill and a second release "
    "latency budgets are owned by the service that spends them costs were "
    "lower than the forecast because caching absorbed most reads open "
    "question whether the partner sandbox mirrors production limits"
).split()
HEADINGS = [
    "Overview", "Context", "Decisions", "Open Questions", "Next Steps",
    "References", "Notes", "Risks", "Timeline", "Summary", "Details", "Ideas",
    "Metrics", "Follow-ups",
]
INLINE_TAGS = [
    "idea", "todo", "project/payments", "project/mobile", "area/health",
    "status/active", "status/blocked", "reading", "meeting", "review/q3",
]
FRONT_TAGS = ["project", "payments", "mobile", "infra", "reading", "person", "daily", "meeting", "hiring/interviews"]
CALLOUTS = ["note", "tip", "warning", "info", "question", "todo"]
MISSING = [  # pages that are linked but do not exist (Obsidian allows that)
    "Future Idea", "Someday Maybe", "Vendor Shortlist", "Incident 2024-03",
    "Pricing Model v2", "Old Wiki Page", "Team Charter", "Quarterly OKRs",
    "Glossary", "Reading Queue", "Architecture Decision 7", "Load Test Plan",
]


def nfc(s):
    return unicodedata.normalize("NFC", s)


class Note:
    def __init__(self, path, kind):
        self.path = path  # vault-relative, with ".md"
        self.kind = kind
        self.folder = posixpath.dirname(path)
        self.name = posixpath.basename(path)[:-3]
        self.headings = []
        self.block_ids = []
        self.text = None


class Vault:
    """Everything written plus a record of every link, as the generator meant it."""

    def __init__(self, rng):
        self.rng = rng
        self.notes = {}  # path -> Note, insertion order = creation order
        self.attachments = {}  # path -> bytes
        self.other_files = {}  # non-note, non-attachment visible files
        self.hidden_files = {}  # .obsidian/, .trash/
        self.links = []  # dicts: src, raw, embed, category, target, form, heading, block, alias
        self.md_links = []  # dicts: src, dest, category, target
        self.ignored_in_code = 0  # wikilinks written inside code
        self.ignored_md_in_code = 0
        self.tags_inline = []  # (src, tag)
        self.tasks_open = 0
        self.tasks_done = 0
        self.callouts = 0
        self.tables = 0
        self._by_name = None  # lower-case name -> notes, built on first resolve()
        self._by_path = None  # lower-case path without .md -> path

    def add_note(self, path, kind):
        assert self._by_name is None, "notes are all planned before the first link"
        path = nfc(path)
        assert path not in self.notes, path
        note = Note(path, kind)
        self.notes[path] = note
        return note

    # -- resolution (the rules in the module docstring) --------------------
    def resolve(self, src, target):
        """Return ("note", path) | ("attachment", path) | ("same_note", src) | (None, None)."""
        t = nfc(target.strip())
        if t == "":
            return "same_note", src.path
        low = t.lower()
        if low.endswith(".md"):
            low = low[:-3]
        if self._by_name is None:
            self._by_name, self._by_path = {}, {}
            for n in self.notes.values():
                self._by_name.setdefault(n.name.lower(), []).append(n)
                self._by_path[n.path[:-3].lower()] = n.path
        if "/" in low:
            for p in self.attachments:
                if p.lower() == low:
                    return "attachment", p
            if low in self._by_path:
                return "note", self._by_path[low]
            return None, None
        for p in self.attachments:
            if posixpath.basename(p).lower() == low:
                return "attachment", p
        cands = list(self._by_name.get(low, []))
        if not cands:
            return None, None
        if len(cands) == 1:
            return "note", cands[0].path
        same = [n for n in cands if n.folder == src.folder]
        if same:
            return "note", same[0].path
        cands.sort(key=lambda n: (len(n.path), n.path))
        return "note", cands[0].path

    def expressible(self, src, tgt):
        """Whether some wikilink from src reaches tgt (a root note with a shared name
        has no path form, so it is reachable only from the root folder)."""
        self.resolve(src, tgt.name)  # builds the name index
        shared = len(self._by_name[tgt.name.lower()]) > 1
        return "/" in tgt.path or not shared or src.folder == ""

    # -- link writers: each returns Markdown text and records what it meant ---
    def link(self, src, tgt, form="auto", heading=None, block=None, alias=None,
             embed=False, in_table=False):
        """A wikilink from note src to existing note tgt."""
        if form == "auto":
            form = "bare" if self.rng.random() < 0.8 else "path"
        if form == "md-suffix":
            text = tgt.name + ".md"
        elif form == "bare":
            text = tgt.name
        elif form == "lower-path":
            text = tgt.path[:-3].lower()
        else:
            text = tgt.path[:-3]
        # A bare name shared by several notes is written only from the target's own
        # folder, where every reading of Obsidian's rules agrees on the target.
        self.resolve(src, tgt.name)  # builds the name index
        shared = len(self._by_name[tgt.name.lower()]) > 1
        kind, got = self.resolve(src, text)
        if (kind, got) != ("note", tgt.path) or ("/" not in text and shared and tgt.folder != src.folder):
            text = tgt.path[:-3]
            kind, got = self.resolve(src, text)
            assert (kind, got) == ("note", tgt.path), (src.path, tgt.path, text)
        form = "path" if "/" in text else ("md-suffix" if text.lower().endswith(".md") else "bare")
        inner = text
        if heading:
            inner += "#" + heading
        if block:
            inner += "#^" + block
        if alias:
            inner += ("\\|" if in_table else "|") + alias
        raw = ("!" if embed else "") + "[[" + inner + "]]"
        self.links.append(dict(src=src.path, raw=raw, embed=embed, category="note",
                               target=tgt.path, form=form, heading=heading,
                               block=block, alias=alias))
        return raw

    def unresolved(self, src, name, heading=None, alias=None, embed=False):
        assert self.resolve(src, name) == (None, None), name
        inner = name + ("#" + heading if heading else "") + ("|" + alias if alias else "")
        raw = ("!" if embed else "") + "[[" + inner + "]]"
        self.links.append(dict(src=src.path, raw=raw, embed=embed, category="unresolved",
                               target=name, form="bare", heading=heading, block=None,
                               alias=alias))
        return raw

    def attachment(self, src, path, text=None, subpath=None, alias=None, embed=True):
        text = text or posixpath.basename(path)
        assert self.resolve(src, text) == ("attachment", path), text
        inner = text + ("#" + subpath if subpath else "") + ("|" + alias if alias else "")
        raw = ("!" if embed else "") + "[[" + inner + "]]"
        self.links.append(dict(src=src.path, raw=raw, embed=embed, category="attachment",
                               target=path, form="attachment", heading=None, block=None,
                               alias=alias))
        return raw

    def same_note(self, src, heading, alias=None):
        raw = "[[#" + heading + ("|" + alias if alias else "") + "]]"
        self.links.append(dict(src=src.path, raw=raw, embed=False, category="same_note",
                               target=src.path, form="same_note", heading=heading,
                               block=None, alias=alias))
        return raw

    def md_link(self, src, tgt, label=None, fragment=None):
        rel = posixpath.relpath(tgt.path, src.folder or ".")
        dest = quote(rel, safe="/()") + ("#" + fragment if fragment else "")
        self.md_links.append(dict(src=src.path, dest=dest, category="note", target=tgt.path))
        return "[" + (label or tgt.name) + "](" + dest + ")"

    def md_missing(self, src, rel, label):
        self.md_links.append(dict(src=src.path, dest=quote(rel, safe="/()"),
                                  category="unresolved", target=None))
        return "[" + label + "](" + quote(rel, safe="/()") + ")"

    def md_external(self, src, url, label):
        self.md_links.append(dict(src=src.path, dest=url, category="external", target=None))
        return "[" + label + "](" + url + ")"

    def md_image(self, src, path, alt):
        rel = posixpath.relpath(path, src.folder or ".")
        self.md_links.append(dict(src=src.path, dest=quote(rel, safe="/()"),
                                  category="image", target=path))
        return "![" + alt + "](" + quote(rel, safe="/()") + ")"

    def tag(self, src, tag):
        self.tags_inline.append((src.path, tag))
        return "#" + tag

    def code_fake(self, n_wiki, n_md=0):
        self.ignored_in_code += n_wiki
        self.ignored_md_in_code += n_md


# ---------------------------------------------------------------------------
# Small binary attachments
# ---------------------------------------------------------------------------

def png_bytes(w=16, h=16):
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + b"".join(bytes((x * 16 % 256, y * 16 % 256, 128)) for x in range(w))
                   for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def pdf_bytes():
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R >>",
    ]
    stream = b"BT /F1 12 Tf 20 50 Td (Quarterly report) Tj ET"
    objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return out


# ---------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------

def sentence(rng, lo=8, hi=16):
    n = rng.randint(lo, hi)
    start = rng.randrange(len(WORDS) - n)
    words = WORDS[start:start + n]
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def paragraph(rng, lo=2, hi=4):
    return " ".join(sentence(rng) for _ in range(rng.randint(lo, hi)))


def weave(rng, text, links):
    """Insert link strings between the sentences of text."""
    parts = text.split(". ")
    for ln in links:
        i = rng.randrange(len(parts))
        parts[i] = parts[i] + " (see " + ln + ")"
    return ". ".join(parts)


def front_matter(rng, note, extra=None):
    lines = ["---"]
    tags = rng.sample(FRONT_TAGS, rng.randint(1, 3))
    if rng.random() < 0.5:
        lines.append("tags: [" + ", ".join(tags) + "]")
    else:
        lines.append("tags:")
        lines += ["  - " + t for t in tags]
    if rng.random() < 0.35:
        lines.append("aliases:")
        lines.append("  - " + note.name.split()[0] + " notes")
    lines.append("created: 2024-%02d-%02d" % (rng.randint(1, 12), rng.randint(1, 28)))
    if rng.random() < 0.5:
        lines.append("status: " + rng.choice(["draft", "active", "done", "parked"]))
    if rng.random() < 0.3:
        lines.append("rating: %d" % rng.randint(1, 5))
    if rng.random() < 0.2:
        lines.append('owner: "' + rng.choice(FIRST_NAMES) + '"')
    for k, v in (extra or []):
        lines.append(k + ": " + v)
    lines.append("---")
    return "\n".join(lines) + "\n"


def code_block(rng, v):
    """A fenced block full of things that look like links and tags but are code."""
    fence = rng.choice(["```", "~~~", "````"])
    body = [
        "# [[Not A Link]] inside a " + ("shell" if fence == "~~~" else "code") + " block",
        'echo "[[Fake Note|alias]] and ![[fake.png]] and [x](Fake%20Page.md)"',
        "- [ ] not a task #not-a-tag",
    ]
    if fence == "````":
        body.insert(1, "```")  # a shorter fence inside a longer one stays code
        body.insert(3, "```")
    v.code_fake(3, 1)
    lang = rng.choice(["bash", "python", "text", ""])
    return fence + lang + "\n" + "\n".join(body) + "\n" + fence


def indented_code(v):
    v.code_fake(1)
    return "    let link = \"[[Indented Not A Link]]\";\n    println!(\"{}\", link);"


def inline_code(rng, v):
    v.code_fake(1)
    return rng.choice([
        "Type `[[Page Name]]` to link a page.",
        "The syntax ``[[Target|label]]`` renders a label.",
        "Escape it as `![[image.png]]` in docs.",
    ])


# ---------------------------------------------------------------------------
# Building the vault
# ---------------------------------------------------------------------------

def plan_notes(v, total):
    rng = v.rng
    special = [
        ("Index.md", "hub"), ("Home.md", "hub"), ("Inbox.md", "plain"),
        ("Resources.md", "folder-note"),
        ("Projects/Index.md", "hub"), ("Resources/Index.md", "hub"),
        ("Projects/Payments API/Meeting Notes.md", "meeting"),
        ("Areas/Hiring/Meeting Notes.md", "meeting"),
        ("Archive/2023/Meeting Notes.md", "meeting"),
        ("Projects/Payments API/Design.md", "design"),
        ("Projects/Mobile App/Design.md", "design"),
        ("Projects/Payments API/Specs/Auth Flow.md", "plain"),
        ("Projects/Payments API/Specs/Other Note.md", "plain"),
        ("Projects/Roadmap.md", "plain"),
        ("Archive/roadmap.md", "plain"),
        ("Resources/Café Ideas.md", "plain"),
        ("Areas/Übersicht.md", "hub"),
        ("Areas/Japan/日本語メモ.md", "plain"),
        ("Daily/🚀 Launch Checklist.md", "plain"),
        ("Projects/Q3 plan (draft).md", "plain"),
        ("Resources/a.b.c.md", "plain"),
        ("Resources/a_b_c.md", "plain"),
        ("Archive/Empty Note.md", "empty"),
        ("Areas/Finance/Budget Properties.md", "fm-only"),
        ("Archive/2022/Conference Compendium.md", "large"),
        ("Templates/Daily Template.md", "template"),
        ("Templates/Meeting Template.md", "template"),
    ]
    for path, kind in special:
        v.add_note(path, kind)
    people = []
    seen = set()
    while len(people) < 18:
        name = rng.choice(FIRST_NAMES) + " " + rng.choice(LAST_NAMES)
        if name not in seen:
            seen.add(name)
            people.append(name)
    for name in people:
        v.add_note("People/" + name + ".md", "person")
    for month, days in (("01", range(2, 31, 2)), ("02", range(1, 29, 2))):
        for d in days:
            v.add_note("Daily/2024/%s/2024-%s-%02d.md" % (month, month, d), "daily")
    used = {n.name.lower() for n in v.notes.values()}
    folders = [f for f, w in TOPIC_FOLDERS for _ in range(w)]
    while len(v.notes) < total:
        name = rng.choice(ADJECTIVES) + " " + rng.choice(NOUNS)
        if name.lower() in used:
            if len(used) < len(ADJECTIVES) * len(NOUNS) // 2:
                continue
            k = 2
            while ("%s %d" % (name, k)).lower() in used:
                k += 1
            name = "%s %d" % (name, k)  # large vaults: "Async Caching 2", ...
        used.add(name.lower())
        v.add_note(rng.choice(folders) + "/" + name + ".md", "topic")
    # Headings and block ids first, so that links can point at them.
    for n in v.notes.values():
        if n.kind in ("empty", "fm-only", "template"):
            continue
        n.headings = rng.sample(HEADINGS, rng.randint(2, 4))
        n.block_ids = ["b%06x" % rng.randrange(16 ** 6) for _ in range(rng.randint(0, 2))]


def pick_targets(v, src, k, popular):
    rng = v.rng
    out = []
    pool = [n for n in v.notes.values() if n.kind not in ("template",) and n is not src]
    while len(out) < k:
        t = rng.choice(popular) if rng.random() < 0.55 else rng.choice(pool)
        if t is src or t.kind == "template" or not v.expressible(src, t):
            continue
        out.append(t)
    return out


def link_variant(v, src, tgt):
    """One wikilink (or, sometimes, a Markdown link) to tgt in a random Obsidian form."""
    rng = v.rng
    r = rng.random()
    if r < 0.40:
        return v.link(src, tgt)
    if r < 0.52:
        return v.link(src, tgt, form="path")
    if r < 0.64 and tgt.headings:
        return v.link(src, tgt, heading=rng.choice(tgt.headings))
    if r < 0.70 and tgt.block_ids:
        return v.link(src, tgt, block=rng.choice(tgt.block_ids))
    if r < 0.84:
        return v.link(src, tgt, alias=rng.choice(["this", "that note", "details", tgt.name.lower(), "more"]))
    if r < 0.88 and tgt.headings:
        return v.link(src, tgt, heading=rng.choice(tgt.headings), alias="section")
    if r < 0.91 and tgt.kind not in ("empty", "large"):
        return v.link(src, tgt, embed=True)
    if r < 0.96:
        return v.md_link(src, tgt)
    return v.link(src, tgt)


def topic_body(v, n, popular):
    rng = v.rng
    out = []
    if rng.random() < 0.35:
        out.append(front_matter(rng, n))
    if rng.random() < 0.5:
        out.append("# " + n.name + "\n")
    k = rng.randint(3, 9)
    targets = pick_targets(v, n, k, popular)
    links = [link_variant(v, n, t) for t in targets]
    if rng.random() < 0.04:
        links.append(v.unresolved(n, rng.choice(MISSING)))
    if rng.random() < 0.03:
        links.append(v.attachment(n, "attachments/diagram.png"))
    rng.shuffle(links)
    out.append(weave(rng, paragraph(rng), links[:1]) + "\n")
    rest = links[1:]
    blocks = list(n.block_ids)
    for i, h in enumerate(n.headings):
        out.append("## " + h + "\n")
        share = rest[: rng.randint(0, len(rest))] if i < len(n.headings) - 1 else rest
        rest = rest[len(share):]
        para = weave(rng, paragraph(rng), share[:2])
        if rng.random() < 0.3:
            para += " " + v.tag(n, rng.choice(INLINE_TAGS))
        if blocks:
            para += " ^" + blocks.pop()
        out.append(para + "\n")
        if len(share) > 2:
            out.append("\n".join("- " + sentence(rng, 4, 8)[:-1] + " " + ln for ln in share[2:]) + "\n")
        roll = rng.random()
        if roll < 0.12:
            items = []
            for _ in range(rng.randint(2, 4)):
                done = rng.random() < 0.4
                if done:
                    v.tasks_done += 1
                else:
                    v.tasks_open += 1
                items.append("- [" + ("x" if done else " ") + "] " + sentence(rng, 3, 6)[:-1])
            out.append("\n".join(items) + "\n")
        elif roll < 0.20:
            v.callouts += 1
            out.append("> [!" + rng.choice(CALLOUTS) + "] " + rng.choice(HEADINGS) + "\n> "
                       + sentence(rng) + "\n")
        elif roll < 0.28:
            out.append(code_block(rng, v) + "\n")
        elif roll < 0.34:
            out.append(inline_code(rng, v) + "\n")
        elif roll < 0.37:
            v.tables += 1
            out.append("| item | owner |\n|---|---|\n| " + sentence(rng, 2, 4)[:-1] + " | "
                       + rng.choice(FIRST_NAMES) + " |\n")
    for b in blocks:  # block ids left over (fewer headings than ids)
        out.append(sentence(rng) + " ^" + b + "\n")
    return "\n".join(out)


def special_bodies(v, popular):
    """Hand-made notes that each exercise one Obsidian feature."""
    N = v.notes
    rng = v.rng
    L = v.link

    def g(p):
        return N[nfc(p)]

    def hub_list(src, count, form="auto"):
        ts = pick_targets(v, src, count, popular)
        seen, lines = set(), []
        for t in ts:
            if t.path in seen:
                continue
            seen.add(t.path)
            lines.append("- " + L(src, t, form=form))
        return "\n".join(lines)

    idx = g("Index.md")
    idx.text = (
        "---\ntags: [index, hub]\naliases: [Start Here, Vault Index]\ncreated: 2023-11-02\n"
        "cssclasses: [wide]\n---\n"
        "# Index\n\nThe entry point of this vault. Probe phrase: vault-probe-index-root.\n\n"
        "## Areas\n\n"
        + "- " + L(idx, g("Projects/Index.md")) + "\n"
        + "- " + L(idx, g("Resources/Index.md"), alias="Resources index") + "\n"
        + "- " + L(idx, g("Areas/Übersicht.md")) + "\n"
        + "- " + L(idx, g("Home.md")) + "\n"
        + "- " + L(idx, g("Resources.md"), form="path") + "\n\n"
        "## Everything else\n\n" + hub_list(idx, 14) + "\n\n"
        "## Outside\n\n- " + v.md_external(idx, "https://help.obsidian.md/Linking+notes+and+files/Internal+links",
                                           "Obsidian help on links") + "\n\n"
        "## Unwritten\n\n- " + v.unresolved(idx, "Future Idea") + "\n- "
        + v.unresolved(idx, "Team Charter", heading="Values") + "\n"
    )
    home = g("Home.md")
    home.text = (
        "# Home\n\nBack to " + L(home, idx, form="bare") + " (the root index, found as the shortest "
        "of the three `Index` notes) and on to " + L(home, g("Inbox.md")) + ".\n\n"
        "## Jump to\n\n" + hub_list(home, 10) + "\n"
    )
    inbox = g("Inbox.md")
    inbox.text = (
        "# Inbox\n\nThings to file. " + L(inbox, home) + " links back here too, so these "
        "three notes form a cycle with " + L(inbox, idx, form="md-suffix") + ".\n\n"
        "- [ ] File the " + L(inbox, g("Daily/🚀 Launch Checklist.md")) + "\n"
        "- [ ] Read " + L(inbox, g("Resources/Café Ideas.md"), alias="the café list") + "\n"
        "- [x] Archive " + L(inbox, g("Archive/roadmap.md"), form="path") + "\n"
        "    - [ ] nested task under a done one\n"
        "- " + v.unresolved(inbox, "Someday Maybe") + "\n"
        "- " + v.md_missing(inbox, "Missing Page.md", "an old page") + "\n"
        "- Jump within this note: " + v.same_note(inbox, "Inbox") + "\n"
    )
    v.tasks_open += 3
    v.tasks_done += 1
    res = g("Resources.md")
    res.text = (
        "# Resources\n\nA folder note: same name as the `Resources/` folder next to it. "
        "See " + L(res, g("Resources/Index.md"), form="path") + ".\n"
    )
    pidx = g("Projects/Index.md")
    pidx.text = (
        "# Projects index\n\nA second note called Index; the root one is reached by a Markdown link, "
        + v.md_link(pidx, idx, label="Vault index") + ", since a wikilink from here cannot name it.\n\n"
        "| project | design | notes |\n|---|---|---|\n"
        "| Payments | " + L(pidx, g("Projects/Payments API/Design.md"), form="path", alias="design",
                           in_table=True)
        + " | " + L(pidx, g("Projects/Payments API/Meeting Notes.md"), form="path") + " |\n"
        "| Mobile | " + L(pidx, g("Projects/Mobile App/Design.md"), form="path", alias="design",
                         in_table=True)
        + " | " + L(pidx, g("Projects/Roadmap.md")) + " |\n\n"
        + hub_list(pidx, 8) + "\n"
    )
    v.tables += 1
    ridx = g("Resources/Index.md")
    ridx.text = (
        "---\ntags:\n  - index\n---\n# Resources index\n\n"
        "- " + L(ridx, g("Resources/Café Ideas.md")) + "\n"
        "- " + L(ridx, g("Resources/a.b.c.md")) + "\n"
        "- " + L(ridx, g("Resources/a_b_c.md")) + "\n"
        "- " + L(ridx, res, form="path") + "\n"
        "- " + v.md_link(ridx, g("Resources/Café Ideas.md"), label="café (markdown link)") + "\n"
        + hub_list(ridx, 6) + "\n"
    )
    for p in ("Projects/Payments API/Meeting Notes.md", "Areas/Hiring/Meeting Notes.md",
              "Archive/2023/Meeting Notes.md"):
        n = g(p)
        ts = pick_targets(v, n, 4, popular)
        n.text = (
            front_matter(rng, n, [("meeting", "weekly")]) + "# Meeting Notes\n\n"
            "Attendees: " + ", ".join(L(n, t) for t in ts[:2]) + ".\n\n"
            "## " + n.headings[0] + "\n\n" + weave(rng, paragraph(rng), [L(n, ts[2]), L(n, ts[3])])
            + (" ^" + n.block_ids[0] if n.block_ids else "") + "\n\n"
            "## Actions\n\n- [ ] " + sentence(rng, 3, 6)[:-1] + " " + v.tag(n, "meeting") + "\n"
        )
        v.tasks_open += 1
        for b in n.block_ids[1:]:
            n.text += "\n" + sentence(rng) + " ^" + b + "\n"
        for h in n.headings[1:]:
            n.text += "\n## " + h + "\n\n" + paragraph(rng) + "\n"
    pay = g("Projects/Payments API/Design.md")
    auth = g("Projects/Payments API/Specs/Auth Flow.md")
    other = g("Projects/Payments API/Specs/Other Note.md")
    pay.text = (
        "---\ntags: [project, payments]\naliases:\n  - Payments Design\n  - PAPI Design\n"
        "created: 2024-01-05\nstatus: draft\nreviewers: [Dana, Omar]\n---\n"
        "# Payments API design\n\nProbe phrase: vault-probe-payments-design.\n\n"
        "## Overview\n\nThe API takes idempotency keys on every POST. Flow in "
        + v.md_link(pay, auth, label="the auth flow") + ", the plan in "
        + v.md_link(pay, g("Projects/Roadmap.md"), label="the roadmap") + ", sibling spec "
        + v.md_link(pay, other, label="other note", fragment="overview") + ".\n\n"
        "> [!note] Embedded diagram\n> " + v.attachment(pay, "attachments/diagram.png") + "\n"
        "> See also " + L(pay, auth, heading=auth.headings[0]) + ".\n\n"
        "## Decisions\n\n" + L(pay, g("Projects/Payments API/Meeting Notes.md"), form="bare")
        + " (same folder, so the bare name picks this folder's Meeting Notes) and "
        + L(pay, g("Projects/Q3 plan (draft).md")) + ".\n\n"
        + L(pay, auth, form="path", embed=True) + "\n\n"
        "The report: " + v.attachment(pay, "files/report.pdf", subpath="page=2", embed=False) + ".\n"
    )
    v.callouts += 1
    pay.headings = ["Overview", "Decisions"]
    mob = g("Projects/Mobile App/Design.md")
    mob.text = (
        "# Mobile design\n\nThe second note called Design. A self link by path: "
        + L(mob, mob, form="path", alias="this note") + "; the payments one is "
        + L(mob, pay, form="path") + ", or as a Markdown link "
        + v.md_link(mob, pay, label="payments design") + ".\n\n"
        "## Screens\n\n" + v.md_image(mob, "attachments/screenshot 2024-01-05.png", "screenshot")
        + "\n\n" + v.attachment(mob, "attachments/screenshot 2024-01-05.png", alias="300") + "\n"
    )
    mob.headings = ["Screens"]
    auth.text = (
        "# Auth Flow\n\n## " + auth.headings[0] + "\n\nTokens are short-lived. Probe phrase: "
        "vault-probe-auth-flow. ^authflow1\n\n" + "".join("## " + h + "\n\n" + paragraph(rng) + "\n\n"
                                                   for h in auth.headings[1:])
        + "Back to " + v.md_link(auth, pay, label="the design") + ", next to "
        + v.md_link(auth, other) + " and up to "
        + v.md_link(auth, g("Projects/Roadmap.md"), label="roadmap") + ".\n"
    )
    auth.block_ids = ["authflow1"]
    v.code_fake(0, 1)  # the Markdown link inside the code span below
    other.text = (
        "# Other Note\n\n## Overview\n\nLinked as `[text](Other%20Note.md)` from its neighbour: "
        + v.md_link(other, auth, label="auth") + " ↔ " + L(other, auth, block="authflow1") + ".\n"
    )
    other.headings = ["Overview"]
    road = g("Projects/Roadmap.md")
    road.text = (
        "# Roadmap\n\nCapital R. Its lowercase twin lives in Archive: "
        + L(road, g("Archive/roadmap.md"), form="path") + ". Design: "
        + L(road, pay, form="lower-path") + " (a path written in lower case).\n\n"
        "## Q3\n\n" + L(road, g("Projects/Q3 plan (draft).md"), form="path") + "\n"
    )
    road.headings = ["Q3"]
    aroad = g("Archive/roadmap.md")
    aroad.text = "# roadmap (old)\n\nLowercase r. Superseded by " + L(aroad, road, form="path") + ".\n"
    aroad.headings = []
    cafe = g("Resources/Café Ideas.md")
    cafe.text = (
        "---\ntags: [ideas]\ncreated: 2024-02-14\nmood: \"☕\"\n---\n"
        "# Café Ideas\n\nProbe phrase: vault-probe-cafe-ideas. Zürich, São Paulo, Kraków.\n\n"
        "## Menu\n\n- " + L(cafe, g("Areas/Japan/日本語メモ.md")) + "\n- "
        + L(cafe, g("Areas/Übersicht.md"), alias="Überblick") + "\n- "
        + v.tag(cafe, "idea") + " " + v.tag(cafe, "project/café") + "\n"
    )
    cafe.headings = ["Menu"]
    ueb = g("Areas/Übersicht.md")
    ueb.text = (
        "# Übersicht\n\nÜberblick über alle Bereiche. Probe phrase: vault-probe-uebersicht.\n\n"
        "## Bereiche\n\n" + hub_list(ueb, 8) + "\n- " + L(ueb, cafe) + "\n"
    )
    ueb.headings = ["Bereiche"]
    jp = g("Areas/Japan/日本語メモ.md")
    jp.text = (
        "# 日本語メモ\n\n日本語のメモです。Probe phrase: vault-probe-nihongo.\n\n"
        "## 見出し\n\n" + L(jp, cafe, alias="カフェ") + " と " + L(jp, g("Daily/🚀 Launch Checklist.md"))
        + "。\n"
    )
    jp.headings = ["見出し"]
    launch = g("Daily/🚀 Launch Checklist.md")
    launch.text = (
        "# 🚀 Launch Checklist\n\nProbe phrase: vault-probe-launch-emoji.\n\n"
        "## Checklist\n\n- [ ] Feature flags off " + v.tag(launch, "status/active") + "\n"
        "- [ ] " + L(launch, g("Projects/Q3 plan (draft).md"), heading="Goals") + "\n"
        "- [x] " + L(launch, jp) + "\n"
    )
    v.tasks_open += 2
    v.tasks_done += 1
    launch.headings = ["Checklist"]
    q3 = g("Projects/Q3 plan (draft).md")
    q3.text = (
        "---\ntags: [project]\nstatus: draft\nquarter: Q3\n---\n# Q3 plan (draft)\n\n"
        "Probe phrase: vault-probe-q3-plan.\n\n## Goals\n\nShip " + L(q3, pay) + " and "
        + L(q3, road) + ". " + v.unresolved(q3, "Pricing Model v2", alias="pricing") + ".\n\n"
        "## Dots\n\n" + L(q3, g("Resources/a.b.c.md")) + " is a note whose name has dots.\n"
    )
    q3.headings = ["Goals", "Dots"]
    abc = g("Resources/a.b.c.md")
    abc.text = ("# a.b.c\n\nDots in the file name (not an extension). "
                + L(abc, g("Resources/a_b_c.md")) + " differs only in punctuation.\n")
    abc.headings = []
    abc2 = g("Resources/a_b_c.md")
    abc2.text = "# a_b_c\n\nUnderscores; a slug that turns dots into `_` maps this and a.b.c to one id. " + L(abc2, abc) + "\n"
    abc2.headings = []
    g("Archive/Empty Note.md").text = ""
    g("Archive/Empty Note.md").headings = []
    bud = g("Areas/Finance/Budget Properties.md")
    bud.text = ("---\ntags: [finance, budget]\naliases: [Budget]\ncreated: 2024-03-01\n"
                "budget_eur: 12500\napproved: true\nreviewers:\n  - Dana\n  - Omar\n---\n")
    bud.headings = []
    for tname, extra in (("Templates/Daily Template.md", "{{date:YYYY-MM-DD}}"),
                         ("Templates/Meeting Template.md", "{{title}}")):
        t = g(tname)
        t.text = "---\ntags: [template]\n---\n# " + extra + "\n\n## Notes\n\n- \n"
        t.headings = []
    big = g("Archive/2022/Conference Compendium.md")
    parts = ["---\ntags: [conference, archive]\ncreated: 2022-10-30\n---\n",
             "# Conference Compendium\n\nProbe phrase: vault-probe-compendium.\n"]
    big.headings = []
    i = 0
    while sum(len(p.encode()) for p in parts) < 40000:
        i += 1
        h = "Talk %02d - %s %s" % (i, rng.choice(ADJECTIVES), rng.choice(NOUNS))
        big.headings.append(h)
        body = "\n\n".join(paragraph(rng, 4, 6) for _ in range(3))
        if i % 6 == 0:
            body += "\n\nRelated: " + L(big, rng.choice(popular))
        parts.append("\n## " + h + "\n\n" + body + "\n")
    big.text = "".join(parts)
    for n in N.values():  # what links may point at is what the hand-made text holds
        if n.text is not None:
            n.headings = re.findall(r"^#{2,6} (.+)$", n.text, re.M)
            n.block_ids = re.findall(r" \^([A-Za-z0-9-]+)$", n.text, re.M)


def daily_body(v, n, popular, prev):
    rng = v.rng
    out = ["# " + n.name + "\n"]
    links = []
    if prev is not None:
        links.append(v.link(n, prev, alias="yesterday"))
    for t in pick_targets(v, n, rng.randint(1, 4), popular):
        links.append(link_variant(v, n, t))
    out.append("## " + n.headings[0] + "\n")
    out.append(weave(rng, paragraph(rng, 1, 3), links) + "\n")
    items = []
    for _ in range(rng.randint(1, 3)):
        done = rng.random() < 0.5
        v.tasks_done += done
        v.tasks_open += not done
        items.append("- [" + ("x" if done else " ") + "] " + sentence(rng, 3, 6)[:-1])
    out.append("\n".join(items) + "\n")
    for h in n.headings[1:]:
        out.append("## " + h + "\n")
        out.append(paragraph(rng, 1, 2) + "\n")
    for b in n.block_ids:
        out.append(sentence(rng) + " ^" + b + "\n")
    return "\n".join(out)


def person_body(v, n, popular):
    rng = v.rng
    out = [front_matter(rng, n, [("role", rng.choice(["engineer", "designer", "manager", "recruiter"]))])]
    out.append("# " + n.name + "\n")
    ts = pick_targets(v, n, rng.randint(2, 5), popular)
    for i, h in enumerate(n.headings):
        out.append("## " + h + "\n")
        para = paragraph(rng, 1, 2)
        if i == 0:
            para = weave(rng, para, [link_variant(v, n, t) for t in ts])
        if i < len(n.block_ids):
            para += " ^" + n.block_ids[i]
        out.append(para + "\n")
    for b in n.block_ids[len(n.headings):]:
        out.append(sentence(rng) + " ^" + b + "\n")
    return "\n".join(out)


def build(seed, total):
    rng = random.Random(seed)
    v = Vault(rng)
    v.attachments = {
        "attachments/diagram.png": png_bytes(16, 16),
        "attachments/screenshot 2024-01-05.png": png_bytes(8, 4),
        "files/report.pdf": pdf_bytes(),
    }
    v.other_files = {
        "Boards/Planning.canvas": json.dumps(
            {"nodes": [{"id": "n1", "type": "file", "file": "Projects/Roadmap.md",
                        "x": 0, "y": 0, "width": 400, "height": 300}], "edges": []},
            indent=2).encode() + b"\n",
    }
    v.hidden_files = {
        ".obsidian/app.json": json.dumps({
            "alwaysUpdateLinks": True, "newLinkFormat": "shortest", "useMarkdownLinks": False,
            "attachmentFolderPath": "attachments", "showFrontmatter": True}, indent=2).encode() + b"\n",
        ".obsidian/appearance.json": b'{\n  "theme": "obsidian",\n  "baseFontSize": 16\n}\n',
        ".obsidian/core-plugins.json": json.dumps(
            ["file-explorer", "global-search", "graph", "backlink", "page-preview", "templates",
             "daily-notes", "canvas"], indent=2).encode() + b"\n",
        ".obsidian/community-plugins.json": b'[\n  "dataview"\n]\n',
        ".obsidian/workspace.json": json.dumps({"lastOpenFiles": ["Index.md", "Projects/Roadmap.md"]},
                                               indent=2).encode() + b"\n",
        ".obsidian/plugins/dataview/manifest.json": b'{\n  "id": "dataview",\n  "version": "0.5.66"\n}\n',
        ".obsidian/plugins/dataview/README.md": b"# Dataview\n\nA Markdown file inside .obsidian: "
                                                b"not a note. [[Index]]\n",
        ".obsidian/snippets/wide.css": b".wide { max-width: 100%; }\n",
        MARKER: b"written by scripts/gen_vault.py; safe to delete\n",
        ".trash/Deleted Idea.md": b"# Deleted Idea\n\nIn Obsidian's trash: not a note. [[Index]]\n",
    }
    plan_notes(v, total)
    notes = list(v.notes.values())
    # "Popular" notes get many linkers: a fixed, seeded selection.
    linkable = [n for n in notes if n.kind not in ("template",)]
    popular = rng.sample([n for n in linkable if n.kind in ("topic", "person", "design", "meeting")], 30)
    special_bodies(v, popular)
    prev = None
    for n in notes:
        if n.text is not None:
            continue
        if n.kind == "daily":
            n.text = daily_body(v, n, popular, prev)
            prev = n
        elif n.kind == "person":
            n.text = person_body(v, n, popular)
        else:
            n.text = topic_body(v, n, popular)
    # An indented code block in one topic note, after a paragraph and a blank line.
    first_topic = next(n for n in notes if n.kind == "topic")
    first_topic.text += "\nThe code below is indented four spaces:\n\n" + indented_code(v) + "\n"
    return v


# ---------------------------------------------------------------------------
# Manifest
# ---------------------------------------------------------------------------

def fm_only(text):
    if not text.startswith("---\n"):
        return False
    end = text.find("\n---\n", 3)
    return end >= 0 and text[end + 5:].strip() == ""


def has_cycle(edges, nodes):
    adj = {n: [] for n in nodes}
    for a, b in edges:
        adj[a].append(b)
    state = {}
    for start in nodes:
        if start in state:
            continue
        stack = [(start, iter(adj[start]))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return True
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(adj[nxt])))
    return False


def manifest(v, seed, total):
    notes = v.notes
    cat = {"note": 0, "attachment": 0, "same_note": 0, "unresolved": 0}
    for ln in v.links:
        cat[ln["category"]] += 1
    note_links = [ln for ln in v.links if ln["category"] == "note"]
    pairs = sorted({(ln["src"], ln["target"]) for ln in note_links})
    pairs_no_self = [p for p in pairs if p[0] != p[1]]
    md_pairs = {(m["src"], m["target"]) for m in v.md_links if m["category"] == "note"}
    all_pairs = sorted(set(pairs_no_self) | md_pairs)
    indeg = {}
    for a, b in pairs_no_self:
        indeg[b] = indeg.get(b, 0) + 1
    linked = {b for _, b in all_pairs}
    folders = sorted({posixpath.dirname(p) for p in notes} - {""})
    all_folders = set()
    for f in folders:
        parts = f.split("/")
        for i in range(1, len(parts) + 1):
            all_folders.add("/".join(parts[:i]))
    by_name = {}
    for n in notes.values():
        by_name.setdefault(n.name.lower(), []).append(n.path)
    collisions = [{"names": sorted({notes[p].name for p in ps}), "paths": sorted(ps),
                   "differ_in_case": len({notes[p].name for p in ps}) > 1}
                  for _, ps in sorted(by_name.items()) if len(ps) > 1]
    ambiguous = [{"source": ln["src"], "link": ln["raw"], "resolves_to": ln["target"]}
                 for ln in note_links
                 if ln["form"] in ("bare", "md-suffix", "auto")
                 and len(by_name[notes[ln["target"]].name.lower()]) > 1]
    md_cat = {}
    for m in v.md_links:
        md_cat[m["category"]] = md_cat.get(m["category"], 0) + 1
    inline_tags = sorted({t for _, t in v.tags_inline})
    non_ascii = sorted(p for p in notes if any(ord(c) > 127 for c in p))
    punct = sorted(p for p in notes
                   if any(not (c.isalnum() or c in " -_/") for c in notes[p].name))
    return {
        "generator": "scripts/gen_vault.py",
        "seed": seed,
        "notes_requested": total,
        "skip": [".obsidian/", ".trash/", ".vault-manifest.json"],
        "counts": {
            "notes": len(notes),
            "attachments": len(v.attachments),
            "other_files": len(v.other_files),
            "hidden_files": len(v.hidden_files),
            "hidden_md_files": sum(1 for p in v.hidden_files if p.endswith(".md")),
            "folders_with_notes": len(folders),
            "folders": len(all_folders),
            "max_note_depth": max(p.count("/") + 1 for p in notes),
            "notes_with_frontmatter": sum(1 for n in notes.values() if n.text.startswith("---\n")),
            "empty_notes": sum(1 for n in notes.values() if n.text == ""),
            "frontmatter_only_notes": sum(1 for n in notes.values() if fm_only(n.text)),
            "largest_note_bytes": max(len(n.text.encode()) for n in notes.values()),
            "tasks_open": v.tasks_open,
            "tasks_done": v.tasks_done,
            "callouts": v.callouts,
            "tables": v.tables,
        },
        "wikilinks": {
            "occurrences": len(v.links),
            "embeds": sum(1 for ln in v.links if ln["embed"]),
            "embeds_of_notes": sum(1 for ln in v.links if ln["embed"] and ln["category"] == "note"),
            "embeds_of_attachments": sum(1 for ln in v.links if ln["embed"] and ln["category"] == "attachment"),
            "resolved_to_note": cat["note"],
            "resolved_to_attachment": cat["attachment"],
            "same_note": cat["same_note"],
            "unresolved": cat["unresolved"],
            "with_heading": sum(1 for ln in v.links if ln["heading"]),
            "with_block_ref": sum(1 for ln in v.links if ln["block"]),
            "with_alias": sum(1 for ln in v.links if ln["alias"]),
            "path_form": sum(1 for ln in note_links if ln["form"] in ("path", "lower-path")),
            "distinct_note_pairs": len(pairs_no_self),
            "self_links": sum(1 for ln in note_links if ln["src"] == ln["target"]),
            "distinct_unresolved_targets": len({ln["target"].lower() for ln in v.links
                                                if ln["category"] == "unresolved"}),
            "distinct_unresolved_pairs": len({(ln["src"], ln["target"].lower()) for ln in v.links
                                              if ln["category"] == "unresolved"}),
            "in_code_ignored": v.ignored_in_code,
        },
        "markdown_links": {
            "occurrences": len(v.md_links),
            "to_note": md_cat.get("note", 0),
            "unresolved": md_cat.get("unresolved", 0),
            "external": md_cat.get("external", 0),
            "images": md_cat.get("image", 0),
            "in_code_ignored": v.ignored_md_in_code,
        },
        "graph": {
            "distinct_pairs_all_links": len(all_pairs),
            "has_cycle": has_cycle(pairs_no_self, list(notes)),
            "notes_with_2plus_linkers": sum(1 for c in indeg.values() if c >= 2),
            "max_in_degree": max(indeg.values()),
            "cross_folder_pairs": sum(1 for a, b in pairs_no_self
                                      if posixpath.dirname(a) != posixpath.dirname(b)),
            "notes_never_linked": len(set(notes) - linked),
        },
        "tags": {
            "inline_occurrences": len(v.tags_inline),
            "inline_distinct": inline_tags,
            "nested_inline_distinct": [t for t in inline_tags if "/" in t],
        },
        "name_collisions": collisions,
        "folder_notes": sorted(p for p in notes if p[:-3] in all_folders),
        "ambiguous_bare_links": ambiguous,
        "non_ascii_paths": non_ascii,
        "punctuation_names": punct,
        "special_notes": {
            "empty": "Archive/Empty Note.md",
            "frontmatter_only": "Areas/Finance/Budget Properties.md",
            "large": "Archive/2022/Conference Compendium.md",
            "indented_code": next(n.path for n in notes.values() if n.kind == "topic"),
        },
        "probes": {
            "vault-probe-index-root": "Index.md",
            "vault-probe-payments-design": "Projects/Payments API/Design.md",
            "vault-probe-auth-flow": "Projects/Payments API/Specs/Auth Flow.md",
            "vault-probe-cafe-ideas": "Resources/Café Ideas.md",
            "vault-probe-uebersicht": "Areas/Übersicht.md",
            "vault-probe-nihongo": "Areas/Japan/日本語メモ.md",
            "vault-probe-launch-emoji": "Daily/🚀 Launch Checklist.md",
            "vault-probe-q3-plan": "Projects/Q3 plan (draft).md",
            "vault-probe-compendium": "Archive/2022/Conference Compendium.md",
        },
        "unresolved_targets": sorted({ln["target"] for ln in v.links if ln["category"] == "unresolved"}),
        "attachments": sorted(v.attachments),
        "note_paths": sorted(notes),
        "note_pairs": [list(p) for p in pairs_no_self],
    }


# ---------------------------------------------------------------------------

def prepare_out(out):
    if os.path.exists(out):
        if not os.path.isdir(out):
            sys.exit("gen_vault: %s exists and is not a folder" % out)
        if os.listdir(out):
            if not os.path.exists(os.path.join(out, MARKER)):
                sys.exit("gen_vault: %s is not empty and was not written by gen_vault.py" % out)
            shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)


def write(out, rel, data):
    path = os.path.join(out, *rel.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--notes", type=int, default=320)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--manifest", help="where to write the manifest (default OUT/.vault-manifest.json)")
    a = ap.parse_args()
    if a.notes < 120:
        sys.exit("gen_vault: --notes must be at least 120 (the hand-made notes, people and daily notes)")
    v = build(a.seed, a.notes)
    prepare_out(a.out)
    for p, n in v.notes.items():
        write(a.out, p, n.text.encode("utf-8"))
    for group in (v.attachments, v.other_files, v.hidden_files):
        for p, data in group.items():
            write(a.out, p, data)
    m = manifest(v, a.seed, a.notes)
    mpath = a.manifest or os.path.join(a.out, ".vault-manifest.json")
    if os.path.dirname(mpath):
        os.makedirs(os.path.dirname(mpath), exist_ok=True)
    with open(mpath, "w", encoding="utf-8", newline="\n") as f:
        json.dump(m, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    c, w = m["counts"], m["wikilinks"]
    print("gen_vault: %d notes, %d attachments, %d wikilinks (%d distinct note pairs, %d unresolved) -> %s"
          % (c["notes"], c["attachments"], w["occurrences"], w["distinct_note_pairs"], w["unresolved"], a.out),
          file=sys.stderr)


if __name__ == "__main__":
    main()
