"""Lifecycle and resource faults, and the model key kept out of /proc (DESIGN §5).

Each test plays the hostile or broken side: live jobs at exit, a model server that stalls or
cuts its stream, tool arguments carrying escaped NUL bytes, a tool reading the agent's
/proc entries for the key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import RUN_AGENT, yuyao_command
from fakellm import FAKE_MODEL, calls, say, tool_call

pytestmark = pytest.mark.core

SECRET_KEY = "sk-yuyao-lifecycle-0123456789abcdef"


def output(proc) -> str:
    return proc.stdout + proc.stderr


def pgrep(marker: str) -> list[str]:
    """Live processes whose command line contains ``marker`` (zombies excluded)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, UnicodeDecodeError):
            continue
        if marker in cmdline and state != "Z":
            found.append(f"{pid}: {cmdline}")
    return found


def wait_until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def popen(cmd: list[str], *, env: dict, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        cmd,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen, timeout: float) -> subprocess.CompletedProcess:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        err += f"\n[test] killed after {timeout} s"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def has_tool_result(body: dict) -> bool:
    return any(m.get("role") == "tool" for m in body.get("messages") or [])


def write_config(home: Path, text: str) -> None:
    (home / "config.toml").write_text(text)


# ---------------------------------------------------------------------------------------------
# 1. `yuyao -p` exits cleanly while a background job and a monitor are alive


def test_print_exits_cleanly_with_live_jobs(fake_llm, env, repo, tmp_path):
    """20 `-p` runs, each leaving a background job and a chatty monitor alive at exit."""
    runs = 20
    tag = f"yuyaolife{os.getpid()}"

    def responder(body, index):
        if has_tool_result(body):
            return say("Both are running; done.")
        prompt = json.dumps(body["messages"])
        run = prompt.split("run-", 1)[1].split(".", 1)[0]
        marker = f"{tag}r{run}"
        return calls(
            [
                ("bash", {"command": f"sleep 30 && echo {marker}", "run_in_background": True}),
                ("monitor", {"command": f"while true; do echo {marker}; sleep 0.1; done"}),
            ]
        )

    server = fake_llm(responder)

    def one(n: int) -> subprocess.CompletedProcess:
        home = tmp_path / f"home{n}"
        home.mkdir()
        proc = popen(
            [*yuyao_command(), "-p", f"Start the watchers for run-{n}.", "--yolo"],
            env=env(server, YUYAO_HOME=str(home)),
            cwd=repo,
        )
        return finish(proc, 60)

    with ThreadPoolExecutor(max_workers=5) as pool:
        results = list(pool.map(one, range(runs)))
    failures = [
        f"run {n}: exit {p.returncode}\n{p.stderr[-1500:]}"
        for n, p in enumerate(results)
        if p.returncode != 0 or "panicked" in p.stderr or "Segmentation" in p.stderr
    ]
    assert not failures, "\n\n".join(failures)
    assert all("done" in p.stdout for p in results)
    assert len(server.requests) == 2 * runs
    assert wait_until(lambda: not pgrep(tag), 5), pgrep(tag)


AGENT_API_EXIT = """
from yuyao.agent_api import create_session
session = create_session(mode="yolo")
print(session.chat("start the watchers"))
# no close: the interpreter exits with the job and the monitor alive
"""


def test_agent_api_session_left_open_ends_its_jobs_at_exit(fake_llm, env, repo, python):
    marker = f"yuyaolifeapi{os.getpid()}"
    server = fake_llm(
        [
            calls(
                [
                    ("bash", {"command": f"sleep 30 && echo {marker}", "run_in_background": True}),
                    ("monitor", {"command": f"while true; do echo {marker}; sleep 0.1; done"}),
                ]
            ),
            say("Watching."),
        ]
    )
    proc = python(AGENT_API_EXIT, env=env(server), timeout=60)
    assert proc.returncode == 0, output(proc)
    assert "Watching." in proc.stdout
    assert "panicked" not in proc.stderr and "Segmentation" not in proc.stderr, proc.stderr
    assert wait_until(lambda: not pgrep(marker), 5), pgrep(marker)


# ---------------------------------------------------------------------------------------------
# 2. The wall-clock budget bounds a stalled model call


