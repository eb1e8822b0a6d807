"""A symbol's kind (function, class, struct, ...), which can change over its history.

A symbol alive at HEAD has HEAD's kind: its snapshot writes it (ingest._store_head_file). A
deleted symbol has the kind of its newest recorded version: each symbol change records the
kind of the version it names and of the one it came from (schema 18), and once a run's commits
and HEAD are written, the deleted symbols that the run's commits changed, that its HEAD left,
or that commits a rewrite made (un)reachable changed take the kind of the newest, among the
reachable commits' changes. "Newest" is history's order, not the order records were written in
(worker processes deliver them in any order, and a run stopped and resumed writes a child
before its parent): the change's commit's order time, then its generation (both grow along
every path of the history, so a store built at once and one updated commit by commit agree),
then its sha; within one commit an own change over the version another came from. A kind
that changed without a change of the symbol's own (a C++ `ns::f` that becomes a function when
a namespace `ns` appears above it, its text the same) is not recorded.

Several definitions can share one symbol's row: a Rust struct and its `impl` blocks, a
TypeScript class and a namespace merged with it. Of those, the kind is the first that is not
such an extending block (symbols.preferred_kind), in HEAD's snapshot and in the changes
alike (symbol_changes._recorded).
"""

from __future__ import annotations

import json
from typing import Iterable

from cortex_core.store.store import get_meta, set_meta

# Meta: the first seq whose commits' changes may have left a deleted symbol's kind unsettled
# (settle_kinds). Set before a run writes commits and cleared once their kinds are settled: a
# run stopped between the two leaves it for the next run, whose commits come after.
UNSETTLED_FROM = "kinds_unsettled_from"


def mark_unsettled(con, seq: int) -> None:
    """Commits from `seq` on are about to be written (or rewritten): their deleted symbols'
    kinds are settled later. An earlier mark (a stopped run's) stands."""
    held = get_meta(con, UNSETTLED_FROM)
    if held is None or seq < int(held):
        set_meta(con, UNSETTLED_FROM, str(seq))


def settle_kinds(con, dying: Iterable[int] = (), flipped: Iterable[int] = ()) -> int:
    """Give each deleted symbol the kind of its newest version, among those the unsettled
    commits changed, those this run's HEAD left (`dying`: a symbol can die without a change
    of its own, its file turned binary or too large) and those the commits whose reachability
    changed (`flipped`: a rewrite) changed. Only reachable commits count. A symbol whose newest
    change was recorded before schema 18 (without a kind) keeps the kind it has. The mark is
    then cleared. Inside the caller's transaction, after HEAD's snapshot (which says which
    symbols live). Returns the symbols considered."""
    first = get_meta(con, UNSETTLED_FROM)
    touched = set(dying)
    if first is not None:
        touched.update(row[0] for row in con.execute(_CHANGED_SINCE, (int(first),)))
    flipped = list(flipped)
    if flipped:
        touched.update(row[0] for row in con.execute(_CHANGED_BY, (json.dumps(flipped),)))
    touched.discard(None)
    con.executemany(_SETTLE, ((symbol_id,) for symbol_id in sorted(touched)))
    if first is not None:
        con.execute("delete from meta where key = ?", (UNSETTLED_FROM,))
    return len(touched)


# The symbols changed by the commits from a seq on: from the commits (a few, in an update)
# through their changes, never a scan of the symbols.
_CHANGED_SINCE = """
select sc.symbol_id from commits c cross join symbol_changes sc on sc.commit_id = c.id
where c.seq >= ?1
union
select sc.from_symbol_id from commits c cross join symbol_changes sc on sc.commit_id = c.id
where c.seq >= ?1
"""
_CHANGED_BY = """
select sc.symbol_id from symbol_changes sc where sc.commit_id in (select value from json_each(?1))
union
select sc.from_symbol_id from symbol_changes sc
where sc.commit_id in (select value from json_each(?1))
"""
# The newest version's kind, among the versions reachable commits recorded: by the commit's
# place in history (order time, generation, sha), then an own change over the version another
# came from (an own change names the version after the commit, but a deletion names the one
# before, as does a pair's old identity, whose version is then its from-side's too), then by
# name. NULL (recorded before schema 18) at the top: the kind stands. Today every symbol a
# change came from has a change of its own in that commit (a pair's old identity, an edited
# donor), so the from-sides decide nothing yet: they keep the rule whole for a change that
# comes without one.
_SETTLE = """
update symbols set kind = coalesce((
    select seen.kind from (
        select sc.kind as kind, c.order_time as t, c.generation as g, c.sha as sha,
               sc.change != 'deleted' as own
        from symbol_changes sc join commits c on c.id = sc.commit_id
        where sc.symbol_id = symbols.id and c.reachable = 1
        union all
        select sc.from_kind, c.order_time, c.generation, c.sha, 0
        from symbol_changes sc join commits c on c.id = sc.commit_id
        where sc.from_symbol_id = symbols.id and c.reachable = 1) seen
    order by seen.t desc, seen.g desc, seen.sha desc, seen.own desc, seen.kind
    limit 1), kind)
where id = ? and alive = 0
"""
