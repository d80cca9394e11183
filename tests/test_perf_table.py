"""The performance table of docs/PERFORMANCE.md is generated from benches/results, never typed:
the committed table must equal what scripts/perf_table.py writes from the committed results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "perf_table.py"
DOC = ROOT / "docs" / "PERFORMANCE.md"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def test_committed_table_is_what_the_results_give():
    proc = run("--check")
    assert proc.returncode == 0, proc.stderr
    body = run("--print").stdout
    assert body.count("\n") > 2, "the table has no rows"
    assert body in DOC.read_text()


def test_a_typed_figure_fails_the_check(tmp_path):
    doc = DOC.read_text()
    begin = doc.index("<!-- perf-table:begin -->")
    row = doc.index("\n| repo map", begin) + 1
    cell = doc.index(" | ", row) + 3  # the yuyao column of the first row
    typed = doc[:cell] + "0.01 s (typed)" + doc[doc.index(" | ", cell) :]
    copy = tmp_path / "PERFORMANCE.md"
    copy.write_text(typed)
    proc = run("--check", "--doc", str(copy))
    assert proc.returncode == 1
    assert "differs" in proc.stderr
    # Writing mends it.
    assert run("--doc", str(copy)).returncode == 0
    assert copy.read_text() == doc


def _spawn_result(ratio: float, meta: bool) -> dict:
    host = {"size": "100M", "fork": False, "per_call_median_ms": 2.0 * ratio,
            "subprocess_median_ms": 2.0, "ratio_median": ratio}  # fmt: skip
    data = {"hosts": [host]}
    if meta:
        data["meta"] = {"bench": "spawn", "date": "2026-01-02", "peer_version": "Python 3.x",
                        "tree": "none", "load_before": [1.5, 1, 1], "load_after": [2.5, 1, 1]}  # fmt: skip
    return data


def test_newest_file_with_a_meta_block_is_used(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "spawn-2026-01-01.json").write_text(json.dumps(_spawn_result(1.11, True)))
    (results / "spawn-2026-01-02.json").write_text(json.dumps(_spawn_result(1.22, True)))
    # Newer but without the record of peer, load and tree: not quotable.
    (results / "spawn-2026-01-03.json").write_text(json.dumps(_spawn_result(1.33, False)))
    body = run("--print", "--results", str(results)).stdout
    rows = [line for line in body.splitlines() if line.startswith("| bash call")]
    assert len(rows) == 1, body
    assert "1.22×" in rows[0] and "1.5 → 2.5" in rows[0] and "2026-01-02" in rows[0]
