"""`yuyao batch --ray auto|ADDRESS`: the same tasks as Ray tasks on an existing cluster
(docs/parallel.md).

- Each task is one Ray task reserving `--task-cpus` CPUs (and `--task-memory-mb`); inside
  it, `runner.run_task` runs the headless contract as a child process, exactly as the local
  pool does. Workers share no file system with the driver: a local repository travels as a
  `git bundle` of its commit through the object store (put once per repository and commit),
  a `repo_url` is cloned by the worker; the task's out folder comes back as a tar archive in
  the task's return value and is installed under the driver's `DIR/<id>/`.
- The spend ledger is one actor (`LedgerActor`) on the driver's node; each task's wrapper
  mirrors it into the run's local ledger file (`ledger.Mirror`), so the batch ceiling holds
  across nodes with an overshoot of at most the calls in flight.
- A task whose node dies is retried by Ray (`max_retries`, system failures only) from a
  clean checkout in a fresh temporary folder; the driver gets one result per task.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
import uuid
from collections import deque
from pathlib import Path

from yuyao.batch.ledger import LedgerActor, Mirror, make_mirror_file, write_atomic
from yuyao.batch.runner import attempt_key, fallback_result, result_of, run_task
from yuyao.batch.tasks import TaskError, git_env, resolve_commit

INSTALL_HINT = (
    "--ray needs Ray, an optional extra: pip install 'yuyao[ray]' "
    "(into the environment yuyao is installed in, on the driver and on every node)"
)
NODE_RETRIES = 3
STOP_GRACE = 90.0  # seconds the driver waits for interrupted tasks to report


class RayMissing(RuntimeError):
    pass


def load():
    """The Ray executor, or RayMissing saying how to install Ray."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise RayMissing(INSTALL_HINT) from None
    return run_on_ray


# ---------------------------------------------------------------------------------------------
# The worker side


def _pack(folder: Path) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        tar.add(str(folder), arcname=".")
    return data.getvalue()


def _unpack(data: bytes, dest: Path) -> None:
    """Extracts a task's returned folder: regular files and folders only, all inside
    `dest` (a worker's archive is data, never links or paths that climb out)."""
    dest.mkdir(parents=True)
    root = dest.resolve()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            target = (root / member.name).resolve()
            if not (target == root or root in target.parents):
                raise ValueError(f"the archive names a path outside its folder: {member.name}")
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                with open(target, "wb") as handle:
                    shutil.copyfileobj(source, handle)
            # links, devices and fifos are dropped


