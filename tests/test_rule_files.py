"""Rule files (seed 002 §7): `.yuyao/rules/*.md`, `.cursor/rules/*.mdc`, `.claude/rules/*.md`. A
path rule joins the context once, appended after a matching file is read (the earlier requests
are untouched); an always-rule is there from the first request; `/context list` names them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import call, durable, say

pytestmark = pytest.mark.core


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_rule_injected_only_after_a_matching_file_is_read(fake_llm, api, repo):
    put(
        repo / ".yuyao" / "rules" / "api.md",
        '---\npaths: ["src/api/**"]\n---\nRULE-API: handlers return Result.\n',
    )
    put(
        repo / ".cursor" / "rules" / "py.mdc",
        '---\nglobs: "*.py"\nalwaysApply: false\n---\nRULE-PY: type hints.\n',
    )
    put(repo / ".claude" / "rules" / "style.md", "RULE-ALWAYS: be brief.\n")
    put(repo / "src" / "api" / "handler.rs", "fn h() {}\n")
    server = fake_llm(
        [
            call("read", file_path="README.md"),
            call("read", file_path="src/api/handler.rs"),
            call("read", file_path="src/api/handler.rs"),
            say("Read."),
        ]
    )
    s = api(server)
    s.chat("look around")
    sent = [json.dumps(server.messages(i)) for i in range(4)]
    assert "RULE-ALWAYS" in sent[0], "an always-rule is in the first request"
    assert "RULE-API" not in sent[0] and "RULE-API" not in sent[1]
    assert "RULE-API" in sent[2], "the matching read did not bring the rule in"
    assert sent[3].count("RULE-API") == 1, "a rule joins the context once"
    assert "RULE-PY" not in sent[3], "no .py file was read"
    kept = durable(server.messages(1))  # less its one-request note, if any
    assert server.messages(2)[: len(kept)] == kept, (
        "the rule must be appended, not rewrite the earlier messages"
    )
    listing = s.dispatch("/context list")
    assert ".yuyao/rules/api.md (matches src/api/handler.rs)" in listing, listing
    assert ".claude/rules/style.md (always applies)" in listing
    assert "py.mdc" not in listing


def test_bad_rule_is_skipped_with_a_warning(fake_llm, env, yuyao, repo):
    put(repo / ".yuyao" / "rules" / "bad.md", '---\nglobs: ["a/["]\n---\nx\n')
    put(repo / ".yuyao" / "rules" / "good.md", "RULE-GOOD\n")
    server = fake_llm([say("Hello there.")])
    proc = yuyao("-p", "hi", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "bad.md" in proc.stderr and "line" in proc.stderr, proc.stderr
    assert "RULE-GOOD" in json.dumps(server.messages(0))
