"""Startup-to-usable-prompt time of the interactive TUI, measured in a real pseudo-terminal.

"Usable" means the prompt and the status line are on the screen (prompt_toolkit is reading
keys). The model endpoint is never contacted at startup, so a dead address is used.

    python benches/bench_tui.py [--runs N] [--aider /tmp/aider-venv/bin/aider]

With --aider (aider installed from PyPI in its own venv), aider's startup to its first input
prompt is measured in the same run, under the same conditions, and the ratio is printed.
The spec's budget is 400 ms for yuyao; no absolute time is asserted in the test suite.
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
BUDGET_MS = 400.0


def time_to(argv: list[str], pattern: str, env: dict, cwd: str, timeout: float = 30.0) -> float:
    """Seconds from spawn until `pattern` appears in the output, then the child is killed."""
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
        deadline = start + timeout
        regex = re.compile(pattern)
        while time.perf_counter() < deadline:
            try:
                data = child.read_nonblocking(65536, 0.005)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                break
            buf += data
            # answer cursor-position requests like a terminal would
            if "\x1b[6n" in data:
                child.send("\x1b[1;1R")
            if regex.search(re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", buf)):
                return time.perf_counter() - start
        raise RuntimeError(f"{argv[0]}: {pattern!r} never appeared:\n{buf[-2000:]}")
    finally:
        child.terminate(force=True)


def yuyao_env(home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("D2A_", "YUYAO_"))}
    env.update(
        D2A_MODEL_BASE_URL="http://127.0.0.1:9/v1",
        D2A_MODEL_NAME="bench-model",
        D2A_MODEL_API_KEY="x",
        YUYAO_HOME=home,
        TERM="xterm-256color",
        PYTHONPATH=str(ROOT / "python"),
    )
    return env


def measure_yuyao(runs: int, cwd: str, home: str) -> list[float]:
    argv = [sys.executable, "-m", "yuyao"]
    env = yuyao_env(home)
    time_to(argv, r"thinking collapsed", env, cwd)  # warm the file cache once
    return [time_to(argv, r"thinking collapsed", env, cwd) for _ in range(runs)]


def measure_aider(aider: str, runs: int, cwd: str) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("D2A_")}
    env.update(
        TERM="xterm-256color",
        OPENAI_API_KEY="x",
        AIDER_CHECK_UPDATE="false",
        HOME=tempfile.mkdtemp(prefix="aider-home-"),
    )
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
    pattern = r"(?m)^> ?$|\n> "
    time_to(argv, pattern, env, cwd, timeout=60)
    return [time_to(argv, pattern, env, cwd, timeout=60) for _ in range(runs)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--aider", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.path.join(tmp, "project")
        os.mkdir(cwd)
        home = os.path.join(tmp, "home")
        ours = measure_yuyao(args.runs, cwd, home)
        med = statistics.median(ours) * 1000
        print(
            f"yuyao  startup to usable prompt: median {med:.0f} ms "
            f"(min {min(ours) * 1000:.0f}, max {max(ours) * 1000:.0f}, {args.runs} runs; "
            f"budget {BUDGET_MS:.0f} ms: {'ok' if med < BUDGET_MS else 'OVER'})"
        )
        if args.aider:
            theirs = measure_aider(args.aider, args.runs, cwd)
            amed = statistics.median(theirs) * 1000
            print(
                f"aider  startup to usable prompt: median {amed:.0f} ms "
                f"(min {min(theirs) * 1000:.0f}, max {max(theirs) * 1000:.0f})"
            )
            print(f"ratio yuyao/aider = {med / amed:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
