"""The `lsp` tool and diagnostics after edits (seed 002 §1, `--experimental-lsp` / `lsp.enabled`),
end to end against the scripted model with a real language server from PyPI (pylsp, with
pyflakes for diagnostics)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import pytest
from fakellm import FAKE_MODEL, calls, say

pytestmark = pytest.mark.core

PYLSP = shutil.which("pylsp", path=str(Path(sys.executable).parent)) or shutil.which("pylsp")
needs_pylsp = pytest.mark.skipif(PYLSP is None, reason="python-lsp-server is not installed")

SHAPES = "def area(w, h):\n    return w * h\n\n\ndef unused():\n    return 0\n"
MAIN = "from shapes import area\n\nprint(area(2, 3))\ntotal = area(4, 5)\n"


# A substantive final answer, so a run whose tools were refused still ends with status 0.
ANSWER = "The language server answered; the results are above."


def project(repo: Path) -> None:
    (repo / "shapes.py").write_text(SHAPES)
    (repo / "main.py").write_text(MAIN)


def lsp(cid: str, **args):
    return calls([("lsp", args, cid)])


def run_p(yuyao, env, server, *flags, timeout=120):
    return yuyao(
        "-p",
        "--trust-project",
        "Look at the code.",
        "--yolo",
        *flags,
        env=env(server),
        timeout=timeout,
    )


def use_server(yuyao_home: Path, argv: list[str], extra: str = "") -> None:
    (yuyao_home / "config.toml").write_text(f"[lsp.servers]\npython = {json.dumps(argv)}\n{extra}")


@needs_pylsp
def test_definition_references_hover_symbols(fake_llm, yuyao, env, repo):
    project(repo)
    server = fake_llm(
        [
            lsp("c_def", operation="definition", file_path="main.py", line=3, query="area"),
            lsp("c_refs", operation="references", file_path="shapes.py", line=1, query="area"),
            lsp("c_hover", operation="hover", file_path="main.py", line=4, character=9),
            lsp("c_syms", operation="document_symbols", file_path="shapes.py"),
            lsp("c_ws", operation="workspace_symbols", query="unused"),
            say(ANSWER),
        ]
    )
    proc = run_p(yuyao, env, server, "--experimental-lsp")
    assert proc.returncode == 0, proc.stderr
    # The definition is in the other file, quoted with its line.
    definition = server.tool_result("c_def")
    assert "shapes.py:1:5" in definition and "def area(w, h):" in definition, definition
    refs = server.tool_result("c_refs")
    for where in ("shapes.py:1:5", "main.py:1:20", "main.py:3:7", "main.py:4:9"):
        assert where in refs, refs
    assert "area" in server.tool_result("c_hover")
    syms = server.tool_result("c_syms")
    # Nested symbols say "line N"; flat ones (pylsp) their location.
    assert re.search(r"function area  (line 1|shapes\.py:1:)", syms), syms
    assert re.search(r"function unused  (line 5|shapes\.py:5:)", syms), syms
    # Without a file the running server's language is asked; pylsp has no workspace symbols,
    # and says so rather than failing obscurely.
    ws = server.tool_result("c_ws")
    assert "python language server" in ws and "does not offer workspace_symbols" in ws, ws


@needs_pylsp
@pytest.mark.parametrize("enabled", [True, False])
def test_edit_result_carries_the_new_error(fake_llm, yuyao, env, repo, enabled):
    server = fake_llm(
        [
            calls([("read", {"file_path": "calc.py"}, "c_read")]),
            calls(
                [
                    (
                        "edit",
                        {"file_path": "calc.py", "old_string": "a + b", "new_string": "a + bb"},
                        "c_edit",
                    )
                ]
            ),
            calls(
                [
                    (
                        "write",
                        {"file_path": "fixed.py", "content": "def f(x):\n    return x\n"},
                        "c_write",
                    )
                ]
            ),
            say(ANSWER),
        ]
    )
    flags = ["--experimental-lsp"] if enabled else []
    proc = run_p(yuyao, env, server, *flags)
    assert proc.returncode == 0, proc.stderr
    assert "a + bb" in (repo / "calc.py").read_text()
    edit = server.tool_result("c_edit")
    write = server.tool_result("c_write")
    if enabled:
        assert "[lsp] calc.py: 1 error(s), 0 warning(s)" in edit, edit
        assert "error:2:" in edit and "undefined name 'bb'" in edit, edit
        assert "[lsp] fixed.py: no errors or warnings" in write, write
    else:
        assert "[lsp]" not in edit and "undefined name" not in edit
        assert "[lsp]" not in write


@needs_pylsp
def test_syntax_error_from_apply_patch_and_diagnostics_op(fake_llm, yuyao, env, repo):
    patch = (
        "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a + b\n"
        "+    return (a + b\n*** End Patch\n"
    )
    server = fake_llm(
        [
            calls([("apply-patch", {"patch": patch}, "c_patch")]),
            lsp("c_diag", operation="diagnostics", file_path="calc.py"),
            say(ANSWER),
        ]
    )
    proc = run_p(yuyao, env, server, "--experimental-lsp")
    assert proc.returncode == 0, proc.stderr
    patched = server.tool_result("c_patch")
    assert "(a + b" in (repo / "calc.py").read_text(), patched
    assert "[lsp] calc.py: 1 error(s)" in patched, patched
    assert "calc.py: 1 diagnostic(s)" in server.tool_result("c_diag")


def test_flag_and_config_advertise_the_tool(fake_llm, yuyao, env, repo, yuyao_home):
    server = fake_llm([say("Hi."), say("Hi."), say("Hi.")])
    assert run_p(yuyao, env, server).returncode == 0
    assert "lsp" not in server.tool_names(0)
    assert run_p(yuyao, env, server, "--experimental-lsp").returncode == 0
    assert "lsp" in server.tool_names(1)
    (yuyao_home / "config.toml").write_text("[lsp]\nenabled = true\n")
    assert run_p(yuyao, env, server).returncode == 0
    assert "lsp" in server.tool_names(2)


def test_lsp_call_refused_when_not_enabled(fake_llm, yuyao, env, repo):
    server = fake_llm([lsp("c1", operation="document_symbols", file_path="calc.py"), say(ANSWER)])
    assert run_p(yuyao, env, server).returncode == 0
    assert "unknown or unavailable tool 'lsp'" in server.tool_result("c1")


@needs_pylsp
def test_paths_are_checked_like_read(fake_llm, yuyao, env, repo, tmp_path):
    (tmp_path / "outside.py").write_text("x = 1\n")
    (repo / ".env").write_text("TOKEN=s3cret\n")
    server = fake_llm(
        [
            lsp("c_out", operation="document_symbols", file_path="../outside.py"),
            lsp("c_env", operation="diagnostics", file_path=".env"),
            lsp("c_txt", operation="hover", file_path="README.md", line=1),
            lsp("c_bad", operation="rename", file_path="calc.py"),
            lsp("c_noline", operation="definition", file_path="calc.py"),
            say(ANSWER),
        ]
    )
    proc = run_p(yuyao, env, server, "--experimental-lsp")
    assert proc.returncode == 0, proc.stderr
    assert "outside the project" in server.tool_result("c_out")
    env_result = server.tool_result("c_env")
    assert "Refused" in env_result and "s3cret" not in env_result
    assert "no language server handles" in server.tool_result("c_txt")
    assert "unknown lsp operation 'rename'" in server.tool_result("c_bad")
    assert "needs line" in server.tool_result("c_noline")


# The server runs in a PID namespace: its own pid means nothing to the test's /proc, so each
# start carries a token in its environment and the test finds its host pid by that.
WRAPPER = """
import json, os, sys, uuid
log = sys.argv[1]
token = uuid.uuid4().hex
with open(log, "a") as f:
    f.write(json.dumps({"token": token, "cwd": os.getcwd(),
                        "key": os.environ.get("D2A_MODEL_API_KEY")}) + "\\n")
