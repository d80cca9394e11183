"""Headless fronts over `yuyao._core.Session`: `yuyao -p` and the `config`/`mcp` sub-commands.

Nothing here decides anything: the core runs the turn and answers permission questions from
the mode; this module only prints and maps the outcome to the exit codes of spec §9.
stdout carries the result only (text, or one JSON document); progress goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import threading

from yuyao.core_link import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    PROG,
    hide_model_key,
    load_core,
)
from yuyao.print_handler import PrintHandler
from yuyao.stream_json import (
    JsonHandler,
    StreamJsonHandler,
    TurnMeter,
    control_responder,
    read_messages,
    result_message,
)

# "Answered": a question or a greeting got a real answer without tools (-p "what is X?").
CLEAN_EXIT_STATUSES = ("Submitted", "LimitsExceeded", "Answered")
_INTERRUPT_GRACE_SECONDS = 10


def _close_at_exit(session) -> None:
    """A backstop: the session is closed (jobs ended, callbacks shut off) before the
    interpreter finalizes, even when an exception skips the normal close."""
    import atexit

    def close() -> None:
        try:
            session.close()
        except Exception:
            pass

    atexit.register(close)


def _open_session(core, options: dict, handler):
    """A Session, or None after printing why (ValueError = bad options, a usage error)."""
    try:
        return core.Session(json.dumps(options), handler), EXIT_OK
    except ValueError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return None, EXIT_USAGE
    except Exception as exc:  # any core failure is a runtime error
        sys.stderr.write(f"{PROG}: cannot open a session: {exc}\n")
        return None, EXIT_RUNTIME


# ---------------------------------------------------------------------------------------------
# Sub-commands (`yuyao config ...`, `yuyao mcp ...`)
# ---------------------------------------------------------------------------------------------


class _WarningsHandler:
    """A sub-command's session only reports its warnings (e.g. a malformed configuration
    value that is ignored) and the progress of long operations on stderr; stdout stays the
    command's answer."""

    def event(self, event_json: str) -> None:
        try:
            event = json.loads(event_json)
        except ValueError:
            return
        if event.get("type") == "notice" and event.get("level") in ("warning", "error"):
            sys.stderr.write(f"{PROG}: {event['level']}: {event.get('text', '')}\n")
        elif event.get("type") == "progress":
            _progress_bar(event)

    def request(self, request_json: str) -> str:
        return "deny"


def _progress_bar(event: dict, width: int = 30) -> None:
    """A determinate bar on stderr: redrawn in place on a terminal, one final line otherwise."""
    done, total = int(event.get("done", 0)), max(int(event.get("total", 0)), 1)
    finished = done >= total
    if not finished and not sys.stderr.isatty():
        return
    filled = width * min(done, total) // total
    bar = "#" * filled + "-" * (width - filled)
    line = (
        f"{event.get('label', '')} [{bar}] {100 * min(done, total) // total:3d}% ({done}/{total})"
    )
    end = "\n" if finished else ""
    sys.stderr.write(("\r" if sys.stderr.isatty() else "") + line + end)
    sys.stderr.flush()


def run_slash_command(line: str, options: dict) -> int:
    """Run one slash command in a fresh headless session and print its answer."""
    core = load_core()
    if core is None:
        return EXIT_RUNTIME
    # Not an agent run: no trace is written for a configuration change.
    session, code = _open_session(
        core,
        {**options, "headless": True, "no_trajectory": True, "no_session": True},
        _WarningsHandler(),
    )
    if session is None:
        return code
    try:
        text = session.dispatch(line)
    except ValueError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_USAGE
    except Exception as exc:
        sys.stderr.write(f"{PROG}: {exc}\n")
        return EXIT_RUNTIME
    finally:
        session.close()
    if text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# `yuyao -p`
# ---------------------------------------------------------------------------------------------


class TurnOutcome:
    """What the turn produced: the final text, or the error that ended it."""

    def __init__(self):
        self.text = ""
        self.error = None
        self.interrupted = False
        self.still_running = False  # the core did not stop after an interrupt


def _runs_a_skill(task: str) -> bool:
    """`/flow:<name> …` and `/skill <name> …`: the core runs the skill's turns (skills.rs,
    flow.rs), in every front."""
    words = task.split()
    return bool(words) and (
        words[0].startswith("/flow:") or (words[0] in ("/skill", "/skills") and len(words) > 1)
    )


