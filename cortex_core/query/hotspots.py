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

from dataclasses import dataclass

import apsw

from cortex_core.lang.change_kinds import SUBSTANTIVE_SQL
from cortex_core.clock import DEFAULT, Clock, clock as read_clock
from cortex_core.query.history import ORDER_KEY

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
    symbols = con.execute(
        f"""{_symbol_totals(f"select s.id from symbols s join files f on f.id = s.file_id"
                            f" where s.alive = 1 and {in_prefix}")}
            select f.path, s.qualname, s.kind, (select min(start_line) from symbol_spans
                   where symbol_id = s.id), {_SCORE} as score, n, r, a, l, last
            from totals join symbols s on s.id = live join files f on f.id = s.file_id
            order by score desc, n desc, f.path, s.qualname limit :k""", params).fetchall()
    files = con.execute(
        f"""{_file_totals(f"select h.file_id as id from head_files h join files f on f.id = h.file_id"
                          f" where h.skip_reason is null and {in_prefix}")}
            select f.path, null, 'file', null, {_SCORE} as score, n, r, a, l, last
            from totals join files f on f.id = live
            order by score desc, n desc, f.path limit :k""", params).fetchall()
    return Hotspots([Hotspot(*row) for row in symbols], [Hotspot(*row) for row in files],
                    half_life_days, since_days, clock=used)


def hotspot_score(con: apsw.Connection, file_id: int, symbol_id: int | None, *,
                  half_life_days: float = 90.0, now: float | None = None,
                  clock: str = DEFAULT) -> float:
    """The score `hotspots` gives one file or symbol (0 when it has no change), computed for it
    alone: indexed lookups along its lineage instead of the whole history's aggregate."""
    now = read_clock(con, clock, now).now
    params = {"now": now, "hl": half_life_days * 86400.0, "since": -(1 << 62),
              "id": symbol_id or file_id}
    totals = (_symbol_totals("select :id as id") if symbol_id is not None
              else _file_totals("select :id as id"))
    row = con.execute(f"{totals} select {_SCORE}, n from totals", params).fetchone()
    return float(row[0]) if row and row[1] else 0.0


def window_changes(con: apsw.Connection, path: str, since: float, *, qualname: str | None = None,
                   min_changes: int = 1) -> list[tuple[str, str, int | None, int, int]]:
    """(qualname, kind, first line, changes, authors) of the live symbols of a file (or one of
    them) changed at least `min_changes` times since `since`, substantive changes along their
    lineage only (as hotspots credit them), most changed first; indexed queries for the file."""
    params = {"path": path, "since": since, "q": qualname, "min": min_changes, "now": since,
              "hl": 1.0}
    return con.execute(
        f"""{_symbol_totals("select s.id from files f join symbols s on s.file_id = f.id"
                            " where f.path = :path and s.alive = 1"
                            " and (:q is null or s.qualname = :q)")}
           select s.qualname, s.kind, (select min(start_line) from symbol_spans
                  where symbol_id = s.id), n, a
           from totals join symbols s on s.id = live
           where n >= :min order by n desc, s.qualname""", params).fetchall()


_RECENCY = "pow(0.5, max(0.0, :now - t) / :hl)"
# A change a merge dropped (simplified.py) is on no history, so it is no change here either:
# dropped on the way to the HEAD file counted ({head}; any HEAD file's for a symbol's change in
# another file, moved from it), as history.py asks.
_ON_HISTORY = ("not exists (select 1 from pruned_changes p where p.commit_id = c.id"
               " and p.file_id = {file}.file_id and ({head}))")


def _lineage(base: str, links: str) -> str:
    """CTEs `lineage(live, anc, lim, lsha)`: each identity of `base` (a query of one column,
    `id`), and every identity it was renamed or moved from, with the link's commit (key, sha) as
    the limit below which that one's changes are its own; `links(anc, key, sha)` reads one step back (the same
    recursion as history._lineage: each step lowers the limit, so it ends on cycles). An
    identity reached by two paths keeps the higher limit."""
    return f"""with recursive steps(live, anc, lim, lsha) as (
                   select b.id, b.id, {1 << 62}, '' from ({base}) as b
                   union
                   select steps.live, link.prev, link.key, link.sha
                   from steps join ({links}) as link on link.anc = steps.anc
                   where link.prev != steps.anc and (link.key, link.sha) < (steps.lim, steps.lsha)),
               lineage(live, anc, lim, lsha) as (
                   select live, anc, max(lim), lsha from steps group by live, anc)"""


def _symbol_totals(base: str) -> str:
    """CTEs ending in `totals(live, n, r, a, l, last)`: each symbol's substantive changes along
    its lineage (a commit once, its lines summed), with recency, authors and churn."""
    links = (f"select sc.symbol_id as anc, sc.from_symbol_id as prev, {ORDER_KEY} as key, c.sha"
             " from symbol_changes sc join commits c on c.id = sc.commit_id"
             " where sc.from_symbol_id is not null and c.reachable = 1")
    return f"""{_lineage(base, links)},
        changes(live, t, email, lines) as (
            select g.live, c.author_time, c.author_email, sum(sc.added + sc.deleted)
            from lineage g join symbol_changes sc on sc.symbol_id = g.anc
            join commits c on c.id = sc.commit_id join symbols s on s.id = g.anc
            join symbols live on live.id = g.live
            where c.reachable = 1 and c.author_time >= :since and {_SUBSTANTIVE}
                  and ({ORDER_KEY}, c.sha) < (g.lim, g.lsha)
                  and {_ON_HISTORY.format(
                      file="s", head="p.head_file_id = live.file_id or s.file_id != live.file_id")}
            group by g.live, c.id),
        {_TOTALS}"""


def _file_totals(base: str) -> str:
    """CTEs ending in `totals(live, n, r, a, l, last)`: each file's changes along its renames
    (changes recorded at file level only left out)."""
    links = (f"select fc.file_id as anc, fc.old_file_id as prev, {ORDER_KEY} as key, c.sha"
             " from file_changes fc join commits c on c.id = fc.commit_id"
             " where fc.status = 'R' and fc.old_file_id is not null and c.reachable = 1")
    return f"""{_lineage(base, links)},
        changes(live, t, email, lines) as (
            select g.live, c.author_time, c.author_email,
                   sum(coalesce(fc.added, 0) + coalesce(fc.deleted, 0))
            from lineage g join file_changes fc on fc.file_id = g.anc
            join commits c on c.id = fc.commit_id
            where c.reachable = 1 and c.author_time >= :since and fc.skip_reason is null
                  and ({ORDER_KEY}, c.sha) < (g.lim, g.lsha)
                  and {_ON_HISTORY.format(file="fc", head="p.head_file_id = g.live")}
            group by g.live, c.id),
        {_TOTALS}"""


_TOTALS = f"""totals(live, n, r, a, l, last) as (
            select live, count(*), sum({_RECENCY}), count(distinct email), sum(lines), max(t)
            from changes group by live)"""
