"""Command line of yuyao: argv -> interactive TUI | `-p` headless run | sub-command.

Everything the user can type is declared once, in the tables below (FLAGS, ALIASES,
COMMANDS); the parser, the validation, `--help` and the feature-availability check are all
generated from them. Flipping a feature on is one `available=True` in a table row.

Exit codes (spec §9): 0 done, 1 runtime error (or a feature not in this build), 2 usage error.
Only `math`, `os` and `sys` are imported at the top: `--help` and `--version` must stay fast, so
json, shlex, the extension and the TUI are imported inside the paths that need them.
"""

from __future__ import annotations

import math
import os
import sys

from yuyao.core_link import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, PROG
from yuyao.user_text import decode_text, fold_choice

# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

# Value kinds. A "switch" takes no value; an "optional" one takes a value only as --flag=value.
SWITCH, OPTIONAL, TEXT, CHOICE, POSITIVE_INT, NON_NEGATIVE_INT, NON_NEGATIVE_FLOAT = (
    "switch",
    "optional",
    "text",
    "choice",
    "positive-int",
    "non-negative-int",
    "non-negative-float",
)
HELP, VERSION = "help", "version"


class Flag:
    """One canonical flag. `option` names the SessionOptions field it feeds (None: front-only
    or not built yet)."""

    __slots__ = (
        "name",
        "help",
        "group",
        "kind",
        "metavar",
        "choices",
        "option",
        "repeatable",
        "split_list",
        "allow_empty",
        "reads_file",
        "requires",
        "available",
        "unavailable_choices",
    )

    def __init__(
        self,
        name,
        help,
        group,
        kind=SWITCH,
        metavar=None,
        choices=(),
        option=None,
        repeatable=False,
        split_list=False,
        allow_empty=False,
        reads_file=False,
        requires=(),
        available=True,
        unavailable_choices=(),
    ):
        self.name = name
        self.help = help
        self.group = group
        self.kind = kind
        self.metavar = metavar
        self.choices = choices
        self.option = option
        self.repeatable = repeatable
        self.split_list = split_list  # "a,b c" -> ["a", "b", "c"] (tool lists)
        self.allow_empty = allow_empty
        self.reads_file = reads_file  # the value is a path whose text is the option
        self.requires = requires  # alternatives: ((flag, value-or-None), ...)
        self.available = available
        self.unavailable_choices = unavailable_choices

    @property
    def takes_value(self) -> bool:
        return self.kind not in (SWITCH, OPTIONAL, HELP, VERSION)


class Alias:
    """Another spelling. With `value` it is a preset (`--plan` = `--mode plan`), without it a
    plain rename (`-p` = `--print`, `--max-cost` = `--max-budget-usd`)."""

    __slots__ = ("spelling", "target", "value")

    def __init__(self, spelling, target, value=None):
        self.spelling = spelling
        self.target = target
        self.value = value

    @property
    def meaning(self) -> str:
        return self.target if self.value is None else f"{self.target} {self.value}"


class Arg:
    """A positional argument of a sub-action. `many`: it swallows the rest of the words."""

    __slots__ = ("name", "required", "many")

    def __init__(self, name, required=True, many=False):
        self.name = name
        self.required = required
        self.many = many

    @property
    def usage(self) -> str:
        text = f"<{self.name}>" + ("..." if self.many else "")
        return text if self.required else f"[{text}]"


class Action:
    """A sub-action (`config set`). `command_tail`: accepts `-- CMD ARGS...` after its args."""

    __slots__ = ("name", "help", "args", "flags", "command_tail")

    def __init__(self, name, help, args=(), flags=(), command_tail=False):
        self.name = name
        self.help = help
        self.args = args
        self.flags = flags
        self.command_tail = command_tail

    @property
    def usage(self) -> str:
        parts = [self.name, *(arg.usage for arg in self.args)]
        parts += [f"[{flag.name}]" for flag in self.flags]
        if self.command_tail:
            parts[-1] = parts[-1][:-1] + " | -- <cmd> <args>...]"
        return " ".join(parts)


class Command:
    """`default`: the action taken when none is named (`yuyao gc` = `yuyao gc run`)."""

    __slots__ = ("name", "help", "actions", "available", "default")

    def __init__(self, name, help, actions, available=True, default=None):
        self.name = name
        self.help = help
        self.actions = {action.name: action for action in actions}
        self.available = available
        self.default = default


MODES = ("ask", "plan", "auto-edit", "auto-review", "yolo")
ROLES = ("execute", "ask", "architect", "debug", "orchestrator")
ON_OFF = ("on", "off")

# Help sections, in the spec's order.
G_RUN = "Running"
G_MODE = "Permission modes (one at a time)"
G_ROLE = "Roles (orthogonal to modes)"
G_SECURITY = "Sandbox, network, allow/deny lists"
G_OUTPUT = "Output and input"
G_MODEL = "Model, reasoning and prompts"
G_LIMITS = "Limits"
G_TOOLS = "Tools"
G_WORKFLOW = "Memory and workflow"
G_GENERAL = "General"

_PRINT = ("--print", None)

