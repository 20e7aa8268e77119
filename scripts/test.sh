#!/usr/bin/env bash
# Runs every test: the Rust unit and integration tests, then the end-to-end
# tests that drive the built binary through the official Python MCP client.
# Creates the Python environment (.venv) on first use.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt

cargo build --workspace --locked
cargo test --workspace --locked
MEMTREE_BIN="$PWD/target/debug/memtree" .venv/bin/python -m pytest tests/e2e -q
