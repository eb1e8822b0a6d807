"""Which commit last changed a line — `git blame` for one line, answered from the index.

The index keeps, for every commit and file it changed, the zero-context hunks of the diff against
the commit's first parent. A line of the file at the indexed HEAD is mapped backwards through the
commits that changed the file, newest first: inside a hunk's added range, that commit wrote it;
otherwise its number is shifted by the hunks above it (new numbering to old) and the walk goes on.
No git on the request path.

Cost: the file's lineage (one small query per rename step, see history._lineage), then ONE query
for all of the lineage's changes joined with their hunks (file_changes_file and hunks_file
indexes), sorted by seq in SQLite. For C changes and H hunks that is O((C + H) log(C + H)) in
SQLite and at most O(C + H) in Python, which stops at the answering commit: usually one of the
newest.

Approximation: history here is each commit's first-parent diff, taken in ingestion order (seq,
parents before children), and merges carry no hunks. On a linear history this is `git blame`
(which also follows whole-file renames), except where libgit2 and git place an ambiguous change
differently among identical lines (git's indent heuristic). With merged side branches the side branch's diffs are numbered against the side branch's
own versions, not against the commits ingested just before them, so the answer can differ from
`git blame` (which follows every parent); evil merges (changes made in the merge itself) are never
credited. An index of all branches only counts HEAD's ancestors (one more O(commits) pass).
When a commit's diff of the file was not recorded (binary, too large, generated...)
the walk cannot go past it and says so instead of guessing. The index does not hold the length
of a file at HEAD: a line past the end is detected when the walk reaches the file's creation,
which is exact on a linear history; after merges such a line may get an answer, so a caller that
has the file (an editor) should bound the line itself.

`map_buffer_line` moves a line of an edited (unsaved or uncommitted) buffer to HEAD's numbering,
so that an editor can ask the index about the line under the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Iterator

import apsw
import pygit2
from pygit2.enums import DiffOption

from .errors import CortexError, NotFound
from .history import _FILE_LINKS, COMMIT_COLUMNS, CommitRef, _lineage, commit_ref
from .store import get_meta
from .targets import _file_id

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
class _Change:
    """One commit's change of one file of the lineage, with its hunks sorted by new_start."""
    commit_id: int
    seq: int
    sha: str
    file_id: int
    old_file_id: int | None
    path: str
    status: str
    added: int | None
    skip_reason: str | None
    hunks: tuple[Hunk, ...]


def last_change_of_line(con: apsw.Connection, path: str, line: int) -> LineOrigin:
    """The commit that last changed line `line` (1-based, numbered as at the indexed HEAD)."""
    if line < 1:
        raise CortexError(f"bad line number {line}: lines start at 1")
    file_id = _file_id(con, path)
    if con.execute("select 1 from head_files where file_id = ?", (file_id,)).fetchone() is None:
        raise NotFound(f"{path!r} is not in the indexed HEAD (deleted or renamed since); "
                       "blame a path that exists at HEAD")
    current, following = line, file_id
    for change in _changes(con, file_id):
        # The lineage also brings the older life of a path that a rename later landed on: past
        # a rename only the file it came from counts.
        if change.file_id != following:
            continue
        if change.skip_reason is not None or change.added is None:
            return _unrecorded(con, change, path, line, current)
        before = _map_back(change.hunks, current)
        if before is None:
            return LineOrigin(_commit(con, change.commit_id), change.path, current)
        if change.status == "A":
            # The file was created here and the line lies below its end then: it lay below the
            # end at HEAD too (on a linear history, mapping keeps lines past the end past it).
            return _past_end(con, change, path, line, current)
        if change.status == "D":
            return LineOrigin(None, change.path, current,
                              f"the file was deleted in {change.sha[:10]} and no later commit "
                              "recorded adds this line (merged branches?)")
        if change.status == "R" and change.old_file_id is not None:
            following = change.old_file_id
        current = before
    return LineOrigin(None, path, current, "no indexed commit adds this line (history not indexed"
                      " that far back, or merged branches)")


