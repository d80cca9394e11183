"""The turn worker both renderers use: the core call runs off the terminal's thread."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable


def turn_worker(fn: Callable[[], Any]) -> tuple[queue.Queue, dict[str, Any], threading.Thread]:
    """A not-yet-started daemon thread running ``fn``. Its value (or the exception it raised)
    lands in the returned dict; a ``("done", None, None)`` item in the queue says it ended.
    Core events for the renderer go through the same queue."""
    q: queue.Queue = queue.Queue()
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the thread that renders
            result["error"] = e
        finally:
            q.put(("done", None, None))

    return q, result, threading.Thread(target=work, name="yuyao-turn", daemon=True)
