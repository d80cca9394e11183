"""The spend ceiling (seed 000 behaviour 10): exact by construction. Each call's `max_tokens`
is capped by what the remaining budget can pay after the call's input, the turn stops only when
not even a minimal answer (256 tokens) fits, and a ceiling that cannot be enforced (no prices)
is said so, once."""

from __future__ import annotations

import json

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core

IN, OUT = 1e-6, 1e-5
PRICES = json.dumps({"input_cost_per_token": IN, "output_cost_per_token": OUT})
MIN_ANSWER = 256


def test_a_small_ceiling_allows_a_small_call_with_a_capped_answer(fake_llm, yuyao, env):
    # A large configured answer size used to make the estimate pass a $0.01 ceiling: no call.
    assert yuyao("config", "set", "model.max_output_tokens", "16384", env=env()).returncode == 0
    server = fake_llm([say("small answer", usage={"prompt_tokens": 2000, "completion_tokens": 20})])
    proc = yuyao("-p", "hi", "--max-cost", "0.01", env=env(server, D2A_MODEL_COST=PRICES))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "small answer"
    max_tokens = server.body(0)["max_tokens"]
    assert MIN_ANSWER <= max_tokens < 16384, max_tokens
    assert max_tokens * OUT <= 0.01, "the answer alone can never pass the ceiling"
    # What the model may answer plus the (estimated) input fits the ceiling.
    prompt_chars = len(json.dumps(server.body(0)["messages"])) + len(
        json.dumps(server.body(0).get("tools", []))
    )
    assert (prompt_chars / 4) * IN + max_tokens * OUT <= 0.01 * 1.05


def test_the_turn_stops_only_when_a_minimal_answer_no_longer_fits(fake_llm, yuyao, env):
    server = fake_llm(
        [
            # $0.002 input + $0.005 answer = $0.007 of $0.01: the next input alone (~$0.002)
            # leaves less than 256 answer tokens ($0.00256).
            {
                **call("bash", command="true"),
                "usage": {"prompt_tokens": 2000, "completion_tokens": 500},
            },  # fmt: skip
            say("never requested"),
        ]
    )
    proc = yuyao(
        "-p", "go", "--mode", "yolo", "--max-cost", "0.01", "--output-format", "json",
        env=env(server, D2A_MODEL_COST=PRICES),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["exit_status"] == "LimitsExceeded"
    assert document["cost_usd"] == pytest.approx(0.007)
    assert len(server.requests) == 1, "no call is made that could pass the ceiling"
    assert "spend ceiling reached" in proc.stderr and "256 tokens" in proc.stderr


def test_a_call_that_fits_is_capped_not_refused(fake_llm, yuyao, env):
    # After $0.003 spent, about $0.017 is left for the second call's input (the tool schemas
    # alone are several thousand tokens) and its answer.
    server = fake_llm(
        [
            {
                **call("bash", command="true"),
                "usage": {"prompt_tokens": 1000, "completion_tokens": 200},
            },  # fmt: skip
            say("done", usage={"prompt_tokens": 1100, "completion_tokens": 5}),
        ]
    )
    proc = yuyao(
        "-p", "go", "--mode", "yolo", "--max-cost", "0.02", "--output-format", "json",
        env=env(server, D2A_MODEL_COST=PRICES),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 2
    first, second = server.body(0)["max_tokens"], server.body(1)["max_tokens"]
    assert MIN_ANSWER <= second < first, (first, second)
    assert 0.003 + second * OUT <= 0.02
    assert json.loads(proc.stdout)["cost_usd"] <= 0.01


def test_without_prices_the_ceiling_is_said_to_be_unenforceable_once(fake_llm, yuyao, env):
    server = fake_llm([call("bash", command="true"), call("bash", command="true"), say("done")])
    proc = yuyao("-p", "go", "--mode", "yolo", "--max-cost", "0.01", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("cannot be enforced") == 1, proc.stderr
    assert len(server.requests) == 3, "the run is not stopped by a ceiling it cannot measure"
    assert "max_tokens" not in server.body(0)
    # Setting a ceiling in the configuration says it too.
    proc = yuyao("config", "set", "maxCostUsd", "0.5", env=env())
    assert proc.returncode == 0 and "cannot be enforced" in proc.stderr, proc.stderr
    # With prices there is nothing to warn about.
    server = fake_llm([say("priced")])
    proc = yuyao("-p", "hi", env=env(server, D2A_MODEL_COST=PRICES))
    assert proc.returncode == 0 and "cannot be enforced" not in proc.stderr, proc.stderr
