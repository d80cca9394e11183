"""`-p --input-format stream-json` and `--output-format stream-json`: newline-delimited JSON
for SDK-style callers (the Claude Code SDK shape).

Input: one user message per line, `{"type":"user","message":{"role":"user","content":...}}`,
content a string or a list of parts (`{"type":"text","text":...}`, images as
`{"type":"image","source":{"type":"base64","media_type":...,"data":...}}` or
`{"type":"image_url","image_url":{"url":...}}`). Each message is one turn of the same session;
a malformed line is reported as an `error` event and the session goes on.

Output: one JSON object per line — `system/init`, `assistant` (text), `tool_use`,
`tool_result`, `result` (per turn: cost, usage, exit_status), `error`. Nothing else is written
to stdout; the core decides everything, this module only renders its events.
"""

from __future__ import annotations

import json
import sys
import time

from yuyao.headless import PrintHandler


def write_event(event: dict) -> None:
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


class StreamJsonHandler(PrintHandler):
    """Renders the core's events as stream-json lines on stdout; warnings and errors still go
    to stderr (as with the text output), so stdout stays parseable line by line."""

    def __init__(self, *, verbose: bool):
        super().__init__(stream_text=False, show_thinking="off", verbose=verbose)
        self.session_id = None
        self.turn_usage = _zero_usage()
        self.turn_started = time.monotonic()
        self.turn_steps = 0

    def event(self, event_json: str) -> None:
        try:
            event = json.loads(event_json)
            kind = event.get("type")
            if kind == "assistant_message" and str(event.get("text") or "").strip():
                text = event["text"]
                write_event(
                    {
                        "type": "assistant",
                        "session_id": self.session_id,
                        "text": text,
                        "message": {
                            "role": "assistant",
                            "content": [{"type": "text", "text": text}],
                        },
                    }
                )
            elif kind == "tool_begin":
                write_event(
                    {
                        "type": "tool_use",
                        "session_id": self.session_id,
                        "id": event.get("id"),
                        "name": event.get("name"),
                        "input": _arguments(event.get("arguments")),
                        "intent": event.get("intent") or "",
                    }
                )
            elif kind == "tool_end":
                write_event(
                    {
                        "type": "tool_result",
                        "session_id": self.session_id,
                        "tool_use_id": event.get("id"),
                        "name": event.get("name"),
                        "is_error": not event.get("ok"),
                        "content": event.get("output") or "",
                    }
                )
            elif kind == "model_call":
                self.turn_steps += 1
            elif kind == "usage":
                for key in self.turn_usage:
                    self.turn_usage[key] += int(event.get(key) or 0)
            elif kind == "notice":
                self._on_notice(event)
        except Exception:  # a closed pipe or an odd event must never stop the run
            pass

    def init(self, status: dict, options: dict) -> None:
        self.session_id = status.get("session_id")
        write_event(
            {
                "type": "system",
                "subtype": "init",
                "session_id": self.session_id,
                "model": status.get("model"),
                "cwd": status.get("cwd"),
                "mode": status.get("mode"),
                "role": status.get("role"),
            }
        )

    def result(self, status: dict, text: str, error, exit_code: int, cost_before: float) -> None:
        last_turn = status.get("last_turn") or {}
        total = float(status.get("cost_usd") or 0.0)
        event = {
            "type": "result",
            "subtype": "success" if exit_code == 0 else "error",
            "is_error": exit_code != 0,
            "session_id": self.session_id,
            "result": text,
            "exit_status": last_turn.get("exit_status") or ("Error" if error else None),
            "cost_usd": round(total - cost_before, 8),
            "total_cost_usd": total,
            "usage": dict(self.turn_usage),
            "num_steps": self.turn_steps,
            "duration_ms": int((time.monotonic() - self.turn_started) * 1000),
        }
        if error:
            event["error"] = error
        write_event(event)
        self.turn_usage = _zero_usage()
        self.turn_steps = 0
        self.turn_started = time.monotonic()


def _zero_usage() -> dict:
    return {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "reasoning_tokens": 0}


def _arguments(raw):
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def read_messages(stream):
    """Yields `(content, None)` for each user message on `stream`, or `(None, why)` for a
    line that is not one (blank lines are skipped)."""
    for number, raw in enumerate(stream, 1):
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            yield None, f"line {number}: not JSON ({exc})"
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
