"""Retention of spill files, job logs and snapshot objects (storage must not grow without bound): `yuyao gc`
(and `--dry-run`) reports what it frees per kind; a live session's files — this process's
or another's — are never touched; a snapshot object a kept session references stays, so
its /undo still works; the same pass runs in the background when a session opens, without
slowing the start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

DAY = 86_400


def age_tree(path: Path, days: float) -> None:
    t = time.time() - days * DAY
    for p in [path, *path.rglob("*")]:
        os.utime(p, (t, t), follow_symlinks=False)


def old_session(home: Path, sid: str, days: float, size: int = 1000) -> Path:
    """A spill folder as an ended session leaves it: a spill file and a job log."""
    d = home / "spill" / sid
    (d / "jobs").mkdir(parents=True)
    (d / "bash-1-0.log").write_bytes(b"x" * size)
    (d / "jobs" / "bash_1-out.log").write_bytes(b"job output\n")
    age_tree(d, days)
    return d


HOLD_OPEN = """
import sys, time
from yuyao.agent_api import create_session
s = create_session(cwd=sys.argv[1])
print(s._core.status_json(), flush=True)
time.sleep(120)
"""


def wait_for(predicate, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate():
        time.sleep(0.05)
    return predicate()


def spill_dirs(home: Path) -> set:
    spill = home / "spill"
    return {p for p in spill.iterdir() if p.is_dir()} if spill.exists() else set()


def test_gc_frees_ended_sessions_and_never_a_live_one(
    yuyao, env, yuyao_home, repo, fake_llm, python
):
    # Another process's session, its folder made to look old: it is live, so it stays.
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(repo)], env=env(), stdout=subprocess.PIPE, text=True
    )
    try:
        proc.stdout.readline()
        (live,) = spill_dirs(yuyao_home)
        # Its own start's pass is done before the old folders appear.
        assert wait_for((yuyao_home / "spill" / ".gc-stamp").exists)
        ended = old_session(yuyao_home, "0ldended0001", 40, size=5000)
        recent = old_session(yuyao_home, "recent000001", 2)
        (live / "bash-9-9.log").write_bytes(b"y" * 3000)
        age_tree(live, 40)
        dry = yuyao("gc", "--dry-run", env=env())
        assert dry.returncode == 0, dry.stderr
        assert "would free" in dry.stdout and "1 ended session" in dry.stdout, dry.stdout
        assert "spill files            1" in dry.stdout, dry.stdout
        assert "job logs               1" in dry.stdout, dry.stdout
        assert ended.exists(), "a dry run removes nothing"
        done = yuyao("gc", env=env())
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("freed"), done.stdout
        assert not ended.exists()
        assert recent.exists() and live.exists() and (live / "bash-9-9.log").exists()
        assert "live sessions left alone" in done.stdout or "live session left" in done.stdout
    finally:
        proc.kill()
        proc.wait()


def test_shared_snapshot_objects_stay_and_undo_still_works(
    fake_llm, env, yuyao, yuyao_home, repo, use_env
):
    from yuyao.agent_api import create_session

    def edit(content: str, sid_out: list):
        server = fake_llm(
            [
                calls([("read", {"file_path": "calc.py"}, "r")]),
                calls([("write", {"file_path": "calc.py", "content": content}, "w")]),
                say("ok"),
            ]
        )
        use_env(server)
        s = create_session(cwd=str(repo), mode="yolo")
        s.chat("edit")
        assert (repo / "calc.py").read_text() == content, server.tool_result("w")
        sid_out.append(json.loads(s._core.status_json()))
        s.close()

    first, second = [], []
    original = (repo / "calc.py").read_bytes()
    edit("v1 = 1\n", first)  # the old session: original -> v1
    edit("v2 = 2\n", second)  # the kept one: v1 -> v2 (v1 is shared)
    snapshots = yuyao_home / "snapshots"
    (journal,) = snapshots.glob("*.json")
    j = json.loads(journal.read_text())
    assert len(j["batches"]) == 2, json.dumps(j)
    old_sid = j["batches"][0]["session"]
    old_time = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 40 * DAY))
    for entry in j["batches"] + j["checkpoints"]:
        if entry["session"] == old_sid:
            entry["time"] = old_time
    journal.write_text(json.dumps(j))
    (git_dir,) = snapshots.glob("*.git")
    age_tree(git_dir / "objects", 40)
    old_spill = yuyao_home / "spill" / old_sid
    if old_spill.exists():
        age_tree(old_spill, 40)
    done = yuyao("gc", env=env())
    assert done.returncode == 0, done.stderr
    assert "snapshot objects       1" in done.stdout, done.stdout  # the original's blob only
    j = json.loads(journal.read_text())
    assert {b["session"] for b in j["batches"]} == {second[0]["session_id"]} or len(
        j["batches"]
    ) == 1
    # The kept batch's pre-image (v1, shared with the removed batch) is still there.
    use_env()
    s = create_session(cwd=str(repo), mode="yolo")
    out = s.dispatch("/undo")
    s.close()
    assert (repo / "calc.py").read_text() == "v1 = 1\n", out
    assert (repo / "calc.py").read_bytes() != original


def test_the_pass_runs_in_the_background_at_session_start(fake_llm, env, python, yuyao_home, repo):
    """A session start removes ended sessions' old files without waiting for it: opening
    with 3000 old spill folders costs about what opening with none does."""
    timing = """
import sys, time
t = time.perf_counter()
from yuyao.agent_api import create_session
s = create_session(cwd=sys.argv[1])
print(time.perf_counter() - t)
time.sleep(float(sys.argv[2]))  # a session lasts a while; the pass runs meanwhile
s.close()
"""

    def open_time(stay: float = 0) -> float:
        done = python(timing, str(repo), str(stay), env=env())
        assert done.returncode == 0, done.stderr
        return float(done.stdout.split()[-1])

    empty = min(open_time() for _ in range(3))
    stamp = yuyao_home / "spill" / ".gc-stamp"
    for k in range(3000):
        old_session(yuyao_home, f"old{k:09d}", 40, size=10)
    stamp.unlink(missing_ok=True)
    loaded = open_time()
    print(
        f"session open: {empty * 1000:.0f} ms empty, {loaded * 1000:.0f} ms with 3000 old sessions"
    )
    assert loaded < empty + 0.5, (empty, loaded)
    # The background pass (in that process, or the next one's) clears them.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        left = [p for p in (yuyao_home / "spill").glob("old*")]
        if not left:
            break
        open_time(stay=2)
    assert not left, f"{len(left)} old spill folders left"


def test_retention_keys_are_validated(yuyao, env):
    ok = yuyao("config", "set", "storage.retention_days", "7", env=env())
    assert ok.returncode == 0, ok.stderr
    assert yuyao("config", "get", "storage.retention_days", env=env()).stdout.strip() == "7"
    bad = yuyao("config", "set", "storage.max_mb", "-1", env=env())
    assert bad.returncode != 0 and "0 or more" in bad.stderr + bad.stdout
    yuyao("config", "set", "storage.retention_days", "0", env=env())
    yuyao("config", "set", "storage.max_mb", "0", env=env())
    listing = yuyao("gc", "--dry-run", env=env())
    assert "no age limit" in listing.stdout and "no size cap" in listing.stdout, listing.stdout
