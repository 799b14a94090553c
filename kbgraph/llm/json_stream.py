"""Streaming JSON answers: the receiver of a streamed answer's text (:class:`TextSink`) and
:class:`JSONFieldStream`, which reads one top-level string field (e.g. the QA prompt's ``answer``) out of a JSON
object while the model is still writing it, so the user sees the answer text, not the JSON around it.

The extraction is incremental and best-effort: text before the first ``{`` is skipped, the field's string value is
decoded (JSON escapes included, ``\\uXXXX`` surrogate pairs joined) and passed on piece by piece as it arrives;
everything else is only scanned. Its output is the field's value as ``json.loads`` of the same object gives it.
Whoever needs exactness (``kbgraph.query.streaming``) compares it with the validated answer at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

__all__ = ["JSONFieldStream", "TextSink"]


class TextSink(Protocol):
    """Receives a streamed LLM answer (``BaseLLM.complete_json(..., sink=...)``)."""

    def text(self, piece: str) -> None:
        """The next piece of the answer text (raw, as the model writes it; never empty)."""
        ...

    def restart(self) -> None:
        """The pieces so far are void: another request (the JSON repair request) follows."""
        ...


class JSONFieldStream:
    """A :class:`TextSink` that passes on the decoded text of the string value of top-level key ``field`` of
    the first JSON object in the answer: ``emit(text)`` per decoded piece (never empty), ``restarted()`` when
    the LLM client starts another request (the pieces emitted so far are then void). A non-string value is
    not emitted."""

    def __init__(self, field: str, emit: Callable[[str], None], restarted: Callable[[], None] | None = None):
        self.field = field
        self._emit = emit
        self._restarted = restarted
        self._reset()

    def _reset(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escape = ""  # an escape sequence still incomplete (starts with a backslash)
        self._string: list[str] = []  # raw characters of a key string at depth 1
        self._after_colon = False  # at depth 1: the next value belongs to ``_key``
        self._key: str | None = None
        self._capturing = False
        self._high = ""  # a high surrogate (\\uD800-\\uDBFF) waiting for its low half
        self._done = False

    def restart(self) -> None:
        self._reset()
        if self._restarted is not None:
            self._restarted()

    def text(self, piece: str) -> None:
        out: list[str] = []
        for ch in piece:
            if self._done:
                break
            if self._in_string:
                self._string_char(ch, out)
            elif ch == '"':
                self._in_string = True
                self._string = []
                self._capturing = self._depth == 1 and self._after_colon and self._key == self.field
            elif ch in "{[":
                self._depth += 1
                self._after_colon = False
            elif ch in "}]":
                self._depth = max(self._depth - 1, 0)
                self._done = self._depth == 0 and ch == "}"  # the first object ended: nothing more to read
            elif self._depth == 1 and ch == ":":
                self._after_colon = True
            elif self._depth == 1 and ch == ",":
                self._after_colon, self._key = False, None
        if out:
            self._emit("".join(out))

    def _string_char(self, ch: str, out: list[str]) -> None:
        if self._escape:
            self._escape += ch
            if len(self._escape) < (6 if self._escape[1] == "u" else 2):
                return
            raw, self._escape = self._escape, ""
            if not self._capturing:
                self._string.append(raw)
            elif raw[1] == "u" and _hex(raw[2:]) >= 0:
                self._put(chr(_hex(raw[2:])), out)
            else:
                self._put(_ESCAPES.get(raw[1], raw), out)
            return
        if ch == "\\":
            self._escape = ch
        elif ch == '"':
            self._in_string = False
            if self._capturing:
                self._put("", out)
                self._capturing, self._done = False, True
            elif self._depth == 1 and not self._after_colon:
                self._key = _decode("".join(self._string))
            if self._depth == 1:
                self._after_colon = False
        elif self._capturing:
            self._put(ch, out)
        else:
            self._string.append(ch)

    def _put(self, ch: str, out: list[str]) -> None:
        """Emit ``ch``, joining a high surrogate (held back) with the low one after it; "" flushes."""
        if self._high:
            if len(ch) == 1 and 0xDC00 <= ord(ch) < 0xE000:
                ch, self._high = chr(0x10000 + (ord(self._high) - 0xD800) * 0x400 + (ord(ch) - 0xDC00)), ""
            else:
                out.append(self._high)
                self._high = ""
        if len(ch) == 1 and 0xD800 <= ord(ch) < 0xDC00:
            self._high = ch
        elif ch:
            out.append(ch)


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _hex(digits: str) -> int:
    try:
        return int(digits, 16) if len(digits) == 4 else -1
    except ValueError:
        return -1


def _decode(raw: str) -> str:
    """The text of a JSON string's inside (escapes decoded); as written when it does not decode."""
    try:
        text: str = json.loads(f'"{raw}"')
        return text
    except ValueError:
        return raw
