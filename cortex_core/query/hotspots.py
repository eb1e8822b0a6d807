"""Hotspots: the symbols and files that change often, lately, by many people, with much churn.

    score = R × (1 + ln A) × (1 + log10(1 + L))

    R  recency-weighted change count: Σ over the commits that changed it of 0.5^(age_days / half_life)
       (half_life: [hotspots] half_life_days, 90 by default; age from `now`: the repository's
       own clock by default, clock.py)
    A  distinct authors (by e-mail) of those commits
    L  churn: lines added + deleted by those commits

Change frequency leads, as in CodeScene and code-maat's `revisions`; authors and churn multiply it
with logarithms so that they reorder entities of similar frequency without swamping it. Symbols are
credited for their own lines only (a method's change does not also count for its class), so
containers are not inflated. Only live symbols and files present at HEAD are ranked; merges and
files recorded at file level only (lockfiles, generated, vendored...) are not counted. A symbol's
changes are its substantive ones: formatting-only commits and lineage waypoints (its class
renamed, its own code unchanged) are not counted (change_kinds.NOT_SUBSTANTIVE).

Each is counted over its whole lineage, as its history shows it: a file renamed or a symbol moved
(to another file, another class, another name) keeps the changes, authors and churn of what it was
before, each earlier identity counting its changes before the link (history._lineage). Counted by
path alone, a repository that moved its sources to `src/` had its hotspots start at the move.
The changes are those its history lists: not those a merge dropped (`merge -s ours`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import apsw

from cortex_core.lang.change_kinds import SUBSTANTIVE_SQL
from cortex_core.clock import DEFAULT, Clock, clock as read_clock
from cortex_core.query.history import ORDER_KEY, born_twice, floor_at

FORMULA = "score = R × (1 + ln A) × (1 + log10(1 + L)); R = Σ 0.5^(age_days / half_life)"


@dataclass(frozen=True)
class Hotspot:
    path: str
    qualname: str | None   # None for a file
    kind: str              # the symbol kind, or "file"
    line: int | None       # where the symbol starts at HEAD
    score: float
    changes: int
    recency_weighted: float
    authors: int
    churn: int
    last_change: int       # author time of the newest change


@dataclass(frozen=True)
class Hotspots:
    symbols: list[Hotspot]
    files: list[Hotspot]
    half_life_days: float
    since_days: float | None
    formula: str = FORMULA
    clock: Clock | None = None   # what the window and the ages count back from
    note: str | None = None      # why there is nothing: no file under the path asked for


_SCORE = "r * (1 + ln(a)) * (1 + log10(1 + l))"
# What counts as a change of a symbol (the kinds of change_kinds.NOT_SUBSTANTIVE left out).
_SUBSTANTIVE = SUBSTANTIVE_SQL


def hotspots(con: apsw.Connection, *, half_life_days: float = 90.0, since_days: float | None = None,
             path_prefix: str | None = None, top_k: int = 10, now: float | None = None,
             clock: str = DEFAULT) -> Hotspots:
    used = read_clock(con, clock, now)
    now = used.now
    since = now - since_days * 86400 if since_days is not None else -(1 << 62)
    prefix = (path_prefix or "").strip("/")
    prefix = "" if prefix == "." else prefix
    params = {"now": now, "hl": half_life_days * 86400.0, "since": since, "k": top_k,
              "prefix": prefix, "plen": len(prefix)}
    in_prefix = "(:plen = 0 or f.path = :prefix or substr(f.path, 1, :plen + 1) = :prefix || '/')"
    totals, asked = _totals(con, "symbol", f"select s.id from symbols s join files f"
                            f" on f.id = s.file_id where s.alive = 1 and {in_prefix}", params)
    symbols = con.execute(
        f"""{totals}
            select f.path, s.qualname, s.kind, (select min(start_line) from symbol_spans
                   where symbol_id = s.id), {_SCORE} as score, n, r, a, l, last
            from totals join symbols s on s.id = live join files f on f.id = s.file_id
            order by score desc, n desc, f.path, s.qualname limit :k""", asked).fetchall()
    totals, asked = _totals(con, "file", f"select h.file_id as id from head_files h join files f"
                            f" on f.id = h.file_id where h.skip_reason is null and {in_prefix}",
                            params)
    files = con.execute(
        f"""{totals}
            select f.path, null, 'file', null, {_SCORE} as score, n, r, a, l, last
            from totals join files f on f.id = live
            order by score desc, n desc, f.path limit :k""", asked).fetchall()
    note = None
    if prefix and not symbols and not files and not con.execute(
            f"select 1 from head_files h join files f on f.id = h.file_id where {in_prefix}"
            " limit 1", params).fetchone():
        note = f"no file under '{prefix}' at the indexed HEAD (paths are the repository's)"
    return Hotspots([Hotspot(*row) for row in symbols], [Hotspot(*row) for row in files],
                    half_life_days, since_days, clock=used, note=note)


def hotspot_score(con: apsw.Connection, file_id: int, symbol_id: int | None, *,
                  half_life_days: float = 90.0, now: float | None = None,
                  clock: str = DEFAULT) -> float:
    """The score `hotspots` gives one file or symbol (0 when it has no change), computed for it
    alone: indexed lookups along its lineage instead of the whole history's aggregate."""
    now = read_clock(con, clock, now).now
    params = {"now": now, "hl": half_life_days * 86400.0, "since": -(1 << 62),
              "id": symbol_id or file_id}
    totals, asked = _totals(con, "symbol" if symbol_id is not None else "file",
                            "select :id as id", params)
    row = con.execute(f"{totals} select {_SCORE}, n from totals", asked).fetchone()
    return float(row[0]) if row and row[1] else 0.0


