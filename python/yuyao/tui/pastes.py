"""Large pastes collapse in the composer and the transcript (seed 002, the TUI's input):
`[pasted text #1: 5 000 lines, 84 k tokens]` stands for the text, which the model receives
whole when the line is sent; Alt+V puts the text back in the composer. A paste that takes more
than half the context window is said at once (the core refuses one that cannot fit)."""

from __future__ import annotations

import re

# A paste longer than this collapses (short ones are typed text as usual).
COLLAPSE_LINES = 12
COLLAPSE_CHARS = 2000
# A paste above this share of the context window is warned about when it arrives.
WARN_SHARE = 0.5

PLACEHOLDER = re.compile(r"\[pasted text #(\d+): [^\]\n]*\]")


def _grouped(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def tokens_of(text: str) -> int:
    """The core's estimate: four characters a token."""
    return (len(text) + 3) // 4


def _tokens_shown(t: int) -> str:
    return f"{t // 1000} k" if t >= 10_000 else _grouped(t)


class Pastes:
    """The collapsed pastes of this session, by number."""

    def __init__(self) -> None:
        self.items: dict[int, str] = {}

    @staticmethod
    def is_large(text: str) -> bool:
        return text.count("\n") + 1 > COLLAPSE_LINES or len(text) > COLLAPSE_CHARS

    def collapse(self, text: str) -> str:
        n = len(self.items) + 1
        self.items[n] = text
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        unit = "line" if lines == 1 else "lines"
        return (
            f"[pasted text #{n}: {_grouped(lines)} {unit}, {_tokens_shown(tokens_of(text))} tokens]"
        )

    def expand(self, line: str) -> str:
        """The line as the model receives it: every placeholder replaced by its text."""
        return PLACEHOLDER.sub(lambda m: self.items.get(int(m.group(1)), m.group(0)), line)

    def warning(self, text: str, window: int) -> str | None:
        t = tokens_of(text)
        if window > 0 and t > window * WARN_SHARE:
            return (
                f"this paste is about {_tokens_shown(t)} tokens, {t * 100 // window}% of the "
                f"{_tokens_shown(window)}-token context window"
                + (
                    ": it cannot be sent; save it to a file and mention its path"
                    if t >= window
                    else ""
                )
            )
        return None
