#!/usr/bin/env python3
"""Generate a large, deterministic, synthetic set of agent session transcripts.

    python3 scripts/gen_sessions.py OUT_DIR [--mb 200] [--seed 1] [--now 2026-11-27T12:00:00Z]
    python3 scripts/gen_sessions.py OUT_DIR --append 50 [--seed 1] [--now ...]

Writes, in the formats described in tests/fixtures/sessions/README.md:

    OUT_DIR/claude/<project>/<uuid>.jsonl              Claude Code (~/.claude/projects)
    OUT_DIR/claude/<project>/agent-<8 hex>.jsonl        Claude Code sub-agent transcripts
    OUT_DIR/codex/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl  Codex CLI (~/.codex/sessions)

About half the bytes go to each tool; the total is about --mb megabytes (10^6
bytes). Hundreds of sessions across 20 projects, start times spread over the
60 days before --now (default: the current time). The same --seed and --now
give byte-identical output. Record sizes are skewed like real transcripts:
most records are small, ~8% of tool outputs are tens of KB, ~0.5% are hundreds
of KB. Every line is valid JSON and every file ends with a newline.

--append N appends N records to the end of ~10% of the existing .jsonl files
under OUT_DIR (picked with --seed), continuing each session (same session id,
cwd, later timestamps), to exercise incremental re-scans.

Both modes print a one-line JSON summary to stdout:
    {"mode": ..., "files": ..., "bytes": ..., "records": ..., "seconds": ...}
Only the Python standard library is used.
"""

import argparse
import datetime as dt
import json
import os
import random
import sys
import time
import uuid

DAY = 86400.0

PROJECTS = [
    # (cwd, git branches)
    ("/home/dev/src/payments-api", ["main", "feat/job-queue", "fix/refunds"]),
    ("/home/dev/src/web.dashboard", ["main", "fix/flaky-tests", "feat/usage-chart"]),
    ("/home/dev/src/ledger-sync", ["main", "chore/deps"]),
    ("/home/dev/src/chat-gateway", ["main", "fix/ws-memory", "feat/presence"]),
    ("/home/dev/src/reports-service", ["main", "feat/streaming-export"]),
    ("/home/dev/ops/deploy-scripts", ["main"]),
    ("/home/dev/src/auth.service", ["main", "feat/passkeys", "fix/session-expiry"]),
    ("/home/dev/src/mobile-app", ["develop", "release/4.2", "feat/offline-mode"]),
    ("/home/dev/src/search-indexer", ["main", "perf/batching"]),
    ("/home/dev/src/infra/terraform", ["main", "feat/eks-1.31"]),
    ("/home/dev/src/data-pipeline", ["main", "fix/late-events"]),
    ("/home/dev/src/notifications", ["main", "feat/digest-emails"]),
    ("/home/dev/src/cli-tools", ["main"]),
    ("/home/dev/src/docs.site", ["main", "content/api-v3"]),
    ("/home/dev/src/ml-features", ["main", "exp/embeddings"]),
    ("/home/dev/src/billing-worker", ["main", "fix/proration"]),
    ("/home/dev/src/admin-panel", ["main", "feat/audit-log"]),
    ("/home/dev/src/rust-parser", ["main", "perf/simd"]),
    ("/home/dev/scratch", [""]),
    ("/home/dev/src/monorepo/packages/ui-kit", ["main", "feat/tokens"]),
]

FILES = [
    "src/index.ts", "src/server.ts", "src/routes/payments.ts", "src/jobs/queue.ts", "src/jobs/worker.ts",
    "src/billing/invoices.ts", "src/utils/dates.ts", "src/components/InvoiceTable.tsx", "src/hooks/useInvoices.ts",
    "src/main.rs", "src/lib.rs", "src/fanout.rs", "src/ws.rs", "src/config.rs", "src/metrics.rs", "Cargo.toml",
    "reports/export.py", "reports/db.py", "tests/test_export.py", "template.yaml", "Dockerfile", "Makefile",
    "package.json", "tsconfig.json", ".github/workflows/ci.yml", "README.md", "docs/architecture.md",
    "migrations/0042_add_index.sql", "internal/store/postgres.go", "cmd/server/main.go", "pkg/api/handler.go",
    "app/models/user.rb", "lib/parser.ex", "scripts/deploy.sh", "terraform/main.tf", "k8s/deployment.yaml",
]

