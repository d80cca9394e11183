"""How the fronts read what the user typed: one spelling rule for a choice's value and one
decoding for prompt bytes, shared by the command line, the background commands and agent_api.

A leaf of the package's import graph (it imports nothing), so it costs `yuyao --help` nothing.
"""


def fold_choice(text: str) -> str:
    """A choice's value as its canonical spelling: `Auto_Edit ` -> `auto-edit`."""
    return text.strip().lower().replace("_", "-")


def decode_text(data: bytes) -> str:
    """Prompt bytes as text: invalid UTF-8 becomes U+FFFD (never an encoding error)."""
    return data.decode("utf-8", "replace").removeprefix("\ufeff")
