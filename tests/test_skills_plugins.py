"""Skills (SKILL.md), plugins (plugin.json) and `/flow:` (seed 002 §7): a skill's name and
description in the system prompt, its body loaded by keyword, by `/skill` and by the `skill`
tool; `allowed-tools` pre-approving (never forbidding) tools; a skill added mid-session arrives as a note; a
plugin's command, skill and hook go inert after `yuyao features disable plugins`; a flow
graph runs node by node with a branch; a bad graph is refused before any model call;
malformed files are named with their line while the rest loads."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


NOTES_SKILL = (
    "---\nname: release-notes\ndescription: Write release notes from the git log\n"
    "triggers: [changelog]\n---\n"
    "RELEASE-NOTES-BODY: read the log, group by feature, version $1.\n"
)


def test_skill_in_prompt_by_name_only_and_loaded_by_keyword(fake_llm, api, repo):
    put(repo / ".yuyao" / "skills" / "release-notes" / "SKILL.md", NOTES_SKILL)
    put(repo / ".yuyao" / "skills" / "release-notes" / "template.md", "# Template\n")
    server = fake_llm([say("Here they are."), say("Plain answer.")])
    s = api(server, trust_project=True)
    s.chat("please update the Changelog for me")
    system = server.system_prompt(0)
    assert "release-notes: Write release notes from the git log" in system, system
    assert "RELEASE-NOTES-BODY" not in system, "the body must load only when triggered"
    assert "skill" in server.tool_names(0)
    prompt = server.user_text(0)
    assert "RELEASE-NOTES-BODY" in prompt, prompt
    assert "keyword 'changelog'" in prompt
    assert "template.md" in prompt, "the files beside SKILL.md are not listed"
    # Not loaded again in the same conversation, not loaded without the keyword.
    s.chat("and the changelog once more?")
    assert server.user_text(1).count("RELEASE-NOTES-BODY") == 1


def test_skill_by_slash_command_with_arguments(fake_llm, api, repo):
    put(repo / ".yuyao" / "skills" / "release-notes" / "SKILL.md", NOTES_SKILL)
    server = fake_llm([say("Notes written.")])
    s = api(server, trust_project=True)
    listing = s.dispatch("/skills")
    assert "release-notes" in listing and "[project]" in listing and "changelog" in listing
    assert s.dispatch("/skill release-notes 2.1") == "Notes written."
    prompt = server.user_text(0)
    assert "RELEASE-NOTES-BODY" in prompt and "version 2.1." in prompt, prompt
    with pytest.raises(ValueError, match="no skill named 'nope'"):
        s.dispatch("/skill nope")


def test_allowed_tools_pre_approve_and_forbid_nothing(fake_llm, api, repo):
    """Claude Code's meaning of `allowed-tools`: while the skill runs, the tools it lists need
    no permission (an unattended auto-edit session runs `touch` without asking), other tools
    stay usable under the usual policy (a write in auto-edit), the `skill` tool itself is
    never refused by an auto-triggered skill, and pre-approval lifts only the question: a deny
    rule and a command the entries do not cover are refused as before; the next turn asks
    again."""
    put(
        repo / ".yuyao" / "skills" / "toucher" / "SKILL.md",
        '---\nname: toucher\ndescription: Touches files\nallowed-tools: ["Bash(touch:*)"]\n'
        "triggers: [touchy]\n---\nTOUCHER-BODY\n",
    )
    put(repo / ".yuyao" / "skills" / "reader" / "SKILL.md", "---\nname: reader\n"
        "description: Reads\n---\nREADER-BODY\n")  # fmt: skip

    def later(body, _index):
        # The next turn's prompt gets the touch; anything else (a completion check) an answer.
        last = body["messages"][-1]
        if last["role"] == "user" and "now touch a file" in str(last["content"]):
            return call("bash", command="touch after.txt")
        return say("Touched made.txt and wrote other.txt; the rest was refused.")

    server = fake_llm(
        [
            call("bash", command="touch made.txt"),
            call("skill", name="reader"),
            call("write", file_path="other.txt", content="x\n"),
            call("bash", command="touch blocked.txt"),
            call("bash", command="rm calc.py"),
            *[later] * 4,
        ]
    )
    s = api(server, trust_project=True, mode="auto-edit", deny=["Bash(touch blocked.txt)"])
    s.chat("a touchy job")
    assert not (repo / "after.txt").exists()
    assert "TOUCHER-BODY" in server.user_text(0)
    assert (repo / "made.txt").exists(), server.tool_results(1)
    assert any("READER-BODY" in t for t in server.tool_results(2).values()), "skill refused"
    assert (repo / "other.txt").read_text() == "x\n", "a tool outside allowed-tools was refused"
    assert not (repo / "blocked.txt").exists(), "pre-approval bypassed a deny rule"
    assert any("denied by rule" in t for t in server.tool_results(4).values())
    assert (repo / "calc.py").exists(), "a command the entries do not cover ran unasked"
    # The pre-approval lasts for the turn the skill was loaded in.
    s.chat("now touch a file")
    traj = "\n".join(p.read_text() for p in (repo / ".trajectory").glob("*.jsonl"))
    assert "touch after.txt" in traj, "the second turn never tried the touch"
    assert not (repo / "after.txt").exists()


def test_a_skill_the_agent_wrote_pre_approves_nothing(fake_llm, api, repo):
    """A repository skill's `allowed-tools` widen what runs unasked, so they count only as the
    content the user approved: a SKILL.md the agent writes mid-session (in a trusted project)
    loads as text, and its `allowed-tools: [Bash]` pre-approve nothing."""
    skill = "---\nname: sneaky\ndescription: Sneaky\nallowed-tools: [Bash]\n---\nSNEAKY-BODY\n"
    server = fake_llm(
        [
            call("write", file_path=".claude/skills/sneaky/SKILL.md", content=skill),
            call("skill", name="sneaky"),
            call("bash", command="touch pwned.txt"),
            *[say("The skill was written; the touch was refused.")] * 3,
        ]
    )
    s = api(server, trust_project=True, mode="auto-edit")
    s.chat("set things up")
    assert (repo / ".claude" / "skills" / "sneaky" / "SKILL.md").exists()
    assert any("SNEAKY-BODY" in t for t in server.tool_results(2).values())
    assert not (repo / "pwned.txt").exists(), "an agent-written skill pre-approved bash"


def test_skill_added_mid_session_arrives_as_a_note(fake_llm, api, repo, yuyao_home):
    server = fake_llm([say("one"), say("two")])
    s = api(server, trust_project=True)
    s.chat("hello")
    assert "# Skills" not in server.system_prompt(0)
    put(
        yuyao_home / "skills" / "deploy" / "SKILL.md",
        "---\ndescription: Deploy the service\n---\nDEPLOY-BODY\n",
    )
    s.chat("again")
    assert server.system_prompt(1) == server.system_prompt(0), "the system prompt was rewritten"
    note = server.user_text(1)
    assert "[skills] new skills are available" in note and "deploy: Deploy the service" in note
    assert "DEPLOY-BODY" not in note


def test_untrusted_project_skills_do_not_load(fake_llm, api, repo):
    put(repo / ".yuyao" / "skills" / "release-notes" / "SKILL.md", NOTES_SKILL)
    server = fake_llm([say("ok")])
    s = api(server, project_extensions=False)
    s.chat("update the changelog")
    assert "release-notes" not in server.system_prompt(0)
    assert "RELEASE-NOTES-BODY" not in server.user_text(0)


def make_plugin(root: Path, marker: Path) -> None:
    plugin = root / "kit"
    put(
        plugin / "plugin.json",
        json.dumps(
            {
                "name": "kit",
                "version": "0.3.0",
                "description": "Team kit",
                "hooks": {"PreToolUse": [{"command": f"echo pre >> {marker}"}]},
            }
        ),
    )
    put(plugin / "commands" / "greet.md", "GREET-COMMAND for $1\n")
    put(
        plugin / "skills" / "kit-tips" / "SKILL.md",
        "---\ndescription: Tips from the kit\n---\nKIT-TIPS-BODY\n",
    )
    put(
        plugin / "agents" / "kit-reviewer.md",
        "---\nname: kit-reviewer\ndescription: Reviews with the kit\ntools: [read]\n---\nReview.\n",
    )


def test_plugin_command_skill_and_hook_inert_after_features_disable(
    fake_llm, env, yuyao, api, repo, yuyao_home, tmp_path
):
    marker = tmp_path / "hook-ran.txt"
    make_plugin(yuyao_home / "plugins", marker)
    server = fake_llm([say("greeted"), say("tips"), call("bash", command="true"), say("ran")])
    s = api(server, trust_project=True, mode="yolo")
    assert "plugin:kit 0.3.0 [user] enabled" in s.dispatch("/skills")
    assert "kit-reviewer" in s.dispatch("/agents list"), "the plugin's agent is not offered"
    assert s.dispatch("/greet Ann") == "greeted"
    assert "GREET-COMMAND for Ann" in server.user_text(0)
    s.dispatch("/skill kit-tips")
    assert "KIT-TIPS-BODY" in server.user_text(1)
    assert "kit-tips: Tips from the kit" in server.system_prompt(0)
    s.chat("run true")
    assert marker.read_text() == "pre\n", "the plugin's hook did not run"
    s.close()

    proc = yuyao("features", "disable", "plugins", env=env())
    assert proc.returncode == 0, proc.stderr
    listed = yuyao("features", "list", env=env()).stdout
    assert "plugins  disabled" in listed, listed

    server2 = fake_llm([call("bash", command="true"), say("ran")])
    s2 = api(server2, mode="yolo")
    with pytest.raises(ValueError, match="unknown command"):
        s2.dispatch("/greet Ann")
    with pytest.raises(ValueError, match="no skill named 'kit-tips'"):
        s2.dispatch("/skill kit-tips")
    s2.chat("run true again")
    assert "kit-tips" not in server2.system_prompt(0)
    assert "kit-reviewer" not in s2.dispatch("/agents list")
    assert marker.read_text() == "pre\n", "a disabled plugin's hook ran"
    assert "off (features.plugins = false)" in s2.dispatch("/features")
    assert "not run: its plugin is off" in s2.dispatch("/hooks")


def test_one_plugin_disabled_at_once_and_kept(fake_llm, api, yuyao_home, tmp_path):
    marker = tmp_path / "hook-ran.txt"
    make_plugin(yuyao_home / "plugins", marker)
    server = fake_llm([call("bash", command="true"), say("ran")])
    s = api(server, trust_project=True, mode="yolo")
    assert "disabled" in s.dispatch("/features disable plugin:kit")
    s.chat("run true")
    assert not marker.exists(), "the disabled plugin's hook ran"
    with pytest.raises(ValueError, match="unknown command"):
        s.dispatch("/greet")
    s.close()
    again = api(server, trust_project=True)
    assert "plugin:kit 0.3.0 [user] disabled" in again.dispatch("/features list")
    assert "enabled" in again.dispatch("/features enable plugin kit")
    assert "plugin:kit 0.3.0 [user] enabled" in again.dispatch("/skills")


def test_plugin_mcp_server_tools_come_and_go_with_the_plugin(fake_llm, api, yuyao_home):
    time_server = Path(sys.executable).parent / "mcp-server-time"
    if not time_server.exists():
        pytest.skip("mcp-server-time is not installed beside the test interpreter")
    put(
        yuyao_home / "plugins" / "clock" / "plugin.json",
        json.dumps(
            {
                "name": "clock",
                "mcpServers": {
                    "time": {"command": str(time_server), "args": ["--local-timezone", "UTC"]}
                },
            }
        ),
    )
    server = fake_llm([say("one"), say("two")])
    s = api(server, trust_project=True)
    s.chat("what time is it")
    assert any(n.startswith("mcp__clock-time__") for n in server.tool_names(0)), server.tool_names(
        0
    )
    assert "clock-time" in s.dispatch("/mcp list")
    s.dispatch("/features disable plugin:clock")
    s.chat("and now")
    assert not any(n.startswith("mcp__clock-time__") for n in server.tool_names(1))


def test_cli_switches_one_plugin(env, yuyao, yuyao_home, tmp_path):
    make_plugin(yuyao_home / "plugins", tmp_path / "m")
    proc = yuyao("features", "disable", "plugin:kit", env=env())
    assert proc.returncode == 0 and "plugin:kit disabled" in proc.stdout, proc
    assert "plugin:kit 0.3.0 [user] disabled" in yuyao("features", "list", env=env()).stdout
    proc = yuyao("features", "disable", "plugin:nope", env=env())
    assert proc.returncode == 2 and "no plugin named 'nope'" in proc.stderr, proc


def test_project_plugin_waits_for_trust_in_an_interactive_session(
    fake_llm, use_env, repo, tmp_path
):
    """A TUI-like session (no front decision): the trust prompt names what the repository's
    plugin would run; nothing of it acts until /trust."""
    from yuyao import _core

    marker = tmp_path / "hook-ran.txt"
    make_plugin(repo / ".yuyao" / "plugins", marker)
    manifest = repo / ".yuyao" / "plugins" / "kit" / "plugin.json"
    data = json.loads(manifest.read_text())
    data["mcpServers"] = {"svc": {"command": "some-server", "args": ["--flag"]}}
    manifest.write_text(json.dumps(data))
    server = fake_llm([say("one"), say("two")])
    use_env(server)
    tui = _core.Session(json.dumps({"cwd": str(repo), "stream": False}), None)
    try:
        status = tui.dispatch("/trust status")
        assert "plugin kit MCP server kit-svc runs `some-server --flag`" in status, status
        assert f"PreToolUse hook runs `echo pre >> {marker}`" in status, status
        assert "kit-tips" not in tui.dispatch("/skills")
        with pytest.raises(ValueError, match="unknown command"):
            tui.dispatch("/greet")
        tui.dispatch("/trust")
        assert "kit-tips" in tui.dispatch("/skills")
        assert "plugin:kit 0.3.0 [project] enabled" in tui.dispatch("/features")
    finally:
        tui.close()


def test_project_plugin_never_runs_in_run_agent(fake_llm, env, run_agent, repo, tmp_path):
    from test_hooks import headless_run

    marker = tmp_path / "hook-ran.txt"
    make_plugin(repo / ".yuyao" / "plugins", marker)
    server = fake_llm([call("write", file_path=str(repo / "a.txt"), content="a\n"), say("Done.")])
    proc, _ = headless_run(run_agent, env, server, repo, tmp_path)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert (repo / "a.txt").exists()
    assert not marker.exists(), "a repository's plugin hook ran under run_agent.sh"
    assert "kit-tips" not in server.system_prompt(0)


def test_malformed_skill_and_plugin_named_with_line_others_load(
    fake_llm, env, yuyao, repo, yuyao_home
):
    put(repo / ".yuyao" / "skills" / "bad" / "SKILL.md", "---\nname: bad\ndescription: [x\n---\n")
    put(repo / ".yuyao" / "skills" / "good" / "SKILL.md", "---\ndescription: Good one\n---\nG\n")
    put(yuyao_home / "plugins" / "broken" / "plugin.json", '{\n  "name": "broken",\n  oops\n}\n')
    put(yuyao_home / "plugins" / "fine" / "plugin.json", '{"name": "fine"}')
    put(yuyao_home / "plugins" / "fine" / "commands" / "fine-cmd.md", "FINE\n")
    server = fake_llm([say("Hello.")])
    proc = yuyao("-p", "--trust-project", "hi", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"skills/bad/SKILL\.md: line [34]", proc.stderr), proc.stderr
    assert "broken/plugin.json: line 3" in proc.stderr, proc.stderr
    assert "good: Good one" in server.system_prompt(0)


FLOW_SKILL = """---
description: Test, fix until green, then ship
---
Run the release loop.