def window_changes(con: apsw.Connection, path: str, since: float, *, qualname: str | None = None,
                   min_changes: int = 1) -> list[tuple[str, str, int | None, int, int]]:
    """(qualname, kind, first line, changes, authors) of the live symbols of a file (or one of
    them) changed at least `min_changes` times since `since`, substantive changes along their
    lineage only (as hotspots credit them), most changed first; indexed queries for the file."""
    params = {"path": path, "since": since, "q": qualname, "min": min_changes, "now": since,
              "hl": 1.0}
    totals, asked = _totals(con, "symbol", "select s.id from files f join symbols s"
                            " on s.file_id = f.id where f.path = :path and s.alive = 1"
                            " and (:q is null or s.qualname = :q)", params)
    return con.execute(
        f"""{totals}
           select s.qualname, s.kind, (select min(start_line) from symbol_spans
                  where symbol_id = s.id), n, a
           from totals join symbols s on s.id = live
           where n >= :min order by n desc, s.qualname""", asked).fetchall()


_RECENCY = "pow(0.5, max(0.0, :now - t) / :hl)"
# A change a merge dropped (simplified.py) is on no history, so it is no change here either:
# dropped on the way to the HEAD file counted ({head}; any HEAD file's for a symbol's change in
# another file, moved from it), as history.py asks.
_ON_HISTORY = ("not exists (select 1 from pruned_changes p where p.commit_id = c.id"
               " and p.file_id = {file}.file_id and ({head}))")


def _totals(con: apsw.Connection, level: str, base: str, params: dict) -> tuple[str, dict]:
    """CTEs ending in `totals(live, n, r, a, l, last)` for the identities of `base` (a query of
    one column, `id`; level "symbol" or "file"), and the parameters they take. Where a
    lineage's identity had an earlier life (history._floor: a name renamed away and used again,
    or deleted and then taken by a rename), its changes before its own life are left out, as
    history leaves them out. Those are asked of history only for identities born twice, after
    one walk of the lineages: floors only cut links, so the walk with them reaches a subset of
    the segments reached without."""
    plain = _symbol_totals(base) if level == "symbol" else _file_totals(base)
    segments = con.execute(f"{plain} select distinct anc, lim, lsha from steps",
                           params).fetchall()
    ids = {anc for anc, _, _ in segments}
    # A file's lens asks of a few identities (indexed reads); the whole repository, of all.
    twice = born_twice(con, level, ids if len(ids) <= 500 else None)
    floors = []
    for anc, lim, lsha in segments if twice else ():
        floor = floor_at(con, level, anc, lim, lsha) if anc in twice else None
        if floor is not None:
            floors.append([anc, lim, lsha, *floor])
    if not floors:
        return plain, params
    floored = (_symbol_totals(base, floored=True) if level == "symbol"
               else _file_totals(base, floored=True))
    return floored, {**params, "floors": json.dumps(floors)}


def _lineage(base: str, links: str, floored: bool = False) -> str:
    """CTEs `steps(live, anc, lim, lsha, fk, fs)` and `lineage` (the same columns): each
    identity of `base`, and every identity it was renamed or moved from, with the link's commit
    (key, sha) as the limit below which that one's changes are its own; `links(anc, key, sha)`
    reads one step back (the same recursion as history._lineage: each step lowers the limit, so
    it ends on cycles). `lineage` keeps, of an identity reached along several paths, the
    highest limit. `floored`: (fk, fs), where a segment's own life starts, read from `:floors`
    (JSON of [anc, lim, lsha, fk, fs], _totals): changes and links below it are an earlier
    life's; such an identity keeps a segment per path, and one's floor does not cut another."""
    if not floored:
        return f"""with recursive steps(live, anc, lim, lsha, fk, fs) as (
                   select b.id, b.id, {1 << 62}, '', -1, '' from ({base}) as b
                   union
                   select steps.live, link.prev, link.key, link.sha, -1, ''
                   from steps join ({links}) as link on link.anc = steps.anc
                   where link.prev != steps.anc and (link.key, link.sha) < (steps.lim, steps.lsha)),
               lineage(live, anc, lim, lsha, fk, fs) as (
                   select live, anc, max(lim), lsha, -1, '' from steps group by live, anc)"""
    # One key column: SQLite indexes the materialized floors on what the join compares, and
    # given (anc, lim, lsha) it chose (lim, lsha), which every identity's own floor shares (a
    # scan of all floors per identity: 33 s for 12,000 names born twice).
    return f"""with recursive floors(k, fk, fs) as materialized (
                   select json_extract(value, '$[0]') || ':' || json_extract(value, '$[1]')
                          || ':' || json_extract(value, '$[2]'), json_extract(value, '$[3]'),
                          json_extract(value, '$[4]') from json_each(:floors)),
               steps(live, anc, lim, lsha, fk, fs) as (
                   select b.id, b.id, {1 << 62}, '', coalesce(f.fk, -1), coalesce(f.fs, '')
                   from ({base}) as b left join floors f on f.k = b.id || ':{1 << 62}:'
                   union
                   select steps.live, link.prev, link.key, link.sha, coalesce(f.fk, -1),
                          coalesce(f.fs, '')
                   from steps join ({links}) as link on link.anc = steps.anc
                   left join floors f on f.k = link.prev || ':' || link.key || ':' || link.sha
                   where link.prev != steps.anc and (link.key, link.sha) < (steps.lim, steps.lsha)
                         and (link.key, link.sha) >= (steps.fk, steps.fs)),
               floored(live, anc) as materialized (
                   select distinct live, anc from steps where fk != -1),
               lineage(live, anc, lim, lsha, fk, fs) as (
                   select s.live, s.anc, max(s.lim), s.lsha, -1, '' from steps s
                   left join floored f on f.live = s.live and f.anc = s.anc
                   where f.live is null group by s.live, s.anc
                   union all
                   select s.live, s.anc, s.lim, s.lsha, s.fk, s.fs from steps s
                   join floored f on f.live = s.live and f.anc = s.anc)"""


