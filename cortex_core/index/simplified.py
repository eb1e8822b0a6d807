"""Which file changes are on a file's history as git shows it: `git log -- FILE`'s simplification.

A change made on a side branch that the merge then dropped — the merge kept the file exactly as
its other parent had it — never reached HEAD: `git log -- FILE` leaves such commits out (its
default history simplification follows, at a merge, only a parent whose version of the file the
merge kept), `git blame` never names them, and neither do CodeShovel's method histories. Those
are the changes recorded here, in `pruned_changes`, so that file and symbol histories leave them
out too. Each HEAD file has its own rows: the same change of a path can be dropped on the way to
one HEAD file and kept on the way to another (the path's older life renamed to one, its name used
again by the other), and which of them a run happened to compute first must not decide.

The file version graph (versions.py) already has that shape: a merge that kept a parent's
version of a file is no version of its own, it points at that parent's. So the changes on the
simplified history of FILE at the indexed HEAD are the versions reachable from HEAD's version of
FILE in that graph (renames followed through prev_file_id); the others of the same paths, newer
than the oldest version reached, are pruned. An older life of a path (before the life reached was
created) is on git's history where git's walk, going on through commits without the file, gets
to it: that walk is made here for the paths that have one (_Graph.walk: at a merge, the first
parent whose version the merge kept, absence included, told from the stored changes for a merge
that deleted the path; every parent when it cannot be told), and
the older life's changes it does not list are pruned, whatever their status.
Newer than the oldest version reached, the content changes (status M) are pruned; the graph
follows content, git follows paths, and a rename or a creation whose path HEAD still has can be
on git's history even where the merge kept the other parent's content (`-X theirs` after a rename
on a branch): such a change of HEAD's path that the graph did not reach (the same file added on
two branches) is decided by git's walk from HEAD. Only reachable commits' changes are ever
pruned, and only reachable commits' renames and births bound a lineage: a commit that no indexed
branch reaches any longer (a reset, --all-branches switched off) is on no history, and a store
indexed once at the end does not have it. Recomputed, after every run, only for the files whose
version at HEAD moved, or whose lineage the run's commits, or the commits whose reachability
changed, touched (a branch merged with `-s ours` leaves HEAD's version where it was, and its
changes are pruned).

Cost: one query per path in a file's lineage, then a walk in memory over its versions; for the
few paths with an older life or such a creation, the commit graph (commit_graph.py: read once
per run, kept in the store) and a walk over the commits, mostly along first parents: along
HEAD's first-parent line it jumps from one commit that touches the path to the next (sympy, whose
second root commit gives nearly every file such a creation: 19 s to recompute every file's
pruning commit by commit, 3.1 s with the jumps).
"""

from __future__ import annotations

from bisect import bisect_right

import apsw

from cortex_core.index import commit_graph
from cortex_core.store.schema import RENAMED_INTO_HEAD
from cortex_core.store.store import get_meta, set_meta

_ORDER = commit_graph.ORDER
_NO_END = 1 << 80   # above every _ORDER


def update_pruned(con: apsw.Connection, flipped: list[int] | tuple = (),
                  commits: commit_graph.CommitGraph | None = None, *, jumps: bool = True) -> int:
    """Brings pruned_changes up to date with head_versions; returns how many files were
    recomputed. Call in the transaction that wrote head_versions. `flipped`: the ids of stored
    commits whose reachability this run changed (their files' pruning is recomputed too).
    `commits`: the commit graph, if the run has read it since it stored its last commit.
    `jumps`: walks jump along HEAD's first-parent line (_Graph.walk); False walks it commit by
    commit, the reference the tests compare them with."""
    head = get_meta(con, "versions_head")
    last = int(get_meta(con, "pruned_commit") or 0)
    newest = con.execute("select coalesce(max(id), 0) from commits").get
    # HEAD where it was can still need work: commits of other branches (--all-branches) or
    # whose reachability flipped can move what HEAD's files' walks list.
    if head is None or (get_meta(con, "pruned_head") == head and newest == last and not flipped):
        return 0
    known = dict(con.execute("select file_id, version from pruned_heads"))
    now = {f: f"{c}:{v}" for f, c, v in con.execute(
        "select file_id, commit_id, version_file_id from head_versions")}
    moved = {f for f, version in now.items() if known.get(f) != version}
    if known and last:   # a first computation recomputes every file anyway
        moved |= _touched(con, last, flipped, now.keys())
        moved |= _handed(con, set(now) ^ set(known), now.keys())
    graph = _Graph(con.execute("select id from commits where sha = ?", (head,)).get, commits)
    graph.line_jumps = jumps
    for file_id in moved:
        commit_id, version_file_id = map(int, now[file_id].split(":"))
        _recompute(con, file_id, commit_id, version_file_id, graph)
    gone = [f for f in known if f not in now]
    # A file HEAD no longer has takes its rows along: they were its history's, no one else's.
    con.executemany("delete from pruned_changes where head_file_id = ?", ((f,) for f in gone))
    if not known:   # computed afresh (a first run, a migration): rows an older version left
        con.execute("delete from pruned_changes where head_file_id not in"
                    " (select file_id from head_versions)")
    con.executemany("delete from pruned_heads where file_id = ?", ((f,) for f in gone))
    con.executemany("insert or replace into pruned_heads(file_id, version) values (?, ?)",
                    ((f, now[f]) for f in moved))
    set_meta(con, "pruned_head", head)
    set_meta(con, "pruned_commit", str(newest))
    return len(moved)


