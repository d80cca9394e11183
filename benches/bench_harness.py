"""Harness overhead per step of yuyao, side by side with a peer agent (mini-swe-agent).

    python benches/bench_harness.py [-n STEPS] [--rounds R] [--big-files N] [--no-peer]
                                    [--peer-venv DIR] [--reason] [--repos tiny,big]
                                    [--rows read,toolcall,bash,text] [--window W]

    python benches/bench_harness.py -n 1000 --repos tiny --rows read,toolcall   # a long session
    python benches/bench_harness.py -n 1000 --repos tiny --rows read,toolcall --reason

Each harness is driven through its Python API in its own subprocess, against the scripted
model server of tests/fakellm.py (zero latency) running in this process, in two temp git
repositories: a tiny one (one file) and a big one generated here (78 000 committed files by
default, the size where a `git status` per model call cost ~150 ms). The rows run interleaved
(yuyao, peer, yuyao, peer, …), the whole sequence `--rounds` times (3); the table gives the
min and the median over the rounds.

- yuyao: `create_session(mode="yolo", cwd=repo).chat(...)`; the model asks for N `read` tool
  calls of a small file, then answers. A second row does the same with N `bash` calls of
  `cat small.txt` (a subprocess per step, as the peer does).
- the peer: mini-swe-agent's DefaultAgent + LocalEnvironment + LitellmModel (model
  `litellm_proxy/fake-model`, cost tracking off), installed from PyPI into a venv under /tmp
  on first use. The model asks for N `cat small.txt` commands, then the documented submit
  command. Two rows: its default tool-call format (`mini.yaml`) and its text format
  (`mini_textbased.yaml`, a fenced `mswea_bash_command` block per reply).

Per row: wall time of the run / model calls, the server's own time per call (measured inside
the request handler), their difference (the harness's overhead per step, the figure compared)
and the peak RSS (VmHWM) of the harness's process. Also the median time of `create_session`
over 20 calls (tiny repository). The peer's version is recorded (pinned: mini-swe-agent 2.4.6).

Long sessions: by default the model states no reason before a tool call ("silent", the case
where yuyao adds its intent reminder); `--reason` gives every call one short line of why (the
same text for both harnesses). For every run the server also records, per request, when it
arrived and the bytes sent: the body on the wire and the prompt as a provider's prefix cache
renders it (tool schemas then messages, compact JSON, cache markers dropped; the measure of
bench_requests.py). The table then gives each harness's total bytes sent over the run and its
per-step cost in the first and the last `--window` steps (a step's cost: from the server's reply
to the next request's arrival, i.e. the harness's own time including the tool), with the
ratio to the peer in each window: a per-step cost that grows with the history shows as a
larger last window.

The raw figures go to benches/results/harness[-tiny][-reason]-<date>.json with the peer's
version, the load before and after and the trees (benches/_record.py). Nothing is asserted
about absolute times; the script exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

sys.path.insert(0, str(ROOT / "benches"))

from _record import Recorder  # noqa: E402
from fakellm import FAKE_MODEL, FakeLLM, call, calls, say, tool_call  # noqa: E402

RESULTS_DIR = ROOT / "benches" / "results"
PEER_PACKAGE = "mini-swe-agent==2.4.6"
DEFAULT_PEER_VENV = Path(tempfile.gettempdir()) / "yuyao-bench-peer-venv"
FILE_NAME = "small.txt"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
TASK = f"Read {FILE_NAME} again and again, then say done."
CHILD_TIMEOUT = 120  # seconds, plus one a step (a 1,000-step peer run takes minutes)
REASON = "Reading the file again to check it."
API_KEY = "bench-key"

# ---------------------------------------------------------------------------------------------
# Inside a child process (run by this file, possibly under the peer's interpreter)


def _peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (VmHWM, else ru_maxrss)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child_yuyao(args: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    from yuyao.agent_api import create_session

    t1 = time.perf_counter()
    session = create_session(mode="yolo", cwd=args.repo)
    # Seed 001's tool-preview budget refuses inspections past 32 KiB without a change between
    # them, and these runs read one file N times: the peer has no such budget, so the per-step
    # comparison runs without it (set in the bench's own YUYAO_HOME).
    session.dispatch("/config set tools.preview_budget_kib 0")
    t2 = time.perf_counter()
    answer = session.chat(args.task)
    t3 = time.perf_counter()
    n_messages = len(session.messages)
    session.close()
    from yuyao import _core

    return {
        "core_file": _core.__file__,  # a debug build (maturin develop) is much slower
        "core_mb": Path(_core.__file__).stat().st_size / 2**20,
        "import_s": t1 - t0,
        "setup_s": t2 - t1,
        "run_s": t3 - t2,
        "answer": answer,
        "messages": n_messages,
        "peak_rss_mb": _peak_rss_mb(),
    }


def _child_create_session(args: argparse.Namespace) -> dict:
    from yuyao.agent_api import create_session

    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        session = create_session(mode="yolo", cwd=args.repo)
        times.append(time.perf_counter() - start)
        session.close()
    return {"create_session_s": times}


def _peer_parts(fmt: str, url: str) -> tuple[dict, object]:
    """The peer's shipped config for `fmt` and a model built from it, aimed at `url`."""
    from minisweagent.config import get_config_from_spec

    if fmt == "text":
        from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel as Model
    else:
        from minisweagent.models.litellm_model import LitellmModel as Model
    config = get_config_from_spec("mini_textbased.yaml" if fmt == "text" else "mini.yaml")
    model_config = dict(config.get("model", {}))
    model_kwargs = {**model_config.pop("model_kwargs", {}), "api_base": url, "api_key": API_KEY}
    model = Model(
        model_name=FAKE_MODEL,
        model_kwargs=model_kwargs,
        cost_tracking="ignore_errors",
        **model_config,
    )
    return config, model


