"""Sessions (spec §4 -c/--resume/--fork-session, §5.1 session commands, seed 000 behaviours 10
and 12) and context management, end to end through `yuyao -p`, agent_api and the core's
handler protocol, against the scripted model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fakellm import FAKE_MODEL, call, say

pytestmark = pytest.mark.core


def output(proc) -> str:
    return proc.stdout + proc.stderr


def session_files(home: Path) -> list[Path]:
    return sorted((home / "sessions").glob("*.jsonl"))


def entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def texts(messages: list[dict]) -> list[str]:
    out = []
    for m in messages:
        c = m.get("content")
        out.append(c if isinstance(c, str) else json.dumps(c))
    return out


@pytest.fixture
def session(use_env, repo):
    """``session(server, **create_session_kwargs)`` -> an AgentSession in ``repo``."""
    from yuyao.agent_api import create_session

    opened = []

    def open_session(server=None, extra_env=None, **kwargs):
        use_env(server, **(extra_env or {}))
        kwargs.setdefault("cwd", str(repo))
        opened.append(create_session(**kwargs))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


# ---------------------------------------------------------------------------------------------
# The session file


def test_session_file_is_a_tree_written_as_it_happens(fake_llm, session, yuyao_home, repo):
    server = fake_llm([call("read", file_path=str(repo / "calc.py")), say("It adds.")])
    s = session(server, mode="yolo")
    s.chat("What does calc.py do?")
    files = session_files(yuyao_home)
    assert len(files) == 1 and files[0].stem == s.session_id
    lines = entries(files[0])
    assert lines[0]["type"] == "session" and lines[0]["cwd"] == str(repo)
    ids = set()
    for e in lines[1:]:
        assert e["id"] and e["id"] not in ids
        assert e["parent"] is None or e["parent"] in ids, "a parent is written before its child"
        ids.add(e["id"])
    roles = [e["message"]["role"] for e in lines[1:] if e["type"] == "message"]
    # The read came without an intent line: the next request carried a note asking for one.
    # The missing-intent reminder lives for one request: never in the session file.
    assert roles == ["user", "assistant", "tool", "assistant"]
    s.dispatch("/mode plan")
    assert entries(files[0])[-1]["type"] == "mode", "a mode change is an entry at once"


def test_print_then_continue_sends_the_earlier_messages(fake_llm, yuyao, env):
    server = fake_llm([say("First answer: 42."), say("Second answer.")])
    first = yuyao("-p", "Remember the number PLUM-42.", env=env(server))
    assert first.returncode == 0, output(first)
    second = yuyao("-p", "--continue", "What number did I give?", env=env(server))
    assert second.returncode == 0, output(second)
    sent = texts(server.messages(1))
    assert any("PLUM-42" in t for t in sent), sent
    assert any("First answer: 42." in t for t in sent), sent
    assert "What number did I give?" in sent[-1]
    short = yuyao("-p", "-c", "And again?", env=env(server))
    assert short.returncode == 0, output(short)
    assert any("PLUM-42" in t for t in texts(server.messages(2)))


def test_resume_by_id_and_fork_leaves_the_original_byte_identical(fake_llm, yuyao, env, yuyao_home):
    server = fake_llm([say("one"), say("two"), say("three"), say("four")])
    first = yuyao("-p", "Task ALPHA", "--output-format", "json", env=env(server))
    alpha = json.loads(first.stdout)["session_id"]
    other = yuyao("-p", "Task BETA", env=env(server))
    assert other.returncode == 0, output(other)

    resumed = yuyao("-p", "--resume", alpha, "go on", "--output-format", "json", env=env(server))
    assert resumed.returncode == 0, output(resumed)
    assert json.loads(resumed.stdout)["session_id"] == alpha
    sent = " ".join(texts(server.messages(2)))
    assert "Task ALPHA" in sent and "Task BETA" not in sent

    original = yuyao_home / "sessions" / f"{alpha}.jsonl"
    before = original.read_bytes()
    forked = yuyao(
        "-p",
        "--resume",
        alpha[:6],
        "--fork-session",
        "try something",
        "--output-format",
        "json",
        env=env(server),
    )
    assert forked.returncode == 0, output(forked)
    new_id = json.loads(forked.stdout)["session_id"]
    assert new_id != alpha
    assert original.read_bytes() == before, "the original session file is untouched"
    copy = entries(yuyao_home / "sessions" / f"{new_id}.jsonl")
    assert copy[0]["forked_from"] == alpha
    assert "try something" in json.dumps(copy[-2:])
    assert "Task ALPHA" in " ".join(texts(server.messages(3)))


def test_continue_without_a_session_and_both_flags(fake_llm, yuyao, env):
    server = fake_llm([say("x")])
    proc = yuyao("-p", "-c", "hello", env=env(server))
    assert proc.returncode == 1
    assert "no previous session" in proc.stderr
    assert yuyao("-p", "-c", "--resume", "abc", "x", env=env(server)).returncode == 2
    missing = yuyao("-p", "--resume", "nope", "x", env=env(server))
    assert missing.returncode == 1 and "no session 'nope'" in missing.stderr


def test_a_bad_line_is_skipped_with_a_warning(fake_llm, yuyao, env, yuyao_home):
    server = fake_llm([say("stored"), say("still here")])
    assert yuyao("-p", "Keep MANGO in mind", env=env(server)).returncode == 0
    [path] = session_files(yuyao_home)
    with path.open("a") as f:
        f.write('{"type": "message", "id": "broken", "mess\n')
    proc = yuyao("-p", "-c", "what fruit?", env=env(server))
    assert proc.returncode == 0, output(proc)
    assert "not a valid session entry" in proc.stderr
    assert "MANGO" in " ".join(texts(server.messages(1)))


def test_continue_works_in_agent_api(fake_llm, session):
    server = fake_llm([say("Noted."), say("You said KIWI.")])
    s = session(server)
    s.chat("The word is KIWI.")
    s.close()
    again = session(server, continue_session=True)
    assert len(again.messages) == 2
    assert again.chat("Which word?") == "You said KIWI."
    assert "KIWI" in " ".join(texts(server.messages(1)))
    with pytest.raises(ValueError):
        session(server, continue_session=True, resume="x")


# ---------------------------------------------------------------------------------------------
# Session commands


def test_branch_then_sessions_shows_both(fake_llm, session):
    server = fake_llm([say("base"), say("on the branch")])
    s = session(server)
    s.chat("Start here")
    original = s.session_id
    answer = s.dispatch("/branch experiment")
    branch = s.session_id
    assert branch != original and "experiment" in answer
    s.chat("Risky idea")
    listing = s.dispatch("/sessions")
    assert original in listing and branch in listing and "experiment" in listing
    # Back to the original: the branch's message is not there.
    s.dispatch(f"/resume {original}")
    assert [m["content"] for m in s.messages] == ["Start here", "base"]


def test_tree_shows_and_switches_nodes(fake_llm, session):
    server = fake_llm([say("A1"), say("A2"), say("A3")])
    s = session(server)
    s.chat("first prompt")
    s.chat("second prompt")
    tree = s.dispatch("/tree")
    assert "first prompt" in tree and "second prompt" in tree and "← here" in tree
    node = re.search(r"(\w{8})  assistant: A1", tree).group(1)
    s.dispatch(f"/tree {node}")
    assert [m["content"] for m in s.messages] == ["first prompt", "A1"]
    s.chat("another way")
    tree = s.dispatch("/tree")
    assert "second prompt" in tree and "another way" in tree, "both branches stay in the tree"
    assert texts(server.messages(2))[-1] == "another way"
    assert "second prompt" not in " ".join(texts(server.messages(2)))


def test_new_archives_clear_keeps_title_and_export(fake_llm, session, repo, yuyao_home):
    server = fake_llm([say("Answer one"), say("Answer two")])
    s = session(server)
    s.chat("Question one")
    s.dispatch("/title My investigation")
    first = s.session_id
    assert "My investigation" in s.dispatch("/sessions")
    assert "My investigation" in s.dispatch("/status")

    out = s.dispatch("/export")
    exported = Path(re.search(r"to (\S+\.md)", out).group(1))
    md = exported.read_text()
    assert "# My investigation" in md and "Question one" in md and "Answer one" in md

    s.dispatch("/clear")
    assert s.messages == [] and s.session_id == first
    s.dispatch("/new")
    assert s.session_id != first and s.messages == []
    assert "archived" in s.dispatch("/sessions")
    s.chat("Fresh start")
    assert "Question one" not in " ".join(texts(server.messages(1)))


def test_rename_alias_and_usage(session):
    s = session()
    assert "titled" in s.dispatch("/rename Work")
    assert s.dispatch("/usage full") == "usage display: full"
    with pytest.raises(ValueError):
        s.dispatch("/usage loud")


# ---------------------------------------------------------------------------------------------
# Context management


def big_file(repo: Path, name: str, chars: int) -> Path:
    path = repo / name
    line = "x = 'padding padding padding padding padding padding padding'\n"
    path.write_text(line * (chars // len(line) + 1))
    return path


def context_total(report: str) -> tuple[int, int]:
    """(tokens, characters) of the total row of /context list."""
    m = re.search(r"^\s+total\s+\d+\s+(\d+)\s+(\d+)\s*$", report, re.M)
    return int(m.group(1)), int(m.group(2))


def request_chars(body: dict) -> int:
    n = 0
    for m in body["messages"]:
        c = m.get("content")
        n += len(c if isinstance(c, str) else "")
        for tc in m.get("tool_calls") or []:
            n += len(tc["function"]["name"]) + len(tc["function"]["arguments"])
    for t in body.get("tools") or []:
        n += len(json.dumps(t, separators=(",", ":"), ensure_ascii=False))
    return n


def test_context_list_adds_up_to_the_request(fake_llm, session, repo):
    path = big_file(repo, "big.txt", 3000)
    server = fake_llm([call("read", file_path=str(path)), say("Read it."), say("ok")])
    # Nothing to map: a map built in the background joins the first request made after it
    # is ready, which under load can be the one after /context (test_repomap.py covers it).
    (repo / "calc.py").unlink()
    s = session(server, mode="yolo")
    s.chat("Read big.txt")
    report = s.dispatch("/context list")
    rows = re.findall(r"^  (\S.*?)\s{2,}(\S+)\s+(\d+)\s+(\d+)\s*$", report, re.M)
    parts = {name.strip(): int(chars) for name, _, _, chars in rows}
    total = parts.pop("total")
    for name in (
        "system prompt",
        "AGENTS.md / CLAUDE.md",
        "memory",
        "tool schemas",
        "history (messages)",
        "tool results",
    ):
        assert name in parts, report
    assert sum(parts.values()) == total, report
    s.chat("x")
    assert request_chars(server.body(2)) == total + 1, "the figures are the next request's size"
    detail = s.dispatch("/context detail")
    assert "budget" in detail


def test_older_tool_results_are_stubbed_in_the_request_only(fake_llm, session, repo):
    path = big_file(repo, "big.txt", 4000)
    script = []
    for _ in range(7):
        script += [call("read", file_path=str(path)), say("Read.")]
    server = fake_llm(script)
    s = session(server, mode="yolo")
    # Old results are stubbed in batches of a quarter of the compaction budget (16 000
    # characters here): four old results of 4 216 characters make one, at round 5; round 4's
    # result, old from round 6 on, waits for the next batch.
    s.dispatch("/config set model.context_window 20000")
    for k in range(7):
        s.chat(f"Read big.txt, round {k}")
    results = list(server.tool_results(-1).values())
    assert len(results) == 7
    assert all("shortened to save context" in r for r in results[:4]), results
    assert all("shortened" not in r and len(r) >= 4000 for r in results[4:])
    stubbed_per_request = [
        sum("shortened" in r for r in server.tool_results(i).values())
        for i in range(len(server.requests))
    ]
    assert sorted(set(stubbed_per_request)) == [0, 4], "one batch of four, never one by one"
    durable = [m for m in s.messages if m["role"] == "tool"]
    assert all(len(m["content"]) >= 4000 for m in durable), "the durable history keeps them"
    assert "stubbed: read" in s.dispatch("/context detail")


def test_compaction_near_the_threshold_keeps_the_task(fake_llm, session, repo, yuyao_home):
    files = [big_file(repo, f"part{i}.txt", 4000) for i in range(4)]
    work_calls = []

    def responder(body, index):
        system = body["messages"][0]["content"]
        if system.startswith("You keep a coding agent's memory"):
            return say("NONE")
        if "You summarize" in system:
            return say(
                "## Task\nAdd a docstring to calc.py (TASK-MARKER).\n## Decisions\nnone\n"
                "## Files touched\npart0.txt, part1.txt, part2.txt read\n## Open todos\n"
                "read part3.txt, then finish\n## Current state\nreading parts"
            )
        work_calls.append(index)
        n = len(work_calls)
        if n <= len(files):
            return call("read", file_path=str(files[n - 1]))
        return say("Finished: all parts read.")

    server = fake_llm(responder)
    s = session(server, mode="yolo")
    base, _ = context_total(s.dispatch("/context list"))
    s.dispatch(f"/config set model.context_window {int((base + 2600) / 0.8)}")

    # A reading task: "Finished" after reading is true (a change task would be checked).
    answer = s.chat("TASK-MARKER: read every part file, then say what calc.py needs")
    assert answer == "Finished: all parts read."
    bodies = [server.body(i) for i in range(len(server.requests))]
    summary_at = [i for i, b in enumerate(bodies) if "You summarize" in b["messages"][0]["content"]]
    assert summary_at, "compaction fired"
    k = summary_at[0]
    assert bodies[k - 1]["messages"][0]["content"].startswith("You keep"), "the flush runs first"
    before, after = bodies[k - 2], bodies[k + 1]
    assert request_chars(after) < request_chars(before), "the next request is smaller"
    assert "TASK-MARKER" in json.dumps(after["messages"]), "and still carries the task"
    assert "Files touched" in json.dumps(after["messages"])
    # The durable session file still holds every tool result.
    [path] = session_files(yuyao_home)
    log = entries(path)
    assert sum(1 for e in log if e.get("message", {}).get("role") == "tool") == 4
    assert any(e["type"] == "compaction" for e in log)


def test_compact_command_and_the_task_carries_on(fake_llm, session):
    server = fake_llm(
        [
            say("Step one done."),
            say("Step two done."),
            say("NONE"),  # the memory flush before compaction
            say("## Task\nWrite PEAR-7 in the summary.\n## Open todos\nstep three"),
            say("Step three done, task complete."),
        ]
    )
    s = session(server)
    s.chat("PEAR-7: do steps one to three")
    s.chat("next step")
    out = s.dispatch("/compress")
    assert "compacted" in out
    assert s.messages[0]["content"].startswith("[This conversation was compacted")
    assert s.chat("continue") == "Step three done, task complete."
    last = " ".join(texts(server.messages(4)))
    assert "PEAR-7: do steps one to three" in last, "the original task is carried verbatim"


def test_recap_is_one_line(fake_llm, session):
    server = fake_llm(
        [say("Looked at part A; part B is next."), say("We fixed part A; next is part B.\nextra")]
    )
    s = session(server)
    assert "empty" in s.dispatch("/recap")
    s.chat("Fix parts A and B")
    assert s.dispatch("/recap") == "We fixed part A; next is part B."
    assert "one-line" in server.system_prompt(1)


# ---------------------------------------------------------------------------------------------
# Spend ceiling


class Handler:
    def __init__(self, answer: str):
        self.answer = answer
        self.requests = []

    def event(self, event_json: str) -> None:
        pass

    def request(self, request_json: str) -> str:
        self.requests.append(json.loads(request_json))
        return self.answer


COST = json.dumps({"input_cost_per_token": 0.001, "output_cost_per_token": 0.001})


@pytest.mark.parametrize(
    "answer, status, ceiling",
    [
        ("raise 1000", "completed", 1000.0),
        ("remove", "completed", None),
        ("stop", "limits_exceeded", 0.0001),
    ],
)
def test_interactive_ceiling_asks_to_stop_raise_or_remove(
    fake_llm, use_env, repo, answer, status, ceiling
):
    from yuyao import _core

    server = fake_llm([say("Costly answer.")])
    use_env(server)
    handler = Handler(answer)
    options = {
        "cwd": str(repo),
        "max_cost_usd": 0.0001,
        "model": {"cost": COST},
        "stream": False,
        "no_trajectory": True,
    }
    s = _core.Session(json.dumps(options), handler)
    s.chat("hello")
    st = json.loads(s.status_json())
    s.close()
    assert [r["type"] for r in handler.requests] == ["cost_ceiling"]
    assert "raise" in handler.requests[0]["question"]
    assert st["last_turn"]["status"] == status
    assert st["max_cost_usd"] == ceiling
    assert len(server.requests) == (0 if status == "limits_exceeded" else 1)


def test_headless_ceiling_is_limits_exceeded_exit_0(fake_llm, yuyao, env):
    server = fake_llm([say("never")])
    proc = yuyao(
        "-p",
        "hi",
        "--max-cost",
        "0.0001",
        "--output-format",
        "json",
        env=env(server, D2A_MODEL_COST=COST),
    )
    assert proc.returncode == 0, output(proc)
    assert json.loads(proc.stdout)["exit_status"] == "LimitsExceeded"
    assert server.requests == []


def test_status_numbers_come_from_the_core(fake_llm, session):
    server = fake_llm([say("hi", usage={"prompt_tokens": 6400, "completion_tokens": 5})])
    s = session(server)
    s.dispatch("/config set model.context_window 64000")
    s.chat("hello")
    status = s.dispatch("/status")
    assert "context   10.0% of 64000 tokens" in status, status
    for field in ("model", "cwd", "mode", "role", "sandbox", "network", "cost"):
        assert re.search(rf"^{field}\s", status, re.M), status
    assert FAKE_MODEL in status


def test_model_switch_keeps_context_and_turns_reasoning_into_text(fake_llm, session):
    server = fake_llm([say("Answer A.", reasoning="I considered GUAVA."), say("Answer B.")])
    s = session(server)
    s.chat("First question")
    server.expect_model("other-vendor-model")
    s.dispatch("/model other-vendor-model")
    s.chat("Second question")
    assert server.body(1)["model"] == "other-vendor-model"
    sent = " ".join(texts(server.messages(1)))
    assert "First question" in sent and "Answer A." in sent
    assert "I considered GUAVA." in sent, "the previous model's reasoning is sent as text"
    assert "reasoning_content" not in json.dumps(server.messages(1))


# ---------------------------------------------------------------------------------------------
# The TUI drives the same sessions


def test_tui_continue_and_ceiling_prompt(fake_llm, yuyao, env, repo):
    from test_tui import CTRL_D, yuyao_term

    server = fake_llm([say("Stored."), say("You said PLUM.")])
    assert yuyao("-p", "Remember PLUM.", env=env(server)).returncode == 0
    term = yuyao_term(env(server, D2A_MODEL_COST=COST), repo, "-c", "--max-cost", "0.0001")
    try:
        term.wait_for(r"resumed session \w+ \(2 messages\)")
        term.line("Which fruit?")
        term.wait_for(r"raise <usd>")
        term.line("remove")
        term.wait_for(r"You said PLUM\.")
        assert "Remember PLUM." in " ".join(texts(server.messages(1)))
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_a_hand_edited_ceiling_applies_and_covers_compact(fake_llm, session, yuyao_home):
    server = fake_llm([say("First."), say("never sent")])
    s = session(server, extra_env={"D2A_MODEL_COST": COST})
    s.chat("hello")
    (yuyao_home / "config.toml").write_text("maxCostUsd = 0.0001\n")
    s.chat("more")
    assert "ceiling $0.0001" in s.dispatch("/status")
    assert len(server.requests) == 1, "the ceiling written on disk stopped the second call"
    with pytest.raises(RuntimeError, match="spend ceiling"):
        s.dispatch("/compact")
    with pytest.raises(RuntimeError, match="spend ceiling"):
        s.dispatch("/recap")
    assert len(server.requests) == 1


def test_resume_restores_role_and_model_but_not_the_permission_mode(fake_llm, session):
    server = fake_llm([say("one"), say("two")], model="resumed-model")
    s = session(server, mode="yolo")
    s.dispatch("/role debug")
    s.dispatch("/model resumed-model")
    s.chat("hello")
    s.close()
    again = session(server, continue_session=True)
    again.chat("more")
    assert server.body(1)["model"] == "resumed-model"
    assert "debug" in server.system_prompt(1).split("Role:")[1].splitlines()[0]
    assert "Permission mode: ask" in server.system_prompt(1)
