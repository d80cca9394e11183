"""`--thinking off|low|medium|high|max` and `/think` (seed 002 §4, §8): the level reaches the request
as `model.thinking_param` says, and is independent of `--show-thinking` (each changed alone
leaves the other untouched, in the request and on screen)."""

from __future__ import annotations

import pytest
from fakellm import say

pytestmark = pytest.mark.core

THOUGHT = "Let me think about calc.py carefully."


def answer():
    return [say("It adds.", reasoning=THOUGHT)]


def test_thinking_high_changes_the_request_not_the_display(fake_llm, yuyao, env):
    server = fake_llm(answer())
    proc = yuyao("-p", "what is calc.py", "--thinking", "high", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert server.body(0)["reasoning_effort"] == "high"
    # Display unchanged: the default (collapsed) summary, not the thinking text.
    assert "characters hidden" in proc.stderr and THOUGHT not in proc.stderr


def test_show_thinking_changes_the_display_not_the_request(fake_llm, yuyao, env):
    server = fake_llm(answer())
    proc = yuyao("-p", "what is calc.py", "--show-thinking", "expanded", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "reasoning_effort" not in server.body(0) and "thinking" not in server.body(0)
    assert THOUGHT in proc.stderr


@pytest.mark.parametrize(
    "level,effort",
    [("off", None), ("low", "low"), ("medium", "medium"), ("high", "high"), ("max", "xhigh")],
)
def test_levels_map_to_reasoning_effort(fake_llm, yuyao, env, level, effort):
    server = fake_llm(answer())
    proc = yuyao("-p", "x", "--thinking", level, env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert server.body(0).get("reasoning_effort") == effort


def test_max_falls_back_to_high_where_xhigh_is_refused(fake_llm, yuyao, env):
    """`max` is never less than `high`: `xhigh` where the endpoint takes it, else `high`."""
    from fakellm import error

    refusal = "Invalid value for 'reasoning_effort': 'xhigh'. Supported: low, medium, high."
    server = fake_llm([error(400, refusal), *answer()])
    proc = yuyao("-p", "x", "--thinking", "max", "--verbose", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert [b["reasoning_effort"] for b in (r["body"] for r in server.requests)] == [
        "xhigh",
        "high",
    ]
    assert 'sends "high"' in proc.stderr


@pytest.mark.parametrize("level,budget", [("low", 2048), ("high", 16384), ("off", None)])
def test_thinking_budget_param(fake_llm, yuyao, env, level, budget):
    server = fake_llm(answer())
    yuyao("config", "set", "model.thinking_param", "thinking_budget", env=env(server))
    proc = yuyao("-p", "x", "--thinking", level, env=env(server))
    assert proc.returncode == 0, proc.stderr
    body = server.body(0)
    assert "reasoning_effort" not in body
    if budget is None:
        assert "thinking" not in body
    else:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}


def test_param_none_sends_nothing(fake_llm, yuyao, env):
    server = fake_llm(answer())
    yuyao("config", "set", "model.thinking_param", "none", env=env(server))
    assert yuyao("-p", "x", "--thinking", "high", env=env(server)).returncode == 0
    assert "reasoning_effort" not in server.body(0) and "thinking" not in server.body(0)


def test_think_command_leaves_show_thinking_alone(fake_llm, api):
    import json

    server = fake_llm(answer() * 2)
    session = api(server)
    before = json.loads(session._core.status_json())["show_thinking"]
    session.dispatch("/think high")
    session.chat("x")
    assert server.body(0)["reasoning_effort"] == "high"
    assert json.loads(session._core.status_json())["show_thinking"] == before
