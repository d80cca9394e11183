"""The batch driver (docs/parallel.md): reads the tasks, skips those an earlier run finished,
runs the rest on the local process pool (here) or on Ray (`on_ray.py`) within the batch's
limits, and keeps `DIR/results.jsonl` whole after each task.

Limits, checked before each task starts: Ctrl+C / SIGTERM (running tasks are sent SIGINT
and end as Interrupted), `--max-failures` (no new task after K failures; running ones
finish), and the spend ceiling (the one ledger every task's core checks before each model
call; no new task once it is reached).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import signal
import sys
import threading
import time
import uuid
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from yuyao.batch import progress as display
from yuyao.batch.entry import accept_interrupts
from yuyao.batch.ledger import Ledger, write_atomic
from yuyao.batch.runner import (
    fallback_result,
    finished,
    install,
    model_environment,
    result_of,
    run_task,
)
from yuyao.batch.tasks import Malformed, Task, TaskError, load_tasks, resolve_commit

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2
RESULTS = "results.jsonl"
LEDGER = "spend-ledger.json"
WORK = ".work"


class BatchUsageError(Exception):
    pass


class Options:
    def __init__(self):
        self.tasks: Path | None = None
        self.out_dir: Path | None = None
        self.parallel = 4
        self.ray: str | None = None
        self.max_cost_usd: float | None = None
        self.max_failures: int | None = None
        self.json = False
        self.task_cpus = 1.0
        self.task_memory_mb: int | None = None


def parse_options(tasks: str, flags: list[str]) -> Options:
    """`flags` as the CLI's table passed them on: `--name value` pairs and switches."""
    o = Options()
    o.tasks = Path(tasks)
    i = 0
    while i < len(flags):
        name = flags[i]
        if name == "--json":
            o.json = True
            i += 1
            continue
        value = flags[i + 1]
        i += 2
        if name == "--out-dir":
            o.out_dir = Path(value)
        elif name == "--ray":
            if not value.strip():
                raise BatchUsageError("--ray needs 'auto' or a cluster address")
            o.ray = value.strip()
        elif name in ("--parallel", "--max-failures"):
            number = _number(name, value, int)
            if number < 1:
                raise BatchUsageError(f"{name} must be at least 1 (got {value})")
            setattr(o, name[2:].replace("-", "_"), number)
        elif name == "--max-cost-usd":
            o.max_cost_usd = _number(name, value, float)
            if not (o.max_cost_usd >= 0):
                raise BatchUsageError(f"--max-cost-usd must be 0 or more (got {value})")
        elif name == "--task-cpus":
            o.task_cpus = _number(name, value, float)
            if not (o.task_cpus > 0):
                raise BatchUsageError(f"--task-cpus must be more than 0 (got {value})")
        elif name == "--task-memory-mb":
            o.task_memory_mb = _number(name, value, int)
            if o.task_memory_mb < 1:
                raise BatchUsageError(f"--task-memory-mb must be at least 1 (got {value})")
    if o.out_dir is None:
        raise BatchUsageError("--out-dir is required (where each task's results go)")
    if not o.tasks.exists():
        raise BatchUsageError(f"TASKS '{tasks}' does not exist (a JSONL file or a folder)")
    return o


def _number(name: str, value: str, kind):
    try:
        return kind(value)
    except ValueError:
        raise BatchUsageError(f"{name} needs a number (got '{value}')") from None


