"""What the working tree changes: its files, and the symbols its uncommitted diff touches.

The files are git's status (staged, unstaged and untracked, as workspace.read_workspace reads
them), plus those changed by commits made since the index was built (when HEAD descends from
the indexed HEAD; after checking out an older or another line, HEAD is the base). The symbols come from the
diff of each changed file between the indexed HEAD and the working tree, read the way the indexer
reads a commit: both sides parsed with the indexer's own extractor (live.buffer_symbols), the
zero-context hunks mapped to the innermost definitions they touch, then disappeared and appeared
symbols paired (symbol_changes.match_commit). A changed symbol is named by its identity at the
indexed HEAD, so the index's history of it applies; a new one has none yet.

Bounded, never failing: a deleted file's symbols are all changed, a new file's all new; a rename
shows as a deleted and a new file whose symbols match_commit pairs; binary, oversized, generated,
vendored and unparseable files, symbolic links, folders and files that cannot be read count as
changed files without symbols (with the reason); past MAX_FILES files or MAX_BYTES of text read,
the rest count as files only (`truncated`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from cortex_core.lang.change_kinds import NOT_SUBSTANTIVE
from cortex_core.config import IndexSettings
from cortex_core.git.git_reads import commit, head_commit, path_blob, path_text
from cortex_core.lang.languages import language_for_path
from cortex_core.lang.live import MAX_BYTES as LIVE_MAX_BYTES, buffer_symbols
from cortex_core.index.skip_rules import skip_by_content, skip_by_path
from cortex_core.lang.symbol_changes import FileSymbols, match_commit

MAX_FILES = 200            # changed files whose symbols are read
MAX_BYTES = 20_000_000     # text read for them, both sides
MAX_SYMBOLS = 2_000        # changed symbols kept
MAX_PATHS = 5_000          # changed paths kept (a vendored tree dropped in the working copy)
_REGULAR = (0o100644, 0o100755)


@dataclass(frozen=True)
class WorkingChanges:
    base: str | None                 # the commit compared with: the indexed HEAD when HEAD
                                     # descends from it, else HEAD
    files: list[str]                 # changed paths, the working tree's first
    symbols: list[tuple[str, str]]   # (path, qualified name at base) of the changed symbols
    new_symbols: list[tuple[str, str]] = field(default_factory=list)  # not at base
    skipped: list[str] = field(default_factory=list)   # "path (reason)": no symbols read
    truncated: bool = False
    # Commits HEAD has that the index has not read yet: their changes count as the working
    # tree's until `cortex index` reads them.
    unindexed_commits: int = 0


def _behind(repo, base, head) -> bool:
    """Whether `base` (the indexed HEAD) is HEAD or one of its ancestors."""
    import pygit2
    try:
        return base.id == head.id or repo.descendant_of(head.id, base.id)
    except (pygit2.GitError, KeyError, ValueError):
        return True     # a partial clone's missing commit: keep the index's view


def working_changes(con, repo_root: Path, settings: IndexSettings | None = None,
                    overlay: dict[str, bytes] | None = None) -> WorkingChanges:
    """The working tree's changed files and symbols against the indexed HEAD (see the module
    docstring). `overlay`: path -> text that replaces the file's (an editor's unsaved buffers).
    Empty when `repo_root` is no readable repository."""
    overlay = overlay or {}
    import pygit2
    from cortex_core.store.store import get_meta, loose_check_state
    from cortex_core.git.loose_objects import check_loose_again, hide, objects_dirs
    from cortex_core.git.workspace import read_workspace, with_renames
    settings = settings or IndexSettings()
    workspace = with_renames(read_workspace(repo_root), repo_root)
    paths = list(dict.fromkeys(workspace.changed + workspace.untracked))
    try:
        repo = pygit2.Repository(str(repo_root))
    except (pygit2.GitError, KeyError, ValueError):
        return WorkingChanges(None, paths[:MAX_PATHS], [], truncated=len(paths) > MAX_PATHS)
    # Commits since the index may have brought loose objects it has not checked (loose_objects).
    repo = hide(repo, check_loose_again(objects_dirs(repo), *loose_check_state(con)).damaged)
    base, head = commit(repo, get_meta(con, "head")), head_commit(repo)
    if base is None or (head is not None and not _behind(repo, base, head)):
        # The index is of another line (HEAD checked out back or elsewhere): what is yours is
        # what differs from HEAD, not the commits between the two.
        base = head
    unindexed = 0
    if base is not None and head is not None and base.id != head.id:
        # Committed since the index was built: not in its history either.
        try:
            unindexed = repo.ahead_behind(head.id, base.id)[0]
        except (pygit2.GitError, KeyError, ValueError):   # a shallow or partial clone's edge
            unindexed = 0
        try:
            diff = repo.diff(base.tree, head.tree)
            paths += [path_text(d.new_file.raw_path if d.status_char() != "D"
                                else d.old_file.raw_path) for d in diff.deltas]
        except pygit2.GitError:
            pass
        paths = list(dict.fromkeys(paths))
    for path, data in overlay.items():
        if path not in paths and path_blob(repo, base, path) != data:
            paths.append(path)
    truncated = len(paths) > MAX_PATHS
    paths = paths[:MAX_PATHS]
    files: list[FileSymbols] = []
    skipped: list[str] = []
    budget = MAX_BYTES
    for path in paths:
        if len(files) >= MAX_FILES or budget <= 0:
            truncated = True
            break
        read, reason = _file_symbols(repo, base, Path(repo_root), path, settings,
                                     overlay.get(path))
        if reason:
            skipped.append(f"{path} ({reason})")
        if read is not None:
            files.append(read)
            budget -= len(read.old_source) + len(read.new_source)
    changed: list[tuple[str, str]] = []
    new: list[tuple[str, str]] = []
    for change in match_commit(files):
        if change.change in NOT_SUBSTANTIVE or change.from_symbol is not None:
            continue   # a pairing's new side: its old identity has a change of its own
        key = (change.path, change.symbol.qualname)
        (new if change.change == "added" else changed).append(key)
    changed = list(dict.fromkeys(changed))
    known = set(changed)
    new = list(dict.fromkeys(k for k in new if k not in known))
    if len(changed) > MAX_SYMBOLS or len(new) > MAX_SYMBOLS:
        changed, new, truncated = changed[:MAX_SYMBOLS], new[:MAX_SYMBOLS], True
    # A staged rename's new path is its old one, which the index knows and which stands in the
    # list (as deleted): read for its symbols above, it is no file without history.
    moved = {new_path for new_path, old in workspace.renamed if old in paths}
    return WorkingChanges(str(base.id) if base is not None else None,
                          [p for p in paths if p not in moved], changed, new, skipped, truncated,
                          unindexed)


def related_to_working_tree(con, repo_root: Path, *, settings: IndexSettings | None = None,
                            overlay: dict[str, bytes] | None = None, **options):
    """What the working tree's changed files and symbols usually bring along and is not changed
    yet (coupling.related_to_set, with its options); the changes' bounds and skipped files said.
    A SetRelated whose `changed` and `unknown` are both empty when nothing is changed."""
    from cortex_core.query.coupling import related_to_set
    changes = working_changes(con, repo_root, settings, overlay)
    found = related_to_set(con, changes.files, symbols=changes.symbols, **options)
    return replace(found, unknown_symbols=list(found.unknown_symbols) + [
        f"{p}::{q}" for p, q in changes.new_symbols], skipped=changes.skipped,
        truncated=changes.truncated, base=changes.base,
        unindexed_commits=changes.unindexed_commits)


def _file_symbols(repo, base, root: Path, path: str, settings: IndexSettings,
                  text: bytes | None = None) -> tuple[FileSymbols | None, str | None]:
    """One changed file read as a commit's file is: (its two sides' symbols and hunks, or None;
    why its symbols were not read, if it was worth saying)."""
    import pygit2
    language = language_for_path(path)
    if language is None or path.endswith("/"):
        return None, None   # no symbols to read: a file of another language, or a new folder
    reason = skip_by_path(path, settings)
    if reason:
        return None, reason
    limit = min(settings.max_file_bytes, LIVE_MAX_BYTES)
    old = new = None
    if base is not None:
        try:
            entry = base.tree[path]
        except (KeyError, ValueError, pygit2.GitError):
            entry = None
        if entry is not None:
            if entry.filemode not in _REGULAR:
                return None, "not a regular file"
            blob = repo.get(entry.id)
            if not isinstance(blob, pygit2.Blob):
                return None, "missing object"
            if blob.size > limit:
                return None, "too large"
            old = blob.data
    if text is not None:
        new = text
    else:
        new, reason = _read_file(root / path, limit)
        if reason:
            return None, reason
    if new is not None and len(new) > limit:
        return None, "too large"
    if old is None and new is None:
        return None, None
    reason = skip_by_content(new if new is not None else old, settings)
    if reason is None and old is not None and b"\0" in old[:8000]:
        reason = "binary"
    if reason:
        return None, reason
    patch = pygit2.Patch.create_from(old, new, context_lines=0, interhunk_lines=0)
    _, added, deleted = patch.line_stats
    if old is not None and new is not None and added + deleted > settings.max_diff_lines:
        return None, "diff too large"
    old_symbols = buffer_symbols(path, old) if old is not None else []
    new_symbols = buffer_symbols(path, new) if new is not None else []
    if old_symbols is None or new_symbols is None:
        return None, "too large"
    hunks = [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]
    return FileSymbols(path, path, old_symbols, new_symbols, hunks, old or b"", new or b"",
                       language if old is not None else "",
                       language if new is not None else ""), None


def _read_file(full: Path, limit: int) -> tuple[bytes | None, str | None]:
    """(the working file's bytes, None when it is deleted; why it cannot be read)."""
    try:
        info = os.lstat(full)
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_size > limit:
            return None, "too large"
        with open(full, "rb") as f:
            return f.read(limit + 1), None
    except FileNotFoundError:
        return None, None   # deleted
    except (OSError, ValueError) as exc:
        return None, f"unreadable: {getattr(exc, 'strerror', None) or type(exc).__name__}"


def related_to_targets(con, specs, **options):
    """The same question for a set named by the caller (TargetSpecs: PATH, PATH::SYMBOL,
    PATH:LINE), as an agent that has not written its changes yet asks it: each target's file
    is changed, and its symbol when it names one. Names the index does not know count as new."""
    from cortex_core.query.coupling import related_to_set
    from cortex_core.errors import CortexError
    from cortex_core.query.targets import resolve
    paths, symbols = [], []
    for spec in specs:
        paths.append(spec.path)
        if spec.symbol is None and spec.line is None:
            continue
        try:
            target = resolve(con, spec)
        except CortexError:   # not indexed, or ambiguous: no history to read for it
            target = None
        if target is not None and target.qualname:
            symbols.append((target.path, target.qualname))
        elif spec.symbol:
            symbols.append((spec.path, spec.symbol))
    return related_to_set(con, paths, symbols=symbols, **options)
