"""The host boundary (DESIGN §5, §8; the read-only OS sandbox), as an attacker would
try it: the scripted model proposes the hostile call and the test asserts the effect never
happened — the control file unchanged, the outside process alive, the hook never run, no
process left behind, no source byte changed in plan mode.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import API_KEY, yuyao_command
from fakellm import FAKE_MODEL, calls, say

pytestmark = pytest.mark.core


def sandbox_support() -> str:
    from yuyao import _core

    s = _core.Session(json.dumps({"headless": True, "no_trajectory": True}), None)
    try:
        return s.dispatch("/sandbox list")
    finally:
        s.close()


needs_namespaces = pytest.mark.skipif(
    "namespaces        mount + PID" not in sandbox_support(),
    reason="this machine cannot create mount/PID namespaces",
)


def outside_folder() -> Path:
    """A new folder outside the project and outside every temporary directory the sandbox
    leaves writable: under $HOME, unless $HOME is itself a temporary directory (CI runs with
    HOME=/tmp/...), then beside this test file."""
    import tempfile

    temps = [Path(p).resolve() for p in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm")]
    for base in (Path.home(), Path(__file__).resolve().parent):
        base = base.resolve()
        if not any(base == t or t in base.parents for t in temps) and os.access(base, os.W_OK):
            folder = base / f".yuyao-test-{uuid.uuid4().hex[:8]}"
            folder.mkdir()
            return folder
    pytest.skip("no writable folder outside the temporary directories to stand for 'outside'")


def bash_steps(*commands: str) -> list:
    items = [("bash", {"command": c}, f"b{i}") for i, c in enumerate(commands)]
    return [calls(items), say("I ran the commands; their results are reported above.")]


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under root (outside .git objects) with its bytes."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        # yuyao's own bookkeeping (the trace, .git/info/exclude) is not the agent's doing.
        if p.is_file() and not p.is_symlink() and not rel.startswith((".git/", ".trajectory/")):
            out[rel] = p.read_bytes()
    return out


# ---------------------------------------------------------------------------------------------
# §3: control files are not the agent's to write


@needs_namespaces
def test_model_cannot_rewrite_control_files_in_yolo(fake_llm, api, repo, yuyao_home):
    (repo / ".yuyao").mkdir()
    (repo / ".yuyao" / "config.toml").write_text('mode = "ask"\n')
    git_config = (repo / ".git" / "config").read_bytes()
    script = [
        calls(
            [
                (
                    "write",
                    {
                        "file_path": str(repo / ".yuyao" / "config.toml"),
                        "content": 'sandbox = "full-access"\nnetwork = "on"\n',
                    },
                    "w1",
                ),
                (
                    "write",
                    {
                        "file_path": str(repo / ".yuyao" / "permissions.json"),
                        "content": '{"allow": ["Bash"]}',
                    },
                    "w2",
                ),
                (
                    "write",
                    {"file_path": str(yuyao_home / "config.toml"), "content": 'mode = "yolo"\n'},
                    "w3",
                ),
                ("write", {"file_path": str(repo / ".git" / "config"), "content": "x"}, "w4"),
                (
                    "bash",
                    {
                        "command": "echo 'sandbox = \"full-access\"' >> .yuyao/config.toml; "
                        "git config core.fsmonitor 'touch /tmp/pwned'; "
                        "echo 'touch pwned' > .git/hooks/post-checkout; "
                        f"echo 'mode = \"yolo\"' > {yuyao_home}/config.toml; "
                        "echo '{\"mcpServers\": {}}' > .mcp.json"
                    },
                    "b",
                ),
            ]
        ),
        say("I tried to change the settings."),
    ]
    server = fake_llm(script)
    s = api(server, mode="yolo")
    s.chat("loosen the sandbox")
    assert (repo / ".yuyao" / "config.toml").read_text() == 'mode = "ask"\n'
    assert not (repo / ".yuyao" / "permissions.json").exists()
    assert not (yuyao_home / "config.toml").exists()
    assert (repo / ".git" / "config").read_bytes() == git_config
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    for call in ("w1", "w2", "w3", "w4"):
        assert "cannot write" in server.tool_result(call) or "cannot change" in server.tool_result(
            call
        ), server.tool_result(call)
    assert "Read-only file system" in server.tool_result("b")


@pytest.fixture
def listener():
    """A TCP port on 127.0.0.1 that accepts connections (so only a sandbox can refuse)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    yield srv.getsockname()[1]
    srv.close()


