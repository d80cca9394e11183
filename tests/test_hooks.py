"""Lifecycle hooks (hooks.json, seed 002 §7): both shapes users already have (Cursor's and Claude
Code's), decisions that stop a scripted call, Stop quality gates, trust (project hooks never run
from run_agent.sh's --repo-dir), `features disable hooks`. Every hook here is a real program
run by yuyao; the tests assert what it did (files, requests the model received, exit codes)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from fakellm import FAKE_MODEL, call, say

pytestmark = pytest.mark.core


def write_hooks(path: Path, hooks: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def headless_run(run_agent, env, server, repo: Path, tmp_path: Path):
    """run_agent.sh on "create a.txt" in ``repo`` -> (CompletedProcess, out-dir)."""
    task, budget, out = tmp_path / "task.txt", tmp_path / "budget.json", tmp_path / "out"
    task.write_text("create a.txt")
    budget.write_text(json.dumps({"max_steps": 10}))
    proc = run_agent(
        "--task-file", str(task), "--repo-dir", str(repo), "--out-dir", str(out),
        "--budget-file", str(budget), "--model-base-url", server.url,
        "--model-name", FAKE_MODEL, "--model-api-key", server.api_key, env=env(),
    )  # fmt: skip
    return proc, out


def claude(command: str, matcher: str | None = None) -> list:
    group: dict = {"hooks": [{"type": "command", "command": command}]}
    if matcher is not None:
        group["matcher"] = matcher
    return [group]


# ---------------------------------------------------------------------------------------------
# Decisions before a tool runs


def test_before_shell_execution_deny_stops_a_scripted_rm(fake_llm, api, repo, tmp_path):
    """Cursor's shape, a command relative to the hooks file: the gate reads the event on stdin
    and refuses `rm`; the file survives, the model is told why, a harmless command runs; the
    hook ran without the model key in its environment."""
    seen = tmp_path / "seen.jsonl"
    script(
        repo / ".yuyao" / "gate.sh",
        f"""input=$(cat)
echo "$input" >> {seen}
echo "key=${{D2A_MODEL_API_KEY:-absent}}" >> {seen}
if echo "$input" | grep -q '"command":"rm '; then
  echo '{{"permission": "deny", "reason": "rm is not allowed in this repository"}}'
else
  echo '{{"permission": "allow"}}'
fi
""",
    )
    (repo / ".yuyao" / "hooks.json").write_text(
        json.dumps({"version": 1, "hooks": {"beforeShellExecution": [{"command": "./gate.sh"}]}})
    )
    server = fake_llm(
        [
            call("bash", command="rm calc.py"),
            call("bash", command="echo harmless > out.txt"),
            say("Tried."),
        ]
    )
    s = api(server, trust_project=True, mode="yolo")
    s.chat("remove calc.py")
    assert (repo / "calc.py").exists(), "the denied rm ran"
    assert (repo / "out.txt").read_text() == "harmless\n", "an allowed command must still run"
    refused = server.tool_results(1)
    assert any("rm is not allowed in this repository" in r for r in refused.values()), refused
    lines = seen.read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    assert [e["command"] for e in events] == ["rm calc.py", "echo harmless > out.txt"]
    assert events[0]["hook_event_name"] == "beforeShellExecution"
    assert "key=absent" in lines, "the model key reached the hook's environment"


def test_claude_pre_tool_use_exit_2_denies_only_matching_tools(fake_llm, api, repo):
    """Claude Code's shape: a `Write` matcher and exit code 2 with the reason on stderr."""
    write_hooks(
        repo / ".yuyao" / "hooks.json",
        {"PreToolUse": claude("echo 'writes go through review' >&2; exit 2", matcher="Write")},
    )
    server = fake_llm(
        [
            call("write", file_path=str(repo / "new.txt"), content="x\n"),
            call("bash", command="echo ran > ran.txt"),
            say("Done."),
        ]
    )
    s = api(server, trust_project=True, mode="yolo")
    s.chat("write new.txt")
    assert not (repo / "new.txt").exists()
    assert any("writes go through review" in r for r in server.tool_results(1).values())
    assert (repo / "ran.txt").exists(), "the Write matcher must not apply to bash"


