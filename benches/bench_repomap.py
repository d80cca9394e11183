"""Repo map build time on a generated 5 000-file repository (seed 002 §4, `--map-tokens`): cold (no tag cache)
and warm (every file's mtime unchanged), through the core (`/context list` builds the map),
beside aider's repo map on the same repository.

    python benches/bench_repomap.py                  # 5000 files, 2 cold and 5 warm rounds
    python benches/bench_repomap.py --files 20000 --runs 5 --no-peer

`--session` (with `--tree PATH` for a real tree, e.g. Debian's linux-source-6.1 extracted and
committed; default the generated tree) measures what a user waits for instead, beside
mini-swe-agent (the peer of bench_harness.py, same venv) in the same run. Each run is a fresh
process against the scripted model of tests/fakellm.py; the figures:

- first request: seconds from the process's spawn to the first request reaching the fake
  model (the map is built in the background and must not delay it), cold (yuyao's tag cache
  cleared) and warm (the cache the cold run left); the peer keeps no cache, so its one run per
  round is the reference of both;
- map ready: when a request first carried the map (yuyao only);
- later prompt: the map's cost (`ms` of the trace's repo_map record: the check that nothing
  changed plus the rendering) of a prompt made after the map was in, nothing changed;
- peak RSS of each process (ru_maxrss) and the size of yuyao's tag cache on disk.

`--rounds R` (3) interleaved rounds: yuyao cold, yuyao warm, peer; the next round peer first.
Min and median per figure, the ratio to the peer where there is one, and the goals beside
them (cold <= 1.0x the peer and <= 3 s, warm <= 1 s, later prompt <= 0.1 s, RSS <= 1.5x the
peer, tag cache <= 30 MB). The tree is never written to: yuyao's trace goes to a temp folder.

Every measurement is a fresh process (no state kept in memory between runs) timing only the
map's construction: yuyao's `/context list` in a new core Session, aider's
`RepoMap.get_repo_map` (budget 1024 tokens both). Cold clears both tag caches (yuyao's under
its home, aider's `.aider.tags.cache.*` in the repository) first. Rounds alternate which tool
goes first (ABAB…); min and median are printed, and the ratio yuyao / aider of the medians.

The peer is aider-chat (pinned below), installed from PyPI into a venv of its own the first
time (`--peer-venv`, default under the temp folder); when it cannot be installed the reason is
printed and yuyao is measured alone. Build yuyao with `maturin develop --release` first: the
targets on the 2-core machine (cold < 3 s, warm < 150 ms) are for a release build. Raw figures:
benches/results/repomap-<date>.json and repomap-session-<tree>-<date>.json, with the peer's
version, the load before and after and the tree (benches/_record.py). Nothing is asserted;
the script exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_harness as h  # noqa: E402  (mini-swe-agent's venv and child, the timed fake server)
from _record import Recorder  # noqa: E402

PEER_PIN = "aider-chat==0.86.2"
DEFAULT_PEER_VENV = Path(tempfile.gettempdir()) / "yuyao-bench-aider-venv"


def generate(root: Path, n: int) -> None:
    """Half Python, half Rust; every file defines a few items and calls its neighbours'."""
    for i in range(n):
        pkg = root / f"pkg_{i // 100}"
        pkg.mkdir(exist_ok=True)
        j, k = (i + 1) % n, (i * 7 + 3) % n
        if i % 2 == 0:
            (pkg / f"mod_{i}.py").write_text(
                f"class Model{i}:\n    def run(self, x):\n        return helper_{j}(x) + helper_{k}(x)\n\n"
                f"def helper_{i}(x):\n    return x * {i}\n\n"
                + "".join(f"def extra_{i}_{m}(v):\n    return helper_{j}(v)\n\n" for m in range(5))
            )
        else:
            (pkg / f"mod_{i}.rs").write_text(
                f"pub struct Item{i} {{ v: i64 }}\n"
                f"impl Item{i} {{\n    pub fn get(&self) -> i64 {{ helper_{j}(self.v) + helper_{k}(1) }}\n}}\n"
                f"pub fn helper_{i}(x: i64) -> i64 {{ x * {i} }}\n"
                + "".join(
                    f"pub fn extra_{i}_{m}(v: i64) -> i64 {{ helper_{j}(v) }}\n" for m in range(5)
                )
            )


