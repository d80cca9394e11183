"""The streaming Markdown view (python/yuyao/tui/mdstream.py): blocks settle as they
complete, and a refresh renders a bounded amount of text however long the reply is."""

from __future__ import annotations

from rich.console import Console
from yuyao.tui.mdstream import StreamView

DOC = (
    "# Title\n\nA paragraph\nover two lines.\n\n- a\n- b\n\n"
    "```python\ndef f():\n\n    return 1\n```\n## Next\nText.\n"
)


def feed(view: StreamView, text: str, size: int = 7) -> None:
    for i in range(0, len(text), size):
        view.feed(text[i : i + size])


def test_blocks_settle_at_their_end_and_code_is_never_cut():
    view = StreamView()
    feed(view, DOC)
    assert view.blocks == [
        "# Title\n",
        "\nA paragraph\nover two lines.\n\n",
        "- a\n- b\n\n",
        "```python\ndef f():\n\n    return 1\n```\n",
        "## Next\n",
    ]
    assert view.tail() == "Text.\n"
    assert "".join(view.blocks) + view.tail() == DOC


def test_the_live_view_shows_rendered_markdown():
    view = StreamView()
    feed(view, DOC)
    console = Console(width=60, color_system=None)
    text = "\n".join("".join(s.text for s in line).rstrip() for line in view.lines(console, 60, 40))
    assert "Title" in text and "# Title" not in text
    assert "• a" in text and "```" not in text and "def f():" in text


def test_each_refresh_renders_a_bounded_amount_of_a_huge_reply():
    console = Console(width=80, color_system=None)
    view = StreamView()
    para = "word " * 30 + "\n\n"
    code = "```python\n" + "x = 1\n" * 3000  # a long code block, still open
    most = 0
    for i, piece in enumerate([para] * 400 + [code]):
        feed(view, piece, 16)
        if i % 7 == 0 or i == 400:
            view.lines(console, 80, 30)
            most = max(most, view.rendered_chars)
    assert len(view.text) > 75_000
    # The tail plus the few blocks needed to fill the screen, never the whole reply.
    assert most < 30 * 80 * 2 * 3, most
    lines = view.lines(console, 80, 30)
    assert len(lines) == 30 and "x = 1" in "".join(s.text for s in lines[-1])
