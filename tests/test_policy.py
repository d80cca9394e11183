"""Permission engine and OS sandbox (spec §3, seed 000 behaviour 11) end to end: modes and
roles, deny rules and their bypass attempts, the Landlock/seccomp sandbox, the exfiltration
guard, persisted trust, `/permissions` and `yuyao sandbox list|recreate|explain`.

Files on disk, tool results and the requests the model received decide every assertion.
"""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core


def sandbox_enforced() -> bool:
    from yuyao import _core

    s = _core.Session(json.dumps({"headless": True, "no_trajectory": True}), None)
    try:
        text = s.dispatch("/sandbox list")
    finally:
        s.close()
    return "NOT ENFORCEABLE" not in text


needs_sandbox = pytest.mark.skipif(
    not os.environ.get("YUYAO_REQUIRE_CORE") and not sandbox_enforced(),
    reason="this kernel cannot enforce the OS sandbox",
)


def bash_steps(*commands: str) -> list:
    """One reply calling bash once per command (ids b0, b1, ...), then a final answer."""
    items = [("bash", {"command": c}, f"b{i}") for i, c in enumerate(commands)]
    return [calls(items), say("I ran the commands above; their results are reported there.")]


def out(proc) -> str:
    return proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------------------
# Modes and roles (files on disk decide)

MODE_CASES = [
    # mode, role, write lands, mutating bash runs, read-only bash runs
    ("plan", None, False, False, True),
    ("ask", None, False, False, True),
    ("auto-edit", None, True, False, True),
    ("yolo", None, True, True, True),
    ("yolo", "ask", False, False, True),
    ("auto-edit", "ask", False, False, True),
]


@pytest.mark.parametrize("mode,role,write_lands,bash_runs,ls_runs", MODE_CASES)
def test_modes_and_roles(fake_llm, api, repo, mode, role, write_lands, bash_runs, ls_runs):
    script = [
        calls(
            [
                ("write", {"file_path": str(repo / "w.txt"), "content": "w\n"}, "w"),
                ("bash", {"command": "touch b.txt"}, "b"),
                ("bash", {"command": "ls | head -3 && git status --short"}, "l"),
            ]
        ),
        say("Done."),
    ]
    server = fake_llm(script)
    s = api(server, mode=mode, **({"role": role} if role else {}))
    s.chat("make the files")
    assert (repo / "w.txt").exists() == write_lands
    assert (repo / "b.txt").exists() == bash_runs
    assert ("calc.py" in server.tool_result("l")) == ls_runs
    system = server.system_prompt(0)
    assert mode in system
    if role:
        assert role in system


@pytest.mark.parametrize(
    "flags,write_lands,bash_runs",
    [
        (["--plan"], False, False),
        ([], False, False),
        (["--auto-edit"], True, False),
        (["--yolo"], True, True),
        (["--yolo", "--role", "ask"], False, False),
        (["--yolo", "--sandbox", "read-only"], False, False),
    ],
    ids=["plan", "ask", "auto-edit", "yolo", "yolo+role-ask", "yolo+read-only"],
)
def test_modes_through_print(fake_llm, yuyao, env, repo, flags, write_lands, bash_runs):
    script = [
        calls(
            [
                ("write", {"file_path": str(repo / "w.txt"), "content": "w\n"}, "w"),
                ("bash", {"command": "touch b.txt"}, "b"),
                ("bash", {"command": "git log --oneline -1"}, "l"),
            ]
        ),
        say("I tried both changes; the results are reported above."),
    ]
    server = fake_llm(script)
    proc = yuyao("-p", "make the files", *flags, env=env(server))
    assert proc.returncode in (0, 1), out(proc)
    assert (repo / "w.txt").exists() == write_lands
    assert (repo / "b.txt").exists() == bash_runs
    assert "initial" in server.tool_result("l")


def test_mode_switch_is_effective_immediately(fake_llm, api, repo):
    server = fake_llm(bash_steps("touch first.txt") + bash_steps("touch second.txt"))
    s = api(server, mode="yolo")
    s.chat("one")
    assert (repo / "first.txt").exists()
    s.dispatch("/plan")
    s.chat("two")
    assert not (repo / "second.txt").exists()
    assert server.stated("Permission mode", -1).startswith("plan")


