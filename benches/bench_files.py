"""Benchmarks of the file tools and snapshots, side by side with plain Python in the same run.

    .venv/bin/python benches/bench_files.py [--mb 50] [--files 1000] [-n 7]

yuyao is driven through yuyao.agent_api with the scripted model (tests/fakellm.py). Its figure
for a tool call is what the session spends on the call itself, read from the trace
(`.trajectory/*.jsonl`): the `us` of the `tool` record (policy check, snapshot capture of the
pre-image, the tool) plus, for calls that change files, the `us` of the batch's `snapshot`
record (the journal entry). The model round trip and the handling of the result text are not
in it (benches/bench_harness.py measures those). /undo is timed around `dispatch("/undo")`.

Each operation runs N rounds; in each round yuyao goes first, then the peer (ABAB…). The
table gives the minimum and the median of each side and the ratio of the medians.

- read the first page (2000 lines) of a large file — peer: a raw page read, Python reading the
  same 2000 lines (`islice` over the open file);
- edit one line of that file — peer: a Python atomic edit with a backup (read, `copyfile` to a
  backup, replace, write a temp file, fsync, `os.replace`); each round changes the line again;
- a batch of new files (one apply-patch adding --files files, snapshotted) — peer: Python
  creating the same files (makedirs + write);
- /undo of that batch (after all the batches, newest first) — peer: `shutil.rmtree` of the
  peer's copy;
- a small edit (one line of a 2 KB module) on a new journal, first, and again at the end, in a
  new session, with every batch above journaled — peer: the same atomic edit with a backup.
  The journal is a base and an append-only log: the late edit should cost what the early one
  does (before the log, each batch rewrote the whole journal: 4.7 ms against 0.7 ms here).

After the edits it also prints what the snapshot store holds on disk (`~/.yuyao/snapshots`):
after the first edit (one pre-image: one compressed copy of the file) and after the last,
against the file's size and the N raw copies a store without sharing would hold.

The large file is a service log of varied lines (timestamps, levels, modules, request ids,
timings; seeded, so every run writes the same bytes): it compresses about as a real log does,
so the store's figures mean what they would on one. (A file of one repeated line compresses
1,500-fold and hides what a store costs.) The store's goal: after the N edits it holds at most
1.1× one compressed copy (what it holds after the first) plus the bytes the edits changed.

The large file is written before the session opens and left alone for a moment, as a log or a
data file usually is (a file changed within the last 50 ms is hashed whole when read: see
rust/tools/src/freshness.rs). Only ratios are meaningful; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benches"))

from _record import Recorder  # noqa: E402
from fakellm import FAKE_MODEL, FakeLLM, calls, say  # noqa: E402

LEVELS = ("INFO",) * 8 + ("DEBUG",) * 4 + ("WARN", "ERROR")
MODULES = ("http.server", "db.pool", "auth", "scheduler", "cache", "worker.queue", "billing")
WORDS = (
    "request handled user session token refresh timeout retry connection pool acquired "
    "released query rows cache hit miss job started finished failed payload bytes latency "
    "upstream status"
).split()
PAGE_LINES = 2000


def log_lines(size: int, seed: int) -> bytes:
    """About `size` bytes of service-log lines, the same for the same seed."""
    rnd = random.Random(seed)
    out, n, ms = [], 0, 0
    while n < size:
        ms += rnd.randint(0, 40)
        stamp = f"{ms // 3_600_000 % 24:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}"
        line = (
            f"2026-12-05T{stamp}.{ms % 1000:03d} {rnd.choice(LEVELS):5} "
            f"{rnd.choice(MODULES)} [{rnd.randint(1000, 1063)}] "
            f"{' '.join(rnd.choices(WORDS, k=rnd.randint(3, 9)))} "
            f"id={rnd.getrandbits(32):08x} ms={rnd.randint(0, 5000)}\n"
        )
        out.append(line)
        n += len(line)
    return "".join(out).encode()


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


class Trace:
    """New records of the sessions' trace files since the last call."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.offsets: dict[Path, int] = {}

    def new_records(self) -> list[dict]:
        out = []
        for path in sorted((self.work / ".trajectory").glob("*.jsonl")):
            with path.open("rb") as f:
                f.seek(self.offsets.get(path, 0))
                data = f.read()
            self.offsets[path] = self.offsets.get(path, 0) + len(data)
            out += [json.loads(line) for line in data.splitlines() if line.strip()]
        return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("-n", "--rounds", type=int, default=7)
    opts = ap.parse_args()
    rec = Recorder("files")
    from yuyao.agent_api import create_session

    tmp = Path(tempfile.mkdtemp(prefix="yuyao-bench-"))
    home, work, peer = tmp / "home", tmp / "work", tmp / "peer"
    for d in (home, work, peer):
        d.mkdir()
    half = opts.mb * 1024 * 1024 // 2
    body = log_lines(half, 1) + b"NEEDLE 0 line\n" + log_lines(half, 2)
    changed = 0
    big, peer_big = work / "big.txt", peer / "big.txt"
    big.write_bytes(body)
    peer_big.write_bytes(body)
    size_mb = len(body) / 1e6
    time.sleep(0.2)  # a file nobody is writing to (see the docstring)

    steps: list = []

    def responder(_body, _index):
        return steps.pop(0) if steps else say("ok")

    def turn(session, *tool_calls) -> None:
        steps[:] = [calls(list(tool_calls)), say("ok")]
        session.chat("go")

    server = FakeLLM(responder).start()
    os.environ.update(
        YUYAO_HOME=str(home),
        D2A_MODEL_BASE_URL=server.url,
        D2A_MODEL_NAME=FAKE_MODEL,
        D2A_MODEL_API_KEY="bench",
    )
    trace = Trace(work)

    def cost(kinds=("tool", "snapshot")) -> float:
        return sum(r.get("us", 0) for r in trace.new_records() if r["kind"] in kinds) / 1e6

    rows: dict[str, tuple[list[float], list[float]]] = {}
    store_sizes: list[int] = []

    def store_bytes() -> int:
        return sum(p.stat().st_size for p in (home / "snapshots").rglob("*") if p.is_file())

    def sample(name: str, ours: float, theirs: float) -> None:
        a, b = rows.setdefault(name, ([], []))
        a.append(ours)
        b.append(theirs)

    def page_read() -> None:
        with peer_big.open("rb") as f:
            lines = list(itertools.islice(f, PAGE_LINES))
        assert len(lines) == PAGE_LINES

    def atomic_edit(old: bytes, new: bytes, path: Path = peer_big) -> None:
        data = path.read_bytes()
        shutil.copyfile(path, path.with_name(path.name + ".bak"))
        data = data.replace(old, new, 1)
        tmp_path = path.with_name(f".{path.name}.tmp")
        with tmp_path.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_path, path)

    def create_files(folder: Path) -> None:
        for i in range(opts.files):
            p = folder / f"f{i:04d}.txt"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"file {i}\n")

    read_name = f"read first page of {size_mb:.0f} MB"
    edit_name = f"edit one line of {size_mb:.0f} MB"
    batch_name = f"{opts.files}-file batch + snapshot"
    undo_name = f"/undo of the {opts.files}-file batch"
    # The same small edit on a new journal and on one holding every batch above: a batch's
    # journal entry costs what it holds, not the history (docs/snapshots.md).
    early_name = "small edit, new journal"
    late_name = f"small edit, {opts.rounds * (opts.files + 2):,} files journaled"
    small, peer_small = work / "small.py", peer / "small.py"
    small_body = "".join(f"value_{i} = {i}  # a line of a small module\n" for i in range(48))
    small.write_text(small_body + "VALUE = 0\n")
    peer_small.write_text(small_body + "VALUE = 0\n")

    def small_edits(s, name: str, first: int) -> None:
        turn(s, ("read", {"file_path": "small.py"}, "rs"))
        trace.new_records()
        for r in range(first, first + opts.rounds):
            old, new = f"VALUE = {r}\n", f"VALUE = {r + 1}\n"
            edit = {"file_path": "small.py", "old_string": old, "new_string": new}
            turn(s, ("edit", edit, "e"))
            ours = cost()
            assert small.read_text().endswith(new), server.tool_result("e")
            sample(name, ours, timed(atomic_edit, old.encode(), new.encode(), peer_small))

    try:
        with create_session(cwd=str(work), mode="yolo") as s:
            small_edits(s, early_name, 0)
            for _ in range(opts.rounds):
                turn(s, ("read", {"file_path": "big.txt"}, "r"))
                sample(read_name, cost(("tool",)), timed(page_read))
            for r in range(opts.rounds):
                old, new = f"NEEDLE {r} line", f"NEEDLE {r + 1} line"
                edit = {"file_path": "big.txt", "old_string": old, "new_string": new}
                turn(s, ("edit", edit, "e"))
                ours = cost()
                assert f"\n{new}\n".encode() in big.read_bytes(), "the edit did not apply"
                sample(edit_name, ours, timed(atomic_edit, old.encode(), new.encode()))
                store_sizes.append(store_bytes())
                changed += len(new) if r else 0
            for r in range(opts.rounds):
                patch = ["*** Begin Patch"]
                for i in range(opts.files):
                    patch += [f"*** Add File: batch{r}/f{i:04d}.txt", f"+file {i}"]
                patch.append("*** End Patch")
                turn(s, ("apply-patch", {"patch": "\n".join(patch)}, "p"))
                ours = cost()
                assert len(list((work / f"batch{r}").iterdir())) == opts.files
                sample(batch_name, ours, timed(create_files, peer / f"batch{r}"))
            # The undos after all the batches: on ext4 without a journal, a file created
            # within 5 s of deletions makes the kernel scan the deleted inodes, which would
            # measure the previous round's undo instead of the creation (both sides alike).
            for r in reversed(range(opts.rounds)):
                ours = timed(s.dispatch, "/undo")
                assert not (work / f"batch{r}").exists(), "undo did not remove the batch"
                sample(undo_name, ours, timed(shutil.rmtree, peer / f"batch{r}"))
        # A new session (the first one's history would be compacted): the journal is the
        # project's, and holds every batch above.
        with create_session(cwd=str(work), mode="yolo") as s:
            small_edits(s, late_name, opts.rounds)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    peers = {
        read_name: f"raw read of {PAGE_LINES} lines",
        edit_name: "atomic edit + backup",
        batch_name: "create the files",
        undo_name: "rmtree",
        early_name: "atomic edit + backup",
        late_name: "atomic edit + backup",
    }
    print(
        f"{'operation':<34} {'yuyao min':>10} {'median':>8}   {'peer (Python)':<24}"
        f" {'min':>8} {'median':>8} {'ratio':>6}"
    )
    summary = {}
    for name, (ours, theirs) in rows.items():
        om, tm = statistics.median(ours), statistics.median(theirs)
        ratio = om / max(tm, 1e-9)
        summary[name] = {"yuyao_s": ours, "peer_s": theirs, "ratio_of_medians": round(ratio, 2)}
        print(
            f"{name:<34} {min(ours) * 1e3:8.2f}ms {om * 1e3:6.2f}ms   {peers[name]:<24}"
            f" {min(theirs) * 1e3:6.2f}ms {tm * 1e3:6.2f}ms {ratio:5.2f}x"
        )
    store = {
        "file_bytes": len(body),
        "after_first_edit_bytes": store_sizes[0],
        "after_last_edit_bytes": store_sizes[-1],
        "edits": len(store_sizes),
        "changed_bytes": changed,
        "file": "service log, seeded (benches/bench_files.py log_lines)",
    }
    print(
        f"snapshot store after {len(store_sizes)} edits of the {size_mb:.0f} MB file:"
        f" {store_sizes[-1] / 1e6:.2f} MB (after the first: {store_sizes[0] / 1e6:.2f} MB;"
        f" {len(store_sizes)} raw copies: {len(store_sizes) * len(body) / 1e6:.0f} MB)"
    )
    meta = {
        "rounds": opts.rounds,
        "peer": f"Python {platform.python_version()}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cpu",
    }
    print(json.dumps(meta))
    # Raw figures, one file per day (a later run the same day replaces it).
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), **meta}
    out = rec.save(
        {**report, "operations": summary, "snapshot_store": store},
        peer="plain Python (islice page read, atomic edit with backup, file creation, rmtree)",
        peer_version=meta["peer"],
        tree=f"generated: one {size_mb:.0f} MB service log and {opts.files}-file batches in a temp git repository",
    )
    print(f"raw figures: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
