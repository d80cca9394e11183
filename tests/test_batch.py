"""`/batch <instruction>` (seed 002 §5.2): the model proposes units, each unit runs as a
write-capable sub-agent in its own git worktree (bounded by agents.max_parallel), then each
unit's branch is merged or reported — end to end against the scripted model, through
agent_api and the core session with an attending handler (approval, progress events).

The scripted model tells requests apart by their system prompt: the planning call has its
own; a unit's sub-agent has the "You are a sub-agent" section."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from fakellm import call, say, system_of, tool_msgs, users_of

pytestmark = pytest.mark.core

SUB = "# You are a sub-agent"
PLAN = "You split a change"


def kind(body: dict) -> str:
    s = system_of(body)
    if s.startswith(PLAN):
        return "plan"
    return "sub" if SUB in s else "main"


def unit_of(body: dict) -> str:
    return re.search(r"UNIT-(\w)", users_of(body)).group(1)


def workdir_of(body: dict) -> str:
    return re.search(r"Working directory: (\S+)", system_of(body)).group(1)


def units_json(*units: tuple[str, list[str]]) -> str:
    return json.dumps(
        {
            "units": [
                {"title": f"unit {u}", "prompt": f"UNIT-{u}: do part {u}", "files": files}
                for u, files in units
            ]
        }
    )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def test_batch_of_three_units_runs_in_three_worktrees_and_merges(fake_llm, api, repo):
    seen_dirs: dict[str, str] = {}
    plans = []

    def respond(body, i):
        k = kind(body)
        if k == "plan":
            plans.append(body)
            assert "Instruction: add three greeting files" in users_of(body)
            assert body.get("tools") in (None, [])
            return say(
                "```json\n"
                + units_json(("A", ["a.txt"]), ("B", ["b.txt"]), ("C", ["c.txt"]))
                + "\n```"
            )
        if k == "main":
            return say("noted")
        assert k == "sub", system_of(body)[:200]
        u = unit_of(body)
        seen_dirs[u] = workdir_of(body)
        if not tool_msgs(body):
            return call("write", file_path=f"{u.lower()}.txt", content=f"hello {u}\n")
        return say(f"wrote {u.lower()}.txt")

    server = fake_llm(respond)
    s = api(server, mode="yolo")
    out = s.dispatch("/batch add three greeting files")
    assert out.startswith("batch: 3 units · 3 merged · 0 not merged"), out
    assert len(plans) == 1
    # Three distinct worktrees under the repository's worktrees folder, none the main tree.
    assert set(seen_dirs) == {"A", "B", "C"}
    dirs = set(seen_dirs.values())
    assert len(dirs) == 3
    for d in dirs:
        assert Path(d).parent == (repo / ".yuyao" / "worktrees").resolve(), d
    # Merged into the session's branch: the files are in the main tree and committed.
    for u in "abc":
        assert (repo / f"{u}.txt").read_text() == f"hello {u.upper()}\n"
    assert git(repo, "status", "--porcelain").strip() == ""
    log = git(repo, "log", "--format=%s")
    for u in "ABC":
        assert f"yuyao batch: unit {u}" in log, log
    # Merged worktrees and their branches are removed.
    assert not [p for p in (repo / ".yuyao" / "worktrees").iterdir()]
    assert "yuyao/batch-" not in git(repo, "branch", "--list")
    # The batch is in the trace with every unit's outcome.
    traces = list((repo / ".trajectory").glob("*.jsonl"))
    entries = [json.loads(x) for t in traces for x in t.read_text().splitlines() if x.strip()]
    batch = [e for e in entries if e["kind"] == "batch"]
    assert batch and batch[-1]["merged"] == 3
    # The next turn's request tells the model what the batch did.
    assert s.chat("what happened?") == "noted"
    told = users_of(server.requests[-1]["body"])
    assert "[/batch add three greeting files]\nbatch: 3 units · 3 merged" in told, told


def test_units_sharing_a_declared_file_never_run_at_once(fake_llm, api, repo):
    spans: dict[str, list[float]] = {}

    def respond(body, i):
        k = kind(body)
        if k == "plan":
            return say(units_json(("A", ["shared.txt"]), ("B", ["shared.txt"]), ("C", ["c.txt"])))
        u = unit_of(body)
        now = time.monotonic()
        spans.setdefault(u, [now, now])
        if not tool_msgs(body):
            name = "c.txt" if u == "C" else f"shared-{u}.txt"
            return {**call("write", file_path=name, content=u + "\n"), "delay": 0.5}
        spans[u][1] = now + 0.3
        return say("done", delay=0.3)

    server = fake_llm(respond)
    s = api(server, mode="yolo")
    s.dispatch("/config set agents.max_parallel 3")
    out = s.dispatch("/batch split it")
    assert "3 merged" in out, out
    a, b, c = spans["A"], spans["B"], spans["C"]
    # A and B declare the same file: one after the other. C overlaps with the first of them.
    assert a[1] <= b[0] + 0.05 or b[1] <= a[0] + 0.05, spans
    first = a if a[0] < b[0] else b
    assert c[0] < first[1] and first[0] < c[1], spans


def test_a_unit_editing_a_file_another_running_unit_holds_is_refused(fake_llm, api, repo):
    def respond(body, i):
        k = kind(body)
        if k == "plan":
            return say(units_json(("A", ["a.txt"]), ("B", ["b.txt"])))
        u = unit_of(body)
        done = len(tool_msgs(body))
        if u == "A":
            if done == 0:
                return call("write", file_path="a.txt", content="A\n")
            # A is still running while B tries to write a.txt.
            return say("A done", delay=1.5)
        if done == 0:
            return {**call("write", file_path="a.txt", content="B was here\n"), "delay": 0.3}
        return say("B done")

    server = fake_llm(respond)
    s = api(server, mode="yolo")
    s.dispatch("/config set agents.max_parallel 2")
    out = s.dispatch("/batch two units")
    refusals = [
        m["content"]
        for r in server.requests
        if kind(r["body"]) == "sub" and unit_of(r["body"]) == "B"
        for m in tool_msgs(r["body"])
    ]
    assert refusals and "a.txt is being edited by batch unit 1" in refusals[0], refusals
    assert (repo / "a.txt").read_text() == "A\n"
    # B changed nothing: nothing to merge for it; A merged.
    assert "1 merged" in out and "unit B — no changes" in out, out


def test_a_unit_that_changed_another_units_file_by_shell_is_not_merged(fake_llm, api, repo):
    def respond(body, i):
        if kind(body) == "plan":
            return say(units_json(("A", ["a.txt"]), ("B", ["b.txt"])))
        u = unit_of(body)
        done = len(tool_msgs(body))
        if done == 0:
            return call("write", file_path=f"{u.lower()}.txt", content=u + "\n")
        if u == "B" and done == 1:
            # The file tools' gate does not see a shell command: the merge check does.
            return call("bash", command="echo B > a.txt")
        return say("done")

    server = fake_llm(respond)
    s = api(server, mode="yolo")
    s.dispatch("/config set agents.max_parallel 1")
    out = s.dispatch("/batch two files")
    assert "1 merged · 1 not merged" in out, out
    assert "unit B — NOT merged: it changed a.txt, which unit 1 (unit A) holds" in out, out
    assert (repo / "a.txt").read_text() == "A\n" and not (repo / "b.txt").exists()


def test_a_merge_conflict_is_reported_and_the_worktree_kept(fake_llm, api, repo):
    def respond(body, i):
        if kind(body) == "plan":
            # Neither declares README.md: run one after the other, both change it.
            return say(units_json(("A", []), ("B", [])))
        u = unit_of(body)
        done = len(tool_msgs(body))
        if done == 0:
            return call("read", file_path="README.md")
        if done == 1:
            return call("write", file_path="README.md", content=f"# {u} version\n")
        return say("ok")

    server = fake_llm(respond)
    s = api(server, mode="yolo")
    s.dispatch("/config set agents.max_parallel 1")
    out = s.dispatch("/batch rewrite the readme")
    assert "1 merged · 1 not merged" in out, out
    assert "NOT merged: merge conflict in README.md" in out, out
    assert (repo / "README.md").read_text() == "# A version\n"
    assert git(repo, "status", "--porcelain").strip() == ""
    kept = [p for p in (repo / ".yuyao" / "worktrees").iterdir()]
    assert len(kept) == 1 and (kept[0] / "README.md").read_text() == "# B version\n"


def test_batch_needs_a_repository_and_a_writing_mode(fake_llm, api, tmp_path):
    server = fake_llm([])
    plain = tmp_path / "plain"
    plain.mkdir()
    s = api(server, mode="yolo", cwd=str(plain))
    with pytest.raises(RuntimeError, match="not inside a git repository"):
        s.dispatch("/batch do things")
    p = api(server, mode="plan")
    with pytest.raises(RuntimeError, match="plan mode is read-only"):
        p.dispatch("/batch do things")
    with pytest.raises(ValueError, match="usage: /batch"):
        p.dispatch("/batch")
    # Nothing was spent.
    assert not server.requests


class Attending:
    """A person at the terminal: answers the unit list with `answers` in turn."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests: list[dict] = []
        self.progress: list[tuple[int, int]] = []

    def event(self, text):
        e = json.loads(text)
        if e.get("type") == "progress" and e.get("label") == "batch units":
            self.progress.append((e["done"], e["total"]))

    def request(self, text):
        self.requests.append(json.loads(text))
        return self.answers.pop(0)


