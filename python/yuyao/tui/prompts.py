"""Questions the core asks a human: permission for a tool call, ask-user, anything else.

They run on the main thread with the live region stopped. A permission is one keystroke;
an ask-user answer is a line (a number picks an option, anything else is free text).
"""

from __future__ import annotations

import sys

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from . import theme
from .keys import RawKeys
from .render import guess_lexer, syntax_block

PERMISSION_KEYS = {
    "y": ("allow", "allowed once"),
    "a": ("allow_session", "allowed for this session"),
    "p": ("allow_project", "allowed for this project (saved)"),
    "n": ("deny", "denied"),
}


def _read_line(prompt_text: str) -> str | None:
    """A line from the user, or None when they dismissed it (Esc, Ctrl+C, Ctrl+D): Esc
    cancels a question as it does in the full-screen view (seed 001: the interview)."""
    try:
        if sys.stdin.isatty():
            from prompt_toolkit import prompt
            from prompt_toolkit.key_binding import KeyBindings

            kb = KeyBindings()

            @kb.add("escape", eager=True)
            def _dismiss(event) -> None:
                event.app.exit(exception=EOFError)

            return prompt(prompt_text, key_bindings=kb)
        sys.stdout.write(prompt_text)
        sys.stdout.flush()
        line = sys.stdin.readline()
        return None if line == "" else line.rstrip("\n")
    except (EOFError, KeyboardInterrupt):
        return None


def _read_choice(keys: RawKeys, valid: str) -> str | None:
    """One keystroke among `valid`; Esc / Ctrl+C give None."""
    if keys.fd is None:
        line = _read_line("› ")
        if line is None:
            return None
        line = line.strip().lower()
        return line[:1] if line[:1] in valid else None
    was_active = keys.active
    keys.enable()
    try:
        while True:
            for ev in keys.poll(0.2):
                if ev[0] == "char" and ev[1].lower() in valid:
                    return ev[1].lower()
                if ev[0] == "esc" or ev == ("ctrl", "c") or ev == ("ctrl", "d"):
                    return None
    finally:
        if not was_active:
            keys.disable()


def ask_permission(console: Console, request: dict, keys: RawKeys) -> str:
    show_permission(console, request)
    choice = _read_choice(keys, "yapn") or "n"
    return permission_answer(console, choice)


def permission_answer(console: Console, choice: str) -> str:
    """The answer for a key of PERMISSION_KEYS (anything else denies), said on the console."""
    answer, said = PERMISSION_KEYS.get(choice, PERMISSION_KEYS["n"])
    style = "error" if answer == "deny" else "ok"
    console.print(Text(f"  {theme.SYM_STEER} {said}", style))
    return answer


def show_permission(console: Console, request: dict) -> None:
    """The permission panel (the actual command or diff) and its one-key menu."""
    tool = str(request.get("tool") or "tool")
    summary = str(request.get("summary") or "").strip()
    detail = str(request.get("detail") or "")
    reason = str(request.get("reason") or "").strip()
    parts: list = []
    first = detail.strip().splitlines()[0].strip() if detail.strip() else ""
    if summary and not (first and first in summary):  # the command is shown once, below
        parts.append(Text(summary, "bold"))
    if reason:
        parts.append(Text(f"why: {reason}", "muted"))
    if detail.strip():
        parts.append(syntax_block(detail, guess_lexer(detail, tool)))
    console.print(
        Panel(
            Group(*parts) if parts else Text(tool),
            title=Text(f"permission: {tool}", "warn"),
            title_align="left",
            border_style="yellow",
            padding=(0, 1),
        )
    )
    # The exact rule an "always" answer saves, shown before the user picks it.
    if "rules" in request:
        rules = [str(r) for r in request.get("rules") or []]
        if rules:
            said = Text("  Always allow for this project: ", "muted")
            said.append(", ".join(rules), "bold")
            console.print(said)
        else:
            console.print(
                Text("  No rule names exactly this call: [a]/[p] allow it once.", "muted")
            )
    menu = Text("  ")
    for key, label in (
        ("y", "yes"),
        ("a", "always this session"),
        ("p", "always for this project"),
        ("n", "no"),
    ):
        menu.append(f"[{key}]", "bold")
        menu.append(f" {label}   ")
    console.print(menu)


def ask_user(console: Console, request: dict) -> str:
    options = show_ask_user(console, request)
    while True:
        line = _read_line("answer › ")
        if line is None:
            console.print(Text("  (dismissed)", "muted"))
            return DISMISSED
        answer = ask_user_answer(console, options, line)
        if answer is not None:
            return answer


DISMISSED = "(the user dismissed the question without answering)"


def ask_user_answer(console: Console, options: list[str], line: str) -> str | None:
    """A typed line -> the answer (a number picks an option), or None to ask again."""
    line = line.strip()
    if not line:
        return None
    if line.isdigit() and options:
        k = int(line)
        if 1 <= k <= len(options):
            console.print(Text(f"  {theme.SYM_OK} {options[k - 1]}", "ok"))
            return options[k - 1]
        console.print(Text(f"  pick 1–{len(options)} or type an answer", "warn"))
        return None
    return line


def show_ask_user(console: Console, request: dict) -> list[str]:
    """The question panel; returns its options."""
    question = str(request.get("question") or request.get("text") or "").strip()
    options = [str(o) for o in (request.get("options") or [])]
    body: list = [Text(question or "(no question)", "bold")]
    for i, opt in enumerate(options, 1):
        line = Text(f"  {i}. ", "accent")
        line.append(opt)
        body.append(line)
    if options:
        body.append(Text("answer with a number, or type your own answer", "muted"))
    console.print(
        Panel(
            Group(*body),
            title=Text("question", "accent"),
            title_align="left",
            border_style="cyan",
            padding=(0, 1),
        )
    )
    return options


def show_remember(console: Console, request: dict) -> None:
    text = str(request.get("text") or "")
    console.print(
        Text.assemble(
            ("  remember this preference? ", "accent"),
            (f"“{text}”", "bold"),
            ("  p project · g global · any other key skips", "muted"),
        )
    )


def remember_candidate(console: Console, request: dict, keys: RawKeys) -> str:
    """A preference the user just stated: one keystroke keeps it (p / g) or skips it."""
    show_remember(console, request)
    key = _read_any_key(keys)
    said = {"p": "kept in the project's MEMORY.md", "g": "kept in ~/.yuyao/MEMORY.md"}
    if key in said:
        console.print(Text(f"  {theme.SYM_STEER} {said[key]}", "ok"))
        return key
    console.print(Text("  not kept", "muted"))
    return "skip"


def _read_any_key(keys: RawKeys) -> str | None:
    """The next keystroke as a lower-case character (None for a non-character key)."""
    if keys.fd is None:
        line = _read_line("› ")
        return (line or "").strip().lower()[:1] or None
    was_active = keys.active
    keys.enable()
    try:
        while True:
            for ev in keys.poll(0.2):
                return ev[1].lower() if ev[0] == "char" else None
    finally:
        if not was_active:
            keys.disable()


def ask_other(console: Console, request: dict) -> str:
    """A request type this front does not know: show everything, take a line of text."""
    kind = str(request.get("type") or "request")
    lines = [f"{k}: {v}" for k, v in request.items() if k != "type" and v not in (None, "", [], {})]
    console.print(
        Panel(
            Text("\n".join(lines) or kind),
            title=Text(kind, "accent"),
            title_align="left",
            border_style="cyan",
        )
    )
    options = request.get("options") or []
    if options:
        return ask_user(console, {"question": "", "options": options})
    return _read_line("answer › ") or ""
