"""`--auto-commit` (seed 002 §4): one git commit per batch of the agent's file changes, holding
only those files; the user's own changes are never committed; `/undo` reverts with a commit;
outside git one warning and no commits. Through `-p` and agent_api."""

from __future__ import annotations

import pytest
from conftest import git
from fakellm import calls, say

pytestmark = pytest.mark.core


def log(repo) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def two_batches(repo):
    return [
        calls([("read", {"file_path": str(repo / "calc.py")}, "r1")]),
        calls(
            [
                (
                    "edit",
                    {"file_path": "calc.py", "old_string": "a + b", "new_string": "b + a"},
                    "e1",
                )
            ],
            content="Swap the operands in add\nbecause the test wants it",
        ),
        calls(
            [
                ("write", {"file_path": "notes.txt", "content": "notes\n"}, "w1"),
                ("write", {"file_path": "more.txt", "content": "more\n"}, "w2"),
            ],
            content="Write the notes files",
        ),
        say("Swapped the operands and wrote notes.txt and more.txt."),
    ]


def test_one_commit_per_batch_and_user_changes_stay_uncommitted(
    fake_llm, yuyao, env, repo, git_status
):
    (repo / "README.md").write_text("# toy\nuser's own edit\n")  # unrelated, uncommitted
    (repo / "staged.txt").write_text("staged by the user\n")
    git(repo, "add", "staged.txt")
    server = fake_llm(two_batches(repo))
    proc = yuyao("-p", "do it", "--yolo", "--auto-commit", env=env(server))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert log(repo) == ["Write the notes files", "Swap the operands in add", "initial"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD~1").split() == ["calc.py"]
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == [
        "more.txt",
        "notes.txt",
    ]
    body = git(repo, "log", "-1", "--format=%b")
    assert "- notes.txt" in body and "- more.txt" in body
    # The user's edit and the user's staged file are still theirs, uncommitted.
    assert git_status(repo) == {" M README.md", "A  staged.txt"}
    assert "b + a" in git(repo, "show", "HEAD:calc.py")


def test_a_file_the_user_had_changed_is_left_out(fake_llm, yuyao, env, repo, git_status):
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b  # mine\n")
    server = fake_llm(two_batches(repo))
    proc = yuyao("-p", "do it", "--yolo", "--auto-commit", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert log(repo) == ["Write the notes files", "initial"]
    assert "calc.py" in proc.stderr and "uncommitted changes" in proc.stderr
    assert " M calc.py" in git_status(repo)


def test_without_the_flag_nothing_is_committed(fake_llm, yuyao, env, repo):
    proc = yuyao("-p", "do it", "--yolo", env=env(fake_llm(two_batches(repo))))
    assert proc.returncode == 0, proc.stderr
    assert log(repo) == ["initial"]


def test_config_key_turns_it_on(fake_llm, yuyao, env, repo):
    server = fake_llm(two_batches(repo))
    assert yuyao("config", "set", "git.auto_commit", "true", env=env(server)).returncode == 0
    proc = yuyao("-p", "do it", "--yolo", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert len(log(repo)) == 3


def test_outside_git_one_warning_no_commit(fake_llm, yuyao, env, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    server = fake_llm(two_batches(plain))
    proc = yuyao("-p", "do it", "--yolo", "--auto-commit", env=env(server), cwd=plain)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("not in a git work tree") == 1
    assert not (plain / ".git").exists()
    assert (plain / "notes.txt").exists()


def test_undo_reverts_with_a_new_commit(fake_llm, api, repo, git_status):
    server = fake_llm(two_batches(repo))
    session = api(server, mode="yolo", auto_commit=True)
    session.chat("do it")
    assert len(log(repo)) == 3
    report = session.dispatch("/undo")
    assert "reverts" in report
    assert log(repo)[0] == 'Revert "Write the notes files"'
    assert not (repo / "notes.txt").exists()
    assert git_status(repo) == set()  # the revert is committed: the tree is clean
