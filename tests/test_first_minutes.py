"""What a new user meets in the first minutes, each said plainly: a mistyped configuration
key, the mode in force read from the API, a failed MCP server in `-p`, `--verbose` without
repeats, `--thinking max`, the read tool's suggestions, SVGs through read-media, and the
Shift+Tab mode cycle (in test_tui.py)."""

from __future__ import annotations

import json

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core


def test_config_get_says_when_a_key_is_unknown(yuyao, env):
    typo = yuyao("config", "get", "mdoel.name", env=env())
    assert typo.returncode != 0
    assert "unknown configuration key 'mdoel.name'" in typo.stderr
    # A known key that is unset prints nothing (its built-in default applies).
    known = yuyao("config", "get", "model.context_window", env=env())
    assert known.returncode == 0 and known.stdout.strip() == "", known.stderr
    # A key the user set, known or not, reads back.
    assert yuyao("config", "set", "my.own.key", "v", env=env()).returncode == 0
    assert yuyao("config", "get", "my.own.key", env=env()).stdout.strip() == "v"


def test_config_get_of_mode_is_the_mode_in_force(fake_llm, api):
    server = fake_llm([])
    assert api(server).config_get("mode") == "ask"
    assert api(server, mode="plan").config_get("mode") == "plan"
    assert api(server).config_get("never.set.key") is None


def test_a_failed_mcp_server_is_warned_about_in_print_mode(fake_llm, yuyao, env):
    server = fake_llm([say("hello")])
    add = yuyao("mcp", "add", "broken", "--", "/nonexistent/mcp-server-binary", env=env())
    assert add.returncode == 0, add.stderr
    proc = yuyao("-p", "hi", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "MCP server 'broken' failed to start" in proc.stderr, proc.stderr
    assert proc.stderr.count("MCP server 'broken' failed") == 1


def test_verbose_states_each_intent_once_and_one_usage_line_per_step(fake_llm, yuyao, env):
    server = fake_llm(
        [
            calls([("read", {"file_path": "calc.py"})], content="I will look at calc.py first."),
            say("calc.py adds numbers."),
        ]
    )
    proc = yuyao("-p", "what does calc.py do?", "--verbose", env=env(server))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert err.count("[intent] I will look at calc.py first.") == 1, err
    usage = [ln for ln in err.splitlines() if ln.startswith(("[usage]", "[tokens]"))]
    assert len(usage) == 2, usage  # two model calls, one line each


def test_read_suggests_no_git_internals(fake_llm, api, repo):
    server = fake_llm(
        [calls([("read", {"file_path": "config"})], content="Reading."), say("no such file")]
    )
    api(server).chat("show me config")
    result = server.tool_results(1)
    text = next(iter(result.values()))
    assert "does not exist" in text or "no such" in text.lower(), text
    assert ".git" not in text, text


def test_read_media_reads_an_svg_as_its_markup(fake_llm, api, repo):
    (repo / "logo.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
        '<text x="1" y="8">ACME</text></svg>\n'
    )
    server = fake_llm(
        [calls([("read-media", {"file_path": "logo.svg"})], content="Looking."), say("ACME")]
    )
    api(server, mode="yolo").chat("what does logo.svg say?")
    text = next(iter(server.tool_results(1).values()))
    assert "is an SVG" in text and '<text x="1" y="8">ACME</text>' in text, text


def test_status_json_mode_for_context(fake_llm, api):
    """The mode the API reports is the one the request states."""
    server = fake_llm([say("ok")])
    s = api(server, mode="auto-edit")
    s.chat("hi")
    assert server.stated("Permission mode", 0).startswith(s.config_get("mode"))
    assert json.loads(json.dumps(s.config_get("mode"))) == "auto-edit"
