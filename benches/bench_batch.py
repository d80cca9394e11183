"""Batch throughput: N tasks (default 40) whose scripted model answers each call after 1 s,
run three ways (docs/parallel.md):

  seq      run_agent.sh once per task, one after another, each in a fresh clone (what a
           script around the headless contract does today)
  local P  `yuyao batch --parallel P` on the local process pool, for each P of --parallel
  ray P    `yuyao batch --ray ADDRESS --parallel P` on a local Ray cluster this bench starts
           (Ray's own cluster utilities: a head and two worker nodes of P/2 logical CPUs each)

    python benches/bench_batch.py                       # 40 tasks; local 1,2,4,8; ray 8
    python benches/bench_batch.py -n 16 --parallel 4,8 --no-seq --no-ray

Each task makes two model calls (write a file, then say it is done: Submitted), so its model
time is 2 s. Per row: wall time, throughput (tasks/min), speedup over `seq`, and the
overhead per task: the slot time a task took beyond its model time (wall x P / N - 2 s):
process start, checkout, the core's own work and the batch's bookkeeping. Model latency
bound, throughput should grow near-linearly with P until the machine's cores are the limit.
The Ray version is recorded. Raw figures: benches/results/batch-<date>.json. No figure is
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benches"))

from _record import Recorder  # noqa: E402

PRICES = json.dumps({"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-5})
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
CALLS_PER_TASK = 2
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray nodes on 127.0.0.1


def responder(latency: float):
    import re

    from fakellm import call, say

    pattern = re.compile(r"TASK-ID ([\w.-]+)")

    def answer(body, index):
        task = pattern.search(json.dumps(body["messages"])).group(1)
        if any(m.get("role") == "tool" for m in body["messages"]):
            return {**say(f"Created out-{task}.txt."), "delay": latency}
        return {
            **call("write", file_path=f"out-{task}.txt", content=f"{task}\n"),
            "delay": latency,
        }

    return answer


def make_repo(path: Path) -> None:
    path.mkdir()
    (path / "README.md").write_text("# bench\n")
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "."],
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "init"],
    ):
        subprocess.run(argv, cwd=path, check=True)


def task_text(task_id: str) -> str:
    return f"Create the file out-{task_id}.txt (TASK-ID {task_id})"


def environment(server, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("D2A_", "YUYAO_"))}
    env.update(
        D2A_MODEL_BASE_URL=server.url,
        D2A_MODEL_NAME="litellm_proxy/fake-model",
        D2A_MODEL_API_KEY="bench-key",
        D2A_MODEL_COST=PRICES,
        YUYAO_HOME=str(home),
        NO_COLOR="1",
    )
    env[LOOPBACK_ONLY] = "0"
    if sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix
    return env


def yuyao() -> list[str]:
    script = Path(sys.executable).parent / "yuyao"
    return [str(script)] if script.exists() else [sys.executable, "-m", "yuyao"]


def run_sequential(ids, repo: Path, work: Path, env: dict) -> tuple[float, int]:
    """run_agent.sh per task, each in a fresh clone (timed: the batch clones too)."""
    submitted = 0
    started = time.perf_counter()
    for task_id in ids:
        clone = work / task_id / "repo"
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        task_file = work / task_id / "task.txt"
        task_file.write_text(task_text(task_id))
        budget = work / task_id / "budget.json"
        budget.write_text('{"max_steps": 10}')
        proc = subprocess.run(
            ["bash", str(ROOT / "run_agent.sh"), "--task-file", str(task_file),
             "--repo-dir", str(clone), "--model-base-url", env["D2A_MODEL_BASE_URL"],
             "--model-name", env["D2A_MODEL_NAME"], "--model-api-key", "bench-key",
             "--budget-file", str(budget), "--out-dir", str(work / task_id / "out")],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        status = json.loads((work / task_id / "out" / "status.json").read_text())
        submitted += proc.returncode == 0 and status["exit_status"] == "Submitted"
    return time.perf_counter() - started, submitted


def run_batch(tasks: Path, out: Path, env: dict, parallel: int, ray: str | None):
    argv = [*yuyao(), "batch", str(tasks), "--out-dir", str(out), "--parallel", str(parallel)]
    if ray:
        argv += ["--ray", ray]
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    submitted = sum(1 for r in lines if r["exit_status"] == "Submitted")
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-2000:])
    return wall, submitted


def row(name: str, parallel: int, wall: float, n: int, submitted: int, latency: float, seq):
    model = CALLS_PER_TASK * latency
    return {
        "mode": name,
        "parallel": parallel,
        "tasks": n,
        "submitted": submitted,
        "wall_s": round(wall, 2),
        "tasks_per_min": round(60 * n / wall, 1),
        "speedup_vs_seq": round(seq / wall, 2) if seq else None,
        "overhead_per_task_s": round(wall * parallel / n - model, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--tasks", type=int, default=40)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model answer")
    parser.add_argument("--parallel", default="1,2,4,8", help="local pool sizes")
    parser.add_argument("--ray-parallel", type=int, default=8)
    parser.add_argument("--no-seq", action="store_true")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    rec = Recorder("batch")
    from fakellm import FakeLLM

    server = FakeLLM(responder(args.latency), usage=USAGE, api_key="bench-key").start()
    tmp = Path(tempfile.mkdtemp(prefix="yuyao-bench-batch-"))
    rows, info = [], {"cores": os.cpu_count(), "latency_s": args.latency}
    cluster = None
    try:
        repo = tmp / "repo"
        make_repo(repo)
        home = tmp / "home"
        home.mkdir()
        env = environment(server, home)
        ids = [f"b{i:03d}" for i in range(args.tasks)]
        tasks = tmp / "tasks.jsonl"
        tasks.write_text(
            "".join(
                json.dumps(
                    {"id": i, "task": task_text(i), "repo": str(repo), "budget": {"max_steps": 10}}
                )
                + "\n"
                for i in ids
            )  # fmt: skip
        )
        seq = None
        if not args.no_seq:
            wall, ok = run_sequential(ids, repo, tmp / "seq", env)
            seq = wall
            rows.append(row("seq", 1, wall, args.tasks, ok, args.latency, seq))
            print(_line(rows[-1]), flush=True)
        for p in [int(x) for x in args.parallel.split(",") if x.strip()]:
            wall, ok = run_batch(tasks, tmp / f"local-{p}", env, p, None)
            rows.append(row("local", p, wall, args.tasks, ok, args.latency, seq))
            print(_line(rows[-1]), flush=True)
        if not args.no_ray:
            cluster, version = start_cluster(args.ray_parallel)
            info["ray_version"] = version
            wall, ok = run_batch(tasks, tmp / "ray", env, args.ray_parallel, cluster.address)
            rows.append(row("ray", args.ray_parallel, wall, args.tasks, ok, args.latency, seq))
            print(_line(rows[-1]), flush=True)
    finally:
        if cluster is not None:
            cluster.shutdown()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(info))
    peer = f"ray {info['ray_version']}" if "ray_version" in info else None
    out = rec.save({**info, "rows": rows}, peer="sequential yuyao runs; ray" if peer else
                   "sequential yuyao runs", peer_version=peer,
                   tree="generated git repository, one file per task")  # fmt: skip
    print(f"written {out}")
    return 0


def start_cluster(parallel: int):
    os.environ[LOOPBACK_ONLY] = "0"
    import ray
    from ray.cluster_utils import Cluster

    node = {"object_store_memory": 80 * 1024 * 1024, "node_ip_address": "127.0.0.1"}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, **node})
    for _ in range(2):
        cluster.add_node(num_cpus=max(1, parallel // 2), **node)
    cluster.wait_for_nodes()
    return cluster, ray.__version__


def _line(r: dict) -> str:
    speed = f"{r['speedup_vs_seq']:.2f}x" if r["speedup_vs_seq"] else "—"
    return (
        f"{r['mode']:<6} P={r['parallel']:<2} {r['submitted']}/{r['tasks']} submitted  "
        f"wall {r['wall_s']:7.2f} s  {r['tasks_per_min']:6.1f} tasks/min  speedup {speed:>6}  "
        f"overhead/task {r['overhead_per_task_s']:.2f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
