"""install.sh, end to end: offline install into a fresh venv, the `yuyao` command, idempotency,
the dedicated-venv path (PEP 668), and the errors for a missing or too old python3.

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


def _externally_managed_python() -> str | None:
    """/usr/bin/python3 when it is a PEP 668 "externally managed" CPython >= 3.9, else None."""
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK):
        return None
    code = (
        "import os, sys, sysconfig;"
        "print(sys.version_info >= (3, 9) and "
        "os.path.isfile(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"
    )
    proc = subprocess.run([py, "-c", code], capture_output=True, text=True)
    return py if proc.stdout.strip() == "True" else None


def test_install_outside_a_venv_uses_dedicated_venv(tmp_path):
    """No active venv and an externally managed python3 (or the mode forced when this machine has
    none): install.sh makes ~/.yuyao/venv and links `yuyao` into a bin dir on PATH."""
    _require_wheel()
    home = tmp_path / "home"
    home.mkdir()
    env = _clean_env(home)
    local_bin = home / ".local" / "bin"
    env["PATH"] = f"{local_bin}{os.pathsep}{env.get('PATH', '')}"
    managed = _externally_managed_python()
    if managed:
        env["YUYAO_PYTHON"] = managed
    else:
        env["YUYAO_INSTALL_MODE"] = "venv"
    proc = _run([*_offline_prefix(), "bash", str(INSTALL_SH)], env, cwd=tmp_path)
    assert proc.returncode == 0, _explain(proc)
    if managed:
        assert "externally managed" in proc.stdout, _explain(proc)
    link = local_bin / "yuyao"
    assert _final_line(proc.stdout) == f"yuyao {VERSION} installed: {link}", _explain(proc)
    assert link.is_symlink()
    assert Path(os.readlink(link)) == home / ".yuyao" / "venv" / "bin" / "yuyao"
    out = _run([*_offline_prefix(), "yuyao", "--version"], env, cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[0] == f"yuyao {VERSION}", (
        _explain(out)
    )
    # Second run reuses the venv and the link.
    again = _run([*_offline_prefix(), "bash", str(INSTALL_SH)], env, cwd=tmp_path)
    assert again.returncode == 0 and "already installed" in again.stdout, _explain(again)


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
