"""Parallel work never edits the user's checkout while it runs: a writable custom agent
started by `task`, and `/fork` in a writing mode, work in a worktree of their own seeded with
the checkout as it is (uncommitted changes included); their work comes back as uncommitted
changes applied to the checkout, never as a commit on the user's branch."""

from __future__ import annotations

import subprocess
import time

import pytest
from fakellm import call, calls, say, tool_msgs, users_of
from test_subagents import kind, task

pytestmark = pytest.mark.core


def git_out(repo, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def writer(repo) -> None:
    agents = repo / ".yuyao" / "agents"
    agents.mkdir(parents=True)
    (agents / "writer.md").write_text(
        "---\nname: writer\ndescription: writes code\nmode: yolo\n---\nYou write files.\n"
    )


def test_a_writing_task_works_in_its_own_worktree(fake_llm, api, repo):
    writer(repo)
    # The user's uncommitted edit: the sub-agent must see it, and keep it.
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b  # USER-EDIT\n")
    head = git_out(repo, "rev-parse", "HEAD")
    seen = {}

    def respond(body, i):
        if kind(body) == "sub":
            results = tool_msgs(body)
            if not results:
                return calls(
                    [
                        ("bash", {"command": "pwd; cat calc.py"}, "s1"),
                        ("write", {"file_path": "helper.py", "content": "X = 1\n"}, "s2"),
                    ]
                )
            seen["sub"] = results[0]["content"]
            # While it runs, the checkout has no helper.py yet.
            seen["main_during"] = (repo / "helper.py").exists()
            return say("helper.py written")
        if not tool_msgs(body):
            return calls([task("write helper", "add helper.py", "writer", "t1")])
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True, mode="yolo")
    assert s.chat("use the writer") == "ok"
    assert ".yuyao/worktrees/task-" in seen["sub"], seen["sub"]
    assert "USER-EDIT" in seen["sub"], "the worktree starts from the checkout as it is"
    assert seen["main_during"] is False
    # Back as uncommitted changes; the user's edit kept; no commit on the user's branch.
    assert (repo / "helper.py").read_text() == "X = 1\n"
    assert "USER-EDIT" in (repo / "calc.py").read_text()
    assert git_out(repo, "rev-parse", "HEAD") == head
    result = server.tool_result("t1")
    assert "applied to the work tree as uncommitted changes" in result and "helper.py" in result
    # The worktree and its branch are gone once applied.
    assert not list((repo / ".yuyao" / "worktrees").glob("task-*"))
    assert "yuyao/task-" not in git_out(repo, "branch", "--list")


def test_a_read_only_task_needs_no_worktree(fake_llm, api, repo):
    def respond(body, i):
        if kind(body) == "sub":
            if not tool_msgs(body):
                return call("bash", command="pwd")
            return say("looked")
        if not tool_msgs(body):
            return calls([task("look", "look around", None, "t1")])
        return say("ok")

    server = fake_llm(respond)
    s = api(server, mode="yolo")
    s.chat("look")
    assert ".yuyao/worktrees" not in (server.tool_result("t1") or "")
    assert not (repo / ".yuyao" / "worktrees").exists() or not list(
        (repo / ".yuyao" / "worktrees").iterdir()
    )


def test_a_writing_fork_leaves_the_checkout_alone_until_its_report(fake_llm, api, repo):
    fork_done = {}

    def respond(body, i):
        if kind(body) == "sub":
            if not tool_msgs(body):
                return call("write", file_path="forked.txt", content="from the fork\n")
            fork_done["at"] = time.monotonic()
            return say("FORK-RESULT: forked.txt written")
        text = users_of(body)
        if "main work" in text and "FORK-RESULT" not in text:
            return {**say("still working"), "delay": 0.1}
        return say("main done")

    server = fake_llm(respond)
    s = api(server, trust_project=True, mode="yolo")
    s.dispatch("/fork write forked.txt")
    deadline = time.monotonic() + 20
    while "at" not in fork_done and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    # The fork finished its work in its worktree: the checkout is untouched until the report
    # joins the session.
    assert not (repo / "forked.txt").exists()
    s.chat("main work")
    assert (repo / "forked.txt").read_text() == "from the fork\n"
    joined = [users_of(r["body"]) for r in server.requests if kind(r["body"]) == "main"]
    assert any("applied to the work tree as uncommitted changes" in u for u in joined), joined


@pytest.mark.parametrize("mode", ["plan"])
def test_a_read_only_fork_makes_no_worktree(fake_llm, api, repo, mode):
    server = fake_llm([say("looked around")])
    s = api(server, trust_project=True, mode=mode)
    s.dispatch("/fork look around")
    deadline = time.monotonic() + 10
    while "running" in s.dispatch("/tasks") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not (repo / ".yuyao" / "worktrees").exists() or not list(
        (repo / ".yuyao" / "worktrees").iterdir()
    )


def test_a_hook_file_a_fork_brings_back_is_never_approved_by_the_blanket_trust(fake_llm, api, repo):
    """A writing fork plants `hooks.json` in its worktree; when its work comes back to
    the checkout, the file is marked as the agent's at once, so `/trust` (the blanket gesture,
    which approves what is there but what the agent wrote) leaves it held and the hook never
    runs."""
    import json

    marker = repo / "hook-ran"
    group = {"hooks": [{"type": "command", "command": f"touch {marker}"}]}
    hooks = json.dumps({"hooks": {"PreToolUse": [group]}})
    done = {}

    def respond(body, i):
        if kind(body) == "sub":
            if not tool_msgs(body):
                return call("bash", command=f"cat > hooks.json <<'EOF'\n{hooks}\nEOF")
            done["fork"] = True
            return say("FORK-RESULT: wrote the hooks")
        text = users_of(body)
        if "run ls" in text and not tool_msgs(body):
            return call("bash", command="ls")
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True, mode="yolo")
    s.dispatch("/fork add hooks")
    deadline = time.monotonic() + 20
    while "fork" not in done and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    s.chat("main work")  # the fork's report, and its work, join here (no tool batch)
    assert (repo / "hooks.json").exists()
    s.dispatch("/trust")  # the blanket gesture: approves what is there, not the agent's
    s.chat("run ls")
    assert not marker.exists(), "a hook file the agent wrote ran after a blanket approval"
