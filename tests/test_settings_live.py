"""Accepted means effective (spec §8): every known configuration key, set while a session runs,
changes what that session does — or says when it will (next session, not in this build).

The core's table of keys (`_core.config_keys_json()`) drives the parametrized test: a key added
to the table without an entry in EFFECTS here fails `test_every_known_key_has_an_effect_test`.
"""

from __future__ import annotations

import inspect
import json
import sys
import time

import pytest
from conftest import git
from fakellm import Events, call, calls, error, say
from test_lsp import effect_lsp_diagnostics_timeout, effect_lsp_enabled

pytestmark = pytest.mark.core

PRICES = json.dumps({"input_cost_per_token": 0.001, "output_cost_per_token": 0.01})


def known_keys() -> list[dict]:
    from yuyao import _core

    return json.loads(_core.config_keys_json())


@pytest.fixture
def live(use_env, repo):
    """``live(server, **options)`` -> (core Session in yolo mode, Events). A first turn has
    already run, so whatever is set next is set in a live session."""
    from yuyao import _core

    opened = []

    def open_live(server, first_turn=True, **options):
        use_env(server, **options.pop("env", {}))
        events = Events()
        opts = {"cwd": str(repo), "mode": "yolo", "stream": False, **options}
        s = _core.Session(json.dumps(opts), events)
        opened.append(s)
        if first_turn:
            s.chat("warm up")
        return s, events

    yield open_live
    for s in opened:
        s.close()


def status(s) -> dict:
    return json.loads(s.status_json())


def set_key(s, key: str, value: str) -> str:
    return s.dispatch(f"/config set {key} {value}")


# ---------------------------------------------------------------------------------------------
# One effect test per key. Each gets (server factory, live session opener, helpers) and sets its
# key after a first turn.


