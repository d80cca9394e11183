"""The interactive session: banner, the read–dispatch loop, turns, shell commands.

Threading: a turn (`session.chat` or a slash command) runs on a worker thread; the core calls
the handler on that thread, and the handler hands everything to the main thread through a
queue. The main thread alone touches the terminal: it renders events, shows the spinner,
reads keys (Esc / Ctrl+C interrupt, typed text steers) and answers requests.
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
import time
from typing import Any, Callable

from . import refs, theme
from .keys import RawKeys

# Resuming a session idle at least this long (seconds) shows a one-line recap.
RECAP_AFTER_S = 30 * 60


class _LazyText:
    """rich.text.Text, imported on first use: nothing rich is needed before the first prompt
    is on the screen (startup time), and everything printed afterwards goes through rich."""

    def __call__(self, *args: Any, **kw: Any):
        from rich.text import Text as _Text

        return _Text(*args, **kw)

    def __getattr__(self, name: str):
        from rich.text import Text as _Text

        return getattr(_Text, name)


Text = _LazyText()

LIVE_DELAY = 0.15  # a command that answers faster than this never shows a spinner
TICK = 0.06

BANNER_HINT = "/help for commands · Shift+Tab plan mode · Ctrl+D to exit"

UI_COMMANDS = {
    "/tui": "switch the renderer: /tui <default|fullscreen>",
    "/focus": "toggle the focused view (prompt, tool summary, final answer)",
    "/copy": "copy the last (or Nth last) answer: /copy [N] [--block K] [--out FILE]",
}

# Used only if the core's /help cannot be read.
FALLBACK_COMMANDS = (
    "/undo /redo /rewind /checkpoint /compact /compress /plan /ask /debug /mode /role /diff "
    "/review /security-review /run /copy /focus /tui /config /settings /background /bg /init "
    "/memory /tools /recap /context /model /new /clear /reset /sessions /resume /title "
    "/rename /status /export /add-dir /cd /permissions /hooks /mcp /agents /help /exit /quit "
    "/goal /loop /fork /branch /btw /side /verify /batch /workflows /workflow /skills /skill "
    "/queue /tasks /bashes /think /show-thinking /stream /usage"
).split()

MODEL_ENV = (
    ("D2A_MODEL_BASE_URL", "base URL of an OpenAI-compatible API, e.g. https://host/v1", True),
    ("D2A_MODEL_NAME", "the model to use", True),
    ("D2A_MODEL_API_KEY", "the API key (may be empty for a local endpoint)", False),
)


class ForceQuit(Exception):
    """Ctrl+C pressed repeatedly while a turn would not stop."""


class Handler:
    """The object the core calls: event(json) and request(json) -> str."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.worker: threading.Thread | None = None
        self.queue: queue.Queue | None = None

    def _on_worker(self) -> bool:
        # While a turn runs, sub-agents' threads (task, /fork) report through its queue too:
        # only the main thread draws and asks.
        me = threading.current_thread()
        if self.queue is None or me is threading.main_thread():
            return False
        return me is self.worker or (self.worker is not None and self.worker.is_alive())

    def event(self, event_json: str) -> None:
        try:
            event = json.loads(event_json)
        except ValueError:
            return
        if self._on_worker():
            self.queue.put(("event", event, None))
        else:  # called outside a turn (e.g. a key binding's command): render right away
            self.app.renderer.handle(event)
            self.app.renderer.flush_stream()

    def request(self, request_json: str) -> str:
        try:
            req = json.loads(request_json)
        except ValueError:
            req = {"type": "request", "text": request_json}
        if self._on_worker():
            box: dict[str, Any] = {"done": threading.Event(), "answer": ""}
            self.queue.put(("request", req, box))
            box["done"].wait()
            return str(box["answer"])
        return self.app.answer_request(req, None)


def missing_model_settings(options: dict) -> list[str]:
    model = options.get("model") if isinstance(options.get("model"), dict) else {}
    missing = []
    if not (model.get("base_url") or os.environ.get("D2A_MODEL_BASE_URL")):
        missing.append("D2A_MODEL_BASE_URL")
    if not (model.get("name") or os.environ.get("D2A_MODEL_NAME")):
        missing.append("D2A_MODEL_NAME")
    return missing


def print_missing_model(console, missing: list[str]) -> None:
    from rich.table import Table

    console.print(Text(f"{theme.SYM_WARN} yuyao needs a model to talk to.", "warn"))
    console.print(
        "  Slash commands work now; to chat, set these environment variables and start yuyao again:"
    )
    table = Table.grid(padding=(0, 2))
    for name, what, _required in MODEL_ENV:
        is_set = bool(os.environ.get(name))
        state = (
            Text("missing", "error")
            if name in missing
            else Text("set" if is_set else "not set", "ok" if is_set else "muted")
        )
        table.add_row(Text("  " + name, "bold"), Text(what), state)
    console.print(table)
    console.print(
        Text(
            "  example: export D2A_MODEL_BASE_URL=https://api.example.com/v1 "
            "D2A_MODEL_NAME=my-model D2A_MODEL_API_KEY=…",
            "muted",
        )
    )


