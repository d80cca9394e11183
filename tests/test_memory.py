"""Persistent memory (seed 002 §6): MEMORY.md files loaded into the request, written by
/remember and "remember that …", removed by /forget, hand edits noticed, remembered rules
enforced on shell commands, memory-get, --no-memory, and the headless contract."""

from __future__ import annotations

import json
import re

import pytest
from conftest import git
from fakellm import calls, say

pytestmark = pytest.mark.core

META = re.compile(
    r"<!-- id:(m[0-9a-f]{5}) when:(\d{4}-\d\d-\d\d) scope:(\w+) why:\"([^\"]*)\" src:([\w-]+) -->"
)


def all_request_text(server, i: int = -1) -> str:
    return json.dumps(server.messages(i))


def test_remember_then_new_puts_the_entry_in_the_next_request(
    fake_llm, api, repo, git_status, yuyao_home
):
    server = fake_llm([say("ok"), say("ok")])
    s = api(server)
    answer = s.dispatch("/remember Use bun, not npm")
    assert "remembered in" in answer and "MEMORY.md" in answer, answer
    text = (repo / "MEMORY.md").read_text()
    m = META.search(text)
    assert text.startswith("- Use bun, not npm <!-- id:") and m, text
    assert m.group(3) == "project" and m.group(4) == "user said: Use bun, not npm"
    assert m.group(5) == "remember"
    # Kept out of git status (.git/info/exclude), the work tree stays clean.
    assert git_status(repo) == set()
    s.dispatch("/new")
    s.chat("hello")
    assert "Use bun, not npm" in server.system_prompt(), server.system_prompt()
    # A global entry goes to ~/.yuyao/MEMORY.md and is loaded first.
    s.dispatch("/remember --global I use vim keys")
    assert "I use vim keys" in (yuyao_home / "MEMORY.md").read_text()
    s.dispatch("/new")
    s.chat("again")
    prompt = server.system_prompt()
    assert prompt.index("I use vim keys") < prompt.index("Use bun, not npm")


def test_forget_alpha_keeps_alphabet_and_other_bytes(api_env, repo):
    from yuyao.agent_api import create_session

    api_env()
    original = (
        "# Memory\n\n- alphabet soup is the fixture name\n"
        '- alpha <!-- id:m0a1b2 when:2026-01-02 scope:project why:"user said: alpha" src:remember -->\n'
        "* Deploys go through make deploy\n  (never by hand)\n"
    )
    (repo / "MEMORY.md").write_text(original)
    with create_session(cwd=str(repo)) as s:
        answer = s.dispatch("/forget alpha")
        assert "forgot m0a1b2" in answer, answer
        assert (repo / "MEMORY.md").read_text() == original.replace(
            '- alpha <!-- id:m0a1b2 when:2026-01-02 scope:project why:"user said: alpha" src:remember -->\n',
            "",
        )
        # Several candidates: listed with ids, nothing removed.
        (repo / "MEMORY.md").write_text("- alpha one\n- alpha two\n- alphabet\n")
        answer = s.dispatch("/forget alpha")
        assert "2 entries match" in answer and "nothing was removed" in answer, answer
        assert (repo / "MEMORY.md").read_text() == "- alpha one\n- alpha two\n- alphabet\n"
        ids = re.findall(r"^\s+(h[0-9a-f]{5})", answer, re.M)
        assert len(ids) == 2, answer
        s.dispatch(f"/forget {ids[1]}")
        assert (repo / "MEMORY.md").read_text() == "- alpha one\n- alphabet\n"
        with pytest.raises(Exception, match="no memory entry matches"):
            s.dispatch("/forget alph")