FLAGS = {
    flag.name: flag
    for flag in (
        # Running
        Flag(
            "--print",
            "Run headless on <task> (argument, or stdin when piped) to the end, print the "
            "result and exit 0/1/2; never waits for input",
            G_RUN,
            OPTIONAL,
            metavar="task",
        ),
        Flag(
            "--bg",
            "Start a background session and return at once, printing its session id",
            G_RUN,
            OPTIONAL,
            metavar="task",
        ),
        Flag(
            "--exec",
            "With --bg: run this shell job in the background instead",
            G_RUN,
            TEXT,
            metavar="cmd",
            requires=(("--bg", None),),
        ),
        Flag(
            "--continue",
            "Continue the most recent session of this directory",
            G_RUN,
            option="continue",
        ),
        Flag(
            "--resume",
            "Resume the session with this id (not with --continue)",
            G_RUN,
            TEXT,
            metavar="id",
            option="resume",
        ),
        Flag(
            "--fork-session",
            "On --continue/--resume: fork a new session id, keep the original",
            G_RUN,
            requires=(("--continue", None), ("--resume", None)),
            option="fork_session",
        ),
        Flag(
            "--worktree",
            "Start in a new git worktree .yuyao/worktrees/<name> on branch yuyao/<name> (a name "
            "is generated when omitted); the main work tree is not touched",
            G_RUN,
            OPTIONAL,
            metavar="name",
        ),
        # Permission modes
        Flag(
            "--mode",
            "Permission mode (default ask): ask confirms every change; plan is read-only; "
            "auto-edit approves file edits; auto-review approves all behind a safety "
            "review; yolo skips every approval",
            G_MODE,
            CHOICE,
            choices=MODES,
            option="mode",
        ),
        # Roles
        Flag(
            "--role",
            "Role (default execute): ask answers without changing anything; architect plans "
            "then edits; debug hunts defects; orchestrator coordinates sub-agents",
            G_ROLE,
            CHOICE,
            choices=ROLES,
            option="role",
        ),
        Flag(
            "--team-name",
            "Team name for --role orchestrator",
            G_ROLE,
            TEXT,
            metavar="name",
            requires=(("--role", "orchestrator"),),
            option="team_name",
        ),
        # Security switches
        Flag(
            "--sandbox",
            "OS isolation level for commands",
            G_SECURITY,
            CHOICE,
            choices=("read-only", "workspace-write", "full-access"),
            option="sandbox",
        ),
        Flag(
            "--network",
            "Network access for tools (default off)",
            G_SECURITY,
            CHOICE,
            choices=ON_OFF,
            option="network",
        ),
        Flag(
            "--trust-project",
            "Trust this project: its hooks, .mcp.json, plugins and widening settings apply, as the "
            "content you approved (the first trust pins it; later changes: yuyao trust review)",
            G_SECURITY,
            option="trust_project",
        ),
        Flag(
            "--no-project-extensions",
            "Run nothing the project ships (its hooks.json hooks, its .mcp.json servers); user-level ones still run",
            G_SECURITY,
            option="no_project_extensions",
        ),
        Flag(
            "--allow",
            "Allow a tool or path without asking, e.g. 'Bash(git log *)' (repeatable)",
            G_SECURITY,
            TEXT,
            metavar="rule",
            option="allow",
            repeatable=True,
        ),
        Flag(
            "--deny",
            "Refuse a tool or path, e.g. 'Bash(rm *)' or 'Edit(/secrets/*)' (repeatable)",
            G_SECURITY,
            TEXT,
            metavar="rule",
            option="deny",
            repeatable=True,
        ),
        # Output and input
        Flag(
            "--output-format",
            "With -p: plain text, exactly one JSON document, or stream-json (one JSON message "
            "per line, as Claude Code writes them: system/init, assistant, user, result)",
            G_OUTPUT,
            CHOICE,
            choices=("text", "json", "stream-json"),
            requires=(_PRINT,),
        ),
        Flag(
            "--json-schema",
            "The final answer is a JSON document valid against this JSON Schema file "
            "(draft 2020-12 or 7); one repair turn, then exit 1",
            G_OUTPUT,
            TEXT,
            metavar="file",
            option="json_schema",
        ),
        Flag(
            "--input-format",
            "With -p: how the task is read from stdin; stream-json: one user message per line "
            "(SDK shape), one turn each",
            G_OUTPUT,
            CHOICE,
            choices=("text", "stream-json"),
            requires=(_PRINT,),
        ),
        Flag(
            "--stream",
            "Stream the answer token by token (default on); off prints it whole",
            G_OUTPUT,
            CHOICE,
            choices=ON_OFF,
            option="stream",
        ),
        Flag(
            "--show-thinking",
            "How the model's thinking is shown (default collapsed)",
            G_OUTPUT,
            CHOICE,
            choices=("off", "collapsed", "expanded"),
            option="show_thinking",
        ),
        Flag("--verbose", "Print the full turn-by-turn process", G_OUTPUT, option="verbose"),
        # Model, reasoning and prompts
        Flag(
            "--model",
            "Model name (default: D2A_MODEL_NAME)",
            G_MODEL,
            TEXT,
            metavar="name",
            option="model",
        ),
        Flag(
            "--thinking",
            "Reasoning budget, the levels of /think (independent of --show-thinking)",
            G_MODEL,
            CHOICE,
            choices=("off", "low", "medium", "high", "max"),
            option="thinking",
        ),
        Flag(
            "--curiosity",
            "How readily the agent asks before guessing (default normal)",
            G_MODEL,
            CHOICE,
            choices=("low", "normal", "high"),
            option="curiosity",
        ),
        Flag(
            "--system-prompt",
            "Replace the system prompt",
            G_MODEL,
            TEXT,
            metavar="text",
            option="system_prompt",
        ),
        Flag(
            "--system-prompt-file",
            "Replace the system prompt with this file's text",
            G_MODEL,
            TEXT,
            metavar="file",
            option="system_prompt",
            reads_file=True,
        ),
        Flag(
            "--append-system-prompt",
            "Append to the default system prompt, keeping its behaviour",
            G_MODEL,
            TEXT,
            metavar="text",
            option="append_system_prompt",
        ),
        Flag(
            "--append-system-prompt-file",
            "Append this file's text to the default system prompt",
            G_MODEL,
            TEXT,
            metavar="file",
            option="append_system_prompt",
            reads_file=True,
        ),
        # Limits
        Flag(
            "--max-steps",
            "Stop cleanly after n steps, recorded as LimitsExceeded",
            G_LIMITS,
            POSITIVE_INT,
            metavar="n",
            option="max_steps",
        ),
        Flag(
            "--max-budget-usd",
            "Spend ceiling in USD, checked before each model call; stop cleanly at it",
            G_LIMITS,
            NON_NEGATIVE_FLOAT,
            metavar="usd",
            option="max_cost_usd",
        ),
        # Tools
        Flag(
            "--tools",
            "Restrict the available tools, e.g. 'bash,read,grep' ('' for none)",
            G_TOOLS,
            TEXT,
            metavar="list",
            option="tools",
            repeatable=True,
            split_list=True,
            allow_empty=True,
        ),
        Flag(
            "--allowed-tools",
            "Tools permitted without confirmation, e.g. 'Bash(git log *),Read' (repeatable)",
            G_TOOLS,
            TEXT,
            metavar="rules",
            option="allow",
            repeatable=True,
            split_list=True,
        ),
        Flag(
            "--disallowed-tools",
            "Tools refused, e.g. 'Bash(rm *),WebFetch' (repeatable)",
            G_TOOLS,
            TEXT,
            metavar="rules",
            option="deny",
            repeatable=True,
            split_list=True,
        ),
        Flag(
            "--experimental-lsp",
            "Enable LSP code intelligence (the lsp tool, diagnostics after edits)",
            G_TOOLS,
            option="experimental_lsp",
        ),
        Flag(
            "--map-tokens",
            "Repo map budget in tokens; 0 injects no repo map",
            G_TOOLS,
            NON_NEGATIVE_INT,
            metavar="n",
            option="map_tokens",
        ),
        # Memory and workflow
        Flag(
            "--no-memory",
            "Load no memory or convention files (MEMORY.md, AGENTS.md) this run",
            G_WORKFLOW,
            option="no_memory",
        ),
        Flag(
            "--auto-commit",
            "Commit each batch of the agent's file changes to git (only those files; the "
            "user's own changes never); /undo reverts with a new commit",
            G_WORKFLOW,
            option="auto_commit",
        ),
        Flag(
            "--auto-test",
            "Run the tests after each edit batch and keep fixing until they pass "
            "(at most verification.max_rounds rounds)",
            G_WORKFLOW,
            option="auto_test",
        ),
        Flag(
            "--test-cmd",
            "The test command for verification and --auto-test (instead of the detected one)",
            G_WORKFLOW,
            TEXT,
            metavar="cmd",
            option="test_cmd",
        ),
        # General
        Flag("--help", "Print this help; `yuyao <command> --help` for a command", G_GENERAL, HELP),
        Flag("--version", "Print the version", G_GENERAL, VERSION),
    )
}