WORDS = (
    "the a to of and in is for that it with on this we be as are not by if or can from at but should when "
    "function test build error file config request response handler queue worker database index cache "
    "timeout retry token session user payment invoice refund webhook event stream buffer channel socket "
    "memory leak lock mutex thread async await future promise callback closure struct trait impl module "
    "import export class method field column table query migration schema transaction commit rollback "
    "deploy release docker image container pod node cluster region bucket upload download parse format "
    "serialize json yaml csv log metric trace span latency throughput p99 flaky failing passing green red "
    "fix refactor rename extract inline move delete add update remove check verify assert expect mock stub "
    "é – ✓ → ü 日本 ñ"
).split()

PROMPTS = [
    "fix the failing test in {f}",
    "why does {f} throw on empty input? the stack trace is below",
    "add structured logging to {f}, we can't debug the {w} issue in prod",
    "refactor {f} so the {w} logic is testable",
    "can you explain what {f} does with the {w}?",
    "rename {w} to {w2} everywhere, but don't touch generated code",
    "the CI job for {f} times out after 10 minutes since yesterday, figure out why",
    "write tests for the {w} edge cases in {f}",
    "bump the {w} dependency and fix whatever breaks",
    "review my changes in {f} before I open the PR",
    "make {f} handle {w} errors with a retry and exponential backoff",
    "profile {f}; the {w} endpoint got 3x slower after the last deploy",
    "ok go ahead",
    "yes",
    "looks good, commit it",
    "no, keep the old behaviour for {w} and only change {f}",
]

COMMANDS = [
    "npm test", "npm run lint", "npx tsc --noEmit", "cargo test", "cargo clippy --all-targets -- -D warnings",
    "cargo build --release", "pytest -q", "go test ./...", "git status", "git diff", "git log --oneline -20",
    "docker compose logs api --tail 2000", "kubectl logs deploy/api --since=1h", "cat logs/app.log",
    "rg -n TODO src", "ls -la", "make build", "terraform plan", "journalctl -u worker --since today",
]

