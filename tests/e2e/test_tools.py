"""The three seed-000 tools, row by row: every success and every error string exactly."""

from __future__ import annotations

import pytest
import yaml

from helpers import NOT_FOUND, SUCCEEDED, cross_tree, docs, ok, snapshot

pytestmark = pytest.mark.anyio

SEED_TREE = """\
root:
  - project_overview:
    - architecture:
      - db_schema
      - service_layer
    - dependencies
  - tech_decisions
"""


# ---------------------------------------------------------------- read_document


async def test_read_root_default_template(serve, store):
    async with serve() as m:
        assert await m.read() == ok("# Memory\n")
        assert await m.read("root") == ok("# Memory\n")
        assert await m.read("") == ok("# Memory\n")
    assert docs(store) == {"root": "# Memory\n"}


async def test_read_not_found(serve, store):
    async with serve() as m:
        assert await m.read("nope") == NOT_FOUND
        assert await m.read("projects/nope") == NOT_FOUND
        assert await m.read("x" * 128) == NOT_FOUND
    assert docs(store) == {"root": "# Memory\n"}


async def test_read_returns_content_exactly_as_stored(serve, store):
    content = "no trailing newline — ünïcödé 🌲\r\nCRLF line\ttab  "
    async with serve() as m:
        assert await m.update(content) == SUCCEEDED
        assert await m.read() == ok(content)
    assert (store / "root.md").read_bytes() == content.encode()


# ---------------------------------------------------------------- update_document


async def test_update_root_without_links(serve, store):
    async with serve() as m:
        assert await m.update("# Root\nplain text\n") == SUCCEEDED
        assert await m.read() == ok("# Root\nplain text\n")
        assert await m.update("# Root v2\n", "root") == SUCCEEDED
        assert await m.read() == ok("# Root v2\n")
        assert await m.update("# Root v3\n", "") == SUCCEEDED
        assert await m.read("root") == ok("# Root v3\n")
    assert docs(store) == {"root": "# Root v3\n"}


async def test_update_creates_children_in_link_order(serve, store):
    async with serve() as m:
        r = await m.update("# Root\n- Z [[zeta]]\n- A [[alpha]]\n- M [[mid]]\n")
        assert r == ok("Succeeded\nCreated: zeta, alpha, mid")
        assert await m.read("zeta") == ok("# zeta\n\n")
        assert await m.read("alpha") == ok("# alpha\n\n")
        assert await m.read("mid") == ok("# mid\n\n")
        assert await m.tree() == ok("root:\n  - zeta\n  - alpha\n  - mid\n")
    assert docs(store) == {
        "root": "# Root\n- Z [[zeta]]\n- A [[alpha]]\n- M [[mid]]\n",
        "zeta": "# zeta\n\n",
        "alpha": "# alpha\n\n",
        "mid": "# mid\n\n",
    }


async def test_update_only_new_links_are_reported_created(serve):
    async with serve() as m:
        assert await m.update("[[a]]") == ok("Succeeded\nCreated: a")
        assert await m.update("[[a]] [[b]]") == ok("Succeeded\nCreated: b")
        assert await m.update("[[b]] [[a]] more text") == SUCCEEDED
        assert await m.tree() == ok("root:\n  - b\n  - a\n")


async def test_update_same_link_twice_creates_once(serve, store):
    async with serve() as m:
        assert await m.update("[[a]] and again [[a]]") == ok("Succeeded\nCreated: a")
        assert await m.tree() == ok("root:\n  - a\n")
    assert sorted(docs(store)) == ["a", "root"]


async def test_update_child_document(serve, store):
    async with serve() as m:
        await m.put(None, "[[child]]")
        assert await m.update("# Child\nbody\n", "child") == SUCCEEDED
        assert await m.read("child") == ok("# Child\nbody\n")
    assert (store / "child.md").read_text() == "# Child\nbody\n"