class App:
    def __init__(
        self,
        console,
        options: dict,
        session_factory: Callable,
        version: str,
        keys: RawKeys | None = None,
    ) -> None:
        self._console = console  # None: created (and rich imported) at the first print
        self._renderer: Any = None
        self._thinking = "collapsed"  # the thinking display, until the renderer exists
        self._focus = False
        self._theme = "dark"
        self.options = options
        self.session_factory = session_factory
        self.version = version
        self.handler = Handler(self)
        self.keys = keys or RawKeys()
        self.session: Any = None
        self.status: dict = {}
        self.commands: dict[str, str] = {}
        self.shell_mode = False
        self.local_thinking: str | None = None  # set when the core refuses /show-thinking
        self.input: Any = None  # input.InputBox once the prompt exists
        self.pending_draft = ""
        self.thinking_toggled = False  # Alt+T pressed during a turn: tell the core afterwards
        self.images: list[str] = []  # images pasted with Ctrl+V into the current input
        self.yolo_in_cycle = False  # Shift+Tab reaches yolo once the user has used it
        self.suggestion = ""  # the greyed next-step suggestion for the next prompt
        self.show_tasks = False  # Ctrl+T
        self.kill_armed = 0.0  # Ctrl+X Ctrl+K pressed once at this time (press twice)
        self.ctrl_c_at = -1e9  # Ctrl+C on the empty input, pressed once at this time
        self.branch = ""
        self.pr = None  # status.PrWatcher
        self.fullscreen = None  # fullscreen.Fullscreen while /tui fullscreen is on
        self.want_fullscreen = False

    # -- lazily built output side ---------------------------------------------------------

    @property
    def console(self):
        if self._console is None:
            self._console = theme.make_console()
            if self._theme == "mono":
                self._console.no_color = True
        return self._console

    @console.setter
    def console(self, value) -> None:
        self._console = value

    @property
    def renderer(self):
        if self._renderer is None:
            from .render import Renderer

            self._renderer = Renderer(self.console)
            self._renderer.show_thinking = self._thinking
            self._renderer.focus = self._focus
        return self._renderer

    def thinking_display(self) -> str:
        return self._renderer.show_thinking if self._renderer is not None else self._thinking

    def focus_on(self) -> bool:
        return self._renderer.focus if self._renderer is not None else self._focus

    # -- status -------------------------------------------------------------------------

    def refresh_status(self) -> None:
        try:
            self.status = json.loads(self.session.status_json())
        except Exception:  # noqa: BLE001 - the status line must never take the TUI down
            return
        shown = self.local_thinking or self.status.get("show_thinking")
        if shown:
            self._thinking = str(shown)
            if self._renderer is not None:
                self._renderer.show_thinking = str(shown)
        if self.input:
            self.input.invalidate()

    def cwd(self) -> str:
        try:
            return str(self.session.cwd)
        except Exception:  # noqa: BLE001
            return str(self.status.get("cwd") or os.getcwd())

    def toolbar(self):
        st = self.status
        mode = str(st.get("mode") or "?")
        mode_cls = {"plan": "plan", "yolo": "yolo"}.get(mode, "mode")
        sep = ("class:bottom-toolbar.sep", " · ")
        parts: list = []
        from .input import EXIT_WINDOW

        if time.monotonic() - self.ctrl_c_at < EXIT_WINDOW:
            parts += [("class:bottom-toolbar.hint", "press Ctrl+C again to exit"), sep]
        parts += self.refs_fragments()
        parts.append(("class:bottom-toolbar.sep", " "))
        vim = self.input.vim_mode() if self.input and self.fullscreen is None else ""
        if vim:
            parts += [(f"class:bottom-toolbar.vim.{vim.lower()}", f"-- {vim} --"), sep]
        if self.shell_mode:
            parts += [("class:bottom-toolbar.shell", "shell mode (! to leave)"), sep]
        parts += [(f"class:bottom-toolbar.{mode_cls}", mode), sep]
        parts += [("class:bottom-toolbar.value", str(st.get("role") or "?")), sep]
        parts += [("class:bottom-toolbar.value", str(st.get("model") or "?")), sep]
        ctx = st.get("context_percent")
        ctx_text = f"{float(ctx):.0f}%" if isinstance(ctx, (int, float)) else "–"
        parts += [("class:bottom-toolbar.key", "ctx "), ("class:bottom-toolbar.value", ctx_text)]
        parts.append(sep)
        cost = st.get("cost_usd")
        cost_text = f"${float(cost):.4f}" if isinstance(cost, (int, float)) else "$–"
        parts += [("class:bottom-toolbar.value", cost_text), sep]
        parts += [("class:bottom-toolbar.key", f"thinking {self.thinking_display()}")]
        if self.branch:
            parts += [sep, ("class:bottom-toolbar.branch", f"⎇ {self.branch}")]
        pr = self.pr.current if self.pr else None
        if pr:
            url = pr.get("url") or ""
            parts.append(sep)
            if url:  # OSC 8: a clickable link in terminals that support it
                parts.append(("[ZeroWidthEscape]", f"\x1b]8;;{url}\x1b\\"))
            parts.append(
                (f"class:bottom-toolbar.{pr['cls']}", f"PR #{pr.get('number')} {pr['label']}")
            )
            if url:
                parts.append(("[ZeroWidthEscape]", "\x1b]8;;\x1b\\"))
        if self.focus_on():
            parts += [sep, ("class:bottom-toolbar.key", "focus")]
        if self.show_tasks:
            parts += [sep, ("class:bottom-toolbar.key", "tasks ▾")]
        return parts

    def run_fullscreen(self) -> str:
        """`/tui fullscreen`: the same session in a full-screen prompt_toolkit application,
        until `/tui default` ("default") or the end of the session ("exit")."""
        from .fullscreen import Fullscreen

        console, rconsole = self.console, self.renderer.console
        fs = Fullscreen(self)
        self.fullscreen = fs
        self.console = self.renderer.console = fs.console
        try:
            result = fs.run()
        except Exception as e:  # noqa: BLE001 - never lose the session to the renderer
            result = "default"
            error = e
        else:
            error = None
        finally:
            self.fullscreen = None
            self.console, self.renderer.console = console, rconsole
        if error is not None:
            self.say(f"{theme.SYM_FAIL} the full-screen renderer stopped: {error}", "error")
        if result != "exit":
            self.say("renderer: default (back from full screen; the session continues)", "accent")
        return result

    def input_text(self) -> str:
        if self.fullscreen is not None:
            return self.fullscreen.input.text
        return self.input.session.default_buffer.text if self.input else ""

    def refs_fragments(self) -> list:
        """The indicator line above the status line: one entry per @reference and pasted image."""
        text = self.input_text()
        if "@" not in text:
            return []
        found = refs.find(text)
        if not found:
            return []
        parts: list = [("class:bottom-toolbar.sep", " ")]
        cwd = self.cwd()
        for ref in found:
            kind, label = refs.describe(ref, cwd)
            if kind == "image":
                n = self.image_number(ref, cwd)
                label = f"🖼 image{f' {n}' if n else ''}: {label}"
            else:
                label = f"@ {label}"
            cls = "ref.missing" if kind == "missing" else "ref"
            parts += [(f"class:bottom-toolbar.{cls}", label), ("class:bottom-toolbar.sep", "  ")]
        parts.append(("", "\n"))
        return parts

    def image_number(self, ref: str, cwd: str) -> int:
        full = os.path.realpath(os.path.join(cwd, os.path.expanduser(ref)))
        for i, path in enumerate(self.images, 1):
            if os.path.realpath(path) == full:
                return i
        return 0

    def prompt_fragments(self):
        if self.shell_mode:
            return [("class:prompt.shell", "! ")]
        if self.status.get("mode") == "plan":
            return [("class:prompt.plan", "plan › ")]
        return [("class:prompt", "› ")]

    # -- start ----------------------------------------------------------------------------

    def banner(self) -> None:
        """A short boxed banner, written as plain ANSI: rich is not loaded before the first
        prompt (startup time)."""
        import sys

        from prompt_toolkit.utils import get_cwidth

        st = self.status
        version = self.version or str(st.get("version") or "") or _package_version()
        mode = str(st.get("mode") or "?")
        where = self.cwd() + (f"  ⎇ {self.branch}" if self.branch else "")
        mode_rest = f" · role {st.get('role') or '?'}"
        if self.input and self.input.vim:
            mode_rest += " · vim keys"
        colour = not (os.environ.get("NO_COLOR") or self._theme == "mono")

        def c(code: str, text: str) -> str:
            return f"\x1b[{code}m{text}\x1b[0m" if colour and text else text

        mode_code = {"plan": "1;33", "yolo": "1;31"}.get(mode, "1;32")
        rows = [  # (plain text, coloured text)
            (f"yuyao {version}", c("1;36", "yuyao") + c("2", f" {version}")),
            (f"model  {st.get('model') or '?'}", c("2", "model  ") + str(st.get("model") or "?")),
            (f"cwd    {where}", c("2", "cwd    ") + where),
            (f"mode   {mode}{mode_rest}", c("2", "mode   ") + c(mode_code, mode) + mode_rest),
            (BANNER_HINT, c("2", BANNER_HINT)),
        ]
        try:
            cols = os.get_terminal_size(sys.stdout.fileno()).columns
        except OSError:
            cols = 80
        limit = max(cols - 4, 20)
        width = min(max(get_cwidth(plain) for plain, _ in rows), limit)
        out = [c("36", "╭" + "─" * (width + 2) + "╮")]
        for plain, coloured in rows:
            w = get_cwidth(plain)
            if w > width:  # too long for the terminal: plain and cut
                coloured = plain
                while get_cwidth(coloured) > width - 1:
                    coloured = coloured[:-1]
                coloured += "…"
                w = get_cwidth(coloured)
            out.append(c("36", "│ ") + coloured + " " * (width - w) + c("36", " │"))
        out.append(c("36", "╰" + "─" * (width + 2) + "╯"))
        sys.stdout.write("\n".join(out) + "\n")
        sys.stdout.flush()

    def where_we_left_off(self) -> None:
        """On --continue / --resume: the core's one-line recap (`/recap`), when it has one."""
        if not any(self.options.get(k) for k in ("resume", "continue", "continue_session")):
            return
        self.show_last_exchanges()
        # "On returning after a while" (spec §5.7): a recap is a model call, so a quick
        # resume does not pay for one.
        try:
            idle = json.loads(self.session.status_json()).get("resumed_idle_s")
        except Exception:  # noqa: BLE001 - no idle figure: no recap
            idle = None
        if idle is None or idle < RECAP_AFTER_S:
            return
        try:
            recap = str(self.session.dispatch("/recap") or "").strip()
        except Exception:  # noqa: BLE001 - no recap in this build: nothing to show
            return
        if recap:
            self.say(f"↺ where we left off: {recap.splitlines()[0]}", "accent")

    def show_last_exchanges(self) -> None:
        """The restored conversation's last exchanges, compact."""
        try:
            messages = json.loads(self.session.messages_json())
        except Exception:  # noqa: BLE001 - nothing to show
            return
        from .resume import render

        shown = render(messages)
        if shown is not None:
            self.console.print(shown)
            self.console.print()

    def load_commands(self) -> None:
        table = self.command_table()
        if table:
            names = {}
            for c in table:
                for n in [c.get("name"), *(c.get("aliases") or [])]:
                    if n:
                        names[f"/{n}"] = str(c.get("help") or "")
            names.update(UI_COMMANDS)
            self.commands = names
            return
        names: dict[str, str] = {}
        try:
            text = self.session.dispatch("/help") or ""
        except Exception:  # noqa: BLE001
            text = ""
        for line in text.splitlines():
            if not line.strip().startswith("/"):  # rows of the table start with the name
                continue
            head = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            found = re.findall(r"(?<![\w/])/[a-z][a-z0-9_:-]*", head)
            desc = line
            for name in found:
                desc = desc.replace(name, "", 1)
            desc = re.sub(r"\(\s*\)|`\s*`", "", desc)
            desc = re.sub(r"\s+", " ", desc).strip(" \t-–—:|,")
            for name in found:
                names.setdefault(name, desc)
        if not names:
            names = {name: "" for name in FALLBACK_COMMANDS}
        names.update(UI_COMMANDS)  # handled here, in the terminal
        self.commands = names

    # -- main loop ------------------------------------------------------------------------

    def run(self) -> int:
        try:
            self.session = self.session_factory(json.dumps(self.options), self.handler)
        except ValueError as e:  # invalid options: a usage error
            self.console.print(Text(f"{theme.SYM_FAIL} {e}", "error"))
            return 2
        except Exception as e:  # noqa: BLE001 - say it plainly, no traceback
            self.console.print(Text(f"{theme.SYM_FAIL} could not start the session: {e}", "error"))
            return 1
        self.refresh_status()
        from . import status as gitstatus
        from .input import InputBox, history_file

        self.branch = gitstatus.git_branch(self.cwd())
        self.input = InputBox(self, history_file(self.cwd(), self.options), vim=self.vim_wanted())
        self.apply_theme()
        self.banner()
        from .trust import offer_trust

        offer_trust(self.console, self.session, self.keys)
        self.load_commands()
        self.pr = gitstatus.PrWatcher(self.cwd, on_change=self.refresh_toolbar)
        if self.branch:  # a PR needs a branch; outside git there is nothing to ask gh
            self.pr.start()
        self.where_we_left_off()
        self.keys.guard_typeahead()
        try:
            while not self.status.get("exit_requested"):
                if self.want_fullscreen:
                    self.want_fullscreen = False
                    if self.run_fullscreen() == "exit":
                        break
                    continue
                try:
                    line = self.input.read(self.pending_draft)
                    self.pending_draft = ""
                except EOFError:
                    break
                except KeyboardInterrupt:
                    continue
                if line.strip() or self.shell_mode:
                    self.handle_line(line)
        except ForceQuit:
            self.console.print(Text("quit while a turn was still running", "warn"))
            return 130
        finally:
            self.keys.disable()
            self.keys.restore_terminal()
            try:
                self.session.close()
            except Exception:  # noqa: BLE001
                pass
        return 0

    def handle_line(self, line: str) -> None:
        stripped = line.strip()
        if self.shell_mode:
            if stripped == "!":
                self.shell_mode = False
                self.console.print(Text("left shell mode", "muted"))
            elif stripped:
                self.run_shell(stripped)
            return
        if stripped == "!":
            self.shell_mode = True
            self.console.print(Text("shell mode: lines run in a subshell; ! to leave", "muted"))
            return
        if stripped.startswith("!"):
            self.run_shell(stripped[1:].strip())
            return
        if stripped.startswith("/"):
            self.slash(stripped)
            return
        self.show_refs(line)
        self.suggestion = ""
        answers = len(self.renderer.answers)
        self.run_turn(lambda: self.session.chat(line), steer=True)
        self.after_chat(answers)
        self.plan_gate()

    def plan_state(self) -> dict:
        getter = getattr(self.session, "plan_json", None)
        if not callable(getter):
            return {}
        try:
            state = json.loads(getter())
        except Exception:  # noqa: BLE001
            return {}
        return state if isinstance(state, dict) else {}

    def plan_gate(self) -> None:
        """The approval gate, when a validated plan waits: Execute / Auto-accept edits / Edit /
        Keep planning / Cancel. The core decides; this only picks the command."""
        state = self.plan_state()
        if not state.get("awaiting_approval") or self.keys.fd is None or self.fullscreen:
            return
        from .menu import choose

        title = (
            f"Plan ready: {state.get('title')} ({state.get('steps')} steps, {state.get('path')})"
        )
        used = float(self.status.get("context_percent") or 0)
        options = [
            "Execute",
            "Auto-accept edits",
            "Edit in $EDITOR",
            "Edit inline",
            # Seed 001: "clear context and implement", with the pre-reset usage.
            f"Clear context and execute (fresh thread; context: {used:.0f}% used)",
            "Keep planning",
            "Cancel",
        ]
        hint = (
            "↑/↓ move · Enter choose · Ctrl+E expand/collapse the plan · Ctrl+G $EDITOR · Esc keep"
        )
        while True:
            picked = choose(title, options, hint=hint, extra={"c-g": 2, "c-e": -1})
            if picked == -1:  # Ctrl+E: the full plan in the transcript, or collapsed
                self.renderer.toggle_plan()
                continue
            if picked in (2, 3):
                if picked == 2:
                    self.edit_plan_file(str(state.get("path") or ""))
                else:
                    self.edit_plan_inline(str(state.get("plan") or ""))
                state = self.plan_state()
                if not state.get("awaiting_approval"):
                    return
                continue
            break
        line = {
            0: "/plan approve",
            1: "/plan approve auto-edit",
            4: "/plan approve --fresh",
            6: "/plan cancel",
        }.get(picked if picked is not None else 5)
        if line is None:
            self.say("keep planning: say what to change (or type lgtm / /plan approve)", "info")
            return
        self.say(f"{theme.SYM_STEER} {line}", "muted")
        ok, value = self.run_turn(lambda: self.session.dispatch(line), steer=False)
        if ok and isinstance(value, str) and value.strip() in self.renderer.answers[-1:]:
            value = ""  # the implementation turn's answer is on screen already
        self.slash_result(line, ok, value)

    def edit_plan_file(self, path: str) -> None:
        """Edit at the gate: the plan file in $VISUAL/$EDITOR, then the core re-validates it."""
        import shlex
        import subprocess

        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            subprocess.run([*shlex.split(editor), path], check=False)
        except OSError as e:
            self.say(f"{theme.SYM_FAIL} cannot start {editor}: {e}", "error")
            return
        try:
            self.say(str(self.session.dispatch("/plan check")), "ok")
        except Exception as e:  # noqa: BLE001 - invalid: said, the gate stays
            self.say(f"{theme.SYM_FAIL} {e}", "error")

    def edit_plan_inline(self, plan: str) -> None:
        """Edit at the gate without leaving the terminal: a multi-line editor pre-filled with
        the plan (Esc Enter saves, Ctrl+C discards). The core validates the text and writes
        it only when valid; an invalid edit is reported and the valid plan stays."""
        from prompt_toolkit import prompt

        self.say("edit the plan: Esc Enter to save, Ctrl+C to discard", "muted")
        try:
            text = prompt("", default=plan, multiline=True)
        except (KeyboardInterrupt, EOFError):
            self.say("edit discarded; the plan is unchanged", "info")
            return
        if text.strip() == plan.strip():
            self.say("no change", "info")
            return
        try:
            self.say(str(self.session.plan_revise(text)), "ok")
        except Exception as e:  # noqa: BLE001 - invalid: said, the valid plan stays
            self.say(f"{theme.SYM_FAIL} {e}", "error")

    def after_chat(self, answers_before: int) -> None:
        """After a turn: the next-step suggestion, and in plan mode the answer is the plan
        that Ctrl+E expands (unless the core sent a plan of its own)."""
        r = self.renderer
        if len(r.answers) > answers_before and self.status.get("mode") == "plan":
            if not r.plan_from_core:
                r.plan = r.answers[-1]
                r.plan_expanded = True  # it was just shown in full
        predict = getattr(self.session, "next_step", None)
        try:  # predicted by the core from the session (edits, test runs, the answer, history)
            self.suggestion = str(predict() or "") if callable(predict) else ""
        except Exception:  # noqa: BLE001 - a suggestion is never worth an error
            self.suggestion = ""

    def show_refs(self, line: str) -> None:
        """The indicator for what the message references: @paths and pasted images."""
        found = refs.find(line)
        if not found:
            self.images.clear()
            return
        cwd = self.cwd()
        out = Text(f"{theme.SYM_STEER} referenced: ", "muted")
        for i, ref in enumerate(found):
            kind, label = refs.describe(ref, cwd)
            if kind == "image":
                n = self.image_number(ref, cwd)
                label = f"🖼 image{f' {n}' if n else ''} {label}"
            if i:
                out.append(" · ", "muted")
            out.append(label, "warn" if kind == "missing" else "accent")
        self.console.print(out)
        self.images.clear()

    # -- slash commands --------------------------------------------------------------------

    def slash(self, line: str) -> None:
        if self.slash_local(line):
            return
        ok, value = self.run_turn(lambda: self.session.dispatch(line), steer=False)
        if line.split()[0].lower() == "/plan":
            # `/plan <goal>` and `/plan approve` run a turn: its answer (the plan, the
            # implementation's report) was rendered by the turn already.
            shown = (self.renderer.plan, *(self.renderer.answers[-1:]))
            if ok and isinstance(value, str) and value.strip() in shown:
                value = ""
            self.slash_result(line, ok, value)
            self.plan_gate()
            return
        self.slash_result(line, ok, value)

    def slash_during_turn(self, line: str) -> None:
        """A slash command typed while a turn runs: the display commands here, the rest by the
        core, which runs queries at once, keeps switches for the end of the turn and refuses
        what would rewrite the running conversation."""
        name, _, rest = line.partition(" ")
        name = name.lower()
        if name in ("/focus", "/copy"):
            self.slash_local(line)
            return
        if name == "/tui":
            if rest.strip() == "fullscreen":
                self.want_fullscreen = True
                self.say("/tui fullscreen: applies after this turn", "accent")
            else:
                self.cmd_tui(rest.strip())
            return
        if name == "/help" and not rest.strip() and self.print_help():
            return
        try:
            out = self.session.dispatch(line)
        except Exception as e:  # noqa: BLE001 - an unknown or refused command is said, not sent
            self.slash_result(line, False, e)
            return
        self.slash_result(line, True, out)

    def rewind_menu(self) -> bool:
        """Esc Esc / `/rewind`: pick a checkpoint, then what to restore (the core's
        `/rewind <n> <what>` does it). False when there is no terminal to drive a menu or the
        core cannot list checkpoints: the text listing is shown instead."""
        getter = getattr(self.session, "rewind_points_json", None)
        if not callable(getter) or self.keys.fd is None or self.fullscreen is not None:
            return False  # full screen: the menu would be an application inside one
        try:
            points = [p for p in json.loads(getter()) if isinstance(p, dict)]
        except Exception as e:  # noqa: BLE001
            self.say(f"{theme.SYM_FAIL} {e}", "error")
            return True
        if not points:
            self.say("no checkpoints yet: every prompt you send becomes one", "info")
            return True
        from .menu import choose

        rows = [rewind_row(p) for p in points]
        picked = choose("Rewind to before which prompt?", rows, default=len(rows) - 1)
        if picked is None:
            self.say("rewind cancelled", "muted")
            return True
        point = points[picked]
        actions = rewind_actions(point)
        how = choose(f"Checkpoint {point['id']}: {rows[picked]}", [a for a, _ in actions])
        what = actions[how][1] if how is not None else None
        if what is None:
            self.say("rewind cancelled", "muted")
            return True
        line = f"/rewind {point['id']} {what}"
        self.say(f"{theme.SYM_STEER} {line}", "muted")
        ok, value = self.run_turn(lambda: self.session.dispatch(line), steer=False)
        self.slash_result(line, ok, value)
        if ok and what in ("both", "conversation"):
            self.pending_draft = str(point.get("prompt") or "")  # to edit and send again
        return True

    def print_help(self) -> bool:
        """/help as grouped tables that fit the terminal; False when the core has no table."""
        table = self.command_table()
        if not table:
            return False
        from .helpview import render_help

        self.console.print(render_help(table, self.console.size.width))
        return True

    def command_table(self) -> list[dict]:
        getter = getattr(type(self.session), "command_table_json", None)
        if not callable(getter):
            return []
        try:
            table = json.loads(getter())
        except Exception:  # noqa: BLE001 - the text /help is the fallback
            return []
        custom = getattr(self.session, "custom_command_table_json", None)
        if callable(custom) and isinstance(table, list):
            try:  # commands/*.md, read by the core now: a file dropped in is listed at once
                table = table + json.loads(custom())
            except Exception:  # noqa: BLE001 - the built-ins still list
                pass
        return [c for c in table if isinstance(c, dict)] if isinstance(table, list) else []

    def slash_local(self, line: str) -> bool:
        """The commands this terminal handles itself; True when `line` was one of them."""
        name, _, rest = line.partition(" ")
        name = name.lower()
        if name == "/focus":
            self.renderer.focus = not self.renderer.focus
            on = self.renderer.focus
            self.console.print(
                Text(
                    "focus view on: prompts, a summary of tool calls and final answers"
                    if on
                    else "focus view off: full transcript",
                    "accent",
                )
            )
            return True
        if name == "/tui":
            self.cmd_tui(rest.strip())
            return True
        if name == "/copy":
            self.cmd_copy(rest.strip())
            return True
        if name == "/help" and not rest.strip():
            return self.print_help()
        if name in ("/rewind", "/checkpoint") and not rest.strip():
            return self.rewind_menu()
        if name == "/memory":
            from .editor import open_memory_in_editor

            return open_memory_in_editor(self, rest)
        if name in ("/config", "/settings") and not rest.strip():
            if self.fullscreen is not None:
                return False  # the listing; the interactive view needs the default renderer
            from .settings import settings_view

            settings_view(self)
            return True
        return False

    def slash_result(self, line: str, ok: bool, value: Any) -> None:
        name = line.partition(" ")[0].lower()
        if not ok:
            msg = str(value)
            unknown = "unknown" in msg.lower()
            if unknown or (self.commands and name not in self.commands):
                text = msg if unknown else f"unknown command {name}: {msg}"
                self.console.print(Text(f"{theme.SYM_FAIL} {text}", "error"))
                if "/help" not in text:
                    self.console.print(Text("  /help lists the commands", "muted"))
            else:
                self.console.print(Text(f"{theme.SYM_FAIL} {msg}", "error"))
            return
        if isinstance(value, str) and value.strip():
            self.console.print(Text(value.rstrip()))
        if name in ("/config", "/settings", "/vim"):
            self.after_config_change()

    def apply_theme(self, announce: bool = False) -> None:
        """The `theme` setting: dark (default), light (light-background code colours) or
        mono (no colour at all)."""
        name = self.config_value("theme") or "dark"
        if name == getattr(self, "_theme", "dark"):
            return
        self._theme = name
        if self._console is not None or name == "mono":
            self.console.no_color = name == "mono"
        theme.CODE_THEME = "default" if name == "light" else "monokai"
        if self.input:
            from prompt_toolkit.output import ColorDepth

            self.input.session.color_depth = ColorDepth.MONOCHROME if name == "mono" else None
        if announce:
            self.say(f"theme: {name}", "accent")

    def after_config_change(self) -> None:
        """A setting changed: apply the ones the terminal itself renders (editor mode, theme)."""
        self.apply_theme(announce=True)
        if self.input:
            want = self.vim_wanted()
            if want != self.input.vim:
                self.input.set_vim(want)
                self.say(f"editor mode: {'vim' if want else 'default'}", "accent")

    def cmd_tui(self, arg: str) -> None:
        if arg in ("", "default"):
            if self.fullscreen is not None:
                self.fullscreen.leave("default")
            else:
                self.say("renderer: default (inline, scrollback preserved)", "accent")
        elif arg == "fullscreen":
            if self.fullscreen is not None:
                self.say("renderer: fullscreen (already on)", "accent")
            else:
                self.want_fullscreen = True
        else:
            self.console.print(Text(f"{theme.SYM_FAIL} usage: /tui <default|fullscreen>", "error"))

    def cmd_copy(self, arg: str) -> None:
        try:
            import shlex

            words = shlex.split(arg)
        except ValueError as e:
            self.console.print(Text(f"{theme.SYM_FAIL} /copy: {e}", "error"))
            return
        nth, block, out = 1, None, None
        i = 0
        try:
            while i < len(words):
                w = words[i]
                if w in ("--block", "-b"):
                    block = int(words[i + 1])
                    i += 2
                elif w in ("--out", "-o", ">"):
                    out = words[i + 1]
                    i += 2
                else:
                    nth = int(w)
                    i += 1
        except (ValueError, IndexError):
            self.console.print(
                Text(f"{theme.SYM_FAIL} usage: /copy [N] [--block K] [--out FILE]", "error")
            )
            return
        from . import clipboard

        answers = self.renderer.answers
        if not answers or not 1 <= nth <= len(answers):
            self.console.print(Text(f"{theme.SYM_WARN} no answer #{nth} to copy yet", "warn"))
            return
        text = answers[-nth]
        blocks = clipboard.code_blocks(text)
        what = "answer"
        if block is not None:
            if not 1 <= block <= len(blocks):
                self.console.print(
                    Text(f"{theme.SYM_FAIL} that answer has {len(blocks)} code block(s)", "error")
                )
                return
            text, what = blocks[block - 1], f"code block {block}"
        if out:
            path = os.path.join(self.cwd(), os.path.expanduser(out))
            try:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
            except OSError as e:
                self.console.print(Text(f"{theme.SYM_FAIL} could not write {path}: {e}", "error"))
                return
            self.console.print(Text(f"{theme.SYM_OK} wrote the {what} to {path}", "ok"))
            return
        certain, how = clipboard.copy_text(text)
        if certain:
            self.console.print(
                Text(f"{theme.SYM_OK} copied the {what} ({len(text)} chars) via {how}", "ok")
            )
        elif how:
            self.console.print(
                Text(
                    f"{theme.SYM_WARN} sent the {what} to your terminal's clipboard ({how}); "
                    "no clipboard program was found, so this works only if the terminal "
                    "supports OSC 52 — /copy … --out FILE writes it to a file instead",
                    "warn",
                )
            )
        else:
            self.console.print(
                Text(
                    f"{theme.SYM_FAIL} no clipboard is reachable from here; use /copy … --out FILE",
                    "error",
                )
            )
        if blocks and block is None:
            self.console.print(
                Text(f"  it has {len(blocks)} code block(s): /copy {nth} --block K", "muted")
            )

    # -- key-bound actions (run inside prompt_toolkit's run_in_terminal) -------------------

    def config_value(self, key: str) -> str:
        """A configuration value as the core shows it ("" when unset or unreadable)."""
        try:
            return str(self.session.dispatch(f"/config get {key}") or "").strip().strip('"')
        except Exception:  # noqa: BLE001
            return ""

    def vim_wanted(self) -> bool:
        from .vim import editor_mode_from

        for key in ("ui.editor_mode", "editor.mode"):
            value = self.config_value(key)
            if value:
                return editor_mode_from(value) == "vim"
        return False

    def refresh_toolbar(self) -> None:
        if self.input:
            self.input.invalidate()
        if self.fullscreen:
            self.fullscreen.invalidate()

    def say(self, text: str, style: str = "muted") -> None:
        self.console.print(Text(text, style))

    def tasks(self) -> list:
        """The core's task list (empty until the core has a todo list to give)."""
        getter = getattr(self.session, "tasks_json", None)
        if not callable(getter):
            return []
        try:
            tasks = json.loads(getter())
        except Exception:  # noqa: BLE001
            return []
        return [t for t in tasks if isinstance(t, dict)] if isinstance(tasks, list) else []

    def toggle_tasks(self) -> None:
        """Ctrl+T: show or hide the task list."""
        self.show_tasks = not self.show_tasks
        if self.fullscreen is not None:  # a panel there, not printed lines
            self.fullscreen.invalidate()
            return
        if not self.show_tasks:
            self.say("task list hidden (Ctrl+T shows it)")
            return
        self.print_tasks()

    def print_tasks(self) -> None:
        tasks = self.tasks()
        if not tasks:
            self.say(
                f"{theme.SYM_INFO} no task list in this session (the agent has not made one; "
                "Ctrl+T hides this)",
                "info",
            )
            return
        self.say("task list", "accent")
        from .tasks import task_line

        done = sum(1 for t in tasks if isinstance(t, dict) and t.get("status") == "completed")
        for t in tasks:
            if not isinstance(t, dict):
                continue
            st = str(t.get("status") or "pending")
            style = {"completed": "ok", "in_progress": "accent", "blocked": "warn"}.get(
                st, "default"
            )
            self.say(task_line(t), style)
        self.console.print(self.renderer.progress_bar(done, len(tasks), "tasks"))

    def toggle_plan_preview(self) -> None:
        """Ctrl+E: expand or collapse the latest plan (or preview)."""
        self.renderer.toggle_plan()

    def background_command(self, running: str = "") -> None:
        """Ctrl+B: move the running bash command to the background."""
        op = getattr(self.session, "background_running", None)
        if not running:
            self.say("Ctrl+B: no command is running")
            return
        if callable(op):
            try:
                out = op()
            except Exception as e:  # noqa: BLE001
                self.say(f"{theme.SYM_FAIL} could not move it to the background: {e}", "error")
                return
            if out is False:
                self.say("Ctrl+B: the command had already finished", "warn")
                return
            self.say(f"{theme.SYM_OK} moved to the background (see /tasks)", "ok")
            return
        self.say(
            f"{theme.SYM_WARN} moving a running command to the background is not available in "
            f"this build; `{running}` keeps running (Esc stops the turn)",
            "warn",
        )

    def kill_subagents(self) -> None:
        """Ctrl+X Ctrl+K, pressed twice: stop every background sub-agent of this session."""
        now = time.monotonic()
        if now - self.kill_armed > 3.0:
            self.kill_armed = now
            self.say(
                f"{theme.SYM_WARN} press Ctrl+X Ctrl+K again to stop all background sub-agents",
                "warn",
            )
            return
        self.kill_armed = 0.0
        op = getattr(self.session, "kill_subagents", None)
        if callable(op):
            try:
                out = op()
            except Exception as e:  # noqa: BLE001
                self.say(f"{theme.SYM_FAIL} {e}", "error")
                return
            self.say(f"{theme.SYM_OK} {out or 'background sub-agents stopped'}", "ok")
            return
        self.say(
            f"{theme.SYM_INFO} no background sub-agents to stop: this build does not run "
            "background sub-agents",
            "info",
        )

    def steer_idle(self) -> None:
        """Ctrl+S at the prompt: there is no running turn to steer."""
        self.say("Ctrl+S steers a running turn; nothing is running now — Enter sends the message")

    def paste_clipboard(self) -> str:
        """Ctrl+V: an image from the clipboard becomes an @reference (with an indicator);
        text is returned to be inserted."""
        from . import clipboard
        from .input import yuyao_home

        kind, value, how = clipboard.paste(str(yuyao_home(self.options) / "pastes"))
        if kind == "text":
            return value
        if kind == "none":
            run_in_terminal_safe(lambda: self.say(f"{theme.SYM_WARN} Ctrl+V: {value}", "warn"))
            return ""
        self.images.append(value)
        n = len(self.images)
        size = os.path.getsize(value)
        run_in_terminal_safe(
            lambda: self.say(
                f"🖼 image {n} taken in from the clipboard ({how}, {size} bytes): {value}", "accent"
            )
        )
        return f"@{value} "

    def toggle_plan(self) -> None:
        """Shift+Tab: the next permission mode of ask -> auto-edit -> plan (-> yolo, once the
        user has used yolo in this session), like Claude Code's default -> accept edits ->
        plan. Shown by the status bar alone: no line is printed per press."""
        current = self.status.get("mode")
        if current == "yolo":
            self.yolo_in_cycle = True
        order = ["ask", "auto-edit", "plan"] + (["yolo"] if self.yolo_in_cycle else [])
        nxt = order[(order.index(current) + 1) % len(order)] if current in order else "ask"
        cmd = "/plan" if nxt == "plan" else f"/mode {nxt}"
        try:
            self.session.dispatch(cmd)
        except ValueError as e:
            self.console.print(Text(f"{theme.SYM_FAIL} {e}", "error"))
        self.refresh_status()

    def tab_plan(self) -> None:
        """Tab on an empty composer: into planning, or out of it to the mode it came from."""
        cmd = "/plan off" if self.status.get("mode") == "plan" else "/plan"
        try:
            self.session.dispatch(cmd)
        except ValueError as e:
            self.console.print(Text(f"{theme.SYM_FAIL} {e}", "error"))
        self.refresh_status()

    def cycle_thinking(self, toggle: bool = True) -> None:
        """Alt+T: collapsed <-> expanded (from off: collapsed), through /show-thinking."""
        current = self.renderer.show_thinking
        if toggle:
            nxt = "expanded" if current == "collapsed" else "collapsed"
        else:
            nxt = current
        try:
            self.session.dispatch(f"/show-thinking {nxt}")
            self.local_thinking = None
        except ValueError:
            # The core refused the switch: keep it as a display-only setting of this terminal.
            self.local_thinking = nxt
        self.renderer.show_thinking = nxt
        self.refresh_status()
        self.renderer.show_thinking = self.local_thinking or nxt
        self.console.print(Text(f"thinking display: {self.renderer.show_thinking}", "muted"))

    # -- shell ---------------------------------------------------------------------------

    def run_shell(self, cmd: str) -> None:
        """`!cmd`: the core's user_shell op when it has one, else a subshell here."""
        if not cmd:
            return
        op = getattr(self.session, "user_shell", None)
        if callable(op):
            ok, value = self.run_turn(lambda: op(cmd), steer=False)
            if not ok:
                self.console.print(Text(f"{theme.SYM_FAIL} {value}", "error"))
            elif isinstance(value, str) and value.strip():
                self.console.print(Text(value.rstrip()))
            return
        self.console.print(Text(f"$ {cmd}", "muted"))
        try:
            import subprocess

            self.keys.restore_terminal()  # the subshell gets the terminal as the user set it
            proc = subprocess.Popen(cmd, shell=True, cwd=self.cwd())
        except OSError as e:
            self.keys.guard_typeahead()
            self.console.print(Text(f"{theme.SYM_FAIL} {e}", "error"))
            return
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:  # the child got the SIGINT too; wait for it to end
                continue
        self.keys.guard_typeahead()
        if code == 0:
            self.console.print(Text(f"{theme.SYM_OK} exit 0", "ok"))
        else:
            self.console.print(Text(f"{theme.SYM_FAIL} exit {code}", "fail"))

    # -- requests ------------------------------------------------------------------------

    def answer_request(self, req: dict, keys: RawKeys | None) -> str:
        from . import prompts

        kind = req.get("type")
        keys = keys or self.keys
        if kind == "permission":
            return prompts.ask_permission(self.console, req, keys)
        if kind == "remember_candidate":
            return prompts.remember_candidate(self.console, req, keys)
        if kind == "limit_reached":  # seed 001: grant more, or stop
            kind, req = "ask_user", {"question": req.get("question"), "options": req.get("options")}
        if kind == "ask_user":
            was = keys.active
            keys.disable()
            try:
                return prompts.ask_user(self.console, req)
            finally:
                if was:
                    keys.enable()
        was = keys.active
        keys.disable()
        try:
            return prompts.ask_other(self.console, req)
        finally:
            if was:
                keys.enable()

    # -- turns ---------------------------------------------------------------------------

    def run_turn(self, fn: Callable[[], Any], steer: bool) -> tuple[bool, Any]:
        """Run fn (chat or dispatch) on a worker thread; render its events until it ends.

        Returns (True, value) or (False, exception)."""
        from .worker import turn_worker

        q, result, worker = turn_worker(fn)
        renderer = self.renderer
        renderer.start_turn(steer_enabled=steer and self.keys.fd is not None)
        view = renderer.view
        self.handler.queue = q
        self.handler.worker = worker
        from rich.live import Live

        live: Live | None = None
        started = time.monotonic()
        ctrl_c = 0
        answers_before = len(renderer.answers)

        def stop_live() -> None:
            nonlocal live
            if live is not None:
                live.stop()
                live = None

        def interrupt() -> None:
            nonlocal ctrl_c
            ctrl_c += 1
            if view.interrupting and ctrl_c >= 3:
                raise ForceQuit()
            view.interrupting = True
            try:
                self.session.interrupt()
            except Exception:  # noqa: BLE001
                pass

        try:
            self.keys.enable()
            worker.start()
            done = False
            while not done:
                try:
                    item = q.get(timeout=TICK)
                except queue.Empty:
                    item = None
                except KeyboardInterrupt:
                    interrupt()
                    continue
                while item is not None:
                    kind, payload, box = item
                    if kind == "done":
                        done = True
                    elif kind == "event":
                        renderer.handle(payload)
                    elif kind == "request":
                        stop_live()
                        renderer.flush_stream()
                        try:
                            box["answer"] = self.answer_request(payload, self.keys)
                        finally:
                            box["done"].set()
                    try:
                        item = q.get_nowait()
                    except queue.Empty:
                        item = None
                if done:
                    break
                for ev in self.keys.poll(0):
                    self._turn_key(ev, view, steer, interrupt)
                if live is None and time.monotonic() - started > LIVE_DELAY:
                    live = Live(
                        view,
                        console=self.console,
                        auto_refresh=False,
                        transient=True,
                        redirect_stdout=False,
                        redirect_stderr=False,
                        vertical_overflow="crop",
                    )
                    live.start()
                if live is not None:
                    live.refresh()
        finally:
            stop_live()
            self.keys.disable()
            self.handler.queue = None
            self.handler.worker = None
        self.pending_draft = view.draft  # typed but not sent: offered at the next prompt
        if self.thinking_toggled:
            self.thinking_toggled = False
            self.cycle_thinking(toggle=False)
        renderer.flush_stream()
        self.refresh_status()
        if "error" in result:
            err = result["error"]
            if isinstance(err, RuntimeError) and not renderer.error_shown:
                self.console.print(Text(f"{theme.SYM_FAIL} error: {err}", "error"))
            if steer:
                self.console.print()
            return False, err
        value = result.get("value")
        if steer:
            if isinstance(value, str) and value.strip() and len(renderer.answers) == answers_before:
                renderer.markdown(value)  # the core sent no events: show what chat returned
                renderer.answers.append(value.strip())
            self.console.print()
        return True, value

    def _turn_key(self, ev: tuple, view, steer: bool, interrupt: Callable[[], None]) -> None:
        kind = ev[0]
        if kind == "esc":
            interrupt()
        elif ev == ("alt", "t"):  # shown at once; the core is told when the turn ends
            new = "expanded" if self.renderer.show_thinking == "collapsed" else "collapsed"
            self.renderer.show_thinking = view.show_thinking = new
            self.thinking_toggled = not self.thinking_toggled
        elif ev == ("ctrl", "c"):
            if view.draft:
                view.draft = ""
            else:
                interrupt()
        elif ev == ("ctrl", "o"):
            self.renderer.show_transcript()
        elif ev == ("ctrl", "t"):
            self.toggle_tasks()
        elif ev == ("ctrl", "e"):
            self.toggle_plan_preview()
        elif ev == ("ctrl", "b"):
            self.background_command(self.renderer.running_command())
        elif ev == ("ctrl", "x"):
            self._ctrl_x = time.monotonic()
        elif ev == ("ctrl", "k") and time.monotonic() - getattr(self, "_ctrl_x", 0.0) < 2.0:
            self._ctrl_x = 0.0
            self.kill_subagents()
        elif ev == ("ctrl", "l"):
            self.console.clear()
        elif not steer:
            return
        elif kind == "char":
            view.draft += ev[1]
        elif kind == "backspace":
            view.draft = view.draft[:-1]
        elif ev == ("ctrl", "u"):
            view.draft = ""
        elif kind == "enter" or ev == ("ctrl", "s"):
            text = view.draft.strip()
            view.draft = ""
            if not text:
                return
            if text.startswith("/"):  # a command, never a message to the model
                self.slash_during_turn(text)
                return
            try:
                self.session.steer(text)
            except Exception as e:  # noqa: BLE001
                self.console.print(Text(f"{theme.SYM_FAIL} could not steer: {e}", "error"))
                return
            line = Text(f"{theme.SYM_STEER} {text}", "steer")
            line.append("  queued for the next model call", "muted")
            self.console.print(line)


