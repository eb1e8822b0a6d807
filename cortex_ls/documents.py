"""Open documents: their text, kept in step with the editor, and exact position conversions.

LSP positions count characters in the negotiated encoding — UTF-16 code units by default, UTF-8
bytes or code points when negotiated — and split lines at \\n, \\r\\n and \\r only. Python's
str.splitlines also splits at \\f, \\v, \\x1c-\\x1e, \\x85, \\u2028 and \\u2029, so it is not used
here: a form feed in a file would shift every line below it. tree-sitter wants UTF-8 bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types

_BREAK = re.compile(r"\r\n|\r|\n")


def utf8(text: str) -> bytes:
    # Lone surrogates (invalid UTF-16 from a client, or undecodable bytes read from disk) are kept
    # rather than refused; the same encoding is used everywhere, so offsets stay consistent.
    return text.encode("utf-8", "surrogatepass")


def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(utf8(ch))
    if encoding == "utf-32":
        return 1
    return 2 if ord(ch) > 0xFFFF else 1


def encoding_name(kind) -> str:
    """'utf-8', 'utf-16' or 'utf-32' from pygls' negotiated value (a str or an enum)."""
    value = getattr(kind, "value", kind) or "utf-16"
    return value if value in ("utf-8", "utf-32") else "utf-16"


class Buffer:
    """One document's text with its line starts. Conversions clamp: a line past the end means
    the end of the document, a character past the end of a line means the end of that line."""

    def __init__(self, uri: str, path: Path | None, text: str, version: int | None = None,
                 language_id: str | None = None):
        self.uri = uri
        self.path = path
        self.version = version
        self.language_id = language_id
        self.dirty = False          # edited since it was opened or last saved
        self._set(text)

    def _set(self, text: str) -> None:
        self.text = text
        self._starts = [0] + [m.end() for m in _BREAK.finditer(text)]
        self._bytes: bytes | None = None
        self.symbols_cache: tuple | None = None    # (the text parsed, its symbols)

    def snapshot(self) -> "Buffer":
        """A copy that later edits do not touch, for a worker thread to read while the editor
        goes on typing. Symbols parsed on it are kept by this buffer while its text is the same."""
        copy = Buffer.__new__(Buffer)
        copy.__dict__.update(self.__dict__)
        copy.origin = self
        return copy

    def keep_symbols(self, symbols) -> None:
        self.symbols_cache = (self.text, symbols)
        origin = getattr(self, "origin", None)
        if origin is not None and origin.text is self.text:
            origin.symbols_cache = self.symbols_cache

    def cached_symbols(self):
        """(True, symbols) when parsed for the current text, else (False, None)."""
        cache = self.symbols_cache
        if cache is not None and cache[0] is self.text:
            return True, cache[1]
        return False, None

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_text(self, line: int) -> str:
        """The line's text without its line break."""
        start = self._starts[line]
        end = self._starts[line + 1] if line + 1 < len(self._starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    @property
    def data(self) -> bytes:
        if self._bytes is None:
            self._bytes = utf8(self.text)
        return self._bytes

    # -- positions ---------------------------------------------------------------------------

    def clamp_line(self, line: int) -> int:
        return max(0, min(line, len(self._starts) - 1))

    def offset(self, position: types.Position, encoding: str) -> int:
        """The code-point offset in the text of a client position."""
        if position.line >= len(self._starts):
            return len(self.text)
        line = max(0, position.line)
        column, units = 0, 0
        for ch in self.line_text(line):
            if units >= position.character:
                break
            units += _units(ch, encoding)
            column += 1
        return self._starts[line] + column

    def position(self, offset: int, encoding: str) -> types.Position:
        """The client position of a code-point offset."""
        offset = max(0, min(offset, len(self.text)))
        line = self._line_of(offset)
        before = self.text[self._starts[line]:offset]
        if encoding == "utf-32":
            return types.Position(line, len(before))
        if encoding == "utf-8":
            return types.Position(line, len(utf8(before)))
        return types.Position(line, len(before) + sum(1 for ch in before if ord(ch) > 0xFFFF))

    def line_start_position(self, line: int) -> types.Position:
        return types.Position(self.clamp_line(line), 0)

    def line_end_position(self, line: int, encoding: str) -> types.Position:
        line = self.clamp_line(line)
        return self.position(self._starts[line] + len(self.line_text(line)), encoding)

    def _line_of(self, offset: int) -> int:
        lo, hi = 0, len(self._starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # -- edits -------------------------------------------------------------------------------

    def apply(self, change, encoding: str) -> None:
        """Apply one content change: a range edit, or the whole text when there is no range."""
        rng = getattr(change, "range", None)
        if rng is None:
            self._set(change.text)
            return
        start, end = self.offset(rng.start, encoding), self.offset(rng.end, encoding)
        if end < start:
            start, end = end, start
        self._set(self.text[:start] + change.text + self.text[end:])


@dataclass(frozen=True)
class Cursor:
    """A client position resolved in a buffer: 0-based line, code-point and byte offsets."""
    line: int
    offset: int
    byte: int


def cursor(buffer: Buffer, position: types.Position, encoding: str) -> Cursor:
    offset = buffer.offset(position, encoding)
    return Cursor(buffer._line_of(offset), offset, len(utf8(buffer.text[:offset])))
