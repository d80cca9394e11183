"""Honest completion (seed 000 behaviour 7): the completion check reaches the model before its final answer (same turn);
files changed by shell commands join the diffstat, the scope check and verification; the
files "requested" are paths the user typed, not prose words. Each scenario also runs with
its mechanism switched off by configuration and shows the opposite outcome."""

from __future__ import annotations

import json

import pytest
from fakellm import call, calls, say, tool_msgs
from test_verification import CHECK, READ, RIGHT, WRONG, commit, configure

pytestmark = pytest.mark.core

REVIEW = "[completion check before your final answer]"


def run_json(yuyao, env, server, prompt: str, *flags: str) -> dict:
    proc = yuyao(
        "-p", prompt, "--mode", "yolo", "--output-format", "json", *flags, env=env(server)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------------
# The check given to the model before its final answer


@pytest.mark.parametrize("review", [True, False])
def test_an_unclean_check_goes_to_the_model_before_its_final_answer(
    fake_llm, yuyao, env, repo, yuyao_home, review
):
    (repo / "util.py").write_text("X = 1\n")
    commit(repo)
    configure(yuyao_home, **{"completion.review": review})
    server = fake_llm(
        [
            calls([READ, ("write", {"file_path": "calc.py", "content": RIGHT})], content="Adding."),
            say("Done: sub() is added and documented."),
            say("I added sub() to calc.py; util.py was not changed, so it is not documented."),
        ]
    )
    doc = run_json(yuyao, env, server, "Add sub to calc.py and document it in util.py")
    c = doc["completion"]
    assert c["requested_untouched"] == ["util.py"], c
    if not review:
        # No extra call: the first final answer stands, and the check contradicts it.
        assert len(server.requests) == 2 and not server.exhausted
        assert doc["result"].startswith("Done: sub() is added")
        assert "util.py named in the request was not changed" in c["contradiction"]
        assert REVIEW not in server.user_text(-1)
        return
    # The request after the first final answer carries the check, appended at the end.
    assert len(server.requests) == 3 and not server.exhausted
    last = server.messages(2)[-1]
    assert last["role"] == "user" and last["content"].startswith(REVIEW), last
    assert "named in the request but not changed: util.py" in last["content"]
    assert "says the work is done, but it is not" in last["content"]
    # The earlier messages are those of the request before (append-only).
    assert server.messages(2)[: len(server.messages(1))] == server.messages(1)
    # The restated answer is the final answer; it admits what the facts say.
    assert doc["result"].startswith("I added sub() to calc.py; util.py was not changed")
    assert c["reviewed_by_model"] is True and c["contradiction"] is None


def test_a_restated_answer_still_claiming_done_is_contradicted(fake_llm, yuyao, env, repo):
    (repo / "util.py").write_text("X = 1\n")
    commit(repo)
    server = fake_llm(
        [
            calls([READ, ("write", {"file_path": "calc.py", "content": RIGHT})], content="Adding."),
            say("Done."),
            say("Done, everything is complete."),
        ]
    )
    doc = run_json(yuyao, env, server, "Add sub to calc.py and document it in util.py")
    assert len(server.requests) == 3  # one extra call, never a second one
    assert "util.py named in the request was not changed" in doc["completion"]["contradiction"]
    assert "[completion check: not clean]" in doc["result"]


def test_a_clean_turn_costs_no_extra_call(fake_llm, yuyao, env, repo):
    (repo / "check_calc.py").write_text(CHECK)
    (repo / "AGENTS.md").write_text("- test: `python3 check_calc.py`\n")
    commit(repo)
    server = fake_llm(
        [
            calls([READ, ("write", {"file_path": "calc.py", "content": RIGHT})], content="Adding."),
            say("Done: sub() is added; check_calc.py passes."),
        ]
    )
    doc = run_json(yuyao, env, server, "Add sub to calc.py")
    c = doc["completion"]
    assert c["clean"] is True and c["verified"] is True, c
    assert len(server.requests) == 2 and REVIEW not in server.user_text(-1)
    assert c["reviewed_by_model"] is False


# ---------------------------------------------------------------------------------------------
# Files changed by shell commands


SED = "sed -i '6s/a + b/a - b/' calc.py"
HEREDOC = "python3 - <<'EOF'\nimport pathlib\np = pathlib.Path('calc.py')\np.write_text(p.read_text().replace('return a + b\\n', 'return a - b\\n').replace('def add(a, b):\\n    return a - b', 'def add(a, b):\\n    return a + b'))\nEOF"  # noqa: E501
ECHO = "printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef sub(a, b):\\n    return a - b\\n' > calc.py"


@pytest.mark.parametrize("track", [True, False])
@pytest.mark.parametrize("command", [SED, HEREDOC, ECHO], ids=["sed-i", "python-heredoc", "echo"])
def test_a_bash_only_edit_is_in_the_diffstat_and_verified(
    fake_llm, yuyao, env, repo, yuyao_home, track, command
):
    (repo / "calc.py").write_text(WRONG)
    (repo / "check_calc.py").write_text(CHECK)
    (repo / "AGENTS.md").write_text("- test: `python3 check_calc.py`\n")
    commit(repo)
    configure(yuyao_home, **{"completion.track_commands": track})
    server = fake_llm([call("bash", command=command, description="Fix sub"), say("Fixed sub.")])
    doc = run_json(yuyao, env, server, "Fix sub in calc.py")
    assert (repo / "calc.py").read_text() == RIGHT
    c = doc["completion"]
    assert [x["command"] for x in c["commands"]] == [command]
    if not track:
        # The command's edit is invisible: no diffstat, no verification.
        assert c["files_changed"] == [] and c["verification"] is None, c
        return
    assert c["files_changed"] == [
        {
            "path": "calc.py",
            "added": 1,
            "removed": 1,
            "created": False,
            "deleted": False,
            "by_command": True,
        }
    ], c
    assert c["verification"]["command"] == "python3 check_calc.py" and c["verified"] is True
    assert len(server.requests) == 2  # clean: no extra call


def test_read_only_commands_and_build_caches_are_not_edits(fake_llm, yuyao, env, repo):
    (repo / "AGENTS.md").write_text("- test: `echo VERIFIED`\n")
    commit(repo)
    server = fake_llm(
        [
            call("bash", command="cat calc.py && ls", description="Look"),
            # Not read-only, but it only leaves Python bytecode behind.
            call(
                "bash",
                command="python3 -c \"import py_compile; py_compile.compile('calc.py')\"",
                description="Compile",
            ),
            say("calc.py has add()."),
        ]
    )
    doc = run_json(yuyao, env, server, "What does calc.py offer?")
    c = doc["completion"]
    assert (repo / "__pycache__").is_dir()
    assert c["files_changed"] == [] and c["verification"] is None, c


@pytest.mark.parametrize("track", [True, False])
def test_a_command_editing_outside_the_declared_scope_is_caught(
    api, fake_llm, repo, yuyao_home, track
):
    """The guard cannot read what a script writes before it runs; the stamp sees it after:
    the model is told at once, and the check lists it."""
    (yuyao_home / "config.toml").write_text(
        f"[completion]\ntrack_commands = {str(track).lower()}\nreview = false\n"
    )
    sneaky = "python3 - <<'EOF'\nopen('settings_local.py', 'w').write('DEBUG = True\\n')\nEOF"
    server = fake_llm(
        [
            call("declare-scope", files=["calc.py"], behaviours="add sub()"),
            call("bash", command=sneaky, description="Tweak settings"),
            calls([("write", {"file_path": "calc.py", "content": RIGHT})], content="Adding sub."),
            say("Added sub()."),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("Add sub to calc.py")
    assert (repo / "settings_local.py").is_file()  # it ran: yolo, and the guard saw no path
    told = tool_msgs(server.body(2))[-1]["content"]
    c = s.completion
    assert c["scope"] == ["calc.py"], c
    if not track:
        assert "outside the scope" not in told
        assert c["outside_scope"] == [], c
        return
    assert "changed files outside the scope declared for this turn: settings_local.py" in told
    assert c["outside_scope"] == ["settings_local.py"], c
    assert "changed outside the declared scope: settings_local.py" in c["problems"]


# ---------------------------------------------------------------------------------------------
# Requested files are paths the user typed, not prose words


def test_requested_files_are_paths_not_references_or_prose(api, fake_llm, repo):
    (repo / "NOTES.md").write_text("sub must subtract\n")
    (repo / "test").write_text("#!/bin/sh\n")
    commit(repo)
    server = fake_llm(
        [
            calls([READ, ("write", {"file_path": "calc.py", "content": RIGHT})], content="Adding."),
            say("Done."),
            say("sub() is in calc.py; helpers/extra.py was not created."),
        ]
    )
    s = api(server, mode="yolo")
    s.chat(
        "Fix sub in calc.py as described in NOTES.md and add a test, "
        "then create `helpers/extra.py` for the helpers"
    )
    c = s.completion
    # NOTES.md is a reference, `test` a prose word; the file to create is named.
    assert c["requested_untouched"] == ["helpers/extra.py"], c


def test_a_file_tool_write_between_commands_is_not_a_command_edit(fake_llm, yuyao, env, repo):
    """The stamp the last command left is brought up to date before the next one: a file
    tool's write in between is the file tool's, each command's edits are its own."""
    server = fake_llm(
        [
            call("bash", command="echo a > one.txt", description="One"),
            call("write", file_path="two.txt", content="b\n"),
            call("bash", command="echo c > three.txt && echo d >> one.txt", description="Three"),
            say("Wrote three files."),
        ]
    )
    doc = run_json(yuyao, env, server, "write one.txt, two.txt and three.txt")
    changed = {f["path"]: (f["by_command"], f["added"]) for f in doc["completion"]["files_changed"]}
    assert changed == {"one.txt": (True, 2), "two.txt": (False, 1), "three.txt": (True, 1)}


def test_stamping_the_work_tree_runs_no_repository_controlled_program(
    fake_llm, yuyao, env, repo, tmp_path
):
    """The work tree is the model's to write: its .git/config may name an fsmonitor, hooks
    or filters. Finding what a command changed reads the index with libgit2, never the git
    CLI, so none of them runs outside the sandbox."""
    marker = tmp_path / "ran"
    hostile = f"#!/bin/sh\ntouch {marker}\n"
    for hook in ("fsmonitor", "hooks/post-index-change", "hooks/pre-commit"):
        path = repo / ".git" / hook
        path.parent.mkdir(exist_ok=True)
        path.write_text(hostile)
        path.chmod(0o755)
    with (repo / ".git" / "config").open("a") as f:
        f.write(
            f"[core]\n\tfsmonitor = {repo / '.git' / 'fsmonitor'}\n\tuntrackedCache = true\n"
            f'[filter "x"]\n\tclean = touch {marker}\n\tsmudge = touch {marker}\n'
        )
    (repo / ".gitattributes").write_text("*.py filter=x\n")
    server = fake_llm(
        [call("bash", command=SED.replace("6s", "2s"), description="Edit"), say("ok")]
    )
    doc = run_json(yuyao, env, server, "Fix add in calc.py")
    assert [f["path"] for f in doc["completion"]["files_changed"]] == ["calc.py"]
    assert not marker.exists()
