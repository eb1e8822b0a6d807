"""The version graph of every file, for line blame: which commit made each parent's version.

`git blame` walks commits. At a commit, a line of its version of the file that is unchanged in a
parent's version passes to the first such parent, in order; the lines changed against every
parent are the commit's. A commit whose version is identical to a parent's passes the whole file
to the first such parent. So for one file only the commits that made a new version of it matter
— a non-merge that changed it, a merge that changed it against every parent — and, for each of
them and each parent, which of those commits made the version that parent had. That graph is
stored once at indexing (file_versions; head_versions for the indexed HEAD), so that blame.py
answers a line by walking a handful of rows, with no git and no walk over the commit graph.

Built after ingestion, over the commits not versioned yet, parents before children (in seq
order where it allows: seq follows time, which keeps few branches open at once). Each commit
carries a map file -> the commit that made its version (`_State`): it starts from its first
parent's map and records its own changes; a merge takes, for a file it took whole from parent j
(merge_files.via), parent j's entry. A map is handed on to a commit's last child and copied for
the others, and dropped once its children are done. At most MAX_STATES maps are kept (a history
with more branches open at once drops the oldest). A commit without a map (one indexed by an
earlier run, or dropped) is answered from head_versions when it is the last indexed HEAD, and
otherwise by `_Walker`, which follows its first parents back to the file's last change.
"""

from __future__ import annotations

import heapq
import time
from typing import Callable

import apsw

from cortex_core.index import commit_graph
from cortex_core.store.store import get_meta, set_meta, turn_wanted

MAX_STATES = 512      # maps of open branches kept in memory; beyond, the walker answers
POINT_QUERIES = 64    # a file's changes asked one by one before all are read (_Walker._touch)
BATCH_SECONDS = 1.0   # a transaction commits at least this often
_ABSENT = object()


Version = tuple[int, int]   # (commit id, file id): the commit that made it, the file's path there


class _State:
    """A commit's map: file id -> the version it has (None: the file is absent), over `base`, a
    commit answered by the walker for the files the map does not hold."""
    __slots__ = ("nodes", "base")

    def __init__(self, nodes: dict[int, Version | None], base: int | None):
        self.nodes = nodes
        self.base = base


