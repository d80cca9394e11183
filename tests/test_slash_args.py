"""Slash commands honour their arguments, and what a command does when it is typed while a
turn runs (queries at once, switches after the turn, rewrites refused) — through agent_api,
the same dispatch the TUI uses."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core


def command_table() -> list[dict]:
    from yuyao import _core

    return json.loads(_core.Session.command_table_json())


def status(s) -> dict:
    return json.loads(s._core.status_json())


def test_plan_off_leaves_plan_mode_and_never_enters_it(api, fake_llm):
    s = api(fake_llm([]), mode="auto-edit")
    assert "not on" in s.dispatch("/plan off")
    assert status(s)["mode"] == "auto-edit"  # was: /plan off turned plan mode on
    s.dispatch("/plan")
    assert status(s)["mode"] == "plan"
    s.dispatch("/plan off")
    assert status(s)["mode"] == "auto-edit"  # back to the mode it was entered from
    s.dispatch("/plan on")
    assert status(s)["mode"] == "plan"


@pytest.mark.parametrize("name, role", [("/ask", "ask"), ("/debug", "debug")])
def test_role_toggles_take_on_and_off(api, fake_llm, name, role):
    s = api(fake_llm([]))
    s.dispatch("/role architect")
    s.dispatch(f"{name} off")
    assert status(s)["role"] == "architect"
    s.dispatch(name)
    assert status(s)["role"] == role
    s.dispatch(f"{name} off")
    assert status(s)["role"] == "architect"


def test_vim_toggle_writes_the_editor_mode(api, fake_llm):
    s = api(fake_llm([]))
    assert s.dispatch("/vim on") == "editor mode: vim"
    assert s.config_get("ui.editor_mode") == "vi"
    assert s.dispatch("/vim") == "editor mode: default"  # no argument: toggles
    assert s.dispatch("/vim off") == "editor mode: default"
    assert s.config_get("ui.editor_mode") == "emacs"


def enumerated(usage: str) -> list[str] | None:
    """The keywords of a usage made only of one choice list, `<a|b|c>` or `[a|b]`."""
    m = re.fullmatch(r"[<\[]([a-z-]+(?:\|[a-z-]+)+)[>\]]", usage.strip())
    return m.group(1).split("|") if m else None


def test_every_command_rejects_an_argument_it_does_not_take(api, fake_llm):
    """A command without arguments rejects one; a choice among keywords rejects any other
    word and names the valid ones. Nothing is switched by a wrong argument."""
    s = api(fake_llm([]))
    before = status(s)
    checked = 0
    for c in command_table():
        if not c["available"] or c["name"] in ("exit",):
            continue
        name = "/" + c["name"]
        choices = enumerated(c["usage"])
        if c["usage"] == "":
            with pytest.raises(ValueError, match="takes no arguments"):
                s.dispatch(f"{name} bogus")
            checked += 1
        elif choices:
            with pytest.raises(ValueError) as err:
                s.dispatch(f"{name} bogus")
            text = str(err.value)
            assert "bogus" in text or "usage" in text, (name, text)
            assert all(word in text for word in choices[:2]), (name, text)
            checked += 1
    with pytest.raises(ValueError, match="takes no arguments"):
        s.dispatch("/exit now")
    after = status(s)
    for key in ("mode", "role", "stream", "show_thinking", "thinking", "usage_display"):
        assert after[key] == before[key], key
    assert checked >= 15


def test_help_groups_commands_and_explains_one(api, fake_llm):
    s = api(fake_llm([]))
    text = s.dispatch("/help")
    for heading in ("Session", "Mode and role", "Files and changes", "Configuration"):
        assert re.search(rf"(?m)^{heading}", text), heading
    assert max(len(line) for line in text.splitlines()) <= 100
    one = s.dispatch("/help plan")
    assert "/plan [on|off|<goal>|" in one and "applies after the turn" in one
    with pytest.raises(ValueError, match="unknown command"):
        s.dispatch("/help nope")


# ---------------------------------------------------------------------------------------------
# Typed while a turn runs


def run_in_background(s, text: str) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def work() -> None:
        try:
            out["value"] = s.chat(text)
        except Exception as e:  # noqa: BLE001 - checked by the test
            out["error"] = e

    t = threading.Thread(target=work)
    t.start()
    deadline = time.monotonic() + 10
    while not s._core.is_busy() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert s._core.is_busy()
    return t, out


def test_switches_typed_mid_turn_apply_after_it(api, fake_llm, repo):
    server = fake_llm(
        [
            calls([("read", {"file_path": "calc.py"}, "r1")], delay=1.0),
            say("read it", delay=0.5),
            say("now planning"),
        ]
    )
    s = api(server, mode="auto-edit")
    t, out = run_in_background(s, "read calc.py")
    said = s.dispatch("/plan")
    assert "applies after this turn" in said
    assert status(s)["mode"] == "auto-edit"  # locked while the turn runs
    with pytest.raises(ValueError, match="expected on or off"):
        s.dispatch("/plan sideways")  # checked at once, not after the turn
    assert re.search(r"mode\s+auto-edit", s.dispatch("/status"))  # queries run at once
    assert "tokens" in s.dispatch("/cost")
    with pytest.raises(ValueError, match="while a turn is running"):
        s.dispatch("/compact")
    with pytest.raises(ValueError, match="unknown command"):
        s.dispatch("/nope")
    t.join(20)
    assert out.get("value") == "read it"
    assert server.stated("Permission mode", 1).startswith("auto-edit")  # the same turn
    assert status(s)["mode"] == "plan"
    s.chat("and now?")
    assert server.stated("Permission mode", 2).startswith("plan")
    assert all("/plan" not in server.user_text(i) for i in range(3))


def test_every_command_names_the_feature_that_registered_it(api, fake_llm):
    """The command table is the kernel's commands then the features' (docs/ARCHITECTURE.md):
    each command once, with who registered it — the kernel, a feature of the core crate, or a
    feature crate registered by the extension (yuyao-review) — and each one dispatches."""
    table = command_table()
    names = [c["name"] for c in table]
    assert len(names) == len(set(names))
    by_name = {c["name"]: c["feature"] for c in table}
    assert by_name["help"] == "kernel"
    # The session's own commands are a feature registered first, so /help keeps its order.
    assert by_name["config"] == by_name["compact"] == by_name["status"] == "session"
    # The commands over the kernel's stages are features of their own.
    assert by_name["undo"] == by_name["rewind"] == by_name["diff"] == "files"
    assert by_name["permissions"] == by_name["trust"] == by_name["sandbox"] == "permissions"
    assert by_name["hooks"] == "hooks"
    assert by_name["memory"] == by_name["remember"] == "memory"
    assert by_name["plan"] == "planning"
    assert by_name["agents"] == by_name["fork"] == "subagents"
    # A feature in a crate of its own: registered by the Python extension at import.
    assert by_name["review"] == by_name["security-review"] == "review"
    s = api(fake_llm([]))
    # It runs like any command (no git repository, no changes: nothing to review).
    assert "nothing to review" in s.dispatch("/review")
    assert "/review" in s.dispatch("/help") and "/review" in s.dispatch("/help review")
