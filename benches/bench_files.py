"""Benchmarks of the file tools and snapshots, side by side with a peer in the same run.

    .venv/bin/python benches/bench_files.py [--mb 50] [--files 1000]

Measured through yuyao.agent_api with the scripted model (tests/fakellm.py), so each figure is
what a tool call costs end to end (one model round trip included, measured separately and
subtracted):
- read of a large file (first page) vs Python reading the whole file;
- edit of one line in a large file vs Python bytes.replace + write;
- a 1000-file batch (one apply-patch adding 1000 files, snapshotted) vs `git add` + `git commit`
  of the same files in a scratch repository;
- /undo of that batch vs `git reset --hard` + `git clean` in the scratch repository.
Only ratios are meaningful; nothing here asserts an absolute time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakellm import FAKE_MODEL, FakeLLM, calls, say  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--files", type=int, default=1000)
    opts = ap.parse_args()
    from yuyao.agent_api import create_session

    tmp = Path(tempfile.mkdtemp(prefix="yuyao-bench-"))
    home = tmp / "home"
    work = tmp / "work"
    peer = tmp / "peer"
    for d in (home, work, peer):
        d.mkdir()
    big = work / "big.txt"
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    n_lines = opts.mb * 1024 * 1024 // len(line)
    body = line * (n_lines // 2) + "NEEDLE line\n" + line * (n_lines // 2)
    big.write_text(body)
    size_mb = big.stat().st_size / 1e6

    patch = ["*** Begin Patch"]
    for i in range(opts.files):
        patch += [f"*** Add File: many/f{i:04d}.txt", f"+file {i}"]
    patch.append("*** End Patch")

    script = [
        calls([("read", {"file_path": "big.txt"}, "r")]),
        say("read"),
        calls(
            [
                (
                    "edit",
                    {
                        "file_path": "big.txt",
                        "old_string": "NEEDLE line",
                        "new_string": "NEEDLE edited",
                    },
                    "e",
                )
            ]
        ),
        say("edited"),
        calls([("apply-patch", {"patch": "\n".join(patch)}, "p")]),
        say("batch"),
        say("noop"),
    ]
    server = FakeLLM(script).start()
    os.environ.update(
        YUYAO_HOME=str(home),
        D2A_MODEL_BASE_URL=server.url,
        D2A_MODEL_NAME=FAKE_MODEL,
        D2A_MODEL_API_KEY="bench",
    )
    results = []
    try:
        with create_session(cwd=str(work), mode="yolo") as s:
            t_read = timed(lambda: s.chat("read"))
            t_edit = timed(lambda: s.chat("edit"))
            t_batch = timed(lambda: s.chat("batch"))
            t_noop = timed(lambda: s.chat("noop"))  # one round trip, no tool
            t_undo = timed(lambda: s.dispatch("/undo"))
            assert not (work / "many").exists(), "undo did not remove the batch"
        # Peers.
        p_read = timed(lambda: big.read_bytes())

        def py_edit():
            data = big.read_bytes().replace(b"NEEDLE edited", b"NEEDLE again", 1)
            (work / "big.copy").write_bytes(data)

        p_edit = timed(py_edit)
        git(peer, "init", "-q")
        for i in range(opts.files):
            d = peer / "many"
            d.mkdir(exist_ok=True)
            (d / f"f{i:04d}.txt").write_text(f"file {i}\n")
        p_commit = timed(lambda: (git(peer, "add", "-A"), git(peer, "commit", "-qm", "b")))
        (peer / "junk").write_text("x")
        p_reset = timed(lambda: (git(peer, "rm", "-rq", "many"), git(peer, "commit", "-qm", "rm")))
    finally:
        server.stop()

    def net(t):
        return max(t - t_noop, 1e-6)

    results = [
        (f"read first page of {size_mb:.0f} MB", net(t_read), "python read_bytes", p_read),
        (f"edit one line of {size_mb:.0f} MB", net(t_edit), "python replace+write", p_edit),
        (f"{opts.files}-file batch + snapshot", net(t_batch), "git add+commit", p_commit),
        (f"/undo of the {opts.files}-file batch", t_undo, "git rm+commit", p_reset),
    ]
    print(f"{'operation':<36} {'yuyao s':>9} {'peer':<22} {'peer s':>8} {'ratio':>7}")
    for name, ours, peer_name, theirs in results:
        print(
            f"{name:<36} {ours:9.3f} {peer_name:<22} {theirs:8.3f} {ours / max(theirs, 1e-6):7.1f}"
        )
    print(json.dumps({"model_round_trip_s": round(t_noop, 4)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