def _map_back(hunks: tuple[Hunk, ...] | list[Hunk], line: int) -> int | None:
    """The number of new-side line `line` on the old side of a zero-context diff, or None when
    the diff added or changed it. `hunks` sorted by new_start.

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
                return None
        shift += old_lines - new_lines
    return line + shift


def _changes(con: apsw.Connection, file_id: int) -> Iterator[_Change]:
    """The changes of the file's lineage, newest first, from one query. Lazy: the walk usually
    stops at one of the first."""
    lineage = _lineage(con, file_id, _FILE_LINKS)
    ancestors = _head_ancestors(con)
    values = ",".join("(?,?)" for _ in lineage)
    params = [value for pair in lineage for value in pair]
    # Rows are grouped by (commit, file): one change each. The hunks of a change come sorted by
    # new_start, which _map_back relies on.
    cursor = con.execute(
        f"with lineage(file_id, below) as (values {values})"
        " select c.seq, fc.commit_id, c.sha, f.path, fc.status, fc.added, fc.skip_reason,"
        " h.old_start, h.old_lines, h.new_start, h.new_lines, fc.file_id, fc.old_file_id"
        " from lineage l join file_changes fc on fc.file_id = l.file_id"
        " join commits c on c.id = fc.commit_id and c.seq < l.below and c.reachable = 1"
        " join files f on f.id = fc.file_id"
        " left join hunks h on h.commit_id = fc.commit_id and h.file_id = fc.file_id"
        " order by c.seq desc, fc.file_id, h.new_start, h.old_start", params)
    for (_seq, commit_id, _file), rows in groupby(cursor, key=lambda row: row[:2] + row[11:12]):
        if ancestors is not None and commit_id not in ancestors:
            continue
        rows = list(rows)
        first = rows[0]
        hunks = tuple(tuple(row[7:11]) for row in rows if row[7] is not None)
        yield _Change(first[1], first[0], first[2], first[11], first[12], first[3], first[4],
                      first[5], first[6], hunks)


def _head_ancestors(con: apsw.Connection) -> set[int] | None:
    """Ids of the indexed HEAD's ancestors when the index also holds other branches (`index
    --all-branches`), whose commits must not count; None when every reachable commit is one.
    O(commits): one query and a walk over the parent links."""
    if get_meta(con, "all_branches") != "1":
        return None
    ids: dict[str, int] = {}
    parents: dict[str, list[str]] = {}
    for commit_id, sha, parent_shas in con.execute(
            "select id, sha, parents from commits where reachable = 1"):
        ids[sha] = commit_id
        parents[sha] = parent_shas.split()
    seen: set[str] = set()
    stack = [get_meta(con, "head") or ""]
    while stack:
        sha = stack.pop()
        if sha in ids and sha not in seen:
            seen.add(sha)
            stack.extend(parents[sha])
    return {ids[sha] for sha in seen}


def _commit(con: apsw.Connection, commit_id: int) -> CommitRef:
    row = con.execute(f"select {COMMIT_COLUMNS} from commits c where c.id = ?",
                      (commit_id,)).fetchone()
    return commit_ref(row)


def _unrecorded(con: apsw.Connection, change: _Change, path: str, line: int,
                current: int) -> LineOrigin:
    """A change recorded at file level only. A file created there came whole from that commit;
    otherwise the walk cannot map the line across it."""
    if change.status == "A":
        if change.added is not None and current > change.added:
            return _past_end(con, change, path, line, current)
        return LineOrigin(_commit(con, change.commit_id), change.path, current)
    why = change.skip_reason or "not diffed"
    return LineOrigin(None, change.path, current,
                      f"the file's diff in {change.sha[:10]} was not recorded ({why})")


def _past_end(con: apsw.Connection, creation: _Change, path: str, line: int,
              current: int) -> LineOrigin:
    """Line `line` maps below the end of the file as created. On a linear history that means it
    is past the end at HEAD; after merges the mapping itself may be what is off."""
    created = creation.added if creation.added is not None else 0
    merged = con.execute("select 1 from commits where is_merge = 1 and reachable = 1 and seq > ?"
                         " limit 1", (creation.seq,)).fetchone()
    if merged is not None:
        return LineOrigin(None, creation.path, current,
                          f"line {line} maps past the end of the file as created in "
                          f"{creation.sha[:10]}: it is past the end at HEAD, or merged branches "
                          "made the mapping inexact")
    # Past every hunk, a line's number only moved by the net growth of the walked commits.
    length = created + (line - current)
    raise CortexError(f"line {line} is past the end of {path} ({length} lines at the indexed HEAD)")


def map_buffer_line(head: bytes, buffer: bytes, line: int) -> int | None:
    """The number in `head` (the file at HEAD) of line `line` (1-based) of `buffer` (its edited
    version), or None when the buffer added or changed that line.

    Same zero-context conventions as the stored hunks. A last line that only gained or lost its
    final newline counts as changed, as in `git diff` and `git blame`."""
    count = _line_count(buffer)
    if line < 1 or line > count:
        raise CortexError(f"line {line} is outside the buffer (1..{count})")
    if head == buffer:
        return line
    if len(head) > MAX_BUFFER_BYTES or len(buffer) > MAX_BUFFER_BYTES:
        raise CortexError(f"buffer too large to map lines (over {MAX_BUFFER_BYTES} bytes)")
    # FORCE_TEXT: a stray NUL would otherwise make libgit2 call the buffers binary, with no hunks.
    patch = pygit2.Patch.create_from(head, buffer, flag=DiffOption.FORCE_TEXT, context_lines=0,
                                     interhunk_lines=0)
    hunks = [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]
    return _map_back(hunks, line)


def _line_count(data: bytes) -> int:
    """Lines as git counts them: a final line without a newline still counts."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
