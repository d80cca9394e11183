"""The scripted model server itself: wire shapes, scripting, errors and the §8 checker."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from fakellm import (
    EXHAUSTED_TEXT,
    FAKE_MODEL,
    FakeLLM,
    call,
    calls,
    error,
    say,
    tool_call,
    wire_model,
)

SYS = {"role": "system", "content": "You are a test."}
USER = {"role": "user", "content": "hi"}
MODEL = wire_model(FAKE_MODEL)  # what a client configured with FAKE_MODEL sends


def http(srv: FakeLLM, body=None, *, path="/v1/chat/completions", headers=None, raw=None):
    """POST (or GET without a body) and return (status, headers, bytes) without raising."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(srv.base_url_without_v1 + path, data=data)
    req.add_header("Content-Type", "application/json")
    for key, value in (headers or {}).items():
        req.add_header(key, value)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def chat(srv: FakeLLM, messages=None, **extra) -> dict:
    status, _, data = http(srv, {"model": MODEL, "messages": messages or [SYS, USER], **extra})
    assert status == 200, data
    return json.loads(data)


def stream(srv: FakeLLM, messages=None, **extra) -> list[dict]:
    """The decoded SSE chunks of a streaming request; checks the ``[DONE]`` terminator."""
    body = {"model": MODEL, "messages": messages or [SYS, USER], "stream": True, **extra}
    status, headers, data = http(srv, body)
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = [e for e in data.decode().split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: ") :]) for e in events[:-1]]


def deltas(chunks: list[dict], key: str) -> list:
    found = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    return [d[key] for d in found if key in d]


def test_non_streaming_completion_with_reasoning_and_usage():
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "cached_tokens": 3, "reasoning_tokens": 2}
    with FakeLLM([say("hello", reasoning="hmm", usage=usage)]) as srv:
        reply = chat(srv)
    choice = reply["choices"][0]
    assert choice["message"] == {
        "role": "assistant",
        "content": "hello",
        "reasoning_content": "hmm",
    }
    assert choice["finish_reason"] == "stop" and reply["model"] == MODEL
    assert reply["usage"] == {
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 18,
        "prompt_tokens_details": {"cached_tokens": 3},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }


def test_default_usage_is_positive_and_totals_add_up():
    with FakeLLM([say("a" * 40), say("b")], usage={"cached_tokens": 1}) as srv:
        first = chat(srv)["usage"]
        second = chat(srv)["usage"]
    assert first["prompt_tokens"] > 0 and first["completion_tokens"] == 10
    totals = srv.usage_totals()
    assert totals["prompt_tokens"] == first["prompt_tokens"] + second["prompt_tokens"]
    assert totals["cached_tokens"] == 2


def test_both_chat_paths_and_other_routes():
    with FakeLLM([say("a"), say("b")]) as srv:
        assert (
            http(srv, {"model": MODEL, "messages": [SYS, USER]}, path="/chat/completions")[0] == 200
        )
        assert (
            http(srv, {"model": MODEL, "messages": [SYS, USER]}, path="/v1/chat/completions")[0]
            == 200
        )
        assert (
            http(srv, {"model": MODEL, "messages": [SYS, USER]}, path="/v1/completions")[0] == 404
        )
        status, _, raw = http(srv, {"model": "e", "input": ["a b", "b"]}, path="/v1/embeddings")
        body = json.loads(raw)
        assert status == 200 and [d["index"] for d in body["data"]] == [0, 1]
        assert len(body["data"][0]["embedding"]) == 64
        assert http(srv, path="/v1/models")[0] == 200
        assert [r["path"] for r in srv.requests] == ["/chat/completions", "/v1/chat/completions"]
        assert len(srv.other_requests) == 3 and not srv.exhausted
        assert [r["path"] for r in srv.embedding_requests] == ["/v1/embeddings"]


def test_stream_splits_text_and_ends_with_usage():
    text = "The quick brown fox jumps over the lazy dog."
    with FakeLLM([say(text)]) as srv:
        chunks = stream(srv, stream_options={"include_usage": True})
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    pieces = deltas(chunks, "content")
    assert len(pieces) >= 3 and "".join(pieces) == text
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)