os.execve(sys.argv[2], [sys.argv[2]], {**os.environ, "LSP_START_TOKEN": token})
"""


def starts(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def host_pid(token: str) -> int | None:
    """The pid, in this machine's /proc, of the live server started with `token`."""
    want = f"LSP_START_TOKEN={token}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if want in (proc / "environ").read_bytes().split(b"\0") and alive(int(proc.name)):
                return int(proc.name)
        except OSError:
            continue
    return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie not yet reaped by its parent counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@needs_pylsp
def test_server_env_restart_once_and_shutdown(fake_llm, yuyao, env, repo, yuyao_home, tmp_path):
    """Configured server (lsp.servers.python): started in the project without the model key,
    restarted once after it dies, then reported as stopped; gone when the session ends."""
    project(repo)
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER)
    log = tmp_path / "starts.jsonl"
    use_server(yuyao_home, [sys.executable, str(wrapper), str(log), PYLSP])
    definition = {"operation": "definition", "file_path": "main.py", "line": 3, "query": "area"}

    def kill_then(cid):
        # The test kills the running server between two model calls (a crash).
        def step(body, index):
            pid = host_pid(starts(log)[-1]["token"])
            assert pid is not None, starts(log)
            os.kill(pid, signal.SIGKILL)
            return lsp(cid, **definition)

        return step

    server = fake_llm(
        [
            lsp("c1", **definition),
            kill_then("c2"),
            kill_then("c3"),
            lsp("c4", **definition),
            say(ANSWER),
        ]
    )
    proc = run_p(yuyao, env, server, "--experimental-lsp")
    assert proc.returncode == 0, proc.stderr
    assert "shapes.py:1:5" in server.tool_result("c1")
    assert "shapes.py:1:5" in server.tool_result("c2"), server.tool_result("c2")
    assert "exited again after its restart" in server.tool_result("c3")
    assert "exited again after its restart" in server.tool_result("c4")
    seen = starts(log)
    assert len(seen) == 2, seen
    for s in seen:
        assert s["key"] is None
        assert Path(s["cwd"]).resolve() == repo.resolve()


