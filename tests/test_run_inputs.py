"""What a run is told: the task and budget files of run_agent.sh (JSON, TOML, YAML through
maintained parsers; malformed files are usage errors that name the problem), and text that
is not valid UTF-8 anywhere a prompt comes in (repaired with U+FFFD, never a traceback,
never a malformed request)."""

from __future__ import annotations

import json
import os

import pytest
from fakellm import FAKE_MODEL, call, say

pytestmark = pytest.mark.core

REPLACEMENT = "\ufffd"


@pytest.fixture
def agent(run_agent, env, repo, tmp_path):
    """``agent(server, task_name, task_bytes, budget_name, budget_bytes)`` -> (proc, status)."""

    def go(server, task_name, task, budget_name="budget.json", budget=b'{"max_steps": 5}'):
        task_file = tmp_path / task_name
        task_file.write_bytes(task if isinstance(task, bytes) else task.encode())
        budget_file = tmp_path / budget_name
        budget_file.write_bytes(budget if isinstance(budget, bytes) else budget.encode())
        out = tmp_path / "out"
        proc = run_agent(
            *("--task-file", str(task_file), "--repo-dir", str(repo), "--out-dir", str(out)),
            *("--model-base-url", server.url, "--model-name", FAKE_MODEL),
            *("--model-api-key", server.api_key, "--budget-file", str(budget_file)),
            env=env(),
        )
        status_file = out / "status.json"
        status = json.loads(status_file.read_text()) if status_file.is_file() else None
        return proc, status

    return go


def write_hello(repo):
    return [call("write", file_path=str(repo / "hello.txt"), content="hello\n"), say("Created.")]


def endless(body, index):
    return call("bash", command=f"echo {index}")


# ---------------------------------------------------------------------------------------------
# Task and budget files


YAML_TASK = """\
# a task in the shape benchmark harnesses write
instance_id: demo-1
task: |
  Create hello.txt containing the word hello.

  Keep these details:
    - an indented list item: with a colon
    - "quoted" and 'single' quotes, a # that is not a comment
metadata:
  tags: [a, b]
  anchors: &base {x: 1}
  copy: *base
"""


def test_yaml_task_is_read_whole(fake_llm, agent, repo):
    server = fake_llm(write_hello(repo))
    proc, status = agent(server, "task.yaml", YAML_TASK)
    assert proc.returncode == 0, proc.stderr
    expected = (
        "Create hello.txt containing the word hello.\n\nKeep these details:\n"
        "  - an indented list item: with a colon\n"
        "  - \"quoted\" and 'single' quotes, a # that is not a comment"
    )
    assert expected in server.user_text(0)
    assert status["exit_status"] == "Submitted"


def test_toml_task_with_a_multiline_string(fake_llm, agent, repo):
    server = fake_llm(write_hello(repo))
    text = 'problem_statement = """\nCreate hello.txt.\n# not a comment\n"""\n[meta]\nid = 3\n'
    proc, status = agent(server, "task.toml", text)
    assert proc.returncode == 0, proc.stderr
    assert "Create hello.txt.\n# not a comment" in server.user_text(0)


def test_plain_text_task_that_looks_like_yaml_is_kept_whole(fake_llm, agent, repo):
    server = fake_llm(write_hello(repo))
    text = "Title: create hello.txt\nSteps: write the file.\n- then check it: ok\n"
    proc, _ = agent(server, "task.txt", text)
    assert proc.returncode == 0, proc.stderr
    assert text.strip() in server.user_text(0)