YUYAO = """
import json, sys, time
from yuyao import _core

class Quiet:
    def event(self, _e): pass
    def request(self, _r): return "deny"

opts = {"cwd": sys.argv[1], "home": sys.argv[2], "no_session": True, "no_trajectory": True,
        "map_tokens": 1024}
s = _core.Session(json.dumps(opts), Quiet())
t = time.perf_counter()
listing = s.dispatch("/context list")
while "being built in the background" in listing:  # the build runs on its own worker
    time.sleep(0.02)
    listing = s.dispatch("/context list")
elapsed = time.perf_counter() - t
s.close()
assert "tokens of 1024" in listing, listing
print(elapsed)
"""

AIDER = """
import os, sys, time
from aider.io import InputOutput
from aider.models import Model
from aider.repomap import RepoMap

root = sys.argv[1]
files = [os.path.join(d, f) for d, ds, fs in os.walk(root) for f in fs if not d.startswith(os.path.join(root, "."))]
io = InputOutput(pretty=False, yes=True)
rm = RepoMap(map_tokens=1024, root=root, main_model=Model("gpt-4o"), io=io)
t = time.perf_counter()
text = rm.get_repo_map([], files)
elapsed = time.perf_counter() - t
assert text and "helper_" in text, text
print(elapsed)
"""


SESSION = """
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[3])
from fakellm import FAKE_MODEL, FakeLLM, say
from yuyao import _core

arrivals = []
def responder(body, _index):
    text = json.dumps(body.get("messages", []))
    arrivals.append((time.perf_counter(), "[repo map]" in text))
    return say("ok")

server = FakeLLM(responder).start()
os.environ.update(D2A_MODEL_BASE_URL=server.url, D2A_MODEL_NAME=FAKE_MODEL, D2A_MODEL_API_KEY="b")

class Quiet:
    def event(self, _e): pass
    def request(self, _r): return "deny"

root, home, budget, trace_dir = sys.argv[1], sys.argv[2], int(sys.argv[4]), sys.argv[5]
def traces():
    d = trace_dir
    return {os.path.join(d, n) for n in os.listdir(d)} if os.path.isdir(d) else set()
before = traces()
opts = {"cwd": root, "home": home, "no_session": True, "map_tokens": budget, "mode": "yolo",
        "trajectory_dir": trace_dir}
s = _core.Session(json.dumps(opts), Quiet())
s.chat("Explain the scheduler in kernel/sched/core.c.")
first = arrivals[0][0]  # the monotonic clock: the parent subtracts the spawn's time
ready = None
for _ in range(600 if budget else 0):
    if arrivals[-1][1]:
        ready = arrivals[-1][0]
        break
    time.sleep(0.5)
    s.chat("Go on.")
t = time.perf_counter()
s.chat("And again.")
later_turn = time.perf_counter() - t
s.close()
server.stop()
recs = []
for path in sorted(traces() - before):  # this run's trace only
    for line in open(path):
        if line.strip():
            r = json.loads(line)
            if r.get("kind") == "repo_map":
                recs.append(r)
last = recs[-1] if recs else {}
cache = sum(os.path.getsize(os.path.join(home, "repomap", f))
            for f in os.listdir(os.path.join(home, "repomap"))) if os.path.isdir(os.path.join(home, "repomap")) else 0
print(json.dumps({"first_request_at": first, "map_ready_at": ready, "later_turn_s": later_turn,
                  "later_check_ms": last.get("check_ms"), "later_parsed": last.get("parsed"),
                  "later_map_ms": last.get("ms"),
                  "mapped_files": last.get("files"), "code_files": last.get("total"),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "tag_cache_mb": cache / 1e6}))
"""


