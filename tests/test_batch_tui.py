"""`/batch` in the TUI (seed 002 §5.2): the proposed units are shown for approval, an edit (drop a
unit) is applied, and the run's per-unit account and merge report are drawn."""

from __future__ import annotations

import json

import pytest
from fakellm import call, say
from test_tui import CTRL_D, yuyao_term

pytestmark = pytest.mark.core


def test_batch_units_are_approved_in_the_tui_and_merged(fake_llm, env, repo):
    units = {
        "units": [
            {"title": f"unit {u}", "prompt": f"UNIT-{u}", "files": [f"{u.lower()}.txt"]}
            for u in "ABC"
        ]
    }

    def respond(body, i):
        system = str(body["messages"][0].get("content"))
        if system.startswith("You split a change"):
            return say(json.dumps(units))
        text = json.dumps(body["messages"])
        u = next(x for x in "ABC" if f"UNIT-{x}" in text)
        if not [m for m in body["messages"] if m["role"] == "tool"]:
            return call("write", file_path=f"{u.lower()}.txt", content=u)
        return say("done")

    server = fake_llm(respond)
    term = yuyao_term(env(server), repo, "--mode", "yolo")
    try:
        term.wait_ready()
        term.line("/batch three files")
        term.wait_for(r"Run these units in parallel")
        term.wait_for(r"2\. unit B — files: b\.txt")
        term.line("drop 2")
        term.wait_for(r"Run all 2 units")
        term.line("1")
        term.wait_for(r"batch: 2 units · 2 merged · 0 not merged")
        assert (repo / "a.txt").read_text() == "A" and (repo / "c.txt").read_text() == "C"
        assert not (repo / "b.txt").exists()
        assert "mini" not in term.transcript().lower()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
