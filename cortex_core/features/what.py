"""`cortex what`: what is relevant right now, from the state of the working copy alone.

Three groups: about your changes (notes on the files you changed, then the commits that shaped
them — fixes and features first, recent first), recent decisions (the latest commits that explain
themselves with a body, and the latest notes), and hot spots you are touching (hotspots among
the changed files, and among the symbols whose lines at the indexed HEAD the uncommitted diff
touches, and the classes holding them). "Recent" counts back from
the repository's own clock by default (clock.py).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

from cortex_core.clock import DEFAULT, Clock, clock as read_clock
from cortex_core.query.files import file_ids, symbol_spans
from cortex_core.query.history import CommitRef, commit_ref, commits_touching, explained_commits
from cortex_core.index.messages import why
from cortex_core.query.hotspots import Hotspot, hotspots
from cortex_core.memory.notes import Note, list_notes, live_notes_for
from cortex_core.memory.search import SIGNAL
from cortex_core.git.workspace import (Workspace, operation_in_progress, read_workspace,
                                        with_renames)

MIN_BODY = 80          # a commit with less explanation than this is not a "decision"
MAX_CHANGED = 500      # changed files looked at (a checkout of another tree changes them all)
DECISION_KINDS = ("fix", "feat", "refactor", "perf", "revert", "security", "other")


@dataclass(frozen=True)
class WhatCommit:
    commit: CommitRef
    why: str               # its reason (messages.why), or "" when its body gives none
    files: tuple[str, ...]  # which of your changed files it touched


@dataclass(frozen=True)
class What:
    branch: str | None
    changed: tuple[str, ...]
    untracked: tuple[str, ...]
    notes: list[Note]
    about_changes: list[WhatCommit]
    decisions: list[WhatCommit]
    recent_notes: list[Note]
    hotspots: list[Hotspot]
    unindexed: tuple[str, ...]   # changed files the index does not know
    clock: Clock | None = None   # what recency counts back from
    operation: str | None = None   # what git is in the middle of: a rebase, a merge...
    # Why the working copy could not be read (git timed out or failed): `changed` is then
    # unknown, not empty.
    unread: str | None = None
    unborn: str | None = None    # the branch checked out, when it has no commit yet


def what(con, repo_root: Path, *, top_k: int = 5, half_life_days: float = 90.0,
         workspace: Workspace | None = None, clock: str = DEFAULT,
         now: float | None = None) -> What:
    used = read_clock(con, clock, now)
    ws = workspace if workspace is not None else with_renames(read_workspace(repo_root),
                                                              repo_root)
    changed = ws.changed
    ids = file_ids(con, changed[:MAX_CHANGED])
    notes = [n for path in ids for n in live_notes_for(con, repo_root, path)
             if n.target]   # the repository's own notes are listed under recent decisions
    return What(ws.branch, changed, ws.untracked, _unique_notes(notes)[:top_k],
                _about(con, ids, top_k, used.now), _decisions(con, top_k),
                list_notes(con, repo_root)[:top_k],
                _hot(con, repo_root, set(ids), half_life_days, top_k, used.now, ws.renamed),
                tuple(p for p in changed if p not in ids and ws.renamed_from(p) not in ids),
                used, operation_in_progress(repo_root),   # a staged rename: its old path
                ws.unread, ws.unborn)


def _unique_notes(notes: list[Note]) -> list[Note]:
    seen: set[int] = set()
    out = []
    for note in notes:
        if note.id not in seen:
            seen.add(note.id)
            out.append(note)
    return out


def _about(con, ids: dict[str, int], top_k: int, now: float) -> list[WhatCommit]:
    if not ids:
        return []
    by_commit: dict[int, tuple[tuple, set[str]]] = {}
    paths = {fid: path for path, fid in ids.items()}
    for row in commits_touching(con, list(paths)):
        entry = by_commit.setdefault(row[9], (row, set()))
        entry[1].add(paths[row[10]])

    def weight(item) -> float:
        row, _ = item
        age_days = max(0.0, (now - row[1]) / 86400)
        return (0.5 + SIGNAL.get(row[6], 0.3)) * 0.5 ** (age_days / 180)
    # Ties by sha: the rows come in the order of the store's ids, which an index run's workers set.
    best = sorted(by_commit.values(), key=lambda item: (-weight(item), item[0][0]))[:top_k]
    return [_commit(row, tuple(sorted(files))) for row, files in best]


def _decisions(con, top_k: int) -> list[WhatCommit]:
    rows = explained_commits(con, MIN_BODY, DECISION_KINDS, top_k)
    return [_commit(row, ()) for row in rows]


def _commit(row, files: tuple[str, ...]) -> WhatCommit:
    ref = commit_ref(row)
    # The stored subject, not the shown one: a secret may run from the subject into the body.
    return WhatCommit(ref, why(row[5], row[8] or "") or "", files)


def _hot(con, repo_root: Path, paths: set[str], half_life_days: float, top_k: int,
         now: float, renamed: tuple[tuple[str, str], ...]) -> list[Hotspot]:
    """Hotspots among the changed (and indexed) files, and the symbols of theirs that the diff
    touches: one ranking of the whole index (a query per changed file would aggregate the
    history once per file), then filtered. Every symbol of a changed file counted as touched
    once: a one-line edit of Reader::getHeader (league/csv) listed getLastRecord, setHeader and
    getDocument as hot spots being touched."""
    if not paths:
        return []
    found = hotspots(con, half_life_days=half_life_days, top_k=1_000_000, now=now)
    touched = _touched(con, repo_root, paths, renamed)
    mine = [h for h in found.files if h.path in paths] + [
        h for h in found.symbols if h.path in paths and h.qualname is not None
        and (h.path not in touched or _holds(h.qualname, touched[h.path]))]
    return sorted(mine, key=lambda h: -h.score)[:top_k]


def _touched(con, repo_root: Path, paths: set[str], renamed: tuple[tuple[str, str], ...]
             ) -> dict[str, set[str]]:
    """Per changed file at the indexed HEAD, the qualified names of its symbols whose lines
    there an uncommitted edit touches (an insertion inside one touches it; one between two
    touches neither). A file that is gone from the working tree or cannot be diffed (too large,
    not a regular file, not at the indexed HEAD) keeps them all: nothing says which. Linear:
    one diff of the file's text at the indexed HEAD and on disk (pairing the symbols of both
    sides, as working_changes does, took a review's 40 files of 3,000 functions 26 s)."""
    from cortex_core.errors import CortexError
    from cortex_core.git.git_reads import indexed_head_blob
    from cortex_core.lang.languages import language_for_path
    from cortex_core.query.blame import MAX_BUFFER_BYTES, buffer_hunks
    moved = {old: new for new, old in renamed}   # a staged rename: the file is on disk there
    out: dict[str, set[str]] = {}
    for path in paths:
        on_disk = repo_root / moved.get(path, path)
        try:
            # A symlink's target is other text than the file the index knows (kept whole).
            if on_disk.is_symlink() or not on_disk.is_file() \
                    or on_disk.stat().st_size > MAX_BUFFER_BYTES:
                continue
            buffer = on_disk.read_bytes()
        except OSError:
            continue
        head = indexed_head_blob(con, repo_root, path)
        if head is None:
            continue
        try:
            hunks = buffer_hunks(head, buffer)
        except CortexError:
            continue
        spans = symbol_spans(con, path)
        # Lines old_start.. replaced; or, none replaced, an insertion after old_start, which a
        # definition holds when it goes on after that line: one in braces (or Ruby's `end`)
        # ends on its closing line, so what git inserts after it is outside (a function
        # appended after the file's last one did not touch it). The hunks do not overlap:
        # sorted by start, their ends are sorted too.
        edits = sorted((start, start + count - 1) if count else (start + 0.5, start + 0.5)
                       for start, count, _, _ in hunks)
        ends = [end for _, end in edits]
        touched: set[str] = set()
        for qualname, start, end in spans:
            i = bisect_left(ends, start)   # the first edit ending at or after the symbol's start
            if i < len(edits) and edits[i][0] <= end:
                touched.add(qualname)
        if language_for_path(path) == "python":
            touched |= _python_tails(head, buffer, hunks, spans)
        out[path] = touched
    return out


