"""`-p --input-format stream-json`, `--output-format stream-json` and `--json`, in the shapes
Claude Code writes, so its SDK (`claude-agent-sdk`) and scripts written for it read yuyao's
output unchanged (docs/headless.md).

Input: one message per line. `{"type":"user","message":{"role":"user","content":...}}` is a
turn of the same session; content is a string or a list of parts (`text`, `image` with a
base64 `source`, `image_url`). `{"type":"control_request",...}` lines (the SDK's handshake:
`initialize`, `interrupt`...) are answered with a `control_response`. A malformed line is
reported (a `system` message of subtype `input_error`) and the session goes on.

Output, one JSON object per line:
- `system`/`init`: session_id, model, cwd, tools, permissionMode, slash_commands, ...
- `assistant`: `message` = {id, type "message", role, model, content, usage}, one content
  block per line as Claude Code does (`thinking`, `text`, `tool_use` {id, name, input}); the
  blocks of one model call share the message id.
- `user`: `message.content` = [`tool_result` {tool_use_id, content, is_error}].
- `result`: subtype (`success`, `error_max_turns`, `error_max_budget_usd`,
  `error_during_execution`), is_error, duration_ms, duration_api_ms, num_turns, result,
  session_id, total_cost_usd, usage, permission_denials.
yuyao's own facts ride along as extra keys (`exit_status`, `cost_usd`, `num_steps`, `intent`,
`cost_source`...) or as `system` messages of their own subtypes (`completion`,
`verification`, `plan`), which a Claude Code consumer skips. The SDK's parser ignores
unknown keys, returns a generic SystemMessage for unknown system subtypes, and skips unknown
message types. Warnings and errors still go to stderr, so stdout stays parseable.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid

from yuyao.print_handler import PrintHandler

# Claude Code's names for yuyao's modes (`permissionMode`).
PERMISSION_MODES = {
    "ask": "default",
    "auto-review": "default",
    "auto-edit": "acceptEdits",
    "yolo": "bypassPermissions",
    "plan": "plan",
}


_WRITE = threading.Lock()  # the core's thread and the stdin reader both write lines


def write_event(event: dict) -> None:
    line = json.dumps(event, ensure_ascii=False) + "\n"
    with _WRITE:
        sys.stdout.write(line)
        sys.stdout.flush()


def _uuid() -> str:
    return str(uuid.uuid4())


class TurnMeter:
    """What a turn's events say about it: model calls, time spent waiting for the model,
    tokens, and the tool calls that were refused."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.started = time.monotonic()
        self.calls = 0
        self.api_ms = 0
        self.call_started = None
        self.usage = _zero_usage()
        self.tool_inputs: dict = {}
        self.denials: list[dict] = []

    def see(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "model_call":
            self.calls += 1
            self.call_started = time.monotonic()
        elif kind == "assistant_message" and self.call_started is not None:
            self.api_ms += int((time.monotonic() - self.call_started) * 1000)
            self.call_started = None
        elif kind == "usage":
            for key in self.usage:
                self.usage[key] += int(event.get(key) or 0)
        elif kind == "tool_begin":
            self.tool_inputs[event.get("id")] = _arguments(event.get("arguments"))
        elif kind == "tool_end" and not event.get("ok"):
            if str(event.get("output") or "").startswith("Refused"):
                self.denials.append(
                    {
                        "tool_name": event.get("name"),
                        "tool_use_id": event.get("id"),
                        "tool_input": self.tool_inputs.get(event.get("id"), {}),
                    }
                )

    def duration_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)


def usage_block(usage: dict) -> dict:
    """Claude Code's usage keys (input_tokens excludes the cached part, as Anthropic counts),
    with yuyao's own (OpenAI-style) keys kept beside them."""
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = int(usage.get("cached_tokens") or 0)
    written = int(usage.get("cache_write_tokens") or 0)
    return {
        "input_tokens": max(prompt - cached - written, 0),
        "output_tokens": int(usage.get("completion_tokens") or 0),
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": written,
        **usage,
    }


