"""yuyao.agent_api: the standard programmatic interface (spec §0.1.2).

    from yuyao.agent_api import create_session

    with create_session(mode="plan", deny=["Bash(rm *)"], cwd="/path/to/repo") as session:
        session.dispatch("/config set k v")     # one slash command, as typed in the TUI
        answer = session.chat("explain main.py")  # one agentic turn; tools really run
        session.messages                          # OpenAI-style list, tool results included

A session is non-streaming and headless: it never reads stdin, shows no spinner and answers
permission questions from its mode (in `ask` mode, mutating operations are refused). Opening
one makes no model call; the model is reached on the first `chat`, through D2A_MODEL_*.

Errors are raised, never returned as text:
- `create_session` raises ValueError for an invalid mode, role, rule or cwd;
- `dispatch` raises ValueError for an unknown slash command or bad arguments;
- `chat` raises RuntimeError when the turn ends in an error (unreachable endpoint, 401, ...).
  Reaching a limit is not an error: `chat` returns and the status records LimitsExceeded.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import weakref
from typing import Any

from yuyao.core_link import hide_model_key  # what `-p` does with the model key
from yuyao.user_text import fold_choice  # the same spelling rules as --mode/--role

__all__ = ["AgentSession", "create_session"]

# Sessions not closed yet: closed at interpreter exit, so their background jobs end and no
# core thread is left running while Python finalizes.
_OPEN: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_open_sessions() -> None:
    for session in list(_OPEN):
        try:
            session.close()
        except Exception:
            pass


class AgentSession:
    """One session of the core, driven synchronously. Use `create_session` to get one."""

    def __init__(self, core_session, worktree: dict | None = None) -> None:
        self._core = core_session
        self._closed = False
        self._warned_cost = False  # an unenforceable spend ceiling was said
        self._worktree = worktree
        _OPEN.add(self)

    @property
    def worktree(self) -> dict | None:
        """With `create_session(worktree=...)`: the worktree's `path`, `branch`, `name`, ...
        It is kept when the session closes (its changes committed on `branch`)."""
        return dict(self._worktree) if self._worktree else None

    @property
    def cwd(self) -> str:
        """The session's current working directory (follows `/cd`)."""
        return self._core.cwd

    @property
    def session_id(self) -> str:
        """The id of the session file under ~/.yuyao/sessions/ (for `resume=`)."""
        return json.loads(self._core.status_json())["session_id"]

    @property
    def messages(self) -> list[dict]:
        """The active conversation, OpenAI style, tool calls and tool results included."""
        return json.loads(self._core.messages_json())

    @property
    def completion(self) -> dict | None:
        """The last turn's completion check: files changed, commands, verification
        (`verified` false when it failed), assumptions, unresolved errors, `problems`. None
        when that turn changed no file and ran no command."""
        return json.loads(self._core.status_json()).get("completion")

    @property
    def last_turn(self) -> dict:
        """How the last turn ended: {status, exit_status, error}. `exit_status` is
        "NotSubmitted" (and `done` False) when the request asked for a change and none was
        made — every change refused, or only talk — whatever the answer claims."""
        turn = dict(json.loads(self._core.status_json()).get("last_turn") or {})
        turn["done"] = turn.get("exit_status") in ("Submitted", "Answered", "LimitsExceeded")
        return turn

    @property
    def tasks(self) -> list[dict]:
        """The todo list: [{id, content, status, deps}], hierarchical ids like "2.1"."""
        return json.loads(self._core.tasks_json())

    @property
    def plan(self) -> dict:
        """The planning workflow: {planning, awaiting_approval, approved, path, title, steps,
        plan} (the plan's markdown once a valid plan was proposed)."""
        return json.loads(self._core.plan_json())

    def revise_plan(self, text: str) -> str:
        """Replaces the plan waiting for approval with `text`, validated like a proposed plan;
        an invalid text raises and leaves the plan file unchanged."""
        return self._core.plan_revise(text)

    @property
    def mcp_servers(self) -> list[str]:
        """Names of the configured MCP servers."""
        return list(self._core.mcp_servers())

    def dispatch(self, command: str) -> str:
        """Run one slash command (e.g. "/config set k v", "/ask", "/mcp add x").

        Same code as typing it in the TUI. Returns its text, possibly "". Raises ValueError for
        an unknown command or bad arguments."""
        return self._core.dispatch(command)

    def chat(self, text: str) -> str:
        """Run one agentic turn and return the assistant's final text. Raises RuntimeError.
        A spend ceiling that cannot be enforced (no price known for the model) is said once
        per session, as a RuntimeWarning: a session has no other channel for notices."""
        self._warn_unpriced_ceiling()
        return self._core.chat(text)

    def _warn_unpriced_ceiling(self) -> None:
        if self._warned_cost:
            return
        try:
            warning = (json.loads(self._core.status_json()).get("pricing") or {}).get("warning")
        except Exception:
            return
        if warning:
            import warnings

            self._warned_cost = True
            warnings.warn(f"yuyao: {warning}", RuntimeWarning, stacklevel=3)

    def config_get(self, key: str) -> Any:
        """The current value of a persistent configuration key, or None when unset."""
        return json.loads(self._core.config_get_json(key))

    def close(self) -> None:
        """Release the session. Safe to call twice."""
        if not self._closed:
            self._closed = True
            _OPEN.discard(self)
            self._core.close()
            if self._worktree:
                from yuyao import _core

                note = _core.worktree_finish(json.dumps(self._worktree), "keep")
                sys.stderr.write(f"yuyao: {note}\n")

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.cwd
        return f"<AgentSession {state}>"


