"""Which file changes are on a file's history as git shows it: `git log -- FILE`'s simplification.

A change made on a side branch that the merge then dropped — the merge kept the file exactly as
its other parent had it — never reached HEAD: `git log -- FILE` leaves such commits out (its
default history simplification follows, at a merge, only a parent whose version of the file the
merge kept), `git blame` never names them, and neither do CodeShovel's method histories. Those
are the changes recorded here, in `pruned_changes`, so that file and symbol histories leave them
out too.

The file version graph (versions.py) already has that shape: a merge that kept a parent's
version of a file is no version of its own, it points at that parent's. So the changes on the
simplified history of FILE at the indexed HEAD are the versions reachable from HEAD's version of
FILE in that graph (renames followed through prev_file_id); the others of the same paths, newer
than the oldest version reached, are pruned (an older life of the path, before it was deleted
and created anew, is on git's history: its walk goes on through commits without the file).
Only content changes (status M) are pruned: the graph follows content, git follows paths, and a
rename or a creation whose path HEAD still has is on git's history even where the merge kept the
other parent's content (`-X theirs` after a rename on a branch). Recomputed, after every run,
only for the files whose version at HEAD moved, or whose lineage the run's commits changed (a
branch merged with `-s ours` leaves HEAD's version where it was, and its changes are pruned).

Cost: one query per path in a file's lineage, then a walk in memory over its versions.
"""

from __future__ import annotations

import apsw

from cortex_core.store.store import get_meta, set_meta

# A commit's place in history's order (history.ORDER_KEY, not imported: indexing needs no query).
_ORDER = "c.order_time * 16777216 + min(c.generation, 16777215)"


def update_pruned(con: apsw.Connection) -> int:
    """Brings pruned_changes up to date with head_versions; returns how many files were
    recomputed. Call in the transaction that wrote head_versions."""
    head = get_meta(con, "versions_head")
    if head is None or get_meta(con, "pruned_head") == head:
        return 0
    known = dict(con.execute("select file_id, version from pruned_heads"))
    now = {f: f"{c}:{v}" for f, c, v in con.execute(
        "select file_id, commit_id, version_file_id from head_versions")}
    moved = {f for f, version in now.items() if known.get(f) != version}
    last = int(get_meta(con, "pruned_commit") or 0)
    if known and last:   # a first computation recomputes every file anyway
        moved |= _touched(con, last, now.keys())
    for file_id in moved:
        _recompute(con, file_id, *map(int, now[file_id].split(":")))
    gone = [f for f in known if f not in now]
    con.executemany("delete from pruned_heads where file_id = ?", ((f,) for f in gone))
    con.executemany("insert or replace into pruned_heads(file_id, version) values (?, ?)",
                    ((f, now[f]) for f in moved))
    set_meta(con, "pruned_head", head)
    set_meta(con, "pruned_commit", str(con.execute("select coalesce(max(id), 0) from commits").get))
    return len(moved)


def _touched(con: apsw.Connection, last: int, at_head) -> set[int]:
    """The files of HEAD whose lineage has content changes in the commits stored after the
    commit id `last` (ids grow as commits are stored): the changed paths themselves, and the
    later names of a changed path renamed since."""
    changed = {f for (f,) in con.execute(
        "select distinct file_id from file_changes where commit_id > ? and status = 'M'",
        (last,))}
    out = {f for f in changed if f in at_head}
    # A path still at HEAD was not renamed away: only the others are followed (rarely any).
    frontier = {f for f in changed if f not in at_head}
    seen = set(frontier)
    while frontier:
        out |= {f for f in frontier if f in at_head}
        marks = ",".join("?" * len(frontier))
        renamed = {f for (f,) in con.execute(
            f"select distinct file_id from file_changes where old_file_id in ({marks})"
            " and status in ('R', 'C')", tuple(frontier))}
        frontier = renamed - seen
        seen |= frontier
    return out


def _recompute(con: apsw.Connection, file_id: int, commit_id: int, version_file_id: int) -> None:
    reached, paths = _reachable(con, commit_id, version_file_id)
    paths.add(file_id)
    # The walk stops where the file was created; an earlier life of the same path (deleted, then
    # created anew) is on `git log -- FILE`, which walks on through commits without the file:
    # only changes newer than the oldest version reached can have been pruned at a merge. Newer
    # in history's order (never below a parent), not in the order commits were stored: a first
    # run stopped and resumed stores side branches' older commits after newer ones, and counting
    # by that order pruned an older life's changes (werkzeug: 380 pruned changes against 240).
    oldest = min(con.execute(f"select {_ORDER} from commits c where id = ?", (c,)).get
                 for c, _ in reached)
    con.execute("delete from pruned_changes where head_file_id = ?", (file_id,))
    for path in paths:
        # A change of the file's mode alone (its lines the same: a chmod) is no version in the
        # graph, which follows content; git follows the mode too, and lists a chmod whose merge
        # kept it. Never pruned: listed, at worst, where git would not (a merge that dropped it).
        rows = [(c, path, file_id) for c, order in con.execute(
            f"select fc.commit_id, {_ORDER} from file_changes fc"
            " join commits c on c.id = fc.commit_id where fc.file_id = ? and fc.status = 'M'"
            " and not (fc.added = 0 and fc.deleted = 0)", (path,))
            if order > oldest and (c, path) not in reached]
        con.executemany("insert or ignore into pruned_changes(commit_id, file_id, head_file_id)"
                        " values (?, ?, ?)", rows)


def _reachable(con: apsw.Connection, commit_id: int,
               file_id: int) -> tuple[set[tuple[int, int]], set[int]]:
    """The versions (commit, path) reachable from one, and the paths they are at."""
    edges: dict[int, dict[int, list[tuple[int, int]]]] = {}

    def edges_of(path: int) -> dict[int, list[tuple[int, int]]]:
        found = edges.get(path)
        if found is None:
            found = edges[path] = {}
            for c, prev_c, prev_f in con.execute(
                    "select commit_id, prev_commit_id, prev_file_id from file_versions"
                    " where file_id = ?", (path,)):
                if prev_c is not None:
                    found.setdefault(c, []).append((prev_c, prev_f if prev_f is not None
                                                    else path))
        return found

    reached: set[tuple[int, int]] = set()
    stack = [(commit_id, file_id)]
    while stack:
        node = stack.pop()
        if node in reached:
            continue
        reached.add(node)
        stack.extend(edges_of(node[1]).get(node[0], ()))
    return reached, {path for _, path in reached}