def rewind_row(point: dict) -> str:
    """One checkpoint in the rewind menu: its prompt's first line, when, what came after."""
    prompt = " ".join(str(point.get("prompt") or "").split())
    if len(prompt) > 60:
        prompt = prompt[:59].rsplit(" ", 1)[0] + " …"
    n = int(point.get("changes_after") or 0)
    changes = f"{n} file change{'s' if n != 1 else ''} after" if n else "no file change after"
    where = "" if point.get("this_session", True) else f" · session {point.get('session')}"
    return f"{prompt!r}  · {str(point.get('time') or '')[5:16]} · {changes}{where}"


def rewind_actions(point: dict) -> list[tuple[str, str | None]]:
    """The second menu: what to restore (a checkpoint of another session has only its code)."""
    if not point.get("this_session", True):
        return [("Restore the code", "code"), ("Never mind", None)]
    return [
        ("Restore code and conversation", "both"),
        ("Restore the conversation", "conversation"),
        ("Restore the code", "code"),
        ("Summarize from here (replace what came after with a summary)", "summarize-from"),
        ("Summarize up to here (replace what came before with a summary)", "summarize-up-to"),
        ("Never mind", None),
    ]


def run_in_terminal_safe(fn: Callable[[], None]) -> None:
    """Print above the prompt when it is running, else print directly."""
    try:
        from prompt_toolkit.application import get_app_or_none, run_in_terminal

        if get_app_or_none() is not None:
            run_in_terminal(fn)
            return
    except ImportError:  # pragma: no cover
        pass
    fn()


