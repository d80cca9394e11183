"""The project-trust prompt (DESIGN §8): a repository whose settings widen permissions gets
them only after the user says so, once, here; the decision is saved by the core (`/trust`).
In a trusted project, extension files that are new or changed since the user approved them
(hooks, .mcp.json, plugins, the project config) are shown — what they run, or the diff — and
approved only on a yes."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from . import theme
from .keys import RawKeys
from .prompts import _read_choice

MARK = "not trusted; ignored:"
HELD = "held (review):"


def offer_trust(console: Console, session, keys: RawKeys) -> None:
    """Asks whether to trust this project when its settings ask for more than the defaults."""
    try:
        status = session.dispatch("/trust status")
    except Exception:  # noqa: BLE001 - no trust command: nothing to offer
        return
    if HELD in status:
        offer_review(console, session, keys)
        return
    if MARK not in status:
        return
    asked = status.split(MARK, 1)[1].strip()
    _ask(
        console,
        session,
        keys,
        title="trust this project?",
        body=Text.assemble(
            ("This project's settings ask for more than the defaults:\n", "bold"),
            (f"  {asked}\n", "warn"),
            "They are ignored until you trust the project. Only trust a repository you know.",
        ),
        choices="  [y] trust it (saved)   [n] keep the defaults",
        command="/trust",
        declined="kept the defaults; /trust changes this",
    )


def offer_review(console: Console, session, keys: RawKeys) -> None:
    """Shows the held extension files (what each runs, or its diff since approval) and asks."""
    try:
        review = session.dispatch("/trust review")
    except Exception:  # noqa: BLE001 - nothing to review
        return
    _ask(
        console,
        session,
        keys,
        title="review extension files",
        body=Text.assemble(
            (review.rstrip() + "\n", ""),
            "They are not loaded until you approve this exact content.",
        ),
        choices="  [y] approve them as shown   [n] keep them held",
        command="/trust approve --all",
        declined="kept held; /trust review shows them",
    )


def _ask(console, session, keys, *, title, body, choices, command, declined) -> None:
    """One trust question: the panel, y/n, and the core command a yes runs."""
    console.print(
        Panel(
            body,
            title=Text(title, "warn"),
            title_align="left",
            border_style="yellow",
            padding=(0, 1),
        )
    )
    console.print(Text(choices, "bold"))
    if _read_choice(keys, "yn") == "y":
        console.print(Text(f"  {theme.SYM_STEER} {session.dispatch(command)}", "ok"))
    else:
        console.print(Text(f"  {theme.SYM_STEER} {declined}", "muted"))
