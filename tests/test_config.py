"""Layered configuration (spec §2 `config`, §8 "accepted means effective", DESIGN §2): every
accepted write reads back on every surface, known keys are type-checked, and a change made on
disk takes effect in a running session at its next model call."""

from __future__ import annotations

import json

import pytest
from fakellm import say

pytestmark = pytest.mark.core


def output(proc) -> str:
    return proc.stdout + proc.stderr


@pytest.fixture
def session(use_env, repo):
    from yuyao.agent_api import create_session

    opened = []

    def open_session(server=None, **kwargs):
        use_env(server)
        kwargs.setdefault("cwd", str(repo))
        opened.append(create_session(**kwargs))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


READ_BACK = """
import json, sys
from yuyao.agent_api import create_session
s = create_session(cwd=sys.argv[1])
print(json.dumps([s.config_get(k) for k in sys.argv[2:]]))
print(json.dumps(s.dispatch("/config get " + sys.argv[2])))
s.close()
"""


@pytest.mark.parametrize(
    "key, raw, value",
    [
        ("model.context_window", "64000", 64000),
        ("model.max_output_tokens", "2048", 2048),
        ("model.name", "other-model", "other-model"),
        ("mode", "plan", "plan"),
        ("role", "debug", "debug"),
        ("sandbox", "read-only", "read-only"),
        ("network", "on", "on"),
        ("curiosity", "high", "high"),
        ("maxCostUsd", "2.5", 2.5),
        ("ui.theme", "light", "light"),
        ("ui.editor_mode", "vi", "vi"),
        ("ui.stream", "false", False),
        ("ui.show_thinking", "expanded", "expanded"),
        ("ui.output_style", "concise", "concise"),
        ("memory.enabled", "false", False),
        ("compaction.threshold", "0.7", 0.7),
    ],
)
def test_cli_set_reads_back_on_every_surface(yuyao, python, env, repo, key, raw, value):
    proc = yuyao("config", "set", key, raw, env=env())
    assert proc.returncode == 0, output(proc)
    got = yuyao("config", "get", key, env=env())
    assert got.returncode == 0, output(got)
    shown = json.dumps(value) if not isinstance(value, str) else value
    assert got.stdout.strip() == shown.lower() if isinstance(value, bool) else shown
    back = python(READ_BACK, str(repo), key, env=env())
    assert back.returncode == 0, output(back)
    api_value, dispatched = [json.loads(line) for line in back.stdout.splitlines()]
    assert api_value == [value]
    assert dispatched == got.stdout.strip()


def test_values_parse_as_json_when_they_can(yuyao, python, env, repo):
    for key, raw in [
        ("x.n", "3"),
        ("x.list", "[1, 2]"),
        ("x.flag", "true"),
        ("x.quoted", '"7"'),
        ("x.text", "hello world"),
    ]:
        proc = yuyao("config", "set", key, raw, env=env())
        assert proc.returncode == 0, output(proc)
        assert "not a known key" in output(proc), "an unknown key is stored with a warning"
    back = python(READ_BACK, str(repo), "x.n", "x.list", "x.flag", "x.quoted", "x.text", env=env())
    values = json.loads(back.stdout.splitlines()[0])
    assert values == [3, [1, 2], True, "7", "hello world"]


def test_known_keys_are_type_checked(yuyao, env, yuyao_home):
    for key, raw in [
        ("model.context_window", "lots"),
        ("model.context_window", "0"),
        ("ui.editor_mode", "nano"),
        ("compaction.threshold", "2"),
        ("maxCostUsd", "-1"),
    ]:
        proc = yuyao("config", "set", key, raw, env=env())
        assert proc.returncode == 2, output(proc)
        assert key in proc.stderr and "expected" in proc.stderr
    assert not (yuyao_home / "config.toml").exists(), "a refused write changes nothing"


def test_project_layer(yuyao, env, repo, yuyao_home):
    proc = yuyao("config", "set", "--project", "mode", "plan", env=env())
    assert proc.returncode == 0, output(proc)
    assert 'mode = "plan"' in (repo / ".yuyao" / "config.toml").read_text()
    assert not (yuyao_home / "config.toml").exists()
    assert yuyao("config", "set", "mode", "yolo", env=env()).returncode == 0
    # The project layer sets the key, so the write goes there and reads back.
    assert yuyao("config", "get", "mode", env=env()).stdout.strip() == "yolo"
    assert yuyao("config", "unset", "mode", env=env()).returncode == 0
    assert yuyao("config", "get", "mode", env=env()).stdout.strip() == ""


def test_aliases_read_and_write_the_canonical_key(session):
    s = session()
    s.dispatch("/config set editor.mode vim")
    assert s.config_get("ui.editor_mode") == "vi"
    s.dispatch("/settings set model m2")
    assert s.config_get("model.name") == "m2"
    assert "m2" in s.dispatch("/status")


def test_a_hand_edit_takes_effect_at_the_next_model_call(fake_llm, session, yuyao_home):
    server = fake_llm([say("one"), say("two")])
    s = session(server)
    s.chat("hello")
    assert "Permission mode: ask" in server.system_prompt(0)
    server.expect_model("edited-model")
    (yuyao_home / "config.toml").write_text('mode = "plan"\n[model]\nname = "edited-model"\n')
    s.chat("again")
    assert server.stated("Permission mode", 1).startswith("plan")
    assert server.body(1)["model"] == "edited-model"
    assert s.config_get("mode") == "plan"
    assert "mode      plan" in s.dispatch("/status")


