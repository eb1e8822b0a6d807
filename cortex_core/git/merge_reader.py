"""What a merge did to each file, as line blame needs it (see versions.py).

git blame, at a merge, looks for each file's version in every parent, in order: the first parent
whose version is identical takes the whole file; when none is, every line unchanged against a
parent's version goes to the first such parent, and the lines changed against all of them are
the merge's own. So a merge is read as: the files its result differs in from the first parent
(the diff a merge's first-parent history shows, with renames), and for each of them either the
first parent whose version is identical (`via`, no diff needed: by far the common case, the
merged branch's work), or, when the merge changed the file against every parent (both sides
edited it, or an evil merge), the zero-context diff against each parent's version.

A file's version in a parent is the file at the same path, or, where the parent has no such
path, the file that the diff from that parent renames to it (git blame's own rule).

Bounds: rows for the files that differ from the first parent, without diffs (a tree diff and a
tree lookup per other parent); diffs only for files changed against every parent, and for at
most `max_commit_files` of them per merge ("commit too large" for the rest), each under the same
rules as a commit's diffs (binary, too large, diff too large, generated, vendored...: recorded
without hunks, which blame cannot cross and says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pygit2
from pygit2.enums import DiffFind

from cortex_core.git.git_reads import blob_bytes, path_text
from cortex_core.index.skip_rules import skip_by_path

if TYPE_CHECKING:
    from cortex_core.git.commit_reader import CommitReader
    from cortex_core.lang.symbol_changes import SymbolChange

GITLINK_MODE = 0o160000

Hunk = tuple[int, int, int, int]


@dataclass
class MergeEdge:
    parent: int              # index in the merge's parents
    old_path: str            # the file's path in that parent
    skip_reason: str | None  # why the hunks were not recorded
    hunks: list[Hunk] = field(default_factory=list)


@dataclass
class MergeFile:
    path: str                # at the merge (for a deletion: in the first parent)
    old_path: str | None     # renamed from, against the first parent
    status: str              # against the first parent: A M D R T
    via: int | None          # the first parent whose version is identical
    via_path: str | None     # the file's path in that parent
    lines: int | None = None  # the merge's line count, when it changed the file against all
    edges: list[MergeEdge] = field(default_factory=list)


def read_merge(reader: CommitReader, commit: pygit2.Commit) -> list[MergeFile]:
    parents = _parents(reader.repo, commit)
    if parents[0] is None:
        reader.missing.add(str(commit.parent_ids[0]))
        return []
    try:
        diff = reader.repo.diff(parents[0].tree, commit.tree)
    except pygit2.GitError:  # a tree is missing (a damaged repository)
        reader.missing.add(reader.missing_tree(commit, parents[0]))
        return []
    find_renames(diff)
    origins = _Origins(reader.repo, commit, parents)
    out: list[MergeFile] = []
    changed_against_all = 0
    for delta in diff.deltas:
        if GITLINK_MODE in (delta.old_file.mode, delta.new_file.mode):
            continue   # a submodule: no lines
        status = delta.status_char()
        old_path, path = path_text(delta.old_file.raw_path), path_text(delta.new_file.raw_path)
        if status == "D":
            out.append(MergeFile(old_path, None, "D", None, None))
            continue
        first = (old_path, delta.old_file.id) if status != "A" else None
        found = [first] + [origins.find(i, path) for i in range(1, len(parents))]
        via = next((i for i, o in enumerate(found) if o is not None and o[1] == delta.new_file.id),
                   None)
        if via == 0 and found[0][0] == path:
            continue   # only the mode changed: the same lines
        entry = MergeFile(path, old_path if status == "R" else None, status, via,
                          found[via][0] if via is not None else None)
        if via is None:
            changed_against_all += 1
            _diff_each_parent(reader, entry, delta.new_file.id, found,
                              changed_against_all > reader.settings.max_commit_files)
        out.append(entry)
    return out


def merge_symbols(reader: CommitReader, commit: pygit2.Commit,
                  files: list[MergeFile]) -> list[SymbolChange]:
    """The definitions a merge wrote itself (symbol_changes.merge_changes): in the files it
    changed against every parent, the lines in none of the parents' versions. A file with an
    edge whose diff was not recorded (binary, too large...) is left out: its lines' origin is
    not known."""
    from cortex_core.lang.languages import language_for_path
    from cortex_core.lang.line_ranges import added_ranges, intersect_ranges
    from cortex_core.lang.symbol_changes import merge_changes
    out: list[SymbolChange] = []
    for entry in files:
        language = language_for_path(entry.path)
        if entry.via is not None or not entry.edges or language is None or \
                any(edge.skip_reason is not None for edge in entry.edges):
            continue
        own = intersect_ranges([added_ranges(edge.hunks) for edge in entry.edges])
        if not own:
            continue   # every line is some parent's: both sides' work, put together
        new = _blob_at(reader, commit, entry.path)
        parents = [blob for edge in entry.edges if (blob := _blob_at(
            reader, reader._get(commit.parent_ids[edge.parent]), edge.old_path)) is not None]
        if new is None or len(parents) < len(entry.edges):
            continue
        new_data = blob_bytes(new)
        versions = []
        for blob in parents:
            data = blob_bytes(blob)
            versions.append((reader.parser.symbols(language, str(blob.id), data), data))
        out += merge_changes(entry.path, reader.parser.symbols(language, str(new.id), new_data),
                             new_data, language, versions, own)
    return out


def _blob_at(reader: CommitReader, commit, path: str) -> pygit2.Blob | None:
    """The blob of `path` in `commit`, None when either cannot be read."""
    if not isinstance(commit, pygit2.Commit):
        return None
    try:
        oid = commit.tree[path].id
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return reader.blob(oid)


def find_renames(diff: pygit2.Diff) -> None:
    """Rename detection, which compares the contents of added and deleted files. A blob that
    cannot be read (a partial clone offline, a damaged repository) stops it: pair files by
    identical ids only, then not at all, rather than lose the commit."""
    # rename_limit bounds the quadratic pairing of added and deleted files in huge commits.
    for flags in (DiffFind.FIND_RENAMES,
                  DiffFind.FIND_RENAMES | DiffFind.FIND_EXACT_MATCH_ONLY):
        try:
            diff.find_similar(flags=flags, rename_limit=1000)
            return
        except pygit2.GitError:
            continue


def _parents(repo: pygit2.Repository, commit: pygit2.Commit) -> list[pygit2.Commit | None]:
    """The parents, None for one missing from the repository (a shallow or damaged clone)."""
    out = []
    for oid in commit.parent_ids:
        try:
            parent = repo.get(oid)
        except (ValueError, pygit2.GitError):
            parent = None
        out.append(parent if isinstance(parent, pygit2.Commit) else None)
    return out


class _Origins:
    """Where a file of the merge is in each other parent: the same path, else the file that the
    diff from that parent renames to it. The rename diff is made only when needed (it can be
    large: against a branch's base, the whole main line's work), once per parent."""

    def __init__(self, repo: pygit2.Repository, commit: pygit2.Commit,
                 parents: list[pygit2.Commit | None]):
        self.repo, self.commit, self.parents = repo, commit, parents
        self.renames: dict[int, dict[str, tuple[str, pygit2.Oid]]] = {}

    def find(self, index: int, path: str) -> tuple[str, pygit2.Oid] | None:
        parent = self.parents[index]
        if parent is None:
            return None
        try:
            entry = parent.tree[path]
        except KeyError:
            entry = None
        if entry is not None:
            return (path, entry.id) if entry.type_str == "blob" else None
        if index not in self.renames:
            try:
                diff = self.repo.diff(parent.tree, self.commit.tree)
            except pygit2.GitError:  # a tree is missing: no renames known from that parent
                self.renames[index] = {}
                return None
            find_renames(diff)
            self.renames[index] = {path_text(d.new_file.raw_path): (path_text(d.old_file.raw_path),
                                                                 d.old_file.id)
                                   for d in diff.deltas if d.status_char() == "R"}
        return self.renames[index].get(path)


def _diff_each_parent(reader: CommitReader, entry: MergeFile, new_id: pygit2.Oid,
                      found: list[tuple[str, pygit2.Oid] | None], over_limit: bool) -> None:
    """The diffs of a file the merge changed against every parent, one per parent that has it.
    A parent whose version equals an earlier parent's gets that one's diff, not a second one:
    git blame gives the lines to the earlier parent first, so blame never takes its edge, but
    git log follows every parent of such a merge, and the commits that reach the merge only
    through this one are in the file's history (a change and its cherry-pick, merged)."""
    new_blob = reader.blob(new_id)
    if new_blob is not None and not new_blob.is_binary and \
            new_blob.size <= reader.settings.max_file_bytes:
        entry.lines = _line_count(blob_bytes(new_blob))
    seen: dict[pygit2.Oid, MergeEdge] = {}
    for index, origin in enumerate(found):
        if origin is None:
            continue
        edge = MergeEdge(index, origin[0], None)
        same = seen.get(origin[1])
        if same is not None:
            edge.skip_reason, edge.hunks = same.skip_reason, list(same.hunks)
        else:
            seen[origin[1]] = edge
            edge.skip_reason, edge.hunks = _hunks(reader, entry.path, reader.blob(origin[1]),
                                                  new_blob, over_limit)
        entry.edges.append(edge)


def _hunks(reader: CommitReader, path: str, old_blob, new_blob,
           over_limit: bool) -> tuple[str | None, list[Hunk]]:
    """(skip reason, zero-context hunks), under the rules of a commit's file diffs."""
    if over_limit:
        return "commit too large", []
    if old_blob is None or new_blob is None:
        return "missing object", []
    reason = skip_by_path(path, reader.settings)
    if reason is not None:
        return reason, []
    old_data, new_data, reason = reader._content(None, old_blob, new_blob)
    if reason is not None:
        return reason, []
    patch = pygit2.Patch.create_from(old_blob, new_blob, context_lines=0, interhunk_lines=0)
    _, added, deleted = patch.line_stats
    if added + deleted > reader.settings.max_diff_lines:
        return "diff too large", []
    return None, [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