# ---------------------------------------------------------------------------------------------
# Deny rules: every bypass attempt is refused, mentions run

BYPASSES = [
    'to""uch m0',
    "\\touch m1",
    "/usr/bin/touch m2",
    "sh -c 'touch m3'",
    'bash -c "cd . && touch m4"',
    "env A=1 touch m5",
    "echo $(touch m6)",
    "echo `touch m7`",
    "find . -maxdepth 0 -exec touch m8 \\;",
    "true && touch m9",
    "(touch m10)",
    "{ touch m11; }",
    "nice -n 1 timeout 5 nohup touch m12",
    "echo m13 | xargs touch",
    "command touch m14",
    "$(echo touch) m15",
    "eval touch m16",
    "if true; then touch m17; fi",
    "for f in m18; do touch $f; done",
    "cat <(touch m19)",
    "false || touch m20",
    "ls; touch m21",
    "exec touch m22",
    "stdbuf -o0 touch m23",
    "sudo -n touch m24",
    "'touch' m25",
    "t\\ouch m26",
    "x=1 touch m27",
    "bash -lc 'sh -c \"touch m28\"'",
    "while false; do :; done; touch m29",
]


def test_deny_bypass_attempts_never_run(fake_llm, api, repo, expect_refused):
    server = fake_llm(bash_steps(*BYPASSES))
    s = api(server, mode="yolo", deny=["Bash(touch)"])
    s.chat("try them all")
    created = sorted(p.name for p in repo.iterdir() if p.name.startswith("m"))
    assert created == [], created
    for i in range(len(BYPASSES)):
        expect_refused(server, f"b{i}")


def test_sandboxed_bash_output_ends_with_the_process(fake_llm, api):
    server = fake_llm(bash_steps("echo hi"))
    api(server, mode="yolo").chat("say hi")
    result = server.tool_result("b0")
    assert "hi" in result and "exit code 0" in result
    assert "still hold" not in result, result


def test_mentions_are_not_executions(fake_llm, api, repo):
    server = fake_llm(bash_steps("echo touch > said.txt", "grep 'touch ' calc.py; echo rc=$?"))
    s = api(server, mode="yolo", deny=["Bash(touch)"])
    s.chat("mention it")
    assert (repo / "said.txt").read_text() == "touch\n"
    assert "rc=1" in server.tool_result("b1")


def test_allow_needs_every_segment(fake_llm, yuyao, env, repo):
    server = fake_llm(bash_steps("touch a1.txt", "touch a2.txt && mkdir d3"))
    proc = yuyao("-p", "go", "--allow", "Bash(touch)", env=env(server))
    assert proc.returncode == 0, out(proc)
    assert (repo / "a1.txt").exists()
    assert not (repo / "a2.txt").exists() and not (repo / "d3").exists()


def test_ask_rule_vetoes_even_in_yolo(fake_llm, api, repo, expect_refused):
    server = fake_llm(bash_steps("git tag v1"))
    s = api(server, mode="yolo")
    s.dispatch("/permissions ask Bash(git tag:*) --session")
    s.chat("tag it")
    expect_refused(server, "b0")
    assert "v1" not in os.popen(f"git -C {repo} tag").read()


