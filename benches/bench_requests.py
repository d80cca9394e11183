"""Request bytes a provider's prompt cache cannot reuse, yuyao side by side with mini-swe-agent.

    python benches/bench_requests.py [-n STEPS] [--rounds R] [--no-peer] [--peer-venv DIR]

Each harness runs a scripted task of N steps (50) against tests/fakellm.py: every step the model
asks for one tool call, then it finishes. Three workloads:

- ``1KB``: the call prints a different 1 KB file each step (`cat`);
- ``14KB``: the same with 14 KB files;
- ``write``: the call writes a new 600-byte file each step (yuyao: its `write` tool; the
  peer, which only has bash: a heredoc), in a git repository, so the files change git status.

Each call comes with the one short line of why a model states before a tool batch (the same
text for both harnesses). ``--silent`` drops it: yuyao then appends its intent reminder note
(seed 000 behaviour 6, `intent.remind`) after every step, as it would for a model that never says why.

For every request the server received, the prompt is rendered the way a provider's prefix
cache sees it — the tool schemas, then each message in order, as compact JSON with sorted keys
and without cache markers — and compared with the previous request of the same run. The bytes
from the first one that differs to the end cannot come from the cache ("uncacheable"; all of the
first request). The table gives, per workload, the uncacheable bytes and the total bytes of
the run for each harness and their ratio (yuyao / peer). Byte counts are deterministic: the
rounds (ABAB… interleaved) only confirm it (min and median are printed when they differ).

The peer is mini-swe-agent (pinned, tool-call format, the same venv as bench_harness.py). Raw
figures: benches/results/requests-<date>.json. Nothing is asserted; the script exits 0.

A provider's cache is not per session: a prefix sent by an earlier session (within the cache's
lifetime) is served again. "next session" counts the uncacheable bytes of a run that follows
another run of the same harness in another repository: its first request is charged only from
the first byte that differs from the earlier run's first request (tool schemas and the fixed
part of a system prompt are shared; a date, a folder or a git summary is not).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_harness as h  # noqa: E402  (the peer's venv, the children, the fake server)
from _record import Recorder  # noqa: E402
from fakellm import calls, say, tool_call  # noqa: E402  (bench_harness put tests/ on the path)

PEER_PIN = "mini-swe-agent==2.4.6"
WORKLOADS = ("1KB", "14KB", "write")
WRITE_BYTES = 600
KEYS = (
    "uncacheable_bytes",
    "first_request_bytes",
    "rewritten_bytes",
    "total_bytes",
    "next_session_uncacheable_bytes",
)
TASK = "Work through the data files one step at a time, then say done."


def _lines(size: int, seed: int) -> str:
    """`size` bytes of varied text lines (numbers and words, as logs and code look)."""
    words = ("alpha", "beta", "gamma", "delta", "value", "error", "result", "index", "path")
    out, n = [], 0
    while sum(len(x) for x in out) < size:
        line = f"{seed:03d}:{n:05d} " + " ".join(
            words[(seed + n + k) % len(words)] for k in range(8)
        )
        out.append(line + f" = {(seed * 7919 + n * 104729) % 1000003}\n")
        n += 1
    return "".join(out)[:size]


def make_workspace(root: Path, steps: int) -> Path:
    repo = h.make_repo(root)
    data = repo / "data"
    data.mkdir()
    for i in range(steps):
        (data / f"s{i:03d}.txt").write_text(_lines(1024, i))
        (data / f"l{i:03d}.txt").write_text(_lines(14 * 1024, i))
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for args in (["add", "."], ["commit", "-q", "-m", "data"]):
        h.subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    return repo


def script(harness: str, workload: str, steps: int, silent: bool = False) -> list:
    """The model's replies: one call per step (with its why unless ``silent``), then the way
    each harness finishes."""

    def call(name: str, **args) -> dict:
        why = None if silent else f"Step {i + 1}: the next file."
        return calls([tool_call(name, args)], content=why)

    replies = []
    for i in range(steps):
        if workload == "write":
            body = _lines(WRITE_BYTES, 500 + i)
            if harness == "yuyao":
                replies.append(call("write", file_path=f"out/f{i:03d}.txt", content=body))
            else:
                cmd = f"mkdir -p out && cat > out/f{i:03d}.txt <<'EOF'\n{body}EOF"
                replies.append(call("bash", command=cmd))
        else:
            prefix = "s" if workload == "1KB" else "l"
            replies.append(call("bash", command=f"cat data/{prefix}{i:03d}.txt"))
    replies.append(say("done") if harness == "yuyao" else call("bash", command=h.SUBMIT))
    return replies


def prompt_bytes(body: dict) -> bytes:
    """The request as a prefix cache sees it: tools, then messages; cache markers dropped."""

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    def dump(value) -> str:
        return json.dumps(clean(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    parts = [dump(body.get("tools") or [])]
    parts += [dump(m) for m in body.get("messages") or []]
    return "".join(parts).encode()


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of two byte strings (found by halving)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def next_session(runs: list[dict]) -> None:
    """Sets each run's "next session" bytes: its first request charged from where it differs
    from the previous run's (the first run is compared with the second); drops the prompts."""
    firsts = [r.pop("first_prompt", b"") for r in runs]
    for i, r in enumerate(runs):
        other = firsts[i - 1] if i else (firsts[1] if len(firsts) > 1 else b"")
        shared = common_prefix(firsts[i], other)
        r["next_session_uncacheable_bytes"] = r["uncacheable_bytes"] - shared


