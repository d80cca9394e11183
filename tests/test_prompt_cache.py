"""Requests a provider's prompt cache can reuse (DESIGN §4): between compactions every
request extends the previous one byte for byte — the system prompt is built once, a mode switch
or a commit arrives as a settings note at the end, old tool results are stubbed in a few batches
— git status is read once per system prompt, not per call, and the cache hit rate the provider
reports is shown.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakellm import Events, call, durable, say

pytestmark = pytest.mark.core


@pytest.fixture
def core(use_env, repo):
    """``core(server, **options)`` -> (core Session in ``repo``, Events)."""
    from yuyao import _core

    opened = []

    def open_core(server, **options):
        use_env(server)
        events = Events()
        opts = {"cwd": str(repo), "mode": "yolo", "stream": False, **options}
        s = _core.Session(json.dumps(opts), events)
        opened.append(s)
        return s, events

    yield open_core
    for s in opened:
        s.close()


def trace(s) -> list[dict]:
    path = json.loads(s.status_json())["trajectory"]
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def stub_count(server, i: int) -> int:
    return sum("shortened to save context" in r for r in server.tool_results(i).values())


def big_lines(n: int, tag: str) -> str:
    return "".join(f"{tag} line {k:04d} " + "x" * 60 + "\n" for k in range(n))


def test_each_request_extends_the_previous_one_across_edits_a_mode_switch_and_batches(
    fake_llm, core, repo
):
    for k in range(16):
        (repo / f"big{k}.txt").write_text(big_lines(45, f"big{k}"))  # ~3 700 characters
    first_turn = [
        call("write", file_path="notes.txt", content="one\n"),
        call("read", file_path="calc.py"),
        call("edit", file_path="calc.py", old_string="a + b", new_string="b + a"),
        call("bash", command="echo more >> notes.txt"),
        *[call("read", file_path=f"big{k}.txt") for k in range(16)],
        say("first turn done"),
    ]
    second_turn = [
        call("read", file_path="calc.py"),
        call("write", file_path="blocked.txt", content="x"),
        say("planned"),
    ]
    server = fake_llm(first_turn + second_turn)
    s, _ = core(server)
    # A small window: batches of a quarter of the compaction budget (16 000 characters).
    s.dispatch("/config set model.context_window 20000")
    s.dispatch("/config set compaction.threshold 1.0")
    # Sixteen reads after the last change: past seed 001's 32 KiB preview budget, which this
    # test is not about (tests/test_preview_budget.py is).
    s.dispatch("/config set tools.preview_budget_kib 0")
    s.chat("edit, then read every big file")
    s.dispatch("/mode plan")
    s.chat("now plan")

    assert not (repo / "blocked.txt").exists(), "plan mode is in force"
    n = len(server.requests)
    assert n == len(first_turn) + len(second_turn)
    system = server.messages(0)[0]
    batches = []
    for i in range(1, n):
        prev, cur = durable(server.messages(i - 1)), server.messages(i)
        assert cur[0] == system, f"request {i}: the system prompt is the conversation's own"
        if cur[: len(prev)] != prev:
            batches.append(i)
            assert stub_count(server, i) >= stub_count(server, i - 1) + 2, (
                f"request {i} rewrites its prefix without stubbing a batch of results"
            )
    assert batches, "the big reads crossed a batch threshold"
    assert len(batches) <= 2, f"the prefix changed at {batches}, not at a few batch points"
    # The switch is visible in the request (spec §8), in a note at its end.
    switched = len(first_turn)
    assert server.stated("Permission mode", switched - 1).startswith("yolo")
    assert server.stated("Permission mode", switched).startswith("plan")
    assert "Permission mode: yolo" in server.system_prompt(switched), "the prompt is unchanged"
    notes = [m for m in server.messages(-1) if "[settings]" in json.dumps(m)]
    assert len(notes) == 1, "one note for one switch"


def test_a_rewound_conversation_is_sent_as_it_is_now_not_as_it_was(fake_llm, core, repo):
    """The main loop builds each request on the messages the previous ones settled
    (docs/PERFORMANCE.md, long sessions); a rewind rewrites the history under it, and the next
    request is built on the history as it is after the rewind."""
    script = [
        call("read", file_path="calc.py"),
        call("read", file_path="calc.py"),
        say("first done"),
        call("read", file_path="calc.py"),
        call("bash", command="echo second-turn-marker"),
        say("second done"),
        call("read", file_path="calc.py"),
        say("third done"),
    ]
    server = fake_llm(script)
    s, _ = core(server)
    s.chat("first prompt")
    s.chat("second prompt")
    listing = s.dispatch("/rewind")
    second_id = next(line.split()[0] for line in listing.splitlines() if "second prompt" in line)
    s.dispatch(f"/rewind {second_id} conversation")
    s.chat("third prompt")

    assert len(server.requests) == len(script)
    after_first = durable(server.messages(2))  # the last request of the first turn
    for i in (6, 7):  # the third turn's requests
        sent = server.messages(i)
        text = json.dumps(sent)
        assert "second prompt" not in text and "second-turn-marker" not in text, i
        assert sent[: len(after_first)] == after_first, f"request {i} extends the first turn"
        assert "third prompt" in text
    # Within the turn the requests still extend each other.
    assert server.messages(7)[: len(durable(server.messages(6)))] == durable(server.messages(6))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_git_status_is_read_once_per_system_prompt_not_per_call(fake_llm, core, repo):
    commit = "git -c user.name=t -c user.email=t@t commit -qam wip"
    server = fake_llm(
        [
            call("write", file_path="a.txt", content="a\n"),
            call("read", file_path="calc.py"),
            call("grep", pattern="add"),
            call("bash", command="ls"),
            call("edit", file_path="calc.py", old_string="a + b", new_string="b + a"),
            call("bash", command=commit),
            call("read", file_path="a.txt"),
            say("done"),
        ]
    )
    s, _ = core(server)
    s.chat("work")
    assert git(repo, "log", "--oneline").count("\n") == 2, "the commit ran"
    reads = [r for r in trace(s) if r["kind"] == "git_state"]
    status = [r for r in reads if r["read"] == "status"]
    heads = [r for r in reads if r["read"] == "head"]
    assert [r["why"] for r in status] == ["system prompt", "HEAD moved"], reads
    # HEAD is read after the batches that could change it (write, edit, the commit), never
    # after read, grep or a read-only command.
    assert len(heads) == 3, reads
    assert len(server.requests) == 8
    # Requests before the commit say nothing new; the one after it states the new git state.
    git_lines = [server.stated("Git", i) for i in range(8)]
    assert git_lines[:6] == [git_lines[0]] * 6 and "0 changed files" in git_lines[0]
    # After the commit only the untracked a.txt is a change.
    assert git_lines[6].endswith(", 1 changed file") and git_lines[6] == git_lines[7]
    assert server.system_prompt(7) == server.system_prompt(0)


def test_a_resumed_session_keeps_a_stable_prefix(fake_llm, yuyao, env, repo):
    server = fake_llm(
        [
            call("write", file_path="one.txt", content="1\n"),
            say("first done"),
            call("write", file_path="two.txt", content="2\n"),
            call("bash", command="echo x > three.txt"),  # refused under auto-edit
            say("second done"),
            # The completion check shows the refusal before the final answer: appended.
            say("second done; the command was refused"),
        ]
    )
    first = yuyao("-p", "write one", "--mode", "yolo", env=env(server), cwd=repo)
    assert first.returncode == 0, first.stderr
    second = yuyao("-p", "-c", "write two", "--mode", "auto-edit", env=env(server), cwd=repo)
    assert second.returncode == 0, second.stderr
    resumed = list(range(2, len(server.requests)))
    assert len(resumed) == 4
    assert "[completion check before your final answer]" in server.user_text(resumed[-1])
    assert "write one" in json.dumps(server.messages(resumed[0])), "the conversation resumed"
    # The resumed run states the level it runs under (the mode is not restored).
    assert server.stated("Permission mode", resumed[0]).startswith("auto-edit")
    for i in resumed[1:]:
        prev, cur = durable(server.messages(i - 1)), server.messages(i)
        assert cur[: len(prev)] == prev, f"request {i} rewrites the resumed prefix"


def test_cache_hit_rate_in_usage_status_and_the_usage_line(fake_llm, core):
    usage = {"prompt_tokens": 1000, "completion_tokens": 10, "cached_tokens": 800}
    server = fake_llm([say("one", usage=usage), say("two", usage=usage)])
    s, events = core(server)
    s.chat("hi")
    s.chat("again")
    status = json.loads(s.status_json())
    assert status["usage"]["cached_tokens"] == 1600
    assert status["usage"]["cache_hit_percent"] == pytest.approx(80.0)
    assert "80.0% cache hits" in s.dispatch("/status")
    assert "80.0% of prompt tokens from the cache" in s.dispatch("/usage")
    lines = [e["line"] for e in events.events if e.get("type") == "usage"]
    assert lines and all("80% cache hits" in line for line in lines), lines


def test_a_cd_into_a_folder_with_agents_md_reaches_the_model_in_a_note(fake_llm, core, repo):
    (repo / "AGENTS.md").write_text("Top rule: keep it small.\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").write_text("Sub rule: use tabs in sub/.\n")
    server = fake_llm([call("bash", command="cd sub"), say("in sub")])
    s, _ = core(server)
    s.chat("go to sub")
    assert "Top rule" in server.system_prompt(0) and "Sub rule" not in server.system_prompt(0)
    assert server.stated("Working directory", 1) == str(repo / "sub")
    assert "Sub rule: use tabs" in server.messages(1)[-1]["content"]
    assert server.system_prompt(1) == server.system_prompt(0)
    assert server.messages(1)[:2] == server.messages(0)
