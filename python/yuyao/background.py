"""Worktrees and background sessions, the Python side: only argument plumbing, printing and
terminal questions. The core does the work (`yuyao._core.bg_*`, `worktree_*`;
rust/core/src/background/, rust/store/src/{worktree,bg_agents}.rs).

`python -m yuyao.background run <dir>` is what a detached background process runs.
"""

from __future__ import annotations

import json
import os
import sys
import time

from yuyao.core_link import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, PROG, hide_model_key, load_core
from yuyao.user_text import decode_text

LIVE_STATES = ("starting", "running", "awaiting input")
_FOLLOW_POLL_SECONDS = 0.2


def _fail(message: str, code: int = EXIT_RUNTIME) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return code


# ---------------------------------------------------------------------------------------------
# --worktree
# ---------------------------------------------------------------------------------------------


def start_worktree(name, options: dict):
    """Creates the worktree and points the session at it (options["cwd"]). Returns the
    worktree (a dict) or None after printing why (exit 1: outside git, a bad name...)."""
    core = load_core()
    if core is None:
        return None
    cwd = options.get("cwd") or os.getcwd()
    try:
        worktree = json.loads(core.worktree_create(cwd, name if isinstance(name, str) else None))
    except Exception as exc:
        _fail(f"--worktree: {exc}")
        return None
    options["cwd"] = worktree["path"]
    sys.stderr.write(
        f"{PROG}: working in worktree {worktree['path']} (branch {worktree['branch']})\n"
    )
    return worktree


def end_worktree(worktree: dict, *, interactive: bool) -> None:
    """Headless: kept (changes committed on its branch), the path printed. Interactive: with
    changes, the user picks keep / merge / remove; without, it is removed."""
    from yuyao import _core

    text = json.dumps(worktree)
    runner = _background_session_in(worktree["path"])
    if runner is not None:  # `/background` moved the session there: it keeps working in it
        sys.stderr.write(
            f"{PROG}: worktree kept: {worktree['path']} (background session {runner} works in it)\n"
        )
        return
    try:
        changed = json.loads(_core.worktree_changes(text))
        has_changes = changed["uncommitted"] > 0 or changed["commits"] > 0
    except Exception:
        has_changes = True  # when in doubt, nothing is removed
    action = "keep"
    if interactive and not has_changes:
        action = "remove"
    elif interactive:
        action = _ask_worktree_action(worktree, changed)
    try:
        sys.stderr.write(f"{PROG}: {_core.worktree_finish(text, action)}\n")
    except Exception as exc:
        sys.stderr.write(f"{PROG}: {exc}\n")
        if action != "keep":
            sys.stderr.write(f"{PROG}: worktree kept: {worktree['path']} ({worktree['branch']})\n")


def _background_session_in(path: str):
    """The id of a live background session working in `path`, if any."""
    from yuyao import _core

    try:
        sessions = json.loads(_core.bg_list_json(None))
    except Exception:
        return None
    for status in sessions:
        if status.get("state") in LIVE_STATES and status.get("cwd") == path:
            return status.get("id")
    return None


def _ask_worktree_action(worktree: dict, changed: dict) -> str:
    base = worktree.get("base_branch") or "the original branch"
    sys.stderr.write(
        f"\nThe worktree {worktree['path']} has changes "
        f"({changed.get('uncommitted', 0)} uncommitted files, {changed.get('commits', 0)} commits).\n"
        f"  [k]eep it (changes committed on {worktree['branch']})\n"
        f"  [m]erge {worktree['branch']} into {base}\n"
        f"  [r]emove it and its branch\n"
    )
    while True:
        try:
            sys.stderr.write("Keep, merge or remove? [k/m/r] ")
            sys.stderr.flush()
            answer = input().strip().lower()
        except (EOFError, KeyboardInterrupt):
            return "keep"
        choice = {"k": "keep", "m": "merge", "r": "remove"}.get(answer[:1], "")
        if answer in ("keep", "merge", "remove") or choice:
            return choice or answer