@needs_pylsp
def test_server_stops_with_the_session(fake_llm, yuyao, env, repo, yuyao_home, tmp_path):
    project(repo)
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER)
    log = tmp_path / "starts.jsonl"
    use_server(yuyao_home, [sys.executable, str(wrapper), str(log), PYLSP])
    server = fake_llm([lsp("c1", operation="document_symbols", file_path="shapes.py"), say(ANSWER)])
    proc = run_p(yuyao, env, server, "--experimental-lsp")
    assert proc.returncode == 0, proc.stderr
    assert "function area" in server.tool_result("c1")
    (token,) = [s["token"] for s in starts(log)]
    assert host_pid(token) is None


def test_missing_server_is_named(fake_llm, yuyao, env, repo, yuyao_home):
    use_server(yuyao_home, ["/nonexistent/langserver"])
    server = fake_llm(
        [
            lsp("c1", operation="document_symbols", file_path="calc.py"),
            calls([("read", {"file_path": "calc.py"}, "c_read")]),
            calls(
                [
                    (
                        "edit",
                        {"file_path": "calc.py", "old_string": "a + b", "new_string": "b + a"},
                        "c2",
                    )
                ]
            ),
            say(ANSWER),
        ]
    )
    proc = run_p(yuyao, env, server, "--experimental-lsp")
    assert proc.returncode == 0, proc.stderr
    assert "cannot start language server '/nonexistent/langserver'" in server.tool_result("c1")
    # The edit itself is unaffected.
    assert "b + a" in (repo / "calc.py").read_text()