CLAUDE_VERSIONS_V1 = ["1.0.88", "1.0.98", "1.0.113"]
CLAUDE_VERSIONS_V2 = ["2.0.37", "2.0.42", "2.0.50", "2.0.55"]
CLAUDE_MODELS = ["claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001"]
CODEX_VERSIONS = ["0.46.0", "0.53.0", "0.58.0", "0.59.0"]
CODEX_MODELS = ["gpt-5-codex", "gpt-5.1-codex", "gpt-5.1-codex-max"]
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def iso(t):
    ms = int((t - int(t)) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % ms


def parse_iso(s):
    s = s.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    d = dt.datetime.fromisoformat(s)
    if d.tzinfo is None:
        d = d.replace(tzinfo=dt.timezone.utc)
    return d.timestamp()


def claude_folder(cwd):
    return cwd.replace("/", "-").replace(".", "-")


class Pools:
    """Large pre-built text pools; records take slices so generation stays fast."""

    def __init__(self, rng):
        self.rng = rng
        words = WORDS
        self.prose = " ".join(rng.choice(words) for _ in range(120_000))
        levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
        comps = ["api", "worker", "db", "http", "queue", "auth", "cache", "scheduler"]
        lines = []
        t0 = 1_700_000_000.0
        for i in range(22_000):
            lines.append("%s %-5s [%s] %s" % (iso(t0 + i * 0.37), rng.choice(levels), rng.choice(comps),
                                              " ".join(rng.choice(words) for _ in range(rng.randint(4, 14)))))
        self.log = "\n".join(lines) + "\n"
        code_templates = [
            "    let {w} = {w2}.get(&key).cloned().unwrap_or_default();",
            "    if ({w} == null) {{ return {w2}; }}",
            "def {w}_{w2}(self, value):",
            "        return self.{w}.{w2}(value)",
            "export async function {w}{W2}(input: {W}): Promise<void> {{",
            "  const {w} = await db.query(\"SELECT * FROM {w2} WHERE id = $1\", [id]);",
            "func ({w} *{W}) {W2}(ctx context.Context) error {{",
            "}}",
            "",
            "// TODO({w}): handle {w2} when the {w} is empty",
        ]
        code = []
        alnum = [w for w in words if w.isascii() and w.isalpha() and len(w) > 2]
        for i in range(16_000):
            w, w2 = rng.choice(alnum), rng.choice(alnum)
            code.append(rng.choice(code_templates).format(w=w, w2=w2, W=w.title(), W2=w2.title()))
        self.code_lines = code
        numbered = ["%6d\u2192%s" % (i + 1, line) for i, line in enumerate(code)]
        self.code = "\n".join(code)
        self.numbered = "\n".join(numbered)
        # line start offsets for slicing by line
        self.code_off, self.num_off = [0], [0]
        for a, b in zip(code, numbered):
            self.code_off.append(self.code_off[-1] + len(a) + 1)
            self.num_off.append(self.num_off[-1] + len(b) + 1)

    def text(self, n):
        p = self.prose
        n = min(n, len(p) - 1)
        a = self.rng.randrange(0, len(p) - n)
        return p[a:a + n].strip()

    def logs(self, n):
        p = self.log
        out = []
        while n > 0:
            k = min(n, len(p) - 1)
            a = p.find("\n", self.rng.randrange(0, len(p) - k)) + 1
            out.append(p[a:a + k])
            n -= k
        return "".join(out)

    def code_slice(self, n):
        """(plain, numbered) slices of about n characters starting at a line boundary."""
        lines = len(self.code_lines)
        avg = self.code_off[-1] / lines
        k = max(1, min(lines - 1, int(n / avg)))
        i = self.rng.randrange(0, lines - k)
        plain = self.code[self.code_off[i]:self.code_off[i + k] - 1]
        num = self.numbered[self.num_off[i]:self.num_off[i + k] - 1]
        return plain, num, i + 1, k


def out_size(rng):
    r = rng.random()
    if r < 0.005:
        return rng.randint(100_000, 500_000)
    if r < 0.085:
        return rng.randint(10_000, 60_000)
    return max(20, min(8000, int(rng.lognormvariate(6.4, 1.1))))


def fake_secret(rng):
    kind = rng.randrange(3)
    if kind == 0:
        return "AWS_ACCESS_KEY_ID=AKIA" + "".join(rng.choice(B62[:36]) for _ in range(16))
    if kind == 1:
        return "GITHUB_TOKEN=ghp_" + "".join(rng.choice(B62) for _ in range(36))
    return "OPENAI_API_KEY=sk-" + "".join(rng.choice(B62) for _ in range(48))


class Gen:
    def __init__(self, rng, pools, now):
        self.rng = rng
        self.p = pools
        self.now = now

    def uid(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def b62(self, n):
        r = self.rng
        return "".join(r.choice(B62) for _ in range(n))

    def prompt(self):
        r = self.rng
        tpl = r.choice(PROMPTS)
        s = tpl.format(f=r.choice(FILES), w=r.choice(WORDS), w2=r.choice(WORDS))
        if r.random() < 0.1:
            s += "\n\n```\n" + self.p.logs(r.randint(500, 5000)) + "```"
        elif r.random() < 0.3:
            s += " " + self.p.text(r.randint(40, 400))
        return s


# ----------------------------------------------------------------------------------------------
# Claude Code


class ClaudeState:
    def __init__(self, cwd, sid, version, branch, t, agent_id=None, side=False, last=None):
        self.cwd, self.sid, self.version, self.branch = cwd, sid, version, branch
        self.t = t
        self.agent_id = agent_id
        self.side = side
        self.last = last
        self.v2 = version.startswith("2.")
        self.model = CLAUDE_MODELS[0]


def c_head(st, typ):
    d = {"parentUuid": st.last, "isSidechain": st.side, "userType": "external", "cwd": st.cwd,
         "sessionId": st.sid, "version": st.version, "gitBranch": st.branch}
    if st.agent_id:
        d["agentId"] = st.agent_id
    d["type"] = typ
    return d


def claude_stream(g, st, extra_files, allow_task=True, end_time=None, first_prompt=None):
    """Yields (line, turn_end). Continues the session in `st` forever."""
    r = g.rng
    p = g.p

    def adv(lo, hi):
        st.t += r.uniform(lo, hi)
        if end_time is not None and st.t > end_time:
            st.t = end_time
        return iso(st.t)

    def user(content, extra=None, lo=1, hi=4):
        d = c_head(st, "user")
        d["message"] = {"role": "user", "content": content}
        u = g.uid()
        d["uuid"] = u
        d["timestamp"] = adv(lo, hi)
        if extra:
            d.update(extra)
        st.last = u
        return dumps(d)

    def assistant(block, stop=None, mid=None, rid=None):
        d = c_head(st, "assistant")
        del d["type"]
        out = r.randint(20, 900)
        d["message"] = {"model": st.model, "id": mid or "msg_01" + g.b62(22), "type": "message", "role": "assistant",
                        "content": [block], "stop_reason": stop, "stop_sequence": None,
                        "usage": {"input_tokens": r.randint(3, 12), "cache_creation_input_tokens": r.randint(0, 4000),
                                  "cache_read_input_tokens": r.randint(10_000, 150_000),
                                  "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                                  "output_tokens": out, "service_tier": "standard"}}
        d["requestId"] = rid or "req_011C" + g.b62(20)
        d["type"] = "assistant"
        u = g.uid()
        d["uuid"] = u
        d["timestamp"] = adv(1, 8)
        st.last = u
        return dumps(d)

    def tool_result(tid, content, tur, is_error=False):
        return user([{"tool_use_id": tid, "type": "tool_result", "content": content, "is_error": is_error}],
                    {"toolUseResult": tur}, 0.2, 20)

    tools = ["Read"] * 6 + ["Bash"] * 6 + ["Edit"] * 4 + ["Grep"] * 2 + ["Write", "Glob", "TodoWrite"]
    while True:
        if st.v2 and not st.side:
            nxt = g.uid()
            yield dumps({"type": "file-history-snapshot", "messageId": nxt,
                         "snapshot": {"messageId": nxt, "trackedFileBackups": {}, "timestamp": iso(st.t)},
                         "isSnapshotUpdate": False}), False
        yield user(first_prompt or g.prompt(), lo=20, hi=600), False
        first_prompt = None
        mid, rid = "msg_01" + g.b62(22), "req_011C" + g.b62(20)
        if r.random() < 0.4:
            yield assistant({"type": "thinking", "thinking": p.text(r.randint(100, 2500)),
                             "signature": g.b62(300)}, mid=mid, rid=rid), False
        yield assistant({"type": "text", "text": p.text(r.randint(30, 400))}, mid=mid, rid=rid), False
        n_tools = r.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 12])
        for _ in range(n_tools):
            tool = "Task" if allow_task and r.random() < 0.006 else r.choice(tools)
            tid = "toolu_01" + g.b62(22)
            path = st.cwd + "/" + r.choice(FILES)
            if tool == "Read":
                plain, num, start, k = p.code_slice(out_size(r))
                yield assistant({"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}), False
                yield tool_result(tid, num, {"type": "text", "file": {"filePath": path, "content": plain, "numLines": k,
                                                                     "startLine": start, "totalLines": start + k}}), False
            elif tool == "Bash":
                cmd = r.choice(COMMANDS)
                if r.random() < 0.02:
                    cmd = 'psql "host=db.internal dbname=app user=app password=%s" -c "select 1"' % g.b62(14)
                yield assistant({"type": "tool_use", "id": tid, "name": "Bash",
                                 "input": {"command": cmd, "description": p.text(r.randint(15, 60))}}), False
                out = p.logs(out_size(r))
                if r.random() < 0.01:
                    out = fake_secret(r) + "\n" + out
                err = r.random() < 0.08
                yield tool_result(tid, out, ("Error: " + out) if err else
                                  {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}, err), False
            elif tool == "Edit":
                old, _, _, _ = p.code_slice(r.randint(60, 1500))
                new, _, _, _ = p.code_slice(r.randint(60, 1500))
                yield assistant({"type": "tool_use", "id": tid, "name": "Edit",
                                 "input": {"file_path": path, "old_string": old, "new_string": new}}), False
                _, snip, _, _ = p.code_slice(r.randint(300, 1500))
                yield tool_result(tid, "The file %s has been updated. Here's the result of running `cat -n` on a "
                                       "snippet of the edited file:\n%s" % (path, snip),
                                  {"filePath": path, "oldString": old, "newString": new, "originalFile": None,
                                   "structuredPatch": [], "userModified": False, "replaceAll": False}), False
            elif tool == "Write":
                content, _, _, _ = p.code_slice(r.randint(300, 9000))
                yield assistant({"type": "tool_use", "id": tid, "name": "Write",
                                 "input": {"file_path": path, "content": content}}), False
                yield tool_result(tid, "File created successfully at: " + path,
                                  {"type": "create", "filePath": path, "content": content, "structuredPatch": []}), False
            elif tool in ("Grep", "Glob"):
                hits = [st.cwd + "/" + r.choice(FILES) for _ in range(r.randint(0, 30))]
                inp = {"pattern": r.choice(WORDS), "path": st.cwd}
                if tool == "Grep":
                    inp["output_mode"] = "files_with_matches"
                yield assistant({"type": "tool_use", "id": tid, "name": tool, "input": inp}), False
                res = ("Found %d files\n" % len(hits) + "\n".join(hits)) if hits else "No files found"
                yield tool_result(tid, res, {"filenames": hits, "numFiles": len(hits)}), False
            elif tool == "TodoWrite":
                todos = [{"content": p.text(r.randint(20, 80)), "status": r.choice(["pending", "in_progress", "completed"]),
                          "activeForm": p.text(r.randint(20, 80))} for _ in range(r.randint(2, 7))]
                yield assistant({"type": "tool_use", "id": tid, "name": "TodoWrite", "input": {"todos": todos}}), False
                yield tool_result(tid, "Todos have been modified successfully. Ensure that you continue to use the todo "
                                       "list to track your progress.", {"oldTodos": [], "newTodos": todos}), False
            else:  # Task: a sub-agent, inline (1.0.x) or in agent-<id>.jsonl (2.0.x)
                prompt = p.text(r.randint(150, 900))
                yield assistant({"type": "tool_use", "id": tid, "name": "Task",
                                 "input": {"description": p.text(30), "prompt": prompt,
                                           "subagent_type": r.choice(["general-purpose", "Explore"])}}), False
                agent_id = "%08x" % r.getrandbits(32)
                sub = ClaudeState(st.cwd, st.sid, st.version, st.branch, st.t, agent_id if st.v2 else None, True, None)
                sub.model = CLAUDE_MODELS[2]
                sub_lines = []
                sub_stream = claude_stream(g, sub, extra_files, allow_task=False, end_time=end_time,
                                           first_prompt=prompt)
                for line, end in sub_stream:
                    sub_lines.append(line)
                    if end and len(sub_lines) > 4:
                        break
                report = p.text(r.randint(200, 2500))
                if st.v2:
                    extra_files.append(("agent-%s.jsonl" % agent_id, sub_lines))
                else:
                    for line in sub_lines:
                        yield line, False
                st.t = max(st.t, sub.t)
                tur = {"status": "completed", "prompt": prompt, "content": [{"type": "text", "text": report}],
                       "totalDurationMs": r.randint(5000, 200000), "totalTokens": r.randint(5000, 90000),
                       "totalToolUseCount": r.randint(1, 20)}
                if st.v2:
                    tur["agentId"] = agent_id
                yield tool_result(tid, [{"type": "text", "text": report}], tur), False
        yield assistant({"type": "text", "text": p.text(r.randint(40, 1200))}, stop="end_turn"), True


def gen_claude_session(g, proj, start, target, folder):
    r = g.rng
    cwd, branches = proj
    v2 = r.random() < 0.8
    version = r.choice(CLAUDE_VERSIONS_V2 if v2 else CLAUDE_VERSIONS_V1)
    st = ClaudeState(cwd, g.uid(), version, r.choice(branches), start)
    st.model = r.choice(CLAUDE_MODELS[:2])
    extra = []
    lines = []
    size = 0
    summary_at = r.random() < 0.3
    for line, end in claude_stream(g, st, extra, end_time=g.now):
        lines.append(line)
        size += len(line) + 1
        if end and size >= target:
            break
    if summary_at:
        lines.insert(0, dumps({"type": "summary", "summary": g.p.text(r.randint(20, 70)), "leafUuid": st.last}))
    files = [(os.path.join(folder, st.sid + ".jsonl"), lines)]
    for name, sub in extra:
        files.append((os.path.join(folder, name), sub))
    return files


# ----------------------------------------------------------------------------------------------
# Codex CLI


def env_context(cwd):
    return ("<environment_context>\n  <cwd>%s</cwd>\n  <approval_policy>on-request</approval_policy>\n"
            "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
            "  <shell>bash</shell>\n</environment_context>" % cwd)


class CodexState:
    def __init__(self, cwd, t, model, legacy=False):
        self.cwd, self.t, self.model, self.legacy = cwd, t, model, legacy
        self.tot = [0, 0, 0, 0]


def codex_stream(g, st, end_time=None):
    r = g.rng
    p = g.p

    def line(typ, payload, lo=0.01, hi=2.0):
        st.t += r.uniform(lo, hi)
        if end_time is not None and st.t > end_time:
            st.t = end_time
        if st.legacy:
            return dumps(payload) if typ == "response_item" else None
        return dumps({"timestamp": iso(st.t), "type": typ, "payload": payload})

    def call_id():
        return "call_" + g.b62(24)

    def output(cid, text, code=0):
        return line("response_item", {"type": "function_call_output", "call_id": cid,
                                       "output": dumps({"output": text, "metadata": {
                                           "exit_code": code, "duration_seconds": round(r.uniform(0.01, 60), 1)}})},
                    0.1, 30)

    def usage():
        i, c, o, rs = r.randint(500, 30000), r.randint(0, 120000), r.randint(20, 3000), r.randint(0, 2000)
        last = {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": rs,
                "total_tokens": i + o}
        st.tot = [a + b for a, b in zip(st.tot, [i, c, o, rs])]
        tot = {"input_tokens": st.tot[0], "cached_input_tokens": st.tot[1], "output_tokens": st.tot[2],
               "reasoning_output_tokens": st.tot[3], "total_tokens": st.tot[0] + st.tot[2]}
        return line("event_msg", {"type": "token_count", "info": {"total_token_usage": tot, "last_token_usage": last,
                                                                  "model_context_window": 272000},
                                  "rate_limits": {"primary": {"used_percent": float(r.randint(0, 100)),
                                                              "window_minutes": 299,
                                                              "resets_in_seconds": r.randint(0, 18000)},
                                                  "secondary": {"used_percent": float(r.randint(0, 100)),
                                                                "window_minutes": 10079,
                                                                "resets_in_seconds": r.randint(0, 600000)}}})

    while True:
        text = g.prompt()
        out = [line("response_item", {"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": text}]}, 20, 600),
               line("event_msg", {"type": "user_message", "message": text, "images": []}),
               line("turn_context", {"cwd": st.cwd, "approval_policy": "on-request",
                                     "sandbox_policy": {"mode": "workspace-write", "network_access": False,
                                                        "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False},
                                     "model": st.model, "effort": r.choice(["low", "medium", "high"]),
                                     "summary": "auto"})]
        for x in out:
            if x:
                yield x, False
        for _ in range(r.choice([0, 1, 2, 2, 3, 4, 5, 7, 10])):
            if r.random() < 0.5:
                s = "**" + p.text(r.randint(15, 60)) + "**"
                for x in (line("event_msg", {"type": "agent_reasoning", "text": s}, 1, 8),
                          line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": s}],
                                                 "content": None, "encrypted_content": "gAAAAAB" + g.b62(r.randint(400, 3000))})):
                    if x:
                        yield x, False
            kind = r.random()
            cid = call_id()
            if kind < 0.7 or st.legacy:
                cmd = ["bash", "-lc", r.choice(COMMANDS)]
                args = {"command": cmd, "workdir": st.cwd}
                if r.random() < 0.02:
                    args["command"] = ["bash", "-lc", "curl -H 'Authorization: Bearer sk-proj-%s' https://api.openai.com/v1/models"
                                       % g.b62(48)]
                yield line("response_item", {"type": "function_call", "name": "shell", "arguments": dumps(args),
                                             "call_id": cid}), False
                text_out = p.logs(out_size(r))
                if r.random() < 0.01:
                    text_out = fake_secret(r) + "\n" + text_out
                yield output(cid, text_out, 0 if r.random() < 0.9 else 1), False
            elif kind < 0.85:
                f = r.choice(FILES)
                body, _, _, _ = p.code_slice(r.randint(200, 5000))
                patch = "*** Begin Patch\n*** Update File: %s\n@@\n%s\n*** End Patch\n" % (
                    f, "\n".join(("+" if i % 3 else "-") + l for i, l in enumerate(body.split("\n"))))
                yield line("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": cid,
                                             "name": "apply_patch", "input": patch}), False
                yield line("response_item", {"type": "custom_tool_call_output", "call_id": cid,
                                             "output": dumps({"output": "Success. Updated the following files:\nM %s\n" % f,
                                                              "metadata": {"exit_code": 0, "duration_seconds": 0.0}})}), False
            else:
                yield line("response_item", {"type": "local_shell_call", "call_id": cid, "status": "completed",
                                             "action": {"type": "exec", "command": ["rg", "-n", r.choice(WORDS), "src"],
                                                        "timeout_ms": None, "working_directory": st.cwd, "env": None,
                                                        "user": None}}), False
                yield output(cid, p.logs(out_size(r))), False
            u = usage()
            if u:
                yield u, False
        ans = p.text(r.randint(40, 1500))
        for x in (line("event_msg", {"type": "agent_message", "message": ans}, 1, 20),
                  line("response_item", {"type": "message", "role": "assistant",
                                         "content": [{"type": "output_text", "text": ans}]})):
            if x:
                yield x, False
        u = usage()
        if u:
            yield u, False
        if st.legacy:
            yield dumps({"record_type": "state"}), False
        if r.random() < 0.03 and not st.legacy:
            yield line("compacted", {"message": p.text(r.randint(500, 4000))}, 5, 30), False
        yield None, True