ALIASES = {
    alias.spelling: alias
    for alias in (
        Alias("-p", "--print"),
        Alias("-c", "--continue"),
        Alias("-w", "--worktree"),
        Alias("-h", "--help"),
        Alias("-V", "--version"),
        Alias("--plan", "--mode", "plan"),
        Alias("--auto-edit", "--mode", "auto-edit"),
        Alias("--auto-review", "--mode", "auto-review"),
        Alias("--yolo", "--mode", "yolo"),
        Alias("--dangerously-skip-permissions", "--mode", "yolo"),
        Alias("--yes", "--mode", "yolo"),
        Alias("-y", "--mode", "yolo"),
        Alias("--json", "--output-format", "json"),
        Alias("--max-cost", "--max-budget-usd"),
    )
}

# Pairs that cannot be combined (spec §4: `a | b`).
EXCLUSIVE = (
    ("--continue", "--resume"),
    ("--system-prompt", "--system-prompt-file"),
    ("--append-system-prompt", "--append-system-prompt-file"),
    ("--print", "--bg"),
)

# Flags that start a run on their own and therefore take the task words.
TASK_FLAGS = ("--print", "--bg")

COMMANDS = {
    command.name: command
    for command in (
        Command(
            "config",
            "Read and write the persistent configuration (hot reload)",
            (
                Action("get", "Print the value of a key", (Arg("key"),)),
                Action(
                    "set",
                    "Set a key; it reads back at once",
                    (Arg("key"), Arg("value")),
                    flags=(
                        Flag(
                            "--project",
                            "Write the project layer (<project>/.yuyao/config.toml)",
                            G_GENERAL,
                        ),
                    ),
                ),
                Action("unset", "Remove a key", (Arg("key"),)),
            ),
        ),
        Command(
            "mcp",
            "Manage MCP external tool servers",
            (
                Action(
                    "add",
                    "Register a server: an HTTP URL, or a stdio command after --",
                    (Arg("name"), Arg("url", required=False)),
                    flags=(
                        Flag(
                            "--scope",
                            "Where to keep it: user (~/.yuyao/mcp.json, default) or project (.mcp.json)",
                            G_GENERAL,
                            CHOICE,
                            choices=("user", "project"),
                        ),
                        Flag(
                            "--env",
                            "A variable for a stdio server, KEY=VALUE (repeatable)",
                            G_GENERAL,
                            TEXT,
                            metavar="K=V",
                            repeatable=True,
                        ),
                        Flag(
                            "--header",
                            "An HTTP header for a URL server, 'Name: value' (repeatable)",
                            G_GENERAL,
                            TEXT,
                            metavar="K:V",
                            repeatable=True,
                        ),
                    ),
                    command_tail=True,
                ),
                Action("list", "List the servers: transport, status, tool count and last error"),
                Action(
                    "remove",
                    "Remove a server",
                    (Arg("name"),),
                    flags=(
                        Flag(
                            "--scope",
                            "Remove it only from user or project",
                            G_GENERAL,
                            CHOICE,
                            choices=("user", "project"),
                        ),
                    ),
                ),
            ),
        ),
        Command(
            "memory",
            "Memory index, search, rebuild and replay",
            (
                Action("status", "Print index readiness and the provider"),
                Action(
                    "search",
                    "Search memory by meaning",
                    (Arg("query", many=True),),
                    flags=(
                        Flag(
                            "--ranking",
                            "Show one component of the ranking alone",
                            G_GENERAL,
                            CHOICE,
                            choices=("hybrid", "bm25", "embeddings", "encoder"),
                        ),
                    ),
                ),
                Action(
                    "index",
                    "Update the index",
                    flags=(Flag("--force", "Rebuild from scratch", G_GENERAL),),
                ),
                Action(
                    "rem-backfill",
                    "Replay historical notes, staging promotion candidates",
                    flags=(Flag("--rollback", "Remove the staged candidates", G_GENERAL),),
                ),
            ),
        ),
        Command(
            "sandbox",
            "Sandbox runtime management and troubleshooting",
            (
                Action("list", "List sandbox runtimes"),
                Action("recreate", "Recreate the sandbox runtime"),
                Action(
                    "explain",
                    "Explain why something was blocked",
                    (Arg("what", required=False, many=True),),
                ),
            ),
        ),
        Command(
            "trust",
            "Project trust: the extension files (hooks, .mcp.json, plugins, config) held until "
            "you approve their exact content",
            (
                Action("status", "Whether this project is trusted, and what is ignored"),
                Action(
                    "review",
                    "List the held extension files: what each would run, in full (the default)",
                ),
                Action(
                    "approve",
                    "Approve held files as they are now (the next session loads them)",
                    (Arg("files", required=False, many=True),),
                    flags=(Flag("--all", "Approve every held file", G_GENERAL),),
                ),
            ),
            default="review",
        ),
        Command(
            "gc",
            "Remove ended sessions' spill files, job logs and snapshots past "
            "storage.retention_days / storage.max_mb, with a summary",
            (
                Action(
                    "run",
                    "Run the retention policy now (the default action)",
                    flags=(Flag("--dry-run", "Only say what would be removed", G_GENERAL),),
                ),
            ),
            default="run",
        ),
        Command(
            "agents",
            "Agent View: background sessions, each in its own git worktree",
            (
                Action("list", "List background sessions and their status (the default action)"),
                Action("dispatch", "Start a background session", (Arg("task", many=True),)),
                Action("attach", "Attach to a background session", (Arg("id"),)),
                Action("stop", "Stop a background session", (Arg("id"),)),
            ),
            default="list",
        ),
        Command(
            "cost",
            "The prices in force for the configured model and where they come from "
            "(D2A_MODEL_COST, config, the price catalog, a proxy's reported cost)",
            (Action("show", "Print the prices and their source (the default action)"),),
            default="show",
        ),
        Command(
            "batch",
            "Run many headless tasks (a JSONL file or a folder of task files), each in its own "
            "fresh checkout, on a local process pool or a Ray cluster (docs/parallel.md)",
            (
                Action(
                    "run",
                    "Run the tasks; re-running the same command resumes (the default action)",
                    (Arg("tasks"),),
                    flags=(
                        Flag("--out-dir", "Where DIR/<id>/ and results.jsonl go", G_GENERAL, TEXT),
                        Flag(
                            "--parallel",
                            "Tasks at once (default 4)",
                            G_GENERAL,
                            POSITIVE_INT,
                            metavar="N",
                        ),
                        Flag(
                            "--ray",
                            "Run on Ray: 'auto' or a cluster address (pip install 'yuyao[ray]')",
                            G_GENERAL,
                            TEXT,
                            metavar="ADDR",
                        ),
                        Flag(
                            "--max-cost-usd",
                            "Spend ceiling of the whole batch, checked before every model call",
                            G_GENERAL,
                            NON_NEGATIVE_FLOAT,
                            metavar="X",
                        ),
                        Flag(
                            "--max-failures",
                            "Start no new task after K failed ones",
                            G_GENERAL,
                            POSITIVE_INT,
                            metavar="K",
                        ),
                        Flag(
                            "--task-cpus",
                            "Ray: CPUs reserved per task (default 1)",
                            G_GENERAL,
                            NON_NEGATIVE_FLOAT,
                            metavar="N",
                        ),
                        Flag(
                            "--task-memory-mb",
                            "Ray: memory reserved per task, in MB",
                            G_GENERAL,
                            POSITIVE_INT,
                            metavar="MB",
                        ),
                        Flag("--json", "Print one JSON document (summary and results)", G_GENERAL),
                    ),
                ),
            ),
            default="run",
        ),
        Command(
            "features",
            "Feature switches (hooks, skills, plugins, mcp; one plugin: plugin:<name>)",
            (
                Action("list", "List features, plugins and their state"),
                Action("enable", "Enable a feature or plugin:<name>", (Arg("name"),)),
                Action(
                    "disable",
                    "Disable a feature or plugin:<name>: it is inert everywhere",
                    (Arg("name"),),
                ),
            ),
        ),
    )
}

# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


class UsageError(Exception):
    """A malformed invocation: printed as `yuyao: error: ...`, exit 2."""

    def __init__(self, message: str, command: str | None = None):
        super().__init__(message)
        self.command = command  # whose --help the hint points to


class Invocation:
    """The parsed command line, every alias already resolved to its canonical flag."""

    def __init__(self):
        self.values = {}  # canonical flag -> value (a list for repeatable flags)
        self.spelled = {}  # canonical flag -> how the user first wrote it, for messages
        self.command = None
        self.action = None
        self.words = []  # positional words after the command/action, or the task words
        self.tail = None  # words after `--`
        self.action_flags = []  # switches of the sub-action, e.g. --force
        self.help = False
        self.version = False

    def has(self, flag_name: str) -> bool:
        return flag_name in self.values

    def get(self, flag_name: str, default=None):
        return self.values.get(flag_name, default)

    @property
    def task_mode(self) -> str | None:
        return next((name for name in TASK_FLAGS if self.has(name)), None)


def _validate_value(flag: Flag, raw: str, spelling: str):
    """Check and convert one value; returns what goes into Invocation.values."""
    if flag.kind == CHOICE:
        value = fold_choice(raw)
        if value not in flag.choices:
            raise UsageError(
                f"invalid value '{raw}' for {spelling} (choose from {', '.join(flag.choices)})"
            )
        return value
    if flag.kind in (POSITIVE_INT, NON_NEGATIVE_INT):
        minimum = 1 if flag.kind == POSITIVE_INT else 0
        try:
            number = int(raw.strip())
        except ValueError:
            number = None
        if number is None or number < minimum:
            wanted = "a positive integer" if minimum else "an integer >= 0"
            raise UsageError(f"{spelling} needs {wanted}, got '{raw}'")
        return number
    if flag.kind == NON_NEGATIVE_FLOAT:
        try:
            number = float(raw.strip())
        except ValueError:
            number = None
        if number is None or not math.isfinite(number) or number < 0:
            raise UsageError(f"{spelling} needs a number >= 0, got '{raw}'")
        return number
    if not raw.strip() and not flag.allow_empty:
        raise UsageError(f"{spelling} needs a non-empty value")
    return raw


