"""One pipeline for every tool (DESIGN §5): whatever the tool — a file tool, a command, the
task list, the declared scope, memory search, a question to the user — its call meets the
same stages in the same order: the policy (deny rules judge every tool by name), PreToolUse
hooks, the decision record, the run, PostToolUse hooks. Asserted from what a user observes:
the hook programs' own logs, the trace, the results the model received."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from fakellm import calls, say, tool_call

pytestmark = pytest.mark.core

# (tool, arguments, the name a Claude Code hook sees)
EVERY_KIND = [
    ("todo", {"action": "create", "content": "write notes"}, "TodoWrite"),
    ("declare-scope", {"files": ["notes.txt"], "behaviours": "add notes"}, "declare-scope"),
    ("memory-search", {"query": "package manager"}, "memory-search"),
    ("ask-user", {"question": "Which?", "options": ["a", "b"]}, "ask-user"),
    ("read", {"file_path": "calc.py"}, "Read"),
    ("grep", {"pattern": "def"}, "Grep"),
    ("glob", {"pattern": "*.py"}, "Glob"),
    ("bash", {"command": "echo hi"}, "Bash"),
    ("write", {"file_path": "notes.txt", "content": "n\n"}, "Write"),
]


def logging_hook(path: Path, log: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "#!/bin/bash\n"
        f'python3 -c \'import json,sys; print(json.load(sys.stdin).get("tool_name", "?"))\' >> {log}\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def decisions(repo: Path) -> list[dict]:
    out = []
    for path in sorted((repo / ".trajectory").rglob("*")):
        if path.is_file():
            for line in path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("kind") == "decision":
                    out.append(entry)
    return out


def test_every_kind_of_tool_meets_every_stage(fake_llm, api, repo, yuyao_home, tmp_path):
    pre_log, post_log = tmp_path / "pre.log", tmp_path / "post.log"
    pre = logging_hook(tmp_path / "hooks" / "pre.sh", pre_log)
    post = logging_hook(tmp_path / "hooks" / "post.sh", post_log)
    (yuyao_home / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [{"hooks": [{"type": "command", "command": str(pre)}]}],
                    "PostToolUse": [{"hooks": [{"type": "command", "command": str(post)}]}],
                }
            }
        )
    )
    batch = [tool_call(name, args, f"c{k}") for k, (name, args, _) in enumerate(EVERY_KIND)]
    server = fake_llm([calls(batch), say("Notes added.")])
    s = api(server, mode="yolo")
    s.chat("Add notes.txt")
    assert (repo / "notes.txt").read_text() == "n\n"
    for k, (name, _, _) in enumerate(EVERY_KIND):
        result = server.tool_result(f"c{k}") or ""
        assert not result.startswith(("Refused", "unknown")), (name, result)
    seen_before = pre_log.read_text().split()
    seen_after = post_log.read_text().split()
    decided = [d.get("tool") for d in decisions(repo)]
    for name, _, hook_name in EVERY_KIND:
        assert hook_name in seen_before, (name, seen_before)
        assert hook_name in seen_after, (name, seen_after)
        assert name in decided, (name, decided)


def test_a_deny_rule_reaches_a_core_tool(fake_llm, api, repo):
    """The task list used to skip the policy: a rule naming it now refuses it, like any tool."""
    server = fake_llm(
        [
            calls([tool_call("todo", {"action": "create", "content": "x"}, "t1")]),
            say("ok"),
        ]
    )
    s = api(server, mode="yolo")
    s.dispatch("/permissions deny TodoWrite --session")
    s.chat("plan it")
    result = server.tool_result("t1")
    assert result.startswith("Refused") and "TodoWrite" in result, result
    assert not s.tasks


def test_a_hook_can_refuse_a_session_state_tool(fake_llm, api, repo, yuyao_home, tmp_path):
    gate = tmp_path / "gate.sh"
    gate.write_text(
        "#!/bin/bash\ncat > /dev/null\n"
        'echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
        '"permissionDecision": "deny", "permissionDecisionReason": "no scopes here"}}\'\n'
    )
    gate.chmod(gate.stat().st_mode | stat.S_IXUSR)
    (yuyao_home / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "declare-scope",
                            "hooks": [{"type": "command", "command": str(gate)}],
                        }
                    ]
                }
            }
        )
    )
    server = fake_llm(
        [
            calls([tool_call("declare-scope", {"files": ["a.py"], "behaviours": "x"}, "d1")]),
            say("ok"),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("fix a.py")
    result = server.tool_result("d1")
    assert "Refused by a hook: no scopes here" in result, result