# A change of a lineage's identity `g.anc` is the live one's when it lies in that segment: below
# the link, from the floor.
_IN_SEGMENT = f"({ORDER_KEY}, c.sha) < (g.lim, g.lsha) and ({ORDER_KEY}, c.sha) >= (g.fk, g.fs)"


def _changes(select: str, joins: str, where: str, floored: bool) -> str:
    """The CTE `changes(live, t, email, lines)`: a commit once per live identity, its lines
    summed. Floored segments of one identity may overlap (reached along two paths): a change is
    taken once."""
    if not floored:
        return f"""changes(live, t, email, lines) as (
            select g.live, c.author_time, c.author_email, sum({select})
            from lineage g {joins} where {where} group by g.live, c.id)"""
    # `cross`: the lineage first (a compound CTE, whose size the planner cannot guess: it read
    # every change of the history and probed the lineage with each, for one file's lens).
    return f"""changes(live, t, email, lines) as (
            select live, t, email, sum(lines) from (
                select distinct g.live, c.id as cid, g.anc, c.author_time as t,
                       c.author_email as email, {select} as lines
                from lineage g cross {joins} where {where})
            group by live, cid)"""


def _symbol_totals(base: str, floored: bool = False) -> str:
    """CTEs ending in `totals(live, n, r, a, l, last)`: each symbol's substantive changes along
    its lineage (a commit once, its lines summed), with recency, authors and churn."""
    links = (f"select sc.symbol_id as anc, sc.from_symbol_id as prev, {ORDER_KEY} as key, c.sha"
             " from symbol_changes sc join commits c on c.id = sc.commit_id"
             " where sc.from_symbol_id is not null and c.reachable = 1")
    joins = ("join symbol_changes sc on sc.symbol_id = g.anc join commits c on c.id ="
             " sc.commit_id join symbols s on s.id = g.anc join symbols live on live.id = g.live")
    pruned = _ON_HISTORY.format(file="s", head="p.head_file_id = live.file_id"
                                           " or s.file_id != live.file_id")
    where = (f"c.reachable = 1 and c.author_time >= :since and {_SUBSTANTIVE} and {_IN_SEGMENT}"
             f" and {pruned}")
    return f"""{_lineage(base, links, floored)},
        {_changes("sc.added + sc.deleted", joins, where, floored)},
        {_TOTALS}"""


def _file_totals(base: str, floored: bool = False) -> str:
    """CTEs ending in `totals(live, n, r, a, l, last)`: each file's changes along its renames
    (changes recorded at file level only left out)."""
    links = (f"select fc.file_id as anc, fc.old_file_id as prev, {ORDER_KEY} as key, c.sha"
             " from file_changes fc join commits c on c.id = fc.commit_id"
             " where fc.status = 'R' and fc.old_file_id is not null and c.reachable = 1")
    joins = "join file_changes fc on fc.file_id = g.anc join commits c on c.id = fc.commit_id"
    where = (f"c.reachable = 1 and c.author_time >= :since and fc.skip_reason is null"
             f" and {_IN_SEGMENT}"
             f" and {_ON_HISTORY.format(file='fc', head='p.head_file_id = g.live')}")
    return f"""{_lineage(base, links, floored)},
        {_changes("coalesce(fc.added, 0) + coalesce(fc.deleted, 0)", joins, where, floored)},
        {_TOTALS}"""


_TOTALS = f"""totals(live, n, r, a, l, last) as (
            select live, count(*), sum({_RECENCY}), count(distinct email), sum(lines), max(t)
            from changes group by live)"""
