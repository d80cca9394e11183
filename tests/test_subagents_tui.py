"""Sub-agents in the TUI (seed 002 §1 `task`): a sub-agent's tool calls are drawn indented under the
parent's task call, and Ctrl+X Ctrl+K (twice) stops a running /fork."""

from __future__ import annotations

import pytest
from fakellm import call, calls, say, tool_call
from test_tui import CTRL, CTRL_D, yuyao_term

pytestmark = pytest.mark.core

SUB = "# You are a sub-agent"


def is_sub(body: dict) -> bool:
    return SUB in str(body["messages"][0].get("content"))


def test_sub_agent_tool_calls_show_nested_under_the_task_call(fake_llm, env, repo):
    def respond(body, i):
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if is_sub(body):
            if not tools:
                return call("read", file_path="calc.py")
            return say("add is at calc.py:1")
        if not tools:
            args = {"description": "find add", "prompt": "find add", "agent": "explore"}
            return calls([tool_call("task", args, "t1")])
        return say("Found it via the sub-agent.")

    server = fake_llm(respond)
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("where is add?")
        term.wait_for(r"task\s+")
        term.wait_for(r"↳ \[explore [0-9a-f]{8}\] read\s+calc\.py")
        term.wait_for(r"Found it via the sub-agent\.")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_ctrl_x_ctrl_k_twice_stops_a_running_fork(fake_llm, env, repo):
    def respond(body, i):
        if is_sub(body):
            return say("never", delay=30)
        return say("ok")

    server = fake_llm(respond)
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("/fork look around")
        term.wait_for(r"fork [0-9a-f]{8} started in the background")
        term.send(CTRL["x"] + CTRL["k"])
        term.wait_for(r"press Ctrl\+X Ctrl\+K again")
        term.send(CTRL["x"] + CTRL["k"])
        term.wait_for(r"stopped 1 background sub-agent")
        term.wait_for(r"\[fork [0-9a-f]{8} ended: interrupted")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_a_writing_sub_agent_asks_through_the_tui(fake_llm, env, repo, yuyao_home):
    agents = yuyao_home / "agents"
    agents.mkdir()
    (agents / "writer.md").write_text("---\ndescription: writes\nmode: ask\n---\nWrite files.\n")

    def respond(body, i):
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if is_sub(body):
            if not tools:
                return call("write", file_path="sub.txt", content="from the sub-agent\n")
            return say("written")
        if not tools:
            args = {"description": "write", "prompt": "write sub.txt", "agent": "writer"}
            return calls([tool_call("task", args, "t1")])
        return say("The writer finished.")

    server = fake_llm(respond)
    term = yuyao_term(env(server), repo, "--mode", "ask")
    try:
        term.wait_ready()
        term.line("delegate the write")
        term.wait_for(r"sub-agent writer")
        term.wait_for(r"from the sub-agent")
        term.send("y")
        term.wait_for(r"The writer finished\.")
        assert (repo / "sub.txt").read_text() == "from the sub-agent\n"
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_goal_rounds_and_verdict_show_in_the_tui(fake_llm, env, repo):
    verdicts = iter(["NOT MET\nno greeting yet", "MET\nthe greeting is there"])

    def respond(body, i):
        if str(body["messages"][0].get("content")).startswith("You judge"):
            return say(next(verdicts))
        return say(f"working on it ({i})")

    server = fake_llm(respond)
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("/goal a greeting exists")
        term.wait_for(r"goal round 1/10: a greeting exists")
        term.wait_for(r"not met yet — no greeting yet")
        term.wait_for(r"goal round 2/10")
        term.wait_for(r"goal met after 2 rounds: the greeting is there")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