def _last_answer(session) -> str:
    for m in reversed(json.loads(session.messages_json())):
        if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"]:
            return m["content"]
    return ""


def _run_turn(session, task) -> TurnOutcome:
    """Run chat() on a worker thread so Ctrl+C reaches us while the core holds the turn.
    `task`: the prompt text, or message content (a list of parts) for chat_content."""
    outcome = TurnOutcome()

    def work():
        try:
            if isinstance(task, str) and _runs_a_skill(task):
                outcome.text = session.dispatch(task.strip()) or _last_answer(session)
                return
            if isinstance(task, str):
                outcome.text = session.chat(task) or ""
            else:
                outcome.text = session.chat_content(json.dumps(task)) or ""
        except Exception as exc:  # reported, exit 1
            outcome.error = str(exc) or type(exc).__name__

    worker = threading.Thread(target=work, name="yuyao-turn", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        outcome.interrupted = True
        session.interrupt()
        try:
            worker.join(_INTERRUPT_GRACE_SECONDS)
        except KeyboardInterrupt:
            pass  # a second Ctrl+C: stop waiting
        outcome.still_running = worker.is_alive()
    return outcome


def _exit_code_and_error(status: dict, outcome: TurnOutcome):
    """Spec §9: Submitted/LimitsExceeded -> 0; an error or a non-submission -> 1."""
    last_turn = status.get("last_turn") or {}
    exit_status = last_turn.get("exit_status")
    if outcome.interrupted:
        return EXIT_RUNTIME, "interrupted"
    if outcome.error:
        return EXIT_RUNTIME, outcome.error
    if exit_status in CLEAN_EXIT_STATUSES:
        return EXIT_OK, None
    if exit_status == "NotSubmitted":
        return EXIT_RUNTIME, last_turn.get(
            "error"
        ) or "the model gave no usable answer; nothing was submitted"
    return EXIT_RUNTIME, last_turn.get("error") or f"the turn ended with status {exit_status}"


def _read_status(session) -> dict:
    try:
        return json.loads(session.status_json())
    except Exception:  # the exit code must not depend on a status read
        return {}


def _json_document(status: dict, outcome: TurnOutcome, error, handler) -> dict:
    """`--json`: Claude Code's `result` object, with yuyao's keys (`exit_status`, `steps`,
    the session's `usage` counts, `completion`) kept beside its own."""
    meter = getattr(handler, "meter", None) or TurnMeter()
    exit_code = EXIT_RUNTIME if error else EXIT_OK
    document = result_message(status, outcome.text, error, exit_code, meter)
    document["usage"].update(status.get("usage") or {})
    document["steps"] = status.get("steps", 0)
    document["completion"] = status.get("completion")
    if getattr(handler, "meter", None) is not None:
        handler.meter.reset()
    return document


def run_task(
    task: str | None,
    options: dict,
    *,
    output_format: str,
    verbose: bool,
    input_format: str = "text",
) -> int:
    """`yuyao -p`: one headless turn (or one per stdin message with --input-format
    stream-json), printed; returns the exit code of spec §9."""
    core = load_core()
    if core is None:
        return EXIT_RUNTIME
    hide_model_key(core)
    text_output = output_format == "text"
    # Streaming is on by default for a terminal; into a pipe only the final answer is printed
    # unless --stream on asks for the deltas explicitly. With --json-schema stdout is the
    # validated document alone, so nothing is streamed.
    stream = options.get("stream", sys.stdout.isatty()) and not options.get("json_schema")
    if output_format == "stream-json":
        handler = StreamJsonHandler(verbose=verbose)
    else:
        handler = (PrintHandler if text_output else JsonHandler)(
            stream_text=text_output and stream,
            show_thinking=options.get("show_thinking", "collapsed"),
            verbose=verbose,
        )
    # What the project ships (hooks, .mcp.json, plugins) runs only with --trust-project, and
    # then only as the content the user approved (DESIGN §8).
    trusted = bool(options.get("trust_project"))
    opened = {**options, "headless": True, "project_extensions": trusted}
    session, code = _open_session(core, opened, handler)
    if session is None:
        return code
    _close_at_exit(session)
    if output_format == "stream-json":
        return _run_stream_json(session, handler, options, task, input_format)
    # The setting in force: the flag, else the configured ui.show_thinking.
    handler.show_thinking = _read_status(session).get("show_thinking") or handler.show_thinking
    if input_format == "stream-json":
        return _run_text_turns(session, handler, text_output)
    outcome = _run_turn(session, task)
    if outcome.still_running:
        # Closing or querying a session whose turn is still running could block: leave now.
        sys.stderr.write(f"{PROG}: interrupted\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(EXIT_RUNTIME)
    status = _read_status(session)
    session.close()
    exit_code, error = _exit_code_and_error(status, outcome)
    if text_output:
        _print_text_result(handler, outcome)
    else:
        document = _json_document(status, outcome, error, handler)
        if options.get("json_schema") and not error:
            document["structured_output"] = json.loads(outcome.text)
        sys.stdout.write(json.dumps(document) + "\n")
    if error and not handler.already_reported(error):
        sys.stderr.write(f"{PROG}: {error}\n")
    return exit_code


def _print_text_result(handler: PrintHandler, outcome: TurnOutcome) -> None:
    if outcome.text and not handler.reply_was_streamed:
        handler.finish_line()
        handler.write_stdout(outcome.text)
    handler.finish_line()


def _stdin_turns(task):
    """The turns of a run: the one task, or each user message of stream-json stdin (`(None,
    why)` for a malformed line)."""
    if task is not None:
        yield task, None
        return
    yield from read_messages(sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin)


def _finish_turn(session, outcome: TurnOutcome):
    if outcome.still_running:
        sys.stderr.write(f"{PROG}: interrupted\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(EXIT_RUNTIME)
    status = _read_status(session)
    return status, *_exit_code_and_error(status, outcome)


def _run_stream_json(session, handler, options: dict, task, input_format: str) -> int:
    """--output-format stream-json: init, then each turn's messages and its result line.
    With stream-json input a reader thread takes stdin as it comes, so the SDK's control
    requests (an `interrupt` mid-turn) are answered while a turn runs."""
    handler.init(_read_status(session), session)
    worst = EXIT_OK
    if input_format == "stream-json":
        turns = _queued_stdin_turns(session, handler)
    else:
        turns = iter([(task, None)])
    for content, problem in turns:
        if problem:
            handler.input_error(problem)
            continue
        cost_before = float(_read_status(session).get("cost_usd") or 0.0)
        outcome = _run_turn(session, content)
        status, code, error = _finish_turn(session, outcome)
        handler.result(status, outcome.text, error, code, cost_before)
        worst = max(worst, code)
        if outcome.interrupted:
            break
    session.close()
    return worst


def _queued_stdin_turns(session, handler):
    """The user messages of stream-json stdin, read on a thread of their own; control
    requests are answered as they arrive."""
    import queue

    turns: queue.Queue = queue.Queue()
    answer = control_responder(session, handler)

    def reader() -> None:
        try:
            source = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
            for item in read_messages(source, on_control=answer):
                turns.put(item)
        finally:
            turns.put(None)

    threading.Thread(target=reader, name="yuyao-stdin", daemon=True).start()
    while True:
        item = turns.get()
        if item is None:
            return
        yield item


def _run_text_turns(session, handler, text_output: bool) -> int:
    """--input-format stream-json with text/json output: each message a turn, each answer
    (or JSON document) printed as it ends; malformed lines are errors on stderr."""
    worst = EXIT_OK
    for content, problem in _stdin_turns(None):
        if problem:
            sys.stderr.write(f"{PROG}: error: {problem}\n")
            continue
        handler.reply_was_streamed = False
        outcome = _run_turn(session, content)
        status, code, error = _finish_turn(session, outcome)
        if text_output:
            _print_text_result(handler, outcome)
        else:
            sys.stdout.write(json.dumps(_json_document(status, outcome, error, handler)) + "\n")
            sys.stdout.flush()
        if error and not handler.already_reported(error):
            sys.stderr.write(f"{PROG}: {error}\n")
        worst = max(worst, code)
        if outcome.interrupted:
            break
    session.close()
    return worst
