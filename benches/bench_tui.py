"""Startup-to-usable-prompt time of the interactive TUI, measured in a real pseudo-terminal.

"Usable" means the prompt and the status line are on the screen (prompt_toolkit is reading
keys). The model endpoint is never contacted at startup, so a dead address is used.

    python benches/bench_tui.py [--runs N] [--aider /tmp/aider-venv/bin/aider]

With --aider (aider installed from PyPI in its own venv), aider's startup to its first input
prompt is measured in the same run, under the same conditions, and the ratio is printed.
The spec's budget is 400 ms for yuyao; no absolute time is asserted in the test suite.

Bytecode: an installed yuyao (install.sh / pip) has its .pyc files compiled at install time.
A source checkout run with PYTHONDONTWRITEBYTECODE=1 would recompile every module on every
start, so the children here cache bytecode under a temporary PYTHONPYCACHEPREFIX (warmed by
one untimed run), as an installation would. The "floor" line is a bare prompt_toolkit prompt
with a status line: the input library's own share of the time on this machine at this moment
(yuyao loads nothing from rich before its first prompt). Shared machines are noisy: the cases
run round-robin, and the lines of one run compare.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))

from _record import Recorder  # noqa: E402

BUDGET_MS = 400.0
READY = r"thinking collapsed"  # the end of yuyao's status line

FLOOR = """
from prompt_toolkit import PromptSession
PromptSession().prompt("> ", bottom_toolbar="thinking collapsed")
"""


def time_to(argv: list[str], pattern: str, env: dict, cwd: str, timeout: float = 60.0) -> float:
    """Seconds from spawn until `pattern` appears on the terminal; then the child is killed."""
    start = time.perf_counter()
    child = pexpect.spawn(
        argv[0],
        argv[1:],
        env=env,
        cwd=cwd,
        dimensions=(40, 120),
        encoding="utf-8",
        codec_errors="replace",
    )
    try:
        buf = ""
        regex = re.compile(pattern)
        while time.perf_counter() < start + timeout:
            try:
                data = child.read_nonblocking(65536, 0.005)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                break
            buf += data
            if "\x1b[6n" in data:  # answer cursor-position requests like a terminal
                child.send("\x1b[1;1R")
            if regex.search(re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", buf)):
                return time.perf_counter() - start
        raise RuntimeError(f"{argv[0]}: {pattern!r} never appeared:\n{buf[-2000:]}")
    finally:
        child.terminate(force=True)


def base_env(pycache: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=pycache, TERM="xterm-256color")
    return env


def yuyao_env(home: str, pycache: str) -> dict:
    env = {k: v for k, v in base_env(pycache).items() if not k.startswith(("D2A_", "YUYAO_"))}
    env.update(
        D2A_MODEL_BASE_URL="http://127.0.0.1:9/v1",
        D2A_MODEL_NAME="bench-model",
        D2A_MODEL_API_KEY="x",
        YUYAO_HOME=home,
        PYTHONPATH=str(ROOT / "python"),
    )
    return env


def aider_argv_env(aider: str, pycache: str) -> tuple[list[str], dict]:
    env = {k: v for k, v in base_env(pycache).items() if not k.startswith("D2A_")}
    env.update(OPENAI_API_KEY="x", HOME=tempfile.mkdtemp(prefix="aider-home-"))
    argv = [
        aider,
        "--model",
        "openai/bench-model",
        "--openai-api-base",
        "http://127.0.0.1:9/v1",
        "--no-git",
        "--no-show-model-warnings",
        "--no-check-update",
        "--no-analytics",
        "--no-show-release-notes",
        "--no-pretty",
        "--no-fancy-input",
    ]
    return argv, env


def report(name: str, times: list[float]) -> float:
    med = statistics.median(times) * 1000
    print(
        f"{name:<6} startup to usable prompt: median {med:5.0f} ms "
        f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}, {len(times)} runs)"
    )
    return med


def interleaved(cases: dict, cwd: str, runs: int) -> dict:
    """{name: (argv, env, pattern)} -> {name: [seconds]}, run round-robin so that a change in
    the machine's load hits every case alike."""
    for argv, env, pattern in cases.values():  # warm the file and bytecode caches
        time_to(argv, pattern, env, cwd)
    times: dict = {name: [] for name in cases}
    for _ in range(runs):
        for name, (argv, env, pattern) in cases.items():
            times[name].append(time_to(argv, pattern, env, cwd))
    return times


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--aider", default="", help="path of an aider executable (own venv)")
    args = ap.parse_args()
    rec = Recorder("tui")
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.path.join(tmp, "project")
        os.mkdir(cwd)
        home = os.path.join(tmp, "home")
        pycache = os.path.join(tmp, "pycache")
        floor_py = os.path.join(tmp, "floor.py")
        with open(floor_py, "w") as fh:
            fh.write(FLOOR)
        cases = {
            "floor": ([sys.executable, floor_py], base_env(pycache), READY),
            "yuyao": ([sys.executable, "-m", "yuyao"], yuyao_env(home, pycache), READY),
        }
        if args.aider:
            a_argv, a_env = aider_argv_env(args.aider, pycache)
            cases["aider"] = (a_argv, a_env, r"(?m)^> ?$|\n> ")
        times = interleaved(cases, cwd, args.runs)
        med = {name: report(name, t) for name, t in times.items()}
        verdict = "within" if med["yuyao"] < BUDGET_MS else "OVER"
        print(
            f"yuyao {verdict} the {BUDGET_MS:.0f} ms budget; "
            f"{med['yuyao'] - med['floor']:.0f} ms above the floor"
        )
        if "aider" in med:
            ratio = med["yuyao"] / med["aider"]
            print(f"ratio yuyao/aider = {ratio:.3f} (aider takes {1 / ratio:.1f}x as long)")
    aider_version = None
    if args.aider:
        import subprocess

        got = subprocess.run([args.aider, "--version"], capture_output=True, text=True).stdout
        aider_version = (got.split() or [None])[-1]
    out = rec.save(
        {"runs": args.runs, "budget_ms": BUDGET_MS, "times_s": times, "median_ms": med},
        peer="prompt_toolkit floor" + ("; aider" if args.aider else ""),
        peer_version=f"aider {aider_version}" if aider_version else None,
        tree="empty temp project",
    )
    print(f"raw figures: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
