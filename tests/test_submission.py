"""The headless contract's outcome: the `submission` in status.json applies byte for byte to a
clean clone, `Submitted` needs a real effect, every run says how it ended on stderr, and
run_agent.sh finds an installation wherever install.sh put it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RUN_AGENT, git, run
from fakellm import FAKE_MODEL, call, say

pytestmark = pytest.mark.core

PROGRAM = "def add(a, b):\n    return a + b\n"  # the body of the repo fixture's calc.py
CACHES = ("__pycache__", ".pytest_cache", ".mypy_cache", "node_modules/.cache", "target/", ".pyc")


def run_headless(run_agent, env, repo, tmp_path, server, task, budget=None, extra_env=None):
    task_file = tmp_path / "task.txt"
    task_file.write_text(task)
    budget_file = tmp_path / "budget.json"
    budget_file.write_text(json.dumps(budget or {"max_steps": 10}))
    out = tmp_path / "out"
    proc = run_agent(
        "--task-file",
        str(task_file),
        "--repo-dir",
        str(repo),
        "--model-base-url",
        server.url,
        "--model-name",
        FAKE_MODEL,
        "--model-api-key",
        server.api_key,
        "--budget-file",
        str(budget_file),
        "--out-dir",
        str(out),
        env=env(**(extra_env or {})),
    )
    status_file = out / "status.json"
    assert status_file.is_file(), f"no status.json\n{proc.stdout}\n{proc.stderr}"
    return proc, json.loads(status_file.read_text())


def summary_lines(proc) -> list[str]:
    """The run's closing line(s) on stderr (status, steps, cost, error)."""
    return [line for line in proc.stderr.splitlines() if "steps" in line and "cost" in line]


# ---------------------------------------------------------------------------------------------
# The submission applies