# What a refusal advises: the change that would actually allow the call (never the mode
# already in force), derived from what refused it. (mode, extra flags, call, advised, not advised)
ADVICE_CASES = [
    ("auto-edit", [], ("bash", {"command": "touch made.txt"}), "--mode yolo", "--mode auto-edit"),
    ("auto-edit", [], ("bash", {"command": "touch made.txt"}), "--allow 'Bash(touch)'", None),
    (
        "ask",
        [],
        ("write", {"file_path": "n.txt", "content": "x"}),
        "--mode auto-edit",
        "--mode ask",
    ),
    ("plan", [], ("write", {"file_path": "n.txt", "content": "x"}), "--mode auto-edit", "plan"),
    (
        "yolo",
        ["--role", "ask"],
        ("write", {"file_path": "n.txt", "content": "x"}),
        "--role execute",
        "--mode",
    ),
    (
        "yolo",
        ["--sandbox", "read-only"],
        ("bash", {"command": "touch made.txt"}),
        "--sandbox workspace-write",
        "--mode",
    ),
    (
        "yolo",
        ["--deny", "Bash(touch)"],
        ("bash", {"command": "touch made.txt"}),
        "removing the deny rule Bash(touch)",
        "--mode",
    ),
    (
        "auto-edit",
        [],
        ("write", {"file_path": "/var/yuyao-advice-out.txt", "content": "x"}),
        "--sandbox full-access",
        "--mode",
    ),
    ("yolo", [], ("read", {"file_path": ".env"}), "naming @", "--mode"),
    (
        "yolo",
        [],
        ("write", {"file_path": ".git/hooks/pre-commit", "content": "x"}),
        "No mode or rule",
        "--mode",
    ),
]


@pytest.mark.parametrize(("mode", "flags", "call_", "advised", "not_advised"), ADVICE_CASES)
def test_refusal_advice_names_what_would_allow_the_call(
    fake_llm, yuyao, env, repo, mode, flags, call_, advised, not_advised
):
    (repo / ".env").write_text("TOKEN=abc\n")
    server = fake_llm([calls([(call_[0], call_[1], "c")]), say("Could not.")])
    proc = yuyao("-p", "go", "--mode", mode, *flags, env=env(server))
    assert proc.returncode in (0, 1), out(proc)
    result = server.tool_result("c")
    assert result.startswith("Refused:"), result
    advice = result[max(result.find("What would allow it"), result.find("No mode or rule")) :]
    assert advised in advice, result
    if not_advised:
        assert not_advised not in advice, result
    assert not (repo / "made.txt").exists() and not (repo / "n.txt").exists()


# ---------------------------------------------------------------------------------------------
# The OS sandbox


