"""The server's answers, computed on its worker threads from a snapshot of the engine
(cortex_core.engine.Snapshot).

No SQL and no ranking here: each function finds the target (a cursor in a live buffer, or an
explicit `PATH::SYMBOL`), runs the engine's operation, and shapes the result for the client —
markdown for hovers, plain JSON for the custom requests (the same shapes as `cortex ... --json`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cortex_core.api import CortexError, TargetSpec, commit_url
from cortex_core.engine import Engine
from cortex_core.plain import plain
from cortex_core.text.sanitize import markdown_code

from cortex_ls import render
from cortex_ls.documents import Buffer, cursor
from cortex_ls.repos import Repo
from cortex_ls.settings import Settings

if TYPE_CHECKING:
    from cortex_core.engine import Snapshot


@dataclass(frozen=True)
class Located:
    """A cursor resolved to a repository, a path in it, and the symbol around it."""
    repo: Repo
    path: str                 # relative to the repository root, with forward slashes
    buffer: Buffer
    line: int                 # 1-based line of the cursor in the buffer
    qualname: str | None      # the innermost symbol in the buffer, if any
    parsed: bool              # False: the buffer could not be parsed (language, size)

    @property
    def spec(self) -> TargetSpec:
        return TargetSpec(self.path, self.qualname)


def heat_settings(snap: Snapshot, settings: Settings):
    """The client's hotspot threshold and window; the engine's half-life and clock (the
    repository's settings, under the client's)."""
    return snap.heat(settings.hotspot_threshold, settings.hotspot_window_days)


def live_symbols(buffer: Buffer, path: str):
    """The buffer's symbols, parsed once per version of its text."""
    known, symbols = buffer.cached_symbols()
    if not known:
        symbols = Engine.buffer_symbols(path, buffer.data)
        buffer.keep_symbols(symbols)
    return symbols


def locate(repo: Repo, path: str, buffer: Buffer, position, encoding: str,
           snap: Snapshot | None = None) -> Located:
    at = cursor(buffer, position, encoding)
    line = buffer.git_line(at.offset)      # lines as git counts them, not as LSP does
    symbols = live_symbols(buffer, path)
    if symbols is not None:
        sym = Engine.innermost(symbols, at.byte, line)
        return Located(repo, path, buffer, line, sym.qualname if sym else None, True)
    qualname = None
    if snap is not None and not buffer.dirty:   # unparsed: HEAD's spans, good while unedited
        try:
            qualname = snap.resolve(TargetSpec(path, line=line)).qualname
        except CortexError:
            qualname = None
    return Located(repo, path, buffer, line, qualname, False)


# -- hover and lenses --------------------------------------------------------------------------


def hover(snap: Snapshot, loc: Located, settings: Settings) -> str | None:
    repo = loc.repo
    note = None if loc.parsed else "symbols from the index: this file is not parsed live"
    path = snap.indexed_path(loc.path)      # the path before a staged rename, if any
    if snap.find(path) is None:             # a file the index does not know: nothing to say,
        until = snap.history_until()        # unless the index has not reached HEAD yet
        if until is None:
            return None
        return (f"**{markdown_code(loc.path)}**: not in the indexed history yet\n\n"
                f"*{render.index_note(repo.partial, snap.history_from(), until)}*")
    if loc.qualname is not None and snap.file_level_only(path) is None:
        if snap.find(path, loc.qualname) is None:
            state = render.index_note(repo.partial, snap.history_from(), snap.history_until())
            return (f"**{markdown_code(loc.qualname)}**: no commits yet (new since the indexed "
                    "HEAD)" + (f"\n\n*{state}*" if state else ""))
        card = snap.symbol_card(path, loc.qualname, limit=settings.history_length,
                                heat=heat_settings(snap, settings))
        return render.hover(card, web_base=_links(repo, settings), partial=repo.partial,
                            note=note)
    origin = snap.line_origin(path, loc.buffer.data, loc.line)
    return render.line_hover(loc.line, origin, web_base=_links(repo, settings),
                             partial=repo.partial, history_from=snap.history_from(),
                             history_until=snap.history_until(),
                             shallow_from=snap.shallow_from())


def _links(repo: Repo, settings: Settings) -> str | None:
    return repo.web_base if settings.commit_links else None


@dataclass(frozen=True)
class Lens:
    offset: int               # code-point offset in the buffer of the symbol's start
    qualname: str
    changes: int
    authors: int


def lenses(snap: Snapshot, repo: Repo, path: str, buffer: Buffer, settings: Settings
           ) -> list[Lens]:
    hot = snap.file_heat(snap.indexed_path(path), heat_settings(snap, settings), only_hot=True)
    if not hot:
        return []
    symbols = live_symbols(buffer, path)
    if symbols is None:   # not parsed: HEAD's lines, unless the buffer was edited
        if buffer.dirty:
            return []
        return [Lens(buffer.offset_of_git_line(h.line), h.qualname, h.changes, h.authors)
                for h in hot if h.line]
    where = {}
    for sym in symbols:
        where.setdefault(sym.qualname, sym.start_byte)
    return [Lens(buffer.offset_of_byte(where[h.qualname]), h.qualname, h.changes, h.authors)
            for h in hot if h.qualname in where]


