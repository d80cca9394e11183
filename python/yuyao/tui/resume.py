"""On `-c` / `--resume`: the last exchanges of the restored conversation, compact (each
prompt, the tools its turn called, the answer's first line), so the user sees where they are."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from . import theme
from .render import _first_line, summarize_arguments

SHOWN = 3  # exchanges


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return ""


def exchanges(messages: list[dict], n: int = SHOWN) -> tuple[list[dict], int]:
    """The last `n` exchanges ({prompt, tools: [(name, summary)], answer}) and how many
    earlier ones there are. Notes the core adds between turns are not prompts."""
    found: list[dict] = []
    for m in messages:
        role = m.get("role")
        text = _text(m.get("content")).strip()
        if role == "user":
            if text.startswith("I ran this shell command myself"):
                command = next((ln[2:] for ln in text.splitlines() if ln.startswith("$ ")), "")
                found.append({"prompt": f"!{command}", "tools": [], "answer": ""})
            elif text.startswith("[Summary of"):
                found.append({"prompt": "(summary of the earlier conversation)", "tools": []})
            elif text.startswith("[") or not text:
                continue  # a note from the core (background job, undo, …)
            else:
                found.append({"prompt": text, "tools": [], "answer": ""})
        elif role == "assistant" and found:
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                name = str(fn.get("name") or "tool")
                found[-1]["tools"].append((name, summarize_arguments(name, fn.get("arguments"))))
            if text:
                found[-1]["answer"] = text
    return found[-n:], max(0, len(found) - n)


def render(messages: list[dict]) -> Group | None:
    shown, earlier = exchanges(messages)
    if not shown:
        return None
    head = Text("↺ where you left off", "accent")
    if earlier:
        head.append(f" (last {len(shown)} of {len(shown) + earlier} exchanges)", "muted")
    parts: list = [head]
    for ex in shown:
        parts.append(Text.assemble(("› ", "accent"), (_first_line(ex["prompt"], 100), "bold")))
        tools = ex.get("tools") or []
        if tools:
            listed = " · ".join(f"{n} {_first_line(s, 40)}".strip() for n, s in tools[:3])
            more = f" · +{len(tools) - 3} more" if len(tools) > 3 else ""
            parts.append(Text(f"  {theme.SYM_TOOL} {listed}{more}", "tool"))
        if ex.get("answer"):
            parts.append(Text(f"  {_first_line(ex['answer'], 100)}", "muted"))
    return Group(*parts)