@pytest.mark.parametrize(
    "name, budget",
    [
        ("budget.toml", "[agent]\nstep_limit = 2\nmodel = 'x'\n"),
        ("budget.yaml", "agent: {step_limit: 2}\nnotes: [a, b]\n"),
        ("budget.yml", "limits:\n  max_steps: 2   # the step limit\n"),
        ("budget", '{"agent": {"max_steps": 2}}'),
        ("budget", "max_steps = 2\n"),
        ("budget", "max_steps: 2\n"),
    ],
    ids=["toml", "yaml-flow", "yml-comment", "sniffed-json", "sniffed-toml", "sniffed-yaml"],
)
def test_budget_formats_set_the_step_limit(fake_llm, agent, name, budget):
    server = fake_llm(endless)
    proc, status = agent(server, "task.txt", "Do it.", name, budget)
    assert proc.returncode == 0, proc.stderr
    assert status["exit_status"] == "LimitsExceeded", status
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "task_name, task, budget_name, budget, words",
    [
        (
            "task.yaml",
            "task: [unclosed\n",
            "budget.json",
            '{"max_steps": 3}',
            ["task.yaml", "line"],
        ),
        ("task.json", '{"task": "x",}', "budget.json", '{"max_steps": 3}', ["task.json", "line"]),
        ("task.toml", 'task = "x\n', "budget.json", '{"max_steps": 3}', ["task.toml", "line"]),
        ("task.yaml", "other: 1\n", "budget.json", '{"max_steps": 3}', ["task.yaml", "task"]),
        ("task.txt", "  \n", "budget.json", '{"max_steps": 3}', ["task.txt", "empty"]),
        ("task.txt", "Do it.", "budget.toml", "max_steps = = 3\n", ["budget.toml", "line"]),
        ("task.txt", "Do it.", "budget.yaml", "max_steps: [3\n", ["budget.yaml", "line"]),
        ("task.txt", "Do it.", "budget.json", '{"max_steps": 3', ["budget.json"]),
        ("task.txt", "Do it.", "budget.json", '{"max_steps": "many"}', ["max_steps", "number"]),
        ("task.txt", "Do it.", "budget.json", '{"max_steps": 2.5}', ["max_steps", "whole"]),
        ("task.txt", "Do it.", "budget.json", '{"max_steps": -1}', ["max_steps", ">= 0"]),
        ("task.txt", "Do it.", "budget.yaml", "- max_steps: 3\n", ["budget.yaml", "mapping"]),
        ("task.txt", "Do it.", "budget", "max_steps 3\n", ["budget", "malformed"]),
    ],
    ids=[
        "yaml-syntax",
        "json-syntax",
        "toml-syntax",
        "no-task-key",
        "empty-task",
        "budget-toml-syntax",
        "budget-yaml-syntax",
        "budget-json-syntax",
        "steps-not-a-number",
        "steps-not-whole",
        "steps-negative",
        "budget-a-list",
        "budget-no-format",
    ],
)
def test_malformed_input_files_are_usage_errors(
    fake_llm, agent, task_name, task, budget_name, budget, words
):
    server = fake_llm([say("never asked")])
    proc, status = agent(server, task_name, task, budget_name, budget)
    assert proc.returncode == 2, proc.stderr
    assert server.requests == []
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr
    assert status is not None and status["exit_status"] == "Error", status
    assert status["error"] and words[0] in status["error"], status


def test_unknown_budget_keys_are_noted_in_the_trace(fake_llm, agent, repo, tmp_path):
    server = fake_llm(write_hello(repo))
    proc, status = agent(server, "task.txt", "Do it.", "budget.yaml", "max_steps: 4\ncolor: red\n")
    assert proc.returncode == 0, proc.stderr
    trace = "".join(p.read_text() for p in (tmp_path / "out" / ".trajectory").rglob("*.jsonl"))
    assert "color" in trace


# ---------------------------------------------------------------------------------------------
# Invalid UTF-8 and lone surrogates


def test_task_file_with_invalid_utf8_is_repaired(fake_llm, agent, repo):
    server = fake_llm(write_hello(repo))
    proc, status = agent(server, "task.txt", b"Create hello.txt (caf\xe9 \xff\xfe).\n")
    assert proc.returncode == 0, proc.stderr
    assert f"Create hello.txt (caf{REPLACEMENT} {REPLACEMENT}{REPLACEMENT})." in server.user_text(0)
    assert status["exit_status"] == "Submitted"


def test_yaml_task_with_invalid_utf8_is_repaired(fake_llm, agent, repo):
    server = fake_llm(write_hello(repo))
    proc, _ = agent(server, "task.yaml", b"task: Create hello.txt \xc3(\n")
    assert proc.returncode == 0, proc.stderr
    assert f"Create hello.txt {REPLACEMENT}(" in server.user_text(0)


def test_print_argument_with_invalid_utf8(fake_llm, yuyao, env, repo):
    server = fake_llm([call("read", file_path=str(repo / "calc.py")), say("It adds.")])
    task = os.fsdecode(b"What does calc.py do? caf\xe9")
    proc = yuyao("-p", task, env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"What does calc.py do? caf{REPLACEMENT}" in server.user_text(0)


def test_print_task_on_stdin_with_invalid_utf8(fake_llm, yuyao, env, repo, tmp_path):
    server = fake_llm([call("read", file_path=str(repo / "calc.py")), say("It adds.")])
    piped = tmp_path / "stdin.txt"
    piped.write_bytes(b"What does calc.py do? \xff\n")
    with piped.open("rb") as stdin:
        proc = yuyao("-p", env=env(server), stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"What does calc.py do? {REPLACEMENT}" in server.user_text(0)


def test_system_prompt_file_with_invalid_utf8(fake_llm, yuyao, env, repo, tmp_path):
    server = fake_llm([call("read", file_path=str(repo / "calc.py")), say("It adds.")])
    extra = tmp_path / "extra.txt"
    extra.write_bytes(b"Always answer in French (fran\xe7ais).\n")
    proc = yuyao(
        "-p", "What does calc.py do?", "--append-system-prompt-file", str(extra), env=env(server)
    )
    assert proc.returncode == 0, proc.stderr
    assert f"(fran{REPLACEMENT}ais)" in server.system_prompt(0)


def test_agent_api_chat_with_a_lone_surrogate(fake_llm, api, repo):
    server = fake_llm([call("read", file_path=str(repo / "calc.py")), say("It adds.")])
    session = api(server)
    answer = session.chat("What does calc.py do? \ud800 and \udcff")
    assert answer == "It adds."
    assert f"What does calc.py do? {REPLACEMENT} and {REPLACEMENT}" in server.user_text(0)
    session.dispatch("/title caf\udce9")  # other text entry points repair too
