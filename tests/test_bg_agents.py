"""Background sessions (Agent View): `yuyao --bg`, `--bg --exec`, `yuyao agents
list|dispatch|attach|stop`, `/background`. Each session is a detached process (its own
session and process group) with its state under `$YUYAO_HOME/agents/<id>/`."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from conftest import git
from fakellm import call, say

pytestmark = pytest.mark.core


def list_row(yuyao, env, session_id: str) -> str:
    result = yuyao("agents", "list", env=env)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(session_id)]
    assert len(rows) == 1, result.stdout
    return rows[0]


def wait_state(yuyao, env, session_id: str, state: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    row = ""
    while time.monotonic() < deadline:
        row = list_row(yuyao, env, session_id)
        if f"  {state}  " in row:
            return row
        time.sleep(0.2)
    pytest.fail(f"{session_id} never reached {state!r}: {row}")


def status(home: Path, session_id: str) -> dict:
    return json.loads((home / "agents" / session_id / "status.json").read_text())


def group_members(pgid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out


def processes_with(marker: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != "Z":
            out.append(int(entry.name))
    return out


def dispatch(yuyao, env, *args: str) -> str:
    started = time.monotonic()
    result = yuyao(*args, env=env)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    session_id = result.stdout.strip()
    assert session_id.startswith("bg-"), result.stdout
    return session_id, elapsed


def test_bg_runs_then_awaits_approval_then_attach_answers_and_it_is_done(
    fake_llm, env, repo, yuyao, yuyao_home
):
    from test_tui import CTRL_D, Term

    server = fake_llm(
        [
            {**call("bash", command="echo from-bg > bg.txt"), "delay": 1.5},
            say("Wrote bg.txt in the background."),
            say("Continued in the attached TUI."),
        ]
    )
    e = env(server)
    session_id, elapsed = dispatch(yuyao, e, "--bg", "write bg.txt", "--mode", "ask")
    assert elapsed < 1.0, f"--bg took {elapsed:.2f}s"
    # Detached: its own session and process group, no terminal.
    pid = status(yuyao_home, session_id)["pid"]
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    assert int(stat[2]) == pid and int(stat[3]) == pid  # pgrp and session are its own
    row = wait_state(yuyao, e, session_id, "running")
    worktree = repo / ".yuyao" / "worktrees" / session_id
    assert str(worktree) in row
    # The model asks for bash in ask mode: the session waits for a person, no terminal blocked.
    row = wait_state(yuyao, e, session_id, "awaiting input")
    assert "bash" in row
    pending = json.loads((yuyao_home / "agents" / session_id / "pending.json").read_text())
    assert "echo from-bg" in json.dumps(pending)
    assert not (worktree / "bg.txt").exists()

    term = Term([sys.executable, "-m", "yuyao", "agents", "attach", session_id], e, repo)
    try:
        term.wait_for(r"> write bg\.txt")  # the transcript so far
        term.wait_for(r"permission: bash")  # the TUI's own approval panel
        term.wait_for(r"echo from-bg > bg\.txt")
        term.send("y")
        term.wait_for(r"Wrote bg\.txt in the background\.")
        term.wait_for(rf"{session_id}: done")
        term.wait_ready()  # then the TUI, on the same conversation, to continue
        term.line("anything else?")
        term.wait_for(r"Continued in the attached TUI\.")
        continued = json.dumps(server.messages(-1))
        assert "write bg.txt" in continued and "anything else?" in continued
        assert "Wrote bg.txt in the background." in continued
        term.send(CTRL_D)
        assert term.wait_exit() == 0
        assert "mini" not in term.transcript().lower()
    finally:
        term.close()
    row = list_row(yuyao, e, session_id)
    assert "  done  " in row
    assert (worktree / "bg.txt").read_text() == "from-bg\n"
    # Committed on its branch; the main tree untouched.
    assert git(repo, "show", f"yuyao/{session_id}:bg.txt") == "from-bg\n"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (repo / "bg.txt").exists()
    # The approved command ran: its result went back to the model.
    assert "exit code 0" in (server.tool_result("call_0_0") or "") or (
        "refused" not in (server.tool_result("call_0_0") or "").lower()
    )


@pytest.mark.parametrize("sandbox", ["workspace-write", "full-access"])
def test_stop_kills_the_whole_process_group_and_keeps_the_worktree(
    fake_llm, env, repo, yuyao, yuyao_home, sandbox
):
    marker = "61.25" if sandbox == "workspace-write" else "62.75"
    server = fake_llm([call("bash", command=f"sleep {marker}"), say("slept")])
    e = env(server)
    session_id, _ = dispatch(
        yuyao, e, "--bg", "sleep a while", "--mode", "yolo", "--sandbox", sandbox
    )
    deadline = time.monotonic() + 30
    while not processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(f"sleep {marker}"), "the tool command never started"
    pgid = status(yuyao_home, session_id)["pid"]
    assert group_members(pgid)
    result = yuyao("agents", "stop", session_id, env=e)
    assert result.returncode == 0, result.stderr
    assert "stopped" in result.stdout
    deadline = time.monotonic() + 5
    while (
        group_members(pgid) or processes_with(f"sleep {marker}")
    ) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group_members(pgid) == []
    assert processes_with(f"sleep {marker}") == []
    assert "  stopped  " in list_row(yuyao, e, session_id)
    assert (repo / ".yuyao" / "worktrees" / session_id).is_dir()


def test_a_killed_background_process_shows_as_failed(fake_llm, env, repo, yuyao, yuyao_home):
    server = fake_llm([call("bash", command="touch never.txt"), say("never")])
    e = env(server)
    session_id, _ = dispatch(yuyao, e, "agents", "dispatch", "wait for approval")
    wait_state(yuyao, e, session_id, "awaiting input")
    pid = status(yuyao_home, session_id)["pid"]
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    row = list_row(yuyao, e, session_id)
    assert "  failed  " in row, row
    assert "awaiting input" not in row and "running" not in row
    # Attaching shows it failed and does not ask the dead process's question.
    from test_tui import CTRL_D, Term

    term = Term([sys.executable, "-m", "yuyao", "agents", "attach", session_id], e, repo)
    try:
        term.wait_for(rf"{session_id}: failed")
        term.wait_ready()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
        assert "permission:" not in term.transcript()
    finally:
        term.close()


def test_bg_exec_runs_a_shell_job_in_the_background(env, repo, yuyao, yuyao_home):
    e = env(None)
    session_id, elapsed = dispatch(yuyao, e, "--bg", "--exec", "sleep 0.5; echo job-output-42")
    assert elapsed < 1.0
    row = wait_state(yuyao, e, session_id, "done")
    assert "sleep 0.5" in status(yuyao_home, session_id)["task"]
    output = (yuyao_home / "agents" / session_id / "output.log").read_text()
    assert "job-output-42" in output
    assert status(yuyao_home, session_id)["exit_code"] == 0
    assert "(in " in row  # a shell job runs where it was started, no worktree
    # attach follows a running job's output as it grows, then says how it ended.
    from test_tui import Term

    slow = dispatch(
        yuyao, e, "--bg", "--exec", "echo first-$((0+1)); sleep 3; echo second-$((1+1))"
    )[0]
    term = Term([sys.executable, "-m", "yuyao", "agents", "attach", slow], e, repo)
    try:
        term.wait_for(r"first-1")
        assert "second-2" not in term.transcript()  # shown while the job still runs
        term.wait_for(r"second-2")
        term.wait_for(rf"{slow}: done")
        assert term.wait_exit() == 0
    finally:
        term.close()
    failing = dispatch(yuyao, e, "--bg", "--exec", "exit 3")[0]
    wait_state(yuyao, e, failing, "failed")
    assert status(yuyao_home, failing)["exit_code"] == 3


def test_agents_refuses_unknown_ids_and_path_tricks(env, repo, yuyao):
    e = env(None)
    for bad in ("../../etc", "bg-nothere"):
        result = yuyao("agents", "stop", bad, env=e)
        assert result.returncode == 1
        assert "background session" in result.stderr
    for args in (["agents", "list"], ["agents"]):  # list is the default action
        result = yuyao(*args, env=e)
        assert result.returncode == 0
        assert "no background sessions" in result.stdout


def test_slash_background_detaches_the_conversation(fake_llm, env, repo, yuyao, yuyao_home):
    from test_tui import Term

    server = fake_llm([say("First answer."), say("Continued in the background.")])
    e = env(server)
    term = Term([sys.executable, "-m", "yuyao", "--mode", "yolo"], e, repo)
    try:
        term.wait_ready()
        term.line("remember the number 7")
        term.wait_for(r"First answer\.")
        term.line("/bg now say what the number was")
        term.wait_for(r"yuyao agents attach (bg-[0-9a-f]+)")
        assert term.wait_exit() == 0
    finally:
        term.close()
    import re

    session_id = re.search(r"attach (bg-[0-9a-f]+)", term.transcript()).group(1)
    wait_state(yuyao, e, session_id, "done")
    # The background process continued the same conversation: the earlier turn is there.
    last = server.messages(-1)
    texts = json.dumps(last)
    assert "remember the number 7" in texts and "now say what the number was" in texts
    assert "First answer." in texts


def test_bg_reads_a_piped_task(fake_llm, env, repo, yuyao, yuyao_home):
    import subprocess

    server = fake_llm([say("Read from stdin.")])
    e = env(server)
    from conftest import yuyao_command

    proc = subprocess.run(
        [*yuyao_command(), "--bg"], input=b"the piped task\n", env=e, cwd=repo, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    session_id = proc.stdout.decode().strip()
    wait_state(yuyao, e, session_id, "done")
    assert status(yuyao_home, session_id)["task"] == "the piped task"
    assert "the piped task" in server.user_text(0)


def test_bg_without_a_task_is_a_usage_error(env, repo, yuyao, yuyao_home):
    result = yuyao("--bg", env=env(None))
    assert result.returncode == 2
    assert "--bg needs a task" in result.stderr
    assert not (yuyao_home / "agents").exists()
    assert not (repo / ".yuyao").exists()


def test_background_from_a_worktree_session_keeps_the_worktree(fake_llm, env, repo, yuyao):
    from test_tui import Term

    server = fake_llm([{**say("Working on it in the background."), "delay": 1.0}])
    e = env(server)
    term = Term([sys.executable, "-m", "yuyao", "--worktree=wb", "--mode", "yolo"], e, repo)
    try:
        term.wait_ready()
        term.line("/background write the report")
        term.wait_for(r"yuyao agents attach (bg-[0-9a-f]+)")
        assert term.wait_exit() == 0
        assert "Keep, merge or remove" not in term.transcript()
    finally:
        term.close()
    import re

    session_id = re.search(r"attach (bg-[0-9a-f]+)", term.transcript()).group(1)
    worktree = repo / ".yuyao" / "worktrees" / "wb"
    assert f"worktree kept: {worktree} (background session {session_id}" in term.transcript()
    row = wait_state(yuyao, e, session_id, "done")
    assert f"(in {worktree})" in row
    assert worktree.is_dir()
    assert "write the report" in server.user_text(0)


def test_bg_outside_git_works_in_the_directory_and_says_so(fake_llm, env, tmp_path, yuyao):
    plain = tmp_path / "plain"
    plain.mkdir()
    server = fake_llm([say("Nothing to change.")])
    e = env(server)
    result = yuyao("--bg", "look around", env=e, cwd=plain)
    assert result.returncode == 0, result.stderr
    session_id = result.stdout.strip()
    assert "not inside a git repository: the session works in it directly" in result.stderr
    row = wait_state(yuyao, e, session_id, "done")
    assert f"(in {plain})" in row
    assert not (plain / ".yuyao").exists()


def test_attach_can_leave_a_question_unanswered(fake_llm, env, repo, yuyao, yuyao_home):
    from test_tui import ESC, Term

    server = fake_llm([call("bash", command="touch later.txt"), say("done later")])
    e = env(server)
    session_id, _ = dispatch(yuyao, e, "agents", "dispatch", "touch later.txt")
    wait_state(yuyao, e, session_id, "awaiting input")
    term = Term([sys.executable, "-m", "yuyao", "agents", "attach", session_id], e, repo)
    try:
        term.wait_for(r"permission: bash")
        term.send(ESC)
        term.wait_for(rf"detached; {session_id} runs on")
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert "  awaiting input  " in list_row(yuyao, e, session_id)
    assert (yuyao_home / "agents" / session_id / "pending.json").exists()
    assert yuyao("agents", "stop", session_id, env=e).returncode == 0
