"""The command-line surface, driven as a user drives it: `yuyao` and `run_agent.sh` as processes.

These tests need no model and no built extension: every case here is decided before a
session is opened (usage errors, help, version, unavailable features, missing model).
The expected spellings below are copied from the spec, not from the CLI's own table, so a
flag dropped from the table fails here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUN_AGENT = REPO / "run_agent.sh"
VERSION = (REPO / "VERSION").read_text().strip()
MODEL_VARIABLES = ("D2A_MODEL_BASE_URL", "D2A_MODEL_NAME", "D2A_MODEL_API_KEY")


def yuyao_command() -> list[str]:
    script = Path(sys.executable).parent / "yuyao"
    return [str(script)] if script.exists() else [sys.executable, "-m", "yuyao"]


@pytest.fixture
def env(tmp_path):
    """No model configured, a private YUYAO_HOME, yuyao importable from where this test
    process imports it (the installed wheel in CI, the source tree in development: putting
    the source first would shadow an installed wheel with a tree that has no compiled core)."""
    import yuyao

    importable = Path(yuyao.__file__).resolve().parent.parent
    environment = {k: v for k, v in os.environ.items() if not k.startswith("D2A_MODEL_")}
    environment["YUYAO_HOME"] = str(tmp_path / "home")
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(importable)] + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH") else [])
    )
    # run_agent.sh looks for `python3` on PATH: make it this interpreter.
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment["PATH"]])
    return environment


def yuyao(env, *args, stdin_text=None, cwd=None):
    return subprocess.run(
        [*yuyao_command(), *args],
        env=env,
        cwd=cwd,
        input=stdin_text,
        stdin=None if stdin_text is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


# ---------------------------------------------------------------------------------------------
# Usage errors: exit 2, `yuyao: error: ...` and a pointer to --help
# ---------------------------------------------------------------------------------------------

MALFORMED = [
    # unknown flags and commands
    ["--bogus"],
    ["--modle", "plan"],
    ["-x"],
    ["--model-base-url", "http://x"],  # run_agent.sh only
    ["--model-name", "m"],
    ["--model-api-key", "k"],
    ["frobnicate"],
    ["fix", "the", "bug"],  # a task needs -p
    ["mcp", "frob"],
    ["config", "frob", "k"],
    ["memory", "frob"],
    ["sandbox", "frob"],
    ["agents", "frob"],
    ["features", "frob"],
    # missing arguments
    ["mcp"],
    ["config"],
    ["config", "get"],
    ["config", "set", "k"],
    ["config", "unset"],
    ["mcp", "add"],
    ["mcp", "remove"],
    ["mcp", "add", "x", "--"],
    ["memory", "search"],
    ["agents", "attach"],
    ["features", "enable"],
    ["--model"],
    ["--mode"],
    ["--max-steps"],
    ["--model", "--json"],
    ["-p"],  # no task and an empty stdin
    ["-p", "--", ""],
    # too many arguments
    ["config", "get", "a", "b"],
    ["config", "set", "a", "b", "c"],
    ["mcp", "list", "extra"],
    ["mcp", "add", "x", "http://host/mcp", "--", "cmd"],
    # bad enum values
    ["--mode", "nope"],
    ["--mode=sideways"],
    ["--role", "boss"],
    ["--sandbox", "none"],
    ["--network", "maybe"],
    ["--stream", "yes"],
    ["--show-thinking", "loud"],
    ["--thinking", "ultra"],
    ["-p", "x", "--output-format", "yaml"],
    ["-p", "x", "--input-format", "xml"],
    ["--curiosity", "extreme"],
    # bad numbers
    ["--max-steps", "0"],
    ["--max-steps", "-3"],
    ["--max-steps", "ten"],
    ["--max-steps=1.5"],
    ["--max-budget-usd", "-1"],
    ["--max-budget-usd", "lots"],
    ["--max-cost", "nan"],
    ["--map-tokens", "-1"],
    ["--map-tokens", "many"],
    # switches given a value, presets given a value
    ["--verbose=yes"],
    ["--plan=now"],
    ["--no-memory=1"],
    # conflicts
    ["--continue", "--resume", "abc"],
    ["-c", "--resume", "abc"],
    ["--plan", "--yolo"],
    ["--mode", "ask", "--yolo"],
    ["--auto-edit", "--auto-review"],
    ["--mode", "plan", "-y"],
    ["--dangerously-skip-permissions", "--plan"],
    ["--role", "ask", "--role", "debug"],
    ["--system-prompt", "a", "--system-prompt-file", "f"],
    ["--append-system-prompt", "a", "--append-system-prompt-file", "f"],
    ["-p", "x", "--bg"],
    ["config", "get", "k", "-p"],
    ["--output-format", "json"],  # only meaningful with -p
    ["--json"],
    ["--team-name", "t"],  # needs --role orchestrator
    ["--fork-session"],  # needs --continue/--resume
    ["--exec", "make"],  # needs --bg
    # unreadable prompt files
    ["-p", "x", "--system-prompt-file", "/nonexistent/prompt.txt"],
    ["-p", "x", "--append-system-prompt-file", "/nonexistent/extra.txt"],
]


@pytest.mark.parametrize("args", MALFORMED, ids=" ".join)
def test_malformed_invocation_is_a_usage_error(env, args):
    result = yuyao(env, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("yuyao: error: "), result.stderr
    assert "--help" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_usage_error_messages_name_the_problem(env):
    assert "--modle" in yuyao(env, "--modle", "plan").stderr
    assert "did you mean --mode" in yuyao(env, "--modle", "plan").stderr
    assert "ask, plan, auto-edit, auto-review, yolo" in yuyao(env, "--mode", "x").stderr
    conflict = yuyao(env, "--plan", "--yolo").stderr
    assert "--plan" in conflict and "--yolo" in conflict
    assert (
        "/nonexistent/prompt.txt"
        in yuyao(env, "-p", "x", "--system-prompt-file", "/nonexistent/prompt.txt").stderr
    )
    assert "yuyao mcp --help" in yuyao(env, "mcp", "frob").stderr


# ---------------------------------------------------------------------------------------------
# Help and version
# ---------------------------------------------------------------------------------------------

SPEC_FLAGS = [
    # §2
    "-p", "--print",
    # §3
    "--mode", "ask", "plan", "auto-edit", "auto-review", "yolo",
    "--plan", "--auto-edit", "--auto-review", "--yolo",
    "--dangerously-skip-permissions", "--yes", "-y",
    "--role", "execute", "architect", "debug", "orchestrator", "--team-name",
    "--sandbox", "read-only", "workspace-write", "full-access",
    "--network", "--allow", "--deny",
    # §4
    "--output-format", "--json", "--json-schema", "--stream", "--show-thinking",
    "collapsed", "expanded", "-c", "--continue", "--resume", "--no-memory", "--max-steps",
    "--thinking", "low", "medium", "high", "max", "--auto-commit", "--auto-test", "--test-cmd",
    "--map-tokens", "--experimental-lsp", "--model", "--tools", "--allowed-tools",
    "--disallowed-tools", "--worktree", "-w", "--bg", "--exec", "--fork-session",
    "--max-budget-usd", "--system-prompt", "--system-prompt-file", "--append-system-prompt",
    "--append-system-prompt-file", "--input-format", "stream-json", "--verbose", "--help",
    # seed 000
    "--curiosity", "normal", "--max-cost",
    "--version",
]  # fmt: skip

SPEC_COMMANDS = {
    "memory": ["status", "search", "index", "rem-backfill", "--force", "--rollback"],
    "mcp": ["add", "list", "remove"],
    "sandbox": ["list", "recreate", "explain"],
    "agents": ["list", "dispatch", "attach", "stop"],
    "features": ["list", "enable", "disable"],
    "config": ["get", "set", "unset"],
}


@pytest.mark.parametrize("spelling", ["--help", "-h"])
def test_help_lists_the_whole_surface(env, spelling):
    result = yuyao(env, spelling)
    assert result.returncode == 0 and result.stderr == ""
    words = set(re.findall(r"(?<![\w-])-{1,2}[\w-]+|[\w-]+", result.stdout))
    missing = [flag for flag in SPEC_FLAGS if flag not in words]
    assert not missing, f"--help does not mention {missing}"
    for command, actions in SPEC_COMMANDS.items():
        assert command in words
        for action in actions[:3]:
            assert action in words, f"--help does not mention {command} {action}"
    for variable in MODEL_VARIABLES:
        assert variable in result.stdout


def test_help_shows_aliases_as_their_canonical_form(env):
    text = yuyao(env, "--help").stdout
    for alias, canonical in [
        ("--plan", "--mode plan"),
        ("--yolo", "--mode yolo"),
        ("--yes", "--mode yolo"),
        ("-y", "--mode yolo"),
        ("--dangerously-skip-permissions", "--mode yolo"),
        ("--json", "--output-format json"),
        ("--max-cost", "--max-budget-usd"),
    ]:
        assert re.search(rf"^\s+{re.escape(alias)}\s+= {re.escape(canonical)}$", text, re.M), alias


@pytest.mark.parametrize("command", sorted(SPEC_COMMANDS))
def test_each_command_has_its_own_help(env, command):
    for args in ([command, "--help"], [command, "-h"], [command, SPEC_COMMANDS[command][0], "-h"]):
        result = yuyao(env, *args)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"Usage: yuyao {command} ")
        for action in SPEC_COMMANDS[command]:
            assert action in result.stdout


def test_help_wins_over_what_follows(env):
    result = yuyao(env, "--plan", "--help", "--not-parsed")
    assert result.returncode == 0 and "Usage:" in result.stdout


@pytest.mark.parametrize("spelling", ["--version", "-V"])
def test_version(env, spelling):
    result = yuyao(env, spelling)
    assert result.returncode == 0
    assert result.stdout == f"yuyao {VERSION}\n"


def _all_help_texts(env) -> list[str]:
    texts = [yuyao(env, "--help").stdout, yuyao(env, "--version").stdout]
    texts += [yuyao(env, command, "--help").stdout for command in SPEC_COMMANDS]
    return texts


def test_only_the_name_yuyao_is_visible(env):
    for text in _all_help_texts(env):
        assert text
        assert "mini" not in text.lower()
        assert not re.search(r"[\u3400-\u9fff]", text), "no Chinese name"


def test_help_and_version_import_nothing_heavy(env):
    for args in (["--help"], ["--version"]):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "yuyao", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0
        imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
        heavy = {"rich", "prompt_toolkit", "yuyao._core", "yuyao.tui", "json", "argparse"}
        assert not heavy & imported, f"{args}: imports {heavy & imported}"


# Every flag, choice and slash command of the contract is built (seed 002 §4, §5): nothing is marked
# "not in this build" in the help of either front.
# ---------------------------------------------------------------------------------------------


def test_nothing_is_marked_not_in_this_build(env, tmp_path):
    cli_help = yuyao(env, "--help")
    assert cli_help.returncode == 0, cli_help.stderr
    assert "not in this build" not in cli_help.stdout
    slash_help = subprocess.run(
        [sys.executable, "-c", "from yuyao.agent_api import create_session as c; print(c().dispatch('/help'))"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert slash_help.returncode == 0, slash_help.stderr
    assert "/help" in slash_help.stdout and "/verify" in slash_help.stdout
    assert "not in this build" not in slash_help.stdout


# ---------------------------------------------------------------------------------------------
# -p: accepted invocations reach the model check (exit 1, naming the variables)
# ---------------------------------------------------------------------------------------------

VALID_PRINT_RUNS = [
    ["-p", "say hi"],
    ["--print", "say hi"],
    ["--print=say hi"],
    ["say", "hi", "-p"],
    ["-p", "--json", "say hi"],
    ["-p", "x", "--output-format=json"],
    ["-p", "x", "--output-format", "text", "--input-format", "text"],
    ["-p", "x", "--plan", "--mode", "plan"],
    ["-p", "x", "--yolo", "--yes", "-y", "--dangerously-skip-permissions", "--mode=yolo"],
    ["-p", "x", "--auto-edit"],
    ["-p", "x", "--auto-review"],
    ["-p", "x", "--mode", "AUTO_EDIT"],
    ["-p", "x", "--role", "ask", "--sandbox", "read-only", "--network", "off"],
    ["-p", "x", "--allow", "Bash(git log *)", "--allow", "Read", "--deny", "Bash(rm *)"],
    ["-p", "x", "--tools", "bash,read grep", "--allowed-tools", "Bash(git log *),Edit(/src/*)"],
    ["-p", "x", "--disallowed-tools", "WebFetch", "--tools", ""],
    ["-p", "x", "--stream", "off", "--show-thinking", "expanded", "--thinking", "max"],
    ["-p", "x", "--max-steps", "3", "--max-budget-usd", "0.5"],
    ["-p", "x", "--max-cost", "0", "--max-budget-usd=0"],
    ["-p", "x", "--curiosity", "high", "--no-memory", "--verbose"],
    ["-p", "x", "--system-prompt", "-be terse", "--append-system-prompt", "more"],
    ["-p", "--", "-a task that starts with a dash"],
    ["-p", "x", "config", "get", "k"],  # after -p, every word is the task
]


@pytest.mark.parametrize("args", VALID_PRINT_RUNS, ids=" ".join)
def test_print_without_model_names_the_variables(env, args):
    result = yuyao(env, *args)
    assert result.returncode == 1, result.stderr
    assert "no model configured" in result.stderr
    for variable in MODEL_VARIABLES:
        assert variable in result.stderr
    assert "Traceback" not in result.stderr


def test_print_reads_the_task_from_stdin(env):
    result = yuyao(env, "-p", stdin_text="say hi\n")
    assert result.returncode == 1 and "no model configured" in result.stderr


def test_prompt_files_are_read(env, tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("be brief")
    result = yuyao(env, "-p", "x", "--system-prompt-file", str(prompt))
    assert result.returncode == 1 and "no model configured" in result.stderr


# ---------------------------------------------------------------------------------------------
# run_agent.sh
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def contract(tmp_path):
    """Valid files for the seven arguments."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "task.txt").write_text("fix the bug\n")
    (tmp_path / "budget.json").write_text(json.dumps({"max_steps": 5}))
    return {
        "--task-file": str(tmp_path / "task.txt"),
        "--repo-dir": str(tmp_path / "repo"),
        "--model-base-url": "http://127.0.0.1:9/v1",
        "--model-name": "test-model",
        "--model-api-key": "key",
        "--budget-file": str(tmp_path / "budget.json"),
        "--out-dir": str(tmp_path / "out"),
    }


