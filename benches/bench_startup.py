"""Startup time of the `yuyao` command, side by side with peers measured in the same run.

    python benches/bench_startup.py [-n RUNS] [--yuyao PATH]

Times `yuyao --version` and `yuyao --help` (each a fresh process, as a user starts it) and, as
peers on the same machine at the same moment, `python -c pass` (the floor any Python CLI pays)
and `rg --version` (a native CLI) when ripgrep is installed. Prints the median and min of N runs
and each command's ratio to `python -c pass`. Only ratios are meaningful across machines; the
script asserts nothing about absolute times and always exits 0 (a missing command is reported).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import Recorder  # noqa: E402


def _find_yuyao(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    # Prefer the command installed next to this interpreter (a venv), then PATH.
    beside = Path(sys.executable).parent / "yuyao"
    if beside.exists():
        return str(beside)
    return shutil.which("yuyao")


def _time_runs(cmd: list[str], runs: int, warmup: int) -> tuple[list[float], str | None]:
    """Wall-clock seconds of `runs` executions (after `warmup` untimed ones), or an error."""
    times = []
    env = dict(os.environ, NO_COLOR="1", TERM="dumb")  # no terminal probing in the timing
    for i in range(warmup + runs):
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return times, str(exc)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            return times, f"exit {proc.returncode}: {err[-1] if err else ''}"
        if i >= warmup:
            times.append(elapsed)
    return times, None


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "-n", "--runs", type=int, default=20, help="timed runs per command (default 20)"
    )
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    ap.add_argument(
        "--yuyao", help="path of the yuyao command (default: next to python, then PATH)"
    )
    args = ap.parse_args()
    rec = Recorder("startup")
    runs = max(1, args.runs)

    rows: list[tuple[str, list[str] | None, str]] = []
    baseline = ("python -c pass", [sys.executable, "-c", "pass"], "")
    rows.append(baseline)
    yuyao = _find_yuyao(args.yuyao)
    for flag in ("--version", "--help"):
        label = f"yuyao {flag}"
        rows.append((label, [yuyao, flag], "") if yuyao else (label, None, "yuyao not found"))
    rg = shutil.which("rg")
    rows.append(
        ("rg --version", [rg, "--version"], "")
        if rg
        else ("rg --version", None, "rg not installed")
    )

    results = []
    for label, cmd, note in rows:
        if cmd is None:
            results.append((label, None, None, note))
            continue
        times, err = _time_runs(cmd, runs, args.warmup)
        if err:
            results.append((label, None, None, err))
        else:
            results.append((label, statistics.median(times), min(times), ""))

    base_median = results[0][1]
    print(f"startup, {runs} runs each after {args.warmup} warm-up; python: {sys.executable}")
    if yuyao:
        print(f"yuyao: {yuyao}")
    header = f"{'command':<18} {'median ms':>10} {'min ms':>9} {'x python':>9}  note"
    print(header)
    print("-" * len(header))
    for label, median, fastest, note in results:
        if median is None:
            print(f"{label:<18} {'-':>10} {'-':>9} {'-':>9}  {note}")
            continue
        ratio = f"{median / base_median:.2f}" if base_median else "-"
        print(
            f"{label:<18} {median * 1e3:>10.1f} {fastest * 1e3:>9.1f} {ratio:>9}  {note}".rstrip()
        )
    rg_version = None
    if rg:
        rg_version = subprocess.run([rg, "--version"], capture_output=True, text=True).stdout
        rg_version = (rg_version.splitlines() or [None])[0]
    out = rec.save(
        {
            "runs": runs,
            "rows": [
                {"command": label, "median_s": median, "min_s": fastest, "note": note}
                for label, median, fastest, note in results
            ],
        },
        peer="python -c pass; rg --version",
        peer_version=f"Python {sys.version.split()[0]}; {rg_version or 'rg not installed'}",
        tree="none",
    )
    print(f"raw figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
