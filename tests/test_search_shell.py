"""grep, glob, bash, background jobs, monitor and the user's `!` shell, end to end through
yuyao.agent_api with the scripted model issuing the tool calls (spec §1, §1.1, §5.4)."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core


@pytest.fixture
def open_session(use_env, repo):
    """``open_session(server, cwd=repo, **create_session_kwargs)`` -> AgentSession."""
    from yuyao.agent_api import create_session

    opened = []

    def make(server, cwd: Path = repo, **kwargs):
        use_env(server)
        opened.append(create_session(cwd=str(cwd), **kwargs))
        return opened[-1]

    yield make
    for s in opened:
        s.close()


def run_calls(fake_llm, open_session, steps, cwd=None, mode="yolo", prompt="go"):
    """Serves ``steps`` (lists of (name, args, id) tuples, one reply each), then a final answer.

    Returns (server, session) after one chat turn."""
    server = fake_llm([calls(s) for s in steps] + [say("Finished.")])
    kwargs = {"mode": mode}
    if cwd is not None:
        kwargs["cwd"] = cwd
    session = open_session(server, **kwargs)
    assert session.chat(prompt) == "Finished."
    return server, session


def processes_with(marker: str) -> list[str]:
    """Command lines of live processes containing ``marker`` (zombies excluded)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(cmdline)
    return found


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def set_age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


