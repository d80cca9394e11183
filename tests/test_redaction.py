"""Secrets stay out of requests, whatever program printed them (DESIGN §5, redaction).

The scripted model tries every way of getting a `.env` value (and key material) into a tool
result, in yolo so everything runs; the requests the fake model received decide: the value
appears in none of them, the redaction marker does. Naming the file with `@.env` lets it
through.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

SECRET = "s3cr3t-value-123456"
MARKER = "[redacted: value from .env]"
GH_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)

# Each form put the .env value into a request before redaction existed (DESIGN §5).
EXFILTRATION = [
    "grep -r SECRET .",
    "cat < .env",
    "cat .e?v",
    'echo "$(<.env)"',
    "cat $(echo .env)",
    "python3 -c \"print(open('.e'+'nv').read())\"",
]


@pytest.fixture
def secret_repo(repo: Path) -> Path:
    (repo / ".env").write_text(f"# local settings\nSECRET_TOKEN={SECRET}\nDEBUG=true\n")
    (repo / ".gitignore").write_text(".env\n")
    # The same value copied into an ordinary file, and key material in another.
    (repo / "settings.py").write_text(f'TOKEN = "{SECRET}"\n')
    (repo / "notes.txt").write_text(f"deploy token {GH_TOKEN}\n{PRIVATE_KEY}end of notes\n")
    return repo


@pytest.fixture
def open_session(use_env, secret_repo):
    from yuyao.agent_api import create_session

    opened = []

    def make(server, **kwargs):
        use_env(server)
        opened.append(create_session(cwd=str(secret_repo), **kwargs))
        return opened[-1]

    yield make
    for s in opened:
        s.close()


def all_requests(server) -> str:
    return "\n".join(json.dumps(r["body"]) for r in server.requests)


def test_no_exfiltration_form_puts_the_value_in_a_request(fake_llm, open_session, tmp_path):
    items = [("bash", {"command": c}, f"b{i}") for i, c in enumerate(EXFILTRATION)]
    items += [
        ("grep", {"pattern": "TOKEN|token", "path": ".", "output_mode": "content"}, "grep"),
        ("read", {"file_path": "settings.py"}, "read"),
        ("read", {"file_path": "notes.txt"}, "notes"),
        ("bash", {"command": "sleep 0.2; cat < .env", "run_in_background": True}, "bg"),
        ("monitor", {"command": "cat < .env; sleep 0.2"}, "mon"),
        ("bash", {"command": "printf 'test-key-%s\\n' 123"}, "key"),
    ]
    server = fake_llm(
        [
            calls(items),
            calls([("bash", {"command": "sleep 1.2"}, "wait")]),
            calls([("bg-output", {"id": "bash_1"}, "bgout")]),
            say("done"),
        ]
    )
    s = open_session(server, mode="yolo")
    s.chat("look around")
    sent = all_requests(server)
    assert SECRET not in sent
    assert GH_TOKEN not in sent
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in sent
    # The key of the model itself (conftest's API_KEY) is redacted too.
    assert "test-key-123" not in sent
    assert "[redacted: the model API key]" in server.tool_result("key")
    r = server.tool_result
    # Each form that ran shows the marker where the value was.
    ran = 0
    for i, cmd in enumerate(EXFILTRATION):
        result = r(f"b{i}")
        assert result is not None, cmd
        if "Refused" not in result:
            ran += 1
            assert MARKER in result, (cmd, result)
    assert ran >= 4, "most forms must run (and be redacted), not merely be refused"
    assert "SECRET_TOKEN=" + MARKER in r("b1")
    assert MARKER in r("grep") and MARKER in r("read")
    notes = r("notes")
    assert "[redacted: GitHub token]" in notes and "[redacted: private key]" in notes
    assert "end of notes" in notes
    assert MARKER in r("bgout"), r("bgout")
    injected = [
        str(m["content"])
        for i in range(len(server.requests))
        for m in server.messages(i)
        if m["role"] == "user"
        and "monitor_1" in str(m["content"])
        and "reported" in str(m["content"])
    ]
    assert injected and all(MARKER in t for t in injected), injected


def test_a_long_result_and_its_spill_file_reach_the_model_redacted(
    fake_llm, open_session, secret_repo
):
    """The capped result is redacted, and whatever route the model takes back to the full
    output (read, grep, cat of the spill file) comes back redacted too."""
    cmd = "for i in $(seq 1 3000); do cat < .env; done"

    def read_the_spill(body, _index):
        last = [m for m in body["messages"] if m["role"] == "tool"][-1]["content"]
        text = last if isinstance(last, str) else json.dumps(last)
        spill = text.split(" is in ")[1].split(";")[0].strip()
        return calls(
            [
                ("read", {"file_path": spill, "limit": 50}, "r"),
                ("bash", {"command": f"tail -c 2000 {spill}"}, "t"),
                ("grep", {"pattern": "SECRET", "path": spill, "output_mode": "content"}, "g"),
            ]
        )

    server = fake_llm([calls([("bash", {"command": cmd}, "long")]), read_the_spill, say("ok")])
    s = open_session(server, mode="yolo")
    s.chat("long output")
    result = server.tool_result("long")
    assert "output truncated" in result, result[:300]
    assert MARKER in result
    for call_id in ("r", "t", "g"):
        assert MARKER in server.tool_result(call_id), server.tool_result(call_id)[:300]
    assert SECRET not in all_requests(server)


def test_named_file_is_visible(fake_llm, open_session):
    server = fake_llm([calls([("bash", {"command": "cat < .env"}, "c")]), say("ok")])
    s = open_session(server, mode="yolo")
    s.chat("what is in @.env ?")
    assert SECRET in server.tool_result("c")
    # Other files' key material stays redacted.
    server2 = fake_llm([calls([("read", {"file_path": "notes.txt"}, "n")]), say("ok")])
    s2 = open_session(server2, mode="yolo")
    s2.chat("read the notes")
    assert GH_TOKEN not in all_requests(server2)


def test_a_changed_env_file_is_picked_up(fake_llm, open_session, secret_repo):
    server = fake_llm(
        [
            calls([("bash", {"command": "cat < .env"}, "c1")]),
            say("ok"),
        ]
    )
    s = open_session(server, mode="yolo")
    s.chat("first")
    assert MARKER in server.tool_result("c1")
    time.sleep(0.05)
    (secret_repo / ".env").write_text("OTHER_TOKEN=rotated-value-987654\n")
    server2 = fake_llm([calls([("bash", {"command": "cat < .env"}, "c3")]), say("ok")])
    s2 = open_session(server2, mode="yolo")
    s2.chat("again")
    assert "rotated-value-987654" not in all_requests(server2)
    assert MARKER in server2.tool_result("c3")


def test_the_users_own_shell_output_reaches_the_model_redacted(fake_llm, open_session):
    """`!cat .env` shows the user everything; the copy recorded for the model is redacted."""
    server = fake_llm([say("noted")])
    s = open_session(server, mode="yolo")
    shown = s._core.user_shell("cat .env")
    assert SECRET in shown
    s.chat("what did I just run?")
    body = all_requests(server)
    assert SECRET not in body
    assert MARKER in body
