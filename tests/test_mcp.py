"""MCP servers end to end, with real servers nobody here wrote: `mcp-server-time` (stdio, from
PyPI) and a streamable-HTTP server built with the official `mcp` SDK
(tests/mcp_fixture_server.py). Add → tool in the next request → scripted call → real result in
the following request; remove → gone."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from fakellm import FAKE_MODEL, Events, call, say

pytestmark = pytest.mark.core
pytest.importorskip("mcp.server.mcpserver", reason="the mcp SDK (scripts/test-requirements.txt)")

FIXTURE = Path(__file__).with_name("mcp_fixture_server.py")
TIME_SERVER = Path(sys.executable).parent / "mcp-server-time"


def fixture_cmd() -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURE))} stdio"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path):
    """The SDK's streamable-HTTP server on a free port: yields its URL."""
    port = free_port()
    notes = tmp_path / "http-notes.txt"
    proc = subprocess.Popen(
        [sys.executable, str(FIXTURE), "http", str(port)],
        env={**os.environ, "NOTES_FILE": str(notes)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the MCP HTTP server did not start")
    yield f"http://127.0.0.1:{port}/mcp", notes
    proc.kill()
    proc.wait()


def test_stdio_time_server_add_call_remove(fake_llm, api):
    server = fake_llm(
        [
            call("mcp__time__get_current_time", timezone="Europe/Paris"),
            say("It is late."),
            say("No tools."),
        ]
    )
    s = api(server, trust_project=True)
    out = s.dispatch(f"/mcp add time -- {TIME_SERVER} --local-timezone UTC")
    assert "added MCP server 'time'" in out
    assert s.mcp_servers == ["time"]
    s.chat("What time is it in Paris?")
    assert "mcp__time__get_current_time" in server.tool_names(0)
    schema = next(
        t["function"]["parameters"]
        for t in server.body(0)["tools"]
        if t["function"]["name"] == "mcp__time__get_current_time"
    )
    assert schema["type"] == "object" and "timezone" in schema["properties"]
    # Read-only per the server (readOnlyHint): runs in ask mode without a question.
    result = json.loads(server.tool_result("call_0_0") or "{}")
    assert result["timezone"] == "Europe/Paris" and result["datetime"]
    listing = s.dispatch("/mcp list")
    assert "time" in listing and "ready" in listing and "stdio" in listing
    assert "removed MCP server 'time'" in s.dispatch("/mcp remove time")
    assert s.mcp_servers == []
    s.chat("And now?")
    assert not [n for n in server.tool_names(-1) if n.startswith("mcp__")]


def test_http_server_cli_add_list_and_p_permissions(fake_llm, env, yuyao, repo, http_server):
    url, notes = http_server
    e = env()
    added = yuyao("mcp", "add", "notes", url, "--header", "X-Test: 1", env=e)
    assert added.returncode == 0, added.stderr
    listed = yuyao("mcp", "list", env=e)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.strip().startswith("notes"))
    assert "http" in row and "ready" in row and " 8 " in row, listed.stdout
    # The configured header reaches the server.
    server = fake_llm([call("mcp__notes__header", name="X-Test"), say("ok")])
    r = yuyao("-p", "--trust-project", "which header?", env=env(server), timeout=60)
    assert server.tool_result("call_0_0") == "X-Test: 1", r.stderr
    # A tool that changes something is asked for: refused unattended in ask mode...
    server = fake_llm([call("mcp__notes__add_note", text="hello"), say("Could not."), say("x")])
    r = yuyao("-p", "--trust-project", "note hello", env=env(server), timeout=60)
    assert "mcp__notes__add_note" in server.tool_names(0)
    assert "Refused" in server.tool_result("call_0_0")
    assert not notes.exists()
    # ... and runs with an allow rule for the server.
    server = fake_llm([call("mcp__notes__add_note", text="hello"), say("Noted.")])
    r = yuyao(
        "-p", "--trust-project", "note hello", "--allow", "mcp__notes", env=env(server), timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert server.tool_result("call_0_0") == "noted: hello"
    assert notes.read_text() == "hello\n"
    assert yuyao("mcp", "remove", "notes", env=e).returncode == 0
    assert "no MCP servers configured" in yuyao("mcp", "list", env=e).stdout


def test_results_images_model_key_and_crash_reconnect(fake_llm, api):
    server = fake_llm(
        [
            call("mcp__fx__model_key"),
            call("mcp__fx__picture"),
            call("mcp__fx__crash"),
            call("mcp__fx__count_notes"),
            say("done"),
        ]
    )
    s = api(server, trust_project=True)
    s.dispatch(f"/mcp add fx -- {fixture_cmd()}")
    s.chat("go")
    assert server.tool_result("call_0_0") == "model key: absent"
    # The image reaches the model as an image part of a user message.
    parts = [
        p
        for m in server.messages(2)
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for p in m["content"]
    ]
    assert any(p.get("type") == "image_url" for p in parts), server.messages(2)
    crashed = server.tool_result("call_2_0")
    assert "crashed" in crashed and "fx" in crashed
    # One reconnect at the next call: the server answers again.
    assert server.tool_result("call_3_0") == "0 notes"


def test_project_mcp_json_runs_with_p_but_not_when_turned_off(fake_llm, env, yuyao, repo):
    (repo / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"proj": {"command": sys.executable, "args": [str(FIXTURE), "stdio"]}}}
        )
    )
    server = fake_llm([say("hi")])
    assert yuyao("-p", "--trust-project", "hi", env=env(server), timeout=60).returncode == 0
    assert "mcp__proj__count_notes" in server.tool_names(0)
    server = fake_llm([say("hi")])
    r = yuyao("-p", "--trust-project", "hi", "--no-project-extensions", env=env(server), timeout=60)
    assert r.returncode == 0, r.stderr
    assert not [n for n in server.tool_names(0) if n.startswith("mcp__")]
    # The TUI's rule (no choice made by the front): an untrusted project's servers wait.
    listed = yuyao("mcp", "list", env=env())
    assert "not run until the project is trusted" in listed.stdout, listed.stdout