def result_subtype(status: dict, exit_code: int, error) -> str:
    last_turn = status.get("last_turn") or {}
    exit_status = last_turn.get("exit_status")
    if exit_status == "LimitsExceeded":
        why = str(last_turn.get("error") or error or "")
        return "error_max_budget_usd" if "spend" in why or "cost" in why else "error_max_turns"
    return "success" if exit_code == 0 and not error else "error_during_execution"


def result_message(
    status: dict,
    text: str,
    error,
    exit_code: int,
    meter: TurnMeter,
    *,
    session_id=None,
    turn_cost: float | None = None,
) -> dict:
    """The `result` message (Claude Code's keys first, yuyao's after): the last line of a
    stream-json turn, and the whole document of `--json`."""
    subtype = result_subtype(status, exit_code, error)
    pricing = status.get("pricing") or {}
    exit_status = (status.get("last_turn") or {}).get("exit_status")
    if error and exit_status not in ("Error", "NotSubmitted"):
        exit_status = "Error"  # exit 1 never comes with a clean (or no) status
    message = {
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "duration_ms": meter.duration_ms(),
        "duration_api_ms": meter.api_ms,
        "num_turns": meter.calls,
        "result": text,
        "session_id": session_id or status.get("session_id"),
        "total_cost_usd": float(status.get("cost_usd") or 0.0),
        "usage": usage_block(meter.usage),
        "permission_denials": list(meter.denials),
        "uuid": _uuid(),
        # yuyao's own facts.
        "exit_status": exit_status,
        "cost_usd": round(turn_cost, 10) if turn_cost is not None else status.get("cost_usd", 0.0),
        "num_steps": meter.calls,
        "cost_source": pricing.get("cost_from") or pricing.get("source"),
    }
    if error:
        message["error"] = error
        message["errors"] = [error]
    if pricing.get("warning"):
        message["cost_warning"] = pricing["warning"]
    return message


