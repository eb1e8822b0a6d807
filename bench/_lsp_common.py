"""What bench_lsp.py and bench_scale.py share about cortex-ls: the server's options, the Python
files and positions sampled (classified as function, class or other lines), and what a hover
says."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import _benchlib as bl

REQUEST_TIMEOUT = 60.0      # seconds: a protocol mistake shows up as a hang; fail it
SERVER_OPTIONS = {"pollInterval": 0, "hotspotThreshold": 2, "hotspotWindowDays": 3650}


@dataclass
class File:
    path: str                       # relative to the repository root
    text: str
    uri: str = ""
    function_lines: list[int] = field(default_factory=list)   # 0-based
    outside_lines: list[int] = field(default_factory=list)
    class_lines: list[int] = field(default_factory=list)      # in a class, outside its methods
    indent: dict[int, int] = field(default_factory=dict)      # line -> first non-blank column


@dataclass
class Position:
    file: File
    line: int                       # 0-based
    character: int
    where: str                      # "function" | "outside" | "class"


def classify(path: str, text: str) -> File | None:
    """The file's non-blank lines inside a function or method, and outside any symbol, as the
    server sees them (same extractor, same innermost-symbol rule, cursor on the first non-blank
    character). None when the server would not parse it (too large)."""
    from cortex_core.lang.live import buffer_symbols, innermost
    data = text.encode("utf-8", "surrogatepass")
    symbols = buffer_symbols(path, data)
    if symbols is None:
        return None
    out = File(path, text)
    byte = 0
    for i, line in enumerate(text.split("\n")):
        raw = line.encode("utf-8", "surrogatepass")
        stripped = line.lstrip(" \t")
        if stripped.strip():
            col = len(line) - len(stripped)        # spaces and tabs: one unit each
            sym = innermost(symbols, byte + col, i + 1)
            if sym is None:
                out.outside_lines.append(i)
            elif sym.kind in ("function", "method"):
                out.function_lines.append(i)
            elif sym.kind == "class":
                out.class_lines.append(i)
            out.indent[i] = col
        byte += len(raw) + 1
    return out


def pick_files(clone: Path, db: Path, n: int, rng: random.Random) -> tuple[list[File], int]:
    """N Python files at HEAD known to the index, with lines of both kinds; (files, eligible)."""
    from cortex_core.store.store import open_reader
    tracked = set(bl.git(clone, "ls-files", "-z", "--", "*.py").split("\0")) - {""}
    con = open_reader(db)
    try:
        indexed = {p for (p,) in con.execute(
            "select f.path from head_files h join files f on f.id = h.file_id")}
    finally:
        con.close()
    candidates = sorted(tracked & indexed)
    rng.shuffle(candidates)
    files = []
    for path in candidates:
        text = (clone / path).read_text(encoding="utf-8", errors="replace")
        if "\r" in text:       # LSP also breaks lines at a lone \r: keep the numbering simple
            continue
        f = classify(path, text)
        if f is not None and f.function_lines and f.outside_lines:
            f.uri = (clone / path).as_uri()
            files.append(f)
            if len(files) >= n:
                break
    return files, len(candidates)


def make_positions(files: list[File], count: int, outside_share: float, class_share: float,
                   rng: random.Random) -> list[Position]:
    out = []
    for i in range(count):
        f = files[i % len(files)]
        draw = rng.random()
        if draw < outside_share:
            where, lines = "outside", f.outside_lines
        elif draw < outside_share + class_share and f.class_lines:
            where, lines = "class", f.class_lines
        else:
            where, lines = "function", f.function_lines
        line = rng.choice(lines)
        out.append(Position(f, line, f.indent[line], where))
    return out


def plain(value):
    """pygls' client hands custom params back as namedtuples: as dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def hover_kind(text: str | None) -> str:
    if text is None:
        return "none"
    if text.startswith("**line "):
        return "line"
    if text.startswith("**`"):
        return "symbol"
    return "other"