def test_stream_without_include_usage_has_no_usage_chunk():
    with FakeLLM([say("no usage please")]) as srv:
        chunks = stream(srv)
        assert all(c["choices"] and "usage" not in c for c in chunks)


def test_stream_reasoning_content():
    with FakeLLM([say("answer", reasoning="let me think about it")]) as srv:
        chunks = stream(srv)
        assert "".join(deltas(chunks, "reasoning_content")) == "let me think about it"
        assert "".join(deltas(chunks, "content")) == "answer"


def test_stream_tool_calls_are_keyed_by_index():
    write_args = {"file_path": "a.txt", "content": "hello world, long enough"}
    bash_args = {"command": "rm a.txt"}
    with FakeLLM([calls([("write", write_args), ("bash", bash_args, "explicit_id")])]) as srv:
        chunks = stream(srv)
    by_index: dict[int, list[dict]] = {}
    for delta in deltas(chunks, "tool_calls"):
        assert len(delta) == 1
        by_index.setdefault(delta[0]["index"], []).append(delta[0])
    assert sorted(by_index) == [0, 1]
    expected = [("call_0_0", "write", write_args), ("explicit_id", "bash", bash_args)]
    for (call_id, name, args), parts in zip(expected, by_index.values()):
        head, rest = parts[0], parts[1:]
        assert head["id"] == call_id and head["type"] == "function"
        assert head["function"]["name"] == name
        assert len(rest) >= 2, "arguments must be split across chunks"
        assert head["function"]["arguments"] == ""
        for part in rest:
            assert set(part) == {"index", "function"} and set(part["function"]) == {"arguments"}
        assert json.loads("".join(p["function"]["arguments"] for p in parts)) == args
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_non_streaming_tool_calls_with_raw_arguments():
    raw = '{"file_path": "x", '
    with FakeLLM([calls([tool_call("write", raw, "raw")], content="Hmm")]) as srv:
        message = chat(srv)["choices"][0]["message"]
    assert message["content"] == "Hmm"
    assert message["tool_calls"] == [
        {"id": "raw", "type": "function", "function": {"name": "write", "arguments": raw}}
    ]


def test_tool_call_only_reply_has_null_content():
    with FakeLLM([call("read", file_path="a.txt")]) as srv:
        reply = chat(srv)
        assert reply["choices"][0]["message"]["content"] is None
        assert reply["choices"][0]["finish_reason"] == "tool_calls"


def test_error_step_with_retry_after_then_success():
    with FakeLLM([error(429, "slow down", retry_after=0), say("ok")]) as srv:
        status, headers, data = http(srv, {"model": MODEL, "messages": [SYS, USER], "stream": True})
        assert status == 429 and headers["Retry-After"] == "0"
        assert json.loads(data)["error"]["message"] == "slow down"
        assert chat(srv)["choices"][0]["message"]["content"] == "ok"
        assert [r["status"] for r in srv.requests] == [429, 200]


def test_api_key_is_checked_without_consuming_the_script():
    with FakeLLM([say("ok")], api_key="k") as srv:
        body = {"model": MODEL, "messages": [SYS, USER]}
        assert http(srv, body)[0] == 401
        assert http(srv, body, headers={"Authorization": "Bearer wrong"})[0] == 401
        status, _, data = http(srv, body, headers={"Authorization": "Bearer k"})
    assert status == 200 and json.loads(data)["choices"][0]["message"]["content"] == "ok"
    assert srv.requests[-1]["headers"]["authorization"] == "Bearer k"


def test_exhausted_script_serves_the_default_and_records_it():
    with FakeLLM([say("one")]) as srv:
        assert chat(srv)["choices"][0]["message"]["content"] == "one"
        assert chat(srv)["choices"][0]["message"]["content"] == EXHAUSTED_TEXT
    assert srv.exhausted == [1]
    with FakeLLM([], default=say("")) as srv:
        assert chat(srv)["choices"][0]["message"]["content"] == ""
    assert srv.exhausted == [0]


