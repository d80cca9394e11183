"""Seed 001's remaining planning controls: "clear context and implement", the plan lifecycle
events (in the trace and the event stream), `/plan show` from the file, one repair round, a
turn limit the TUI offers to lift, Tab on an empty composer, Esc on a question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import call, calls, say
from test_planning import PLAN, plan_files, proposed
from test_tui import CTRL_D, ESC, yuyao_term

pytestmark = pytest.mark.core


def lifecycle(repo: Path) -> list[dict]:
    """The plan lifecycle events of the session's trace, in order."""
    out = []
    for path in sorted((repo / ".trajectory").rglob("*")):
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("kind") == "plan_lifecycle":
                out.append(entry)
    return out


def kinds(events: list[dict]) -> list[str]:
    return [str(e.get("type")) for e in events]


def test_clear_context_and_implement_starts_a_fresh_thread(fake_llm, api, repo):
    server = fake_llm(
        [
            proposed(before="RESEARCH-MARKER: calc.py has add only.\n"),
            call("write", file_path=str(repo / "sub.txt"), content="sub\n"),
            say("Implemented: sub.txt written."),
        ]
    )
    s = api(server, mode="ask")
    s.dispatch("/plan add sub")
    assert s.plan["awaiting_approval"]
    out = s.dispatch("/plan approve --fresh auto-edit")
    assert out == "Implemented: sub.txt written."
    assert (repo / "sub.txt").exists()
    implementation = json.dumps(server.messages(1))
    # A fresh thread: the research conversation is gone, the approved plan is pinned.
    assert "RESEARCH-MARKER" not in implementation
    assert "Add sub(a, b) next to add" in implementation
    assert "Permission mode: auto-edit" in implementation
    # The task tracker survived the reset.
    assert [t["content"] for t in s.tasks][:1] == ["Add sub(a, b) next to add"], s.tasks
    events = lifecycle(repo)
    assert kinds(events)[:3] == [
        "plan_approval_requested",
        "plan_approval_resolved",
        "context_reset",
    ], events
    assert events[1]["decision"] == "fresh_context" and events[1]["automatic"] is False
    reset = events[2]
    assert reset["plan_preserved"] is True and reset["trigger"] == "plan_approval"
    assert reset["previous_context_percent"] > 0


def test_plain_approval_keeps_the_conversation(fake_llm, api, repo):
    server = fake_llm(
        [
            proposed(before="RESEARCH-MARKER\n"),
            call("write", file_path=str(repo / "sub.txt"), content="sub\n"),
            say("Implemented."),
        ]
    )
    s = api(server, mode="ask")
    s.dispatch("/plan add sub")
    s.dispatch("/plan approve auto-edit")
    assert "RESEARCH-MARKER" in json.dumps(server.messages(1))
    events = lifecycle(repo)
    assert "context_reset" not in kinds(events)
    assert events[1]["decision"] == "execute"


def test_cancel_is_a_resolved_decision(fake_llm, api, repo):
    server = fake_llm([proposed()])
    s = api(server, mode="ask")
    s.dispatch("/plan add sub")
    s.dispatch("/plan cancel")
    assert kinds(lifecycle(repo)) == ["plan_approval_requested", "plan_approval_resolved"]
    assert lifecycle(repo)[1]["decision"] == "cancel"


def test_plan_show_reads_the_file_on_disk(fake_llm, api, repo):
    server = fake_llm([proposed()])
    s = api(server, mode="ask")
    s.dispatch("/plan add sub")
    [path] = plan_files(repo)
    path.write_text(path.read_text() + "- EDITED-ON-DISK\n")
    shown = s.dispatch("/plan show")
    assert str(path) in shown and "EDITED-ON-DISK" in shown


def test_an_invalid_plan_gets_one_repair_round(fake_llm, api, repo):
    bad = PLAN.replace("## Summary", "## Intro")
    server = fake_llm([proposed(bad), proposed(bad), proposed(bad), say("unused")])
    s = api(server, mode="ask")
    s.dispatch("/plan")
    s.chat("add sub")
    assert len(server.requests) == 2, "one repair request, not two"
    assert "still invalid after 1 repair" in (s.last_turn["error"] or ""), s.last_turn
    assert plan_files(repo) == []


def test_the_tui_offers_to_lift_a_turn_limit(fake_llm, env, repo):
    server = fake_llm(
        [
            calls([("read", {"file_path": "calc.py"})], content="One."),
            calls([("read", {"file_path": "README.md"})], content="Two."),
            calls([("glob", {"pattern": "*.py"})], content="Three."),
            say("Looked at everything: calc.py adds."),
        ]
    )
    term = yuyao_term(env(server), repo, "--max-steps", "2")
    try:
        term.wait_ready()
        term.line("what is in this repo?")
        term.wait_for(r"reached its limit of 2 model calls")
        term.wait_for(r"grant 10 more")
        term.line("1")
        term.wait_for(r"Looked at everything: calc\.py adds\.")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert len(server.requests) == 4


def test_print_mode_stops_at_the_limit_as_before(fake_llm, yuyao, env):
    server = fake_llm(
        [
            calls([("read", {"file_path": "calc.py"})], content="One."),
            calls([("read", {"file_path": "README.md"})], content="Two."),
            say("unused"),
        ]
    )
    proc = yuyao("-p", "what is in this repo?", "--max-steps", "2", env=env(server))
    assert len(server.requests) == 2
    assert "step limit reached" in proc.stderr, proc.stderr


def test_tab_on_an_empty_composer_enters_and_leaves_planning(fake_llm, env, repo):
    server = fake_llm([say("unused")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.send("\t")
        term.wait_for(r"(?m)^ plan ·", screen_only=True)
        term.send("\t")
        term.wait_for(r"(?m)^ ask ·", screen_only=True)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_esc_cancels_an_ask_user_question(fake_llm, env, repo):
    question = {"question": "Which database?", "options": ["sqlite", "postgres"]}
    server = fake_llm(
        [calls([("ask-user", question, "q")]), say("Understood: no database chosen.")]
    )
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("which database should the cache use?")
        term.wait_for(r"2\. postgres")
        term.send(ESC)
        term.wait_for(r"Understood: no database chosen\.")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert "dismissed" in (server.tool_result("q") or "")


def test_stream_json_carries_the_plan_lifecycle(fake_llm, yuyao, env, repo):
    server = fake_llm([proposed()])
    proc = yuyao(
        "-p", "add sub", "--mode", "plan", "--output-format", "stream-json", "--verbose",
        env=env(server),
    )  # fmt: skip
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    subtypes = [x.get("subtype") for x in lines if x.get("type") == "system"]
    assert "plan.delta" in subtypes, subtypes
    assert "plan.approval.requested" in subtypes, subtypes
    delta = "".join(x["text"] for x in lines if x.get("subtype") == "plan.delta")
    assert "# Add a subtract function" in delta