# ---------------------------------------------------------------------------------------------
# --bg, `yuyao agents ...`
# ---------------------------------------------------------------------------------------------


def dispatch(task: str, options: dict, *, exec_command=None, worktree=None) -> int:
    core = load_core()
    if core is None:
        return EXIT_RUNTIME
    request = {"task": task, "options": options, "exec": exec_command}
    if isinstance(worktree, str):
        request["worktree"] = worktree
    try:
        status = json.loads(core.bg_dispatch(json.dumps(request)))
    except ValueError as exc:
        return _fail(f"error: {exc}", EXIT_USAGE)
    except Exception as exc:
        return _fail(str(exc))
    sys.stdout.write(status["id"] + "\n")
    where = status.get("worktree") or status.get("cwd")
    sys.stderr.write(
        f"{PROG}: background {'job' if exec_command else 'session'} {status['id']} started in "
        f"{where}\n{PROG}: follow it: {PROG} agents list · {PROG} agents attach {status['id']}\n"
    )
    if status.get("last_activity") not in (None, "", "starting"):
        sys.stderr.write(f"{PROG}: {status['last_activity']}\n")
    return EXIT_OK


def run_bg(invocation, options: dict) -> int:
    """`yuyao --bg "task"` / `--bg --exec "cmd"`: prints the id and returns at once."""
    inline = invocation.get("--bg")
    words = ([inline] if isinstance(inline, str) else []) + list(invocation.words)
    task = " ".join(words).strip()
    exec_command = invocation.get("--exec")
    if not task and exec_command is None and sys.stdin is not None and not sys.stdin.isatty():
        task = decode_text(sys.stdin.buffer.read()).strip()  # `... | yuyao --bg`
    if not task and exec_command is None:
        return _fail('error: --bg needs a task: yuyao --bg "<task>"', EXIT_USAGE)
    return dispatch(task, options, exec_command=exec_command, worktree=invocation.get("--worktree"))


def run_agents(invocation, options: dict) -> int:
    core = load_core()
    if core is None:
        return EXIT_RUNTIME
    home = options.get("home")
    action, words = invocation.action, invocation.words
    try:
        if action == "list":
            sys.stdout.write(core.bg_list_text(home) + "\n")
            return EXIT_OK
        if action == "dispatch":
            return dispatch(" ".join(words), options, worktree=invocation.get("--worktree"))
        if action == "stop":
            status = json.loads(core.bg_stop(words[0], home))
            where = status.get("worktree") or status.get("cwd")
            sys.stdout.write(f"{status['id']}: {status['state']} (worktree kept: {where})\n")
            return EXIT_OK
        if action == "attach":
            return attach(core, words[0], options)
    except Exception as exc:
        return _fail(str(exc))
    return _fail(f"unknown agents action '{action}'", EXIT_USAGE)


def _status(core, session_id: str, home) -> dict:
    return json.loads(core.bg_status_json(session_id, home))


def _print_entry(entry: dict) -> None:
    kind = entry.get("type")
    if kind == "user":
        print(f"> {entry.get('text', '')}")
    elif kind == "assistant_message" and (entry.get("text") or "").strip():
        print(entry["text"].rstrip())
    elif kind == "tool_begin":
        from yuyao.tui.render import summarize_arguments  # the TUI's one-line summary

        what = summarize_arguments(str(entry.get("name")), entry.get("arguments"))
        print(f"  ⏺ {entry.get('name')} {what}")
    elif kind == "tool_end":
        output = str(entry.get("output") or "").strip().splitlines()
        state = "ok" if entry.get("ok") else "failed"
        print(f"    {state}" + (f": {output[0][:160]}" if output else ""))
    elif kind == "notice" and entry.get("level") != "info":
        print(f"  [{entry.get('level')}] {entry.get('text', '')}")
    elif kind == "answer":
        print(f"  (answered: {entry.get('answer')})")
    elif kind == "final" and (entry.get("text") or "").strip():
        print(entry["text"].rstrip())
    elif kind == "exec":
        print(f"$ {entry.get('command')}")
    sys.stdout.flush()


