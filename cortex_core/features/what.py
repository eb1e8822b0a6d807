"""`cortex what`: what is relevant right now, from the state of the working copy alone.

Three groups: about your changes (notes on the files you changed, then the commits that shaped
them — fixes and features first, recent first), recent decisions (the latest commits that explain
themselves with a body, and the latest notes), and hot spots you are touching (hotspots among
the changed files, and among the symbols the uncommitted diff touches and the classes holding
them: working_changes reads the diff as the indexer reads a commit). "Recent" counts back from
the repository's own clock by default (clock.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cortex_core.clock import DEFAULT, Clock, clock as read_clock
from cortex_core.config import IndexSettings
from cortex_core.query.working_changes import working_changes
from cortex_core.query.files import file_ids
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


def what(con, repo_root: Path, *, top_k: int = 5, half_life_days: float = 90.0,
         workspace: Workspace | None = None, clock: str = DEFAULT,
         now: float | None = None, settings: IndexSettings | None = None) -> What:
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
                _hot(con, repo_root, set(ids), half_life_days, top_k, used.now, settings),
                tuple(p for p in changed if p not in ids and ws.renamed_from(p) not in ids),
                used, operation_in_progress(repo_root),   # a staged rename: its old path
                ws.unread)


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
         now: float, settings: IndexSettings | None) -> list[Hotspot]:
    """Hotspots among the changed (and indexed) files, and the symbols of theirs that the diff
    touches: one ranking of the whole index (a query per changed file would aggregate the
    history once per file), then filtered. Every symbol of a changed file counted as touched
    once: a one-line edit of Reader::getHeader (league/csv) listed getLastRecord, setHeader and
    getDocument as hot spots being touched."""
    if not paths:
        return []
    found = hotspots(con, half_life_days=half_life_days, top_k=1_000_000, now=now)
    touched = _touched(con, repo_root, paths, settings)
    mine = [h for h in found.files if h.path in paths] + [
        h for h in found.symbols if h.path in paths and h.qualname is not None
        and (h.path not in touched or _holds(h.qualname, touched[h.path]))]
    return sorted(mine, key=lambda h: -h.score)[:top_k]


def _touched(con, repo_root: Path, paths: set[str], settings: IndexSettings | None
             ) -> dict[str, set[str]]:
    """Per changed file whose symbols were read, the qualified names (at the indexed HEAD) of
    those the uncommitted diff touches. A file left out (not read: skipped, past the bounds)
    keeps all its symbols, as nothing says which were touched."""
    changes = working_changes(con, repo_root, settings)
    if changes.truncated:
        return {}
    unread = {p for p in paths for s in changes.skipped if s.startswith(p + " (")}
    touched: dict[str, set[str]] = {p: set() for p in paths - unread}
    for path, qualname in changes.symbols:
        if path in touched:
            touched[path].add(qualname)
    return touched


def _holds(qualname: str, touched: set[str]) -> bool:
    """Whether the symbol was touched itself or holds one that was (a class whose method was
    edited changed too: its history rolls up its members')."""
    return qualname in touched or any(q.startswith(qualname + ".") for q in touched)
