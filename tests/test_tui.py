"""The interactive TUI in a real terminal (pexpect pty + pyte screen).

Two groups:
- tests driving the TUI over a scripted stand-in session (defined below, run in the child
  process): rendering, permission prompts, steering, interrupt, slash commands, shell prefix,
  history. They need no compiled core.
- tests of the real product (`python -m yuyao`) against tests/fakellm.py, marked `core`
  (skipped with a reason when yuyao._core is not importable and YUYAO_REQUIRE_CORE is unset).

Keys are sent as a terminal sends them: Enter is "\\r" (a "\\n" is Ctrl+J = newline).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pyte
import pytest
from conftest import git
from fakellm import call, calls, say

ROOT = Path(__file__).resolve().parents[1]
PYTHON_SRC = ROOT / "python"
VERSION = (ROOT / "VERSION").read_text().strip()
ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b."
)
ENTER = "\r"
CTRL_D = "\x04"
ESC = "\x1b"
SHIFT_TAB = "\x1b[Z"


@functools.lru_cache(maxsize=1)
def use_source_tree() -> bool:
    """Run the TUI from python/ when that tree has its extension (`maturin develop`) or when no
    yuyao with an extension is installed; otherwise (CI installs the wheel) use the installed
    package, since the source tree alone cannot import `yuyao._core`."""
    if any((PYTHON_SRC / "yuyao").glob("_core*")):
        return True
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [sys.executable, "-c", "import yuyao._core"], env=env, cwd="/", capture_output=True
    )
    return probe.returncode != 0


class Term:
    """A child process in a pseudo-terminal, its output kept as a pyte screen and as text."""

    def __init__(self, argv: list[str], env: dict, cwd: Path, rows: int = 40, cols: int = 110):
        env = dict(env)
        env.update(TERM="xterm-256color")
        if use_source_tree():
            env["PYTHONPATH"] = (
                f"{PYTHON_SRC}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(PYTHON_SRC)
            )
        self.child = pexpect.spawn(
            argv[0],
            argv[1:],
            env=env,
            cwd=str(cwd),
            dimensions=(rows, cols),
            encoding="utf-8",
            codec_errors="replace",
        )
        self.screen = pyte.Screen(cols, rows)
        # Answer cursor-position requests like a terminal (prompt_toolkit shows the status
        # line only once it knows where the cursor is).
        self.screen.write_process_input = self.child.send
        self.stream = pyte.Stream(self.screen)
        self.raw = ""
        self.eof = False

    def pump(self, timeout: float = 0.1) -> None:
        if self.eof:
            time.sleep(timeout)
            return
        try:
            data = self.child.read_nonblocking(65536, timeout)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            self.eof = True
            return
        self.raw += data
        self.stream.feed(data)

    def display(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def transcript(self) -> str:
        """Everything printed so far, escape sequences removed."""
        return ANSI.sub("", self.raw).replace("\r", "")

    def wait_for(self, pattern: str, timeout: float = 20.0, screen_only: bool = False) -> None:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if regex.search(self.display()) or (
                not screen_only and regex.search(self.transcript())
            ):
                return
            if self.eof:
                break
            self.pump()
        pytest.fail(
            f"{pattern!r} did not appear.\n--- screen ---\n{self.display()}\n--- transcript tail ---\n{self.transcript()[-3000:]}"
        )

    def wait_ready(self, timeout: float = 20.0) -> None:
        """Until the prompt reads keys (its status line is drawn); keys typed earlier would be
        read in the terminal's cooked mode, where Enter arrives as Ctrl+J."""
        self.wait_for(r"thinking (collapsed|expanded|off)", timeout, screen_only=True)

    def settle(self, seconds: float = 0.4) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.pump(0.05)

    def send(self, text: str) -> None:
        self.child.send(text)

    def line(self, text: str) -> None:
        self.child.send(text)
        time.sleep(0.05)
        self.child.send(ENTER)

    def wait_exit(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self.pump()
        if not self.eof:
            self.child.terminate(force=True)
            pytest.fail(f"the TUI did not exit.\n{self.display()}")
        self.child.wait()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


# --------------------------------------------------------------------------------------------
# A stand-in session (the _core.Session contract), run inside the spawned TUI process.

FAKE_SESSION = r'''
import json, os, sys, threading, time
from yuyao.tui import run_interactive

LOG = os.environ["FAKE_LOG"]

def log(**entry):
    with open(LOG, "a") as fh:
        fh.write(json.dumps(entry) + "\n")

HELP = """Commands:
  /help                list all supported commands
  /mode <ask|plan|auto-edit|auto-review|yolo>   switch the permission mode
  /show-thinking <off|collapsed|expanded>       how thinking is shown
  /exit (/quit)        leave the session
"""

ANSWER = "Hello from the stand-in.\n\n```python\ndef add(a, b):\n    return a + b\n```\n"

class FakeSession:
    def __init__(self, options_json, handler):
        self.h = handler
        self.opts = json.loads(options_json)
        self.mode = self.opts.get("mode", "ask")
        self.show = "collapsed"
        self.cost = 0.0
        self.exit = False
        self.stop = threading.Event()
        self.cwd = os.getcwd()
        self.config = json.loads(os.environ.get("FAKE_CONFIG") or "{}")
        self.last = ""

    def ev(self, **e):
        self.h.event(json.dumps(e))

    def status_json(self):
        return json.dumps({"version": "9.8.7", "mode": self.mode, "role": "execute",
            "model": "stand-in-model", "cwd": self.cwd, "show_thinking": self.show,
            "cost_usd": self.cost, "context_percent": 7, "exit_requested": self.exit})

    def dispatch(self, cmd):
        log(dispatch=cmd)
        name, _, arg = cmd.partition(" ")
        if name == "/help":
            return HELP
        if name == "/mode":
            self.mode = arg
            return "mode: " + arg
        if name == "/plan":
            if arg == "off":
                self.mode = self.before_plan
            else:
                self.before_plan, self.mode = self.mode, "plan"
            return "mode: " + self.mode
        if name == "/show-thinking":
            self.show = arg
            return ""
        if name in ("/exit", "/quit"):
            self.exit = True
            return ""
        if name in ("/config", "/settings"):
            words = arg.split()
            if not words or words[0] == "list":
                out = "configuration (user: u.toml, project: p.toml)\n"
                out += "".join("  %s = %s\n" % kv for kv in sorted(self.config.items()))
                out += "known keys:\n  ui.theme    TUI colour theme\n  ui.editor_mode    input box editing mode\n"
                out += "  mode    default permission mode"
                return out
            if words[0] == "get":
                return self.config.get(words[1], "")
            if words[0] == "set":
                if words[1] == "ui.editor_mode" and words[2] not in ("emacs", "vi"):
                    raise ValueError("invalid value for ui.editor_mode: expected emacs or vi")
                self.config[words[1]] = words[2]
                return "%s = %s" % (words[1], words[2])
        raise ValueError("unknown command " + name)

    def steer(self, text):
        log(steer=text)

    def next_step(self):
        return "run the test suite" if self.last == "next" else ""

    def interrupt(self):
        log(interrupt=True)
        self.stop.set()

    def close(self):
        log(close=True)

    def stream(self, text, kind="text_delta"):
        for i in range(0, len(text), 5):
            self.ev(type=kind, text=text[i:i + 5])
            time.sleep(0.01)

    def chat(self, text):
        log(chat=text)
        self.last = text
        self.stop.clear()
        self.ev(type="model_call", step=1)
        if text == "tool":
            self.stream("I should list the files.", "thinking_delta")
            self.ev(type="assistant_message", text="", thinking="I should list the files.", tool_calls=2)
            self.ev(type="tool_begin", id="c1", name="bash", intent="See what the project holds",
                    arguments=json.dumps({"command": "ls -la src | head"}))
            a = self.h.request(json.dumps({"type": "permission", "tool": "bash", "summary": "run a command",
                    "detail": "ls -la src | head", "reason": "not on the allow list"}))
            log(answer=a)
            self.ev(type="tool_end", id="c1", name="bash", ok=True,
                    output="\n".join("file%d.py" % i for i in range(10)))
            self.ev(type="tool_begin", id="c2", name="edit", intent="Fix the constant",
                    arguments={"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
            a = self.h.request(json.dumps({"type": "permission", "tool": "edit", "summary": "edit a.py",
                    "detail": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n", "reason": "ask mode"}))
            log(answer=a)
            self.ev(type="tool_end", id="c2", name="edit", ok=False, output="refused: the user said no")
            final = "Tools done."
        elif text == "ask":
            a = self.h.request(json.dumps({"type": "ask_user", "question": "Which package manager?",
                    "options": ["bun", "npm"]}))
            final = "You picked " + a + "."
        elif text == "next":
            final = "Done with the refactor.\n\nNext: run the test suite"
        elif text == "batch":
            self.ev(type="assistant_message", text="", thinking="", tool_calls=3)
            for i in range(3):
                self.ev(type="tool_begin", id="b%d" % i, name="read", intent="Read the parts",
                        arguments={"file_path": "part%d.py" % i})
                time.sleep(0.8)
                self.ev(type="tool_end", id="b%d" % i, name="read", ok=True, output="x")
            final = "Read three parts."
        elif text == "bash":
            self.ev(type="assistant_message", text="", thinking="", tool_calls=1)
            self.ev(type="tool_begin", id="s1", name="bash", intent="Wait for the server",
                    arguments={"command": "sleep 30"})
            while not self.stop.wait(0.05):
                pass
            self.ev(type="tool_end", id="s1", name="bash", ok=False, output="interrupted")
            self.ev(type="turn_end", status="interrupted", text="")
            return ""
        elif text == "md":
            final = ("# Big Title\n\nSome **bold** words.\n\n- first item\n- second item\n\n"
                     "```python\ndef add(a, b):\n    return a + b\n```\n\nstill going")
            self.stream(final)
            self.stop.wait(3)  # still streaming: the screen shows the reply as it stands
            self.ev(type="assistant_message", text=final, thinking="", tool_calls=0)
            self.ev(type="turn_end", status="completed", text=final)
            return final
        elif text == "slow":
            for i in range(200):
                if self.stop.is_set():
                    self.ev(type="turn_end", status="interrupted", text="")
                    return ""
                self.ev(type="text_delta", text="w%d " % i)
                time.sleep(0.05)
            final = "slow end"
        else:
            final = ANSWER
        self.stream(final)
        self.ev(type="assistant_message", text=final, thinking="", tool_calls=0)
        self.cost += 0.25
        self.ev(type="usage", prompt_tokens=10, completion_tokens=5, cached_tokens=0,
                reasoning_tokens=0, cost_usd=0.25, session_cost_usd=self.cost, context_percent=7)
        self.ev(type="turn_end", status="completed", text=final)
        return final

sys.exit(run_interactive({"mode": "ask"}, session_factory=FakeSession))
'''


@pytest.fixture
def stand_in(tmp_path: Path, env):
    """``stand_in()`` -> (Term running the TUI over the stand-in session, read_log())."""
    script = tmp_path / "stand_in_tui.py"
    script.write_text(FAKE_SESSION)
    log = tmp_path / "session.log"
    work = tmp_path / "work"
    work.mkdir()
    terms: list[Term] = []

    def start(**extra: str) -> tuple[Term, object]:
        e = env(
            None, D2A_MODEL_BASE_URL="http://127.0.0.1:9/v1", D2A_MODEL_NAME="m", FAKE_LOG=str(log)
        )
        e.update(extra)
        term = Term([sys.executable, str(script)], e, work)
        terms.append(term)

        def read_log() -> list[dict]:
            if not log.exists():
                return []
            return [json.loads(ln) for ln in log.read_text().splitlines() if ln.strip()]

        return term, read_log

    yield start
    for term in terms:
        term.close()


def test_banner_answer_and_ctrl_d(stand_in):
    term, _ = stand_in()
    term.wait_for(r"yuyao 9\.8\.7")
    term.wait_for(r"stand-in-model")
    term.wait_for(r"/help")
    term.wait_for(r"Ctrl\+D")
    term.line("hi")
    term.wait_for(r"Hello from the stand-in\.")
    term.wait_for(r"def add\(a, b\):", screen_only=True)
    term.wait_for(r"\$0\.2500", screen_only=True)  # the status line shows the session cost
    term.wait_for(r"ctx 7%", screen_only=True)
    term.settle()
    assert "```" not in term.display(), "the answer was not rendered as Markdown"
    assert "mini" not in term.transcript().lower()
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_tool_blocks_and_permission_prompts(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("tool")
    term.wait_for(r"permission: bash")
    term.wait_for(r"ls -la src \| head")  # the actual command
    term.wait_for(r"See what the project holds")  # the intent line
    term.wait_for(r"\[a\] always this session")
    term.send("y")
    term.wait_for(r"file0\.py")
    term.wait_for(r"more lines")  # output preview is truncated
    term.wait_for(r"permission: edit")
    term.wait_for(r"\+x = 2")  # the actual diff
    term.send("n")
    term.wait_for(r"denied")
    term.wait_for(r"refused: the user said no")
    term.wait_for(r"Tools done\.")
    answers = [e["answer"] for e in read_log() if "answer" in e]
    assert answers == ["allow", "deny"]
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_ask_user_by_number(stand_in):
    term, _ = stand_in()
    term.wait_ready()
    term.line("ask")
    term.wait_for(r"Which package manager\?")
    term.wait_for(r"2\. npm")
    term.line("2")
    term.wait_for(r"You picked npm\.")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_steering_and_escape_interrupt(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("slow")
    term.wait_for(r"w5 ")
    term.send("use bun")
    term.send(ENTER)
    term.wait_for(r"queued for the next model call")
    term.send(ESC)
    term.wait_for(r"interrupted")
    entries = read_log()
    assert {"steer": "use bun"} in entries
    assert {"interrupt": True} in entries
    term.line("hi")  # the session goes on
    term.wait_for(r"Hello from the stand-in\.")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_multiline_input_and_ctrl_c_clears(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.send("discarded draft")
    term.settle(0.2)
    term.send("\x03")  # Ctrl+C clears the input
    term.send("first\\")
    term.send(ENTER)  # \ + Enter: newline, not submitted
    term.send("second")
    term.send("\n")  # Ctrl+J: newline
    term.send("third")
    term.send(ENTER)
    term.wait_for(r"Hello from the stand-in\.")
    chats = [e["chat"] for e in read_log() if "chat" in e]
    assert chats == ["first\nsecond\nthird"]
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_ctrl_c_interrupts_a_turn(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("slow")
    term.wait_for(r"w3 ")
    term.send("\x03")
    term.wait_for(r"interrupted")
    assert {"interrupt": True} in read_log()
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_slash_commands_shift_tab_and_exit(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("/help")
    term.wait_for(r"/show-thinking")
    term.line("/nope")
    term.wait_for(r"unknown command /nope")
    # Shift+Tab cycles ask -> auto-edit -> plan -> ask (yolo only once used), shown by the
    # status bar alone: no line printed per press.
    term.send(SHIFT_TAB)
    term.wait_for(r"(?m)^ auto-edit ·", screen_only=True)
    term.send(SHIFT_TAB)
    term.wait_for(r"plan ›", screen_only=True)
    term.send(SHIFT_TAB)
    term.wait_for(r"(?m)^ ask ·", screen_only=True)
    dispatched = [e["dispatch"] for e in read_log() if "dispatch" in e]
    assert dispatched[-3:] == ["/mode auto-edit", "/plan", "/mode ask"], dispatched
    assert "mode: " not in term.transcript()
    term.line("/mode yolo")
    term.send(SHIFT_TAB)  # yolo -> ask -> auto-edit -> plan -> yolo, now that yolo was used
    term.send(SHIFT_TAB)
    term.send(SHIFT_TAB)
    term.send(SHIFT_TAB)
    term.wait_for(r"(?m)^ yolo ·", screen_only=True)
    term.line("/mode ask")
    term.line("hi")  # the session goes on after an unknown command
    term.wait_for(r"Hello from the stand-in\.")
    term.line("/exit")
    assert term.wait_exit() == 0


def test_shell_prefix_and_shell_mode(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("!echo shell-$((40+2))")
    term.wait_for(r"shell-42")
    term.wait_for(r"exit 0")
    term.line("!")
    term.wait_for(r"shell mode")
    term.line("exit 3")
    term.wait_for(r"✗ exit 3")
    term.settle(0.3)
    term.line("!")
    term.wait_for(r"left shell mode")
    assert not [e for e in read_log() if "chat" in e], "shell commands must not reach the model"
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_history_per_directory_without_consecutive_duplicates(stand_in, yuyao_home):
    term, _ = stand_in()
    term.wait_ready()
    for text in ("/help", "/help", "hi"):
        term.line(text)
        term.settle(0.6)
    term.wait_for(r"Hello from the stand-in\.")
    term.send(CTRL_D)
    assert term.wait_exit() == 0
    files = list((yuyao_home / "history").iterdir())
    assert len(files) == 1 and files[0].name.startswith("work-")
    entries = [ln[1:] for ln in files[0].read_text().splitlines() if ln.startswith("+")]
    assert entries == ["/help", "hi"]


@pytest.mark.core
def test_missing_model_environment(tmp_path, env):
    """Without D2A_MODEL_*: a message naming the variables, and the session still starts for
    slash commands; a chat message says what is missing."""
    term = Term([sys.executable, "-m", "yuyao"], env(None), tmp_path)
    try:
        for name in ("D2A_MODEL_BASE_URL", "D2A_MODEL_NAME", "D2A_MODEL_API_KEY"):
            term.wait_for(name)
        term.wait_for(r"Slash commands work now")
        term.wait_for(r"thinking collapsed", screen_only=True)  # the prompt is up
        term.line("/status")
        term.wait_for(r"(?m)^mode\s+ask")
        term.line("hello")
        term.wait_for(r"no model configured: set D2A_MODEL_BASE_URL")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
        out = term.transcript()
        assert "Traceback" not in out
        assert "mini" not in out.lower()
    finally:
        term.close()


# --------------------------------------------------------------------------------------------
# The real product against the scripted model server.


def yuyao_term(env: dict, cwd: Path, *args: str) -> Term:
    return Term([sys.executable, "-m", "yuyao", *args], env, cwd)


@pytest.mark.core
def test_core_banner_and_answer(fake_llm, env, repo):
    server = fake_llm([say("Hello from **the model**, scripted.")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_for(rf"yuyao {re.escape(VERSION)}")
        term.wait_for(r"fake-model")
        term.line("hi")
        term.wait_for(r"Hello from the model, scripted\.")
        assert "mini" not in term.transcript().lower()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_tool_call_lands_on_disk(fake_llm, env, repo):
    server = fake_llm(
        [
            call("write", file_path="notes.txt", content="written by yuyao\n"),
            say("The file is written."),
        ]
    )
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_for(r"yolo")
        term.line("create notes.txt")
        term.wait_for(r"write\s+notes\.txt")
        term.wait_for(r"✓")
        term.wait_for(r"The file is written\.")
        assert (repo / "notes.txt").read_text() == "written by yuyao\n"
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_slash_commands(fake_llm, env, repo):
    server = fake_llm([say("still here")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("/help")
        term.wait_for(r"/mode")
        term.wait_for(r"/exit")
        term.line("/nope")
        term.wait_for(r"(?i)unknown")
        term.line("hello again")
        term.wait_for(r"still here")
        term.line("/exit")
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_permission_prompt_shows_the_change_and_obeys(fake_llm, env, repo):
    server = fake_llm(
        [
            call("write", file_path="kept.txt", content="yes please\n"),
            call("write", file_path="refused.txt", content="no thanks\n"),
            say("Two writes attempted."),
        ]
    )
    term = yuyao_term(env(server), repo, "--mode", "ask")
    try:
        term.wait_ready()
        term.line("write two files")
        term.wait_for(r"permission")
        term.wait_for(r"yes please")  # the actual content, not a summary
        term.send("y")
        term.wait_for(r"no thanks")
        term.send("n")
        term.wait_for(r"Two writes attempted\.")
        assert (repo / "kept.txt").read_text() == "yes please\n"
        assert not (repo / "refused.txt").exists()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_trust_prompt_lists_what_the_project_asks_for(fake_llm, env, repo, yuyao_home):
    (repo / ".yuyao").mkdir()
    (repo / ".yuyao" / "config.toml").write_text('mode = "yolo"\n')
    server = fake_llm([say("fine")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_for(r"trust this project\?")
        term.wait_for(r"mode = yolo")
        term.send("n")
        term.wait_for(r"kept the defaults")
        term.line("/status")
        term.wait_for(r"(?m)^mode\s+ask")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert not (yuyao_home / "trusted-projects.json").exists()
    term = yuyao_term(env(server), repo)
    try:
        term.wait_for(r"trust this project\?")
        term.send("y")
        term.wait_for(r"trusted project")
        term.line("/status")
        term.wait_for(r"(?m)^mode\s+yolo")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    # Saved: the next start asks nothing.
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("/status")
        term.wait_for(r"(?m)^mode\s+yolo")
        assert "trust this project" not in term.transcript()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


# --------------------------------------------------------------------------------------------
# Shortcuts, prefixes, vim mode, suggestions, status line, settings (seed 002 §5.3-§5.7).

CTRL = {c: chr(ord(c) - 96) for c in "abcdefghijklmnopqrstuvwxyz"}
CTRL_SHIFT_Z = "\x1b[122;6u"  # kitty / CSI-u terminals


def fake_bin(tmp_path: Path, name: str, script: str) -> Path:
    """A stand-in program `name` in its own directory (put first on PATH)."""
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    exe = d / name
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    return d


def chats(read_log) -> list[str]:
    return [e["chat"] for e in read_log() if "chat" in e]


def wait_chats(term: Term, read_log, n: int, timeout: float = 15.0) -> list[str]:
    """Pump the terminal until the session received n chat messages; return them."""
    deadline = time.monotonic() + timeout
    while len(chats(read_log)) < n and time.monotonic() < deadline:
        term.pump()
    got = chats(read_log)
    assert len(got) >= n, f"{got}\n{term.display()}"
    term.settle(0.3)
    return got


def test_vim_mode_ciw_and_dot_repeat(stand_in):
    term, read_log = stand_in(FAKE_CONFIG=json.dumps({"editor.mode": "vim"}))
    term.wait_for(r"vim keys")
    term.wait_for(r"-- INSERT --", screen_only=True)
    term.send("hello world")
    term.settle(0.2)
    term.send(ESC)
    term.wait_for(r"-- NORMAL --", screen_only=True)
    term.send("b")  # back to the start of "world"
    term.send("ciw")  # change the inner word
    term.wait_for(r"-- INSERT --", screen_only=True)
    term.send("there")
    term.send(ESC)
    term.wait_for(r"-- NORMAL --", screen_only=True)
    term.send(ENTER)
    term.wait_for(r"Hello from the stand-in\.")
    assert chats(read_log) == ["hello there"]
    term.wait_for(r"-- INSERT --", screen_only=True)
    term.send("one two three")
    term.settle(0.2)
    term.send(ESC)
    term.settle(0.3)
    term.send("0")
    term.send("cw")
    term.send("X")
    term.send(ESC)
    term.settle(0.3)
    term.send("w")
    term.send(".")  # repeat the change on the next word
    term.settle(0.3)
    term.send("w")
    term.send("x")  # delete a character …
    term.send("w")
    term.send("u")  # … and undo the last change
    term.settle(0.3)
    term.send(ENTER)
    assert wait_chats(term, read_log, 2)[-1] == "X X three"
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_panel_shortcuts_say_what_they_do(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.send(CTRL["t"])
    term.wait_for(r"no task list in this session")
    term.wait_for(r"tasks ▾", screen_only=True)
    term.send(CTRL["t"])
    term.wait_for(r"task list hidden")
    term.send(CTRL["e"])
    term.wait_for(r"no plan or preview in this session yet")
    term.send(CTRL["b"])
    term.wait_for(r"Ctrl\+B: no command is running")
    term.send(CTRL["x"] + CTRL["k"])
    term.wait_for(r"press Ctrl\+X Ctrl\+K again")
    term.send(CTRL["x"] + CTRL["k"])
    term.wait_for(r"no background sub-agents to stop")
    term.send(CTRL["s"])
    term.wait_for(r"nothing is running now")
    assert not chats(read_log)
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_input_undo_redo_and_clear_screen(stand_in):
    term, read_log = stand_in()
    term.wait_for(r"yuyao 9\.8\.7")
    term.send("abc")
    term.settle(0.2)
    term.send(CTRL["z"])  # undo the last edit
    term.settle(0.2)
    term.send(CTRL_SHIFT_Z)  # redo it
    term.settle(0.2)
    term.send(CTRL["z"])
    term.settle(0.2)
    term.send(CTRL["l"])  # clears the display only
    term.settle(0.5)
    assert "yuyao 9.8.7" not in term.display()
    term.send(ENTER)
    term.wait_for(r"Hello from the stand-in\.")
    assert chats(read_log) == ["ab"]
    dispatched = [e["dispatch"] for e in read_log() if "dispatch" in e]
    assert not [
        d for d in dispatched if not d.startswith(("/help", "/config get", "/trust status"))
    ]
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_ctrl_r_reverse_searches_history(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("alpha one")
    term.wait_for(r"Hello from the stand-in\.")
    term.line("beta two")
    wait_chats(term, read_log, 2)
    term.send(CTRL["r"])
    term.wait_for(r"I-search backward", screen_only=True)
    term.send("alp")
    term.settle(0.3)
    term.send(ENTER)  # take the entry …
    term.settle(0.3)
    term.send(ENTER)  # … and send it
    assert wait_chats(term, read_log, 3) == ["alpha one", "beta two", "alpha one"]
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_at_path_indicator_keeps_the_text(stand_in, tmp_path):
    (tmp_path / "work" / "notes.md").write_text("line one\nline two\n")
    deep = tmp_path / "work" / "src" / "pkg"
    deep.mkdir(parents=True)
    (deep / "deep_module.py").write_text("x = 1\n")
    term, read_log = stand_in()
    term.wait_ready()
    term.send("@deep_m")  # completion looks deeper in the project too
    term.wait_for(r"src/pkg/deep_module\.py", screen_only=True)
    term.send(CTRL["c"])
    term.settle(0.3)
    term.send("explain @no")
    term.wait_for(r"notes\.md", screen_only=True)  # completion offers it
    term.send("tes.md and @missing.txt")
    term.wait_for(r"@ notes\.md \(file, 18 B\)", screen_only=True)
    term.wait_for(r"missing\.txt \(not found\)", screen_only=True)
    term.send(ENTER)
    term.wait_for(r"referenced: notes\.md \(file, 18 B\) · missing\.txt \(not found\)")
    term.wait_for(r"Hello from the stand-in\.")
    assert chats(read_log) == ["explain @notes.md and @missing.txt"]
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_ctrl_v_pastes_an_image_with_an_indicator(stand_in, tmp_path):
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
    (tmp_path / "clip.png").write_bytes(png)
    bindir = fake_bin(
        tmp_path,
        "xclip",
        f"""case "$*" in
  *TARGETS*) printf 'TARGETS\\nimage/png\\n' ;;
  *image/png*) cat "{tmp_path / "clip.png"}" ;;
  *) exit 1 ;;
esac
""",
    )
    term, read_log = stand_in(PATH=f"{bindir}:{os.environ['PATH']}", DISPLAY=":99")
    term.wait_ready()
    term.send("what is wrong in ")
    term.send(CTRL["v"])
    term.wait_for(r"image 1 taken in from the clipboard \(xclip, 32 bytes\)")
    term.wait_for(r"🖼 image 1: paste-", screen_only=True)
    term.send(ENTER)
    term.wait_for(r"referenced: 🖼 image 1 paste-")
    term.wait_for(r"Hello from the stand-in\.")
    sent = chats(read_log)[0]
    path = sent.split("@", 1)[1].strip()
    assert sent.startswith("what is wrong in @")
    assert Path(path).read_bytes() == png
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_ctrl_v_without_a_clipboard_reader_says_so(stand_in, tmp_path):
    term, _ = stand_in(DISPLAY="", WAYLAND_DISPLAY="")
    term.wait_ready()
    term.send(CTRL["v"])
    term.wait_for(r"no clipboard reader found: install xclip")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_next_step_suggestion_tab_accepts(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("next")
    term.wait_for(r"Next: run the test suite")
    term.wait_for(r"› run the test suite", screen_only=True)  # greyed in the empty input
    term.send("\t")
    term.send(ENTER)
    assert wait_chats(term, read_log, 2) == ["next", "run the test suite"]
    # typing dismisses it
    term.line("next")
    wait_chats(term, read_log, 3)
    term.settle(0.5)
    prompts = [ln for ln in term.display().splitlines() if ln.startswith("›")]
    assert prompts[-1] == "› run the test suite", term.display()  # offered again
    term.send("x")
    term.settle(0.3)
    assert re.search(r"^› x$", term.display(), re.M), term.display()
    term.send(CTRL["c"])
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_status_line_git_branch_and_pr_bar(stand_in, tmp_path):
    import subprocess

    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "feature-x", str(work)], check=True)
    pr = {
        "number": 12,
        "title": "t",
        "url": "https://example.invalid/pr/12",
        "state": "OPEN",
        "isDraft": False,
        "reviewDecision": "REVIEW_REQUIRED",
        "statusCheckRollup": [{"conclusion": "SUCCESS"}],
    }
    bindir = fake_bin(tmp_path, "gh", f"echo '{json.dumps(pr)}'\n")
    term, _ = stand_in(PATH=f"{bindir}:{os.environ['PATH']}")
    term.wait_for(r"⎇ feature-x", screen_only=True)
    term.wait_for(r"PR #12 awaiting review", screen_only=True)
    assert "\x1b]8;;https://example.invalid/pr/12" in term.raw  # a clickable link
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_no_pr_bar_without_gh(stand_in, tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path / "work")], check=True)
    term, _ = stand_in(
        PATH=os.pathsep.join(
            p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "gh").exists()
        )
    )
    term.wait_for(r"⎇ main", screen_only=True)
    term.settle(0.5)
    assert "PR #" not in term.display()
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_batch_progress_bar_and_ctrl_b_while_bash_runs(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("batch")
    term.wait_for(r"1/3 tools")
    term.wait_for(r"2/3 tools")
    term.wait_for(r"Read three parts\.")
    term.line("bash")
    term.wait_for(r"sleep 30")
    term.settle(0.3)
    term.send(CTRL["b"])
    term.wait_for(r"moving a running command to the background is not available")
    term.send(ESC)
    term.wait_for(r"interrupted")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_settings_view_changes_editor_mode_at_once(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("/config")
    term.wait_for(r"ui\.editor_mode")
    term.wait_for(r"setting to change")
    term.line("ui.editor_mode")
    term.wait_for(r"2 vi")
    term.line("2")
    term.wait_for(r"ui\.editor_mode = vi \(in effect now\)")
    term.wait_for(r"editor mode: vim")
    term.line("")  # close the view
    term.wait_for(r"settings closed")
    term.wait_for(r"-- INSERT --", screen_only=True)
    assert {"dispatch": "/config set ui.editor_mode vi"} in read_log()
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_tui_fullscreen_keeps_the_session(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.line("hi")
    wait_chats(term, read_log, 1)
    term.line("/tui fullscreen")
    term.wait_for(r"full screen \(/tui default leaves\)", screen_only=True)
    term.line("tool")  # permission prompts inside the full-screen view
    term.wait_for(r"permission: bash", screen_only=True)
    term.wait_for(r"ls -la src \| head", screen_only=True)
    term.send("y")
    term.wait_for(r"permission: edit", screen_only=True)
    term.wait_for(r"\+x = 2", screen_only=True)
    term.send("n")
    term.wait_for(r"Tools done\.", screen_only=True)
    answers = [e["answer"] for e in read_log() if "answer" in e]
    assert answers == ["allow", "deny"]
    term.line("slow")  # Esc stops a stream here too
    term.wait_for(r"w3 ", screen_only=True)
    term.send(ESC)
    term.wait_for(r"interrupted", screen_only=True)
    term.send(SHIFT_TAB)
    term.send(SHIFT_TAB)
    term.wait_for(r"plan ›", screen_only=True)
    term.send(SHIFT_TAB)
    term.send(CTRL["t"])  # a task panel here
    term.wait_for(r"no task list in this session \(Ctrl\+T hides this\)", screen_only=True)
    term.send(CTRL["t"])
    term.settle(0.3)
    assert "no task list in this session" not in term.display()
    term.send(CTRL["r"])  # reverse search works here too
    term.send("too")
    term.settle(0.3)
    term.send(ENTER)
    term.wait_for(r"› tool", screen_only=True)
    term.send(CTRL["c"])
    term.line("/tui default")
    term.wait_for(r"back from full screen; the session continues")
    term.line("hi")
    assert wait_chats(term, read_log, 4) == ["hi", "tool", "slow", "hi"]
    assert not [e for e in read_log() if "close" in e]  # one session all along
    term.send(CTRL_D)
    assert term.wait_exit() == 0
    assert [e for e in read_log() if "close" in e]


def test_esc_esc_alt_t_ctrl_g_ctrl_o(stand_in, tmp_path):
    bindir = fake_bin(tmp_path, "fake-editor", "printf 'from the editor' > \"$1\"\n")
    term, read_log = stand_in(EDITOR=str(bindir / "fake-editor"), VISUAL="")
    term.wait_ready()
    term.send("a draft to keep")
    term.settle(0.2)
    term.send(ESC + ESC)  # with text: cleared and saved to history
    term.settle(0.6)
    assert "a draft to keep" not in term.display()
    term.send("\x1b[A")  # ↑ brings it back
    term.wait_for(r"› a draft to keep", screen_only=True)
    term.send(CTRL["c"])
    term.settle(0.3)
    term.send(ESC + ESC)  # on empty input: the rewind menu (= /rewind)
    term.wait_for(r"unknown command /rewind")  # the stand-in has none
    term.send("\x1bt")  # Alt+T = /show-thinking expanded
    term.wait_for(r"thinking display: expanded")
    term.wait_for(r"thinking expanded", screen_only=True)
    dispatched = [e["dispatch"] for e in read_log() if "dispatch" in e]
    assert "/rewind" in dispatched and "/show-thinking expanded" in dispatched
    term.send(CTRL["o"])
    term.wait_for(r"nothing to expand yet")
    term.send(CTRL["g"])  # $EDITOR writes the input
    term.wait_for(r"› from the editor", screen_only=True)
    term.send(ENTER)
    assert wait_chats(term, read_log, 1) == ["from the editor"]
    term.line("tool")
    term.wait_for(r"permission: bash")
    term.send("y")
    term.wait_for(r"permission: edit")
    term.send("y")
    term.wait_for(r"Tools done\.")
    term.settle(0.5)
    term.send(CTRL["o"])  # the transcript of the last turn, expanded
    term.wait_for(r"last turn, expanded")
    term.wait_for(r"file9\.py")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


GOLDEN = Path(__file__).parent / "golden_tui"


def golden(name: str, text: str) -> None:
    """Compare a stable screen region with tests/golden_tui/<name> (UPDATE_GOLDEN=1 rewrites)."""
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"screen differs from {path}:\n{text}"


def region(display: str, first: str, last: str) -> str:
    lines = display.splitlines()
    start = next(i for i, ln in enumerate(lines) if first in ln)
    end = next(i for i in range(start, len(lines)) if last in lines[i])
    return "\n".join(lines[start : end + 1]) + "\n"


def test_golden_permission_prompt_and_settings_view(stand_in):
    term, _ = stand_in()
    term.wait_ready()
    term.line("tool")
    term.wait_for(r"permission: bash")
    term.send("y")
    term.wait_for(r"\[n\] no[\s\S]*\[n\] no", screen_only=True)  # the second prompt
    term.settle(0.5)
    shown = term.display()
    golden(
        "permission_edit.txt",
        region(shown[shown.index("permission: edit") - 3 :], "╭─ permission: edit", "[n] no"),
    )
    term.send("n")
    term.wait_for(r"Tools done\.")
    term.line("/config")
    term.wait_for(r"setting to change")
    term.settle(0.3)
    golden("settings_view.txt", region(term.display(), "settings", "default permission mode"))
    term.line("")
    term.wait_for(r"settings closed")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


# --------------------------------------------------------------------------------------------
# The real core: plan toggle, steering, Esc, vim — what the model receives.


@pytest.mark.core
def test_core_shift_tab_plan_reaches_the_request(fake_llm, env, repo):
    server = fake_llm([say("planning only"), say("back to asking")])
    term = yuyao_term(env(server), repo, "--mode", "ask")
    try:
        term.wait_ready()
        term.send(SHIFT_TAB)  # ask -> auto-edit
        term.send(SHIFT_TAB)  # -> plan
        term.wait_for(r"plan ›", screen_only=True)
        term.wait_for(r"(?m)^ plan · execute ·", screen_only=True)  # the status line
        term.line("what would you change?")
        term.wait_for(r"planning only")
        assert "Permission mode: plan" in server.system_prompt(0)
        term.send(SHIFT_TAB)  # plan -> ask
        term.wait_for(r"(?m)^ ask · execute ·", screen_only=True)
        term.line("and now?")
        term.wait_for(r"back to asking")
        assert server.stated("Permission mode", 1).startswith("ask")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_ctrl_s_steers_mid_stream_and_esc_stops(fake_llm, env, repo):
    long_text = "word " * 400
    (repo / "a.txt").write_text("alpha\n")
    server = fake_llm(
        [
            calls([("read", {"file_path": "a.txt"})], content=long_text, chunk_delay=0.02),
            say("steered answer"),
            say("story " * 800, chunk_delay=0.03),
            say("after the stop"),
        ]
    )
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_ready()
        term.line("read a.txt")
        term.wait_for(r"word word word")
        term.send("use bun instead")
        term.send(CTRL["s"])  # = /queue steer
        term.wait_for(r"queued for the next model call")
        term.wait_for(r"steered answer")
        assert "use bun instead" in server.user_text(1)
        assert "use bun instead" not in server.user_text(0)
        term.line("write a long story")
        term.wait_for(r"story story story")
        term.send(ESC)
        term.wait_for(r"interrupted")
        term.line("hello again")
        term.wait_for(r"after the stop")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_vim_mode_from_config(fake_llm, env, repo, yuyao_home):
    server = fake_llm([say("vim answer")])
    (yuyao_home / "config.toml").write_text('[editor]\nmode = "vim"\n')
    term = yuyao_term(env(server), repo)
    try:
        term.wait_for(r"vim keys")
        term.send("fix the bug in parser")
        term.settle(0.2)
        term.send(ESC)
        term.wait_for(r"-- NORMAL --", screen_only=True)
        term.send("b")
        term.send("ciw")
        term.send("lexer")
        term.send(ESC)
        term.settle(0.3)
        term.send(ENTER)
        term.wait_for(r"vim answer")
        assert "fix the bug in lexer" in server.user_text(0)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


VIM_CASES = [  # (typed in INSERT mode, keys in NORMAL mode, what is sent) — spec §5.6
    ("foo(bar, baz)", "0f(ci(x\x1b", "foo(x)"),
    ('say "hello world" now', '0f"di"', 'say "" now'),
    ("a [b c] d", "0f[da[", "a  d"),
    ("f{a b}", "0f{ci{z\x1b", "f{z}"),
    ("one two three", "0wdaw", "one three"),
    ("one two three", "0dw", "two three"),
    ("one two three", "0de", " two three"),
    ("one two three", "$db", "one two e"),
    ("one two three", "0wD", "one "),
    ("hello world", "0wCthere\x1b", "hello there"),
    ("hello", "ccbye\x1b", "bye"),
    ("abc", "0x", "bc"),
    ("abc", "0xu", "abc"),
    ("a-b-c-d", "0f-;x", "a-bc-d"),
    ("a-b-c-d", "$F-;x", "a-bc-d"),
    ("a-b-c-d", "0f-;,x", "ab-c-d"),
    ('say "hello world" now', "0ca\"'x'\x1b", "say 'x' now"),
    ("x y z", "0tzD", "x y"),
    ("hello", "yyp", "hello\nhello"),
    ("hello", ">>", "    hello"),
    ("first\nsecond", "ggJ", "first second"),
    ("first\nsecond", "ggdd", "second"),
    ("one two", "0yiwP", "oneone two"),
    ("hello world", "0ved", " world"),
    ("one two three", "0cwX\x1bw.", "X X three"),
    ("a b", "0cw?\x1bw.", "? ?"),
]


def test_vim_motions_operators_and_text_objects(stand_in):
    term, read_log = stand_in(FAKE_CONFIG=json.dumps({"editor.mode": "vim"}))
    term.wait_for(r"vim keys")
    results = []
    for n, (typed, keys, _want) in enumerate(VIM_CASES, 1):
        term.wait_for(r"-- INSERT --", screen_only=True)
        term.send(typed.replace("\n", "\n"))  # \n is Ctrl+J: a newline in the input
        term.settle(0.15)
        term.send(ESC)
        term.wait_for(r"-- NORMAL --", screen_only=True)
        for k in keys:
            term.send(k)
            time.sleep(0.03)
            if k == ESC:
                term.settle(0.15)
        term.settle(0.2)
        term.send(ENTER)
        results.append(wait_chats(term, read_log, n)[-1])
    wrong = [
        (typed, keys, want, got)
        for (typed, keys, want), got in zip(VIM_CASES, results)
        if got != want
    ]
    assert not wrong, wrong
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_ctrl_e_collapses_and_expands_the_plan(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.send(SHIFT_TAB)
    term.send(SHIFT_TAB)
    term.wait_for(r"plan ›", screen_only=True)
    term.line("plan the change")
    wait_chats(term, read_log, 1)
    term.send(CTRL["e"])
    term.wait_for(r"plan collapsed: Hello from the stand-in\.")
    term.send(CTRL["e"])
    term.wait_for(r"── plan ──")
    term.wait_for(r"Ctrl\+E collapses")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_a_line_typed_during_startup_is_submitted(stand_in):
    term, read_log = stand_in()
    term.send("typed early")  # before the prompt is up
    term.send(ENTER)
    assert wait_chats(term, read_log, 1) == ["typed early"]
    term.send(CTRL_D)
    assert term.wait_exit() == 0


@pytest.mark.core
def test_core_settings_view_writes_the_config_and_applies_it(fake_llm, env, repo, yuyao_home):
    server = fake_llm([say("ok")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("/settings")
        term.wait_for(r"ui\.editor_mode")
        term.wait_for(r"ui\.output_style")
        term.wait_for(r"setting to change")
        term.line("ui.editor_mode")
        term.wait_for(r"2 vi")
        term.line("2")
        term.wait_for(r"ui\.editor_mode = vi")
        term.wait_for(r"editor mode: vim")
        term.wait_for(r"setting to change")
        term.line("ui.theme")
        term.line("mono")
        term.wait_for(r"ui\.theme = mono")
        term.line("")
        term.wait_for(r"settings closed")
        term.wait_for(r"-- INSERT --", screen_only=True)
        config = (yuyao_home / "config.toml").read_text()
        assert "vi" in config and "mono" in config
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_slash_typed_mid_turn_is_a_command_not_a_message(fake_llm, env, repo):
    server = fake_llm([say("story " * 400, chunk_delay=0.03), say("planned")])
    term = yuyao_term(env(server), repo, "--mode", "auto-edit")
    try:
        term.wait_ready()
        term.line("tell a story")
        term.wait_for(r"story story")
        term.line("/plan")
        term.wait_for(r"/plan: applies after this turn")
        term.line("/nope")
        term.wait_for(r"unknown command: /nope")
        term.line("/status")
        term.wait_for(r"mode\s+auto-edit")  # a query runs at once; the switch waits
        term.wait_for(r"applied after the turn")
        term.wait_for(r"plan ›", screen_only=True)
        term.line("what next?")
        term.wait_for(r"planned")
        assert server.stated("Permission mode", 0).startswith("auto-edit")
        assert server.stated("Permission mode", 1).startswith("plan")
        for i in range(2):
            assert "/plan" not in server.user_text(i) and "/nope" not in server.user_text(i)
        term.send(SHIFT_TAB)  # plan -> the next mode of the cycle (ask)
        term.wait_for(r"(?m)^ ask ·", screen_only=True)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


UP, DOWN = "\x1b[A", "\x1b[B"


@pytest.mark.core
def test_core_esc_esc_rewind_menu_restores_code_and_conversation(fake_llm, env, repo):
    server = fake_llm(
        [
            call("write", file_path="notes.txt", content="first\n"),
            say("wrote first"),
            call("write", file_path="notes.txt", content="second\n"),
            say("wrote second"),
            say("after the rewind"),
        ]
    )
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_ready()
        term.line("write first")
        term.wait_for(r"wrote first")
        term.line("write second")
        term.wait_for(r"wrote second")
        assert (repo / "notes.txt").read_text() == "second\n"
        term.settle(0.3)
        term.send(ESC + ESC)  # empty input: the checkpoint menu, newest selected
        term.wait_for(r"Rewind to before which prompt\?", screen_only=True)
        term.wait_for(r"❯ 2\. 'write second'", screen_only=True)
        term.send(ESC)  # Esc cancels: nothing changes
        term.wait_for(r"rewind cancelled")
        assert (repo / "notes.txt").read_text() == "second\n"
        term.wait_ready()
        term.send(ESC + ESC)
        term.wait_for(r"❯ 2\. 'write second'", screen_only=True)
        term.send(UP)
        term.wait_for(r"❯ 1\. 'write first'", screen_only=True)
        term.send(DOWN)
        term.wait_for(r"❯ 2\. 'write second'", screen_only=True)
        term.send(ENTER)
        term.wait_for(r"Summarize up to here", screen_only=True)
        term.wait_for(r"❯ 1\. Restore code and conversation", screen_only=True)
        term.send(ENTER)
        term.wait_for(r"Conversation restored to just before prompt")
        assert (repo / "notes.txt").read_text() == "first\n"
        term.wait_for(r"› write second", screen_only=True)  # the prompt, back to edit
        term.send("\x15")  # Ctrl+U: clear it
        term.line("go on")
        term.wait_for(r"after the rewind")
        last = server.user_text(-1)
        assert "write first" in last and "write second" not in last
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_markdown_renders_while_the_reply_streams(stand_in):
    term, _ = stand_in()
    term.wait_ready()
    term.line("md")
    term.wait_for(r"still going", screen_only=True)  # mid-stream (the turn is not over)
    shown = term.display()
    assert "esc to interrupt" in shown
    assert "Big Title" in shown and "# Big Title" not in shown
    assert "• first item" in shown and "**bold**" not in shown and "```" not in shown
    assert "def add(a, b):" in shown
    term.wait_for(r"(?m)^›$", screen_only=True)  # the turn ended: the final render
    final = term.display()
    assert "esc to interrupt" not in final
    assert final.count("Big Title") == 1 and "```" not in final and "• second item" in final
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_ctrl_c_twice_on_an_empty_prompt_exits(stand_in):
    term, read_log = stand_in()
    term.wait_ready()
    term.send("a draft")
    term.settle(0.2)
    term.send(CTRL["c"])  # non-empty: cleared, no hint
    term.settle(0.4)
    assert "a draft" not in term.display() and "again to exit" not in term.display()
    term.send(CTRL["c"])  # empty: the hint
    term.wait_for(r"press Ctrl\+C again to exit", screen_only=True)
    term.settle(2.5)  # the window passes: the hint goes, and a press starts over
    assert "again to exit" not in term.display()
    term.send(CTRL["c"])
    term.wait_for(r"press Ctrl\+C again to exit", screen_only=True)
    assert not term.eof
    term.send(CTRL["c"])  # the second press within 2 s leaves
    assert term.wait_exit() == 0
    assert {"close": True} in read_log()


@pytest.mark.core
def test_core_continue_shows_the_last_exchanges(fake_llm, env, repo):
    server = fake_llm(
        [
            say("Paris is the capital.\nMore detail here."),
            call("bash", command="ls -1"),
            say("Two files: calc.py and README."),
            say("answer four"),
            say("answer five"),
            say("continued fine"),
        ]
    )
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_ready()
        for prompt, answer in [
            ("capital of France?", "Paris is the capital"),
            ("list the files", "Two files"),
            ("third question", "answer four"),
            ("fourth question", "answer five"),
        ]:
            term.line(prompt)
            term.wait_for(answer)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    term = yuyao_term(env(server), repo, "-c")
    try:
        term.wait_ready()
        shown = term.display()
        assert "where you left off" in shown and "last 3 of 4 exchanges" in shown
        assert "capital of France?" not in shown  # older than the last three
        assert re.search(r"› list the files\n\s+● bash ls -1\n\s+Two files: calc\.py", shown), shown
        assert "› fourth question" in shown and "answer five" in shown
        term.line("go on")
        term.wait_for(r"continued fine")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_bash_permission_box_shows_the_command_once(fake_llm, env, repo):
    server = fake_llm([call("bash", command="touch perm-check-123.txt"), say("asked")])
    term = yuyao_term(env(server), repo, "--mode", "ask")
    try:
        term.wait_ready()
        term.line("run it")
        term.wait_for(r"\[n\] no", screen_only=True)
        box = region(term.display(), "permission: bash", "[n] no")
        assert box.count("touch perm-check-123.txt") == 1, box
        term.send("n")
        term.wait_for(r"asked")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_slash_popup_and_help_fit_without_cutting_words(fake_llm, env, repo):
    from yuyao import _core

    helps = {"/" + c["name"]: c["help"] for c in json.loads(_core.Session.command_table_json())}
    server = fake_llm([])
    term = Term([sys.executable, "-m", "yuyao"], env(server), repo, cols=72)
    try:
        term.wait_for(r"ctx \d", screen_only=True)  # the status line (cut at 72 columns)
        term.settle(0.3)
        term.send("/")
        term.wait_for(r"/add-dir", screen_only=True)
        term.send("d")  # /debug, /diff, /dream
        term.wait_for(r"/debug .*role", screen_only=True)
        rows = [ln for ln in term.display().splitlines() if re.match(r"^\s*/[a-z-]+\s{2,}\S", ln)]
        assert rows
        for row in rows:
            name, meta = re.match(r"^\s*(/[a-z-]+)\s+(.*?)\s*$", row).groups()
            full = helps[name]
            if meta != full:
                assert meta.endswith("…"), row
                kept = meta[:-1]
                assert full.startswith(kept) and full[len(kept.rstrip(" ,;:(—-"))] in " ,;:(", row
        term.send("\x15")
        term.line("/help")
        term.wait_for(r"Prefixes")
        out = term.transcript()
        help_text = out[out.rindex("Commands") :]
        for heading in ("Session", "Mode and role", "Files and changes", "Display"):
            assert re.search(rf"(?m)^{heading}\s*$", help_text), heading
        assert max(len(ln) for ln in help_text.splitlines()) <= 72
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_vim_u_undoes_a_whole_insert(stand_in):
    term, read_log = stand_in(FAKE_CONFIG=json.dumps({"editor.mode": "vim"}))
    term.wait_for(r"-- INSERT --", screen_only=True)
    term.send("keep this")
    term.settle(0.2)
    term.send(ESC)
    term.wait_for(r"-- NORMAL --", screen_only=True)
    term.send("A")  # a second insert session: one change
    term.send(" and add more")
    term.send("\x7f\x7f")  # backspaces inside it belong to the same change
    term.send("re words")
    term.settle(0.2)
    term.send(ESC)
    term.wait_for(r"› keep this and add more words", screen_only=True)
    term.send("u")  # undoes the whole second insert
    term.wait_for(r"(?m)› keep this$", screen_only=True)
    term.send("u")  # then the first
    term.settle(0.4)
    assert "keep" not in term.display().split("›")[-1]
    term.send("\x12")  # Ctrl+R: redo the first insert
    term.wait_for(r"(?m)› keep this$", screen_only=True)
    term.send("A!")
    term.send(ESC)
    term.send(ENTER)
    assert wait_chats(term, read_log, 1) == ["keep this!"]
    term.send(CTRL_D)
    assert term.wait_exit() == 0


@pytest.mark.core
def test_core_next_step_is_predicted_from_edits_and_test_runs(fake_llm, env, repo):
    (repo / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 5\n"
    )
    git(repo, "add", "test_calc.py")
    git(repo, "commit", "-qm", "a test")
    pytest_cmd = "python3 -m pytest -q -p no:cacheprovider test_calc.py"
    fixed_test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    server = fake_llm(
        [
            calls(
                [
                    ("read", {"file_path": "calc.py"}),
                    (
                        "write",
                        {"file_path": "calc.py", "content": "def add(a, b):\n    return b + a\n"},
                    ),
                ]
            ),
            say("Rewrote add."),
            call("bash", command=pytest_cmd),
            say("A test fails."),
            calls(
                [
                    ("read", {"file_path": "test_calc.py"}),
                    ("write", {"file_path": "test_calc.py", "content": fixed_test}),
                ]
            ),
            say("Fixed the test."),
            call("bash", command=pytest_cmd),
            say("All green."),
        ]
    )
    term = yuyao_term(env(server, PYTHONDONTWRITEBYTECODE="1"), repo, "--yolo")
    try:
        term.wait_ready()
        term.line("make add commutative")
        term.wait_for(r"Rewrote add\.")
        term.wait_for(r"(?m)› run the tests$", screen_only=True)  # edited, not tested
        term.send("\t")
        term.send(ENTER)
        term.wait_for(r"A test fails\.")
        assert server.user_text(2).endswith("run the tests")
        term.wait_for(r"(?m)› fix test_calc\.py::test_add$", screen_only=True)
        term.line("fix the test")
        term.wait_for(r"Fixed the test\.")
        term.wait_for(rf"(?m)› run the tests \({re.escape(pytest_cmd)}\)$", screen_only=True)
        term.send("\t")
        term.send(ENTER)
        term.wait_for(r"All green\.")
        term.wait_for(r"(?m)› commit the changes$", screen_only=True)  # passing, uncommitted
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


@pytest.mark.core
def test_core_custom_command_and_untrusted_project_hook(fake_llm, env, repo, tmp_path):
    """Extensions in the TUI (DESIGN §8): the trust prompt shows what a project hook would run; refused, the
    hook does not run; a namespaced custom command is in /help and runs as a turn."""
    marker = tmp_path / "hook-ran"
    (repo / ".yuyao" / "commands" / "git").mkdir(parents=True)
    (repo / ".yuyao" / "commands" / "git" / "commit.md").write_text(
        "---\ndescription: Commit the work\n---\nCommit with message: {{args}}\n"
    )
    (repo / ".yuyao" / "hooks.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"command": f"touch {marker}"}]}})
    )
    server = fake_llm([say("Committed as asked.")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_for(r"trust this project\?")
        term.wait_for(r"UserPromptSubmit hook runs")
        term.send("n")
        term.wait_for(r"kept the defaults")
        term.line("/help")
        term.wait_for(r"/git:commit")
        term.line("/git:commit fix the adder")
        term.wait_for(r"Committed as asked\.")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert "Commit with message: fix the adder" in server.user_text(0)
    assert not marker.exists(), "an untrusted project's hook ran in the TUI"
