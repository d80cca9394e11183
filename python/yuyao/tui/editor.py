"""`/memory edit <id>` (no text) and `/memory open [project|global]`: the memory file in the
user's editor ($VISUAL, else $EDITOR, else vi). The core says where (`/memory path …`); the
terminal is handed to the editor (the full-screen view is suspended while it runs) and the
core notices the edit before the next model call."""

from __future__ import annotations

import os
import shlex
import subprocess
from typing import Any

from rich.text import Text

from . import theme

# Editors that take `+LINE` to open at a line.
_LINE_AWARE = {"vi", "vim", "nvim", "view", "nano", "emacs", "micro", "hx", "kak", "ed"}


def memory_editor_target(rest: str) -> str | None:
    """The `/memory path` argument for a line that opens the editor; None for other lines."""
    words = rest.split()
    if len(words) == 2 and words[0] == "edit":
        return words[1]
    if words[:1] == ["open"] and len(words) <= 2:
        return words[1] if len(words) == 2 else "project"
    return None


def editor_command(path: str, line: int) -> list[str]:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    argv = shlex.split(editor)
    if argv and os.path.basename(argv[0]) in _LINE_AWARE and line > 1:
        argv.append(f"+{line}")
    return [*argv, path]


def open_memory_in_editor(app: Any, rest: str) -> bool:
    """Runs the editor for `/memory edit <id>` / `/memory open`; False for other lines."""
    target = memory_editor_target(rest)
    if target is None:
        return False
    try:
        where = str(app.session.dispatch(f"/memory path {target}") or "").strip()
    except Exception as e:  # noqa: BLE001 - an unknown id is said, like any command error
        app.console.print(Text(f"{theme.SYM_FAIL} {e}", "error"))
        return True
    path, _, line = where.rpartition(":")
    if not path:
        path, line = where, "1"
    argv = editor_command(path, int(line) if line.isdigit() else 1)

    def run() -> None:
        try:
            code = subprocess.call(argv)
        except OSError as e:
            app.console.print(
                Text(f"{theme.SYM_FAIL} cannot start the editor {argv[0]}: {e}", "error")
            )
            return
        if code != 0:
            app.say(f"the editor exited with status {code}", "warn")
        # The core re-reads memory files before every call; the model gets a note of the change.
        app.say(f"edited {path} (memory is read again before the next request)", "accent")

    if getattr(app, "fullscreen", None) is not None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(run)
    else:
        run()
    return True
