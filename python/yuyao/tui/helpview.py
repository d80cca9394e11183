"""`/help`: the core's command table, grouped by kind, wrapped to the terminal's width."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text


def render_help(table: list[dict], width: int) -> Group:
    groups: dict[str, list[dict]] = {}
    for c in table:
        groups.setdefault(str(c.get("group") or "Other"), []).append(c)
    name_width = max(16, min(38, width // 2 - 2))
    parts: list = [Text("Commands  (/help <command> for one)", "bold")]
    for title, commands in groups.items():
        grid = Table.grid(padding=(0, 2))
        grid.add_column(width=name_width, overflow="fold")
        grid.add_column(overflow="fold")
        for c in commands:
            names = ", ".join(f"/{n}" for n in [c["name"], *(c.get("aliases") or [])])
            head = Text(names, "accent")
            if c.get("usage"):
                head.append(f" {c['usage']}", "muted")
            desc = Text(str(c.get("help") or ""))
            if not c.get("available", True):
                desc.append("  (not in this build)", "muted")
            grid.add_row(head, desc)
        parts += [Text(""), Text(title, "bold"), grid]
    parts += [
        Text(""),
        Text(
            "Prefixes: /command · @path references a file · !command runs a shell command", "muted"
        ),
    ]
    return Group(*parts)