def connect(port: int) -> str:
    return (
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\" "
        "2>/dev/null && echo OPEN || echo BLOCKED"
    )


@needs_namespaces
def test_flags_pin_sandbox_against_hot_reload(fake_llm, api, repo, listener, yuyao_home):
    """A config change on disk does not loosen a session whose flags or trust say otherwise,
    and in a trusted session it applies only once its content is approved (the agent could
    have written it: DESIGN §8)."""
    server = fake_llm(bash_steps("true") + bash_steps(connect(listener)) * 2)
    s = api(server, mode="yolo", trust_project=True)
    s.dispatch("/sandbox")  # the session is up
    s.chat("one")
    (repo / ".yuyao").mkdir()
    (repo / ".yuyao" / "config.toml").write_text('network = "on"\n')
    s.chat("two")
    # Trusted, but the new content is not approved: held ...
    assert "BLOCKED" in server.tool_result("b0"), server.tool_result("b0")
    # ... approved (the review names the file): the hot reload puts it in force.
    assert "(sets) network" in s.dispatch("/trust review")
    assert "network = on" in s.dispatch("/trust approve .yuyao/config.toml")
    s.chat("three")
    assert "OPEN" in server.tool_result("b0"), server.tool_result("b0")

    # The approval trusted the project; with that record gone (a machine that never trusted
    # it), a session does not apply the project's network = on.
    (yuyao_home / "trusted-projects.json").unlink()
    server = fake_llm(bash_steps(connect(listener)))
    s = api(server, mode="yolo")
    s.chat("four")
    # ... untrusted: the project's network = on is ignored.
    assert "BLOCKED" in server.tool_result("b0"), server.tool_result("b0")


def test_untrusted_project_settings_are_ignored(fake_llm, yuyao, env, repo):
    (repo / ".yuyao").mkdir()
    (repo / ".yuyao" / "config.toml").write_text('mode = "yolo"\nsandbox = "full-access"\n')
    (repo / ".yuyao" / "permissions.json").write_text(
        json.dumps({"allow": ["Bash(touch:*)"], "deny": ["Bash(rm)"]})
    )
    (repo / "victim.txt").write_text("v\n")
    server = fake_llm(bash_steps("touch made.txt", "rm victim.txt"))
    proc = yuyao("-p", "go", env=env(server))
    assert not (repo / "made.txt").exists(), proc.stdout + proc.stderr
    assert (repo / "victim.txt").exists()
    assert "ignored until you trust" in proc.stderr, proc.stderr
    assert "mode = yolo" in proc.stderr and "allow Bash(touch:*)" in proc.stderr

    # Trusted: the project's mode and allow rule apply; its deny rule still vetoes rm.
    server = fake_llm(bash_steps("touch made.txt", "rm victim.txt"))
    proc = yuyao("-p", "go", "--trust-project", env=env(server))
    assert (repo / "made.txt").exists(), proc.stdout + proc.stderr
    assert (repo / "victim.txt").exists()


@needs_namespaces
def test_run_agent_never_trusts_the_repository(
    fake_llm, run_agent, env, repo, tmp_path, listener, yuyao_home
):
    (repo / ".yuyao").mkdir()
    (repo / ".yuyao" / "config.toml").write_text('sandbox = "full-access"\nnetwork = "on"\n')
    # Even a project the user trusted in the TUI is not trusted by the headless contract.
    (yuyao_home / "trusted-projects.json").write_text(
        json.dumps({"projects": {str(repo.resolve()): {"trusted_at": "now"}}})
    )
    server = fake_llm(bash_steps(connect(listener)))
    (tmp_path / "task.txt").write_text("connect somewhere\n")
    (tmp_path / "budget.json").write_text(json.dumps({"max_steps": 5}))
    argv = {
        "--task-file": tmp_path / "task.txt",
        "--repo-dir": repo,
        "--model-base-url": server.url,
        "--model-name": FAKE_MODEL,
        "--model-api-key": server.api_key or API_KEY,
        "--budget-file": tmp_path / "budget.json",
        "--out-dir": tmp_path / "out",
    }
    proc = run_agent(*[str(a) for kv in argv.items() for a in kv], env=env(), timeout=90)
    assert proc.returncode in (0, 1), proc.stderr
    assert "BLOCKED" in server.tool_result("b0"), server.tool_result("b0")