def run_on_worker(spec: dict, bundle, url, model: dict, actor, ceiling) -> dict:
    """One attempt of one task on whatever node Ray chose: a fresh temporary folder, the
    checkout from `bundle` (bytes) or `url`, the run, and its out folder packed."""
    import ray

    tmp = Path(tempfile.mkdtemp(prefix="yuyao-batch-"))
    key = attempt_key(spec["id"])
    try:
        source = url
        if bundle is not None:
            path = tmp / "repo.bundle"
            path.write_bytes(bundle)
            source = str(path)
        ledger_path = tmp / "ledger.json"
        first = ray.get(actor.report.remote(key, 0.0), timeout=60)
        make_mirror_file(ledger_path, ceiling, first["others"])
        stop = threading.Event()
        if first.get("stopped"):
            stop.set()
        mirror = Mirror(ledger_path, actor, key, on_stop=stop.set).start()
        try:
            staged, result = run_task(
                spec,
                source,
                tmp / "work",
                model=model,
                ledger=str(ledger_path),
                stopping=stop.is_set,
                ledger_key=key,
            )
        finally:
            mirror.stop()
        context = ray.get_runtime_context()
        result["node"] = context.get_node_id()
        return {"result": result, "files": _pack(staged)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The driver side


def _bundle(repo: str, commit: str) -> bytes:
    """A git bundle holding `commit` (and its history), under a ref of its own made in a
    temporary bare copy, so the user's repository is only read."""
    with tempfile.TemporaryDirectory(prefix="yuyao-bundle-") as tmp:
        bare = Path(tmp) / "copy.git"
        out = Path(tmp) / "repo.bundle"
        steps = (
            ["git", "clone", "--quiet", "--bare", "--no-tags", "--", repo, str(bare)],
            ["git", "-C", str(bare), "update-ref", "refs/heads/yuyao-batch", commit],
            ["git", "-C", str(bare), "bundle", "create", "--quiet", str(out), "yuyao-batch"],
        )
        for argv in steps:
            proc = subprocess.run(argv, capture_output=True, text=True, env=git_env())
            if proc.returncode != 0:
                raise TaskError(f"cannot pack {repo} at {commit}: {proc.stderr.strip()}")
        return out.read_bytes()


def run_on_ray(batch, pending) -> None:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    address = batch.o.ray
    try:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    except Exception as exc:  # no cluster there: said in one line
        raise RayMissing(f"cannot connect to the Ray cluster at '{address}': {exc}") from None
    spent = batch.spent
    try:
        _run(batch, pending, ray, NodeAffinitySchedulingStrategy)
    finally:
        batch.spent = spent  # the file ledger, which now holds the actor's entries
        ray.shutdown()


def _run(batch, pending, ray, affinity) -> None:
    node = ray.get_runtime_context().get_node_id()
    write_atomic(
        batch.out / "ray.json",
        json.dumps({"ray_version": ray.__version__, "driver_node": node}).encode(),
    )
    entries = batch.ledger.doc().get("tasks") or {}
    actor = (
        ray.remote(LedgerActor)
        .options(num_cpus=0, scheduling_strategy=affinity(node_id=node, soft=False))
        .remote(entries, batch.o.max_cost_usd)
    )
    batch.spent = lambda: ray.get(actor.total.remote(), timeout=30)
    resources = {"num_cpus": batch.o.task_cpus, "max_retries": NODE_RETRIES}
    if batch.o.task_memory_mb:
        resources["memory"] = batch.o.task_memory_mb * 1024 * 1024
    remote = ray.remote(run_on_worker).options(**resources)
    bundles: dict = {}
    queue = deque(pending)
    running: dict = {}
    stop_sent = None
    while queue or running:
        try:
            while queue and len(running) < batch.o.parallel and batch.refusal() is None:
                task = queue.popleft()
                ref = _submit(batch, task, remote, actor, bundles, ray)
                if ref is not None:
                    running[ref] = task
                    batch.progress.started_task(task.id)
            if batch.stop.is_set() and stop_sent is None:
                actor.stop.remote()
                stop_sent = time.monotonic()
            if not running:
                break
            if stop_sent is not None and time.monotonic() - stop_sent > STOP_GRACE:
                for ref, task in running.items():
                    ray.cancel(ref, force=True)
                    batch.record(_lost(batch, task, "interrupted: the task did not stop in time"))
                running.clear()
                break
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.25)
            for ref in ready:
                entries = ray.get(actor.snapshot.remote(), timeout=30)
                batch.ledger.merge(entries)
                task = running[ref]
                # Attempts that started (one more than 1: Ray retried it after a node died).
                attempts = sum(1 for key in entries if key.rsplit("#", 1)[0] == task.id)
                batch.record(_collect(batch, task, ref, ray, max(attempts, 1)))
                del running[ref]
        except KeyboardInterrupt:
            batch.interrupt()
    batch.ledger.merge(ray.get(actor.snapshot.remote(), timeout=30))
    if queue:
        batch.not_run(queue, batch.refusal() or "not started")


def _submit(batch, task, remote, actor, bundles: dict, ray):
    url = task.repo_url
    bundle = None
    try:
        if task.repo is not None:
            resolve_commit(task)
            key = (task.repo, task.commit)
            if key not in bundles:
                bundles[key] = ray.put(_bundle(task.repo, task.commit))
            bundle = bundles[key]
    except TaskError as error:
        batch.record(_lost(batch, task, str(error)))
        return None
    return remote.remote(task.spec(), bundle, url, batch.model, actor, batch.o.max_cost_usd)


def _lost(batch, task, why: str) -> dict:
    """A result for a task that produced none (it failed on the driver, or on Ray)."""
    staged = batch.out / ".work" / f"{task.id}-{uuid.uuid4().hex[:8]}"
    staged.mkdir(parents=True)
    label = "Interrupted" if batch.stop.is_set() else "Error"
    return batch.keep(task.id, staged, fallback_result(task.spec(), staged, label, why))


def _collect(batch, task, ref, ray, attempts: int) -> dict:
    try:
        answer = ray.get(ref)
    except ray.exceptions.RayError as exc:
        first = str(exc).strip().splitlines()
        lost = _lost(batch, task, f"Ray: {first[0] if first else type(exc).__name__}")
        return {**lost, "attempts": attempts}
    staged = batch.out / ".work" / f"{task.id}-{uuid.uuid4().hex[:8]}"
    try:
        _unpack(answer["files"], staged)
    except (OSError, ValueError, tarfile.TarError) as exc:
        shutil.rmtree(staged, ignore_errors=True)
        return _lost(batch, task, f"the task's files could not be unpacked: {exc}")
    result = answer["result"]
    if not isinstance(result, dict) or result.get("id") != task.id:
        result = result_of(task.id, {"exit_status": "Error", "error": "a malformed result"}, 0.0)
    result["attempts"] = attempts
    return batch.keep(task.id, staged, result)
