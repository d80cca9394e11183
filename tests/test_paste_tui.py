"""A large paste collapses in the composer and the transcript to `[pasted text #1: N lines,
K tokens]`; the model receives the whole text; Alt+V expands it in the composer; a paste past
half the window is warned about when it arrives (the core refuses one that cannot fit)."""

from __future__ import annotations

import pytest
from fakellm import say
from test_tui import CTRL_D, ENTER, yuyao_term

pytestmark = pytest.mark.core

START, END = "\x1b[200~", "\x1b[201~"


def test_a_large_paste_collapses_and_reaches_the_model_whole(fake_llm, env, repo):
    pasted = "".join(f"line {i} of the log: PASTE-MARK\n" for i in range(300))
    server = fake_llm([say("Read the log.")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.send("summarize this: ")
        term.send(START + pasted + END)
        term.wait_for(r"\[pasted text #1: 300 lines, [\d ]+ tokens\]", screen_only=True)
        term.send(ENTER)
        term.wait_for(r"Read the log\.")
        assert term.transcript().count("PASTE-MARK") == 0, "the transcript shows it collapsed"
        sent = server.user_text(0)
        assert sent.count("PASTE-MARK") == 300 and "summarize this: line 0 of" in sent
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_alt_v_expands_a_collapsed_paste(fake_llm, env, repo):
    pasted = "".join(f"row {i}\n" for i in range(40))
    server = fake_llm([say("ok")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.send(START + pasted + END)
        term.wait_for(r"\[pasted text #1: 40 lines", screen_only=True)
        term.send("\x1bv")
        term.wait_for(r"row 39", screen_only=True)
        term.send(CTRL_D * 2)
    finally:
        term.close()


def test_a_paste_past_half_the_window_is_warned_about(fake_llm, env, repo, yuyao_home):
    (yuyao_home / "config.toml").write_text("[model]\ncontext_window = 4000\n")
    pasted = "x" * 9000 + "\n"
    server = fake_llm([say("unused")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.send(START + pasted + END)
        term.wait_for(r"this paste is about 2 25\d tokens, 56% of the 4 000-token context window")
        term.send(CTRL_D * 2)
    finally:
        term.close()
