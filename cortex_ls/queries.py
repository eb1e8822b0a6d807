"""The server's answers, computed on its worker threads from cortex_core's queries.

No SQL and no ranking here: each function finds the target (a cursor in a live buffer, or an
explicit `PATH::SYMBOL`), calls the core, and shapes the result for the client — markdown for
hovers, plain JSON for the custom requests (the same shapes as `cortex ... --json`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cortex_core.errors import CortexError
from cortex_core.lang.live import buffer_symbols, innermost
from cortex_core.plain import plain
from cortex_core.git.remotes import commit_url
from cortex_core.text.sanitize import markdown_code
from cortex_core.features.symbol_info import HeatSettings, file_heat, file_level_only, symbol_card
from cortex_core.query.targets import TargetSpec, find, resolve

from cortex_ls import render
from cortex_ls.documents import Buffer, cursor
from cortex_ls.repos import Repo
from cortex_ls.settings import Settings, engine_overrides


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


def engine(repo: Repo, settings: Settings):
    """The engine's settings for this repository, as the CLI and MCP resolve them
    (cortex_core/config.py), with what the client set put over them."""
    from cortex_core.config import override
    return override(repo.config(), engine_overrides(settings), "the editor's settings")


def heat_settings(repo: Repo, settings: Settings) -> HeatSettings:
    chosen = engine(repo, settings)
    return HeatSettings(settings.hotspot_threshold, settings.hotspot_window_days,
                        chosen.hotspots.half_life_days, chosen.time.clock)


def live_symbols(buffer: Buffer, path: str):
    """The buffer's symbols, parsed once per version of its text."""
    known, symbols = buffer.cached_symbols()
    if not known:
        symbols = buffer_symbols(path, buffer.data)
        buffer.keep_symbols(symbols)
    return symbols


def locate(repo: Repo, path: str, buffer: Buffer, position, encoding: str, con=None) -> Located:
    at = cursor(buffer, position, encoding)
    line = buffer.git_line(at.offset)      # lines as git counts them, not as LSP does
    symbols = live_symbols(buffer, path)
    if symbols is not None:
        sym = innermost(symbols, at.byte, line)
        return Located(repo, path, buffer, line, sym.qualname if sym else None, True)
    qualname = None
    if con is not None and not buffer.dirty:   # unparsed: HEAD's spans, good while unedited
        try:
            qualname = resolve(con, TargetSpec(path, line=line)).qualname
        except CortexError:
            qualname = None
    return Located(repo, path, buffer, line, qualname, False)


# -- hover and lenses --------------------------------------------------------------------------


def hover(con, loc: Located, settings: Settings) -> str | None:
    repo = loc.repo
    note = None if loc.parsed else "symbols from the index: this file is not parsed live"
    if find(con, loc.path) is None:         # a file the index does not know: nothing to say
        return None
    if loc.qualname is not None and file_level_only(con, loc.path) is None:
        if find(con, loc.path, loc.qualname) is None:
            return (f"**{markdown_code(loc.qualname)}**: no commits yet (new since the indexed "
                    "HEAD)" + ("\n\n*index still building*" if repo.partial else ""))
        card = symbol_card(con, repo.root, loc.path, loc.qualname,
                           limit=settings.history_length, heat=heat_settings(repo, settings))
        return render.hover(card, web_base=_links(repo, settings), partial=repo.partial,
                            note=note)
    from cortex_core.features.symbol_info import line_origin
    origin = line_origin(con, repo.root, loc.path, loc.buffer.data, loc.line)
    return render.line_hover(loc.line, origin, web_base=_links(repo, settings),
                             partial=repo.partial)


def _links(repo: Repo, settings: Settings) -> str | None:
    return repo.web_base if settings.commit_links else None


@dataclass(frozen=True)
class Lens:
    offset: int               # code-point offset in the buffer of the symbol's start
    qualname: str
    changes: int
    authors: int


def lenses(con, repo: Repo, path: str, buffer: Buffer, settings: Settings) -> list[Lens]:
    hot = file_heat(con, path, heat_settings(repo, settings), only_hot=True)
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


def lens_title(con, repo: Repo, path: str, qualname: str, settings: Settings
               ) -> tuple[str, str]:
    """The resolved lens: the counts again (the index may have moved on) and the dependents;
    and its tooltip, which says what the window counts back from."""
    from cortex_core.clock import clock
    heat = heat_settings(repo, settings)
    used = clock(con, heat.clock)
    card_heat = file_heat(con, path, heat, qualname=qualname, now=used.now)
    changes, authors = (card_heat[0].changes, card_heat[0].authors) if card_heat else (0, 0)
    from cortex_core.features.symbol_info import dependents_of
    target = find(con, path, qualname)
    dependents = dependents_of(con, target) if target is not None else None
    return (render.lens_title(changes, authors, dependents, settings.hotspot_window_days),
            render.lens_tooltip(settings.hotspot_window_days, used))


# -- custom requests ---------------------------------------------------------------------------


def payload(result, repo: Repo) -> dict:
    """A core result as JSON, commit ids linked to their web pages, with the index's state."""
    out = plain(result)
    if not isinstance(out, dict):
        out = {"items": out}
    if repo.web_base:
        _link(out, repo.web_base)
    out["indexState"] = repo.state()
    out["partial"] = repo.partial
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


