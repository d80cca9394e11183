"""Seed 000 #7 ("never says done when it is not"): every turn whose request asks for a change is
checked, whatever ran — every change refused, or nothing called at all — and reported as not
done on every surface (`-p` exit 1, `--json`, agent_api). A test or lint command the model ran
counts as verification; a call that would fail on its own preconditions is refused before
anyone is asked to approve it."""

from __future__ import annotations

import json

import pytest
from fakellm import calls, say, tool_msgs
from test_tui import CTRL_D, yuyao_term
from test_verification import READ, RIGHT

pytestmark = pytest.mark.core

FIXED = "Fixed: sub() now subtracts and all tests pass."


def run_json(yuyao, env, server, prompt: str, *flags: str):
    proc = yuyao("-p", prompt, "--output-format", "json", *flags, env=env(server))
    return proc, json.loads(proc.stdout)


def test_every_change_refused_is_not_done(fake_llm, yuyao, env, repo):
    server = fake_llm(
        [
            calls([READ], content="Reading calc.py."),
            calls(
                [("write", {"file_path": "calc.py", "content": RIGHT})], content="Writing the fix."
            ),
            say(FIXED),
            say(FIXED),
        ]
    )
    # The default mode asks before a write; in -p nobody is there to approve it.
    proc, doc = run_json(yuyao, env, server, "Add sub to calc.py")
    assert proc.returncode == 1, proc.stderr
    assert doc["exit_status"] == "NotSubmitted", doc
    c = doc["completion"]
    assert c["nothing_changed"] is True, c
    assert "nothing was changed: 1 call was not run" in c["problems"][0], c
    assert "nothing was changed" in (c["contradiction"] or ""), c
    # The answer the user reads carries the contradiction, and the reason is on stderr.
    assert "[completion check: not clean]" in doc["result"]
    assert "the request asks for a change" in doc["error"]
    assert "def sub" not in (repo / "calc.py").read_text()


def test_a_claim_with_no_tool_call_is_not_done(fake_llm, yuyao, env, repo):
    server = fake_llm([say("I fixed it; all tests pass."), say("I fixed it; all tests pass.")])
    proc = yuyao("-p", "fix the bug in calc.py", env=env(server))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "nothing was changed: no file was edited and no command ran" in proc.stdout
    assert "says the work is done, but it is not" in proc.stdout
    assert "the request asks for a change" in proc.stderr


def test_a_question_answered_in_words_is_still_done(fake_llm, yuyao, env, repo):
    server = fake_llm([say("calc.py defines add(a, b), which returns their sum.")])
    proc, doc = run_json(yuyao, env, server, "What does calc.py do?")
    assert proc.returncode == 0, proc.stderr
    assert doc["exit_status"] == "Answered"
    assert doc["completion"] is None


def test_agent_api_reports_a_talk_only_change_as_not_done(fake_llm, api):
    server = fake_llm(
        [
            say("Done: the bug is fixed."),
            say("Done: the bug is fixed."),
            say("It adds two numbers."),
        ]
    )
    session = api(server)
    text = session.chat("Fix the bug in calc.py")
    assert "[completion check: not clean]" in text
    assert "nothing was changed" in text
    turn = session.last_turn
    assert turn["exit_status"] == "NotSubmitted" and turn["done"] is False, turn
    assert "the request asks for a change" in turn["error"]
    # A later question is answered and done again.
    session.chat("What does add do?")
    assert session.last_turn["done"] is True


def test_a_test_command_the_model_ran_counts_as_verification(fake_llm, yuyao, env, repo):
    (repo / "test_calc.py").write_text("import calc\nassert calc.sub(3, 1) == 2\nprint('ok')\n")
    server = fake_llm(
        [
            calls([READ], content="Reading."),
            calls([("write", {"file_path": "calc.py", "content": RIGHT})], content="Fixing."),
            calls([("bash", {"command": "python3 test_calc.py"})], content="Testing."),
            say("Added sub(); python3 test_calc.py passes."),
        ]
    )
    proc, doc = run_json(yuyao, env, server, "Add sub to calc.py", "--mode", "yolo")
    assert proc.returncode == 0, proc.stderr
    c = doc["completion"]
    assert c["verification"]["command"] == "python3 test_calc.py", c
    assert c["verification"]["source"] == "run by the model" and c["verified"] is True
    assert c["clean"] is True, c["problems"]


def test_an_edit_after_the_model_test_run_leaves_it_unverified(fake_llm, yuyao, env, repo):
    (repo / "test_calc.py").write_text("print('ok')\n")
    server = fake_llm(
        [
            calls([("bash", {"command": "python3 test_calc.py"})], content="Baseline."),
            calls([READ], content="Reading."),
            calls([("write", {"file_path": "calc.py", "content": RIGHT})], content="Fixing."),
            say("Added sub()."),
            say("Added sub(); it is not verified."),
        ]
    )
    proc, doc = run_json(yuyao, env, server, "Add sub to calc.py", "--mode", "yolo")
    problems = doc["completion"]["problems"]
    assert any("edited after the last test run" in p for p in problems), problems


def test_an_unread_file_is_refused_before_anyone_is_asked(fake_llm, env, repo):
    server = fake_llm(
        [
            calls([("write", {"file_path": "calc.py", "content": RIGHT})], content="Writing."),
            say("I could not write calc.py yet."),
            say("I could not write calc.py: it was not read yet."),  # after the check
            calls([READ], content="Reading."),
            calls([("write", {"file_path": "calc.py", "content": RIGHT})], content="Writing."),
            say("Fixed: sub() added."),
            say("Fixed: sub() added."),  # restated with the check, still claiming it
        ]
    )
    term = yuyao_term(env(server), repo, "--mode", "ask")
    try:
        term.wait_ready()
        term.line("add sub to calc.py")
        term.wait_for(r"could not write calc\.py yet")
        # Approving would not have helped: the precondition refused it, no prompt was shown.
        assert "permission: write" not in term.transcript()
        result = tool_msgs(server.body(1))[-1]["content"]
        assert "has not been read in this session" in result, result
        # Once read, the same write is put to the user; "n" leaves nothing changed.
        term.line("please add it now")
        term.wait_for(r"permission")
        term.send("n")
        term.wait_for(r"Fixed: sub\(\) added\.")
        term.wait_for(r"nothing was changed: 1 call was refused by you")
        term.wait_for(r"says the work is done, but it is not")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert "def sub" not in (repo / "calc.py").read_text()
