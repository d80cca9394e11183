"""One version everywhere: VERSION == Cargo workspace version == yuyao._core.VERSION ==
yuyao.__version__ == the installed distribution == requirements.lock / wheels/ == `yuyao --version`.

The parts that need the compiled extension are skipped when `import yuyao._core` fails, unless
YUYAO_REQUIRE_CORE is set (CI sets it, after installing the extension).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VERSION = (ROOT / "VERSION").read_text().strip()


def _skip_or_fail(reason: str, env_var: str = "YUYAO_REQUIRE_CORE") -> None:
    if os.environ.get(env_var):
        pytest.fail(f"{reason} ({env_var} is set)")
    pytest.skip(reason)


def _toml_section_value(text: str, section: str, key: str) -> str | None:
    """`key = "value"` inside [section]; enough for Cargo.toml without needing tomllib (3.11+)."""
    current = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        header = re.fullmatch(r"\[([^\]]+)\]", line)
        if header:
            current = header.group(1).strip()
            continue
        m = re.fullmatch(rf'{re.escape(key)}\s*=\s*"([^"]*)"', line)
        if m and current == section:
            return m.group(1)
    return None


def _core():
    try:
        import yuyao._core as core
    except ImportError as exc:
        _skip_or_fail(f"yuyao._core is not importable: {exc}")
    return core


def test_version_file_is_a_plain_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?(a|b|rc|dev|post)\d*)?", VERSION), VERSION
    assert (ROOT / "VERSION").read_text() in (VERSION, VERSION + "\n"), "VERSION must be one line"


def test_cargo_workspace_version_matches():
    cargo = (ROOT / "Cargo.toml").read_text()
    assert _toml_section_value(cargo, "workspace.package", "version") == VERSION


def test_every_crate_inherits_the_workspace_version():
    # yuyao._core.VERSION comes from a crate's CARGO_PKG_VERSION: a crate with its own version
    # would drift from VERSION.
    for manifest in sorted(ROOT.glob("rust/*/Cargo.toml")):
        text = manifest.read_text()
        own = _toml_section_value(text, "package", "version")
        inherits = re.search(r"^\s*version\.workspace\s*=\s*true", text, re.M) or re.search(
            r"^\s*version\s*=\s*\{\s*workspace\s*=\s*true\s*\}", text, re.M
        )
        assert inherits or own == VERSION, (
            f"{manifest.relative_to(ROOT)}: version must be version.workspace = true"
        )


def test_core_version():
    assert _core().VERSION == VERSION


def test_package_version():
    _core()
    import yuyao

    assert yuyao.__version__ == VERSION


def test_installed_distribution_version():
    from importlib import metadata

    try:
        dist_version = metadata.version("yuyao")
    except metadata.PackageNotFoundError:
        _skip_or_fail("the yuyao distribution is not installed in this interpreter")
    assert dist_version == VERSION


def test_cli_version():
    # The console script of the interpreter running the tests (CI installs into its venv).
    exe = Path(sys.executable).parent / "yuyao"
    if not exe.exists():
        _skip_or_fail(f"no yuyao command next to {sys.executable}")
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[0] == f"yuyao {VERSION}"


def test_lock_and_wheel_carry_the_version():
    lock = ROOT / "requirements.lock"
    wheels = sorted((ROOT / "wheels").glob("yuyao-*.whl"))
    if not lock.is_file() or not wheels:
        _skip_or_fail("no requirements.lock or no yuyao wheel in wheels/", "YUYAO_REQUIRE_WHEEL")
    pins = re.findall(r"^yuyao==(\S+)", lock.read_text(), re.M)
    assert pins == [VERSION]
    assert [w.name.split("-")[1] for w in wheels] == [VERSION]
