"""Spawn cost against the host's size: a `bash` tool call through `yuyao.agent_api` inside a
host process of 100 MB and 4 GB resident memory, beside `subprocess.run(["bash", "-c",
"true"])` from the same host.

    python benches/bench_spawn.py                    # 100M and 4G hosts, 9 rounds each
    python benches/bench_spawn.py --sizes 100M,1G -n 15
    python benches/bench_spawn.py --fork             # also the fork path (no spawn helper)

Each host is a fresh Python process that allocates and touches its memory (small pages, so
the page tables are as large as they get), opens an agent_api session (yolo mode, the default
workspace-write sandbox with the network off: namespaces, Landlock, seccomp) against the
scripted fake model, and then alternates the two sides round by round (ABAB…):

  A  one turn in which the model asks for K `bash` calls of `true`, and one in which it asks
     for one: the cost of one more bash call is (T_K - T_1) / (K-1), from the minima (and the
     medians) of each turn's times over the rounds, everything included (policy, spawn,
     confinement, output capture, trace, session file);
  B  K-1 `subprocess.run(["bash", "-c", "true"])` from the same host, per call.

It prints min and median per side and their ratios. `--fork` adds a host per size in which
the spawn helper is switched off (`YUYAO_SANDBOX_DISABLE=helper`), i.e. the fork path every
command took before. No figure is asserted; a release build (`maturin develop --release`)
gives the numbers docs/PERFORMANCE.md quotes.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benches"))

from _record import Recorder  # noqa: E402


def parse_size(text: str) -> int:
    text = text.strip().upper()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def host(size: int, rounds: int, k: int) -> dict:
    """Runs in the host process: allocate, then measure A and B alternately."""
    from fakellm import FAKE_MODEL, FakeLLM, calls, say

    # Anonymous memory touched page by page, small pages only (the fork copies one page-table
    # entry per 4 KiB page).
    mem = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mem, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
        mem.madvise(mmap.MADV_NOHUGEPAGE)
    page = mmap.PAGESIZE
    for off in range(0, size, page):
        mem[off] = 1

    def turn(n: int):
        return [calls([("bash", {"command": "true"})] * n), say("done")]

    script = []
    for _ in range(rounds + 1):
        script += turn(k) + turn(1)
    with tempfile.TemporaryDirectory() as tmp, FakeLLM(script) as server:
        os.environ.update(
            YUYAO_HOME=str(Path(tmp) / "home"),
            D2A_MODEL_BASE_URL=server.url,
            D2A_MODEL_NAME=FAKE_MODEL,
            D2A_MODEL_API_KEY="bench",
        )
        work = Path(tmp) / "work"
        work.mkdir()
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        from yuyao.agent_api import create_session

        long, short, b = [], [], []
        with create_session(mode="yolo", cwd=str(work)) as s:
            for r in range(rounds + 1):
                t0 = time.perf_counter()
                s.chat("run it")
                t1 = time.perf_counter()
                s.chat("run it once")
                t2 = time.perf_counter()
                for _ in range(k - 1):
                    subprocess.run(["bash", "-c", "true"], check=True)
                t3 = time.perf_counter()
                if r == 0:
                    continue  # warm-up round: holders, page cache, first session write
                long.append((t1 - t0) * 1e3)
                short.append((t2 - t1) * 1e3)
                b.append((t3 - t2) / (k - 1) * 1e3)
            results = [m for m in s.messages if m.get("role") == "tool"]
            bad = [m["content"] for m in results if "exit code 0" not in m["content"]]
            if bad:
                raise SystemExit(f"a bash call failed: {bad[0]}")
    rss = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    del mem
    return {"rss": rss, "k": k, "turn_k_ms": long, "turn_1_ms": short, "subprocess_ms": b}


def per_call(r: dict, stat) -> float:
    """One more bash call: (T_K - T_1) / (K - 1), each turn summarised by `stat`."""
    return (stat(r["turn_k_ms"]) - stat(r["turn_1_ms"])) / (r["k"] - 1)


def run_host(size: int, rounds: int, k: int, fork: bool) -> dict:
    env = dict(os.environ)
    env.pop("YUYAO_SANDBOX_DISABLE", None)
    if fork:
        env["YUYAO_SANDBOX_DISABLE"] = "helper"
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_spawn as b; "
        "print(json.dumps(b.host(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), str(size), str(rounds), str(k)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100M,4G", help="host sizes (default 100M,4G)")
    ap.add_argument("-n", "--rounds", type=int, default=9, help="measured rounds per host")
    ap.add_argument("-k", "--calls", type=int, default=21, help="bash calls in the long turn")
    ap.add_argument("--fork", action="store_true", help="also the fork path (helper off)")
    ap.add_argument("--json", type=Path, help="write the raw figures there instead of results/")
    args = ap.parse_args()
    rec = Recorder("spawn")

    import yuyao._core as core

    print(f"yuyao {core.VERSION}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    rows, raw = [], []
    for label in args.sizes.split(","):
        size = parse_size(label)
        for fork in [False, True] if args.fork else [False]:
            r = run_host(size, args.rounds, args.calls, fork)
            b = r["subprocess_ms"]
            figures = {
                "per_call_min_ms": per_call(r, min),
                "per_call_median_ms": per_call(r, statistics.median),
                "subprocess_min_ms": min(b),
                "subprocess_median_ms": statistics.median(b),
            }
            figures["ratio_min"] = figures["per_call_min_ms"] / figures["subprocess_min_ms"]
            figures["ratio_median"] = (
                figures["per_call_median_ms"] / figures["subprocess_median_ms"]
            )
            raw.append({"size": label, "fork": fork, **figures, **r})
            side = "yuyao bash (fork path)" if fork else "yuyao bash"
            rows.append(
                (
                    label,
                    f"{r['rss'] / (1 << 20):.0f} MB",
                    side,
                    per_call(r, min),
                    per_call(r, statistics.median),
                    min(b),
                    statistics.median(b),
                )
            )
    head = ("host", "RSS", "side", "min ms", "median ms", "subproc min", "subproc median")
    print(
        f"{head[0]:<6} {head[1]:>8}  {head[2]:<24} {head[3]:>8} {head[4]:>10} "
        f"{head[5]:>12} {head[6]:>15}  ratio min / median"
    )
    for size, rss, side, amin, amed, bmin, bmed in rows:
        print(
            f"{size:<6} {rss:>8}  {side:<24} {amin:8.2f} {amed:10.2f} {bmin:12.2f} {bmed:15.2f}"
            f"  x{amin / bmin:.2f} / x{amed / bmed:.2f}"
        )
    out = rec.save(
        {"rounds": args.rounds, "calls": args.calls, "hosts": raw},
        peer="subprocess.run from the same host process",
        peer_version=f"Python {sys.version.split()[0]}",
        tree="none (bash `true` in a temp folder)",
        path=args.json,
    )
    print(f"load before {rec.load_before}, raw figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
