#!/usr/bin/env python3
"""Headless contract entry of yuyao agent (spec §0.1.1), called by run_agent.sh.

    run_agent.sh --task-file F --repo-dir D --model-base-url U --model-name N \\
                 --model-api-key K --budget-file B --out-dir O

Exactly these seven arguments, all required (`--x v` or `--x=v`). run_agent.sh takes the key
off the command line and hands it over in the environment (`YUYAO_RUN_AGENT_API_KEY`); once
read, the key is removed from the environment and blanked in this process's /proc entries.
This file validates the arguments and reads the two input files; the run itself (edits in
--repo-dir, status.json and .trajectory/ in --out-dir) is `yuyao._core.run_headless`.

Task file: plain text, or a JSON / TOML / simple YAML mapping with one of the keys
`task`, `problem_statement`, `instruction`, `prompt`.
Budget file: JSON, TOML or simple YAML with a step limit (`max_steps`, `step_limit`, `steps`,
`max_turns`), optionally a cost limit in USD (`max_cost_usd`, `cost_limit`, `max_budget_usd`)
and a wall-clock limit in seconds (`max_wall_seconds`, `time_limit_seconds`,
`timeout_seconds`). Nested sections are searched too (`agent: {step_limit: 30}`); a limit of
0 means "no limit"; other keys are ignored and noted in the trace.

Exit codes (spec §9): 0 Submitted or LimitsExceeded, 1 runtime error, 2 usage error
(bad arguments, missing or malformed file). Only the standard library is imported before the
arguments are valid.
"""

from __future__ import annotations

import json
import os
import re
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

TASK_KEYS = ("task", "problem_statement", "instruction", "prompt")
STEP_KEYS = ("max_steps", "step_limit", "steps", "max_turns")
COST_KEYS = ("max_cost_usd", "cost_limit", "max_budget_usd")
WALL_KEYS = ("max_wall_seconds", "time_limit_seconds", "timeout_seconds")


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
# Simple YAML (no PyYAML dependency): mappings, nested mappings, scalars, block scalars
# ---------------------------------------------------------------------------------------------

_YAML_KEY = re.compile(r"""^(?P<key>"[^"]*"|'[^']*'|[^\s#'"\-][^:#]*?)\s*:(?:\s+(?P<rest>.*))?$""")


class _YamlLines:
    def __init__(self, text: str):
        self.lines = [line.rstrip() for line in text.replace("\t", "    ").splitlines()]
        self.index = 0

    def next_content(self):
        """(indent, text) of the next line that is neither blank nor a comment, or None."""
        while self.index < len(self.lines):
            line = self.lines[self.index]
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and stripped not in ("---", "..."):
                return len(line) - len(line.lstrip()), stripped
            self.index += 1
        return None


def parse_simple_yaml(text: str):
    """A dict for a simple `key: value` document, else None (lists, anchors, flow style...)."""
    lines = _YamlLines(text)
    try:
        first = lines.next_content()
        if first is None:
            return {}
        mapping = _yaml_mapping(lines, first[0])
    except ValueError:
        return None
    return mapping if lines.next_content() is None else None


def _yaml_mapping(lines: _YamlLines, indent: int) -> dict:
    mapping = {}
    while True:
        current = lines.next_content()
        if current is None or current[0] < indent:
            return mapping
        if current[0] > indent:
            raise ValueError("unexpected indentation")
        match = _YAML_KEY.match(current[1])
        if match is None:
            raise ValueError("not a key: value line")
        lines.index += 1
        key = _yaml_unquote(match.group("key").strip())
        mapping[key] = _yaml_value(lines, indent, (match.group("rest") or "").strip())


def _yaml_value(lines: _YamlLines, indent: int, rest: str):
    if rest[:1] in ("|", ">"):
        return _yaml_block_scalar(lines, indent, rest)
    if rest and rest[0] not in "\"'" and " #" in rest:
        rest = rest.split(" #", 1)[0].rstrip()
    if rest.startswith(("[", "{", "&", "*", "!")):
        raise ValueError("flow style, anchors and tags are not supported")
    following = lines.next_content()
    deeper = following is not None and following[0] > indent
    if not rest:
        return _yaml_mapping(lines, following[0]) if deeper else None
    if deeper:  # a plain scalar continued on more-indented lines
        if rest[0] in "\"'":
            raise ValueError("multi-line quoted scalars are not supported")
        parts = [rest]
        while (following := lines.next_content()) is not None and following[0] > indent:
            parts.append(following[1])
            lines.index += 1
        return " ".join(parts)
    return _yaml_scalar(rest)