# Blank and comment lines looked through between a Python definition's last line and an
# insertion (a bound: each insertion's look back would be quadratic in a file of blank lines).
TAIL_GAP = 200


def _python_tails(head: bytes, buffer: bytes, hunks, spans) -> set[str]:
    """Python definitions that an insertion right after their last line extends, as Python
    reads it: blank lines and comments between, its first line that is not blank indented
    deeper than their first line (a body's new last statement, a class's new last method). And
    a definition that a decorator inserted right above it, at its indentation, changes. Blank
    lines replaced count as an insertion (git's hunk for `x = 2` written on a blank line)."""
    old_lines, new_lines = head.split(b"\n"), buffer.split(b"\n")
    by_end: dict[int, list[tuple[str, int]]] = {}
    by_start: dict[int, list[str]] = {}
    for qualname, start, end in spans:
        by_end.setdefault(end, []).append((qualname, start))
        by_start.setdefault(start, []).append(qualname)

    def blank(n: int) -> bool:   # old line n (1-based) holds no code
        text = old_lines[n - 1].strip() if 0 < n <= len(old_lines) else b""
        return not text or text.startswith(b"#")

    def indent(line: bytes) -> int:
        return len(line) - len(line.lstrip())
    out: set[str] = set()
    for old_start, count, new_start, new_count in hunks:
        if count and not all(blank(n) for n in range(old_start, old_start + count)):
            continue
        after = old_start - 1 if count else old_start   # the insertion follows this old line
        added = [line for line in new_lines[new_start - 1:new_start - 1 + new_count]
                 if line.strip()]
        # Its first line of code says where it belongs (a comment at column 0 may precede it),
        # else its first comment.
        code = next((line for line in added if not line.lstrip().startswith(b"#")),
                    added[0] if added else None)
        if code is None:
            continue
        if code.lstrip().startswith(b"@"):   # a decorator, of the definition right below
            for qualname in by_start.get(after + 1, ()):
                line = old_lines[after] if after < len(old_lines) else b""
                if indent(code) == indent(line):
                    out.add(qualname)
        last = after   # the last line of code at or before the insertion point, not far
        while last > 0 and blank(last) and after - last < TAIL_GAP:
            last -= 1
        for qualname, start in by_end.get(last, ()):
            line = old_lines[start - 1] if 0 < start <= len(old_lines) else b""
            if indent(code) > indent(line):
                out.add(qualname)
    return out


def _holds(qualname: str, touched: set[str]) -> bool:
    """Whether the symbol was touched itself or holds one that was (a class whose method was
    edited changed too: its history rolls up its members')."""
    return qualname in touched or any(q.startswith(qualname + ".") for q in touched)
