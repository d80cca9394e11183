"""What every bench writes beside its figures, and where it writes them.

A result is only comparable with another one when it says what it was compared with and on
what: so each results file carries a ``meta`` block with the peer (the package or tool pinned
and the version that actually ran), the tree measured, the machine (CPUs, Python, kernel) and
the load average before and after the run (the machine is shared; a ratio taken at load 4 is
not one taken at load 0). ``scripts/perf_table.py`` reads these blocks to write the
performance table of docs/PERFORMANCE.md.

    rec = Recorder("spawn")            # load sampled now, before anything runs
    ...
    rec.save(data, peer="subprocess", peer_version="python 3.11.7", tree="none")
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def load() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, rounded (None where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def yuyao_version() -> str | None:
    try:
        from yuyao import _core

        return getattr(_core, "VERSION", None)
    except ImportError:
        return None


class Recorder:
    """Samples the load when made; ``save`` samples it again and writes the results file."""

    def __init__(self, bench: str) -> None:
        self.bench = bench
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.load_before = load()

    def meta(self, *, peer: str | None, peer_version: str | None, tree: str) -> dict:
        return {
            "bench": self.bench,
            "date": self.started.date().isoformat(),
            "started_utc": self.started.isoformat(timespec="seconds"),
            "finished_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"
            ),
            "yuyao_version": yuyao_version(),
            "peer": peer,
            "peer_version": peer_version,
            "tree": tree,
            "load_before": self.load_before,
            "load_after": load(),
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "kernel": platform.release(),
            },
        }

    def save(
        self,
        data: dict,
        *,
        peer: str | None,
        peer_version: str | None,
        tree: str,
        label: str = "",
        path: Path | None = None,
    ) -> Path:
        """Write ``{"meta": ..., **data}`` to results/<bench>[-label]-<date>.json (or
        ``path``) and return where it went."""
        meta = self.meta(peer=peer, peer_version=peer_version, tree=tree)
        if path is None:
            RESULTS_DIR.mkdir(parents=True, exist_ok=True)
            name = "-".join(x for x in (self.bench, label, meta["date"]) if x)
            path = RESULTS_DIR / f"{name}.json"
        path.write_text(json.dumps({"meta": meta, **data}, indent=1) + "\n")
        return path