def split_rule_list(text: str) -> list[str]:
    """Split 'Bash(git log *), Read Edit' on commas/blanks outside brackets."""
    items, current, depth = [], [], 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        if depth == 0 and (char == "," or char.isspace()):
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item for item in items if item]


def _is_option_word(word: str) -> bool:
    """Does the word look like a flag (as opposed to a value such as '-1' or '-')?"""
    return word.startswith("-") and word != "-" and not word[1:2].isdigit()


def _known_spelling(word: str) -> bool:
    name = word.split("=", 1)[0]
    return name in FLAGS or name in ALIASES


class _Parser:
    def __init__(self, argv: list[str]):
        self.argv = argv
        self.index = 0
        self.result = Invocation()

    def parse(self) -> Invocation:
        while self.index < len(self.argv):
            word = self.argv[self.index]
            self.index += 1
            if word == "--":
                self.result.tail = self.argv[self.index :]
                break
            if _is_option_word(word):
                self._option(word)
            else:
                self._positional(word)
            if self.result.help or self.result.version:
                break  # help and version win over whatever follows
        return self.result

    # -- options --------------------------------------------------------------------------

    def _option(self, word: str) -> None:
        name, inline = word.split("=", 1) if "=" in word else (word, None)
        if self._action_switch(name, inline):
            return
        alias = ALIASES.get(name)
        flag = FLAGS.get(alias.target if alias else name)
        if flag is None:
            raise UsageError(self._unknown_option_message(name), self.result.command)
        if flag.kind in (HELP, VERSION):
            self._refuse_inline(name, inline)
            setattr(self.result, flag.kind, True)
        elif alias is not None and alias.value is not None:  # preset: --plan = --mode plan
            self._refuse_inline(name, inline)
            self._record(flag, alias.value, name)
        elif flag.kind == SWITCH:
            self._refuse_inline(name, inline)
            self._record(flag, True, name)
        elif flag.kind == OPTIONAL:
            self._record(flag, True if inline is None else inline, name)
        else:
            raw = inline if inline is not None else self._next_value(name)
            self._record(flag, _validate_value(flag, raw, name), f"{name} {raw}")

    def _action_switch(self, name: str, inline) -> bool:
        """Switches that belong to one sub-action (`memory index --force`)."""
        command = COMMANDS.get(self.result.command)
        action = command.actions.get(self.result.action or command.default) if command else None
        flag = next((f for f in action.flags if f.name == name), None) if action else None
        if flag is None:
            return False
        if not flag.takes_value:
            self._refuse_inline(name, inline)
            self.result.action_flags.append(name)
            return True
        # A valued sub-action flag (`mcp add --env K=V`) is passed on with its value.
        raw = inline if inline is not None else self._next_value(name)
        if flag.kind == CHOICE and raw not in flag.choices:
            raise UsageError(
                f"invalid value '{raw}' for {name} (choose from {', '.join(flag.choices)})",
                self.result.command,
            )
        self.result.action_flags += [name, raw]
        return True

    def _next_value(self, spelling: str) -> str:
        # A value may start with '-' ("--append-system-prompt '-be terse'"), but not be a flag.
        if self.index >= len(self.argv) or self.argv[self.index] == "--":
            raise UsageError(f"{spelling} needs a value", self.result.command)
        value = self.argv[self.index]
        if _is_option_word(value) and _known_spelling(value):
            raise UsageError(f"{spelling} needs a value (got option {value})")
        self.index += 1
        return value

    @staticmethod
    def _refuse_inline(spelling: str, inline) -> None:
        if inline is not None:
            raise UsageError(f"{spelling} takes no value (got '{inline}')")

    def _record(self, flag: Flag, value, shown: str) -> None:
        """Store a value; a single-valued flag set twice to different values is a conflict."""
        values, spelled = self.result.values, self.result.spelled
        if flag.repeatable:
            items = split_rule_list(value) if flag.split_list else [value]
            values.setdefault(flag.name, []).extend(items)
        elif flag.name in values and values[flag.name] != value:
            raise UsageError(f"conflicting options: {spelled[flag.name]} and {shown}")
        else:
            values[flag.name] = value
        spelled.setdefault(flag.name, shown)

    def _unknown_option_message(self, name: str) -> str:
        import difflib  # error path only

        known = list(FLAGS) + list(ALIASES)
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"unknown option '{name}'{hint}"

    # -- positional words -----------------------------------------------------------------

    def _positional(self, word: str) -> None:
        # A first word that names a command is the command; anything else is kept as a word
        # and judged once the whole line is read (`yuyao "fix it" -p` is a task).
        result = self.result
        if result.command is None and not result.words and result.task_mode is None:
            if word in COMMANDS:
                result.command = word
                return
        elif result.command is not None and result.action is None:
            command = COMMANDS[result.command]
            if word not in command.actions and command.default in command.actions:
                if command.actions[command.default].args:
                    # `yuyao batch TASKS`: the default action takes the word as its argument.
                    result.action = command.default
                    result.words.append(word)
                    return
            if word not in command.actions:
                raise UsageError(
                    f"unknown {command.name} action '{word}' "
                    f"(choose from {', '.join(command.actions)})",
                    command.name,
                )
            result.action = word
            return
        result.words.append(word)


