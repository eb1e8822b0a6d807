"""What the index knows of files: their ids, and at the indexed HEAD their blob, their language,
and why one has no symbols (binary, too large, generated...)."""

from __future__ import annotations

from collections.abc import Iterable


def file_ids(con, paths: Iterable[str]) -> dict[str, int]:
    """The ids of the paths the index knows, by path (the others are left out)."""
    out = {}
    for path in paths:
        row = con.execute("select id from files where path = ?", (path,)).fetchone()
        if row:
            out[path] = row[0]
    return out


def head_blob(con, file_id: int) -> tuple[str, str | None] | None:
    """(blob id, language) of a file at the indexed HEAD; None when HEAD does not have it."""
    row = con.execute("select h.blob, f.language from head_files h join files f on f.id = h.file_id"
                      " where h.file_id = ?", (file_id,)).fetchone()
    return (row[0], row[1]) if row else None


def head_skip_reason(con, path: str) -> str | None:
    """Why a file at the indexed HEAD has no symbols, if so."""
    row = con.execute("select h.skip_reason from head_files h join files f on f.id = h.file_id"
                      " where f.path = ?", (path,)).fetchone()
    return row[0] if row else None


def symbol_spans(con, path: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of each live symbol of `path` at the indexed
    HEAD, a row per span (merged duplicates such as overloads have several)."""
    return con.execute(
        "select s.qualname, sp.start_line, sp.end_line from symbols s join symbol_spans sp"
        " on sp.symbol_id = s.id join files f on f.id = s.file_id where f.path = ? and"
        " s.alive = 1", (path,)).fetchall()
