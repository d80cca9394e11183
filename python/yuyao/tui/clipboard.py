"""/copy: put text on the clipboard with whatever this machine offers, and say what happened."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
import time

CODE_BLOCK = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def code_blocks(text: str) -> list[str]:
    return [m.group(1) for m in CODE_BLOCK.finditer(text)]


def _tools() -> list[list[str]]:
    tools = []
    if sys.platform == "darwin" and shutil.which("pbcopy"):
        tools.append(["pbcopy"])
    if os.environ.get("WAYLAND_DISPLAY") and shutil.which("wl-copy"):
        tools.append(["wl-copy"])
    if os.environ.get("DISPLAY"):
        if shutil.which("xclip"):
            tools.append(["xclip", "-selection", "clipboard"])
        if shutil.which("xsel"):
            tools.append(["xsel", "--clipboard", "--input"])
    if shutil.which("clip.exe"):
        tools.append(["clip.exe"])
    return tools


def copy_text(text: str) -> tuple[bool, str]:
    """(certain, how): certain is True when a clipboard program accepted the text."""
    for cmd in _tools():
        try:
            subprocess.run(cmd, input=text.encode(), check=True, timeout=5, capture_output=True)
            return True, cmd[0]
        except (OSError, subprocess.SubprocessError):
            continue
    if sys.stdout.isatty():
        payload = base64.b64encode(text.encode()).decode()
        seq = f"\x1b]52;c;{payload}\x07"
        if os.environ.get("TMUX"):
            seq = "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + "\x1b\\"
        sys.stdout.write(seq)
        sys.stdout.flush()
        return False, "OSC 52"
    return False, ""


# --------------------------------------------------------------------------- Ctrl+V

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")
IMAGE_EXT = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/bmp": ".bmp",
}


def _readers() -> list[tuple[list[str], list[str], str]]:
    """(list-types argv, read argv prefix (type appended), name) for the tools present."""
    readers = []
    if os.environ.get("WAYLAND_DISPLAY") and shutil.which("wl-paste"):
        readers.append(
            (["wl-paste", "--list-types"], ["wl-paste", "--no-newline", "--type"], "wl-paste")
        )
    if os.environ.get("DISPLAY") and shutil.which("xclip"):
        readers.append(
            (
                ["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"],
                ["xclip", "-selection", "clipboard", "-o", "-t"],
                "xclip",
            )
        )
    return readers


def paste(dest_dir: str) -> tuple[str, str, str]:
    """Ctrl+V: what the clipboard holds -> (kind, value, how).

    kind "image": value is the path the image was saved to; "text": value is the text;
    "none": value says why nothing was taken (no reader, empty clipboard)."""
    readers = _readers()
    if not readers:
        return (
            "none",
            "no clipboard reader found: install xclip (X11) or wl-clipboard (Wayland) to paste "
            "images; text pastes through your terminal as usual",
            "",
        )
    for list_cmd, read_cmd, name in readers:
        try:
            listed = subprocess.run(list_cmd, capture_output=True, timeout=3)
        except (OSError, subprocess.SubprocessError):
            continue
        types = listed.stdout.decode(errors="replace").split()
        image = next((t for t in IMAGE_TYPES if t in types), None)
        wanted = image or next(
            (t for t in ("text/plain;charset=utf-8", "UTF8_STRING", "text/plain") if t in types),
            None,
        )
        if wanted is None:
            continue
        try:
            got = subprocess.run([*read_cmd, wanted], capture_output=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            continue
        if got.returncode != 0 or not got.stdout:
            continue
        if image is None:
            return "text", got.stdout.decode(errors="replace"), name
        os.makedirs(dest_dir, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        n = 1
        while True:
            path = os.path.join(dest_dir, f"paste-{stamp}-{n}{IMAGE_EXT[image]}")
            if not os.path.exists(path):
                break
            n += 1
        with open(path, "wb") as fh:
            fh.write(got.stdout)
        return "image", path, name
    return "none", "the clipboard holds no image or text", readers[0][2]
