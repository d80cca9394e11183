r"""grep vs ripgrep, glob vs fd, and the bash tool's per-call overhead vs `bash -c true`.

The yuyao side runs the real tools through a real session (yuyao._core.Session) driven by the
scripted model of tests/fakellm.py; each tool call is timed from its `tool_begin` event to its
`tool_end` event (the tool itself, with result capping, not the model round trip). The peers
run as processes (`rg`, `fdfind`, `bash -c true`) with their output read from a pipe. Same
tree, same queries, same run. The rounds are interleaved: each round runs every query once in
a fresh yuyao session, then once per peer, so a change of machine load hits both sides alike.
The report gives min and median of each side and the ratios yuyao / peer of the medians and of
the mins; the rg and fd versions, the load average before and after, the tree and the date are
printed and written with `--json`. No absolute time is asserted anywhere.

The session runs with the repo map off (`map_tokens: 0`): otherwise a background thread
mapping the tree competes with the timed tool calls.

    apt-get install -y ripgrep fd-find linux-source-6.1
    mkdir -p /tmp/bench && tar xJf /usr/src/linux-source-6.1.tar.xz -C /tmp/bench
    git -C /tmp/bench/linux-source-6.1 init -q   # rg and fd honour .gitignore only in a repo
    # Debian's tarball ignores its own top level ("/*" in .gitignore): drop that rule
    sed -i '/^\/\*$/d; /^!\/debian\/$/d' /tmp/bench/linux-source-6.1/.gitignore
    python benches/bench_search.py /tmp/bench/linux-source-6.1 [--repeat 5] [--json [out.json]]
    python benches/bench_search.py TREE --kinds grep      # grep rows only (also: glob, bash)

`--json` alone writes benches/results/search-<tree name>-<date>.json. Use a release build of
yuyao (`maturin develop --release`): a debug build is several times slower.

The tree must be a git work tree (an empty `git init` is enough): rg and fd honour
`.gitignore` files only inside one, yuyao always does, and the result sets must be the same.
"""

from __future__ import annotations

import argparse
import datetime
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

