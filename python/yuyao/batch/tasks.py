"""The task list of `yuyao batch` (docs/parallel.md): a JSONL file, or a folder of `.json` /
`.jsonl` files, one task an object:

    {"id": "fix-1", "task": "Fix the failing test", "repo": "../proj", "commit": "HEAD",
     "budget": {"max_steps": 30, "max_cost_usd": 0.5}, "model": {"name": "other-model"}}

`task` (text) or `task_file` (read here, on the driver, so a worker elsewhere gets its
content); `repo` (a local git repository; `commit` optional, default HEAD) or `repo_url`
plus `commit`. Paths are relative to the file that names them. A malformed line is
reported with its file and line number; the other lines still run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# Safe as one path component of the out dir: no separators, no leading dot.
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
MAX_TASK_BYTES = 1 << 20
MODEL_KEYS = ("name", "base_url", "cost")
KNOWN_KEYS = {"id", "task", "task_file", "repo", "repo_url", "commit", "budget", "model"}


@dataclass
class Task:
    id: str
    where: str  # "tasks.jsonl:3", for messages
    text: str  # the task file's content (or the task text)
    suffix: str  # ".txt", ".json", ".yaml", ...: how the core reads `text`
    repo: str | None = None  # absolute path of a local repository
    repo_url: str | None = None
    commit: str | None = None  # a full sha once resolved (local repositories)
    budget: dict | None = None
    model: dict = field(default_factory=dict)
    ignored_keys: list = field(default_factory=list)

    def spec(self) -> dict:
        """What a worker needs, as plain data (shipped to Ray workers as is)."""
        return {
            "id": self.id,
            "text": self.text,
            "suffix": self.suffix,
            "repo_url": self.repo_url,
            "commit": self.commit,
            "budget": self.budget,
            "model": self.model,
            "ignored_keys": self.ignored_keys,
        }


@dataclass
class Malformed:
    where: str
    error: str

    def result(self) -> dict:
        return {
            "id": None,
            "line": self.where,
            "exit_status": "Malformed",
            "exit_code": 2,
            "error": f"{self.where}: {self.error}",
        }


class TaskError(ValueError):
    pass


def task_files(path: Path) -> list[Path]:
    """The files TASKS names: itself, or the folder's .json/.jsonl files by name."""
    if path.is_dir():
        return sorted(
            p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".json", ".jsonl")
        )
    return [path]


def load_tasks(path: Path) -> tuple[list[Task], list[Malformed]]:
    tasks: list[Task] = []
    bad: list[Malformed] = []
    seen: dict[str, str] = {}
    for file in task_files(path):
        for where, item in _entries(file, bad):
            try:
                task = parse_task(item, file.parent, where)
                if task.id in seen:
                    raise TaskError(f"duplicate id '{task.id}' (first at {seen[task.id]})")
            except TaskError as error:
                bad.append(Malformed(where, str(error)))
                continue
            seen[task.id] = where
            tasks.append(task)
    return tasks, bad


