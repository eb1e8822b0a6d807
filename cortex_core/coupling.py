"""Co-change: what changes together with a file or a symbol, as association rules over history.

For a target X and a candidate Y, over the reachable non-merge commits that change at most
`max_changeset` files (larger commits — reformatting, imports, vendoring — say little about
coupling; code-maat's default is 30):

    support(X, Y)     = commits that change both
    confidence(X ⇒ Y) = support / commits that change X      (how often Y follows X)
    confidence(Y ⇒ X) = support / commits that change Y      (how much of Y's life is X's)

Candidates need `min_support` shared commits (default 2), and are ranked by support, then by
confidence(Y ⇒ X) — the ROSE ranking (Zimmermann et al., 2004) with a tie-break that prefers
partners bound to X over files that change with everything. Identities follow renames and moves
forward, so a file's earlier names count as the file. Only candidates alive at HEAD are returned.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import apsw

from .history import COMMIT_COLUMNS, NEWEST_FIRST, OLDEST_FIRST, CommitRef, commit_ref
from .targets import Target, TargetSpec, resolve

EVIDENCE = 5  # shared commits listed per partner


@dataclass(frozen=True)
class Partner:
    path: str
    qualname: str | None
    support: int
    confidence: float          # confidence(target ⇒ partner)
    reverse_confidence: float  # confidence(partner ⇒ target)
    evidence: list[CommitRef]  # the newest shared commits


@dataclass(frozen=True)
class Related:
    target: Target
    target_commits: int        # commits (within the changeset bound) that change the target
    files: list[Partner]
    symbols: list[Partner]
    max_changeset: int
    min_support: int


def related(con: apsw.Connection, spec: TargetSpec, *, top_k: int = 10, max_changeset: int = 30,
            min_support: int = 2) -> Related:
    target = resolve(con, spec)
    h = _history_sets(con, max_changeset)
    own_file = h.file_canon.get(target.file_id, target.file_id)
    if target.symbol_id is not None:
        me = h.symbol_canon.get(target.symbol_id, target.symbol_id)
        mine = h.commits_of_symbol.get(me, set())
    else:
        me = own_file
        mine = h.commits_of_file.get(me, set())
    files = _partners(con, mine, h.files_by_commit, h.commits_of_file, {own_file}, h.alive_files,
                      min_support, top_k, _file_label)
    symbols = []
    if target.symbol_id is not None:
        symbols = _partners(con, mine, h.symbols_by_commit, h.commits_of_symbol, {me},
                            h.alive_symbols, min_support, top_k, _symbol_label)
    return Related(target, len(mine), files, symbols, max_changeset, min_support)


@dataclass
class _HistorySets:
    file_canon: dict[int, int]
    symbol_canon: dict[int, int]
    files_by_commit: dict[int, set[int]]
    symbols_by_commit: dict[int, set[int]]
    alive_files: set[int]
    alive_symbols: set[int]
    commits_of_file: dict[int, set[int]] = None      # the inverse of files_by_commit
    commits_of_symbol: dict[int, set[int]] = None

    def __post_init__(self):
        self.commits_of_file = _invert(self.files_by_commit)
        self.commits_of_symbol = _invert(self.symbols_by_commit)


def _invert(by_commit: dict[int, set[int]]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = defaultdict(set)
    for commit_id, ids in by_commit.items():
        for ident in ids:
            out[ident].add(commit_id)
    return out


# What every co-change query reads from the whole history, kept per connection until the index
# changes: a long-lived reader (the language server, a blast with hidden coupling per hover)
# would otherwise read every file change of the history on each query.
_CACHE: dict[int, tuple[tuple, _HistorySets]] = {}


def _history_sets(con: apsw.Connection, max_changeset: int) -> _HistorySets:
    stamp = (con.execute("select value from meta where key = 'indexed_at'").fetchone(),
             con.execute("select max(id), count(*) from commits where reachable = 1").fetchone(),
             max_changeset, con.filename)
    cached = _CACHE.get(id(con))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    eligible = {cid for (cid,) in con.execute(
        "select id from commits where reachable = 1 and is_merge = 0 and files_changed <= ?",
        (max_changeset,))}
    file_canon = _canonical(con.execute(
        "select fc.old_file_id, fc.file_id from file_changes fc join commits c on"
        " c.id = fc.commit_id where fc.status = 'R' and c.reachable = 1"
        f" order by {OLDEST_FIRST}"))
    symbol_canon = _canonical(con.execute(
        "select sc.from_symbol_id, sc.symbol_id from symbol_changes sc join commits c on"
        " c.id = sc.commit_id where sc.from_symbol_id is not null and c.reachable = 1"
        f" order by {OLDEST_FIRST}"))
    file_rows = con.execute("select commit_id, file_id from file_changes"
                            " where skip_reason is null").fetchall()
    symbol_rows = con.execute("select commit_id, symbol_id from symbol_changes").fetchall()
    sets = _HistorySets(
        file_canon, symbol_canon, _group(file_rows, eligible, file_canon),
        _group(symbol_rows, eligible, symbol_canon),
        {fid for (fid,) in con.execute("select file_id from head_files where skip_reason is null")},
        {sid for (sid,) in con.execute("select id from symbols where alive = 1")})
    if len(_CACHE) > 16:   # connections come and go; keep the memory bounded
        _CACHE.clear()
    _CACHE[id(con)] = (stamp, sets)
    return sets


def _canonical(links) -> dict[int, int]:
    """Map every former identity to its latest one, following renames forward in commit order."""
    forward: dict[int, int] = {}
    for old, new in links:
        if old != new:
            forward[old] = new
    canon = {}
    for start in forward:
        seen, current = {start}, forward[start]
        while current in forward and forward[current] not in seen:
            seen.add(current)
            current = forward[current]
        canon[start] = current
    return canon


def _group(rows, eligible: set[int], canon: dict[int, int]) -> dict[int, set[int]]:
    by_commit: dict[int, set[int]] = defaultdict(set)
    for commit_id, ident in rows:
        if commit_id in eligible:
            by_commit[commit_id].add(canon.get(ident, ident))
    return by_commit


def _partners(con, mine: set[int], by_commit: dict[int, set[int]],
              commits_of: dict[int, set[int]], exclude: set[int], alive: set[int],
              min_support: int, top_k: int, label) -> list[Partner]:
    shared: Counter[int] = Counter()
    together: dict[int, list[int]] = defaultdict(list)
    for commit_id in mine:
        for ident in by_commit[commit_id]:
            if ident not in exclude and ident in alive:
                shared[ident] += 1
                together[ident].append(commit_id)
    if not shared:
        return []
    totals = {ident: len(commits_of[ident]) for ident in shared}
    ranked = sorted((i for i, n in shared.items() if n >= min_support),
                    key=lambda i: (-shared[i], -shared[i] / totals[i], label(con, i)))[:top_k]
    out = []
    for ident in ranked:
        path, qualname = label(con, ident)
        evidence = _evidence(con, together[ident])
        out.append(Partner(path, qualname, shared[ident], shared[ident] / len(mine),
                           shared[ident] / totals[ident], evidence))
    return out


def _evidence(con, commit_ids: list[int]) -> list[CommitRef]:
    marks = ",".join("?" * len(commit_ids))
    rows = con.execute(f"select {COMMIT_COLUMNS} from commits c where c.id in ({marks})"
                       f" order by {NEWEST_FIRST} limit {EVIDENCE}", commit_ids).fetchall()
    return [commit_ref(r) for r in rows]


def _file_label(con, file_id: int) -> tuple[str, None]:
    return con.execute("select path from files where id = ?", (file_id,)).get, None


def _symbol_label(con, symbol_id: int) -> tuple[str, str]:
    return con.execute("select f.path, s.qualname from symbols s join files f on f.id = s.file_id"
                       " where s.id = ?", (symbol_id,)).fetchone()
