"""`--worktree[=name]` / `-w`: the session works in a new git worktree under
`<repo>/.yuyao/worktrees/<name>` on branch `yuyao/<name>`; the main work tree is never touched.
Headless: the worktree is kept (changes committed on its branch) and its path printed; the TUI
asks keep / merge / remove. Outside git: a clear error, exit 1."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
from conftest import git
from fakellm import call, say

pytestmark = pytest.mark.core


def tree_digest(root: Path) -> dict[str, str]:
    """Every file of the main work tree (not .git) with the hash of its bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".git", ".yuyao") or not path.is_file():
            continue
        out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


EDIT = "def sub(a, b):\n    return a - b\n"


def test_headless_worktree_leaves_the_main_tree_byte_identical(fake_llm, env, repo, yuyao):
    before = tree_digest(repo)
    head_before = git(repo, "rev-parse", "HEAD")
    server = fake_llm(
        [
            call("write", file_path="sub.py", content=EDIT),
            call("bash", command="echo made > new.txt"),
            say("Added sub() and new.txt."),
        ]
    )
    result = yuyao("--worktree=feat", "-p", "add sub.py", "--mode", "yolo", env=env(server))
    assert result.returncode == 0, result.stderr
    wt = repo / ".yuyao" / "worktrees" / "feat"
    # The session worked in the worktree...
    assert (wt / "sub.py").read_text() == EDIT
    assert (wt / "new.txt").read_text() == "made\n"
    assert str(wt) in server.system_prompt(0)
    # ...the main tree is byte-identical, its status clean, HEAD where it was.
    assert tree_digest(repo) == before
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(repo, "rev-parse", "HEAD") == head_before
    # The change landed on yuyao/feat (committed), and the path is printed.
    assert git(repo, "show", "yuyao/feat:sub.py") == EDIT
    assert git(repo, "show", "yuyao/feat:new.txt") == "made\n"
    assert f"worktree kept: {wt}" in result.stderr
    assert "yuyao/feat" in result.stderr
    assert "Added sub()" in result.stdout


def test_outside_git_is_a_clear_error_exit_1(tmp_path, env, yuyao):
    plain = tmp_path / "plain"
    plain.mkdir()
    result = yuyao("-w", "-p", "anything", env=env(None), cwd=plain)
    assert result.returncode == 1
    assert "not inside a git repository" in result.stderr
    assert list(plain.iterdir()) == []


def test_bad_names_are_refused_and_taken_names_uniquified(fake_llm, env, repo, yuyao):
    for bad in ("../escape", "a/b", "..", ".hidden"):
        result = yuyao(f"--worktree={bad}", "-p", "x", env=env(None))
        assert result.returncode == 1, bad
        assert "invalid worktree name" in result.stderr, result.stderr
    assert not (repo.parent / "escape").exists()
    # An existing branch is never reused or moved: the new worktree gets another name.
    git(repo, "branch", "yuyao/taken")
    taken_commit = git(repo, "rev-parse", "yuyao/taken")
    server = fake_llm([call("write", file_path="x.txt", content="x\n"), say("Wrote x.txt.")])
    result = yuyao("--worktree=taken", "-p", "write x.txt", "--mode", "yolo", env=env(server))
    assert result.returncode == 0, result.stderr
    assert (repo / ".yuyao" / "worktrees" / "taken-2" / "x.txt").exists()
    assert git(repo, "rev-parse", "yuyao/taken") == taken_commit
    assert git(repo, "show", "yuyao/taken-2:x.txt") == "x\n"