def _yaml_block_scalar(lines: _YamlLines, indent: int, header: str) -> str:
    body = []
    while lines.index < len(lines.lines):
        line = lines.lines[lines.index]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
        lines.index += 1
    while body and not body[-1].strip():
        body.pop()
    margin = min((len(line) - len(line.lstrip()) for line in body if line.strip()), default=0)
    body = [line[margin:] for line in body]
    text = "\n".join(body) if header[0] == "|" else _fold_lines(body)
    return text if "-" in header else text + "\n"


def _fold_lines(body: list[str]) -> str:
    paragraphs, current = [], []
    for line in body:
        if line.strip():
            current.append(line.strip())
        else:
            paragraphs.append(" ".join(current))
            current = []
    paragraphs.append(" ".join(current))
    return "\n".join(paragraphs)


def _yaml_unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            return json.loads(text)
        except ValueError:
            return text[1:-1]
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def _yaml_scalar(text: str):
    if text[:1] in "\"'":
        return _yaml_unquote(text)
    lowered = text.lower()
    if lowered in ("null", "~"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for convert in (int, float):
        try:
            return convert(text.replace("_", ""))
        except ValueError:
            pass
    return text


# ---------------------------------------------------------------------------------------------
# Input files
# ---------------------------------------------------------------------------------------------


def read_text(path: str, role: str) -> str:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return handle.read()
    except FileNotFoundError:
        raise UsageError(f"{role} '{path}' does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{role} '{path}' is a directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{role} '{path}' cannot be read: {exc}") from None


def _parse_toml(text: str):
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        return _parse_flat_toml(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _parse_flat_toml(text: str):
    """`key = value` lines under optional [section] headers: enough for a budget file."""
    data: dict = {}
    section = data
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = data.setdefault(line.strip("[]").strip(), {})
            continue
        if "=" not in line:
            return None
        key, value = (part.strip() for part in line.split("=", 1))
        section[_yaml_unquote(key)] = _yaml_scalar(value)
    return data


def _parse_json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def parse_structured(text: str, path: str):
    """The document as Python data, by extension, else the first format that parses."""
    parsers = {".json": [_parse_json], ".toml": [_parse_toml], ".yaml": [parse_simple_yaml]}
    parsers[".yml"] = parsers[".yaml"]
    suffix = os.path.splitext(path)[1].lower()
    for parse in parsers.get(suffix, [_parse_json, _parse_toml, parse_simple_yaml]):
        data = parse(text)
        if data is not None:
            return data
    return None


def _flatten(data: dict, prefix: str = ""):
    """(dotted path, leaf key, value) for every leaf of nested mappings."""
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flatten(value, path + ".")
        else:
            yield path, str(key), value


def read_task(path: str) -> str:
    text = read_text(path, "task file")
    if not text.strip():
        raise UsageError(f"task file '{path}' is empty")
    structured = os.path.splitext(path)[1].lower() in (".json", ".toml", ".yaml", ".yml")
    data = parse_structured(text, path) if structured else _sniff_task_document(text, path)
    if data is None:
        if structured:
            raise UsageError(f"task file '{path}' is malformed")
        return text.strip()
    return _task_from_document(data, path)


def _sniff_task_document(text: str, path: str):
    """Data when an extension-less task file is clearly a document with a task key."""
    if text.lstrip().startswith("{"):
        data = _parse_json(text)
        return data if isinstance(data, dict) else None
    data = parse_simple_yaml(text)
    return data if isinstance(data, dict) and any(key in data for key in TASK_KEYS) else None


def _task_from_document(data, path: str) -> str:
    if isinstance(data, str) and data.strip():
        return data.strip()
    if isinstance(data, dict):
        for key in TASK_KEYS:
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    raise UsageError(f"task file '{path}' has no non-empty {' / '.join(TASK_KEYS)} entry")


class Budget:
    def __init__(self):
        self.max_steps = None
        self.max_cost_usd = None
        self.max_wall_seconds = None
        self.notes = []


def _number(value, key: str, path: str, integer: bool):
    if isinstance(value, bool) or value is None:
        raise UsageError(f"budget file '{path}': '{key}' must be a number, got {value!r}")
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise UsageError(f"budget file '{path}': '{key}' must be a number, got {value!r}") from None
    if number != number or number < 0 or number == float("inf"):
        raise UsageError(f"budget file '{path}': '{key}' must be >= 0, got {value!r}")
    if integer and number != int(number):
        raise UsageError(f"budget file '{path}': '{key}' must be a whole number, got {value!r}")
    return int(number) if integer else number


def read_budget(path: str) -> Budget:
    text = read_text(path, "budget file")
    data = parse_structured(text, path) if text.strip() else {}
    if not isinstance(data, dict):
        raise UsageError(
            f"budget file '{path}' is malformed (expected a JSON, TOML or YAML mapping)"
        )
    budget = Budget()
    limits = (("max_steps", STEP_KEYS, True), ("max_cost_usd", COST_KEYS, False))
    limits += (("max_wall_seconds", WALL_KEYS, False),)
    found = {}
    for dotted, leaf, value in _flatten(data):
        field = next((name for name, keys, _ in limits if leaf in keys), None)
        if field is None:
            budget.notes.append(f"ignored budget key '{dotted}'")
        elif field in found:
            budget.notes.append(f"ignored budget key '{dotted}': '{found[field]}' already set it")
        else:
            integer = field == "max_steps"
            number = _number(value, dotted, path, integer)
            found[field] = dotted
            if number == 0:  # the convention of step_limit/cost_limit: 0 = unlimited
                budget.notes.append(f"budget key '{dotted}' is 0: no limit")
            else:
                setattr(budget, field, number)
    if budget.max_steps is None:
        budget.notes.append("the budget file sets no step limit")
    return budget


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
    out_dir = os.path.abspath(values["--out-dir"])
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out-dir '{values['--out-dir']}' cannot be created: {exc}") from None
    try:
        repo_dir = values["--repo-dir"]
        if not os.path.isdir(repo_dir):
            raise UsageError(f"--repo-dir '{repo_dir}' is not an existing directory")
        task = read_task(values["--task-file"])
        budget = read_budget(values["--budget-file"])
    except UsageError as error:
        write_failure_status(out_dir, str(error))
        raise
    return {
        "task": task,
        "repo_dir": os.path.abspath(repo_dir),
        "out_dir": out_dir,
        "model": {
            "base_url": values["--model-base-url"],
            "name": values["--model-name"],
            "api_key": values["--model-api-key"],
            "cost": os.environ.get("D2A_MODEL_COST"),
        },
        "max_steps": budget.max_steps,
        "max_cost_usd": budget.max_cost_usd,
        "max_wall_seconds": budget.max_wall_seconds,
        "notes": budget.notes,
    }


def hide_model_key(core, key: str) -> None:
    """The key leaves the environment (no tool process inherits it) and is blanked in this
    process's /proc/<pid>/environ and cmdline; the run gets it in the request."""
    os.environ.pop(KEY_VARIABLE, None)
    from yuyao.headless import hide_model_key as hide

    hide(core, key)


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
        message = f"the yuyao core extension is not installed ({exc})"
        write_failure_status(request["out_dir"], message)
        sys.stderr.write(f"yuyao: {message}\n")
        return EXIT_RUNTIME
    hide_model_key(core, request["model"]["api_key"])
    try:
        return int(core.run_headless(json.dumps(request)))
    except ValueError as exc:
        sys.stderr.write(f"yuyao: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("yuyao: interrupted\n")
        return EXIT_RUNTIME
    except Exception as exc:  # reported, never a traceback
        sys.stderr.write(f"yuyao: {exc}\n")
        return EXIT_RUNTIME


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