def _touched(con: apsw.Connection, last: int, flipped, at_head) -> set[int]:
    """The files of HEAD whose lineage has changes in the commits stored after the commit id
    `last` (ids grow as commits are stored) or in `flipped`: the changed paths themselves (a
    rename's old path too: its changes before a rename into a HEAD file are that file's past,
    _renamed_away), and every file a changed path was ever renamed or copied into, through
    later renames."""
    changed = {f for row in con.execute(
        "select file_id, case when status = 'R' then old_file_id end from file_changes"
        " where commit_id > ?", (last,)) for f in row if f is not None}
    flipped = list(flipped)
    for at in range(0, len(flipped), 500):
        step = flipped[at:at + 500]
        changed |= {f for row in con.execute(
            "select file_id, case when status = 'R' then old_file_id end from file_changes"
            f" where commit_id in ({','.join('?' * len(step))})", step)
            for f in row if f is not None}
    # Followed even when HEAD has the path: it may be a name used again, whose older life was
    # renamed into another file (a side branch's change merged now is that file's too).
    return _closure(con, changed, "select file_id from file_changes where old_file_id in ({})"
                                  " and status in ('R', 'C')") & set(at_head)


def _handed(con: apsw.Connection, came_or_went: set[int], at_head) -> set[int]:
    """The files of HEAD whose pruning depends on whether the files HEAD gained or lost are at
    HEAD: a path's changes before its rename into a file HEAD has are that file's past, not
    its own (_renamed_away), so every file whose lineage holds a path renamed, through later
    renames, into one of them: the path itself and the files it was renamed into."""
    sources = _closure(con, came_or_went, "select old_file_id from file_changes"
                                          " where file_id in ({}) and status = 'R'")
    if sources == came_or_went:
        return set()   # nothing was ever renamed into them: the common case
    return _closure(con, sources, "select file_id from file_changes where old_file_id in ({})"
                                  " and status = 'R'") & set(at_head)


def _closure(con: apsw.Connection, start: set[int], step_sql: str) -> set[int]:
    """`start` and every file id `step_sql` (a query of one column over the ids in its `{}`)
    leads to from them, step after step; asked 500 ids at a time."""
    found, frontier = set(start), list(start)
    while frontier:
        step, frontier = frontier[:500], frontier[500:]
        for (f,) in con.execute(step_sql.format(",".join("?" * len(step))), step):
            if f is not None and f not in found:
                found.add(f)
                frontier.append(f)
    return found


