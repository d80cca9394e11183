#!/usr/bin/env python3
"""Headless contract entry of yuyao agent (spec §0.1.1), called by run_agent.sh.

    run_agent.sh --task-file F --repo-dir D --model-base-url U --model-name N \\
                 --model-api-key K --budget-file B --out-dir O

Exactly these seven arguments, all required (`--x v` or `--x=v`). run_agent.sh takes the key
off the command line and hands it over in the environment (`YUYAO_RUN_AGENT_API_KEY`); once
read, the key is removed from the environment and blanked in this process's /proc entries.
This file validates the arguments; the run itself — reading the two input files, the edits
in --repo-dir, status.json and .trajectory/ in --out-dir, the closing line on stderr — is
`yuyao._core.run_headless` (rust/core/src/headless.rs, run_inputs.rs).

Task file: plain text, or a JSON / TOML / YAML document with one of the keys `task`,
`problem_statement`, `instruction`, `prompt`.
Budget file: a JSON, TOML or YAML mapping with a step limit (`max_steps`, `step_limit`,
`steps`, `max_turns`), optionally a cost limit in USD (`max_cost_usd`, `cost_limit`,
`max_budget_usd`) and a wall-clock limit in seconds (`max_wall_seconds`,
`time_limit_seconds`, `timeout_seconds`), at any depth (`agent: {step_limit: 30}`); a limit
of 0 means "no limit"; other keys are ignored and noted in the trace.

Exit codes (spec §9): 0 Submitted or LimitsExceeded, 1 runtime error, 2 usage error
(bad arguments, missing or malformed file). Only the standard library is imported before the
arguments are valid.
"""

from __future__ import annotations

import json
import os
import sys

EXIT_RUNTIME, EXIT_USAGE = 1, 2

ARGUMENTS = (
    ("--task-file", "file holding the task (text, JSON, TOML or YAML)"),
    ("--repo-dir", "repository to change in place"),
    ("--model-base-url", "OpenAI-compatible endpoint"),
    ("--model-name", "model name"),
    ("--model-api-key", "API key (may be empty)"),
    ("--budget-file", "limits (JSON, TOML or YAML)"),
    ("--out-dir", "where status.json and .trajectory/ are written"),
)
MAY_BE_EMPTY = ("--model-api-key",)
KEY_VARIABLE = "YUYAO_RUN_AGENT_API_KEY"  # the key, as run_agent.sh hands it over


class UsageError(Exception):
    """Bad arguments or input files: exit 2."""


class ArgumentError(UsageError):
    """The command line itself is wrong: the usage text is printed too."""


def usage() -> str:
    lines = ["usage: run_agent.sh " + " ".join(f"{name} <value>" for name, _ in ARGUMENTS), ""]
    lines += [f"  {name:<18} {meaning}" for name, meaning in ARGUMENTS]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------


def parse_arguments(argv: list[str], environ=None) -> dict[str, str]:
    known = dict(ARGUMENTS)
    values: dict[str, str] = {}
    environ = os.environ if environ is None else environ
    if KEY_VARIABLE in environ:
        values["--model-api-key"] = environ[KEY_VARIABLE]
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        name, inline = word.split("=", 1) if word.startswith("--") and "=" in word else (word, None)
        if name not in known:
            raise ArgumentError(f"unknown argument '{word}'")
        if name in values:
            raise ArgumentError(f"{name} given twice")
        if inline is None:
            if index >= len(argv) or argv[index] in known:
                raise ArgumentError(f"{name} needs a value")
            inline = argv[index]
            index += 1
        if not inline.strip() and name not in MAY_BE_EMPTY:
            raise ArgumentError(f"{name} needs a non-empty value")
        values[name] = inline
    missing = [name for name in known if name not in values]
    if missing:
        raise ArgumentError(f"missing required argument(s): {', '.join(missing)}")
    return values


# ---------------------------------------------------------------------------------------------
# Run
# ---------------------------------------------------------------------------------------------


def write_failure_status(out_dir: str, message: str) -> None:
    """A status.json for a run that never reached the core, so the caller still finds one."""
    status = {"exit_status": "Error", "cost_usd": 0.0, "steps": 0, "error": message}
    try:
        with open(os.path.join(out_dir, "status.json"), "w", encoding="utf-8") as handle:
            json.dump(status, handle, indent=2)
            handle.write("\n")
    except OSError:
        pass  # the exit code still reports the failure


def prepare_request(values: dict[str, str]) -> dict:
    """The run request; the task and budget files are read by the core (usage errors there
    exit 2 with status.json written)."""
    out_dir = os.path.abspath(values["--out-dir"])
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out-dir '{values['--out-dir']}' cannot be created: {exc}") from None
    repo_dir = values["--repo-dir"]
    if not os.path.isdir(repo_dir):
        error = UsageError(f"--repo-dir '{repo_dir}' is not an existing directory")
        write_failure_status(out_dir, str(error))
        raise error
    return {
        "task_file": os.path.abspath(values["--task-file"]),
        "budget_file": os.path.abspath(values["--budget-file"]),
        "repo_dir": os.path.abspath(repo_dir),
        "out_dir": out_dir,
        "model": {
            "base_url": values["--model-base-url"],
            "name": values["--model-name"],
            "api_key": values["--model-api-key"],
            "cost": os.environ.get("D2A_MODEL_COST"),
        },
    }


def load_core():
    """yuyao._core; from a source checkout, the extension built in place under python/."""
    try:
        from yuyao import _core
    except ImportError:
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python")
        if not os.path.isdir(os.path.join(source, "yuyao")) or source in sys.path:
            raise
        sys.path.insert(0, source)
        sys.modules.pop("yuyao", None)
        from yuyao import _core
    return _core


def run(request: dict) -> int:
    try:
        core = load_core()
    except ImportError as exc:
        message = (
            f"the yuyao core extension is not installed ({exc}); run ./install.sh "
            "(run_agent.sh looks in the active venv, $YUYAO_HOME/venv, ~/.yuyao/venv and "
            "the checkout's .venv)"
        )
        write_failure_status(request["out_dir"], message)
        sys.stderr.write(f"yuyao: {message}\n")
        return EXIT_RUNTIME
    from yuyao.core_link import run_headless

    return run_headless(core, request)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv in (["--help"], ["-h"]):
        sys.stdout.write(usage())
        return 0
    try:
        request = prepare_request(parse_arguments(argv))
    except UsageError as error:
        shown = usage() if isinstance(error, ArgumentError) else "(run_agent.sh --help for usage)\n"
        sys.stderr.write(f"run_agent.sh: error: {error}\n{shown}")
        return EXIT_USAGE
    return run(request)


if __name__ == "__main__":
    sys.exit(main())