@needs_pylsp
def test_agent_api_with_config(api, fake_llm, yuyao_home):
    """agent_api (in-process, GIL released during the turn): enabled by the user's
    `lsp.enabled`, listed by /tools, diagnostics in the edit's result."""
    (yuyao_home / "config.toml").write_text("[lsp]\nenabled = true\n")
    edit = {"file_path": "calc.py", "old_string": "return a + b", "new_string": "return a +"}
    server = fake_llm(
        [
            calls([("read", {"file_path": "calc.py"}, "c_read")]),
            calls([("edit", edit, "c_edit")]),
            say(ANSWER),
        ]
    )
    session = api(server, trust_project=True, mode="yolo")
    assert "lsp" in session.dispatch("/tools")
    session.chat("Break calc.py on purpose.")
    assert "lsp" in server.tool_names(0)
    result = server.tool_result("c_edit")
    assert "[lsp] calc.py: 1 error(s)" in result, result


@needs_pylsp
def test_other_open_file_changed_by_bash_is_resent(
    fake_llm, yuyao, env, repo, yuyao_home, tmp_path
):
    """A file the server holds open, changed behind its back (bash), is sent again before the
    next question, so no answer comes from a stale copy (what the server received is logged
    by a `tee` in front of it)."""
    project(repo)
    wire = tmp_path / "wire.log"
    use_server(yuyao_home, ["sh", "-c", f"tee -a {wire} | {PYLSP}"])
    shift = f"{sys.executable} -c \"import pathlib; p = pathlib.Path('shapes.py'); p.write_text('# a\\n# b\\n' + p.read_text())\""
    server = fake_llm(
        [
            lsp("c_open", operation="document_symbols", file_path="shapes.py"),
            calls([("bash", {"command": shift}, "c_bash")]),
            lsp("c_def", operation="definition", file_path="main.py", line=3, query="area"),
            say(ANSWER),
        ]
    )
    proc = run_p(yuyao, env, server, "--experimental-lsp")
    assert proc.returncode == 0, proc.stderr
    assert (repo / "shapes.py").read_text().startswith("# a\n# b\n")
    definition = server.tool_result("c_def")
    assert "shapes.py:3:5" in definition, definition
    sent = wire.read_text()
    changed = [m for m in sent.split("Content-Length") if "didChange" in m and "shapes.py" in m]
    assert changed and "# a" in changed[-1], sent[-2000:]


MARKER = """
import os, sys
open(sys.argv[1], "w").write("started")
os.execv(sys.argv[2], [sys.argv[2]])
"""


