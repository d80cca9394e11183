"""The input box: prompt_toolkit session, per-directory history, completion, key bindings.

Every shortcut of spec §5.3 that acts while the prompt is shown is bound here; each calls the
same App method as its long form (Shift+Tab = `/mode plan` and back, Alt+T = `/show-thinking`,
Esc Esc = `/rewind`, …). Keys pressed while a turn runs are read by `keys.RawKeys` instead.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.auto_suggest import AutoSuggest, AutoSuggestFromHistory, Suggestion
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.cursor_shapes import ModalCursorShapeConfig
from prompt_toolkit.enums import EditingMode
from prompt_toolkit.filters import (
    Condition,
    emacs_mode,
    is_searching,
    vi_insert_mode,
    vi_navigation_mode,
)
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import ansi_escape_sequences
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.styles import Style

from . import theme
from .vim import DotRepeat
from .vim import add_bindings as add_vim_bindings

if TYPE_CHECKING:  # pragma: no cover
    from .actions import ComposerHost

# Shift+Enter: terminals that report it distinctly (xterm modifyOtherKeys, kitty/CSI-u) send
# one of these; by default prompt_toolkit reads them as Enter. Make them Ctrl+J (= newline).
for _seq in ("\x1b[27;2;13~", "\x1b[13;2u"):
    ansi_escape_sequences.ANSI_SEQUENCES[_seq] = Keys.ControlJ
# Ctrl+Shift+Z (redo) reaches us only from terminals that report modifiers (CSI-u /
# modifyOtherKeys); an unused key stands for it. Elsewhere it arrives as plain Ctrl+Z.
REDO_KEY = Keys.F24
for _seq in ("\x1b[122;6u", "\x1b[90;6u", "\x1b[27;6;122~", "\x1b[27;6;90~"):
    ansi_escape_sequences.ANSI_SEQUENCES[_seq] = REDO_KEY


try:  # the builtin module: hashlib would load OpenSSL on the startup path
    from _sha256 import sha256 as _sha256
except ImportError:  # pragma: no cover - other Python versions
    from hashlib import sha256 as _sha256


def yuyao_home(options: dict | None = None) -> Path:
    home = (options or {}).get("home") or os.environ.get("YUYAO_HOME")
    return Path(home).expanduser() if home else Path.home() / ".yuyao"


def history_file(cwd: str, options: dict | None = None) -> Path:
    """~/.yuyao/history/<dir name>-<hash of the full path>: one history per working directory."""
    real = os.path.realpath(cwd)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(real) or "root")[:40]
    digest = _sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
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


EXIT_WINDOW = 2.0  # seconds within which a second Ctrl+C on an empty input leaves

META_WIDTH = 48  # the description column of the `/` completion menu

SKIP_DIRS = {"node_modules", "target", "__pycache__", "dist", "build", "venv"}
WALK_LIMIT = 5000  # entries looked at for a deep @completion


class YuyaoCompleter(Completer):
    """Slash command names at the start of the input; @paths anywhere."""

    def __init__(self, app: ComposerHost) -> None:
        self.app = app

    def get_completions(self, document, complete_event):
        text = document.text_before_cursor
        if text.startswith("/") and not any(c.isspace() for c in text):
            if text == "/":
                self.app.load_commands()  # custom commands dropped in since the last look
            for name, meta in sorted(self.app.commands.items()):
                if name.startswith(text.lower()):
                    yield Completion(
                        name, start_position=-len(text), display_meta=clip_words(meta, META_WIDTH)
                    )
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
            yield _path_completion(name, os.path.isdir(os.path.join(directory, name)), tail)
            shown += 1
            if shown >= 60:
                return
        if head or partial.startswith(("/", "~", ".")) or len(tail) < 2:
            return
        # Deeper in the project, then in the /add-dir folders (by absolute path): files and
        # folders whose name starts with what was typed.
        seen = 0
        added = [d for d in self.app.status.get("added_dirs") or [] if isinstance(d, str)]
        for top in [base, *added]:
            for root, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
                rel = os.path.relpath(root, base) if top == base else root
                if rel == ".":
                    continue
                for name in sorted(dirs) + sorted(files):
                    seen += 1
                    if name.lower().startswith(tail.lower()):
                        yield _path_completion(os.path.join(rel, name), name in dirs, tail)
                        shown += 1
                        if shown >= 60:
                            return
                if seen > WALK_LIMIT:
                    return


def clip_words(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut and text[width - 1] != " ":
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:(—-") + "…"


def _path_completion(path: str, is_dir: bool, tail: str) -> Completion:
    """One `@path` completion replacing the typed ``tail``; folders end in `/`."""
    label = path + ("/" if is_dir else "")
    return Completion(
        label,
        start_position=-len(tail),
        display=label,
        display_meta="folder (recursive)" if is_dir else "file",
    )


class NextStep(AutoSuggest):
    """The greyed next-step suggestion in an empty input (App.suggestion), then history.

    Typing dismisses it for the rest of this prompt."""

    def __init__(self, app: ComposerHost) -> None:
        self.app = app
        self.history = AutoSuggestFromHistory()

    def get_suggestion(self, buffer, document):
        if not document.text:
            return Suggestion(self.app.suggestion) if self.app.suggestion else None
        self.app.suggestion = ""
        return self.history.get_suggestion(buffer, document)


def _bindings(app: ComposerHost, dot: DotRepeat) -> KeyBindings:
    kb = KeyBindings()
    not_vi_insert = ~vi_insert_mode
    esc_esc_ok = emacs_mode | vi_navigation_mode

    @kb.add("enter", filter=~is_searching)
    def _submit(event) -> None:
        buf = event.current_buffer
        doc = buf.document
        if doc.is_cursor_at_the_end and doc.text.endswith("\\"):
            buf.delete_before_cursor(1)
            buf.insert_text("\n")
            return
        buf.validate_and_handle()

    @kb.add("c-j")
    @kb.add("escape", "enter", filter=not_vi_insert)
    def _newline(event) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("c-c")
    def _clear(event) -> None:
        """Clears the input, as shells do; on an empty input a first press says how to
        leave and a second one within EXIT_WINDOW seconds leaves (exit 0)."""
        buf = event.current_buffer
        if buf.text or buf.complete_state:
            buf.complete_state = None
            buf.reset()
            app.images.clear()
            return
        now = time.monotonic()
        if now - app.ctrl_c_at < EXIT_WINDOW:
            event.app.exit(exception=EOFError)
            return
        app.ctrl_c_at = now
        event.app.invalidate()
        asyncio.get_running_loop().call_later(EXIT_WINDOW + 0.05, event.app.invalidate)

    @kb.add("s-tab")
    def _plan(event) -> None:
        run_in_terminal(app.toggle_plan)

    @kb.add("escape", "t", filter=not_vi_insert)
    def _thinking(event) -> None:
        run_in_terminal(app.cycle_thinking)

    @kb.add("c-o")
    def _transcript(event) -> None:
        run_in_terminal(app.renderer.show_transcript)

    @kb.add("c-t")
    def _tasks(event) -> None:
        run_in_terminal(app.toggle_tasks)

    @kb.add("c-e")
    def _plan_preview(event) -> None:
        run_in_terminal(app.toggle_plan_preview)

    @kb.add("c-b")
    def _background(event) -> None:
        run_in_terminal(app.background_command)

    @kb.add("c-x", "c-k")
    def _kill_agents(event) -> None:
        run_in_terminal(app.kill_subagents)

    @kb.add("c-s")
    def _steer(event) -> None:
        run_in_terminal(app.steer_idle)

    @kb.add("c-g")
    def _editor(event) -> None:
        event.current_buffer.open_in_editor(validate_and_handle=False)

    @kb.add("c-v", filter=~vi_navigation_mode)
    def _paste(event) -> None:
        buf = event.current_buffer
        inserted = app.paste_clipboard()
        if inserted:
            buf.insert_text(inserted)

    @kb.add("c-z", save_before=lambda e: False)
    def _undo(event) -> None:
        event.current_buffer.undo()

    @kb.add(REDO_KEY, save_before=lambda e: False)
    def _redo(event) -> None:
        event.current_buffer.redo()

    @kb.add("c-l")
    def _clear_screen(event) -> None:
        event.app.renderer.clear()  # the display only; the conversation is untouched

    @kb.add("escape", "escape", filter=esc_esc_ok)
    def _esc_esc(event) -> None:
        buf = event.current_buffer
        if buf.text.strip():
            buf.history.append_string(buf.text)  # saved, then cleared
            buf.reset()
            app.images.clear()
        else:  # the rewind menu runs once the prompt is gone (it is an application itself)
            event.app.exit(result="/rewind")

    has_suggestion = Condition(
        lambda: bool(
            app.input
            and (buf := app.input.session.default_buffer).suggestion
            and buf.suggestion.text
            and buf.document.is_cursor_at_the_end
            and buf.complete_state is None
        )
    )

    @kb.add("tab", filter=has_suggestion)
    def _accept(event) -> None:
        buf = event.current_buffer
        buf.insert_text(buf.suggestion.text)

    empty_idle = Condition(
        lambda: bool(
            app.input
            and not app.input.session.default_buffer.text
            and not app.input.session.default_buffer.suggestion
        )
    )

    @kb.add("tab", filter=empty_idle)
    def _plan_by_tab(event) -> None:
        # Seed 001: Tab on an empty idle composer switches to (and out of) planning.
        run_in_terminal(app.tab_plan)

    @kb.add(Keys.BracketedPaste)
    def _bracketed_paste(event) -> None:
        # A large paste collapses to a placeholder; the model gets the whole text.
        data = event.data.replace("\r\n", "\n").replace("\r", "\n")
        buf = event.current_buffer
        if not app.pastes.is_large(data):
            buf.insert_text(data)
            return
        buf.insert_text(app.pastes.collapse(data))
        warning = app.pastes.warning(data, int(app.status.get("context_window") or 0))
        if warning:
            run_in_terminal(lambda: app.say(warning, "warn"))

    @kb.add("escape", "v")
    def _expand_pastes(event) -> None:
        # Alt+V: the collapsed pastes back in the composer, to read or edit them.
        buf = event.current_buffer
        buf.text = app.pastes.expand(buf.text)
        buf.cursor_position = len(buf.text)

    add_vim_bindings(kb, dot)
    return kb


class InputBox:
    def __init__(self, app: ComposerHost, history_path: Path, vim: bool = False) -> None:
        self.app = app
        self.dot = DotRepeat()
        self.session: PromptSession = PromptSession(
            history=DedupFileHistory(history_path),
            completer=YuyaoCompleter(app),
            complete_while_typing=True,
            complete_in_thread=True,  # a deep @path walk must not stall typing
            auto_suggest=NextStep(app),
            key_bindings=_bindings(app, self.dot),
            multiline=True,
            bottom_toolbar=app.toolbar,
            prompt_continuation=lambda width, line_no, wrap: [("class:continuation", "· ")],
            style=Style.from_dict(theme.PT_STYLE),
            reserve_space_for_menu=6,
            enable_history_search=False,
            vi_mode=vim,
            cursor=ModalCursorShapeConfig(),
        )

    @property
    def vim(self) -> bool:
        return self.session.editing_mode == EditingMode.VI

    def set_vim(self, on: bool) -> None:
        self.session.editing_mode = EditingMode.VI if on else EditingMode.EMACS

    def vim_mode(self) -> str:
        return self.dot.mode() if self.vim else ""

    def _pre_run(self) -> None:
        pt_app = self.session.app  # prompt_toolkit's Application, not the yuyao App
        self.dot.install(pt_app)
        buf = self.session.default_buffer
        buf.save_to_undo_stack()  # where the first insert session's undo goes back to
        if not buf.text and self.app.suggestion:
            buf.suggestion = Suggestion(self.app.suggestion)

    def read(self, default: str = "") -> str:
        """One submission. Raises EOFError on Ctrl+D with empty input."""
        return self.session.prompt(
            self.app.prompt_fragments, default=default, pre_run=self._pre_run
        )

    def invalidate(self) -> None:
        pt_app = self.session.app
        if pt_app.is_running:
            pt_app.invalidate()