def test_memory_list_edit_delete_open(api_env, repo):
    from yuyao.agent_api import create_session

    api_env()
    (repo / "MEMORY.md").write_text("- first note\n- second note\n")
    with create_session(cwd=str(repo)) as s:
        listing = s.dispatch("/memory")
        ids = re.findall(r"^\s+(h[0-9a-f]{5}) \[project\]", listing, re.M)
        assert len(ids) == 2 and "first note" in listing, listing
        s.dispatch(f"/memory edit {ids[0]} first note, edited")
        assert (repo / "MEMORY.md").read_text() == "- first note, edited\n- second note\n"
        # No terminal for an editor here: the error names the inline form.
        with pytest.raises(ValueError, match=f"/memory edit {ids[1]} <new text>"):
            s.dispatch(f"/memory edit {ids[1]}")
        assert s.dispatch(f"/memory path {ids[1]}").endswith("MEMORY.md:2")
        s.dispatch(f"/memory delete {ids[1]}")
        assert (repo / "MEMORY.md").read_text() == "- first note, edited\n"
        with pytest.raises(ValueError, match="only in the yuyao TUI"):
            s.dispatch("/memory open")
        assert s.dispatch("/memory path").endswith("MEMORY.md:1")
        with pytest.raises(Exception, match="no memory entry has the id"):
            s.dispatch("/memory delete hffff0")


def test_hand_edit_reaches_the_next_request_as_a_note_and_the_prefix_stays(fake_llm, api, repo):
    (repo / "MEMORY.md").write_text("- The API lives in src/api\n")
    server = fake_llm([say("one"), say("two"), say("three")])
    s = api(server)
    s.chat("first")
    first_prompt = server.system_prompt()
    assert "The API lives in src/api" in first_prompt
    (repo / "MEMORY.md").write_text("- The API lives in src/api\n- Tests run with make check\n")
    s.chat("second")
    assert server.system_prompt() == first_prompt, "the system prompt is not rewritten"
    notes = [m for m in server.messages()[1:] if "memory changed:" in json.dumps(m)]
    assert notes and "Tests run with make check" in json.dumps(notes[-1]), server.messages()
    # The earlier messages are a prefix of the new request (append-only).
    assert server.messages(0) == server.messages()[: len(server.messages(0))]
    s.chat("third")
    assert sum("memory changed:" in json.dumps(m) for m in server.messages()[1:]) == 1


def test_natural_language_remember_in_print_mode(fake_llm, yuyao, env, repo, git_status):
    server = fake_llm([say("noted")])
    proc = yuyao("-p", "Remember that the API lives in src/api", env=env(server))
    assert proc.returncode == 0, proc.stderr
    text = (repo / "MEMORY.md").read_text()
    assert (
        text.startswith("- The API lives in src/api <!-- id:m") and "src:natural-language" in text
    ), text
    assert git_status(repo) == set()
    # A correction is never saved unattended.
    server2 = fake_llm([say("ok")])
    yuyao("-p", "Use pnpm, not yarn", env=env(server2))
    assert "pnpm" not in (repo / "MEMORY.md").read_text()


