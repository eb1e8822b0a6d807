"""What an editor shows about a symbol or a file: a hover card and the hotspot code lenses.

A card sums up the symbol's history (changes, authors, last change, the newest commits with the
"why" from their bodies), its hotspot standing, how many places depend on it and its live notes.

Hot, for a lens or the hover's flag, means: changed at least `threshold` times in the last
`window_days` days (counted back from the repository's own clock by default: clock.py), counting
the commits that changed the symbol's own lines (as `cortex hotspots` credits them: a method's
change does not also count for its class). The numbers shown come from the same query, so a lens
and a hover never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cortex_core.query.blast import dependents_of
from cortex_core.clock import DEFAULT, Clock, clock as read_clock
from cortex_core.config import COUPLING_DEFAULTS, CouplingSettings
from cortex_core.query.coupling import CoupledSymbol, counted_in_histories, strongest_symbol
from cortex_core.query.history import (CommitRef, HistoryEntry, file_history, reasons, redacted,
                                       symbol_history)
from cortex_core.query.hotspots import hotspot_score, window_changes
from cortex_core.memory.notes import Note, live_notes_for
from cortex_core.query.targets import Target, TargetSpec, resolve
from cortex_core.store.store import history_from, history_until, shallow_from

@dataclass(frozen=True)
class HeatSettings:
    threshold: int = 4          # changes within the window that make a symbol hot
    window_days: float = 90.0
    half_life_days: float = 90.0
    clock: str = DEFAULT        # what the window counts back from: "repository" or "wall"


@dataclass(frozen=True)
class Change:
    commit: CommitRef
    change: str
    why: str | None             # the body's first paragraph, when it says more than the subject
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class Heat:
    """A symbol's recent activity: its own changes within the window."""
    path: str
    qualname: str
    kind: str
    line: int | None            # where it starts at HEAD
    changes: int                # within the window
    authors: int                # within the window
    hot: bool


@dataclass(frozen=True)
class SymbolCard:
    target: Target
    changes: int                # commits in the whole history (members rolled up for a class)
    authors: int                # distinct author e-mails over the whole history
    last_change: CommitRef | None
    recent: Heat | None         # None for a file, or a symbol no longer at HEAD
    hotspot_score: float        # the `cortex hotspots` score
    dependents: int | None      # direct dependents; None when no structure was read for it
    history: list[Change] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    window_days: float = 90.0
    # Commits left out of `history` and `changes` because they did not change the symbol's
    # meaning: formatting only, and lineage waypoints (its class renamed, its code unchanged).
    reformatted: int = 0
    waypoints: int = 0
    coupled: CoupledSymbol | None = None  # the symbol that usually changes with it
    clock: Clock | None = None  # what the window counts back from
    # Set while the index holds a recent window only: the date its history starts from
    # (status.history_from); `changes` and `authors` count from there.
    history_from: int | None = None
    # Set while the index's first run has not reached HEAD: the date of its newest commit
    # (store.history_until); `changes` and `authors` count up to there.
    history_until: int | None = None
    # Set for a shallow clone: the date of its oldest commit (store.shallow_from).
    shallow_from: int | None = None


def symbol_card(con, repo_root: Path, path: str, qualname: str | None, *, limit: int = 5,
                heat: HeatSettings = HeatSettings(), now: float | None = None,
                coupling: CouplingSettings = COUPLING_DEFAULTS) -> SymbolCard:
    """The card of `path::qualname` (or of the file when qualname is None); `coupling`: the
    repository's co-change settings, as `related` reads them, for its "usually changes with".

    Raises targets' NotFound when the file or symbol is not in the index."""
    used = read_clock(con, heat.clock, now)
    now = used.now
    target = resolve(con, TargetSpec(path, qualname))
    # Subjects are redacted for the commits shown only: the rest are counted, and redacting a
    # long history's subjects was most of a hover's time.
    if target.symbol_id is None:
        entries = file_history(con, target.file_id, redact_subjects=False)
    else:
        entries = symbol_history(con, target.symbol_id, redact_subjects=False)
    # Reformatting is never a reason: folded into a count, as are lineage waypoints.
    reformatted = sum(e.change == "reformatted" for e in entries)
    waypoints = sum(not e.substantive for e in entries) - reformatted
    entries = [e for e in entries if e.substantive]
    shown = [redacted(e.commit) for e in entries[:max(0, limit)]]
    whys = reasons(con, shown)
    history = [Change(c, e.change, whys.get(c.sha), e.members) for c, e in zip(shown, entries)]
    recent = None
    if target.symbol_id is not None and target.alive:
        found = file_heat(con, path, heat, now=now, qualname=target.qualname)
        recent = found[0] if found else Heat(path, target.qualname, target.kind or "",
                                             target.start_line, 0, 0, False)
    score = hotspot_score(con, target.file_id, target.symbol_id,
                          half_life_days=heat.half_life_days, now=now) if target.alive else 0.0
    last = (shown[0] if shown else redacted(entries[0].commit)) if entries else None
    coupled = strongest_symbol(con, target, settings=coupling) if target.alive else None
    if coupled is not None:
        coupled = counted_in_histories(con, coupled, {e.commit.sha: (e.path, e.name or "")
                                                      for e in entries},
                                       min_support=max(2, coupling.min_support))
    return SymbolCard(target, len(entries), _authors(entries), last, recent, round(score, 3),
                      dependents_of(con, target), history,
                      live_notes_for(con, repo_root, path, target.qualname), heat.window_days,
                      reformatted, waypoints, coupled, used,
                      history_from(con), history_until(con), shallow_from(con))


def file_heat(con, path: str, heat: HeatSettings = HeatSettings(), *, now: float | None = None,
              qualname: str | None = None, only_hot: bool = False) -> list[Heat]:
    """The live symbols of a file with changes in the window (or one symbol of it), most changed
    first; one indexed query for the whole file."""
    now = read_clock(con, heat.clock, now).now
    rows = window_changes(con, path, now - heat.window_days * 86400, qualname=qualname,
                          min_changes=heat.threshold if only_hot else 1)
    return [Heat(path, q, kind, line, n, a, n >= heat.threshold) for q, kind, line, n, a in rows]


def _authors(entries: list[HistoryEntry]) -> int:
    return len({e.commit.email.lower() for e in entries})


def line_origin(con, repo_root: Path, path: str, buffer: bytes, line: int):
    """The commit that last changed `line` (1-based) of a buffer of `path`: the buffer's line is
    moved to the indexed HEAD's numbering first. None when the line is not committed yet (added
    or changed in the buffer)."""
    from cortex_core.query.blame import last_change_of_line, map_buffer_line
    from cortex_core.git.git_reads import indexed_head_blob
    head = indexed_head_blob(con, repo_root, path)
    if head is not None and head != buffer:
        line = map_buffer_line(head, buffer, line)
        if line is None:
            return None
    return last_change_of_line(con, path, line)