def _rule_list(deny) -> list[str]:
    """`deny` as a list of rules: one string is one rule."""
    if isinstance(deny, str):
        return [deny]
    return [str(rule) for rule in deny]


def create_session(
    *,
    deny=None,
    mode=None,
    role=None,
    team_name: str | None = None,
    cwd=None,
    continue_session: bool = False,
    resume: str | None = None,
    fork_session: bool = False,
    trust_project: bool = False,
    project_extensions: bool = True,
    worktree: bool | str = False,
    json_schema: str | os.PathLike | None = None,
    thinking: str | None = None,
    auto_commit: bool | None = None,
) -> AgentSession:
    """Open a session. `deny`, `mode` and `role` mean what `--deny`, `--mode` and `--role`
    mean on the command line (`team_name`: `--team-name`, with role orchestrator); when omitted, the configured defaults apply (mode ask, role
    execute). `cwd` defaults to the process's working directory.

    `trust_project=True` means `--trust-project`: the project's settings that widen
    permissions apply (otherwise they are ignored with a warning, unless the user trusted the
    project before).

    Executables the project ships (its hooks.json hooks, `.mcp.json` servers, plugins) run
    only with `trust_project=True`, and then only as the content the user approved (`yuyao
    trust review`); `project_extensions=False` means `--no-project-extensions` (never, even
    when trusted). The user's own hooks and servers always run.

    `json_schema`, `thinking` and `auto_commit` mean `--json-schema <file>`, `--thinking
    <level>` and `--auto-commit` (False: off even when `git.auto_commit` is set).

    `continue_session`, `resume` and `fork_session` mean `-c`, `--resume <id>` and
    `--fork-session`: the conversation of a saved session is restored (ValueError when both
    of the first two are given, RuntimeError when there is nothing to resume).

    `worktree=True` (or a name) means `--worktree`: the session works in a new git worktree
    on branch `yuyao/<name>` (RuntimeError outside a git repository); see `.worktree`."""
    from yuyao import _core  # here, so importing this module does not load the extension

    options: dict[str, Any] = {"headless": True, "stream": False}
    if deny is not None:
        options["deny"] = _rule_list(deny)
    if mode is not None:
        options["mode"] = fold_choice(str(mode))
    if role is not None:
        options["role"] = fold_choice(str(role))
    if team_name is not None:
        options["team_name"] = str(team_name)
    if cwd is not None:
        options["cwd"] = os.path.abspath(os.fspath(cwd))
    if trust_project:
        options["trust_project"] = True
    options["project_extensions"] = bool(trust_project and project_extensions)
    if continue_session:
        options["continue"] = True
    if resume is not None:
        options["resume"] = str(resume)
    if fork_session:
        options["fork_session"] = True
    if json_schema is not None:
        options["json_schema"] = os.fspath(json_schema)
    if thinking is not None:
        options["thinking"] = fold_choice(str(thinking))
    if auto_commit is not None:
        options["auto_commit"] = bool(auto_commit)
    created = None
    if worktree:
        name = worktree if isinstance(worktree, str) else None
        created = json.loads(_core.worktree_create(options.get("cwd") or os.getcwd(), name))
        options["cwd"] = created["path"]
    # As `-p` does: the key leaves os.environ (the core keeps it in memory), so nothing this
    # process starts later inherits it. A key set anew since the last session replaces it.
    hide_model_key(_core)
    try:
        core_session = _core.Session(json.dumps(options), None)
    except Exception:
        if created:  # nothing was done in it: leave no worktree behind
            _core.worktree_finish(json.dumps(created), "remove")
        raise
    return AgentSession(core_session, created)