def effect_model_name(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    server.expect_model("other-model")
    set_key(s, "model.name", "other-model")
    s.chat("again")
    assert server.body(1)["model"] == "other-model"


def _compaction_happened(server) -> bool:
    return any(
        server.system_prompt(r["index"]).startswith("You summarize") for r in server.requests
    )


def effect_context_window(fake_llm, live, **_):
    # one, the memory flush before compaction, the summary, two
    server = fake_llm([say("one"), say("NONE"), say("the summary"), say("two")])
    s, _ = live(server)
    set_key(s, "model.context_window", "100")
    s.chat("again")
    assert _compaction_happened(server), "a 100-token window compacts before the next call"


def effect_compaction_threshold(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two"), say("NONE"), say("the summary"), say("three")])
    s, _ = live(server)
    s.chat("more")
    assert not _compaction_happened(server)
    set_key(s, "compaction.threshold", "0.001")
    s.chat("again")
    assert _compaction_happened(server)


def effect_max_output_tokens(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "model.max_output_tokens", "321")
    s.chat("again")
    assert server.body(1)["max_tokens"] == 321


def _cost_after(fake_llm, live, settings: dict, usage: dict) -> float:
    server = fake_llm([say("one", usage={"prompt_tokens": 1, "completion_tokens": 1}),
                       say("two", usage=usage)])  # fmt: skip
    s, _ = live(server)
    before = status(s)["cost_usd"]
    for key, value in settings.items():
        set_key(s, key, value)
    s.chat("again")
    return status(s)["cost_usd"] - before


def effect_input_cost(fake_llm, live, **_):
    cost = _cost_after(
        fake_llm, live, {"model.input_cost_per_token": "0.001"},
        {"prompt_tokens": 1000, "completion_tokens": 10},
    )  # fmt: skip
    assert cost == pytest.approx(1.0)


def effect_output_cost(fake_llm, live, **_):
    cost = _cost_after(
        fake_llm, live, {"model.output_cost_per_token": "0.01"},
        {"prompt_tokens": 1000, "completion_tokens": 10},
    )  # fmt: skip
    assert cost == pytest.approx(0.1)


def effect_cache_read_cost(fake_llm, live, **_):
    cost = _cost_after(
        fake_llm, live,
        {"model.input_cost_per_token": "0.001", "model.cache_read_input_token_cost": "0.0001"},
        {"prompt_tokens": 1000, "completion_tokens": 0, "cached_tokens": 1000},
    )  # fmt: skip
    assert cost == pytest.approx(0.1)


def effect_cache_creation_cost(fake_llm, live, **_):
    cost = _cost_after(
        fake_llm, live,
        {"model.input_cost_per_token": "0.001",
         "model.cache_creation_input_token_cost": "0.002"},
        {"prompt_tokens": 1000, "completion_tokens": 0, "cache_creation_input_tokens": 1000},
    )  # fmt: skip
    assert cost == pytest.approx(2.0)


def effect_idle_timeout(fake_llm, live, yuyao_home, **_):
    (yuyao_home / "config.toml").write_text("[model]\nmax_retries = 0\n")
    server = fake_llm([say("one"), say("never whole", stall=8)])
    s, _ = live(server)
    set_key(s, "model.idle_timeout_s", "1")
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="idle timeout"):
        s.chat("again")
    assert time.monotonic() - start < 5


def effect_max_retries(fake_llm, live, **_):
    server = fake_llm([say("one"), error(500), say("a retry would get this")])
    s, _ = live(server)
    set_key(s, "model.max_retries", "0")
    with pytest.raises(RuntimeError, match="500"):
        s.chat("again")
    assert len(server.requests) == 2, "no retry"


def effect_mode(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "mode", "plan")
    s.chat("again")
    assert server.stated("Permission mode", 1).startswith("plan")


def effect_role(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "role", "debug")
    s.chat("again")
    assert server.stated("Role", 1).startswith("debug")


def effect_sandbox(fake_llm, live, repo, **_):
    server = fake_llm([say("one"), call("write", file_path="new.txt", content="x"), say("ok")])
    s, _ = live(server)
    set_key(s, "sandbox", "read-only")
    s.chat("write it")
    assert not (repo / "new.txt").exists()
    assert "read-only" in server.tool_result("call_1_0")


def effect_network(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    assert server.stated("Network for tools", 0) == "off"
    set_key(s, "network", "on")
    s.chat("again")
    assert server.stated("Network for tools", 1) == "on"


def effect_thinking(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "thinking", "high")
    s.chat("again")
    assert server.body(1)["reasoning_effort"] == "high"


def effect_thinking_param(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server, thinking="high")
    assert server.body(0)["reasoning_effort"] == "high"
    set_key(s, "model.thinking_param", "thinking_budget")
    s.chat("again")
    assert "reasoning_effort" not in server.body(1)
    assert server.body(1)["thinking"]["budget_tokens"] > 0


def effect_response_format(fake_llm, live, yuyao_home, **_):
    schema = yuyao_home.parent / "schema.json"
    schema.write_text('{"type": "object"}')
    server = fake_llm([say("{}"), say("{}")])
    s, _ = live(server, json_schema=str(schema))
    assert server.body(0)["response_format"]["type"] == "json_schema"
    set_key(s, "model.response_format", "instruction")
    s.chat("again")
    assert "response_format" not in server.body(1)


def effect_auto_commit(fake_llm, live, repo, **_):
    server = fake_llm(
        [say("one"), call("write", file_path=str(repo / "n.txt"), content="n\n"), say("ok")]
    )
    s, _ = live(server)
    set_key(s, "git.auto_commit", "true")
    s.chat("write n.txt")
    assert "n.txt" in git(repo, "show", "--name-only", "--format=", "HEAD")


def effect_architect_model(key: str):
    def check(fake_llm, live, **_):
        server = fake_llm([say("one"), say("1. plan"), say("edited")], model=None)
        s, _ = live(server)
        set_key(s, "role", "architect")
        set_key(s, key, "litellm_proxy/other-model")
        s.chat("change it")
        models = [server.body(i)["model"] for i in (1, 2)]
        want = 0 if key == "architect.model" else 1
        assert models[want] == "other-model" and models[1 - want] != "other-model", models

    return check


def effect_curiosity(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "curiosity", "high")
    s.chat("again")
    assert "less than 95% sure" in server.stated("Asking", 1)


def effect_ask_require_options(fake_llm, live, **_):
    open_question = call("ask-user", question="What now?")
    server = fake_llm([say("one"), open_question, say("two")])
    s, _ = live(server)
    set_key(s, "ask_user.require_options", "false")
    s.chat("again")
    # Accepted: put to the handler (which answers "deny") instead of sent back.
    assert list(server.tool_results(2).values()) == ["The user answered: deny"]


def effect_ask_reuse_answers(fake_llm, live, **_):
    q = {"question": "Which db?", "options": ["sqlite", "postgres"]}
    server = fake_llm([say("one"), call("ask-user", **q), call("ask-user", **q), say("two")])
    s, _ = live(server)
    set_key(s, "ask_user.reuse_answers", "false")
    s.chat("again")
    results = list(server.tool_results(3).values())
    assert results == ["The user answered: deny", "The user answered: deny"], results


def effect_scope_guard(fake_llm, live, repo, **_):
    server = fake_llm(
        [
            say("one"),
            call("declare-scope", files=["calc.py"], behaviours="fix add"),
            call("write", file_path="elsewhere.txt", content="x\n"),
            say("two"),
        ]
    )
    s, _ = live(server)
    set_key(s, "scope.guard", "false")
    s.chat("again")
    assert (repo / "elsewhere.txt").exists(), "the guard refused with scope.guard = false"


def effect_cache_hints(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two"), say("three"), say("four")])
    s, _ = live(server)

    def marked(i: int) -> list[str]:
        return [m["role"] for m in server.messages(i) if "cache_control" in json.dumps(m)]

    assert marked(0) == [], "auto: no hints for a model outside the Anthropic family"
    set_key(s, "model.cache_hints", "on")
    s.chat("again")
    assert marked(1) == ["system", "user"], "the system prompt and the newest message"
    system = server.messages(1)[0]["content"]
    assert system[0]["cache_control"] == {"type": "ephemeral"}
    server.expect_model("anthropic/claude-test")
    set_key(s, "model.name", "anthropic/claude-test")
    set_key(s, "model.cache_hints", "auto")
    s.chat("claude")
    assert marked(2) == ["system", "user"], "auto: hints for an Anthropic-family model"
    set_key(s, "model.cache_hints", "off")
    s.chat("off")
    assert marked(3) == []


def effect_max_steps(fake_llm, live, **_):
    server = fake_llm([say("one"), call("bash", command="true"), say("two")])
    s, _ = live(server)
    set_key(s, "max_steps", "1")
    s.chat("again")
    assert len(server.requests) == 2
    assert status(s)["last_turn"]["exit_status"] == "LimitsExceeded"


def effect_max_blocked_calls(fake_llm, live, **_):
    refused = [("bash", {"command": "rm gone.txt"}, "r"), ("bash", {"command": "rm b.txt"}, "t")]
    server = fake_llm([say("one"), calls(refused), say("two")])
    s, _ = live(server, deny=["Bash(rm)"])
    set_key(s, "tools.max_consecutive_blocked_tool_calls_per_turn", "1")
    s.chat("again")
    # A second refusal in a row stops the turn (the default permits 3): the tool-free
    # handoff call follows.
    assert len(server.requests) == 3
    assert server.body(2).get("tools") in (None, [])
    assert status(s)["last_turn"]["exit_status"] == "LimitsExceeded"


def effect_max_tool_calls(fake_llm, live, **_):
    two = [("bash", {"command": "true"}, "a"), ("bash", {"command": "true"}, "b")]
    server = fake_llm([say("one"), calls(two), say("two")])
    s, _ = live(server)
    set_key(s, "tools.max_tool_calls_per_turn", "1")
    s.chat("again")
    # The batch of two is past a budget of one: it does not run and the turn stops.
    assert len(server.requests) == 2
    assert status(s)["last_turn"]["exit_status"] == "LimitsExceeded"


def effect_preview_budget(fake_llm, live, repo, **_):
    (repo / "long.txt").write_text("a line of some length for the budget\n" * 60)  # 2.3 KB
    reads = [("read", {"file_path": "long.txt"}, "a"), ("read", {"file_path": "calc.py"}, "b")]
    server = fake_llm([say("one"), calls(reads), say("two")])
    s, _ = live(server)
    set_key(s, "tools.preview_budget_kib", "1")
    s.chat("again")
    # The first read spends a budget of 1 KiB; the second inspection is refused.
    assert server.tool_result("b").startswith("Not run:"), server.tool_result("b")


def effect_planning_preview_budget(fake_llm, live, repo, **_):
    (repo / "long.txt").write_text("a line of some length for the budget\n" * 60)
    reads = [("read", {"file_path": "long.txt"}, "a"), ("read", {"file_path": "calc.py"}, "b")]
    server = fake_llm([say("one"), calls(reads), say("<proposed_plan>\n# P\n</proposed_plan>")])
    s, _ = live(server, mode="plan")
    set_key(s, "planning.preview_budget_kib", "1")
    s.chat("plan it")
    assert server.tool_result("b").startswith("Not run:"), server.tool_result("b")
    # The spend ends research at once: the next request is the tool-free synthesis.
    assert not server.body(2).get("tools")


def effect_next_session_primary_agent(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    answer = set_key(s, "default_primary_agent", "plan")
    assert "next session" in answer, answer
    assert status(s)["mode"] == "yolo", "the running session keeps its mode"
    fresh, _ = live(server, first_turn=False, mode=None)
    assert status(fresh)["mode"] == "plan"


def effect_max_cost(fake_llm, live, **_):
    server = fake_llm([say("one"), say("never sent")])
    s, _ = live(server, env={"D2A_MODEL_COST": PRICES})
    set_key(s, "maxCostUsd", "0.000001")
    s.chat("again")
    assert len(server.requests) == 1
    assert status(s)["last_turn"]["exit_status"] == "LimitsExceeded"


def effect_stream(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server, stream=True)
    assert server.body(0)["stream"] is True
    set_key(s, "ui.stream", "false")
    s.chat("again")
    assert server.body(1)["stream"] is False


def effect_show_thinking(fake_llm, live, **_):
    # The fronts read the display from the session (the TUI from its status).
    server = fake_llm([say("one")])
    s, _ = live(server)
    set_key(s, "ui.show_thinking", "expanded")
    assert status(s)["show_thinking"] == "expanded"


def effect_usage(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two", usage={"prompt_tokens": 50, "cached_tokens": 40})])
    s, events = live(server)
    assert events.of("usage")[-1]["line"], "tokens by default"
    set_key(s, "ui.usage", "off")
    events.events.clear()
    s.chat("again")
    assert events.of("usage")[-1]["line"] == "" and events.of("turn_end")[-1]["usage_line"] == ""


def effect_output_style(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "ui.output_style", "concise")
    s.chat("again")
    assert server.stated("Answer style", 1).startswith("Concise")


def effect_bash_timeout(fake_llm, live, **_):
    server = fake_llm([say("one"), call("bash", command="sleep 2; echo finished"), say("ok")])
    s, _ = live(server)
    set_key(s, "tools.bash.timeout_ms", "500")
    start = time.monotonic()
    s.chat("sleep")
    assert time.monotonic() - start < 1.8
    assert "finished" not in server.tool_result("call_1_0")


def effect_tools_defer(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "tools.defer", "false")
    s.chat("again")
    assert "todo" in server_schemas(server, -1) and "tool-search" not in server_schemas(server, -1)


def server_schemas(server, i: int) -> list[str]:
    return [t["function"]["name"] for t in server.body(i).get("tools") or []]


def effect_output_chars(fake_llm, live, **_):
    cmd = "seq -f 'row %05g' 1 3000"
    server = fake_llm([say("one"), call("bash", command=cmd), say("ok")])
    s, _ = live(server)
    set_key(s, "tools.output_chars", "100000")
    s.chat("print")
    assert "row 01500" in server.tool_result("call_1_0")


def effect_next_session_trajectory(fake_llm, live, repo, **_):
    server = fake_llm([say("one"), say("two"), say("three")])
    s, _ = live(server)
    answer = set_key(s, "trajectory", "false")
    assert "next session" in answer, answer
    traces = sorted((repo / ".trajectory").iterdir())
    s.chat("still traced")
    assert "still traced" in traces[-1].read_text(), "the running session keeps its value"
    fresh, _ = live(server, first_turn=False)
    fresh.chat("not traced")
    assert sorted((repo / ".trajectory").iterdir()) == traces, "the next session has no trace"


def effect_mcp_startup_timeout(fake_llm, live, yuyao_home, **_):
    """Set in a live session, it applies from the next session: a server that never answers
    is reported failed after that long, and the turn waits no longer than that for it."""
    server = fake_llm([say("one"), say("two"), say("three")])
    s, _ = live(server)
    answer = set_key(s, "mcp.startup_timeout_ms", "300")
    assert "next session" in answer, answer
    hang = f"exec {sys.executable} -c 'import time; time.sleep(60)'"
    (yuyao_home / "mcp.json").write_text(
        json.dumps({"mcpServers": {"hang": {"command": "sh", "args": ["-c", hang]}}})
    )
    fresh, _ = live(server, first_turn=False)
    t0 = time.monotonic()
    fresh.chat("hi")
    assert time.monotonic() - t0 < 3, "the default 10 s was waited"
    assert "did not start within 300 ms" in fresh.dispatch("/mcp list")


def effect_features_mcp(fake_llm, live, yuyao_home, **_):
    """A user server's tools are in the request; `features.mcp = false` set in the live
    session takes them out of the next one."""
    from pathlib import Path

    time_server = Path(sys.executable).parent / "mcp-server-time"
    if not time_server.exists():
        pytest.skip("mcp-server-time is not installed (scripts/test-requirements.txt)")
    (yuyao_home / "mcp.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": str(time_server)}}})
    )
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    assert any(n.startswith("mcp__time__") for n in server.tool_names(0)), server.tool_names(0)
    set_key(s, "features.mcp", "false")
    s.chat("again")
    assert not any(n.startswith("mcp__") for n in server.tool_names(1)), server.tool_names(1)


def effect_storage(key: str, value: str, days: float, size: int):
    """A retention key set in a live session says when it applies, and the next pass (here
    `/gc`, the pass a session start runs) honours it: an ended session's spill folder that the
    defaults keep is removed."""

    def check(fake_llm, live, yuyao_home, **_):
        import os

        server = fake_llm([say("one")])
        s, _ = live(server)
        ended = yuyao_home / "spill" / "0ldended0001"
        ended.mkdir(parents=True)
        (ended / "bash-1-0.log").write_bytes(b"x" * size)
        t = time.time() - days * 86_400
        for p in (ended / "bash-1-0.log", ended):
            os.utime(p, (t, t))
        answer = set_key(s, key, value)
        assert "next session" in answer, answer
        assert ended.exists(), "setting the key removes nothing by itself"
        s.dispatch("/gc")
        assert not ended.exists(), f"{key}={value} was not applied by the next pass"

    return check


def _flush_requests(server) -> list[dict]:
    return [
        server.body(r["index"])
        for r in server.requests
        if server.system_prompt(r["index"]).startswith("You keep a coding agent's memory")
    ]


def effect_memory_flush_enabled(fake_llm, live, **_):
    server = fake_llm([say("one"), say("the summary"), say("two")])
    s, _ = live(server)
    set_key(s, "compaction.memoryFlush.enabled", "false")
    set_key(s, "model.context_window", "100")
    s.chat("again")
    assert _compaction_happened(server) and not _flush_requests(server)


def effect_memory_flush_model(fake_llm, live, **_):
    server = fake_llm([say("one"), say("NONE"), say("the summary"), say("two")])
    s, _ = live(server)
    server.expect_model("fake-model", "flush-model")
    set_key(s, "compaction.memoryFlush.model", "flush-model")
    set_key(s, "model.context_window", "100")
    s.chat("again")
    [flush] = _flush_requests(server)
    assert flush["model"] == "flush-model"


def effect_next_session_memory_enabled(fake_llm, live, repo, **_):
    (repo / "MEMORY.md").write_text("- remembered fact 42\n")
    server = fake_llm([say("one"), say("two"), say("three")])
    s, _ = live(server)
    answer = set_key(s, "memory.enabled", "false")
    assert "next session" in answer, answer
    s.chat("still there")
    assert "remembered fact 42" in server.system_prompt(), "the running session keeps memory"
    fresh, _ = live(server, first_turn=False)
    fresh.chat("gone")
    assert "remembered fact 42" not in server.system_prompt()
    assert "memory-get" not in server.tool_names()


def effect_next_session_bootstrap_chars(fake_llm, live, repo, **_):
    (repo / "MEMORY.md").write_text(
        "".join(f"- fact {i:03} of the project memory\n" for i in range(60))
    )
    server = fake_llm([say("one"), say("two"), say("three")])
    s, _ = live(server)
    answer = set_key(s, "memory.bootstrap_chars", "800")
    assert "next session" in answer, answer
    s.chat("whole")
    assert (
        "fact 000" in server.system_prompt() and "[memory truncated" not in server.system_prompt()
    )
    fresh, _ = live(server, first_turn=False)
    fresh.chat("cut")
    assert "fact 000" not in server.system_prompt() and "fact 059" in server.system_prompt()
    assert "[memory truncated" in server.system_prompt()


def effect_memory_search_provider(fake_llm, live, repo, **_):
    (repo / "MEMORY.md").write_text("- Alice owns the billing service.\n")
    script = [say("one"), call("memory-search", query="billing owner"), say("ok")]
    server = fake_llm(script + script[1:])
    s, _ = live(server)
    s.chat("search")
    assert "Alice owns the billing service" in server.tool_result("call_1_0")
    assert not server.embedding_requests, "local: the shipped model, no endpoint call"
    set_key(s, "memorySearch.provider", "gateway")
    s.chat("search again")
    assert server.embedding_requests, "gateway: vectors from {base}/embeddings"
    assert "Alice owns the billing service" in server.tool_result("call_3_0")


def effect_memory_search_model(fake_llm, live, repo, **_):
    (repo / "MEMORY.md").write_text("- Alice owns the billing service.\n")
    server = fake_llm([say("one"), call("memory-search", query="billing"), say("ok")])
    s, _ = live(server)
    set_key(s, "memorySearch.provider", "gateway")
    set_key(s, "memorySearch.model", "embed-live")
    s.chat("search")
    assert {q["body"]["model"] for q in server.embedding_requests} == {"embed-live"}


def effect_dreaming(fake_llm, live, repo, **_):
    server = fake_llm([say("one"), say("The journal, worded by the model.")])
    s, _ = live(server)
    set_key(s, "dreaming.enabled", "true")
    assert not (repo / "DREAMS.md").exists()
    s.close()
    assert "The journal, worded by the model." in (repo / "DREAMS.md").read_text()


def effect_search_provider(fake_llm, live, **_):
    from test_web import Web

    web = Web()
    try:
        server = fake_llm([say("one"), call("web-search", query="live key"), say("ok")])
        s, _ = live(server)
        set_key(s, "network", "on")
        set_key(s, "search.provider", f"searxng:{web.url('')}")
        s.chat("search")
        assert "Result 1 for live key" in server.tool_result("call_1_0")
        assert web.requests and web.requests[0].startswith("/search?q=live+key")
    finally:
        web.close()


def effect_search_api_key_env(fake_llm, live, **_):
    server = fake_llm([say("one"), call("web-search", query="x"), say("ok")])
    s, _ = live(server)
    set_key(s, "network", "on")
    set_key(s, "search.provider", "brave")
    set_key(s, "search.api_key_env", "YUYAO_TEST_SEARCH_KEY_UNSET")
    s.chat("search")
    assert "YUYAO_TEST_SEARCH_KEY_UNSET" in server.tool_result("call_1_0")


def effect_browser_executable(fake_llm, live, **_):
    server = fake_llm(
        [say("one"), call("browser", action="open", url="http://127.0.0.1:9/"), say("ok")]
    )
    s, _ = live(server)
    set_key(s, "browser.executable", "/nonexistent/yuyao-test-chromium")
    s.chat("open")
    assert "/nonexistent/yuyao-test-chromium" in server.tool_result("call_1_0")


def effect_not_in_build(key: str):
    def check(fake_llm, live, **_):
        server = fake_llm([say("one")])
        s, _ = live(server)
        answer = set_key(s, key, "true" if "enabled" in key else "local")
        assert "not in this build" in answer and "no effect" in answer, answer

    return check


def effect_on_display(test_name: str):
    """Keys the TUI renders itself: their effect is tested through the TUI, in test_tui."""

    def check(key: str) -> None:
        import test_tui

        test = getattr(test_tui, test_name)
        assert key in inspect.getsource(test), f"{test_name} does not exercise {key}"

    return check


def effect_max_stop_blocks(fake_llm, live, repo, **_):
    """A failing Stop gate sends the model back as many times as the key says, then the turn
    ends reporting it."""
    (repo / ".yuyao").mkdir(exist_ok=True)
    (repo / ".yuyao" / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [{"command": "echo 'gate fails'; exit 1"}]}})
    )
    server = fake_llm([say("a")] * 4)
    s, _ = live(server, first_turn=False, project_extensions=True, trust_project=True)
    set_key(s, "hooks.max_stop_blocks", "1")
    with pytest.raises(RuntimeError, match="gate fails"):
        s.chat("go")
    assert len(server.requests) == 2, "one answer, one block, then the turn ends"


