"""`yuyao batch` (docs/parallel.md): many headless tasks, each in a fresh checkout, on the local
process pool and on a Ray cluster, end to end against the scripted model.

The model is one responder for every task: the first call of a task writes `out-<id>.txt`
into its checkout, the second says it is done, so each task is Submitted with a patch
naming its own file. Every call costs $0.002 (1000 prompt + 100 completion tokens).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from conftest import yuyao_command
from fakellm import call, say

pytestmark = pytest.mark.core

PRICES = json.dumps({"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-5})
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
CALL_COST = 0.002
TASK_ID = re.compile(r"TASK-ID ([\w.-]+)")


def responder(
    delay: float = 0.0,
    first_delay: float | None = None,
    seen: list | None = None,
    slow: set | None = None,
):
    """`seen` collects the task ids of first calls, in arrival order; `first_delay` is the
    delay of the first call of the tasks in `slow` (of every task when `slow` is None)."""

    def answer(body, index):
        text = json.dumps(body["messages"])
        task = TASK_ID.search(text).group(1)
        if any(m.get("role") == "tool" for m in body["messages"]):
            return {**say(f"Created out-{task}.txt."), "delay": delay}
        if seen is not None:
            seen.append(task)
        step = call("write", file_path=f"out-{task}.txt", content=f"{task}\n")
        slow_one = first_delay is not None and (slow is None or task in slow)
        return {**step, "delay": first_delay if slow_one else delay}

    return answer


def task_line(task_id: str, repo: Path, **extra) -> str:
    return json.dumps(
        {"id": task_id, "task": f"Create the file out-{task_id}.txt (TASK-ID {task_id})",
         "repo": str(repo), **extra}
    )  # fmt: skip


def write_tasks(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def results(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def by_id(out: Path) -> dict:
    return {r["id"]: r for r in results(out) if r["id"]}


def batch(*args, env, cwd, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*yuyao_command(), "batch", *map(str, args)],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def start_batch(*args, env, cwd) -> subprocess.Popen:
    return subprocess.Popen(
        [*yuyao_command(), "batch", *map(str, args)],
        env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def no_half_files(out: Path) -> None:
    leftovers = [p for p in out.rglob("*") if p.name.endswith(".tmp") or ".old-" in p.name]
    assert not leftovers, leftovers
    assert not (out / ".work").exists()


# ---------------------------------------------------------------------------------------------
# The local pool


def test_local_pool_runs_each_task_in_a_fresh_checkout_and_reports_a_malformed_line(
    fake_llm, env, repo, tmp_path, git_status
):
    server = fake_llm(responder(), usage=USAGE)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            task_line("t1", repo),
            "{not json",
            task_line("t2", repo, budget={"max_steps": 5}),
            json.dumps({"id": "../escape", "task": "x", "repo": str(repo)}),
            task_line("t3", repo),
        ],
    )
    out = tmp_path / "out"
    proc = batch(tasks, "--out-dir", out, "--parallel", 2, env=env(server, D2A_MODEL_COST=PRICES),
                 cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # the malformed lines fail the batch
    assert f"{tasks}:2: not valid JSON" in proc.stderr
    assert f"{tasks}:4: 'id' must be" in proc.stderr
    lines = results(out)
    assert [r["id"] for r in lines] == ["t1", "t2", "t3", None, None]
    assert [r["line"] for r in lines[3:]] == [f"{tasks}:2", f"{tasks}:4"]
    for task_id in ("t1", "t2", "t3"):
        line = by_id(out)[task_id]
        assert line["exit_status"] == "Submitted", line
        assert line["steps"] == 2 and line["cost_usd"] == pytest.approx(2 * CALL_COST)
        assert line["wall_seconds"] > 0
        status = json.loads((out / task_id / "status.json").read_text())
        assert status["exit_status"] == "Submitted"
        patch = (out / line["patch"]).read_text()
        assert f"out-{task_id}.txt" in patch and "+" + task_id in patch
        assert any((out / task_id / ".trajectory").iterdir())
    # Each task had its own checkout; the given repository is untouched.
    assert git_status(repo) == set()
    assert not list(repo.glob("out-*"))
    assert len(server.requests) == 6
    no_half_files(out)

    # Re-running the same command skips the finished tasks: no model call at all.
    again = batch(tasks, "--out-dir", out, "--json", env=env(server, D2A_MODEL_COST=PRICES),
                  cwd=tmp_path)  # fmt: skip
    assert len(server.requests) == 6, again.stderr
    document = json.loads(again.stdout)
    assert document["summary"]["by_status"] == {"Submitted": 3, "Malformed": 2}
    assert all(r.get("resumed") for r in document["results"] if r["id"])
    assert "resuming: 3 finished tasks skipped, 0 to run" in again.stderr


def test_a_folder_of_task_files_with_task_files_and_budgets(fake_llm, env, repo, tmp_path):
    server = fake_llm(responder(), usage=USAGE)
    folder = tmp_path / "tasks"
    (folder / "texts").mkdir(parents=True)
    (folder / "texts" / "b.yaml").write_text("task: Create the file out-b.txt (TASK-ID b)\n")
    (folder / "a.json").write_text(task_line("a", Path("..") / repo.name))
    (folder / "more.jsonl").write_text(
        json.dumps({"id": "b", "task_file": "texts/b.yaml", "repo": str(repo)})
        + "\n"
        # A budget of one step: the task stops after its first call (LimitsExceeded, exit 0).
        + task_line("c", repo, budget={"max_steps": 1})
        + "\n"
    )
    (folder / "notes.txt").write_text("not a task file")
    out = tmp_path / "out"
    proc = batch(folder, "--out-dir", out, "--json", env=env(server, D2A_MODEL_COST=PRICES),
                 cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = {r["id"]: r for r in json.loads(proc.stdout)["results"]}
    assert [got[k]["exit_status"] for k in "abc"] == ["Submitted", "Submitted", "LimitsExceeded"]
    assert "out-b.txt" in (out / "b" / "submission.patch").read_text()
    assert got["c"]["steps"] == 1 and "step limit" in got["c"]["limit"]


def test_ctrl_c_interrupts_running_tasks_cleanly_and_a_rerun_finishes_only_those(
    fake_llm, env, repo, tmp_path
):
    slow = fake_llm(responder(delay=60), usage=USAGE)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"t{i}", repo) for i in range(4)])
    out = tmp_path / "out"
    driver = start_batch(tasks, "--out-dir", out, "--parallel", 2,
                         env=env(slow, D2A_MODEL_COST=PRICES), cwd=tmp_path)  # fmt: skip
    wait_for(lambda: len(slow.requests) >= 2, 60, "two tasks calling the model")
    driver.send_signal(signal.SIGINT)
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 1, err
    assert "interrupted; re-run the same command to resume" in err
    lines = by_id(out)
    statuses = sorted(r["exit_status"] for r in lines.values())
    assert statuses == ["Interrupted", "Interrupted", "NotRun", "NotRun"], lines
    for task_id, line in lines.items():
        if line["exit_status"] == "Interrupted":
            assert json.loads((out / task_id / "status.json").read_text())["exit_status"] == (
                "Interrupted"
            )
        else:
            assert not (out / task_id).exists()
    no_half_files(out)

    fast = fake_llm(responder(), usage=USAGE)
    proc = batch(tasks, "--out-dir", out, env=env(fast, D2A_MODEL_COST=PRICES), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {r["exit_status"] for r in by_id(out).values()} == {"Submitted"}
    assert len(fast.requests) == 8  # all four ran again: none had finished


def test_ctrl_c_stops_a_batch_started_with_sigint_ignored(fake_llm, env, repo, tmp_path):
    """A script's `yuyao batch … &`, nohup or a CI runner without job control start the batch
    with SIGINT ignored (exec keeps an ignored signal); SIGINT must still stop it."""
    slow = fake_llm(responder(delay=60), usage=USAGE)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"t{i}", repo) for i in range(2)])
    out = tmp_path / "out"
    driver = subprocess.Popen(
        [*yuyao_command(), "batch", str(tasks), "--out-dir", str(out), "--parallel", "2"],
        env=env(slow, D2A_MODEL_COST=PRICES), cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    wait_for(lambda: len(slow.requests) >= 2, 60, "two tasks calling the model")
    driver.send_signal(signal.SIGINT)
    _, err = driver.communicate(timeout=30)
    assert driver.returncode == 1, err
    assert "interrupted; re-run the same command to resume" in err
    assert sorted(r["exit_status"] for r in by_id(out).values()) == ["Interrupted"] * 2


def test_the_spend_ceiling_holds_across_tasks(fake_llm, env, repo, tmp_path):
    server = fake_llm(responder(), usage=USAGE)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"t{i}", repo) for i in range(6)])
    out = tmp_path / "out"
    ceiling = 5 * CALL_COST  # two and a half tasks
    proc = batch(tasks, "--out-dir", out, "--parallel", 1, "--max-cost-usd", ceiling,
                 env=env(server, D2A_MODEL_COST=PRICES), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    got = by_id(out)
    # The third task's second call would pass the batch's ceiling: its core refuses it.
    assert [got[f"t{i}"]["exit_status"] for i in range(3)] == ["Submitted"] * 2 + ["LimitsExceeded"]
    assert "batch spend ceiling reached" in got["t2"]["limit"]
    assert got["t2"]["steps"] == 1
    assert all(got[f"t{i}"]["exit_status"] == "NotRun" for i in range(3, 6))
    assert "batch spend ceiling reached" in got["t5"]["error"]
    spent = sum(r["cost_usd"] for r in got.values())
    assert spent == pytest.approx(ceiling) and len(server.requests) == 5
    ledger = json.loads((out / "spend-ledger.json").read_text())
    assert sum(ledger["tasks"].values()) == pytest.approx(spent)

    # Two at a time: the check before each call lets at most the calls in flight pass it.
    out2 = tmp_path / "out2"
    before = len(server.requests)
    proc = batch(tasks, "--out-dir", out2, "--parallel", 2, "--max-cost-usd", ceiling,
                 env=env(server, D2A_MODEL_COST=PRICES), cwd=tmp_path)  # fmt: skip
    spent = sum(r["cost_usd"] for r in by_id(out2).values())
    assert ceiling - 1e-9 <= spent <= ceiling + 2 * CALL_COST + 1e-9
    assert (len(server.requests) - before) * CALL_COST == pytest.approx(spent)

    # Resumed with the same ceiling: nothing more is spent; the stopped task is not finished.
    before = len(server.requests)
    again = batch(tasks, "--out-dir", out, "--max-cost-usd", ceiling,
                  env=env(server, D2A_MODEL_COST=PRICES), cwd=tmp_path)  # fmt: skip
    assert again.returncode == 1
    assert len(server.requests) == before
    assert "resuming: 2 finished tasks skipped, 4 to run" in again.stderr


def test_max_failures_stops_starting_tasks(fake_llm, env, repo, tmp_path):
    server = fake_llm(responder(), usage=USAGE)
    plain = tmp_path / "not-a-repository"
    plain.mkdir()
    lines = [task_line("good", repo)] + [task_line(f"bad{i}", plain) for i in range(5)]
    tasks = write_tasks(tmp_path / "tasks.jsonl", lines)
    out = tmp_path / "out"
    proc = batch(tasks, "--out-dir", out, "--parallel", 1, "--max-failures", 2,
                 env=env(server, D2A_MODEL_COST=PRICES), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1
    got = by_id(out)
    assert got["good"]["exit_status"] == "Submitted"
    assert [got[f"bad{i}"]["exit_status"] for i in range(5)] == ["Error"] * 2 + ["NotRun"] * 3
    assert "a git repository is needed" in got["bad0"]["error"]
    assert "--max-failures 2 reached" in got["bad4"]["error"]


def test_ray_without_ray_installed_says_how_to_install_it(env, repo, tmp_path):
    fake = tmp_path / "no-ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line("t1", repo)])
    proc = batch(tasks, "--out-dir", tmp_path / "out", "--ray", "auto",
                 env=env(PYTHONPATH=str(fake.parent)), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1
    assert "pip install 'yuyao[ray]'" in proc.stderr


# ---------------------------------------------------------------------------------------------
# Ray: a head and two worker nodes on this machine (Ray's own cluster utilities)

MB = 1024 * 1024
# Ray's switch for "a cluster of one machine": off, a node's address is 127.0.0.1.
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@pytest.fixture(scope="module")
def ray_cluster():
    pytest.importorskip("ray", reason="Ray is not installed (scripts/test-requirements.txt)")
    from ray.cluster_utils import Cluster

    # A worker killed with its node leaves its temporary folder behind: removed at the end.
    scratch = Path(tempfile.gettempdir())
    before = set(scratch.glob("yuyao-batch-*"))
    # Every node, worker and driver on the loopback address, not this machine's interface.
    saved = os.environ.get(LOOPBACK_ONLY)
    os.environ[LOOPBACK_ONLY] = "0"

    node = {"object_store_memory": 80 * MB, "node_ip_address": "127.0.0.1"}
    # The head runs the driver's ledger actor only; tasks go to the two workers.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, **node})
    workers = [cluster.add_node(num_cpus=4, **node) for _ in range(2)]
    cluster.wait_for_nodes()
    cluster.node_args = node
    cluster.workers = workers
    yield cluster
    cluster.shutdown()
    for left in set(scratch.glob("yuyao-batch-*")) - before:
        shutil.rmtree(left, ignore_errors=True)
    if saved is None:
        os.environ.pop(LOOPBACK_ONLY, None)
    else:
        os.environ[LOOPBACK_ONLY] = saved


def ray_env(env, server, **extra):
    return env(server, D2A_MODEL_COST=PRICES, RAY_ADDRESS=None, **{LOOPBACK_ONLY: "0"}, **extra)


def test_ray_runs_twenty_tasks_and_a_killed_node_loses_none(
    ray_cluster, fake_llm, env, repo, tmp_path, git_status
):
    seen: list = []
    first_wave = {f"t{i:02d}" for i in range(8)}  # submitted first, eight at a time
    server = fake_llm(
        responder(delay=0.2, first_delay=8.0, seen=seen, slow=first_wave), usage=USAGE
    )
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"t{i:02d}", repo) for i in range(20)])
    out = tmp_path / "out"
    driver = start_batch(tasks, "--out-dir", out, "--parallel", 8, "--ray", ray_cluster.address,
                         env=ray_env(env, server), cwd=tmp_path)  # fmt: skip
    # The first wave's eight first calls in flight at once (each lasts 8 s) fill both
    # workers' four CPUs: one worker node then dies with four tasks mid-call.
    wait_for(lambda: first_wave <= set(seen), 120, "eight tasks calling the model")
    assert not list(out.glob("t*/status.json")), "the first wave must still be running"
    victim = ray_cluster.workers[0]
    ray_cluster.remove_node(victim)
    _, err = driver.communicate(timeout=240)
    ray_cluster.workers[0] = ray_cluster.add_node(num_cpus=4, **ray_cluster.node_args)
    assert driver.returncode == 0, err
    lines = results(out)
    assert sorted(r["id"] for r in lines) == [f"t{i:02d}" for i in range(20)], "one line a task"
    assert {r["exit_status"] for r in lines} == {"Submitted"}, lines
    for r in lines:
        patch = (out / r["patch"]).read_text()
        assert f"out-{r['id']}.txt" in patch
    # The tasks of the killed node were retried (on the survivor, from a clean checkout: the
    # patch holds only the task's own file) and still gave one result each.
    retried = [r for r in lines if r["attempts"] > 1]
    assert len(retried) >= 4, [(r["id"], r["attempts"], r["node"]) for r in lines]
    assert all(r["node"] != victim.node_id for r in retried)
    assert all(r["attempts"] == 1 for r in lines if r not in retried)
    assert json.loads((out / "ray.json").read_text())["ray_version"]
    assert git_status(repo) == set()
    no_half_files(out)


def test_ray_spend_ceiling_holds_across_nodes(ray_cluster, fake_llm, env, repo, tmp_path):
    server = fake_llm(responder(delay=0.3), usage=USAGE)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"c{i}", repo) for i in range(12)])
    out = tmp_path / "out"
    ceiling = 7 * CALL_COST
    parallel = 6
    proc = batch(tasks, "--out-dir", out, "--parallel", parallel, "--max-cost-usd", ceiling,
                 "--ray", ray_cluster.address, env=ray_env(env, server), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    lines = by_id(out)
    assert len(lines) == 12
    nodes = {r.get("node") for r in lines.values() if r.get("node")}
    assert len(nodes) == 2, "the tasks ran on both worker nodes"
    spent = sum(r["cost_usd"] for r in lines.values())
    assert len(server.requests) * CALL_COST == pytest.approx(spent)
    # The bound of docs/parallel.md: the ceiling plus the calls in flight (one a running task).
    assert ceiling - 1e-9 <= spent <= ceiling + parallel * CALL_COST + 1e-9, lines
    assert any(r["exit_status"] == "NotRun" for r in lines.values())


def test_ray_ctrl_c_interrupts_the_tasks_on_the_workers(ray_cluster, fake_llm, env, repo, tmp_path):
    seen: list = []
    server = fake_llm(responder(first_delay=60, seen=seen), usage=USAGE)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"i{i}", repo) for i in range(6)])
    out = tmp_path / "out"
    driver = start_batch(tasks, "--out-dir", out, "--parallel", 4, "--ray", ray_cluster.address,
                         env=ray_env(env, server), cwd=tmp_path)  # fmt: skip
    wait_for(lambda: len(set(seen)) >= 4, 120, "four tasks calling the model")
    started = time.monotonic()
    driver.send_signal(signal.SIGINT)
    _, err = driver.communicate(timeout=90)
    assert driver.returncode == 1, err
    assert time.monotonic() - started < 30, "the runs stopped mid-call, not after it"
    lines = by_id(out)
    statuses = sorted(r["exit_status"] for r in lines.values())
    assert statuses == ["Interrupted"] * 4 + ["NotRun"] * 2, lines
    for task_id, line in lines.items():
        if line["exit_status"] == "Interrupted":
            status = json.loads((out / task_id / "status.json").read_text())
            assert status["exit_status"] == "Interrupted"
            assert any((out / task_id / ".trajectory").iterdir())
    no_half_files(out)


def test_ray_driver_killed_and_rerun_resumes_only_unfinished_tasks(
    ray_cluster, fake_llm, env, repo, tmp_path
):
    server = fake_llm(responder(delay=0.5), usage=USAGE)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [task_line(f"k{i}", repo) for i in range(8)])
    out = tmp_path / "out"
    driver = start_batch(tasks, "--out-dir", out, "--parallel", 2, "--ray", ray_cluster.address,
                         env=ray_env(env, server), cwd=tmp_path)  # fmt: skip
    wait_for(lambda: len(list(out.glob("k*/status.json"))) >= 2, 120, "two finished tasks")
    os.killpg(driver.pid, signal.SIGKILL)
    driver.communicate(timeout=30)
    done = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("k*/status.json")}
    assert 2 <= len(done) < 8
    proc = batch(tasks, "--out-dir", out, "--parallel", 4, "--ray", ray_cluster.address,
                 env=ray_env(env, server), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"resuming: {len(done)} finished tasks skipped, {8 - len(done)} to run" in proc.stderr
    lines = by_id(out)
    assert sorted(lines) == [f"k{i}" for i in range(8)]
    assert {r["exit_status"] for r in lines.values()} == {"Submitted"}
    for task_id, mtime in done.items():
        assert lines[task_id].get("resumed") is True
        assert (out / task_id / "status.json").stat().st_mtime_ns == mtime, "not run again"
    no_half_files(out)


def test_a_workers_archive_cannot_write_outside_its_folder(tmp_path):
    """What a Ray worker returns is data: a path that climbs out is refused, links are dropped."""
    import io
    import tarfile

    from yuyao.batch.on_ray import _unpack

    def archive(*members) -> bytes:
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w:gz") as tar:
            for info, body in members:
                tar.addfile(info, io.BytesIO(body) if body is not None else None)
        return data.getvalue()

    def file(name: str, body: bytes = b"x"):
        info = tarfile.TarInfo(name)
        info.size = len(body)
        return info, body

    with pytest.raises(ValueError, match="outside its folder"):
        _unpack(archive(file("./status.json"), file("../escaped")), tmp_path / "a")
    assert not (tmp_path / "escaped").exists()

    link = tarfile.TarInfo("./passwd")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    _unpack(archive(file("./status.json", b"{}"), (link, None)), tmp_path / "b")
    assert (tmp_path / "b" / "status.json").read_bytes() == b"{}"
    assert not (tmp_path / "b" / "passwd").exists()
