"""A paste bigger than the context window is handled, not looped (seed 002 §4): refused before
any call with its size and what to do, nothing sent, the session still usable; a provider's own
"too long" answer is compacted once, never in a loop."""

from __future__ import annotations

import pytest
from fakellm import error, say

pytestmark = pytest.mark.core

# ~1.2 MB of text: about 310 k tokens, far past the default 128 k window.
GIANT = ("def f(x):\n    return x * 2  # a line of pasted code\n" * 24_000)[:1_250_000]
OVERFLOW = (
    "This model's maximum context length is 128000 tokens. However, your messages resulted "
    "in 310000 tokens. Please reduce the length of the messages."
)


def piped(tmp_path, text: str):
    """The task on stdin (a paste too long for one argument)."""
    path = tmp_path / "paste.txt"
    path.write_text(text)
    return path.open()


def test_a_prompt_past_the_window_is_refused_before_any_call(fake_llm, yuyao, env, tmp_path):
    server = fake_llm([say("unused")])
    with piped(tmp_path, GIANT) as stdin:
        proc = yuyao("-p", env=env(server), stdin=stdin)
    assert proc.returncode == 1
    assert "cannot be sent" in proc.stderr and "1.2 MB" in proc.stderr, proc.stderr[-800:]
    assert "context window is 128 k tokens" in proc.stderr
    assert "mention its path" in proc.stderr  # what to do instead
    assert server.requests == []


def test_the_session_stays_usable_after_a_refused_paste(fake_llm, api):
    server = fake_llm([say("Here to help.")])
    session = api(server)
    with pytest.raises(RuntimeError, match="cannot be sent"):
        session.chat(GIANT)
    assert session.chat("hello") == "Here to help."
    # The refused paste never entered the conversation.
    assert len(server.requests) == 1
    assert "a line of pasted code" not in str(server.body(0)["messages"])
    assert all("a line of pasted code" not in str(m) for m in session.messages)


def test_a_large_prompt_that_fits_is_sent_with_a_warning(fake_llm, yuyao, env, tmp_path):
    server = fake_llm([say("Read it.")])
    # ~90 k tokens into a 128 k window: sent, with a warning about its share.
    with piped(tmp_path, GIANT[:360_000]) as stdin:
        proc = yuyao("-p", env=env(server), stdin=stdin)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert "of the 128 k-token context window" in proc.stderr, proc.stderr[-500:]
    assert len(server.requests) == 1


def test_a_provider_overflow_is_compacted_once_never_looped(fake_llm, api):
    server = fake_llm(
        [error(400, OVERFLOW), error(400, OVERFLOW), error(400, OVERFLOW), say("Still here.")]
    )
    session = api(server)
    with pytest.raises(RuntimeError, match="still does not fit"):
        session.chat("summarize the project")
    # One call, one retry after the (empty) compaction — not a loop of retries.
    assert len(server.requests) == 2
    # The next prompt goes through.
    server_requests_before = len(server.requests)
    assert session.chat("hello") != ""
    assert len(server.requests) > server_requests_before