def agent_arguments(tmp_path: Path, repo: Path, server, budget: dict, key: str | None = None):
    task = tmp_path / "task.txt"
    task.write_text("Fix calc.py.\n")
    budget_file = tmp_path / "budget.json"
    budget_file.write_text(json.dumps(budget))
    out = tmp_path / "out"
    return out, [
        "--task-file",
        str(task),
        "--repo-dir",
        str(repo),
        "--model-base-url",
        server.url,
        "--model-name",
        FAKE_MODEL,
        "--model-api-key",
        key if key is not None else server.api_key,
        "--budget-file",
        str(budget_file),
        "--out-dir",
        str(out),
    ]


def test_run_agent_wall_budget_cancels_a_stalled_call(fake_llm, env, repo, tmp_path):
    server = fake_llm([say("half an answer", stall=120)])
    out, args = agent_arguments(tmp_path, repo, server, {"max_steps": 10, "max_wall_seconds": 3})
    started = time.monotonic()
    proc = finish(popen(["bash", str(RUN_AGENT), *args], env=env(), cwd=tmp_path), 60)
    elapsed = time.monotonic() - started
    assert elapsed < 20, f"took {elapsed:.1f} s with a 3 s budget\n{output(proc)}"
    assert proc.returncode == 0, output(proc)
    status = json.loads((out / "status.json").read_text())
    assert status["exit_status"] == "LimitsExceeded", status
    assert "time limit" in status.get("limit", ""), status


def test_run_agent_wall_budget_stops_a_long_tool_call(fake_llm, env, repo, tmp_path):
    marker = "31377.25"
    server = fake_llm([calls([("bash", {"command": f"sleep {marker}"}, "c")])])
    out, args = agent_arguments(tmp_path, repo, server, {"max_steps": 10, "max_wall_seconds": 3})
    started = time.monotonic()
    proc = finish(popen(["bash", str(RUN_AGENT), *args], env=env(), cwd=tmp_path), 60)
    assert time.monotonic() - started < 20, output(proc)
    assert proc.returncode == 0, output(proc)
    assert json.loads((out / "status.json").read_text())["exit_status"] == "LimitsExceeded"
    assert wait_until(lambda: not pgrep(f"sleep {marker}"), 5)


# ---------------------------------------------------------------------------------------------
# 3. Escaped NUL bytes and lone surrogates in tool arguments never reach the next request


@pytest.mark.parametrize(
    "arguments",
    [
        '{"command": "echo a\\u0000b"}',
        '{"command": "echo \\u0000\\u0000", "description": "x\\u0000"}',
        '{"command": "echo a\\ud800b"}',
        '{"command": "echo a\\udc00\\u0000b"}',
    ],
    ids=["nul", "nul-twice", "lone-high", "lone-low-and-nul"],
)
def test_escaped_nul_in_tool_arguments_is_not_echoed(fake_llm, yuyao, env, arguments):
    server = fake_llm(
        [calls([tool_call("bash", arguments, id="call_nul")]), say("Finished the echo.")]
    )
    proc = yuyao("-p", "Echo something odd.", "--yolo", env=env(server))
    assert len(server.requests) == 2, output(proc)
    assert not server.violations, server.violations
    echoed = [
        c["function"]["arguments"]
        for m in server.messages(1)
        for c in m.get("tool_calls") or []
        if c["id"] == "call_nul"
    ]
    assert echoed, server.messages(1)
    assert "\\u0000" not in echoed[0] and "\\ud800" not in echoed[0].lower(), echoed


# ---------------------------------------------------------------------------------------------
# 4. A cut SSE stream is a transport error: retried, then a clear error


@pytest.mark.parametrize("broken", [{"cut": True}, {"no_done": True}], ids=["cut", "no-done"])
def test_cut_stream_is_retried(fake_llm, yuyao, env, yuyao_home, broken):
    write_config(yuyao_home, "[model]\nmax_retries = 2\n")
    full = "The complete answer, with every word of it intact."
    server = fake_llm([say(full, **broken), say(full)])
    proc = yuyao("-p", "Answer me.", "--stream", "on", env=env(server))
    assert proc.returncode == 0, output(proc)
    assert len(server.requests) == 2, output(proc)
    # the streamed text of the cut attempt is not shown a second time
    assert proc.stdout.count("The complete answer") == 1, proc.stdout
    assert full in proc.stdout


@pytest.mark.parametrize("broken", [{"cut": True}, {"no_done": True}], ids=["cut", "no-done"])
def test_cut_stream_every_time_is_a_clear_error(fake_llm, yuyao, env, yuyao_home, broken):
    write_config(yuyao_home, "[model]\nmax_retries = 1\n")
    server = fake_llm([say("a long answer that gets cut in the middle", **broken)] * 3)
    proc = yuyao("-p", "Answer me.", "--stream", "on", "--json", env=env(server))
    assert proc.returncode == 1, output(proc)
    assert len(server.requests) == 2, output(proc)
    document = json.loads(proc.stdout)
    assert document["exit_status"] == "Error", document
    assert "ended before the reply was complete" in document.get("error", ""), document


