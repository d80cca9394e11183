"""Colours, symbols and the shared console: one place for the look of the TUI."""

from __future__ import annotations

# rich styles, referenced by name everywhere else ("[ok]done[/]"). rich itself is imported
# only when the first thing is printed through it (not on the way to the first prompt).
STYLES = {
    "brand": "bold cyan",
    "accent": "cyan",
    "muted": "dim",
    "ok": "bold green",
    "fail": "bold red",
    "warn": "yellow",
    "error": "red",
    "info": "blue",
    "thinking": "dim italic",
    "intent": "italic cyan",
    "tool": "bold magenta",
    "tool.arg": "default",
    "tool.out": "dim",
    "user": "bold",
    "steer": "cyan",
    "mode.plan": "bold yellow",
    "mode.yolo": "bold red",
    "mode.other": "bold green",
}
_theme = None


def __getattr__(name: str):  # theme.THEME: built on first use
    if name == "THEME":
        global _theme
        if _theme is None:
            from rich.theme import Theme

            _theme = Theme(STYLES)
        return _theme
    raise AttributeError(name)


CODE_THEME = "monokai"

SYM_TOOL = "●"
SYM_OK = "✓"
SYM_FAIL = "✗"
SYM_WARN = "⚠"
SYM_INFO = "ℹ"
SYM_THINK = "✻"
SYM_INTENT = "→"
SYM_CURSOR = "▌"
SYM_STEER = "↳"

# prompt_toolkit style for the input box and the bottom status line.
PT_STYLE = {
    "prompt": "ansicyan bold",
    "prompt.plan": "ansiyellow bold",
    "prompt.shell": "ansimagenta bold",
    "continuation": "ansibrightblack",
    "bottom-toolbar": "noreverse bg:default ansibrightblack",
    "bottom-toolbar.key": "noreverse ansibrightblack",
    "bottom-toolbar.mode": "noreverse ansigreen bold",
    "bottom-toolbar.plan": "noreverse ansiyellow bold",
    "bottom-toolbar.yolo": "noreverse ansired bold",
    "bottom-toolbar.shell": "noreverse ansimagenta bold",
    "bottom-toolbar.value": "noreverse ansidefault",
    "bottom-toolbar.sep": "noreverse ansibrightblack",
    "bottom-toolbar.branch": "noreverse ansiblue",
    "bottom-toolbar.vim.normal": "noreverse ansiblue bold",
    "bottom-toolbar.vim.insert": "noreverse ansigreen bold",
    "bottom-toolbar.vim.visual": "noreverse ansimagenta bold",
    "bottom-toolbar.vim.replace": "noreverse ansired bold",
    "bottom-toolbar.ref": "noreverse ansicyan",
    "bottom-toolbar.hint": "noreverse ansiyellow bold",
    "bottom-toolbar.ref.missing": "noreverse ansiyellow",
    "bottom-toolbar.pr.passing": "noreverse ansigreen bold",
    "bottom-toolbar.pr.review": "noreverse ansiyellow bold",
    "bottom-toolbar.pr.changes": "noreverse ansired bold",
    "bottom-toolbar.pr.draft": "noreverse ansibrightblack bold",
    "auto-suggestion": "ansibrightblack",
}


def make_console():
    """The console every module prints through (stdout, our theme, no auto-highlighting)."""
    from rich.console import Console

    return Console(theme=__getattr__("THEME"), highlight=False, soft_wrap=False, emoji=False)


def mode_style(mode: str) -> str:
    if mode == "plan":
        return "mode.plan"
    if mode == "yolo":
        return "mode.yolo"
    return "mode.other"