def parse_args(argv: list[str]) -> Invocation:
    """Parse and fully validate argv; raises UsageError for anything malformed."""
    invocation = _Parser(list(argv)).parse()
    if not (invocation.help or invocation.version):
        _merge_plain_tail(invocation)
        _check_usage(invocation)
    return invocation


def _merge_plain_tail(invocation: Invocation) -> None:
    """After `--` come plain words (`config set k -- -v`), except for `mcp add NAME -- CMD`."""
    command = COMMANDS.get(invocation.command)
    action = command.actions.get(invocation.action) if command else None
    if invocation.tail is not None and not (action and action.command_tail):
        if command is not None or invocation.task_mode is not None:
            invocation.words += invocation.tail
            invocation.tail = None


def _check_usage(invocation: Invocation) -> None:
    _check_exclusive(invocation)
    _check_requirements(invocation)
    if invocation.command is not None:
        _check_command(invocation)
    elif invocation.task_mode is None and invocation.words:
        raise UsageError(
            f"unknown command '{invocation.words[0]}' (commands: {', '.join(COMMANDS)}; "
            f'to run a task: {PROG} -p "<task>")'
        )
    elif invocation.task_mode is None and invocation.tail:
        raise UsageError(f"unexpected argument '{invocation.tail[0]}'")


def _check_exclusive(invocation: Invocation) -> None:
    for first, second in EXCLUSIVE:
        if invocation.has(first) and invocation.has(second):
            raise UsageError(
                f"{invocation.spelled[first]} and {invocation.spelled[second]} "
                "cannot be used together"
            )


def _check_requirements(invocation: Invocation) -> None:
    for name in invocation.values:
        requires = FLAGS[name].requires
        if requires and not any(_satisfied(invocation, need) for need in requires):
            wanted = " or ".join(f"{flag} {value}" if value else flag for flag, value in requires)
            raise UsageError(f"{invocation.spelled[name]} requires {wanted}")


def _satisfied(invocation: Invocation, need: tuple) -> bool:
    flag, value = need
    return invocation.has(flag) and (value is None or invocation.get(flag) == value)


def _check_command(invocation: Invocation) -> None:
    command = COMMANDS[invocation.command]
    if invocation.task_mode is not None:
        raise UsageError(
            f"{invocation.spelled[invocation.task_mode]} cannot be combined with the "
            f"'{command.name}' command",
            command.name,
        )
    if invocation.action is None and command.default:
        invocation.action = command.default
    if invocation.action is None:
        raise UsageError(
            f"'{command.name}' needs an action: {', '.join(command.actions)}", command.name
        )
    action = command.actions[invocation.action]
    _check_action_args(command, action, invocation.words, invocation.tail)


def _check_action_args(command: Command, action: Action, words: list, tail) -> None:
    where = f"{command.name} {action.name}"
    required = [arg for arg in action.args if arg.required]
    takes_rest = any(arg.many for arg in action.args)
    if len(words) < len(required):
        missing = required[len(words)].name
        raise UsageError(f"{where}: missing <{missing}> (usage: {action.usage})", command.name)
    if not takes_rest and len(words) > len(action.args):
        raise UsageError(
            f"{where}: unexpected argument '{words[len(action.args)]}' (usage: {action.usage})",
            command.name,
        )
    if tail is not None:
        if len(words) > len(required):
            raise UsageError(
                f"{where}: give either a URL or '-- <cmd> <args>...', not both", command.name
            )
        if not tail:
            raise UsageError(f"{where}: missing the command after --", command.name)


