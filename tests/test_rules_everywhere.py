"""Rules the user wrote are enforced wherever they were written (seed 000 "it listens", seed
002 §7/§8): a "use X, not Y" line of AGENTS.md (or CLAUDE.md) refuses Y even in yolo and cites
its file and line; Claude Code hooks in `.claude/settings.json` run in Claude Code's format
(matcher on Claude's tool names, its JSON on stdin, exit 2 blocks) under the same trust rules
as every project hook file."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core


def fake_program(bin_dir: Path, name: str, marker: Path) -> None:
    bin_dir.mkdir(exist_ok=True)
    prog = bin_dir / name
    prog.write_text(f"#!/bin/sh\ntouch {marker}\n")
    prog.chmod(0o755)


@pytest.mark.parametrize("file", ["AGENTS.md", "CLAUDE.md"])
def test_an_instruction_file_rule_binds_yolo_with_its_line(
    fake_llm, yuyao, env, repo, tmp_path, file
):
    marker = tmp_path / "npm-ran"
    fake_program(tmp_path / "bin", "npm", marker)
    fake_program(tmp_path / "bin", "bun", tmp_path / "bun-ran")
    (repo / file).write_text(
        "# Project conventions\n\nThis is a small web app.\n\n"
        "- Run the tests before you finish.\n- Use bun, not npm.\n"
    )
    server = fake_llm(
        [
            calls([("bash", {"command": "cd . && npm install"}, "c1")]),
            calls([("bash", {"command": "bun install"}, "c2")]),
            say("Installed with bun."),
            say("Installed with bun."),
        ]
    )
    e = env(server)
    e["PATH"] = f"{tmp_path / 'bin'}:{e['PATH']}"
    proc = yuyao("-p", "install the dependencies", "--mode", "yolo", env=e)
    result = server.tool_result("c1")
    assert result.startswith(f"applying {file} line 6: use bun, not npm."), result
    assert "npm install" in result
    assert not marker.exists(), "yolo ran the command AGENTS.md forbids"
    assert (tmp_path / "bun-ran").exists(), "the allowed command did not run"
    assert f"applying {file} line 6" in proc.stderr + proc.stdout


def test_no_memory_leaves_instruction_files_unread(fake_llm, yuyao, env, repo, tmp_path):
    marker = tmp_path / "npm-ran"
    fake_program(tmp_path / "bin", "npm", marker)
    (repo / "AGENTS.md").write_text("Use bun, not npm.\n")
    server = fake_llm([calls([("bash", {"command": "npm install"}, "c1")]), say("Done.")])
    e = env(server)
    e["PATH"] = f"{tmp_path / 'bin'}:{e['PATH']}"
    yuyao("-p", "install", "--mode", "yolo", "--no-memory", env=e)
    assert marker.exists(), server.tool_result("c1")


# ---------------------------------------------------------------------------------------------
# Claude Code hooks in .claude/settings.json


GUARD = """#!/bin/sh
input=$(cat)
echo "$input" >> {seen}
case "$input" in *'"tool_name":"Bash"'*) ;; *) exit 0;; esac
case "$input" in *'rm -rf'*) echo "rm -rf is not allowed here" >&2; exit 2;; esac
exit 0
"""


def claude_guard(repo: Path, tmp_path: Path) -> Path:
    seen = tmp_path / "seen.jsonl"
    guard = repo / ".claude" / "hooks" / "guard.sh"
    guard.parent.mkdir(parents=True)
    guard.write_text(GUARD.format(seen=seen))
    guard.chmod(guard.stat().st_mode | stat.S_IXUSR)
    settings = {
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "command",
                            "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
                        }
                    ],
                }
            ]
        },
    }
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    return seen


@pytest.mark.parametrize("trusted", [True, False])
def test_claude_settings_pre_tool_use_hook_guards_rm_only_when_trusted(
    fake_llm, yuyao, env, repo, tmp_path, trusted
):
    seen = claude_guard(repo, tmp_path)
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("x")
    server = fake_llm(
        [
            calls([("bash", {"command": "rm -rf build"}, "rm")]),
            calls([("write", {"file_path": "notes.txt", "content": "n\n"}, "w")]),
            say("Cleaned up."),
            say("Cleaned up."),
        ]
    )
    flags = ["--trust-project"] if trusted else []
    yuyao(
        "-p", "clean the build", "--mode", "yolo", *flags,
        env=env(server, CLAUDE_CONFIG_DIR=str(tmp_path / "no-user-claude")),
    )  # fmt: skip
    result = server.tool_result("rm")
    if trusted:
        assert (repo / "build" / "out.o").exists(), result
        assert "rm -rf is not allowed here" in result, result
        events = [json.loads(line) for line in seen.read_text().splitlines()]
        # Claude Code's input on stdin; the Bash matcher does not run it for a write.
        assert [e["tool_name"] for e in events] == ["Bash"], events
        assert events[0]["hook_event_name"] == "PreToolUse"
        assert events[0]["tool_input"]["command"] == "rm -rf build"
        assert (repo / "notes.txt").exists()
    else:
        assert not seen.exists(), "an untrusted project's Claude Code hook ran"
        assert not (repo / "build").exists(), result


def test_user_claude_settings_hooks_run_and_other_exits_do_not_block(
    fake_llm, yuyao, env, repo, tmp_path
):
    """The user's own ~/.claude/settings.json hooks run without project trust; a Stop hook
    exiting 1 is Claude Code's non-blocking error (warned about), not a failed gate."""
    user = tmp_path / "claude-home"
    user.mkdir()
    marker = tmp_path / "stop-ran"
    (user / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": f"touch {marker}; exit 1"}]}]
                }
            }
        )
    )
    server = fake_llm([say("Hello there."), say("Hello there.")])
    proc = yuyao("-p", "hi", env=env(server, CLAUDE_CONFIG_DIR=str(user)))
    assert marker.exists(), proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert "Hello there." in proc.stdout
    assert "exited with 1" in proc.stderr, proc.stderr