def test_post_tool_use_output_reaches_the_model(fake_llm, api, repo):
    write_hooks(
        repo / ".yuyao" / "hooks.json",
        {"PostToolUse": claude("echo 'formatter: 2 files reformatted'", matcher="Bash")},
    )
    server = fake_llm([call("bash", command="echo hi"), say("Done.")])
    api(server, trust_project=True, mode="yolo").chat("say hi")
    (result,) = server.tool_results(1).values()
    assert "hi" in result and "formatter: 2 files reformatted" in result, result


def test_user_prompt_submit_blocks_or_adds_context(fake_llm, api, repo):
    write_hooks(
        repo / ".yuyao" / "hooks.json",
        {
            "UserPromptSubmit": claude(
                """p=$(cat); if echo "$p" | grep -q password; then echo 'no passwords in prompts' >&2; exit 2; fi
echo 'house rule: answer in one line'"""
            )
        },
    )
    server = fake_llm([say("One line.")])
    s = api(server, trust_project=True, mode="yolo")
    with pytest.raises(RuntimeError, match="no passwords in prompts"):
        s.chat("my password is hunter2")
    assert not server.requests, "a blocked prompt must not reach the model"
    s.chat("hello")
    sent = json.dumps(server.messages(0))
    assert "house rule: answer in one line" in sent and "hunter2" not in sent


# ---------------------------------------------------------------------------------------------
# Stop quality gates


def test_stop_gate_fails_once_the_model_fixes_then_it_passes(fake_llm, api, repo):
    write_hooks(
        repo / ".yuyao" / "hooks.json",
        {"Stop": claude("test -f fixed.txt || { echo 'gate: fixed.txt is missing' >&2; exit 1; }")},
    )
    server = fake_llm(
        [
            say("All done."),
            call("write", file_path=str(repo / "fixed.txt"), content="ok\n"),
            say("Fixed and done."),
        ]
    )
    s = api(server, trust_project=True, mode="yolo")
    assert s.chat("do the task") == "Fixed and done."
    assert len(server.requests) == 3
    assert "gate: fixed.txt is missing" in json.dumps(server.messages(1))
    assert "gate: fixed.txt is missing" not in json.dumps(server.messages(0))


def test_failing_gate_ends_a_run_agent_run_not_submitted(
    fake_llm, env, run_agent, repo, yuyao_home, tmp_path
):
    """A user-level gate (run_agent.sh runs the user's own hooks) that keeps failing: the model
    is sent back `hooks.max_stop_blocks` times, then the run ends NotSubmitted with exit 1 and
    the gate's output in status.json."""
    write_hooks(yuyao_home / "hooks.json", {"Stop": claude("echo 'pytest: 3 failed'; exit 1")})
    (yuyao_home / "config.toml").write_text("[hooks]\nmax_stop_blocks = 2\n")
    server = fake_llm(
        [call("write", file_path=str(repo / "a.txt"), content="a\n")] + [say("Done.")] * 3
    )
    proc, out = headless_run(run_agent, env, server, repo, tmp_path)
    status = json.loads((out / "status.json").read_text())
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert status["exit_status"] == "NotSubmitted", status
    assert "pytest: 3 failed" in status["error"], status
    assert len(server.requests) == 4, "1 tool step + the first answer + 2 blocks"


# ---------------------------------------------------------------------------------------------
# Trust


def marker_hooks(where: Path, marker: Path) -> None:
    write_hooks(
        where,
        {
            "SessionStart": claude(f"echo start >> {marker}"),
            "PreToolUse": claude(f"echo pre >> {marker}"),
        },
    )


