"""Turning core events into terminal output.

`Renderer.handle(event)` is called on the main thread for every event of a turn. Finished
pieces (a reply, a tool block, a notice) are printed permanently; what is still in progress
(the streaming reply, the thinking counter, the spinner, the steering draft) lives in
`TurnView`, which the turn loop shows in a rich `Live` region below the printed output.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.padding import Padding
from rich.text import Text

from . import theme
from .mdstream import Lines, StreamView

PREVIEW_LINES = 4
THINKING_VISIBLE = ("collapsed", "expanded")


# --------------------------------------------------------------------------- arguments


def _canon(name: str) -> str:
    return (name or "").strip().lower().replace("_", "-")


def parse_arguments(arguments: Any) -> dict:
    """Tool arguments arrive as a dict or as the model's JSON text; always give a dict."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"_raw": arguments}
        return value if isinstance(value, dict) else {"_raw": arguments}
    return {}


def _first_line(text: str, limit: int = 100) -> str:
    lines = str(text).strip().splitlines() or [""]
    line = lines[0]
    more = len(lines) > 1
    if len(line) > limit:
        line, more = line[: limit - 1], True
    return line + (" …" if more else "")


def _lines(text: Any) -> int:
    text = str(text or "")
    return len(text.splitlines()) if text else 0


def diffstat(name: str, args: dict) -> str:
    """A short '+a -b' for tools that change files, '' otherwise."""
    n = _canon(name)
    if n == "write":
        return f"+{_lines(args.get('content'))} lines"
    edits: list = []
    if n == "edit":
        edits = [args]
    elif n in ("multi-edit", "multiedit"):
        edits = [e for e in args.get("edits") or [] if isinstance(e, dict)]
    elif n in ("apply-patch", "applypatch"):
        patch = str(args.get("patch") or args.get("input") or "")
        added = sum(
            1 for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")
        )
        removed = sum(
            1 for ln in patch.splitlines() if ln.startswith("-") and not ln.startswith("---")
        )
        return f"+{added} -{removed}"
    else:
        return ""
    added = sum(_lines(e.get("new_string")) for e in edits)
    removed = sum(_lines(e.get("old_string")) for e in edits)
    return f"+{added} -{removed}"


def summarize_arguments(name: str, arguments: Any) -> str:
    """One line saying what a tool call acts on: the command, the path, the pattern…"""
    args = parse_arguments(arguments)
    n = _canon(name)
    path = args.get("file_path") or args.get("path") or args.get("notebook_path")
    if n == "bash":
        return _first_line(args.get("command", ""), 120)
    if n in ("read", "write", "edit", "multi-edit", "multiedit", "notebook-edit", "read-media"):
        return str(path or "")
    if n in ("grep", "glob"):
        where = f"  in {path}" if path else ""
        return f"{args.get('pattern', '')}{where}"
    if n in ("apply-patch", "applypatch"):
        patch = str(args.get("patch") or args.get("input") or "")
        files = [
            ln.split(":", 1)[1].strip()
            for ln in patch.splitlines()
            if ln.startswith("*** ") and ":" in ln and " File:" in ln
        ]
        if not files:
            files = [ln[4:].strip() for ln in patch.splitlines() if ln.startswith("+++ ")]
        return ", ".join(files) or _first_line(patch, 80)
    if n == "lsp":
        where = str(path or "") + (f":{args['line']}" if args.get("line") else "")
        what = f"({args['query']})" if args.get("query") else ""
        return " ".join(p for p in (str(args.get("operation", "")), where, what) if p)
    for key in ("url", "query", "question", "description", "prompt", "command", "pattern"):
        if args.get(key):
            return _first_line(args[key], 100)
    if n == "todo" and isinstance(args.get("todos"), list):
        return f"{len(args['todos'])} items"
    if "_raw" in args:
        return _first_line(args["_raw"], 80)
    compact = json.dumps(args, ensure_ascii=False)
    return "" if compact == "{}" else _first_line(compact, 80)


