"""Repo map build time on a generated 5 000-file repository (issue 20): cold (no tag cache)
and warm (every file's mtime unchanged), through the core (`/context list` builds the map),
beside aider's repo map on the same repository.

    python benches/bench_repomap.py                  # 5000 files, 2 cold and 5 warm rounds
    python benches/bench_repomap.py --files 20000 --runs 5 --no-peer

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
    args = ap.parse_args()
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
