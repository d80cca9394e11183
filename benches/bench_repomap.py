"""Repo map build time on a generated 5 000-file repository (seed 002 §4, `--map-tokens`): cold (no tag cache)
and warm (every file's mtime unchanged), through the core (`/context list` builds the map),
beside aider's repo map on the same repository.

    python benches/bench_repomap.py                  # 5000 files, 2 cold and 5 warm rounds
    python benches/bench_repomap.py --files 20000 --runs 5 --no-peer

`--session` (with `--tree PATH` for a real tree, e.g. Debian's linux-source-6.1 extracted and
committed; default the generated tree) measures what a user waits for instead, each run a
fresh process with the scripted model of tests/fakellm.py: the first request's arrival after
the session opened (the map is built in the background and must not delay it), how long until
a request carries the map, a later prompt's map check with nothing changed (`check_ms` of the
trace) and its whole turn, the process's peak RSS and the tag cache's size; cold (empty tag
cache) then warm. No peer is run in this mode.

Every measurement is a fresh process (no state kept in memory between runs) timing only the
map's construction: yuyao's `/context list` in a new core Session, aider's
`RepoMap.get_repo_map` (budget 1024 tokens both). Cold clears both tag caches (yuyao's under
its home, aider's `.aider.tags.cache.*` in the repository) first. Rounds alternate which tool
goes first (ABAB…); min and median are printed, and the ratio yuyao / aider of the medians.

The peer is aider-chat (pinned below), installed from PyPI into a venv of its own the first
time (`--peer-venv`, default under the temp folder); when it cannot be installed the reason is
printed and yuyao is measured alone. Build yuyao with `maturin develop --release` first: the
targets on the 2-core machine (cold < 3 s, warm < 150 ms) are for a release build. Raw figures:
benches/results/repomap-<date>.json. Nothing is asserted; the script exits 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PEER_PIN = "aider-chat==0.86.2"
DEFAULT_PEER_VENV = Path(tempfile.gettempdir()) / "yuyao-bench-aider-venv"
RESULTS = Path(__file__).resolve().parent / "results"


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
t_open = time.perf_counter()
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

root, home, budget = sys.argv[1], sys.argv[2], int(sys.argv[4])
def traces():
    d = os.path.join(root, ".trajectory")
    return {os.path.join(d, n) for n in os.listdir(d)} if os.path.isdir(d) else set()
before = traces()
opts = {"cwd": root, "home": home, "no_session": True, "map_tokens": budget, "mode": "yolo"}
s = _core.Session(json.dumps(opts), Quiet())
s.chat("Explain the scheduler in kernel/sched/core.c.")
first = arrivals[0][0] - t_open
ready = None
for _ in range(600 if budget else 0):
    if arrivals[-1][1]:
        ready = arrivals[-1][0] - t_open
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
print(json.dumps({"first_request_s": first, "map_ready_s": ready, "later_turn_s": later_turn,
                  "later_check_ms": last.get("check_ms"), "later_parsed": last.get("parsed"),
                  "later_map_ms": last.get("ms"),
                  "mapped_files": last.get("files"), "code_files": last.get("total"),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "tag_cache_mb": cache / 1e6}))
"""


def session_bench(tree: Path, home: Path, runs: int) -> dict:
    """Cold (empty home) then `runs` warm runs of SESSION, then one without a map (budget
    0: what the session costs without it); each a fresh process."""
    tests = Path(__file__).resolve().parent.parent / "tests"
    out: dict[str, list[dict]] = {"cold": [], "warm": [], "no map": []}
    shutil.rmtree(home, ignore_errors=True)
    for phase, n in (("cold", 1), ("warm", runs), ("no map", 1)):
        for _ in range(n):
            home.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    SESSION,
                    str(tree),
                    str(home),
                    str(tests),
                    "0" if phase == "no map" else "1024",
                ],
                capture_output=True,
                text=True,
                env=child_env(),
                timeout=1800,
            )
            if proc.returncode != 0:
                sys.exit(f"session run failed: {proc.stderr.strip()[-2000:]}")
            out[phase].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


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
    args = ap.parse_args()
    if args.session:
        with tempfile.TemporaryDirectory() as tmp:
            tree = args.tree
            if tree is None:
                tree = Path(tmp) / "repo"
                tree.mkdir()
                generate(tree, args.files)
                for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
                    subprocess.run(["git", *cmd], cwd=tree, check=True, capture_output=True)
            res = session_bench(tree.resolve(), Path(tmp) / "home", args.runs)
        name = str(args.tree) if args.tree else f"generated, {args.files} files"
        print(f"repo map in a session, tree: {name}, budget 1024 tokens, load {os.getloadavg()}:")
        for phase, rows in res.items():
            for r in rows:
                if phase == "no map":
                    print(
                        f"  no map: first request {r['first_request_s']:.2f} s · later turn"
                        f" {r['later_turn_s'] * 1000:.0f} ms · peak RSS {r['peak_rss_mb']:.0f} MB"
                    )
                    continue
                print(
                    f"  {phase:5} first request {r['first_request_s']:.2f} s"
                    f" · map in a request after {r['map_ready_s'] or float('nan'):.1f} s"
                    f" · later prompt: check {r['later_check_ms']} ms, map"
                    f" {r['later_map_ms']} ms, turn"
                    f" {r['later_turn_s'] * 1000:.0f} ms, parsed {r['later_parsed']}"
                    f" · mapped {r['mapped_files']} of {r['code_files']} code files"
                    f" · peak RSS {r['peak_rss_mb']:.0f} MB · tag cache {r['tag_cache_mb']:.1f} MB"
                )
        RESULTS.mkdir(exist_ok=True)
        label = args.tree.resolve().name if args.tree else f"generated{args.files}"
        out = RESULTS / f"repomap-session-{label}-{datetime.date.today().isoformat()}.json"
        out.write_text(json.dumps({"tree": name, "load": os.getloadavg(), **res}, indent=1) + "\n")
        print(f"  raw figures: {out}")
        return
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
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"repomap-{datetime.date.today().isoformat()}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"  raw figures: {out}")


if __name__ == "__main__":
    main()
