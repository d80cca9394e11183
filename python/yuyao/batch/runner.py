"""One task of a batch, the same on the driver's machine and on a Ray worker: a fresh
checkout at the task's commit, the headless contract of run_agent.sh (`yuyao.batch.entry`,
i.e. `yuyao._core.run_headless`) run in it as a child process, and the task's out folder
(`status.json`, `submission.patch`, `.trajectory/`, `agent.log`) staged beside it.

Nothing here touches the given repository: the checkout is a clone (a local repository is
cloned, or read from a git bundle the driver shipped). The staged folder replaces
`DIR/<id>/` only once complete (`install`), so an interrupted batch never leaves half a
task's output.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from yuyao.batch.ledger import LEDGER_VARIABLE, TASK_VARIABLE, write_atomic
from yuyao.batch.tasks import git_env

KEY_VARIABLE = "YUYAO_RUN_AGENT_API_KEY"
MODEL_VARIABLES = ("D2A_MODEL_BASE_URL", "D2A_MODEL_NAME", "D2A_MODEL_API_KEY", "D2A_MODEL_COST")
INTERRUPT_GRACE = 60.0  # seconds a run gets to write its Interrupted status after SIGINT
PATCH_NAME = "submission.patch"


class Stopped(Exception):
    """The batch is stopping before this task's run started."""


def model_environment(environ=None) -> dict:
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in MODEL_VARIABLES if k in environ}


def _git(*args: str, cwd: str | None = None) -> None:
    proc = subprocess.run(
        ["git", "-c", "protocol.ext.allow=never", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=git_env(),
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(f"git {args[0]} failed: {detail[-1] if detail else proc.returncode}")


def checkout(spec: dict, source: str, dest: Path) -> None:
    """A fresh clone of `source` (a local repository, a bundle file or a URL) at the task's
    commit, detached. `source` is never written to."""
    _git("clone", "--quiet", "--no-checkout", "--", source, str(dest))
    _git("checkout", "--quiet", "--detach", spec["commit"], cwd=str(dest))


def _request(spec: dict, work: Path, repo: Path, out: Path, model: dict) -> Path:
    task_file = work / f"task{spec['suffix']}"
    task_file.write_text(spec["text"], encoding="utf-8")
    request = {
        "task_file": str(task_file),
        "repo_dir": str(repo),
        "out_dir": str(out),
        "model": {
            "base_url": spec["model"].get("base_url") or model.get("D2A_MODEL_BASE_URL"),
            "name": spec["model"].get("name") or model.get("D2A_MODEL_NAME"),
            "cost": _cost_text(spec["model"].get("cost")) or model.get("D2A_MODEL_COST"),
        },
    }
    if spec.get("budget") is not None:
        budget_file = work / "budget.json"
        budget_file.write_text(json.dumps(spec["budget"]), encoding="utf-8")
        request["budget_file"] = str(budget_file)
    if spec.get("ignored_keys"):
        request["notes"] = [f"task keys ignored by yuyao batch: {', '.join(spec['ignored_keys'])}"]
    path = work / "request.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    return path


def _cost_text(cost) -> str | None:
    if cost is None:
        return None
    return cost if isinstance(cost, str) else json.dumps(cost)


def run_task(
    spec: dict,
    source: str,
    work: Path,
    *,
    model: dict,
    ledger: str | None,
    stopping,
    on_start=None,
    ledger_key: str | None = None,
) -> tuple[Path, dict]:
    """Runs one attempt in `work` (created; the caller removes it). Returns the staged out
    folder and the task's result (see `result_of`). `stopping()` true: the batch is
    stopping (the run is sent SIGINT and ends as Interrupted). `on_start(proc)` gets the
    child process."""
    started = time.monotonic()
    out = work / "out"
    out.mkdir(parents=True)
    repo = work / "repo"
    log = out / "agent.log"
    try:
        if stopping():
            raise Stopped()
        checkout(spec, source, repo)
        if stopping():
            raise Stopped()
        request = _request(spec, work, repo, out, model)
    except Stopped:
        return out, fallback_result(
            spec, out, "Interrupted", "the batch stopped before the task ran"
        )
    except (OSError, RuntimeError) as exc:
        return out, fallback_result(spec, out, "Error", f"checkout failed: {exc}", started)
    env = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES}
    env.update(
        {
            KEY_VARIABLE: model.get("D2A_MODEL_API_KEY", ""),
            "PYTHONUNBUFFERED": "1",
            # The run is interrupted (and writes its status) if this process dies.
            "YUYAO_BATCH_PARENT": str(os.getpid()),
        }
    )
    env.pop(LEDGER_VARIABLE, None)
    if ledger:
        env[LEDGER_VARIABLE] = ledger
        env[TASK_VARIABLE] = ledger_key or attempt_key(spec["id"])
    with open(log, "wb") as log_handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "yuyao.batch.entry", str(request)],
            cwd=str(repo),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_handle,
            stderr=subprocess.STDOUT,
        )
        if on_start is not None:
            on_start(proc)
        interrupted_at = None
        while proc.poll() is None:
            if interrupted_at is None and stopping():
                interrupted_at = time.monotonic()
                _signal(proc, signal.SIGINT)
            elif interrupted_at is not None and time.monotonic() - interrupted_at > INTERRUPT_GRACE:
                _signal(proc, signal.SIGKILL)
            time.sleep(0.05)
    wall = time.monotonic() - started
    status_path = out / "status.json"
    if not status_path.exists():
        # The run ended before the core wrote its status (killed, or stopped while loading).
        label = "Interrupted" if stopping() else "Error"
        why = _last_line(log) or f"the run exited with code {proc.returncode} and no status.json"
        return out, fallback_result(spec, out, label, why, started)
    status = json.loads(status_path.read_text(encoding="utf-8"))
    if status.get("submission"):
        write_atomic(out / PATCH_NAME, status["submission"].encode())
    return out, result_of(spec["id"], status, wall, proc.returncode)


