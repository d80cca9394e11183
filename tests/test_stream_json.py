"""`-p --input-format stream-json` / `--output-format stream-json` and `--verbose` (seed 002 §4)."""

from __future__ import annotations

import base64
import json

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

# A 1x1 PNG.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def user(content) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": content}})


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]  # every line parses alone


def test_three_messages_three_turns_one_session(fake_llm, yuyao, env, repo):
    server = fake_llm(
        [
            calls(
                [("read", {"file_path": str(repo / "calc.py")}, "c1")], content="Reading calc.py"
            ),
            say("first answer"),
            say("second answer"),
            say("third answer"),
        ]
    )
    stdin = (
        "\n".join(
            [
                user("what does calc.py do?"),
                "{this is not json",
                user(
                    [
                        {"type": "text", "text": "and this picture?"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                        },
                    ]
                ),
                json.dumps({"type": "assistant", "message": {}}),
                user("third question"),
            ]
        )
        + "\n"
    )
    import subprocess

    from conftest import yuyao_command

    proc = subprocess.run(
        [*yuyao_command(), "-p", "--input-format", "stream-json", "--output-format", "stream-json"],
        input=stdin,
        env=env(server),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = events(proc.stdout)
    kinds = [e["type"] for e in got]
    assert kinds[0] == "system" and got[0]["subtype"] == "init" and got[0]["session_id"]
    results = [e for e in got if e["type"] == "result"]
    assert [r["result"] for r in results] == ["first answer", "second answer", "third answer"]
    assert all(r["exit_status"] and "cost_usd" in r and "usage" in r for r in results)
    assert results[0]["usage"]["prompt_tokens"] > 0
    assert results[0]["usage"]["input_tokens"] > 0  # Claude Code's name beside yuyao's
    assert [r["num_turns"] for r in results] == [2, 1, 1]
    assert all(r["subtype"] == "success" and r["is_error"] is False for r in results)
    assert all(r["duration_api_ms"] <= r["duration_ms"] for r in results)
    errors = [e for e in got if e["type"] == "system" and e["subtype"] == "input_error"]
    assert len(errors) == 2 and "line 2" in errors[0]["error"]
    # The tool call is a content block of an assistant message, its result one of a user
    # message; the reply's text and the call share the model call's message id.
    assistant = [e for e in got if e["type"] == "assistant"]
    blocks = [(e["message"]["id"], b) for e in assistant for b in e["message"]["content"]]
    tool_use = next(b for _, b in blocks if b["type"] == "tool_use")
    assert tool_use["name"] == "read" and tool_use["input"]["file_path"].endswith("calc.py")
    first_id = {mid for mid, b in blocks if b.get("text") == "Reading calc.py"}
    assert first_id == {mid for mid, b in blocks if b["type"] == "tool_use"}
    assert all(e["message"]["model"] == "litellm_proxy/fake-model" for e in assistant)
    tool_result = next(
        b
        for e in got
        if e["type"] == "user"
        for b in e["message"]["content"]
        if b["type"] == "tool_result"
    )
    assert tool_result["tool_use_id"] == "c1" and "def add" in tool_result["content"]
    assert tool_result["is_error"] is False
    # One session: the third request holds the first two turns; the image reached the model.
    assert len(server.requests) == 4
    assert "what does calc.py do?" in server.user_text(3)
    image_turn = [
        m for m in server.messages(2) if m["role"] == "user" and isinstance(m["content"], list)
    ]
    assert any(
        p.get("type") == "image_url" and p["image_url"]["url"].startswith("data:image/png")
        for m in image_turn
        for p in m["content"]
    )


def test_stream_json_input_with_text_output(fake_llm, yuyao, env, repo):
    import subprocess

    from conftest import yuyao_command

    server = fake_llm([say("one"), say("two")])
    proc = subprocess.run(
        [*yuyao_command(), "-p", "--input-format", "stream-json"],
        input=user("a") + "\n" + user("b") + "\n",
        env=env(server),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["one", "two"]


def test_output_stream_json_for_a_plain_task(fake_llm, yuyao, env):
    server = fake_llm([say("hello there")])
    proc = yuyao("-p", "hi", "--output-format", "stream-json", env=env(server))
    assert proc.returncode == 0, proc.stderr
    got = events(proc.stdout)
    assert [e["type"] for e in got] == ["system", "assistant", "result"]
    assert got[-1]["result"] == "hello there" and got[-1]["subtype"] == "success"


def test_verbose_shows_each_step_on_stderr_and_only_the_answer_on_stdout(
    fake_llm, yuyao, env, repo
):
    server = fake_llm(
        [
            calls(
                [("read", {"file_path": str(repo / "calc.py")}, "c1")],
                content="I will look at calc.py first",
                usage={"prompt_tokens": 120, "completion_tokens": 7},
            ),
            say("calc.py adds numbers", usage={"prompt_tokens": 150, "completion_tokens": 5}),
        ]
    )
    proc = yuyao(
        "-p",
        "what is calc.py",
        "--verbose",
        "--stream",
        "off",
        env=env(
            server,
            D2A_MODEL_COST=json.dumps(
                {"input_cost_per_token": 0.001, "output_cost_per_token": 0.002}
            ),
        ),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "calc.py adds numbers"
    err = proc.stderr
    assert "[intent] I will look at calc.py first" in err
    assert "[tool] read" in err and "calc.py" in err
    assert "def add" in err  # the result preview
    # One usage line per step, as ui.usage renders it (tokens by default).
    assert "[usage] 120 in / 7 out tokens" in err and err.count("[usage]") == 2