class StreamJsonHandler(PrintHandler):
    """Renders the core's events as stream-json lines on stdout; warnings and errors still go
    to stderr (as with the text output), so stdout stays parseable line by line."""

    def __init__(self, *, verbose: bool):
        super().__init__(stream_text=False, show_thinking="off", verbose=verbose)
        self.session_id = None
        self.model = None
        self.meter = TurnMeter()
        self.message_id = None  # the running model call's message id
        self.pending = None  # an assistant reply waiting for its usage event

    def event(self, event_json: str) -> None:
        try:
            event = json.loads(event_json)
            kind = event.get("type")
            self.meter.see(event)
            if kind != "usage":
                self._flush_reply(None)
            render = getattr(self, "_sj_" + str(kind), None)
            if render is not None:
                render(event)
        except Exception:  # a closed pipe or an odd event must never stop the run
            pass

    def _message(self, kind: str, content: list, *, parent=None, usage=None, **extra) -> dict:
        body = {"role": kind, "content": content}
        if kind == "assistant":
            body = {
                "id": self.message_id or "msg_" + uuid.uuid4().hex[:24],
                "type": "message",
                "role": "assistant",
                "model": self.model or "",
                "content": content,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage or usage_block(_zero_usage()),
            }
        return {
            "type": kind,
            "message": body,
            "parent_tool_use_id": parent,
            "session_id": self.session_id,
            "uuid": _uuid(),
            **extra,
        }

    def _sj_model_call(self, event: dict) -> None:
        self.message_id = "msg_" + uuid.uuid4().hex[:24]

    def _sj_assistant_message(self, event: dict) -> None:
        self.pending = event

    def _sj_usage(self, event: dict) -> None:
        self._flush_reply(usage_block({k: event.get(k, 0) for k in _zero_usage()}))

    def _flush_reply(self, usage) -> None:
        """The model's reply, one content block a line (thinking, then text)."""
        event, self.pending = self.pending, None
        if event is None:
            return
        thinking = str(event.get("thinking") or "")
        text = str(event.get("text") or "")
        if thinking.strip():
            block = {"type": "thinking", "thinking": thinking, "signature": ""}
            write_event(self._message("assistant", [block], usage=usage))
        if text.strip():
            block = {"type": "text", "text": text}
            write_event(self._message("assistant", [block], usage=usage, text=text))

    def _sj_tool_begin(self, event: dict, parent=None) -> None:
        block = {
            "type": "tool_use",
            "id": event.get("id"),
            "name": event.get("name"),
            "input": _arguments(event.get("arguments")),
        }
        extra = {"intent": event["intent"]} if event.get("intent") else {}
        write_event(self._message("assistant", [block], parent=parent, **extra))

    def _sj_tool_end(self, event: dict, parent=None) -> None:
        block = {
            "type": "tool_result",
            "tool_use_id": event.get("id"),
            "content": event.get("output") or "",
            "is_error": not event.get("ok"),
        }
        write_event(self._message("user", [block], parent=parent, tool_name=event.get("name")))

    def _sj_agent(self, event: dict) -> None:
        """A sub-agent's tool calls, nested under the parent's call as Claude Code nests its
        sub-agents' messages (`parent_tool_use_id`)."""
        inner = event.get("event") or {}
        if inner.get("type") == "tool_begin":
            self._sj_tool_begin(inner, parent=event.get("call_id"))
        elif inner.get("type") == "tool_end":
            self._sj_tool_end(inner, parent=event.get("call_id"))

    def _system(self, subtype: str, **fields) -> None:
        write_event(
            {
                "type": "system",
                "subtype": subtype,
                "session_id": self.session_id,
                "uuid": _uuid(),
                **fields,
            }
        )

    def _sj_completion(self, event: dict) -> None:
        self._system(
            "completion",
            text=event.get("text"),
            verified=event.get("verified"),
            problems=event.get("problems") or [],
            check=event.get("check"),
        )

    def _sj_verification(self, event: dict) -> None:
        fields = {k: event.get(k) for k in ("command", "ok", "exit_code", "output")}
        self._system("verification", **fields)

    def _sj_plan(self, event: dict) -> None:
        fields = {k: event.get(k) for k in ("title", "path", "steps", "files", "verify", "plan")}
        self._system("plan", approved=bool(event.get("approved")), **fields)

    # Seed 001's plan lifecycle, under its own names (a Claude Code consumer skips them).
    def _sj_plan_delta(self, event: dict) -> None:
        self._system("plan.delta", text=event.get("text") or "")

    def _sj_plan_approval_requested(self, event: dict) -> None:
        fields = {k: event.get(k) for k in ("path", "title", "steps")}
        self._system("plan.approval.requested", **fields)

    def _sj_plan_approval_resolved(self, event: dict) -> None:
        fields = {k: event.get(k) for k in ("decision", "automatic", "path")}
        self._system("plan.approval.resolved", **fields)

    def _sj_context_reset(self, event: dict) -> None:
        keys = ("trigger", "plan_preserved", "previous_context_percent", "tool_budget_reset")
        self._system("context.reset", **{k: event.get(k) for k in keys})

    def _sj_notice(self, event: dict) -> None:
        self._on_notice(event)

    def init(self, status: dict, session) -> None:
        self.session_id = status.get("session_id")
        self.model = status.get("model")
        mode = status.get("mode")
        self._system(
            "init",
            cwd=status.get("cwd"),
            model=self.model,
            tools=_tool_names(session),
            mcp_servers=_mcp_servers(session),
            permissionMode=PERMISSION_MODES.get(str(mode), "default"),
            slash_commands=_slash_commands(session),
            apiKeySource="none",
            output_style="default",
            # yuyao's own.
            mode=mode,
            role=status.get("role"),
            version=status.get("version"),
            cost_source=(status.get("pricing") or {}).get("source"),
        )

    def input_error(self, why: str) -> None:
        self._system("input_error", error=why)

    def result(self, status: dict, text: str, error, exit_code: int, cost_before: float) -> None:
        self._flush_reply(None)
        total = float(status.get("cost_usd") or 0.0)
        write_event(
            result_message(
                status,
                text,
                error,
                exit_code,
                self.meter,
                session_id=self.session_id,
                turn_cost=total - cost_before,
            )
        )
        self.meter.reset()