def _recompute(con: apsw.Connection, file_id: int, commit_id: int, version_file_id: int,
               graph: _Graph) -> None:
    reached, paths, renamed_at = _reachable(con, commit_id, version_file_id)
    paths.add(file_id)
    # The walk stops where the file was created; an earlier life of the same path (deleted, then
    # created anew) is on `git log -- FILE` where git's walk through the commits without the file
    # reaches it (decided below by that walk); changes newer than the oldest version reached
    # were pruned at a merge when the graph does not reach them. Newer
    # in history's order (never below a parent), not in the order commits were stored: a first
    # run stopped and resumed stores side branches' older commits after newer ones, and counting
    # by that order pruned an older life's changes (werkzeug: 380 pruned changes against 240).
    oldest = min(con.execute(f"select {_ORDER} from commits c where id = ?", (c,)).get
                 for c, _ in reached)
    con.execute("delete from pruned_changes where head_file_id = ?", (file_id,))
    # An earlier path of the file is its lineage until the path is used again: from a birth of
    # it after the commit that renamed it into the next, its changes are another file's (a new
    # life), never this one's to prune (scrapy's tests/test_spidermiddleware.py lost 45 of its
    # 59 changes to the lineage of the file its first life had been renamed to). Not until the
    # rename itself: a side branch may still change the old path after it.
    until = {path: _reborn(con, path, commits) for path, commits in renamed_at.items()}
    for path in paths:
        if path != file_id and path not in until:
            continue
        # A change of the file's mode alone (its lines the same: a chmod) is no version in the
        # graph, which follows content; git follows the mode too, and lists a chmod whose merge
        # kept it. Never pruned: listed, at worst, where git would not (a merge that dropped it).
        rows = [(c, path, file_id) for c, order in con.execute(
            f"select fc.commit_id, {_ORDER} from file_changes fc"
            " join commits c on c.id = fc.commit_id where fc.file_id = ? and fc.status = 'M'"
            " and not (fc.added = 0 and fc.deleted = 0) and c.reachable = 1", (path,))
            if oldest < order < (until[path] if path != file_id else _NO_END)
            and (c, path) not in reached]
        # Older than the walk reached: an earlier life of the path. On git's history only if
        # git's walk reaches it through the commits without the file (walked here, below).
        # Not before a rename of the path into a file that HEAD has: those changes are that
        # file's past (a side branch's a.py renamed to c.py, then a new a.py), and pruned
        # here they would leave its history too.
        handed = _renamed_away(con, path, oldest)
        older = {c: order for c, order in con.execute(
            f"select fc.commit_id, {_ORDER} from file_changes fc join commits c"
            " on c.id = fc.commit_id where fc.file_id = ? and not (fc.status = 'M'"
            " and fc.added = 0 and fc.deleted = 0) and c.reachable = 1", (path,))
            if handed < order < oldest and (c, path) not in reached}
        if older:
            starts = _births(con, path, reached)
            if starts:
                listed = graph.walk(con, path, starts, min(older.values()))
                rows += [(c, path, file_id) for c in older if c not in listed]
        if path == file_id and graph.head is not None:
            # Newer, a creation or deletion the content's walk did not reach (the same file
            # added on two branches, a cherry-picked addition): git's walk from HEAD decides.
            other = {c: order for c, order in con.execute(
                f"select fc.commit_id, {_ORDER} from file_changes fc join commits c"
                " on c.id = fc.commit_id where fc.file_id = ? and fc.status != 'M'"
                " and c.reachable = 1", (path,))
                if order > oldest and (c, path) not in reached}
            if other:
                listed = graph.walk(con, path, [graph.head], min(other.values()))
                rows += [(c, path, file_id) for c in other if c not in listed]
        con.executemany("insert or ignore into pruned_changes(commit_id, file_id, head_file_id)"
                        " values (?, ?, ?)", rows)   # ignore: a change met twice in one walk


def _renamed_away(con: apsw.Connection, path: int, below: int) -> int:
    """The order of the newest commit below `below` that renamed `path` into a file HEAD has
    (through that file's own renames), or -1."""
    return max((order for (order,) in con.execute(
        f"select {_ORDER} from file_changes fc join commits c on c.id = fc.commit_id"
        " where fc.old_file_id = ? and fc.status = 'R' and fc.file_id != fc.old_file_id"
        f" and c.reachable = 1 and {RENAMED_INTO_HEAD}", (path,)) if order < below), default=-1)


def _reborn(con: apsw.Connection, path: int, renames: set[int]) -> int:
    """The order of the first birth of `path` after the newest of the commits that renamed it
    away (`renames`), or _NO_END."""
    renamed = max(con.execute(f"select {_ORDER} from commits c where id = ?", (c,)).get
                  for c in renames)
    return min((order for (order,) in con.execute(
        f"select {_ORDER} from file_changes fc join commits c on c.id = fc.commit_id"
        " where fc.file_id = ? and (fc.status in ('A', 'C') or (fc.status = 'R'"
        " and fc.old_file_id != fc.file_id)) and c.reachable = 1", (path,))
        if order > renamed), default=_NO_END)


