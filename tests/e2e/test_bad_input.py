"""Bad input gets a clear `Error: ...`, changes nothing on disk, and the server keeps serving.

Snapshots here include the derived-state folder `.memtree/` too: a rejected
request must not touch even the trash, journal or index.

What each bad id, link, front-matter value or secret is told, word for word,
is tabled in crates/memtree-core/tests/engine.rs
(`invalid_ids_are_refused_with_their_reason`,
`invalid_links_are_refused_with_their_reason`, `front_matter_values_are_checked`,
`secrets_are_refused_by_every_write`); here a few of each go through the
binary, and every bad id still goes to one server.
"""

from __future__ import annotations

import pytest

from helpers import LIMIT, SUCCEEDED, docs, err, ok, snapshot, write_file

pytestmark = pytest.mark.anyio

# (id, exact prefix of the message or None for "Error: id: invalid id " only):
# sent to one server by test_server_keeps_serving_after_many_bad_requests.
BAD_IDS = [
    ("..", 'Error: id: invalid id "..": '),
    (".", 'Error: id: invalid id ".": '),
    ("a/../b", 'Error: id: invalid id "a/../b": '),
    ("../outside", 'Error: id: invalid id "../outside": '),
    ("/a", 'Error: id: invalid id "/a": '),
    ("/etc/passwd", 'Error: id: invalid id "/etc/passwd": '),
    ("a/", 'Error: id: invalid id "a/": '),
    ("a//b", 'Error: id: invalid id "a//b": '),
    ("a/./b", 'Error: id: invalid id "a/./b": '),
    ("a.md", 'Error: id: invalid id "a.md": '),
    ("a b", 'Error: id: invalid id "a b": '),
    ("a\\b", None),
    ("C:x", 'Error: id: invalid id "C:x": '),
    ("~", 'Error: id: invalid id "~": '),
    ("a\x00b", None),
    ("a\nb", None),
    ("a\tb", None),
    ("a\x1bb", None),
    ("a\x7fb", None),
    ("é", None),
    ("メモ", None),
    ("a\u200bb", None),
    ("x" * 129, None),
    ("x" * 10_000, None),
    ("projects/" + "y" * 120, None),  # 129 bytes
]


# Through the binary: ids that would reach outside the store, and a NUL
# inside JSON.
SEAM_IDS = [v for v in BAD_IDS if v[0] in ("..", "../outside", "/etc/passwd", "a\x00b")]


def _id_label(v):
    return repr(v[0])[:24]


async def _seed_store(m, store):
    await m.build([(None, "# Root\n[[a]] [[b]]\n"), ("a", "---\nsummary: A\n---\n# A\n[[a1]]\n")])
    return snapshot(store, include_meta=True)


@pytest.mark.parametrize(("bad", "prefix"), SEAM_IDS, ids=[_id_label(v) for v in SEAM_IDS])
async def test_invalid_id_rejected(serve, store, tmp_path, bad, prefix):
    async with serve() as m:
        before = await _seed_store(m, store)
        outside_before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if "store" not in p.parts)
        for r in (await m.read(bad), await m.update("# evil\n[[evil_child]]\n", bad)):
            assert r.error, r
            assert r.text.startswith(prefix or "Error: id: invalid id "), r.text
        assert snapshot(store, include_meta=True) == before
        outside_after = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if "store" not in p.parts)
        assert outside_after == outside_before
        assert await m.read() == ok("# Root\n[[a]] [[b]]\n")


@pytest.mark.parametrize(
    "link",
    ["my note", "../x"],
)
async def test_invalid_link_rejected(serve, store, link):
    async with serve() as m:
        before = await _seed_store(m, store)
        r = await m.update(f"# Root\n[[a]] [[b]] [[{link}]]\n")
        assert r.error, r
        assert r.text.startswith(f"Error: content: invalid link [[{link}]]: "), r.text
        assert snapshot(store, include_meta=True) == before


