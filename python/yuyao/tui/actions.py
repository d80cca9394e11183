"""What the TUI's parts may ask of the App: the one narrow door between them.

The App (app.py) owns the session, the transcript and the prompt; the composer (input.py), the
full-screen layout (fullscreen.py) and the settings view (settings.py) are handed the App and
reach it only through the interfaces below, so none of them imports app.py and every import
arrow in the TUI points one way (app -> part -> actions). The App implements all of them; the
test of the import graph checks that each part uses no member its interface does not declare
and that the App has every declared member.

The one-key actions are the same App methods as their slash commands' long forms (seed 002,
the TUI's keys): Shift+Tab = `/mode plan` and back, Alt+T = `/show-thinking`, and so on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: nothing more is imported at run time
    import queue
    import threading

    from .pastes import Pastes
    from .render import Renderer


class KeyActions(Protocol):
    """The one-key actions, shared by the composer's and the full-screen layout's bindings."""

    def toggle_plan(self) -> None: ...  # Shift+Tab
    def cycle_thinking(self, toggle: bool = True) -> None: ...  # Alt+T
    def toggle_tasks(self) -> None: ...  # Ctrl+T
    def toggle_plan_preview(self) -> None: ...  # Ctrl+P on a plan
    def background_command(self, running: str = "") -> None: ...  # Ctrl+B
    def kill_subagents(self) -> None: ...  # Ctrl+X Ctrl+K
    def steer_idle(self) -> None: ...  # a steering key with no turn running
    def tab_plan(self) -> None: ...  # Tab on an empty idle composer
    def paste_clipboard(self) -> str: ...  # Ctrl+V: the text to insert ("" for an image)
    def say(self, text: str, style: str = "muted") -> None: ...  # a one-line note


class TurnRelay(Protocol):
    """The App's handler as a turn sees it: while a turn runs on its worker thread, the core's
    events and requests reach the main thread through this queue."""

    queue: queue.Queue | None
    worker: threading.Thread | None


class ComposerHost(KeyActions, Protocol):
    """What the composer (input.py: completion, next-step suggestion, key bindings) uses."""

    commands: dict[str, str]  # slash command -> one-line description
    suggestion: str  # the greyed next-step suggestion for the next prompt
    images: list[str]  # images pasted with Ctrl+V into the current input
    ctrl_c_at: float  # when Ctrl+C was pressed once on the empty input
    status: dict  # the core's last status (mode, context window, added dirs ...)
    input: Any  # the composer itself (input.InputBox) once the prompt exists, else None

    @property
    def pastes(self) -> Pastes: ...
    @property
    def renderer(self) -> Renderer: ...
    def load_commands(self) -> None: ...
    def cwd(self) -> str: ...
    def toolbar(self) -> Any: ...  # prompt_toolkit formatted text
    def prompt_fragments(self) -> Any: ...  # prompt_toolkit formatted text


class ScreenHost(ComposerHost, Protocol):
    """What the full-screen layout (fullscreen.py) uses besides the composer's share."""

    session: Any  # the core's Session
    shell_mode: bool  # `!` mode: lines run as shell commands
    thinking_toggled: bool  # Alt+T pressed during a turn: tell the core afterwards
    show_tasks: bool  # Ctrl+T: the task list is shown

    @property
    def console(self) -> Any: ...  # rich Console
    @property
    def handler(self) -> TurnRelay: ...
    def tasks(self) -> list: ...
    def slash_local(self, line: str) -> bool: ...
    def slash_result(self, line: str, ok: bool, value: Any) -> None: ...
    def show_refs(self, line: str) -> None: ...
    def after_chat(self, answers_before: int) -> None: ...
    def refresh_status(self) -> None: ...


class SettingsHost(Protocol):
    """What the settings view (settings.py) uses."""

    session: Any  # the core's Session: `/config list` and `/config set` go through dispatch

    @property
    def console(self) -> Any: ...  # rich Console
    def say(self, text: str, style: str = "muted") -> None: ...
    def refresh_status(self) -> None: ...
    def after_config_change(self) -> None: ...