def unavailable_feature(invocation: Invocation) -> str | None:
    """The first thing asked for that this build does not have (exit 1), else None."""
    if invocation.command is not None and not COMMANDS[invocation.command].available:
        return f"the '{invocation.command}' command"
    for name, value in invocation.values.items():
        flag = FLAGS[name]
        if not flag.available:
            return invocation.spelled[name].split(" ", 1)[0]  # as typed, without its value
        if value in flag.unavailable_choices:
            return f"{name} {value}"
    return None


# ---------------------------------------------------------------------------------------------
# Help (generated from the tables)
# ---------------------------------------------------------------------------------------------

_HELP_WIDTH = 34
_NOT_BUILT = " [not in this build]"


def _flag_label(flag: Flag) -> str:
    shorts = [a.spelling for a in ALIASES.values() if a.target == flag.name and a.value is None]
    short = [s for s in shorts if not s.startswith("--")]
    label = ", ".join(short + [flag.name])
    if flag.kind == CHOICE:
        return f"{label} <{'|'.join(flag.choices)}>"
    if flag.kind == OPTIONAL:
        return f"{label}[=<{flag.metavar}>]" if flag.name != "--print" else f'{label} "<task>"'
    if flag.takes_value:
        return f"{label} <{flag.metavar}>"
    return label


def _help_width() -> int:
    try:
        columns = os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = 100
    return max(60, min(columns, 120))


def _wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap (textwrap would import `re`, slowing --help down)."""
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return lines + [current] if current else lines


def _help_row(label: str, text: str) -> str:
    indent = " " * _HELP_WIDTH
    body = _wrap(text, _help_width() - _HELP_WIDTH) or [""]
    first = f"  {label:{_HELP_WIDTH - 2}}{body[0]}"
    if len(label) >= _HELP_WIDTH - 2:
        first = f"  {label}\n{indent}{body[0]}"
    return "\n".join([first] + [indent + line for line in body[1:]])


def _alias_rows(flag: Flag) -> list[str]:
    rows = []
    for alias in ALIASES.values():
        long_rename = alias.value is None and alias.spelling.startswith("--")
        if alias.target == flag.name and (alias.value is not None or long_rename):
            rows.append(_help_row(alias.spelling, f"= {alias.meaning}"))
    return rows


def global_help() -> str:
    lines = [
        f"{PROG} agent: a terminal coding agent",
        "",
        "Usage:",
        f"  {PROG} [options]                   interactive session (slash commands, shortcuts)",
        f'  {PROG} -p "<task>" [options]       run headless to the end and print the result',
        f"  {PROG} <command> <action> [args]   manage configuration, MCP servers, memory...",
        "",
        "Commands:",
    ]
    for command in COMMANDS.values():
        label = f"{command.name} {'|'.join(command.actions)}"
        lines.append(_help_row(label, command.help + ("" if command.available else _NOT_BUILT)))
    groups = {}
    for flag in FLAGS.values():
        groups.setdefault(flag.group, []).append(flag)
    for group, flags in groups.items():
        lines += ["", f"{group}:"]
        for flag in flags:
            text = flag.help + ("" if flag.available else _NOT_BUILT)
            if flag.unavailable_choices:
                text += f" [{', '.join(flag.unavailable_choices)}: not in this build]"
            lines.append(_help_row(_flag_label(flag), text))
            lines += _alias_rows(flag)
    lines += [
        "",
        "Conflicts: --continue/--resume, --system-prompt/--system-prompt-file and",
        "  --append-system-prompt/--append-system-prompt-file exclude each other; one mode only.",
        "",
        "Environment:",
        _help_row("D2A_MODEL_BASE_URL", "OpenAI-compatible endpoint (POST <url>/chat/completions)"),
        _help_row("D2A_MODEL_NAME", "model name, e.g. litellm_proxy/<alias>"),
        _help_row("D2A_MODEL_API_KEY", "API key"),
        _help_row("D2A_MODEL_COST", '{"input_cost_per_token": f, "output_cost_per_token": f}'),
        _help_row("YUYAO_HOME", "state directory (default ~/.yuyao)"),
        "",
        "Exit codes: 0 done (Submitted or LimitsExceeded), 1 runtime error, 2 usage error.",
        "Headless contract for external programs: run_agent.sh (see the README).",
    ]
    return "\n".join(lines) + "\n"


def command_help(name: str) -> str:
    command = COMMANDS[name]
    lines = [
        f"Usage: {PROG} {name} <action> [args] [options]",
        "",
        command.help + "." + ("" if command.available else _NOT_BUILT),
        "",
        "Actions:",
    ]
    for action in command.actions.values():
        lines.append(_help_row(action.usage, action.help))
        for flag in action.flags:
            lines.append(_help_row(f"  {flag.name}", flag.help))
    lines += ["", f"Global options (--mode, --model, ...) apply too: see {PROG} --help."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Session options
# ---------------------------------------------------------------------------------------------


def repair_text(text: str) -> str:
    """`text` with each lone surrogate (an undecodable byte of argv, kept by Python's
    `surrogateescape`) replaced by U+FFFD, so it can be sent as UTF-8."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _read_prompt_file(spelling: str, path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return decode_text(handle.read())
    except OSError as exc:
        raise UsageError(f"{spelling}: cannot read '{path}': {exc.strerror or exc}") from None


def session_options(invocation: Invocation) -> dict:
    """SessionOptions (docs/CORE_API.md) from the flags; only what the user gave."""
    options = {}
    for name, value in invocation.values.items():
        flag = FLAGS[name]
        if flag.option is None:
            continue
        if flag.reads_file:
            value = _read_prompt_file(invocation.spelled[name], value)
        elif isinstance(value, str):
            value = repair_text(value)
        elif isinstance(value, list):
            value = [repair_text(v) if isinstance(v, str) else v for v in value]
        if flag.option == "stream":
            value = value == "on"
        if flag.option == "model":
            options["model"] = {"name": value}
        elif flag.repeatable:
            options.setdefault(flag.option, []).extend(value)
        else:
            options[flag.option] = value
    return options


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