from fakellm import FAKE_MODEL, FakeLLM, say, tool_call  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import Recorder  # noqa: E402

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
    # One turn runs every query: seed 001's tool-preview budget would refuse the later ones
    # (ripgrep has none), so the comparison runs without it.
    Path(home, "config.toml").write_text("[tools]\npreview_budget_kib = 0\n")
    with FakeLLM(steps) as server:
        from yuyao import _core

        options = {
            "cwd": str(tree),
            "mode": "yolo",
            "headless": True,
            "stream": False,
            "no_trajectory": True,
            "map_tokens": 0,
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


def version(tool: str) -> str:
    out = subprocess.run([tool, "--version"], stdout=subprocess.PIPE, text=True).stdout
    return out.splitlines()[0].strip() if out else "?"


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
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds")
    ap.add_argument("--bash-calls", type=int, default=50)
    ap.add_argument("--kinds", default="grep,glob,bash", help="which rows (grep,glob,bash)")
    ap.add_argument(
        "--json",
        type=Path,
        nargs="?",
        const=Path(""),
        help="also write the figures (default benches/results/search-<tree>-<date>.json)",
    )
    args = ap.parse_args(argv)
    kinds = set(args.kinds.split(","))
    tree = args.tree.resolve()
    if not (tree / ".git").exists():
        ap.error(f"{tree} is not a git work tree: run `git -C {tree} init -q` first")
    rg, fd = shutil.which("rg"), shutil.which("fdfind") or shutil.which("fd")
    if not rg or ("glob" in kinds and not fd):
        ap.error("needs `rg` and `fdfind` on PATH (apt-get install ripgrep fd-find)")
    grep_q = GREP_QUERIES if "grep" in kinds else []
    glob_q = GLOB_QUERIES if "glob" in kinds else []
    load_before = os.getloadavg()
    rec = Recorder("search")

    # One warm-up pass over the tree so both sides read from the page cache.
    run_peer([rg, "-c", "zzzz_warm_up_zzzz"], tree)
    if glob_q:
        run_peer([fd, "-t", "f"], tree)

    ours: dict[str, list[float]] = {}
    peers: dict[str, list[float]] = {}
    peer_out: dict[str, str] = {}
    shown: dict[str, int | None] = {}
    queries = [("grep", q, a, [rg, *p]) for q, a, p in grep_q]
    queries += [("glob", q, a, [fd, *p]) for q, a, p in glob_q]
    for k in range(args.repeat):
        calls = [(f"q{i}", kind, a) for i, (kind, _, a, _) in enumerate(queries)]
        if k == 0:  # counts for the same-results check
            calls += [
                (f"check{i}", "grep", {**a, "head_limit": 1})
                for i, (kind, _, a, _) in enumerate(queries)
                if kind == "grep"
            ]
        timer = run_yuyao(tree, calls)
        for i, (kind, _, _, peer_argv) in enumerate(queries):
            ours.setdefault(f"q{i}", []).append(timer.took[f"q{i}"])
            if k == 0:
                check = f"check{i}" if kind == "grep" else f"q{i}"
                shown[f"q{i}"] = count_shown(timer.output[check])
            t, out = run_peer(peer_argv, tree)
            peers.setdefault(f"q{i}", []).append(t)
            peer_out[f"q{i}"] = out

    rows = []

    def row(kind, label, ours_s, peer_s, ours_count, peer_count):
        om, pm = statistics.median(ours_s), statistics.median(peer_s)
        rows.append(
            {
                "kind": kind,
                "query": label,
                "yuyao_ms": round(om * 1000, 1),
                "yuyao_min_ms": round(min(ours_s) * 1000, 1),
                "peer_ms": round(pm * 1000, 1),
                "peer_min_ms": round(min(peer_s) * 1000, 1),
                "ratio": round(om / pm, 2),
                "ratio_min": round(min(ours_s) / min(peer_s), 2),
                "yuyao_results": ours_count,
                "peer_results": peer_count,
            }
        )

    for i, (kind, label, _, _) in enumerate(queries):
        key = f"q{i}"
        row(kind, label, ours[key], peers[key], shown[key], len(peer_out[key].splitlines()))

    if "bash" in kinds:
        timer = run_yuyao(
            tree, [(f"bash{k}", "bash", {"command": "true"}) for k in range(args.bash_calls)]
        )
        plain = [run_peer(["bash", "-c", "true"], tree)[0] for _ in range(args.bash_calls)]
        row(
            "bash",
            "true (per call)",
            [timer.took[f"bash{k}"] for k in range(args.bash_calls)],
            plain,
            None,
            None,
        )
    load_after = os.getloadavg()

    versions = {"rg": version(rg)}
    if glob_q:
        versions["fd"] = version(fd)
    print(
        f"tree: {tree}  rounds: {args.repeat} (interleaved)  cpus: {os.cpu_count()}  "
        f"{'  '.join(f'{k}: {v}' for k, v in versions.items())}"
    )
    print(
        "load average (1, 5, 15 min): before "
        + " ".join(f"{x:.2f}" for x in load_before)
        + ", after "
        + " ".join(f"{x:.2f}" for x in load_after)
    )
    print(
        f"{'kind':<5} {'query':<28} {'yuyao ms min/med':>17} {'peer ms min/med':>17} "
        f"{'ratio med':>9} {'min':>5}  results"
    )
    for r in rows:
        same = "" if r["yuyao_results"] is None else f"{r['yuyao_results']} vs {r['peer_results']}"
        print(
            f"{r['kind']:<5} {r['query']:<28} "
            f"{r['yuyao_min_ms']:>8}/{r['yuyao_ms']:<8} {r['peer_min_ms']:>8}/{r['peer_ms']:<8} "
            f"{r['ratio']:>9} {r['ratio_min']:>5}  {same}"
        )
    summary = {}
    for kind in ("grep", "glob"):
        ratios = [r["ratio"] for r in rows if r["kind"] == kind]
        if ratios:
            mins = [r["ratio_min"] for r in rows if r["kind"] == kind]
            summary[kind] = {
                "geomean_ratio": round(statistics.geometric_mean(ratios), 3),
                "geomean_ratio_min": round(statistics.geometric_mean(mins), 3),
            }
            print(
                f"{kind}: geometric mean ratio {summary[kind]['geomean_ratio']:.2f} (medians), "
                f"{summary[kind]['geomean_ratio_min']:.2f} (mins)"
            )
    if args.json is not None:
        out = args.json
        if out == Path(""):
            day = datetime.date.today().isoformat()
            out = Path(__file__).resolve().parent / "results" / f"search-{tree.name}-{day}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "tree": str(tree),
            "rounds": args.repeat,
            "interleaved": True,
            "cpus": os.cpu_count(),
            "versions": versions,
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after],
            "summary": summary,
            # What scripts/perf_table.py reads: one ratio per kind (medians).
            "geomean_ratio": {k: v["geomean_ratio"] for k, v in summary.items()},
            "rows": rows,
        }
        peers = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
        rec.save(record, peer="ripgrep / fd", peer_version=peers, tree=str(tree), path=out)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
