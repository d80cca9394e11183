"""memory-search benchmarks, through the core's `/memory` commands (what `yuyao memory` runs):

1. recall@3 on a fixed paraphrase set (benches/memory_paraphrase.json: 48 notes, 40 questions
   worded differently from their notes), hybrid (BM25 + the shipped static embeddings, RRF)
   against BM25 only. Targets: hybrid >= 0.85 and above BM25.
2. indexing 10 000 notes (100 daily notes of 100 entries), a full `index --force`: target < 10 s.
3. one query against that index, warm (the index is held in the process between queries, as
   in a session): target < 20 ms; the first (cold) query, which loads the index, is reported too.

    python benches/bench_memory.py            # needs `maturin develop --release` for real figures
    python benches/bench_memory.py --json     # also write benches/results/memory-<date>.json

Figures are printed; the exit code is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from _record import Recorder  # noqa: E402

DATA = json.loads((ROOT / "memory_paraphrase.json").read_text())


def write_paraphrase_project(project: Path) -> dict[str, tuple[str, int]]:
    """Writes the notes into MEMORY.md and two daily notes; returns note id -> (file, line)."""
    notes = DATA["notes"]
    files = {
        "MEMORY.md": notes[:16],
        "memory/2026-11-20.md": notes[16:32],
        "memory/2026-11-21.md": notes[32:],
    }
    where = {}
    for name, part in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["# Notes", ""] + [f"- {n['text']}" for n in part]
        path.write_text("\n".join(lines) + "\n")
        for i, n in enumerate(part):
            where[n["id"]] = (name, i + 3)
    return where


def open_session(project: Path):
    from yuyao import _core

    class Quiet:
        def event(self, _):
            pass

        def request(self, _):
            return "deny"

    opts = {"cwd": str(project), "headless": True, "no_trajectory": True, "no_session": True}
    return _core.Session(json.dumps(opts), Quiet())


def hits(session, query: str) -> list[tuple[str, int]]:
    """(file, first line) of each hit of `/memory search`, best first."""
    out = []
    for line in session.dispatch(f"/memory search {query}").splitlines():
        head = line.split(" ", 2)
        if len(head) >= 2 and head[0].rstrip(".").isdigit() and ":" in head[1]:
            name, lines = head[1].rsplit(":", 1)
            out.append((name, int(lines.split("-")[0])))
    return out


def recall_at_3(provider: str) -> float:
    with tempfile.TemporaryDirectory() as d:
        os.environ["YUYAO_HOME"] = str(Path(d) / "home")
        project = Path(d) / "project"
        project.mkdir()
        where = write_paraphrase_project(project)
        s = open_session(project)
        try:
            s.dispatch(f"/config set memorySearch.provider {provider}")
            found = 0
            for q in DATA["queries"]:
                if where[q["note"]] in hits(s, q["q"])[:3]:
                    found += 1
            return found / len(DATA["queries"])
        finally:
            s.close()


WORDS = (
    "build test deploy cache queue worker token schema index route module config logger "
    "parser client server bucket shard replica backup invoice ledger report metric alert "
    "session cookie header payload widget layout theme font color button modal form field "
    "upload export import cron batch stream socket retry timeout quota budget owner review"
).split()


def scale(n_files: int = 100, per_file: int = 100, queries: int = 30) -> dict:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as d:
        os.environ["YUYAO_HOME"] = str(Path(d) / "home")
        project = Path(d) / "project"
        (project / "memory").mkdir(parents=True)
        day = datetime.date(2026, 1, 1)
        for f in range(n_files):
            lines = []
            for i in range(per_file):
                words = rng.sample(WORDS, 8)
                lines.append(
                    f"- Note {f}-{i}: the {words[0]} {words[1]} uses {' '.join(words[2:])}."
                )
            name = (day + datetime.timedelta(days=f)).isoformat()
            (project / "memory" / f"{name}.md").write_text("\n".join(lines) + "\n")
        s = open_session(project)
        try:
            t0 = time.perf_counter()
            answer = s.dispatch("/memory index --force")
            index_s = time.perf_counter() - t0
            assert f"{n_files * per_file} entries" in answer, answer
            s2 = open_session(project)  # a new session: the first query loads the saved index
            t0 = time.perf_counter()
            s2.dispatch("/memory search which worker handles the retry queue")
            cold_ms = (time.perf_counter() - t0) * 1000
            times = []
            for _ in range(queries):
                q = " ".join(rng.sample(WORDS, 4))
                t0 = time.perf_counter()
                s2.dispatch(f"/memory search {q}")
                times.append((time.perf_counter() - t0) * 1000)
            s2.close()
            return {
                "notes": n_files * per_file,
                "index_s": index_s,
                "query_cold_ms": cold_ms,
                "query_median_ms": statistics.median(times),
                "query_max_ms": max(times),
            }
        finally:
            s.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true", help="write benches/results/memory-<date>.json")
    args = ap.parse_args()
    rec = Recorder("memory")
    hybrid = recall_at_3("local")
    bm25 = recall_at_3("bm25")
    big = scale()
    ok = hybrid >= 0.85 and hybrid > bm25 and big["index_s"] < 10 and big["query_median_ms"] < 20
    n_notes, n_queries = len(DATA["notes"]), len(DATA["queries"])
    print(f"paraphrase set: {n_notes} notes, {n_queries} queries")
    print(f"  recall@3 hybrid (bm25 + local embeddings, RRF): {hybrid:.3f}  (target >= 0.85)")
    print(f"  recall@3 bm25 only:                            {bm25:.3f}")
    print(f"index of {big['notes']} notes (index --force): {big['index_s']:.2f} s  (target < 10 s)")
    print(
        f"query, warm: median {big['query_median_ms']:.2f} ms, max {big['query_max_ms']:.2f} ms"
        f"  (target < 20 ms); cold (loads the index): {big['query_cold_ms']:.1f} ms"
    )
    print("all targets met" if ok else "TARGET MISSED")
    if args.json:
        out = rec.save(
            {"recall_hybrid": hybrid, "recall_bm25": bm25, **big},
            peer="yuyao's own BM25 ranker (the hybrid's lexical side)",
            peer_version=None,
            tree=f"benches/memory_paraphrase.json ({n_notes} notes, {n_queries} queries)"
            f" and {big['notes']} generated notes",
        )
        print(f"raw figures: {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
