"""The todo list's rows (Ctrl+T, inline and full screen): no rich import, so showing the
panel costs nothing at startup."""

from __future__ import annotations

TASK_MARKS = {"completed": "[x]", "in_progress": "[-]", "pending": "□", "blocked": "[!]"}


def task_line(task: dict) -> str:
    """One row of the todo tree: indented by its index's depth (`2.1`), with its mark."""
    status = str(task.get("status") or "pending")
    tid = str(task.get("id") or "")
    label = task.get("content") or task.get("title") or ""
    indent = "  " * (1 + tid.count("."))
    return f"{indent}{TASK_MARKS.get(status, '□')} {tid + '. ' if tid else ''}{label}"
