"""Shared fixtures: a scripted model server, an isolated YUYAO_HOME, a toy git repository and
runners for the public entry points (``yuyao``, ``run_agent.sh``).

Tests that need the compiled core carry ``pytestmark = pytest.mark.core``; they are skipped
when ``import yuyao._core`` fails, unless ``YUYAO_REQUIRE_CORE`` is set (CI sets it).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakellm import FAKE_MODEL, FakeLLM  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUN_AGENT = ROOT / "run_agent.sh"
API_KEY = "test-key-123"
TIMEOUT = 90

# What a tool result refusing an operation says, whatever the wording.
REFUSAL = re.compile(
    r"refus|denied|deny|not (allowed|permitted)|permission|blocked|read-only|plan mode|forbidden",
    re.IGNORECASE,
)


def _core_missing() -> str | None:
    try:
        import yuyao._core  # noqa: F401
    except ImportError as exc:
        return f"the compiled core yuyao._core is not importable ({exc})"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "core: needs the compiled extension yuyao._core")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("YUYAO_REQUIRE_CORE"):
        return
    reason = _core_missing()
    if reason:
        skip = pytest.mark.skip(reason=f"{reason}; set YUYAO_REQUIRE_CORE=1 to fail instead")
        for item in items:
            if "core" in item.keywords:
                item.add_marker(skip)


# ---------------------------------------------------------------------------------------------
# The model server


@pytest.fixture
def fake_llm():
    """``fake_llm(script, **options)`` -> a started FakeLLM that expects ``API_KEY``.

    At teardown every server is stopped and its requests must have been well-formed (§8).
    """
    servers: list[FakeLLM] = []

    def start(script=None, **options) -> FakeLLM:
        options.setdefault("api_key", API_KEY)
        server = FakeLLM(script, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    for server in servers:
        assert not server.errors, server.errors
        server.assert_well_formed()


@pytest.fixture
def dead_url() -> str:
    """A base URL on which nothing listens."""
    server = FakeLLM()
    url = server.url
    server.stop()
    return url


# ---------------------------------------------------------------------------------------------
# Environment and workspace


@pytest.fixture
def yuyao_home(tmp_path: Path) -> Path:
    home = tmp_path / "yuyao-home"
    home.mkdir()
    return home


@pytest.fixture
def env(yuyao_home: Path):
    """``env(server=None, **extra)`` -> a copy of os.environ for a subprocess.

    YUYAO_HOME is isolated, inherited D2A_MODEL_* are dropped, and when a server is given the
    D2A_MODEL_BASE_URL/NAME/API_KEY point at it. ``extra`` values are added (None removes).
    """

    def make(server: FakeLLM | None = None, **extra: str | None) -> dict[str, str]:
        e = {k: v for k, v in os.environ.items() if not k.startswith(("D2A_", "YUYAO_"))}
        e.update(
            YUYAO_HOME=str(yuyao_home),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{e.get('PATH', '')}",
            NO_COLOR="1",
            PYTHONUNBUFFERED="1",
        )
        if sys.prefix != sys.base_prefix:
            # run_agent.sh takes the active venv first: this build, not an installed yuyao.
            e["VIRTUAL_ENV"] = sys.prefix
        if server is not None:
            e.update(
                D2A_MODEL_BASE_URL=server.url,
                D2A_MODEL_NAME=FAKE_MODEL,
                D2A_MODEL_API_KEY=server.api_key or API_KEY,
            )
        for key, value in extra.items():
            if value is None:
                e.pop(key, None)
            else:
                e[key] = str(value)
        return e

    return make


@pytest.fixture
def use_env(monkeypatch, env):
    """``use_env(server=None, **extra)``: point this process's os.environ (for in-process
    agent_api sessions) at ``server``, exactly as ``env`` builds it for a subprocess."""

    def apply(server: FakeLLM | None = None, **extra: str | None) -> None:
        target = env(server, **extra)
        for key in set(os.environ) - set(target):
            monkeypatch.delenv(key)
        for key, value in target.items():
            monkeypatch.setenv(key, value)

    return apply


@pytest.fixture
def api(use_env, repo):
    """``api(server, **create_session_kwargs)`` -> an agent_api session in ``repo`` (closed
    at teardown)."""
    from yuyao.agent_api import create_session

    opened = []

    def open_session(server, **kwargs):
        use_env(server)
        kwargs.setdefault("cwd", str(repo))
        opened.append(create_session(**kwargs))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


@pytest.fixture
def api_env(use_env, dead_url):
    """``use_env`` for agent_api tests: with no server the model variables still point
    somewhere (a dead URL), since constructing a session must not need a live model."""

    def apply(server: FakeLLM | None = None, **extra: str | None) -> None:
        if server is None:
            extra = {
                "D2A_MODEL_BASE_URL": dead_url,
                "D2A_MODEL_NAME": FAKE_MODEL,
                "D2A_MODEL_API_KEY": "placeholder",
                **extra,
            }
        use_env(server, **extra)

    return apply


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with two committed files and a clean work tree."""
    path = tmp_path / "repo"
    path.mkdir()
    (path / "README.md").write_text("# toy\n")
    (path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(path, "init", "-q")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def git_status():
    """``git_status(repo)`` -> the set of ``git status --porcelain`` lines."""
    return lambda path: set(
        git(path, "status", "--porcelain", "--untracked-files=all").splitlines()
    )


# ---------------------------------------------------------------------------------------------
# Running the entry points


def run(cmd: list[str], *, env: dict, cwd: Path, timeout: float = TIMEOUT, stdin=None):
    """Run a command in its own process group; kill the group and fail on timeout."""
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{cmd} timed out after {timeout}s\nstdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def yuyao_command() -> list[str]:
    script = Path(sys.executable).parent / "yuyao"
    return [str(script)] if script.exists() else [sys.executable, "-m", "yuyao"]


@pytest.fixture
def yuyao(repo: Path):
    """``yuyao(*args, env=..., cwd=repo, timeout=...)`` -> CompletedProcess of the CLI."""

    def run_yuyao(*args: str, env: dict, cwd: Path = repo, **kw) -> subprocess.CompletedProcess:
        return run([*yuyao_command(), *args], env=env, cwd=cwd, **kw)

    return run_yuyao


@pytest.fixture
def python(repo: Path):
    """``python(code, *args, env=..., cwd=repo, stdin=None)`` -> CompletedProcess."""

    def run_python(code: str, *args: str, env: dict, cwd: Path = repo, **kw):
        return run([sys.executable, "-c", code, *args], env=env, cwd=cwd, **kw)

    return run_python


@pytest.fixture
def run_agent(tmp_path: Path):
    """``run_agent(*args, env=..., timeout=...)`` -> CompletedProcess of ``run_agent.sh``."""

    def run_script(*args: str, env: dict, **kw) -> subprocess.CompletedProcess:
        return run(["bash", str(RUN_AGENT), *args], env=env, cwd=tmp_path, **kw)

    return run_script


@pytest.fixture
def expect_refused():
    """``expect_refused(server, call_id)``: the tool result sent back for that call refuses."""

    def check(server: FakeLLM, call_id: str) -> str:
        result = server.tool_result(call_id)
        assert result is not None, f"no tool result for {call_id} reached the model"
        assert REFUSAL.search(result), f"tool result for {call_id} does not refuse: {result!r}"
        return result

    return check
