"""The run_agent.sh contract (spec §0.1.1, §0.3, §9) against the scripted model."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakellm import FAKE_MODEL, call, calls, say

pytestmark = pytest.mark.core

TASK = "Create hello.txt containing the word hello."
PRICES = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
CORE_TOOLS = {"bash", "read", "write", "edit", "grep", "glob"}


@dataclass
class Run:
    proc: subprocess.CompletedProcess
    out_dir: Path

    @property
    def code(self) -> int:
        return self.proc.returncode

    @property
    def log(self) -> str:
        return f"exit {self.code}\nstdout:\n{self.proc.stdout}\nstderr:\n{self.proc.stderr}"

    @property
    def status(self) -> dict:
        path = self.out_dir / "status.json"
        assert path.is_file(), f"no status.json in the out-dir\n{self.log}"
        return json.loads(path.read_text())


@pytest.fixture
def headless(run_agent, env, repo, tmp_path):
    """``headless(server_or_url, task=..., budget=..., cost=..., drop=(), extra=())`` -> Run.

    ``task`` is written as plain text (str) or JSON (dict); ``drop`` leaves arguments out.
    """

    def go(target, *, task=TASK, budget=None, cost=None, drop=(), extra=(), timeout=90):
        task_file = tmp_path / ("task.json" if isinstance(task, dict) else "task.txt")
        task_file.write_text(json.dumps(task) if isinstance(task, dict) else task)
        budget_file = tmp_path / "budget.json"
        budget_file.write_text(json.dumps({"max_steps": 10} if budget is None else budget))
        out_dir = tmp_path / "out"
        arguments = {
            "--task-file": task_file,
            "--repo-dir": repo,
            "--model-base-url": target if isinstance(target, str) else target.url,
            "--model-name": FAKE_MODEL,
            "--model-api-key": getattr(target, "api_key", None) or "unused-key",
            "--budget-file": budget_file,
            "--out-dir": out_dir,
        }
        argv = [str(a) for k, v in arguments.items() if k not in drop for a in (k, v)]
        cost_env = json.dumps(cost) if cost else None
        proc = run_agent(*argv, *extra, env=env(D2A_MODEL_COST=cost_env), timeout=timeout)
        return Run(proc, out_dir)

    return go


def write_step(path: Path, content: str = "hello\n") -> dict:
    return call("write", file_path=str(path), content=content)


def endless_tool_calls(body, index):
    return call("bash", command=f"echo step {index}")


# ---------------------------------------------------------------------------------------------
# A submitted run


def test_submitted_run_writes_status_trajectory_and_only_the_task_change(
    fake_llm, headless, repo, git_status
):
    server = fake_llm([write_step(repo / "hello.txt"), say("Created hello.txt.")], usage=USAGE)
    run = headless(server, cost=PRICES)
    assert run.code == 0, run.log
    status = run.status
    assert status["exit_status"] == "Submitted", status
    totals = server.usage_totals()
    expected_cost = (
        totals["prompt_tokens"] * PRICES["input_cost_per_token"]
        + totals["completion_tokens"] * PRICES["output_cost_per_token"]
    )
    assert status["cost_usd"] == pytest.approx(expected_cost, rel=1e-6)
    assert 1 <= status["steps"] <= len(server.requests)
    assert "fake-model" in status["model"]
    assert status["started_at"] and status["finished_at"]

    trajectory = run.out_dir / ".trajectory"
    assert trajectory.is_dir() and any(
        p.is_file() and p.stat().st_size for p in trajectory.rglob("*")
    )
    assert (repo / "hello.txt").read_text() == "hello\n"
    assert git_status(repo) == {"?? hello.txt"}, "only the task's own change may appear in repo"
    assert not (repo / ".trajectory").exists()


def test_request_carries_task_tools_key_and_model(fake_llm, headless, repo):
    server = fake_llm([write_step(repo / "hello.txt"), say("Created hello.txt.")])
    assert headless(server).code == 0
    first = server.requests[0]
    assert TASK in server.user_text(0)
    assert CORE_TOOLS <= set(server.tool_names(0)), server.tool_names(0)
    assert first["headers"]["authorization"] == f"Bearer {server.api_key}"
    assert first["body"]["model"] == "fake-model", "the litellm_proxy/ prefix is stripped"


def test_cost_is_zero_without_prices(fake_llm, headless, repo):
    server = fake_llm([write_step(repo / "hello.txt"), say("Done.")], usage=USAGE)
    run = headless(server)
    assert run.code == 0, run.log
    assert run.status["cost_usd"] == 0


@pytest.mark.parametrize("key", [None, "task", "problem_statement", "instruction", "prompt"])
def test_task_file_formats(fake_llm, headless, repo, key):
    text = f"Create hello.txt please ({key or 'plain text'})."
    server = fake_llm([write_step(repo / "hello.txt"), say("Done.")])
    run = headless(server, task={key: text} if key else text)
    assert run.code == 0, run.log
    assert text in server.user_text(0)
    assert run.status["exit_status"] == "Submitted"


# ---------------------------------------------------------------------------------------------
# Limits


@pytest.mark.parametrize("key", ["max_steps", "step_limit", "steps", "max_turns"])
def test_step_limit_ends_with_limits_exceeded(fake_llm, headless, key):
    server = fake_llm(endless_tool_calls)
    run = headless(server, budget={key: 2})
    assert run.code == 0, run.log
    assert run.status["exit_status"] == "LimitsExceeded"
    assert len(server.requests) <= 2 and run.status["steps"] <= 2


def test_cost_ceiling_ends_with_limits_exceeded(fake_llm, headless):
    server = fake_llm(endless_tool_calls, usage={"prompt_tokens": 4000, "completion_tokens": 10})
    run = headless(server, budget={"max_steps": 50, "max_cost_usd": 0.01}, cost=PRICES)
    assert run.code == 0, run.log
    assert run.status["exit_status"] == "LimitsExceeded"
    assert 1 <= len(server.requests) <= 3, "each call costs about $0.004"
    assert 0 < run.status["cost_usd"] <= 0.015


@pytest.mark.parametrize("reply", [say(""), say("done")], ids=["empty", "done-without-tools"])
def test_degenerate_model_is_never_submitted(fake_llm, headless, repo, git_status, reply):
    server = fake_llm([], default=reply)
    run = headless(server, budget={"max_steps": 5})
    status = run.status
    assert status["exit_status"] != "Submitted", status
    assert run.code == (0 if status["exit_status"] == "LimitsExceeded" else 1), run.log
    assert git_status(repo) == set()


# ---------------------------------------------------------------------------------------------
# Errors and usage errors


def test_dead_endpoint_exits_1_with_status(headless, dead_url):
    run = headless(dead_url, timeout=180)
    assert run.code == 1, run.log
    status = run.status
    assert status["exit_status"] not in ("Submitted", "LimitsExceeded"), status
    assert status.get("error") or status["exit_status"], status


@pytest.mark.parametrize(
    "drop, extra",
    [(("--task-file",), ()), (("--out-dir",), ()), ((), ("--frobnicate", "1"))],
    ids=["missing-task-file-arg", "missing-out-dir-arg", "unknown-arg"],
)
def test_usage_errors_exit_2(fake_llm, headless, drop, extra):
    server = fake_llm([say("never asked")])
    run = headless(server, drop=drop, extra=extra)
    assert run.code == 2, run.log
    assert server.requests == []


def test_missing_task_file_exits_2_naming_it(fake_llm, headless, tmp_path):
    server = fake_llm([say("never asked")])
    missing = str(tmp_path / "no-such-task.txt")
    run = headless(server, drop=("--task-file",), extra=("--task-file", missing))
    assert run.code == 2, run.log
    assert "no-such-task.txt" in run.proc.stdout + run.proc.stderr
    assert server.requests == []


# ---------------------------------------------------------------------------------------------
# Several tool calls in one reply


def test_calls_in_one_reply_run_in_order(fake_llm, headless, repo, git_status):
    path = repo / "temp.txt"
    step = calls(
        [
            ("write", {"file_path": str(path), "content": "hello\n"}),
            ("bash", {"command": f"mv {path} hello.txt"}),
        ]
    )
    server = fake_llm([step, say("Wrote temp.txt and renamed it to hello.txt.")])
    run = headless(server)
    assert run.code == 0, run.log
    assert not path.exists() and (repo / "hello.txt").read_text() == "hello\n"
    assert git_status(repo) == {"?? hello.txt"}


def test_a_failing_call_does_not_skip_the_next(fake_llm, headless, repo):
    failing = ("read", {"file_path": str(repo / "missing.txt")}, "call_fail")
    working = ("write", {"file_path": str(repo / "ok.txt"), "content": "ok\n"}, "call_ok")
    server = fake_llm([calls([failing, working]), say("Done.")])
    run = headless(server)
    assert run.code == 0, run.log
    assert (repo / "ok.txt").read_text() == "ok\n"
    results = server.tool_results(1)
    assert set(results) == {"call_fail", "call_ok"}, results
