"""Session surface (seed 002 §5.1, §5.2): `/add-dir`, `/cd`, `/btw` (`/side`) and `/queue`
(steer|followup|collect|interrupt), through agent_api `dispatch` (the TUI runs the same code)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core


def all_text(server, i):
    return json.dumps(server.messages(i))


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """A folder outside the project and outside the temp dir (which tools may always write:
    TMPDIR is moved beside it for this test)."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    other = tmp_path / "other"
    other.mkdir()
    return other


# ---------------------------------------------------------------------------------------------
# /btw


def test_btw_answers_and_leaves_no_trace_in_the_next_request(fake_llm, api):
    server = fake_llm([say("first"), say("PURPLE-ANSWER"), say("second")])
    session = api(server)
    session.chat("hello")
    answer = session.dispatch("/btw what colour is the sky on mars?")
    assert answer == "PURPLE-ANSWER"
    assert "mars" in all_text(server, 1)  # the aside saw the question...
    assert server.body(1).get("tools") in (None, [])  # ...without tools
    session.chat("next")
    assert "mars" not in all_text(server, 2) and "PURPLE-ANSWER" not in all_text(server, 2)
    assert "/side" in session.dispatch("/help btw")
    assert session.dispatch("/side and again?") == "(script exhausted)"


# ---------------------------------------------------------------------------------------------
# /add-dir and /cd


def test_add_dir_makes_an_outside_file_editable(fake_llm, api, outside):
    other = outside
    target = other / "lib.txt"
    target.write_text("old\n")
    server = fake_llm(
        [
            call("read", file_path=str(target)),
            call("write", file_path=str(target), content="refused\n"),
            say("could not"),
            say("Nothing changed: lib.txt is outside the workspace."),  # after the check
            call("write", file_path=str(target), content="new\n"),
            say("done"),
        ]
    )
    session = api(server, mode="yolo")
    session.chat("edit it")
    assert target.read_text() == "old\n"  # outside the project: refused
    assert "outside the workspace" in server.tool_result("call_1_0")
    out = session.dispatch(f"/add-dir {other}")
    assert "added" in out
    assert str(other) in session.dispatch("/status")
    session.chat("edit it now")
    assert target.read_text() == "new\n"
    assert str(other) in server.user_text(-1)  # the model was told


@pytest.mark.parametrize("where", ["/", "~", "~/..", "yuyao-home", "~/.ssh"])
def test_add_dir_refuses_too_wide_or_own_folders(
    fake_llm, api, where, yuyao_home, monkeypatch, tmp_path
):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    session = api(fake_llm([]))
    monkeypatch.setenv("HOME", str(home))
    path = str(yuyao_home) if where == "yuyao-home" else where
    with pytest.raises(ValueError, match="refused"):
        session.dispatch(f"/add-dir {path}")


def test_cd_moves_bash_and_relative_paths_and_reads_agents_md(fake_llm, api, repo):
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "AGENTS.md").write_text("Use tabs in pkg.\n")
    server = fake_llm(
        [call("bash", command="pwd"), call("write", file_path="rel.txt", content="x\n"), say("ok")]
    )
    session = api(server, mode="yolo")
    assert "AGENTS.md" in session.dispatch("/cd pkg")
    session.chat("where am I?")
    assert server.tool_result("call_0_0").splitlines()[0].endswith("/pkg")
    assert (sub / "rel.txt").exists()
    assert "Use tabs in pkg." in server.user_text(0)


def test_cd_outside_is_refused_headless(fake_llm, api, outside):
    session = api(fake_llm([]))
    with pytest.raises(ValueError, match="outside the project"):
        session.dispatch(f"/cd {outside}")
    session.dispatch(f"/add-dir {outside}")
    assert str(outside) in session.dispatch(f"/cd {outside}")


def test_no_tool_can_reach_add_dir(fake_llm, api, outside):
    """A hostile model has no way to run a slash command: /add-dir in a bash call is a
    command-not-found, and the folder stays out of reach."""
    other = outside
    server = fake_llm(
        [
            call("bash", command=f"/add-dir {other}"),
            call("write", file_path=str(other / "x.txt"), content="x"),
            say("tried"),
        ]
    )
    session = api(server, mode="yolo")
    session.chat("go")
    assert not (other / "x.txt").exists()
    assert "added" not in session.dispatch("/status")


# ---------------------------------------------------------------------------------------------
# /queue


def run_in_thread(session, text):
    out = {}

    def work():
        out["answer"] = session.chat(text)

    t = threading.Thread(target=work)
    t.start()
    deadline = time.monotonic() + 10
    while not session._core.is_busy() and time.monotonic() < deadline:
        time.sleep(0.02)
    return t, out


def test_queue_steer_reaches_the_next_call(fake_llm, api, repo):
    server = fake_llm(
        [{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 1"}}]}, say("done")]
    )
    session = api(server, mode="yolo")
    t, _ = run_in_thread(session, "work")
    assert "next call" in session.dispatch("/queue steer use tabs please")
    t.join(30)
    assert "use tabs please" in server.user_text(1)


def test_queue_followup_runs_as_the_next_turn(fake_llm, api):
    server = fake_llm([say("first", delay=1.0), say("second")])
    session = api(server)
    t, out = run_in_thread(session, "one")
    assert "next turn" in session.dispatch("/queue followup now the docs")
    t.join(30)
    assert len(server.requests) == 2
    assert server.messages(1)[-1]["content"] == "now the docs"
    assert out["answer"] == "second"


def test_queue_collect_sends_one_turn(fake_llm, api):
    server = fake_llm([say("first", delay=1.0), say("both")])
    session = api(server)
    t, _ = run_in_thread(session, "one")
    session.dispatch("/queue collect alpha")
    session.dispatch("/queue collect beta")
    assert "2 follow" not in session.dispatch("/queue")
    t.join(30)
    assert len(server.requests) == 2
    last = server.messages(1)[-1]["content"]
    assert "alpha" in last and "beta" in last


def test_queue_interrupt_stops_and_sends(fake_llm, api):
    server = fake_llm([say("slow", delay=5.0), say("redirected")])
    session = api(server)
    start = time.monotonic()
    t, out = run_in_thread(session, "one")
    time.sleep(0.3)
    session.dispatch("/queue interrupt stop, do this instead")
    t.join(30)
    assert time.monotonic() - start < 4.5
    assert out["answer"] == "redirected"
    # The interrupted prompt and the new text reach the model together (one user message).
    assert server.messages(-1)[-1]["content"].endswith("stop, do this instead")


def test_queue_usage_errors(fake_llm, api):
    session = api(fake_llm([]))
    with pytest.raises(ValueError):
        session.dispatch("/queue sideways x")
    with pytest.raises(ValueError):
        session.dispatch("/queue steer")
