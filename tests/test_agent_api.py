"""The programmatic interface yuyao.agent_api (spec §0.1.2) against the scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import API_KEY
from fakellm import calls, say

pytestmark = pytest.mark.core


@pytest.fixture
def create_session():
    from yuyao.agent_api import create_session

    return create_session


@pytest.fixture
def session(create_session, api_env, repo):
    """``session(server=None, **create_session_kwargs)`` -> an AgentSession in ``repo``."""
    opened = []

    def open_session(server=None, **kwargs):
        api_env(server)
        kwargs.setdefault("cwd", str(repo))
        opened.append(create_session(**kwargs))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


def write_script(path: Path, call_id: str = "call_write") -> list:
    step = calls([("write", {"file_path": str(path), "content": "new\n"}, call_id)])
    return [step, say("Finished.")]


def bash_script(command: str, call_id: str = "call_bash") -> list:
    return [calls([("bash", {"command": command}, call_id)]), say("Finished.")]


# ---------------------------------------------------------------------------------------------
# Construction


def test_construction_makes_no_request(fake_llm, session):
    server = fake_llm([say("never asked")])
    session(server)
    assert server.requests == []


@pytest.mark.parametrize("url", ["dead", "http://placeholder.invalid/v1"])
def test_construction_with_unreachable_model_succeeds_fast(create_session, api_env, repo, url):
    api_env(**({} if url == "dead" else {"D2A_MODEL_BASE_URL": url}))
    start = time.monotonic()
    s = create_session(cwd=str(repo))
    assert time.monotonic() - start < 5
    s.close()


def test_cwd(session, repo, monkeypatch):
    assert Path(session().cwd).resolve() == repo.resolve()
    sub = repo / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert Path(session(cwd=None).cwd).resolve() == sub.resolve()


def test_close(create_session, api_env, repo):
    api_env()
    create_session(cwd=str(repo)).close()


# ---------------------------------------------------------------------------------------------
# chat


def test_chat_executes_tools_and_records_their_results(fake_llm, session, repo):
    step = calls(
        [
            ("write", {"file_path": str(repo / "a.txt"), "content": "A\n"}, "call_a"),
            ("write", {"file_path": str(repo / "b.txt"), "content": "B\n"}, "call_b"),
        ]
    )
    server = fake_llm([step, say("Wrote both files.")])
    s = session(server, mode="yolo")
    assert "Wrote both files." in s.chat("Create a.txt and b.txt")
    assert (repo / "a.txt").read_text() == "A\n" and (repo / "b.txt").read_text() == "B\n"

    tool_messages = {m.get("tool_call_id"): m for m in s.messages if m.get("role") == "tool"}
    assert set(tool_messages) == {"call_a", "call_b"}, s.messages
    assert set(server.tool_results(1)) == {"call_a", "call_b"}
    assert any(m.get("role") == "user" for m in s.messages)
    assert not any(r["body"].get("stream") for r in server.requests), "agent_api must not stream"


@pytest.mark.parametrize(
    "command, word",
    [("/mode plan", "plan"), ("/plan", "plan"), ("/role ask", "ask"), ("/ask", "ask")],
)
def test_switch_by_dispatch_shows_in_request_and_refuses_writes(
    fake_llm, session, repo, expect_refused, command, word
):
    path = repo / "new.txt"
    server = fake_llm(write_script(path))
    s = session(server, mode="yolo")
    s.dispatch(command)
    s.chat("Create new.txt")
    assert word in server.system_prompt(0).lower()
    assert not path.exists()
    expect_refused(server, "call_write")


def test_role_ask_refuses_writes_even_in_yolo(fake_llm, session, repo, expect_refused):
    path = repo / "new.txt"
    server = fake_llm(write_script(path))
    session(server, role="ask", mode="yolo").chat("Create new.txt")
    assert not path.exists()
    expect_refused(server, "call_write")


@pytest.mark.parametrize(
    "deny, command",
    [
        (["Bash(rm:*)"], "rm victim.txt"),
        (["Bash(rm:*)"], "true && r''m victim.txt"),
        (["bash"], "rm victim.txt"),
    ],
)
def test_deny_rules_refuse_the_tool(fake_llm, session, repo, expect_refused, deny, command):
    victim = repo / "victim.txt"
    victim.write_text("keep me\n")
    server = fake_llm(bash_script(command))
    session(server, mode="yolo", deny=deny).chat("Remove victim.txt")
    assert victim.exists()
    expect_refused(server, "call_bash")


def test_deny_rule_leaves_other_commands_alone(fake_llm, session, repo):
    server = fake_llm(bash_script("touch made.txt"))
    session(server, mode="yolo", deny=["Bash(rm:*)"]).chat("Create made.txt")
    assert (repo / "made.txt").exists()


# ---------------------------------------------------------------------------------------------
# dispatch


def test_config_set_reads_back_in_this_and_a_new_session(session):
    s = session()
    s.dispatch("/config set k v")
    assert s.config_get("k") == "v"
    assert session().config_get("k") == "v"
    assert s.config_get("never.set.key") is None


def test_mcp_add_and_remove(session):
    s = session()
    s.dispatch("/mcp add x")
    assert "x" in s.mcp_servers
    s.dispatch("/mcp remove x")
    assert "x" not in s.mcp_servers


def test_unknown_slash_command_fails_explicitly(session):
    try:
        answer = session().dispatch("/no-such-command")
    except Exception:
        return
    assert "unknown" in answer.lower(), answer


# ---------------------------------------------------------------------------------------------
# Non-interactive


CHAT_WITHOUT_STDIN = """
import json, sys
from yuyao.agent_api import create_session
s = create_session(cwd=sys.argv[1])
print(json.dumps(s.chat("Create new.txt")))
s.close()
"""


def test_chat_never_reads_stdin_or_draws(fake_llm, python, env, repo):
    """In the default mode a write would need approval: nobody may be asked on stdin.

    stdin is a pipe that stays open and silent, so any read would hang until the timeout.
    """
    # "Finished." with the write refused is contradicted by the check, which the model sees
    # once before its final answer: the restated answer is the result.
    server = fake_llm([*write_script(repo / "new.txt"), say("Finished: new.txt was refused.")])
    read_end, write_end = os.pipe()
    try:
        proc = python(CHAT_WITHOUT_STDIN, str(repo), env=env(server), stdin=read_end, timeout=60)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and "was refused" in json.loads(lines[0]), "only the result on stdout"
    assert "\x1b[" not in proc.stdout + proc.stderr, "no live view or spinner"


# ---------------------------------------------------------------------------------------------
# The model key


def test_opening_a_session_takes_the_model_key_out_of_the_environment(fake_llm, session):
    """As `-p` does: once a session is open, the key lives only in the core's memory, so a
    process the host program (or anything in it) starts later cannot inherit it; the session
    still authenticates to the model (the scripted server answers 401 to a wrong key)."""
    server = fake_llm([say("Still talking.")])
    s = session(server)
    assert "D2A_MODEL_API_KEY" not in os.environ
    assert API_KEY not in os.environ.values()
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ.get('D2A_MODEL_API_KEY', 'absent'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == "absent"
    assert s.chat("hello") == "Still talking."
    assert len(server.requests) == 1