def _follow(path: str, offset: int) -> int:
    """Prints the transcript lines after `offset`; returns the new offset."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return offset
    end = data.rfind(b"\n") + 1  # a line being written is read next time
    for line in data[:end].splitlines():
        try:
            _print_entry(json.loads(line))
        except ValueError:
            continue
    return offset + end


def _follow_output(status: dict, offset: int) -> int:
    """A shell job's output after `offset`, printed as it is; returns the new offset."""
    path = status.get("log")
    if not path:
        return offset
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return offset
    if data:
        sys.stdout.write(data.decode("utf-8", "replace"))
        sys.stdout.flush()
    return offset + len(data)


def _ask_pending(pending: dict) -> str:
    """The session's question, asked with the TUI's own prompts (the same permission panel
    and one-key menu, the same ask-user line)."""
    from rich.text import Text

    from yuyao.tui import prompts, theme
    from yuyao.tui.keys import RawKeys

    request = pending.get("request") or {}
    console = theme.make_console()
    kind = request.get("type")
    if kind == "permission":
        prompts.show_permission(console, request)
        console.print(Text("  Esc/Ctrl+C: detach, the session keeps waiting", "muted"))
        choice = prompts._read_choice(RawKeys(), "yapn")
        if choice is None:
            raise KeyboardInterrupt  # leave it unanswered
        return prompts.permission_answer(console, choice)
    if kind == "ask_user":
        return prompts.ask_user(console, request)
    return prompts.ask_other(console, request)


def attach(core, session_id: str, options: dict) -> int:
    """Shows the transcript so far, follows the session while it runs, answers its pending
    question here, then opens the TUI on the conversation to continue it."""
    home = options.get("home")
    status = _status(core, session_id, home)
    print(f"Attached to {session_id} ({status['state']}): {status.get('task', '')}")
    print(f"  in {status.get('worktree') or status.get('cwd')}")
    transcript = os.path.join(status["dir"], "transcript.jsonl")
    offset = output = 0
    try:
        while True:
            offset = _follow(transcript, offset)
            status = _status(core, session_id, home)
            output = _follow_output(status, output)
            # A question left behind by a process that died is not asked.
            if status.get("pending") and status["state"] == "awaiting input":
                answer = _ask_pending(status["pending"])
                try:
                    core.bg_answer(session_id, answer, home)
                except Exception as exc:  # it was answered or stopped meanwhile
                    print(f"({exc})")
                while True:
                    now = _status(core, session_id, home)
                    if not now.get("pending") or now["state"] not in LIVE_STATES:
                        break
                    time.sleep(_FOLLOW_POLL_SECONDS)
                continue
            if status["state"] not in LIVE_STATES:
                break
            time.sleep(_FOLLOW_POLL_SECONDS)
    except (KeyboardInterrupt, EOFError):
        print(f"\ndetached; {session_id} runs on ({PROG} agents attach {session_id})")
        return EXIT_OK
    offset = _follow(transcript, offset)
    _follow_output(_status(core, session_id, home), output)
    line = f"{session_id}: {status['state']}"
    if status.get("error"):
        line += f" ({status['error']})"
    print(line)
    sys.stdout.flush()
    if status.get("kind") != "session" or not status.get("session_id"):
        return EXIT_OK if status["state"] == "done" else EXIT_RUNTIME
    # Continue the conversation interactively where it runs.
    from yuyao.tui import run_interactive

    resumed = {**options, "resume": status["session_id"], "cwd": status["cwd"]}
    return run_interactive(resumed)


# ---------------------------------------------------------------------------------------------
# The detached process
# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "run":
        return _fail("usage: python -m yuyao.background run <agent-dir>", EXIT_USAGE)
    core = load_core()
    if core is None:
        return EXIT_RUNTIME
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    hide_model_key(core)
    return core.bg_run(argv[1])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
