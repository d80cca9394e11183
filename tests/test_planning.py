"""The planning workflow (seed 001, seed 000 behaviour 3): the todo tool, `<proposed_plan>` extraction and
validation, `.plans/` persistence, approval (phrase, `/plan approve`) and handoff, replans,
the blocked-call fuse and planning's empty-reply recovery — end to end through `yuyao -p`
and agent_api against the scripted model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core

PLAN = """# Add a subtract function

## Summary
calc.py gains `sub(a, b)`; nothing else changes.

## Implementation Steps
1. Add sub(a, b) next to add -> files: calc.py -> verify: python3 -c "import calc; assert calc.sub(3, 1) == 2"
2. Mention it in the README -> files: README.md -> verify: grep -n sub README.md

## Test Cases and Validation
- python3 -c "import calc"

## Assumptions and Defaults
- integers only
"""


def proposed(plan: str = PLAN, before: str = "Here is the plan.\n") -> str:
    return f"{before}<proposed_plan>\n{plan}</proposed_plan>\n"


def all_text(messages: list[dict]) -> str:
    return json.dumps(messages, ensure_ascii=False)


def plan_files(repo: Path) -> list[Path]:
    return sorted((repo / ".plans").glob("*.md"))


@pytest.fixture
def session(use_env, repo):
    from yuyao.agent_api import create_session

    opened = []

    def open_session(server=None, **kwargs):
        use_env(server)
        kwargs.setdefault("cwd", str(repo))
        opened.append(create_session(**kwargs))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


# ---------------------------------------------------------------------------------------------
# todo


def test_todo_tool_tree_in_verbose_output_and_session(fake_llm, yuyao, env, repo, yuyao_home):
    server = fake_llm(
        [
            call(
                "TodoWrite",
                todos=[
                    {"content": "read calc.py", "status": "in_progress"},
                    {"content": "write tests"},
                ],
            ),
            call("todo", action="create", content="edge cases", parent="2"),
            call("task_tracker", action="update", id="1", status="completed"),
            call("todo", action="update", id="2.1", status="blocked"),
            call("todo", action="update", id="9", status="completed"),
            say("Tracked."),
        ]
    )
    proc = yuyao("-p", "plan the work", "--verbose", env=env(server))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert "[-] 1. read calc.py" in err and "□ 2. write tests" in err
    assert "[x] 1. read calc.py" in err
    assert "  [!] 2.1. edge cases" in err
    # A refused update says why and changes nothing; the model sees the tree each time.
    refused = server.tool_result("call_4_0")
    assert "no item 9" in refused and "unchanged" in refused
    [log] = list((yuyao_home / "sessions").glob("*.jsonl"))
    todos = [json.loads(line) for line in log.read_text().splitlines() if '"todo"' in line]
    last = [e for e in todos if e.get("type") == "todo"][-1]
    assert [(i["id"], i["status"]) for i in last["items"]] == [
        ("1", "completed"),
        ("2", "pending"),
        ("2.1", "blocked"),
    ]


def test_todo_is_carried_by_resume_and_branch_and_rewind(fake_llm, session):
    server = fake_llm(
        [
            call("todo", items=[{"content": "alpha"}, {"content": "beta"}]),
            say("ok"),
            call("todo", action="update", id="1", status="in_progress"),
            say("ok"),
        ]
    )
    s = session(server, mode="yolo")
    s.chat("make a list")
    s.chat("start alpha")
    assert [t["status"] for t in s.tasks] == ["in_progress", "pending"]
    sid = s.session_id
    s.close()
    resumed = session(server, resume=sid)
    assert [t["content"] for t in resumed.tasks] == ["alpha", "beta"]
    assert resumed.tasks[0]["status"] == "in_progress"
    resumed.dispatch("/branch")
    assert resumed.tasks[0]["status"] == "in_progress"


def test_todo_goes_back_with_a_conversation_rewind(fake_llm, session):
    server = fake_llm(
        [
            call("todo", items=[{"content": "alpha"}, {"content": "beta"}]),
            say("ok"),
            call("todo", action="update", id="1", status="in_progress"),
            say("ok"),
        ]
    )
    s = session(server, mode="yolo")
    s.chat("first prompt")
    s.chat("second prompt")
    assert s.tasks[0]["status"] == "in_progress"
    listing = s.dispatch("/rewind")
    ids = [
        ln.split()[0] for ln in listing.splitlines() if "prompt" in ln and ln.strip()[0].isdigit()
    ]
    s.dispatch(f"/rewind {ids[1]} conversation")
    assert [t["status"] for t in s.tasks] == ["pending", "pending"]


def test_todo_survives_compaction_pinned_into_the_next_request(fake_llm, session):
    server = fake_llm(
        [
            call("todo", items=[{"content": "PIN-ME alpha", "status": "in_progress"}]),
            say("Listed."),
            say("Next done."),
            say("NONE"),  # the memory flush
            say("## Task\nsummary without the list"),
            say("Continuing."),
        ]
    )
    s = session(server)
    s.chat("track alpha")
    s.chat("next step")
    assert "compacted" in s.dispatch("/compact")
    s.chat("go on")
    last = all_text(server.messages(-1))
    assert "[pinned task list" in last and "[-] 1. PIN-ME alpha" in last


# ---------------------------------------------------------------------------------------------
# <proposed_plan>: extraction, validation, persistence


def test_headless_plan_tags_split_across_sse_chunks(fake_llm, yuyao, env, repo):
    content = proposed()
    # The scripted server streams 16-character pieces: both tags straddle a boundary.
    start = content.index("<proposed_plan>")
    end = content.index("</proposed_plan>")
    assert start % 16 + 15 > 16 and end % 16 != 0
    server = fake_llm([content])
    proc = yuyao("-p", "--plan", "add a subtract function", "--stream", "on", env=env(server))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "<proposed_plan>" not in out and "</proposed_plan>" not in out
    assert "Here is the plan." in out
    assert out.count("## Implementation Steps") == 1, out
    [path] = plan_files(repo)
    assert path.name == "add-a-subtract-function.md"
    assert "1. Add sub(a, b)" in path.read_text()
    tracker = json.loads(path.with_name("add-a-subtract-function.tracker.json").read_text())
    assert [i["content"] for i in tracker["items"]][0] == "Add sub(a, b) next to add"
    assert tracker["items"][1]["verify"] == ["grep -n sub README.md"]
    assert "/.plans/" in (repo / ".git" / "info" / "exclude").read_text()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert status.stdout == "", "the plan files stay out of git"
    # The planning instructions reached the model, with the read-only mode.
    assert "<proposed_plan>" in all_text(server.messages(0))


def test_headless_plan_json_output(fake_llm, yuyao, env, repo):
    server = fake_llm([proposed()])
    proc = yuyao(
        "-p", "--plan", "add sub", "--output-format", "json", "--stream", "off", env=env(server)
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["result"].startswith("# Add a subtract function")
    assert plan_files(repo)


BAD = {
    "missing section": (PLAN.replace("## Assumptions and Defaults", "## Notes"), "missing section"),
    "missing verify": (
        PLAN.replace(" -> verify: grep -n sub README.md", ""),
        "step 2: missing `-> verify:",
    ),
    "vague verify": (PLAN.replace("grep -n sub README.md", "it works"), "verify entry `it works`"),
    "markdown link": (
        PLAN.replace("files: README.md", "files: [README](README.md)"),
        "markdown link",
    ),
    "editor uri": (
        PLAN.replace("files: README.md", "files: vscode://file/README.md"),
        "editor URI",
    ),
    "too large": (PLAN.replace("integers only", "integers only " * 600), "condense"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_each_validator_failure_goes_back_to_the_model(fake_llm, session, repo, kind):
    bad, named = BAD[kind]
    server = fake_llm([proposed(bad), proposed()])
    s = session(server)
    s.dispatch("/plan")
    answer = s.chat("add sub")
    assert answer.startswith("# Add a subtract function")
    feedback = all_text(server.messages(1))
    assert "[plan validation]" in feedback and named in feedback, feedback[-2000:]
    [path] = plan_files(repo)
    assert path.read_text().strip() == PLAN.strip()


def test_invalid_plan_never_overwrites_a_valid_one(fake_llm, session, repo):
    server = fake_llm(
        [proposed(), proposed(PLAN.replace("## Summary", "## Intro")), say("x"), say("y")]
    )
    s = session(server)
    s.dispatch("/plan")
    s.chat("add sub")
    [path] = plan_files(repo)
    before = path.read_text()
    s.chat("make it shorter")  # invalid, then two more replies without a plan
    assert path.read_text() == before
    assert s.plan["awaiting_approval"]


def test_plan_edited_on_disk_is_revalidated(fake_llm, session, repo, tmp_path, monkeypatch):
    server = fake_llm([proposed()])
    s = session(server)
    s.dispatch("/plan")
    s.chat("add sub")
    [path] = plan_files(repo)
    path.write_text(path.read_text().replace(" -> verify: grep -n sub README.md", ""))
    with pytest.raises(ValueError, match="step 2: missing"):
        s.dispatch("/plan check")
    with pytest.raises(ValueError, match="does not validate"):
        s.dispatch("/plan approve")
    assert not (repo / "README.md").exists() or "sub" not in (repo / "README.md").read_text()
    # /plan edit: $EDITOR fixes the file, and the plan is validated again.
    fixer = tmp_path / "fix.py"
    fixer.write_text(
        "import sys\np = sys.argv[1]\nt = open(p).read().replace("
        "'2. Mention it in the README -> files: README.md',"
        "'2. Mention it in the README -> files: README.md -> verify: grep -n sub README.md')\n"
        "open(p, 'w').write(t)\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {fixer}")
    monkeypatch.delenv("VISUAL", raising=False)
    assert "is valid (2 steps)" in s.dispatch("/plan edit")


# ---------------------------------------------------------------------------------------------
# Approval and handoff


def test_approval_by_phrase_hands_off_with_tracker_and_pinned_plan(fake_llm, session, repo):
    server = fake_llm(
        [
            proposed(),
            call("write", file_path=str(repo / "sub.txt"), content="sub\n"),
            say("Implemented step 1."),
        ]
    )
    s = session(server, mode="yolo")
    s.dispatch("/plan")
    assert s.chat("add sub").startswith("# Add a subtract function")
    assert not (repo / "sub.txt").exists()
    assert s.chat("lgtm") == "Implemented step 1."
    tracker = next((repo / ".plans").glob("*.tracker.json"))
    assert json.loads(tracker.read_text())["items"]
    req = all_text(server.messages(1))
    assert "[approved plan" in req and "1. Add sub(a, b) next to add" in req
    assert "Permission mode: yolo" in req
    assert (repo / "sub.txt").read_text() == "sub\n"
    assert [t["content"] for t in s.tasks] == [
        "Add sub(a, b) next to add",
        "Mention it in the README",
    ]
    assert s.plan["approved"] and not s.plan["planning"]


def test_approval_by_gate_command_starts_implementation_by_itself(fake_llm, session, repo):
    server = fake_llm(
        [
            proposed(),
            call("write", file_path=str(repo / "sub.txt"), content="sub\n"),
            say("Done: sub.txt written."),
        ]
    )
    s = session(server, mode="ask")
    s.dispatch("/plan add sub")  # /plan <goal>: planning, then the turn
    assert s.plan["awaiting_approval"]
    # Auto-accept edits: the write runs without a question (headless ask would refuse it).
    out = s.dispatch("/plan approve auto-edit")
    assert out == "Done: sub.txt written."
    assert (repo / "sub.txt").exists()
    assert "Permission mode: auto-edit" in all_text(server.messages(1))
    assert len(server.requests) == 3


def test_cancel_phrase_removes_the_draft_without_a_model_call(fake_llm, session, repo):
    server = fake_llm([proposed()])
    s = session(server)
    s.dispatch("/plan")
    s.chat("add sub")
    assert plan_files(repo)
    s.chat("abandon plan")
    assert not plan_files(repo)
    assert len(server.requests) == 1
    assert not s.plan["planning"]


def test_stay_in_planning_overrides_an_exit_phrase(fake_llm, session, repo):
    server = fake_llm([proposed(), proposed()])
    s = session(server, mode="yolo")
    s.dispatch("/plan")
    s.chat("add sub")
    s.chat("lgtm, but stay in planning and recheck")
    assert s.plan["planning"] and s.plan["awaiting_approval"]
    assert "Permission mode: yolo" not in all_text(server.messages(1)[-2:])


def test_approved_run_gets_the_allowance(fake_llm, session, repo):
    steps = [call("read", file_path=str(repo / "calc.py")) for _ in range(4)]
    server = fake_llm([proposed(), *steps, say("All done.")])
    s = session(server, mode="yolo")
    s.dispatch("/config set max_steps 2")
    s.dispatch("/plan")
    s.chat("add sub")
    # Five model calls in the implementation turn: over max_steps 2, within 2 + 50.
    assert s.chat("approve") == "All done."


def test_mid_execution_replan_valid_and_invalid(fake_llm, session, repo):
    revised = PLAN.replace("# Add a subtract function", "# Add a subtract function v2")
    server = fake_llm(
        [
            proposed(),
            say(proposed(revised, before="The repo changed; revised plan.\n")),
            # (the run continues by itself after a valid revision)
            call("read", file_path=str(repo / "calc.py")),
            say(proposed(PLAN.replace("## Summary", "## Intro"), before="Another.\n")),
            say("Finished with the revised plan."),
        ]
    )
    s = session(server, mode="yolo")
    s.dispatch("/plan")
    s.chat("add sub")
    assert s.chat("ship it") == "Finished with the revised plan."
    [path] = plan_files(repo)
    assert path.read_text().startswith("# Add a subtract function v2")
    # The invalid revision was rejected visibly to the model and changed nothing.
    assert "[plan validation]" in all_text(server.messages(-1))
    assert "v2" in path.read_text()


# ---------------------------------------------------------------------------------------------
# Bounded recovery


def refused_write(repo: Path, k: int) -> dict:
    """A write headless ask mode refuses."""
    return {"name": "write", "arguments": {"file_path": str(repo / f"w{k}"), "content": "x"}}


def distinct_read(repo: Path, k: int) -> dict:
    """A read that succeeds and never repeats (each call a new file with content)."""
    f = repo / "notes" / f"n{k}.txt"
    f.parent.mkdir(exist_ok=True)
    f.write_text(f"note {k}\n")
    return {"name": "read", "arguments": {"file_path": str(f)}}


def refused_then_read(repo: Path, replies: int, first: int = 0) -> list[dict]:
    """Replies of two refused writes and one allowed read: never three refusals in a row."""
    return [
        {
            "tool_calls": [
                refused_write(repo, 2 * k),
                refused_write(repo, 2 * k + 1),
                distinct_read(repo, k),
            ]
        }
        for k in range(first, first + replies)
    ]


def test_blocked_call_fuse_normal_turn(fake_llm, session, repo):
    # The fuse is strict: cap 3 permits 6 refusals in a normal turn and stops on the 7th.
    server = fake_llm(refused_then_read(repo, 10))
    s = session(server, mode="ask")
    s.chat("write the files")
    # Four replies' batches (refusals 1-6, then the 7th), then one tool-free handoff call.
    assert len(server.requests) == 5
    assert server.body(4).get("tools") in (None, [])
    assert "w6" in all_text(server.messages(4)), "the refusals reached the model"
    status = s._core.status_json()
    assert "LimitsExceeded" in status and "7 tool calls were refused" in status
    assert f"yuyao --resume {s.session_id}" in status


def test_blocked_call_fuse_consecutive_and_planning_total(fake_llm, session, repo):
    # Three refusals in a row are permitted; the fourth in a row stops the turn.
    server = fake_llm(
        [
            {"tool_calls": [refused_write(repo, k) for k in range(3)]},
            {"tool_calls": [refused_write(repo, 3)]},
            say("unreached"),
        ]
    )
    s = session(server, mode="ask")
    s.chat("write")
    assert len(server.requests) == 3
    assert server.body(1).get("tools"), "three in a row did not stop the turn"
    assert "4 tool calls in a row" in s._core.status_json()

    # Planning permits 12 non-consecutive refusals and stops on the 13th.
    server2 = fake_llm(refused_then_read(repo, 20))
    p = session(server2, mode="ask")
    p.dispatch("/plan")
    p.chat("plan it")
    assert len(server2.requests) == 8, "12 refusals permitted while planning, then the handoff"
    assert "13 tool calls were refused" in p._core.status_json()


def test_blocked_call_fuse_is_the_cap_in_recovery_mode(fake_llm, session, repo):
    """Three listings of one root arm the turn's recovery pass (sent without tools) and put
    the turn in recovery mode: from then on the total fuse is exactly the cap (3), so the
    4th refusal stops the turn. Listing three different trees arms nothing, and the same
    refusals run on to the normal fuse (7th)."""
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("A = 1\n")

    def listings(roots):
        return {"tool_calls": [{"name": "bash", "arguments": {"command": c}} for c in roots]}

    def script(roots):
        return [
            listings(roots),
            # The pass answered with a call anyway: refused (refusal 1), nothing runs.
            {"tool_calls": [refused_write(repo, 100)]},
            *[
                {"tool_calls": [distinct_read(repo, 200 + k), refused_write(repo, 200 + k)]}
                for k in range(10)
            ],
        ]

    server = fake_llm(script(["ls src", "ls -la src/", "ls ./src"]))
    s = session(server, mode="ask")
    s.chat("look around, then write")
    # listings, the tool-free pass, three replies (refusals 2, 3, 4), the handoff.
    assert server.body(0).get("tools") and server.body(2).get("tools")
    assert server.body(1).get("tools") in (None, []), "the recovery pass has no tools"
    assert "exec::inspection::ls::src ×3" in all_text(server.messages(1))
    assert "tools are unavailable in the recovery pass" in server.tool_result("call_1_0")
    assert not (repo / "w100").exists()
    assert len(server.requests) == 6
    status = s._core.status_json()
    assert "4 tool calls were refused" in status and "recovery mode" in status

    # Distinct trees never group: no pass, no recovery mode, the normal fuse of 6.
    server2 = fake_llm(script(["ls src", "ls -la .", "ls notes"]))
    n = session(server2, mode="ask")
    n.chat("look around, then write")
    assert all(server2.body(k).get("tools") for k in range(len(server2.requests) - 1))
    assert len(server2.requests) == 9, "refusals 1-7 in seven replies, then the handoff"
    assert "7 tool calls were refused" in n._core.status_json()


# ---------------------------------------------------------------------------------------------
# Planning research: low-signal accounting, listing tripwire, budget floors


def grep(pattern: str) -> dict:
    return {"name": "grep", "arguments": {"pattern": pattern, "path": "calc.py"}}


def test_low_signal_searches_schedule_one_tool_free_synthesis(fake_llm, session, repo):
    """Five empty searches, one productive (it resets only the consecutive count), five
    more empty ones: the 10th low-signal search of the turn schedules the synthesis pass.
    Six empty searches in a row would have too, had the productive one not come between."""
    steps = [
        *[{"tool_calls": [grep(f"nothing_here_{k}")]} for k in range(5)],
        {"tool_calls": [grep("def add")]},
        *[{"tool_calls": [grep(f"nothing_here_{k}")]} for k in range(5, 10)],
        proposed(),
    ]
    server = fake_llm(steps)
    s = session(server)
    s.dispatch("/plan")
    assert s.chat("add sub").startswith("# Add a subtract function")
    assert len(server.requests) == 12
    assert all(server.body(k).get("tools") for k in range(11)), "no pass before the 10th"
    assert server.body(11).get("tools") in (None, [])
    assert "10 low-signal reads/searches in this turn" in all_text(server.messages(11))
    assert s.plan["awaiting_approval"] and plan_files(repo)

    # Six empty searches in a row: the pass comes after the 6th.
    server2 = fake_llm([*[{"tool_calls": [grep(f"zilch_{k}")]} for k in range(6)], proposed()])
    t = session(server2)
    t.dispatch("/plan")
    t.chat("add sub")
    assert len(server2.requests) == 7
    assert server2.body(6).get("tools") in (None, [])
    assert "6 low-signal reads/searches in a row" in all_text(server2.messages(6))


def test_planning_listing_tripwire_is_five(fake_llm, session, repo):
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("A = 1\n")
    variants = ["ls src", "ls -la src", "ls src/", "ls -1 ./src", "ls -a src"]
    steps = [{"tool_calls": [{"name": "bash", "arguments": {"command": c}}]} for c in variants]
    server = fake_llm([*steps, proposed()])
    s = session(server)
    s.dispatch("/plan")
    s.chat("add sub")
    # Three (the execution tripwire) and four listings are still exploration here.
    assert all(server.body(k).get("tools") for k in range(5))
    assert server.body(5).get("tools") in (None, [])
    assert "exec::inspection::ls::src ×5" in all_text(server.messages(5))
    assert s.plan["awaiting_approval"]


def trajectory_records(repo: Path) -> list[dict]:
    return [
        json.loads(line)
        for f in sorted((repo / ".trajectory").rglob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]


def test_planning_loop_floor_then_synthesis_and_budget_exhausted(fake_llm, yuyao, env, repo):
    """`--max-steps 2` is raised to planning's floor of 60 model calls; at 60 the research
    stops with a budget_exhausted event and one tool-free synthesis writes the plan. The
    same limit outside planning stops the turn after 2 calls."""
    reads = [{"tool_calls": [distinct_read(repo, k)]} for k in range(60)]
    server = fake_llm([*reads, proposed()])
    proc = yuyao("-p", "--plan", "add sub", "--max-steps", "2", "--stream", "off", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Add a subtract function")
    assert len(server.requests) == 61
    assert server.body(59).get("tools") and server.body(60).get("tools") in (None, [])
    assert "planning loop limit (60 model calls)" in all_text(server.messages(60))
    exhausted = [r for r in trajectory_records(repo) if r["kind"] == "budget_exhausted"]
    assert [(r["budget"], r["used"], r["max"]) for r in exhausted] == [("tool_loop", 60, 60)]

    server2 = fake_llm(reads)
    proc2 = yuyao("-p", "go", "--max-steps", "2", "--stream", "off", env=env(server2))
    assert "step limit reached (2 model calls)" in proc2.stderr
    assert len(server2.requests) == 2
    exhausted = [r for r in trajectory_records(repo) if r["kind"] == "budget_exhausted"]
    assert ("tool_loop", 2, 2) in [(r["budget"], r["used"], r["max"]) for r in exhausted]


def test_empty_replies_in_planning_get_one_tool_free_synthesis(fake_llm, session, repo):
    server = fake_llm([say(""), say(""), proposed()])
    s = session(server)
    s.dispatch("/plan")
    assert s.chat("add sub").startswith("# Add a subtract function")
    assert server.body(2).get("tools") in (None, [])
    assert server.body(1).get("tools")
    assert plan_files(repo)


def test_empty_replies_then_no_plan_is_a_blocked_handoff(fake_llm, session, repo):
    server = fake_llm([say(""), say(""), say("I could not decide.")])
    s = session(server)
    s.dispatch("/plan")
    s.chat("add sub")
    status = json.loads(s._core.status_json())
    assert status["last_turn"]["exit_status"] == "NotSubmitted"
    assert "planning is blocked" in json.dumps(status)
    assert s.plan["planning"]
    assert not plan_files(repo)


# ---------------------------------------------------------------------------------------------
# start_planning and headless clarification


def test_start_planning_pending_in_headless_ask(fake_llm, session, repo):
    server = fake_llm([call("start_planning", reason="ambiguous"), say("Continuing.")])
    s = session(server, mode="ask")
    s.chat("do the big refactor")
    assert "Pending" in server.tool_result("call_0_0")
    assert not s.plan["planning"]


def test_start_planning_accepted_in_yolo(fake_llm, session, repo):
    server = fake_llm(
        [
            call("start_planning", reason="ambiguous"),
            call("write", file_path=str(repo / "z.txt"), content="z"),
            proposed(),
        ]
    )
    s = session(server, mode="yolo")
    assert s.chat("do the big refactor").startswith("# Add a subtract function")
    assert "Entered the planning workflow" in server.tool_result("call_0_0")
    assert not (repo / "z.txt").exists(), "planning is read-only"
    assert s.plan["awaiting_approval"]


def test_headless_planning_ask_user_answered_once_then_denied(fake_llm, session):
    server = fake_llm(
        [
            call("ask-user", question="Which?", options=["a", "b"]),
            call("ask-user", question="Really which?", options=["a", "b"]),
            proposed(),
        ]
    )
    s = session(server)
    s.dispatch("/plan")
    s.chat("add sub")
    assert "decide from the evidence" in server.tool_result("call_0_0")
    assert "denied" in server.tool_result("call_1_0")


def test_headless_clarification_then_no_plan_gets_one_synthesis(fake_llm, session, repo):
    server = fake_llm(
        [
            call("ask-user", question="Which file?", options=["calc.py", "README.md"]),
            say("I would need to know which file."),
            proposed(),
        ]
    )
    s = session(server)
    s.dispatch("/plan")
    assert s.chat("add sub").startswith("# Add a subtract function")
    assert server.body(2).get("tools") in (None, [])
    assert "[planning recovery]" in all_text(server.messages(2))
    assert plan_files(repo)


def test_tracker_sidecar_follows_todo_updates_in_the_approved_run(fake_llm, session, repo):
    server = fake_llm(
        [
            proposed(),
            call("todo", action="update", id="1", status="completed"),
            say("Step 1 done."),
        ]
    )
    s = session(server, mode="yolo")
    s.dispatch("/plan")
    s.chat("add sub")
    s.chat("go")
    tracker = json.loads(next((repo / ".plans").glob("*.tracker.json")).read_text())
    assert [i["status"] for i in tracker["items"]] == ["completed", "pending"]
    assert tracker["items"][0]["verify"]


def test_start_planning_asks_an_interactive_user(fake_llm, use_env, repo):
    from yuyao import _core

    class Handler:
        def __init__(self):
            self.asked = []

        def event(self, text):
            pass

        def request(self, text):
            req = json.loads(text)
            self.asked.append(req)
            return "Enter planning workflow (Recommended)"

    server = fake_llm([call("start_planning", reason="ambiguous"), proposed()])
    use_env(server)
    handler = Handler()
    opts = {"cwd": str(repo), "mode": "ask", "stream": False}
    s = _core.Session(json.dumps(opts), handler)
    try:
        assert s.chat("refactor everything").startswith("# Add a subtract function")
    finally:
        s.close()
    [asked] = handler.asked
    assert asked["question"] == "Enter planning workflow?"
    assert asked["options"] == ["Enter planning workflow (Recommended)", "Continue without"]
    assert "Entered the planning workflow" in server.tool_result("call_0_0")


def test_a_waiting_plan_comes_back_with_resume(fake_llm, session, repo):
    server = fake_llm(
        [proposed(), call("write", file_path=str(repo / "r.txt"), content="r"), say("Done.")]
    )
    s = session(server, mode="yolo")
    s.dispatch("/plan")
    s.chat("add sub")
    sid = s.session_id
    s.close()
    resumed = session(server, mode="yolo", resume=sid)
    assert resumed.plan["awaiting_approval"]
    assert resumed.chat("approve") == "Done."
    assert (repo / "r.txt").exists()
    assert "[approved plan" in all_text(server.messages(1))


def test_plans_folder_planted_as_a_link_is_refused(fake_llm, session, repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".plans").symlink_to(outside)
    server = fake_llm([proposed()])
    s = session(server)
    s.dispatch("/plan")
    with pytest.raises(RuntimeError, match="symbolic link"):
        s.chat("add sub")
    assert list(outside.iterdir()) == []


def test_approved_plan_is_pinned_again_after_compaction(fake_llm, session, repo, yuyao_home):
    server = fake_llm(
        [
            proposed(),
            say("Step 1 done."),
            say("Step 2 done."),
            say("NONE"),  # the memory flush
            say("## Task\nsummary that forgot the plan"),
            say("Carrying on."),
        ]
    )
    s = session(server, mode="yolo")
    s.dispatch("/plan")
    s.chat("add sub")
    s.chat("approve")
    s.chat("next")
    assert "compacted" in s.dispatch("/compact")
    s.chat("continue")
    last = all_text(server.messages(-1))
    assert "[approved plan" in last and "1. Add sub(a, b) next to add" in last
    assert "[pinned task list" in last
    # The pins are written right after the compaction entry (not merely kept in its tail).
    [log] = list((yuyao_home / "sessions").glob("*.jsonl"))
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    at = max(i for i, r in enumerate(rows) if r.get("type") == "compaction")
    pinned = [r["message"]["content"] for r in rows[at + 1 : at + 3]]
    assert pinned[0].startswith("[approved plan") and pinned[1].startswith("[pinned task list")


# ---------------------------------------------------------------------------------------------
# todo `index: 0`, resume in planning, a validated edit from a front


def test_todo_index_zero_completes_the_checklist(fake_llm, session, repo):
    server = fake_llm(
        [
            call("todo", items=[{"content": "parser"}, {"content": "tests"}]),
            call("todo", action="update", index=0, status="in_progress"),
            call("todo", action="create", index=0, content="zero"),
            call("todo", action="update", index=0, status="completed"),
            say("All done."),
        ]
    )
    s = session(server, mode="yolo")
    s.chat("track it")
    # Index 0 is the checklist itself, only for completing it; items are 1-based.
    assert "reserved for completing the whole checklist" in server.tool_result("call_1_0")
    assert "invalid id '0'" in server.tool_result("call_2_0")
    assert [(t["id"], t["status"]) for t in s.tasks] == [("1", "completed"), ("2", "completed")]
    assert "Tasks (2/2 done)" in server.tool_result("call_3_0")


def test_planning_comes_back_with_resume(fake_llm, session, yuyao, env, repo):
    server = fake_llm([proposed(), say("Still planning."), say("Still planning, again.")])
    s = session(server)
    s.dispatch("/plan")
    s.chat("add sub")
    sid = s.session_id
    s.close()
    resumed = session(server, resume=sid)
    state = resumed.plan
    assert state["planning"] and state["awaiting_approval"]
    assert state["plan"].startswith("# Add a subtract function")
    resumed.chat("one more thing to check")
    assert "Permission mode: plan" in all_text(server.messages(1))
    resumed.close()
    # `yuyao -p --resume` too: the request is made in plan mode.
    proc = yuyao("-p", "--resume", sid, "and now?", "--stream", "off", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "Permission mode: plan" in all_text(server.messages(2))

    # A resuming invocation that names a mode decides; a session that left planning
    # does not come back in it.
    explicit = session(fake_llm([]), resume=sid, mode="ask")
    assert not explicit.plan["planning"]
    sid2 = explicit.session_id
    explicit.close()
    again = session(fake_llm([]), resume=sid2)
    assert not again.plan["planning"]
    again.dispatch("/plan")
    again.dispatch("/plan off")
    sid3 = again.session_id
    again.close()
    assert not session(fake_llm([]), resume=sid3).plan["planning"]


def test_revised_plan_is_validated_before_it_is_written(fake_llm, session, repo):
    server = fake_llm([proposed(), say("Implemented.")])
    s = session(server, mode="yolo")
    s.dispatch("/plan")
    s.chat("add sub")
    [path] = plan_files(repo)
    before = path.read_text()
    hostile = PLAN.replace(" -> verify: grep -n sub README.md", "") + "\nNext open decision: tbd\n"
    with pytest.raises(Exception, match="does not validate") as e:
        s.revise_plan(hostile)
    assert "step 2: missing `-> verify:" in str(e.value)
    assert path.read_text() == before, "an invalid edit never overwrites the valid plan"
    assert "Next open decision" not in s.plan["plan"]
    assert "is valid (2 steps)" in s.revise_plan(
        PLAN.replace("integers only", "integers only, REVISED")
    )
    assert "REVISED" in path.read_text() and "REVISED" in s.plan["plan"]
    s.chat("approve")
    assert "REVISED" in all_text(server.messages(1)), "the revised plan is pinned"


def test_tool_call_budget_fails_closed_with_a_planning_floor(
    fake_llm, yuyao, env, repo, yuyao_home
):
    """`tools.max_tool_calls_per_turn = 2`: the batch that would pass it does not run and the
    turn stops with a budget_exhausted event; planning's floor (120) lets the same research
    run and the plan be proposed."""
    (yuyao_home / "config.toml").write_text("[tools]\nmax_tool_calls_per_turn = 2\n")
    script = [
        {"tool_calls": [distinct_read(repo, 0), distinct_read(repo, 1)]},
        {"tool_calls": [refused_write(repo, 0)]},
        proposed(),
    ]
    server = fake_llm(script)
    proc = yuyao("-p", "go", "--yolo", "--stream", "off", env=env(server))
    assert "tool-call limit reached (2 tool calls in this turn)" in proc.stderr
    assert not (repo / "w0").exists(), "the batch past the budget did not run"
    assert len(server.requests) == 2
    exhausted = [r for r in trajectory_records(repo) if r["kind"] == "budget_exhausted"]
    assert [(r["budget"], r["used"], r["max"]) for r in exhausted] == [("tool_calls", 2, 2)]

    server2 = fake_llm([script[0], {"tool_calls": [distinct_read(repo, 2)]}, proposed()])
    proc2 = yuyao("-p", "--plan", "add sub", "--stream", "off", env=env(server2))
    assert proc2.returncode == 0, proc2.stderr
    assert proc2.stdout.startswith("# Add a subtract function")
    assert "budget is spent" not in json.dumps(server2.messages(2))
