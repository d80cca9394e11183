"""What every front shares on its way to the core: the program's name, the exit codes of
spec §9, loading the extension and taking the model key out of the environment.

A leaf of the package's import graph (it imports no other yuyao module at load time), so the
command line, `-p`, the background commands, the batch runner and agent_api all use the same
pieces without importing one another.
"""

from __future__ import annotations

import os
import sys

PROG = "yuyao"
EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2


def load_core():
    """The extension, or None with a message printed (exit 1 for the caller)."""
    try:
        from yuyao import _core
    except ImportError as exc:
        sys.stderr.write(f"{PROG}: the yuyao core extension is not installed ({exc})\n")
        return None
    return _core


def hide_model_key(core, key: str | None = None) -> None:
    """Take the model key (`key`, else D2A_MODEL_API_KEY) out of the environment: the core
    keeps it in memory for the sessions, blanks it in this process's /proc entries, and no
    tool process inherits it."""
    key = key if key is not None else os.environ.get("D2A_MODEL_API_KEY")
    if not key:
        return
    for name, value in list(os.environ.items()):
        if value == key:
            os.environ.pop(name, None)
    hide = getattr(core, "hide_model_key", None)
    if hide is not None:
        hide(key)


def run_headless(core, request: dict) -> int:
    """One headless run (run_agent.sh's entry, a `yuyao batch` unit): the model key taken out
    of the environment and /proc, the run, and its failure as a line and an exit code of
    spec §9 — never a traceback."""
    import json  # here, not at the top: `yuyao --help` imports this module and stays light

    hide_model_key(core, request.get("model", {}).get("api_key", ""))
    try:
        return int(core.run_headless(json.dumps(request)))
    except ValueError as exc:
        sys.stderr.write(f"yuyao: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("yuyao: interrupted\n")
        return EXIT_RUNTIME
    except Exception as exc:  # reported, never a traceback
        sys.stderr.write(f"yuyao: {exc}\n")
        return EXIT_RUNTIME