def core_session(server, use_env, repo, handler, **opts):
    from yuyao import _core

    use_env(server, TMPDIR=os.environ.get("TMPDIR", "/tmp"))
    return _core.Session(json.dumps({"cwd": str(repo), "stream": False, **opts}), handler)


def test_the_user_edits_the_list_then_runs_it_with_progress(fake_llm, use_env, repo):
    ran = set()

    def respond(body, i):
        if kind(body) == "plan":
            return say(units_json(("A", ["a.txt"]), ("B", ["b.txt"]), ("C", ["c.txt"])))
        u = unit_of(body)
        ran.add(u)
        if not tool_msgs(body):
            return call("write", file_path=f"{u.lower()}.txt", content=u)
        return say("ok")

    server = fake_llm(respond)
    h = Attending(["drop 2", "Run all 2 units"])
    s = core_session(server, use_env, repo, h, mode="yolo")
    try:
        out = s.dispatch("/batch three files")
    finally:
        s.close()
    asks = [r for r in h.requests if r.get("type") == "ask_user"]
    assert len(asks) == 2, h.requests
    assert "2. unit B — files: b.txt" in asks[0]["question"]
    assert "unit B" not in asks[1]["question"] and asks[1]["options"][0] == "Run all 2 units"
    assert ran == {"A", "C"}
    assert "2 merged" in out and not (repo / "b.txt").exists()
    # A determinate progress over the units, ending at total.
    assert h.progress[0] == (0, 2) and h.progress[-1] == (2, 2), h.progress


