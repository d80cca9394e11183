"""The batch spend ledger, Python side (the file's format and the check before each model
call are rust/store/src/spend_ledger.rs; docs/parallel.md).

One JSON file; every read-modify-write holds an exclusive flock on `<ledger>.lock` (the same
lock the core takes) and replaces the file atomically. The driver creates it with the
ceiling and reads it for the progress display; on Ray, `Mirror` keeps a worker's local copy
in step with the one `LedgerActor`.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

LEDGER_VARIABLE = "YUYAO_SPEND_LEDGER"
TASK_VARIABLE = "YUYAO_SPEND_LEDGER_TASK"
CEILING_MARK = "batch spend ceiling reached"  # how the core words its refusal


def write_atomic(path: Path, data: bytes) -> None:
    """A temporary file in the same folder, flushed, then renamed over `path`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextmanager
def locked(path: Path):
    with open(f"{path}.lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _read(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError:
        raise ValueError(f"{path} is not a spend ledger (a JSON object)") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path} is not a spend ledger (a JSON object)")
    return doc


def _write(path: Path, doc: dict) -> None:
    write_atomic(path, json.dumps(doc, sort_keys=True).encode())


def total_of(doc: dict) -> float:
    tasks = doc.get("tasks") if isinstance(doc.get("tasks"), dict) else {}
    own = sum(v for v in tasks.values() if isinstance(v, (int, float)))
    remote = doc.get("remote_usd")
    return float(own + (remote if isinstance(remote, (int, float)) else 0.0))


class Ledger:
    """The driver's ledger file: created (or, on a resumed batch, kept with what the earlier
    runs spent) with this run's ceiling."""

    def __init__(self, path: Path, ceiling: float | None):
        self.path = Path(path)
        with locked(self.path):
            doc = _read(self.path)
            doc["ceiling_usd"] = ceiling
            doc.setdefault("tasks", {})
            doc["mirror"] = False
            _write(self.path, doc)
        self.ceiling = ceiling

    def doc(self) -> dict:
        with locked(self.path):
            return _read(self.path)

    def spent(self) -> float:
        return total_of(self.doc())

    def exhausted(self) -> bool:
        return self.ceiling is not None and self.spent() >= self.ceiling

    def merge(self, entries: dict) -> None:
        """Spend recorded elsewhere (the Ray actor's entries), kept for a resumed batch."""
        with locked(self.path):
            doc = _read(self.path)
            tasks = doc.setdefault("tasks", {})
            for key, value in entries.items():
                tasks[key] = max(float(value), float(tasks.get(key, 0.0)))
            _write(self.path, doc)


def make_mirror_file(path: Path, ceiling: float | None, others: float) -> None:
    """A worker's local ledger for one task: the core asks and this task's wrapper answers."""
    _write(
        Path(path),
        {
            "ceiling_usd": ceiling,
            "tasks": {},
            "remote_usd": others,
            "mirror": True,
            "asks": 0,
            "answered": 0,
        },
    )


class Mirror:
    """Keeps a worker's local ledger file in step with the cluster's `LedgerActor`.

    Each ask of the core (before a model call, and after one to push the spend) is answered
    within one poll (`POLL` s): this task's spend is sent to the actor, and the spend of
    every other task comes back as `remote_usd`. A check therefore sees everything the
    cluster had recorded when it asked; what can pass the ceiling is only the calls in
    flight (admitted before the others' costs were known), plus those ended within the last
    poll. When the actor says the batch stops (Ctrl+C on the driver), `on_stop` is called.
    """

    POLL = 0.02
    REFRESH = 0.5  # pushed at least this often even without an ask

    def __init__(self, path: Path, actor, key: str, on_stop):
        self.path, self.actor, self.key, self.on_stop = Path(path), actor, key, on_stop
        self.done = threading.Event()
        self.error: str | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> Mirror:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.sync(force=True)
        self.done.set()
        self.thread.join(timeout=5)

    def _loop(self) -> None:
        last = 0.0
        stopped = False
        while not self.done.wait(self.POLL):
            try:
                due = time.monotonic() - last >= self.REFRESH
                answer = self.sync(force=due)
            except Exception as exc:  # the actor is gone: the driver is; the run goes on
                self.error = str(exc)
                continue
            if answer is not None:
                last = time.monotonic()
                if answer.get("stopped") and not stopped:
                    stopped = True
                    self.on_stop()

    def sync(self, force: bool = False) -> dict | None:
        import ray

        with locked(self.path):
            doc = _read(self.path)
            asks = int(doc.get("asks") or 0)
            if not force and asks <= int(doc.get("answered") or 0):
                return None
            own = sum(v for v in (doc.get("tasks") or {}).values() if isinstance(v, (int, float)))
            answer = ray.get(self.actor.report.remote(self.key, own), timeout=30)
            doc["remote_usd"] = answer["others"]
            doc["answered"] = asks
            _write(self.path, doc)
            return answer


class LedgerActor:
    """The batch's one ledger on a Ray cluster (wrapped with `ray.remote` by the executor):
    each attempt's cumulative spend under its own key, and the stop flag."""

    def __init__(self, entries: dict, ceiling: float | None):
        self.entries = {k: float(v) for k, v in entries.items()}
        self.ceiling = ceiling
        self.stopped = False

    def report(self, key: str, spent: float) -> dict:
        # Every attempt has an entry from its first report on, spent or not.
        if spent > self.entries.setdefault(key, 0.0):
            self.entries[key] = float(spent)
        total = sum(self.entries.values())
        return {"others": total - self.entries.get(key, 0.0), "stopped": self.stopped}

    def total(self) -> float:
        return sum(self.entries.values())

    def snapshot(self) -> dict:
        return dict(self.entries)

    def stop(self) -> None:
        self.stopped = True
