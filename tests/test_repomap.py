"""The repo map (`--map-tokens`, issue 20) and `@SymbolName`, end to end against the scripted
model: what the model receives with its prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

ANSWER = "Here is what the code does, in detail."


def lib_project(repo: Path, n: int = 8) -> None:
    """n library files each defining one function, each called by its own consumer, and a
    core function every consumer calls."""
    (repo / "core.py").write_text("def popular(x):\n    return x\n")
    for i in range(n):
        (repo / f"lib_{i}.py").write_text(f"def func_{i}(v):\n    return v + {i}\n")
        (repo / f"consumer_{i}.py").write_text(
            f"from lib_{i} import func_{i}\nfrom core import popular\n\n"
            f"print(func_{i}(popular(1)))\n"
        )


def contents(messages: list[dict]) -> list[str]:
    return [m["content"] if isinstance(m.get("content"), str) else "" for m in messages]


def maps_in(server, i: int) -> list[str]:
    """The repo map notes of request ``i``, in order (a note shares its prompt's message
    on the wire: consecutive user messages are merged, blank line between)."""
    return [
        part
        for t in contents(server.messages(i))
        for part in t.split("\n\n")
        if part.startswith("[repo map]")
    ]


def map_in(server, i: int) -> str:
    """The last repo map note in request ``i`` ("" when none)."""
    maps = maps_in(server, i)
    return maps[-1] if maps else ""


def test_map_is_a_request_note_before_the_prompt_on_by_default(
    fake_llm, yuyao, env, repo, yuyao_home
):
    lib_project(repo)
    server = fake_llm([say(ANSWER), say(ANSWER)])
    proc = yuyao("-p", "Explain the project.", env=env(server))
    assert proc.returncode == 0, proc.stderr
    # The system prompt stays the fixed one; the map is a note just before the prompt.
    assert "[repo map]" not in server.system_prompt(0)
    prompt = [t for t in contents(server.messages(0)) if "Explain the project." in t]
    assert len(prompt) == 1 and prompt[0].endswith("\n\nExplain the project."), prompt
    assert prompt[0].startswith("[repo map]"), prompt
    m = map_in(server, 0)
    # The function every consumer calls ranks first.
    first_file = m.splitlines()[1]
    assert first_file == "core.py:", m
    assert "1│def popular(x):" in m
    # Cached by mtime under the yuyao home.
    assert list((yuyao_home / "repomap").glob("*.json"))

    proc = yuyao("-p", "Explain the project.", "--map-tokens", "0", env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "[repo map]" not in server.user_text(1)


def test_the_stored_prompt_is_what_the_user_typed(core_session, fake_llm, repo):
    """The map is in the request, never in the history (sessions, exports, /rewind)."""
    lib_project(repo)
    server = fake_llm([say(ANSWER)])
    s = core_session(server)
    s.chat("Explain the project.")
    assert "[repo map]" in server.user_text(0)
    stored = json.loads(s.messages_json())
    users = [m["content"] for m in stored if m["role"] == "user"]
    assert users == ["Explain the project."], users
    assert "[repo map]" not in json.dumps(stored)


def position(m: str, file: str) -> int:
    i = m.find(f"\n{file}:\n")
    return i if i >= 0 else 10**9


def test_budget_and_focus(fake_llm, yuyao, env, repo):
    """The map fits its budget; the function every file calls ranks first; a prompt naming
    consumer_5.py puts what that file uses before the other libraries."""
    lib_project(repo)
    server = fake_llm([say(ANSWER), say(ANSWER), say(ANSWER)])
    assert yuyao("-p", "Explain.", "--map-tokens", "60", env=env(server)).returncode == 0
    small = map_in(server, 0)
    assert 0 < len(small) <= 60 * 4, small
    assert position(small, "core.py") < position(small, "lib_0.py"), small
    assert "lib_5.py" not in small, small
    proc = yuyao("-p", "Why does consumer_5.py print 6?", "--map-tokens", "60", env=env(server))
    assert proc.returncode == 0, proc.stderr
    focused = map_in(server, 1)
    assert len(focused) <= 60 * 4, focused
    assert "def func_5(v):" in focused, focused
    assert position(focused, "lib_5.py") < position(focused, "lib_0.py"), focused
    # A large budget lists every definition.
    assert yuyao("-p", "Explain.", "--map-tokens", "4000", env=env(server)).returncode == 0
    big = map_in(server, 2)
    assert all(f"def func_{i}(v):" in big for i in range(8)), big


class Events:
    def event(self, _event_json: str) -> None:
        pass

    def request(self, _request_json: str) -> str:
        return "deny"


@pytest.fixture
def core_session(use_env, repo):
    """``core_session(server, **options)`` -> a core Session in yolo mode in ``repo``."""
    from yuyao import _core

    opened = []

    def open_session(server, **options):
        use_env(server)
        opts = {"cwd": str(repo), "mode": "yolo", "stream": False, **options}
        opened.append(_core.Session(json.dumps(opts), Events()))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


def test_files_the_session_read_lead_the_ranking(core_session, fake_llm, repo):
    """Personalised by the files read in the session: after consumer_3.py was read, the next
    prompt's map puts what that file uses before the other libraries."""
    lib_project(repo)
    read = calls([("read", {"file_path": "consumer_3.py"}, "c_read")])
    server = fake_llm([say(ANSWER), read, say(ANSWER), say(ANSWER)])
    s = core_session(server, map_tokens=1024)
    s.chat("Explain.")
    before = map_in(server, 0)
    assert position(before, "lib_0.py") < position(before, "lib_3.py"), before
    s.chat("Read consumer 3.")
    (repo / "touch.py").write_text("def touched():\n    pass\n")  # the map changes: sent again
    s.chat("And now?")
    after = map_in(server, 3)
    assert position(after, "lib_3.py") < position(after, "lib_0.py"), after


