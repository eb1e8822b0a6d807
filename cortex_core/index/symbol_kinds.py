"""A symbol's kind (function, class, struct, ...), which can change over its history.

A symbol alive at HEAD has HEAD's kind: its snapshot writes it (ingest._store_head_file). A
deleted symbol has the kind of its newest version: each symbol change records the kind of the
version it names and of the one it came from (schema 18), and once a run's commits and HEAD
are written, the deleted symbols those commits changed take the kind of the newest. "Newest"
is history's order, not the order records were written in (worker processes deliver them in
any order, and a run stopped and resumed writes a child before its parent): the change's
commit's order time, then its generation (both grow along every path of the history, so a
store built at once and one updated commit by commit agree), then its sha; within one commit
the new version over the old.

Several definitions can share one symbol's row: a Rust struct and its `impl` blocks, a
TypeScript class and a namespace merged with it. Of those, the kind is the first that is not
such an extending block (symbols.preferred_kind), in HEAD's snapshot and in the changes
alike (symbol_changes.match_commit).
"""

from __future__ import annotations

from cortex_core.lang.symbols import EXTENDING
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


def settle_kinds(con) -> int:
    """Give each deleted symbol that the unsettled commits changed the kind of its newest
    version; the mark is then cleared. A symbol whose newest change was recorded before schema
    18 (without a kind) keeps the kind it has. Inside the caller's transaction, after HEAD's
    snapshot (which says which symbols live). Returns the symbols considered."""
    first = get_meta(con, UNSETTLED_FROM)
    if first is None:
        return 0
    touched = [row[0] for row in con.execute(
        "select s.id from symbol_changes sc join commits c on c.id = sc.commit_id join symbols s"
        " on s.id = sc.symbol_id where c.seq >= ?1 and s.alive = 0 union select s.id from"
        " symbol_changes sc join commits c on c.id = sc.commit_id join symbols s"
        " on s.id = sc.from_symbol_id where c.seq >= ?1 and s.alive = 0", (int(first),))]
    con.executemany(_SETTLE, ((symbol_id,) for symbol_id in touched))
    con.execute("delete from meta where key = ?", (UNSETTLED_FROM,))
    return len(touched)


_EXTENDING_SQL = ", ".join(f"'{kind}'" for kind in sorted(EXTENDING))
# The newest version's kind: by the commit's place in history (order time, generation, sha),
# the new side of a change over the old (a deletion, or the symbol a rename or move came from),
# a definition over a block extending it, then by name (two old sides of one commit).
_SETTLE = f"""
update symbols set kind = coalesce((
    select seen.kind from (
        select sc.kind as kind, c.order_time as t, c.generation as g, c.sha as sha,
               sc.change != 'deleted' as new_side
        from symbol_changes sc join commits c on c.id = sc.commit_id
        where sc.symbol_id = symbols.id
        union all
        select sc.from_kind, c.order_time, c.generation, c.sha, 0
        from symbol_changes sc join commits c on c.id = sc.commit_id
        where sc.from_symbol_id = symbols.id) seen
    order by seen.t desc, seen.g desc, seen.sha desc, seen.new_side desc,
             seen.kind in ({_EXTENDING_SQL}), seen.kind
    limit 1), kind)
where id = ? and alive = 0
"""
