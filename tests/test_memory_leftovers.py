"""Memory editing in the TUI (seed 002 §6, seed 000 behaviour 5): `/memory edit <id>` without text and `/memory open` hand the memory
file to $EDITOR in the TUI (the prompt suspended, the file re-read: the change reaches the
next request); without a terminal (agent_api) they fail naming the inline form."""

from __future__ import annotations

import re
import sys
import time

import pytest
from fakellm import call, say
from test_tui import CTRL_D, Term

pytestmark = pytest.mark.core

# A scripted "editor": appends a line to the file it is given (its last argument).
EDITOR = 'sh -c \'echo "- added by the editor" >> "$1"\' sh'


def test_memory_open_and_edit_run_the_editor_in_the_tui(fake_llm, env, repo):
    memory = repo / "MEMORY.md"
    memory.write_text("- first note\n")
    server = fake_llm([say("noted")])
    term = Term([sys.executable, "-m", "yuyao"], env(server, EDITOR=EDITOR, VISUAL=None), repo)
    try:
        term.wait_ready()
        term.line("/memory open")
        term.wait_for(r"edited .*MEMORY\.md")
        assert memory.read_text().count("- added by the editor") == 1, memory.read_text()
        term.line("/memory")
        term.wait_for(r"h[0-9a-f]{5} \[project\].*first note")
        entry = re.search(r"(h[0-9a-f]{5}) \[project\][^\n]*first note", term.transcript())
        assert entry, term.transcript()[-2000:]
        term.line(f"/memory edit {entry.group(1)}")
        term.wait_for(r"edited .*MEMORY\.md.*\n(.|\n)*edited .*MEMORY\.md")
        assert memory.read_text().count("- added by the editor") == 2
        term.line("what do you remember?")
        term.wait_for(r"noted")
        assert "added by the editor" in server.user_text(0) + server.system_prompt(0)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_without_a_terminal_the_inline_form_is_named(api_env, repo):
    from yuyao.agent_api import create_session

    api_env()
    (repo / "MEMORY.md").write_text("- only note\n")
    with create_session(cwd=str(repo)) as s:
        entry = re.search(r"(h[0-9a-f]{5}) \[project\]", s.dispatch("/memory")).group(1)
        with pytest.raises(ValueError, match=rf"/memory edit {entry} <new text>"):
            s.dispatch(f"/memory edit {entry}")
        with pytest.raises(ValueError, match="only in the yuyao TUI"):
            s.dispatch("/memory open global")
    assert (repo / "MEMORY.md").read_text() == "- only note\n"


def test_bootstrap_keeps_a_much_used_old_entry_over_new_unused_ones(fake_llm, api, repo):
    """Over memory.bootstrap_chars the loaded copy keeps the newest entries and the most-used
    ones: an old entry the agent keeps reading (memory-get of its line) survives."""
    lines = [f"- entry number {i:03} with padding text to weigh it down\n" for i in range(60)]
    (repo / "MEMORY.md").write_text("".join(lines))
    server = fake_llm(
        [
            call("memory-get", path="MEMORY.md:3-3"),
            call("memory-get", path="MEMORY.md:3"),
            say("read it twice"),
            say("fresh session"),
        ]
    )
    s = api(server)
    s.dispatch("/config set memory.bootstrap_chars 1500")
    s.chat("look up the third entry")
    assert any("entry number 002" in t for t in server.tool_results(1).values())
    s.close()
    again = api(server)
    again.chat("hello")
    system = server.system_prompt(-1)
    assert "[memory truncated:" in system, system
    assert "entry number 002" in system, "the much-used old entry was cut"
    assert "entry number 059" in system, "the newest entry was cut"
    assert "entry number 030" not in system


def test_memory_open_in_the_full_screen_view(fake_llm, env, repo):
    memory = repo / "MEMORY.md"
    memory.write_text("- first note\n")
    server = fake_llm([say("ok")])
    term = Term([sys.executable, "-m", "yuyao"], env(server, EDITOR=EDITOR, VISUAL=None), repo)
    try:
        term.wait_ready()
        term.line("/tui fullscreen")
        term.wait_for(r"full screen \(/tui default leaves\)", screen_only=True)
        term.line("/memory open")
        deadline = time.monotonic() + 15
        while "added by the editor" not in memory.read_text() and time.monotonic() < deadline:
            term.pump()
        assert memory.read_text().count("- added by the editor") == 1, term.display()
        term.wait_for(r"edited .*MEMORY\.md", screen_only=True)
        term.line("/tui default")
        term.wait_for(r"back from full screen")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