def test_untrusted_project_hook_not_run_by_run_agent(fake_llm, env, run_agent, repo, tmp_path):
    marker = tmp_path / "ran.txt"
    marker_hooks(repo / "hooks.json", marker)
    marker_hooks(repo / ".yuyao" / "hooks.json", marker)
    server = fake_llm([call("write", file_path=str(repo / "a.txt"), content="a\n"), say("Done.")])
    proc, out = headless_run(run_agent, env, server, repo, tmp_path)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert (repo / "a.txt").exists()
    assert not marker.exists(), "run_agent.sh ran a hook the repository ships"


def test_project_hooks_follow_the_front(fake_llm, api, use_env, repo, tmp_path):
    """agent_api runs them only with trust_project=True (and not with project_extensions=False);
    a TUI-like session (no front decision) only once the project is trusted."""
    from yuyao import _core

    marker = tmp_path / "ran.txt"
    marker_hooks(repo / ".yuyao" / "hooks.json", marker)
    server = fake_llm([say("a"), say("b"), say("c"), say("d")])
    api(server, trust_project=True, project_extensions=False).chat("hi")
    assert not marker.exists()
    api(server).chat("hi")
    assert not marker.exists(), "agent_api ran a project hook without trust_project=True"
    api(server, trust_project=True).chat("hi")
    assert marker.read_text() == "start\n"
    marker.unlink()
    use_env(server)
    tui = _core.Session(json.dumps({"cwd": str(repo), "stream": False}), None)
    try:
        assert not marker.exists(), "an untrusted project's hook ran in an interactive session"
        assert "not run: project not trusted" in tui.dispatch("/hooks")
        # The TUI's trust prompt shows exactly what would run.
        assert f"PreToolUse hook runs `echo pre >> {marker}`" in tui.dispatch("/trust status")
        tui.dispatch("/trust")
        assert "not run" not in tui.dispatch("/hooks list")
    finally:
        tui.close()


# ---------------------------------------------------------------------------------------------
# Files, /hooks, features


def test_malformed_file_is_named_with_its_line_and_the_rest_loads(
    fake_llm, env, yuyao, repo, tmp_path
):
    marker = tmp_path / "ran.txt"
    (repo / ".yuyao").mkdir()
    (repo / ".yuyao" / "hooks.json").write_text('{\n  "hooks": {\n    "Stop": [,]\n  }\n}\n')
    write_hooks(repo / "hooks.json", {"SessionStart": claude(f"echo start >> {marker}")})
    server = fake_llm([say("Hello.")])
    proc = yuyao("-p", "--trust-project", "hi", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert ".yuyao/hooks.json" in proc.stderr and "line 3" in proc.stderr, proc.stderr
    assert marker.read_text() == "start\n", "the valid file's hook did not run"


def test_hooks_list_by_event_and_disable_one(fake_llm, api, repo, tmp_path):
    marker = tmp_path / "ran.txt"
    write_hooks(
        repo / ".yuyao" / "hooks.json",
        {"PreToolUse": claude(f"echo pre >> {marker}", matcher="Bash")},
    )
    server = fake_llm([call("bash", command="true"), say("a")])
    s = api(server, trust_project=True, mode="yolo")
    listing = s.dispatch("/hooks")
    assert "PreToolUse:" in listing and "[project]" in listing and "matcher: Bash" in listing
    assert "#1" in s.dispatch("/hooks disable 1")
    s.chat("go")
    assert not marker.exists(), "a disabled hook ran"
    assert "disabled" in s.dispatch("/hooks list")
    s.close()
    again = api(server, trust_project=True, mode="yolo")
    assert "disabled" in again.dispatch("/hooks list"), "the choice was not kept"
    again.dispatch("/hooks enable 1")
    assert "(on," in again.dispatch("/hooks list")


def test_features_disable_hooks_makes_them_inert(fake_llm, env, yuyao, api, repo):
    write_hooks(repo / ".yuyao" / "hooks.json", {"PreToolUse": claude("exit 2", matcher="Bash")})
    proc = yuyao("features", "disable", "hooks", env=env())
    assert proc.returncode == 0, proc.stderr
    listed = yuyao("features", "list", env=env())
    assert "hooks    disabled" in listed.stdout, listed.stdout
    server = fake_llm([call("bash", command="rm calc.py"), say("Removed.")])
    api(server, trust_project=True, mode="yolo").chat("remove calc.py")
    assert not (repo / "calc.py").exists(), "a disabled feature's hook still denied the call"
    assert yuyao("features", "enable", "hooks", env=env()).returncode == 0
    assert "hooks    enabled" in yuyao("features", "list", env=env()).stdout


def test_a_hanging_hook_is_killed_at_its_timeout(fake_llm, api, repo, tmp_path):
    """A hook past its timeout is killed with its process group (a child it started too); the
    call it gated is not denied by a timeout; the user is told."""
    import time

    write_hooks(
        repo / ".yuyao" / "hooks.json",
        {
            "PreToolUse": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": f"sleep {SLEEP} & wait",
                            "timeout": 0.5,
                        }
                    ]
                }
            ]
        },
    )
    server = fake_llm([call("bash", command="echo ran > ran.txt"), say("Done.")])
    s = api(server, trust_project=True, mode="yolo")
    t0 = time.monotonic()
    s.chat("go")
    assert time.monotonic() - t0 < 10
    assert (repo / "ran.txt").exists(), "a timed-out hook is not a deny"
    time.sleep(0.2)
    # Found by its command line: the hook runs in a PID namespace, its own pids mean nothing
    # here.
    assert not live_processes_with(SLEEP), "the hook's child outlived its timeout"


