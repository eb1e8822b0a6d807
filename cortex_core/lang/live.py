"""Symbols of a live buffer — text being edited, which may differ from HEAD.

The buffer is parsed with the indexer's own extractor, so its qualified names are the index's:
a cursor is matched to indexed history by (path, qualified name), never by line numbers, which
drift as soon as the buffer is edited.
"""

from __future__ import annotations

from cortex_core.lang.languages import language_for_path
from cortex_core.lang.symbols import Symbol, extract_symbols

# Larger buffers are not parsed live: a buffer is re-parsed from scratch as it is edited, and 1 MB
# takes about 0.5 s (bench/bench_large_files.py). The hover then reads the indexed HEAD's
# spans, good while the buffer is unedited; the indexer's own limit (max_file_bytes) is larger.
MAX_BYTES = 1_000_000


def buffer_symbols(path: str, source: bytes) -> list[Symbol] | None:
    """The buffer's symbols; None when its language is not supported or it is too large."""
    language = language_for_path(path)
    if language is None or len(source) > MAX_BYTES:
        return None
    return extract_symbols(language, source)


def innermost(symbols: list[Symbol], byte_offset: int, line: int) -> Symbol | None:
    """The innermost symbol at a position: its text contains `byte_offset`, or, for a cursor past
    the end of a line inside it, its lines contain `line` (1-based). On a definition's first
    line, only its text counts: the cursor may be on code before it."""
    best = None
    for sym in symbols:
        inside = sym.start_byte <= byte_offset < sym.end_byte or \
            sym.start_line < line <= sym.end_line
        size = sym.end_byte - sym.start_byte
        if inside and (best is None or size <= best.end_byte - best.start_byte):
            best = sym
    return best
