"""yuyao agent: a terminal coding agent.

The behaviour lives in the Rust extension ``yuyao._core``; this package only parses
arguments, renders and reads the terminal. Importing it stays cheap on purpose: ``yuyao
--help`` and ``--version`` must not pay for the extension, rich or prompt_toolkit.
"""

from __future__ import annotations

import os

_DIST_NAME = "yuyao"
_UNKNOWN_VERSION = "0+unknown"


def _source_version() -> str | None:
    """The VERSION file of a source checkout (repo/python/yuyao -> repo/VERSION), if any.

    Checked first: from a checkout (plain or `maturin develop`) the file is the truth, while an
    installed distribution's metadata may be stale."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.path.isfile(os.path.join(root, "pyproject.toml")):
        return None
    try:
        with open(os.path.join(root, "VERSION"), encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _dist_info_version() -> str | None:
    """The version in the name of the wheel's ``yuyao-<version>.dist-info`` folder beside the
    package: one directory listing instead of importing importlib.metadata (~40-100 ms)."""
    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    prefix = _DIST_NAME + "-"
    try:
        names = [n for n in os.listdir(site) if n.startswith(prefix) and n.endswith(".dist-info")]
    except OSError:
        return None
    if len(names) != 1:
        return None  # none, or ambiguous: let importlib.metadata decide
    return names[0][len(prefix) : -len(".dist-info")] or None


def _installed_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version(_DIST_NAME)
    except metadata.PackageNotFoundError:
        return None


def _read_version() -> str:
    return _source_version() or _dist_info_version() or _installed_version() or _UNKNOWN_VERSION


def __getattr__(name: str) -> str:
    # PEP 562: computed on first use, so `import yuyao` reads no file at all.
    if name == "__version__":
        version = _read_version()
        globals()["__version__"] = version
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