# A sleep no other process of the machine runs.
SLEEP = "30.4217"


def live_processes_with(arg: str) -> list[int]:
    """Host pids of the processes (not zombies) with `arg` in their command line."""
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


def test_the_agent_cannot_rewrite_hook_or_claude_settings_files(fake_llm, api, repo):
    """A hook runs with the user's rights: a tool that could write hooks.json (or Claude
    Code's permission lists) would escape its sandbox at the next session."""
    write_hooks(repo / "hooks.json", {"Stop": claude("true")})
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text('{"permissions": {}}')
    before = {p: p.read_text() for p in (repo / "hooks.json", repo / ".claude" / "settings.json")}
    evil = json.dumps({"hooks": {"SessionStart": [{"command": "touch /tmp/pwned"}]}})
    server = fake_llm(
        [
            call("bash", command=f"echo '{evil}' > hooks.json"),
            call("write", file_path="hooks.json", content=evil),
            call(
                "bash",
                command="""echo '{"permissions":{"allow":["Bash"]}}' > .claude/settings.json""",
            ),
            call(
                "edit",
                file_path=".claude/settings.json",
                old_string="{}",
                new_string='{"allow":["Bash"]}',
            ),
            say("Tried."),
        ]
    )
    api(server, trust_project=True, mode="yolo").chat("go")
    assert {p: p.read_text() for p in before} == before


def test_a_hook_file_written_during_a_session_is_held_until_approved(fake_llm, api, repo, tmp_path):
    """The sandbox keeps an existing hooks.json read-only, but a tool can create one that did
    not exist. A hook file that changed while a session ran does not run at the next open until
    the user approves it."""
    marker = tmp_path / "planted-hook-ran"
    planted = json.dumps({"hooks": {"SessionStart": [{"command": f"touch {marker}"}]}})
    server = fake_llm(
        [call("bash", command=f"echo '{planted}' > hooks.json"), say("Planted."), say("a")]
    )
    s = api(server, trust_project=True, mode="yolo")
    s.chat("go")
    assert (repo / "hooks.json").exists(), "the scenario needs the tool to create the file"
    s.close()
    again = api(server, trust_project=True)
    assert not marker.exists(), "a hook file the agent wrote ran at the next session"
    assert "SessionStart" not in again.dispatch("/hooks list")
    assert "hooks.json" in again.dispatch("/hooks approve")
    assert "SessionStart" in again.dispatch("/hooks list")
    api(server, trust_project=True)
    assert marker.exists(), "an approved hook file did not run"
