"""Repo map build time on a generated 5 000-file repository (issue 20): cold (no tag cache)
and warm (every file's mtime unchanged), through the core (`/context list` builds the map),
beside aider's repo map on the same repository when aider is installed.

    python benches/bench_repomap.py            # 5000 files, 3 warm runs
    python benches/bench_repomap.py --files 20000 --runs 5

Targets on the 2-core machine (release build): cold < 3 s, warm < 150 ms. It prints the
figures and exits 0.
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


def build_once(repo: Path, home: Path) -> float:
    from yuyao import _core

    class Quiet:
        def event(self, _event_json: str) -> None:
            pass

        def request(self, _request_json: str) -> str:
            return "deny"

    opts = {
        "cwd": str(repo),
        "home": str(home),
        "no_session": True,
        "no_trajectory": True,
        "map_tokens": 1024,
    }
    s = _core.Session(json.dumps(opts), Quiet())
    t0 = time.perf_counter()
    listing = s.dispatch("/context list")
    elapsed = time.perf_counter() - t0
    s.close()
    assert "tokens of 1024" in listing, listing
    return elapsed


def aider_time(repo: Path) -> float | None:
    try:
        import aider  # noqa: F401
    except ImportError:
        return None
    code = (
        "import time, sys\n"
        "from aider.repomap import RepoMap\nfrom aider.io import InputOutput\nfrom aider.models import Model\n"
        "import os\nfiles=[os.path.join(d,f) for d,_,fs in os.walk(sys.argv[1]) for f in fs]\n"
        "t=time.perf_counter(); rm=RepoMap(map_tokens=1024, root=sys.argv[1], main_model=Model('gpt-4o'), io=InputOutput());"
        "rm.get_repo_map([], files); print(time.perf_counter()-t)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(repo)], capture_output=True, text=True)
    try:
        return float(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("D2A_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    os.environ.setdefault("D2A_MODEL_NAME", "bench")
    os.environ.setdefault("D2A_MODEL_API_KEY", "bench")
    with tempfile.TemporaryDirectory() as tmp:
        repo, home = Path(tmp) / "repo", Path(tmp) / "home"
        repo.mkdir()
        home.mkdir()
        generate(repo, args.files)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        cold = build_once(repo, home)
        warm = sorted(build_once(repo, home) for _ in range(args.runs))
        peer = aider_time(repo)
        print(f"repo map, {args.files} files (half Python, half Rust):")
        print(f"  cold  {cold * 1000:8.0f} ms   (target < 3000 ms)")
        print(
            f"  warm  {warm[len(warm) // 2] * 1000:8.0f} ms   median of {args.runs} (target < 150 ms)"
        )
        if peer is None:
            print("  aider: not installed (pip install aider-chat to compare)")
        else:
            print(f"  aider {peer * 1000:8.0f} ms   cold ratio yuyao/aider {cold / peer:.2f}")


if __name__ == "__main__":
    main()
