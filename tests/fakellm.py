"""A scripted OpenAI-compatible chat-completions server for tests and benchmarks.

Standard library only. Every request is recorded and checked against the well-formedness
rules of the specification (§8); a test asserts them with ``server.assert_well_formed()``.

In process::

    with FakeLLM([call("write", file_path="a.txt", content="hi"), say("done")]) as server:
        ...  # point the agent at server.url (http://127.0.0.1:PORT/v1)
        assert server.tool_result("call_0_0")
        server.assert_well_formed()

As a program (prints the base URL on the first line, serves until killed)::

    python tests/fakellm.py --script steps.json [--port N] [--record requests.jsonl]

A script is a list of steps served in order, one per chat request. A step is a dict::

    {"content": "text", "reasoning": "...",
     "tool_calls": [{"name": "write", "arguments": {...} or "raw json", "id": "optional"}],
     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 0,
               "reasoning_tokens": 0},
     "finish_reason": "stop", "delay": 0.2, "chunk_delay": 0.01,
     "status": 429, "headers": {"Retry-After": "0"}, "error_body": {...},
     "disconnect": True, "stall": 30, "cut": True, "no_done": True}

``disconnect`` closes the connection before any reply; ``stall`` sends the headers and half of
the body, then holds the connection silent for that many seconds (or until the server stops);
``cut`` (streaming only) sends half of the SSE events, then closes the connection without the
chunked terminator; ``no_done`` (streaming only) sends the chunks without ``finish_reason`` and
without ``[DONE]`` and ends the body cleanly, as a proxy that lost the tail would.

or a plain string (= ``say(string)``) or a callable ``(request_json, index) -> step``. Instead of
a list, the script may be one such callable (the "responder" mode). When the list is exhausted,
the ``default`` step is served and the request index is appended to ``server.exhausted``.

Like a real gateway, the server knows which model it serves: a chat request whose ``model``
is not the one the test configured (``model=``, default ``FAKE_MODEL``; several names may be
given, ``None`` accepts any) is answered 400 and recorded as a violation, so a test that sends
the wrong model fails. The ``litellm_proxy/`` routing prefix is stripped as litellm does.
``server.expect_model(...)`` changes the accepted names mid-test.

``POST /v1/embeddings`` answers every input with a deterministic 64-dimension vector (a hashed
bag of its lower-case words), in the OpenAI shape; the requests are kept in
``server.embedding_requests`` (not in ``requests``, which holds the chat requests only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

__all__ = [
    "FAKE_MODEL",
    "wire_model",
    "FakeLLM",
    "call",
    "calls",
    "error",
    "say",
    "tool_call",
    "well_formedness_problems",
]

Step = dict
Responder = Callable[[Any, int], Union[Step, str, None]]
Script = Union[list, Responder, None]

FAKE_MODEL = "litellm_proxy/fake-model"  # the model name tests give the agent
LITELLM_PREFIX = "litellm_proxy/"


def wire_model(name: str) -> str:
    """The model name a client sends for a configured name (litellm's prefix stripped)."""
    name = name.strip()
    return name[len(LITELLM_PREFIX) :] if name.startswith(LITELLM_PREFIX) else name


CHAT_PATHS = ("/chat/completions", "/v1/chat/completions")
MODEL_PATHS = ("/models", "/v1/models")
EMBEDDING_PATHS = ("/embeddings", "/v1/embeddings")
EMBEDDING_DIMS = 64


def fake_embedding(text: str) -> list[float]:
    """A hashed bag of words: texts sharing words get similar vectors."""
    v = [0.0] * EMBEDDING_DIMS
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        h = hashlib.sha256(word.encode()).digest()
        v[h[0] % EMBEDDING_DIMS] += 1.0 if h[1] % 2 else -1.0
    return v


ROLES = ("system", "user", "assistant", "tool")
EXHAUSTED_TEXT = "(script exhausted)"

# ---------------------------------------------------------------------------------------------
# Building steps


def tool_call(name: str, arguments: dict | str | None = None, id: str | None = None) -> dict:
    """One tool call of a step; ``arguments`` is a dict (sent as JSON) or a raw string."""
    out: dict = {"name": name, "arguments": {} if arguments is None else arguments}
    if id is not None:
        out["id"] = id
    return out


def say(text: str, **extra: Any) -> Step:
    """An assistant reply with text content (``reasoning=``, ``usage=``... may be added)."""
    return {"content": text, **extra}


def call(name: str, /, **args: Any) -> Step:
    """An assistant reply with exactly one tool call and no text."""
    return {"tool_calls": [tool_call(name, args)]}


def calls(items: list, *, content: str | None = None, **extra: Any) -> Step:
    """An assistant reply with several tool calls, in order.

    ``items``: ``(name, arguments)`` or ``(name, arguments, id)`` tuples or ``tool_call`` dicts.
    """
    built = [item if isinstance(item, dict) else tool_call(*item) for item in items]
    step: Step = {"tool_calls": built, **extra}
    if content is not None:
        step["content"] = content
    return step


def error(status: int, message: str = "fake error", retry_after: float | None = None) -> Step:
    """An HTTP error reply in the OpenAI error shape (with ``Retry-After`` when given)."""
    step: Step = {
        "status": status,
        "error_body": {"error": {"message": message, "type": "fake_error", "code": status}},
    }
    if retry_after is not None:
        step["headers"] = {"Retry-After": f"{retry_after:g}"}
    return step


# ---------------------------------------------------------------------------------------------
# Well-formedness (spec §8)


def _text(content: Any) -> str:
    """The text of a message content (a string, a list of parts, or None)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return ""


# Readers of a request body, for scripted replies that depend on who is asking (a sub-agent,
# a judge, a teammate): `respond(body, i)` callbacks get the raw body.
def system_of(body: dict) -> str:
    """The system messages' text (string contents)."""
    return "\n".join(
        m["content"] if isinstance(m.get("content"), str) else ""
        for m in body["messages"]
        if m["role"] == "system"
    )


def schema_names(body: dict) -> list[str]:
    """The function names in the ``tools`` array (the schemas the request carries)."""
    return [t["function"]["name"] for t in body.get("tools") or []]


def deferred_names(body: dict) -> list[str]:
    """The tools the system prompt's "More tools" section lists (`a, b (what for), c.`): their
    schemas wait for a tool-search call."""
    section = system_of(body).split("# More tools\n", 1)
    if len(section) == 1:
        return []
    listed = section[1].split("\n", 1)[0].split(": ", 1)[1].rstrip(".")
    return re.sub(r" \([^)]*\)", "", listed).split(", ")


def offered_names(body: dict) -> list[str]:
    """Every tool the request offers: schemas sent, then deferred ones listed."""
    return schema_names(body) + deferred_names(body)


def users_of(body: dict) -> str:
    """The user messages, list contents as JSON (so image parts are visible too)."""
    return "\n".join(
        m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        for m in body["messages"]
        if m["role"] == "user"
    )


def without_repo_map(text: str) -> str:
    """``text`` less the repo map notes the core places before a prompt (a paragraph that
    starts with ``[repo map]``; the repo fixture's calc.py is enough for one)."""
    return "\n\n".join(p for p in text.split("\n\n") if not p.startswith("[repo map]"))


# The missing-intent reminder is a one-request note (a view note at the end of one request,
# never kept in the history): the next request repeats the previous one without it.
VIEW_NOTE = "[intent] Say why in one line before each tool batch."


class Events:
    """A handler for an in-process core Session (``yuyao._core.Session(options, handler)``):
    keeps every event, denies every approval request."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def event(self, event_json: str) -> None:
        self.events.append(json.loads(event_json))

    def request(self, request_json: str) -> str:
        return "deny"

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e.get("type") == kind]

    def notices(self) -> list[str]:
        return [e["text"] for e in self.of("notice")]


def durable(messages: list[dict]) -> list[dict]:
    """A request's messages without its one-request note: the prefix the next request must
    repeat for the prompt cache (DESIGN §4)."""
    if not messages or messages[-1]["role"] != "user":
        return messages
    content = messages[-1].get("content")
    if isinstance(content, str) and VIEW_NOTE in content:
        kept = content.split(VIEW_NOTE)[0].rstrip("\n")
        return messages[:-1] + ([{**messages[-1], "content": kept}] if kept else [])
    return messages


def tool_msgs(body: dict) -> list[dict]:
    """The tool-result messages of a request body."""
    return [m for m in body["messages"] if m["role"] == "tool"]


def _has_content(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        return any(
            isinstance(p, dict) and (p.get("type") != "text" or (p.get("text") or "").strip())
            for p in content
        )
    return False


def _illegal_strings(value: Any, path: str, out: list[str]) -> None:
    """Report NUL bytes and lone surrogates in every key and string of a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            _illegal_strings(key, f"{path} (key)", out)
            _illegal_strings(item, f"{path}.{key}", out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _illegal_strings(item, f"{path}[{i}]", out)
    elif isinstance(value, str):
        if "\x00" in value:
            out.append(f"NUL byte in {path}")
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            out.append(f"lone surrogate in {path}")


def _argument_problems(call_: Any, where: str) -> list[str]:
    """NUL and lone surrogates hidden as escapes inside a tool call's arguments JSON text."""
    function = call_.get("function") if isinstance(call_, dict) else None
    arguments = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(arguments, str):
        return []
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return []
    problems: list[str] = []
    _illegal_strings(decoded, f"{where} arguments", problems)
    return problems


def _tool_call_shape(call_: Any, where: str) -> list[str]:
    if not isinstance(call_, dict):
        return [f"{where} is not an object"]
    problems = []
    if not isinstance(call_.get("id"), str) or not call_["id"]:
        problems.append(f"{where} has no id")
    if call_.get("type") != "function":
        problems.append(f"{where} has type {call_.get('type')!r}, not 'function'")
    function = call_.get("function")
    if not isinstance(function, dict) or not function.get("name"):
        problems.append(f"{where} has no function name")
    elif not isinstance(function.get("arguments"), str):
        problems.append(f"{where} arguments are not a string")
    return problems


def _message_problems(msgs: list) -> list[str]:
    problems = []
    roles = [m.get("role") if isinstance(m, dict) else None for m in msgs]
    n_system = roles.count("system")
    if n_system != 1:
        problems.append(f"{n_system} system messages (exactly one is required)")
    if roles[0] != "system":
        problems.append(f"first message has role {roles[0]!r}, not 'system'")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            problems.append(f"message {i} is not an object")
            continue
        role = roles[i]
        if role not in ROLES:
            problems.append(f"message {i} has unknown role {role!r}")
        if i and role == roles[i - 1] and role != "tool":
            problems.append(f"messages {i - 1} and {i} are both {role!r}")
        has_calls = "tool_calls" in m and m["tool_calls"] is not None
        if has_calls and (role != "assistant" or not m["tool_calls"]):
            problems.append(f"message {i} ({role}) has an empty or misplaced tool_calls")
        if not m.get("tool_calls") and not _has_content(m.get("content")):
            kind = "tool result" if role == "tool" else "content"
            problems.append(f"message {i} ({role}) has empty {kind}")
        if isinstance(m.get("content"), list):
            for k, part in enumerate(m["content"]):
                if isinstance(part, dict) and part.get("type") == "text":
                    if not (part.get("text") or "").strip():
                        problems.append(f"message {i} content part {k} is an empty text block")
    return problems


def _pairing_problems(msgs: list) -> list[str]:
    """Every tool call is answered right after its assistant message; no orphan results."""
    problems = []
    i = 0
    while i < len(msgs):
        m = msgs[i] if isinstance(msgs[i], dict) else {}
        if m.get("role") == "assistant" and m.get("tool_calls"):
            wanted = []
            for k, c in enumerate(m["tool_calls"]):
                problems += _tool_call_shape(c, f"message {i} tool call {k}")
                problems += _argument_problems(c, f"message {i} tool call {k}")
                if isinstance(c, dict):
                    wanted.append(c.get("id"))
            if len(set(wanted)) != len(wanted):
                problems.append(f"message {i} repeats a tool call id: {wanted}")
            j = i + 1
            answered = []
            while j < len(msgs) and isinstance(msgs[j], dict) and msgs[j].get("role") == "tool":
                answered.append(msgs[j].get("tool_call_id"))
                j += 1
            for cid in wanted:
                if cid not in answered:
                    problems.append(
                        f"tool call {cid!r} of message {i} is not answered by a tool message "
                        "right after it"
                    )
            for k, cid in enumerate(answered):
                if cid not in wanted:
                    problems.append(f"tool message {i + 1 + k} answers unknown id {cid!r}")
                elif answered.count(cid) > 1 and answered.index(cid) != k:
                    problems.append(f"tool message {i + 1 + k} answers {cid!r} twice")
            i = j
            continue
        if m.get("role") == "tool":
            problems.append(
                f"tool message {i} does not directly follow an assistant message with tool calls"
            )
        i += 1
    return problems


def well_formedness_problems(body: Any) -> list[str]:
    """The §8 violations of one parsed request body (empty list when well-formed)."""
    problems: list[str] = []
    _illegal_strings(body, "$", problems)
    msgs = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(msgs, list) or not msgs:
        return problems + ["messages missing or empty"]
    return problems + _message_problems(msgs) + _pairing_problems(msgs)


def role_summary(body: Any) -> str:
    """``system,user,assistant[2 calls],tool,tool`` — for assertion messages."""
    msgs = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(msgs, list):
        return "<no messages>"
    parts = []
    for m in msgs:
        m = m if isinstance(m, dict) else {}
        n = len(m.get("tool_calls") or [])
        parts.append(f"{m.get('role')}[{n} calls]" if n else str(m.get("role")))
    return ",".join(parts)


# ---------------------------------------------------------------------------------------------
# Responses


def _pieces(text: str, max_len: int = 16) -> list[str]:
    """Split text into several non-empty pieces (at least 3 when it is long enough)."""
    if not text:
        return []
    size = max(1, min(max_len, -(-len(text) // 3)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage(step: Step, default: dict, prompt_chars: int, completion_chars: int) -> dict:
    given = {**default, **(step.get("usage") or {})}
    prompt = given.get("prompt_tokens", max(1, prompt_chars // 4))
    completion = given.get("completion_tokens", max(1, completion_chars // 4))
    cached = given.get(
        "cached_tokens", (given.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    )
    reasoning = given.get(
        "reasoning_tokens",
        (given.get("completion_tokens_details") or {}).get(
            "reasoning_tokens", len(step.get("reasoning") or "") // 4
        ),
    )
    out = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    if "cache_creation_input_tokens" in given:  # prompt tokens written to the cache
        out["cache_creation_input_tokens"] = given["cache_creation_input_tokens"]
    return out


def _wire_calls(step: Step, index: int) -> list[dict]:
    """The step's tool calls in the OpenAI wire shape, arguments as JSON text."""
    out = []
    for k, c in enumerate(step.get("tool_calls") or []):
        args = c.get("arguments", {})
        out.append(
            {
                "id": c.get("id") or f"call_{index}_{k}",
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        )
    return out


def _finish_reason(step: Step) -> str:
    return step.get("finish_reason") or ("tool_calls" if step.get("tool_calls") else "stop")


def completion_body(step: Step, index: int, model: str, usage: dict) -> dict:
    """A non-streaming chat.completion object for a step."""
    wire = _wire_calls(step, index)
    content = step.get("content") or (None if wire else "")
    message: dict = {"role": "assistant", "content": content}
    if step.get("reasoning"):
        message["reasoning_content"] = step["reasoning"]
    if wire:
        message["tool_calls"] = wire
    return {
        "id": f"chatcmpl-fake-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(step)}],
        "usage": usage,
    }


def stream_chunks(step: Step, index: int, model: str, usage: dict | None) -> list[dict]:
    """The chat.completion.chunk objects for a step, in order (without ``[DONE]``)."""
    base = {
        "id": f"chatcmpl-fake-{index}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant"})]
    out += [chunk({"reasoning_content": p}) for p in _pieces(step.get("reasoning") or "")]
    out += [chunk({"content": p}) for p in _pieces(step.get("content") or "")]
    for k, c in enumerate(_wire_calls(step, index)):
        fn = c["function"]
        head = {"index": k, "id": c["id"], "type": "function"}
        first = {**head, "function": {"name": fn["name"], "arguments": ""}}
        out.append(chunk({"tool_calls": [first]}))
        for p in _pieces(fn["arguments"], 8):
            out.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]}))
    out.append(chunk({}, _finish_reason(step)))
    if usage is not None:
        out.append({**base, "choices": [], "usage": usage})
    return out


# ---------------------------------------------------------------------------------------------
# The server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakellm/1"
    timeout = 60
    # Headers and body go out in two writes; without this, Nagle + delayed ACK add ~40 ms a reply.
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._connections.add(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        self.server.owner._connections.discard(self.connection)  # type: ignore[attr-defined]
        try:
            super().finish()
        except OSError:
            pass

    def do_POST(self) -> None:
        self.server.owner._handle(self)  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self.server.owner._handle(self)  # type: ignore[attr-defined]

    def read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def send_json(self, status: int, obj: Any, headers: dict | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, chunks: list[dict], chunk_delay: float, step: Step | None = None) -> None:
        step = step or {}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
        if step.get("no_done"):
            events = [
                f"data: {json.dumps(c)}\n\n"
                for c in chunks
                if not any(ch.get("finish_reason") for ch in c.get("choices") or [])
                and not c.get("usage")
            ]
        if step.get("cut") or step.get("stall"):
            events = events[: max(1, len(events) // 2)]
        for event in events:
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            if chunk_delay:
                time.sleep(chunk_delay)
        if step.get("stall"):
            self.server.owner._stopping.wait(step["stall"])  # type: ignore[attr-defined]
            self.close_connection = True
            return
        if step.get("cut"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")

    def send_half_json(self, obj: Any, seconds: float) -> None:
        """Headers and half of a JSON body, then silence (a stalled upstream)."""
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        self.server.owner._stopping.wait(seconds)  # type: ignore[attr-defined]
        self.close_connection = True


class FakeLLM:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see the module docstring).

    ``errors`` lists script steps or responders that raised (answered with HTTP 500).
    ``requests`` holds one record per chat-completions request, in arrival order:
    ``{"index", "method", "path", "headers" (lower-case keys), "body" (parsed or None),
    "raw" (only when unparsable), "status", "usage" (what was served, or None)}``;
    other paths are recorded in ``other_requests``.
    """

    def __init__(
        self,
        script: Script = None,
        *,
        default: Step | str | None = None,
        api_key: str | None = None,
        latency: float = 0.0,
        usage: dict | None = None,
        reject_malformed: bool = False,
        record: str | None = None,
        log: Any = None,
        port: int = 0,
        model: str | list[str] | tuple[str, ...] | None = FAKE_MODEL,
    ) -> None:
        self.models: set[str] | None = None
        self.expect_model(*([] if model is None else [model] if isinstance(model, str) else model))
        self.responder: Responder | None = script if callable(script) else None
        self.script: list = [] if script is None or callable(script) else list(script)
        self.default = say(EXHAUSTED_TEXT) if default is None else default
        self.api_key = api_key
        self.latency = latency
        self.default_usage = usage or {}
        self.reject_malformed = reject_malformed
        self.record_path = record
        self.log = log
        self.requests: list[dict] = []
        self.other_requests: list[dict] = []
        self.embedding_requests: list[dict] = []
        self.violations: list[str] = []
        self._malformed: list[int] = []
        self.exhausted: list[int] = []
        self.errors: list[str] = []  # a script step or responder that raised
        self._position = 0
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()  # ends the "stall" steps when the server stops
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url_without_v1(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url_without_v1}/v1"

    def start(self) -> FakeLLM:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        for conn in list(self._connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def expect_model(self, *names: str) -> None:
        """Accept only these model names from now on (no names: accept any)."""
        self.models = {wire_model(n) for n in names} or None

    # -- inspection -------------------------------------------------------------------------

    def body(self, i: int = -1) -> dict:
        return self.requests[i]["body"]

    def messages(self, i: int = -1) -> list[dict]:
        return self.body(i)["messages"]

    def system_prompt(self, i: int = -1) -> str:
        return "\n".join(_text(m.get("content")) for m in self.messages(i) if m["role"] == "system")

    def stated(self, label: str, i: int = -1) -> str | None:
        """What request ``i`` says last for ``- {label}: …`` ("Permission mode", "Role",
        "Network for tools", "Asking", "Answer style"…): the system prompt states every level
        and a later settings note at the end of the messages replaces it."""
        found = None
        for m in self.messages(i):
            for line in _text(m.get("content")).splitlines():
                if line.startswith(f"- {label}: "):
                    found = line[len(f"- {label}: ") :]
        return found

    def user_text(self, i: int = -1) -> str:
        return "\n".join(_text(m.get("content")) for m in self.messages(i) if m["role"] == "user")

    def tool_names(self, i: int = -1) -> list[str]:
        """The tools request ``i`` offers the model: the ``tools`` schemas, then the deferred
        ones its system prompt lists to load with tool-search (see ``offered_names``)."""
        return offered_names(self.body(i))

    def schema_names(self, i: int = -1) -> list[str]:
        """The function names of the ``tools`` array of request ``i`` (full schemas only)."""
        return schema_names(self.body(i))

    def tool_results(self, i: int = -1) -> dict[str, str]:
        """``{tool_call_id: text}`` of the tool messages of request ``i``."""
        return {
            m.get("tool_call_id"): _text(m.get("content"))
            for m in self.messages(i)
            if m.get("role") == "tool"
        }

    def tool_result(self, call_id: str) -> str | None:
        """The text of the tool result for ``call_id`` in the latest request that has one."""
        for record in reversed(self.requests):
            if record["body"] and call_id in self.tool_results(record["index"]):
                return self.tool_results(record["index"])[call_id]
        return None

    def usage_totals(self) -> dict[str, int]:
        """Token counts summed over every completion served (for cost checks)."""
        totals = dict.fromkeys(
            ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"), 0
        )
        for record in self.requests:
            u = record.get("usage")
            if u:
                totals["prompt_tokens"] += u["prompt_tokens"]
                totals["completion_tokens"] += u["completion_tokens"]
                totals["cached_tokens"] += u["prompt_tokens_details"]["cached_tokens"]
                totals["reasoning_tokens"] += u["completion_tokens_details"]["reasoning_tokens"]
        return totals

    def assert_well_formed(self) -> None:
        if not self.violations:
            return
        shapes = [
            f"request {i} roles: {role_summary(self.requests[i]['body'])}"
            for i in sorted(set(self._malformed))
        ]
        raise AssertionError(
            "requests sent to the model are not well-formed (spec §8):\n  "
            + "\n  ".join(self.violations + shapes)
        )

    # -- serving ----------------------------------------------------------------------------

    def _next_step(self, body: Any, index: int) -> Step:
        with self._lock:
            if self.responder is not None:
                step = self.responder(body, index)
            elif self._position < len(self.script):
                step = self.script[self._position]
                self._position += 1
            else:
                step = None
            if callable(step):
                step = step(body, index)
            if step is None:
                self.exhausted.append(index)
                step = self.default
        return say(step) if isinstance(step, str) else step

    def _record(self, handler: _Handler, raw: bytes) -> tuple[dict, list[str]]:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        record: dict = {"method": handler.command, "path": handler.path, "headers": headers}
        problems: list[str] = []
        try:
            record["body"] = json.loads(raw.decode("utf-8")) if raw else None
        except UnicodeDecodeError:
            record["body"], record["raw"] = None, raw.decode("utf-8", "replace")
            problems.append("body is not valid UTF-8 (illegal bytes)")
        except ValueError as exc:
            record["body"], record["raw"] = None, raw.decode("utf-8", "replace")
            problems.append(f"body is not valid JSON ({exc})")
        chat = handler.command == "POST" and handler.path.split("?")[0] in CHAT_PATHS
        if chat and record["body"] is not None:
            problems += well_formedness_problems(record["body"])
            problems += self._model_problems(record["body"])
        with self._lock:
            if chat:
                record["index"] = len(self.requests)
                self.requests.append(record)
                where = f"request {record['index']} ({handler.path})"
                self.violations += [f"{where}: {p}" for p in problems]
                if problems:
                    self._malformed.append(record["index"])
            else:
                self.other_requests.append(record)
            if self.record_path:
                with open(self.record_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(record) + "\n")
        return record, problems

    def _model_problems(self, body: Any) -> list[str]:
        if self.models is None:
            return []
        model = body.get("model") if isinstance(body, dict) else None
        if model not in self.models:
            record_model = "no model" if model is None else f"model {model!r}"
            return [f"{record_model} sent, the server serves {sorted(self.models)}"]
        return []

    def _log(self, text: str) -> None:
        if self.log is not None:
            print(text, file=self.log, flush=True)

    def _handle(self, handler: _Handler) -> None:
        raw = handler.read_body() if handler.command == "POST" else b""
        record, problems = self._record(handler, raw)
        if "index" not in record:
            if handler.path.split("?")[0] in EMBEDDING_PATHS and handler.command == "POST":
                self._embeddings(handler, record)
            elif handler.path.split("?")[0] in MODEL_PATHS:
                handler.send_json(200, {"object": "list", "data": [{"id": "fake-model"}]})
            else:
                handler.send_json(404, {"error": {"message": f"no route {handler.path}"}})
            return
        index = record["index"]
        for p in problems:
            self._log(f"#{index} VIOLATION {p}")
        if self.api_key is not None and record["headers"].get("authorization") != (
            f"Bearer {self.api_key}"
        ):
            record["status"] = 401
            handler.send_json(401, {"error": {"message": "invalid api key", "code": 401}})
            return
        wrong_model = self._model_problems(record["body"]) if record["body"] is not None else []
        if wrong_model:
            # What a gateway answers for a model it does not serve.
            record["status"] = 400
            handler.send_json(
                400, {"error": {"message": f"Invalid model name: {wrong_model[0]}", "code": 400}}
            )
            return
        if record["body"] is None or (problems and self.reject_malformed):
            record["status"] = 400
            handler.send_json(400, {"error": {"message": "; ".join(problems) or "empty body"}})
            return
        try:
            step = self._next_step(record["body"], index)
        except Exception as exc:
            self.errors.append(f"request {index}: the script raised {exc!r}")
            record["status"] = 500
            handler.send_json(500, {"error": {"message": f"fakellm script error: {exc!r}"}})
            return
        self._reply(handler, record, step, len(raw))

    def _embeddings(self, handler: _Handler, record: dict) -> None:
        with self._lock:
            self.embedding_requests.append(record)
        if self.api_key is not None and record["headers"].get("authorization") != (
            f"Bearer {self.api_key}"
        ):
            handler.send_json(401, {"error": {"message": "invalid api key", "code": 401}})
            return
        body = record["body"] if isinstance(record["body"], dict) else {}
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            handler.send_json(400, {"error": {"message": "input must be a string or strings"}})
            return
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(t)}
            for i, t in enumerate(texts)
        ]
        handler.send_json(200, {"object": "list", "data": data, "model": body.get("model")})

    def _reply(self, handler: _Handler, record: dict, step: Step, prompt_chars: int) -> None:
        index, body = record["index"], record["body"]
        self._log(f"#{index} {handler.path} stream={bool(body.get('stream'))} -> {step}"[:300])
        time.sleep(self.latency + step.get("delay", 0))
        if step.get("disconnect"):
            record["status"] = None
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        status = step.get("status", 200)
        record["status"] = status
        if status != 200:
            error_body = step.get("error_body") or error(status)["error_body"]
            handler.send_json(status, error_body, step.get("headers"))
            return
        completion_chars = len(step.get("content") or "") + len(step.get("reasoning") or "")
        completion_chars += sum(len(str(c.get("arguments"))) for c in step.get("tool_calls") or [])
        usage = _usage(step, self.default_usage, prompt_chars, completion_chars)
        record["usage"] = usage
        model = str(body.get("model") or "fake-model")
        try:
            if body.get("stream"):
                wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                chunks = stream_chunks(step, index, model, usage if wants_usage else None)
                handler.send_sse(chunks, step.get("chunk_delay", 0), step)
            elif step.get("stall"):
                handler.send_half_json(completion_body(step, index, model, usage), step["stall"])
            else:
                handler.send_json(200, completion_body(step, index, model, usage))
        except (BrokenPipeError, ConnectionResetError, OSError):
            record["status"] = "client closed"
            handler.close_connection = True


# ---------------------------------------------------------------------------------------------
# Command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible server.")
    parser.add_argument("--script", help='JSON list of steps, or {"steps": [...], "default": …}')
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--record", help="append every request to this JSONL file")
    parser.add_argument("--api-key", help="require Authorization: Bearer KEY")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--quiet", action="store_true", help="do not log requests to stderr")
    parser.add_argument(
        "--model",
        action="append",
        help=f"a model name the server serves (repeatable; default {FAKE_MODEL}); '*' for any",
    )
    args = parser.parse_args(argv)

    script: Any = []
    default = None
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            script = json.load(f)
        if isinstance(script, dict):
            default = script.get("default")
            script = script.get("steps", [])
    server = FakeLLM(
        script,
        default=default,
        api_key=args.api_key,
        latency=args.latency,
        record=args.record,
        log=None if args.quiet else sys.stderr,
        port=args.port,
        model=None if args.model == ["*"] else (args.model or FAKE_MODEL),
    ).start()
    print(server.url, flush=True)

    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(0.5):
        pass
    server.stop()
    for v in server.violations:
        print(f"VIOLATION {v}", file=sys.stderr)
    return 1 if server.violations else 0


if __name__ == "__main__":
    sys.exit(main())
