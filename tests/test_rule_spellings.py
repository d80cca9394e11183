"""Rules mean the same for every spelling, end to end (DESIGN: the policy judges what a call
does, not how it is written): `Read(...)` denies in grep's folder walks, wrappers and config
sources of the shell tables, the model key of agent_api sessions, atomic-write leftovers.

The scripted model proposes the hostile call; what the user would observe decides (the
secret in a tool result, the victim file still on disk, the patch).
"""

from __future__ import annotations

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

SECRET = "s3cr3t-canary-9f2e"


def steps(items: list) -> list:
    """One reply with every tool call, then a final answer."""
    return [calls(items), say("Done; the results are above.")]


# ---------------------------------------------------------------------------------------------
# grep honours Read(...) denies in folder walks and glob filters


def plant_secrets(repo) -> None:
    (repo / "secrets").mkdir()
    (repo / "secrets" / "prod.txt").write_text(f"token = {SECRET}\n")
    (repo / "secrets" / "deep").mkdir()
    (repo / "secrets" / "deep" / "more.txt").write_text(f"again {SECRET}\n")
    (repo / "config.local").write_text(f"password {SECRET}\n")
    (repo / "notes.txt").write_text(f"public mention of the word token, not {SECRET[:6]}\n")


GREPS = [
    {"pattern": SECRET, "output_mode": "content"},
    {"pattern": SECRET, "path": ".", "output_mode": "content"},
    {"pattern": SECRET, "glob": "*.txt", "output_mode": "content"},
    {"pattern": SECRET, "glob": "**/*", "output_mode": "count"},
    {"pattern": SECRET, "path": "secrets", "output_mode": "content"},
    {"pattern": SECRET, "output_mode": "files_with_matches"},
    {"pattern": "s3cr3t", "path": "secrets/deep", "glob": "*.txt", "output_mode": "content"},
]


def test_grep_folder_walks_honour_read_denies(fake_llm, api, repo):
    plant_secrets(repo)
    items = [("grep", args, f"g{i}") for i, args in enumerate(GREPS)]
    server = fake_llm(steps(items))
    s = api(server, mode="yolo", deny=["Read(secrets/**)", "Read(config.local)"])
    s.chat("find the token")
    for i, args in enumerate(GREPS):
        result = server.tool_result(f"g{i}") or ""
        assert SECRET not in result, (args, result)
        assert "prod.txt" not in result and "more.txt" not in result, (args, result)
        assert "config.local" not in result, (args, result)


def test_grep_still_finds_what_no_rule_denies(fake_llm, api, repo):
    plant_secrets(repo)
    server = fake_llm(steps([("grep", {"pattern": SECRET, "output_mode": "content"}, "g")]))
    s = api(server, mode="yolo", deny=["Read(secrets/**)"])
    s.chat("find the token")
    assert "config.local" in (server.tool_result("g") or "")