def test_a_mcp_json_the_model_writes_never_starts_in_that_session(fake_llm, api, repo, tmp_path):
    """A hostile model cannot get a process started by writing `.mcp.json` with bash (the file
    did not exist, so no mount protects it): the entry is held — in this session and the next,
    trusted or not — until the user reviews that content, and its tools never reach a request."""
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    evil = {"mcpServers": {"evil": {"command": "sh", "args": ["-c", f"touch {marker}; sleep 30"]}}}
    server = fake_llm(
        [
            call("bash", command=f"cat > .mcp.json <<'EOF'\n{json.dumps(evil)}\nEOF"),
            say("wrote it"),
            say("again"),
            say("next session"),
        ]
    )
    s = api(server, trust_project=True, mode="yolo")
    s.chat("set up mcp")
    assert (repo / ".mcp.json").exists(), server.tool_result("call_0_0")
    s.chat("and now?")
    time.sleep(1.0)
    assert not marker.exists(), "a server written by the model ran with the user's rights"
    assert not [n for n in server.tool_names(2) if n.startswith("mcp__")]
    assert "written by the agent" in s.dispatch("/mcp list")
    s.close()
    # Nor in the next session, even with the user's blanket --trust-project: it waits for a
    # review of that exact content.
    again = api(server, trust_project=True)
    again.chat("hi")
    time.sleep(1.0)
    assert not marker.exists(), "a model-written .mcp.json ran in the next session"
    assert "written by the agent" in again.dispatch("/mcp list")


def test_agent_api_project_extensions_false_and_user_servers_always_run(fake_llm, api, repo):
    (repo / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"proj": {"command": sys.executable, "args": [str(FIXTURE), "stdio"]}}}
        )
    )
    server = fake_llm([say("a"), say("b")])
    s = api(server, project_extensions=False)
    s.dispatch(f"/mcp add mine -- {fixture_cmd()}")
    s.chat("hi")
    names = server.tool_names(0)
    assert "mcp__mine__count_notes" in names and "mcp__proj__count_notes" not in names


def test_hanging_server_does_not_block_and_times_out(fake_llm, api, yuyao_home):
    (yuyao_home / "config.toml").write_text("[mcp]\nstartup_timeout_ms = 400\n")
    hang = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'"
    (yuyao_home / "mcp.json").write_text(
        json.dumps({"mcpServers": {"hang": {"command": "sh", "args": ["-c", f"exec {hang}"]}}})
    )
    server = fake_llm([say("ok")])
    t0 = time.monotonic()
    s = api(server, trust_project=True)
    assert time.monotonic() - t0 < 1.0
    s.chat("hi")
    assert time.monotonic() - t0 < 5.0
    listing = s.dispatch("/mcp list")
    assert "failed" in listing and "did not start within 400 ms" in listing, listing


