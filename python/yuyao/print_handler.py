"""The `-p` text output: the core's events printed as they come (stdout the answer, stderr the
thinking, progress, warnings and errors). `yuyao -p` uses it for text output, and the JSON and
stream-JSON outputs (stream_json.py) build on it, so it sits below both (docs/headless.md).
"""

from __future__ import annotations

import json
import os
import sys

from yuyao.core_link import PROG

NO_USER_ANSWER = (
    "No user is available in this headless run. Choose the most reasonable option "
    "yourself and state the assumption in your answer."
)
_VERBOSE_OUTPUT_LINES = 8


class PrintHandler:
    """Receives the core's events during a `-p` run.

    stdout carries the answer only (streamed as deltas with streamed text output, else printed
    whole at the end). stderr carries the thinking (per show_thinking: a header and the text when
    expanded, a one-line summary when collapsed, nothing when off), the progress lines of
    --verbose, warnings and errors. Every stderr passage starts on a fresh line and ends with a
    newline, so a terminal showing both streams never glues one to the other."""

    def __init__(self, *, stream_text: bool, show_thinking: str, verbose: bool):
        self.stream_text = stream_text
        self.show_thinking = show_thinking  # "off" | "collapsed" | "expanded"
        self.verbose = verbose
        plain = not sys.stderr.isatty() or os.environ.get("NO_COLOR")
        self.dim, self.undim = ("", "") if plain else ("\x1b[2m", "\x1b[0m")
        self.reply_was_streamed = False  # did the latest reply reach stdout as deltas?
        self.ends_with_newline = True  # stdout is at the start of a line
        self.reply_thinking_streamed = False  # the latest reply's thinking came as deltas
        self.thinking_open = False  # expanded thinking is mid-passage on stderr
        self.thinking_line_open = False  # ... and its last line has no newline yet
        self.thinking_unsummarized = 0  # collapsed: characters not yet summarized
        self.errors_shown: list[str] = []
        self.last_intent = ""  # --verbose: one intent line per tool batch

    # Called by the core (possibly from its own thread).
    def event(self, event_json: str) -> None:
        try:
            event = json.loads(event_json)
            render = getattr(self, "_on_" + str(event.get("type")), None)
            if render is not None:
                render(event)
        except Exception:  # rendering (a closed pipe, an odd event) must never stop the run
            pass

    def request(self, request_json: str) -> str:
        # The session is headless, so the core should not ask; if it does, nobody can answer.
        request = json.loads(request_json)
        return NO_USER_ANSWER if request.get("type") == "ask_user" else "deny"

    def _on_model_call(self, event: dict) -> None:
        self._to_stderr()
        self.reply_was_streamed = False
        self.reply_thinking_streamed = False
        self._progress(f"[step {event.get('step')}] calling the model")

    def _on_text_delta(self, event: dict) -> None:
        if self.stream_text and event.get("text"):
            self._end_thinking()
            self.write_stdout(event["text"])
            self.reply_was_streamed = True

    def _on_thinking_delta(self, event: dict) -> None:
        text = event.get("text") or ""
        if not text:
            return
        self.reply_thinking_streamed = True
        if self.show_thinking == "collapsed":
            self.thinking_unsummarized += len(text)
        elif self.show_thinking == "expanded":
            if not self.thinking_open:
                self._to_stderr()
                self._thinking_header()
                self.thinking_open = True
            self._stderr(self.dim + text + self.undim)
            self.thinking_line_open = not text.endswith("\n")

    def _on_assistant_message(self, event: dict) -> None:
        thinking = str(event.get("thinking") or "").strip()
        if thinking and not self.reply_thinking_streamed:
            # Not streamed (--stream off): the whole thinking arrives with the reply.
            self._to_stderr()
            if self.show_thinking == "expanded":
                self._thinking_header()
                self._stderr(self.dim + thinking + self.undim + "\n")
            elif self.show_thinking == "collapsed":
                self.thinking_unsummarized = len(thinking)
        self._end_thinking()

    def _on_intent(self, event: dict) -> None:
        # --verbose: the batch's one-line "why".
        mark = "" if event.get("stated") else " (the model stated none)"
        self._progress(f"[intent] {event.get('text')}{mark}")
        # The batch's tool_begin events carry the same intent: it is printed once.
        self.last_intent = str(event.get("text") or "").strip()

    def _on_verification(self, event: dict) -> None:
        # The verification output is a report, not progress: always on stderr, verbatim.
        ok = "passed" if event.get("ok") else f"failed (exit {event.get('exit_code')})"
        self._to_stderr()
        self._stderr(
            f"[verification] `{event.get('command')}` {ok}\n"
            f"{str(event.get('output') or '').rstrip()}\n"
        )

    def _on_completion(self, event: dict) -> None:
        check = event.get("check") or {}
        quiet = not (
            event.get("problems") or check.get("files_changed") or check.get("verification")
        )
        if quiet and not self.verbose:
            return  # only commands ran, all clean: --verbose shows it
        self._to_stderr()
        self._stderr(str(event.get("text") or "").rstrip() + "\n")

    def _on_tool_begin(self, event: dict) -> None:
        intent = str(event.get("intent") or "").strip()
        if intent and intent != self.last_intent:
            self.last_intent = intent
            self._progress(f"[intent] {intent}")
        self._progress(f"[tool] {event.get('name')} {_short(event.get('arguments'))}")

    def _on_tool_end(self, event: dict) -> None:
        state = "ok" if event.get("ok") else "failed"
        output = str(event.get("output") or "").splitlines()
        shown = output[:_VERBOSE_OUTPUT_LINES]
        more = len(output) - len(shown)
        lines = [f"[tool] {event.get('name')} {state}"] + [f"    {line}" for line in shown]
        if more > 0:
            lines.append(f"    ... {more} more lines")
        self._progress("\n".join(lines))

    def _on_agent(self, event: dict) -> None:
        """A sub-agent's tool calls (--verbose), indented under the parent's task call."""
        inner = event.get("event") or {}
        pad = "    " * int(event.get("depth") or 1)
        tag = f"[{event.get('agent')} {event.get('agent_id')}]"
        if inner.get("type") == "tool_begin":
            self._progress(f"{pad}{tag} {inner.get('name')} {_short(inner.get('arguments'))}")
        elif inner.get("type") == "tool_end" and not inner.get("ok"):
            first = (str(inner.get("output") or "").splitlines() or [""])[0]
            self._progress(f"{pad}{tag} {inner.get('name')} failed: {first}")

    def _on_plan(self, event: dict) -> None:
        # The plan's markup never streamed: the validated plan is the answer printed at the end.
        self.reply_was_streamed = False
        self._progress(
            f"[plan] {event.get('title')}: {event.get('steps')} steps -> {event.get('path')}"
        )

    def _on_usage(self, event: dict) -> None:
        self.last_intent = ""
        # One line per step: the core's, rendered as ui.usage asks; with ui.usage off,
        # --verbose still states the call's tokens and cost.
        if event.get("line"):
            self._progress(f"[usage] {event['line']}")
            return
        self._progress(
            f"[tokens] {event.get('prompt_tokens', 0)} in, {event.get('completion_tokens', 0)} out"
            f" · cost ${float(event.get('cost_usd') or 0):.4f}"
            f" (session ${float(event.get('session_cost_usd') or 0):.4f})"
        )

    def _on_notice(self, event: dict) -> None:
        level = event.get("level", "info")
        if level != "info" or self.verbose:
            text = str(event.get("text", ""))
            self._to_stderr()
            self._stderr(f"{PROG}: {level}: {text}\n")
            if level == "error":
                self.errors_shown.append(text)

    def already_reported(self, error: str) -> bool:
        """Whether an error notice already said this (the turn's error is printed once)."""
        return any(error.strip() in shown for shown in self.errors_shown)

    def _progress(self, text: str) -> None:
        if self.verbose:
            self._to_stderr()
            self._stderr(text + "\n")

    def _thinking_header(self) -> None:
        self._stderr(f"{self.dim}[thinking]{self.undim}\n")

    def _end_thinking(self) -> None:
        """Close the thinking passage on stderr: its last newline, or the collapsed summary."""
        if self.thinking_line_open:
            self._stderr("\n")
            self.thinking_line_open = False
        self.thinking_open = False
        if self.thinking_unsummarized:
            n, self.thinking_unsummarized = self.thinking_unsummarized, 0
            self._to_stderr()
            self._stderr(
                f"{self.dim}[thinking] {n} characters hidden "
                f"(--show-thinking expanded shows them){self.undim}\n"
            )

    def _to_stderr(self) -> None:
        """Before a stderr passage: stdout's partial line ends, and open thinking closes."""
        self.finish_line()
        if self.thinking_open or self.thinking_unsummarized:
            self._end_thinking()

    @staticmethod
    def _stderr(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    def write_stdout(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()
        self.ends_with_newline = text.endswith("\n")

    def finish_line(self) -> None:
        if not self.ends_with_newline:
            self.write_stdout("\n")


def _short(value, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
