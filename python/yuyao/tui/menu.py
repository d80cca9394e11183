"""A one-question menu below the output: ↑/↓ (or k/j) move, Enter picks, a digit picks that
row, Esc or Ctrl+C cancels. It replaces itself with one line saying what was picked."""

from __future__ import annotations

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.styles import Style

from . import theme

HINT = "↑/↓ move · Enter choose · Esc cancel"
VISIBLE = 10  # rows shown at once; the list scrolls with the cursor


def choose(
    title: str,
    items: list[str],
    default: int = 0,
    hint: str = HINT,
    extra: dict[str, int] | None = None,
) -> int | None:
    """The index picked, or None when cancelled (or there is nothing to pick). `extra` maps
    more keys to results (a row's index, or a negative code the caller gives a meaning)."""
    if not items:
        return None
    state = {"i": max(0, min(default, len(items) - 1))}
    kb = KeyBindings()

    def move(step: int) -> None:
        state["i"] = (state["i"] + step) % len(items)

    @kb.add("up")
    @kb.add("k")
    @kb.add("c-p")
    def _up(event) -> None:
        move(-1)

    @kb.add("down")
    @kb.add("j")
    @kb.add("c-n")
    def _down(event) -> None:
        move(1)

    @kb.add("enter")
    def _pick(event) -> None:
        event.app.exit(result=state["i"])

    @kb.add("escape", eager=True)
    @kb.add("c-c")
    @kb.add("q")
    def _cancel(event) -> None:
        event.app.exit(result=None)

    for key, result in (extra or {}).items():

        @kb.add(key)
        def _extra(event, r=result) -> None:
            event.app.exit(result=r)

    for digit in range(1, min(len(items), 9) + 1):

        @kb.add(str(digit))
        def _number(event, k=digit - 1) -> None:
            event.app.exit(result=k)

    def fragments() -> FormattedText:
        i = state["i"]
        start = max(0, min(i - VISIBLE // 2, len(items) - VISIBLE))
        shown = range(start, min(len(items), start + VISIBLE))
        out: list = [("class:menu.title", f"{title}\n")]
        if start > 0:
            out.append(("class:menu.hint", f"   ↑ {start} more\n"))
        for k in shown:
            number = f"{k + 1}." if k < 9 else "  "
            if k == i:
                out.append(("class:menu.selected", f" ❯ {number} {items[k]}\n"))
            else:
                out.append(("class:menu.item", f"   {number} {items[k]}\n"))
        rest = len(items) - shown.stop
        if rest > 0:
            out.append(("class:menu.hint", f"   ↓ {rest} more\n"))
        out.append(("class:menu.hint", f"   {hint}"))
        return FormattedText(out)

    app: Application = Application(
        layout=Layout(Window(FormattedTextControl(fragments, focusable=True, show_cursor=False))),
        key_bindings=kb,
        style=Style.from_dict(
            {
                **theme.PT_STYLE,
                "menu.title": "bold",
                "menu.selected": "bold fg:ansicyan",
                "menu.item": "",
                "menu.hint": "fg:ansibrightblack",
            }
        ),
        full_screen=False,
        erase_when_done=True,
        mouse_support=False,
    )
    return app.run()
