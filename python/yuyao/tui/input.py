"""The input box: prompt_toolkit session, per-directory history, completion, key bindings."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import ansi_escape_sequences
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.styles import Style

from . import theme

if TYPE_CHECKING:  # pragma: no cover
    from .app import App

# Shift+Enter: terminals that report it distinctly (xterm modifyOtherKeys, kitty/CSI-u) send
# one of these; by default prompt_toolkit reads them as Enter. Make them Ctrl+J (= newline).
for _seq in ("\x1b[27;2;13~", "\x1b[13;2u"):
    ansi_escape_sequences.ANSI_SEQUENCES[_seq] = Keys.ControlJ


def yuyao_home(options: dict | None = None) -> Path:
    home = (options or {}).get("home") or os.environ.get("YUYAO_HOME")
    return Path(home).expanduser() if home else Path.home() / ".yuyao"


def history_file(cwd: str, options: dict | None = None) -> Path:
    """~/.yuyao/history/<dir name>-<hash of the full path>: one history per working directory."""
    real = os.path.realpath(cwd)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(real) or "root")[:40]
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return yuyao_home(options) / "history" / f"{slug}-{digest}"


class DedupFileHistory(FileHistory):
    """FileHistory that records consecutive identical submissions once."""

    def __init__(self, filename: str | os.PathLike) -> None:
        Path(filename).parent.mkdir(parents=True, exist_ok=True)
        super().__init__(str(filename))
        self._last: str | None = None
        try:
            self._last = next(iter(self.load_history_strings()), None)
        except OSError:
            self._last = None

    def append_string(self, string: str) -> None:
        if string == self._last:
            return
        self._last = string
        super().append_string(string)


class YuyaoCompleter(Completer):
    """Slash command names at the start of the input; @paths anywhere."""

    def __init__(self, app: App) -> None:
        self.app = app

    def get_completions(self, document, complete_event):
        text = document.text_before_cursor
        if text.startswith("/") and not any(c.isspace() for c in text):
            for name, meta in sorted(self.app.commands.items()):
                if name.startswith(text.lower()):
                    yield Completion(name, start_position=-len(text), display_meta=meta[:60])
            return
        word = re.split(r"\s", text)[-1] if text else ""
        if word.startswith("@"):
            yield from self._paths(word[1:])

    def _paths(self, partial: str):
        base = self.app.cwd()
        head, _, tail = partial.rpartition("/")
        directory = os.path.join(base, os.path.expanduser(head)) if head else base
        if partial.startswith("/"):
            directory = head or "/"
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        shown = 0
        for name in names:
            if not name.startswith(tail) or (name.startswith(".") and not tail.startswith(".")):
                continue
            full = os.path.join(directory, name)
            label = name + ("/" if os.path.isdir(full) else "")
            yield Completion(label, start_position=-len(tail), display=label)
            shown += 1
            if shown >= 60:
                return


def _bindings(app: App) -> KeyBindings:
    kb = KeyBindings()

    @kb.add("enter")
    def _submit(event) -> None:
        buf = event.current_buffer
        doc = buf.document
        if doc.is_cursor_at_the_end and doc.text.endswith("\\"):
            buf.delete_before_cursor(1)
            buf.insert_text("\n")
            return
        buf.validate_and_handle()

    @kb.add("c-j")
    @kb.add("escape", "enter")
    def _newline(event) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("c-c")
    def _clear(event) -> None:
        buf = event.current_buffer
        buf.complete_state = None
        buf.reset()

    @kb.add("s-tab")
    def _plan(event) -> None:
        run_in_terminal(app.toggle_plan)

    @kb.add("escape", "t")
    def _thinking(event) -> None:
        run_in_terminal(app.cycle_thinking)

    @kb.add("c-o")
    def _transcript(event) -> None:
        run_in_terminal(app.renderer.show_transcript)

    @kb.add("c-g")
    def _editor(event) -> None:
        event.current_buffer.open_in_editor(validate_and_handle=False)

    @kb.add("escape", "escape")
    def _esc_esc(event) -> None:
        buf = event.current_buffer
        if buf.text.strip():
            buf.history.append_string(buf.text)  # saved, then cleared
            buf.reset()
        else:
            run_in_terminal(lambda: app.handle_line("/rewind"))

    return kb


class InputBox:
    def __init__(self, app: App, history_path: Path) -> None:
        self.app = app
        self.session: PromptSession = PromptSession(
            history=DedupFileHistory(history_path),
            completer=YuyaoCompleter(app),
            complete_while_typing=True,
            auto_suggest=AutoSuggestFromHistory(),
            key_bindings=_bindings(app),
            multiline=True,
            bottom_toolbar=app.toolbar,
            prompt_continuation=lambda width, line_no, wrap: [("class:continuation", "· ")],
            style=Style.from_dict(theme.PT_STYLE),
            reserve_space_for_menu=6,
            enable_history_search=False,
        )

    def read(self, default: str = "") -> str:
        """One submission. Raises EOFError on Ctrl+D with empty input."""
        return self.session.prompt(self.app.prompt_fragments, default=default)

    def invalidate(self) -> None:
        app = self.session.app
        if app.is_running:
            app.invalidate()
