#!/usr/bin/env bash
# Runs the tests: the Rust unit and integration tests, then the end-to-end
# tests that drive the built binary through the official Python MCP client,
# but those marked `slow` (several seconds each; CI runs them separately:
# `bash scripts/test.sh --slow`). Creates the Python environment (.venv) on
# first use. `bash scripts/test.sh --embeddings` runs memtree-index's tests
# with its `embeddings` feature, on a real model that it installs first.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--embeddings" ]; then
  MEMTREE_TEST_EMBEDDING_MODEL="$(bash scripts/embedding-model.sh)"
  export MEMTREE_TEST_EMBEDDING_MODEL
  cargo test -p memtree-index --features embeddings --locked
  cargo build -p memtree --features embeddings --locked
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
  MEMTREE_BIN="$PWD/target/debug/memtree" exec .venv/bin/python -m pytest tests/e2e -q -m embeddings
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt

export MEMTREE_BIN="$PWD/target/debug/memtree"
if [ "${1:-}" = "--slow" ]; then
  cargo build --workspace --locked
  exec .venv/bin/python -m pytest tests/e2e -q -m "slow and not embeddings"
fi
cargo build --workspace --locked
cargo test --workspace --locked
.venv/bin/python -m pytest tests/e2e -q -m "not slow and not embeddings"