def test_responder_and_callable_steps_see_the_request():
    seen = []

    def responder(body, index):
        seen.append((index, len(body["messages"])))
        return say(f"reply {index}") if index < 1 else None

    with FakeLLM(responder) as srv:
        assert chat(srv)["choices"][0]["message"]["content"] == "reply 0"
        assert chat(srv)["choices"][0]["message"]["content"] == EXHAUSTED_TEXT
    assert seen == [(0, 2), (1, 2)] and srv.exhausted == [1]
    with FakeLLM(["plain text", lambda body, i: say(body["messages"][-1]["content"])]) as srv:
        assert chat(srv)["choices"][0]["message"]["content"] == "plain text"
        assert chat(srv)["choices"][0]["message"]["content"] == "hi"


def test_a_raising_responder_answers_500_and_is_recorded():
    with FakeLLM(lambda body, index: 1 / 0) as srv:
        assert http(srv, {"model": MODEL, "messages": [SYS, USER]})[0] == 500
    assert "ZeroDivisionError" in srv.errors[0]


def test_latency_and_step_delay():
    with FakeLLM([say("a", delay=0.2)], latency=0.1) as srv:
        start = time.monotonic()
        chat(srv)
    assert time.monotonic() - start >= 0.3


def test_disconnect_step():
    with FakeLLM([{"disconnect": True}]) as srv:
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            http(srv, {"model": MODEL, "messages": [SYS, USER]})


def test_requests_are_recorded_in_memory_and_to_a_file(tmp_path):
    record = tmp_path / "requests.jsonl"
    with FakeLLM([say("a")], record=str(record)) as srv:
        chat(srv, temperature=0)
    (req,) = srv.requests
    assert req["path"] == "/v1/chat/completions" and req["method"] == "POST"
    assert req["headers"]["content-type"] == "application/json"
    assert req["body"]["temperature"] == 0 and req["index"] == 0
    (line,) = record.read_text().splitlines()
    assert json.loads(line)["body"]["messages"] == [SYS, USER]


def test_inspection_helpers():
    tool_a = {"role": "tool", "tool_call_id": "a", "content": "result A"}
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ],
    }
    with FakeLLM([say("x"), say("y")]) as srv:
        chat(srv, [SYS, USER, assistant, tool_a])
        chat(srv, [SYS, USER])
    assert srv.system_prompt(0) == "You are a test."
    assert srv.tool_results(0) == {"a": "result A"} and srv.tool_results() == {}
    assert srv.tool_result("a") == "result A" and srv.tool_result("zzz") is None
    assert srv.messages(1) == [SYS, USER]
    srv.assert_well_formed()


def test_stop_releases_the_port():
    with FakeLLM() as srv:
        url = srv.base_url_without_v1
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/v1/models", timeout=5)


def test_command_line(tmp_path):
    script, record = tmp_path / "steps.json", tmp_path / "rec.jsonl"
    script.write_text(json.dumps({"steps": [say("from file")], "default": say("dflt")}))
    cmd = [sys.executable, str(Path(__file__).with_name("fakellm.py"))]
    args = ["--script", str(script), "--record", str(record), "--quiet"]
    proc = subprocess.Popen([*cmd, *args], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        for expected in ("from file", "dflt"):
            req = urllib.request.Request(
                url + "/chat/completions",
                data=json.dumps({"model": MODEL, "messages": [SYS, USER]}).encode(),
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                assert json.loads(resp.read())["choices"][0]["message"]["content"] == expected
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    assert len(record.read_text().splitlines()) == 2


# ---------------------------------------------------------------------------------------------
# Well-formedness (spec §8)


def assistant_calls(*ids: str) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}}
            for i in ids
        ],
    }


def tool(call_id: str, content="ok") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def test_well_formed_conversation_passes():
    messages = [
        SYS,
        USER,
        assistant_calls("a", "b"),
        tool("b"),
        tool("a"),
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": "emoji 😀 and ünïcode"},
    ]
    with FakeLLM([say("x")]) as srv:
        chat(srv, messages)
    assert srv.violations == []
    srv.assert_well_formed()