def _package_version() -> str:
    try:
        import yuyao

        return str(yuyao.__version__)
    except (ImportError, AttributeError):
        return ""


def run_interactive(options: dict | None = None, *, session_factory: Callable | None = None) -> int:
    """Start the interactive TUI. Returns the process exit code.

    `session_factory(options_json, handler)` defaults to `yuyao._core.Session`."""
    keys = RawKeys()
    keys.guard_typeahead()  # from the first moment: a line typed during startup is submitted
    try:
        return _run_interactive(options, session_factory, keys)
    finally:
        keys.restore_terminal()


def _run_interactive(options: dict | None, session_factory: Callable | None, keys: RawKeys) -> int:
    console = None  # created at the first print: rich stays out of the startup path
    options = dict(options or {})
    missing = missing_model_settings(options)
    if missing:  # say it, then start anyway: slash commands work without a model
        console = theme.make_console()
        print_missing_model(console, missing)
    version = ""
    if session_factory is None:
        try:
            from yuyao import _core
        except ImportError as e:
            console = console or theme.make_console()
            console.print(Text(f"{theme.SYM_FAIL} the yuyao core is not installed ({e}).", "fail"))
            console.print("  Reinstall yuyao (./install.sh or pip install yuyao).")
            return 1
        session_factory = _core.Session
        version = str(getattr(_core, "VERSION", ""))
    app = App(console, options, session_factory, version, keys)
    try:
        return app.run()
    except KeyboardInterrupt:
        return 130