async def test_update_not_found(serve, store):
    async with serve() as m:
        before = snapshot(store)
        assert await m.update("text", "ghost") == NOT_FOUND
        assert await m.update("[[kid]]", "ghost") == NOT_FOUND
        assert snapshot(store) == before
        assert await m.read("ghost") == NOT_FOUND
        assert await m.read("kid") == NOT_FOUND


async def test_update_cross_tree_sibling(serve, store):
    async with serve() as m:
        await m.put(None, "[[project_overview]] [[tech_decisions]]")
        await m.put("project_overview", "[[architecture]]")
        before = snapshot(store)
        r = await m.update("[[architecture]]", "tech_decisions")
        assert r == cross_tree("[[architecture]] is a child of project_overview")
        assert snapshot(store) == before


async def test_update_error_changes_nothing_even_with_new_links(serve, store):
    """A rejected update creates none of its other (valid, new) links."""
    async with serve() as m:
        await m.put(None, "[[a]] [[b]]")
        before = snapshot(store)
        r = await m.update("[[fresh1]] [[b]] [[fresh2]]", "a")
        assert r == cross_tree("[[b]] is a child of root")
        assert snapshot(store) == before
        assert await m.read("fresh1") == NOT_FOUND
        assert await m.read("fresh2") == NOT_FOUND
        assert await m.read("a") == ok("# a\n\n")


# ---------------------------------------------------------------- get_document_tree


async def test_tree_empty(serve):
    async with serve() as m:
        assert await m.tree() == ok("root: []\n")


async def test_tree_seed_example(serve):
    async with serve() as m:
        await m.build([
            (None, "# Root Document\n- Project Overview [[project_overview]]\n- Technical Decisions [[tech_decisions]]\n"),
            ("project_overview", "- Architecture [[architecture]]\n- Dependencies [[dependencies]]\n"),
            ("architecture", "- Database Schema [[db_schema]]\n- Service Layer [[service_layer]]\n"),
        ])
        assert await m.tree() == ok(SEED_TREE)


async def test_tree_seed_000_response_example(serve):
    async with serve() as m:
        await m.build([
            (None, "[[project_overview]]\n[[tech_decisions]]\n"),
            ("project_overview", "[[architecture]]\n[[dependencies]]\n"),
            ("architecture", "[[db_schema]]\n[[service_layer]]\n"),
            ("tech_decisions", "[[decision_001]]\n[[decision_002]]\n"),
        ])
        assert await m.tree() == ok(
            "root:\n"
            "  - project_overview:\n"
            "    - architecture:\n"
            "      - db_schema\n"
            "      - service_layer\n"
            "    - dependencies\n"
            "  - tech_decisions:\n"
            "    - decision_001\n"
            "    - decision_002\n"
        )


async def test_tree_follows_link_order_after_reordering(serve):
    async with serve() as m:
        await m.put(None, "[[a]] [[b]] [[c]]")
        assert await m.tree() == ok("root:\n  - a\n  - b\n  - c\n")
        assert await m.update("[[c]] [[a]] [[b]]") == SUCCEEDED
        assert await m.tree() == ok("root:\n  - c\n  - a\n  - b\n")


async def test_tree_is_parseable_yaml_for_yaml_keyword_ids(serve):
    """Ids that YAML would read as booleans, nulls or numbers still come back as strings."""
    ids = ["y", "no", "on", "true", "null", "123", "1e3", "0x1F", "-", "_", "a-b"]
    async with serve() as m:
        await m.put(None, " ".join(f"[[{i}]]" for i in ids))
        await m.put("y", "[[nested_no]] [[off]]")
        r = await m.tree()
        assert not r.error
        parsed = yaml.safe_load(r.text)
        expected_children: list = [{"y": ["nested_no", "off"]}] + ids[1:]
        assert parsed == {"root": expected_children}


async def test_tree_ignores_unlinked_files_on_disk(serve, store):
    async with serve() as m:
        await m.put(None, "[[a]]")
        (store / "stray.md").write_text("# stray\n")
        assert await m.tree() == ok("root:\n  - a\n")
