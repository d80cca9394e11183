"""Claude Code's command line, as its SDK (`claude-agent-sdk`, `ClaudeAgentOptions(cli_path=...)`)
spells it, mapped onto yuyao's: yuyao is then a drop-in backend for SDK users
(docs/headless.md).

The SDK starts `<cli> --output-format stream-json --verbose [--system-prompt ""] [...]
--input-format stream-json` with no `-p`: both stream-json formats and no task mean a
headless run fed on stdin. Its camelCase flags become yuyao's (`--allowedTools` ->
`--allowed-tools`, `--max-turns` -> `--max-steps`, `--permission-mode` -> `--mode`); flags
with no yuyao meaning are dropped with one note on stderr each, never silently and never as
a usage error (the SDK passes some by default).
"""

from __future__ import annotations

import sys

RENAMED = {
    "--allowedTools": "--allowed-tools",
    "--disallowedTools": "--disallowed-tools",
    "--max-turns": "--max-steps",
}
# Claude Code's permission modes -> yuyao's (`default` keeps yuyao's configured mode).
PERMISSION_MODES = {
    "acceptEdits": "auto-edit",
    "bypassPermissions": "yolo",
    "plan": "plan",
    "dontAsk": "ask",
}
# Claude Code flags with no yuyao equivalent: name -> whether it takes a value.
IGNORED = {
    "--setting-sources": True,
    "--permission-prompt-tool": True,
    "--betas": True,
    "--fallback-model": True,
    "--max-thinking-tokens": True,
    "--effort": True,
    "--task-budget": True,
    "--plugin-dir": True,
    "--mcp-config": True,
    "--settings": True,
    "--thinking-display": True,
    "--resume-session-at": True,
    "--resume-drops-turn": True,
    "--session-id": True,
    "--add-dir": True,
    "--include-partial-messages": False,
    "--include-hook-events": False,
    "--strict-mcp-config": False,
    "--session-mirror": False,
}
ADAPTED = {*RENAMED, *IGNORED, "--permission-mode", "--system-prompt", "--tools", "--thinking"}
_NOTE = "yuyao: note: "


def adapt_argv(argv: list[str]) -> list[str]:
    """Claude Code's spelling of a command line -> yuyao's (other words pass unchanged)."""
    out: list[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":  # a command's own words (`mcp add x -- cmd ...`) are not ours
            out += words[i:]
            break
        name, eq, inline = word.partition("=")
        if name not in ADAPTED:
            out.append(word)
            i += 1
            continue
        takes_value = IGNORED.get(name, True)
        if eq:
            value, i = inline, i + 1
        elif takes_value and i + 1 < len(words):
            value, i = words[i + 1], i + 2
        else:
            value, i = None, i + 1
        if name in RENAMED:
            out += [RENAMED[name], value or ""]
        elif name == "--permission-mode":
            mode = PERMISSION_MODES.get(value or "")
            if mode:
                out += ["--mode", mode]
            elif value != "default":
                _note(
                    f"--permission-mode {value}: no yuyao equivalent, the configured mode applies"
                )
        elif name == "--system-prompt" and not value:
            # The SDK's default: Claude Code then runs with no system prompt, yuyao with its own
            # (its tool rules live there).
            _note("an empty --system-prompt keeps yuyao's own system prompt")
        elif name == "--tools" and value == "default":
            pass  # the preset: yuyao's default tool set
        elif name == "--thinking" and value in ("adaptive", "disabled", "enabled"):
            level = {"disabled": "off", "adaptive": "medium", "enabled": "medium"}[value]
            out += ["--thinking", level]
        elif name in IGNORED:
            shown = f"{name} {value}" if value is not None else name
            _note(f"ignoring the Claude Code option {shown} (no yuyao equivalent)")
        else:
            out += [name, value or ""]
    if _is_sdk_session(out):
        out.insert(0, "--print")
    return out


def _is_sdk_session(words: list[str]) -> bool:
    """Both formats stream-json, no -p and no task: the SDK's way of starting a session."""

    def value_of(flag: str):
        for i, word in enumerate(words):
            if word == flag and i + 1 < len(words):
                return words[i + 1]
            if word.startswith(flag + "="):
                return word.split("=", 1)[1]
        return None

    printing = any(w in ("-p", "--print") or w.startswith("--print=") for w in words)
    return (
        not printing
        and value_of("--input-format") == "stream-json"
        and value_of("--output-format") == "stream-json"
    )


def _note(text: str) -> None:
    sys.stderr.write(_NOTE + text + "\n")
