"""Memory that maintains itself, on the backend the user picks (seed 002 §6.3, §6.4), end to end
through agent_api and the scripted model:

- periodic dreaming in a live session: with `dreaming.enabled` a dream runs every
  `dreaming.interval_minutes` between turns, removes a stale entry, keeps the record in DREAMS.md,
  the trace and a notice, and makes no model call when there is nothing to do;
- `memory.backend = "mcp"`: a real memory service from PyPI (mcp-memory-service, installed by
  ./scripts/test.sh into a venv of its own) takes `/remember`; memory-search finds the entry in
  the next session, which starts with it in its memory section, and `/memory` lists it;
- a service that is down: one warning, and the built-in files serve;
- a repository cannot choose the memory backend.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from pathlib import Path

import pytest
from fakellm import Events, call, say

pytestmark = pytest.mark.core

# ./scripts/test.sh installs the service into <test venv>/memory-service.
SERVICE_BIN = Path(sys.prefix) / "memory-service" / "bin" / "memory"
needs_service = pytest.mark.skipif(
    not SERVICE_BIN.is_file(),
    reason="mcp-memory-service is not installed (./scripts/test.sh venv stage; it needs a "
    "Python whose sqlite3 loads extensions)",
)


def open_core(repo: Path, events: Events, **options):
    from yuyao import _core

    opts = {"cwd": str(repo), "stream": False, **options}
    return _core.Session(json.dumps(opts), events)


def trace(repo: Path) -> list[dict]:
    return [
        json.loads(line)
        for f in sorted((repo / ".trajectory").rglob("*.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip()
    ]


def today() -> str:
    return datetime.date.today().isoformat()


# ---------------------------------------------------------------------------------------------
# Periodic dreaming


HAND = "# Project memory\n\n- Never deploy to production on Fridays.\n"
REMEMBERED = (
    "- The API lives in src/api. <!-- id:m1111 when:2025-01-02 scope:project "
    'why:"user said: the API lives in src/api" src:remember -->\n'
)
AGED = (
    "- The nightly job reseeds staging. <!-- id:m2222 when:2025-01-03 scope:project "
    'why:"dreaming: recalled 2 times by 2 queries, from memory/2025-01-01.md" src:dream -->\n'
)


def test_periodic_dreaming_removes_a_stale_entry_between_turns(fake_llm, use_env, repo, yuyao_home):
    (repo / "MEMORY.md").write_text(HAND + REMEMBERED + AGED)
    # 0.02 minutes: a dream every 1.2 s.
    (yuyao_home / "config.toml").write_text("[dreaming]\nenabled = true\ninterval_minutes = 0.02\n")
    server = fake_llm([say("hello"), say("One stale entry the dreaming wrote was dropped.")])
    use_env(server)
    events = Events()
    s = open_core(repo, events)
    try:
        s.chat("hi")
        journal = repo / "DREAMS.md"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not journal.exists():
            time.sleep(0.2)
        assert journal.exists(), "no periodic dream ran in the live session"
        # Two more intervals: nothing left to do, so no second dream and no model call.
        time.sleep(3)
        text = journal.read_text()
        assert text.count("## Dream ") == 1, text
        assert len(server.requests) == 2, "a dream with nothing to do called the model"

        # The aged dream-written entry went; the user's own lines stayed, byte for byte.
        assert (repo / "MEMORY.md").read_text() == HAND + REMEMBERED
        assert "One stale entry the dreaming wrote was dropped." in text
        assert (
            '- removed: "The nightly job reseeds staging." (entry m2222, MEMORY.md line 5: '
            "written by dream on 2025-01-03, older than 60 days and never recalled)"
        ) in text, text

        dreams = [
            r for r in trace(repo) if r.get("kind") == "dream" and "periodic" in json.dumps(r)
        ]
        assert dreams, "the periodic dream is not in the trace"
        assert "m2222" in json.dumps(dreams[0])
        assert any(n.startswith("dreaming (every 1 s)") for n in events.notices()), events.notices()
    finally:
        s.close()


def test_a_periodic_dream_past_the_spend_ceiling_makes_no_model_call(
    fake_llm, use_env, repo, yuyao_home
):
    (repo / "MEMORY.md").write_text(HAND + AGED)
    (yuyao_home / "config.toml").write_text("[dreaming]\nenabled = true\ninterval_minutes = 0.02\n")
    # The turn's one call spends $0.02 of a $0.01 ceiling: nothing is left for the dream.
    usage = {"prompt_tokens": 20000, "completion_tokens": 10, "total_tokens": 20010}
    server = fake_llm([say("hello", usage=usage), say("never asked")])
    prices = {"input_cost_per_token": 0.000001, "output_cost_per_token": 0.000001}
    use_env(server, D2A_MODEL_COST=json.dumps(prices))
    s = open_core(repo, Events(), max_cost_usd=0.01)
    try:
        s.chat("hi")
        journal = repo / "DREAMS.md"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not journal.exists():
            time.sleep(0.2)
        assert journal.exists(), "no periodic dream ran"
        assert len(server.requests) == 1, "the dream called the model past the ceiling"
        # The decided facts are journaled without a worded summary; the entry still went.
        text = journal.read_text()
        assert "never asked" not in text and "1 removed as stale" in text, text
        assert (repo / "MEMORY.md").read_text() == HAND
        dreams = [r for r in trace(repo) if r.get("kind") == "dream"]
        assert dreams and dreams[0].get("summary_error"), dreams
    finally:
        s.close()


def test_no_periodic_dream_without_dreaming_enabled(fake_llm, use_env, repo, yuyao_home):
    (repo / "MEMORY.md").write_text(HAND + AGED)
    (yuyao_home / "config.toml").write_text("[dreaming]\ninterval_minutes = 0.02\n")
    server = fake_llm([say("hello")])
    use_env(server)
    s = open_core(repo, Events())
    try:
        s.chat("hi")
        time.sleep(3)
        assert not (repo / "DREAMS.md").exists()
        assert (repo / "MEMORY.md").read_text() == HAND + AGED
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------
# The backend


def test_a_repository_cannot_choose_the_memory_backend(fake_llm, api, repo, yuyao_home):
    marker = repo.parent / "project-server-ran"
    (repo / ".yuyao").mkdir()
    (repo / ".yuyao" / "config.toml").write_text(
        '[memory]\nbackend = "mcp"\nmcp_server = "proj"\n'
        "[dreaming]\nstale_days = 1\ninterval_minutes = 0.01\n"
    )
    (repo / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"proj": {"command": "touch", "args": [str(marker)]}}})
    )
    server = fake_llm([say("ok")])
    s = api(server)
    status = s.dispatch("/memory status")
    assert status.splitlines()[0] == "backend: builtin (MEMORY.md files and the local index)", (
        status
    )
    assert "memory service" not in s.dispatch("/remember Use bun, not npm.")
    assert "Use bun, not npm." in (repo / "MEMORY.md").read_text()
    s.close()

    # The user names it, but it is only the project's: refused, said once, builtin serves.
    (yuyao_home / "config.toml").write_text('[memory]\nbackend = "mcp"\nmcp_server = "proj"\n')
    s = api(server)
    status = s.dispatch("/memory status")
    assert "is not a server of" in status and "a project's .mcp.json cannot be" in status, status
    assert "memory service" not in s.dispatch("/remember Use ruff, not flake8.")
    assert not marker.exists()


def test_a_service_that_is_down_falls_back_to_the_files_with_one_warning(
    fake_llm, use_env, repo, yuyao_home
):
    (yuyao_home / "mcp.json").write_text(
        json.dumps({"mcpServers": {"memsvc": {"command": "sh", "args": ["-c", "exit 3"]}}})
    )
    (yuyao_home / "config.toml").write_text(
        '[memory]\nbackend = "mcp"\nmcp_server = "memsvc"\n[mcp]\nstartup_timeout_ms = 3000\n'
    )
    server = fake_llm(
        [
            call("memory-search", query="which package manager"),
            say("bun"),
        ]
    )
    use_env(server)
    events = Events()
    s = open_core(repo, events)
    try:
        first = s.dispatch("/remember Use bun, not npm.")
        second = s.dispatch("/remember The API lives in src/api.")
        assert "remembered in" in first and str(repo / "MEMORY.md") in first, first
        assert str(repo / "MEMORY.md") in second, second
        memory = (repo / "MEMORY.md").read_text()
        assert "Use bun, not npm." in memory and "The API lives in src/api." in memory
        s.chat("which package manager do we use?")
        assert "Use bun, not npm." in server.tool_result("call_0_0")
        warned = [n for n in events.notices() if "memsvc" in n]
        assert len(warned) == 1, events.notices()
        assert warned[0].startswith("memory service 'memsvc' is unavailable ("), warned
        assert "using the built-in memory files" in warned[0]
        assert "backend: builtin (memory service 'memsvc' unavailable" in s.dispatch(
            "/memory status"
        )
    finally:
        s.close()


@needs_service
def test_remember_search_bootstrap_and_list_on_a_real_memory_service(
    fake_llm, use_env, repo, yuyao_home, tmp_path
):
    # Confined like every MCP server, the service writes in the temp dir (not in ~/.yuyao).
    db = tmp_path / "memory-service"
    db.mkdir()
    entry = {
        "command": str(SERVICE_BIN),
        "args": ["server"],
        "env": {
            # Its default base folder (~/.local/share) is read-only in the confinement.
            "MCP_MEMORY_BASE_DIR": str(db),
            "MCP_MEMORY_SQLITE_PATH": str(db / "memory.db"),
            "MCP_MEMORY_BACKUPS_PATH": str(db / "backups"),
            # No embedding model is installed or downloaded: its hash embeddings serve.
            "MCP_MEMORY_ALLOW_HASH_EMBEDDINGS": "1",
            "HF_HUB_OFFLINE": "1",
            "MCP_MEMORY_OFFLINE": "1",
        },
    }
    (yuyao_home / "mcp.json").write_text(json.dumps({"mcpServers": {"memsvc": entry}}))
    (yuyao_home / "config.toml").write_text(
        '[memory]\nbackend = "mcp"\nmcp_server = "memsvc"\n[mcp]\nstartup_timeout_ms = 60000\n'
    )

    server = fake_llm(
        [
            say("noted"),
            call("memory-search", query="staging database name", k=3),
            say("It is db-stage-7."),
            call("bash", command="npm install"),
            say("refused"),
        ]
    )
    use_env(server)
    events = Events()
    s = open_core(repo, events)
    try:
        said = s.dispatch("/remember The staging database is called db-stage-7.")
        assert (
            said
            == "remembered in memory service 'memsvc': The staging database is called db-stage-7."
        ), (said, events.notices())
        s.chat("Remember that the deploy script is scripts/ship.sh")
        assert any(
            n.startswith("remembered in memory service 'memsvc': ") and "scripts/ship.sh" in n
            for n in events.notices()
        ), events.notices()
        assert "memory service 'memsvc'" in s.dispatch("/remember Use bun, not npm.")
        assert not (repo / "MEMORY.md").exists(), "the service holds the memory, not the files"
        assert "backend: mcp (memory service 'memsvc')" in s.dispatch("/memory status")
    finally:
        s.close()

    # The next session: it starts with the service's entries, finds them, lists them, and
    # enforces the rule one states.
    events = Events()
    s = open_core(repo, events, mode="yolo")
    try:
        s.chat("what is the staging database called?")
        prompt = server.system_prompt(1)
        assert "Memory service 'memsvc'" in prompt and "db-stage-7" in prompt, prompt
        found = server.tool_result("call_1_0")
        assert found.startswith("memory service 'memsvc':"), found
        assert "db-stage-7" in found, found
        listing = s.dispatch("/memory")
        assert listing.startswith("memory service 'memsvc' (recent entries):"), listing
        assert "db-stage-7" in listing and "scripts/ship.sh" in listing, listing
        assert not [n for n in events.notices() if "unavailable" in n], events.notices()
        s.chat("install the dependencies")
        refused = server.tool_result("call_3_0")
        assert refused.startswith(f"applying your rule: use bun, not npm (remembered {today()}"), (
            refused
        )
    finally:
        s.close()
    assert not (repo / "MEMORY.md").exists()
    # It really is the service's store: its database holds the entries.
    assert (db / "memory.db").is_file()
    os.sync()


# ---------------------------------------------------------------------------------------------
# The keys take effect in a live session (joined to test_settings_live.py's table)


def _set(s, key: str, value: str) -> str:
    return s.dispatch(f"/config set {key} {value}")


def effect_dream_interval(fake_llm, live, repo, **_):
    (repo / "MEMORY.md").write_text(HAND + AGED)
    server = fake_llm([say("one"), say("Dropped one stale entry.")])
    s, events = live(server)
    _set(s, "dreaming.enabled", "true")
    time.sleep(1.5)
    assert not (repo / "DREAMS.md").exists(), "the default interval is an hour"
    _set(s, "dreaming.interval_minutes", "0.02")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (repo / "DREAMS.md").exists():
        time.sleep(0.2)
    assert "Dropped one stale entry." in (repo / "DREAMS.md").read_text()
    assert (repo / "MEMORY.md").read_text() == HAND


def effect_stale_days(fake_llm, live, repo, **_):
    ten_days_ago = (datetime.date.today() - datetime.timedelta(days=10)).isoformat()
    entry = (
        f"- Builds are cached in .cache/b. <!-- id:m3333 when:{ten_days_ago} scope:project "
        'why:"memory flush before compaction" src:flush -->\n'
    )
    (repo / "MEMORY.md").write_text(HAND + entry)
    server = fake_llm([say("one"), say("Nothing stale."), say("One stale entry removed.")])
    s, _ = live(server)
    assert "0 removed as stale" in s.dispatch("/dream")
    assert (repo / "MEMORY.md").read_text() == HAND + entry
    _set(s, "dreaming.stale_days", "7")
    out = s.dispatch("/dream")
    assert "1 removed as stale" in out and "older than 7 days and never recalled" in out, out
    assert (repo / "MEMORY.md").read_text() == HAND


def effect_memory_backend(fake_llm, live, **_):
    server = fake_llm([say("one")])
    s, _ = live(server)
    assert "backend: builtin (MEMORY.md" in s.dispatch("/memory status")
    _set(s, "memory.backend", "mcp")
    status = s.dispatch("/memory status")
    assert "backend: builtin (memory.backend = mcp needs memory.mcp_server" in status, status


def effect_memory_mcp_server(fake_llm, live, **_):
    server = fake_llm([say("one")])
    s, _ = live(server)
    _set(s, "memory.backend", "mcp")
    _set(s, "memory.mcp_server", "nosuch")
    status = s.dispatch("/memory status")
    assert "memory.mcp_server 'nosuch' is not a server of" in status, status


LIVE_EFFECTS = {
    "dreaming.interval_minutes": effect_dream_interval,
    "dreaming.stale_days": effect_stale_days,
    "memory.backend": effect_memory_backend,
    "memory.mcp_server": effect_memory_mcp_server,
}