def _entries(file: Path, bad: list[Malformed]):
    """(where, object) for each task in `file`; unparsable lines go to `bad`."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        bad.append(Malformed(str(file), f"cannot be read: {exc}"))
        return
    if file.suffix.lower() == ".json":
        try:
            yield str(file), json.loads(text)
        except ValueError as exc:
            bad.append(Malformed(str(file), f"not valid JSON: {exc}"))
        return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{file}:{number}"
        try:
            yield where, json.loads(line)
        except ValueError as exc:
            bad.append(Malformed(where, f"not valid JSON: {exc}"))


def _text_field(item: dict, key: str) -> str | None:
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise TaskError(f"'{key}' must be a non-empty string")
    return value


def parse_task(item, base: Path, where: str) -> Task:
    if not isinstance(item, dict):
        raise TaskError("a task is a JSON object")
    task_id = item.get("id")
    if not isinstance(task_id, str) or not ID_PATTERN.match(task_id):
        raise TaskError(
            "'id' must be a string of letters, digits, '.', '_' or '-' (at most 128, "
            "not starting with '.' or '-')"
        )
    text, task_file = _text_field(item, "task"), _text_field(item, "task_file")
    if (text is None) == (task_file is None):
        raise TaskError("give exactly one of 'task' (text) or 'task_file'")
    suffix = ".txt"
    if task_file is not None:
        file = base / task_file
        try:
            if file.stat().st_size > MAX_TASK_BYTES:
                raise TaskError(f"task_file '{task_file}' is larger than 1 MiB")
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TaskError(f"task_file '{task_file}' cannot be read: {exc}") from None
        suffix = file.suffix.lower() if file.suffix.lower() in _SUFFIXES else ".txt"
    repo, repo_url = _text_field(item, "repo"), _text_field(item, "repo_url")
    commit = _text_field(item, "commit")
    if (repo is None) == (repo_url is None):
        raise TaskError("give exactly one of 'repo' (a local path) or 'repo_url' with 'commit'")
    if repo_url is not None:
        if commit is None:
            raise TaskError("'repo_url' needs 'commit'")
        if repo_url.startswith("-") or repo_url.lower().startswith("ext::"):
            raise TaskError(f"'repo_url' {repo_url!r} is not a repository URL")
    if commit is not None and commit.startswith("-"):
        raise TaskError(f"'commit' {commit!r} is not a commit")
    budget = item.get("budget")
    if budget is not None and not isinstance(budget, dict):
        raise TaskError("'budget' must be an object (what run_agent.sh's budget file holds)")
    model = item.get("model") or {}
    if not isinstance(model, dict) or set(model) - set(MODEL_KEYS):
        raise TaskError(f"'model' must be an object with some of {', '.join(MODEL_KEYS)}")
    for key in ("name", "base_url"):
        if key in model and (not isinstance(model[key], str) or not model[key].strip()):
            raise TaskError(f"'model.{key}' must be a non-empty string")
    if "cost" in model and not isinstance(model["cost"], (str, dict)):
        raise TaskError("'model.cost' must be the D2A_MODEL_COST object (or its JSON text)")
    task = Task(
        id=task_id,
        where=where,
        text=text,
        suffix=suffix,
        repo_url=repo_url,
        commit=commit,
        budget=budget,
        model=dict(model),
        ignored_keys=sorted(set(item) - KNOWN_KEYS),
    )
    if repo is not None:
        task.repo = str((base / repo).resolve())
    return task


_SUFFIXES = (".txt", ".md", ".json", ".toml", ".yaml", ".yml")


def resolve_commit(task: Task) -> None:
    """A local repository's commit as a full sha (HEAD when none is given), so every
    attempt, here or on a worker, checks out the same tree. Raises TaskError."""
    if task.repo is None:
        return
    if not os.path.isdir(task.repo):
        raise TaskError(f"repo '{task.repo}' is not a directory")
    wanted = task.commit or "HEAD"
    proc = subprocess.run(
        ["git", "-C", task.repo, "rev-parse", "--verify", "--quiet", f"{wanted}^{{commit}}"],
        capture_output=True,
        text=True,
        env=git_env(),
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise TaskError(f"repo '{task.repo}' has no commit '{wanted}' (a git repository is needed)")
    task.commit = proc.stdout.strip()


def git_env() -> dict:
    """git never prompts (a batch has nobody to answer) and ignores the machine-wide
    configuration; commits it makes have a neutral author."""
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", GIT_ASKPASS="true")
    env.setdefault("GIT_AUTHOR_NAME", "yuyao batch")
    env.setdefault("GIT_AUTHOR_EMAIL", "batch@yuyao.invalid")
    env.setdefault("GIT_COMMITTER_NAME", "yuyao batch")
    env.setdefault("GIT_COMMITTER_EMAIL", "batch@yuyao.invalid")
    return env
