"""Which commit last changed a line — `git blame` for one line, answered from the index.

The walk is git blame's (default options), over each file's version graph (versions.py): from
the commit that made the indexed HEAD's version of the file, a line inside what a commit's diff
against a parent's version left unchanged passes to that parent's version (the first such parent,
in order), renumbered by the hunks above it; a line changed against every parent is that
commit's. Merges take part: a merge that changed the file against every parent is a version
with a diff per parent (so a change made in the merge itself is credited to it), and a merge that
took the file whole from a parent is no version at all (the graph links past it). Whole-file
renames are followed (the rename detection of the diff against each parent). No git on the
request path.

Cost: per version walked, one query for its edges (file_versions_node) and one for the hunks of
each edge tried (hunks_file, merge_hunks_edge). A line's walk visits the versions of its own
ancestry only, from HEAD back to the commit that wrote it: usually a few; the whole history of
a file only for a line that never changed since the file was created.

Where it can differ from git blame: where libgit2 (the index's diffs) and git place an ambiguous
change differently among identical lines (git also slides hunks by indentation), or detect a
rename differently. When a diff of the file was not recorded (binary, too large, generated...)
the walk cannot go past it and says so instead of guessing. The index does not hold the length
of a file at HEAD: a line past the end is detected when the walk reaches the file's creation
(diffs keep a line past the end past it).

`map_buffer_line` moves a line of an edited (unsaved or uncommitted) buffer to HEAD's numbering,
so that an editor can ask the index about the line under the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw
import pygit2
from pygit2.enums import DiffOption

from cortex_core.errors import CortexError, NotFound
from cortex_core.query.history import COMMIT_COLUMNS, CommitRef, commit_ref
from cortex_core.index.skip_rules import WAS, indexed_limits, limit_hint
from cortex_core.query.targets import _file_id

# A diff of two buffers is C (libgit2's Myers), but its worst case is quadratic-ish in the edit
# distance: beyond this size a buffer is not diffed on an interactive request.
MAX_BUFFER_BYTES = 4_000_000

Hunk = tuple[int, int, int, int]  # old_start, old_lines, new_start, new_lines (git's, 1-based)


@dataclass(frozen=True)
class LineOrigin:
    commit: CommitRef | None   # None when it cannot be told
    path: str                  # the file's path at that commit
    line: int                  # the line's number in that commit's version of the file
    reason: str | None = None  # why commit is None


@dataclass(frozen=True)
class _Edge:
    """A version's diff against one parent's version (parent None: the file was created). The
    hunks of a non-merge's edge come with it; a merge's are read when the walk tries the edge."""
    parent: int | None
    prev_commit_id: int | None
    prev_file_id: int | None
    skip_reason: str | None
    lines: int | None
    merge: bool
    hunks: list[Hunk]


def last_change_of_line(con: apsw.Connection, path: str, line: int) -> LineOrigin:
    """The commit that last changed line `line` (1-based, numbered as at the indexed HEAD)."""
    if line < 1:
        raise CortexError(f"bad line number {line}: lines start at 1")
    file_id = _file_id(con, path)
    if con.execute("select 1 from head_files where file_id = ?", (file_id,)).fetchone() is None:
        raise NotFound(f"{path!r} is not in the indexed HEAD (deleted or renamed since); "
                       "blame a path that exists at HEAD")
    version = con.execute("select commit_id, version_file_id from head_versions"
                          " where file_id = ?", (file_id,)).fetchone()
    if version is None:
        return LineOrigin(None, path, line, "the index has no version of this file at HEAD "
                          "(an index run is under way, or stopped before it: index again)")
    commit_id, file_id = version
    current = line
    while True:
        edges = _edges(con, file_id, commit_id)
        if not edges:
            return LineOrigin(None, path, current, "the index has no version graph for this "
                              "file past this point (index again)")
        first = edges[0]
        if first.parent is None:
            return _created(con, commit_id, file_id, first, path, line, current)
        for edge in edges:
            if edge.skip_reason is not None:
                reason = edge.skip_reason
                hint = limit_hint(reason.removeprefix(WAS), indexed_limits(con))
                if reason.startswith(WAS):   # readable again: its old version was not read
                    reason = f"its previous version {reason}"
                return LineOrigin(None, _path(con, file_id), current, "the file's diff in "
                                  f"{_sha(con, commit_id)} was not recorded ({reason})"
                                  + (f": {hint}" if hint else ""))
            hunks = _merge_hunks(con, file_id, commit_id, edge.parent) if edge.merge \
                else edge.hunks
            before = _map_back(hunks, current)
            if before is None:
                continue
            if edge.prev_commit_id is None:
                return LineOrigin(None, _path(con, file_id), current, "the parent's version of "
                                  f"the file before {_sha(con, commit_id)} is not in the index")
            file_id, commit_id, current = edge.prev_file_id, edge.prev_commit_id, before
            break
        else:
            # Changed against every parent's version: this commit wrote the line.
            return LineOrigin(_commit(con, commit_id), _path(con, file_id), current)


def _edges(con: apsw.Connection, file_id: int, commit_id: int) -> list[_Edge]:
    """The version's edges in parent order. One step of the walk: two indexed queries, no joins
    and no sorting in SQL (the commit's row would be read past its message; a sort costs more
    than the query)."""
    edges = sorted(con.execute(
        "select parent, prev_commit_id, prev_file_id, skip_reason, lines, merge from file_versions"
        " where file_id = ? and commit_id = ?", (file_id, commit_id)),
        key=lambda row: -1 if row[0] is None else row[0])
    out = [_Edge(*row, []) for row in edges]   # type: ignore[call-arg]  # six columns, then hunks
    if len(out) == 1 and not out[0].merge and out[0].parent is not None:
        out[0].hunks.extend(_sorted(con.execute(
            "select old_start, old_lines, new_start, new_lines from hunks"
            " where file_id = ? and commit_id = ?", (file_id, commit_id))))
    return out


def _merge_hunks(con: apsw.Connection, file_id: int, commit_id: int, parent: int) -> list[Hunk]:
    """A merge's hunks against one parent."""
    return _sorted(con.execute(
        "select old_start, old_lines, new_start, new_lines from merge_hunks where file_id = ?"
        " and commit_id = ? and parent = ?", (file_id, commit_id, parent)))


