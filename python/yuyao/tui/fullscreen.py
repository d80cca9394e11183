"""`/tui fullscreen`: the same session in a full-screen prompt_toolkit application.

Flicker-free: prompt_toolkit redraws only what changed on the alternate screen. The same App
(session, renderer, commands, key actions) is used; only the surface differs:

- the renderer prints into an in-memory rich console; its ANSI output fills the transcript
  pane (PageUp/PageDown scroll it, Ctrl+L clears the pane only);
- the turn in progress (stream, spinner, progress bar) is drawn below it;
- turns and commands run on a worker thread; a poller on the event loop renders their events
  and shows the core's questions inline (permission: one key; ask-user: a line; Esc cancels);
- `/tui default` returns to the inline renderer; the session is untouched either way.
"""

from __future__ import annotations

import asyncio
import io
import queue
import shutil
from typing import TYPE_CHECKING, Any, Callable

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import ThreadedCompleter
from prompt_toolkit.data_structures import Point
from prompt_toolkit.enums import EditingMode
from prompt_toolkit.filters import Condition, has_completions, is_searching
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import (
    ConditionalContainer,
    Float,
    FloatContainer,
    HSplit,
    Layout,
    VSplit,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.layout.processors import AppendAutoSuggestion
from prompt_toolkit.styles import Style
from prompt_toolkit.widgets import SearchToolbar
from rich.console import Console
from rich.text import Text

from . import prompts, theme
from .input import REDO_KEY, NextStep, YuyaoCompleter

if TYPE_CHECKING:  # pragma: no cover
    from .actions import ScreenHost

MAX_LINES = 5000  # transcript lines kept in the pane
POLL = 0.05


class Fullscreen:
    def __init__(self, app: ScreenHost) -> None:
        self.app = app
        cols = shutil.get_terminal_size((100, 40)).columns
        self.out = io.StringIO()
        self.console = Console(
            file=self.out,
            theme=theme.THEME,
            highlight=False,
            soft_wrap=False,
            emoji=False,
            force_terminal=True,
            color_system="standard" if not _no_color() else None,
            width=max(cols - 1, 20),
        )
        self.lines: list[str] = []
        self.scroll = 0  # lines above the bottom
        self.result = "default"
        self.turn: dict | None = None  # the running turn: thread, queue, result, on_done
        self.pending: tuple[str, dict, dict, list] | None = None  # (kind, request, box, opts)
        history = app.input.session.history if app.input else None
        self.input = Buffer(
            multiline=True,
            history=history,
            completer=ThreadedCompleter(YuyaoCompleter(app)),
            complete_while_typing=True,
            auto_suggest=NextStep(app),
            enable_history_search=False,
        )
        self.kill_x = 0.0
        self.application = self._build()

    # -- output ----------------------------------------------------------------------------

    def _take_output(self) -> None:
        text = self.out.getvalue()
        if not text:
            return
        self.out.seek(0)
        self.out.truncate(0)
        parts = text.split("\n")
        if self.lines and not text.startswith("\n") and self._open_line:
            self.lines[-1] += parts.pop(0)
        self.lines.extend(parts)
        self._open_line = not text.endswith("\n")
        if not self._open_line and self.lines and self.lines[-1] == "":
            self.lines.pop()
        if len(self.lines) > MAX_LINES:
            del self.lines[: len(self.lines) - MAX_LINES]

    _open_line = False
    _answers_before = 0

    def _transcript(self):
        self._take_output()
        return ANSI("\n".join(self.lines))

    def _cursor(self) -> Point:
        return Point(0, max(len(self.lines) - 1 - self.scroll, 0))

    def _live(self):
        if self.turn is None:
            return ""
        cols = shutil.get_terminal_size((100, 40)).columns
        buf = io.StringIO()
        c = Console(
            file=buf,
            theme=theme.THEME,
            highlight=False,
            emoji=False,
            force_terminal=True,
            color_system="standard" if not _no_color() else None,
            width=max(cols - 1, 20),
            height=12,
        )
        c.print(self.app.renderer.view)
        return ANSI(buf.getvalue().rstrip("\n"))

    def _tasks(self):
        tasks = self.app.tasks()
        if not tasks:
            return [("class:tasks.empty", " no task list in this session (Ctrl+T hides this)")]
        from .tasks import task_line

        out: list = [("class:tasks.title", " tasks\n")]
        done = 0
        for t in tasks:
            st = str(t.get("status") or "pending")
            done += st == "completed"
            out.append((f"class:tasks.{st}", f"{task_line(t)}\n"))
        out.append(("class:tasks.title", f"  {done}/{len(tasks)} done"))
        return out

    def _prompt(self):
        if self.pending is not None:
            kind = self.pending[0]
            if kind == "permission":
                return [("class:prompt.plan", "allow? [y/a/p/n] ")]
            return [("class:prompt", "answer › ")]
        if self.turn is not None:
            return [("class:prompt.steer", "steer › ")]
        return self.app.prompt_fragments()

    def _toolbar(self):
        parts = self.app.toolbar()
        return [("class:bottom-toolbar.key", " full screen (/tui default leaves) ·")] + parts

    # -- layout and keys ---------------------------------------------------------------

    def _build(self) -> Application:
        search = SearchToolbar()  # Ctrl+R
        busy = Condition(lambda: self.turn is not None)
        asking = Condition(lambda: self.pending is not None)
        permission = Condition(lambda: self.pending is not None and self.pending[0] == "permission")
        tasks = ConditionalContainer(
            Window(
                FormattedTextControl(self._tasks),
                height=Dimension(max=10),
                dont_extend_height=True,
                style="class:tasks",
            ),
            filter=Condition(lambda: self.app.show_tasks),
        )
        transcript = Window(
            FormattedTextControl(self._transcript, get_cursor_position=self._cursor),
            wrap_lines=True,
            always_hide_cursor=True,
        )
        live = ConditionalContainer(
            Window(
                FormattedTextControl(self._live),
                height=Dimension(max=14),
                wrap_lines=True,
                dont_extend_height=True,
            ),
            filter=busy,
        )
        input_row = VSplit(
            [
                Window(FormattedTextControl(self._prompt), dont_extend_width=True),
                Window(
                    BufferControl(
                        self.input,
                        input_processors=[AppendAutoSuggestion()],
                        search_buffer_control=search.control,
                    ),
                    height=Dimension(min=1, max=8),
                    wrap_lines=True,
                    dont_extend_height=True,
                ),
            ]
        )
        body = HSplit(
            [
                transcript,
                tasks,
                live,
                Window(height=1, char="─", style="class:rule"),
                input_row,
                search,
                Window(
                    FormattedTextControl(self._toolbar),
                    height=Dimension(max=3),
                    style="class:bottom-toolbar",
                    wrap_lines=True,
                    dont_extend_height=True,
                ),
            ]
        )
        root = FloatContainer(
            body,
            floats=[Float(xcursor=True, ycursor=True, content=CompletionsMenu(max_height=8))],
        )
        kb = KeyBindings()

        @kb.add("enter", filter=(~has_completions | asking) & ~is_searching)
        def _enter(event) -> None:
            buf = self.input
            if self.pending is not None:
                self._answer_line(buf.text)
                buf.reset()
                return
            if buf.document.is_cursor_at_the_end and buf.text.endswith("\\"):
                buf.delete_before_cursor(1)
                buf.insert_text("\n")
                return
            text = buf.text
            if self.turn is not None:
                self._steer(text)
                buf.reset()
                return
            if text.strip() or self.app.shell_mode:
                buf.append_to_history()
                buf.reset()
                self.submit(text)

        @kb.add("c-j")
        def _newline(event) -> None:
            self.input.insert_text("\n")

        def _perm(event) -> None:
            self._answer_permission(event.data.lower())

        for key in "yapnYAPN":
            kb.add(key, filter=permission)(_perm)

        @kb.add("escape")
        def _esc(event) -> None:
            if self.pending is not None:
                self._answer_line(None)
            elif self.turn is not None:
                self._interrupt()

        @kb.add("c-c")
        def _ctrl_c(event) -> None:
            if self.input.text:
                self.input.reset()
            elif self.pending is not None:
                self._answer_line(None)
            elif self.turn is not None:
                self._interrupt()

        @kb.add("c-d")
        def _ctrl_d(event) -> None:
            if not self.input.text and self.turn is None and self.pending is None:
                self.leave("exit")
            else:
                self.input.delete()

        @kb.add("s-tab")
        def _plan(event) -> None:
            self.app.toggle_plan()

        @kb.add(Keys.BracketedPaste)
        def _bracketed_paste(event) -> None:
            data = event.data.replace("\r\n", "\n").replace("\r", "\n")
            if not self.app.pastes.is_large(data):
                self.input.insert_text(data)
                return
            self.input.insert_text(self.app.pastes.collapse(data))
            window = int(self.app.status.get("context_window") or 0)
            warning = self.app.pastes.warning(data, window)
            if warning:
                self.app.say(warning, "warn")

        @kb.add("escape", "v")
        def _expand_pastes(event) -> None:
            self.input.text = self.app.pastes.expand(self.input.text)
            self.input.cursor_position = len(self.input.text)

        @kb.add("escape", "t")
        def _thinking(event) -> None:
            if self.turn is not None:
                view = self.app.renderer.view
                new = "expanded" if self.app.renderer.show_thinking == "collapsed" else "collapsed"
                self.app.renderer.show_thinking = view.show_thinking = new
                self.app.thinking_toggled = not self.app.thinking_toggled
            else:
                self.app.cycle_thinking()

        @kb.add("c-o")
        def _transcript(event) -> None:
            self.app.renderer.show_transcript()

        @kb.add("c-t")
        def _tasks(event) -> None:
            self.app.toggle_tasks()

        @kb.add("c-e")
        def _plan_preview(event) -> None:
            self.app.toggle_plan_preview()

        @kb.add("c-b")
        def _bg(event) -> None:
            self.app.background_command(self.app.renderer.running_command() if self.turn else "")

        @kb.add("c-x", "c-k")
        def _kill(event) -> None:
            self.app.kill_subagents()

        @kb.add("c-s")
        def _steer(event) -> None:
            if self.turn is not None:
                self._steer(self.input.text)
                self.input.reset()
            else:
                self.app.steer_idle()

        @kb.add("c-g")
        def _editor(event) -> None:
            self.input.open_in_editor(validate_and_handle=False)

        @kb.add("c-v")
        def _paste(event) -> None:
            text = self.app.paste_clipboard()
            if text:
                self.input.insert_text(text)

        @kb.add("c-z", save_before=lambda e: False)
        def _undo(event) -> None:
            self.input.undo()

        @kb.add(REDO_KEY, save_before=lambda e: False)
        def _redo(event) -> None:
            self.input.redo()

        @kb.add("c-l")
        def _clear(event) -> None:
            self._take_output()
            self.lines = []  # the pane only; the conversation is untouched
            self.scroll = 0

        @kb.add("escape", "escape")
        def _esc_esc(event) -> None:
            if self.turn is not None or self.pending is not None:
                return
            if self.input.text.strip():
                self.input.append_to_history()
                self.input.reset()
            else:
                self.submit("/rewind")

        @kb.add("pageup")
        def _up(event) -> None:
            self.scroll = min(self.scroll + 10, max(len(self.lines) - 1, 0))

        @kb.add("pagedown")
        def _down(event) -> None:
            self.scroll = max(self.scroll - 10, 0)

        suggestion = Condition(
            lambda: bool(
                self.input.suggestion
                and self.input.suggestion.text
                and self.input.document.is_cursor_at_the_end
                and self.input.complete_state is None
            )
        )

        @kb.add("tab", filter=suggestion)
        def _accept(event) -> None:
            self.input.insert_text(self.input.suggestion.text)

        @kb.add("tab", filter=~suggestion)
        def _complete(event) -> None:
            if not self.input.text and self.turn is None and self.pending is None:
                self.app.tab_plan()  # seed 001: Tab on an empty idle composer plans
            elif self.input.complete_state:
                self.input.complete_next()
            else:
                self.input.start_completion(select_first=False)

        style = Style.from_dict(
            {
                **theme.PT_STYLE,
                "rule": "ansibrightblack",
                "prompt.steer": "ansicyan",
                "tasks.empty": "ansibrightblack",
                "tasks.title": "ansicyan bold",
                "tasks.completed": "ansigreen",
                "tasks.in_progress": "ansicyan",
                "tasks.blocked": "ansiyellow",
            }
        )
        return Application(
            layout=Layout(root, focused_element=self.input),
            key_bindings=kb,
            style=style,
            full_screen=True,
            mouse_support=False,
            editing_mode=EditingMode.VI
            if self.app.input and self.app.input.vim
            else EditingMode.EMACS,
            refresh_interval=None,
        )

    # -- running ----------------------------------------------------------------------------

    def run(self) -> str:
        self.app.say(
            "full screen: the same session; PageUp/PageDown scroll, /tui default leaves", "accent"
        )
        if self.app.suggestion:
            from prompt_toolkit.auto_suggest import Suggestion

            self.input.suggestion = Suggestion(self.app.suggestion)
        self.application.run(pre_run=self._start_poller)
        return self.result

    def leave(self, result: str) -> None:
        self.result = result
        if self.application.is_running:
            self.application.exit()

    def invalidate(self) -> None:
        if self.application.is_running:
            self.application.invalidate()

    def _start_poller(self) -> None:
        self.application.create_background_task(self._poll())

    async def _poll(self) -> None:
        while True:
            self._drain()
            self.application.invalidate()
            await asyncio.sleep(POLL)

    def submit(self, line: str) -> None:
        app = self.app
        stripped = line.strip()
        if app.shell_mode or stripped.startswith("!"):
            cmd = (
                stripped[1:].strip()
                if stripped.startswith("!") and not app.shell_mode
                else stripped
            )
            if stripped == "!":
                app.shell_mode = not app.shell_mode
                app.say(
                    "shell mode: lines run in a subshell; ! to leave"
                    if app.shell_mode
                    else "left shell mode"
                )
                return
            self._shell(cmd)
            return
        if stripped.startswith("/"):
            app.console.print(Text(f"› {stripped}", "user"))
            if app.slash_local(stripped):
                return
            self.start(
                lambda: app.session.dispatch(stripped),
                False,
                lambda ok, v: self._after_slash(stripped, ok, v),
            )
            return
        app.console.print(Text(f"› {line.rstrip()}", "user"))
        app.show_refs(line)
        app.suggestion = ""
        self._answers_before = len(app.renderer.answers)
        sent = app.pastes.expand(line)  # shown collapsed above; the model gets the text
        self.start(lambda: app.session.chat(sent), True, self._after_chat)

    def _after_slash(self, line: str, ok: bool, value: Any) -> None:
        self.app.slash_result(line, ok, value)
        if self.app.status.get("exit_requested"):
            self.leave("exit")

    def _after_chat(self, ok: bool, value: Any) -> None:
        app = self.app
        fresh = len(app.renderer.answers) == self._answers_before
        if ok and isinstance(value, str) and value.strip() and fresh:
            app.renderer.markdown(value)
            app.renderer.answers.append(value.strip())
        app.after_chat(self._answers_before)
        if app.renderer.answers:
            if app.suggestion and not self.input.text:
                from prompt_toolkit.auto_suggest import Suggestion

                self.input.suggestion = Suggestion(app.suggestion)

    def _shell(self, cmd: str) -> None:
        if not cmd:
            return
        app = self.app
        op = getattr(app.session, "user_shell", None)
        app.console.print(Text(f"$ {cmd}", "muted"))
        if callable(op):
            self.start(lambda: op(cmd), False, self._after_shell)
            return

        def run() -> str:
            import subprocess

            proc = subprocess.run(
                cmd, shell=True, cwd=app.cwd(), capture_output=True, text=True, errors="replace"
            )
            return (f"{proc.stdout}{proc.stderr}", proc.returncode)

        self.start(run, False, self._after_shell)

    def _after_shell(self, ok: bool, value: Any) -> None:
        con = self.app.console
        if not ok:
            con.print(Text(f"{theme.SYM_FAIL} {value}", "error"))
            return
        text, code = value if isinstance(value, tuple) else (str(value or ""), None)
        if text.strip():
            con.print(Text(text.rstrip()))
        if code is not None:
            good = code == 0
            mark = theme.SYM_OK if good else theme.SYM_FAIL
            con.print(Text(f"{mark} exit {code}", "ok" if good else "fail"))

    def start(
        self, fn: Callable[[], Any], steer: bool, on_done: Callable[[bool, Any], None]
    ) -> None:
        from .worker import turn_worker

        app = self.app
        q, result, worker = turn_worker(fn)
        app.renderer.start_turn(steer_enabled=steer)
        app.renderer.view.steer_enabled = False  # the input row is the steering box here
        app.handler.queue = q
        app.handler.worker = worker
        self.turn = {"queue": q, "result": result, "on_done": on_done, "steer": steer, "ctrl_c": 0}
        worker.start()

    def _drain(self) -> None:
        turn = self.turn
        if turn is None or self.pending is not None:
            return
        q = turn["queue"]
        renderer = self.app.renderer
        while True:
            try:
                kind, payload, box = q.get_nowait()
            except queue.Empty:
                return
            if kind == "event":
                renderer.handle(payload)
            elif kind == "request":
                renderer.flush_stream()
                self._ask(payload, box)
                return
            elif kind == "done":
                self._finish()
                return

    def _finish(self) -> None:
        app = self.app
        turn, self.turn = self.turn, None
        app.handler.queue = None
        app.handler.worker = None
        app.renderer.flush_stream()
        if app.thinking_toggled:
            app.thinking_toggled = False
            app.cycle_thinking(toggle=False)
        app.refresh_status()
        result = turn["result"]
        if "error" in result:
            err = result["error"]
            if isinstance(err, RuntimeError) and not app.renderer.error_shown and turn["steer"]:
                app.console.print(Text(f"{theme.SYM_FAIL} error: {err}", "error"))
            turn["on_done"](False, err)
        else:
            turn["on_done"](True, result.get("value"))
        if turn["steer"]:
            app.console.print()

    # -- questions from the core -------------------------------------------------------------

    def _ask(self, req: dict, box: dict) -> None:
        kind = req.get("type")
        con = self.app.console
        if kind == "permission":
            prompts.show_permission(con, req)
            self.pending = ("permission", req, box, [])
        elif kind in ("ask_user", "limit_reached"):  # a limit: grant more, or stop
            opts = prompts.show_ask_user(con, req)
            self.pending = ("ask_user", req, box, opts)
        elif kind == "remember_candidate":
            prompts.show_remember(con, req)
            self.pending = ("other", req, box, [])
        else:
            opts = [str(o) for o in (req.get("options") or [])]
            lines = [
                f"{k}: {v}" for k, v in req.items() if k != "type" and v not in (None, "", [], {})
            ]
            con.print(Text("\n".join(lines) or str(kind), "accent"))
            self.pending = ("other", req, box, opts)

    def _release(self, answer: str) -> None:
        _, _, box, _ = self.pending
        self.pending = None
        box["answer"] = answer
        box["done"].set()

    def _answer_permission(self, key: str) -> None:
        if self.pending is None:
            return
        self._release(prompts.permission_answer(self.app.console, key))

    def _answer_line(self, line: str | None) -> None:
        if self.pending is None:
            return
        kind, _, _, opts = self.pending
        con = self.app.console
        if kind == "permission":
            if line is None:
                self._release(prompts.permission_answer(con, "n"))
            elif line.strip()[:1].lower() in ("y", "a", "p", "n"):
                self._release(prompts.permission_answer(con, line.strip()[:1].lower()))
            return
        if line is None:
            con.print(Text("  (dismissed)", "muted"))
            self._release(prompts.DISMISSED)
            return
        answer = prompts.ask_user_answer(con, opts, line)
        if answer is not None:
            self._release(answer)

    # -- steering and interrupt ---------------------------------------------------------------

    def _steer(self, text: str) -> None:
        text = text.strip()
        if not text or self.turn is None:
            return
        if not self.turn["steer"]:
            self.app.say("a command is running; wait for it to finish", "warn")
            return
        try:
            self.app.session.steer(text)
        except Exception as e:  # noqa: BLE001
            self.app.say(f"{theme.SYM_FAIL} could not steer: {e}", "error")
            return
        line = Text(f"{theme.SYM_STEER} {text}", "steer")
        line.append("  queued for the next model call", "muted")
        self.app.console.print(line)

    def _interrupt(self) -> None:
        view = self.app.renderer.view
        view.interrupting = True
        try:
            self.app.session.interrupt()
        except Exception:  # noqa: BLE001
            pass


def _no_color() -> bool:
    import os

    return bool(os.environ.get("NO_COLOR"))