def _fail(message: str, code: int = EXIT_RUNTIME) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return code


def _usage_failure(error: UsageError) -> int:
    where = f"{PROG} {error.command}" if error.command else PROG
    sys.stderr.write(f"{PROG}: error: {error}\nTry '{where} --help' for more information.\n")
    return EXIT_USAGE


def _version_text() -> str:
    from yuyao import __version__

    return f"{PROG} {__version__}\n"


def task_text(invocation: Invocation) -> str:
    """The -p task: its words, `--print=<task>`, or stdin when piped (or given as '-')."""
    words = list(invocation.words)
    inline = invocation.get("--print")
    if isinstance(inline, str):
        words.insert(0, inline)
    task = " ".join(words).strip()
    if task and task != "-":
        return task
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError('-p needs a task: yuyao -p "<task>", or pipe the task on stdin')
    stream = getattr(sys.stdin, "buffer", None)
    task = (decode_text(stream.read()) if stream else sys.stdin.read()).strip()
    if not task:
        raise UsageError("-p: the task read from stdin is empty")
    return task


def _missing_model_config(options: dict) -> bool:
    has_name = bool(options.get("model", {}).get("name") or os.environ.get("D2A_MODEL_NAME"))
    return not (os.environ.get("D2A_MODEL_BASE_URL", "").strip() and has_name)


def run_print(invocation: Invocation, options: dict) -> int:
    input_format = invocation.get("--input-format", "text")
    # With stream-json input the turns are read from stdin one by one by the runner.
    task = None if input_format == "stream-json" else task_text(invocation)
    if _missing_model_config(options):
        return _fail(
            "no model configured: set D2A_MODEL_BASE_URL, D2A_MODEL_NAME and D2A_MODEL_API_KEY"
        )
    from yuyao.headless import run_task

    # What the project ships (hooks, .mcp.json, plugins) runs only with --trust-project, and
    # then only as the content the user approved (DESIGN §8).
    options["project_extensions"] = bool(options.get("trust_project"))
    return run_task(
        task,
        options,
        output_format=invocation.get("--output-format", "text"),
        verbose=bool(invocation.get("--verbose")),
        input_format=input_format,
    )


def run_command(invocation: Invocation, options: dict) -> int:
    import shlex

    words = [invocation.action, *invocation.words, *invocation.action_flags]
    if invocation.command == "cost":  # `/cost` takes no words; `show` is only the CLI's name
        words = []
    if invocation.tail is not None:
        words += ["--", *invocation.tail]
    line = f"/{invocation.command} {shlex.join(words)}"
    from yuyao.headless import run_slash_command

    return run_slash_command(line, options)


def run_tui(options: dict) -> int:
    try:
        from yuyao.tui import run_interactive
    except ImportError as exc:
        return _fail(f"cannot start the interactive interface: {exc}")
    return run_interactive(options)


def _run(argv: list[str]) -> int:
    from yuyao.claude_compat import adapt_argv

    try:
        # Claude Code's spelling (its SDK starts yuyao as its CLI) -> yuyao's.
        invocation = parse_args(adapt_argv(argv))
        if invocation.help:
            command = invocation.command
            sys.stdout.write(command_help(command) if command else global_help())
            return EXIT_OK
        if invocation.version:
            sys.stdout.write(_version_text())
            return EXIT_OK
        options = session_options(invocation)
        feature = unavailable_feature(invocation)
        if feature is not None:
            return _fail(f"{feature} is not available in this build")
        if invocation.command == "batch":
            from yuyao.batch import run_batch_command

            return run_batch_command(invocation)
        if invocation.command == "agents":
            from yuyao.background import run_agents

            return run_agents(invocation, options)
        if invocation.command is not None:
            return run_command(invocation, options)
        if invocation.has("--bg"):
            from yuyao.background import run_bg

            return run_bg(invocation, options)
        if invocation.has("--worktree"):
            return _run_in_worktree(invocation, options)
        if invocation.task_mode is not None:
            return run_print(invocation, options)
    except UsageError as error:
        return _usage_failure(error)
    return run_tui(options)


def _run_in_worktree(invocation: Invocation, options: dict) -> int:
    """`--worktree`/`-w`: the session runs in a new git worktree; what happens to it after
    is asked in the TUI (keep / merge / remove), and it is kept after `-p`."""
    from yuyao.background import end_worktree, start_worktree

    if invocation.task_mode is not None:
        # Read once (stdin may hold it), and a usage error before anything is created.
        invocation.words = [task_text(invocation)]
        invocation.values["--print"] = True
    worktree = start_worktree(invocation.get("--worktree"), options)
    if worktree is None:
        return EXIT_RUNTIME
    interactive = invocation.task_mode is None
    try:
        return run_tui(options) if interactive else run_print(invocation, options)
    finally:
        end_worktree(worktree, interactive=interactive)


def main(argv: list[str] | None = None) -> int:
    """The `yuyao` console script. Returns the exit code (0 done, 1 runtime, 2 usage)."""
    try:
        code = _run(sys.argv[1:] if argv is None else list(argv))
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        return _fail("interrupted")
    except BrokenPipeError:
        # The reader left early (`yuyao --help | head`): no traceback, and none at exit either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_RUNTIME


if __name__ == "__main__":
    raise SystemExit(main())
