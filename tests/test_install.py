"""The README's two set-up commands, end to end.

install.sh: offline install into a fresh venv, the `yuyao` command, idempotency, yuyao's own venv
when no virtualenv is active (never the interpreter itself, even a writable one) with the link
in /usr/local/bin (root) or ~/.local/bin (a user), and the errors for a missing or too old
python3. The test command: its venv bootstrap on a PATH with only `python3` and no test tools.

The installs run with no network at all (a new network namespace via `unshare`), so they prove
that wheels/ + requirements.lock are enough. Skipped when wheels/ has no yuyao wheel, unless
YUYAO_REQUIRE_WHEEL is set (CI sets it: there a missing wheel is a failure).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL_SH = ROOT / "install.sh"
VERSION = (ROOT / "VERSION").read_text().strip()
INSTALL_TIMEOUT = 300


def _require_wheel() -> None:
    wheels = sorted((ROOT / "wheels").glob("yuyao-*.whl"))
    if wheels and (ROOT / "requirements.lock").is_file():
        return
    reason = "no yuyao wheel in wheels/ (or no requirements.lock); run scripts/build-wheels.sh"
    if os.environ.get("YUYAO_REQUIRE_WHEEL"):
        pytest.fail(reason + " (YUYAO_REQUIRE_WHEEL is set)")
    pytest.skip(reason)


def _offline_prefix() -> list[str]:
    """A command prefix that runs its command without any network, or skip the test."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not available: cannot run install.sh without network")
    # As root a plain new net namespace works; unprivileged users need a user namespace (-r).
    for flags in (["--net"], ["-r", "--net"]):
        probe = subprocess.run([unshare, *flags, "true"], capture_output=True)
        if probe.returncode == 0:
            return [unshare, *flags]
    pytest.skip("unshare cannot create a network namespace here (not permitted)")


def _clean_env(home: Path) -> dict[str, str]:
    """The caller's environment minus anything that would steer install.sh or pip."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "YUYAO_", "PYTHON", "CONDA"))
        and k not in ("VIRTUAL_ENV", "HOME")
    }
    env["HOME"] = str(home)  # keep ~/.yuyao and ~/.local of the test inside tmp
    return env


def _run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: int = INSTALL_TIMEOUT):
    return subprocess.run(
        cmd,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


def _final_line(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.strip()]
    return re.sub(r"\x1b\[[0-9;]*m", "", lines[-1]) if lines else ""


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A new venv (with pip) plus an environment in which it is the active one."""
    _require_wheel()
    base = tmp_path_factory.mktemp("install")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=INSTALL_TIMEOUT)
    home = base / "home"
    home.mkdir()
    env = _clean_env(home)
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv, env, base


@pytest.fixture(scope="module")
def installed(fresh_venv):
    """install.sh run once, offline, into the fresh venv (from another cwd than the repo)."""
    venv, env, base = fresh_venv
    proc = _run([*_offline_prefix(), "bash", str(INSTALL_SH)], env, cwd=base)
    assert proc.returncode == 0, _explain(proc)
    return venv, env, base, proc


def test_install_offline_into_active_venv(installed):
    venv, _env, _base, proc = installed
    assert _final_line(proc.stdout) == f"yuyao {VERSION} installed: {venv / 'bin' / 'yuyao'}", (
        _explain(proc)
    )
    # The determinate progress bar counts packages: "k/n" up to "n/n".
    counts = re.findall(r"\] (\d+)/(\d+) ", proc.stdout)
    assert counts, _explain(proc)
    n = int(counts[-1][1])
    assert counts[-1] == (str(n), str(n)) and n >= 2, _explain(proc)


def test_yuyao_command_prints_version(installed):
    venv, env, base, _proc = installed
    proc = _run(
        [*_offline_prefix(), str(venv / "bin" / "yuyao"), "--version"], env, cwd=base, timeout=60
    )
    assert proc.returncode == 0, _explain(proc)
    assert proc.stdout.strip().splitlines()[0] == f"yuyao {VERSION}", _explain(proc)


def test_yuyao_command_is_on_path(installed):
    venv, env, _base, _proc = installed
    assert shutil.which("yuyao", path=env["PATH"]) == str(venv / "bin" / "yuyao")


