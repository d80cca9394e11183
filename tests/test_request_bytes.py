"""Bytes a provider's prompt cache cannot reuse (DESIGN §4, benches/bench_requests.py): the
tools a request advertises are the ones that can work in this session, a write's result names
the file as the model knows it, and a stub batch sends again only the new stubs and the latest
step's result — not the ten most recent whole results.
"""

from __future__ import annotations

import json

import pytest
from fakellm import call, offered_names, say

pytestmark = pytest.mark.core


class Deny:
    def event(self, event_json: str) -> None:
        pass

    def request(self, request_json: str) -> str:
        return "deny"


@pytest.fixture
def core(use_env, repo):
    """``core(server, **options)`` -> a core Session in ``repo`` (yolo, not streaming)."""
    from yuyao import _core

    opened = []

    def open_core(server, **options):
        use_env(server)
        opts = {"cwd": str(repo), "mode": "yolo", "stream": False, **options}
        opened.append(_core.Session(json.dumps(opts), Deny()))
        return opened[-1]

    yield open_core
    for s in opened:
        s.close()


def tool_names(body: dict) -> list[str]:
    """Schemas sent and deferred tools listed: every tool the request tells the model of."""
    return offered_names(body)


def test_tools_that_cannot_work_are_not_advertised_until_they_can(fake_llm, core):
    server = fake_llm(
        [
            call("web-fetch", url="http://127.0.0.1:9/x"),
            say("network is off"),
            say("now on"),
        ]
    )
    s = core(server, network="off")
    s.dispatch("/config set browser.executable /nonexistent/yuyao-test-chromium")
    s.chat("fetch it")
    first = server.body(0)
    names = tool_names(first)
    # No network, no search provider, no Chromium: none of the three can work.
    for hidden in ("web-fetch", "web-search", "browser"):
        assert hidden not in names
        assert hidden not in first["messages"][0]["content"]  # nor in "More tools"
    assert {"bash", "read", "write", "edit", "grep", "glob"} <= set(names)
    # A call to one anyway gets the usual refusal, with what would allow it.
    refusal = server.tool_result("call_0_0")
    assert "network access is off" in refusal and "--network on" in refusal
    # Turned on: the tools appear from the next request (search with a provider set).
    s.dispatch("/config set network on")
    s.dispatch("/config set search.provider brave")
    s.chat("again")
    names = tool_names(server.body(-1))
    assert "web-fetch" in names and "web-search" in names and "browser" not in names


def test_a_write_result_names_the_file_relative_to_the_working_directory(fake_llm, core, repo):
    server = fake_llm([call("write", file_path="out/a.txt", content="one\ntwo\n"), say("ok")])
    core(server).chat("write it")
    assert (repo / "out/a.txt").read_text() == "one\ntwo\n"
    result = server.tool_result("call_0_0")
    assert result == "Created out/a.txt (2 lines, 8 bytes)", result
    assert str(repo) not in result


def rendered(body: dict) -> bytes:
    """The request as a prefix cache sees it (as benches/bench_requests.py renders it)."""
    dump = lambda v: json.dumps(v, sort_keys=True, separators=(",", ":"))  # noqa: E731
    return (dump(body["tools"]) + "".join(dump(m) for m in body["messages"])).encode()


def test_a_stub_batch_resends_only_the_new_stubs_and_the_latest_result(fake_llm, core, repo):
    steps, size = 30, 14_000
    for i in range(steps):
        (repo / f"l{i:02d}.txt").write_text(
            "".join(f"{i:02d} row {n:05d} {'y' * 40}\n" for n in range(size // 50))
        )
    # Each call comes with its one-line intent, as a model following the prompt writes it (a
    # batch without one adds a reminder note per step, which is not what this test measures).
    server = fake_llm(
        [
            *(
                {**call("bash", command=f"cat l{i:02d}.txt"), "content": f"Printing file {i}."}
                for i in range(steps)
            ),
            say("done"),
        ]
    )
    s = core(server)
    # Results stay whole here (the default cap, 10 000 characters, would cut them): this test
    # measures what a batch sends again, not the cap.
    s.dispatch("/config set tools.output_chars 20000")
    # Thirty reads with no change between them: past seed 001's preview budget, which is
    # tests/test_preview_budget.py's subject, not this test's.
    s.dispatch("/config set tools.preview_budget_kib 0")
    s.chat("print the files one by one")
    bodies = [r["body"] for r in server.requests]
    assert len(bodies) == steps + 1
    batches = 0
    prev = b""
    for k, body in enumerate(bodies):
        cur = rendered(body)
        same = next(
            (i for i, (a, b) in enumerate(zip(prev, cur)) if a != b), min(len(prev), len(cur))
        )
        if same < len(prev):  # the request rewrote part of the previous one: a stub batch
            batches += 1
            resent = len(cur) - same
            stubs = sum(
                "shortened to save context" in (m.get("content") or "") for m in body["messages"]
            )
            assert stubs >= 8, k
            # Before: the ten most recent whole results (~140 KB) were sent again here.
            assert resent < size + 1_000 + stubs * 600, (k, resent)
            whole = [
                m for m in body["messages"] if m["role"] == "tool" and len(m["content"]) > 13_000
            ]
            assert len(whole) == 1, (k, len(whole))
        prev = cur
    assert batches >= 1
