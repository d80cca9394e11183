"""Reading keys while a turn runs (the prompt is not active then).

`RawKeys` puts the terminal in a non-canonical, no-echo mode with signals and flow control off
(so Ctrl+C and Ctrl+S arrive as bytes) but output processing left on (so printing stays normal),
and turns the pending bytes into simple key events: ("char", c), ("enter",), ("backspace",),
("esc",), ("ctrl", letter), ("alt", key). Escape sequences of other keys (arrows, function keys) are skipped.
"""

from __future__ import annotations

import codecs
import os
import select
import sys

try:  # POSIX only; without it nothing is read mid-turn (Ctrl+C still interrupts)
    import termios
except ImportError:  # pragma: no cover
    termios = None  # type: ignore[assignment]

ESC_WAIT = 0.03  # seconds to tell a lone Esc from the start of an escape sequence


class RawKeys:
    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stdin
        self.fd: int | None = None
        self._saved = None
        self._orig = None  # the attributes before yuyao touched the terminal
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        try:
            fd = self.stream.fileno()
            if termios is not None and os.isatty(fd):
                self.fd = fd
        except (AttributeError, OSError, ValueError):
            self.fd = None

    @property
    def active(self) -> bool:
        return self._saved is not None

    def __enter__(self) -> RawKeys:
        self.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disable()

    def enable(self) -> None:
        if self.fd is None or self._saved is not None:
            return
        saved = termios.tcgetattr(self.fd)
        mode = termios.tcgetattr(self.fd)
        mode[0] &= ~(termios.IXON | termios.ICRNL | termios.INLCR)  # iflag
        mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)  # lflag
        mode[6][termios.VMIN] = 0
        mode[6][termios.VTIME] = 0
        termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        self._saved = saved

    def disable(self) -> None:
        if self.fd is None or self._saved is None:
            return
        termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)
        self._saved = None

    def guard_typeahead(self) -> None:
        """Between prompts (after a turn, while the next prompt starts) keep Enter as CR: with
        the terminal's ICRNL on, a line typed ahead would reach the prompt as Ctrl+J and
        become a newline instead of being submitted. `restore_terminal` undoes it."""
        if self.fd is None or self._saved is not None:
            return
        try:
            if self._orig is None:
                self._orig = termios.tcgetattr(self.fd)
            mode = termios.tcgetattr(self.fd)
            mode[0] &= ~termios.ICRNL
            termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        except termios.error:  # pragma: no cover
            pass

    def restore_terminal(self) -> None:
        """The terminal as it was before yuyao (for a subshell, and at exit)."""
        if self.fd is None or self._orig is None or self._saved is not None:
            return
        try:
            termios.tcsetattr(self.fd, termios.TCSANOW, self._orig)
        except termios.error:  # pragma: no cover
            pass

    def _read_available(self, timeout: float) -> bytes:
        if self.fd is None:
            return b""
        try:
            ready, _, _ = select.select([self.fd], [], [], timeout)
        except (OSError, ValueError):
            return b""
        if not ready:
            return b""
        try:
            return os.read(self.fd, 4096)
        except OSError:
            return b""

    def poll(self, timeout: float = 0.0) -> list[tuple]:
        """Key events typed since the last poll (waits at most `timeout` for the first)."""
        data = self._read_available(timeout)
        if not data:
            return []
        if data.endswith(b"\x1b"):  # maybe the start of a sequence split across reads
            data += self._read_available(ESC_WAIT)
        return self.parse(data)

    def parse(self, data: bytes) -> list[tuple]:
        events: list[tuple] = []
        i = 0
        n = len(data)
        while i < n:
            b = data[i]
            if b == 0x1B:
                if i + 1 >= n:
                    events.append(("esc",))
                    i += 1
                    continue
                nxt = data[i + 1]
                if nxt == ord("["):  # CSI: parameters then a final byte 0x40-0x7e
                    j = i + 2
                    while j < n and not (0x40 <= data[j] <= 0x7E):
                        j += 1
                    i = j + 1
                    continue
                if nxt == ord("O"):  # SS3: one more byte
                    i += 3
                    continue
                if nxt == 0x1B:  # Esc Esc
                    events.append(("esc",))
                    i += 1
                    continue
                events.append(("alt", chr(nxt).lower()))  # Alt+key
                i += 2
                continue
            if b in (0x0D, 0x0A):
                events.append(("enter",))
            elif b in (0x7F, 0x08):
                events.append(("backspace",))
            elif b == 0x09:
                events.append(("char", " "))
            elif b < 0x20:
                events.append(("ctrl", chr(b + 0x60)))
            else:
                j = i
                while j < n and data[j] >= 0x20 and data[j] != 0x7F and data[j] != 0x1B:
                    j += 1
                text = self._decoder.decode(data[i:j])
                events.extend(("char", c) for c in text)
                i = j
                continue
            i += 1
        return events