def _sorted(hunks) -> list[Hunk]:
    """By new_start, which _map_back relies on (then old_start: a pure deletion before an
    insertion at the same place)."""
    return sorted(hunks, key=lambda h: (h[2], h[0]))


def _path(con: apsw.Connection, file_id: int) -> str:
    return con.execute("select path from files where id = ?", (file_id,)).get


def _sha(con: apsw.Connection, commit_id: int) -> str:
    return con.execute("select sha from commits where id = ?", (commit_id,)).get[:10]


def _map_back(hunks: tuple[Hunk, ...] | list[Hunk], line: int, near: bool = False
              ) -> int | None:
    """The number of new-side line `line` on the old side of a zero-context diff, or None when
    the diff added or changed it (with `near`: where that change sits on the old side, see
    map_buffer_line). `hunks` sorted by new_start.

    Only the counts matter, not old_start: git's zero-length ranges name the line *before* the
    change (a pure deletion's new_start, a pure insertion's old_start), which is easy to misread.
    """
    shift = 0
    for _old_start, old_lines, new_start, new_lines in hunks:
        if new_lines == 0:
            # A pure deletion sits between new lines new_start and new_start + 1.
            if new_start >= line:
                break
        else:
            if line < new_start:
                break
            if line < new_start + new_lines:
                if not near:
                    return None
                first = new_start + shift   # the hunk's first old line, or the one after it
                if old_lines == 0:          # an insertion: the line it follows
                    return max(1, first - 1)
                return first + min(line - new_start, old_lines - 1)
        shift += old_lines - new_lines
    return line + shift


def _commit(con: apsw.Connection, commit_id: int) -> CommitRef:
    row = con.execute(f"select {COMMIT_COLUMNS} from commits c where c.id = ?",
                      (commit_id,)).fetchone()
    return commit_ref(row)


def _created(con: apsw.Connection, commit_id: int, file_id: int, creation: _Edge, path: str,
             line: int, current: int) -> LineOrigin:
    """The walk reached the file's creation: every line of it came from that commit, unless the
    line lies below the end (then it lay below the end at HEAD too: diffs keep a line past the
    end past it). A creation recorded without its line count (binary) cannot tell that."""
    if creation.lines is not None and current > creation.lines:
        # Past every hunk, a line's number only moved by the net growth of the walked diffs.
        length = creation.lines + (line - current)
        raise CortexError(f"line {line} is past the end of {path} ({length} lines at the "
                          "indexed HEAD)")
    return LineOrigin(_commit(con, commit_id), _path(con, file_id), current)


def map_buffer_line(head: bytes, buffer: bytes, line: int, near: bool = False) -> int | None:
    """The number in `head` (the file at HEAD) of line `line` (1-based) of `buffer` (its edited
    version), or None when the buffer added or changed that line; with `near`, for such a line,
    where its change sits in `head` instead: the line it replaced (the last one, for a change
    that left fewer), or the line an insertion follows.

    Same zero-context conventions as the stored hunks. A last line that only gained or lost its
    final newline counts as changed, as in `git diff` and `git blame`."""
    count = _line_count(buffer)
    if line < 1 or line > count:
        raise CortexError(f"line {line} is outside the buffer (1..{count})")
    if head == buffer:
        return line
    return _map_back(buffer_hunks(head, buffer), line, near)


def buffer_hunks(head: bytes, buffer: bytes) -> list[Hunk]:
    """The zero-context hunks from `head` to `buffer`, sorted by new_start (for map_line)."""
    if len(head) > MAX_BUFFER_BYTES or len(buffer) > MAX_BUFFER_BYTES:
        raise CortexError(f"buffer too large to map lines (over {MAX_BUFFER_BYTES} bytes)")
    # FORCE_TEXT: a stray NUL would otherwise make libgit2 call the buffers binary, with no hunks.
    patch = pygit2.Patch.create_from(head, buffer, flag=DiffOption.FORCE_TEXT, context_lines=0,
                                     interhunk_lines=0)
    return [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]


def map_line(hunks: list[Hunk], line: int, near: bool = False) -> int | None:
    """map_buffer_line with the diff made once (buffer_hunks), for several lines."""
    return _map_back(hunks, line, near)


def _line_count(data: bytes) -> int:
    """Lines as git counts them: a final line without a newline still counts."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
