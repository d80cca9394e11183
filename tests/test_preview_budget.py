"""Seed 001's tool-preview budget: the tool output one turn shows the model is bounded (32 KiB
per stretch of research in execution, 96 KiB per planning turn). Past it, inspections are
refused before they run, spill files stay readable page by page, and planning converges on a
plan at once. A change or a test run opens a new execution stretch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import call, calls, say, tool_call
from test_planning import proposed

pytestmark = pytest.mark.core


def text_file(path: Path, tag: str, lines: int = 300) -> None:
    """A file of ~40-byte lines, each carrying ``tag`` (12 KB at 300 lines)."""
    path.write_text("".join(f"{tag} line {i:04d} of a plain text file...\n" for i in range(lines)))


def reads(repo: Path, names: list[str], prefix: str) -> list:
    return [
        tool_call("read", {"file_path": str(repo / n)}, f"{prefix}{k}") for k, n in enumerate(names)
    ]


def trace(repo: Path) -> list[dict]:
    out = []
    for path in sorted((repo / ".trajectory").rglob("*")):
        if path.is_file():
            for line in path.read_text().splitlines():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def test_execution_refuses_inspections_past_the_budget_until_a_change(fake_llm, api, repo):
    for tag in "abcd":
        text_file(repo / f"{tag}.txt", tag.upper() * 3)
    server = fake_llm(
        [
            call("read", file_path=str(repo / "a.txt")),
            call("read", file_path=str(repo / "b.txt")),
            {"tool_calls": [tool_call("read", {"file_path": str(repo / "c.txt")}, "r3")]},
            {"tool_calls": [tool_call("read", {"file_path": str(repo / "d.txt")}, "r4")]},
            {
                "tool_calls": [
                    tool_call("write", {"file_path": str(repo / "e.txt"), "content": "e\n"}, "w1")
                ]
            },
            {"tool_calls": [tool_call("read", {"file_path": str(repo / "d.txt")}, "r5")]},
            say("Read them all and wrote e.txt."),
        ]
    )
    s = api(server, mode="auto-edit")
    s.chat("Look at a.txt to d.txt, then create e.txt")
    spent = server.tool_result("r3")
    assert "[tool-preview budget: " in spent and "of 32 KiB shown this stretch" in spent, spent[
        -400:
    ]
    refused = server.tool_result("r4")
    assert refused.startswith("Not run:") and "tool-preview budget (32 KiB" in refused, refused
    assert "DDD line" not in refused
    # The write opened a new stretch: the same read now runs.
    assert "DDD line 0000" in server.tool_result("r5")
    assert (repo / "e.txt").read_text() == "e\n"
    records = [e for e in trace(repo) if e.get("kind") == "budget_exhausted"]
    assert any(json.dumps(r).count("tool_preview") for r in records), records


def test_a_spill_file_stays_readable_page_by_page_after_the_spend(fake_llm, api, repo):
    for tag in "abc":
        text_file(repo / f"{tag}.txt", tag.upper() * 3)

    # A command whose output is capped (the whole of it goes to a spill file), two reads that
    # spend the budget, then, past the spend, a plain read (refused) and a page of the spill
    # file (served, small).
    def spill_in(text: str) -> str:
        words = [w.rstrip(";,") for w in text.split() if "/spill/" in w]
        assert words, text[-600:]
        return words[0]

    def page_of_the_spill(body, _index):
        b1 = next(m for m in body["messages"] if m.get("tool_call_id") == "b1")
        page = {"file_path": spill_in(str(b1["content"])), "offset": 100, "limit": 5000}
        return {"tool_calls": [tool_call("read", page, "x2")]}

    server = fake_llm(
        [
            {"tool_calls": [tool_call("bash", {"command": "seq 1 20000"}, "b1")]},
            call("read", file_path=str(repo / "a.txt")),
            call("read", file_path=str(repo / "b.txt")),
            {"tool_calls": [tool_call("read", {"file_path": str(repo / "c.txt")}, "x1")]},
            page_of_the_spill,
            say("done"),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("Show me the numbers and the three files")
    assert Path(spill_in(server.tool_result("b1"))).is_file()
    assert server.tool_result("x1").startswith("Not run:"), server.tool_result("x1")
    page = server.tool_result("x2")
    assert page and "100" in page and not page.startswith("Not run"), (page or "")[:300]
    assert len(page.encode()) <= 4 * 1024 + 600, len(page)


def test_no_budget_when_set_to_zero_and_a_project_cannot_raise_it(fake_llm, api, repo):
    for tag in "abcd":
        text_file(repo / f"{tag}.txt", tag.upper() * 3)
    # An untrusted project's attempt to lift its own budget is ignored.
    (repo / ".yuyao").mkdir(exist_ok=True)
    (repo / ".yuyao" / "config.toml").write_text("[tools]\npreview_budget_kib = 100000\n")
    script = [
        calls(reads(repo, ["a.txt", "b.txt", "c.txt"], "p")),
        {"tool_calls": [tool_call("read", {"file_path": str(repo / "d.txt")}, "q4")]},
        say("ok"),
    ]
    server = fake_llm(list(script))
    s = api(server, mode="auto-edit")
    s.chat("read them")
    assert server.tool_result("q4").startswith("Not run:"), "a project raised its own budget"

    said = s.dispatch("/config set tools.preview_budget_kib 0")
    assert s.config_get("tools.preview_budget_kib") in (0, "0"), (
        said,
        s.config_get("tools.preview_budget_kib"),
    )
    server.script.extend(
        [
            calls(reads(repo, ["a.txt", "b.txt", "c.txt"], "z")),
            {"tool_calls": [tool_call("read", {"file_path": str(repo / "d.txt")}, "z4")]},
            say("ok"),
        ]
    )
    s.chat("read them again")
    assert "DDD line 0000" in server.tool_result("z4")


def test_planning_previews_small_and_synthesizes_when_the_budget_is_spent(fake_llm, api, repo):
    names = [f"m{k:02d}.txt" for k in range(16)]
    for n in names:
        text_file(repo / n, n.upper(), lines=600)  # 24 KB each
    server = fake_llm(
        [
            calls(reads(repo, names, "pr")),
            proposed(before="From what I read.\n"),
        ]
    )
    s = api(server, mode="ask")
    s.dispatch("/plan add sub")
    first = server.tool_result("pr0")
    # Planning's preview of a read with no explicit limit is ~8 KiB, with a way to continue.
    assert "M00.TXT line 0000" in first
    assert len(first.encode()) <= 8 * 1024 + 1024, len(first.encode())
    assert "offset" in first
    results = [server.tool_result(f"pr{k}") or "" for k in range(len(names))]
    refused = [r for r in results if r.startswith("Not run:")]
    assert refused and all("tool-preview budget (96 KiB" in r for r in refused), results[-1][:300]
    # The next request is the tool-free synthesis, and the plan came from it.
    last = server.body(-1)
    assert not last.get("tools"), "the synthesis must be tool-free"
    assert "the planning tool-preview budget (96 KiB) is spent" in json.dumps(last["messages"])
    assert s.plan["awaiting_approval"], s.plan


def test_no_open_door_carries_content_past_the_spend(fake_llm, api, repo):
    """A model cannot launder reads through the doors the budget keeps open: outside planning
    `.plans/` is a folder like any (it can write there), so a read there past the spend is
    refused too."""
    for tag in "abc":
        text_file(repo / f"{tag}.txt", tag.upper() * 3)
    (repo / ".plans").mkdir()
    text_file(repo / ".plans" / "notes.md", "PLANNED")
    server = fake_llm(
        [
            calls(reads(repo, ["a.txt", "b.txt", "c.txt"], "r")),
            {
                "tool_calls": [
                    tool_call("read", {"file_path": str(repo / ".plans" / "notes.md")}, "p1")
                ]
            },
            say("ok"),
        ]
    )
    s = api(server, mode="auto-edit")
    s.chat("read them")
    assert server.tool_result("p1").startswith("Not run:"), server.tool_result("p1")


def test_a_spill_page_cannot_carry_a_second_path(fake_llm, api, repo):
    """Past the spend, a read that names a spill file and, through a duplicated key or an
    alias, a workspace file never serves the workspace file: whichever key the parser would
    keep, the call is refused or fails, and d.txt's content never reaches the model."""
    for tag in "abcd":
        text_file(repo / f"{tag}.txt", tag.upper() * 3)

    def spill_in(text: str) -> str:
        return next(w.rstrip(";,") for w in text.split() if "/spill/" in w)

    def smuggle(body, _index):
        b1 = next(m for m in body["messages"] if m.get("tool_call_id") == "b1")
        spill, real = json.dumps(spill_in(str(b1["content"]))), json.dumps(str(repo / "d.txt"))
        return {
            "tool_calls": [
                tool_call("read", f'{{"file_path": {spill}, "file_path": {real}}}', "s1"),
                tool_call("read", f'{{"file_path": {real}, "path": {spill}}}', "s2"),
                tool_call("read", f'{{"path": {spill}, "file_path": {real}}}', "s3"),
            ]
        }

    server = fake_llm(
        [
            {"tool_calls": [tool_call("bash", {"command": "seq 1 20000"}, "b1")]},
            call("read", file_path=str(repo / "a.txt")),
            call("read", file_path=str(repo / "b.txt")),
            smuggle,
            say("done"),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("Show me the numbers and the files")
    for cid in ("s1", "s2", "s3"):
        result = server.tool_result(cid) or ""
        assert "DDD line" not in result, (cid, result[:300])