@needs_pylsp
def test_repo_config_server_runs_only_where_project_executables_may(
    fake_llm, yuyao, env, run_agent, repo, yuyao_home, tmp_path
):
    """A repository's `.yuyao/config.toml` naming a server is an executable the repository
    provides: run_agent.sh (never runs those) uses the user's server from PATH instead;
    `-p` (the caller chose the directory) runs it."""
    project(repo)
    marker = tmp_path / "project-server-ran"
    script = tmp_path / "marker.py"
    script.write_text(MARKER)
    (repo / ".yuyao").mkdir()
    argv = [sys.executable, str(script), str(marker), PYLSP]
    (repo / ".yuyao" / "config.toml").write_text(
        f"[lsp]\nenabled = true\n[lsp.servers]\npython = {json.dumps(argv)}\n"
    )
    definition = {"operation": "definition", "file_path": "main.py", "line": 3, "query": "area"}
    task = tmp_path / "task.txt"
    task.write_text("Where is area defined?")
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({"max_steps": 5}))

    # run_agent: the repository cannot even enable the tool.
    server = fake_llm([lsp("c1", **definition), say(ANSWER)])
    r = run_agent(
        *("--task-file", str(task), "--repo-dir", str(repo), "--budget-file", str(budget)),
        *("--out-dir", str(tmp_path / "out"), "--model-base-url", server.url),
        *("--model-name", FAKE_MODEL, "--model-api-key", server.api_key),
        env=env(),
    )
    assert r.returncode in (0, 1), r.stderr
    assert "lsp" not in server.tool_names(0)
    # The user enables it: the user's server (pylsp on PATH) answers, the repo's never runs.
    (yuyao_home / "config.toml").write_text("[lsp]\nenabled = true\n")
    server = fake_llm([lsp("c1", **definition), say(ANSWER)])
    r = run_agent(
        *("--task-file", str(task), "--repo-dir", str(repo), "--budget-file", str(budget)),
        *("--out-dir", str(tmp_path / "out2"), "--model-base-url", server.url),
        *("--model-name", FAKE_MODEL, "--model-api-key", server.api_key),
        env=env(),
    )
    assert r.returncode in (0, 1), r.stderr
    assert "shapes.py:1:5" in server.tool_result("c1")
    assert not marker.exists()

    # -p runs the project's extensions: its server starts.
    server = fake_llm([lsp("c1", **definition), say(ANSWER)])
    proc = run_p(yuyao, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "shapes.py:1:5" in server.tool_result("c1")
    assert marker.read_text() == "started"


def test_tui_line_of_an_lsp_call():
    from yuyao.tui.render import summarize_arguments

    args = {"operation": "definition", "file_path": "main.py", "line": 3, "query": "area"}
    assert summarize_arguments("lsp", json.dumps(args)) == "definition main.py:3 (area)"
    assert summarize_arguments("lsp", {"operation": "workspace_symbols", "query": "Foo"}) == (
        "workspace_symbols (Foo)"
    )


# ---------------------------------------------------------------------------------------------
# Effect tests of the lsp.* keys set in a live session (used by test_settings_live.EFFECTS)

SLOW_PROXY = """
import subprocess, sys, threading, time
child = subprocess.Popen([sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

def up():
    while True:
        data = sys.stdin.buffer.read1(65536)
        if not data:
            child.stdin.close()
            return
        child.stdin.write(data)
        child.stdin.flush()

threading.Thread(target=up, daemon=True).start()
out = child.stdout
while True:
    header = b""
    while not header.endswith(b"\\r\\n\\r\\n"):
        c = out.read(1)
        if not c:
            sys.exit(0)
        header += c
    n = int(header.split(b"Content-Length:")[1].split(b"\\r\\n")[0])
    body = out.read(n)
    if b"publishDiagnostics" in body:
        time.sleep(1.2)  # a slow server: diagnostics come 1.2 s after the change
    sys.stdout.buffer.write(header + body)
    sys.stdout.buffer.flush()
"""


def effect_lsp_enabled(fake_llm, live, **_):
    server = fake_llm([say("one"), say("two")])
    s, _ = live(server)
    assert "lsp" not in server.tool_names(0)
    s.dispatch("/config set lsp.enabled true")
    s.chat("again")
    assert "lsp" in server.tool_names(1)


def effect_lsp_diagnostics_timeout(fake_llm, live, yuyao_home, repo, **_):
    if PYLSP is None:
        pytest.skip("python-lsp-server is not installed")
    proxy = yuyao_home / "slow_proxy.py"
    proxy.write_text(SLOW_PROXY)
    (yuyao_home / "config.toml").write_text(
        f"[lsp]\nenabled = true\n[lsp.servers]\npython = {json.dumps([sys.executable, str(proxy), PYLSP])}\n"
    )

    def edit(cid, old, new):
        return calls(
            [("edit", {"file_path": "calc.py", "old_string": old, "new_string": new}, cid)]
        )

    server = fake_llm(
        [
            calls([("read", {"file_path": "calc.py"}, "c_read")]),
            edit("c1", "a + b", "a + bb"),
            say("one"),
            edit("c2", "a + bb", "a + bbb"),
            say("two"),
        ]
    )
    s, _ = live(server)
    # The default wait (2500 ms) outlasts the slow server.
    assert "undefined name 'bb'" in server.tool_result("c1")
    s.dispatch("/config set lsp.diagnostics_timeout_ms 300")
    s.chat("again")
    late = server.tool_result("c2")
    assert "published no diagnostics within 300 ms" in late, late
