"""yuyao's stream-json and --json, read by Claude Code's own Python SDK (`claude-agent-sdk`,
pinned in scripts/test-requirements.txt): its message parser reads every line of real runs,
and its client drives yuyao as its CLI (`cli_path`). Skipped only where the SDK cannot be
installed (Python < 3.10)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FAKE_MODEL, yuyao_command
from fakellm import call, calls, error, say, system_of

pytestmark = pytest.mark.core

if sys.version_info < (3, 10):
    pytest.skip("claude-agent-sdk needs Python >= 3.10", allow_module_level=True)

# Not importorskip: on Python >= 3.10 the pinned SDK must be there, or the test fails.
from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk._internal.message_parser import parse_message  # noqa: E402

PRICES = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
CALL_COST = 1000 * 1e-6 + 100 * 2e-6


def parse_all(stdout: str) -> list:
    """Every stdout line through the SDK's parser: a parse error fails the test."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert lines, "no output"
    return [parse_message(json.loads(line)) for line in lines]


def of(kind, messages):
    return [m for m in messages if isinstance(m, kind)]


def blocks(kind, messages):
    return [
        b
        for m in messages
        if hasattr(m, "content")
        for b in (m.content or [])
        if isinstance(b, kind)
    ]


def run(args, env, repo, stdin=None):
    return subprocess.run(
        [*yuyao_command(), *args],
        input=stdin,
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_text_answer(fake_llm, env, repo):
    server = fake_llm([say("hello there", usage=USAGE)])
    proc = run(
        ["-p", "hi", "--output-format", "stream-json"],
        env(server, D2A_MODEL_COST=json.dumps(PRICES)),
        repo,
    )
    assert proc.returncode == 0, proc.stderr
    messages = parse_all(proc.stdout)
    init = of(SystemMessage, messages)[0]
    assert init.subtype == "init"
    assert init.data["model"] == FAKE_MODEL and init.data["cwd"] == str(repo)
    assert "read" in init.data["tools"] and init.data["permissionMode"]
    [assistant] = of(AssistantMessage, messages)
    assert [b.text for b in blocks(TextBlock, [assistant])] == ["hello there"]
    assert assistant.model == FAKE_MODEL and assistant.usage["output_tokens"] == 100
    [result] = of(ResultMessage, messages)
    assert result.subtype == "success" and not result.is_error
    assert result.result == "hello there" and result.num_turns == 1
    assert result.total_cost_usd == pytest.approx(CALL_COST)
    assert result.session_id == init.data["session_id"]


def test_tool_calls_and_results(fake_llm, env, repo):
    server = fake_llm(
        [
            calls(
                [("read", {"file_path": str(repo / "calc.py")}, "c1")],
                content="Reading calc.py",
                usage=USAGE,
            ),
            say("calc.py adds numbers", usage=USAGE),
        ]
    )
    proc = run(
        ["-p", "what does calc.py do", "--output-format", "stream-json"],
        env(server, D2A_MODEL_COST=json.dumps(PRICES)),
        repo,
    )
    assert proc.returncode == 0, proc.stderr
    messages = parse_all(proc.stdout)
    [use] = blocks(ToolUseBlock, messages)
    assert (use.id, use.name, use.input) == ("c1", "read", {"file_path": str(repo / "calc.py")})
    [done] = blocks(ToolResultBlock, messages)
    assert done.tool_use_id == "c1" and "def add" in done.content and done.is_error is False
    texts = [b.text for b in blocks(TextBlock, messages)]
    assert texts == ["Reading calc.py", "calc.py adds numbers"]
    [result] = of(ResultMessage, messages)
    assert result.num_turns == 2 and result.result == "calc.py adds numbers"
    assert result.total_cost_usd == pytest.approx(2 * CALL_COST)
    assert result.usage["input_tokens"] == 2000 and result.usage["output_tokens"] == 200


def test_a_refused_tool(fake_llm, env, repo):
    server = fake_llm(
        [
            call("write", file_path=str(repo / "new.txt"), content="x\n"),
            say("I could not write it."),
        ]
    )
    proc = run(
        ["-p", "create new.txt", "--output-format", "stream-json", "--mode", "plan"],
        env(server),
        repo,
    )
    messages = parse_all(proc.stdout)
    [use] = blocks(ToolUseBlock, messages)
    assert use.name == "write"
    [refused] = blocks(ToolResultBlock, messages)
    assert refused.is_error is True and refused.content.startswith("Refused"), refused.content
    [result] = of(ResultMessage, messages)
    assert result.permission_denials == [
        {"tool_name": "write", "tool_use_id": use.id, "tool_input": use.input}
    ]
    assert not (repo / "new.txt").exists()


def test_an_endpoint_error(fake_llm, env, repo):
    server = fake_llm([error(400, "model 'nope' does not exist")])
    proc = run(["-p", "hi", "--output-format", "stream-json"], env(server), repo)
    assert proc.returncode == 1
    messages = parse_all(proc.stdout)
    [result] = of(ResultMessage, messages)
    assert result.is_error and result.subtype == "error_during_execution"
    assert "nope" in " ".join(result.errors or [])
    assert not of(AssistantMessage, messages)


def test_multi_turn_stream_json_input(fake_llm, env, repo):
    server = fake_llm([say("one", usage=USAGE), say("two", usage=USAGE)])
    stdin = "".join(
        json.dumps(
            {
                "type": "user",
                "message": {"role": "user", "content": text},
                "parent_tool_use_id": None,
                "session_id": "",
            }
        )
        + "\n"
        for text in ("first", "second")
    )
    proc = run(
        ["-p", "--input-format", "stream-json", "--output-format", "stream-json"],
        env(server, D2A_MODEL_COST=json.dumps(PRICES)),
        repo,
        stdin=stdin,
    )
    assert proc.returncode == 0, proc.stderr
    messages = parse_all(proc.stdout)
    results = of(ResultMessage, messages)
    assert [r.result for r in results] == ["one", "two"]
    # total_cost_usd is the session's, as Claude Code reports it.
    assert [r.total_cost_usd for r in results] == pytest.approx([CALL_COST, 2 * CALL_COST])
    assert "first" in server.user_text(1)  # one session: the second turn saw the first


def test_json_document_is_the_result_message(fake_llm, env, repo):
    server = fake_llm([say("hello there", usage=USAGE)])
    proc = run(["-p", "hi", "--json"], env(server, D2A_MODEL_COST=json.dumps(PRICES)), repo)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    result = parse_message(document)
    assert isinstance(result, ResultMessage)
    assert result.result == "hello there" and result.num_turns == 1 and not result.is_error
    assert result.total_cost_usd == pytest.approx(CALL_COST)
    # yuyao's own keys are still there.
    assert document["exit_status"] and document["steps"] == 1 and document["cost_usd"] > 0


def test_the_sdk_client_drives_yuyao(fake_llm, env, repo):
    """`ClaudeAgentOptions(cli_path=yuyao)`: the SDK starts yuyao with Claude Code's flags,
    does its initialize handshake, sends the prompt, and reads the answer."""
    import anyio
    from claude_agent_sdk import ClaudeSDKClient, query

    server = fake_llm(
        [
            calls([("read", {"file_path": str(repo / "calc.py")}, "c1")], usage=USAGE),
            say("calc.py adds numbers", usage=USAGE),
            say("and nothing else", usage=USAGE),
        ]
    )
    environment = env(server, D2A_MODEL_COST=json.dumps(PRICES))
    options = ClaudeAgentOptions(
        cli_path=yuyao_command()[0],
        cwd=str(repo),
        env=environment,
        max_turns=10,
        allowed_tools=["Read"],
        permission_mode="default",
    )

    async def one_shot():
        return [m async for m in query(prompt="what does calc.py do?", options=options)]

    messages = anyio.run(one_shot)
    assert [b.name for b in blocks(ToolUseBlock, messages)] == ["read"]
    results = of(ResultMessage, messages)
    assert [r.result for r in results] == ["calc.py adds numbers"]
    assert results[0].total_cost_usd == pytest.approx(2 * CALL_COST)

    async def conversation():
        got = []
        async with ClaudeSDKClient(options=options) as client:
            await client.query("anything else?")
            async for m in client.receive_response():
                got.append(m)
        return got

    follow_up = anyio.run(conversation)
    assert [r.result for r in of(ResultMessage, follow_up)] == ["and nothing else"]
    assert of(UserMessage, messages)  # the tool result reached the SDK as a user message


def test_claude_code_flags_are_mapped_or_noted(fake_llm, env, repo):
    """The SDK's spelling without -p: --max-turns is yuyao's step limit (its end is
    `error_max_turns`), a flag with no yuyao meaning is dropped with a note, never silently."""
    server = fake_llm([call("read", file_path=str(repo / "calc.py")), say("never reached")])
    stdin = json.dumps({"type": "user", "message": {"role": "user", "content": "read calc.py"}})
    proc = run(
        [
            "--output-format", "stream-json", "--verbose", "--system-prompt", "",
            "--max-turns", "1", "--setting-sources=user,project", "--include-partial-messages",
            "--input-format", "stream-json",
        ],
        env(server),
        repo,
        stdin=stdin + "\n",
    )  # fmt: skip
    assert "ignoring the Claude Code option --setting-sources user,project" in proc.stderr
    assert "ignoring the Claude Code option --include-partial-messages" in proc.stderr
    assert "empty --system-prompt keeps yuyao's own system prompt" in proc.stderr
    [result] = of(ResultMessage, parse_all(proc.stdout))
    assert result.subtype == "error_max_turns" and result.is_error and result.num_turns == 1
    assert len(server.requests) == 1
    assert "read" in system_of(server.requests[0]["body"])  # yuyao's own prompt was sent


def test_an_interrupt_control_request_stops_the_running_turn(fake_llm, env, repo):
    """stdin is read while a turn runs: the SDK's `interrupt` reaches a turn stuck in a slow
    model call, and is answered."""
    import time

    server = fake_llm([{**say("too late"), "delay": 60}])
    proc = subprocess.Popen(
        [*yuyao_command(), "-p", "--input-format", "stream-json", "--output-format", "stream-json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(server),
        cwd=repo,
        text=True,
    )
    user = {"type": "user", "message": {"role": "user", "content": "hi"}}
    proc.stdin.write(json.dumps(user) + "\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.requests, "the turn never called the model"
    started = time.monotonic()
    interrupt = {
        "type": "control_request",
        "request_id": "req_1",
        "request": {"subtype": "interrupt"},
    }
    proc.stdin.write(json.dumps(interrupt) + "\n")
    proc.stdin.flush()
    try:
        out, err = proc.communicate(timeout=40)
    finally:
        proc.kill()
    assert time.monotonic() - started < 20, "the interrupt did not stop the turn"
    lines = [json.loads(line) for line in out.splitlines()]
    answers = [x for x in lines if x["type"] == "control_response"]
    assert answers == [
        {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": "req_1", "response": {}},
        }
    ]
    [result] = [x for x in lines if x["type"] == "result"]
    assert result["is_error"] and result["result"] != "too late", result
    parse_message(result)