def test_tui_exit_with_changes_asks_and_merge_lands_on_the_original_branch(fake_llm, env, repo):
    from test_tui import CTRL_D, Term

    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    server = fake_llm(
        [call("write", file_path="merged.txt", content="from the worktree\n"), say("ok")]
    )
    term = Term(
        [sys.executable, "-m", "yuyao", "--worktree=tui", "--mode", "yolo"], env(server), repo
    )
    try:
        term.wait_ready()
        term.line("write merged.txt")
        term.wait_for(r"ok")
        assert not (repo / "merged.txt").exists()  # still only in the worktree
        term.send(CTRL_D)
        term.wait_for(r"Keep, merge or remove\?")
        term.line("m")
        assert term.wait_exit() == 0
        assert f"merged yuyao/tui into {branch}" in term.transcript()
    finally:
        term.close()
    assert (repo / "merged.txt").read_text() == "from the worktree\n"
    assert git(repo, "status", "--porcelain") == ""
    assert "merged.txt" in git(repo, "show", "--stat", "HEAD")


def test_tui_exit_without_changes_removes_the_worktree(fake_llm, env, repo):
    from test_tui import CTRL_D, Term

    term = Term([sys.executable, "-m", "yuyao", "--worktree=idle"], env(fake_llm([])), repo)
    try:
        term.wait_ready()
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert not (repo / ".yuyao" / "worktrees" / "idle").exists()
    assert git(repo, "branch", "--list", "yuyao/idle") == ""


def test_agent_api_worktree_is_kept_with_its_path(fake_llm, api, repo, capsys):
    server = fake_llm([call("write", file_path="api.txt", content="api\n"), say("Wrote api.txt.")])
    session = api(server, worktree="api", mode="yolo")
    info = session.worktree
    assert info["branch"] == "yuyao/api"
    assert session.cwd == info["path"]
    session.chat("write api.txt")
    session.close()
    assert f"worktree kept: {info['path']}" in capsys.readouterr().err
    assert Path(info["path"], "api.txt").read_text() == "api\n"
    assert git(repo, "show", "yuyao/api:api.txt") == "api\n"
    assert not (repo / "api.txt").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_repository_without_a_commit_is_a_clear_error(tmp_path, env, yuyao):
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    result = yuyao("--worktree=x", "-p", "anything", env=env(None), cwd=empty)
    assert result.returncode == 1
    assert "no commit yet" in result.stderr
    assert git(empty, "branch", "--list") == ""


def test_tui_merge_conflict_is_reported_and_nothing_is_forced(fake_llm, env, repo):
    from test_tui import CTRL_D, Term

    server = fake_llm([call("bash", command="echo theirs > README.md"), say("changed")])
    term = Term(
        [sys.executable, "-m", "yuyao", "--worktree=clash", "--mode", "yolo"], env(server), repo
    )
    try:
        term.wait_ready()
        term.line("change the readme")
        term.wait_for(r"changed")
        # Meanwhile the main branch changes the same file.
        (repo / "README.md").write_text("ours\n")
        git(repo, "commit", "-qam", "ours")
        term.send(CTRL_D)
        term.wait_for(r"Keep, merge or remove\?")
        term.line("m")
        assert term.wait_exit() == 0
        out = term.transcript()
        assert "merge conflict in README.md" in out
        assert "worktree kept" in out
    finally:
        term.close()
    assert (repo / "README.md").read_text() == "ours\n"
    assert git(repo, "status", "--porcelain") == ""
    wt = repo / ".yuyao" / "worktrees" / "clash"
    assert (wt / "README.md").read_text() == "theirs\n"
    assert git(repo, "show", "yuyao/clash:README.md") == "theirs\n"


def test_tui_remove_deletes_the_worktree_and_its_branch(fake_llm, env, repo):
    from test_tui import CTRL_D, Term

    server = fake_llm([call("write", file_path="tmp.txt", content="t\n"), say("wrote")])
    term = Term(
        [sys.executable, "-m", "yuyao", "--worktree=gone", "--mode", "yolo"], env(server), repo
    )
    try:
        term.wait_ready()
        term.line("write tmp.txt")
        term.wait_for(r"wrote")
        term.send(CTRL_D)
        term.wait_for(r"Keep, merge or remove\?")
        term.line("r")
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert not (repo / ".yuyao" / "worktrees" / "gone").exists()
    assert git(repo, "branch", "--list", "yuyao/gone") == ""
    assert not (repo / "tmp.txt").exists()
    assert git(repo, "worktree", "list").count("\n") == 1