class VersionGraph:
    def __init__(self, con: apsw.Connection):
        self.con = con
        self.states: dict[int, _State] = {}
        self.remaining: dict[int, int] = {}   # a commit with a map -> its children still to do
        self.walker = _Walker(con)
        self.versioned = 0

    # -- the pass ----------------------------------------------------------------------------

    def update(self) -> int:
        """Version every commit not versioned yet (this run's, and those of a run that was
        stopped); returns how many."""
        con = self.con
        pending = {cid: (seq, parents.split(), bool(merge)) for cid, seq, parents, merge in
                   con.execute("select id, seq, parents, is_merge from commits"
                               " where versioned = 0")}
        if not pending:
            return 0
        ids = self._commit_ids(len(pending))
        parent_ids = {cid: [ids(sha) for sha in shas] for cid, (_, shas, _) in pending.items()}
        children: dict[int, list[int]] = {}
        waiting: dict[int, int] = {}
        for cid, parents in parent_ids.items():
            inside = [p for p in parents if p in pending]
            waiting[cid] = len(inside)
            for p in inside:
                children.setdefault(p, []).append(cid)
        self.remaining = {cid: len(kids) for cid, kids in children.items()}
        ready = [(pending[cid][0], cid) for cid, n in waiting.items() if n == 0]
        heapq.heapify(ready)
        while ready:
            with con:
                started = time.monotonic()
                done: list[tuple[int]] = []
                while ready:
                    _, cid = heapq.heappop(ready)
                    self._version(cid, parent_ids[cid], pending[cid][2])
                    done.append((cid,))
                    self.versioned += 1
                    for child in children.get(cid, ()):
                        waiting[child] -= 1
                        if waiting[child] == 0:
                            heapq.heappush(ready, (pending[child][0], child))
                    if time.monotonic() - started >= BATCH_SECONDS or turn_wanted(con):
                        break
                con.executemany("update commits set versioned = 1 where id = ?", done)
        return self.versioned

    def _commit_ids(self, wanted: int) -> Callable[[str], int | None]:
        """sha -> commit id: one query per sha for a few commits, one table read for many (a
        full index: a query per parent was 4% of its statements)."""
        if wanted < 1_000:
            return lambda sha: self.con.execute("select id from commits where sha = ?",
                                                (sha,)).get
        table = dict(self.con.execute("select sha, id from commits"))
        return table.get

    def _version(self, cid: int, parents: list[int | None], merge: bool) -> None:
        first = parents[0] if parents else None
        state = self._inherit(first)
        if merge:
            rows, gone, made = self._merge(cid, parents, state)
        else:
            rows, gone, made = self._commit(cid, first, state)
        self.con.executemany(
            "insert into file_versions(file_id, commit_id, parent, prev_commit_id, prev_file_id,"
            " skip_reason, lines, merge) values (?,?,?,?,?,?,?,?)",
            (row + (int(merge),) for row in rows))
        # Absences first: a file renamed away and another renamed onto its path in one commit
        # ends up present.
        for file_id in gone:
            state.nodes[file_id] = None
        state.nodes.update(made)
        for parent in parents[1:]:
            self._release(parent)
        self.states[cid] = state
        if len(self.states) > MAX_STATES:
            del self.states[next(iter(self.states))]

    def _inherit(self, parent: int | None) -> _State:
        """The first parent's map: taken over by its last child, copied for the others."""
        if parent is None:
            return _State({}, None)
        state = self.states.get(parent)
        if state is None:
            self._release(parent)
            return _State({}, parent)
        if self.remaining.get(parent, 0) <= 1:
            del self.states[parent]
            self.remaining.pop(parent, None)
            return state
        self.remaining[parent] -= 1
        return _State(dict(state.nodes), state.base)

    def _release(self, parent: int | None) -> None:
        if parent is None or parent not in self.remaining:
            return
        self.remaining[parent] -= 1
        if self.remaining[parent] <= 0:
            del self.remaining[parent]
            self.states.pop(parent, None)

    def _find(self, state: _State | None, commit_id: int | None, file_id: int) -> Version | None:
        """The version of the file that `commit_id` has (state: its map, if known)."""
        if commit_id is None:
            return None
        if state is None:
            state = self.states.get(commit_id)
            if state is None:
                return self.walker.version(commit_id, file_id)
        found = state.nodes.get(file_id, _ABSENT)
        if found is not _ABSENT:
            return found   # type: ignore[return-value]  # a Version, or None: not _ABSENT
        return self.walker.version(state.base, file_id) if state.base is not None else None

    def _commit(self, cid: int, parent: int | None, state: _State):
        """A non-merge: every changed file is a new version, its parent edge the first-parent
        diff (hunks in `hunks`)."""
        rows: list[tuple] = []
        gone, made = [], {}
        for file_id, old_id, status, skip, added in self.con.execute(
                "select file_id, old_file_id, status, skip_reason, added from file_changes"
                " where commit_id = ?", (cid,)):
            if status == "D":
                gone.append(file_id)
                continue
            if status == "A" or parent is None:
                rows.append((file_id, cid, None, None, None, skip, added))
            else:
                source = old_id if status in ("R", "C") and old_id is not None else file_id
                if status == "R":
                    gone.append(source)
                rows.append((file_id, cid, 0, *_split(self._find(state, parent, source)), skip,
                             None))
            made[file_id] = (cid, file_id)
        return rows, gone, made

    def _merge(self, cid: int, parents: list[int | None], state: _State):
        """A merge: a file taken whole from a parent keeps that parent's version; a file changed
        against every parent is a new version with one edge per parent (hunks in merge_hunks)."""
        edges: dict[int, list[tuple]] = {}
        for file_id, parent, old_id, skip in self.con.execute(
                "select file_id, parent, old_file_id, skip_reason from merge_edges"
                " where commit_id = ? order by parent", (cid,)):
            edges.setdefault(file_id, []).append((parent, old_id, skip))
        rows: list[tuple] = []
        gone, made = [], {}
        for file_id, old_id, status, via, via_id, lines in self.con.execute(
                "select file_id, old_file_id, status, via, via_file_id, lines from merge_files"
                " where commit_id = ?", (cid,)):
            if status == "R" and old_id is not None:
                gone.append(old_id)
            if status == "D":
                gone.append(file_id)
            elif via is not None:
                made[file_id] = self._find(state if via == 0 else None, _at(parents, via),
                                           via_id if via_id is not None else file_id)
            else:
                made[file_id] = (cid, file_id)
                mine = edges.get(file_id, [])
                for parent, source, skip in mine:
                    found = self._find(state if parent == 0 else None, _at(parents, parent), source)
                    rows.append((file_id, cid, parent, *_split(found), skip, None))
                if not mine:
                    rows.append((file_id, cid, None, None, None, None, lines))
        return rows, gone, made

    # -- the indexed HEAD --------------------------------------------------------------------

    def write_head(self, head_sha: str) -> None:
        """head_versions for the indexed HEAD's files (head_files), when HEAD moved or the store
        has none yet. Call after update() and the HEAD snapshot, in the snapshot's transaction.
        Once HEAD is versioned, its versions never change: the same HEAD needs nothing."""
        con = self.con
        if get_meta(con, "versions_head") == head_sha:
            return
        head_id = con.execute("select id from commits where sha = ?", (head_sha,)).get
        state = self.states.get(head_id)
        rows = []
        for (file_id,) in con.execute("select file_id from head_files").fetchall():
            found = self._find(state, head_id, file_id)
            if found is not None:
                rows.append((file_id, *found))
        con.execute("delete from head_versions")
        con.executemany("insert into head_versions(file_id, commit_id, version_file_id)"
                        " values (?, ?, ?)", rows)
        set_meta(con, "versions_head", head_sha)