def run_agent(env, *args, timeout=60):
    return subprocess.run(
        ["bash", str(RUN_AGENT), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def as_args(values: dict) -> list[str]:
    return [word for name, value in values.items() for word in (name, value)]


def test_run_agent_is_executable():
    assert os.access(RUN_AGENT, os.X_OK)
    assert (REPO / "entry.py").is_file()


def test_run_agent_without_arguments_prints_usage(env):
    result = run_agent(env)
    assert result.returncode == 2
    for name in ("--task-file", "--repo-dir", "--model-base-url", "--budget-file", "--out-dir"):
        assert name in result.stderr


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("missing", "--task-file"),
        ("missing", "--out-dir"),
        ("missing", "--model-api-key"),
        ("unknown", "--max-steps"),
        ("unknown", "stray"),
        ("duplicate", "--repo-dir"),
        ("no-value", "--budget-file"),
        ("empty", "--model-name"),
    ],
)
def test_run_agent_argument_errors(env, contract, kind, name):
    without = as_args({k: v for k, v in contract.items() if k != name})
    args = {
        "missing": without,
        "unknown": as_args(contract) + ([name, "3"] if name.startswith("--") else [name]),
        "duplicate": as_args(contract) + [name, contract.get(name, "")],
        "no-value": without + [name],
        "empty": as_args({**contract, name: ""}),
    }[kind]
    result = run_agent(env, *args)
    assert result.returncode == 2, result.stderr
    assert "usage: run_agent.sh" in result.stderr


