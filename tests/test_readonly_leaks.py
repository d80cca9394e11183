"""Read-only means no effect (DESIGN §5, seed 002 §3.1), end to end: in plan mode, with the ask role and in
headless ask mode (nobody to approve), the scripted model calls bash with commands that an
audit found writing files or running programs while judged read-only. Afterwards the workspace
is byte-identical and no marker exists in it, in the session's temp dir or in /tmp. The
inspection forms plan mode must keep allowing run and return their output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

# Every marker a leaking command would create has this token in its name.
TOKEN = f"yuyaoleak{uuid.uuid4().hex[:10]}"


def plant(repo: Path, token: str = TOKEN) -> None:
    """Files the hostile commands use: inputs, a planted `./ls`, a diff program, an awk script,
    and an uncommitted change so `git diff` has something to show."""
    (repo / "a.txt").write_text("a\nb\na\n")
    (repo / "b.txt").write_text("b\n")
    for name in ("ls", "m.sh"):
        script = repo / name
        # An absolute `touch`: with `PATH=.` nothing else would be found.
        touch = shutil.which("touch")
        script.write_text(f"#!/bin/sh\n{touch} /tmp/{token}-{name} ./{token}-{name}\n")
        script.chmod(0o755)
    (repo / "prog.awk").write_text(f'BEGIN {{ system("touch {token}-awkf") }}\n')
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")


def leaks(t: str = TOKEN) -> list[str]:
    """The hostile commands. Each writes a marker or changes a workspace file when it runs
    (``test_each_leak_has_an_effect_when_run`` checks that)."""
    cmds = [
        f"sed -n 'w {t}-sedw' a.txt",
        f"sed 's/a/b/w {t}-sedsw' a.txt",
        f"sed '1e touch {t}-sede' a.txt",
        "sed --in-place=.bak s/a/X/ a.txt",
        "sed -ni s/a/X/p a.txt",
        "sed -Ei s/a/X/ a.txt",
        f"sort -uo {t}-sort a.txt",
        f"sort --output=/tmp/{t}-sort2 a.txt",
        f"uniq a.txt {t}-uniq",
        f"xxd a.txt {t}-xxd",
        f"xxd -r a.txt {t}-xxdr",
        f"find . -maxdepth 0 -fprint0 /tmp/{t}-find",
        f"find . -maxdepth 0 -fprint {t}-find2",
        f'awk \'BEGIN{{print "x" | "tee {t}-awk"}}\'',
        f"awk 'BEGIN{{\"touch {t}-awkg\" | getline}}'",
        "awk -f prog.awk",
        "PATH=.:$PATH ls",
        "./ls",
        "PATH=.:$PATH; ls",
        "for PATH in .; do ls; done",
        f"F='w {t}-sedvar'; sed \"s/a/b/$F\" a.txt",
        "GIT_EXTERNAL_DIFF=./m.sh git diff",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=./m.sh git status",
        "git -c diff.external=./m.sh diff",
        "git grep --open-files-in-pager=./m.sh add",
        f"git log --output={t}-gitlog",
        f"printf -v 'a[$(touch {t}-printf)]' x",
        f"echo x | tee {t}-tee",
    ]
    if shutil.which("rg"):
        cmds += ["rg --pre rm zzz a.txt", "rg --pre=./m.sh zzz a.txt"]
    return cmds


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes under ``root``, keyed by relative path. Excluded: git's own directory
    (git may refresh its index) and yuyao's own session record (``.trajectory``)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d not in (".git", ".trajectory")]
        for f in filenames:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = p.read_bytes() if not p.is_symlink() else b"link"
    return out


def markers(*roots: Path, token: str = TOKEN) -> list[str]:
    found = []
    for root in roots:
        for dirpath, _, filenames in os.walk(root):
            found += [os.path.join(dirpath, f) for f in filenames if token in f]
    found += [str(p) for p in Path("/tmp").glob(f"*{token}*")]
    return found


def bash_steps(commands: list[str]) -> list:
    items = [("bash", {"command": c}, f"b{i}") for i, c in enumerate(commands)]
    return [calls(items), say("I ran the commands above; their results are reported there.")]


def test_each_leak_has_an_effect_when_run(repo, tmp_path):
    """The attacks are real: run directly by bash, each command changes the workspace or
    leaves a marker. (So the tests below fail if yuyao lets one run.)"""
    token = f"yuyaoprobe{uuid.uuid4().hex[:10]}"
    plant(repo, token)
    try:
        for i, command in enumerate(leaks(token)):
            work = tmp_path / f"probe{i}"
            shutil.copytree(repo, work, symlinks=True)
            before = snapshot(work)
            subprocess.run(
                ["bash", "-c", command],
                cwd=work,
                capture_output=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
            effect = snapshot(work) != before or markers(work, token=token)
            assert effect, f"no effect when run: {command}"
            for leftover in Path("/tmp").glob(f"*{token}*"):
                leftover.unlink()
    finally:
        for leftover in Path("/tmp").glob(f"*{token}*"):
            leftover.unlink()


SESSIONS = ["plan", "ask-role", "headless-ask"]


@pytest.mark.parametrize("session", SESSIONS)
def test_read_only_leaks_have_no_effect(
    session, fake_llm, api, yuyao, env, repo, tmp_path, expect_refused
):
    plant(repo)
    before = snapshot(repo)
    commands = leaks()
    server = fake_llm(bash_steps(commands))
    if session == "plan":
        api(server, mode="plan").chat("inspect the repository")
    elif session == "ask-role":
        api(server, role="ask").chat("inspect the repository")
    else:
        proc = yuyao("-p", "inspect the repository", env=env(server))
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    after = snapshot(repo)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert changed == [], f"{session}: the workspace changed: {changed}"
    assert markers(repo, tmp_path) == []
    for i in range(len(commands)):
        expect_refused(server, f"b{i}")


def test_env_split_string_has_no_effect(fake_llm, api, repo, tmp_path):
    before = snapshot(repo)
    server = fake_llm(bash_steps([f"env -S 'touch {TOKEN}-envs'"]))
    api(server, mode="plan").chat("inspect")
    assert snapshot(repo) == before
    assert markers(repo, tmp_path) == []


def test_plan_mode_runs_inspection_forms(fake_llm, api, repo):
    with tarfile.open(repo / "x.tar", "w") as tar:
        tar.add(repo / "calc.py", arcname="inner/calc.py")
    subprocess.run(["git", "add", "x.tar"], cwd=repo, check=True)
    commands = [
        "git log --oneline",
        "tar -tf x.tar",
        "find . -name '*.py' -exec grep -l add {} \\;",
        "git branch --list",
        "sed -n 1p calc.py",
        "sort -r README.md calc.py | uniq -c",
    ]
    before = snapshot(repo)
    server = fake_llm(bash_steps(commands))
    api(server, mode="plan").chat("inspect the repository")
    assert "initial" in server.tool_result("b0")
    assert "inner/calc.py" in server.tool_result("b1")
    assert "./calc.py" in server.tool_result("b2")
    assert "master" in server.tool_result("b3") or "main" in server.tool_result("b3")
    assert "def add" in server.tool_result("b4")
    assert "return a + b" in server.tool_result("b5")
    assert snapshot(repo) == before
