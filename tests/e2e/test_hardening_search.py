"""What a user found in search (issue 10), each test failed before its fix:

- a typo of a word the store holds finds it (one edit, a swap of two
  neighbouring letters counted as one);
- a search while the index is still being built never answers a bare
  `No matches.`: it waits a while, then says how far the index is.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

NOTES = {
    "db": "# Databases\n\nThe primary database is PostgreSQL; use postgres for local work.\n",
    "mail": "# Mail\n\nServers receive mail on port 25.\n",
    "config": "# Settings\n\nThe configuration lives in /etc/app.\n",
    "ops": "# Operations\n\nThe worker restarts nightly after the backup.\n",
    "net": "# Network\n\nThe firewall allows the gateway.\n",
}
# One-edit typos as users make them, each with the document it must find.
TYPOS = [
    ("databse", "db"), ("postgress", "db"), ("recieve", "mail"), ("configuraton", "config"),
    ("restrats", "ops"), ("nightyl", "ops"), ("firewal", "net"), ("gatewya", "net"),
]


async def test_one_edit_typos_find_the_words_of_the_store(serve, cli):
    """Finding 9: `databse`, `recieve`, `configuraton`, `postgress`,
    `restrats`, `nightyl` found nothing (2 of 8 one-edit typos matched)."""
    assert cli("write", "root", input="# Memory\n" + "".join(f"- [[{n}]]\n" for n in NOTES)).rc == 0
    for name, text in NOTES.items():
        assert cli("write", name, input=text).rc == 0
    async with serve() as m:
        for typo, doc in TYPOS:
            r = await m.call("search", {"query": typo})
            assert r.text.startswith(f"1. [{doc}#"), (typo, r.text)
    r = cli("search", "recieve mail")
    assert r.out.startswith("1. [mail#Mail]"), r.out


async def test_a_search_while_the_index_is_built_never_says_nothing(serve, store, base_env):
    """Finding 10: a search about 6 s after a 100k-document server started
    answered `No matches.` (the index was still being built)."""
    count = 5000
    store.mkdir()
    (store / "root.md").write_text("# Memory\n" + "".join(f"- [[n{i}]]\n" for i in range(count)))
    for i in range(count):
        extra = "quartz marker\n" if i == count - 1 else ""
        (store / f"n{i}.md").write_text(f"# n{i}\n\nNote {i} about harbor lantern {i % 50}.\n{extra}")
    async with serve(env={"MEMTREE_HISTORY": "off"}) as m:
        r = await m.call("search", {"query": "quartz marker"})
        assert r.text != "No matches.\n", "a search while indexing answered nothing"
        assert r.text.startswith((f"1. [n{count - 1}#", "No matches yet: the index is still")), r.text
        r = await m.call("recall", {"task": "quartz marker"})
        assert f"[n{count - 1}#" in r.text or "the index is still" in r.text, r.text