BAD_CONVERSATIONS = {
    "no system": ([USER], "0 system messages"),
    "system not first": ([USER, SYS], "first message has role 'user'"),
    "two systems": ([SYS, USER, SYS], "2 system messages"),
    "adjacent roles": ([SYS, USER, USER], "both 'user'"),
    "unanswered call": ([SYS, USER, assistant_calls("a"), USER], "'a' of message 2 is not answ"),
    "half answered": ([SYS, USER, assistant_calls("a", "b"), tool("a")], "'b' of message 2"),
    "separated result": ([SYS, USER, assistant_calls("a"), USER, tool("a")], "not answered"),
    "orphan result": (
        [SYS, USER, {"role": "assistant", "content": "x"}, tool("a")],
        "not directly",
    ),
    "wrong id": ([SYS, USER, assistant_calls("a"), tool("b")], "answers unknown id 'b'"),
    "duplicate result": ([SYS, USER, assistant_calls("a"), tool("a"), tool("a")], "twice"),
    "empty tool_calls": (
        [SYS, USER, {"role": "assistant", "content": "x", "tool_calls": []}],
        "empty or misplaced tool_calls",
    ),
    "empty content": ([SYS, {"role": "user", "content": ""}], "message 1 (user) has empty"),
    "blank content": ([SYS, USER, {"role": "assistant", "content": " \n"}], "empty content"),
    "null content": ([SYS, USER, {"role": "assistant", "content": None}], "empty content"),
    "empty text block": (
        [SYS, {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text"}]}],
        "empty text block",
    ),
    "empty tool result": ([SYS, USER, assistant_calls("a"), tool("a", "")], "empty tool result"),
    "NUL byte": ([SYS, {"role": "user", "content": "a\x00b"}], "NUL byte in $.messages[1]"),
    "lone surrogate": ([SYS, {"role": "user", "content": "a\ud800b"}], "lone surrogate in"),
}


@pytest.mark.parametrize("messages, expected", BAD_CONVERSATIONS.values(), ids=BAD_CONVERSATIONS)
def test_checker_catches(messages, expected):
    with FakeLLM([say("x")]) as srv:
        chat(srv, messages)
    assert any(expected in v for v in srv.violations), srv.violations
    assert all(v.startswith("request 0 (/v1/chat/completions): ") for v in srv.violations)
    with pytest.raises(AssertionError, match="request 0 roles: "):
        srv.assert_well_formed()


@pytest.mark.parametrize(
    "raw, expected",
    [(b'{"messages": [\xff]}', "not valid UTF-8"), (b'{"messages": [', "not valid JSON")],
    ids=["illegal bytes", "broken json"],
)
def test_checker_catches_unparsable_bodies(raw, expected):
    with FakeLLM([say("x")]) as srv:
        assert http(srv, raw=raw)[0] == 400
        assert chat(srv)["choices"][0]["message"]["content"] == "x", "the step was consumed"
    assert any(expected in v for v in srv.violations), srv.violations
    assert srv.requests[0]["body"] is None and srv.requests[0]["status"] == 400


def test_reject_malformed_answers_400():
    with FakeLLM([say("x")], reject_malformed=True) as srv:
        status, _, data = http(srv, {"model": MODEL, "messages": [USER]})
    assert status == 400 and b"system" in json.loads(data)["error"]["message"].encode()


def test_a_wrong_model_is_refused_like_a_gateway_would():
    with FakeLLM([say("x"), say("y")]) as srv:
        status, _, data = http(srv, {"model": "{ max_output_tokens = 2048 }", "messages": [SYS]})
        assert status == 400 and b"Invalid model name" in data
        assert http(srv, {"messages": [SYS, USER]})[0] == 400, "no model at all"
        assert http(srv, {"model": FAKE_MODEL, "messages": [SYS, USER]})[0] == 400, (
            "the litellm_proxy/ prefix is the client's to strip"
        )
        assert chat(srv)["choices"][0]["message"]["content"] == "x", "refusals used no step"
        srv.expect_model("litellm_proxy/other", "third")
        assert chat(srv, model="other")["choices"][0]["message"]["content"] == "y"
    assert len(srv.violations) == 3 and "max_output_tokens" in srv.violations[0]
    with pytest.raises(AssertionError, match="the server serves"):
        srv.assert_well_formed()
    with FakeLLM([say("z")], model=None) as srv:
        assert chat(srv, model="anything")["choices"][0]["message"]["content"] == "z"
    assert not srv.violations
