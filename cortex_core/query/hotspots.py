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
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from cortex_core.lang.change_kinds import SUBSTANTIVE_SQL
from cortex_core.clock import DEFAULT, Clock, clock as read_clock

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
    recency = "pow(0.5, max(0.0, :now - c.author_time) / :hl)"
    symbols = con.execute(
        f"""select f.path, s.qualname, s.kind, (select min(start_line) from symbol_spans
                   where symbol_id = s.id), {_SCORE} as score, n, r, a, l, last
            from (select sc.symbol_id as sid, count(*) as n, sum({recency}) as r,
                         count(distinct c.author_email) as a, sum(sc.added + sc.deleted) as l,
                         max(c.author_time) as last
                  from symbol_changes sc join commits c on c.id = sc.commit_id
                  where c.reachable = 1 and c.author_time >= :since and {_SUBSTANTIVE}
                  group by sc.symbol_id)
            join symbols s on s.id = sid join files f on f.id = s.file_id
            where s.alive = 1 and {in_prefix}
            order by score desc, n desc, f.path, s.qualname limit :k""", params).fetchall()
    files = con.execute(
        f"""select f.path, null, 'file', null, {_SCORE} as score, n, r, a, l, last
            from (select fc.file_id as fid, count(*) as n, sum({recency}) as r,
                         count(distinct c.author_email) as a,
                         sum(coalesce(fc.added, 0) + coalesce(fc.deleted, 0)) as l,
                         max(c.author_time) as last
                  from file_changes fc join commits c on c.id = fc.commit_id
                  where c.reachable = 1 and c.author_time >= :since and fc.skip_reason is null
                  group by fc.file_id)
            join files f on f.id = fid join head_files h on h.file_id = fid
            where h.skip_reason is null and {in_prefix}
            order by score desc, n desc, f.path limit :k""", params).fetchall()
    return Hotspots([Hotspot(*row) for row in symbols], [Hotspot(*row) for row in files],
                    half_life_days, since_days, clock=used)


def hotspot_score(con: apsw.Connection, file_id: int, symbol_id: int | None, *,
                  half_life_days: float = 90.0, now: float | None = None,
                  clock: str = DEFAULT) -> float:
    """The score `hotspots` gives one file or symbol (0 when it has no change), computed for it
    alone: an indexed lookup instead of the whole history's aggregate."""
    now = read_clock(con, clock, now).now
    params = {"now": now, "hl": half_life_days * 86400.0, "id": symbol_id or file_id}
    recency = "pow(0.5, max(0.0, :now - c.author_time) / :hl)"
    if symbol_id is not None:
        inner = (f"select count(*) as n, sum({recency}) as r, count(distinct c.author_email) as a,"
                 " sum(x.added + x.deleted) as l from symbol_changes x join commits c"
                 f" on c.id = x.commit_id where x.symbol_id = :id and c.reachable = 1"
                 f" and {_SUBSTANTIVE.replace('sc.', 'x.')}")
    else:
        inner = (f"select count(*) as n, sum({recency}) as r, count(distinct c.author_email) as a,"
                 " sum(coalesce(x.added, 0) + coalesce(x.deleted, 0)) as l from file_changes x"
                 " join commits c on c.id = x.commit_id where x.file_id = :id and c.reachable = 1"
                 " and x.skip_reason is null")
    row = con.execute(f"select {_SCORE}, n from ({inner})", params).fetchone()
    return float(row[0]) if row and row[1] else 0.0


def window_changes(con: apsw.Connection, path: str, since: float, *, qualname: str | None = None,
                   min_changes: int = 1) -> list[tuple[str, str, int | None, int, int]]:
    """(qualname, kind, first line, changes, authors) of the live symbols of a file (or one of
    them) changed at least `min_changes` times since `since`, substantive changes only (as
    hotspots credit them), most changed first; one indexed query for the whole file."""
    params = {"path": path, "since": since, "q": qualname, "min": min_changes}
    return con.execute(
        f"""select s.qualname, s.kind, (select min(start_line) from symbol_spans
                  where symbol_id = s.id), count(*) as n, count(distinct c.author_email)
           from files f join symbols s on s.file_id = f.id
           join symbol_changes sc on sc.symbol_id = s.id join commits c on c.id = sc.commit_id
           where f.path = :path and s.alive = 1 and c.reachable = 1 and c.author_time >= :since
                 and (:q is null or s.qualname = :q)
                 and {SUBSTANTIVE_SQL}  -- substantive changes only
           group by s.id having n >= :min order by n desc, s.qualname""", params).fetchall()
