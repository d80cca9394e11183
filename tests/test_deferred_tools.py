"""Deferred tool schemas and the result cap (DESIGN §4: a small first request, a bounded
result). The first request carries the core tools' schemas only; the other enabled tools are
listed in the system prompt and `tool-search` appends their schemas to the end of the tool
list, so every request still extends the previous one byte for byte but for that one change.
What was loaded comes back with a resumed session. A long output reaches the model as a head
and a tail of `tools.output_chars` characters, the whole of it in a spill file it can read.
"""

from __future__ import annotations

import json
import re

import pytest
from fakellm import call, deferred_names, durable, say

pytestmark = pytest.mark.core

# Sent whole from the first request: read, search, change, run (grep and glob too: a model
# that cannot see them searches with `bash grep`, which costs more).
CORE = {"bash", "read", "write", "edit", "grep", "glob"}


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


def dump(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def more_tools(server, i: int) -> list[str]:
    return deferred_names(server.body(i))


def test_first_request_carries_only_the_core_schemas_and_lists_the_rest(fake_llm, core):
    server = fake_llm([say("hi"), say("hi again")])
    core(server).chat("hello")
    names = server.schema_names(0)
    assert set(names[: len(CORE)]) == CORE and names[len(CORE) :] == ["tool-search"], names
    listed = more_tools(server, 0)
    assert {"todo", "ask-user", "bg-list", "multi-edit"} <= set(listed), listed
    assert not set(listed) & set(names), "a tool is either sent or listed, not both"
    small = len(dump(server.body(0)["tools"]))

    # Deferral off: every schema is sent and nothing is listed.
    off = fake_llm([say("hi")])
    s = core(off)
    s.dispatch("/config set tools.defer false")
    s.chat("hello")
    all_names = off.schema_names(0)
    assert set(listed) <= set(all_names) and "tool-search" not in all_names
    assert more_tools(off, 0) == []
    assert len(dump(off.body(0)["tools"])) > 3 * small


def test_loaded_schema_is_appended_and_each_request_extends_the_previous_one(fake_llm, core):
    server = fake_llm(
        [
            call("tool-search", names=["todo"]),
            call("todo", action="create", content="write the parser"),
            call("tool-search", names=["TodoWrite", "bash"]),
            say("done"),
        ]
    )
    core(server).chat("plan it")
    assert len(server.requests) == 4
    first = server.body(0)["tools"]
    loaded = server.body(1)["tools"]
    assert loaded[:-1] == first and loaded[-1]["function"]["name"] == "todo"
    assert "action" in loaded[-1]["function"]["parameters"]["properties"]
    assert "Loaded: todo(" in server.tool_result("call_0_0")
    # The tool ran from its loaded schema; loading it again (by its alias) is a no-op.
    assert "write the parser" in server.tool_result("call_1_0")
    again = server.tool_result("call_2_0")
    assert "Already available: todo, bash" in again and "Loaded" not in again
    for i in range(1, 4):
        prev, cur = server.body(i - 1), server.body(i)
        kept = durable(prev["messages"])  # less its one-request note, if any
        assert cur["messages"][: len(kept)] == kept, i
        if i != 1:
            assert cur["tools"] == prev["tools"], f"request {i} changed the tools"


def test_a_deferred_tool_called_without_loading_runs(fake_llm, core):
    server = fake_llm([call("todo", action="create", content="ship it"), say("ok")])
    core(server).chat("track it")
    result = server.tool_result("call_0_0")
    assert "ship it" in result and "unknown" not in result.lower(), result
    assert server.schema_names(1) == server.schema_names(0), "no load happened behind its back"


def test_a_request_for_a_disabled_or_unknown_tool_loads_nothing(fake_llm, core):
    server = fake_llm(
        [
            call("tool-search", names=["web-fetch", "bash", "no-such-tool", "../todo"]),
            call("web-fetch", url="http://127.0.0.1:9/x"),
            say("gave up"),
        ]
    )
    core(server, tools=["read", "edit", "todo", "declare-scope"]).chat("fetch it")
    assert server.schema_names(0) == ["read", "edit", "tool-search"]
    assert more_tools(server, 0) == ["declare-scope", "todo"]
    refused = server.tool_result("call_0_0")
    assert refused.startswith("Not loaded: web-fetch, bash, no-such-tool, ../todo"), refused
    assert "Tools you can load: declare-scope, todo." in refused
    assert server.schema_names(1) == server.schema_names(0), "nothing was loaded"
    assert "unknown or unavailable tool 'web-fetch'" in server.tool_result("call_1_0")


def test_a_resumed_session_keeps_the_tools_it_loaded(fake_llm, yuyao, env):
    server = fake_llm([call("tool-search", names=["todo"]), say("loaded"), say("resumed")])
    first = yuyao("-p", "load the tracker", "--mode", "yolo", env=env(server))
    assert first.returncode == 0, first.stderr
    again = yuyao("-p", "go on", "-c", "--mode", "yolo", env=env(server))
    assert again.returncode == 0, again.stderr
    assert server.schema_names(1)[-1] == "todo"
    assert server.schema_names(2) == server.schema_names(1), "the resumed session offers todo"
    fresh = yuyao("-p", "new session", "--mode", "yolo", env=env(fake_llm([say("new")])))
    assert fresh.returncode == 0, fresh.stderr


def test_long_output_shows_head_and_tail_and_the_spill_file_reads_back(fake_llm, core):
    lines = 4000
    cmd = f"seq -f 'row %05g of the long output' 1 {lines}"
    server = fake_llm([call("bash", command=cmd), call("bash", command=cmd), say("seen")])
    s = core(server)
    s.chat("print it")
    shown = server.tool_result("call_0_0")
    assert len(shown) <= 10_000, len(shown)
    assert shown.startswith("row 00001 of the long output\n")
    assert f"row {lines:05d} of the long output" in shown
    assert "row 02000 of" not in shown, "the middle is left out"
    path = re.search(r"is in (\S+?);", shown).group(1)

    # The model pages the spill file with read.
    reader = fake_llm([call("read", file_path=path, offset=2000, limit=2), say("ok")])
    core(reader).chat("read the middle")
    assert "row 02000 of the long output" in reader.tool_result("call_0_0")

    # A larger cap (set live) shows the whole output: the cap is what cut it.
    wide = fake_llm([call("bash", command=cmd), say("seen")])
    s2 = core(wide)
    s2.dispatch("/config set tools.output_chars 200000")
    s2.chat("print it")
    whole = wide.tool_result("call_0_0")
    assert "row 02000 of the long output" in whole and "truncated" not in whole


def test_a_tool_that_can_work_only_later_is_sent_whole_when_it_can(fake_llm, core):
    """The prompt, fixed with the conversation, could not list web-fetch while the network
    was off: once it is on, its schema comes in the tools, not behind tool-search."""
    server = fake_llm([say("off"), say("on")])
    s = core(server, network="off")
    s.chat("hello")
    assert "web-fetch" not in server.tool_names(0)
    s.dispatch("/config set network on")
    s.chat("again")
    assert "web-fetch" in server.schema_names(1) and "web-fetch" not in server.schema_names(0)
    assert "web-fetch" not in more_tools(server, 1)


def test_a_session_limited_to_a_few_tools_sends_them_whole(fake_llm, core):
    server = fake_llm([say("hi")])
    core(server, tools=["read", "grep"]).chat("hello")
    assert server.schema_names(0) == ["read", "grep"]
    assert more_tools(server, 0) == []
