"""One commit read from git into a self-contained record: metadata, file changes with their hunks,
and symbol changes — named by paths and qualified names, with no database ids, so that commits can
be read in worker processes and written by one writer.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import pygit2

from cortex_core.git.git_reads import blob_bytes, path_text
from cortex_core.config import IndexSettings
from cortex_core.lang.languages import language_for_path
from cortex_core.memory.code_words import changed_lines, merge_words, words_of
from cortex_core.git.merge_reader import MergeFile, find_renames, merge_symbols, read_merge
from cortex_core.index.messages import classify, split_message
from cortex_core.git.object_source import ObjectSource
from cortex_core.index.skip_rules import WAS, skip_by_content, skip_by_path
from cortex_core.lang.symbol_changes import FileSymbols, SymbolChange, match_commit
from cortex_core.lang.symbols import Symbol, SymbolParser
from cortex_core.text.sanitize import replace_surrogates

GITLINK_MODE = 0o160000  # a submodule entry: its id names a commit of another repository
# Reasons that forbid computing a patch: no line counts, nothing but the file-level record.
UNREADABLE = frozenset({"binary", "too large", "commit too large", "submodule", "missing object"})
# Reasons a file's old version was not read that its new version may not share: then its
# definitions are read against the last version that was (_readable_again), back at most
# READABLE_SEARCH first-parent commits.
READABLE_AGAIN = frozenset({"binary", "too large"})
READABLE_SEARCH = 1000
# Content of the blobs a reader keeps (CommitReader._remember): with 4 MB, 90% of the reads that
# a cache of any size would spare on requests' history.
BLOB_CACHE_BYTES = 4_000_000
# A merge whose diff to its first parent changes more files is a long branch brought in (or
# updated), not one pull request: its words would be noise, and reading them costs.
MAX_MERGE_FILES = 100

Hunk = tuple[int, int, int, int]


@dataclass
class FileRecord:
    path: str
    old_path: str | None  # set for renames and copies
    status: str           # git's status letter: A M D R C T
    added: int | None     # None when the file was not diffed (binary, too large...)
    deleted: int | None
    skip_reason: str | None
    hunks: list[Hunk] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # of its changed lines (code_words.py)


@dataclass
class CommitRecord:
    sha: str
    parents: list[str]
    author_name: str
    author_email: str
    author_time: int
    author_offset: int
    committer_time: int
    subject: str
    body: str
    kind: str
    files: list[FileRecord] = field(default_factory=list)
    symbols: list[SymbolChange] = field(default_factory=list)
    parses: int = 0  # blobs parsed to read this commit (the others came from the cache)
    merge_files: list[MergeFile] = field(default_factory=list)  # a merge's, for line blame
    missing: list[str] = field(default_factory=list)  # ids of the objects it could not read
    merge_words: list[str] = field(default_factory=list)  # a merge's: what it brought

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1

    @property
    def code_words(self) -> list[str]:
        """The words of its changed source lines, bounded over all its files (a merge: of
        what it brought to its first parent)."""
        return self.merge_words or merge_words(f.words for f in self.files)


class CommitReader:
    """Reads commits of one repository; keeps a symbol parser whose cache spans the commits read,
    so reading a file's versions in history order parses each blob once, mostly incrementally."""

    def __init__(self, repo: pygit2.Repository, settings: IndexSettings,
                 parser: SymbolParser | None = None, objects: ObjectSource | None = None,
                 roots: frozenset[str] = frozenset()):
        self.repo = repo
        self.settings = settings
        self.parser = parser or SymbolParser()
        self.objects = objects  # a partial clone's way to the objects libgit2 cannot read
        # Commits read as if they had no parent, adding every file of their tree: the boundary
        # of a recent window (ingest.py, recent first), read as a shallow clone's boundary is.
        self.roots = roots
        self.missing: set[str] = set()  # ids not read since the last `take_missing`
        self._blobs: OrderedDict[pygit2.Oid, pygit2.Blob] = OrderedDict()
        self._blob_bytes = 0

    def take_missing(self) -> list[str]:
        missing, self.missing = sorted(self.missing), set()
        return missing

    def read(self, commit: pygit2.Commit, diff: pygit2.Diff | None = None) -> CommitRecord:
        """The commit's record; `diff`: its diff_of, when the caller already has it."""
        record = self._read(commit, diff)
        record.missing = self.take_missing()
        return record

    def forget_blobs(self) -> None:
        """Drop the blobs kept for the next commits (read again on demand)."""
        self._blobs.clear()
        self._blob_bytes = 0

    def diff_of(self, commit: pygit2.Commit) -> pygit2.Diff | None:
        """The diff read() reads for a commit that is not a merge, or is one read as a root
        (None: a merge, or something it needs is missing)."""
        if len(commit.parent_ids) > 1 and str(commit.id) not in self.roots:
            return None
        return self._diff(commit)

    def largest_parse(self, diff: pygit2.Diff) -> int:
        """The most text whose syntax trees reading `diff` holds at once, in bytes: of one
        file, the larger side, or both when the parser keeps the old side's tree while it
        parses the new one. Only source code the reader may parse counts (within
        max_file_bytes, not skipped by its path). Those trees are most of what the commit
        takes (read_pool)."""
        largest = 0
        for delta in diff.deltas:
            sizes = [self._parsed_size(side) for side in (delta.old_file, delta.new_file)]
            both = sizes[0] and sizes[1] and self.parser.keeps_tree(sizes[0])
            largest = max(largest, sum(sizes) if both else max(sizes))
        return largest

    def _parsed_size(self, side: pygit2.DiffFile) -> int:
        """The size of one side of a delta if the reader may parse it, else 0."""
        path = path_text(side.raw_path)
        # A zero id: no such side (an added file's old one, a deleted file's new one).
        if (not side.id or language_for_path(path) is None
                or skip_by_path(path, self.settings) is not None):
            return 0
        # A tree diff leaves sizes at 0 until a blob is loaded; its header has the size.
        size = side.size or self._blob_size(side.id)
        return size if size <= self.settings.max_file_bytes else 0

    def _blob_size(self, oid: pygit2.Oid) -> int:
        try:
            return self.repo.odb.read_header(oid)[1]
        except (KeyError, ValueError, pygit2.GitError):   # missing (a partial clone): unknown
            return 0

    def _read(self, commit: pygit2.Commit, diff: pygit2.Diff | None = None) -> CommitRecord:
        parents = [] if str(commit.id) in self.roots else [str(p) for p in commit.parent_ids]
        subject, body = split_message(_message(commit), self.settings.drop_trailers)
        author = commit.author
        record = CommitRecord(str(commit.id), parents, text(author.raw_name),
                              text(author.raw_email), author.time, author.offset,
                              commit.commit_time, subject, body,
                              classify(subject, len(parents) > 1))
        if record.is_merge:
            # No file changes: a merge's changes are the merged commits'. Line blame still needs
            # to know which parent each file came from (merge_reader), and the definitions it
            # wrote itself (a conflict's resolution) are its own symbol changes.
            record.merge_files = read_merge(self, commit)
            record.symbols = merge_symbols(self, commit, record.merge_files)
            record.merge_words = self._merge_words(commit)
            return record
        diff = diff if diff is not None else self._diff(commit)
        if diff is None:
            return record  # its tree, or its parent, is not in the repository: no file changes
        find_renames(diff)
        parsed: list[FileSymbols] = []
        parses_before = self.parser.parse_count()
        for count, delta in enumerate(diff.deltas, 1):
            file_record, symbols = self._read_file(delta, count > self.settings.max_commit_files,
                                                   commit)
            record.files.append(file_record)
            if symbols is not None:
                parsed.append(symbols)
        record.symbols = match_commit(parsed)
        record.parses = self.parser.parse_count() - parses_before
        return record

    def _merge_words(self, commit: pygit2.Commit) -> list[str]:
        """The words of what a merge brought to its first parent (a pull request's changes):
        search finds the merge, which cites the pull request, by the code it merged."""
        diff = self._diff(commit)
        if diff is None or len(diff) > MAX_MERGE_FILES:   # a branch brought up to date, no PR
            return []
        groups = []
        for delta in diff.deltas:
            path = path_text(delta.new_file.raw_path if delta.status_char() != "D"
                        else delta.old_file.raw_path)
            if (language_for_path(path) is None or skip_by_path(path, self.settings) is not None
                    or max(delta.old_file.size, delta.new_file.size) > self.settings.max_file_bytes):
                continue
            blobs = self._blobs_at_hand(delta)
            if blobs is not None:
                patch = pygit2.Patch.create_from(*blobs, context_lines=0, interhunk_lines=0)
                groups.append(words_of(changed_lines(patch)))
        return merge_words(groups)

    def _blobs_at_hand(self, delta) -> tuple | None:
        """(old, new) text blobs of a delta (None for an added file's old side, a deleted one's
        new side), or None when one is not in the repository or is binary: a partial clone's
        missing blobs are neither fetched nor counted missing for words alone."""
        status = delta.status_char()
        old = self._get(delta.old_file.id) if status != "A" else None
        new = self._get(delta.new_file.id) if status != "D" else None
        for blob, needed in ((old, status != "A"), (new, status != "D")):
            if needed and (not isinstance(blob, pygit2.Blob) or blob.is_binary):
                return None
        return old, new

    def _diff(self, commit: pygit2.Commit) -> pygit2.Diff | None:
        """The commit's diff against its first parent; None when a commit or tree it needs
        cannot be read (a damaged repository), its id noted as missing."""
        parent_ids = [] if str(commit.id) in self.roots else commit.parent_ids
        try:
            parent = self.repo.get(parent_ids[0]) if parent_ids else None
        except (ValueError, pygit2.GitError):
            parent = None
        if parent_ids and not isinstance(parent, pygit2.Commit):
            self.missing.add(str(commit.parent_ids[0]))
            return None
        try:
            if parent is not None:
                return self.repo.diff(parent.tree, commit.tree, context_lines=0,
                                      interhunk_lines=0)
            return commit.tree.diff_to_tree(context_lines=0, interhunk_lines=0, swap=True)
        except pygit2.GitError:  # a tree, or a tree below one, is missing
            self.missing.add(self.missing_tree(commit, parent))
            return None

    def missing_tree(self, commit: pygit2.Commit, parent: pygit2.Commit | None) -> str:
        """The id of the root tree that cannot be read (the commit's own when the missing one
        is below the roots: which one is no matter to the count)."""
        for tree_id in ([parent.tree_id] if parent is not None else []) + [commit.tree_id]:
            if not isinstance(self._get(tree_id), pygit2.Tree):
                return str(tree_id)
        return str(commit.tree_id)

    def _read_file(self, delta, over_limit: bool, commit: pygit2.Commit | None = None
                   ) -> tuple[FileRecord, FileSymbols | None]:
        status = delta.status_char()
        old_path = path_text(delta.old_file.raw_path)
        new_path = path_text(delta.new_file.raw_path)
        path = old_path if status == "D" else new_path
        if over_limit:
            reason = "commit too large"
        elif GITLINK_MODE in (delta.old_file.mode, delta.new_file.mode):
            reason = "submodule"
        else:
            reason = skip_by_path(path, self.settings)
        by_path = reason
        # A submodule entry's id names a commit of another repository: no blob to read here (the
        # read would count it missing).
        gitlink = reason == "submodule"
        old_blob = self.blob(delta.old_file.id) if status != "A" and not gitlink else None
        new_blob = self.blob(delta.new_file.id) if status != "D" and not gitlink else None
        if reason is None and ((status != "A" and old_blob is None) or
                               (status != "D" and new_blob is None)):
            reason = "missing object"  # a shallow or damaged repository
        # Each blob's bytes are read once (git_reads.py), and not at all when the name already
        # rules the content out.
        old_data = new_data = b""
        if reason not in UNREADABLE:
            old_data, new_data, reason = self._content(reason, old_blob, new_blob)
        if reason in READABLE_AGAIN and by_path is None and status in "MRT" \
                and commit is not None and self._unreadable(new_blob) is None:
            return self._readable_again(delta, path, reason, commit)

        record = FileRecord(path, old_path if status in ("R", "C") else None, status, None, None,
                            reason)
        if reason in UNREADABLE:
            return record, None
        # From the blobs already loaded: indexing the diff (`diff[i]`) would inflate them again.
        patch = pygit2.Patch.create_from(old_blob, new_blob, context_lines=0, interhunk_lines=0)
        _, record.added, record.deleted = patch.line_stats
        # A whole file added or deleted diffs in linear time and its symbols are simply born or
        # gone: the limit is for edits, whose matching grows with the lines changed. Without
        # this, a big file's functions would have no birth, only later changes.
        if record.added + record.deleted > self.settings.max_diff_lines and status in "MRCT":
            record.skip_reason = reason or "diff too large"
        if record.skip_reason is not None:
            return record, None
        record.hunks = [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]
        if language_for_path(path) is not None:   # source code: documents have no identifiers
            record.words = words_of(changed_lines(patch))
        return record, self._file_symbols(record, record.hunks, old_path, new_path, old_blob,
                                          new_blob, old_data, new_data)

    def _unreadable(self, blob) -> str | None:
        """Why a blob's content is not read ("too large", "binary"), None when it is read."""
        if blob is None:
            return "missing object"
        if blob.size > self.settings.max_file_bytes:
            return "too large"
        return "binary" if blob.is_binary else None

    def _readable_again(self, delta, path: str, reason: str, commit: pygit2.Commit
                        ) -> tuple[FileRecord, FileSymbols | None]:
        """A file whose old version was not read (binary, too large) and whose new one is. Its
        diff is not recorded (there is no text to diff against: blame stops here, as before,
        with the reason "was binary" or "was too large"), but its definitions are read against
        the last version of the file that was read, found back along first parents and renames
        (at most READABLE_SEARCH commits): a definition that differs from that version changed
        in this commit, one it did not have is born here. Found nowhere, every definition is
        born here. Without this, a file that turned back to text had its definitions' births
        and changes lost."""
        status = delta.status_char()
        old_path = path_text(delta.old_file.raw_path)
        record = FileRecord(path, old_path if status in ("R", "C") else None, status, None, None,
                            WAS + reason)
        new_blob = self.blob(delta.new_file.id)
        new_data = blob_bytes(new_blob)
        if skip_by_content(new_data, self.settings) is not None:
            return record, None
        base, base_path = self._last_read_version(commit, old_path)
        patch = pygit2.Patch.create_from(base, new_blob, context_lines=0, interhunk_lines=0)
        _, added, deleted = patch.line_stats
        if base is not None and added + deleted > self.settings.max_diff_lines:
            return record, None
        hunks = [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]
        found = self._file_symbols(record, hunks, base_path, path, base, new_blob,
                                   blob_bytes(base) if base is not None else b"", new_data)
        if found is not None and base is not None:
            found.old_path = base_path   # renamed meanwhile: its definitions moved with it
        return record, found

    def _last_read_version(self, commit: pygit2.Commit, path: str
                           ) -> tuple[pygit2.Blob | None, str]:
        """The newest blob of `path` before `commit`, along first parents and renames, whose
        content is read (not binary, not too large), and its path then; None when there is none
        within READABLE_SEARCH commits or a commit or tree on the way cannot be read."""
        seen: set = set()
        current = commit
        for _ in range(READABLE_SEARCH):
            parent_ids = [] if str(current.id) in self.roots else current.parent_ids
            if not parent_ids:
                return None, path
            child, current = current, self._get(parent_ids[0])
            if not isinstance(current, pygit2.Commit):
                return None, path
            try:
                entry = current.tree[path]
            except (KeyError, ValueError, pygit2.GitError):
                # Not there: renamed while it could not be read, or created in `child`.
                renamed = self._renamed_from(current, child, path)
                if renamed is None:
                    return None, path
                path = renamed
                try:
                    entry = current.tree[path]
                except (KeyError, ValueError, pygit2.GitError):
                    return None, path
            if entry.id in seen:
                continue
            seen.add(entry.id)
            blob = self._get(entry.id)
            if not isinstance(blob, pygit2.Blob):
                return None, path
            if self._unreadable(blob) is None:
                return blob, path
        return None, path

    def _renamed_from(self, parent: pygit2.Commit, child: pygit2.Commit, path: str) -> str | None:
        """The path in `parent` that `child` renamed to `path`, None when it made it anew."""
        try:
            diff = self.repo.diff(parent.tree, child.tree)
        except pygit2.GitError:
            return None
        find_renames(diff)
        return next((path_text(d.old_file.raw_path) for d in diff.deltas
                     if d.status_char() == "R" and path_text(d.new_file.raw_path) == path), None)

    def _content(self, reason: str | None, old_blob, new_blob) -> tuple[bytes, bytes, str | None]:
        """(old bytes, new bytes, reason). A file is judged by its new content (its old one when
        deleted); binary or oversized content on either side bounds what follows, whatever the
        name says: no patch at all."""
        datas = []
        for blob in (old_blob, new_blob):
            if blob is None:
                datas.append(b"")
            elif blob.size > self.settings.max_file_bytes:
                return b"", b"", "too large"
            elif blob.is_binary:
                return b"", b"", "binary"
            else:
                datas.append(blob_bytes(blob))
        judged = datas[1] if new_blob is not None else datas[0]
        return datas[0], datas[1], reason or skip_by_content(judged, self.settings)

    def _file_symbols(self, record: FileRecord, hunks: list, old_path: str, new_path: str,
                      old_blob, new_blob, old_data: bytes, new_data: bytes) -> FileSymbols | None:
        old_lang = language_for_path(old_path) if old_blob is not None else None
        new_lang = language_for_path(new_path) if new_blob is not None else None
        if old_lang is None and new_lang is None:
            return None
        old_syms = self.parser.symbols(old_lang, str(old_blob.id), old_data) if old_lang else []
        base = (str(old_blob.id), hunks) if old_lang and old_lang == new_lang else None
        new_syms = (self.parser.symbols(new_lang, str(new_blob.id), new_data, base)
                    if new_lang else [])
        return FileSymbols(old_path=record.old_path or record.path, new_path=record.path,
                           old=old_syms, new=new_syms, hunks=hunks,
                           old_source=old_data if old_lang else b"",
                           new_source=new_data if new_lang else b"",
                           old_language=old_lang or "", new_language=new_lang or "")

    def head_file(self, path: str, blob_id: str) -> tuple[str | None, list[Symbol]]:
        """(reason recorded at file level only, symbols) of one file of the HEAD tree."""
        reason = skip_by_path(path, self.settings)
        if reason is not None:
            return reason, []
        blob = self.blob(pygit2.Oid(hex=blob_id))
        if blob is None:
            return "missing object", []
        if blob.size > self.settings.max_file_bytes:
            return "too large", []
        if blob.is_binary:
            return "binary", []
        language = language_for_path(path)
        if language is None:
            return None, []  # only the content checks above are worth a read
        data = blob_bytes(blob)
        reason = skip_by_content(data, self.settings)
        return reason, [] if reason else self.parser.symbols(language, blob_id, data)

    def blob(self, oid) -> pygit2.Blob | None:
        """The blob, None when neither libgit2 nor (in a partial clone) git can read it."""
        found = self._blobs.get(oid)
        if found is not None:
            self._blobs.move_to_end(oid)
            return found
        obj = self._get(oid)
        if obj is None and self.objects is not None and self.objects.fetch(str(oid)):
            obj = self._get(oid)   # git stored it: libgit2 rescans its packs on a miss
        if obj is None:
            self.missing.add(str(oid))
        if not isinstance(obj, pygit2.Blob):
            return None
        self._remember(oid, obj)
        return obj

    def _remember(self, oid, blob: pygit2.Blob) -> None:
        """Keep the blobs read last, up to BLOB_CACHE_BYTES of content: a file's new version is
        the old one of its next change, often a few commits later (requests: 48% of blob reads),
        and every read inflates the blob again, with its chain of deltas."""
        if blob.size > BLOB_CACHE_BYTES:
            return
        self._blobs[oid] = blob
        self._blob_bytes += blob.size
        while self._blob_bytes > BLOB_CACHE_BYTES:
            self._blob_bytes -= self._blobs.popitem(last=False)[1].size

    def _get(self, oid):
        try:
            return self.repo.get(oid)
        except (ValueError, pygit2.GitError):
            return None


def text(raw: bytes | str) -> str:
    """Repository text (names, paths, messages) is untrusted bytes: decode without failing."""
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")


def _message(commit: pygit2.Commit) -> str:
    """The message in the encoding its header names, else UTF-8; never failing. The header is
    untrusted: git accepts any name, Python knows some it should not use here (`undefined`
    raises, `idna` can, `unicode_escape` makes lone surrogates that SQLite cannot store)."""
    encoding = commit.message_encoding or "utf-8"
    try:
        text = commit.raw_message.decode(encoding, "replace")
    except (LookupError, UnicodeError, ValueError, TypeError):
        text = commit.raw_message.decode("utf-8", "replace")
    return replace_surrogates(text)
