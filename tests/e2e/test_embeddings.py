"""Hybrid search through the binary built with `--features embeddings`, on
the real all-MiniLM-L6-v2 (`bash scripts/test.sh --embeddings` installs it
and names it in MEMTREE_TEST_EMBEDDING_MODEL): `reindex` embeds, `status`
shows the progress, a server embeds in the background, hits say which
signals found them."""

from __future__ import annotations

import json
import os
import time

import anyio
import pytest

pytestmark = [pytest.mark.embeddings, pytest.mark.anyio]

MODEL = os.environ.get("MEMTREE_TEST_EMBEDDING_MODEL", "")

PETS = "# Pets\n\n## Rex\nOur dog Rex barks at the postman every single morning.\n"
GARAGE = "# Garage\n\n## Car\nThe car needs new winter tyres before November.\n"


@pytest.fixture(autouse=True)
def _model():
    assert MODEL, "MEMTREE_TEST_EMBEDDING_MODEL is not set: run `bash scripts/test.sh --embeddings`"


def _embeddings(cli) -> dict:
    r = cli("--json", "status", env={"MEMTREE_EMBEDDING_MODEL": MODEL})
    assert r.rc == 0, r.err
    return json.loads(r.out)["embeddings"]


def test_reindex_embeds_and_status_shows_it(cli):
    env = {"MEMTREE_EMBEDDING_MODEL": MODEL}
    assert cli("write", input="# Memory\n- [[pets]]\n- [[garage]]\n").rc == 0
    assert cli("write", "pets", input=PETS).rc == 0
    assert cli("write", "garage", input=GARAGE).rc == 0
    before = _embeddings(cli)
    assert before["model"].startswith("bert-384d-") and before["embedded"] == 0 and before["passages"] >= 3
    r = cli("reindex", env=env)
    assert r.rc == 0 and "chunks in" in r.out, (r.out, r.err)
    after = _embeddings(cli)
    assert after["embedded"] == after["passages"] == before["passages"], after
    text = cli("status", env=env).out
    assert f"embeddings: {after['model']}, {after['passages']} of {after['passages']} passages embedded\n" in text
    # A paraphrase with no word of the document: found by meaning alone.
    r = cli("--json", "search", "which animal shouts at the mail carrier", env=env)
    hits = json.loads(r.out)
    assert hits[0]["id"] == "pets" and hits[0]["signals"] == ["dense"], hits
    # Words and meaning together: the store has no "automobile".
    hits = json.loads(cli("--json", "search", "new tyres for my automobile", env=env).out)
    assert hits[0]["id"] == "garage" and hits[0]["signals"] == ["bm25", "dense"], hits
    # Every word in one passage: BM25 is sure and ranks alone.
    hits = json.loads(cli("--json", "search", "winter tyres", env=env).out)
    assert hits[0]["id"] == "garage" and hits[0]["signals"] == ["bm25"], hits


async def test_a_server_embeds_in_the_background(serve, cli):
    async with serve(env={"MEMTREE_EMBEDDING_MODEL": MODEL}) as m:
        await m.build([(None, "# Memory\n- [[pets]]\n- [[garage]]\n"), ("pets", PETS), ("garage", GARAGE)])
        deadline = time.monotonic() + 60
        while (e := _embeddings(cli))["embedded"] < e["passages"]:
            assert time.monotonic() < deadline, f"not embedded after 60 s: {e}"
            await anyio.sleep(0.5)
        r = await m.call("search", {"query": "which animal shouts at the mail carrier", "json": True})
        hits = json.loads(r.text)
        assert hits[0]["id"] == "pets" and "dense" in hits[0]["signals"], hits


def test_a_model_folder_that_does_not_load_is_refused_and_changes_nothing(cli, store, tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    for folder, says in [(tmp_path / "missing", "does not exist or is not a folder"), (empty, "has no config.json")]:
        r = cli("--embedding-model", str(folder), "search", "x")
        assert r.rc != 0 and r.out == "", (r.rc, r.out)
        assert r.err.startswith("Error: embedding model folder ") and says in r.err, r.err
    assert not store.exists()


async def test_a_server_whose_model_does_not_load_serves_bm25(serve, tmp_path):
    async with serve(env={"MEMTREE_EMBEDDING_MODEL": str(tmp_path / "missing")}) as m:
        await m.build([(None, "# Memory\n- [[pets]]\n"), ("pets", PETS)])
        r = await m.call("search", {"query": "postman", "json": True})
        hits = json.loads(r.text)
        assert hits[0]["id"] == "pets" and hits[0]["signals"] == ["bm25"], hits
