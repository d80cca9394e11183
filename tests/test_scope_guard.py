"""The scope contract (seed 000 behaviour 2): `declare-scope` and the categorical guard, end to end
against the scripted model.

Every scenario runs twice: with the guard (the default) and with `scope.guard = false`,
which must show the opposite outcome — so each test fails if the mechanism is removed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git
from fakellm import FAKE_MODEL, calls, say
from test_tui import CTRL_D, yuyao_term

pytestmark = pytest.mark.core

GUARD_OFF = "[scope]\nguard = false\n"


def declare(files, behaviours="what the user asked for", cid="call_scope", **extra):
    return calls([("declare-scope", {"files": files, "behaviours": behaviours, **extra}, cid)])


def guard_off(yuyao_home: Path) -> None:
    (yuyao_home / "config.toml").write_text(GUARD_OFF)


def run_p(yuyao, env, server, *flags):
    return yuyao("-p", "Change calc.py as asked.", "--yolo", *flags, env=env(server))


def refusal(server, cid):
    return server.tool_result(cid) or ""


# ---------------------------------------------------------------------------------------------
# Out of scope: confirmation in the TUI, refusal in yolo


def out_of_scope_script():
    return [
        declare(["calc.py"], "add a subtract function to calc.py"),
        calls([("write", {"file_path": "notes.txt", "content": "unrelated\n"}, "call_w")]),
        say("Done."),
    ]


@pytest.mark.parametrize("guard", [True, False])
def test_out_of_scope_write_is_refused_in_yolo(fake_llm, yuyao, env, repo, yuyao_home, guard):
    if not guard:
        guard_off(yuyao_home)
    server = fake_llm(out_of_scope_script())
    proc = run_p(yuyao, env, server, "--verbose")
    assert proc.returncode in (0, 1), proc.stderr
    # The declaration is shown on -p --verbose stderr either way.
    assert "scope declared: calc.py — add a subtract function to calc.py" in proc.stderr
    result = refusal(server, "call_w")
    if guard:
        assert "Refused by the scope guard (outside the declared scope)" in result, result
        assert "re-declare the scope if the user asked for this" in result
        assert not (repo / "notes.txt").exists()
    else:
        assert "Refused" not in result, result
        assert (repo / "notes.txt").read_text() == "unrelated\n"


@pytest.mark.parametrize("guard", [True, False])
def test_out_of_scope_write_asks_in_the_tui(fake_llm, env, repo, yuyao_home, guard):
    if not guard:
        guard_off(yuyao_home)
    server = fake_llm(out_of_scope_script())
    # auto-edit: file edits run without a question, so any question is the guard's.
    term = yuyao_term(env(server), repo, "--mode", "auto-edit")
    try:
        term.wait_ready()
        term.line("add a subtract function to calc.py")
        term.wait_for(r"scope declared: calc\.py")
        if guard:
            term.wait_for(r"\[n\] no", screen_only=True)
            shown = term.transcript()
            assert "outside the declared scope" in shown
            assert "unrelated" in shown  # the actual diff
            term.send("n")
        term.wait_for(r"Done\.")
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    if guard:
        assert not (repo / "notes.txt").exists()
        assert "declined" in refusal(server, "call_w")
    else:
        assert "permission" not in term.transcript().lower()
        assert (repo / "notes.txt").read_text() == "unrelated\n"


def test_out_of_scope_write_in_tui_yolo_is_refused_without_a_question(fake_llm, env, repo):
    """Yolo asks nothing, so in yolo the guard refuses even with a human at the terminal."""
    server = fake_llm(out_of_scope_script())
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_ready()
        term.line("add a subtract function to calc.py")
        term.wait_for(r"Done\.")
        assert "[n] no" not in term.transcript()
        assert "scope guard refused write" in term.transcript()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert "Refused by the scope guard" in refusal(server, "call_w")
    assert not (repo / "notes.txt").exists()


# ---------------------------------------------------------------------------------------------
# Dependencies


def fake_npm(tmp_path: Path) -> str:
    """An `npm` that records what it was asked to install in the working directory."""
    d = tmp_path / "bin"
    d.mkdir()
    exe = d / "npm"
    exe.write_text('#!/bin/sh\necho "$@" >> npm-calls.txt\necho installed\n')
    exe.chmod(0o755)
    return str(d)


@pytest.mark.parametrize("guard", [True, False])
def test_npm_install_in_a_scoped_turn_is_refused_as_dependency(
    fake_llm, yuyao, env, repo, yuyao_home, tmp_path, guard
):
    if not guard:
        guard_off(yuyao_home)
    bin_dir = fake_npm(tmp_path)
    server = fake_llm(
        [
            declare(["calc.py"], "pad the output"),
            calls([("bash", {"command": "npm install left-pad"}, "call_npm")]),
            say("Done."),
        ]
    )
    e = env(server)
    e["PATH"] = f"{bin_dir}:{e['PATH']}"
    proc = yuyao("-p", "pad the output", "--yolo", env=e)
    result = refusal(server, "call_npm")
    if guard:
        assert "Refused by the scope guard (dependency change)" in result, result
        assert "npm install left-pad" in result
        assert not (repo / "npm-calls.txt").exists()
    else:
        assert "installed" in result, (result, proc.stderr)
        assert (repo / "npm-calls.txt").read_text() == "install left-pad\n"


def test_a_manifest_named_in_the_scope_is_in_scope(fake_llm, yuyao, env, repo):
    """The categories are the default; a declaration that names the manifest means it."""
    (repo / "package.json").write_text('{"name": "toy"}\n')
    server = fake_llm(
        [
            declare(["package.json"], "rename the package"),
            calls([("read", {"file_path": "package.json"}, "r")]),
            calls([("write", {"file_path": "package.json", "content": '{"name": "t"}\n'}, "c")]),
            declare(["calc.py"], "now only calc.py", cid="call_scope2"),
            calls([("write", {"file_path": "package.json", "content": '{"name": "u"}\n'}, "d")]),
            say("Done."),
        ]
    )
    proc = run_p(yuyao, env, server, "--verbose")
    assert "Refused" not in refusal(server, "c")
    assert "(dependency change)" in refusal(server, "d")
    assert (repo / "package.json").read_text() == '{"name": "t"}\n'
    # Narrowing is said as such.
    assert "scope narrowed (+calc.py -package.json)" in proc.stderr or (
        "scope changed (+calc.py -package.json)" in proc.stderr
    ), proc.stderr


# ---------------------------------------------------------------------------------------------
# Formatting-only rewrites, removed tests


@pytest.mark.parametrize("guard", [True, False])
def test_whitespace_only_rewrite_is_refused(fake_llm, yuyao, env, repo, yuyao_home, guard):
    if not guard:
        guard_off(yuyao_home)
    reformatted = "def add(a,  b):\r\n        return a + b\r\n\r\n"
    server = fake_llm(
        [
            declare(["calc.py"], "fix add"),
            calls([("read", {"file_path": "calc.py"}, "r")]),
            calls([("write", {"file_path": "calc.py", "content": reformatted}, "call_fmt")]),
            say("Done."),
        ]
    )
    run_p(yuyao, env, server)
    result = refusal(server, "call_fmt")
    if guard:
        assert "Refused by the scope guard (formatting-only rewrite)" in result, result
        assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    else:
        assert "Refused" not in result
        assert (repo / "calc.py").read_bytes() == reformatted.encode()


def with_tests(repo: Path) -> None:
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_add_negative():\n    assert add(-1, -2) == -3\n"
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "tests")


@pytest.mark.parametrize("guard", [True, False])
def test_deleted_test_file_is_refused(fake_llm, yuyao, env, repo, yuyao_home, guard):
    if not guard:
        guard_off(yuyao_home)
    with_tests(repo)
    server = fake_llm(
        [
            declare(["calc.py", "tests/**"], "make add faster"),
            calls([("bash", {"command": "rm tests/test_calc.py"}, "call_rm")]),
            say("Done."),
        ]
    )
    run_p(yuyao, env, server)
    result = refusal(server, "call_rm")
    if guard:
        assert "Refused by the scope guard (removed test)" in result, result
        assert (repo / "tests" / "test_calc.py").exists()
    else:
        assert "Refused" not in result
        assert not (repo / "tests" / "test_calc.py").exists()


@pytest.mark.parametrize("guard", [True, False])
def test_edit_removing_a_test_function_is_refused(fake_llm, yuyao, env, repo, yuyao_home, guard):
    if not guard:
        guard_off(yuyao_home)
    with_tests(repo)
    cut = "\n\ndef test_add_negative():\n    assert add(-1, -2) == -3\n"
    server = fake_llm(
        [
            declare(["calc.py", "tests/**"], "make add faster"),
            calls([("read", {"file_path": "tests/test_calc.py"}, "call_read")]),
            calls(
                [
                    (
                        "edit",
                        {"file_path": "tests/test_calc.py", "old_string": cut, "new_string": "\n"},
                        "call_cut",
                    )
                ]
            ),
            say("Done."),
        ]
    )
    run_p(yuyao, env, server)
    result = refusal(server, "call_cut")
    text = (repo / "tests" / "test_calc.py").read_text()
    if guard:
        assert "Refused by the scope guard (removed test)" in result, result
        assert "(2 → 1)" in result
        assert "test_add_negative" in text
    else:
        assert "Refused" not in result, result
        assert "test_add_negative" not in text


# ---------------------------------------------------------------------------------------------
# Size is only a floored backstop


BIG = "".join(f"VALUE_{i} = {i}\n" for i in range(600))


@pytest.mark.parametrize("estimate", [600, None])
def test_a_requested_600_line_change_in_scope_is_allowed(fake_llm, yuyao, env, repo, estimate):
    extra = {} if estimate is None else {"estimate_lines": estimate}
    server = fake_llm(
        [
            declare(["constants.py"], "generate the 600 constants the user listed", **extra),
            calls([("write", {"file_path": "constants.py", "content": BIG}, "call_big")]),
            say("Done."),
        ]
    )
    run_p(yuyao, env, server)
    result = refusal(server, "call_big")
    # With an estimate the change is within 3 × it; without one there is nothing to measure
    # against, and size alone never refuses a change inside the declared files (seed 000).
    assert "Refused" not in result, result
    assert (repo / "constants.py").read_text() == BIG


def test_the_backstop_still_fires_far_beyond_a_declared_estimate(fake_llm, yuyao, env, repo):
    server = fake_llm(
        [
            declare(["constants.py"], "add one constant", estimate_lines=5),
            calls([("write", {"file_path": "constants.py", "content": BIG}, "call_big")]),
            say("Done."),
        ]
    )
    run_p(yuyao, env, server)
    result = refusal(server, "call_big")
    assert "Refused by the scope guard (size beyond the declared estimate)" in result, result
    assert "backstop of 200" in result, result
    assert not (repo / "constants.py").exists()


# ---------------------------------------------------------------------------------------------
# Unscoped turns; re-declaring; the trajectory


def test_an_unscoped_turn_never_prompts(fake_llm, env, repo):
    server = fake_llm(
        [
            calls([("write", {"file_path": "notes.txt", "content": "anything\n"}, "a")]),
            calls([("read", {"file_path": "calc.py"}, "r")]),
            calls(
                [
                    (
                        "write",
                        {"file_path": "calc.py", "content": "def add(a,b):\n  return a+b\n"},
                        "b",
                    )
                ]
            ),
            calls([("write", {"file_path": "package.json", "content": "{}\n"}, "c")]),
            say("Done."),
        ]
    )
    term = yuyao_term(env(server), repo, "--mode", "auto-edit")
    try:
        term.wait_ready()
        term.line("tidy up")
        term.wait_for(r"Done\.")
        assert "permission" not in term.transcript().lower()
        assert "scope guard" not in term.transcript()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert (repo / "notes.txt").exists() and (repo / "package.json").exists()
    assert (repo / "calc.py").read_text() == "def add(a,b):\n  return a+b\n"


def test_scope_covers_its_turn_only(fake_llm, api, repo):
    """agent_api has no human: a hit is refused. A scope declared in one turn does not guard
    the next one."""
    server = fake_llm(
        [
            declare(["calc.py"], "fix add"),
            calls([("write", {"file_path": "later.txt", "content": "x\n"}, "call_now")]),
            say("Scoped."),
            # The turn asked for a change and has a refused write: its check goes to the model.
            say("Nothing changed: later.txt is outside the scope I declared."),
            calls([("write", {"file_path": "later.txt", "content": "x\n"}, "call_later")]),
            say("Done."),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("fix add")
    assert "Refused by the scope guard (outside the declared scope)" in server.tool_result(
        "call_now"
    )
    assert not (repo / "later.txt").exists()
    s.chat("now write later.txt")
    assert "Refused" not in (server.tool_result("call_later") or "")
    assert (repo / "later.txt").read_text() == "x\n"


def test_redeclaring_widens_visibly_and_every_hit_is_in_the_trajectory(
    fake_llm, run_agent, env, repo, tmp_path
):
    from test_submission import run_headless

    server = fake_llm(
        [
            declare(["calc.py"], "add subtract"),
            calls([("write", {"file_path": "ops.py", "content": "OPS = []\n"}, "call_1")]),
            declare(["calc.py", "ops.py"], "add subtract and list it in ops.py", cid="call_s2"),
            calls([("write", {"file_path": "ops.py", "content": "OPS = ['sub']\n"}, "call_2")]),
            say("Added subtract and listed it in ops.py."),
        ]
    )
    proc, status = run_headless(run_agent, env, repo, tmp_path, server, "Add subtract; list it.")
    assert "outside the declared scope" in server.tool_result("call_1")
    assert "scope widened (+ops.py)" in server.tool_result("call_s2")
    assert "Refused" not in server.tool_result("call_2")
    assert (repo / "ops.py").read_text() == "OPS = ['sub']\n"
    records = [
        json.loads(line)
        for f in sorted((tmp_path / "out" / ".trajectory").rglob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    scopes = [r for r in records if r["kind"] == "scope"]
    hits = [r for r in records if r["kind"] == "scope_guard"]
    assert [s["files"] for s in scopes] == [["calc.py"], ["calc.py", "ops.py"]]
    assert scopes[1]["change"].startswith("scope widened")
    assert len(hits) == 1 and hits[0]["category"] == "outside the declared scope"
    assert hits[0]["outcome"] == "refused"
    # The declaration is a tool the model sees, and it is not evidence of work.
    assert "declare-scope" in server.tool_names(0)
    assert FAKE_MODEL
    assert status["exit_status"] == "Submitted", status


def test_declare_scope_rejects_bad_arguments(fake_llm, yuyao, env, repo):
    server = fake_llm(
        [
            calls([("declare-scope", {"files": [], "behaviours": "x"}, "e1")]),
            calls([("declare-scope", {"files": ["a"], "behaviours": "x", "allow": ["all"]}, "e2")]),
            calls(
                [("declare-scope", {"files": "calc.py", "behaviours": "ok", "estimate": "9"}, "ok")]
            ),
            say("Done."),
        ]
    )
    run_p(yuyao, env, server)
    assert "at least one glob" in server.tool_result("e1")
    assert "unknown category" in server.tool_result("e2")
    # A model's looser shapes (one string, a numeric string) are read as meant.
    assert server.tool_result("ok").startswith("scope declared: calc.py — ok · about 9 changed")


@pytest.mark.parametrize("guard", [True, False])
def test_shell_writes_and_patch_moves_are_judged_too(fake_llm, yuyao, env, repo, yuyao_home, guard):
    """The guard sees what a command writes (redirections, sed -i, tee, …) and what a patch
    does (a move is a rename), not only the file tools."""
    if not guard:
        guard_off(yuyao_home)
    move = "*** Begin Patch\n*** Update File: calc.py\n*** Move to: arith.py\n@@\n def add(a, b):\n*** End Patch\n"
    server = fake_llm(
        [
            declare(["calc.py", "arith.py"], "rename nothing yet"),
            calls([("bash", {"command": "echo hi > notes.txt"}, "call_sh")]),
            calls([("apply-patch", {"patch": move}, "call_mv")]),
            calls([("bash", {"command": "echo '# ok' >> calc.py"}, "call_in")]),
            say("Done."),
        ]
    )
    run_p(yuyao, env, server)
    sh, mv = refusal(server, "call_sh"), refusal(server, "call_mv")
    assert "Refused" not in refusal(server, "call_in")
    if guard:
        assert "(outside the declared scope): `echo hi` writes notes.txt" in sh, sh
        assert "(rename/delete): deletes or moves calc.py" in mv, mv
        assert not (repo / "notes.txt").exists() and not (repo / "arith.py").exists()
        assert (repo / "calc.py").read_text().endswith("# ok\n")
    else:
        assert "Refused" not in sh and "Refused" not in mv, (sh, mv)
        assert (repo / "notes.txt").exists() and (repo / "arith.py").exists()


# ---------------------------------------------------------------------------------------------
# A hostile model spells its way around the scope: another tool spelling, an argument alias,
# a path that climbs back out, duplicated keys. The guard judges the arguments the tool will
# run with (parsed once), so none of them writes outside the declared file.


@pytest.mark.parametrize("guard", [True, False])
def test_spellings_aliases_and_duplicated_keys_do_not_escape_the_scope(
    fake_llm, yuyao, env, repo, yuyao_home, guard
):
    if not guard:
        guard_off(yuyao_home)
    (repo / "sub").mkdir()
    dup = '{"file_path": "calc.py", "file_path": "notes.txt", "content": "x\\n"}'
    server = fake_llm(
        [
            declare(["calc.py"], "add a subtract function to calc.py"),
            calls([("Write", {"path": "notes.txt", "content": "a\n"}, "call_alias")]),
            calls([("write", {"filePath": "sub/../notes.txt", "content": "b\n"}, "call_climb")]),
            calls([("write", dup, "call_dup")]),
            say("Done."),
        ]
    )
    proc = run_p(yuyao, env, server)
    assert proc.returncode in (0, 1), proc.stderr
    before = "def add(a, b):\n    return a + b\n"
    if guard:
        for cid in ("call_alias", "call_climb"):
            assert "Refused by the scope guard" in refusal(server, cid), cid
        assert not (repo / "notes.txt").exists()
    else:
        assert (repo / "notes.txt").exists()
    # Duplicated keys are no call at all, guard or not: nothing is written anywhere.
    assert "duplicate field" in refusal(server, "call_dup"), refusal(server, "call_dup")
    assert (repo / "calc.py").read_text() == before