@needs_sandbox
def test_workspace_write_confines_bash(fake_llm, api, repo, tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    server = fake_llm(
        bash_steps(
            f"echo x > {outside}/escape.txt",
            "echo inside > inside.txt",
            f"echo t > {scratch}/t.txt",
            "grep NoNewPrivs /proc/self/status",
        )
    )
    # The temp dir is writable: point it somewhere that does not contain `outside`.
    s = api(server, mode="yolo")
    monkeypatch.setenv("TMPDIR", str(scratch))
    s.chat("write around")
    assert not (outside / "escape.txt").exists()
    assert "sandbox" in server.tool_result("b0").lower()
    assert (repo / "inside.txt").read_text() == "inside\n"
    assert (scratch / "t.txt").exists()
    assert "1" in server.tool_result("b3")


@needs_sandbox
@needs_sandbox
def test_the_scratch_folder_is_no_way_out(fake_llm, api, repo, yuyao_home):
    """yuyao's scratch stays writable, but the model cannot turn it into an exit: links
    planted for yuyao to write job logs through, or to widen the read-only sandbox to the
    project, and programs planted for yuyao to run, have no effect."""
    outside = yuyao_home / "planted"  # in yuyao's folder: read-only to tool processes
    outside.mkdir()
    marker = yuyao_home / "ran-planted"
    plant = (
        f"S=$(ls -d {yuyao_home}/spill/*/ | head -1); "
        f'rm -rf "$S/jobs" "$S/tmp"; ln -s {outside} "$S/jobs"; ln -s {repo} "$S/tmp"; '
        f'for n in 0 1 2 3 4 5 6 7 8 9; do ln -s {outside}/spilled "$S/bash-$PPID-$n.log"; done; '
        f"T=$(ls -d {yuyao_home}/spill/*/tmp); "
        f'printf "#!/bin/sh\\ntouch {marker}\\n" > "$T/git"; chmod +x "$T/git"; cp "$T/git" "$T/bash"; '
        f"echo planted"
    )
    server = fake_llm(
        [
            calls([("bash", {"command": plant}, "plant")]),
            calls(
                [("bash", {"command": "echo in-the-background", "run_in_background": True}, "job")]
            ),
            say("done"),
            calls([("bash", {"command": "pwd; echo $TMPDIR"}, "ro")]),
            say("looked"),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("go")
    s.dispatch("/mode plan")
    s.chat("look")
    assert "/tmp" in server.tool_result("ro")
    described = s.dispatch("/sandbox list")
    s._core.user_shell("true")
    assert list(outside.iterdir()) == [], server.tool_result("plant")
    assert not marker.exists()
    this_session = next(line for line in described.splitlines() if "this session" in line)
    assert str(repo) not in this_session.split("writes only under")[-1], this_session


def test_write_tool_outside_workspace_is_refused(
    fake_llm, api, tmp_path, expect_refused, monkeypatch
):
    target = tmp_path / "elsewhere.txt"
    server = fake_llm(
        [calls([("write", {"file_path": str(target), "content": "x"}, "w")]), say("ok")]
    )
    s = api(server, mode="yolo")
    (tmp_path / "scratch").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))  # /tmp itself is writable
    s.chat("write it")
    assert not target.exists()
    expect_refused(server, "w")


@needs_sandbox
def test_read_only_sandbox(fake_llm, yuyao, env, repo):
    server = fake_llm(bash_steps("touch ro.txt", "ls > /dev/null && echo listed"))
    proc = yuyao("-p", "go", "--yolo", "--sandbox", "read-only", env=env(server))
    assert proc.returncode == 0, out(proc)
    assert not (repo / "ro.txt").exists()
    assert "listed" in server.tool_result("b1")


@needs_sandbox
@pytest.mark.parametrize("level", ["read-only", "workspace-write"])
def test_scratch_is_writable_at_every_level(fake_llm, yuyao, env, repo, level):
    """yuyao's own scratch (the file the shell reports its directory in) is writable at
    every level: no "Permission denied" on every command, and `cd` persists."""
    (repo / "sub").mkdir()
    server = fake_llm(
        [calls([("bash", {"command": "cd sub"}, "cd")]), *bash_steps("pwd", "touch ro.txt")]
    )
    proc = yuyao("-p", "go", "--yolo", "--sandbox", level, env=env(server))
    assert proc.returncode in (0, 1), out(proc)
    for call_id in ("cd", "b0"):
        assert "Permission denied" not in server.tool_result(call_id), server.tool_result(call_id)
    assert server.tool_result("b0").startswith(f"{repo}/sub\n"), server.tool_result("b0")
    assert (repo / "sub" / "ro.txt").exists() == (level == "workspace-write")


@pytest.fixture
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    stop = threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conn.close()
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join()
    srv.close()


@needs_sandbox
@pytest.mark.parametrize("network,connects", [("off", False), ("on", True)])
def test_network_switch(fake_llm, yuyao, env, listener, network, connects):
    import sys

    code = (
        f"import socket; s = socket.create_connection(('127.0.0.1', {listener}), timeout=5); "
        "print('CONNECTED')"
    )
    server = fake_llm(bash_steps(f'{sys.executable} -c "{code}"'))
    proc = yuyao("-p", "connect", "--yolo", "--network", network, env=env(server))
    assert proc.returncode == 0, out(proc)
    result = server.tool_result("b0")
    assert ("CONNECTED" in result) == connects, result


def test_kernel_without_landlock_refuses_clearly(fake_llm, yuyao, env, repo):
    server = fake_llm(bash_steps("touch nl.txt"))
    e = env(server, YUYAO_SANDBOX_DISABLE="landlock")
    proc = yuyao("-p", "go", "--yolo", env=e)
    assert proc.returncode in (0, 1), out(proc)  # nothing ran: not Submitted
    assert not (repo / "nl.txt").exists()
    result = server.tool_result("b0")
    assert "sandbox explain" in result and "Landlock" in result
    assert "cannot be enforced" in proc.stderr  # the one-time message
    listing = yuyao("sandbox", "list", env=e)
    assert listing.returncode == 0
    assert "NOT ENFORCEABLE" in listing.stdout
    # Full access with the network on needs no confinement: it runs.
    server2 = fake_llm(bash_steps("touch fa.txt"))
    e2 = env(server2, YUYAO_SANDBOX_DISABLE="landlock")
    proc = yuyao("-p", "go", "--yolo", "--sandbox", "full-access", "--network", "on", env=e2)
    assert proc.returncode == 0, out(proc)
    assert (repo / "fa.txt").exists()


# ---------------------------------------------------------------------------------------------
# Exfiltration guard

SECRET_ENV = "SECRET_TOKEN_9f8e7d"
SECRET_KEY = "PRIVATE_KEY_MATERIAL_a1b2c3"


@pytest.fixture
def secrets(repo, tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY-----\n{SECRET_KEY}\n")
    (repo / ".env").write_text(f"API_TOKEN={SECRET_ENV}\n")
    (repo / "config").mkdir()
    (repo / "config" / "server.key").write_text(f"{SECRET_KEY}\n")
    return home


def test_named_in_prose_sends_neither_secret(fake_llm, yuyao, env, repo, secrets):
    key = str(secrets / ".ssh" / "id_rsa")
    script = [
        calls(
            [
                ("read", {"file_path": ".env"}, "r1"),
                ("read", {"file_path": "~/.ssh/id_rsa"}, "r2"),
                ("bash", {"command": "cat .env ~/.ssh/id_rsa"}, "r3"),
                ("grep", {"pattern": "SECRET|PRIVATE", "path": str(repo)}, "r4"),
                ("bash", {"command": f"head -5 {key}"}, "r5"),
                (
                    "grep",
                    {"pattern": "PRIVATE", "path": str(repo / "config"), "output_mode": "content"},
                    "r6",
                ),
            ]
        ),
        say("Looked around."),
    ]
    server = fake_llm(script)
    prompt = "Why does login fail? The token is in .env and my key is ~/.ssh/id_rsa."
    proc = yuyao("-p", prompt, "--yolo", env=env(server, HOME=str(secrets)))
    assert proc.returncode == 0, out(proc)
    everything = json.dumps([r["body"] for r in server.requests])
    assert SECRET_ENV not in everything
    assert SECRET_KEY not in everything
    for cid in ("r1", "r2", "r3", "r5"):
        assert "secret" in server.tool_result(cid).lower(), server.tool_result(cid)


def test_tools_never_see_the_model_key(fake_llm, api):
    from conftest import API_KEY

    server = fake_llm(bash_steps("env | sort"))
    api(server, mode="yolo").chat("show the environment")
    assert "PATH=" in server.tool_result("b0")
    assert API_KEY not in json.dumps([r["body"] for r in server.requests])


def test_at_mention_lets_the_named_file_through(fake_llm, api, repo, secrets):
    server = fake_llm(
        [
            calls(
                [
                    ("read", {"file_path": str(repo / ".env")}, "r1"),
                    ("read", {"file_path": str(repo / "config" / "server.key")}, "r2"),
                ]
            ),
            say("ok"),
        ]
    )
    s = api(server, mode="ask")
    s.chat("Check @.env please")
    assert SECRET_ENV in server.tool_result("r1")
    assert SECRET_KEY not in json.dumps([r["body"] for r in server.requests])


def test_explicit_allow_rule_exempts_a_sensitive_path(fake_llm, yuyao, env, repo, secrets):
    server = fake_llm([calls([("read", {"file_path": ".env"}, "r1")]), say("ok")])
    proc = yuyao("-p", "read it", "--allow", "Read(/.env)", env=env(server))
    assert proc.returncode == 0, out(proc)
    assert SECRET_ENV in server.tool_result("r1")


# ---------------------------------------------------------------------------------------------
# sandbox explain / list / recreate


def test_sandbox_explain_names_the_deciding_rule(fake_llm, yuyao, env, repo):
    server = fake_llm(bash_steps("ls && sh -c 'r\"\"m -f calc.py'"))
    e = env(server)
    proc = yuyao("-p", "clean up", "--yolo", "--deny", "Bash(rm)", env=e)
    assert proc.returncode in (0, 1), out(proc)  # the only call was refused
    assert (repo / "calc.py").exists()
    explained = yuyao("sandbox", "explain", env=e)
    assert explained.returncode == 0, out(explained)
    assert "deny Bash(rm)" in explained.stdout
    assert "rm -f calc.py" in explained.stdout  # the segment, quotes removed
    assert "mode yolo" in explained.stdout


def test_sandbox_explain_dry_run(yuyao, env):
    proc = yuyao(
        "sandbox", "explain", "git status; \\rm -rf build", "--deny", "Bash(rm)", env=env()
    )
    assert proc.returncode == 0, out(proc)
    text = proc.stdout
    assert "segments (2)" in text
    assert "deny Bash(rm)" in text and "DENY" in text
    for cmd in ("echo 'unbalanced", "echo ${x:-$(rm y)}", "f() { rm x; }", "ls &&", "{rm,x} y"):
        proc = yuyao("sandbox", "explain", cmd, env=env())
        assert "undetermined" in proc.stdout, (cmd, proc.stdout)
    proc = yuyao("sandbox", "explain", "cat README.md | wc -l", "--plan", env=env())
    assert "ALLOW" in proc.stdout and "read-only" in proc.stdout


def test_sandbox_list_and_recreate(yuyao, env):
    proc = yuyao("sandbox", "list", env=env())
    assert proc.returncode == 0, out(proc)
    for word in ("landlock", "seccomp", "read-only", "workspace-write", "full-access"):
        assert word in proc.stdout.lower()
    proc = yuyao("sandbox", "recreate", env=env())
    assert proc.returncode == 0, out(proc)
    assert "self-test" in proc.stdout
    assert yuyao("sandbox", "bogus", env=env()).returncode == 2


# ---------------------------------------------------------------------------------------------
# Persisted trust and /permissions


def test_permissions_persist_per_project(fake_llm, api, repo, git_status, expect_refused):
    server = fake_llm(bash_steps("touch p1.txt"))
    s = api(server, mode="yolo")
    assert "saved" in s.dispatch("/permissions deny Bash(touch)")
    listing = s.dispatch("/permissions list")
    assert "Bash(touch)" in listing and "project" in listing
    s.close()
    # A new session in the same project honours it.
    s2 = api(server, mode="yolo")
    s2.chat("touch")
    assert not (repo / "p1.txt").exists()
    expect_refused(server, "b0")
    assert git_status(repo) == set(), "the trust file must not show in git status"
    assert "removed" in s2.dispatch("/permissions remove Bash(touch)")
    server2 = fake_llm(bash_steps("touch p2.txt"))
    api(server2, mode="yolo").chat("touch")
    assert (repo / "p2.txt").exists()
    with pytest.raises(ValueError):
        s2.dispatch("/permissions allow Nope(x)")
    with pytest.raises(ValueError):
        s2.dispatch("/permissions remove Bash(never-added)")


@pytest.mark.parametrize(
    "answer,scope_file", [("allow_project", "project"), ("allow_always", "user")]
)
def test_always_answers_persist(fake_llm, use_env, repo, yuyao_home, answer, scope_file):
    from yuyao import _core

    class Handler:
        def __init__(self):
            self.requests = []

        def event(self, _):
            pass

        def request(self, text):
            self.requests.append(json.loads(text))
            return answer

    server = fake_llm(bash_steps("mkdir made1") + bash_steps("mkdir made2"))
    use_env(server)
    h = Handler()
    opts = {"cwd": str(repo), "mode": "ask", "stream": False}
    s = _core.Session(json.dumps(opts), h)
    s.chat("make it")
    s.close()
    assert (repo / "made1").is_dir()
    assert h.requests and h.requests[0]["detail"] == "mkdir made1"  # the actual command
    saved = (repo / ".yuyao" if scope_file == "project" else yuyao_home) / "permissions.json"
    assert "Bash(mkdir)" in json.loads(saved.read_text())["allow"]
    # An unattended session now runs it without asking anybody.
    s2 = _core.Session(json.dumps({**opts, "headless": True}), None)
    s2.chat("again")
    s2.close()
    assert (repo / "made2").is_dir()
