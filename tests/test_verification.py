"""Seed 000 behaviours 6-8: intent line per tool batch, honest completion, verification by default and
--auto-test, against the scripted model. Each scenario also runs with its mechanism switched
off by configuration and shows the opposite outcome."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from fakellm import FAKE_MODEL, call, calls, say

pytestmark = pytest.mark.core

NO_INTENT_NOTE = "[intent] Say why in one line before each tool batch."
# A test the model's edit must satisfy: subtract must really subtract.
CHECK = (
    "import calc\n"
    "for i in range(1, 4):\n"
    "    print(f'check {i}: sub({i}, 1) == {i - 1}')\n"
    "if calc.sub(3, 1) != 2:\n"
    "    print('FAIL: sub(3, 1) returned', calc.sub(3, 1))\n"
    "    raise SystemExit(1)\n"
    "print('all checks passed')\n"
)
WRONG = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
READ = ("read", {"file_path": "calc.py"})
RIGHT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def commit(repo: Path, message: str = "setup") -> None:
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", message],
        cwd=repo,
        check=True,
    )


def configure(yuyao_home: Path, **keys) -> None:
    """User-layer configuration (`~/.yuyao/config.toml`)."""
    lines = []
    for key, value in keys.items():
        section, name = key.split(".")
        rendered = json.dumps(value) if not isinstance(value, bool) else str(value).lower()
        lines.append(f"[{section}]\n{name} = {rendered}\n")
    (yuyao_home / "config.toml").write_text("".join(lines))


def run_headless(run_agent, env, repo, tmp_path, server, task, max_steps=12):
    task_file = tmp_path / "task.txt"
    task_file.write_text(task)
    budget_file = tmp_path / "budget.json"
    budget_file.write_text(json.dumps({"max_steps": max_steps}))
    out_dir = tmp_path / "out"
    proc = run_agent(
        "--task-file", str(task_file), "--repo-dir", str(repo),
        "--model-base-url", server.url, "--model-name", FAKE_MODEL,
        "--model-api-key", server.api_key, "--out-dir", str(out_dir),
        "--budget-file", str(budget_file), env=env(), timeout=120,
    )  # fmt: skip
    log = f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    status_file = out_dir / "status.json"
    assert status_file.is_file(), log
    return proc, json.loads(status_file.read_text()), out_dir, log


def trajectory(out_dir: Path) -> list[dict]:
    records = []
    for path in sorted((out_dir / ".trajectory").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                records.append(json.loads(line))
    return records


# ---------------------------------------------------------------------------------------------
# §3 Intent line per tool batch


def intent_script():
    return [
        calls([("read", {"file_path": "calc.py"})], content="Reading calc.py to see the API."),
        call("bash", command="ls", description="List the project files"),
        call("bash", command="echo quiet"),  # no text, no description
        calls([("bash", {"command": "true"})], content="Checking once more."),
        say("The project has calc.py with add()."),
    ]


@pytest.mark.parametrize("remind", [True, False])
def test_intent_lines_recorded_per_batch_and_a_missing_one_is_asked_for(
    fake_llm, run_agent, env, repo, tmp_path, yuyao_home, remind
):
    if not remind:
        configure(yuyao_home, **{"intent.remind": False})
    server = fake_llm(intent_script())
    _, status, out_dir, log = run_headless(
        run_agent, env, repo, tmp_path, server, "What does calc.py offer?"
    )
    intents = [r for r in trajectory(out_dir) if r.get("kind") == "intent"]
    assert [(i["text"], i["stated"], i["source"]) for i in intents] == [
        ("Reading calc.py to see the API.", True, "text"),
        ("List the project files", True, "description"),
        ("(no intent stated) bash", False, "none"),
        ("Checking once more.", True, "text"),
    ], log
    noted = [NO_INTENT_NOTE in server.user_text(i) for i in range(len(server.requests))]
    # The note joins the request right after the batch without intent, for that request
    # only (a request-view note: a silent session does not grow by one per step); the next
    # request's messages up to the note are the same (the prompt cache still hits).
    assert noted[:3] == [False, False, False]
    assert noted[3:] == ([True, False] if remind else [False, False]), noted
    if remind:
        assert server.messages(4)[: len(server.messages(3)) - 1] == server.messages(3)[:-1]
    if remind:
        last = server.messages(3)[-1]
        assert last["role"] == "user" and NO_INTENT_NOTE in last["content"]


def test_a_model_that_stays_silent_is_reminded_less_often_the_longer_it_stays_silent(
    fake_llm, run_agent, env, repo, tmp_path
):
    silent = call("bash", command="true")  # no text, no description
    stated = calls([("bash", {"command": "true"})], content="Checking once more.")
    server = fake_llm([silent] * 3 + [stated] + [silent] * 32 + [say("Done.")])
    _, status, _, log = run_headless(
        run_agent, env, repo, tmp_path, server, "What does calc.py offer?", max_steps=50
    )
    assert status["exit_status"] == "Submitted", log
    noted = [i for i in range(len(server.requests)) if NO_INTENT_NOTE in server.user_text(i)]
    # Request k follows batch k: the first silent batch is reminded, then the 11th and the
    # 31st silent batch in a row (the gap doubles), not every step; a batch with a reason
    # starts the count over.
    assert noted == [1, 5, 15, 35], noted


def test_print_verbose_shows_the_intent_line(fake_llm, yuyao, env):
    server = fake_llm(
        [calls([("bash", {"command": "true"})], content="Probing the shell."), say("Fine.")]
    )
    proc = yuyao("-p", "probe", "--verbose", "--mode", "yolo", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "[intent] Probing the shell." in proc.stderr
    quiet = fake_llm([call("bash", command="true"), say("Fine.")])
    proc = yuyao("-p", "probe", "--verbose", "--mode", "yolo", env=env(quiet))
    assert "[intent] (no intent stated) bash (the model stated none)" in proc.stderr


# ---------------------------------------------------------------------------------------------
# §4 + §5 Honest completion with verification by default


def claims_done_with_a_failing_test():
    return [
        calls(
            [READ, ("write", {"file_path": "calc.py", "content": WRONG})], content="Adding sub()."
        ),
        say("Done: sub() is implemented and all tests pass."),
        # The failure came back once; the model claims done again without fixing it.
        say("Done: sub() is implemented and all tests pass."),
        # The completion check comes before its final answer; it still claims done.
        say("Done: sub() is implemented and all tests pass."),
    ]


@pytest.mark.parametrize("enabled", [True, False])
def test_a_turn_claiming_done_with_a_failing_test_is_reported_unverified(
    fake_llm, run_agent, env, repo, tmp_path, yuyao_home, enabled
):
    (repo / "AGENTS.md").write_text("# Commands\n- test: `python3 check_calc.py`\n")
    (repo / "check_calc.py").write_text(CHECK)
    commit(repo)
    if not enabled:
        configure(yuyao_home, **{"verification.enabled": False})
    server = fake_llm(claims_done_with_a_failing_test())
    proc, status, out_dir, log = run_headless(
        run_agent, env, repo, tmp_path, server, "Add sub(a, b) to calc.py."
    )
    completion = status["completion"]
    assert completion["files_changed"][0]["path"] == "calc.py", completion
    if not enabled:
        # No verification: two model calls, nothing checked, nothing claimed unverified.
        assert len(server.requests) == 2, log
        assert completion["verification"] is None and completion["verified"] is None
        assert completion["contradiction"] is None
        return
    # The failing test went back to the model once, verbatim; then the completion check,
    # once, before the final answer.
    assert len(server.requests) == 4, log
    fed_back = server.messages(2)[-1]["content"]
    assert "`python3 check_calc.py` FAILED (exit 1)" in fed_back
    assert "FAIL: sub(3, 1) returned 4" in fed_back and "check 3: sub(3, 1) == 2" in fed_back
    checked = server.messages(3)[-1]["content"]
    assert checked.startswith("[completion check before your final answer]"), checked
    assert "`python3 check_calc.py` FAILED (exit 1)" in checked
    # status.json: not verified, with the failing output; the check names the failure.
    assert completion["verified"] is False, completion
    assert "FAIL: sub(3, 1) returned 4" in completion["verification"]["output"]
    assert completion["verification"]["exit_code"] == 1
    assert "says the work is done, but it is not" in completion["contradiction"]
    assert "python3 check_calc.py" in completion["contradiction"]
    assert status["exit_status"] == "Submitted" and proc.returncode == 0  # §9 unchanged
    kinds = [r.get("kind") for r in trajectory(out_dir)]
    assert "verification" in kinds and "completion" in kinds


def test_completion_lists_assumptions_and_untouched_requested_files(api, fake_llm, repo):
    """Headless ask-user answers by assumption; a file the request named is never touched."""
    (repo / "util.py").write_text("X = 1\n")
    commit(repo)
    server = fake_llm(
        [
            call("ask-user", question="Which name?", options=["sub", "minus"]),
            calls(
                [READ, ("write", {"file_path": "calc.py", "content": RIGHT})], content="Writing."
            ),
            say("All done."),
            say("All done."),  # told the check before its final answer, it insists
        ]
    )
    s = api(server, mode="yolo")
    text = s.chat("Add sub to calc.py and document it in util.py")
    c = s.completion
    assert c["assumptions"] == ["Which name?"], c
    assert c["requested_untouched"] == ["util.py"], c
    assert "util.py named in the request was not changed" in c["contradiction"]
    # The text returned to the caller says it plainly.
    assert "[completion check: not clean]" in text and "util.py" in text


# ---------------------------------------------------------------------------------------------
# §5 Verification output verbatim


@pytest.mark.parametrize("enabled", [True, False])
def test_verification_output_is_reported_verbatim(fake_llm, yuyao, env, repo, yuyao_home, enabled):
    (repo / "Makefile").write_text(
        "test:\n\t@python3 -c \"[print(f'line {i}') for i in range(1, 301)]\"\n"
    )
    commit(repo)
    configure(yuyao_home, **{"verification.enabled": enabled})
    server = fake_llm([call("write", file_path="notes.txt", content="x\n"), say("Wrote notes.")])
    proc = yuyao("-p", "write notes.txt", "--mode", "yolo", env=env(server))
    assert proc.returncode == 0, proc.stderr
    if not enabled:
        assert "[verification]" not in proc.stderr and "line 300" not in proc.stderr
        return
    err = proc.stderr
    assert "[verification] `make test` passed" in err, err
    # Head and tail verbatim, the middle in a file that holds every line.
    for line in ("line 1\n", "line 40\n", "line 242\n", "line 300\n"):
        assert line in err, line
    assert "line 120\n" not in err
    spilled = [w for w in err.split() if "verification-" in w and w.endswith(".txt")]
    assert spilled, err
    full = Path(spilled[0]).read_text()
    assert all(f"line {i}\n" in full for i in (1, 120, 300))
    assert "Completion check" in err and "`make test` passed" in err


# ---------------------------------------------------------------------------------------------
# §5 --auto-test


def fixes_in_two_rounds():
    return [
        calls(
            [READ, ("write", {"file_path": "calc.py", "content": WRONG})], content="Adding sub()."
        ),
        calls([("write", {"file_path": "calc.py", "content": RIGHT})], content="Fixing sub()."),
        say("sub() works; the tests pass."),
    ]


@pytest.mark.parametrize("auto_test", [True, False])
def test_auto_test_iterates_to_green(fake_llm, yuyao, env, repo, yuyao_home, auto_test):
    (repo / "check_calc.py").write_text(CHECK)
    commit(repo)
    server = fake_llm(fixes_in_two_rounds())
    flags = ["--auto-test", "--test-cmd", "python3 check_calc.py"] if auto_test else []
    if not auto_test:
        configure(yuyao_home, **{"verification.enabled": False})
    proc = yuyao("-p", "Add sub to calc.py", "--mode", "yolo", *flags, env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert (repo / "calc.py").read_text() == RIGHT
    after_first, after_second = server.user_text(1), server.user_text(2)
    if not auto_test:
        assert "[auto-test" not in after_first + after_second
        assert "[verification]" not in proc.stderr
        return
    assert "auto-test round 1/5" in after_first and "FAIL: sub(3, 1) returned 4" in after_first
    assert "[auto-test round 2/5] `python3 check_calc.py` passed." in after_second
    assert "auto-test: passed at round 2" in proc.stderr, proc.stderr
    assert len(server.requests) == 3  # no extra verification round after the green run


def test_auto_test_stops_at_max_rounds_and_says_so(fake_llm, yuyao, env, repo, yuyao_home):
    (repo / "check_calc.py").write_text(CHECK)
    commit(repo)
    configure(yuyao_home, **{"verification.max_rounds": 2})
    wrong = [
        calls(
            [READ, ("write", {"file_path": "calc.py", "content": WRONG + f"# try {i}\n"})],
            content=f"Try {i}.",
        )
        for i in range(3)
    ]
    server = fake_llm([*wrong, say("I could not make sub() pass.")])
    proc = yuyao(
        "-p", "Add sub", "--mode", "yolo", "--auto-test", "--test-cmd", "python3 check_calc.py",
        "--output-format", "json", env=env(server),
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    auto = doc["completion"]["auto_test"]
    assert auto == {
        "rounds": 2,
        "passed_at": None,
        "max_rounds": 2,
        "stopped_by_limit": True,
        "unavailable": False,
    }
    assert "the last one: stop editing" in server.user_text(2)
    assert "still failing after 2 rounds" in proc.stderr
    assert doc["completion"]["verified"] is False


# ---------------------------------------------------------------------------------------------
# Live configuration keys: effect tests registered in test_settings_live.EFFECTS.


def _set(s, key: str, value: str) -> str:
    return s.dispatch(f"/config set {key} {value}")


def _write(name: str, content: str = "x\n"):
    return call("write", file_path=name, content=content)


def effect_verification_enabled(fake_llm, live, repo, **_):
    (repo / "Makefile").write_text("test:\n\t@echo MAKE-TEST-RAN\n")
    server = fake_llm([say("warm"), _write("a.txt"), say("one"), _write("b.txt"), say("two")])
    s, events = live(server)
    _set(s, "verification.enabled", "false")
    s.chat("write a")
    assert events.of("verification") == []
    _set(s, "verification.enabled", "true")
    s.chat("write b")
    assert ["MAKE-TEST-RAN" in e["output"] for e in events.of("verification")] == [True]


def effect_verification_command(fake_llm, live, **_):
    server = fake_llm([say("warm"), _write("a.txt"), say("done")])
    s, events = live(server)
    _set(s, "verification.command", "'echo VERIFIED-BY-KEY'")
    s.chat("write a")
    assert "VERIFIED-BY-KEY" in events.of("verification")[0]["output"]


def effect_verification_timeout(fake_llm, live, **_):
    server = fake_llm([say("warm"), _write("a.txt"), say("done"), say("still done")])
    s, events = live(server)
    _set(s, "verification.command", "'sleep 20'")
    _set(s, "verification.timeout_s", "1")
    started = time.monotonic()
    s.chat("write a")
    assert time.monotonic() - started < 15
    (v,) = events.of("verification")
    assert not v["ok"] and "timed out" in v["output"]


def effect_verification_max_rounds(fake_llm, live, **_):
    steps = [say("warm"), *[_write(f"{n}.txt") for n in "abc"], say("gave up"), say("gave up")]
    server = fake_llm(steps)
    s, events = live(server, auto_test=True, test_cmd="false")
    _set(s, "verification.max_rounds", "1")
    s.chat("write three files")
    # One auto-test round after the first batch, then only the run before the final answer
    # (the default 5 would have run after each of the three batches).
    assert len(events.of("verification")) == 2


def effect_intent_remind(fake_llm, live, **_):
    server = fake_llm([say("warm"), call("bash", command="true"), say("ok")])
    s, _ = live(server)
    _set(s, "intent.remind", "false")
    s.chat("run true")
    assert NO_INTENT_NOTE not in server.user_text(-1)


def effect_completion_review(fake_llm, live, **_):
    server = fake_llm(
        [say("warm"), _write("a.txt"), say("one"), _write("b.txt"), say("two"), say("two, again")]
    )
    s, _ = live(server)
    _set(s, "completion.review", "false")
    s.chat("write a.txt and update README.md")  # README.md is left alone: not clean
    assert len(server.requests) == 3
    _set(s, "completion.review", "true")
    s.chat("write b.txt and update README.md")
    assert len(server.requests) == 6
    assert "[completion check before your final answer]" in server.user_text(-1)


def effect_completion_track_commands(fake_llm, live, **_):
    steps = [say("warm"), call("bash", command="echo x > a.txt"), say("one")]
    server = fake_llm([*steps, call("bash", command="echo y > b.txt"), say("two")])
    s, events = live(server)
    _set(s, "completion.track_commands", "false")
    s.chat("write a.txt")
    assert events.of("completion")[-1]["check"]["files_changed"] == []
    _set(s, "completion.track_commands", "true")
    s.chat("write b.txt")
    changed = events.of("completion")[-1]["check"]["files_changed"]
    assert [(f["path"], f["by_command"]) for f in changed] == [("b.txt", True)]


LIVE_EFFECTS = {
    "completion.review": effect_completion_review,
    "completion.track_commands": effect_completion_track_commands,
    "verification.enabled": effect_verification_enabled,
    "verification.command": effect_verification_command,
    "verification.timeout_s": effect_verification_timeout,
    "verification.max_rounds": effect_verification_max_rounds,
    "intent.remind": effect_intent_remind,
}


# ---------------------------------------------------------------------------------------------
# The TUI shows all three (real core, scripted model, a pseudo-terminal).


def test_tui_shows_intent_verification_output_and_the_completion_check(fake_llm, env, repo):
    from test_tui import CTRL_D, yuyao_term

    (repo / "AGENTS.md").write_text("- test: `python3 check_calc.py`\n")
    (repo / "check_calc.py").write_text(CHECK)
    commit(repo)
    server = fake_llm(
        [
            call("read", file_path="calc.py"),  # no intent: shown as such
            calls([("write", {"file_path": "calc.py", "content": WRONG})], content="Adding sub."),
            say("Done, sub() is implemented."),
            say("Done, sub() is implemented."),
            say("Done, sub() is implemented."),
        ]
    )
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_for(r"yolo")
        term.line("add sub to calc.py")
        term.wait_for(r"\(no intent stated\) read")
        term.wait_for(r"→ Adding sub\.|Adding sub\.")
        term.wait_for(r"verification `python3 check_calc\.py` failed \(exit 1\)")
        term.wait_for(r"FAIL: sub\(3, 1\) returned 4")
        term.wait_for(r"Completion check")
        term.wait_for(r"says the work is done, but it is not")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_verification_nobody_may_approve_is_reported_not_run_not_failed(api, fake_llm, repo):
    """auto-edit through agent_api: the test command would need approval and nobody is there;
    the turn is unverified (said so), never reported as a failing verification."""
    (repo / "Makefile").write_text("test:\n\t@echo SHOULD-NOT-RUN; exit 1\n")
    commit(repo)
    admitted = "Wrote notes.txt; `make test` was not run (nobody could approve it)."
    server = fake_llm(
        [call("write", file_path="notes.txt", content="x\n"), say("Wrote it."), say(admitted)]
    )
    s = api(server, mode="auto-edit")
    text = s.chat("write notes.txt")
    c = s.completion
    assert c["verification"]["not_run"] and "nobody" in c["verification"]["not_run"], c
    assert c["verified"] is None and "SHOULD-NOT-RUN" not in json.dumps(c)
    assert any("not run" in p for p in c["problems"]), c["problems"]
    # Unverified is not clean: the check reached the model before its final answer.
    assert "not run" in server.user_text(2)
    assert text == admitted and len(server.requests) == 3
