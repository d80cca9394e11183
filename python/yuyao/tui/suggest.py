"""The greyed next-step suggestion shown in the empty input after a turn.

A simple, deterministic prediction from the last answer: its last "Next:" / "Next step:" line
if it has one, else — when it ends by offering to do something ("Shall I …?", "Want me to …?",
"Would you like me to …?") — accepting that offer. Nothing otherwise.
"""

from __future__ import annotations

import re

NEXT = re.compile(
    r"^\s*(?:[-*>]\s*)?(?:\*\*)?(?:next(?: steps?)?|suggested next step)\s*:(?:\*\*)?\s*(.+)$", re.I
)
OFFER = re.compile(
    r"(?:shall i|should i|want me to|would you like me to|do you want me to)\s+([^?\n]{3,120})\?\s*$",
    re.I,
)


def next_step(answer: str) -> str:
    text = (answer or "").strip()
    if not text:
        return ""
    found = ""
    for line in text.splitlines():
        m = NEXT.match(line)
        if m:
            found = m.group(1).strip().strip("*`").strip()
    if found:
        return found[:200]
    m = OFFER.search(text)
    if m:
        return f"yes, {m.group(1).strip()}"[:200]
    return ""