# ---------------------------------------------------------------------------------------------
# grep


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder (not a git repository) with an ignore file, a binary, hidden files."""
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (root / "old.txt").write_text("needle one\n")
    (root / "src" / "new.py").write_text("a\nneedle two\nb\nNEEDLE three\n")
    (root / "src" / "lib.rs").write_text("fn needle() {}\n")
    (root / "blob.bin").write_bytes(b"needle\0\x01\x02binary")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / ".ignore").write_text("vendor/\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("needle in build\n")
    (root / "vendor").mkdir()
    (root / "vendor" / "dep.txt").write_text("needle in vendor\n")
    (root / "debug.log").write_text("needle in log\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "h.txt").write_text("needle hidden\n")
    set_age(root / "old.txt", 300)
    set_age(root / "src" / "lib.rs", 200)
    set_age(root / "src" / "new.py", 100)
    return root


def test_grep_output_modes_filters_and_ignores_outside_git(fake_llm, open_session, tree):
    steps = [
        [("grep", {"pattern": "needle"}, "files")],
        [("grep", {"pattern": "needle", "output_mode": "count", "-i": True}, "count")],
        [("grep", {"pattern": "three", "output_mode": "content", "-i": True, "-B": 1}, "ctx")],
        [("grep", {"pattern": "needle", "output_mode": "content", "-n": False}, "nonum")],
        [("grep", {"pattern": "needle", "glob": "*.rs"}, "glob")],
        [("grep", {"pattern": "needle", "type": "py"}, "type")],
        [("grep", {"pattern": "needle", "path": "src/lib.rs", "output_mode": "content"}, "file")],
        [("grep", {"pattern": "two\\nb", "multiline": True, "output_mode": "content"}, "multi")],
        [("grep", {"pattern": "two.b", "output_mode": "content"}, "single")],
        [("grep", {"pattern": "needle(", "output_mode": "content"}, "bad")],
        [("grep", {"pattern": "needle", "type": "nosuchtype"}, "badtype")],
    ]
    server, _ = run_calls(fake_llm, open_session, steps, cwd=tree)
    r = server.tool_result
    # newest first; ignored (.gitignore, .ignore), hidden and binary files are skipped
    assert r("files") == "src/new.py\nsrc/lib.rs\nold.txt"
    assert r("count") == "src/new.py:2\nsrc/lib.rs:1\nold.txt:1"
    assert r("ctx") == "src/new.py-3-b\nsrc/new.py:4:NEEDLE three"
    assert "src/new.py:needle two" in r("nonum").splitlines()
    assert r("glob") == "src/lib.rs"
    assert r("type") == "src/new.py"
    assert r("file") == "src/lib.rs:1:fn needle() {}"
    assert r("multi") == "src/new.py:2:needle two\nsrc/new.py:3:b"
    assert r("single").startswith("No matches")
    bad = r("bad")
    assert "invalid regex /needle(/" in bad and "unclosed group" in bad.lower()
    assert "unknown file type 'nosuchtype'" in r("badtype")


def test_grep_paging_says_how_many_more(fake_llm, open_session, tmp_path):
    root = tmp_path / "many"
    root.mkdir()
    (root / "f.txt").write_text("".join(f"hit {i}\n" for i in range(1, 26)))
    steps = [
        [("grep", {"pattern": "hit", "output_mode": "content", "head_limit": 10}, "p1")],
        [
            (
                "grep",
                {"pattern": "hit", "output_mode": "content", "head_limit": 10, "offset": 20},
                "p3",
            )
        ],
        [("grep", {"pattern": "hit", "output_mode": "content", "offset": 99}, "past")],
    ]
    server, _ = run_calls(fake_llm, open_session, steps, cwd=root)
    p1 = server.tool_result("p1").splitlines()
    assert p1[:10] == [f"f.txt:{i}:hit {i}" for i in range(1, 11)]
    assert p1[10] == "[showing results 1–10 of 25; continue with offset=10]"
    p3 = server.tool_result("p3").splitlines()
    assert p3 == [f"f.txt:{i}:hit {i}" for i in range(21, 26)]
    assert "past the end: there are 25 results" in server.tool_result("past")


GREP_RSS = """
import resource, sys
from yuyao.agent_api import create_session
s = create_session(cwd=sys.argv[1], mode="yolo")
s.chat("go")
s.close()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_grep_content_on_a_huge_tree_stores_only_the_page(fake_llm, env, python, tmp_path):
    """A million matching lines: the result is one page with the true total, and the
    process's peak memory grows by far less than the matches would take to hold."""

    def grep_peak_kib(root: Path, call_id: str) -> tuple[int, str]:
        args = {"pattern": "needle", "output_mode": "content"}
        server = fake_llm([calls([("grep", args, call_id)]), say("Finished.")])
        done = python(GREP_RSS, str(root), env=env(server), cwd=root, timeout=300)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.split()[-1]), server.tool_result(call_id)

    small = tmp_path / "small"
    small.mkdir()
    (small / "a.txt").write_text("needle\n")
    big = tmp_path / "big"
    line = "needle " + "x" * 40 + "\n"
    for f in range(400):
        path = big / f"d{f % 20}" / f"f{f:03}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(line * 2500)
    base_kib, _ = grep_peak_kib(small, "small")
    started = time.monotonic()
    big_kib, result = grep_peak_kib(big, "big")
    elapsed = time.monotonic() - started
    assert "of 1000000; continue with offset=1000]" in result, result[-300:]
    # Holding a million rows costs well over 100 MB; one page costs next to nothing.
    grown_mb = (big_kib - base_kib) / 1024
    assert grown_mb < 40, f"peak memory grew by {grown_mb:.0f} MB"
    print(f"grep over 1M matching lines: {elapsed:.1f}s, peak memory +{grown_mb:.1f} MB")