async def test_content_size_limit(serve, store):
    async with serve() as m:
        before = await _seed_store(m, store)
        assert await m.update("x" * (LIMIT + 1)) == err(
            f"Error: content: too large ({LIMIT + 1} bytes; the limit is {LIMIT})"
        )
        # bytes, not characters
        big = "é" * (LIMIT // 2 + 1)
        assert await m.update(big, "b") == err(
            f"Error: content: too large ({LIMIT + 2} bytes; the limit is {LIMIT})"
        )
        assert await m.update("z" * (3 * LIMIT)) == err(
            f"Error: content: too large ({3 * LIMIT} bytes; the limit is {LIMIT})"
        )
        assert snapshot(store, include_meta=True) == before
        exact = "y" * LIMIT
        assert await m.update(exact, "b") == ok(
            f"Succeeded\nAdvice: b is {LIMIT} bytes (over 10240); give it ## sections or move parts into children"
        )
        assert await m.read("b") == ok(exact)
    assert (store / "b.md").read_bytes() == exact.encode()


async def test_size_limit_is_configurable(serve, store):
    async with serve(args=["--max-document-bytes", "100"]) as m:
        assert await m.update("x" * 101) == err("Error: content: too large (101 bytes; the limit is 100)")
        assert await m.update("x" * 100) == SUCCEEDED


async def test_invalid_yaml_changes_nothing(serve, store):
    async with serve() as m:
        before = await _seed_store(m, store)
        r = await m.update("---\nsummary: \"unterminated\n---\n[[a1]]\n", "a")
        assert r.error and r.text.startswith("Error: content: invalid front-matter YAML: "), r.text
        assert snapshot(store, include_meta=True) == before
        assert await m.read("a") == ok("---\nsummary: A\n---\n# A\n[[a1]]\n")


async def test_invalid_utf8_file_on_disk(serve, store):
    async with serve() as m:
        await _seed_store(m, store)
        write_file(store, "b.md", b"# B \xff\xfe broken\n")
        before = snapshot(store, include_meta=True)
        r = await m.read("b")
        assert r.error and r.text.startswith("Error: id: "), r
        assert r.text != "Error: id: not found"
        assert snapshot(store, include_meta=True) == before
        # the rest of the store is still served
        assert await m.read("a") == ok("---\nsummary: A\n---\n# A\n[[a1]]\n")
        assert await m.tree() == ok("root:\n  - a:\n    - a1\n  - b\n")
        # overwriting it through the tool either works or is refused without touching it
        r = await m.update("# B repaired\n", "b")
        if r.error:
            assert r.text.startswith("Error: id: "), r
            assert snapshot(store, include_meta=True) == before
        else:
            assert r == SUCCEEDED
            assert await m.read("b") == ok("# B repaired\n")


async def test_invalid_utf8_root_on_disk(serve, store):
    async with serve() as m:
        await m.put(None, "# Root\n")
        write_file(store, "root.md", b"\xc3\x28 bad")
        r = await m.read()
        assert r.error and r.text.startswith("Error: id: "), r
        assert (store / "root.md").read_bytes() == b"\xc3\x28 bad"


async def test_nul_and_control_characters_in_content_are_stored(serve, store):
    """Content is text, not an id: control characters are data and round-trip."""
    content = "a\x00b\x01c\x1b[31mred\x1b[0m\n"
    async with serve() as m:
        r = await m.update(content)
        if r.error:
            assert r.text.startswith("Error: content: "), r
            assert docs(store) == {"root": "# Memory\n"}
        else:
            assert r == SUCCEEDED
            assert await m.read() == ok(content)


async def test_server_keeps_serving_after_many_bad_requests(serve, store):
    async with serve() as m:
        before = await _seed_store(m, store)
        for bad, _ in BAD_IDS:
            assert (await m.read(bad)).error
        assert (await m.update("x" * (LIMIT + 1))).error
        assert (await m.update("---\n[bad\n---\n")).error
        assert (await m.update("[[b]]", "a")).error
        assert (await m.update("[[my note]]")).error
        assert snapshot(store, include_meta=True) == before
        assert await m.update("# Root\n[[a]] [[b]] [[c]]\n") == ok("Succeeded\nCreated: c")
        assert await m.tree() == ok("root:\n  - a:\n    - a1\n  - b\n  - c\n")


async def test_symlink_escaping_store_is_not_followed_for_writes(serve, store, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("outside original")
    async with serve() as m:
        await m.put(None, "[[a]]")
        (store / "a.md").unlink()
        (store / "a.md").symlink_to(outside)
        await m.update("new content", "a")
    assert outside.read_text() == "outside original"


async def test_size_limit_applies_to_the_stored_document(serve, store):
    """The limit is per document: content that fits, plus a kept front-matter block
    that pushes the stored document past the limit, is refused."""
    block = "---\nsummary: " + "s" * 80 + "\n---\n"  # 98 bytes
    async with serve(args=["--max-document-bytes", "150"]) as m:
        assert await m.update(block + "body") == SUCCEEDED
        before = snapshot(store, include_meta=True)
        r = await m.update("y" * 100)  # would be stored as 198 bytes
        assert r.error and r.text.startswith("Error: content: too large ("), r
        assert r.text.endswith(" bytes; the limit is 150)"), r
        assert snapshot(store, include_meta=True) == before


@pytest.mark.parametrize(
    "secret",
    [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----\n",
        "token: ghp_1234567890abcdefghijABCDEFGHIJ123456\n",
    ],
    ids=["rsa", "github"],
)
async def test_secret_like_content_is_refused(serve, store, secret):
    """Content that looks like a secret is refused unless explicitly allowed."""
    async with serve() as m:
        await m.put(None, "# notes\n- [[keys]]\n")
        before = snapshot(store, include_meta=True)
        r = await m.update("# notes\n" + secret)
        assert r.error and r.text.startswith("Error: content: looks like a secret ("), r
        assert r.text.endswith("); memory is not the place for secrets (MEMTREE_ALLOW_SECRETS=1 allows them)"), r
        r = await m.call("remember", {"content": secret, "document": "keys"})
        assert r.error and r.text.startswith("Error: content: looks like a secret ("), r
        r = await m.call("edit_document", {"id": "keys", "old": "# keys", "new": "# keys\n" + secret})
        assert r.error and r.text.startswith("Error: content: looks like a secret ("), r
        assert snapshot(store, include_meta=True) == before
    async with serve(env={"MEMTREE_ALLOW_SECRETS": "1"}) as m:
        assert await m.update("# keys\n" + secret, "keys") == SUCCEEDED
    async with serve() as m:
        # A document that already holds one can still be edited elsewhere.
        assert await m.call("edit_document", {"id": "keys", "old": "# keys", "new": "# Keys"}) == SUCCEEDED


def test_secret_kinds_are_named(cli):
    r = cli("write", input="# x\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n")
    assert (r.rc, r.err.strip()) == (1, "Error: content: looks like a secret (AWS access key id); memory is not "
                                         "the place for secrets (MEMTREE_ALLOW_SECRETS=1 allows them)")
    r = cli("write", input="-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n")
    assert "(private key)" in r.err