# ---------------------------------------------------------------------------------------------
# §4: host-side git never runs repository-controlled code


def test_planted_fsmonitor_never_runs_on_the_host(fake_llm, yuyao, env, repo, tmp_path):
    marker = tmp_path / "host-ran-hook"
    # The repository ships (or a full-access run planted) hostile git configuration.
    subprocess.run(["git", "config", "core.fsmonitor", f"touch {marker}"], cwd=repo, check=True)
    subprocess.run(["git", "config", "diff.external", f"touch {marker}"], cwd=repo, check=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    server = fake_llm(bash_steps("true") + [say("done")])
    proc = yuyao("-p", "look", "--yolo", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "1 changed file" in server.system_prompt(0)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# §5: tool processes are isolated from the host's processes


@needs_namespaces
def test_tools_see_no_host_process_and_cannot_signal_one(fake_llm, api, repo):
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        script = bash_steps(
            f"kill -9 {victim.pid}; echo rc=$?",
            "ls /proc | grep -c '^[0-9]'",
            f"cat /proc/{os.getpid()}/environ /proc/*/cmdline 2>/dev/null | tr '\\0' '\\n' "
            "| grep -c D2A_MODEL_API_KEY || true",
        )
        server = fake_llm(script)
        s = api(server, mode="yolo")
        s.chat("clean up")
        time.sleep(0.2)
        assert victim.poll() is None, "a tool killed a process outside its sandbox"
        assert int(server.tool_result("b1").split()[0]) < 10, server.tool_result("b1")
        body = json.dumps([r["body"] for r in server.requests])
        assert API_KEY not in body
    finally:
        victim.kill()


@needs_namespaces
def test_mknod_and_outside_metadata_changes_are_refused(fake_llm, api, repo):
    outside = outside_folder()
    os.chmod(outside, 0o755)
    try:
        script = bash_steps(
            "mknod disk b 7 0; echo rc=$?",
            f"chmod 777 {outside}; touch -d 2001-01-01 {outside}; echo done",
        )
        server = fake_llm(script)
        s = api(server, mode="yolo")
        s.chat("go")
        assert not (repo / "disk").exists()
        assert (outside.stat().st_mode & 0o777) == 0o755
        assert time.gmtime(outside.stat().st_mtime).tm_year > 2001
    finally:
        shutil.rmtree(outside, ignore_errors=True)


@needs_namespaces
def test_kill_9_of_yuyao_leaves_no_tool_process(fake_llm, env, repo):
    tag = f"yuyao-orphan-{uuid.uuid4().hex[:8]}"
    script = [
        calls(
            [
                (
                    "bash",
                    {"command": f"sleep 300; echo {tag}-job", "run_in_background": True},
                    "j",
                ),
                ("monitor", {"command": f"while true; do echo {tag}; sleep 1; done"}, "m"),
            ]
        ),
        calls([("bash", {"command": f"sleep 200; echo {tag}-fg"}, "f")]),
        say("done"),
    ]
    server = fake_llm(script)
    proc = subprocess.Popen(
        [*yuyao_command(), "-p", "run them", "--yolo"],
        cwd=repo,
        env=env(server),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            found = subprocess.run(["pgrep", "-f", f"{tag}-fg"], capture_output=True, text=True)
            if found.stdout.strip():
                break
            time.sleep(0.2)
        else:
            pytest.fail("the foreground command never started")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.time() + 5
        left = ""
        while time.time() < deadline:
            left = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True).stdout
            if not left.strip():
                break
            time.sleep(0.2)
        assert not left.strip(), f"left running after kill -9: {left}"
    finally:
        subprocess.run(["pkill", "-9", "-f", tag], capture_output=True)


# ---------------------------------------------------------------------------------------------
# Read-only means no effect (DESIGN §5), whatever the classifier thinks


@needs_namespaces
@pytest.mark.skipif(not shutil.which("cargo"), reason="cargo is not installed")
def test_cargo_test_in_plan_mode_leaves_sources_intact(fake_llm, api, repo):
    crate = repo / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "planted"\nversion = "0.1.0"\nedition = "2021"\n'
    )
    (crate / "src" / "lib.rs").write_text("#[test]\nfn t() { assert_eq!(1, 1); }\n")
    subprocess.run(["cargo", "generate-lockfile", "--offline"], cwd=crate, check=True)
    # build.rs writes into the source tree and drops a marker: both must fail to land.
    (crate / "build.rs").write_text(
        'fn main() { let _ = std::fs::write("src/planted.rs", "x"); '
        'let _ = std::fs::write("/tmp/yuyao-planted-marker", "x"); }\n'
    )
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "crate"],
        cwd=repo,
        check=True,
    )
    Path("/tmp/yuyao-planted-marker").unlink(missing_ok=True)
    before = tree_bytes(repo)
    server = fake_llm(bash_steps("cd crate && cargo test --offline 2>&1 | tail -3"))
    s = api(server, mode="plan")
    s.chat("check the tests")
    assert "test result: ok" in server.tool_result("b0"), server.tool_result("b0")
    assert tree_bytes(repo) == before
    assert not Path("/tmp/yuyao-planted-marker").exists()