def test_requests_stay_append_only_and_the_map_is_not_repeated(core_session, fake_llm, repo):
    lib_project(repo)
    server = fake_llm([say(ANSWER), say(ANSWER), say(ANSWER)])
    s = core_session(server, map_tokens=1024)
    s.chat("Explain the project.")
    s.chat("And again.")
    first, second = server.messages(0), server.messages(1)
    assert second[: len(first)] == first
    assert sum("[repo map]" in str(m.get("content")) for m in second) == 1
    # A new definition changes the map: a new note goes before the new prompt; the old one
    # stays where it was (the prefix is not rewritten).
    (repo / "extra.py").write_text("from core import popular\n\ndef brand_new():\n    popular(2)\n")
    s.chat("Third.")
    third = server.messages(2)
    assert third[: len(second)] == second
    maps = maps_in(server, 2)
    assert len(maps) == 2, maps
    assert "brand_new" in maps[1] and "brand_new" not in maps[0]
    assert [t for t in contents(third) if t.endswith("Third.")][0].startswith("[repo map]")
    listing = s.dispatch("/context list")
    assert "repo map:" in listing and "brand_new" in listing, listing


def test_at_symbol_resolves_to_the_definition(fake_llm, yuyao, env, repo):
    lib_project(repo)
    (repo / "twice_a.py").write_text("def helper():\n    return 'a'\n")
    (repo / "twice_b.py").write_text("def helper():\n    return 'b'\n")
    server = fake_llm([say(ANSWER), say(ANSWER)])
    proc = yuyao("-p", "What does @popular do?", "--map-tokens", "0", env=env(server))
    assert proc.returncode == 0, proc.stderr
    text = server.user_text(0)
    assert "[@popular: function popular in core.py, lines 1-2]" in text, text
    assert "    return x" in text
    proc = yuyao("-p", "Which @helper is used?", "--map-tokens", "0", env=env(server))
    assert proc.returncode == 0, proc.stderr
    text = server.user_text(1)
    assert "[@helper is ambiguous: 2 definitions" in text, text
    assert "twice_a.py:1" in text and "twice_b.py:1" in text


def test_secret_and_ignored_files_stay_out(fake_llm, yuyao, env, repo):
    lib_project(repo, n=2)
    (repo / "settings.py").write_text(
        'API_TOKEN = "s3cr3t-value-123456"\n\ndef load():\n    pass\n'
    )
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "gen.py").write_text("def generated_thing():\n    pass\n")
    server = fake_llm([say(ANSWER)])
    proc = yuyao("-p", "Explain.", "--map-tokens", "4000", env=env(server))
    assert proc.returncode == 0, proc.stderr
    m = map_in(server, 0)
    assert "popular" in m and "generated_thing" not in m, m
    # A constant is listed by name; its value (a secret here) never is.
    assert "API_TOKEN = …" in m and "s3cr3t" not in m, m