def _split(version: Version | None) -> tuple[int | None, int | None]:
    return version if version is not None else (None, None)


def _at(parents: list[int | None], index: int) -> int | None:
    return parents[index] if 0 <= index < len(parents) else None


class _Walker:
    """Answers "which commit made X's version of file F" from the stored changes alone, for a
    commit X without a map: back along first parents to the last commit that touched F; at a
    merge that took F whole from parent j, on along parent j. The last indexed HEAD is answered
    from head_versions. O(commits walked); memoized."""

    def __init__(self, con: apsw.Connection):
        self.con = con
        self.memo: dict[tuple[int, int], Version | None] = {}
        self.touches: dict[int, dict[int, tuple]] = {}
        self.asked: dict[int, int] = {}   # a file -> its changes asked one by one so far
        self.graph: commit_graph.CommitGraph | None = None
        self.head: tuple[int | None, dict[int, Version]] | None = None

    def version(self, commit_id: int, file_id: int) -> Version | None:
        key = (commit_id, file_id)
        if key not in self.memo:
            self.memo[key] = self._walk(commit_id, file_id)
        return self.memo[key]

    def _walk(self, commit_id: int | None, file_id: int) -> Version | None:
        head_id, head_map = self._head()
        while commit_id is not None:
            if commit_id == head_id:
                return head_map.get(file_id)
            touch = self._touch(commit_id, file_id)
            if touch is not None:
                status, via, via_id, merge = touch
                if status == "D":
                    return None
                if not merge or via is None:
                    return commit_id, file_id
                commit_id = self._parent(commit_id, via)
                file_id = via_id if via_id is not None else file_id
                continue
            commit_id = self._parent(commit_id, 0)
        return None

    def _head(self) -> tuple[int | None, dict[int, Version]]:
        if self.head is None:
            sha = get_meta(self.con, "versions_head")
            head_id = self.con.execute("select id from commits where sha = ?", (sha,)).get \
                if sha else None
            self.head = (head_id, {f: (c, v) for f, c, v in self.con.execute(
                "select file_id, commit_id, version_file_id from head_versions")} if head_id
                else {})
        return self.head

    def _touch(self, commit_id: int, file_id: int) -> tuple | None:
        """How the commit changed the file (status, via, via file, merge), or None. Asked row by
        row for the first steps of a file's walks, which most often end a few commits down;
        then every change of the file at once (a merge of main into a branch walked for 2,200
        files, with up to 2,600 rows each on sympy: 0.3 s of reading for a few steps each)."""
        found = self.touches.get(file_id)
        if found is not None:
            return found.get(commit_id)
        asked = self.asked[file_id] = self.asked.get(file_id, 0) + 1
        if asked > POINT_QUERIES:
            return self._touches(file_id).get(commit_id)
        if len(self._parents(commit_id)) > 1:   # a merge's rows are in merge_files
            row = self.con.execute("select status, via, via_file_id from merge_files"
                                   " where commit_id = ? and file_id = ?",
                                   (commit_id, file_id)).fetchone()
            if row is not None:
                return (*row, True)
        row = self.con.execute("select status from file_changes where commit_id = ?"
                               " and file_id = ?", (commit_id, file_id)).fetchone()
        return (row[0], None, None, False) if row is not None else None

    def _touches(self, file_id: int) -> dict[int, tuple]:
        found = self.touches.get(file_id)
        if found is None:
            found = {cid: (status, None, None, False) for cid, status in self.con.execute(
                "select commit_id, status from file_changes where file_id = ?", (file_id,))}
            for cid, status, via, via_id in self.con.execute(
                    "select commit_id, status, via, via_file_id from merge_files"
                    " where file_id = ?", (file_id,)):
                found[cid] = (status, via, via_id, True)
            self.touches[file_id] = found
        return found

    def _parents(self, commit_id: int) -> list[int | None]:
        if self.graph is None:
            self.graph = commit_graph.load(self.con)
        return self.graph.parents(commit_id) or []

    def _parent(self, commit_id: int, index: int) -> int | None:
        return _at(self._parents(commit_id), index)