def effect_agents_max_parallel(fake_llm, live, **_):
    starts: list[float] = []

    def respond(body, i):
        system = body["messages"][0].get("content") or ""
        if "# You are a sub-agent" in system:
            starts.append(time.monotonic())
            return say("sub", delay=0.4)
        last = body["messages"][-1]
        if last["role"] == "user" and "two tasks" in str(last.get("content")):
            args = [{"description": d, "prompt": d} for d in ("one", "two")]
            return calls([("task", a, f"t{k}") for k, a in enumerate(args)])
        return say("ok")

    server = fake_llm(respond)
    s, _ = live(server)
    set_key(s, "agents.max_parallel", "1")
    s.chat("two tasks")
    assert len(starts) == 2
    assert starts[1] - starts[0] >= 0.35, "with 1, the second sub-agent waits for the first"


def effect_goal_max_rounds(fake_llm, live, **_):
    def respond(body, i):
        system = body["messages"][0].get("content") or ""
        return say("NOT MET\nno" if system.startswith("You judge") else "working")

    server = fake_llm(respond)
    s, _ = live(server)
    set_key(s, "goal.max_rounds", "2")
    assert s.dispatch("/goal never").startswith("goal not met after 2 rounds")


def effect_features_hooks(fake_llm, live, repo, **_):
    marker = repo / "hook-ran"
    (repo / ".yuyao").mkdir(exist_ok=True)
    (repo / ".yuyao" / "hooks.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"command": f"touch {marker}"}]}})
    )
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server, project_extensions=True, trust_project=True)
    assert marker.exists()
    marker.unlink()
    set_key(s, "features.hooks", "false")
    s.chat("again")
    assert not marker.exists(), "a hook ran with features.hooks = false"


