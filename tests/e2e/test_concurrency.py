"""Several server processes (and CLI writers) on one store; many pipelined calls in one session.

Every acknowledged write must be present, every multi-document change must be
atomic with respect to the others, and `validate` must be clean afterwards.
"""

from __future__ import annotations

import subprocess

import anyio
import pytest

from helpers import BIN, SUCCEEDED, docs, ok

pytestmark = pytest.mark.anyio

N = 25


def _parse(text: str) -> tuple[list[str], list[str]]:
    """(created, deleted) from a `Succeeded...` text."""
    lines = text.split("\n")
    assert lines[0] == "Succeeded", text
    created: list[str] = []
    deleted: list[str] = []
    for line in lines[1:]:
        if line.startswith("Created: "):
            created = line[len("Created: "):].split(", ")
        elif line.startswith("Deleted: "):
            deleted = line[len("Deleted: "):].split(", ")
        else:
            raise AssertionError(f"unexpected line {line!r} in {text!r}")
    return created, deleted


async def test_two_servers_write_distinct_documents(serve, store, cli):
    async with serve() as m1, serve() as m2:
        await m1.put(None, "[[a]] [[b]]")

        async def writer(m, doc):
            for i in range(N):
                body = f"# {doc}\nversion {i}\n"
                assert await m.update(body, doc) == SUCCEEDED
                # read-your-writes, even with the other process writing next door
                assert await m.read(doc) == ok(body)

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer, m1, "a")
            tg.start_soon(writer, m2, "b")

        assert await m1.read("b") == ok(f"# b\nversion {N - 1}\n")
        assert await m2.read("a") == ok(f"# a\nversion {N - 1}\n")
    assert docs(store) == {"root": "[[a]] [[b]]", "a": f"# a\nversion {N - 1}\n", "b": f"# b\nversion {N - 1}\n"}
    assert cli("validate").rc == 0


async def _root_churn(writers: list[tuple[object, str]], store, cli) -> None:
    """Each writer repeatedly replaces root with a link to a fresh child of its own.

    Each accepted write creates its child and prunes the previous root's child,
    whichever writer made it. Linearizable writes mean: every created child except
    the final one is deleted exactly once, and the final store holds root and
    exactly one child.
    """
    created_all: list[str] = []
    deleted_all: list[str] = []
    contents: dict[str, str] = {}

    async def writer(m, tag):
        for i in range(N):
            child = f"c_{tag}_{i}"
            content = f"# {tag} {i}\n[[{child}]]\n"
            contents[child] = content
            r = await m.update(content)
            assert not r.error, r
            created, deleted = _parse(r.text)
            assert created == [child], r.text
            assert len(deleted) <= 1, r.text
            created_all.extend(created)
            deleted_all.extend(deleted)

    async with anyio.create_task_group() as tg:
        for m, tag in writers:
            tg.start_soon(writer, m, tag)

    assert len(created_all) == len(writers) * N
    assert len(deleted_all) == len(created_all) - 1
    assert len(set(deleted_all)) == len(deleted_all), "a child was deleted twice"
    survivors = set(created_all) - set(deleted_all)
    assert len(survivors) == 1
    (last,) = survivors
    assert docs(store) == {"root": contents[last], last: f"# {last}\n\n"}
    assert cli("validate").rc == 0


async def test_two_servers_churn_one_parent(serve, store, cli):
    async with serve() as m1, serve() as m2:
        await _root_churn([(m1, "p"), (m2, "q")], store, cli)
        assert (await m1.tree()) == (await m2.tree())


async def test_three_servers_churn_one_parent(serve, store, cli):
    async with serve() as m1, serve() as m2, serve() as m3:
        await _root_churn([(m1, "x"), (m2, "y"), (m3, "z")], store, cli)


