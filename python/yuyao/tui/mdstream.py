"""A streaming reply shown as Markdown while it arrives, at a bounded cost per chunk.

The text is cut into blocks as soon as a block is complete (a blank line followed by a new
block, a heading, a closed code fence). A complete block is rendered once and its lines are
kept; each refresh renders only the open tail (its last lines) and shows the last screenful.
The permanent output is the whole reply rendered once when it ends, so seams between blocks
never reach the scrollback.
"""

from __future__ import annotations

import re

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^#{1,6}(\s|$)")


class StreamView:
    """The reply so far: settled blocks (rendered once) and the open tail."""

    def __init__(self, code_theme: str = "monokai") -> None:
        self.text = ""
        self.code_theme = code_theme
        self.blocks: list[str] = []
        self._settled = 0  # text[:settled] is in self.blocks
        self._scan = 0  # lines before this offset were looked at
        self._fence = ""  # the open fence's marker ("" outside code)
        self._blank = False  # the last line looked at was blank
        self._rendered: dict[int, list] = {}  # block index -> lines, for _width
        self._width = 0
        self._tail_key: tuple | None = None
        self._tail_lines: list = []
        self.rendered_chars = 0  # source characters given to the renderer by the last refresh

    def __bool__(self) -> bool:
        return bool(self.text)

    def feed(self, chunk: str) -> None:
        self.text += chunk
        while True:
            end = self.text.find("\n", self._scan)
            if end < 0:
                return
            self._line(self._scan, end + 1)
            self._scan = end + 1

    def _cut(self, at: int) -> None:
        if at > self._settled and self.text[self._settled : at].strip():
            self.blocks.append(self.text[self._settled : at])
            self._settled = at

    def _line(self, start: int, end: int) -> None:
        line = self.text[start:end].rstrip("\n")
        fence = FENCE.match(line)
        if self._fence:
            marker = fence.group(1) if fence else ""
            if marker[:1] == self._fence[:1] and len(marker) >= len(self._fence):
                if not line.strip()[len(marker) :].strip():
                    self._fence = ""
                    self._cut(end)
            return
        if not line.strip():
            self._blank = True
            return
        at_col0 = not line[:1].isspace()
        if fence:
            if at_col0:
                self._cut(start)
            self._fence = fence.group(1)
        elif HEADING.match(line):
            self._cut(start)
            self._cut(end)
        elif self._blank and at_col0:
            self._cut(start)
        self._blank = False

    def tail(self) -> str:
        return self.text[self._settled :]

    # -- rendering ------------------------------------------------------------------------

    def _render(self, console: Console, source: str, width: int) -> list:
        from rich.markdown import Markdown

        options = console.options.update(width=max(width, 10), height=None)
        lines = console.render_lines(
            Markdown(source, code_theme=self.code_theme), options, pad=False
        )
        while lines and not "".join(s.text for s in lines[0]).strip():
            lines.pop(0)
        while lines and not "".join(s.text for s in lines[-1]).strip():
            lines.pop()
        return lines

    def lines(self, console: Console, width: int, budget: int) -> list:
        """The last `budget` lines of the reply as rendered now."""
        if width != self._width:
            self._rendered.clear()
            self._width = width
            self._tail_key = None
        self.rendered_chars = 0
        tail_source = bounded_tail(self.tail(), budget, width)
        key = (tail_source, width)
        if key != self._tail_key:
            self._tail_lines = self._render(console, tail_source, width) if tail_source else []
            self.rendered_chars += len(tail_source)
            self._tail_key = key
        out = list(self._tail_lines)
        i = len(self.blocks) - 1
        while i >= 0 and len(out) < budget:
            if i not in self._rendered:
                source = bounded_tail(self.blocks[i], budget, width)
                self._rendered[i] = self._render(console, source, width)
                self.rendered_chars += len(source)
            out = self._rendered[i] + ([[]] if out else []) + out
            i -= 1
        return out[-budget:]


def bounded_tail(text: str, max_lines: int, width: int) -> str:
    """The end of a block that fits `max_lines` lines: an open code block keeps its fence line
    (so the rest is still highlighted as code)."""
    limit = max(max_lines, 1) * max(width, 20) * 2
    lines = text.splitlines()
    if len(lines) <= max_lines * 2 and len(text) <= limit:
        return text
    head = lines[0] if lines and FENCE.match(lines[0]) else ""
    kept = "\n".join(lines[-max_lines:])[-limit:]
    return f"{head}\n{kept}" if head else kept


class Lines:
    """Pre-rendered lines as a renderable (for rich Live)."""

    def __init__(self, lines: list) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield from line
            yield Segment.line()
