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
    """The text's bytes, as tree-sitter and git see them. Undecodable bytes read from disk (kept
    as surrogate escapes) come back as they were, so an unedited non-UTF-8 file is byte for byte
    its blob; other lone surrogates (invalid UTF-16 from a client) are kept, not refused."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _column(line: str, units: int, encoding: str) -> int:
    """The code-point column of `units` units into `line`, clamped to its end. A position inside
    a character (between the halves of a surrogate pair, inside a UTF-8 sequence) moves past it.
    Encoded in C, not walked in Python: lines can be megabytes long."""
    if units <= 0:
        return 0
    if encoding == "utf-32":
        return min(units, len(line))
    if encoding == "utf-8":
        data = utf8(line)
        if units >= len(data):
            return len(line)
        head = data[:units]
        column = len(head.decode("utf-8", "ignore"))
        return column + (1 if len(utf8(line[:column])) < units else 0)
    data = line.encode("utf-16-le", "surrogatepass")
    if 2 * units >= len(data):
        return len(line)
    column = len(data[:2 * units].decode("utf-16-le", "surrogatepass"))
    # Half a surrogate pair decodes as a lone surrogate: that already counts the character.
    return column


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

    def offset_of_byte(self, byte: int) -> int:
        """The code-point offset of a UTF-8 byte offset (from tree-sitter)."""
        data = self.data
        return len(data[:max(0, byte)].decode("utf-8", "surrogateescape"))

    def offset_of_git_line(self, line: int) -> int:
        """The code-point offset where a 1-based \n-counted line starts (clamped)."""
        at = 0
        for _ in range(max(0, line - 1)):
            nxt = self.text.find("\n", at)
            if nxt < 0:
                return len(self.text)
            at = nxt + 1
        return at

    def git_line(self, offset: int) -> int:
        """The 1-based line of a code-point offset as git and tree-sitter count lines: at
        \n only (LSP also breaks lines at a lone \r)."""
        return self.text.count("\n", 0, offset) + 1

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
        return self._starts[line] + _column(self.line_text(line), position.character, encoding)

    def position(self, offset: int, encoding: str) -> types.Position:
        """The client position of a code-point offset."""
        offset = max(0, min(offset, len(self.text)))
        line = self._line_of(offset)
        before = self.text[self._starts[line]:offset]
        if encoding == "utf-32":
            return types.Position(line, len(before))
        if encoding == "utf-8":
            return types.Position(line, len(utf8(before)))
        return types.Position(line, len(before.encode("utf-16-le", "surrogatepass")) // 2)

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