def gen_codex_session(g, proj, start, target, root):
    r = g.rng
    cwd, branches = proj
    legacy = r.random() < 0.02
    ms = int(start * 1000)
    sid = str(uuid.UUID(int=(ms << 80) | r.getrandbits(80)))
    sid = sid[:14] + "7" + sid[15:19] + "%x" % (8 | (int(sid[19], 16) & 3)) + sid[20:]
    st = CodexState(cwd, start, r.choice(CODEX_MODELS), legacy)
    git = {"commit_hash": "%040x" % r.getrandbits(160), "branch": r.choice(branches) or "main",
           "repository_url": "git@github.com:dev/%s.git" % cwd.rstrip("/").split("/")[-1]}
    lines = []
    if legacy:
        lines.append(dumps({"id": sid, "timestamp": iso(start), "instructions": None, "git": git}))
        lines.append(dumps({"record_type": "state"}))
        lines.append(dumps({"type": "message", "id": None, "role": "user",
                            "content": [{"type": "input_text", "text": env_context(cwd)}]}))
    else:
        t = iso(start)
        lines.append(dumps({"timestamp": t, "type": "session_meta", "payload": {
            "id": sid, "timestamp": t, "cwd": cwd, "originator": "codex_cli_rs", "cli_version": r.choice(CODEX_VERSIONS),
            "instructions": None, "source": "cli", "model_provider": "openai", "git": git}}))
        if r.random() < 0.5:
            lines.append(dumps({"timestamp": t, "type": "response_item", "payload": {
                "type": "message", "role": "user", "content": [{"type": "input_text", "text":
                    "# AGENTS.md instructions for %s\n\n<INSTRUCTIONS>\n%s\n</INSTRUCTIONS>" % (cwd, g.p.text(r.randint(200, 3000)))}]}}))
        lines.append(dumps({"timestamp": t, "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": env_context(cwd)}]}}))
    size = sum(len(x) + 1 for x in lines)
    for line, end in codex_stream(g, st, end_time=g.now):
        if line:
            lines.append(line)
            size += len(line) + 1
        if end and size >= target:
            break
    name = "rollout-%s-%s.jsonl" % (time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime(start)), sid)
    path = os.path.join(root, time.strftime("%Y/%m/%d", time.gmtime(start)), name)
    return [(path, lines)]