# ---------------------------------------------------------------------------------------------
# 5. The model key is not readable from the agent's /proc entries


def proc_entries(pid: int) -> dict[str, bytes]:
    out = {}
    for name in ("environ", "cmdline"):
        try:
            out[name] = Path(f"/proc/{pid}/{name}").read_bytes()
        except OSError as exc:
            out[name] = f"<unreadable: {exc}>".encode()
    return out


def entry_pids() -> list[int]:
    return [int(line.split(":", 1)[0]) for line in pgrep("entry.py")]


class ProcSpy:
    """A responder that, while the agent waits for its second reply, reads the /proc entries
    of the agent's processes; a bash step in between lets a tool try the same."""

    def __init__(self):
        self.pids: list[int] = []
        self.seen: dict[int, dict[str, bytes]] = {}
        self.ready = threading.Event()

    def __call__(self, body, index):
        if index == 0:
            probe = (
                "env; for p in $PPID $(pgrep -f entry.py); do "
                "tr '\\0' '\\n' < /proc/$p/environ; tr '\\0' ' ' < /proc/$p/cmdline; done"
            )
            return calls([("bash", {"command": probe}, "probe")])
        self.ready.wait(10)
        for pid in self.pids + entry_pids():
            self.seen[pid] = proc_entries(pid)
        return say("I looked around; done.")


def assert_key_hidden(server, spy: ProcSpy, proc) -> None:
    assert spy.seen, f"the agent's /proc entries were never read\n{output(proc)}"
    for pid, entries in spy.seen.items():
        for name, data in entries.items():
            assert SECRET_KEY.encode() not in data, f"key in /proc/{pid}/{name}: {data[:400]!r}"
    assert len(server.requests) >= 2, output(proc)
    for record in server.requests:
        assert record["headers"].get("authorization") == f"Bearer {SECRET_KEY}"
        assert SECRET_KEY not in json.dumps(record["body"]), "the key reached a request body"
    assert SECRET_KEY not in (server.tool_result("probe") or "")


def test_print_hides_the_key_from_proc(fake_llm, env, repo):
    spy = ProcSpy()
    server = fake_llm(spy, api_key=SECRET_KEY)
    proc = popen(
        [*yuyao_command(), "-p", "Look around.", "--yolo"],
        env=env(server, OPENAI_API_KEY=SECRET_KEY),
        cwd=repo,
    )
    spy.pids.append(proc.pid)
    spy.ready.set()
    result = finish(proc, 60)
    assert result.returncode == 0, output(result)
    assert_key_hidden(server, spy, result)


@pytest.mark.parametrize("form", ["separate", "inline"])
def test_run_agent_hides_the_key_from_proc(fake_llm, env, repo, tmp_path, form):
    spy = ProcSpy()
    server = fake_llm(spy, api_key=SECRET_KEY)
    out, args = agent_arguments(tmp_path, repo, server, {"max_steps": 5}, key=SECRET_KEY)
    if form == "inline":
        at = args.index("--model-api-key")
        args[at : at + 2] = [f"--model-api-key={SECRET_KEY}"]
    proc = popen(["bash", str(RUN_AGENT), *args], env=env(), cwd=tmp_path)
    spy.pids.append(proc.pid)
    spy.ready.set()
    result = finish(proc, 60)
    assert (out / "status.json").exists(), output(result)
    assert_key_hidden(server, spy, result)
    assert any(pid in spy.seen for pid in spy.pids)


def test_entry_py_called_directly_scrubs_its_argv(fake_llm, env, repo, tmp_path):
    """Without run_agent.sh the key arrives on argv: entry.py blanks it in /proc too."""
    spy = ProcSpy()
    server = fake_llm(spy, api_key=SECRET_KEY)
    out, args = agent_arguments(tmp_path, repo, server, {"max_steps": 5}, key=SECRET_KEY)
    proc = popen(
        [sys.executable, str(RUN_AGENT.parent / "entry.py"), *args], env=env(), cwd=tmp_path
    )
    spy.pids.append(proc.pid)
    spy.ready.set()
    result = finish(proc, 60)
    assert (out / "status.json").exists(), output(result)
    assert_key_hidden(server, spy, result)
