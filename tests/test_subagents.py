"""Sub-agents (seed 002 §1, §5.2): the `task` tool, custom agents, `/agents`, `/fork`, `/goal`, `/loop`,
and the spend ceiling / step limit across a session and its sub-agents — end to end against the
scripted model, through agent_api and the `yuyao` CLI.

The scripted model tells the requests apart as a gateway would see them: a sub-agent's system
prompt has the "You are a sub-agent" section; the judge of /goal and /loop has its own system
prompt; everything else is the main session."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
from fakellm import (
    call,
    calls,
    offered_names,
    say,
    system_of,
    tool_call,
    tool_msgs,
    users_of,
)

pytestmark = pytest.mark.core

SUB = "# You are a sub-agent"
JUDGE = "You judge whether a condition holds"


def kind(body: dict) -> str:
    s = system_of(body)
    if s.startswith(JUDGE):
        return "judge"
    return "sub" if SUB in s else "main"


def task(description: str, prompt: str, agent: str | None = None, id: str | None = None) -> dict:
    args = {"description": description, "prompt": prompt}
    if agent:
        args["agent"] = agent
    return tool_call("task", args, id)


# ---------------------------------------------------------------------------------------------
# The task tool


def test_task_returns_the_sub_agents_result_and_its_writes_are_refused(fake_llm, api, repo):
    (repo / "AGENTS.md").write_text("Project rule: AGENTS-MARK.\n")
    seen: dict[str, list] = {"sub": [], "main": []}

    def respond(body, i):
        k = kind(body)
        seen[k].append(body)
        if k == "sub":
            if not tool_msgs(body):
                return call("write", file_path=str(repo / "stolen.txt"), content="x\n")
            return say("CHILD-REPORT: add is in calc.py; I could not write stolen.txt")
        if not tool_msgs(body):
            return calls(
                [task("find add", "Find where add is defined, then write stolen.txt", id="t1")]
            )
        return say("parent done")

    server = fake_llm(respond)
    # The parent may write anything (yolo): the sub-agent is read-only all the same.
    s = api(server, trust_project=True, mode="yolo")
    answer = s.chat("PARENT-PROMPT-MARK: where is add?")
    assert answer == "parent done"
    assert not (repo / "stolen.txt").exists()
    result = server.tool_result("t1")
    assert result.startswith("CHILD-REPORT"), result
    assert "[sub-agent general" in result and "write ×1" in result
    assert "failed or refused" in result
    child = seen["sub"]
    assert len(child) == 2
    # A fresh context: the project's AGENTS.md, not the parent's conversation.
    assert "AGENTS-MARK" in system_of(child[0])
    assert "PARENT-PROMPT-MARK" not in json.dumps(child[0]["messages"])
    assert "Find where add is defined" in users_of(child[0])
    refusal = tool_msgs(child[1])[0]["content"]
    assert "plan" in refusal.lower(), refusal
    # The parent's tool list offers task; the depth-1 sub-agent still has it (depth limit 2).
    assert "task" in server.tool_names(0)
    server.assert_well_formed()


def test_two_tasks_in_one_reply_overlap_and_come_back_in_call_order(fake_llm, api):
    started: dict[str, float] = {}
    ended: dict[str, float] = {}

    def respond(body, i):
        k = kind(body)
        if k == "sub":
            text = users_of(body)
            name = "alpha" if "ALPHA" in text else "beta"
            started[name] = time.monotonic()
            # alpha is slow, beta fast: beta ends first, alpha's result still comes first.
            delay = 1.0 if name == "alpha" else 0.2
            ended[name] = started[name] + delay
            return say(f"{name.upper()}-RESULT", delay=delay)
        if not tool_msgs(body):
            return calls(
                [task("a", "ALPHA job", "explore", "t1"), task("b", "BETA job", "explore", "t2")]
            )
        return say("both done")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    t0 = time.monotonic()
    assert s.chat("do two things") == "both done"
    elapsed = time.monotonic() - t0
    assert set(started) == {"alpha", "beta"}
    # Both were running at once: beta started before alpha's reply was due.
    assert started["beta"] < ended["alpha"] and started["alpha"] < ended["beta"]
    assert elapsed < 1.0 + 0.2 + 2.0, elapsed
    last = server.messages(-1)
    ids = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert ids == ["t1", "t2"]
    results = server.tool_results(-1)
    assert results["t1"].startswith("ALPHA-RESULT")
    assert results["t2"].startswith("BETA-RESULT")
    server.assert_well_formed()


def test_max_parallel_one_runs_tasks_one_after_the_other(fake_llm, api):
    spans: list[tuple[float, float]] = []

    def respond(body, i):
        if kind(body) == "sub":
            now = time.monotonic()
            spans.append((now, now + 0.4))
            return say("r", delay=0.4)
        if not tool_msgs(body):
            return calls([task("a", "one", id="t1"), task("b", "two", id="t2")])
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    s.dispatch("/config set agents.max_parallel 1")
    assert s.chat("go") == "ok"
    assert len(spans) == 2
    assert spans[1][0] >= spans[0][1] - 0.05, spans


def test_a_custom_agent_with_read_and_grep_cannot_run_bash(fake_llm, api, repo):
    agents = repo / ".yuyao" / "agents"
    agents.mkdir(parents=True)
    (agents / "finder.md").write_text(
        "---\nname: finder\ndescription: finds code\ntools: [read, grep]\nmode: yolo\n---\n"
        "You are FINDER-PROMPT.\n"
    )
    sub_bodies = []

    def respond(body, i):
        if kind(body) == "sub":
            sub_bodies.append(body)
            if not tool_msgs(body):
                return call("bash", command=f"touch {repo / 'pwned'}")
            return say("finder done")
        if not tool_msgs(body):
            return calls([task("find", "look around", "finder", "t1")])
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True, mode="yolo")
    assert s.chat("use finder") == "ok"
    assert not (repo / "pwned").exists()
    offered = [t["function"]["name"] for t in sub_bodies[0].get("tools") or []]
    assert sorted(offered) == ["grep", "read"], offered
    assert "FINDER-PROMPT" in system_of(sub_bodies[0])
    refusal = tool_msgs(sub_bodies[1])[0]["content"]
    assert "unknown or unavailable tool 'bash'" in refusal
    assert "bash ×1" in server.tool_result("t1")


def test_project_agents_need_project_extensions(fake_llm, api, repo):
    agents = repo / ".yuyao" / "agents"
    agents.mkdir(parents=True)
    (agents / "finder.md").write_text("---\ntools: [read]\n---\nbody\n")

    def respond(body, i):
        if kind(body) == "sub":
            return say("should not run")
        if not tool_msgs(body):
            return calls([task("find", "look", "finder", "t1")])
        return say("ok")

    server = fake_llm(respond)
    s = api(server, project_extensions=False)
    assert s.chat("go") == "ok"
    assert "unknown agent 'finder'" in server.tool_result("t1")
    assert not [r for r in server.requests if kind(r["body"]) == "sub"]
    listed = s.dispatch("/agents list")
    assert "finder" not in listed and "this project's agents are not loaded" in listed


def test_agents_command_creates_shows_edits_and_deletes(fake_llm, api, repo):
    s = api(fake_llm([]), trust_project=True)
    listed = s.dispatch("/agents")
    assert "explore (built-in)" in listed and "general (built-in)" in listed
    out = s.dispatch(
        '/agents create reviewer --description "reviews diffs" --tools read,grep --prompt "Review."'
    )
    path = repo / ".yuyao" / "agents" / "reviewer.md"
    assert str(path) in out and path.exists()
    shown = s.dispatch("/agents show reviewer")
    assert "reviews diffs" in shown and "tools: read, grep" in shown and "Review." in shown
    s.dispatch("/agents edit reviewer --mode plan --tools read")
    assert "mode: plan" in path.read_text() and "tools: [read]" in path.read_text()
    with pytest.raises(ValueError):
        s.dispatch("/agents create reviewer")
    with pytest.raises(ValueError):
        s.dispatch("/agents create x --tools teleport")
    with pytest.raises(ValueError):
        s.dispatch("/agents delete explore")
    s.dispatch("/agents delete reviewer")
    assert not path.exists()


def test_at_name_in_a_prompt_hands_the_work_to_that_agent(fake_llm, api):
    def respond(body, i):
        if kind(body) == "sub":
            return say("EXPLORED")
        if "@explore" in users_of(body) and not tool_msgs(body):
            if 'agent: "explore"' in users_of(body):
                return calls([task("look", "where is add", "explore", "t1")])
            return say("no hint")
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    assert s.chat("@explore where is add defined?") == "ok"
    assert server.tool_result("t1").startswith("EXPLORED")


def test_esc_stops_the_sub_agents_with_the_parent(fake_llm, api):
    sub_started = threading.Event()

    def respond(body, i):
        if kind(body) == "sub":
            sub_started.set()
            return say("too late", delay=20)
        if not tool_msgs(body):
            return calls([task("slow", "slow work", id="t1")])
        return say("after")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.setdefault("v", s.chat("go")))
    t0 = time.monotonic()
    worker.start()
    assert sub_started.wait(10)
    s._core.interrupt()
    worker.join(10)
    assert not worker.is_alive()
    assert time.monotonic() - t0 < 8
    status = json.loads(s._core.status_json())
    assert status["last_turn"]["status"] == "interrupted"


def test_depth_limit_two(fake_llm, api):
    depth_tools: list[list[str]] = []

    def respond(body, i):
        names = offered_names(body)
        if kind(body) == "sub":
            depth_tools.append(names)
            if "task" in names and not tool_msgs(body):
                return calls([task("deeper", "go deeper", id=f"d{i}")])
            return say("leaf")
        if not tool_msgs(body):
            return calls([task("one", "level one", id="t1")])
        return say("top")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    assert s.chat("nest") == "top"
    # depth 1 is offered task, depth 2 is not.
    assert any("task" in n for n in depth_tools)
    assert any("task" not in n for n in depth_tools)
    assert "leaf" in server.tool_result("t1")


# ---------------------------------------------------------------------------------------------
# The spend ceiling and the step limit across the tree


IN, OUT = 1e-6, 1e-5
PRICES = json.dumps({"input_cost_per_token": IN, "output_cost_per_token": OUT})


def test_spend_ceiling_holds_across_parent_and_sub_agents(fake_llm, yuyao, env):
    costs: list[float] = []
    lock = threading.Lock()

    def respond(body, i):
        # Usage as a real endpoint reports it: the answer never exceeds max_tokens.
        prompt = len(json.dumps(body["messages"]) + json.dumps(body.get("tools") or [])) // 5
        completion = min(400, body.get("max_tokens") or 400)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        with lock:
            costs.append(prompt * IN + completion * OUT)
        if kind(body) == "sub":
            # Sub-agents would go on for a long time: only the ceiling stops them.
            if len(tool_msgs(body)) < 40:
                return {**call("glob", pattern="*.py"), "usage": usage}
            return say("sub finished", usage=usage)
        if not tool_msgs(body):
            return {
                **calls([task("a", "work a", id="t1"), task("b", "work b", id="t2")]),
                "usage": usage,
            }
        return say("parent finished", usage=usage)

    server = fake_llm(respond)
    ceiling = 0.05
    proc = yuyao(
        "-p", "split the work", "--max-cost", str(ceiling), "--output-format", "json",
        env=env(server, D2A_MODEL_COST=PRICES),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    sub_calls = [r for r in server.requests if kind(r["body"]) == "sub"]
    assert len(sub_calls) >= 4, "the sub-agents ran"
    assert sum(costs) <= ceiling + 1e-9, (sum(costs), len(costs))
    # The ceiling, not the script, stopped them (the sub-agents had 40 calls each to make).
    assert sum(costs) > ceiling * 0.6 and len(sub_calls) < 80
    # Every call was capped (a call without max_tokens could pass the ceiling).
    assert all(r["body"].get("max_tokens") for r in server.requests)
    assert doc["cost_usd"] == pytest.approx(sum(costs), rel=0.02)
    # Who met the ceiling first says so: the session (stderr) or a sub-agent (its result).
    said = proc.stderr + "".join(server.tool_result(t) or "" for t in ("t1", "t2"))
    assert "spend ceiling reached" in said


def test_step_limit_counts_sub_agent_calls(fake_llm, yuyao, env):
    def respond(body, i):
        if kind(body) == "sub":
            return call("glob", pattern="*.py")
        if not tool_msgs(body):
            return calls([task("a", "work", id="t1")])
        return say("parent finished")

    server = fake_llm(respond)
    proc = yuyao(
        "-p", "go", "--max-steps", "5", "--output-format", "json", env=env(server)
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    # 5 calls in all: the parent's first and four of the sub-agent's; the parent's next
    # call would be the sixth.
    assert len(server.requests) == 5, len(server.requests)
    assert doc["exit_status"] == "LimitsExceeded"
    assert "step limit reached" in proc.stderr


# ---------------------------------------------------------------------------------------------
# /fork


def test_fork_result_arrives_while_the_main_turn_goes_on(fake_llm, api):
    fork_bodies = []

    def respond(body, i):
        if kind(body) == "sub":
            fork_bodies.append(body)
            return say("FORK-RESULT: the number was 42", delay=0.8)
        text = users_of(body)
        if "main work" not in text:
            return say("noted")
        if not tool_msgs(body):
            # The main turn is busy (a slow reply) while the fork finishes.
            return {**call("read", file_path="calc.py"), "delay": 2.0}
        return say("main done")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    s.chat("CONTEXT-MARK: remember the number 42")
    t0 = time.monotonic()
    out = s.dispatch("/fork what was the number?")
    assert time.monotonic() - t0 < 1.0
    assert "fork" in out and "started" in out
    assert "running" in s.dispatch("/tasks")
    assert s.chat("main work") == "main done"
    # The fork started from the conversation.
    assert "CONTEXT-MARK" in users_of(fork_bodies[0])
    main = [r["body"] for r in server.requests if kind(r["body"]) == "main"]
    assert "FORK-RESULT" not in users_of(main[1]), "not there when the turn began"
    assert "FORK-RESULT" in users_of(main[2]), "joined while the turn went on"
    assert users_of(main[2]).count("FORK-RESULT") == 1
    assert "completed" in s.dispatch("/tasks")
    server.assert_well_formed()


def test_kill_subagents_stops_a_running_fork(fake_llm, api):
    started = threading.Event()

    def respond(body, i):
        if kind(body) == "sub":
            started.set()
            return say("never", delay=30)
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    s.dispatch("/fork look around")
    assert started.wait(10)
    assert "stopped 1 background sub-agent" in s._core.kill_subagents()
    deadline = time.monotonic() + 5
    while "interrupted" not in s.dispatch("/tasks") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "interrupted" in s.dispatch("/tasks")


# ---------------------------------------------------------------------------------------------
# /goal and /loop


def test_goal_stops_when_the_judge_says_met(fake_llm, api):
    verdicts = iter(["NOT MET\nthe file is missing", "MET\nthe file exists"])
    main_turns = []

    def respond(body, i):
        if kind(body) == "judge":
            assert "Condition: hello.txt exists" in users_of(body)
            return say(next(verdicts))
        main_turns.append(body)
        return say(f"worked {len(main_turns)}")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    out = s.dispatch("/goal hello.txt exists")
    assert out.startswith("goal met after 2 rounds"), out
    assert "the file exists" in out
    assert len(main_turns) == 2
    assert "not met yet: the file is missing" in users_of(main_turns[1])


def test_goal_stops_at_max_rounds_and_at_the_step_limit(fake_llm, api):
    def respond(body, i):
        if kind(body) == "judge":
            return say("NOT MET\nstill no")
        return say("trying")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    s.dispatch("/config set goal.max_rounds 3")
    out = s.dispatch("/goal never")
    assert out.startswith("goal not met after 3 rounds (goal.max_rounds)"), out
    assert len([r for r in server.requests if kind(r["body"]) == "main"]) == 3

    def busy(body, i):
        if kind(body) == "judge":
            return say("NOT MET\nno")
        return call("read", file_path="calc.py")

    server2 = fake_llm(busy)
    s2 = api(server2)
    s2.dispatch("/config set max_steps 2")
    out = s2.dispatch("/goal never")
    assert "stopped in round 1: limits_exceeded" in out, out
    assert not [r for r in server2.requests if kind(r["body"]) == "judge"]


def test_loop_max_three_runs_three_rounds(fake_llm, api):
    def respond(body, i):
        return say(f"round reply {i}")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    out = s.dispatch("/loop check the build --max 3")
    assert out == "loop ended after 3 rounds (--max 3)"
    assert len(server.requests) == 3
    for r in server.requests:
        assert users_of(r["body"]).rstrip().endswith("check the build")


def test_loop_until_stops_when_the_condition_is_met(fake_llm, api):
    verdicts = iter(["NOT MET\nnot yet", "MET\ngreen"])

    def respond(body, i):
        if kind(body) == "judge":
            return say(next(verdicts))
        return say("ran")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    out = s.dispatch('/loop run the tests --until "tests pass" --max 5 --interval 0.1')
    assert out.startswith("loop ended after 2 round(s): condition met: green"), out


def test_a_deny_rule_on_task_refuses_it(fake_llm, api):
    def respond(body, i):
        if kind(body) == "sub":
            return say("should not run")
        if not tool_msgs(body):
            return calls([task("x", "y", id="t1")])
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True, deny="task")
    assert s.chat("go") == "ok"
    # Refused by the one pipeline's policy, in the words every refused tool gets.
    assert "denied by rule task" in server.tool_result("t1")
    assert not [r for r in server.requests if kind(r["body"]) == "sub"]


def test_the_trace_links_the_sub_agents_own_trace(fake_llm, yuyao, env, repo):
    def respond(body, i):
        if kind(body) == "sub":
            if not tool_msgs(body):
                return call("read", file_path="calc.py")
            return say("found")
        if not tool_msgs(body):
            return calls([task("find", "find add", "explore", "t1")])
        return say("done")

    server = fake_llm(respond)
    proc = yuyao("-p", "where is add?", "--verbose", env=env(server))
    assert proc.returncode == 0, proc.stderr
    # -p --verbose shows the sub-agent's tool call indented under the task call.
    assert re.search(r"(?m)^    \[explore [0-9a-f]{8}\] read .*calc\.py", proc.stderr), proc.stderr
    traces = sorted((repo / ".trajectory").glob("*.jsonl"))
    entries = {
        t: [json.loads(line) for line in t.read_text().splitlines() if line.strip()] for t in traces
    }
    parent = next(t for t, es in entries.items() if any(e["kind"] == "subagent_end" for e in es))
    end = next(e for e in entries[parent] if e["kind"] == "subagent_end")
    assert end["call_id"] == "t1" and end["status"] == "completed"
    child = Path(end["trajectory"])
    assert child != parent and child.exists()
    tools = [e for e in entries[child] if e["kind"] == "tool"]
    assert [t["name"] for t in tools] == ["read"]


def test_esc_during_a_loops_wait_ends_it(fake_llm, api):
    server = fake_llm(lambda body, i: say("ran"))
    s = api(server, trust_project=True)
    result: dict = {}
    worker = threading.Thread(
        target=lambda: result.setdefault("v", s.dispatch("/loop ping --max 5 --interval 30"))
    )
    worker.start()
    deadline = time.monotonic() + 10
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    s._core.interrupt()
    worker.join(10)
    assert not worker.is_alive()
    assert result["v"] == "loop ended after 1 round(s): interrupted"
    assert len(server.requests) == 1


def test_claude_code_agent_files_load_with_unknown_tools_left_out(fake_llm, api, repo):
    agents = repo / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, WebTeleport\n"
        "model: sonnet\n---\nReview carefully.\n"
    )
    sub_bodies = []

    def respond(body, i):
        if kind(body) == "sub":
            sub_bodies.append(body)
            return say("reviewed")
        if not tool_msgs(body):
            return calls([task("review", "review calc.py", "reviewer", "t1")])
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    shown = s.dispatch("/agents show reviewer")
    assert "tools not in this build (left out): WebTeleport" in shown
    assert s.chat("review") == "ok"
    offered = sorted(t["function"]["name"] for t in sub_bodies[0].get("tools") or [])
    assert offered == ["grep", "read"]
    # `model: sonnet` is the session's model here (the gateway serves no "sonnet").
    assert sub_bodies[0]["model"] == server.body(0)["model"]


def test_a_stop_hook_gates_the_session_not_its_sub_agents(fake_llm, api, repo):
    (repo / ".yuyao").mkdir()
    marker = repo / "stop-hook-ran"
    (repo / ".yuyao" / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [{"command": f"echo x >> {marker}"}]}})
    )

    def respond(body, i):
        if kind(body) == "sub":
            return say("sub report")
        if not tool_msgs(body):
            return calls([task("a", "b", id="t1")])
        return say("ok")

    server = fake_llm(respond)
    s = api(server, trust_project=True)
    assert s.chat("go") == "ok"
    assert marker.read_text().count("x") == 1, "the Stop hook ran once: for the session's answer"
