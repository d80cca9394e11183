"""Custom slash commands (commands/*.md, seed 002 §7): namespaces from subfolders, `{{args}}`,
`$1`, `@{file}` (secret rules apply), `!{cmd}` through the permission engine; a file dropped
in is a command at once; a custom command never shadows a built-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_namespaced_command_with_args_file_and_shell(fake_llm, api, repo):
    put(
        repo / ".yuyao" / "commands" / "git" / "commit.md",
        "---\ndescription: Commit with a message\nargument-hint: <message>\n---\n"
        "Commit the work with message: {{args}} (first word: $1)\n"
        "Notes: @{notes.txt}\n"
        "Status: !{git status --short}\n",
    )
    (repo / "notes.txt").write_text("the notes body\n")
    (repo / "calc.py").write_text("changed\n")
    server = fake_llm([say("Committed.")])
    s = api(server, trust_project=True)
    assert "/git:commit" in s.dispatch("/help")
    assert "Commit with a message" in s.dispatch("/help git:commit")
    assert s.dispatch("/git:commit fix the adder") == "Committed."
    prompt = server.user_text(0)
    assert "Commit the work with message: fix the adder (first word: fix)" in prompt, prompt
    assert "the notes body" in prompt
    assert "M calc.py" in prompt, "the !{cmd} output was not injected"


def test_shell_and_secret_refs_pass_the_policy(fake_llm, api, repo):
    """`!{cmd}` refused by a deny rule is not run; `@{.env}` (a secret) is not injected."""
    put(repo / ".yuyao" / "commands" / "leak.md", "Env: @{.env}\nRun: !{touch pwned}\n")
    (repo / ".env").write_text("API_TOKEN=s3cr3t-value-123456\n")
    server = fake_llm([say("ok")])
    s = api(server, trust_project=True, deny=["Bash(touch:*)"])
    s.dispatch("/leak")
    prompt = server.user_text(0)
    assert "s3cr3t-value-123456" not in json.dumps(server.requests[0]["body"])
    assert not (repo / "pwned").exists()
    assert "not run" in prompt and "not included" in prompt, prompt


def test_dropped_in_file_works_without_restart_and_builtins_win(fake_llm, api, repo, yuyao_home):
    server = fake_llm([say("reviewed")])
    s = api(server, trust_project=True)
    with pytest.raises(ValueError, match="unknown command"):
        s.dispatch("/review-pr 12")
    put(yuyao_home / "commands" / "review-pr.md", "Review pull request $1 carefully.\n")
    put(repo / ".claude" / "commands" / "status.md", "not the built-in\n")
    assert s.dispatch("/review-pr 12") == "reviewed"
    assert "Review pull request 12 carefully." in server.user_text(0)
    assert "yuyao" in s.dispatch("/status"), "a custom file shadowed the built-in /status"


def test_project_command_shell_not_run_without_project_extensions(fake_llm, api, repo):
    put(repo / ".yuyao" / "commands" / "mark.md", "Mark: !{echo hi > marker}\n")
    server = fake_llm([say("ok"), call("bash", command="true"), say("ok")])
    s = api(server, project_extensions=False, mode="yolo")
    s.dispatch("/mark")
    assert not (repo / "marker").exists()
    assert "not run" in server.user_text(0)
