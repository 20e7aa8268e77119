#!/usr/bin/env bash
# Runs the tests: the Rust unit and integration tests, then the end-to-end
# tests that drive the built binary through the official Python MCP client,
# but those marked `slow` (several seconds each; CI runs them separately:
# `bash scripts/test.sh --slow`). Creates the Python environment (.venv) on
# first use. `bash scripts/test.sh --embeddings` tests hybrid search (the
# `embeddings` feature) on a real model that it installs first: the Rust
# tests of memtree-index and memtree with the feature, then the end-to-end
# tests marked `embeddings` on the binary built with it. `--http` runs the
# end-to-end suite again with every MCP session over Streamable HTTP
# (`serve --http`) instead of stdio. `--ui` tests the web UI in a real
# browser: Debian's chromium (installed with apt when missing) driven by
# Playwright (installed from PyPI). `--s3` tests stores on S3 (the `s3`
# feature) against a SeaweedFS server it starts on loopback and stops:
# memtree-s3's tests, the end-to-end tests marked `s3` and 20 kills of the
# crash harness on a bucket. Other modes
# leave memtree-s3 out: it builds a TLS stack (aws-lc) they do not need.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--embeddings" ]; then
  MEMTREE_TEST_EMBEDDING_MODEL="$(bash scripts/embedding-model.sh)"
  export MEMTREE_TEST_EMBEDDING_MODEL
  # One cargo invocation for both packages, so that candle is built once
  # (another package set resolves its dependencies' features anew); it
  # builds the binary the end-to-end tests drive too.
  cargo test -p memtree -p memtree-index --features memtree/embeddings,memtree-index/embeddings --locked
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
  MEMTREE_BIN="$PWD/target/debug/memtree" exec .venv/bin/python -m pytest tests/e2e -q -m embeddings
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt

export MEMTREE_BIN="$PWD/target/debug/memtree"
case "${1:-}" in
  --s3)
    s3_dir=$(mktemp -d)
    trap 'bash scripts/seaweedfs.sh stop "$s3_dir"; rm -rf "$s3_dir"' EXIT
    s3_env=$(bash scripts/seaweedfs.sh start "$s3_dir")
    eval "$s3_env"
    cargo build -p memtree --features s3 --locked
    cargo test -p memtree-s3 --locked -- --include-ignored
    .venv/bin/python -m pytest tests/e2e -q -m s3
    # kill -9 at random instants on a bucket, at a small scale.
    .venv/bin/python tests/harness/crash.py --kills 20 --store "$MEMTREE_TEST_S3/crash-$$" --binary target/debug/memtree
    exit
    ;;
  --slow)
    cargo build --workspace --exclude memtree-s3 --locked
    exec .venv/bin/python -m pytest tests/e2e -q -m "slow and not embeddings and not s3"
    ;;
  --http)
    cargo build --workspace --exclude memtree-s3 --locked
    MEMTREE_E2E_TRANSPORT=http exec .venv/bin/python -m pytest tests/e2e -q -m "not slow and not embeddings and not ui and not s3"
    ;;
  --ui)
    if ! command -v chromium >/dev/null; then
      as_root=()
      [ "$(id -u)" = 0 ] || as_root=(sudo)
      "${as_root[@]}" apt-get update -qq
      DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq chromium >/dev/null
    fi
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements-ui.txt
    cargo build --workspace --exclude memtree-s3 --locked
    exec .venv/bin/python -m pytest tests/e2e -q -m ui
    ;;
esac
cargo build --workspace --exclude memtree-s3 --locked
cargo test --workspace --exclude memtree-s3 --locked
.venv/bin/python -m pytest tests/e2e -q -m "not slow and not embeddings and not ui and not s3"