def uncacheable(bodies: list[dict]) -> tuple[int, int, list[int], int]:
    """(uncacheable bytes, total bytes, per-request uncacheable bytes, rewritten bytes) of one
    run; rewritten: bytes of a request that the next one did not keep (0 when append-only)."""
    prev = b""
    total = unc = rewritten = 0
    per = []
    for body in bodies:
        cur = prompt_bytes(body)
        same = common_prefix(cur, prev)
        rewritten += len(prev) - same
        per.append(len(cur) - same)
        unc += len(cur) - same
        total += len(cur)
        prev = cur
    return unc, total, per, rewritten


def run_once(
    harness: str, python: str, workload: str, work: Path, steps: int, silent: bool = False
) -> dict:
    """One scripted run in a fresh copy of the workspace; the bytes of its requests."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"{harness}-{workload}-", dir=work))
    repo = make_workspace(run_dir, steps)
    server = h.TimedFakeLLM(script(harness, workload, steps, silent), api_key=h.API_KEY).start()
    args = [harness if harness == "yuyao" else "peer", "--url", server.url, "--repo", str(repo)]
    if harness == "peer":
        args += ["--peer-format", "toolcall"]
    try:
        result = h.run_child(python, [*args, "--task", TASK], h.child_env(run_dir, server.url))
    finally:
        server.stop()
    bodies = [r["body"] for r in server.requests if r.get("body")]
    unc, total, per, rewritten = uncacheable(bodies)
    return {
        "harness": harness,
        "workload": workload,
        "requests": len(bodies),
        "uncacheable_bytes": unc,
        "total_bytes": total,
        "first_request_bytes": per[0] if per else 0,
        "rewritten_bytes": rewritten,
        "per_request_uncacheable": per,
        "first_prompt": prompt_bytes(bodies[0]) if bodies else b"",
        "finished": result.get("answer") == "done" or result.get("exit_status") == "Submitted",
        "script_exhausted": len(server.exhausted),
        "files_written": len(list((repo / "out").glob("*"))) if (repo / "out").exists() else 0,
        "error": result.get("error"),
        "peer_version": result.get("peer_version"),
    }


def summarize(runs: list[dict]) -> dict:
    """min / median over the rounds of one harness and workload."""
    if not runs or any(r.get("error") for r in runs):
        return {"error": next((r["error"] for r in runs if r.get("error")), "no run")}
    out = {}
    for key in KEYS:
        values = [r[key] for r in runs]
        out[key] = {"min": min(values), "median": statistics.median(values)}
    out["requests"] = runs[0]["requests"]
    out["finished"] = all(r["finished"] and not r["script_exhausted"] for r in runs)
    return out


def _kb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:,.1f}"


def print_table(report: dict) -> None:
    head = (
        "workload",
        "harness",
        "uncacheable KB",
        "of it 1st req",
        "rewritten KB",
        "total KB",
        "next session",
    )
    print(f"{head[0]:<9}{head[1]:<8}" + "".join(f"{x:>16}" for x in head[2:]))
    for w in report["workloads"]:
        by = report["summary"][w]
        y, p = by["yuyao"], by.get("peer", {})
        for side, row in (("yuyao", y), ("peer", p)):
            if not row:
                continue
            if "error" in row:
                print(f"{w:<9}{side:<8}  failed: {row['error']}")
                continue
            cells = [_kb(row[k]["min"]) for k in KEYS]
            print(f"{w:<9}{side:<8}" + "".join(f"{c:>16}" for c in cells))
            for key in KEYS:
                if row[key]["min"] != row[key]["median"]:
                    print(f"  note: {side} {key} varied between rounds: {row[key]}")
            if not row["finished"]:
                print(f"  warning: {side} did not finish as scripted on {w}")
        if "error" not in y and p and "error" not in p:

            def ratio(key: str, y=y, p=p) -> str:
                a, b = y[key]["min"], p[key]["min"]
                return f"{a / b:.2f}x" if b else "-"

            after = (
                (y["uncacheable_bytes"]["min"] - y["first_request_bytes"]["min"])
                / max(1, p["uncacheable_bytes"]["min"] - p["first_request_bytes"]["min"])
            )  # fmt: skip
            print(
                f"{w:<9}{'ratio':<8}{ratio('uncacheable_bytes'):>16}{'':>16}{'':>16}"
                f"{ratio('total_bytes'):>16}{ratio('next_session_uncacheable_bytes'):>16}"
                f"   (uncacheable after the 1st request: {after:.2f}x)"
            )
    print(
        "(KB = 1024 bytes of the rendered prompt; ratio = yuyao / peer, below 1: yuyao sends less)"
    )
    print(f"peer: {report.get('peer_version') or report.get('peer_error')}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-n", "--steps", type=int, default=50, help="tool steps per run (50)")
    ap.add_argument("--rounds", type=int, default=2, help="ABAB rounds per workload (2)")
    ap.add_argument("--workload", choices=WORKLOADS, action="append", help="only these")
    ap.add_argument("--no-peer", action="store_true", help="measure yuyao only")
    ap.add_argument("--silent", action="store_true", help="the model never says why it calls")
    ap.add_argument("--peer-venv", type=Path, default=h.DEFAULT_PEER_VENV, help="peer's venv")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rec = Recorder("requests")
    workloads = args.workload or list(WORKLOADS)
    steps = max(1, args.steps)
    with tempfile.TemporaryDirectory(prefix="yuyao-bench-requests-") as tmp:
        work = Path(tmp)
        peer_python, peer_error = None, "skipped (--no-peer)"
        if not args.no_peer:
            peer_python, peer_error = h.ensure_peer(args.peer_venv, work, PEER_PIN)
        runs: dict[str, dict[str, list]] = {w: {"yuyao": [], "peer": []} for w in workloads}
        for w in workloads:
            for _ in range(max(1, args.rounds)):  # A B A B …
                runs[w]["yuyao"].append(
                    run_once("yuyao", sys.executable, w, work, steps, args.silent)
                )
                if peer_python:
                    runs[w]["peer"].append(
                        run_once("peer", peer_python, w, work, steps, args.silent)
                    )
        for side in ("yuyao", "peer"):  # in the order they ran, workload after workload
            next_session([r for w in workloads for r in runs[w][side]])
        summary = {
            w: {side: summarize(rs) for side, rs in by.items() if rs} for w, by in runs.items()
        }
        versions = {r.get("peer_version") for by in runs.values() for r in by["peer"]}
        report = {
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "steps": steps,
            "rounds": args.rounds,
            "silent_model": args.silent,
            "workloads": workloads,
            "peer_version": f"peer harness {', '.join(sorted(v for v in versions if v))}"
            if versions
            else None,
            "peer_error": peer_error,
            "summary": summary,
            "runs": runs,
        }
    print_table(report)
    path = rec.save(
        report,
        peer=PEER_PIN if peer_python else None,
        peer_version=report["peer_version"],
        tree=f"generated git repository per run: {steps} 1 KB and {steps} 14 KB data files",
        label="silent" if args.silent else "",
    )
    print(f"raw figures: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