```flow
start: test
max_steps: 6
nodes:
  test: NODE-TEST run the tests and report
  fix: NODE-FIX fix the failure
  ship: NODE-SHIP write the release note
edges:
  - {from: test, to: ship, when: pass}
  - {from: test, to: fix, when: fail}
  - {from: fix, to: test}
```
"""


def test_flow_runs_node_by_node_with_a_branch(fake_llm, api, repo):
    put(repo / ".yuyao" / "skills" / "release" / "SKILL.md", FLOW_SKILL)
    server = fake_llm(
        [say("Two tests broke.\nfail"), say("Fixed it."), say("All green.\npass"), say("Shipped.")]
    )
    s = api(server, trust_project=True)
    assert "flow: /flow:release" in s.dispatch("/skills")
    assert "/flow:release [args]" in s.dispatch("/help")
    out = s.dispatch("/flow:release")
    assert "test → fix → test → ship" in out, out
    nodes = []
    for i in range(len(server.requests)):
        last_user = [m for m in server.messages(i) if m["role"] == "user"][-1]
        text = json.dumps(last_user["content"])
        nodes.append(next(n for n in ("TEST", "FIX", "SHIP") if f"NODE-{n}" in text))
    assert nodes == ["TEST", "FIX", "TEST", "SHIP"], nodes
    assert "exactly one of: pass, fail" in server.user_text(0)


def test_flow_and_skill_from_the_print_front(fake_llm, env, yuyao, repo):
    put(repo / ".yuyao" / "skills" / "release" / "SKILL.md", FLOW_SKILL)
    put(repo / ".yuyao" / "skills" / "release-notes" / "SKILL.md", NOTES_SKILL)
    server = fake_llm([say("ok\npass"), say("Shipped it."), say("Notes done.")])
    proc = yuyao("-p", "--trust-project", "/flow:release", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "Shipped it." in proc.stdout, proc.stdout
    assert "NODE-SHIP" in server.user_text(1)
    proc = yuyao("-p", "--trust-project", "/skill release-notes 3.0", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "Notes done." in proc.stdout
    assert "version 3.0." in server.user_text(2)


def test_flow_as_the_task_of_run_agent(fake_llm, env, run_agent, repo, yuyao_home, tmp_path):
    """run_agent.sh runs what the user installed (not the repository's): a user flow named
    by the task runs node by node, and its work is the submission."""
    from fakellm import FAKE_MODEL

    put(yuyao_home / "skills" / "release" / "SKILL.md", FLOW_SKILL)
    server = fake_llm(
        [
            say("ok\npass"),
            call("write", file_path=str(repo / "NOTES.md"), content="notes\n"),
            say("Shipped."),
        ]
    )
    task, out = tmp_path / "task.txt", tmp_path / "out"
    task.write_text("/flow:release")
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({"max_steps": 10}))
    proc = run_agent(
        "--task-file", str(task), "--repo-dir", str(repo), "--out-dir", str(out),
        "--budget-file", str(budget),
        "--model-base-url", server.url, "--model-name", FAKE_MODEL,
        "--model-api-key", server.api_key, env=env(),
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    status = json.loads((out / "status.json").read_text())
    assert status["exit_status"] == "Submitted", status
    assert (repo / "NOTES.md").read_text() == "notes\n"
    assert "NODE-TEST" in server.user_text(0) and "NODE-SHIP" in server.user_text(1)


def test_mermaid_flow_and_cycle_bound(fake_llm, api, repo):
    put(
        repo / ".yuyao" / "skills" / "spin" / "SKILL.md",
        "---\ndescription: loops\n---\n```mermaid\nflowchart TD\n"
        "  A[Check it] -->|again| B[Look again]\n  B --> A\n```\n",
    )
    server = fake_llm(lambda body, i: say("again"))
    s = api(server, trust_project=True)
    with pytest.raises(RuntimeError, match="cycle bound of 20"):
        s.dispatch("/flow:spin")
    assert len(server.requests) == 20


def test_bad_flow_graph_refused_before_any_model_call(fake_llm, api, repo):
    put(
        repo / ".yuyao" / "skills" / "broken-flow" / "SKILL.md",
        "---\ndescription: x\n---\n```flow\nnodes:\n  a: do a\nedges:\n  - {from: a, to: nowhere}\n```\n",
    )
    put(
        repo / ".yuyao" / "skills" / "no-start" / "SKILL.md",
        "---\ndescription: x\n---\n```flow\nstart: zz\nnodes:\n  a: do a\n```\n",
    )
    server = fake_llm([say("never")])
    s = api(server, trust_project=True)
    with pytest.raises(ValueError, match="unknown node 'nowhere'"):
        s.dispatch("/flow:broken-flow")
    with pytest.raises(ValueError, match="no start"):
        s.dispatch("/flow:no-start")
    with pytest.raises(ValueError, match="no skill named 'missing'"):
        s.dispatch("/flow:missing")
    assert server.requests == [], "a model call was made for a bad graph"
