"""The planning workflow's approval gate in a real terminal (pexpect pty + pyte screen),
against the scripted model: the plan is shown, edited at the gate (in $EDITOR, or inline) and
validated again, then Execute starts the implementation turn by itself."""

from __future__ import annotations

import json
import sys

import pytest
from fakellm import call, say
from test_planning import proposed
from test_tui import CTRL_D, ENTER, ESC, yuyao_term

CTRL_E, CTRL_G = "\x05", "\x07"

pytestmark = pytest.mark.core


def test_core_gate_edit_then_execute_starts_implementation(fake_llm, env, repo, tmp_path):
    server = fake_llm(
        [
            proposed(),
            call("write", file_path="sub.txt", content="sub\n"),
            say("Implemented the edited plan."),
        ]
    )
    fixer = tmp_path / "edit_plan.py"
    fixer.write_text(
        "import sys\np = sys.argv[1]\nt = open(p).read()\n"
        "open(p, 'w').write(t.replace('next to add', 'right after add EDITED'))\n"
    )
    term = yuyao_term(env(server, EDITOR=f"{sys.executable} {fixer}", VISUAL=None), repo, "--yolo")
    try:
        term.wait_ready()
        term.line("/plan add a subtract function")
        term.wait_for(r"Plan ready: Add a subtract function \(2 steps", screen_only=True)
        assert "<proposed_plan>" not in term.transcript()
        assert term.transcript().count("Implementation Steps") == 1, "the plan is shown once"
        assert "verify: python3 -c" in term.transcript()  # the synopsis
        for item in ("Execute", "Auto-accept edits", "Edit", "Keep planning", "Cancel"):
            term.wait_for(item, screen_only=True)
        term.send(CTRL_E)  # collapse the plan shown in full, the gate stays
        term.wait_for(r"plan collapsed: ")
        term.wait_for(r"❯ 1\. Execute", screen_only=True)
        term.send(CTRL_G)  # Edit: $EDITOR on the plan file, then the core validates it
        term.wait_for(r"is valid\s+\(2 steps\)")
        term.wait_for(r"Plan ready: Add a subtract function", screen_only=True)
        [path] = list((repo / ".plans").glob("*.md"))
        assert "right after add EDITED" in path.read_text()
        assert not (repo / "sub.txt").exists()
        term.send(ENTER)  # Execute
        term.wait_for(r"Implemented the edited plan\.")
        term.settle(0.5)
        assert term.transcript().count("Implemented the edited plan.") == 1
        assert (repo / "sub.txt").read_text() == "sub\n"
        implementation = json.dumps(server.messages(1))
        assert "right after add EDITED" in implementation, "the edited plan is pinned"
        assert "Permission mode: yolo" in implementation
        assert len(server.requests) == 3, "no extra 'continue' was needed"
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_core_gate_inline_edit_is_validated_before_it_replaces_the_plan(
    fake_llm, env, repo, tmp_path
):
    server = fake_llm(
        [
            proposed(),
            call("write", file_path="sub.txt", content="sub\n"),
            say("Implemented the inline-edited plan."),
        ]
    )
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_ready()
        term.line("/plan add a subtract function")
        term.wait_for(r"Plan ready: Add a subtract function \(2 steps", screen_only=True)
        term.wait_for("Edit inline", screen_only=True)
        [path] = list((repo / ".plans").glob("*.md"))
        valid = path.read_text()
        # An invalid inline edit (an unresolved decision): refused, the file stays as it was.
        term.send("4")
        term.wait_for(r"Esc Enter to save")
        term.wait_for(r"integers only", screen_only=True)  # pre-filled with the plan
        term.send(ENTER + "Next open decision: which base?")
        term.send(ESC + ENTER)
        term.wait_for(r"does not validate")
        term.wait_for(r"unresolved `Next open decision")
        term.wait_for(r"Plan ready: Add a subtract function", screen_only=True)
        assert path.read_text() == valid
        # A valid one replaces the plan.
        term.send("4")
        term.wait_for(r"integers only", screen_only=True)
        term.send(ENTER + "- EDITED INLINE default")
        term.send(ESC + ENTER)
        term.wait_for(r"is valid\s+\(2 steps\)")
        term.wait_for(r"Plan ready: Add a subtract function", screen_only=True)
        assert "EDITED INLINE default" in path.read_text()
        assert "which base" not in path.read_text()
        assert not (repo / "sub.txt").exists()
        term.send("1")  # Execute
        term.wait_for(r"Implemented the inline-edited plan\.")
        assert (repo / "sub.txt").read_text() == "sub\n"
        assert "EDITED INLINE default" in json.dumps(server.messages(1)), "the edit is pinned"
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_core_ctrl_t_shows_the_todo_tree(fake_llm, env, repo):
    server = fake_llm(
        [
            call(
                "todo",
                items=[
                    {"content": "alpha", "status": "completed"},
                    {"content": "beta", "status": "in_progress"},
                    {"id": "2.1", "content": "beta detail", "status": "blocked"},
                    {"content": "gamma"},
                ],
            ),
            say("Listed the work."),
        ]
    )
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_ready()
        term.line("track it")
        term.wait_for(r"Listed the work\.")
        term.wait_for(r"\[-\] 2\. beta")  # the tree in the transcript after the update
        term.wait_ready()
        term.send("\x14")  # Ctrl+T: the panel
        term.wait_for(r"task list")
        for row in (r"\[x\] 1\. alpha", r"    \[!\] 2\.1\. beta detail", r"□ 3\. gamma"):
            term.wait_for(row)
        assert "no task list in this session" not in term.transcript()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
