"""`@path` references in the input: what each one points at, for the indicator.

Display only. The text is sent exactly as typed; reading a referenced file into the request
is the core's job (only what the user named with `@` may enter the context, spec §5.4).
"""

from __future__ import annotations

import os
import re

REF = re.compile(r"(?<![\w@])@((?:\\ |[^\s])+)")
IMAGE_EXT = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")


def find(text: str) -> list[str]:
    """The @references of a text, in order, without duplicates (trailing punctuation dropped)."""
    seen: list[str] = []
    for m in REF.finditer(text):
        ref = m.group(1).replace("\\ ", " ").rstrip(".,;:!?)")
        if ref and ref not in seen:
            seen.append(ref)
    return seen


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} kB"
    return f"{n / (1024 * 1024):.1f} MB"


def describe(ref: str, cwd: str) -> tuple[str, str]:
    """(kind, label) with kind in image|file|folder|missing."""
    path = os.path.join(cwd, os.path.expanduser(ref))
    try:
        if os.path.isdir(path):
            return "folder", f"{ref} (folder)"
        size = os.path.getsize(path)
    except OSError:
        return "missing", f"{ref} (not found)"
    kind = "image" if ref.lower().endswith(IMAGE_EXT) else "file"
    return kind, f"{os.path.basename(ref) if kind == 'image' else ref} ({kind}, {_size(size)})"
