"""Claude Code's permission lists (seed 002 §7): `.claude/settings.json` and
`~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR`) `permissions.allow|ask|deny` are rules of that
scope: deny and ask always apply, allow only from the user scope or a trusted project; they show
in `/permissions list` with their file."""

from __future__ import annotations

import json

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core


def test_claude_settings_rules_apply_by_scope(fake_llm, api, use_env, repo, tmp_path):
    user_dir = tmp_path / "claude-home"
    user_dir.mkdir()
    (user_dir / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(echo user:*)"]}})
    )
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(
        json.dumps(
            {"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash(touch:*)"]}, "model": "x"}
        )
    )
    use_env(None, CLAUDE_CONFIG_DIR=str(user_dir))
    from yuyao.agent_api import create_session

    # yolo: only the deny rule can stop the rm.
    server = fake_llm([call("bash", command="rm calc.py"), say("Removed.")])
    use_env(server, CLAUDE_CONFIG_DIR=str(user_dir))
    s = create_session(cwd=str(repo), mode="yolo")
    try:
        s.chat("go")
        listing = s.dispatch("/permissions list")
    finally:
        s.close()
    # auto-edit, unattended: a command runs only when an allow rule covers it.
    server = fake_llm(
        [
            call("bash", command="touch made.txt"),
            call("bash", command="echo user > by-user.txt"),
            say("Done."),
        ]
    )
    use_env(server, CLAUDE_CONFIG_DIR=str(user_dir))
    s = create_session(cwd=str(repo), mode="auto-edit")
    try:
        s.chat("go")
    finally:
        s.close()
    assert (repo / "calc.py").exists(), "the project's Claude Code deny rule did not apply"
    assert not (repo / "made.txt").exists(), "an untrusted project's allow rule applied"
    assert (repo / "by-user.txt").exists(), "the user's Claude Code allow rule did not apply"
    assert "Bash(rm:*)" in listing and ".claude/settings.json" in listing, listing
    assert str(user_dir / "settings.json") in listing


def test_trusted_project_allow_applies_and_bad_file_warns(fake_llm, env, yuyao, repo, tmp_path):
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(touch:*)"]}})
    )
    (repo / ".claude" / "settings.local.json").write_text("{\n  oops\n}")
    server = fake_llm([call("bash", command="touch made.txt"), say("Made it.")])
    proc = yuyao(
        "-p", "make it", "--trust-project",
        env=env(server, CLAUDE_CONFIG_DIR=str(tmp_path / "none")),
    )  # fmt: skip
    assert (repo / "made.txt").exists(), proc.stderr
    assert "settings.local.json: line 2" in proc.stderr, proc.stderr
