"""Reference values for crates/memtree-index/tests/embedding.rs: a numpy
forward pass of all-MiniLM-L6-v2 (BERT, mean pooling over the attention
mask, L2 normalisation) in float64, independent of candle. Run by hand, in
a throwaway venv outside the repository, when the test model changes:
    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install numpy safetensors tokenizers
    /tmp/ref/bin/python scripts/embedding-reference.py "$(bash scripts/embedding-model.sh)"
"""
import json, sys
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

folder = sys.argv[1]
cfg = json.load(open(f"{folder}/config.json"))
w = {k: v.astype(np.float64) for k, v in load_file(f"{folder}/model.safetensors").items()}
tok = Tokenizer.from_file(f"{folder}/tokenizer.json")
tok.no_padding()
heads = cfg["num_attention_heads"]
eps = cfg["layer_norm_eps"]


def layer_norm(x, p):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w[p + ".weight"] + w[p + ".bias"]


def dense(x, p):
    return x @ w[p + ".weight"].T + w[p + ".bias"]


def gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def embed(text, max_len):
    tok.enable_truncation(max_len)
    ids = np.array(tok.encode(text).ids)
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] \
        + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, "embeddings.LayerNorm")
    d = x.shape[1] // heads
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q, k, v = (dense(x, f"{p}.attention.self.{m}").reshape(n, heads, d).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, heads * d)
        x = layer_norm(x + dense(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        h = gelu(dense(x, f"{p}.intermediate.dense"))
        x = layer_norm(x + dense(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    m = x.mean(0)
    return m / np.linalg.norm(m), n


CAT = "The cat sits on the mat"
LONG = ("The garden behind the old house is full of roses and tulips in spring. " * 6
        + "Quarterly revenue grew by four percent, and the board raised the dividend. " * 6
        + "The probe reached the outer planets after a journey of twelve years. " * 12)
pairs = [
    (CAT, "A kitten is sitting on a rug"),
    (CAT, "Quarterly revenue grew by four percent"),
    ("How do I reset my password?", "Steps to recover a forgotten login"),
    (LONG, "Quarterly revenue grew by four percent"),
]
for a, b in pairs:
    (va, na), (vb, nb) = embed(a, 256), embed(b, 256)
    print(f"{float(va @ vb):.6f}  tokens {na}/{nb}  {a[:40]!r} ~ {b[:40]!r}")
(v128, n128), (vb, _) = embed(LONG, 128), embed("Quarterly revenue grew by four percent", 256)
print(f"LONG truncated at 128 instead: {float(v128 @ vb):.6f} ({n128} tokens)")
v, _ = embed(CAT, 256)
print("cat[:4]", [round(float(x), 6) for x in v[:4]])