class JsonHandler(PrintHandler):
    """`--json`: the text output's stderr behaviour, plus the turn's meter for the result."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.meter = TurnMeter()

    def event(self, event_json: str) -> None:
        try:
            self.meter.see(json.loads(event_json))
        except Exception:
            pass
        super().event(event_json)


def _tool_names(session) -> list[str]:
    """The tools offered to the model, from `/tools` (the same list the model sees)."""
    try:
        text = session.dispatch("/tools")
    except Exception:
        return []
    names = []
    for line in text.splitlines():
        if line.startswith("  ") and line.strip():
            names.append(line.split()[0])
    return names


def _mcp_servers(session) -> list[dict]:
    try:
        return [{"name": name, "status": "configured"} for name in session.mcp_servers()]
    except Exception:
        return []


def _slash_commands(session) -> list[str]:
    try:
        return list(type(session).command_names())
    except Exception:
        return []


def _zero_usage() -> dict:
    return {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "reasoning_tokens": 0}


def _arguments(raw):
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"arguments": raw}
    return raw if isinstance(raw, dict) else {"arguments": raw}


def read_messages(stream, on_control=None):
    """Yields `(content, None)` for each user message on `stream`, or `(None, why)` for a
    line that is not one (blank lines are skipped). `control_request` lines go to
    `on_control` (the SDK's handshake), not to the turns."""
    for number, raw in enumerate(stream, 1):
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            yield None, f"line {number}: not JSON ({exc})"
            continue
        if isinstance(item, dict) and item.get("type") == "control_request":
            if on_control is not None:
                on_control(item)
            continue
        if isinstance(item, dict) and item.get("type") in ("control_response", "keep_alive"):
            continue
        message = item.get("message") if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or item.get("type") != "user"
            or not isinstance(message, dict)
        ):
            yield None, f'line {number}: expected {{"type":"user","message":{{...}}}}'
            continue
        content = message.get("content")
        problem = _content_problem(content)
        if problem:
            yield None, f"line {number}: {problem}"
            continue
        yield content, None


def _content_problem(content) -> str | None:
    if isinstance(content, str):
        return None if content.strip() else "the message is empty"
    if not isinstance(content, list) or not content:
        return "message.content must be a string or a non-empty list of parts"
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            continue
        if kind == "image" and isinstance(part.get("source"), dict):
            continue
        if kind == "image_url" and isinstance(part.get("image_url"), dict):
            continue
        return f"unsupported content part {json.dumps(part)[:80]}"
    return None


def control_responder(session, handler):
    """Answers the SDK's control requests on stdout: `initialize` (with the commands and
    the model), `interrupt` (the running turn stops); anything else is an error response
    naming the request, which the SDK raises to its caller."""

    def answer(item: dict) -> None:
        request = item.get("request") or {}
        request_id = item.get("request_id")
        subtype = request.get("subtype")
        if subtype == "initialize":
            body = {
                "commands": [
                    {"name": n, "description": "", "argumentHint": ""}
                    for n in _slash_commands(session)
                ],
                "output_style": "default",
                "available_output_styles": ["default"],
                "models": [],
                "account": {},
            }
            response = {"subtype": "success", "request_id": request_id, "response": body}
        elif subtype == "interrupt":
            session.interrupt()
            response = {"subtype": "success", "request_id": request_id, "response": {}}
        else:
            response = {
                "subtype": "error",
                "request_id": request_id,
                "error": f"yuyao does not support the control request '{subtype}'",
            }
        write_event({"type": "control_response", "response": response})

    return answer