def attempt_key(task_id: str) -> str:
    """The ledger key of one attempt: a retried task's spend is added, never replaced."""
    return f"{task_id}#{uuid.uuid4().hex[:8]}"


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except OSError:
        pass


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def fallback_result(
    spec: dict, out: Path, label: str, why: str, started: float | None = None
) -> dict:
    """A status.json written here for a run that never reached the core."""
    status = {"exit_status": label, "exit_code": 1, "cost_usd": 0.0, "steps": 0, "error": why}
    write_atomic(out / "status.json", json.dumps(status, indent=2).encode() + b"\n")
    wall = 0.0 if started is None else time.monotonic() - started
    return result_of(spec["id"], status, wall, 1)


def result_of(task_id: str, status: dict, wall: float, code: int | None = None) -> dict:
    """One line of results.jsonl."""
    exit_code = status.get("exit_code", code if code is not None else 1)
    return {
        "id": task_id,
        "exit_status": status.get("exit_status", "Error"),
        "exit_code": exit_code,
        "steps": status.get("steps", 0),
        "cost_usd": float(status.get("cost_usd") or 0.0),
        "wall_seconds": round(wall, 3),
        "error": status.get("error"),
        "limit": status.get("limit"),
        "patch": f"{task_id}/{PATCH_NAME}" if status.get("submission") else None,
    }


def install(staged: Path, final: Path) -> None:
    """Puts a task's complete out folder at `final`, replacing an earlier attempt's: renames
    only, so `final` is always either the old folder or the new one, whole."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
    os.replace(staged, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def finished(status_path: Path) -> dict | None:
    """A task's status.json when the task is done for good (not to be run again on
    resume): it exists, is whole, and the run was neither interrupted nor stopped by the
    batch's spend ceiling (a later run with a higher ceiling goes on with it)."""
    from yuyao.batch.ledger import CEILING_MARK

    try:
        status = json.loads(status_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(status, dict) or status.get("exit_status") in (None, "Interrupted"):
        return None
    if CEILING_MARK in str(status.get("limit") or ""):
        return None
    return status
