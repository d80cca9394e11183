r"""grep vs ripgrep, glob vs fd, and the bash tool's per-call overhead vs `bash -c true`.

The yuyao side runs the real tools through a real session (yuyao._core.Session) driven by the
scripted model of tests/fakellm.py; each tool call is timed from its `tool_begin` event to its
`tool_end` event (the tool itself, with result capping, not the model round trip). The peers
run as processes (`rg`, `fdfind`, `bash -c true`) with their output read from a pipe. Same
tree, same queries, same run, interleaved (each round: yuyao runs every query once in a fresh
session, then the peers do); the report is the ratio yuyao / peer of the medians. No
absolute time is asserted anywhere.

    apt-get install -y ripgrep fd-find linux-source-6.1
    mkdir -p /tmp/bench && tar xJf /usr/src/linux-source-6.1.tar.xz -C /tmp/bench
    git -C /tmp/bench/linux-source-6.1 init -q   # rg and fd honour .gitignore only in a repo
    # Debian's tarball ignores its own top level ("/*" in .gitignore): drop that rule
    sed -i '/^\/\*$/d; /^!\/debian\/$/d' /tmp/bench/linux-source-6.1/.gitignore
    python benches/bench_search.py /tmp/bench/linux-source-6.1 [--repeat 5] [--json out.json]

The tree must be a git work tree (an empty `git init` is enough): rg and fd honour
`.gitignore` files only inside one, yuyao always does, and the result sets must be the same.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import Recorder  # noqa: E402
from fakellm import FAKE_MODEL, FakeLLM, say, tool_call  # noqa: E402

# (label, yuyao grep arguments, rg arguments)
GREP_QUERIES = [
    ("files: literal", {"pattern": "EXPORT_SYMBOL_GPL"}, ["-l", "EXPORT_SYMBOL_GPL"]),
    (
        "content -n: rare identifier",
        {"pattern": "kmem_cache_create_usercopy", "output_mode": "content"},
        ["-n", "kmem_cache_create_usercopy"],
    ),
    ("count: TODO", {"pattern": "TODO", "output_mode": "count"}, ["-c", "TODO"]),
    ("files -i: fixme", {"pattern": "fixme", "-i": True}, ["-l", "-i", "fixme"]),
    (
        "files, type c",
        {"pattern": "spin_lock_irqsave", "type": "c"},
        ["-l", "-t", "c", "spin_lock_irqsave"],
    ),
    (
        "files, glob *.h, regex",
        {"pattern": r"\bu(8|16|32|64)\s+__iomem", "glob": "*.h"},
        ["-l", "-g", "*.h", r"\bu(8|16|32|64)\s+__iomem"],
    ),
]

# (label, yuyao glob arguments, fd arguments); glob lists files and symlinks, not folders
GLOB_QUERIES = [
    ("*.c", {"pattern": "*.c"}, ["-t", "f", "-t", "l", "-g", "*.c"]),
    ("Kconfig*", {"pattern": "Kconfig*"}, ["-t", "f", "-t", "l", "-g", "Kconfig*"]),
    (
        "drivers/net/**/*.h",
        {"pattern": "drivers/net/**/*.h"},
        ["-t", "f", "-t", "l", "-g", "*.h", "drivers/net"],
    ),
    ("**/*.{S,s}", {"pattern": "**/*.{S,s}"}, ["-t", "f", "-t", "l", "-g", "*.{S,s}"]),
]


class Timer:
    """A session handler that times each tool call from tool_begin to tool_end."""

    def __init__(self) -> None:
        self.begin: dict[str, float] = {}
        self.took: dict[str, float] = {}
        self.output: dict[str, str] = {}

    def event(self, event_json: str) -> None:
        now = time.perf_counter()
        e = json.loads(event_json)
        if e["type"] == "tool_begin":
            self.begin[e["id"]] = now
        elif e["type"] == "tool_end":
            self.took[e["id"]] = now - self.begin[e["id"]]
            self.output[e["id"]] = e["output"]

    def request(self, request_json: str) -> str:
        return "deny"


def run_yuyao(tree: Path, calls: list[tuple[str, str, dict]]) -> Timer:
    """Runs every (id, tool, args) call in one turn of a real session; returns the timings."""
    steps = [{"tool_calls": [tool_call(name, args, cid)]} for cid, name, args in calls]
    steps.append(say("done"))
    timer = Timer()
    home = tempfile.mkdtemp(prefix="yuyao-bench-home-")
    with FakeLLM(steps) as server:
        from yuyao import _core

        options = {
            "cwd": str(tree),
            "mode": "yolo",
            "headless": True,
            "stream": False,
            "no_trajectory": True,
            "home": home,
            "model": {"base_url": server.url, "name": FAKE_MODEL, "api_key": "bench"},
        }
        session = _core.Session(json.dumps(options), timer)
        try:
            session.chat("benchmark")
        finally:
            session.close()
    shutil.rmtree(home, ignore_errors=True)
    return timer


def run_peer(argv: list[str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, proc.stdout.decode("utf-8", "replace")


def count_shown(text: str) -> int | None:
    """N from the paging/truncation line of a yuyao result, else the number of lines."""
    m = re.search(r"\[showing (?:results )?\S+ of (\d+)[;\s]", text)
    if m:
        return int(m.group(1))
    if text.startswith(("No matches", "No files match")):
        return 0
    return len(text.splitlines())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path, help="a large source tree (a git work tree)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bash-calls", type=int, default=50)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    rec = Recorder("search")
    tree = args.tree.resolve()
    if not (tree / ".git").exists():
        ap.error(f"{tree} is not a git work tree: run `git -C {tree} init -q` first")
    rg, fd = shutil.which("rg"), shutil.which("fdfind") or shutil.which("fd")
    if not rg or not fd:
        ap.error("needs `rg` and `fdfind` on PATH (apt-get install ripgrep fd-find)")

    # One warm-up pass over the tree so both sides read from the page cache.
    run_peer([rg, "-c", "zzzz_warm_up_zzzz"], tree)
    run_peer([fd, "-t", "f"], tree)

    # Interleaved rounds: yuyao's session runs every query once, then the peers do.
    timer = Timer()
    peer_times: dict[tuple[str, int], list[float]] = {}
    peer_out: dict[tuple[str, int], str] = {}
    for k in range(args.repeat):
        calls = []
        for q, (_, gargs, _) in enumerate(GREP_QUERIES):
            calls.append((f"grep{q}_{k}", "grep", gargs))
        for q, (_, gargs, _) in enumerate(GLOB_QUERIES):
            calls.append((f"glob{q}_{k}", "glob", gargs))
        if k == 0:
            for q, (_, gargs, _) in enumerate(GREP_QUERIES):  # counts for the same-results check
                calls.append((f"check{q}", "grep", {**gargs, "head_limit": 1}))
            for b in range(args.bash_calls):
                calls.append((f"bash{b}", "bash", {"command": "true"}))
        got = run_yuyao(tree, calls)
        timer.took.update(got.took)
        timer.output.update(got.output)
        for kind, queries, tool in (("grep", GREP_QUERIES, rg), ("glob", GLOB_QUERIES, fd)):
            for q, (_, _, pargs) in enumerate(queries):
                t, peer_out[(kind, q)] = run_peer([tool, *pargs], tree)
                peer_times.setdefault((kind, q), []).append(t)

    rows = []

    def compare(kind, label, ours_ids, peer_key, ours_count, peer_count_fn):
        ours = statistics.median(timer.took[i] for i in ours_ids)
        peer, out = statistics.median(peer_times[peer_key]), peer_out[peer_key]
        rows.append(
            {
                "kind": kind,
                "query": label,
                "yuyao_ms": round(ours * 1000, 1),
                "peer_ms": round(peer * 1000, 1),
                "ratio": round(ours / peer, 2),
                "yuyao_results": ours_count,
                "peer_results": peer_count_fn(out),
            }
        )

    lines = lambda out: len(out.splitlines())  # noqa: E731
    for q, (label, _, _) in enumerate(GREP_QUERIES):
        ids = [f"grep{q}_{k}" for k in range(args.repeat)]
        ours_count = count_shown(timer.output[f"check{q}"])
        compare("grep", label, ids, ("grep", q), ours_count, lines)
    for q, (label, _, _) in enumerate(GLOB_QUERIES):
        ids = [f"glob{q}_{k}" for k in range(args.repeat)]
        compare("glob", label, ids, ("glob", q), count_shown(timer.output[ids[0]]), lines)

    ours_bash = statistics.median(timer.took[f"bash{k}"] for k in range(args.bash_calls))
    plain = statistics.median(
        run_peer(["bash", "-c", "true"], tree)[0] for _ in range(args.bash_calls)
    )
    rows.append(
        {
            "kind": "bash",
            "query": "true (per call)",
            "yuyao_ms": round(ours_bash * 1000, 2),
            "peer_ms": round(plain * 1000, 2),
            "ratio": round(ours_bash / plain, 2),
            "yuyao_results": None,
            "peer_results": None,
        }
    )

    print(f"tree: {tree}  repeat: {args.repeat}  cpus: {os.cpu_count()}")
    print(f"{'kind':<5} {'query':<28} {'yuyao ms':>9} {'peer ms':>9} {'ratio':>6}  results")
    for r in rows:
        same = "" if r["yuyao_results"] is None else f"{r['yuyao_results']} vs {r['peer_results']}"
        print(
            f"{r['kind']:<5} {r['query']:<28} {r['yuyao_ms']:>9} {r['peer_ms']:>9} "
            f"{r['ratio']:>6}  {same}"
        )
    for kind in ("grep", "glob"):
        ratios = [r["ratio"] for r in rows if r["kind"] == kind]
        print(f"{kind}: geometric mean ratio {statistics.geometric_mean(ratios):.2f}")
    versions = "; ".join(
        subprocess.run([t, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        for t in (rg, fd)
    )
    geo = {
        kind: statistics.geometric_mean([r["ratio"] for r in rows if r["kind"] == kind])
        for kind in ("grep", "glob")
    }
    out = rec.save(
        {"repeat": args.repeat, "geomean_ratio": geo, "rows": rows},
        peer="ripgrep (grep), fd (glob), bash -c true (bash)",
        peer_version=versions,
        tree=str(tree),
        label=tree.name,
        path=args.json,
    )
    print(f"raw figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
