"""Indexing: git history down to symbols, written to the store.

One pass over the commits not indexed yet, parents before children. Each commit is diffed against
its first parent with zero context and rename detection; the old and new blob of every changed file
in a supported language are parsed (each blob once) and the hunks are mapped to the innermost
symbols — deleted lines to the old blob's symbols, added lines to the new blob's. Batches commit in
their own transactions, so a killed run leaves a consistent store that the next run continues.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pygit2
from pygit2.enums import DiffFind, SortMode

from .config import Settings
from .errors import EmptyRepository, NotARepository
from .languages import language_for_path
from .messages import classify, split_message
from .skip_rules import skip_by_content, skip_by_path
from .store import get_meta, open_writer, remove_database, set_meta, writer_lock
from .symbol_changes import FileSymbols, SymbolChange, match_commit
from .symbols import SymbolParser

GITLINK_MODE = 0o160000  # a submodule entry: its id names a commit of another repository
BATCH_SECONDS = 1.0      # a batch transaction commits at least this often
# Reasons that forbid computing a patch: no line counts, nothing but the file-level record.
_UNREADABLE = frozenset({"binary", "too large", "commit too large", "submodule"})

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class IndexSummary:
    head: str
    new_commits: int
    total_commits: int
    marked_unreachable: int
    reachable_again: int
    file_changes: int
    symbol_changes: int
    skipped_file_changes: int
    blobs_parsed: int
    seconds: float
    rebuilt: bool


def open_repository(repo_root: Path) -> pygit2.Repository:
    try:
        repo = pygit2.Repository(str(repo_root))
    except pygit2.GitError:
        raise NotARepository(f"{repo_root} is not a git repository") from None
    if repo.is_bare:
        raise NotARepository(f"{repo_root} is a bare repository; Cortex indexes a working copy")
    if repo.head_is_unborn:
        raise EmptyRepository(f"{repo_root} has no commits yet; commit something, then index")
    return repo


def index_repository(repo_root: Path, db_path: Path, settings: Settings, *,
                     all_branches: bool | None = None, rebuild: bool = False,
                     wait_seconds: float = 10.0, progress: ProgressFn | None = None) -> IndexSummary:
    """Bring the store at `db_path` up to date with the repository. Incremental unless `rebuild`."""
    repo = open_repository(repo_root)
    started = time.monotonic()
    with writer_lock(db_path, wait_seconds):
        if rebuild:
            remove_database(db_path)
        con = open_writer(db_path)
        try:
            return _Indexer(repo, con, settings, progress).run(all_branches, started, rebuild)
        finally:
            con.close()


class _Indexer:
    def __init__(self, repo: pygit2.Repository, con, settings: Settings, progress: ProgressFn | None):
        self.repo = repo
        self.con = con
        self.settings = settings.index
        self.progress = progress
        self.parser = SymbolParser()
        self.file_ids: dict[str, int] = dict(con.execute("select path, id from files"))
        self.symbol_ids: dict[tuple[int, str], int] = {
            (f, q): i for i, f, q in con.execute("select id, file_id, qualname from symbols")}
        self.file_changes = 0
        self.symbol_changes = 0
        self.skipped = 0

    # -- the run -----------------------------------------------------------------------------

    def run(self, all_branches: bool | None, started: float, rebuilt: bool) -> IndexSummary:
        con = self.con
        if all_branches is None:
            all_branches = get_meta(con, "all_branches") == "1"
        tips = self._tips(all_branches)
        old_tips = [sha for sha in json.loads(get_meta(con, "tips", "[]")) if self._exists(sha)]
        known = {sha: (cid, bool(r)) for cid, sha, r in con.execute(
            "select id, sha, reachable from commits")}
        # No usable tips: an interrupted run, or tips garbage-collected after a rewrite.
        lost_tips = bool(known) and not old_tips

        walked = self._walk(tips, hide=old_tips)
        new = [c for c in walked if str(c.id) not in known]
        again = [known[str(c.id)][0] for c in walked
                 if str(c.id) in known and not known[str(c.id)][1]]
        if lost_tips:
            reachable = {str(c.id) for c in walked}
            gone = [cid for sha, (cid, r) in known.items() if r and sha not in reachable]
        else:
            gone = [known[str(c.id)][0] for c in self._walk(old_tips, hide=tips)
                    if str(c.id) in known and known[str(c.id)][1]]

        with con:
            con.executemany("update commits set reachable = 1 where id = ?", ((i,) for i in again))
            con.executemany("update commits set reachable = 0 where id = ?", ((i,) for i in gone))
            set_meta(con, "all_branches", "1" if all_branches else "0")
            # Forget the tips until this run completes: a run that dies half-way leaves commits
            # that no recorded tip accounts for, so the next run recomputes reachability fully.
            set_meta(con, "tips", "[]")

        self._ingest(new)
        head = self.repo.head.peel(pygit2.Commit)
        with con:
            self._snapshot_head(head)
            set_meta(con, "tips", json.dumps(tips))
            set_meta(con, "head", str(head.id))
            set_meta(con, "indexed_at", str(int(time.time())))
        total = con.execute("select count(*) from commits where reachable = 1").get
        return IndexSummary(
            head=str(head.id), new_commits=len(new), total_commits=total,
            marked_unreachable=len(gone), reachable_again=len(again),
            file_changes=self.file_changes, symbol_changes=self.symbol_changes,
            skipped_file_changes=self.skipped, blobs_parsed=self.parser.parse_count(),
            seconds=time.monotonic() - started, rebuilt=rebuilt)

    def _tips(self, all_branches: bool) -> list[str]:
        tips = [str(self.repo.head.peel(pygit2.Commit).id)]
        if all_branches:
            for name in self.repo.branches.local:
                target = self.repo.branches.local[name].peel(pygit2.Commit)
                if str(target.id) not in tips:
                    tips.append(str(target.id))
        return tips

    def _exists(self, sha: str) -> bool:
        try:
            return isinstance(self.repo.get(sha), pygit2.Commit)
        except (ValueError, pygit2.GitError):
            return False

    def _walk(self, tips: list[str], hide: list[str]) -> list[pygit2.Commit]:
        """Commits reachable from `tips` but not from `hide`, parents before children."""
        if not tips:
            return []
        walker = self.repo.walk(None, SortMode.TOPOLOGICAL | SortMode.TIME | SortMode.REVERSE)
        for sha in tips:
            walker.push(pygit2.Oid(hex=sha))
        for sha in hide:
            walker.hide(pygit2.Oid(hex=sha))
        return list(walker)

    def _ingest(self, commits: list[pygit2.Commit]) -> None:
        con = self.con
        seq = con.execute("select coalesce(max(seq), 0) from commits").get
        total, done, batch_start = len(commits), 0, time.monotonic()
        if self.progress:
            self.progress(0, total)
        while done < total:
            with con:
                while done < total:
                    seq += 1
                    self._ingest_commit(commits[done], seq)
                    done += 1
                    if self.progress:
                        self.progress(done, total)
                    if time.monotonic() - batch_start >= BATCH_SECONDS:
                        break
            batch_start = time.monotonic()

    # -- one commit --------------------------------------------------------------------------

    def _ingest_commit(self, commit: pygit2.Commit, seq: int) -> None:
        parents = [str(p) for p in commit.parent_ids]
        subject, body = split_message(_message(commit), self.settings.drop_trailers)
        is_merge = len(parents) > 1
        author = commit.author
        commit_id = self.con.execute(
            "insert into commits(sha, seq, parents, author_name, author_email, author_time,"
            " author_offset, committer_time, subject, body, kind, is_merge)"
            " values (?,?,?,?,?,?,?,?,?,?,?,?) returning id",
            (str(commit.id), seq, " ".join(parents), _text(author.raw_name),
             _text(author.raw_email), author.time, author.offset, commit.commit_time, subject, body,
             classify(subject, is_merge), int(is_merge))).get
        if is_merge:
            return  # merges contribute no hunks: their changes are already in the merged commits
        if parents:
            diff = self.repo.diff(commit.parents[0].tree, commit.tree, context_lines=0,
                                  interhunk_lines=0)
        else:
            diff = commit.tree.diff_to_tree(context_lines=0, interhunk_lines=0, swap=True)
        # rename_limit bounds the quadratic pairing of added and deleted files in huge commits.
        diff.find_similar(flags=DiffFind.FIND_RENAMES, rename_limit=1000)

        files: list[FileSymbols] = []
        added = deleted = count = 0
        for delta in diff.deltas:
            count += 1
            result = self._ingest_file(commit_id, delta, count > self.settings.max_commit_files)
            added += result[0] or 0
            deleted += result[1] or 0
            if result[2] is not None:
                files.append(result[2])
        self.con.execute("update commits set files_changed = ?, lines_added = ?, lines_deleted = ?"
                         " where id = ?", (count, added, deleted, commit_id))
        self._write_symbol_changes(commit_id, match_commit(files))

    def _ingest_file(self, commit_id: int, delta, over_limit: bool):
        status = delta.status_char()
        old_path = _text(delta.old_file.raw_path)
        new_path = _text(delta.new_file.raw_path)
        path = old_path if status == "D" else new_path
        file_id = self._file_id(path)
        old_file_id = self._file_id(old_path) if status in ("R", "C") else None

        if over_limit:
            reason = "commit too large"
        elif GITLINK_MODE in (delta.old_file.mode, delta.new_file.mode):
            reason = "submodule"
        else:
            reason = skip_by_path(path, self.settings)
        old_blob = self._blob(delta.old_file.id) if status != "A" else None
        new_blob = self._blob(delta.new_file.id) if status != "D" else None
        if reason not in _UNREADABLE:
            # The file is judged by its new content (its old one when deleted), but binary or
            # oversized content on either side bounds what follows: no patch at all.
            for blob in (new_blob, old_blob):
                if blob is None:
                    continue
                content_reason = ("binary" if blob.is_binary
                                  else skip_by_content(blob.data, self.settings))
                if content_reason in _UNREADABLE:
                    reason = content_reason
                    break
                if reason is None and (blob is new_blob or new_blob is None):
                    reason = content_reason

        added = deleted = None
        hunks: list[tuple[int, int, int, int]] = []
        if reason not in _UNREADABLE:
            # From the blobs already loaded: `diff[index]` would read and inflate them again.
            patch = pygit2.Patch.create_from(old_blob, new_blob, context_lines=0,
                                             interhunk_lines=0)
            _, added, deleted = patch.line_stats
            if added + deleted > self.settings.max_diff_lines:
                reason = reason or "diff too large"
            elif reason is None:
                hunks = [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]
        self.con.execute(
            "insert or replace into file_changes(commit_id, file_id, old_file_id, status, added,"
            " deleted, skip_reason) values (?,?,?,?,?,?,?)",
            (commit_id, file_id, old_file_id, status, added, deleted, reason))
        if hunks:
            self.con.executemany(
                "insert into hunks(commit_id, file_id, old_start, old_lines, new_start, new_lines)"
                " values (?,?,?,?,?,?)", ((commit_id, file_id, *h) for h in hunks))
        self.file_changes += 1
        if reason is not None:
            self.skipped += 1
            return added, deleted, None
        return added, deleted, self._file_symbols(file_id, old_file_id, old_path, new_path,
                                                  old_blob, new_blob, hunks)

    def _file_symbols(self, file_id, old_file_id, old_path, new_path, old_blob, new_blob,
                      hunks) -> FileSymbols | None:
        old_lang = language_for_path(old_path) if old_blob is not None else None
        new_lang = language_for_path(new_path) if new_blob is not None else None
        if old_lang is None and new_lang is None:
            return None
        old_data = old_blob.data if old_lang else b""
        new_data = new_blob.data if new_lang else b""
        old_syms = self.parser.symbols(old_lang, str(old_blob.id), old_data) if old_lang else []
        base = (str(old_blob.id), hunks) if old_lang and old_lang == new_lang else None
        new_syms = (self.parser.symbols(new_lang, str(new_blob.id), new_data, base)
                    if new_lang else [])
        return FileSymbols(old_file_id=old_file_id if old_file_id is not None else file_id,
                           new_file_id=file_id, old=old_syms, new=new_syms, hunks=hunks,
                           old_source=old_data, new_source=new_data)

    def _write_symbol_changes(self, commit_id: int, changes: list[SymbolChange]) -> None:
        rows = []
        for change in changes:
            symbol_id = self._symbol_id(change.file_id, change.symbol.qualname, change.symbol.name,
                                        change.symbol.kind)
            from_id = (self._symbol_id(change.from_file_id, change.from_symbol.qualname,
                                       change.from_symbol.name, change.from_symbol.kind)
                       if change.from_symbol is not None else None)
            rows.append((symbol_id, commit_id, change.change, change.added, change.deleted, from_id))
        self.con.executemany(
            "insert or replace into symbol_changes(symbol_id, commit_id, change, added, deleted,"
            " from_symbol_id) values (?,?,?,?,?,?)", rows)
        self.symbol_changes += len(rows)

    # -- HEAD --------------------------------------------------------------------------------

    def _snapshot_head(self, head: pygit2.Commit) -> None:
        """Record where every symbol of HEAD is. Only files whose blob changed since the last
        snapshot are re-read."""
        con = self.con
        previous = dict(con.execute("select file_id, blob from head_files"))
        seen: set[int] = set()
        for path, blob_id in _tree_blobs(head.tree):
            file_id = self._file_id(path)
            seen.add(file_id)
            if previous.get(file_id) == blob_id:
                continue
            self._snapshot_file(file_id, path, blob_id)
        for file_id in previous.keys() - seen:
            self._forget_head_file(file_id)
            con.execute("delete from head_files where file_id = ?", (file_id,))

    def _snapshot_file(self, file_id: int, path: str, blob_id: str) -> None:
        self._forget_head_file(file_id)
        reason = skip_by_path(path, self.settings)
        language = language_for_path(path)
        symbols = []
        if language and reason is None:
            blob = self._blob(pygit2.Oid(hex=blob_id))
            if blob is None:
                reason = "missing"
            else:
                reason = "binary" if blob.is_binary else skip_by_content(blob.data, self.settings)
                if reason is None:
                    symbols = self.parser.symbols(language, blob_id, blob.data)
        self.con.execute("insert or replace into head_files(file_id, blob, skip_reason)"
                         " values (?,?,?)", (file_id, blob_id, reason))
        self.con.execute("update files set language = ? where id = ?", (language, file_id))
        spans = []
        for sym in symbols:
            symbol_id = self._symbol_id(file_id, sym.qualname, sym.name, sym.kind)
            spans.append((symbol_id, sym.start_line, sym.end_line))
        self.con.executemany("update symbols set alive = 1 where id = ?",
                             ((s,) for s, _, _ in spans))
        self.con.executemany("insert into symbol_spans(symbol_id, start_line, end_line)"
                             " values (?,?,?)", spans)

    def _forget_head_file(self, file_id: int) -> None:
        self.con.execute("delete from symbol_spans where symbol_id in"
                         " (select id from symbols where file_id = ?)", (file_id,))
        self.con.execute("update symbols set alive = 0 where file_id = ?", (file_id,))

    # -- identities --------------------------------------------------------------------------

    def _file_id(self, path: str) -> int:
        file_id = self.file_ids.get(path)
        if file_id is None:
            file_id = self.con.execute("insert into files(path, language) values (?, ?)"
                                       " returning id", (path, language_for_path(path))).get
            self.file_ids[path] = file_id
        return file_id

    def _symbol_id(self, file_id: int, qualname: str, name: str, kind: str) -> int:
        key = (file_id, qualname)
        symbol_id = self.symbol_ids.get(key)
        if symbol_id is None:
            symbol_id = self.con.execute(
                "insert into symbols(file_id, qualname, name, kind) values (?,?,?,?) returning id",
                (file_id, qualname, name, kind)).get
            self.symbol_ids[key] = symbol_id
        return symbol_id

    def _blob(self, oid) -> pygit2.Blob | None:
        try:
            obj = self.repo.get(oid)
        except (ValueError, pygit2.GitError):
            return None
        return obj if isinstance(obj, pygit2.Blob) else None


def _tree_blobs(tree: pygit2.Tree, prefix: str = ""):
    """(path, blob id) of every file in a tree, recursively; submodules and links to trees skipped."""
    stack = [(tree, prefix)]
    while stack:
        current, base = stack.pop()
        for entry in current:
            name = base + _text(entry.raw_name)
            if entry.type_str == "tree":
                stack.append((entry, name + "/"))
            elif entry.type_str == "blob":
                yield name, str(entry.id)


def _text(raw: bytes | str) -> str:
    """Repository text (names, paths, messages) is untrusted bytes: decode without failing."""
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")


def _message(commit: pygit2.Commit) -> str:
    encoding = commit.message_encoding or "utf-8"
    try:
        return commit.raw_message.decode(encoding, "replace")
    except LookupError:  # an encoding name git accepted but Python does not know
        return commit.raw_message.decode("utf-8", "replace")