def preview_output(output: Any, max_lines: int = PREVIEW_LINES, width: int = 100) -> Text:
    """The first lines of a tool's output, each cut to the width, dim."""
    text = str(output or "").rstrip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return Text("(no output)", style="tool.out")
    width = max(width, 20)
    shown = []
    for ln in lines[:max_lines]:
        ln = ln.expandtabs(4)
        shown.append(ln if len(ln) <= width else ln[: width - 1] + "…")
    result = Text("\n".join(shown), style="tool.out")
    if len(lines) > max_lines:
        result.append(f"\n… {len(lines) - max_lines} more lines (Ctrl+O to expand)", "muted")
    return result


def guess_lexer(detail: str, tool: str = "") -> str:
    """diff for diffs, bash for commands, plain text otherwise."""
    head = detail.lstrip()[:400]
    if (
        head.startswith(("--- ", "diff ", "@@", "*** Begin Patch", "Index: "))
        or "\n@@ " in detail
        or ("\n+++ " in detail and "\n--- " in "\n" + detail)
    ):
        return "diff"
    if _canon(tool) in ("bash", "shell", "monitor", "bg-stop"):
        return "bash"
    return "text"


# --------------------------------------------------------------------------- live view


def _spinner():
    from rich.spinner import Spinner  # deferred: not needed to show the first prompt

    return Spinner("dots", style="accent")


def bar(done: int, total: int, unit: str, width: int = 12) -> Text:
    """A determinate progress bar: ━━━━━━────── 3/7 unit."""
    total = max(total, 1)
    done = max(0, min(done, total))
    filled = round(width * done / total)
    out = Text("━" * filled, "accent")
    out.append("─" * (width - filled), "muted")
    out.append(f" {done}/{total} {unit}", "muted")
    return out


