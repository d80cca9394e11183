"""`yuyao -p` (spec §2, §3.1, §4, §9) against the scripted model."""

from __future__ import annotations

import json
import shlex

import pytest
from fakellm import call, calls, error, say

pytestmark = pytest.mark.core

QUESTION = "Read calc.py and tell me what it does."
ANSWER = "calc.py defines add(a, b), which returns the sum."


@pytest.fixture
def read_then_answer(fake_llm, repo):
    """A server that reads calc.py, then gives ANSWER (a genuine, tool-backed result)."""
    return lambda: fake_llm([call("read", file_path=str(repo / "calc.py")), say(ANSWER)])


@pytest.fixture
def write_attempt(fake_llm, repo):
    """``write_attempt()`` -> (server, path): the model tries to create ``new.txt``."""

    def make():
        path = repo / "new.txt"
        step = calls([("write", {"file_path": str(path), "content": "new\n"}, "call_write")])
        return fake_llm([step, say("Tried to write new.txt.")]), path

    return make


def output(proc) -> str:
    return proc.stdout + proc.stderr


def test_prints_the_final_answer(read_then_answer, yuyao, env):
    server = read_then_answer()
    proc = yuyao("-p", QUESTION, env=env(server))
    assert proc.returncode == 0, output(proc)
    assert ANSWER in proc.stdout
    assert QUESTION in server.user_text(0)


@pytest.mark.parametrize("flags", [["--output-format", "json"], ["--json"]], ids=["long", "alias"])
def test_json_output_is_one_document(read_then_answer, yuyao, env, flags):
    proc = yuyao("-p", QUESTION, *flags, env=env(read_then_answer()))
    assert proc.returncode == 0, output(proc)
    try:
        document = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(f"stdout is not one JSON document ({exc}):\n{proc.stdout}") from exc
    assert {"result", "exit_status", "cost_usd", "steps", "session_id", "usage"} <= set(document)
    assert ANSWER in document["result"]
    assert document["exit_status"] == "Submitted"


@pytest.mark.parametrize("stream", ["on", "off", None], ids=["stream-on", "stream-off", "default"])
def test_answer_with_and_without_streaming(read_then_answer, yuyao, env, stream):
    server = read_then_answer()
    flags = ["--stream", stream] if stream else []
    proc = yuyao("-p", QUESTION, *flags, env=env(server))
    assert proc.returncode == 0, output(proc)
    assert ANSWER in proc.stdout
    if stream:
        assert all(bool(r["body"].get("stream")) == (stream == "on") for r in server.requests)


def test_default_ask_mode_refuses_mutations(write_attempt, yuyao, env, expect_refused):
    server, path = write_attempt()
    proc = yuyao("-p", "Create new.txt", env=env(server))
    assert not path.exists(), output(proc)
    expect_refused(server, "call_write")


@pytest.mark.parametrize("flag", ["--yolo", "-y", "--dangerously-skip-permissions"])
def test_yolo_lets_the_write_land(write_attempt, yuyao, env, flag):
    server, path = write_attempt()
    proc = yuyao("-p", "Create new.txt", flag, env=env(server))
    assert proc.returncode == 0, output(proc)
    assert path.read_text() == "new\n"


def test_plan_mode_refuses_writes(write_attempt, yuyao, env, expect_refused):
    server, path = write_attempt()
    yuyao("-p", "Create new.txt", "--mode", "plan", env=env(server))
    assert not path.exists()
    expect_refused(server, "call_write")