def test_the_user_cancels_and_nothing_runs(fake_llm, use_env, repo):
    def respond(body, i):
        assert kind(body) == "plan"
        return say(units_json(("A", ["a.txt"])))

    server = fake_llm(respond)
    h = Attending(["Cancel"])
    s = core_session(server, use_env, repo, h, mode="yolo")
    try:
        out = s.dispatch("/batch one file")
    finally:
        s.close()
    assert out == "batch not run: cancelled"
    assert len(server.requests) == 1
    assert not (repo / ".yuyao" / "worktrees").exists()


IN, OUT = 1e-6, 1e-5
PRICES = json.dumps({"input_cost_per_token": IN, "output_cost_per_token": OUT})


def test_the_spend_ceiling_holds_across_the_planning_call_and_every_unit(fake_llm, use_env, repo):
    import threading

    costs: list[float] = []
    guard = threading.Lock()

    def respond(body, i):
        prompt = len(json.dumps(body["messages"]) + json.dumps(body.get("tools") or [])) // 5
        completion = min(400, body.get("max_tokens") or 400)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        with guard:
            costs.append(prompt * IN + completion * OUT)
        if kind(body) == "plan":
            step = say(units_json(("A", ["a.txt"]), ("B", ["b.txt"]), ("C", ["c.txt"])))
            return {**step, "usage": usage}
        # Units would go on for a long time: only the ceiling stops them.
        if len(tool_msgs(body)) < 40:
            return {**call("glob", pattern="*.py"), "usage": usage}
        return say("unit finished", usage=usage)

    server = fake_llm(respond)
    from yuyao import _core

    use_env(server, D2A_MODEL_COST=PRICES)
    ceiling = 0.05
    opts = {"cwd": str(repo), "stream": False, "headless": True, "mode": "yolo"}
    s = _core.Session(json.dumps({**opts, "max_cost_usd": ceiling}), None)
    try:
        out = s.dispatch("/batch split the work")
    finally:
        s.close()
    units = [r for r in server.requests if kind(r["body"]) == "sub"]
    assert len(units) >= 4, "the units ran"
    assert sum(costs) <= ceiling + 1e-9, (sum(costs), len(costs))
    assert sum(costs) > ceiling * 0.6 and len(units) < 120
    assert all(r["body"].get("max_tokens") for r in server.requests)
    # Units stopped by the ceiling are reported, not merged.
    assert "0 merged" in out and "limits_exceeded" in out, out
