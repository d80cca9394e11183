"""The automation and session surface (seed 002 §5.1, §5.2) in the TUI: `/btw`, `/queue followup` typed mid-turn, `/add-dir` in `/status`,
`/think` independent of the thinking display — the same core code as `dispatch`."""

from __future__ import annotations

import pytest
from fakellm import say
from test_tui import CTRL, CTRL_D, yuyao_term

CTRL_C = CTRL["c"]

pytestmark = pytest.mark.core


def test_tui_btw_queue_add_dir_and_think(fake_llm, env, repo, tmp_path):
    other = tmp_path / "shared-lib"
    other.mkdir()
    server = fake_llm(
        [
            say("ASIDE-ANSWER"),
            say("first answer " * 30, chunk_delay=0.05),
            say("FOLLOWUP-DONE"),
        ]
    )
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("/btw is calc.py tested?")
        term.wait_for(r"ASIDE-ANSWER")
        term.line(f"/add-dir {other}")
        term.wait_for(r"added .*shared-lib")
        term.line("/status")
        term.wait_for(r"added\s+.*shared-lib")
        term.line("/think high")
        term.line("tell me a long story")
        term.wait_for(r"first answer first answer")
        term.line("/queue followup now summarize")
        term.wait_for(r"FOLLOWUP-DONE", timeout=30)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    # The aside left no trace; the follow-up ran as its own turn after the first.
    assert "is calc.py tested" not in server.user_text(1)
    assert "ASIDE-ANSWER" not in str(server.messages(1))
    assert server.messages(2)[-1]["content"].endswith("now summarize")
    # /think changed the request only; the display setting stayed the default.
    assert server.body(1)["reasoning_effort"] == "high"


def test_tui_review_and_run(fake_llm, env, repo):
    from test_review_run import APP, BUGGY

    (repo / "calc.py").write_text(BUGGY)
    (repo / "app.py").write_text(APP)
    server = fake_llm([say("calc.py:2 — high — subtracts instead of adding\nFindings: 1")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("/review")
        term.wait_for(r"calc\.py:2 — high")
        term.line("/run")
        # An untrusted project's start command runs with the user's rights: asked first.
        term.wait_for(r"comes from this project")
        term.settle(0.3)
        term.send("y")
        term.wait_for(r"ready at http://127\.0\.0\.1:\d+", timeout=30)
        term.line("/tasks")
        term.wait_for(r"python3 app\.py")
        term.line("/tasks stop all")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert "+    return a - b" in server.user_text(0)
    assert (repo / "calc.py").read_text() == BUGGY


def test_tui_cd_outside_asks_first(fake_llm, env, repo, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    refused = tmp_path / "refused-place"
    refused.mkdir()
    term = yuyao_term(env(fake_llm([])), repo)
    try:
        term.wait_ready()
        term.line(f"/cd {refused}")
        term.wait_for(r"permission")
        term.send("n")
        term.wait_for(r"/cd refused")
        term.line(f"/cd {outside}")
        term.wait_for(r"elsewhere is outside the project")
        term.settle(0.3)
        term.send("y")
        term.wait_for(r"working directory: .*elsewhere")
        term.line("/status")
        term.wait_for(r"cwd\s+.*elsewhere")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_tui_at_path_completion_reaches_added_folders(fake_llm, env, repo, tmp_path):
    other = tmp_path / "shared-lib"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "zebra_helpers.py").write_text("x = 1\n")
    term = yuyao_term(env(fake_llm([])), repo)
    try:
        term.wait_ready()
        term.line(f"/add-dir {other}")
        term.wait_for(r"added .*shared-lib")
        term.settle(0.3)
        term.send("@zebra_h")
        term.wait_for(r"shared-lib/pkg/zebra_helpers\.py", screen_only=True)
        term.send(CTRL_C)  # clears the input
        term.settle(0.3)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