def test_in_session_set_is_effective_at_once(fake_llm, session):
    server = fake_llm([say("one")])
    s = session(server)
    s.dispatch("/config set model.max_output_tokens 321")
    s.dispatch("/config set mode auto-edit")
    s.chat("hi")
    assert server.body(0)["max_tokens"] == 321
    assert "Permission mode: auto-edit" in server.system_prompt(0)


def test_prices_from_the_configuration(fake_llm, session):
    server = fake_llm([say("hi", usage={"prompt_tokens": 1000, "completion_tokens": 10})])
    s = session(server)
    s.dispatch("/config set model.input_cost_per_token 0.001")
    s.dispatch("/config set model.output_cost_per_token 0.01")
    s.chat("hello")
    assert "cost      $1.1000" in s.dispatch("/status")


def test_sandbox_and_network_writes_show_in_status(session):
    s = session()
    s.dispatch("/config set sandbox read-only")
    s.dispatch("/config set network on")
    status = s.dispatch("/status")
    assert "sandbox   read-only" in status and "network   on" in status, status


def test_a_later_switch_wins_over_an_earlier_config_set(fake_llm, session):
    server = fake_llm([say("one")])
    s = session(server)
    s.dispatch("/config set mode plan")
    s.dispatch("/mode auto-edit")
    s.chat("hi")
    assert "Permission mode: auto-edit" in server.system_prompt(0)


def test_flags_outrank_the_configuration(fake_llm, yuyao, env):
    server = fake_llm([say("one"), say("two")], model="flag-model")
    assert yuyao("config", "set", "model.name", "configured-model", env=env()).returncode == 0
    assert yuyao("config", "set", "mode", "plan", env=env()).returncode == 0
    proc = yuyao("-p", "hi", "--model", "flag-model", "--mode", "auto-edit", env=env(server))
    assert proc.returncode == 0, output(proc)
    assert server.body(0)["model"] == "flag-model"
    assert "Permission mode: auto-edit" in server.system_prompt(0)
    server.expect_model("configured-model")
    proc = yuyao("-p", "hi", env=env(server))
    assert server.body(1)["model"] == "configured-model"
    assert "Permission mode: plan" in server.system_prompt(1)


# ---------------------------------------------------------------------------------------------
# A key and its sub-keys (seed 002 §8, "accepted means effective and readable back"; a first
# build let `model.max_output_tokens` become the model's name)


@pytest.mark.parametrize(
    "key, raw", [("model.max_output_tokens", "2048"), ("model.context_window", "64000")]
)
def test_a_model_setting_never_becomes_the_model_name(key, raw, fake_llm, yuyao, env, api):
    server = fake_llm([say("one"), say("two"), say("three")])
    assert yuyao("config", "set", key, raw, env=env()).returncode == 0
    for name in ("model.name", "model"):
        got = yuyao("config", "get", name, env=env())
        assert got.returncode == 0 and got.stdout.strip() == "", got.stdout
    proc = yuyao("-p", "hi", env=env(server))
    assert proc.returncode == 0, output(proc)
    s = api(server)
    s.chat("again")
    assert [r["body"]["model"] for r in server.requests] == ["fake-model", "fake-model"]
    # The name and the other model settings live side by side.
    assert yuyao("config", "set", "model", "named-model", env=env()).returncode == 0
    assert yuyao("config", "get", "model.name", env=env()).stdout.strip() == "named-model"
    assert yuyao("config", "get", key, env=env()).stdout.strip() == raw
    server.expect_model("named-model")
    assert yuyao("-p", "hi", env=env(server)).returncode == 0
    assert server.body(-1)["model"] == "named-model"


@pytest.mark.parametrize(
    "key, existing",
    [("ui", '[ui]\ntheme = "light"\n'), ("compaction", ""), ("mode.fast", 'mode = "plan"\n')],
)
def test_a_value_and_a_group_at_one_path_is_a_clear_error(key, existing, yuyao, env, yuyao_home):
    config = yuyao_home / "config.toml"
    config.write_text(existing)
    proc = yuyao("config", "set", key, "x", env=env())
    assert proc.returncode == 2, output(proc)
    assert "group of settings" in proc.stderr or "value of its own" in proc.stderr, proc.stderr
    assert config.read_text() == existing, "a refused write changes nothing"


@pytest.mark.parametrize(
    "text, warned",
    [
        # `model = { … }` is the [model] group written inline: it holds no name.
        ("model = { max_output_tokens = 2048 }\n", False),
        # A table where the name belongs is never sent as a name: ignored, and said so.
        ("[model]\nname = { max_output_tokens = 2048 }\nmax_output_tokens = 2048\n", True),
    ],
)
def test_a_config_corrupted_by_the_first_build_loads_without_a_wrong_model(
    text, warned, fake_llm, yuyao, env, yuyao_home
):
    (yuyao_home / "config.toml").write_text(text)
    server = fake_llm([say("one")])
    proc = yuyao("-p", "hi", env=env(server))
    assert proc.returncode == 0, output(proc)
    assert server.body(0)["model"] == "fake-model" and server.body(0)["max_tokens"] == 2048
    got = yuyao("config", "get", "model.name", env=env())
    assert got.stdout.strip() == ""
    for shown in (proc.stderr, got.stderr):
        assert ("model.name = { max_output_tokens = 2048 } is not a string" in shown) == warned
        assert ("ignored" in shown) == warned
    # Setting the name repairs the file.
    assert yuyao("config", "set", "model.name", "fixed-model", env=env()).returncode == 0
    got = yuyao("config", "get", "model.name", env=env())
    assert got.stdout.strip() == "fixed-model" and "ignored" not in got.stderr
    assert yuyao("config", "get", "model.max_output_tokens", env=env()).stdout.strip() == "2048"