def lens_title(snap: Snapshot, repo: Repo, path: str, qualname: str, settings: Settings
               ) -> tuple[str, str]:
    """The resolved lens: the counts again (the index may have moved on) and the dependents;
    and its tooltip, which says what the window counts back from."""
    heat = heat_settings(snap, settings)
    used = snap.clock(heat.clock)
    path = snap.indexed_path(path)
    card_heat = snap.file_heat(path, heat, qualname=qualname, now=used.now)
    changes, authors = (card_heat[0].changes, card_heat[0].authors) if card_heat else (0, 0)
    target = snap.find(path, qualname)
    dependents = snap.dependents(target) if target is not None else None
    return (render.lens_title(changes, authors, dependents, settings.hotspot_window_days),
            render.lens_tooltip(settings.hotspot_window_days, used))


# -- custom requests ---------------------------------------------------------------------------


def payload(result, repo: Repo, snap: Snapshot | None = None) -> dict:
    """A core result as JSON, commit ids linked to their web pages, with the index's state and
    how far its history reaches (`historyFrom`, while a recent window is all it holds;
    `historyUntil`, while a first run has not reached HEAD)."""
    out = plain(result)
    if not isinstance(out, dict):
        out = {"items": out}
    if repo.web_base:
        _link(out, repo.web_base)
    out["indexState"] = repo.state()
    out["partial"] = repo.partial
    out["historyFrom"] = snap.history_from() if snap is not None else None
    out["historyUntil"] = snap.history_until() if snap is not None else None
    out["shallowFrom"] = snap.shallow_from() if snap is not None else None
    out["repository"] = str(repo.root)
    return out


def _link(value, base: str) -> None:
    if isinstance(value, dict):
        sha = value.get("sha")
        if isinstance(sha, str) and len(sha) == 40 and "url" not in value:
            value["url"] = commit_url(base, sha)
        for v in value.values():
            _link(v, base)
    elif isinstance(value, list):
        for v in value:
            _link(v, base)


def symbol_history(snap: Snapshot, repo: Repo, spec: TargetSpec, limit: int | None) -> dict:
    result = snap.history(spec, limit=limit)
    out = payload(result, repo, snap)
    whys = snap.reasons(e.commit for e in result.entries)
    for entry in out["entries"]:
        entry["why"] = whys.get(entry["commit"]["sha"])
    return out


def blast_radius(snap: Snapshot, repo: Repo, spec: TargetSpec, depth: int,
                 min_confidence: float | None) -> dict:
    return payload(snap.blast(spec, depth=depth, min_confidence=min_confidence), repo, snap)


def related(snap: Snapshot, repo: Repo, spec: TargetSpec, top_k: int) -> dict:
    return payload(snap.related(spec, top_k=top_k), repo, snap)


def related_to_changed(snap: Snapshot, repo: Repo, specs: list[TargetSpec], top_k: int) -> dict:
    return payload(snap.changes_related(tuple(specs), top_k=top_k), repo, snap)


def related_to_working_tree(snap: Snapshot, repo: Repo, overlay: dict[str, bytes],
                            top_k: int) -> dict:
    return payload(snap.changes_related(overlay=overlay, top_k=top_k), repo, snap)


def related_commits(snap: Snapshot, repo: Repo, target: str, top_k: int) -> dict:
    return payload(snap.related_commits(target, top_k=top_k), repo, snap)


def context_pack(snap: Snapshot, repo: Repo, *, query: str | None, at: str | None, budget: int,
                 fmt: str, encoding: str | None = None) -> dict:
    pack = snap.context_pack(query=query, at=at, budget=budget, fmt=fmt, encoding=encoding)
    out = payload(pack, repo, snap)
    out["tokens"] = pack.used
    return out


def search(snap: Snapshot, repo: Repo, query: str, *, at: str | None, kinds: tuple[str, ...],
           since: int | None, path: str | None, top_k: int, mode: str, dirty: list[str]) -> dict:
    # Unsaved edits count as changed files: the ranking's context boost sees what the editor sees.
    result = snap.search(query, top_k=top_k, kinds=kinds, since=since, path=path, at=at,
                         mode=mode, dirty=tuple(dirty))
    return payload(result, repo, snap)


def hotspots(snap: Snapshot, repo: Repo, *, path: str | None, top_k: int,
             since_days: float | None) -> dict:
    return payload(snap.hotspots(top_k=top_k, since_days=since_days, path=path), repo, snap)


def status(snap: Snapshot | None, repo: Repo) -> dict:
    location = repo.engine.location
    reason = location.reason if repo.located else None
    out = payload(snap.status(), repo, snap) if snap is not None else {
        "indexState": repo.state(), "partial": True, "historyFrom": None, "historyUntil": None,
        "repository": str(repo.root)}
    out["indexing"] = {"running": repo.index.running, "percentage": repo.index.percentage,
                       "message": repo.index.message, "error": repo.index.error}
    out["database"] = str(repo.db)
    out["databaseReason"] = reason      # why it is not <repo>/.cortex/cortex.db (None: it is)
    if repo.problem and snap is None:
        out["databaseProblem"] = repo.problem
    return out


def add_note(snap: Snapshot, repo: Repo, target: str | None, text: str) -> dict:
    """Written through the engine's note writer (the snapshot only says there is an index)."""
    engine = repo.engine
    return payload(engine.add_note(target, text, author=engine.git_author()), repo, snap)