def test_grep_honours_gitignore_and_exclude_inside_a_repo(fake_llm, open_session, repo):
    (repo / ".gitignore").write_text("generated/\n")
    (repo / "generated").mkdir()
    (repo / "generated" / "g.py").write_text("TOKEN = 1\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("secret_notes.txt\n")
    (repo / "secret_notes.txt").write_text("TOKEN here\n")
    (repo / "app.py").write_text("TOKEN = 2\n")
    steps = [
        [("grep", {"pattern": "TOKEN"}, "g")],
        [("glob", {"pattern": "**/*"}, "all")],
        [("grep", {"pattern": "TOKEN", "path": "generated/g.py"}, "explicit")],
    ]
    server, _ = run_calls(fake_llm, open_session, steps)
    assert server.tool_result("g") == "app.py"
    listed = server.tool_result("all").splitlines()
    assert "app.py" in listed and "calc.py" in listed
    assert not any(p.startswith((".git/", "generated/")) or "secret" in p for p in listed)
    # a file named explicitly is searched even if ignored (as rg does)
    assert server.tool_result("explicit") == "generated/g.py"


# ---------------------------------------------------------------------------------------------
# glob


def test_glob_order_cap_and_truncation_line(fake_llm, open_session, tmp_path):
    root = tmp_path / "g"
    for i in range(150):
        f = root / f"d{i % 5}" / f"f{i:03}.py"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("x")
        set_age(f, 1000 - i)  # f149 is the newest
    (root / "top.txt").write_text("x")
    (root / "src" / "a").mkdir(parents=True)
    (root / "src" / "main.rs").write_text("x")
    (root / "src" / "a" / "b.rs").write_text("x")
    set_age(root / "src" / "a" / "b.rs", 5)
    steps = [
        [("glob", {"pattern": "**/*.py"}, "cap")],
        [("glob", {"pattern": "*.rs"}, "name")],
        [("glob", {"pattern": "src/*.rs"}, "direct")],
        [("glob", {"pattern": "src/**/*.{rs,txt}"}, "braces")],
        [("glob", {"pattern": "f00[0-2].p?", "path": "d0"}, "class")],
        [("glob", {"pattern": "*.nothing"}, "none")],
        [("glob", {"pattern": "src/[", "path": "."}, "bad")],
    ]
    server, _ = run_calls(fake_llm, open_session, steps, cwd=root)
    cap = server.tool_result("cap").splitlines()
    assert len(cap) == 101
    assert cap[0].endswith("f149.py") and cap[1].endswith("f148.py") and cap[99].endswith("f050.py")
    assert cap[100] == "[showing 100 of 150 matches; narrow the pattern]"
    assert server.tool_result("name") == "src/main.rs\nsrc/a/b.rs"
    assert server.tool_result("direct") == "src/main.rs"
    assert server.tool_result("braces") == "src/main.rs\nsrc/a/b.rs"
    assert server.tool_result("class") == "d0/f000.py"
    assert server.tool_result("none").startswith("No files match")
    assert "invalid glob" in server.tool_result("bad")


# ---------------------------------------------------------------------------------------------
# bash


def test_bash_output_exit_code_ansi_and_environment(fake_llm, open_session, repo):
    steps = [
        [("bash", {"command": "echo out; echo err >&2; echo out2; exit 3"}, "mixed")],
        [("bash", {"command": "printf '\\033[31mred\\033[0m\\n'"}, "ansi")],
        [("bash", {"command": "echo $PAGER $GIT_PAGER $TERM; read x; echo read=$?"}, "env")],
    ]
    server, _ = run_calls(fake_llm, open_session, steps)
    assert server.tool_result("mixed") == "out\nerr\nout2\n[exit code 3]"
    assert server.tool_result("ansi") == "red\n[exit code 0]"
    assert server.tool_result("env") == "cat cat dumb\nread=1\n[exit code 0]"


def test_bash_timeout_kills_the_whole_group(fake_llm, open_session, repo):
    marker = "31337.5"
    cmd = f"echo started; sleep {marker} & sleep {marker}; echo never"
    server, _ = run_calls(
        fake_llm, open_session, [[("bash", {"command": cmd, "timeout": 700}, "t")]]
    )
    result = server.tool_result("t")
    assert result.startswith("started\n")
    assert "timed out after 700 ms; the process group was killed" in result
    assert "never" not in result
    assert wait_until(lambda: not processes_with(f"sleep {marker}")), processes_with(marker)


def test_bash_spill_file_holds_the_full_output(fake_llm, open_session, repo, yuyao_home):
    cmd = "seq 1 20000"
    server, _ = run_calls(fake_llm, open_session, [[("bash", {"command": cmd}, "big")]])
    result = server.tool_result("big")
    assert len(result) < 31_000
    assert result.startswith("1\n2\n3\n") and "19999\n20000" in result
    path = re.search(r"is in (\S+?);", result).group(1)
    assert Path(path).is_relative_to(yuyao_home)
    expected = subprocess.run(["seq", "1", "20000"], capture_output=True, text=True).stdout
    assert Path(path).read_text() == expected.rstrip("\n")


def test_cd_persists_and_resets_when_it_escapes(fake_llm, open_session, repo):
    (repo / "sub" / "deeper").mkdir(parents=True)
    steps = [
        [("bash", {"command": "cd sub && echo moved"}, "cd")],
        [("bash", {"command": "pwd"}, "pwd1")],
        [("bash", {"command": "cd deeper; cd ../.."}, "up")],
        [("bash", {"command": "cd sub/deeper"}, "down")],
        [("bash", {"command": "cd /tmp && pwd"}, "escape")],
        [("bash", {"command": "pwd"}, "pwd2")],
    ]
    server, session = run_calls(fake_llm, open_session, steps)
    assert server.tool_result("pwd1") == f"{repo}/sub\n[exit code 0]"
    assert "reset" not in server.tool_result("up")
    escape = server.tool_result("escape")
    assert f"the working directory was reset to {repo}" in escape
    assert server.tool_result("pwd2") == f"{repo}\n[exit code 0]"
    assert session.cwd == str(repo)


# ---------------------------------------------------------------------------------------------
# background jobs


def test_background_job_lifecycle(fake_llm, open_session, repo):
    marker = "31338.5"
    steps = [
        [
            (
                "bash",
                {
                    "command": "echo first; sleep 1.5; echo second; exit 4",
                    "run_in_background": True,
                },
                "start",
            ),
            ("bash", {"command": f"sleep {marker}", "run_in_background": True}, "start2"),
        ],
        [
            ("bash", {"command": "sleep 0.5"}, "settle"),
            ("bg-list", {}, "list1"),
            ("bg-output", {"id": "bash_1"}, "out1"),
        ],
        [("bash", {"command": "sleep 2"}, "wait")],
        [
            ("bg-output", {"id": "bash_1"}, "out2"),
            ("bg-output", {"id": "bash_1"}, "out3"),
            ("BashOutput", {"bash_id": "bash_1", "filter": "^f"}, "out4"),
        ],
        [("bg-stop", {"id": "bash_2"}, "stop"), ("bg-list", {}, "list2")],
        [("KillShell", {"shell_id": "bash_9"}, "unknown")],
    ]
    server, session = run_calls(fake_llm, open_session, steps)
    r = server.tool_result
    assert "Started background job bash_1" in r("start")
    list1 = r("list1")
    assert re.search(r"bash_1\s+bash\s+running", list1), list1
    assert re.search(r"bash_2\s+bash\s+running", list1), list1
    assert r("out1").splitlines()[1] == "first"
    out2 = r("out2")
    assert "failed (exit 4)" in out2.splitlines()[0] and "exit code 4" in out2.splitlines()[0]
    assert out2.splitlines()[1:] == ["second"]
    assert r("out3").endswith("(no new output)")
    assert r("out4").endswith("(no new lines match the filter)")
    assert "Stopped bash_2" in r("stop")
    assert re.search(r"bash_2\s+bash\s+stopped", r("list2"))
    assert wait_until(lambda: not processes_with(f"sleep {marker}"))
    assert "no background job 'bash_9'" in r("unknown") and "bash_1" in r("unknown")
    # the end of bash_1 was announced to the model at a later call
    announced = [
        m for m in server.messages() if m["role"] == "user" and "bash_1 ended" in str(m["content"])
    ]
    assert announced and "failed (exit 4)" in str(announced[0]["content"])


def test_jobs_end_with_the_session(fake_llm, open_session, repo):
    marker = "31339.5"
    steps = [
        [("bash", {"command": f"sleep {marker} & sleep {marker}", "run_in_background": True}, "s")]
    ]
    server, session = run_calls(fake_llm, open_session, steps)
    assert "bash_1" in server.tool_result("s")
    assert wait_until(lambda: len(processes_with(f"sleep {marker}")) >= 2)
    assert "running" in session.dispatch("/tasks")
    session.close()
    assert wait_until(lambda: not processes_with(f"sleep {marker}"))


def test_tasks_command_lists_shows_and_stops(fake_llm, open_session, repo):
    steps = [
        [
            (
                "bash",
                {"command": "echo hello-from-job; sleep 31340.5", "run_in_background": True},
                "a",
            ),
            ("monitor", {"command": "echo tick; sleep 31341.5"}, "m"),
        ]
    ]
    server, session = run_calls(fake_llm, open_session, steps)
    assert session.dispatch("/bashes") == session.dispatch("/tasks list")
    listing = session.dispatch("/tasks")
    assert re.search(r"bash_1\s+bash\s+running", listing)
    assert re.search(r"monitor_1\s+monitor\s+running", listing)
    assert wait_until(lambda: "hello-from-job" in session.dispatch("/tasks show bash_1"))
    assert "stopped" in session.dispatch("/tasks stop all")
    assert "no background job is running" in session.dispatch("/tasks stop all")
    assert wait_until(
        lambda: not processes_with("sleep 31340.5") and not processes_with("sleep 31341.5")
    )
    with pytest.raises(ValueError, match="unknown /tasks action"):
        session.dispatch("/tasks frobnicate")
    with pytest.raises(ValueError, match="no background job 'nope'"):
        session.dispatch("/tasks stop nope")


# ---------------------------------------------------------------------------------------------
# monitor


def test_monitor_lines_are_injected_into_the_next_request(fake_llm, open_session, repo):
    script = "echo booting; sleep 0.2; echo 'ERROR disk full'; echo fine; echo READY; sleep 31342.5"
    steps = [
        [("monitor", {"command": script, "notify": "ERROR", "until": "READY"}, "mon")],
        [("bash", {"command": "sleep 1.5"}, "wait")],
        [("bg-output", {"id": "monitor_1"}, "all")],
    ]
    server, session = run_calls(fake_llm, open_session, steps)
    assert "Started monitor monitor_1" in server.tool_result("mon")
    # request 2 (after the wait) carries the matching lines, and only those
    injected = [
        str(m["content"])
        for m in server.messages(2)
        if m["role"] == "user" and "monitor_1" in str(m["content"])
    ]
    assert injected, server.messages(2)
    text = injected[0]
    assert "ERROR disk full" in text and "READY" in text
    assert "\nbooting" not in text and "\nfine" not in text
    all_out = server.tool_result("all")
    assert "until matched" in all_out.splitlines()[0]
    assert all_out.splitlines()[1:] == ["booting", "ERROR disk full", "fine", "READY"]
    assert wait_until(lambda: not processes_with("sleep 31342.5"))
    assert "until matched" in session.dispatch("/tasks")


def test_monitor_reaches_the_next_turn_and_bad_regex_fails_cleanly(fake_llm, open_session, repo):
    server = fake_llm(
        [
            calls([("monitor", {"command": "sleep 0.3; echo build passed"}, "m")]),
            say("Watching."),
            calls([("monitor", {"command": "true", "notify": "("}, "bad")]),
            say("Done."),
        ]
    )
    session = open_session(server, mode="yolo")
    assert session.chat("watch the build") == "Watching."
    time.sleep(1.0)
    assert session.chat("anything new?") == "Done."
    user_texts = [str(m["content"]) for m in server.messages(2) if m["role"] == "user"]
    assert any("build passed" in t for t in user_texts), user_texts
    assert "invalid notify regex /(/" in server.tool_result("bad")


# ---------------------------------------------------------------------------------------------
# the user's ! shell


def test_user_shell_runs_without_the_model_and_is_seen_next_turn(fake_llm, open_session, repo):
    server = fake_llm([say("I see the listing.")])
    session = open_session(server)  # mode ask: the user's own command needs no approval
    core = session._core
    out = core.user_shell("echo made > made.txt; ls; exit 2")
    assert server.requests == []
    assert "made.txt" in out and out.endswith("[exit code 2]")
    assert (repo / "made.txt").read_text() == "made\n"
    (repo / "sub").mkdir()
    core.user_shell("cd sub")
    assert session.cwd == str(repo / "sub")
    assert session.chat("what did I just do?") == "I see the listing."
    user_texts = [str(m["content"]) for m in server.messages(0) if m["role"] == "user"]
    joined = "\n".join(user_texts)
    assert "$ echo made > made.txt; ls; exit 2" in joined and "calc.py" in joined
    with pytest.raises(ValueError):
        core.user_shell("   ")


def test_user_shell_has_the_users_rights_but_not_the_model_key(
    fake_llm, open_session, repo, yuyao_home
):
    """`!cmd` is the user's own action: no sandbox (even in plan mode, a write outside the
    workspace lands) and no model key in its environment; it is still recorded."""
    outside = yuyao_home / "users-own"  # yuyao's folder: read-only to the model's tools
    outside.mkdir()
    server = fake_llm([calls([("bash", {"command": f"touch {outside}/by-model"}, "m")]), say("ok")])
    session = open_session(server, mode="yolo")
    # Opening the session took the key out of os.environ (as -p does); a host program that
    # puts it back must still not hand it to the user's shell.
    assert "D2A_MODEL_API_KEY" not in os.environ
    os.environ["D2A_MODEL_API_KEY"] = "test-key-123"  # restored by the fixture's monkeypatch
    session.chat("try it")
    assert not (outside / "by-model").exists()  # the model's bash stays confined
    session.dispatch("/mode plan")
    out = session._core.user_shell(
        f"echo key=${{D2A_MODEL_API_KEY:-absent}}; env | grep -c test-key-123; "
        f"echo mine > {outside}/by-user && echo wrote"
    )
    assert "key=absent" in out and "\n0\n" in out, out
    assert "wrote" in out and (outside / "by-user").read_text() == "mine\n"
    assert any("by-user" in str(m["content"]) for m in session.messages)


def test_new_tools_are_advertised(fake_llm, open_session, repo):
    server = fake_llm([say("hi")])
    session = open_session(server)
    session.chat("hello")
    names = server.tool_names(0)
    for name in ("bash", "grep", "glob", "monitor", "bg-list", "bg-output", "bg-stop"):
        assert name in names


def test_print_mode_ends_its_background_jobs(fake_llm, yuyao, env):
    marker = "31343.5"
    server = fake_llm(
        [
            calls(
                [
                    ("bash", {"command": f"sleep {marker}", "run_in_background": True}, "bg"),
                    ("monitor", {"command": f"sleep {marker}"}, "mon"),
                ]
            ),
            say("Started a job and a monitor."),
        ]
    )
    proc = yuyao("-p", "start the dev server", "--yolo", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "Started background job bash_1" in server.tool_result("bg")
    assert wait_until(lambda: not processes_with(f"sleep {marker}"))


def test_ctrl_b_moves_the_running_command_to_the_background(fake_llm, open_session, repo):
    import threading

    server = fake_llm(
        [
            calls([("bash", {"command": "echo early; sleep 2; echo late"}, "fg")]),
            calls([("bg-list", {}, "list")]),
            say("It runs in the background."),
        ]
    )
    session = open_session(server, mode="yolo")
    core = session._core
    assert core.background_running() is False  # nothing runs yet
    answers = []
    thread = threading.Thread(target=lambda: answers.append(session.chat("start it")))
    t0 = time.monotonic()
    thread.start()
    time.sleep(0.5)  # let "early" arrive (the first True answer is the move itself)
    assert wait_until(core.background_running, timeout=10)
    thread.join(timeout=10)
    assert answers == ["It runs in the background."]
    assert time.monotonic() - t0 < 1.9  # the turn did not wait for the command
    fg = server.tool_result("fg")
    assert fg.startswith("early\n") and "moved to the background by the user as job bash_1" in fg
    assert re.search(r"bash_1\s+bash\s+running", server.tool_result("list"))
    assert wait_until(lambda: "completed" in session.dispatch("/tasks"), timeout=10)
    assert session.dispatch("/tasks show bash_1").endswith("early\nlate")