@pytest.mark.parametrize(
    "flags, word",
    [
        (["--mode", "plan"], "plan"),
        (["--plan"], "plan"),
        (["--mode", "auto-edit"], "auto-edit"),
        (["--mode", "yolo"], "yolo"),
        (["--role", "debug"], "debug"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_system_prompt_states_the_mode(fake_llm, yuyao, env, flags, word):
    server = fake_llm([say("ok")])
    yuyao("-p", "hello", *flags, env=env(server))
    assert server.requests, "no request reached the model"
    assert word in server.system_prompt(0).lower()


def test_modes_give_different_system_prompts(fake_llm, yuyao, env):
    prompts = []
    for flag in ("--plan", "--yolo"):
        server = fake_llm([say("ok")])
        yuyao("-p", "hello", flag, env=env(server))
        prompts.append(server.system_prompt(0))
    assert prompts[0] != prompts[1]


def test_missing_model_environment_is_a_clear_error(yuyao, env):
    proc = yuyao("-p", "hello", env=env(None))
    assert proc.returncode == 1, output(proc)
    for name in ("D2A_MODEL_BASE_URL", "D2A_MODEL_NAME", "D2A_MODEL_API_KEY"):
        assert name in output(proc)
    assert "Traceback" not in output(proc)


def test_unknown_flag_exits_2(fake_llm, yuyao, env):
    server = fake_llm([say("never asked")])
    proc = yuyao("-p", "hello", "--no-such-flag", env=env(server))
    assert proc.returncode == 2, output(proc)
    assert "--no-such-flag" in output(proc)
    assert server.requests == []


# ---------------------------------------------------------------------------------------------
# What -p prints where: the answer alone on stdout; thinking, progress and errors on stderr, each
# on lines of their own (a terminal shows both streams interleaved).

THOUGHT_1 = "I should look at calc.py first."
THOUGHT_2 = "It adds two numbers; that answers the question."
STREAMS = pytest.mark.parametrize("stream", ["on", "off"], ids=["stream-on", "stream-off"])


@pytest.fixture
def thinking_run(fake_llm, repo, env, yuyao):
    """``thinking_run(*flags, merged=False)`` -> CompletedProcess of ``yuyao -p QUESTION``
    against a model that thinks before its tool call and before its answer. ``merged``: stderr
    into stdout in write order, as a terminal shows them."""
    from conftest import run, yuyao_command

    def go(*flags: str, merged: bool = False):
        step_1 = {**call("read", file_path=str(repo / "calc.py")), "reasoning": THOUGHT_1}
        server = fake_llm([step_1, say(ANSWER, reasoning=THOUGHT_2)])
        if not merged:
            return yuyao("-p", QUESTION, *flags, env=env(server))
        shell = "exec " + shlex.join([*yuyao_command(), "-p", QUESTION, *flags]) + " 2>&1"
        return run(["bash", "-c", shell], env=env(server), cwd=repo)

    return go


@STREAMS
def test_thinking_is_shown_on_stderr_apart_from_the_answer(thinking_run, stream):
    flags = ("--stream", stream, "--show-thinking", "expanded")
    proc = thinking_run(*flags)
    assert proc.returncode == 0, output(proc)
    assert proc.stdout == ANSWER + "\n", output(proc)
    assert THOUGHT_1 in proc.stderr and THOUGHT_2 in proc.stderr, output(proc)

    lines = thinking_run(*flags, merged=True).stdout.splitlines()
    for thought in (THOUGHT_1, THOUGHT_2):
        at = [i for i, line in enumerate(lines) if thought in line]
        assert len(at) == 1 and lines[at[0]].strip() == thought, lines
        assert "thinking" in lines[at[0] - 1], f"no header before the thinking: {lines}"
    assert ANSWER in lines, f"the answer is not on a line of its own: {lines}"
    assert lines.index(ANSWER) > max(i for i, x in enumerate(lines) if THOUGHT_2 in x), lines


@STREAMS
@pytest.mark.parametrize("show", ["off", "collapsed", None], ids=["off", "collapsed", "default"])
def test_thinking_hidden_unless_expanded(thinking_run, stream, show):
    flags = ["--stream", stream] + (["--show-thinking", show] if show else [])
    proc = thinking_run(*flags)
    assert proc.returncode == 0, output(proc)
    assert proc.stdout == ANSWER + "\n", output(proc)
    assert THOUGHT_1 not in output(proc) and THOUGHT_2 not in output(proc)
    summaries = [line for line in proc.stderr.splitlines() if "thinking" in line]
    if show == "off":
        assert summaries == [], output(proc)
    else:  # collapsed (the default): one summary line per thought, saying how to see it
        assert len(summaries) == 2, output(proc)
        assert all("--show-thinking expanded" in line for line in summaries), output(proc)


def test_configured_show_thinking_applies_to_print_mode(thinking_run, yuyao, env):
    setting = yuyao("config", "set", "ui.show_thinking", "expanded", env=env())
    assert setting.returncode == 0, output(setting)
    proc = thinking_run("--stream", "off")
    assert proc.returncode == 0, output(proc)
    assert THOUGHT_2 in proc.stderr and proc.stdout == ANSWER + "\n", output(proc)


@STREAMS
def test_verbose_lines_never_share_a_line_with_the_answer(thinking_run, stream):
    lines = thinking_run("--stream", stream, "--verbose", merged=True).stdout.splitlines()
    assert ANSWER in lines, f"the answer is not on a line of its own: {lines}"
    assert any(line.startswith("[usage]") for line in lines), lines
    assert any(line.startswith("[tool] read") for line in lines), lines


@STREAMS
@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
def test_a_model_error_is_printed_once(fake_llm, yuyao, env, stream, json_output):
    server = fake_llm([error(400, "model 'nope' does not exist")])
    flags = ["--stream", stream] + (["--json"] if json_output else [])
    proc = yuyao("-p", QUESTION, *flags, env=env(server))
    assert proc.returncode == 1, output(proc)
    assert proc.stderr.count("model 'nope' does not exist") == 1, output(proc)
    if json_output:
        assert "model 'nope' does not exist" in json.loads(proc.stdout)["error"]
    else:
        assert proc.stdout == "", output(proc)