class Batch:
    def __init__(self, options: Options, tasks: list[Task], malformed: list[Malformed]):
        self.o = options
        self.out = options.out_dir.resolve()
        self.tasks = tasks
        self.malformed = malformed
        self.results: dict[str, dict] = {}
        self.failures = 0
        self.stop = threading.Event()
        self.stop_reason: str | None = None
        self.lock = threading.Lock()
        self.model = model_environment()
        self.started = time.monotonic()
        self.ledger: Ledger | None = None
        self.progress: display.Progress | None = None
        self.spent = lambda: self.ledger.spent() if self.ledger else 0.0

    # -- set-up --------------------------------------------------------------------------

    def open(self) -> list[Task]:
        """The out dir, locked for this driver; the ledger; the tasks still to run."""
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock_handle = open(self.out / ".batch.lock", "a")  # noqa: SIM115
        try:
            fcntl.flock(self._lock_handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BatchUsageError(f"another yuyao batch is running in {self.out}") from None
        shutil.rmtree(self.out / WORK, ignore_errors=True)  # what a killed driver left
        self.ledger = Ledger(self.out / LEDGER, self.o.max_cost_usd)
        pending = []
        for task in self.tasks:
            status = finished(self.out / task.id / "status.json")
            if status is None:
                pending.append(task)
                continue
            saved = self.out / task.id / "result.json"
            try:
                result = json.loads(saved.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                result = result_of(task.id, status, 0.0)
            result["resumed"] = True
            self.results[task.id] = result
        return pending

    # -- limits --------------------------------------------------------------------------

    def refusal(self) -> str | None:
        """Why no new task may start now, if it may not."""
        if self.stop.is_set():
            return self.stop_reason or "the batch was interrupted"
        if self.o.max_failures is not None and self.failures >= self.o.max_failures:
            return f"--max-failures {self.o.max_failures} reached"
        if self.o.max_cost_usd is not None:
            spent = self.spent()
            if spent >= self.o.max_cost_usd:
                return (
                    f"batch spend ceiling reached: ${spent:.4f} of "
                    f"${self.o.max_cost_usd:.4f} (raise --max-cost-usd to go on)"
                )
        return None

    def interrupt(self, why: str = "the batch was interrupted") -> None:
        if not self.stop.is_set():
            self.stop_reason = why
            self.stop.set()

    # -- results -------------------------------------------------------------------------

    def record(self, result: dict) -> None:
        with self.lock:
            self.results[result["id"]] = result
            if display.is_failure(result) and result["exit_status"] != "Interrupted":
                self.failures += 1
            self.write_results()
        if self.progress is not None:
            self.progress.finished_task(result)

    def ordered(self) -> list[dict]:
        lines = [self.results[t.id] for t in self.tasks if t.id in self.results]
        return lines + [m.result() for m in self.malformed]

    def write_results(self) -> None:
        text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in self.ordered())
        write_atomic(self.out / RESULTS, text.encode())

    def not_run(self, tasks, why: str) -> None:
        for task in tasks:
            if task.id not in self.results:
                self.results[task.id] = {
                    "id": task.id,
                    "exit_status": "NotRun",
                    "exit_code": 1,
                    "steps": 0,
                    "cost_usd": 0.0,
                    "wall_seconds": 0.0,
                    "error": why,
                    "limit": None,
                    "patch": None,
                }
        self.write_results()

    def keep(self, task_id: str, staged: Path, result: dict) -> dict:
        """Installs a task's staged out folder as DIR/<id> (with its result line)."""
        write_atomic(staged / "result.json", json.dumps(result, indent=2).encode() + b"\n")
        install(staged, self.out / task_id)
        return result

    # -- the local pool ------------------------------------------------------------------

    def run_one_local(self, task: Task) -> dict:
        work = self.out / WORK / f"{task.id}-{uuid.uuid4().hex[:8]}"
        work.mkdir(parents=True)
        if self.progress is not None:
            self.progress.started_task(task.id)
        try:
            try:
                if task.repo is not None:
                    resolve_commit(task)
            except TaskError as error:
                (work / "out").mkdir()
                result = fallback_result(task.spec(), work / "out", "Error", str(error))
                return self.keep(task.id, work / "out", result)
            staged, result = run_task(
                task.spec(),
                task.repo or task.repo_url,
                work,
                model=self.model,
                ledger=str(self.ledger.path),
                stopping=self.stop.is_set,
            )
            return self.keep(task.id, staged, result)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def run_local(self, pending: list[Task]) -> None:
        queue = deque(pending)
        running: dict = {}
        pool = ThreadPoolExecutor(max_workers=self.o.parallel, thread_name_prefix="batch")
        try:
            while queue or running:
                try:
                    while queue and len(running) < self.o.parallel and self.refusal() is None:
                        task = queue.popleft()
                        running[pool.submit(self.run_one_local, task)] = task
                    if not running:
                        break
                    done, _ = wait(running, timeout=0.25, return_when=FIRST_COMPLETED)
                    for future in done:
                        self.record(self._outcome(running[future], future))
                        del running[future]
                except KeyboardInterrupt:
                    # Running tasks see the stop, send their run SIGINT and end Interrupted.
                    self.interrupt()
        finally:
            pool.shutdown(wait=True)
        if queue:
            self.not_run(queue, self.refusal() or "not started")

    def _outcome(self, task: Task, future) -> dict:
        try:
            return future.result()
        except Exception as exc:  # a bug or a full disk: the task fails, the batch goes on
            return {
                **result_of(task.id, {"exit_status": "Error", "error": str(exc)}, 0.0, 1),
                "exit_code": 1,
            }

    # -- the end -------------------------------------------------------------------------

    def finish(self, interrupted: bool) -> int:
        results = self.ordered()
        totals = display.summary(results, time.monotonic() - self.started)
        totals["spent_usd"] = round(self.spent(), 6)
        if interrupted:
            totals["interrupted"] = True
        if self.o.json:
            document = {"out_dir": str(self.out), "summary": totals, "results": results}
            sys.stdout.write(json.dumps(document, indent=2) + "\n")
        else:
            display.print_summary(results, totals, str(self.out), terminal=sys.stdout.isatty())
        sys.stdout.flush()
        if interrupted or totals["failed"] or any(r["exit_status"] == "NotRun" for r in results):
            return EXIT_RUNTIME
        return EXIT_OK


def run(options: Options) -> int:
    tasks, malformed = load_tasks(options.tasks)
    for bad in malformed:
        sys.stderr.write(f"yuyao batch: error: {bad.where}: {bad.error}\n")
    batch = Batch(options, tasks, malformed)
    executor = None
    if options.ray is not None:
        from yuyao.batch import on_ray

        try:
            executor = on_ray.load()
        except on_ray.RayMissing as missing:
            sys.stderr.write(f"yuyao batch: {missing}\n")
            return EXIT_RUNTIME
    pending = batch.open()
    skipped = len(tasks) - len(pending)
    live = sys.stderr.isatty() and not options.json
    batch.progress = display.Progress(len(pending), batch.spent, live=live)
    if skipped:
        batch.progress.note(f"resuming: {skipped} finished tasks skipped, {len(pending)} to run")
    # Ctrl+C / SIGINT is how a batch is stopped, even when it was started with SIGINT
    # ignored (a script's `yuyao batch … &`, nohup, a CI runner without job control all
    # pass the ignore on): the default handler is put back, as each task's run does.
    accept_interrupts()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    interrupted = False
    try:
        if executor is not None:
            executor(batch, pending)
        else:
            batch.run_local(pending)
    except KeyboardInterrupt:
        batch.interrupt()
    except RuntimeError as error:  # the executor could not start (on_ray.RayMissing)
        batch.interrupt(str(error))
        sys.stderr.write(f"yuyao batch: {error}\n")
        batch.progress.close()
        return EXIT_RUNTIME
    finally:
        signal.signal(signal.SIGTERM, previous)
        batch.progress.close()
        interrupted = batch.stop.is_set()
        batch.write_results()
        shutil.rmtree(batch.out / WORK, ignore_errors=True)
    if interrupted:
        sys.stderr.write("yuyao batch: interrupted; re-run the same command to resume\n")
    return batch.finish(interrupted)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(tasks: str, flags: list[str]) -> int:
    try:
        options = parse_options(tasks, flags)
        return run(options)
    except BatchUsageError as error:
        sys.stderr.write(f"yuyao batch: error: {error}\n")
        return EXIT_USAGE