def test_run_agent_never_runs_the_repo_servers_but_runs_the_users(
    fake_llm, env, run_agent, repo, tmp_path, yuyao_home
):
    server_entry = {"command": sys.executable, "args": [str(FIXTURE), "stdio"]}
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": server_entry}}))
    (yuyao_home / "mcp.json").write_text(json.dumps({"mcpServers": {"mine": server_entry}}))
    task = tmp_path / "task.txt"
    task.write_text("What is in the notes?")
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({"max_steps": 5}))
    server = fake_llm([call("mcp__mine__model_key"), say("Nothing.")])
    r = run_agent(
        *("--task-file", str(task), "--repo-dir", str(repo), "--budget-file", str(budget)),
        *("--out-dir", str(tmp_path / "out"), "--model-base-url", server.url),
        *("--model-name", FAKE_MODEL, "--model-api-key", server.api_key),
        env=env(),
        timeout=90,
    )
    assert r.returncode in (0, 1), r.stderr
    names = server.tool_names(0)
    assert "mcp__mine__count_notes" in names and "mcp__proj__count_notes" not in names
    # The model key given on the command line is not in the server's environment either.
    assert server.tool_result("call_0_0") == "model key: absent"


def test_a_server_name_that_could_pass_for_another_servers_is_skipped(fake_llm, api, repo):
    """A repository's `time__x` server would offer `mcp__time__x__…` tools, which a user's
    `mcp__time` allow rule covers: such a name never runs, and the listing says why."""
    entry = {"command": sys.executable, "args": [str(FIXTURE), "stdio"]}
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"time__x": entry}}))
    server = fake_llm([say("a")])
    s = api(server, trust_project=True)
    s.chat("hi")
    assert not [n for n in server.tool_names(0) if n.startswith("mcp__")]
    assert "'time__x'" in s.dispatch("/mcp list") and "skipped" in s.dispatch("/mcp list")


def test_tui_rule_project_servers_wait_for_trust_and_say_what_would_run(fake_llm, use_env, repo):
    """The TUI's options leave `project_extensions` unset: an untrusted project's servers are
    named with their command at open, do not run, and start once the user trusts it."""
    from yuyao import _core

    entry = {"command": sys.executable, "args": [str(FIXTURE), "stdio"]}
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))
    server = fake_llm([say("a"), say("b")])
    use_env(server)
    events = Events()
    s = _core.Session(json.dumps({"cwd": str(repo), "stream": False}), events)
    try:
        notices = [e["text"] for e in events.events if e.get("type") == "notice"]
        assert any("trust" in n and str(FIXTURE) in n for n in notices), notices
        s.chat("hi")
        assert not [n for n in server.tool_names(0) if n.startswith("mcp__")]
        s.dispatch("/trust")
        s.chat("again")
        assert "mcp__proj__count_notes" in server.tool_names(1)
    finally:
        s.close()


def test_a_long_result_is_capped_and_spilled_like_other_tools(fake_llm, api):
    server = fake_llm([call("mcp__fx__big"), say("done")])
    s = api(server, trust_project=True)
    s.dispatch(f"/mcp add fx -- {fixture_cmd()}")
    s.chat("go")
    result = server.tool_result("call_0_0")
    assert "line 0 of a long result" in result and "line 19999 of a long result" in result
    assert "output truncated" in result and len(result) < 100_000
    spill = Path(re.search(r"is in (\S+/mcp-\S+\.txt);", result).group(1))
    assert spill.read_text().count("of a long result") == 20000


def test_closing_the_session_stops_its_stdio_servers(fake_llm, api):
    server = fake_llm([call("mcp__fx__pid"), say("done")])
    s = api(server, trust_project=True)
    # A token in its command line finds it from here: it runs in a PID namespace, so the pid
    # it reports is not a pid of this machine's /proc.
    token = f"fx-{uuid.uuid4().hex}"
    s.dispatch(f"/mcp add fx -- {fixture_cmd()} {token}")
    s.chat("go")
    assert server.tool_result("call_0_0").isdigit()
    assert running_with(token)
    s.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not running_with(token):
            return
        time.sleep(0.05)
    pytest.fail(f"the MCP server {running_with(token)} still runs after close")


def running_with(arg: str) -> list[int]:
    """Host pids of live processes (not zombies) with `arg` in their command line."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(") ", 1)[1][0]
        except OSError:
            continue
        if arg.encode() in argv and state != "Z":
            found.append(int(proc.name))
    return found