def symbol_history(con, repo: Repo, spec: TargetSpec, limit: int | None) -> dict:
    from cortex_core.query.history import history, reasons
    result = history(con, spec, limit=limit)
    out = payload(result, repo)
    whys = reasons(con, [e.commit for e in result.entries])
    for entry in out["entries"]:
        entry["why"] = whys.get(entry["commit"]["sha"])
    return out


def blast_radius(con, repo: Repo, spec: TargetSpec, depth: int, min_confidence: float | None,
                 settings: Settings) -> dict:
    from cortex_core.query.blast import MIN_CONFIDENCE, blast
    chosen = engine(repo, settings)
    result = blast(con, spec, depth=depth, half_life_days=chosen.hotspots.half_life_days,
                   min_confidence=MIN_CONFIDENCE if min_confidence is None else min_confidence,
                   clock=chosen.time.clock)
    return payload(result, repo)


def _coupling(repo: Repo) -> tuple:
    """The co-change options of the CLI and MCP (the repository's [coupling] settings), and all
    of its settings."""
    settings = repo.config()
    return settings.coupling.options(), settings


def related(con, repo: Repo, spec: TargetSpec, top_k: int) -> dict:
    from cortex_core.query.blast import fused_related
    return payload(fused_related(con, spec, top_k=top_k, **_coupling(repo)[0]), repo)


def related_to_changed(con, repo: Repo, specs: list[TargetSpec], top_k: int) -> dict:
    from cortex_core.query.working_changes import related_to_targets
    return payload(related_to_targets(con, specs, top_k=top_k, **_coupling(repo)[0]), repo)


def related_to_working_tree(con, repo: Repo, overlay: dict[str, bytes], top_k: int) -> dict:
    from cortex_core.query.working_changes import related_to_working_tree as find
    options, settings = _coupling(repo)
    return payload(find(con, repo.root, settings=settings.index, overlay=overlay, top_k=top_k,
                        **options), repo)


def related_commits(con, repo: Repo, target: str, top_k: int, embedder) -> dict:
    from cortex_core.query.related_commits import related_commits as find
    return payload(find(con, target, embedder=embedder, top_k=top_k), repo)


def context_pack(con, repo: Repo, *, query: str | None, at: str | None, budget: int, fmt: str,
                 embedder, settings: Settings, encoding: str | None = None) -> dict:
    from cortex_core.features.context_pack import build_pack
    chosen = engine(repo, settings)
    pack = build_pack(con, repo.root, query=query, at=at, budget=budget, fmt=fmt,
                      embedder=embedder, half_life_days=chosen.search.half_life_days,
                      encoding=encoding or chosen.packs.encoding, clock=chosen.time.clock,
                      settings=chosen)
    out = payload(pack, repo)
    out["tokens"] = pack.used
    return out


def search(con, repo: Repo, query: str, *, at: str | None, kinds: tuple[str, ...],
           since: int | None, path: str | None, top_k: int, mode: str, dirty: list[str],
           embedder, settings: Settings) -> dict:
    from cortex_core.memory.embeddings import semantic_state
    from cortex_core.memory.search import SearchOptions, build_focus
    from cortex_core.memory.search import search as run
    from cortex_core.git.workspace import read_workspace
    workspace = read_workspace(repo.root)
    # Unsaved edits count as changed files: the ranking's context boost sees what the editor sees.
    workspace = replace(workspace, modified=tuple(dict.fromkeys(workspace.modified + tuple(dirty))))
    chosen = engine(repo, settings)
    options = SearchOptions(top_k=top_k, kinds=kinds, since=since, path=path, mode=mode,
                            half_life_days=chosen.search.half_life_days, clock=chosen.time.clock,
                            focus=build_focus(con, at, workspace))
    if mode == "vector" and embedder is None:
        raise CortexError(semantic_state(con)[1])
    result = run(con, query, options, embedder=embedder if mode != "lexical" else None)
    out = payload(result, repo)
    if embedder is None and mode != "lexical":
        out["note"] = semantic_state(con)[1]
    return out


def hotspots(con, repo: Repo, *, path: str | None, top_k: int, since_days: float | None,
             settings: Settings) -> dict:
    from cortex_core.query.hotspots import hotspots as rank
    chosen = engine(repo, settings)
    return payload(rank(con, half_life_days=chosen.hotspots.half_life_days,
                        since_days=since_days, path_prefix=path, top_k=top_k,
                        clock=chosen.time.clock), repo)


def status(con, repo: Repo) -> dict:
    from cortex_core.query.status import status as read
    reason = repo.location.reason if repo.location is not None else None
    out = payload(read(con, repo.db, reason), repo) if con is not None else {
        "indexState": repo.state(), "partial": True, "repository": str(repo.root)}
    out["indexing"] = {"running": repo.index.running, "percentage": repo.index.percentage,
                       "message": repo.index.message, "error": repo.index.error}
    out["database"] = str(repo.db)
    out["databaseReason"] = reason      # why it is not <repo>/.cortex/cortex.db (None: it is)
    if repo.problem and con is None:
        out["databaseProblem"] = repo.problem
    return out


def add_note(con, repo: Repo, target: str | None, text: str) -> dict:
    from cortex_core.memory.notes import add_note as add
    from cortex_core.memory.notes import git_author
    return payload(add(con, repo.root, target, text, author=git_author(repo.root)), repo)
