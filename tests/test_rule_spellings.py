"""Rules mean the same for every spelling, end to end (DESIGN: the policy judges what a call
does, not how it is written): `Read(...)` denies in grep's folder walks, wrappers and config
sources of the shell tables, the model key of agent_api sessions, atomic-write leftovers.

The scripted model proposes the hostile call; what the user would observe decides (the
secret in a tool result, the victim file still on disk, the patch).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakellm import call, calls, say

pytestmark = pytest.mark.core

SECRET = "s3cr3t-canary-9f2e"


def steps(items: list) -> list:
    """One reply with every tool call, then a final answer."""
    return [calls(items), say("Done; the results are above.")]


# ---------------------------------------------------------------------------------------------
# grep honours Read(...) denies in folder walks and glob filters


def plant_secrets(repo) -> None:
    (repo / "secrets").mkdir()
    (repo / "secrets" / "prod.txt").write_text(f"token = {SECRET}\n")
    (repo / "secrets" / "deep").mkdir()
    (repo / "secrets" / "deep" / "more.txt").write_text(f"again {SECRET}\n")
    (repo / "config.local").write_text(f"password {SECRET}\n")
    (repo / "notes.txt").write_text(f"public mention of the word token, not {SECRET[:6]}\n")


GREPS = [
    {"pattern": SECRET, "output_mode": "content"},
    {"pattern": SECRET, "path": ".", "output_mode": "content"},
    {"pattern": SECRET, "glob": "*.txt", "output_mode": "content"},
    {"pattern": SECRET, "glob": "**/*", "output_mode": "count"},
    {"pattern": SECRET, "path": "secrets", "output_mode": "content"},
    {"pattern": SECRET, "output_mode": "files_with_matches"},
    {"pattern": "s3cr3t", "path": "secrets/deep", "glob": "*.txt", "output_mode": "content"},
]


def test_grep_folder_walks_honour_read_denies(fake_llm, api, repo):
    plant_secrets(repo)
    items = [("grep", args, f"g{i}") for i, args in enumerate(GREPS)]
    server = fake_llm(steps(items))
    s = api(server, mode="yolo", deny=["Read(secrets/**)", "Read(config.local)"])
    s.chat("find the token")
    for i, args in enumerate(GREPS):
        result = server.tool_result(f"g{i}") or ""
        # (The "no matches" line repeats the pattern: the lines and names are what leak.)
        for line in (f"token = {SECRET}", f"again {SECRET}", f"password {SECRET}"):
            assert line not in result, (args, result)
        assert "prod.txt" not in result and "more.txt" not in result, (args, result)
        assert "config.local" not in result, (args, result)


def test_grep_still_finds_what_no_rule_denies(fake_llm, api, repo):
    plant_secrets(repo)
    server = fake_llm(steps([("grep", {"pattern": SECRET, "output_mode": "content"}, "g")]))
    s = api(server, mode="yolo", deny=["Read(secrets/**)"])
    s.chat("find the token")
    assert "config.local" in (server.tool_result("g") or "")


# ---------------------------------------------------------------------------------------------
# Wrappers and config sources the shell tables missed: `Bash(rm:*)` must stop each form

# `{v}` is the victim file each form tries to delete.
SHELL_FORMS = [
    "setpriv rm {v}",
    "setpriv --nnp -- rm {v}",
    "setpriv --reuid=1000 --clear-groups rm {v}",
    "prlimit rm {v}",
    "prlimit --nofile=1024 rm {v}",
    "prlimit -n1024:2048 -- rm {v}",
    "vim -es -c '!rm {v}' -c q",
    "vim -c '!rm {v}' -c qa {v}",
    "vi +'!rm {v}' +q",
    "echo '!rm {v}' | ex",
    "nvim --headless --cmd '!rm {v}' +q",
    "awk 'BEGIN {{ system(\"rm {v}\") }}'",
    'awk \'BEGIN {{ print "{v}" | "xargs rm" }}\'',
    "gawk 'BEGIN {{ \"rm {v}\" | getline x }}'",
    'awk -e \'BEGIN{{system("r" "m {v}")}}\'',
    "echo x | sed 's/x/rm {v}/e'",
    "echo x | sed -e '1e rm {v}'",
    "echo x | sed -n 's/.*/rm {v}/ep'",
    "echo x | sed --expression='s/x/r\"\"m {v}/e'",
    "echo x | sed '1e\\\nrm {v}'",
]


def test_missing_wrappers_and_interpreters_cannot_bypass_a_deny(fake_llm, api, repo):
    names = [f"victim{i}.txt" for i in range(len(SHELL_FORMS))]
    for name in names:
        (repo / name).write_text("keep me\n")
    items = [
        ("bash", {"command": form.format(v=name)}, f"b{i}")
        for i, (form, name) in enumerate(zip(SHELL_FORMS, names, strict=True))
    ]
    server = fake_llm(steps(items))
    s = api(server, mode="yolo", deny=["Bash(rm:*)"])
    s.chat("delete them")
    gone = [SHELL_FORMS[names.index(n)] for n in names if not (repo / n).exists()]
    assert gone == [], "\n".join(gone)


def plant_gitconfig(repo, victim: str) -> None:
    """What a hostile repository (or an earlier write) leaves: a git configuration whose alias
    runs a shell command, where `HOME=$PWD` or `GIT_CONFIG_GLOBAL` makes git read it."""
    (repo / ".gitconfig").write_text(f"[alias]\n\tx = !rm {victim}\n")
    (repo / "planted" / "git").mkdir(parents=True, exist_ok=True)
    (repo / "planted" / "git" / "config").write_text(f"[alias]\n\ty = !rm {victim}\n")


GIT_FORMS = [
    "HOME=$PWD git x",
    "HOME=. git x",
    "export HOME=$PWD; git x",
    "env HOME=$PWD git x",
    "XDG_CONFIG_HOME=$PWD/planted git y",
    "GIT_CONFIG_GLOBAL=.gitconfig git x",
]


@pytest.mark.parametrize("form", GIT_FORMS)
def test_a_planted_git_alias_cannot_bypass_a_deny(fake_llm, api, repo, form):
    victim = "victim.txt"
    (repo / victim).write_text("keep me\n")
    plant_gitconfig(repo, victim)
    server = fake_llm(steps([("bash", {"command": form}, "g")]))
    s = api(server, mode="yolo", deny=["Bash(rm:*)"])
    s.chat("run the alias")
    assert (repo / victim).exists(), server.tool_result("g")


def test_plain_git_and_sed_and_awk_still_run(fake_llm, api, repo):
    (repo / "data.txt").write_text("a b\nc d\n")
    items = [
        ("bash", {"command": "git status --short"}, "git"),
        ("bash", {"command": "sed -n 's/a/A/p' data.txt"}, "sed"),
        ("bash", {"command": "awk '{ print $2 }' data.txt"}, "awk"),
        ("bash", {"command": "prlimit --nofile=64 echo limited"}, "prlimit"),
    ]
    server = fake_llm(steps(items))
    s = api(server, mode="yolo", deny=["Bash(rm:*)"])
    s.chat("look")
    assert "A b" in (server.tool_result("sed") or "")
    assert "b\nd" in (server.tool_result("awk") or "")
    assert "limited" in (server.tool_result("prlimit") or "")


# ---------------------------------------------------------------------------------------------
# Domain rules compare addresses, not spellings

LOOPBACK_SPELLINGS = [
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "127.1",
    "127.0.0.2",
    "LOCALHOST.",
]


def loopback_alias() -> str | None:
    """A host name other than localhost that this machine resolves to loopback (from
    /etc/hosts), if there is one."""
    import ipaddress
    import socket

    try:
        lines = open("/etc/hosts", encoding="utf-8").read().splitlines()
    except OSError:
        return None
    for line in lines:
        words = line.split("#")[0].split()
        for name in words[1:]:
            if name == "localhost" or name.endswith(".localhost"):
                continue
            try:
                if ipaddress.ip_address(socket.gethostbyname(name)).is_loopback:
                    return name
            except (OSError, ValueError):
                continue
    return None


@pytest.fixture
def any_web():
    """The test web server on every IPv4 address (so 127.0.0.2 would reach it too)."""
    from test_web import Web

    w = Web(host="0.0.0.0")
    yield w
    w.close()


@pytest.mark.parametrize("rule", ["WebFetch(domain:localhost)", "WebFetch(domain:127.0.0.1)"])
def test_a_loopback_deny_holds_for_every_spelling_and_resolved_name(
    fake_llm, yuyao, env, any_web, rule
):
    hosts = list(LOOPBACK_SPELLINGS)
    alias = loopback_alias()
    if alias:
        hosts.append(alias)
    items = [
        ("web-fetch", {"url": f"http://{h}:{any_web.port}/page"}, f"f{i}")
        for i, h in enumerate(hosts)
    ]
    server = fake_llm(steps(items))
    proc = yuyao("-p", "fetch them", "--network", "on", "--deny", rule, env=env(server))
    assert "panicked" not in proc.stderr, proc.stderr
    for i, h in enumerate(hosts):
        result = server.tool_result(f"f{i}") or ""
        assert "denied by rule" in result, (h, result)
    assert any_web.requests == [], "a denied address was reached under another spelling"


# ---------------------------------------------------------------------------------------------
# Atomic-write leftovers never reach the submission


def leave_killed_write(folder: Path, name: str, age_s: float) -> Path:
    """What `kill -9` in the middle of a file write leaves: yuyao's temporary next to the
    file, its writer (which held it locked) gone. A child process writes it under an
    exclusive flock and is killed with SIGKILL."""
    import os
    import signal
    import subprocess
    import sys
    import time

    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / f".{name}.yuyao-0123456789ab.tmp"
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            "f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "f.write('half of the new cont'); f.flush(); print('ready', flush=True)\n"
            "time.sleep(60)\n",
            str(temp),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout.readline().strip() == "ready"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    then = time.time() - age_s
    os.utime(temp, (then, then))
    return temp


def test_leftovers_of_a_killed_write_are_swept_and_never_submitted(
    fake_llm, run_agent, env, repo, tmp_path
):
    from test_submission import run_headless

    # One killed a moment ago at the top, one long ago deep in the tree.
    fresh = leave_killed_write(repo, "calc.py", age_s=2)
    deep = leave_killed_write(repo / "pkg" / "sub" / "deeper", "notes.md", age_s=600)
    server = fake_llm(
        [
            call("bash", command="printf 'def add(a, b):\\n    return b + a\\n' > calc.py"),
            say("Changed calc.py."),
        ]
    )
    proc, status = run_headless(run_agent, env, repo, tmp_path, server, "Swap the operands.")
    assert proc.returncode == 0, proc.stderr
    assert status["exit_status"] == "Submitted", status
    assert not fresh.exists() and not deep.exists()
    patch = status["submission"]
    assert "calc.py" in patch
    assert ".yuyao-" not in patch, patch