def _child_peer(args: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    import litellm  # noqa: F401  (imported here so its cost lands in import_s)
    import minisweagent
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment

    t1 = time.perf_counter()
    config, model = _peer_parts(args.peer_format, args.url)
    env = LocalEnvironment(cwd=args.repo, **config.get("environment", {}))
    agent_config = {**config["agent"], "step_limit": 0, "cost_limit": 0}
    agent_config.pop("mode", None)
    agent = DefaultAgent(model, env, **agent_config)
    t2 = time.perf_counter()
    result = agent.run(args.task)
    t3 = time.perf_counter()
    return {
        "import_s": t1 - t0,
        "setup_s": t2 - t1,
        "run_s": t3 - t2,
        "exit_status": result.get("exit_status"),
        "messages": len(agent.messages),
        "peer_version": minisweagent.__version__,
        "litellm_version": _dist_version("litellm"),
        "peak_rss_mb": _peak_rss_mb(),
    }


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


CHILDREN = {"yuyao": _child_yuyao, "create_session": _child_create_session, "peer": _child_peer}


def child_main(args: argparse.Namespace) -> int:
    """Run one measurement and print its JSON as the last line of stdout."""
    result = CHILDREN[args.child](args)
    print(json.dumps(result), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# The parent: server, workspace, subprocesses


class TimedFakeLLM(FakeLLM):
    """FakeLLM that adds up the time spent inside its request handler and keeps, per chat
    request, (arrival, handler seconds) on the monotonic clock."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.handler_s = 0.0
        self.timings: list[tuple[float, float]] = []

    def _handle(self, handler) -> None:
        start = time.perf_counter()
        before = len(self.requests)
        # Headers and body go out in two writes; with Nagle on, the second waits for the
        # client's delayed ACK (~40 ms on Linux), a latency that no real endpoint adds.
        handler.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            super()._handle(handler)
        finally:
            spent = time.perf_counter() - start
            self.handler_s += spent
            if len(self.requests) > before:
                self.timings.append((start, spent))


def prompt_bytes(body: dict) -> int:
    """Bytes of the request as a provider's prefix cache renders it: tool schemas, then each
    message, compact JSON with sorted keys, cache markers dropped (as bench_requests.py)."""

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    def dump(value) -> str:
        return json.dumps(clean(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    parts = [dump(body.get("tools") or [])] + [dump(m) for m in body.get("messages") or []]
    return len("".join(parts).encode())


def step_costs(timings: list[tuple[float, float]]) -> list[float]:
    """Seconds the harness spent between the server's reply to request k-1 and request k."""
    return [timings[k][0] - (timings[k - 1][0] + timings[k - 1][1]) for k in range(1, len(timings))]


def window_stats(values: list[float], lo: int, hi: int) -> dict | None:
    part = values[lo:hi]
    if not part:
        return None
    return {"from": lo, "to": lo + len(part), "median": statistics.median(part),
            "mean": statistics.fmean(part)}  # fmt: skip


def make_repo(root: Path, name: str = "repo", files: int = 0) -> Path:
    """A git repository with one small committed file, plus `files` more (100 a folder)."""
    repo = root / name
    repo.mkdir()
    (repo / FILE_NAME).write_text("hello from the benchmark\n")
    for k in range(files):
        folder = repo / "src" / f"d{k // 100:04d}"
        if k % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{k % 100:02d}.py").write_text(f"VALUE_{k} = {k}\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "initial"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    return repo


def scripts(kind: str, repo: Path, steps: int, reason: bool = False) -> list:
    """The model's replies for one run: `steps` file reads, then the way to finish; with
    `reason`, each call comes with one line of why."""
    cat = f"cat {FILE_NAME}"

    def one(name: str, **args) -> dict:
        return calls([tool_call(name, args)], content=REASON) if reason else call(name, **args)

    if kind == "yuyao-read":
        return [one("read", file_path=str(repo / FILE_NAME))] * steps + [say("done")]
    if kind == "yuyao-bash":
        return [one("bash", command=cat)] * steps + [say("done")]
    if kind == "peer-toolcall":
        return [one("bash", command=cat)] * steps + [call("bash", command=SUBMIT)]
    fenced = "THOUGHT: read it.\n\n```mswea_bash_command\n{}\n```"
    return [say(fenced.format(cat))] * steps + [say(fenced.format(SUBMIT))]


def child_env(work: Path, url: str | None) -> dict[str, str]:
    """The environment of a child: isolated homes, the fake model, no inherited settings."""
    prefixes = ("D2A_", "YUYAO_", "MSWEA_", "LITELLM_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(
        YUYAO_HOME=str(work / "yuyao-home"),
        MSWEA_GLOBAL_CONFIG_DIR=str(work / "peer-config"),
        MSWEA_SILENT_STARTUP="1",
        MSWEA_COST_TRACKING="ignore_errors",
        MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        NO_COLOR="1",
    )
    if url:
        env.update(D2A_MODEL_BASE_URL=url, D2A_MODEL_NAME=FAKE_MODEL, D2A_MODEL_API_KEY=API_KEY)
    return env


def run_child(
    python: str, child_args: list[str], env: dict[str, str], timeout: float = CHILD_TIMEOUT
) -> dict:
    """Run this file as a child measurement; its JSON result, or {"error": ...}."""
    cmd = [python, str(Path(__file__).resolve()), "--child", *child_args]
    try:
        proc = subprocess.run(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout}s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: {' | '.join(tail)}"}
    return json.loads(lines[-1])


def measure(
    label: str,
    python: str,
    kind: str,
    work: Path,
    repo: Path,
    steps: int,
    reason: bool = False,
    window: int = 50,
) -> dict:
    """One scripted run of `steps` reads (plus the finishing reply) through one harness."""
    server = TimedFakeLLM(scripts(kind, repo, steps, reason), api_key=API_KEY).start()
    child = "yuyao" if kind.startswith("yuyao") else "peer"
    args = [child, "--url", server.url, "--repo", str(repo)]
    if child == "peer":
        args += ["--peer-format", kind.removeprefix("peer-")]
    try:
        result = run_child(python, args, child_env(work, server.url), CHILD_TIMEOUT + steps)
    finally:
        server.stop()
    calls_served = len(server.requests)
    row = {"label": label, "kind": kind, "steps": steps, "model_calls": calls_served, **result}
    bodies = [r.get("body") or {} for r in server.requests]
    per_prompt = [prompt_bytes(b) for b in bodies]
    costs = step_costs(server.timings)
    row.update(
        prompt_bytes_total=sum(per_prompt),
        wire_bytes_total=sum(int(r["headers"].get("content-length", 0)) for r in server.requests),
        prompt_bytes_last=per_prompt[-1] if per_prompt else 0,
        window_first=window_stats(costs, 0, window),
        window_last=window_stats(costs, max(0, len(costs) - window), len(costs)),
    )
    row.update(
        finished=result.get("answer") == "done" or result.get("exit_status") == "Submitted",
        server_s=server.handler_s,
        script_exhausted=len(server.exhausted),
        malformed_requests=len(set(server._malformed)),
    )
    if "run_s" in result and calls_served:
        row["wall_per_step_ms"] = 1000 * result["run_s"] / calls_served
        row["server_per_step_ms"] = 1000 * server.handler_s / calls_served
        row["overhead_per_step_ms"] = row["wall_per_step_ms"] - row["server_per_step_ms"]
    return row


def measure_create_session(work: Path, repo: Path, repeat: int) -> dict:
    args = ["create_session", "--repo", str(repo), "--repeat", str(repeat)]
    result = run_child(sys.executable, args, child_env(work, "http://127.0.0.1:9/v1"))
    if "create_session_s" in result:
        times_ms = [1000 * t for t in result["create_session_s"]]
        result = {"median_ms": statistics.median(times_ms), "min_ms": min(times_ms)}
        result["runs_ms"] = times_ms
    return result


# ---------------------------------------------------------------------------------------------
# The peer's venv


def ensure_peer(
    venv: Path, work: Path, package: str = PEER_PACKAGE
) -> tuple[str | None, str | None]:
    """(python of a venv that has the pinned peer, None) or (None, what failed)."""
    python = venv / "bin" / "python"
    want = package.split("==")[-1]
    check = f"import minisweagent.agents.default, litellm, minisweagent as m; assert m.__version__ == {want!r}, m.__version__"
    probe = [str(python), "-c", check]
    quiet = {"capture_output": True, "text": True, "env": child_env(work, None)}
    if python.exists() and subprocess.run(probe, **quiet).returncode == 0:
        return str(python), None
    print(f"installing the peer ({PEER_PACKAGE}) into {venv} ...", file=sys.stderr)
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", package],
        probe,
    ]
    for cmd in steps:
        try:
            proc = subprocess.run(cmd, timeout=900, **quiet)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{' '.join(cmd[:4])}: {exc}"
        if proc.returncode != 0:
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            return None, f"{' '.join(cmd[:4])}: exit {proc.returncode}: {tail}"
    return str(python), None


# ---------------------------------------------------------------------------------------------
# Report


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def summarize(rows: list[dict]) -> dict:
    """min / median over the rounds of one row label in one repository."""
    ok = [r for r in rows if "error" not in r and "overhead_per_step_ms" in r]
    out: dict = {"runs": len(rows), "ok": len(ok)}
    if not ok:
        out["error"] = next((r.get("error") for r in rows if "error" in r), "no run")
        return out
    for key in ("overhead_per_step_ms", "wall_per_step_ms", "peak_rss_mb", "prompt_bytes_total",
                "wire_bytes_total"):  # fmt: skip
        values = [r[key] for r in ok]
        out[key] = {"min": min(values), "median": statistics.median(values)}
    for key in ("window_first", "window_last"):
        values = [1000 * r[key]["median"] for r in ok if r.get(key)]
        if values:
            out[f"{key}_ms"] = {"min": min(values), "median": statistics.median(values),
                                "steps": [ok[0][key]["from"], ok[0][key]["to"]]}  # fmt: skip
    out["finished"] = all(r["finished"] and not r["script_exhausted"] for r in ok)
    out["model_calls"] = ok[0]["model_calls"]
    return out


def print_table(report: dict) -> None:
    for repo_name, by_label in report["summary"].items():
        files = report["repos"][repo_name]["files"]
        print(f"\n{repo_name} repository ({files} files), {report['rounds']} interleaved rounds")
        head = ("harness", "steps", "overhead min", "overhead med", "wall/step med", "RSS MB",
                "ratio min", "ratio med")  # fmt: skip
        print(f"{head[0]:<20}" + "".join(f"{h:>14}" for h in head[1:]))
        ref = by_label.get("peer (tool call)", {})
        for label, row in by_label.items():
            if "error" in row:
                print(f"{label:<20}  failed: {row['error']}")
                continue
            over, wall = row["overhead_per_step_ms"], row["wall_per_step_ms"]
            ref_over = ref.get("overhead_per_step_ms", {})
            cells = [
                str(row["model_calls"]),
                _fmt(over["min"]),
                _fmt(over["median"]),
                _fmt(wall["median"]),
                _fmt(row["peak_rss_mb"]["median"], ".1f"),
                _fmt(_ratio(over["min"], ref_over.get("min"))),
                _fmt(_ratio(over["median"], ref_over.get("median"))),
            ]
            print(f"{label:<20}" + "".join(f"{c:>14}" for c in cells))
            if not row["finished"]:
                print(f"  warning: {label} did not finish as scripted")
        print(f"  {'':<18}{'bytes sent':>14}{'ratio':>8}{'first steps':>14}{'ratio':>8}"
              f"{'last steps':>14}{'ratio':>8}{'growth':>8}")  # fmt: skip
        for label, row in by_label.items():
            if "error" in row or "window_last_ms" not in row:
                continue
            sent, first, last = (row["prompt_bytes_total"]["median"],
                                 row["window_first_ms"]["median"], row["window_last_ms"]["median"])  # fmt: skip
            r_sent = _ratio(sent, ref.get("prompt_bytes_total", {}).get("median"))
            r_first = _ratio(first, ref.get("window_first_ms", {}).get("median"))
            r_last = _ratio(last, ref.get("window_last_ms", {}).get("median"))
            lo, hi = row["window_last_ms"]["steps"]
            print(f"  {label:<18}{sent / 1e6:>11.2f} MB{_fmt(r_sent):>8}{first:>11.2f} ms{_fmt(r_first):>8}"
                  f"{last:>11.2f} ms{_fmt(r_last):>8}{_fmt(_ratio(last, first)):>8}")  # fmt: skip
            print(f"  {'':<18}(steps {row['window_first_ms']['steps']} and [{lo}, {hi}]:"
                  " per-step cost medians; bytes: the prompt as a prefix cache renders it)")  # fmt: skip
    print("\n(overhead = wall time per model call minus the fake server's own time per call;")
    print(" ratios are against 'peer (tool call)'; below 1 means yuyao costs less per step)")
    create = report["create_session"]
    if "median_ms" in create:
        print(f"create_session: median {create['median_ms']:.2f} ms, min {create['min_ms']:.2f} ms")
    else:
        print(f"create_session: failed: {create.get('error')}")
    print(f"peer: {report.get('peer_version') or report.get('peer_error')}")


def save(report: dict, rec: Recorder, label: str) -> Path:
    trees = ", ".join(
        f"{name}: generated git repository, {r['files']} files"
        for name, r in report["repos"].items()
    )
    return rec.save(report, peer=PEER_PACKAGE, peer_version=report.get("peer_version"),
                    tree=trees, label=label)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-n", "--steps", type=int, default=100, help="file reads per run (100)")
    ap.add_argument("--repeat", type=int, default=20, help="create_session calls timed (20)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    ap.add_argument(
        "--big-files", type=int, default=78_000, help="files of the big repository (78000)"
    )
    ap.add_argument("--no-peer", action="store_true", help="measure yuyao only")
    ap.add_argument("--peer-venv", type=Path, default=DEFAULT_PEER_VENV, help="peer's venv")
    ap.add_argument("--reason", action="store_true", help="each call comes with a line of why")
    ap.add_argument("--repos", default="tiny,big", help="repositories: tiny,big (both)")
    ap.add_argument("--rows", default="read,toolcall,bash,text",
                    help="rows: read (yuyao), toolcall (peer), bash (yuyao), text (peer)")  # fmt: skip
    ap.add_argument("--window", type=int, default=50, help="steps per cost window (50)")
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--repo", help=argparse.SUPPRESS)
    ap.add_argument("--peer-format", choices=("toolcall", "text"), help=argparse.SUPPRESS)
    ap.add_argument("--task", default=TASK, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def run_all(args: argparse.Namespace, work: Path) -> dict:
    steps = max(1, args.steps)
    wanted = set(args.repos.split(","))
    repos = {"tiny": make_repo(work, "tiny")} if "tiny" in wanted else {}
    if "big" in wanted:
        print(f"generating the big repository ({args.big_files} files) ...", file=sys.stderr)
        repos["big"] = make_repo(work, "big", args.big_files)
    rows_wanted = set(args.rows.split(","))
    peer_python, peer_error = (None, "skipped (--no-peer)")
    if not args.no_peer:
        peer_python, peer_error = ensure_peer(args.peer_venv, work)
    # Interleaved: yuyao, peer, yuyao, peer (the machine's load hits both sides alike).
    plan = [
        (label, py, kind)
        for label, py, kind, row in (
            ("yuyao (read)", sys.executable, "yuyao-read", "read"),
            ("peer (tool call)", peer_python, "peer-toolcall", "toolcall"),
            ("yuyao (bash cat)", sys.executable, "yuyao-bash", "bash"),
            ("peer (text)", peer_python, "peer-text", "text"),
        )
        if py and row in rows_wanted
    ]
    rows = []
    for k in range(max(1, args.rounds)):
        for repo_name, repo in repos.items():
            for label, py, kind in plan:
                print(f"round {k + 1}: {repo_name}: {label} ...", file=sys.stderr)
                row = measure(label, py, kind, work, repo, steps, args.reason, args.window)
                row.update(repo=repo_name, round=k)
                rows.append(row)
    summary = {
        name: {label: summarize([r for r in rows if r["repo"] == name and r["label"] == label])
               for label, _, _ in plan}
        for name in repos
    }  # fmt: skip
    versions = sorted({r["peer_version"] for r in rows if r.get("peer_version")})
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "steps": steps,
        "rounds": max(1, args.rounds),
        "repos": {name: {"files": 1 if name == "tiny" else args.big_files + 1} for name in repos},
        "model_states_reason": args.reason,
        "window": args.window,
        "server": {"latency_s": 0.0, "tcp_nodelay": True, "stream": False},
        "peer": PEER_PACKAGE,
        "peer_version": f"peer harness {', '.join(versions)}" if versions else None,
        "peer_error": peer_error,
        "summary": summary,
        "rows": rows,
        "create_session": measure_create_session(
            work, next(iter(repos.values())), max(1, args.repeat)
        ),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    rec = Recorder("harness")
    with tempfile.TemporaryDirectory(prefix="yuyao-bench-harness-") as tmp:
        report = run_all(args, Path(tmp))
    print_table(report)
    label = "-".join(
        x for x in ("" if set(report["repos"]) == {"tiny", "big"} else "-".join(report["repos"]),
                    "reason" if args.reason else "") if x
    )  # fmt: skip
    print(f"raw figures: {save(report, rec, label)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