# ----------------------------------------------------------------------------------------------


def write_file(path, lines, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    with open(path, mode + "b") as f:
        f.write(data)
    return len(data)


def generate(out, mb, seed, now):
    rng = random.Random(seed)
    g = Gen(rng, Pools(rng), now)
    budget_each = mb * 1_000_000 / 2
    n_sessions = int(max(20, min(2000, budget_each / 330_000)))
    stats = {"files": 0, "bytes": 0, "records": 0, "claude_files": 0, "codex_files": 0}
    for kind in ("claude", "codex"):
        root = os.path.join(out, kind)
        written = 0
        i = 0
        while written < budget_each:
            left = budget_each - written
            per = left / max(1, n_sessions - i)
            target = max(3000, per * rng.lognormvariate(0, 0.8) / 1.377)
            if n_sessions - i <= 1:
                target = left
            proj = PROJECTS[min(len(PROJECTS) - 1, int(rng.paretovariate(1.2)) - 1) if rng.random() < 0.5
                            else rng.randrange(len(PROJECTS))]
            start = now - rng.uniform(DAY, 60 * DAY)  # sessions last hours at most, so they end before --now
            if kind == "claude":
                files = gen_claude_session(g, proj, start, target, os.path.join(root, claude_folder(proj[0])))
            else:
                files = gen_codex_session(g, proj, start, target, root)
            for path, lines in files:
                n = write_file(path, lines)
                written += n
                stats["bytes"] += n
                stats["records"] += len(lines)
                stats["files"] += 1
                stats[kind + "_files"] += 1
            i += 1
    return stats


def last_json(data):
    """Parsed records from the end of a file, newest first (skipping unparsable lines)."""
    for raw in reversed(data.split(b"\n")):
        if raw.strip():
            try:
                yield json.loads(raw)
            except ValueError:
                continue


def append(out, n, seed, now):
    rng = random.Random(seed * 7919 + 17)
    g = Gen(rng, Pools(rng), None)
    paths = []
    for kind in ("claude", "codex"):
        for dp, dns, fns in os.walk(os.path.join(out, kind)):
            dns.sort()
            paths += [os.path.join(dp, f) for f in sorted(fns) if f.endswith(".jsonl")]
    k = max(1, round(len(paths) * 0.1)) if paths else 0
    chosen = sorted(rng.sample(paths, k))
    stats = {"mode": "append", "files": 0, "bytes": 0, "records": 0}
    for path in chosen:
        with open(path, "rb") as f:
            data = f.read()
        lines = []
        if "/claude/" in path.replace(os.sep, "/"):
            ctx = next((rec for rec in last_json(data) if rec.get("sessionId") and rec.get("cwd")), None)
            if ctx is None:
                continue
            last_t = next((parse_iso(rec["timestamp"]) for rec in last_json(data) if "timestamp" in rec), now)
            last_uuid = next((rec["uuid"] for rec in last_json(data) if rec.get("uuid")), None)
            st = ClaudeState(ctx["cwd"], ctx["sessionId"], ctx.get("version", "2.0.50"), ctx.get("gitBranch", ""),
                             last_t + rng.uniform(60, 3600), ctx.get("agentId"), bool(ctx.get("isSidechain")), last_uuid)
            stream = claude_stream(g, st, [], allow_task=False)
            for line, _ in stream:
                lines.append(line)
                if len(lines) >= n:
                    break
        else:
            try:
                first = json.loads(data.split(b"\n", 1)[0])
            except ValueError:
                continue
            legacy = "payload" not in first
            cwd = first.get("payload", {}).get("cwd") or "/home/dev/src/unknown"
            if legacy:
                head = data[:20000].decode("utf-8", "replace")
                a = head.find("<cwd>")
                if a >= 0:
                    cwd = head[a + 5:head.find("</cwd>", a)]
            last_t = next((parse_iso(rec["timestamp"]) for rec in last_json(data) if "timestamp" in rec), now)
            st = CodexState(cwd, last_t + rng.uniform(60, 3600), CODEX_MODELS[1], legacy)
            for line, _ in codex_stream(g, st):
                if line:
                    lines.append(line)
                if len(lines) >= n:
                    break
        prefix = b"" if data.endswith(b"\n") or not data else b"\n"
        with open(path, "ab") as f:
            blob = prefix + ("\n".join(lines) + "\n").encode("utf-8")
            f.write(blob)
        stats["files"] += 1
        stats["bytes"] += len(blob)
        stats["records"] += len(lines)
    return stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--mb", type=float, default=200, help="total size in MB (10^6 bytes), split ~evenly (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--now", help="ISO 8601 end of the 60-day window (default: current time)")
    ap.add_argument("--append", type=int, metavar="N", help="append N records to ~10%% of the existing files")
    a = ap.parse_args(argv)
    now = parse_iso(a.now) if a.now else time.time()
    t0 = time.time()
    if a.append is not None:
        stats = append(a.out_dir, a.append, a.seed, now)
    else:
        stats = {"mode": "generate"}
        stats.update(generate(a.out_dir, a.mb, a.seed, now))
    stats["seconds"] = round(time.time() - t0, 2)
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
