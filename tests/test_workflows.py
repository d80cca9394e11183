"""`/workflow <name>` and `/workflows` (seed 002 §5.2): `.yuyao/workflows/<name>.yaml` stages of
sub-agents, a cross-check stage where one agent verifies another's result, and the list of
running and completed workflows with stage and per-agent progress — through agent_api against
the scripted model."""

from __future__ import annotations

import re

import pytest
from fakellm import call, say, tool_msgs, users_of

pytestmark = pytest.mark.core

SUB = "# You are a sub-agent"

WORKFLOW = """\
description: write, then verify
stages:
  - name: implement
    agents:
      - {name: writer, prompt: "WRITER-TASK: create hello.txt saying hi", write: true}
  - name: verify
    cross_check: writer
    agents:
      - {name: checker, agent: explore, prompt: "CHECKER-TASK: confirm hello.txt says hi"}
  - name: wrap
    agents:
      - {name: closer, prompt: "CLOSER-TASK: summarize"}
"""


def agent_of(body: dict) -> str:
    return re.search(r"(WRITER|CHECKER|CLOSER)-TASK", users_of(body)).group(1).lower()


def install(repo, text=WORKFLOW, name="ship"):
    d = repo / ".yuyao" / "workflows"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.yaml").write_text(text)


def respond_with(verdict: str, seen: dict):
    def respond(body, i):
        who = agent_of(body)
        seen.setdefault(who, []).append(body)
        if who == "writer":
            if not tool_msgs(body):
                return call("write", file_path="hello.txt", content="hi\n")
            return say("WRITER-RESULT: hello.txt created with 'hi'")
        if who == "checker":
            if not tool_msgs(body):
                return call("read", file_path="hello.txt")
            return say(verdict)
        return say("CLOSER-RESULT: shipped")

    return respond


def test_a_workflow_with_a_cross_check_stage_runs_and_is_listed(fake_llm, api, repo):
    install(repo)
    seen: dict = {}
    server = fake_llm(respond_with("VERIFIED\nhello.txt says hi", seen))
    s = api(server, mode="yolo")
    assert "ship (run one with /workflow <name>)" in s.dispatch("/workflows")
    out = s.dispatch("/workflow ship")
    assert out.startswith("workflow ship: completed"), out
    assert "verify / checker: VERIFIED — hello.txt says hi" in out
    assert (repo / "hello.txt").read_text() == "hi\n"
    # The checker received the writer's result to verify, and ran read-only.
    checker = users_of(seen["checker"][0])
    assert "Result of agent 'writer' to verify:\nWRITER-RESULT" in checker
    assert "VERIFIED or REJECTED" in checker
    tools = [t["function"]["name"] for t in seen["checker"][0].get("tools", [])]
    assert "write" not in tools and "read" in tools
    assert "closer" in seen
    listing = s.dispatch("/workflows")
    assert "ship — workflow ship: completed (stage wrap)" in listing, listing
    assert "implement / writer: completed" in listing
    assert "verify / checker: completed · VERIFIED: hello.txt says hi" in listing


def test_a_rejected_cross_check_stops_the_workflow(fake_llm, api, repo):
    install(repo)
    seen: dict = {}
    server = fake_llm(respond_with("REJECTED\nhello.txt is empty", seen))
    s = api(server, mode="yolo")
    out = s.dispatch("/workflow ship")
    assert out.startswith("workflow ship: rejected by checker in stage verify"), out
    assert "closer" not in seen
    listing = s.dispatch("/workflows")
    assert "rejected by checker" in listing and "wrap / closer: pending" in listing


def test_bad_or_unknown_workflows_are_refused(fake_llm, api, repo):
    server = fake_llm([])
    s = api(server, mode="yolo")
    with pytest.raises(ValueError, match="no workflow 'nope'"):
        s.dispatch("/workflow nope")
    install(
        repo,
        "stages:\n  - name: v\n    cross_check: ghost\n    agents: [{name: c, prompt: q}]\n",
        "bad",
    )
    with pytest.raises(RuntimeError, match="cross-checks 'ghost', which no earlier stage runs"):
        s.dispatch("/workflow bad")
    with pytest.raises(ValueError):
        s.dispatch("/workflow ../../etc/passwd")
    assert not server.requests
