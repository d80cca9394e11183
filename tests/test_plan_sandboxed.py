"""Plan mode's sandboxed read-only list, end to end (docs/planning.md): the scripted model
calls bash in plan mode with the forms the list now allows (awk that only prints, command
substitutions of read-only commands, `env VAR=…`, `sort -T`, `--help` of any program, …)
and with the effectful forms beside them. The allowed ones run and return their output, the
effectful ones are refused, interactive programs are refused with a reason instead of
hanging, and afterwards the scratch repository is byte-identical and no file appeared
outside it. A seeded random composition of both lists checks the same property: whatever
plan mode allows leaves every byte where it was.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

TOKEN = f"yuyaoplan{uuid.uuid4().hex[:10]}"
# sqlite3's rows run only where it is installed.
SQLITE = shutil.which("sqlite3")


def plant(repo: Path, outside: Path, token: str = TOKEN) -> None:
    """Inputs, a side branch to delete, a database, an awk script that runs a command, an
    uncommitted change, and a folder outside the repository with a file in it."""
    (repo / "a.txt").write_text("a 1\nb 2\na 3\n")
    (repo / "b.txt").write_text("b 2\n")
    (repo / "prog.awk").write_text(f'BEGIN {{ system("touch {token}-awkf") }}\n')
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "inputs"], cwd=repo, check=True)
    subprocess.run(["git", "branch", "side"], cwd=repo, check=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    if SQLITE:
        subprocess.run(
            [SQLITE, "t.db", "create table t(x); insert into t values (1), (2);"],
            cwd=repo,
            check=True,
        )
    outside.mkdir(exist_ok=True)
    (outside / "keep.txt").write_text("outside\n")


def effects(t: str = TOKEN) -> list[str]:
    """Effectful forms next to the allowed ones. Each changes the workspace, a branch, the
    folder outside, or leaves a marker when run directly (the first test checks that)."""
    cmds = [
        f"awk 'BEGIN{{system(\"touch {t}-awks\")}}'",
        f"awk '{{print > \"{t}-awkr\"}}' a.txt",
        f"awk '{{print > \"../outside/{t}-awko\"}}' a.txt",
        f'awk \'BEGIN{{print "x" | "tee {t}-awkp"}}\'',
        f"awk 'BEGIN{{\"touch {t}-awkg\" | getline}}'",
        "awk -f prog.awk",
        f"find . -maxdepth 0 -exec touch {t}-find \\;",
        "find . -name b.txt -delete",
        f"sort -o {t}-sort a.txt",
        f"sort -T . -o {t}-sortt a.txt",
        "git branch -D side",
        "git checkout -- calc.py",
        "sed -i s/a/X/ a.txt",
        f"echo $(touch {t}-sub)",
        f"ls $(touch {t}-sub2)",
        'cat "$(sed -i s/b/Y/ b.txt)"',
        f"env touch {t}-env",
        f"env FOO=bar touch {t}-envf",
        f"echo {t}-xargs | xargs touch",
        "git ls-files b.txt | xargs rm",
        # With POSIXLY_CORRECT, `--help` after an operand is an operand: the file goes.
        "POSIXLY_CORRECT=1 rm -f a.txt --help",
        f"cat a.txt > ../outside/{t}-redir",
        f"echo x | tee {t}-tee",
        f"timeout 5 touch {t}-timeout",
    ]
    if SQLITE:
        cmds += [
            f"sqlite3 -readonly t.db '.shell touch {t}-sq'",
            f"echo '.shell touch {t}-sq2' | sqlite3 -readonly t.db",
        ]
    if shutil.which("script"):
        cmds.append(f"script -q -c ls {t}-script")
    return cmds


def allowed() -> list[tuple[str, str]]:
    """(command, text its output contains): forms the strict list refused that plan mode
    now runs."""
    return [
        ("awk '{print $1}' a.txt", "a\nb\na"),
        ("awk '/a|b/ {n++} END {print n}' a.txt", "3"),
        ("awk -F' ' '$2 > 1 {print $2}' a.txt", "2\n3"),
        ("ls $(pwd)", "a.txt"),
        ("echo $(whoami)", ""),
        ("cat $(ls *.txt)", "b 2"),
        ('echo "on $(git rev-parse --abbrev-ref HEAD)"', "on "),
        ("diff <(sort a.txt) <(sort b.txt)", "a 1"),
        ("env FOO=bar ls", "calc.py"),
        ("LC_ALL=C sort -T . a.txt", "a 1\na 3\nb 2"),
        ("git branch --remote", ""),
        ("ls --help", "Usage"),
        ("git ls-files | xargs wc -l", "total"),
        ("top -b -n 1", "PID"),
    ] + (
        [
            ("echo 'select count(*) from t;' | sqlite3 -readonly -safe t.db", "2"),
            ("sqlite3 -readonly t.db 'select sum(x) from t'", "3"),
        ]
        if SQLITE
        else []
    )


def snapshot(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file's bytes under ``root``; git's own folder and yuyao's session record
    excluded at the top (git may refresh its index)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d not in (".git", ".trajectory", *skip)]
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


def branches(repo: Path) -> str:
    return subprocess.run(
        ["git", "branch", "--list"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def bash_steps(commands: list[str]) -> list:
    items = [("bash", {"command": c}, f"b{i}") for i, c in enumerate(commands)]
    return [calls(items), say("I ran the commands above; their results are reported there.")]


def cleanup(token: str) -> None:
    for leftover in Path("/tmp").glob(f"*{token}*"):
        leftover.unlink()


needs_tools = pytest.mark.skipif(
    not all(shutil.which(p) for p in ("awk", "top")), reason="awk and top are needed"
)


@needs_tools
def test_each_effect_has_an_effect_when_run(repo, tmp_path):
    """The attacks are real: run directly by bash, each changes something."""
    token = f"yuyaoprobe{uuid.uuid4().hex[:10]}"
    plant(repo, tmp_path / "outside", token)
    try:
        for i, command in enumerate(effects(token)):
            base = tmp_path / f"probe{i}"
            shutil.copytree(repo, base / "repo", symlinks=True)
            shutil.copytree(tmp_path / "outside", base / "outside")
            before = (snapshot(base / "repo"), snapshot(base / "outside"), branches(base / "repo"))
            subprocess.run(
                ["bash", "-c", command],
                cwd=base / "repo",
                capture_output=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
            after = (snapshot(base / "repo"), snapshot(base / "outside"), branches(base / "repo"))
            assert after != before or markers(base, token=token), f"no effect: {command}"
            cleanup(token)
    finally:
        cleanup(token)


@needs_tools
def test_plan_mode_refuses_effects_and_runs_the_sandboxed_forms(
    fake_llm, api, repo, tmp_path, expect_refused
):
    outside = tmp_path / "outside"
    plant(repo, outside)
    before = (snapshot(repo), snapshot(outside), branches(repo))
    bad = effects()
    good = allowed()
    interactive = ["less a.txt", "git ls-files | fzf", "watch ls"]
    commands = bad + [c for c, _ in good] + interactive
    server = fake_llm(bash_steps(commands))
    api(server, mode="plan").chat("inspect the repository")
    try:
        assert (snapshot(repo), snapshot(outside), branches(repo)) == before
        assert markers(repo, tmp_path) == []
    finally:
        cleanup(TOKEN)
    for i in range(len(bad)):
        expect_refused(server, f"b{i}")
    for k, (command, expected) in enumerate(good):
        result = server.tool_result(f"b{len(bad) + k}") or ""
        assert "plan mode is read-only" not in result, f"{command} refused: {result}"
        assert expected in result, f"{command}: {result!r}"
    first = len(bad) + len(good)
    assert "interactive" in expect_refused(server, f"b{first}")
    assert "interactive" in expect_refused(server, f"b{first + 1}")
    assert "`watch` repeats" in expect_refused(server, f"b{first + 2}")


# (composition, whether two allowed forms composed this way stay allowed): a sequence or a
# pipeline of allowed forms is allowed; `$(…)` appended to a program or `env FOO=1` before
# it depends on that program's table.
COMBINE = [
    ("{a}; {b}", True),
    ("{a} && {b}", True),
    ("{a} | {b}", True),
    ("{a} 2>/dev/null || {b}", True),
    ("( {a}; {b} )", True),
    ('echo "$({a})" | {b}', True),
    ("{a} $({b})", False),
    ("env FOO=1 {b}", False),
    ("timeout 5 {b}", False),
    ("bash -c '{b}'", False),
]


@needs_tools
def test_whatever_plan_mode_allows_leaves_every_byte(fake_llm, api, repo, tmp_path):
    """Property, seeded: random compositions of the allowed and the effectful forms. Some
    are allowed (only allowed parts), most refused; whatever ran, nothing changed."""
    seed = int(os.environ.get("YUYAO_PLAN_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    outside = tmp_path / "outside"
    plant(repo, outside)
    good = [c for c, _ in allowed()]
    pool = good + effects()
    commands, composing = [], []
    for i in range(40):
        # Every other line only from allowed forms, so that some of them run.
        a, b = rng.choice(good if i % 2 else pool), rng.choice(good if i % 2 else pool)
        shape, composes = rng.choice(COMBINE)
        commands.append(shape.replace("{a}", a).replace("{b}", b))
        if composes and a not in effects() and b not in effects():
            composing.append(commands[-1])
    before = (snapshot(repo), snapshot(outside), branches(repo))
    server = fake_llm(bash_steps(commands))
    api(server, mode="plan").chat("inspect the repository")
    try:
        after = (snapshot(repo), snapshot(outside), branches(repo))
        assert after == before, f"seed {seed}: something changed"
        assert markers(repo, tmp_path) == [], f"seed {seed}"
    finally:
        cleanup(TOKEN)
    ran = [
        c
        for i, c in enumerate(commands)
        if "plan mode is read-only" not in (server.tool_result(f"b{i}") or "")
    ]
    # Sequences and pipelines of allowed forms are allowed: the list composes.
    assert composing, seed
    assert set(composing) <= set(ran), (seed, sorted(set(composing) - set(ran)))
