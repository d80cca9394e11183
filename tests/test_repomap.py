"""The repo map (`--map-tokens`, seed 002 §4) and `@SymbolName`, end to end against the scripted
model: what the model receives with its prompt."""

from __future__ import annotations

import json
import os
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

    def open_session(server, _env=None, **options):
        use_env(server, **(_env or {}))
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


def polyglot_project(repo: Path) -> None:
    """One small file per language; every file calls `checksum`, defined in C."""
    (repo / "web").mkdir()
    (repo / "web" / "cart.js").write_text(
        "export class Cart {\n  total() {\n    return checksum(this.items);\n  }\n}\n"
    )
    (repo / "web" / "price.ts").write_text(
        "export interface Priced {\n  price(): number;\n}\n"
        "export function discount(p: Priced): number {\n  return checksum(p.price());\n}\n"
    )
    (repo / "svc").mkdir()
    (repo / "svc" / "ledger.go").write_text(
        "package svc\n\ntype Ledger struct {\n\tRows []int\n}\n\n"
        "func (l *Ledger) Balance() int {\n\treturn checksum(l.Rows)\n}\n"
    )
    (repo / "Invoice.java").write_text(
        "public class Invoice {\n  int amount() {\n    return Native.checksum(1);\n  }\n}\n"
    )
    (repo / "native").mkdir()
    (repo / "native" / "sum.h").write_text("int checksum(const int *xs, int n);\n")
    (repo / "native" / "sum.c").write_text(
        '#include "sum.h"\nint checksum(const int *xs, int n) {\n'
        "  int s = 0;\n  for (int i = 0; i < n; i++) s += xs[i];\n  return s;\n}\n"
    )
    (repo / "native" / "geo.cpp").write_text(
        "namespace geo {\nclass Shape {\n public:\n  int sides() { return checksum(0, 4); }\n};\n}\n"
        "int scaled_area(int k) {\n  return k * 2;\n}\n"
    )


def test_map_and_at_symbol_in_six_more_languages(fake_llm, yuyao, env, repo):
    polyglot_project(repo)
    server = fake_llm([say(ANSWER), say(ANSWER)])
    assert yuyao("-p", "Explain.", env=env(server)).returncode == 0
    m = map_in(server, 0)
    for line in [
        "web/cart.js:",
        "export class Cart {",
        "web/price.ts:",
        "export interface Priced {",
        "export function discount(p: Priced): number {",
        "svc/ledger.go:",
        "type Ledger struct {",
        "func (l *Ledger) Balance() int {",
        "Invoice.java:",
        "public class Invoice {",
        "native/sum.c:",
        "int checksum(const int *xs, int n) {",
        "native/geo.cpp:",
        "class Shape {",
    ]:
        assert line in m, (line, m)
    # The definition every file calls ranks first.
    assert m.splitlines()[1] == "native/sum.c:", m
    # `@Name` finds the whole definition in each language; a C prototype in a header does
    # not make the definition ambiguous.
    prompt = "Compare @checksum, @Balance, @discount, @amount, @scaled_area and @total."
    assert yuyao("-p", prompt, "--map-tokens", "0", env=env(server)).returncode == 0
    text = server.user_text(1)
    for header, body in [
        ("[@checksum: function checksum in native/sum.c, lines 2-6]", "  return s;"),
        ("[@Balance: method Balance in svc/ledger.go, lines 7-9]", "\treturn checksum(l.Rows)"),
        (
            "[@discount: function discount in web/price.ts, lines 4-6]",
            "return checksum(p.price());",
        ),
        ("[@amount: method amount in Invoice.java, lines 2-4]", "return Native.checksum(1);"),
        ("[@scaled_area: function scaled_area in native/geo.cpp, lines 7-9]", "return k * 2;"),
        ("[@total: method total in web/cart.js, lines 2-4]", "return checksum(this.items);"),
    ]:
        assert header in text and body in text, (header, text)


def large_tree(repo: Path, n: int) -> None:
    """n small Python files in folders of 200, each calling the next file's function."""
    for i in range(n):
        pkg = repo / f"pkg_{i // 200}"
        if i % 200 == 0:
            pkg.mkdir()
        (pkg / f"mod_{i}.py").write_text(f"def func_{i}(v):\n    return func_{(i + 1) % n}(v)\n")


def map_records(repo: Path) -> list[dict]:
    traces = list((repo / ".trajectory").glob("*.jsonl"))
    entries = [json.loads(x) for t in traces for x in t.read_text().splitlines() if x.strip()]
    return [e for e in entries if e["kind"] == "repo_map"]


def test_a_large_tree_never_makes_the_first_request_wait(core_session, fake_llm, repo):
    """20 000 files and a build slowed by the test hook: the first request goes without the
    map, which joins the next request once ready (after what was already sent); only the top
    of the cheap ranking is tagged and the map says so; a later prompt with nothing changed
    reuses the map without tagging anything again."""
    large_tree(repo, 20_000)
    sleep = calls([("bash", {"command": "sleep 5"}, "c_sleep")], content="Waiting a while.")
    server = fake_llm([sleep, say(ANSWER), say(ANSWER)])
    s = core_session(server, _env={"YUYAO_TEST_REPOMAP_DELAY_MS": "1500"}, map_tokens=1024)
    s.chat("Explain pkg_3/mod_600.py.")
    assert maps_in(server, 0) == [], "the first request did not wait for the map"
    first, second = server.messages(0), server.messages(1)
    assert second[: len(first)] == first, "the map is added after what was sent"
    m = map_in(server, 1)
    assert m, contents(second)
    assert "(a large tree: 20001 code files; mapped the 2000" in m, m
    # What the file the prompt names uses was ranked into the tagged set and leads the map.
    assert m.splitlines()[2] == "pkg_3/mod_601.py:", m
    s.chat("Explain pkg_3/mod_600.py.")
    third = server.messages(2)
    assert third[: len(second)] == second
    assert len(maps_in(server, 2)) == 1, "nothing changed: the map is not sent again"
    records = map_records(repo)
    assert records[0]["pending"] is True, records
    later = records[-1]
    assert later["parsed"] == 0 and later["files"] == 2000 and later["total"] == 20001, later
    assert later["reused"] is True, "same tags, same focus: the rendering is reused"
    # The check of an unchanged tree is HEAD and the stamps of the mapped files, no walk.
    assert later["check_ms"] < 1000, later
    # The on-disk tag cache holds the mapped files only.
    (cache,) = (Path(os.environ["YUYAO_HOME"]) / "repomap").glob("*.json")
    assert len(json.loads(cache.read_text())["files"]) == 2000
    assert "return func_" not in cache.read_text(), "no source text in the tag cache"