@needs_namespaces
@pytest.mark.parametrize("mode", ["plan", "ask"])
def test_read_only_commands_cannot_write_whatever_the_classifier_says(fake_llm, api, repo, mode):
    """Commands that look read-only but write (the classifier may or may not know them): the
    read-only OS sandbox keeps every source byte, in plan mode and for ask-mode auto-reads."""
    before = tree_bytes(repo)
    server = fake_llm(
        bash_steps(
            "sort -o sorted.txt calc.py",
            "sed -n 'w copy.txt' calc.py",
            "find . -maxdepth 1 -fprint list.txt",
            "python3 -c 'import calc' ; ls __pycache__ 2>/dev/null | head -1",
        )
    )
    s = api(server, mode=mode)
    s.chat("look around")
    assert tree_bytes(repo) == before
    assert not (repo / "__pycache__").exists()


@needs_namespaces
@pytest.mark.skipif(not shutil.which("npm"), reason="npm is not installed")
def test_npm_test_in_plan_mode_leaves_the_tree_intact(fake_llm, api, repo):
    """Seed 001 lets plan mode run `npm test`; the script it runs may write, the read-only OS
    sandbox keeps every file as it was (npm's own cache and logs go to the private folder)."""
    (repo / "package.json").write_text(
        json.dumps(
            {
                "name": "planted",
                "version": "1.0.0",
                "scripts": {
                    "test": "node -e \"require('fs').writeFileSync('planted.txt', 'x')\" "
                    "|| echo WRITE-REFUSED"
                },
            }
        )
    )
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "pkg"],
        cwd=repo,
        check=True,
    )
    before = tree_bytes(repo)
    server = fake_llm(bash_steps("npm test 2>&1 | tail -5"))
    s = api(server, mode="plan")
    s.chat("run the tests")
    assert "WRITE-REFUSED" in server.tool_result("b0"), server.tool_result("b0")
    assert tree_bytes(repo) == before
    assert not (repo / "planted.txt").exists()


@needs_namespaces
def test_a_tool_cannot_undo_its_mounts(fake_llm, api, repo):
    """The read-only mounts are not the tool's to change: Landlock forbids mount, umount and
    remount inside the sandbox, so a hostile command cannot reach the host's view again."""
    outside = outside_folder()
    try:
        script = bash_steps(
            "umount -l /proc; echo umount=$?",
            f"mount -o remount,rw /; mount -o remount,rw,bind {outside}; echo x > {outside}/f; "
            "echo done",
            f"unshare -m sh -c 'mount -o remount,rw {outside}; echo x > {outside}/g'; echo done",
        )
        server = fake_llm(script)
        s = api(server, mode="yolo")
        s.chat("try")
        assert not (outside / "f").exists()
        assert not (outside / "g").exists()
        assert "umount=0" not in server.tool_result("b0"), server.tool_result("b0")
    finally:
        shutil.rmtree(outside, ignore_errors=True)