@dataclass
class TurnView:
    """What is in progress; rendered inside rich Live, refreshed by the turn loop."""

    show_thinking: str = "collapsed"
    status: str = "thinking…"
    started: float = field(default_factory=time.monotonic)
    stream: StreamView = field(default_factory=lambda: StreamView(theme.CODE_THEME))
    thinking: str = ""
    draft: str = ""
    steer_enabled: bool = True
    interrupting: bool = False
    extra: str = ""  # e.g. "ctx 12% · $0.0012"
    done: int = 0  # determinate progress: tool calls of this batch finished …
    total: int = 0  # … out of this many (0: unknown, no bar)
    unit: str = "tools"
    spinner: Any = None  # created at the first render (rich.spinner is not needed before)

    def _tail(self, text: str, console: Console, width: int, max_lines: int, style: str) -> Text:
        rendered = Text(text, style=style)
        lines = rendered.wrap(console, max(width, 10))
        if len(lines) > max_lines:
            lines = lines[-max_lines:]
        return Text("\n").join(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        height = console.size.height
        budget = max(height - 6, 3)
        parts: list = []
        if self.thinking and self.show_thinking == "collapsed":
            parts.append(Text(f"{theme.SYM_THINK} thinking… ({len(self.thinking)} chars)", "muted"))
        elif self.thinking and self.show_thinking == "expanded" and not self.stream:
            parts.append(self._tail(self.thinking, console, width, budget, "thinking"))
        if self.stream:  # Markdown as it arrives: settled blocks and the open tail
            parts.append(Lines(self.stream.lines(console, width, budget)))
        elapsed = int(time.monotonic() - self.started)
        label = "interrupting…" if self.interrupting else self.status
        line = Text(label, "accent")
        line.append(f"  {elapsed}s", "muted")
        if self.extra:
            line.append(f" · {self.extra}", "muted")
        if self.total > 1:
            line.append("  ")
            line.append_text(bar(self.done, self.total, self.unit))
        line.append("  esc to interrupt", "muted")
        if self.spinner is None:
            self.spinner = _spinner()
        self.spinner.text = line
        parts.append(self.spinner)
        if self.steer_enabled:
            if self.draft:
                steer = Text(f"{theme.SYM_STEER} steer › ", "steer")
                steer.append(self.draft)
                steer.append(theme.SYM_CURSOR, "accent")
                steer.append("  enter to queue", "muted")
            else:
                steer = Text("  type to steer the running turn · enter queues it", "muted")
            parts.append(steer)
        yield Group(*parts)


# --------------------------------------------------------------------------- renderer


@dataclass
class TurnRecord:
    """What the last turn produced, for Ctrl+O (transcript) and /copy."""

    thinking: list = field(default_factory=list)
    tools: list = field(default_factory=list)  # (name, summary, ok, output)


class Renderer:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.show_thinking = "collapsed"
        self.focus = False
        self.view = TurnView()
        self.answers: list[str] = []  # every final answer, oldest first (for /copy)
        self.record = TurnRecord()
        self._tools: dict[str, tuple[str, str]] = {}
        self._last_tool_id: str | None = None
        self._printed_text = ""
        self._turn_text = ""
        self.usage: dict = {}
        self._focus_line: Text | None = None
        self.error_shown = False  # an error was already printed in this turn
        self._last_intent = ""  # one intent line per tool batch
        self.plan = ""  # the latest plan the core proposed (Ctrl+E)
        self.plan_expanded = False
        self.plan_from_core = False
        self._running: dict[str, str] = {}  # tool id -> command, for Ctrl+B

    # -- printing helpers ---------------------------------------------------------------

    def print(self, *objects: Any, **kw: Any) -> None:
        self.console.print(*objects, **kw)

    def markdown(self, text: str) -> None:
        from rich.markdown import Markdown  # deferred: not needed to show the first prompt

        self.print(Markdown(text, code_theme=theme.CODE_THEME))

    def notice(self, level: str, text: str) -> None:
        if level == "error":
            self.error_shown = True
            self.print(Text(f"{theme.SYM_FAIL} {text}", "error"))
        elif level == "warning":
            self.print(Text(f"{theme.SYM_WARN} {text}", "warn"))
        else:
            self.print(Text(f"{theme.SYM_INFO} {text}", "info"))

    # -- turn lifecycle -------------------------------------------------------------------

    def start_turn(self, steer_enabled: bool = True) -> None:
        self.view = TurnView(show_thinking=self.show_thinking, steer_enabled=steer_enabled)
        self.view.extra = self._usage_text()
        self.record = TurnRecord()
        self._tools = {}
        self._last_tool_id = None
        self._printed_text = ""
        self._turn_text = ""
        self.error_shown = False
        self._running = {}

    def _usage_text(self) -> str:
        if not self.usage:
            return ""
        ctx = self.usage.get("context_percent")
        cost = self.usage.get("session_cost_usd")
        bits = []
        if ctx is not None:
            bits.append(f"ctx {float(ctx):.0f}%")
        if cost is not None:
            bits.append(f"${float(cost):.4f}")
        return " · ".join(bits)

    def handle(self, event: dict) -> None:
        kind = event.get("type")
        view = self.view
        if kind == "model_call":
            view.status = "thinking…"
        elif kind == "text_delta":
            view.stream.feed(str(event.get("text", "")))
            view.status = "writing…"
        elif kind == "thinking_delta":
            view.thinking += str(event.get("text", ""))
            view.status = "thinking…"
        elif kind == "assistant_message":
            self._finish_message(event)
        elif kind == "intent":
            self._intent(event)
        elif kind == "tool_begin":
            self._tool_begin(event)
        elif kind == "verification":
            self._verification(event)
        elif kind == "completion":
            self._completion(event)
        elif kind == "tool_end":
            self._tool_end(event)
        elif kind == "agent":
            self._agent(event)
        elif kind == "usage":
            self.usage = event
            view.extra = self._usage_text()
        elif kind == "notice":
            self.flush_stream()
            self.notice(str(event.get("level", "info")), str(event.get("text", "")))
        elif kind == "turn_end":
            self._turn_end(event)
        elif kind in ("plan_proposed", "plan"):
            self._plan(event)
        elif kind == "progress":  # {"done", "total", "label"} from the core
            view.done = int(event.get("done") or 0)
            view.total = int(event.get("total") or 0)
            view.unit = str(event.get("label") or "steps")

    def _plan(self, event: dict) -> None:
        self.flush_stream()
        self.plan = str(event.get("plan") or event.get("text") or "").strip()
        if not self.plan:
            return
        self.plan_from_core = True
        if event.get("type") == "plan" and event.get("path"):
            # The core's validated plan: the whole markdown once in the transcript, then the
            # synopsis the approval gate shows (title, steps, files, verify commands).
            title = str(event.get("title") or _first_line(self.plan, 90))
            if event.get("approved"):
                self.print(Text(f"{theme.SYM_OK} plan approved: {title}", "ok"))
                return
            self.print(Text("── proposed plan ──", "muted"))
            self.markdown(self.plan)
            self._printed_text = self.plan  # the turn's answer is this plan: shown once
            self.print(Text(f"── saved to {event.get('path')} ──", "muted"))
            for line in plan_synopsis(event):
                self.print(Text(line, "info"))
            self.plan_expanded = True
            return
        first = _first_line(self.plan, 90)
        self.print(Text(f"{theme.SYM_INFO} plan proposed: {first}  (Ctrl+E to expand)", "info"))
        self.plan_expanded = False

    def toggle_plan(self) -> None:
        """Ctrl+E: expand or collapse the latest plan."""
        if not self.plan:
            self.print(
                Text(
                    f"{theme.SYM_INFO} no plan or preview in this session yet "
                    "(plan mode: Shift+Tab; Ctrl+E expands a proposed plan)",
                    "info",
                )
            )
            return
        self.plan_expanded = not self.plan_expanded
        if self.plan_expanded:
            self.print(Text("── plan ──", "muted"))
            self.markdown(self.plan)
            self.print(Text("── (Ctrl+E collapses) ──", "muted"))
        else:
            self.print(Text(f"plan collapsed: {_first_line(self.plan, 90)}", "muted"))

    def running_command(self) -> str:
        """The bash command running now ('' when none), for Ctrl+B."""
        return next(iter(self._running.values()), "")

    def progress_bar(self, done: int, total: int, unit: str) -> Text:
        return bar(done, total, unit)

    def flush_stream(self) -> None:
        """Print whatever is still streaming (used before anything else is printed)."""
        view = self.view
        if view.thinking:
            self._print_thinking(view.thinking)
            view.thinking = ""
        if view.stream.text.strip():
            self._print_answer(view.stream.text)
        view.stream = StreamView(theme.CODE_THEME)

    def _print_thinking(self, thinking: str) -> None:
        self.record.thinking.append(thinking)
        if self.focus or self.show_thinking not in THINKING_VISIBLE:
            return
        if self.show_thinking == "expanded":
            self.print(Padding(Text(thinking.strip(), "thinking"), (0, 0, 0, 2)))
        else:
            self.print(
                Text(
                    f"{theme.SYM_THINK} thought · {len(thinking)} chars (Ctrl+O to expand)",
                    "muted",
                )
            )

    def _print_answer(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        self._printed_text = text
        self._turn_text = text
        self.markdown(text)

    def _finish_message(self, event: dict) -> None:
        self._last_intent = ""
        view = self.view
        n = int(event.get("tool_calls") or 0)
        view.done, view.total, view.unit = 0, n, "tools"
        thinking = str(event.get("thinking") or view.thinking or "")
        text = str(event.get("text") or view.stream.text or "")
        view.thinking = ""
        view.stream = StreamView(theme.CODE_THEME)
        if thinking.strip():
            self._print_thinking(thinking)
        if self.focus and int(event.get("tool_calls") or 0) > 0:
            self._turn_text = text.strip() or self._turn_text
            return
        self._print_answer(text)

    def _intent(self, event: dict) -> None:
        """The batch's one-line "why", above its calls; a batch without one says so."""
        self.flush_stream()
        text = str(event.get("text") or "").strip()
        if self.focus or not text:
            return
        self._last_intent = text
        if not event.get("stated"):
            self.print(Text(f"{theme.SYM_INTENT} {text}", "warn"))
        elif text != self._printed_text:
            self.print(Text(f"{theme.SYM_INTENT} {text}", "intent"))

    def _verification(self, event: dict) -> None:
        """The project's test/lint output, verbatim (head and tail when long)."""
        self.flush_stream()
        ok = bool(event.get("ok"))
        code = event.get("exit_code")
        head = f"{theme.SYM_OK if ok else theme.SYM_FAIL} verification `{event.get('command')}`"
        head += " passed" if ok else f" failed (exit {code})" if code is not None else " failed"
        self.print(Text(head, "ok" if ok else "fail"))
        output = str(event.get("output") or "").rstrip()
        if output:
            self.print(Padding(Text(output, "muted"), (0, 0, 0, 2)))

    def _completion(self, event: dict) -> None:
        """The turn's completion check, as a block after the answer."""
        self.flush_stream()
        problems = event.get("problems") or []
        check = event.get("check") or {}
        text = str(event.get("text") or "")
        if not problems and not check.get("files_changed") and not check.get("verification"):
            # Only commands ran, all clean: one quiet line instead of the block.
            n = len(check.get("commands") or [])
            text = f"{theme.SYM_OK} completion check: {n} command(s), nothing failing or skipped"
        self.print(Text(text, "warn" if problems else "muted"))

    def _tool_begin(self, event: dict) -> None:
        self.flush_stream()
        name = str(event.get("name", "tool"))
        summary = summarize_arguments(name, event.get("arguments"))
        stat = diffstat(name, parse_arguments(event.get("arguments")))
        tid = str(event.get("id", ""))
        self._tools[tid] = (name, summary)
        self._last_tool_id = tid
        if _canon(name) in ("bash", "shell"):
            self._running[tid] = summary
        self.view.status = f"running {name}…"
        intent = str(event.get("intent") or "").strip()
        if intent and not self.focus and intent not in (self._printed_text, self._last_intent):
            self._last_intent = intent
            self.print(Text(f"{theme.SYM_INTENT} {intent}", "intent"))
        line = Text("" if self.focus else f"{theme.SYM_TOOL} ", "tool")
        line.append(name, "tool")
        if summary:
            line.append("  ")
            line.append(summary, "tool.arg")
        if stat:
            line.append(f"  ({stat})", "muted")
        if not self.focus:
            self.print(line)
        else:
            self._focus_line = line  # printed with the outcome

    def _agent(self, event: dict) -> None:
        """A sub-agent's tool calls and notices, indented under the parent's task call."""
        inner = event.get("event") or {}
        pad = "  " * (int(event.get("depth") or 1) + 1)
        tag = f"[{event.get('agent')} {event.get('agent_id')}] "
        ikind = inner.get("type")
        if ikind == "tool_begin":
            self.flush_stream()
            name = str(inner.get("name", "tool"))
            summary = summarize_arguments(name, inner.get("arguments"))
            line = Text(f"{pad}↳ {tag}", "muted")
            line.append(name, "tool")
            if summary:
                line.append(f"  {summary}", "tool.arg")
            self.print(line)
        elif ikind == "tool_end" and not inner.get("ok"):
            first = (str(inner.get("output") or "").splitlines() or [""])[0]
            self.print(Text(f"{pad}  {theme.SYM_FAIL} {first[:160]}", "fail"))
        elif ikind == "notice":
            self.print(Text(f"{pad}{tag}{inner.get('text', '')}", "warn"))
        elif ikind == "turn_end":
            self.print(Text(f"{pad}{tag}{inner.get('status', '')}", "muted"))

    def _tool_end(self, event: dict) -> None:
        tid = str(event.get("id", ""))
        name, summary = self._tools.get(tid, (str(event.get("name", "tool")), ""))
        ok = bool(event.get("ok"))
        output = event.get("output", "")
        self.record.tools.append((name, summary, ok, str(output or "")))
        self.view.status = "thinking…"
        self._running.pop(tid, None)
        if self.view.total:
            self.view.done = min(self.view.done + 1, self.view.total)
        mark = Text(f"  {theme.SYM_OK} " if ok else f"  {theme.SYM_FAIL} ", "ok" if ok else "fail")
        if self.focus:
            line = self._focus_line or Text(name, "tool")
            self.print(Text.assemble(mark, line))
            self._focus_line = None
            return
        if tid != self._last_tool_id:
            mark.append(f"{name} ", "tool")
        width = self.console.size.width - 6
        preview = preview_output(output, PREVIEW_LINES, width)
        if not ok:
            preview.stylize("red")
        first, *rest = preview.split("\n", allow_blank=True)
        self.print(Text.assemble(mark, first))
        if rest:
            self.print(Padding(Text("\n").join(rest), (0, 0, 0, 4)))

    def _turn_end(self, event: dict) -> None:
        self.flush_stream()
        status = str(event.get("status", "completed"))
        text = str(event.get("text") or "").strip()
        if text and text != self._printed_text:
            self._print_answer(text)
        final = text or self._turn_text
        if final:
            self.answers.append(final)
        if status == "interrupted":
            self.print(Text("⏹ interrupted", "warn"))
        elif status == "limits_exceeded":
            self.print(Text(f"{theme.SYM_WARN} stopped: a limit was reached", "warn"))
        elif status == "error" and not self.error_shown:
            self.error_shown = True
            self.print(Text(f"{theme.SYM_FAIL} the turn ended with an error", "error"))
        if event.get("usage_line"):  # ui.usage, rendered by the core (empty with off)
            self.print(Text(str(event["usage_line"]), "muted"))

    # -- transcript ---------------------------------------------------------------------

    def show_transcript(self) -> None:
        """Ctrl+O: the last turn's thinking and full tool outputs."""
        rec = self.record
        if not rec.thinking and not rec.tools:
            self.print(Text("nothing to expand yet", "muted"))
            return
        self.print(Text("── last turn, expanded ──", "muted"))
        for thinking in rec.thinking:
            self.print(Text(f"{theme.SYM_THINK} thinking", "muted"))
            self.print(Padding(Text(thinking.strip(), "thinking"), (0, 0, 0, 2)))
        for name, summary, ok, output in rec.tools:
            head = Text(f"{theme.SYM_OK if ok else theme.SYM_FAIL} ", "ok" if ok else "fail")
            head.append(name, "tool")
            head.append(f"  {summary}")
            self.print(head)
            self.print(Padding(Text(output.rstrip() or "(no output)", "tool.out"), (0, 0, 0, 4)))
        self.print(Text("──", "muted"))


def syntax_block(detail: str, lexer: str):
    from rich.syntax import Syntax

    return Syntax(detail.rstrip("\n"), lexer, theme=theme.CODE_THEME, word_wrap=True)


def plan_synopsis(event: dict) -> list[str]:
    """The approval gate's compact synopsis of a plan event: title, steps, files, checks."""
    files = [str(f) for f in event.get("files") or []]
    verify = [str(v) for v in event.get("verify") or []]

    def some(items: list[str], n: int) -> str:
        more = f" (+{len(items) - n} more)" if len(items) > n else ""
        return ", ".join(items[:n]) + more

    lines = [f"{theme.SYM_INFO} plan: {event.get('title')} · {event.get('steps')} steps"]
    if files:
        lines.append(f"  files: {some(files, 6)}")
    if verify:
        lines.append(f"  verify: {some(verify, 4)}")
    return lines