def test_run_agent_accepts_equals_form_and_an_empty_key(env, contract):
    values = {**contract, "--model-api-key": ""}
    args = [f"{name}={value}" for name, value in values.items()]
    result = run_agent(env, *args, timeout=180)  # with the core built, it tries the endpoint
    # Past argument checking: exit 0/1 from the run (1 here: no endpoint, or no extension).
    assert result.returncode in (0, 1), result.stderr
    assert (Path(contract["--out-dir"]) / "status.json").is_file()


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("--task-file", None, "does not exist"),
        ("--task-file", "", "is empty"),
        ("--task-file", '{"title": "no task key"}', "no non-empty"),
        ("--budget-file", None, "does not exist"),
        ("--budget-file", "{not json", "malformed"),
        ("--budget-file", '{"max_steps": -2}', "max_steps"),
        ("--budget-file", '{"max_steps": "many"}', "max_steps"),
        ("--repo-dir", None, "not an existing directory"),
    ],
)
def test_run_agent_file_errors_name_the_file(env, contract, tmp_path, name, content, expected):
    path = tmp_path / ("given.json" if name != "--repo-dir" else "no-such-dir")
    if content is not None:
        path.write_text(content)
    result = run_agent(env, *as_args({**contract, name: str(path)}))
    assert result.returncode == 2, result.stderr
    assert str(path) in result.stderr and expected in result.stderr
    status = json.loads((Path(contract["--out-dir"]) / "status.json").read_text())
    assert status["exit_status"] == "Error" and status["cost_usd"] == 0