def _commit_fixture_files(repo: Path) -> None:
    (repo / "script.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "old_name.txt").write_text("a file that is only renamed\n" * 5)
    (repo / "gone.txt").write_text("this file is deleted\n")
    (repo / "logo.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (repo / "big.bin").write_bytes(bytes((i * 7919) % 251 for i in range(200_000)))
    (repo / "latin1_old.txt").write_bytes(b"na\xefve caf\xe9\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "fixture files")


# Every kind of change a run can make, made by the agent's own bash call; then the test step
# of a typical run (an import that would write __pycache__) and the caches tools leave behind.
CHANGES = r"""
set -e
printf 'new\n' > new.txt
rm gone.txt
chmod +x script.sh
mv old_name.txt new_name.txt
printf 'def add(a, b):\n    return a + b  # no newline at the end' > calc.py
printf 'caf\xe9 cr\xe8me br\xfbl\xe9e\n' > latin1.txt
printf 'na\xefve caf\xe9 \xa9 2024\n' > latin1_old.txt
python3 - <<'EOF'
import os
with open("logo.bin", "r+b") as f:
    f.seek(20)
    f.write(b"\x00\xff\x00\xfe changed")
data = bytearray(open("big.bin", "rb").read())
data[100_000:100_010] = b"\x00" * 10
open("big.bin", "wb").write(bytes(data))
open("new.bin", "wb").write(bytes(range(256)) * 4)
os.makedirs("pkg", exist_ok=True)
open("pkg/util.py", "w").write("VALUE = 42\n")
EOF
python3 -c 'import sys; sys.path.insert(0, "pkg"); import util; print(util.VALUE)'
echo "bytecode: ${PYTHONDONTWRITEBYTECODE:-written}"
mkdir -p .pytest_cache/v/cache && printf '{}' > .pytest_cache/v/cache/lastfailed
mkdir -p .mypy_cache/3.11 && printf '\x00\x01' > .mypy_cache/3.11/m.data.json
mkdir -p node_modules/.cache/babel && printf 'x' > node_modules/.cache/babel/y
mkdir -p lib/__pycache__ && printf '\x00\x0d\x0d\x0a' > lib/__pycache__/m.cpython-311.pyc
printf '\x00\x0d' > stray.pyc
printf '[package]\nname = "demo"\nversion = "0.1.0"\n' > Cargo.toml
mkdir -p target/debug && printf '\x7fELF\x00\x00' > target/debug/demo && printf 'Signature: 8a477f597d28d172789f06886806bc55\n' > target/CACHEDIR.TAG
"""


def _work_tree(root: Path) -> dict[str, tuple[bytes, bool]]:
    """path -> (bytes, executable) of every file outside .git."""
    files = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] == ".git" or not path.is_file():
            continue
        files[rel] = (path.read_bytes(), os.access(path, os.X_OK))
    return files


def _is_cache(rel: str) -> bool:
    parts = rel.split("/")
    return (
        "__pycache__" in parts
        or rel.endswith(".pyc")
        or parts[0] in (".pytest_cache", ".mypy_cache", "target")
        or rel.startswith("node_modules/.cache/")
    )


def test_submission_applies_to_a_clean_clone_byte_for_byte(
    fake_llm, run_agent, env, repo, tmp_path
):
    _commit_fixture_files(repo)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    server = fake_llm([call("bash", command=CHANGES), say("Made every change and ran util.")])
    # Whatever the caller's environment says, the run's tools write no bytecode.
    no_setting = {"PYTHONDONTWRITEBYTECODE": None}
    proc, status = run_headless(
        run_agent, env, repo, tmp_path, server, "Make the changes.", extra_env=no_setting
    )
    assert proc.returncode == 0, proc.stderr
    assert status["exit_status"] == "Submitted", status
    output = server.tool_results(1).popitem()[1]
    assert "42" in output and "bytecode: 1" in output, output
    # The run's test step wrote no bytecode into the repository.
    assert not (repo / "pkg" / "__pycache__").exists(), "tool processes must not write .pyc"

    patch = status["submission"]
    for cache in CACHES:
        assert cache not in patch, f"{cache} in the submission:\n{patch[:3000]}"
    patch_file = tmp_path / "submission.diff"
    patch_file.write_text(patch)
    check = subprocess.run(
        ["git", "apply", "--check", str(patch_file)], cwd=clone, capture_output=True, text=True
    )
    assert check.returncode == 0, f"{check.stderr}\n{patch[:4000]}"
    subprocess.run(["git", "apply", str(patch_file)], cwd=clone, check=True)

    expected = {rel: v for rel, v in _work_tree(repo).items() if not _is_cache(rel)}
    got = _work_tree(clone)
    assert sorted(got) == sorted(expected)
    for rel, (data, executable) in expected.items():
        assert got[rel][0] == data, f"{rel}: the applied bytes differ"
        assert got[rel][1] == executable, f"{rel}: the mode differs"
    assert got["script.sh"][1], "the mode change is in the submission"
    assert got["calc.py"][0].endswith(b"# no newline at the end")
    assert got["latin1.txt"][0] == b"caf\xe9 cr\xe8me br\xfbl\xe9e\n"
    assert "rename from old_name.txt" in patch and "rename to new_name.txt" in patch
    assert "GIT binary patch" in patch


def test_an_unchanged_repository_submits_an_empty_diff(fake_llm, run_agent, env, repo, tmp_path):
    """A question answered from the code: no change, an empty submission, error null."""
    server = fake_llm(
        [call("read", file_path=str(repo / "calc.py")), say("add(a, b) returns a + b.")]
    )
    proc, status = run_headless(
        run_agent, env, repo, tmp_path, server, "What does add() in calc.py return?"
    )
    assert proc.returncode == 0, proc.stderr
    assert status["exit_status"] == "Submitted", status
    assert status["submission"] == ""
    assert "error" in status and status["error"] is None, status


# ---------------------------------------------------------------------------------------------
# Submitted needs a real effect


def test_a_run_that_only_asked_the_user_is_not_submitted(fake_llm, run_agent, env, repo, tmp_path):
    server = fake_llm(
        [
            call("ask-user", question="Which greeting?", options=["hello", "hi"]),
            say("Nobody answered which greeting to use, so I am leaving the repository as it is."),
        ]
    )
    proc, status = run_headless(
        run_agent, env, repo, tmp_path, server, "Create hello.txt containing a greeting."
    )
    assert status["exit_status"] == "NotSubmitted", status
    assert proc.returncode == 1
    assert status["error"], status
    assert status["submission"] == ""
    lines = summary_lines(proc)
    assert len(lines) == 1 and "NotSubmitted" in lines[0] and status["error"] in lines[0], (
        proc.stderr
    )


def test_a_change_task_with_no_change_is_not_submitted(fake_llm, run_agent, env, repo, tmp_path):
    """Reading files and claiming the work is done does not make a change."""
    (repo / "notes.txt").write_text("a change the user made before the run\n")
    server = fake_llm(
        [
            call("read", file_path=str(repo / "calc.py")),
            say("I created hello.txt containing the word hello."),
            say("I created hello.txt containing the word hello."),  # restated with the check
        ]
    )
    proc, status = run_headless(
        run_agent, env, repo, tmp_path, server, "Create hello.txt containing the word hello."
    )
    assert status["exit_status"] == "NotSubmitted", status
    assert proc.returncode == 1
    assert "nothing was changed" in status["error"], status
    # The claim was contradicted in the check (the model saw it once before answering).
    assert "says the work is done, but it is not" in (status["completion"]["contradiction"] or "")


def test_a_submitted_run_says_so_on_stderr(fake_llm, run_agent, env, repo, tmp_path):
    server = fake_llm(
        [call("write", file_path=str(repo / "hello.txt"), content="hello\n"), say("Created.")],
        usage={"prompt_tokens": 1000, "completion_tokens": 100},
    )
    prices = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
    proc, status = run_headless(
        run_agent,
        env,
        repo,
        tmp_path,
        server,
        "Create hello.txt containing the word hello.",
        extra_env={"D2A_MODEL_COST": json.dumps(prices)},
    )
    assert proc.returncode == 0, proc.stderr
    assert status["exit_status"] == "Submitted" and status["error"] is None, status
    assert "+hello" in status["submission"]
    lines = summary_lines(proc)
    assert len(lines) == 1, proc.stderr
    assert "Submitted" in lines[0] and f"{status['steps']} steps" in lines[0], lines
    assert f"{status['cost_usd']:.4f}" in lines[0], lines


def test_a_failed_run_says_why_on_stderr(run_agent, env, repo, tmp_path, dead_url):
    class Dead:
        url = dead_url
        api_key = "k"

    proc, status = run_headless(
        run_agent, env, repo, tmp_path, Dead, "Create hello.txt.", budget={"max_steps": 2}
    )
    assert proc.returncode == 1
    assert status["error"], status
    lines = summary_lines(proc)
    assert len(lines) == 1 and status["exit_status"] in lines[0], proc.stderr


# ---------------------------------------------------------------------------------------------
# run_agent.sh finds the installation


def _fake_install(venv: Path, marker: Path) -> None:
    """A venv whose python records that it was chosen, then is this test's interpreter."""
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$0" >> "{marker}"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)


@pytest.mark.parametrize("where", ["active", "yuyao_home", "home", "checkout"])
def test_run_agent_finds_the_installation(tmp_path, env, where):
    """Active venv, then $YUYAO_HOME/venv, then ~/.yuyao/venv, then the checkout's .venv."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(RUN_AGENT, checkout / "run_agent.sh")
    shutil.copy(RUN_AGENT.parent / "entry.py", checkout / "entry.py")
    marker = tmp_path / "chosen"
    places = {
        "active": tmp_path / "active-venv",
        "yuyao_home": tmp_path / "yuyao-home-2" / "venv",
        "home": tmp_path / "home" / ".yuyao" / "venv",
        "checkout": checkout / ".venv",
    }
    order = list(places)
    for name in order[order.index(where) :]:
        _fake_install(places[name], marker)
    (tmp_path / "home").mkdir(exist_ok=True)
    e = env(
        VIRTUAL_ENV=str(places["active"]),
        YUYAO_HOME=str(places["yuyao_home"].parent),
        HOME=str(tmp_path / "home"),
        PATH="/usr/bin:/bin",
    )
    result = run(["bash", str(checkout / "run_agent.sh"), "--help"], env=e, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "usage: run_agent.sh" in result.stdout
    chosen = marker.read_text().splitlines()
    assert chosen and chosen[-1] == str(places[where] / "bin" / "python"), chosen


def test_run_agent_without_an_installation_says_where_it_looked(tmp_path, env):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(RUN_AGENT, checkout / "run_agent.sh")
    shutil.copy(RUN_AGENT.parent / "entry.py", checkout / "entry.py")
    (tmp_path / "home").mkdir()
    e = env(
        YUYAO_HOME=str(tmp_path / "nowhere"),
        HOME=str(tmp_path / "home"),
        PATH="/usr/bin:/bin",
        VIRTUAL_ENV=None,
    )
    result = run(["bash", str(checkout / "run_agent.sh"), "--help"], env=e, cwd=tmp_path)
    assert result.returncode == 1, result
    assert "install.sh" in result.stderr, result.stderr
    assert str(tmp_path / "nowhere" / "venv") in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