def effect_features_skills(fake_llm, live, yuyao_home, **_):
    """A skill loads by keyword; with `features.skills = false` set live it does not."""
    skill = yuyao_home / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\ndescription: Deploy\ntriggers: [ship it]\n---\nDEPLOY-BODY\n")
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server, first_turn=False)
    set_key(s, "features.skills", "false")
    s.chat("ship it")
    assert "DEPLOY-BODY" not in server.user_text(-1), "a skill loaded with features.skills = false"
    set_key(s, "features.skills", "true")
    s.chat("ship it now")
    assert "DEPLOY-BODY" in server.user_text(-1)


def effect_features_plugins(fake_llm, live, yuyao_home, repo, **_):
    """A plugin's hook runs; with `features.plugins = false` set live it does not."""
    # In the project: the hook runs in the agent's sandbox, where ~/.yuyao is read-only.
    marker = repo / "plugin-hook-ran"
    plugin = yuyao_home / "plugins" / "kit"
    plugin.mkdir(parents=True)
    (plugin / "plugin.json").write_text(
        json.dumps({"name": "kit", "hooks": {"UserPromptSubmit": [{"command": f"touch {marker}"}]}})
    )
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    assert marker.exists()
    marker.unlink()
    set_key(s, "features.plugins", "false")
    s.chat("again")
    assert not marker.exists(), "a plugin's hook ran with features.plugins = false"