def yuyao_session(tree: Path, home: Path, work: Path, phase: str) -> dict:
    """One fresh process of SESSION; times relative to its spawn."""
    tests = Path(__file__).resolve().parent.parent / "tests"
    if phase == "cold":
        shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True, exist_ok=True)
    trace_dir = Path(tempfile.mkdtemp(prefix="trace-", dir=work))
    budget = "0" if phase == "no map" else "1024"
    spawned = time.perf_counter()  # CLOCK_MONOTONIC on Linux, the clock the child reports
    proc = subprocess.run(
        [sys.executable, "-c", SESSION, str(tree), str(home), str(tests), budget, str(trace_dir)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=1800,
    )
    shutil.rmtree(trace_dir, ignore_errors=True)
    if proc.returncode != 0:
        sys.exit(f"session run failed: {proc.stderr.strip()[-2000:]}")
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r["first_request_s"] = r.pop("first_request_at") - spawned
    ready = r.pop("map_ready_at")
    r["map_ready_s"] = None if ready is None else ready - spawned
    return r


def peer_session(tree: Path, work: Path, peer: str) -> dict:
    """One fresh mini-swe-agent process in `tree` (one command, then its submit command):
    seconds from its spawn to its first request, and its peak RSS."""
    server = h.TimedFakeLLM(h.scripts("peer-toolcall", tree, 1), api_key=h.API_KEY).start()
    args = ["peer", "--url", server.url, "--repo", str(tree), "--peer-format", "toolcall",
            "--task", "Explain the scheduler in kernel/sched/core.c."]  # fmt: skip
    spawned = time.perf_counter()
    try:
        result = h.run_child(peer, args, h.child_env(work, server.url))
    finally:
        server.stop()
    if "error" in result or not server.timings:
        sys.exit(f"peer run failed: {result.get('error')}")
    return {
        "first_request_s": server.timings[0][0] - spawned,
        "peak_rss_mb": result["peak_rss_mb"],
        "peer_version": result.get("peer_version"),
    }


def session_bench(tree: Path, work: Path, rounds: int, peer: str | None) -> dict:
    """`rounds` interleaved rounds of yuyao cold, yuyao warm and the peer (the peer first in
    every other round), then one yuyao run without a map (budget 0: the session's own cost)."""
    home = work / "home"
    out: dict[str, list[dict]] = {"cold": [], "warm": [], "peer": [], "no map": []}
    for r in range(rounds):
        order = ["cold", "warm"] + (["peer"] if peer else [])
        if r % 2:
            order = order[-1:] + order[:-1] if peer else order
        for phase in order:
            print(f"round {r + 1}: {phase} ...", file=sys.stderr)
            if phase == "peer":
                out["peer"].append(peer_session(tree, work, peer))
            else:
                out[phase].append(yuyao_session(tree, home, work, phase))
    out["no map"].append(yuyao_session(tree, home, work, "no map"))
    return out


def _mm(xs: list[float]) -> dict:
    return {"min": min(xs), "median": statistics.median(xs)}


def session_summary(res: dict) -> dict:
    """Min / median of each figure, ratios of medians to the peer, and the goals."""
    peer = res["peer"]
    p_first = _mm([r["first_request_s"] for r in peer]) if peer else None
    p_rss = _mm([r["peak_rss_mb"] for r in peer]) if peer else None
    rows = {}

    def row(key: str, xs: list[float], unit: str, ref: dict | None, goal: str, ok) -> None:
        st = _mm(xs)
        ratio = st["median"] / ref["median"] if ref else None
        rows[key] = {**st, "unit": unit, "peer": ref, "ratio": ratio, "goal": goal,
                     "met": ok(st["median"], ratio)}  # fmt: skip

    cold, warm = res["cold"], res["warm"]
    row("cold first request", [r["first_request_s"] for r in cold], "s", p_first,
        "<= 1.0x peer and <= 3 s", lambda v, q: v <= 3 and (q is None or q <= 1.0))  # fmt: skip
    row("warm first request", [r["first_request_s"] for r in warm], "s", p_first, "<= 1 s",
        lambda v, q: v <= 1)  # fmt: skip
    later = [r["later_map_ms"] / 1000 for r in cold + warm if r.get("later_map_ms") is not None]
    if later:
        row("later prompt map cost", later, "s", None, "<= 0.1 s", lambda v, q: v <= 0.1)
    row("peak RSS", [r["peak_rss_mb"] for r in cold + warm], "MB", p_rss, "<= 1.5x peer",
        lambda v, q: q is None or q <= 1.5)  # fmt: skip
    row("tag cache", [r["tag_cache_mb"] for r in cold + warm], "MB", None, "<= 30 MB",
        lambda v, q: v <= 30)  # fmt: skip
    ready = [r["map_ready_s"] for r in cold if r.get("map_ready_s") is not None]
    if ready:
        rows["cold map ready"] = {**_mm(ready), "unit": "s", "peer": None, "ratio": None,
                                  "goal": None, "met": None}  # fmt: skip
    return rows


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("D2A_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    env.setdefault("D2A_MODEL_NAME", "bench")
    env.setdefault("D2A_MODEL_API_KEY", "bench")
    # The peer's model table from its own package, never fetched.
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


def timed(python: str, code: str, *args: str) -> tuple[float | None, str]:
    proc = subprocess.run(
        [python, "-c", code, *args], capture_output=True, text=True, env=child_env(), timeout=900
    )
    try:
        return float(proc.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return None, " | ".join(proc.stderr.strip().splitlines()[-3:])


def ensure_peer(venv: Path) -> tuple[str | None, str, str | None]:
    """(python, version, None) of a venv with the pinned aider, or (None, "", why not)."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import aider, aider.repomap; print(aider.__version__)"]
    want = PEER_PIN.split("==")[1]

    def version() -> str | None:
        if not python.exists():
            return None
        out = subprocess.run(probe, capture_output=True, text=True, env=child_env())
        return out.stdout.strip() if out.returncode == 0 else None

    if version() != want:
        print(f"installing the peer ({PEER_PIN}) into {venv} ...", file=sys.stderr)
        for cmd in (
            [sys.executable, "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "-q", PEER_PIN],
        ):
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return None, "", f"{' '.join(cmd[:4])}: {exc}"
            if proc.returncode != 0:
                tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
                return None, "", f"{' '.join(cmd[:4])}: exit {proc.returncode}: {tail}"
    got = version()
    if got is None:
        return None, "", "aider installed but `import aider.repomap` fails"
    return str(python), got, None


def stats(xs: list[float]) -> dict:
    return {
        "min_ms": min(xs) * 1000,
        "median_ms": statistics.median(xs) * 1000,
        "runs_ms": [x * 1000 for x in xs],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--cold-runs", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5, help="warm rounds")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--peer-venv", type=Path, default=DEFAULT_PEER_VENV)
    ap.add_argument("--session", action="store_true", help="time what a session waits for")
    ap.add_argument("--tree", type=Path, help="--session: a real tree instead of a generated one")
    ap.add_argument("--rounds", type=int, default=3, help="--session: interleaved rounds (3)")
    ap.add_argument("--session-peer-venv", type=Path, default=h.DEFAULT_PEER_VENV,
                    help="--session: mini-swe-agent's venv (as bench_harness.py)")  # fmt: skip
    args = ap.parse_args()
    if args.session:
        rec = Recorder("repomap-session")
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            peer, peer_error = (None, "--no-peer")
            if not args.no_peer:
                peer, peer_error = h.ensure_peer(args.session_peer_venv, work)
            tree = args.tree
            if tree is None:
                tree = work / "repo"
                tree.mkdir()
                generate(tree, args.files)
                for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
                    subprocess.run(["git", *cmd], cwd=tree, check=True, capture_output=True)
            res = session_bench(tree.resolve(), work, max(1, args.rounds), peer)
        name = f"generated, {args.files} files (half Python, half Rust)"
        if args.tree:
            git = ["git", "-C", str(args.tree)]
            head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True).stdout.strip()  # fmt: skip
            count = subprocess.run([*git, "ls-files", "-z"], capture_output=True).stdout.count(
                b"\0"
            )
            name = f"{args.tree.resolve()} (git {head or '?'}, {count:,} files committed)"
        versions = sorted({r["peer_version"] for r in res["peer"] if r.get("peer_version")})
        peer_version = f"mini-swe-agent {', '.join(versions)}" if versions else None
        summary = session_summary(res)
        print(f"repo map in a session, tree: {name}, budget 1024 tokens, {args.rounds} rounds:")
        print(f"  {'':24}{'min':>9}{'median':>9}{'peer med':>10}{'ratio':>8}  goal")
        for what, r in summary.items():
            ref = r["peer"]["median"] if r["peer"] else None
            met = {True: "met", False: "MISSED", None: ""}[r["met"]]
            print(
                f"  {what:24}{r['min']:>9.3f}{r['median']:>9.3f}"
                f"{'-' if ref is None else format(ref, '.3f'):>10}"
                f"{'-' if r['ratio'] is None else format(r['ratio'], '.2f'):>8}"
                f"  {r['goal'] or ''} {met} ({r['unit']})"
            )
        last = (res["cold"] + res["warm"])[-1]
        print(f"  mapped {last['mapped_files']} of {last['code_files']} code files;"
              f" no map: first request {res['no map'][0]['first_request_s']:.2f} s,"
              f" peak RSS {res['no map'][0]['peak_rss_mb']:.0f} MB")  # fmt: skip
        print(f"  peer: {peer_version or peer_error}")
        label = args.tree.resolve().name if args.tree else f"generated{args.files}"
        out = rec.save({"summary": summary, "rounds": args.rounds, **res},
                       peer=h.PEER_PACKAGE if peer else None, peer_version=peer_version,
                       tree=name, label=label)  # fmt: skip
        print(f"  raw figures: {out}")
        return
    rec = Recorder("repomap")
    peer, peer_version, peer_error = (None, "", "--no-peer")
    if not args.no_peer:
        peer, peer_version, peer_error = ensure_peer(args.peer_venv)
    me = sys.executable
    times: dict[str, dict[str, list[float]]] = {"yuyao": {"cold": [], "warm": []}}
    if peer:
        times["aider"] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        repo, home = Path(tmp) / "repo", Path(tmp) / "home"
        repo.mkdir()
        generate(repo, args.files)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)

        def run(tool: str, phase: str) -> None:
            if tool == "yuyao":
                if phase == "cold":
                    shutil.rmtree(home, ignore_errors=True)
                home.mkdir(exist_ok=True)
                t, err = timed(me, YUYAO, str(repo), str(home))
            else:
                if phase == "cold":
                    for c in repo.glob(".aider.tags.cache.*"):
                        shutil.rmtree(c, ignore_errors=True)
                t, err = timed(peer, AIDER, str(repo))
            if t is None:
                sys.exit(f"{tool} {phase} run failed: {err}")
            times[tool][phase].append(t)

        # Warm rounds find the caches the last cold round left.
        for phase, rounds in (("cold", args.cold_runs), ("warm", args.runs)):
            for r in range(rounds):
                order = list(times) if r % 2 == 0 else list(reversed(times))
                for tool in order:
                    run(tool, phase)
    print(f"repo map, {args.files} files (half Python, half Rust), budget 1024 tokens:")
    print(f"  {'':6} {'':5} {'min ms':>9} {'median ms':>10}")
    result = {"files": args.files, "peer": PEER_PIN if peer else None, "peer_version": peer_version}
    for tool, phases in times.items():
        for phase, xs in phases.items():
            st = stats(xs)
            result[f"{tool}_{phase}"] = st
            target = {"cold": "  (target < 3000 ms)", "warm": "  (target < 150 ms)"}[phase]
            print(
                f"  {tool:6} {phase:5} {st['min_ms']:9.0f} {st['median_ms']:10.0f}"
                + (target if tool == "yuyao" else "")
            )
    if peer:
        for phase in ("cold", "warm"):
            ratio = result[f"yuyao_{phase}"]["median_ms"] / result[f"aider_{phase}"]["median_ms"]
            result[f"ratio_{phase}"] = ratio
            print(f"  {phase} ratio yuyao / aider (medians): {ratio:.3f}")
        print(f"  peer: aider {peer_version} ({PEER_PIN}) in {args.peer_venv}")
    else:
        print(f"  peer: not measured ({peer_error})")
    out = rec.save(result, peer=PEER_PIN if peer else None,
                   peer_version=f"aider {peer_version}" if peer else None,
                   tree=f"generated, {args.files} files (half Python, half Rust)")  # fmt: skip
    print(f"  raw figures: {out}")


if __name__ == "__main__":
    main()