def test_remembered_rule_blocks_the_command_and_cites_itself(fake_llm, yuyao, env, repo, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "npm-ran"
    npm = bin_dir / "npm"
    npm.write_text(f"#!/bin/sh\ntouch {marker}\n")
    npm.chmod(0o755)
    (repo / "MEMORY.md").write_text(
        "- Use bun, not npm. <!-- id:m7f3a1 when:2026-11-30 scope:project "
        'why:"user said: use bun not npm" src:correction -->\n'
    )
    server = fake_llm([calls([("bash", {"command": "npm install"}, "c1")]), say("done")])
    e = env(server)
    e["PATH"] = f"{bin_dir}:{e['PATH']}"
    proc = yuyao("-p", "install the dependencies", "--mode", "yolo", env=e)
    result = server.tool_result("c1")
    assert result.startswith(
        'applying your rule: use bun, not npm (remembered 2026-11-30: "use bun not npm")'
    ), result
    assert not marker.exists(), "the forbidden command ran"
    assert "applying your rule" in proc.stderr + proc.stdout
    assert "applying your rule" in server.system_prompt()


def test_no_memory_removes_memory_conventions_and_tools(fake_llm, yuyao, env, repo):
    (repo / "MEMORY.md").write_text("- secret-ish memory line\n")
    (repo / "AGENTS.md").write_text("Always run make check.\n")
    server = fake_llm([say("a"), say("b")])
    assert yuyao("-p", "hi", env=env(server)).returncode == 0
    assert "secret-ish memory line" in server.system_prompt(0)
    assert "make check" in server.system_prompt(0)
    assert "memory-get" in server.tool_names(0)
    assert yuyao("-p", "Remember that x is y", "--no-memory", env=env(server)).returncode == 0
    prompt = server.system_prompt(1)
    assert "secret-ish memory line" not in prompt and "make check" not in prompt
    assert "memory-get" not in server.tool_names(1)
    assert "x is y" not in (repo / "MEMORY.md").read_text()


def test_memory_get_reads_memory_files_only(fake_llm, api, repo):
    (repo / "MEMORY.md").write_text("# M\n- one\n- two\n")
    (repo / ".env").write_text("API_KEY=sk-verysecret\n")
    server = fake_llm(
        [
            calls([("memory-get", {"path": "MEMORY.md:2-3"}, "g1")]),
            calls([("memory-get", {"path": ".env"}, "g2")]),
            say("done"),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("look at memory")
    ok = server.tool_result("g1")
    assert "- one" in ok and "- two" in ok and "# M" not in ok, ok
    refused = server.tool_result("g2")
    assert "reads only memory files" in refused and "verysecret" not in refused


def test_bootstrap_budget_truncates_the_injected_copy_and_context_says_so(
    fake_llm, api, repo, yuyao_home
):
    lines = "".join(f"- note number {i:03} about something worth remembering\n" for i in range(100))
    (repo / "MEMORY.md").write_text(lines)
    (yuyao_home / "config.toml").write_text("[memory]\nbootstrap_chars = 1500\n")
    server = fake_llm([say("ok")])
    s = api(server)
    s.chat("hi")
    prompt = server.system_prompt()
    assert "note number 099" in prompt and "note number 000" not in prompt
    assert "[memory truncated:" in prompt
    assert (repo / "MEMORY.md").read_text() == lines, "the file on disk stays whole"
    listing = s.dispatch("/context list")
    row = next(line for line in listing.splitlines() if line.strip().startswith("MEMORY.md"))
    raw_tok, sent_tok = (int(x) for x in row.split()[1:3])
    assert raw_tok > sent_tok > 0, listing
    detail = s.dispatch("/context detail")
    assert "cut to memory.bootstrap_chars" in detail and "note number 000" in detail, detail


def test_run_agent_reads_repo_memory_and_writes_only_to_out_dir(
    fake_llm, run_agent, env, repo, tmp_path, git_status
):
    (repo / "MEMORY.md").write_text("- The repo memory says hi\n")
    (repo / "AGENTS.md").write_text("Run make check before finishing.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "memory")
    task = tmp_path / "task.txt"
    task.write_text("Remember that the API lives in src/api")
    budget = tmp_path / "budget.json"
    budget.write_text('{"max_steps": 3}')
    out = tmp_path / "out"
    server = fake_llm([say("noted")])
    proc = run_agent(
        "--task-file",
        str(task),
        "--repo-dir",
        str(repo),
        "--model-base-url",
        server.url,
        "--model-name",
        "fake-model",
        "--model-api-key",
        server.api_key,
        "--budget-file",
        str(budget),
        "--out-dir",
        str(out),
        env=env(),
    )
    assert proc.returncode in (0, 1), proc.stderr
    prompt = server.system_prompt()
    assert "The repo memory says hi" in prompt and "make check" in prompt
    assert git_status(repo) == set(), "nothing is written into --repo-dir"
    assert (repo / "MEMORY.md").read_text() == "- The repo memory says hi\n"
    assert "the API lives in src/api" in (out / "memory" / "MEMORY.md").read_text()


def test_tui_offers_a_correction_with_one_key_and_shows_the_rule(fake_llm, env, repo):
    from test_tui import CTRL_D, yuyao_term

    server = fake_llm(
        [
            say("Understood."),
            calls([("bash", {"command": "npm install"}, "n1")]),
            say("Installed with bun instead."),
        ]
    )
    term = yuyao_term(env(server), repo, "--yolo")
    try:
        term.wait_ready()
        term.line("Use bun, not npm")
        term.wait_for(r"remember this preference\?")
        term.send("p")
        term.wait_for(r"Understood\.")
        text = (repo / "MEMORY.md").read_text()
        assert "Use bun, not npm" in text and "src:correction" in text, text
        term.line("install the dependencies")
        term.wait_for(r"applying your rule: use bun, not npm \(remembered \d{4}-\d\d-\d\d")
        term.wait_for(r"Installed with bun instead\.")
        # The rule reached the model: the first request after the correction carried it.
        assert "Use bun, not npm" in json.dumps(server.messages())
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_flush_before_compaction_appends_to_the_daily_note_only(fake_llm, api, repo, tmp_path):
    import datetime

    marker = tmp_path / "flush-ran-bash"
    server = fake_llm(
        [
            # Words only, claiming nothing: no completion check goes back to the model.
            say("Step one noted."),
            say("Step two noted."),
            calls(
                [
                    ("memory-append", {"text": "The user wants the parser split by Friday"}, "f1"),
                    ("bash", {"command": f"touch {marker}"}, "f2"),
                ]
            ),
            say("## Task\nsplit the parser\n## Current state\nstarted"),
            say("Continuing."),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("Split the parser into modules")
    s.chat("next")
    assert "compacted" in s.dispatch("/compact")
    systems = [server.system_prompt(r["index"]) for r in server.requests]
    assert systems[2].startswith("You keep a coding agent's memory"), "the flush runs first"
    assert systems[3].startswith("You summarize"), "then compaction proceeds"
    assert [t["function"]["name"] for t in server.body(2)["tools"]] == ["memory-append"]
    today = datetime.date.today().isoformat()
    note = (repo / "memory" / f"{today}.md").read_text()
    assert "The user wants the parser split by Friday" in note and "src:flush" in note, note
    assert not marker.exists(), "the flush can only append to the daily note"
    assert not any("flush" in json.dumps(m) for m in s.messages), "the flush is silent"
    trace = "".join(p.read_text() for p in (repo / ".trajectory").rglob("*") if p.is_file())
    assert '"memory_flush"' in trace
    s.chat("go on")
    # The new daily note entry reaches the model as a memory note.
    assert "split by Friday" in json.dumps(server.messages())


def test_agents_imports_and_a_nested_agents_file_join_the_context(fake_llm, api, repo):
    (repo / "docs").mkdir()
    (repo / "docs" / "rules.md").write_text("RULE-IMPORTED: run make check.\n")
    (repo / ".env").write_text("TOKEN=sk-do-not-leak\n")
    (repo / "AGENTS.md").write_text("# Project rules\n@docs/rules.md\n@.env\n")
    (repo / "web").mkdir()
    (repo / "web" / "AGENTS.md").write_text("WEB-NESTED: the web app uses bun.\n")
    (repo / "web" / "app.ts").write_text("export const x = 1;\n")
    server = fake_llm(
        [
            calls([("read", {"file_path": "web/app.ts"}, "r1")]),
            calls([("read", {"file_path": "web/app.ts"}, "r2")]),
            say("done"),
        ]
    )
    s = api(server, mode="yolo")
    s.chat("look at the web app")
    first = server.system_prompt(0)
    assert "RULE-IMPORTED" in first and "sk-do-not-leak" not in first
    assert "WEB-NESTED" not in json.dumps(server.messages(0))
    second = server.messages(1)
    assert server.system_prompt(1) == first, "the prefix is not rewritten"
    assert "WEB-NESTED" in json.dumps(second[1:]), second
    # Added once, not at every read below it.
    assert json.dumps(server.messages(2)).count("WEB-NESTED") == 1


def test_init_writes_agents_md_read_only_and_only_proposes_when_one_exists(fake_llm, api, repo):
    generated = "# AGENTS.md\n\n## Commands\n- test: `python -m pytest -q`\n- entry: calc.py\n"
    server = fake_llm(
        [
            calls([("glob", {"pattern": "**/*.py"}, "g1")]),
            calls([("write", {"file_path": "x.txt", "content": "no"}, "w1")]),
            say(f"Here it is:\n```markdown\n{generated}```"),
            say(f"```markdown\n{generated}- style: 4 spaces\n```"),
        ]
    )
    s = api(server, mode="yolo")
    out = s.dispatch("/init")
    assert "wrote" in out and (repo / "AGENTS.md").read_text() == generated
    assert "Permission mode: plan" in server.system_prompt(0), "explored read-only"
    assert not (repo / "x.txt").exists(), "no write during /init"
    assert re.search(r"mode\s+yolo", s.dispatch("/status")), "the mode is restored"
    # An existing AGENTS.md: agent_api gets the proposed additions, the file is untouched.
    out = s.dispatch("/init")
    assert "not changed" in out and "+- style: 4 spaces" in out, out
    assert (repo / "AGENTS.md").read_text() == generated