def _births(con: apsw.Connection, path: int, reached: set[tuple[int, int]]) -> list[int]:
    """The commits where the versions reached were created at `path` (added, copied, or renamed
    into it, by a commit or a merge): where git's walk goes on through commits without it."""
    made = {c for (c,) in con.execute(
        "select commit_id from file_changes where file_id = ? and status in ('A', 'C', 'R')"
        " union select commit_id from merge_files where file_id = ? and status in ('A', 'R')",
        (path, path))}
    return sorted(c for c, p in reached if p == path and c in made)


class _Graph:
    """Git's history simplification walked for one path (`git log -- PATH`, no renames
    followed), over the commit graph, read once per update and only when a file needs it."""

    def __init__(self, head: int | None = None,
                 graph: commit_graph.CommitGraph | None = None) -> None:
        self.head = head   # the indexed HEAD's id
        self.graph = graph
        self.removed: dict[int, dict[int, bool]] = {}   # path -> commit -> removed it
        self.absent_at: dict[int, dict[int, bool]] = {}   # path -> commit -> absent there
        # HEAD's first-parent line, read down as far as the walks have needed: its commits,
        # their places on it, and their orders negated (ascending: a parent is never above
        # its child), so that a walk can jump along it (walk).
        self.line: list[int] = []
        self.line_at: dict[int, int] = {}
        self.line_orders: list[int] = []
        self.line_ended = head is None
        self.line_jumps = True

    def walk(self, con: apsw.Connection, path: int, starts: list[int],
             lowest: int = -1) -> set[int]:
        """The non-merge commits git's walk for `path` lists, from `starts` back: at a merge it
        follows the first parent whose version of the path the merge kept (absent counts), or
        every parent when the merge changed it against all of them or this cannot be told.
        Stops below the order `lowest`: a parent is never above its child in history's order,
        so nothing asked about lies below it (a walk down the whole history per path made the
        pruning of a history whose files were each deleted and re-created grow as its square)."""
        if self.graph is None:
            self.graph = commit_graph.load(con)
        changed = {c for (c,) in con.execute(
            "select commit_id from file_changes where file_id = ? union select commit_id"
            " from file_changes where old_file_id = ? and status = 'R'", (path, path))}
        kept = {c: (via, via_file) for c, via, via_file in con.execute(
            "select commit_id, via, via_file_id from merge_files where file_id = ?"
            " and status != 'D'", (path,))}
        deleted = {c for (c,) in con.execute(
            "select commit_id from merge_files where file_id = ? and status = 'D'", (path,))}
        unknown = {c for (c,) in con.execute(
            "select commit_id from merge_files where old_file_id = ?", (path,))}
        listed: set[int] = set()
        seen: set[int] = set()
        parents_of, order = self.graph.parents, self.graph.order
        # Where the walk must stop on HEAD's first-parent line: the commits that change the
        # path or whose merge holds it otherwise than its first parent. Between two of them
        # the walk goes down first parents listing nothing (a merge that kept its first
        # parent's version is followed there), so it jumps: sympy's walks passed ~3,700
        # merges each, for a handful of such commits.
        if self.line_jumps:
            self._read_line(lowest)
        line, line_at = self.line, self.line_at if self.line_jumps else {}
        stops = sorted(line_at[c] for part in (changed, kept, deleted, unknown) for c in part
                       if c in line_at)
        below = bisect_right(self.line_orders, -lowest)   # the first place under `lowest`
        stack = list(starts)
        while stack:
            c: int | None = stack.pop()
            # Down a line of single parents without the stack: most of a walk.
            while c is not None and c not in seen:
                seen.add(c)
                at = line_at.get(c)
                if at is not None and c not in changed and c not in kept and \
                        c not in deleted and c not in unknown:
                    # On HEAD's line and listing nothing: to the next stop, if it is above
                    # `lowest`. Commits jumped over are not marked seen; a walk that comes to
                    # one again goes the same way, to the same stop, which is.
                    nxt = bisect_right(stops, at)
                    to = stops[nxt] if nxt < len(stops) else len(line)
                    c = line[to] if to < below and to < len(line) else None
                    continue
                parents = parents_of(c) or []
                if len(parents) < 2:
                    if c in changed:
                        listed.add(c)
                    c = parents[0] if parents else None
                    if c is not None and order(c) < lowest:
                        c = None
                    continue
                if c in deleted or (c in unknown and c not in kept):
                    # Without the path (deleted, or renamed away by the merge's own diff), like
                    # the first other parent that has none: git follows that one.
                    follow = next(([p] for p in parents[1:] if p is not None
                                   and self.absent(con, path, p)), parents)
                elif c in unknown or (c in kept and (kept[c][0] is None or kept[c][1] != path)):
                    follow = parents
                else:
                    via = kept[c][0] if c in kept else 0
                    follow = parents[via:via + 1]
                stack.extend(p for p in follow if p is not None and order(p) >= lowest)
                c = None
        return listed

    def _read_line(self, lowest: int) -> None:
        """HEAD's first-parent line read on down to its first commit under `lowest`, or to its
        end (a root, a parent not stored)."""
        graph = self.graph
        assert graph is not None   # read by walk()
        line, orders = self.line, self.line_orders
        if self.line_ended or (line and -orders[-1] < lowest):
            return   # read to its end, or already past `lowest`
        c: int | None = self.head
        if line:
            parents = graph.parents(line[-1]) or []
            c = parents[0] if parents else None
        ids, read, ended = graph.first_parents(c, lowest)
        for cid, order in zip(ids, read):
            if cid in self.line_at or (orders and -order < orders[-1]):
                # Above its child: orders computed before a shallow clone was deepened (or a
                # graph read wrong). Places under `lowest` cannot be found by halves then: no
                # jumps in this run.
                self.line_jumps = False
                self.line_ended = True
                return
            self.line_at[cid] = len(line)
            line.append(cid)
            orders.append(-order)
        self.line_ended = ended

    def absent(self, con: apsw.Connection, path: int, commit: int) -> bool:
        """Whether the commit's tree has no file at `path`, from the stored changes: the nearest
        change of the path down first parents removed it (deleted, renamed away), or there is
        none. A merge lists every file it holds otherwise than its first parent, so one without
        a row for the path has the first parent's. False when this cannot be told (a parent
        not in the store: a shallow clone's edge)."""
        removed = self.removed.get(path)
        if removed is None:
            removed = self.removed[path] = {}
            for table in ("file_changes", "merge_files"):
                for made, status, old in con.execute(
                        f"select commit_id, status, old_file_id from {table} where file_id = ?"
                        " or (old_file_id = ? and status = 'R')", (path, path)):
                    # Renamed away and made again in one commit: there.
                    removed[made] = status == "D" or (old == path and status == "R" and
                                                      removed.get(made, True))
        graph = self.graph
        assert graph is not None   # read by walk()
        known = self.absent_at.setdefault(path, {})
        chain: list[int] = []
        c: int | None = commit
        answer = False   # a parent not stored: cannot be told
        while c is not None and c in graph:
            if c in known:
                answer = known[c]
                break
            chain.append(c)
            if c in removed:
                answer = removed[c]
                break
            parents = graph.parents(c)
            if not parents:
                answer = True   # a root: the path was never made
                break
            c = parents[0]
        # Every commit walked has the same answer: the next merge's walk stops where this one
        # went (a branch merging main again and again made the walks grow as their square).
        for walked in chain:
            known[walked] = answer
        return answer


def _reachable(con: apsw.Connection, commit_id: int, file_id: int
               ) -> tuple[set[tuple[int, int]], set[int], dict[int, set[int]]]:
    """The versions (commit, path) reachable from one, the paths they are at, and for each
    earlier path the commits of the versions made from it at another path (its renames)."""
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
    renamed_at: dict[int, set[int]] = {}
    stack = [(commit_id, file_id)]
    while stack:
        node = stack.pop()
        if node in reached:
            continue
        reached.add(node)
        for prev in edges_of(node[1]).get(node[0], ()):
            if prev[1] != node[1]:
                renamed_at.setdefault(prev[1], set()).add(node[0])
            stack.append(prev)
    return reached, {path for _, path in reached}, renamed_at
