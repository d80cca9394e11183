"""`--role architect` (seed 002 §3.2): the architect model plans read-only, the editor model makes
the edits; both calls visible, costs summed. The fake gateway accepts exactly the two models."""

from __future__ import annotations

import json

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core

PLANNER, EDITOR = "litellm_proxy/planner-model", "litellm_proxy/editor-model"
PRICES = json.dumps({"input_cost_per_token": 0.001, "output_cost_per_token": 0.001})


def script(repo):
    return [
        # The architect tries to edit: refused (read-only), then plans.
        call("write", file_path=str(repo / "sneaky.txt"), content="x"),
        say(
            "1. In calc.py, add mul(a, b) returning a * b.",
            usage={"prompt_tokens": 100, "completion_tokens": 10},
        ),
        call("read", file_path=str(repo / "calc.py")),
        call(
            "edit",
            file_path=str(repo / "calc.py"),
            old_string="    return a + b\n",
            new_string="    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        ),
        say("Added mul to calc.py.", usage={"prompt_tokens": 200, "completion_tokens": 20}),
    ]


def configure(yuyao, env):
    for key, value in (("architect.model", PLANNER), ("architect.editor_model", EDITOR)):
        assert yuyao("config", "set", key, value, env=env()).returncode == 0


def test_two_models_plan_then_edit(fake_llm, yuyao, env, repo):
    server = fake_llm(script(repo), model=(PLANNER, EDITOR))
    configure(yuyao, env)
    proc = yuyao(
        "-p",
        "add a mul function",
        "--role",
        "architect",
        "--yolo",
        "--output-format",
        "json",
        env=env(server, D2A_MODEL_COST=PRICES),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    models = [r["body"]["model"] for r in server.requests]
    assert models == ["planner-model"] * 2 + ["editor-model"] * 3
    assert not (repo / "sneaky.txt").exists()  # the architect phase is read-only
    assert "def mul" in (repo / "calc.py").read_text()
    # The editor got the plan.
    assert "add mul(a, b)" in server.user_text(2)
    doc = json.loads(proc.stdout)
    assert doc["result"] == "Added mul to calc.py." and doc["exit_status"] == "Submitted"
    totals = server.usage_totals()
    expected = (totals["prompt_tokens"] + totals["completion_tokens"]) * 0.001
    assert doc["cost_usd"] == pytest.approx(expected)  # both phases' costs


def test_both_phases_announced_with_their_model(fake_llm, yuyao, env, repo):
    server = fake_llm(script(repo), model=(PLANNER, EDITOR))
    configure(yuyao, env)
    proc = yuyao("-p", "add mul", "--role", "architect", "--yolo", "--verbose", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert f"{PLANNER} plans the change" in proc.stderr
    assert f"{EDITOR} makes the edits" in proc.stderr


def test_agent_api_role_architect_restores_the_session_model(fake_llm, api, yuyao, env, repo):
    from conftest import FAKE_MODEL

    server = fake_llm(script(repo) + [say("plain answer")], model=(PLANNER, EDITOR, FAKE_MODEL))
    configure(yuyao, env)
    session = api(server, mode="yolo", role="architect")
    session.chat("add mul")
    session.dispatch("/role execute")
    session.chat("and now?")
    assert server.body(-1)["model"] == "fake-model"