def test_import_yuyao_and_agent_api(installed):
    venv, env, base, _proc = installed
    python = str(venv / "bin" / "python")
    proc = _run(
        [*_offline_prefix(), python, "-c", "import yuyao, yuyao._core"], env, cwd=base, timeout=60
    )
    assert proc.returncode == 0, _explain(proc)
    # The harness contract (spec 0.1.2): `python3 -c "import yuyao.agent_api"` in the venv.
    proc = _run(
        [*_offline_prefix(), python, "-c", "import yuyao.agent_api"], env, cwd=base, timeout=60
    )
    assert proc.returncode == 0, _explain(proc)


def test_install_is_idempotent(installed):
    venv, env, base, _first = installed
    proc = _run([*_offline_prefix(), "bash", str(INSTALL_SH)], env, cwd=base)
    assert proc.returncode == 0, _explain(proc)
    assert "already installed" in proc.stdout, _explain(proc)
    assert _final_line(proc.stdout) == f"yuyao {VERSION} installed: {venv / 'bin' / 'yuyao'}", (
        _explain(proc)
    )
    proc = _run([str(venv / "bin" / "yuyao"), "--version"], env, cwd=base, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[0] == f"yuyao {VERSION}", (
        _explain(proc)
    )


def _path_without_python(tmp_path: Path) -> str:
    """A PATH dir with every usual command (bash, coreutils...) except any python*."""
    bindir = tmp_path / "bin-no-python"
    bindir.mkdir()
    for d in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if not os.path.isdir(d):
            continue
        for entry in os.listdir(d):
            target = bindir / entry
            if entry.startswith("python") or target.exists() or target.is_symlink():
                continue
            target.symlink_to(os.path.join(d, entry))
    return str(bindir)


def test_fails_clearly_when_python3_too_old(tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()
    py = fake / "python3"
    # Answers like a Python 3.8 for both `--version` and `-c ...` (what install.sh asks).
    py.write_text(
        '#!/bin/sh\ncase "$1" in --version|-V) echo "Python 3.8.10";; *) echo "3.8.10";; esac\n'
    )
    py.chmod(0o755)
    env = _clean_env(tmp_path)
    env["PATH"] = f"{fake}{os.pathsep}{_path_without_python(tmp_path)}"
    proc = _run(["bash", str(INSTALL_SH)], env, cwd=tmp_path, timeout=60)
    assert proc.returncode != 0, _explain(proc)
    assert "3.8" in proc.stderr and "3.9" in proc.stderr, _explain(proc)
    assert "installed:" not in proc.stdout


def test_fails_clearly_when_python3_missing(tmp_path):
    env = _clean_env(tmp_path)
    env["PATH"] = _path_without_python(tmp_path)
    proc = _run(["bash", str(INSTALL_SH)], env, cwd=tmp_path, timeout=60)
    assert proc.returncode != 0, _explain(proc)
    assert "python3" in proc.stderr and "not found" in proc.stderr, _explain(proc)
    assert "installed:" not in proc.stdout


# ---------------------------------------------------------------------------------------------
# The commands exactly as README.md gives them


def _readme_command(section: str) -> str:
    """The one command line of the first ```bash block under `## <section>` in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    part = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert part, f"README.md has no '## {section}' section"
    block = re.search(r"```bash\n(.*?)```", part.group(1), re.S)
    assert block, f"README.md's '## {section}' section has no bash block"
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 1, f"README.md's '## {section}' block is not one command: {lines}"
    return lines[0].strip()


def _base_python() -> str:
    """A real interpreter that is not a virtualenv: the one this test venv was made from."""
    return getattr(sys, "_base_executable", None) or sys.executable


def _python3_only_path(tmp: Path, python: str) -> str:
    """A PATH with the usual commands, `python3` -> `python`, and no other python, pip or venv."""
    pydir = tmp / "bin-python3"
    pydir.mkdir()
    (pydir / "python3").symlink_to(python)
    return f"{pydir}{os.pathsep}{_path_without_python(tmp)}"


def _imports(python: str, module: str, env: dict[str, str]) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return (
        subprocess.run([python, "-c", code], env=env, cwd="/", capture_output=True).returncode == 0
    )


def _namespace_prefix() -> list[str]:
    """Run a command with no network and /usr/local/bin replaced by the directory given as the
    first argument after the prefix (a private mount namespace), or skip the test."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not available")
    bind = 'mount --bind "$0" /usr/local/bin && exec "$@"'
    flags = ["--net", "--mount"] if os.geteuid() == 0 else ["-r", "--net", "--mount"]
    with tempfile.TemporaryDirectory() as probe_dir:
        probe = subprocess.run(
            [unshare, *flags, "bash", "-c", bind, probe_dir, "true"], capture_output=True
        )
    if probe.returncode != 0:
        pytest.skip(f"cannot bind-mount over /usr/local/bin in a namespace: {probe.stderr!r}")
    return [unshare, *flags, "bash", "-c", bind]


def test_readme_install_without_a_venv_makes_its_own_and_links_usr_local_bin(tmp_path):
    """As root, with no virtualenv active and a writable (pyenv or system) python3: the README's
    install command makes $YUYAO_HOME/venv, leaves that interpreter alone, links
    /usr/local/bin/yuyao and says so; without /usr/local/bin on PATH it prints the line to add."""
    _require_wheel()
    python = _base_python()
    if _imports(python, "yuyao", {}):
        pytest.skip(f"{python} already has a yuyao package: cannot tell whether it was used")
    command = _readme_command("Install")
    ns = _namespace_prefix()
    usr_local_bin = tmp_path / "usr-local-bin"  # stands for /usr/local/bin inside the namespace
    usr_local_bin.mkdir()
    yuyao_home = tmp_path / "yuyao-home"
    home = tmp_path / "home"
    home.mkdir()
    env = _clean_env(home)
    env["YUYAO_HOME"] = str(yuyao_home)
    env["PATH"] = f"/usr/local/bin{os.pathsep}{_python3_only_path(tmp_path, python)}"

    proc = _run([*ns, str(usr_local_bin), "bash", "-c", command], env, cwd=ROOT)
    assert proc.returncode == 0, _explain(proc)
    exe = yuyao_home / "venv" / "bin" / "yuyao"
    link = usr_local_bin / "yuyao"
    assert link.is_symlink() and Path(os.readlink(link)) == exe, _explain(proc)
    assert f"linked /usr/local/bin/yuyao -> {exe}" in proc.stdout, _explain(proc)
    assert _final_line(proc.stdout) == f"yuyao {VERSION} installed: /usr/local/bin/yuyao"
    assert "not on your PATH" not in proc.stderr, _explain(proc)
    assert not _imports(python, "yuyao", {}), f"install.sh installed into {python}"
    run = _run([*ns, str(usr_local_bin), "yuyao", "--version"], env, cwd=tmp_path, timeout=60)
    assert run.stdout.strip().splitlines()[:1] == [f"yuyao {VERSION}"], _explain(run)

    # Again, with /usr/local/bin not on PATH: the same venv and link, and the line to add.
    (tmp_path / "again").mkdir()
    env["PATH"] = _python3_only_path(tmp_path / "again", python)
    again = _run([*ns, str(usr_local_bin), "bash", "-c", command], env, cwd=ROOT)
    assert again.returncode == 0 and "already installed" in again.stdout, _explain(again)
    assert "/usr/local/bin is not on your PATH" in again.stderr, _explain(again)
    assert 'export PATH="/usr/local/bin:$PATH"' in again.stderr, _explain(again)


def _unprivileged_prefix(home: Path) -> list[str]:
    """A prefix that runs a command as an ordinary user who owns `home`, or skip."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not available to run as an ordinary user")
    nobody = 65534
    for path in (home, *home.parents):
        if path == Path(tempfile.gettempdir()):
            break
        os.chown(path, nobody, nobody)
    prefix = [setpriv, f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups"]
    probe = subprocess.run([*prefix, "test", "-r", str(INSTALL_SH)], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"an ordinary user cannot read {INSTALL_SH}")
    return prefix


def _python3_path_for(prefix: list[str], base: Path) -> str:
    """A PATH whose `python3` (>= 3.9, not a venv) the user of `prefix` can run, or skip."""
    check = "python3 -c 'import sys, venv; sys.exit(sys.version_info < (3, 9) or sys.prefix != sys.base_prefix)'"
    for i, python in enumerate((_base_python(), "/usr/bin/python3", "/usr/local/bin/python3")):
        (base / f"py{i}").mkdir()
        path = _python3_only_path(base / f"py{i}", python)
        probe = subprocess.run(
            [*prefix, "bash", "-c", check], env={"PATH": path}, capture_output=True
        )
        if probe.returncode == 0:
            return path
    pytest.skip("no python3 an ordinary user can run")


def test_readme_install_as_a_user_links_local_bin_and_says_path_is_missing():
    """An ordinary user, no virtualenv active, ~/.local/bin not on PATH: ~/.yuyao/venv, the link
    in ~/.local/bin, and the `export PATH=...` line to add."""
    _require_wheel()
    command = _readme_command("Install")
    # Not under pytest's tmp dir: that one is private to the user running the tests.
    base = Path(tempfile.mkdtemp(prefix="yuyao-install-user-"))
    try:
        base.chmod(0o755)
        home = base / "home"
        home.mkdir()
        prefix = _unprivileged_prefix(home)
        env = _clean_env(home)
        env["PATH"] = _python3_path_for(prefix, base)
        proc = _run([*prefix, "bash", "-c", command], env, cwd=ROOT)
        assert proc.returncode == 0, _explain(proc)
        link = home / ".local" / "bin" / "yuyao"
        exe = home / ".yuyao" / "venv" / "bin" / "yuyao"
        assert link.is_symlink() and Path(os.readlink(link)) == exe, _explain(proc)
        assert f"linked {link} -> {exe}" in proc.stdout, _explain(proc)
        assert _final_line(proc.stdout) == f"yuyao {VERSION} installed: {link}", _explain(proc)
        assert f"{link.parent} is not on your PATH" in proc.stderr, _explain(proc)
        assert f'export PATH="{link.parent}:$PATH"' in proc.stderr, _explain(proc)
        run = _run([*prefix, str(link), "--version"], env, cwd=base, timeout=60)
        assert run.stdout.strip().splitlines()[:1] == [f"yuyao {VERSION}"], _explain(run)
    finally:
        shutil.rmtree(base, ignore_errors=True)


_NO_PYPI = re.compile(
    r"NewConnectionError|Network is unreachable|Temporary failure in name resolution|"
    r"ProxyError|No matching distribution found",
)


def test_readme_test_command_bootstraps_its_own_venv(tmp_path):
    """The README's test command on a machine with only python3 (no `python`, no pytest, no
    active venv), its build and pytest stages skipped: a venv of its own with every test tool
    from PyPI and the runtime deps at the versions requirements.lock pins."""
    command = _readme_command("Tests")
    python = _base_python()
    home = tmp_path / "home"
    home.mkdir()
    venv = tmp_path / "test-venv"
    env = _clean_env(home)
    env["PATH"] = _python3_only_path(tmp_path, python)
    env["YUYAO_TEST_STAGES"] = "venv"
    env["YUYAO_TEST_VENV"] = str(venv)
    proc = _run(["bash", "-c", command], env, cwd=ROOT, timeout=600)
    if proc.returncode != 0 and _NO_PYPI.search(proc.stderr) and not os.environ.get("CI"):
        pytest.skip("PyPI is not reachable from here (CI requires it)")
    assert proc.returncode == 0, _explain(proc)

    vpy = str(venv / "bin" / "python")
    for module in ("pytest", "pexpect", "pyte", "rich", "prompt_toolkit"):
        assert _imports(vpy, module, env), f"{module} is missing from the test venv"
    assert os.access(venv / "bin" / "maturin", os.X_OK), "maturin is missing from the test venv"
    assert not _imports(vpy, "yuyao", env), "the venv stage alone must not build yuyao"
    cfg = (venv / "pyvenv.cfg").read_text()
    assert re.search(r"^include-system-site-packages = false$", cfg, re.M), cfg
    lock = (ROOT / "requirements.lock").read_text()
    pinned = dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", lock, re.M))
    got = subprocess.run(
        [vpy, "-c", "from importlib.metadata import version; print(version('rich'))"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert got.stdout.strip() == pinned["rich"], got

    again = _run(["bash", "-c", command], env, cwd=ROOT, timeout=120)
    assert again.returncode == 0 and "up to date" in again.stdout, _explain(again)


def test_ci_runs_the_readme_test_command():
    """.ci/run's venv, extension and pytest stages are the README's test command, stage by stage."""
    script = _readme_command("Tests").split()[0].removeprefix("./")
    ci = (ROOT / ".ci" / "run").read_text()
    assert f'YUYAO_TEST_STAGES="$1" {script} "${{@:2}}"' in ci, f".ci/run does not run {script}"
    for line in (
        "readme_test venv",
        "stage extension readme_test extension",
        "stage pytest readme_test pytest",
    ):
        assert line in ci, f".ci/run lacks: {line}"


def test_readme_test_command_without_python3_says_so(tmp_path):
    """The README's test command as a user types it (no knobs), on a machine without python3."""
    env = _clean_env(tmp_path)
    env["PATH"] = _path_without_python(tmp_path)
    proc = _run(["bash", "-c", _readme_command("Tests")], env, cwd=ROOT, timeout=60)
    assert proc.returncode != 0, _explain(proc)
    assert "python3 was not found" in proc.stderr, _explain(proc)
    assert "unexpected failure" not in proc.stderr, _explain(proc)
