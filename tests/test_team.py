"""`--role orchestrator [--team-name <n>]` (seed 002 §3.2): the lead's shared task list with owners,
the mailbox every member reads before each model call, teammates as write-capable sub-agents
each in its own worktree, results merged back — end to end through `yuyao -p` and agent_api
against the scripted model."""

from __future__ import annotations

import re

import pytest
from fakellm import (
    call,
    calls,
    offered_names,
    say,
    system_of,
    tool_call,
    tool_msgs,
    users_of,
)

pytestmark = pytest.mark.core

SUB = "# You are a sub-agent"


def member(body: dict) -> str:
    if SUB not in system_of(body):
        return "lead"
    return re.search(r"You are teammate '(\w+)'", users_of(body)).group(1)


def team(action: str, id: str, **args) -> dict:
    return tool_call("team", {"action": action, **args}, id)


def test_orchestrator_messages_reach_teammates_and_results_merge(fake_llm, yuyao, env, repo):
    seen: dict[str, list[dict]] = {"lead": [], "alice": [], "bob": []}

    def respond(body, i):
        who = member(body)
        seen[who].append(body)
        done = len(tool_msgs(body))
        if who == "lead":
            assert "team" in offered_names(body)
            if done == 0:
                return calls(
                    [
                        team(
                            "add",
                            "a1",
                            title="greet",
                            prompt="write a.txt",
                            owner="alice",
                            files=["a.txt"],
                        ),
                        team(
                            "add",
                            "a2",
                            title="farewell",
                            prompt="write b.txt",
                            owner="bob",
                            files=["b.txt"],
                        ),
                        team("send", "m1", to="alice", text="MAIL-MARK-1 use a capital H"),
                    ]
                )
            if done == 3:
                return calls([team("run", "r1")])
            return say("LEAD-FINAL all merged")
        if who == "alice":
            if done == 0:
                return call("write", file_path="a.txt", content="Hello\n")
            if done == 1:
                return calls([team("send", "s1", to="lead", text="ALICE-NOTE a.txt is done")])
            return say("alice done")
        if done == 0:
            return call("write", file_path="b.txt", content="bye\n")
        return say("bob done")

    server = fake_llm(respond)
    proc = yuyao(
        "-p",
        "split the greeting work",
        "--role",
        "orchestrator",
        "--team-name",
        "greeters",
        "--mode",
        "yolo",
        env=env(server),
    )
    assert proc.returncode == 0, proc.stderr
    assert "LEAD-FINAL" in proc.stdout
    # The lead's message reached alice's request before her first call, and only hers.
    assert "[team mail for alice]\nfrom lead: MAIL-MARK-1" in users_of(seen["alice"][0])
    assert all("MAIL-MARK-1" not in users_of(b) for b in seen["bob"])
    # Alice's message reached the lead's next request.
    assert "[team mail for lead]\nfrom alice: ALICE-NOTE" in users_of(seen["lead"][-1])
    # Each teammate in its own worktree; both merged into the lead's branch.
    dirs = {
        re.search(r"Working directory: (\S+)", system_of(seen[w][0])).group(1)
        for w in ("alice", "bob")
    }
    assert len(dirs) == 2 and all("/.yuyao/worktrees/team-" in d for d in dirs), dirs
    run = server.tool_result("r1")
    assert "2 merged" in run, run
    assert (repo / "a.txt").read_text() == "Hello\n" and (repo / "b.txt").read_text() == "bye\n"
    listing = server.tool_result("a2")
    assert "1. [pending] greet — owner alice" in listing and "owner bob" in listing


def test_only_the_lead_adds_or_runs_and_other_roles_have_no_team(fake_llm, api, repo):
    def respond(body, i):
        who = member(body)
        done = len(tool_msgs(body))
        if who == "lead":
            if done == 0:
                return calls([team("add", "a1", title="t", prompt="p", owner="carol")])
            if done == 1:
                return calls([team("run", "r1")])
            return say("ok")
        if done == 0:
            return calls([team("add", "x1", title="sneaky", prompt="p", owner="dave")])
        return say("carol done")

    server = fake_llm(respond)
    s = api(server, mode="yolo", role="orchestrator")
    assert s.chat("go") == "ok"
    carol = [r["body"] for r in server.requests if member(r["body"]) == "carol"]
    assert "only the lead can add" in tool_msgs(carol[-1])[0]["content"]
    # A session in another role is offered no team tool.
    server2 = fake_llm([say("plain")])
    p = api(server2, mode="yolo")
    assert p.chat("hi") == "plain"
    assert "team" not in server2.tool_names(0)
