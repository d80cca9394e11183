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
from fakellm import call, error, say

pytestmark = pytest.mark.core

PRICES = json.dumps({"input_cost_per_token": 0.001, "output_cost_per_token": 0.01})


def known_keys() -> list[dict]:
    from yuyao import _core

    return json.loads(_core.config_keys_json())


class Events:
    """A handler for a core Session that keeps every event."""

    def __init__(self):
        self.events: list[dict] = []

    def event(self, event_json: str) -> None:
        self.events.append(json.loads(event_json))

    def request(self, request_json: str) -> str:
        return "deny"

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e.get("type") == kind]


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
    server = fake_llm([say("one"), say("the summary"), say("two")])
    s, _ = live(server)
    set_key(s, "model.context_window", "100")
    s.chat("again")
    assert _compaction_happened(server), "a 100-token window compacts before the next call"


def effect_compaction_threshold(fake_llm, live, **_):
    server = fake_llm([say("one"), say("the summary"), say("two")])
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
    assert "Permission mode: plan" in server.system_prompt(1)


def effect_role(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "role", "debug")
    s.chat("again")
    assert "Role: debug" in server.system_prompt(1)


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
    assert "Network for tools: off" in server.system_prompt(0)
    set_key(s, "network", "on")
    s.chat("again")
    assert "Network for tools: on" in server.system_prompt(1)


def effect_thinking(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "thinking", "high")
    s.chat("again")
    assert server.body(1)["reasoning_effort"] == "high"


def effect_curiosity(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    set_key(s, "curiosity", "high")
    s.chat("again")
    assert "whenever a choice of approach" in server.system_prompt(1)


def effect_max_steps(fake_llm, live, **_):
    server = fake_llm([say("one"), call("bash", command="true"), say("two")])
    s, _ = live(server)
    set_key(s, "max_steps", "1")
    s.chat("again")
    assert len(server.requests) == 2
    assert status(s)["last_turn"]["exit_status"] == "LimitsExceeded"


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
    assert "The user changed the answer style to concise" in server.user_text(1)


def effect_bash_timeout(fake_llm, live, **_):
    server = fake_llm([say("one"), call("bash", command="sleep 2; echo finished"), say("ok")])
    s, _ = live(server)
    set_key(s, "tools.bash.timeout_ms", "500")
    start = time.monotonic()
    s.chat("sleep")
    assert time.monotonic() - start < 1.8
    assert "finished" not in server.tool_result("call_1_0")


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


EFFECTS = {
    "model.name": effect_model_name,
    "model.context_window": effect_context_window,
    "model.max_output_tokens": effect_max_output_tokens,
    "model.input_cost_per_token": effect_input_cost,
    "model.output_cost_per_token": effect_output_cost,
    "model.cache_read_input_token_cost": effect_cache_read_cost,
    "model.cache_creation_input_token_cost": effect_cache_creation_cost,
    "model.idle_timeout_s": effect_idle_timeout,
    "model.max_retries": effect_max_retries,
    "mode": effect_mode,
    "role": effect_role,
    "sandbox": effect_sandbox,
    "network": effect_network,
    "thinking": effect_thinking,
    "curiosity": effect_curiosity,
    "max_steps": effect_max_steps,
    "maxCostUsd": effect_max_cost,
    "compaction.threshold": effect_compaction_threshold,
    "compaction.memoryFlush.enabled": effect_not_in_build("compaction.memoryFlush.enabled"),
    "compaction.memoryFlush.model": effect_not_in_build("compaction.memoryFlush.model"),
    "ui.stream": effect_stream,
    "ui.show_thinking": effect_show_thinking,
    "ui.theme": effect_on_display("test_core_settings_view_writes_the_config_and_applies_it"),
    "ui.editor_mode": effect_on_display("test_core_settings_view_writes_the_config_and_applies_it"),
    "ui.output_style": effect_output_style,
    "ui.usage": effect_usage,
    "trajectory": effect_next_session_trajectory,
    "memory.enabled": effect_not_in_build("memory.enabled"),
    "memorySearch.provider": effect_not_in_build("memorySearch.provider"),
    "dreaming.enabled": effect_not_in_build("dreaming.enabled"),
    "architect.editor_model": effect_not_in_build("architect.editor_model"),
    "tools.bash.timeout_ms": effect_bash_timeout,
    "mcp.startup_timeout_ms": effect_mcp_startup_timeout,
    # 5 days old: kept by the default 30 days, removed once 1 day is set.
    "storage.retention_days": effect_storage("storage.retention_days", "1", 5, 1000),
    # 3 MB, 2 days old: kept by the default 1024 MB, removed once the cap is 1 MB.
    "storage.max_mb": effect_storage("storage.max_mb", "1", 2, 3 << 20),
}


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
