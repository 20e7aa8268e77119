"""The naive baseline of issue 12 on the conversation-log set: every window
of W consecutive lines of a session (step 1), ranked by Porter-stemmed BM25
(rank_bm25's Okapi), concatenated best first until the budget is spent; the
share of questions whose answer line is then in the text, by kind, at 500,
1000 and 2000 tokens (tokens counted as about 1.05 per word or mark).

    python3 -m venv /tmp/baseline && /tmp/baseline/bin/pip install rank_bm25 nltk pyyaml
    /tmp/baseline/bin/python tests/relevance/conversations/naive_baseline.py [W]

It needs packages the tests do not, so no test runs it; BENCHMARKS.md
compares memtree's packs with its figures.
"""

import glob
import os
import re
import sys
from collections import defaultdict

import yaml
from nltk.stem import PorterStemmer
from rank_bm25 import BM25Okapi

HERE = os.path.dirname(os.path.abspath(__file__))
BUDGETS = (500, 1000, 2000)
STOP = set(
    "a an the of to in on at is are was were be been did do does what who when where why how which and or for "
    "with his her their it that this i you he she they my your our".split()
)
stem = PorterStemmer().stem


def words(text: str) -> list[str]:
    return [stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]


def tokens(text: str) -> int:
    return int(len(re.findall(r"\w+|[^\w\s]", text)) * 1.05)


def main() -> None:
    width = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    windows = []
    for path in sorted(glob.glob(os.path.join(HERE, "store/sessions/*.md"))):
        lines = [l for l in open(path, encoding="utf-8").read().splitlines() if l.strip()]
        for i in range(max(1, len(lines) - width + 1)):
            windows.append("\n".join(lines[i : i + width]))
    bm25 = BM25Okapi([words(w) for w in windows])
    questions = yaml.safe_load(open(os.path.join(HERE, "queries.yaml"), encoding="utf-8"))
    found: dict[str, list[int]] = defaultdict(lambda: [0] * (1 + len(BUDGETS)))
    for q in questions:
        scores = bm25.get_scores(words(q["query"]))
        order = sorted(range(len(windows)), key=lambda i: -scores[i])
        row = found[q["kind"]]
        row[0] += 1
        for b, budget in enumerate(BUDGETS):
            used, text = 0, []
            for i in order:
                cost = tokens(windows[i]) + 8
                if used + cost > budget:
                    break
                used += cost
                text.append(windows[i])
            row[b + 1] += q["answer"] in "\n".join(text)
    total = [0] * (1 + len(BUDGETS))
    print(f"{width}-line windows\n{'kind':>10} queries " + " ".join(f"pack@{b:<5}" for b in BUDGETS))
    for kind, row in sorted(found.items()):
        print(f"{kind:>10} {row[0]:7} " + " ".join(f"{n / row[0]:10.3f}" for n in row[1:]))
        total = [a + b for a, b in zip(total, row)]
    print(f"{'all':>10} {total[0]:7} " + " ".join(f"{n / total[0]:10.3f}" for n in total[1:]))


if __name__ == "__main__":
    main()
