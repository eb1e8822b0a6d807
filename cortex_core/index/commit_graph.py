"""The stored commits' parents and places in history's order, kept compact for the walks.

Two walks of an index run go down the commit graph: versions._Walker, along first parents to a
file's last change, and simplified._Graph, git's simplified walk for one path. Both go far (a
walk for sympy's .mailmap passes 21,000 commits), so each read every commit's parents from
`commits`, where they are shas: on sympy's 62k commits 0.3 s each, most of a one-commit update.

Stored commits never change their parents or their order (only a migration could, and one
that does empties this table), and are never removed but all at once (a rebuild empties this
table too). So what the walks need is kept here as it was read, by chunks of commits in id
order: one chunk per run that stored commits and walked, merged into one when there are many.
A run reads the chunks (a few milliseconds) and adds one for the commits stored after them.

A parent not stored when its child's chunk was written (a shallow clone's edge, a run stopped
and resumed that stored a child before its parent) is kept as a sha in the chunk's `missing`;
when such a commit is stored later, every chunk is read again from `commits`. The chunks are
checked whenever they are read (their shape, and the count of commits they and the new chunk
hold against the table's), and read again from `commits` when they do not match.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from itertools import accumulate

import apsw

# A commit's place in history's order (history.ORDER_KEY, not imported: indexing needs no query),
# with the time held within 2**39 seconds of 1970: a commit dated in year 3 billion (a valid
# object) made the product pass 2**63, which SQLite gives as a float the chunks cannot hold.
ORDER = ("max(min(c.order_time, 549755813887), -549755813888) * 16777216"
         " + min(c.generation, 16777215)")
MAX_CHUNKS = 32        # beyond, the chunks are merged into one
_BY_SHA_BELOW = 2_000  # new commits whose parents are looked up one by one; more read every sha
_NONE = -1             # a parent that is not stored
_SWAP = sys.byteorder != "little"   # stored little-endian: a store copied between machines


class CommitGraph:
    """Every stored commit's parents (ids; None for a parent not stored) and ORDER value. Kept
    as the chunks' flat lists and looked up by position: building a structure per commit cost
    75 ms on sympy, most of what reading the chunks saves."""

    def __init__(self, ids: Sequence[int], orders: list[int], counts: list[int],
                 parents: list[int]) -> None:
        # Ids ascend (chunks in id order, each in id order); without gaps, a commit's position
        # is its id less the first.
        self._base = ids[0] if ids else 0
        self._ids = ids
        self._place: dict[int, int] | None = None
        if ids and ids[-1] - ids[0] + 1 != len(ids):
            self._place = {cid: at for at, cid in enumerate(ids)}
        self._orders, self._counts, self._parents = orders, counts, parents
        self._starts = list(accumulate(counts, initial=0))

    def _at(self, cid: object) -> int:
        """The commit's position, or -1 when it is not stored."""
        if not isinstance(cid, int):
            return -1
        if self._place is not None:
            return self._place.get(cid, -1)
        at = cid - self._base
        return at if 0 <= at < len(self._counts) else -1

    def __contains__(self, cid: object) -> bool:
        return self._at(cid) >= 0

    def parents(self, cid: int | None) -> list[int | None] | None:
        """The commit's parents in order, or None when no such commit is stored."""
        at = self._at(cid)
        if at < 0:
            return None
        start, count = self._starts[at], self._counts[at]
        if count == 1:   # most commits; the walks ask this tens of thousands of times
            first = self._parents[start]
            return [first if first != _NONE else None]
        return [p if p != _NONE else None for p in self._parents[start:start + count]]

    def order(self, cid: int | None, default: int = -1) -> int:
        at = self._at(cid)
        return self._orders[at] if at >= 0 else default

    def first_parents(self, cid: int | None, lowest: int) -> tuple[list[int], list[int], bool]:
        """The first-parent line from `cid` down (`cid` first) and each commit's order, as far
        as its first commit under the order `lowest`, or to its end (a root, a parent not
        stored); and whether it ended. Also ends after a commit whose order is above its
        child's (orders computed before a shallow clone was deepened; the caller sees it).
        One loop over the lists: sympy's line from HEAD is 14,000 commits, read per update
        (simplified._Graph)."""
        ids: list[int] = []
        orders: list[int] = []
        at = self._at(cid)
        place_ids = self._ids
        base, counts, starts = self._base, self._counts, self._starts
        parents, all_orders = self._parents, self._orders
        place, n = self._place, len(counts)
        above = None
        while at >= 0 and len(ids) <= n:   # a longer line loops: a graph read wrong
            order = all_orders[at]
            ids.append(at + base if place is None else place_ids[at])
            orders.append(order)
            if order < lowest:
                return ids, orders, False
            if above is not None and order > above:
                break
            above = order
            first = parents[starts[at]] if counts[at] else _NONE
            if first == _NONE:
                break
            if place is None:   # ids without gaps: the place is the id less the first
                at = first - base if 0 <= first - base < n else -1
            else:
                at = place.get(first, -1)
        return ids, orders, True


