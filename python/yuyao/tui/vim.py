"""Vim editing mode extras on top of prompt_toolkit's vi mode (spec §5.6).

prompt_toolkit provides NORMAL/INSERT/VISUAL, the motions (h/j/k/l, w/e/b, 0/$/^, gg/G,
f/F/t/T with ;/,), the operators (x, dd/D, dw/de/db, cc/C/cw, yy/yw, p/P, >>/<<, J, u) and the
text objects (iw/aw, i"/a", i(/a(, i[/a[, i{/a{). It has no `.` repeat; `DotRepeat` adds it:
it records the keys of the last change made from NORMAL mode (an operator with its motion or
text object, or an insert session up to Esc) and `.` replays them.
"""

from __future__ import annotations

from prompt_toolkit.enums import EditingMode
from prompt_toolkit.key_binding.vi_state import InputMode
from prompt_toolkit.keys import Keys

IGNORED = {Keys.CPRResponse, Keys.Vt100MouseEvent, Keys.ScrollUp, Keys.ScrollDown, Keys.Ignore}


class _Tap:
    """Stands in for KeyProcessor._process_coroutine to see each key as it is processed."""

    def __init__(self, inner, on_key) -> None:
        self.inner = inner
        self.on_key = on_key

    def send(self, key_press):
        self.on_key(key_press)
        return self.inner.send(key_press)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class DotRepeat:
    def __init__(self) -> None:
        self.last: list = []  # the keys of the last completed change
        self._rec: list | None = None
        self._text_before = ""
        self._replaying = 0
        self._app = None

    def install(self, app) -> None:
        """Call after every Application.reset() (prompt_toolkit re-creates the processor's
        coroutine then): in PromptSession.prompt(pre_run=...)."""
        kp = app.key_processor
        if not isinstance(kp._process_coroutine, _Tap):
            kp._process_coroutine = _Tap(kp._process_coroutine, self._on_key)
        if self._app is not app:
            self._app = app
            kp.after_key_press += self._after

    def mode(self) -> str:
        app = self._app
        if app is None:
            return ""
        if app.current_buffer.selection_state is not None:
            return "VISUAL"
        im = app.vi_state.input_mode
        if im == InputMode.NAVIGATION:
            return "NORMAL"
        if im == InputMode.REPLACE:
            return "REPLACE"
        return "INSERT"

    def _on_key(self, key_press) -> None:
        app = self._app
        if app is None or key_press.key in IGNORED or key_press.data == "_Flush":
            return
        if app.editing_mode != EditingMode.VI:
            return
        if self._replaying:
            self._replaying -= 1
            return
        if self._rec is None:
            if self.mode() != "NORMAL" or key_press.key == ".":
                return
            self._rec = []
            self._text_before = app.current_buffer.text
        self._rec.append(key_press)

    def _after(self, _sender) -> None:
        app = self._app
        if self._rec is None or app is None:
            return
        kp = app.key_processor
        vs = app.vi_state
        pending = bool(kp.key_buffer) or kp.arg is not None or vs.operator_func is not None
        mode = self.mode()
        if pending or mode in ("INSERT", "REPLACE", "VISUAL"):
            return  # the change is not complete yet
        if app.current_buffer.text != self._text_before:
            self.last = list(self._rec)
        self._rec = None

    def repeat(self, event) -> None:
        """The `.` key: replay the last change."""
        if not self.last:
            return
        from prompt_toolkit.key_binding.key_processor import KeyPress

        keys = [KeyPress(k.key, k.data) for k in self.last]
        self._replaying += len(keys)
        event.app.key_processor.feed_multiple(keys, first=True)


def add_bindings(kb, dot: DotRepeat) -> None:
    """`.` repeat, and vim's `cw`/`cW` (which change to the end of the word, like `ce`)."""
    from prompt_toolkit.clipboard import ClipboardData
    from prompt_toolkit.filters import vi_navigation_mode

    @kb.add(".", filter=vi_navigation_mode)
    def _dot(event) -> None:
        dot.repeat(event)

    # One insert session is one undo step, as in vim: the keys typed in INSERT mode save
    # nothing (prompt_toolkit saves before each key that does not repeat the previous
    # handler, so `u` undid a character); entering INSERT (i, a, o, c…) and the prompt's
    # start save the state the session began from.
    from prompt_toolkit.filters import vi_insert_mode
    from prompt_toolkit.key_binding.bindings.named_commands import get_by_name

    def no_save(_event) -> bool:
        return False

    kb.add(Keys.Any, filter=vi_insert_mode, save_before=no_save)(get_by_name("self-insert").handler)
    for key, command in (("backspace", "backward-delete-char"), ("delete", "delete-char")):
        kb.add(key, filter=vi_insert_mode, save_before=no_save)(get_by_name(command).handler)

    @kb.add("c-r", filter=vi_navigation_mode, save_before=no_save)
    def _redo(event) -> None:  # vim's redo (prompt_toolkit has none in NORMAL mode)
        event.current_buffer.redo()

    def change_word(event, big: bool) -> None:
        buf = event.current_buffer
        doc = buf.document
        if not doc.current_char or doc.current_char.isspace():
            end = doc.find_next_word_beginning(count=event.arg, WORD=big) or len(
                doc.text_after_cursor
            )
        else:
            end = doc.find_next_word_ending(
                include_current_position=True, count=event.arg, WORD=big
            ) or len(doc.text_after_cursor)
        deleted = buf.delete(end)
        event.app.clipboard.set_data(ClipboardData(deleted))
        event.app.vi_state.input_mode = InputMode.INSERT

    @kb.add("c", "w", filter=vi_navigation_mode)
    def _cw(event) -> None:
        change_word(event, False)

    @kb.add("c", "W", filter=vi_navigation_mode)
    def _cW(event) -> None:
        change_word(event, True)

    # Quote text objects as vim picks them (prompt_toolkit's take the quote under the cursor
    # as a closing one): the pair around the cursor on its line, else the next pair.
    from prompt_toolkit.key_binding.bindings.vi import TextObject, create_text_object_decorator

    text_object = create_text_object_decorator(kb)
    for q in ('"', "'", "`"):
        for inner in (True, False):

            @text_object("i" if inner else "a", q, no_move_handler=True)
            def _quote(event, q=q, inner=inner) -> TextObject:
                span = quote_span(event.current_buffer.document, q, inner)
                if span is None:
                    return TextObject(0)
                return TextObject(span[0], span[1])


def quote_span(doc, q: str, inner: bool) -> tuple[int, int] | None:
    """(start, end) of the quoted text object, relative to the cursor; None when the line
    has no such pair at or after the cursor."""
    line = doc.current_line
    col = doc.cursor_position_col
    marks = [i for i, c in enumerate(line) if c == q and (i == 0 or line[i - 1] != "\\")]
    pairs = list(zip(marks[::2], marks[1::2]))
    pair = next((p for p in pairs if p[0] <= col <= p[1]), None)
    if pair is None:
        pair = next((p for p in pairs if p[0] > col), None)
    if pair is None:
        return None
    a, b = pair
    start, end = (a + 1, b) if inner else (a, b + 1)
    return start - col, end - col


def editor_mode_from(value: str) -> str:
    """'vim' for the values that mean vi editing, 'default' otherwise."""
    v = (value or "").strip().strip('"').lower()
    return "vim" if v in ("vi", "vim") else "default"