async def test_pipelined_writes_to_distinct_documents_in_one_session(serve, store, cli):
    ids = [f"d{i}" for i in range(40)]
    async with serve() as m:
        await m.put(None, " ".join(f"[[{i}]]" for i in ids))
        results: dict[str, object] = {}

        async def one(doc):
            results[doc] = await m.update(f"body of {doc}\n", doc)
            results[doc + "?"] = await m.read(doc)

        async with anyio.create_task_group() as tg:
            for doc in ids:
                tg.start_soon(one, doc)
        for doc in ids:
            assert results[doc] == SUCCEEDED
            assert results[doc + "?"] == ok(f"body of {doc}\n")
        assert await m.tree() == ok("root:\n" + "".join(f"  - {i}\n" for i in ids))
    expected = {"root": " ".join(f"[[{i}]]" for i in ids)} | {i: f"body of {i}\n" for i in ids}
    assert docs(store) == expected
    assert cli("validate").rc == 0


async def test_pipelined_writes_creating_children_in_one_session(serve, store, cli):
    """Concurrent calls that each add subtrees under distinct parents."""
    parents = [f"p{i}" for i in range(12)]
    async with serve() as m:
        await m.put(None, " ".join(f"[[{p}]]" for p in parents))

        async def grow(p):
            r = await m.update(f"[[{p}/k1]] [[{p}/k2]]", p)
            assert r == ok(f"Succeeded\nCreated: {p}/k1, {p}/k2")
            r = await m.update(f"[[{p}/k2]]", p)
            assert r == ok(f"Succeeded\nDeleted: {p}/k1")

        async with anyio.create_task_group() as tg:
            for p in parents:
                tg.start_soon(grow, p)
    d = docs(store)
    assert sorted(d) == sorted(["root", *parents, *[f"{p}/k2" for p in parents]])
    assert cli("validate").rc == 0


async def test_pipelined_churn_of_one_parent_in_one_session(serve, store, cli):
    async with serve() as m:
        await _root_churn([(m, "s1"), (m, "s2"), (m, "s3")], store, cli)


async def test_many_cli_writers_alongside_a_server(serve, store, base_env, cli):
    ids = [f"w{i}" for i in range(8)]
    async with serve() as m:
        await m.put(None, " ".join(f"[[{i}]]" for i in ids) + " [[srv]]")
        env = dict(base_env)
        procs = []
        for rnd in range(3):
            for i in ids:
                procs.append((i, rnd, subprocess.Popen(
                    [str(BIN), "--data-dir", str(store), "write", i],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)))
        for i, rnd, p in procs:
            p.stdin.write(f"{i} round {rnd}\n".encode())
            p.stdin.close()
        # the server keeps writing meanwhile
        for k in range(10):
            assert await m.update(f"server {k}", "srv") == SUCCEEDED
        outs = [(i, rnd, p.wait(timeout=30), p.stdout.read(), p.stderr.read()) for i, rnd, p in procs]
        for i, rnd, rc, out, errb in outs:
            assert rc == 0, (i, rnd, errb)
            assert out.decode().rstrip("\n") == "Succeeded"
        for i in ids:
            r = await m.read(i)
            assert r.text in {f"{i} round {rnd}\n" for rnd in range(3)}, r
        assert await m.read("srv") == ok("server 9")
    assert cli("validate").rc == 0


async def test_cli_writes_seen_by_running_server(serve, cli):
    async with serve() as m:
        await m.put(None, "[[a]]")
        r = cli("write", "a", input="[[a_kid]]")
        assert r.rc == 0 and r.out.rstrip("\n") == "Succeeded\nCreated: a_kid"
        assert await m.tree() == ok("root:\n  - a:\n    - a_kid\n")
        assert await m.update("[[a]] [[fresh]]") == ok("Succeeded\nCreated: fresh")
        assert cli("read", "fresh").out == "# fresh\n\n"


async def test_pipelined_writes_to_the_same_document(serve, store, cli):
    async with serve() as m:
        await m.put(None, "[[same]]")
        bodies = [f"writer {i}\n" for i in range(30)]
        results = []

        async def one(body):
            results.append(await m.update(body, "same"))

        async with anyio.create_task_group() as tg:
            for b in bodies:
                tg.start_soon(one, b)
        assert results == [SUCCEEDED] * len(bodies)
        final = await m.read("same")
        assert not final.error and final.text in bodies
    assert docs(store)["same"] in bodies
    assert cli("validate").rc == 0
