"""`yuyao -p` (spec §2, §3.1, §4, §9) against the scripted model."""

from __future__ import annotations

import json

import pytest
from fakellm import call, calls, say

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