class _Chunk:
    """The commits with ids in [first, last]: their ids, orders, parent counts, the parents of
    all in a row, and the shas of the parents that were not stored."""
    __slots__ = ("first", "last", "ids", "orders", "counts", "parents", "missing")

    def __init__(self, first: int, last: int, ids: array, orders: array, counts: array,
                 parents: array, missing: set[str]) -> None:
        self.first, self.last = first, last
        self.ids, self.orders, self.counts, self.parents = ids, orders, counts, parents
        self.missing = missing


def load(con: apsw.Connection) -> CommitGraph:
    """The graph of every stored commit, from the chunks, adding one for the commits stored since
    the last. Call in a write transaction (the indexer's)."""
    chunks = _read_chunks(con)
    new, shas = _chunk(con, chunks[-1].last if chunks else 0)
    # Counted over an index (a count of an id range read the whole table: 20 ms on sympy).
    stored = con.execute("select count(*) from commits").get
    if chunks is None or sum(len(c.ids) for c in [*chunks, *([new] if new else [])]) != stored \
            or any(sha in c.missing for c in chunks for sha in shas):
        # Not what `commits` holds, or an older chunk's missing parent is stored now (its
        # child's link is read again): read every commit again.
        con.execute("delete from commit_graph")
        chunks = []
        new, _ = _chunk(con, 0)
    if new is not None:
        chunks.append(new)
        if len(chunks) > MAX_CHUNKS:
            con.execute("delete from commit_graph")
            chunks = [_merged(chunks)]
        _write(con, chunks[-1])
    ids, orders, counts, parents = array("q"), array("q"), array("q"), array("q")
    for c in chunks:
        ids += c.ids
        orders += c.orders
        counts += c.counts
        parents += c.parents
    return CommitGraph(ids, orders.tolist(), counts.tolist(), parents.tolist())


def _read_chunks(con: apsw.Connection) -> list[_Chunk] | None:
    """The stored chunks in id order; None when they are not what this module writes."""
    chunks: list[_Chunk] = []
    for first, last, n, data, missing in con.execute(
            "select first_id, last_id, commits, data, missing from commit_graph"
            " order by first_id"):
        values = array("q")
        if not (isinstance(data, bytes) and isinstance(n, int) and isinstance(first, int)
                and isinstance(last, int) and isinstance(missing, str)) or n < 1 \
                or len(data) % values.itemsize:
            return None
        values.frombytes(data)
        if _SWAP:
            values.byteswap()
        counts = values[2 * n:3 * n]
        if len(values) != 3 * n + sum(counts) or values[0] < first \
                or values[n - 1] != last or (chunks and first <= chunks[-1].last):
            return None
        chunks.append(_Chunk(first, last, values[:n], values[n:2 * n], counts, values[3 * n:],
                             set(missing.split())))
    return chunks


def _chunk(con: apsw.Connection, after: int) -> tuple[_Chunk | None, list[str]]:
    """The commits stored with ids above `after`, as a chunk, and their shas."""
    rows = con.execute(f"select c.id, c.sha, c.parents, {ORDER} from commits c where c.id > ?"
                       " order by c.id", (after,)).fetchall()
    if not rows:
        return None, []
    everything = len(rows) >= _BY_SHA_BELOW
    known: dict[str, int | None] = {sha: cid for cid, sha in con.execute(
        "select id, sha from commits")} if everything else {sha: cid for cid, sha, _, _ in rows}

    def lookup(sha: str) -> int | None:
        if sha not in known and not everything:
            known[sha] = con.execute("select id from commits where sha = ?", (sha,)).get
        return known.get(sha)
    ids, orders, counts, parents = array("q"), array("q"), array("q"), array("q")
    missing: set[str] = set()
    for cid, _, shas, order in rows:
        ids.append(cid)
        orders.append(order)
        listed = shas.split()
        counts.append(len(listed))
        for sha in listed:
            parent = lookup(sha)
            if parent is None:
                missing.add(sha)
            parents.append(parent if parent is not None else _NONE)
    return _Chunk(after + 1, rows[-1][0], ids, orders, counts, parents, missing), \
        [sha for _, sha, _, _ in rows]


def _merged(chunks: list[_Chunk]) -> _Chunk:
    merged = _Chunk(chunks[0].first, chunks[-1].last, array("q"), array("q"), array("q"),
                    array("q"), set())
    for c in chunks:
        merged.ids += c.ids
        merged.orders += c.orders
        merged.counts += c.counts
        merged.parents += c.parents
        merged.missing |= c.missing
    return merged


def _write(con: apsw.Connection, chunk: _Chunk) -> None:
    data = chunk.ids + chunk.orders + chunk.counts + chunk.parents
    if _SWAP:
        data.byteswap()
    con.execute("insert into commit_graph(first_id, last_id, commits, data, missing)"
                " values (?, ?, ?, ?, ?)", (chunk.first, chunk.last, len(chunk.ids),
                                            data.tobytes(), " ".join(sorted(chunk.missing))))
