"""`/config` (`/settings`) with no arguments: the interactive settings view.

The keys, their meaning and their current values come from the core (`/config list`); a
change is `/config set <key> <value>` through `dispatch`, so the core validates it, stores it
and applies it to the running session at once. The TUI then applies what it renders itself
(the editor mode). CHOICES only offers the values of the enumerated keys as a numbered list;
any other value can be typed and the core accepts or refuses it.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from . import theme

if TYPE_CHECKING:  # pragma: no cover
    from .actions import SettingsHost

BOOL = ("true", "false")
CHOICES = {
    "mode": ("ask", "plan", "auto-edit", "auto-review", "yolo"),
    "role": ("execute", "ask", "architect", "debug", "orchestrator"),
    "sandbox": ("read-only", "workspace-write", "full-access"),
    "network": ("on", "off"),
    "ui.stream": BOOL,
    "ui.show_thinking": ("off", "collapsed", "expanded"),
    "thinking": ("off", "low", "medium", "high", "max"),
    "curiosity": ("low", "normal", "high"),
    "ui.usage": ("off", "tokens", "full"),
    "ui.theme": ("dark", "light", "mono"),
    "ui.editor_mode": ("emacs", "vi"),
    "ui.output_style": ("default", "concise", "explanatory"),
    "trajectory": BOOL,
    "compaction.memoryFlush.enabled": BOOL,
    "dreaming.enabled": BOOL,
}
# The ones a user looks for first, shown at the top.
FIRST = (
    "ui.theme",
    "ui.editor_mode",
    "ui.output_style",
    "ui.show_thinking",
    "ui.stream",
    "mode",
    "role",
)


def parse_listing(text: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """`/config list` -> ({key: value} of what is set, [(key, description)] of known keys)."""
    values: dict[str, str] = {}
    known: list[tuple[str, str]] = []
    section = "values"
    for line in text.splitlines():
        if line.strip().lower().startswith("known keys"):
            section = "known"
            continue
        if not line.startswith("  "):
            continue
        body = line.strip()
        if section == "values":
            m = re.match(r"^(\S+)\s*=\s*(.*)$", body)
            if m:
                values[m.group(1)] = m.group(2).strip().strip('"')
        else:
            m = re.match(r"^(\S+)\s+(.*)$", body)
            if m:
                known.append((m.group(1), m.group(2).strip()))
            elif body:
                known.append((body, ""))
    order = {k: i for i, k in enumerate(FIRST)}
    known.sort(key=lambda kd: order.get(kd[0], len(FIRST)))
    return values, known


def _read(prompt_text: str) -> str | None:
    from .prompts import _read_line

    return _read_line(prompt_text)


def _show(app: SettingsHost, values: dict[str, str], known: list[tuple[str, str]]) -> None:
    table = Table(box=None, padding=(0, 1), show_header=True, header_style="muted")
    table.add_column("#", style="accent", justify="right")
    table.add_column("setting", style="bold")
    table.add_column("value")
    table.add_column("", style="muted")
    for i, (key, desc) in enumerate(known, 1):
        value = values.get(key)
        shown = Text(value, "ok") if value is not None else Text("(default)", "muted")
        choices = CHOICES.get(key)
        hint = desc + (f"  [{' | '.join(choices)}]" if choices else "")
        table.add_row(str(i), Text(key), shown, Text(hint))  # Text: no markup parsing
    app.console.print(Text("settings", "brand"))
    app.console.print(table)


def settings_view(app: SettingsHost) -> None:
    while True:
        try:
            listing = app.session.dispatch("/config list") or ""
        except Exception as e:  # noqa: BLE001
            app.say(f"{theme.SYM_FAIL} cannot read the configuration: {e}", "error")
            return
        values, known = parse_listing(listing)
        extra = [(k, "") for k in values if k not in {kk for kk, _ in known}]
        known = known + extra
        if not known:
            app.console.print(Text(listing))
            return
        _show(app, values, known)
        pick = _read("setting to change (number or name, Enter to close) › ")
        if pick is None or not pick.strip():
            app.say("settings closed")
            return
        pick = pick.strip()
        if pick.isdigit() and 1 <= int(pick) <= len(known):
            key = known[int(pick) - 1][0]
        elif pick in {k for k, _ in known}:
            key = pick
        else:
            app.say(f"{theme.SYM_WARN} no setting {pick!r}", "warn")
            continue
        choices = CHOICES.get(key)
        if choices:
            line = Text(f"{key}: ", "bold")
            for i, c in enumerate(choices, 1):
                line.append(f"{i}", "accent")
                line.append(f" {c}   ")
            app.console.print(line)
        raw = _read(f"{key} = ")
        if raw is None or not raw.strip():
            continue
        raw = raw.strip()
        if choices and raw.isdigit() and 1 <= int(raw) <= len(choices):
            raw = choices[int(raw) - 1]
        try:
            out = app.session.dispatch(f"/config set {key} {shlex.quote(raw)}")
        except Exception as e:  # noqa: BLE001
            app.say(f"{theme.SYM_FAIL} {e}", "error")
            continue
        app.say(f"{theme.SYM_OK} {out or f'{key} = {raw}'} (in effect now)", "ok")
        app.refresh_status()
        app.after_config_change()