def effect_extension_sandbox(key: str, value: str, shown: str):
    """`extension_sandbox.<kind>[_network]`: the profile of the next user-level process of
    that kind (read at every start), as `/sandbox list` shows it."""
    label = {
        "hooks": "hooks",
        "mcp": "MCP stdio servers",
        "lsp": "language servers",
        "apps": "/run apps",
    }[key.split(".")[1].removesuffix("_network")]

    def user_row(s) -> str:
        rows = s.dispatch("/sandbox list").splitlines()
        return next(r for r in rows if r.strip().startswith(label) and " user " in r)

    def check(fake_llm, live, yuyao_home, **_):
        server = fake_llm([say("one")])
        s, _ = live(server)
        assert shown not in user_row(s)
        set_key(s, key, value)
        assert key.split(".")[1] in (yuyao_home / "config.toml").read_text()
        assert shown in user_row(s), user_row(s)

    return check


def effect_extension_sandbox_hooks_network(fake_llm, live, repo, yuyao_home, **_):
    """A user hook reaches a loopback port only once the user's config turns its network on."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    marker = repo / "hook-net"
    probe = (
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\" "
        f"&& echo connected >> {marker} || echo refused >> {marker}"
    )
    (yuyao_home / "hooks.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"command": probe}]}})
    )
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    assert marker.read_text().split() == ["refused"]
    set_key(s, "extension_sandbox.hooks_network", "true")
    s.chat("again")
    assert marker.read_text().split() == ["refused", "connected"]
    listener.close()


def effect_feature_not_in_build(key: str):
    def check(fake_llm, live, **_):
        server = fake_llm([say("one")])
        s, _ = live(server)
        answer = set_key(s, key, "false")
        assert "not in this build" in answer and "no effect" in answer, answer

    return check


EFFECTS = {
    "extension_sandbox.hooks": effect_extension_sandbox(
        "extension_sandbox.hooks", "read-only", "sandbox read-only"
    ),
    "extension_sandbox.hooks_network": effect_extension_sandbox_hooks_network,
    "extension_sandbox.mcp": effect_extension_sandbox(
        "extension_sandbox.mcp", "full-access", "sandbox full-access"
    ),
    "extension_sandbox.mcp_network": effect_extension_sandbox(
        "extension_sandbox.mcp_network", "true", "network on"
    ),
    "extension_sandbox.lsp": effect_extension_sandbox(
        "extension_sandbox.lsp", "read-only", "sandbox read-only"
    ),
    "extension_sandbox.lsp_network": effect_extension_sandbox(
        "extension_sandbox.lsp_network", "true", "network on"
    ),
    "extension_sandbox.apps": effect_extension_sandbox(
        "extension_sandbox.apps", "read-only", "sandbox read-only"
    ),
    "extension_sandbox.apps_network": effect_extension_sandbox(
        "extension_sandbox.apps_network", "false", "network off"
    ),
    "agents.max_parallel": effect_agents_max_parallel,
    "goal.max_rounds": effect_goal_max_rounds,
    "tools.max_consecutive_blocked_tool_calls_per_turn": effect_max_blocked_calls,
    "tools.max_tool_calls_per_turn": effect_max_tool_calls,
    "tools.preview_budget_kib": effect_preview_budget,
    "planning.preview_budget_kib": effect_planning_preview_budget,
    "default_primary_agent": effect_next_session_primary_agent,
    "hooks.max_stop_blocks": effect_max_stop_blocks,
    "features.hooks": effect_features_hooks,
    "features.skills": effect_features_skills,
    "features.plugins": effect_features_plugins,
    "features.mcp": effect_features_mcp,
    "model.name": effect_model_name,
    "model.context_window": effect_context_window,
    "model.max_output_tokens": effect_max_output_tokens,
    "model.input_cost_per_token": effect_input_cost,
    "model.output_cost_per_token": effect_output_cost,
    "model.cache_read_input_token_cost": effect_cache_read_cost,
    "model.cache_creation_input_token_cost": effect_cache_creation_cost,
    "model.idle_timeout_s": effect_idle_timeout,
    "model.max_retries": effect_max_retries,
    "model.cache_hints": effect_cache_hints,
    "mode": effect_mode,
    "role": effect_role,
    "sandbox": effect_sandbox,
    "network": effect_network,
    "thinking": effect_thinking,
    "curiosity": effect_curiosity,
    "ask_user.require_options": effect_ask_require_options,
    "ask_user.reuse_answers": effect_ask_reuse_answers,
    "scope.guard": effect_scope_guard,
    "max_steps": effect_max_steps,
    "maxCostUsd": effect_max_cost,
    "compaction.threshold": effect_compaction_threshold,
    "compaction.memoryFlush.enabled": effect_memory_flush_enabled,
    "compaction.memoryFlush.model": effect_memory_flush_model,
    "ui.stream": effect_stream,
    "ui.show_thinking": effect_show_thinking,
    "ui.theme": effect_on_display("test_core_settings_view_writes_the_config_and_applies_it"),
    "ui.editor_mode": effect_on_display("test_core_settings_view_writes_the_config_and_applies_it"),
    "ui.output_style": effect_output_style,
    "ui.usage": effect_usage,
    "trajectory": effect_next_session_trajectory,
    "memory.enabled": effect_next_session_memory_enabled,
    "memory.bootstrap_chars": effect_next_session_bootstrap_chars,
    "memorySearch.provider": effect_memory_search_provider,
    "memorySearch.model": effect_memory_search_model,
    "dreaming.enabled": effect_dreaming,
    "architect.model": effect_architect_model("architect.model"),
    "architect.editor_model": effect_architect_model("architect.editor_model"),
    "model.thinking_param": effect_thinking_param,
    "model.response_format": effect_response_format,
    "git.auto_commit": effect_auto_commit,
    "tools.bash.timeout_ms": effect_bash_timeout,
    "tools.defer": effect_tools_defer,
    "tools.output_chars": effect_output_chars,
    "search.provider": effect_search_provider,
    "search.api_key_env": effect_search_api_key_env,
    "browser.executable": effect_browser_executable,
    "mcp.startup_timeout_ms": effect_mcp_startup_timeout,
    "lsp.enabled": effect_lsp_enabled,
    "lsp.diagnostics_timeout_ms": effect_lsp_diagnostics_timeout,
    # 5 days old: kept by the default 30 days, removed once 1 day is set.
    "storage.retention_days": effect_storage("storage.retention_days", "1", 5, 1000),
    # 3 MB, 2 days old: kept by the default 1024 MB, removed once the cap is 1 MB.
    "storage.max_mb": effect_storage("storage.max_mb", "1", 2, 3 << 20),
}
# Seed 000 behaviours 6-8 (verification, intent lines): their effect tests live with the mechanism.
EFFECTS.update(__import__("test_verification").LIVE_EFFECTS)
# Memory maintenance and the memory backend: with the mechanism too.
EFFECTS.update(__import__("test_memory_backend").LIVE_EFFECTS)


def test_every_known_key_has_an_effect_test():
    keys = {k["key"] for k in known_keys()}
    assert keys == set(EFFECTS), (
        f"keys without an effect test: {sorted(keys - set(EFFECTS))}; "
        f"tests of keys that are gone: {sorted(set(EFFECTS) - keys)}"
    )


@pytest.mark.parametrize("key", sorted(EFFECTS))
def test_a_key_set_in_a_live_session_takes_effect(key, fake_llm, live, repo, yuyao_home):
    applies = {k["key"]: k["applies"] for k in known_keys()}[key]
    check = EFFECTS[key]
    if applies == "display":
        check(key)
    else:
        check(fake_llm=fake_llm, live=live, repo=repo, yuyao_home=yuyao_home)


# ---------------------------------------------------------------------------------------------
# The cases through every route a running session can be changed by


@pytest.mark.parametrize("route", ["slash command", "another process", "hand edit"])
def test_bash_timeout_set_while_the_session_runs(route, fake_llm, live, yuyao, env, yuyao_home):
    server = fake_llm([say("one"), call("bash", command="sleep 2; echo finished"), say("ok")])
    s, _ = live(server)
    if route == "slash command":
        s.dispatch("/config set tools.bash.timeout_ms 500")
    elif route == "another process":
        assert yuyao("config", "set", "tools.bash.timeout_ms", "500", env=env()).returncode == 0
    else:
        (yuyao_home / "config.toml").write_text("[tools.bash]\ntimeout_ms = 500\n")
    start = time.monotonic()
    s.chat("sleep")
    assert time.monotonic() - start < 1.8, "the command ran past the new timeout"
    result = server.tool_result("call_1_0")
    assert "finished" not in result and "500" in result, result


def test_output_style_keeps_requests_append_only(fake_llm, live):
    server = fake_llm([say("one"), say("two"), say("three")])
    s, _ = live(server)
    assert "Default: answer as long as the task needs" in server.system_prompt(0)
    s.dispatch("/config set ui.output_style explanatory")
    s.chat("again")
    first, second = server.messages(0), server.messages(1)
    assert second[: len(first)] == first, "earlier messages are never rewritten"
    assert "Explanatory: explain as you go" in second[-1]["content"]
    s.chat("once more")
    third = server.messages(2)
    assert third[: len(second)] == second and third[0] == first[0]
    assert third[-1]["content"].count("answer style") == 0, "the note is sent once"
    # The next session opens with the style in its system prompt.
    fresh, _ = live(server, first_turn=False)
    server.script.append(say("four"))
    fresh.chat("new session")
    assert "Explanatory: explain as you go" in server.system_prompt(3)


@pytest.mark.parametrize(
    "display, shown, hidden",
    [
        ("off", [], ["[usage]"]),
        ("tokens", ["[usage] 1200 in / 34 out tokens"], ["cached", "$"]),
        ("full", ["1200 in (1000 cached", "34 out (5 reasoning)", "$1.5400"], []),
    ],
)
def test_usage_display_in_print_mode(display, shown, hidden, fake_llm, yuyao, env):
    usage = {"prompt_tokens": 1200, "completion_tokens": 34, "cached_tokens": 1000,
             "reasoning_tokens": 5}  # fmt: skip
    server = fake_llm([say("answer", usage=usage)])
    assert yuyao("config", "set", "ui.usage", display, env=env()).returncode == 0
    proc = yuyao("-p", "hi", "--verbose", env=env(server, D2A_MODEL_COST=PRICES))
    assert proc.returncode == 0, proc.stderr
    for text in shown:
        assert text in proc.stderr, proc.stderr
    usage_lines = "\n".join(ln for ln in proc.stderr.splitlines() if "usage" in ln.lower())
    for text in hidden:
        assert text not in usage_lines, proc.stderr
