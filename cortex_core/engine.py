"""The engine's facade: the one object a front end holds for a repository's memory.

`Engine` is a repository (its root), where its store is (`store_location`), its settings
resolved in one place (defaults < `.cortex/config.toml` < environment < the front end's
overrides, config.py), read connections (one per thread, reopened when the file is replaced) and
the embedding model (loaded once). `Engine.snapshot()` is a consistent read: one read
transaction of the store, so that several questions (a history, the reasons of its commits, the
notes on its symbol) see the same index even while an indexer commits. `Snapshot` has one method
per read operation; `Engine` has the writes (notes, indexing). cortex_core/operations.py lists
the operations with their typed requests; `Engine.run(request)` answers any of them.

Errors are typed (cortex_core.errors): the store's driver errors leave the engine as StoreError
subclasses (busy, damaged, full) with a `Hint` of the action that fixes them, which each front end
phrases in its own words.

The language server keeps one Engine per repository of its workspace, the MCP server one per
repository it is asked about, the command line one per command. Nothing heavy is imported here:
each operation imports its modules when it runs (`cortex history` must start fast,
tests/test_start.py), and the settings are read only by the operations that use them.
"""

from __future__ import annotations

import os
import threading
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from cortex_core.errors import (Ambiguous, CortexError, DamagedStore, Hint, NotFound,
                                StoreBusy, StoreError, StoreIOError)
from cortex_core.operations import BY_REQUEST

if TYPE_CHECKING:
    from cortex_core.config import Settings
    from cortex_core.query.targets import TargetSpec
    from cortex_core.store.store_location import Location


def _column_weights() -> dict[str, tuple[float, ...]]:
    """The lexical tables' column weights of a default search (memory/search.py)."""
    from cortex_core.memory.search import BM25_WEIGHTS, CODE_WEIGHTS
    return {"items_fts": BM25_WEIGHTS, "items_code": CODE_WEIGHTS}


@contextmanager
def typed_errors() -> Iterator[None]:
    """The store driver's errors as the engine's typed errors, each with the action that fixes
    it. Anything else that escapes is a bug."""
    import apsw
    try:
        yield
    except apsw.BusyError:
        raise StoreBusy("the index is busy (an indexer is writing)", Hint("retry")) from None
    except (apsw.CorruptError, apsw.NotADBError) as exc:   # damage past the opening checks
        raise DamagedStore(f"the index is damaged ({exc})", Hint("rebuild")) from None
    except (apsw.FullError, apsw.IOError) as exc:   # a full disk, a size limit, a failing disk
        raise StoreIOError(f"cannot read or write the index ({exc})", Hint("free_space")) from None
    except apsw.ReadOnlyError as exc:   # a read-only file or mount: reads work, writes do not
        raise StoreError(f"the index cannot be written: {exc}") from None
    except apsw.Error as exc:
        raise StoreError(f"the index could not be read: {exc}") from None


class Engine:
    """One repository's memory; see the module's docstring. Thread-safe: every method may be
    called from any thread (each thread reads through its own connection)."""

    def __init__(self, root: Path, location: Location | None = None, *,
                 overrides: dict[str, object] | None = None,
                 source: str = "the front end's settings", lenient_config: bool = False,
                 decide: bool = True, keep_vectors: bool = False,
                 workspace_seconds: float = 0.0):
        """`location`: where the store is (None: decided now, as every front end does; with
        `decide` False, `<root>/.cortex/cortex.db` until `relocate` decides).
        `lenient_config`: a `.cortex/config.toml` that cannot be used gives the defaults, and
        `config_problem` says why (an editor's hover must not fail for a typo); otherwise it is
        an error, as it is for the command line.
        `keep_vectors`: keep the index's embeddings in memory for vector search, and the
        lexical indexes' postings for BM25 (for a server that searches many times;
        memory/vector_matrix.py, memory/lexical_matrix.py).
        `workspace_seconds`: a search may reuse the working copy's status read that recently
        (git/workspace.py, WorkspaceCache; `forget_workspace` drops it); 0 reads it each time."""
        self.root = root
        self.keep_vectors = keep_vectors
        self._workspace = None
        self._renames: tuple[float, tuple[tuple[str, str], ...]] | None = None
        self._renames_seconds = workspace_seconds
        if workspace_seconds > 0:
            from cortex_core.git.workspace import WorkspaceCache
            self._workspace = WorkspaceCache(workspace_seconds)
        if location is None:
            from cortex_core.store.store_location import Location, local_db_path, store_location
            location = store_location(root) if decide else Location(local_db_path(root))
        self.location = location
        self.lenient_config = lenient_config
        self.config_problem: str | None = None
        self._overrides = tuple(sorted((overrides or {}).items()))
        self._source = source
        self._config: tuple | None = None        # (file stamp, overrides, Settings)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list = []
        self._embedder: tuple | None = None      # (model key, embedder)
        self._vectors = None                     # memory.vector_matrix.VectorMatrix, if kept
        self._vector_keys: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lexicon: tuple | None = None       # (version key, LexicalMatrix or None)
        self._lexicon_loader: threading.Thread | None = None
        self._shipped: tuple[str | None] | None = None
        self._owner_checked = None   # the store file (_identity) check_owner last passed

    @classmethod
    def open(cls, repo: str | os.PathLike | None = None, *, db: str | os.PathLike | None = None,
             overrides: dict[str, object] | None = None,
             source: str = "the front end's settings", for_writing: bool = False,
             lenient_config: bool = False, keep_vectors: bool = False,
             workspace_seconds: float = 0.0) -> Engine:
        """The repository around `repo` (default: the current directory) and its store (`db`,
        else `<repo>/.cortex/cortex.db` or the per-user fallback). `for_writing`: for the
        indexer, which cannot use a store it cannot write. Raises NotARepository (Hint
        "repository") outside a repository."""
        from cortex_core.git.repo_paths import find_repo_root
        from cortex_core.store.store_location import store_location
        root = find_repo_root(repo)
        return cls(root, store_location(root, db, for_writing=for_writing), overrides=overrides,
                   source=source, lenient_config=lenient_config, keep_vectors=keep_vectors,
                   workspace_seconds=workspace_seconds)

    @staticmethod
    def find_root(start: str | os.PathLike | None = None) -> Path:
        """The working-tree root of the repository around `start` (default: the current
        directory); NotARepository (Hint "repository") when there is none."""
        from cortex_core.git.repo_paths import find_repo_root
        return find_repo_root(start)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close every read connection this engine opened (in any thread)."""
        with self._lock:
            connections, self._connections = self._connections, []
        for con in connections:
            try:
                con.close()
            except Exception:   # a connection to a deleted file: nothing left to release
                pass

    # -- where, and with which settings ------------------------------------------------------

    @property
    def db(self) -> Path:
        return self.location.path

    def relocate(self) -> Location:
        """Decide again where the store is (an index run may have made the per-user one)."""
        if not self.location.explicit:
            from cortex_core.store.store_location import store_location
            self.location = store_location(self.root)
        return self.location

    def shipped(self) -> str | None:
        """Why the repository's default store must not be used (it tracks files under .cortex/:
        an index it ships could hold invented history); None when fine. Asked once."""
        if self._shipped is None:
            from cortex_core.store.store import default_db_path, shipped_store
            refused = shipped_store(self.root) if self.db == default_db_path(self.root) else None
            self._shipped = (refused,)
        return self._shipped[0]

    def set_overrides(self, overrides: dict[str, object], source: str | None = None) -> None:
        """The front end's settings, by the engine's names (`{"search.half_life_days": 30}`),
        put over the repository's from now on."""
        self._overrides = tuple(sorted(overrides.items()))
        self._source = source or self._source

    def settings(self) -> Settings:
        """The settings every operation uses: defaults < `.cortex/config.toml` < environment <
        overrides. The file is read again when it changes."""
        from cortex_core.config import CONFIG_FILE, Settings, override, repository_settings
        stamp = (_stamp(os.lstat, self.root / CONFIG_FILE),   # the link itself, if it is one
                 _stamp(os.stat, self.root / CONFIG_FILE))    # and what it points to
        cached = self._config
        if cached is not None and cached[0] == stamp and cached[1] == self._overrides:
            return cached[2]
        try:
            settings, problem = repository_settings(self.root), None
        except CortexError as exc:
            if not self.lenient_config:
                raise
            settings, problem = Settings(), str(exc)
        settings = override(settings, dict(self._overrides), self._source)
        self.config_problem = problem
        self._config = (stamp, self._overrides, settings)
        return settings

    def target(self, text: str, cwd: Path | None = None) -> TargetSpec:
        """`PATH`, `PATH::SYMBOL` or `PATH:LINE` with its path as the index names it: relative to
        the root, from a path relative to `cwd` (default: the current directory), to the root,
        or absolute."""
        from cortex_core.git.repo_paths import repo_relative
        from cortex_core.query.targets import TargetSpec, parse_target
        spec = parse_target(text)
        working = repo_relative(spec.path, self.root, cwd=cwd)
        try:
            con = self.reader()
            path = self.indexed_path(con, working)
        except CortexError:   # no index yet: the query says so
            path = working
        else:
            self._not_new(con, path)
            if spec.symbol is not None:
                self._not_new_symbol(con, TargetSpec(path, spec.symbol), working)
        spec = TargetSpec(path, spec.symbol, spec.line)
        return self._at_head(spec, working) if spec.line is not None else spec

    def _not_new_symbol(self, con, spec: TargetSpec, working: str) -> None:
        """Raises NotFound, saying why, for a symbol the indexed HEAD does not have but the
        working tree's file defines (written since the last commit or index run): the lookup
        alone said "no symbol" and guessed at other names (a hostile test on junegunn/fzf)."""
        from cortex_core.query.targets import find, quoted, resolve
        try:
            resolve(con, spec)
            return
        except Ambiguous:   # indexed, under several names: the query lists them
            return
        except CortexError:   # not found (the query says why, unless this can)
            pass
        from cortex_core.query.targets import file_level_reason
        from cortex_core.store.store import history_until
        found = find(con, spec.path)
        if found is None or file_level_reason(con, found.file_id) is not None \
                or history_until(con) is not None:
            return   # at file level only, or the first run short of HEAD: the query says so
        from cortex_core.lang.live import buffer_symbols
        try:
            source = (self.root / working).read_bytes()
        except OSError:
            return
        name = spec.symbol or ""

        def defines(text: bytes) -> bool:
            return any(name in (s.qualname, s.name) for s in buffer_symbols(working, text) or [])
        if not defines(source):
            return
        from cortex_core.git.git_reads import indexed_head_blob
        head = indexed_head_blob(con, self.root, spec.path)
        if head is not None and defines(head):
            return   # not new: the index keeps the file at file level, or another reason
        if self._at_git_head(working, name):
            raise NotFound(f"no symbol {quoted(name)} in {spec.path} in the index: HEAD has it, "
                           "committed since the last index run (an index run reads it)")
        raise NotFound(f"no symbol {quoted(name)} in {spec.path}: the working tree's version "
                       "of the file defines it, but no commit has it yet, so it has no history "
                       "(it will once committed and indexed)")

    def _at_git_head(self, path: str, name: str) -> bool:
        """Whether the repository's HEAD (not the indexed one) defines `name` in `path`."""
        from cortex_core.git.git_reads import head_blob_at
        from cortex_core.lang.live import buffer_symbols
        data = head_blob_at(self.root, path)
        return data is not None and any(
            name in (s.qualname, s.name) for s in buffer_symbols(path, data) or [])

    def _not_new(self, con, path: str) -> None:
        """Raises NotFound, saying why, for a file of the working tree that no indexed commit
        holds: the lookup's own miss suggested other files ("did you mean: src/Writer.php") for
        a file right there on disk."""
        from cortex_core.query.targets import find, quoted
        if find(con, path) is not None or not (self.root / path).is_file():
            return
        from cortex_core.store.store import history_until
        if history_until(con) is not None:
            return   # the first run has not reached HEAD: the lookup says so
        raise NotFound(f"no file {quoted(path)} in the index: it is in the working tree, but no "
                       "indexed commit holds it (a new file has history once committed and "
                       "indexed)")

    def indexed_path(self, con, path: str) -> str:
        """A working copy's path as the index knows it: itself, or, for a path the index does
        not know, the path a staged rename (`git mv`, not yet committed) moved to it, so that
        its history reads on. git's status is read only then (a server's kept one, if any)."""
        from cortex_core.query.targets import find
        if find(con, path) is not None:
            return path
        old = dict(self._staged_renames()).get(path)
        return old if old is not None and find(con, old) is not None else path

    def _staged_renames(self) -> tuple[tuple[str, str], ...]:
        """git's staged renames, kept as long as a server keeps its status (workspace_seconds:
        a hover on a new file asks each time)."""
        import time
        from cortex_core.git.workspace import staged_renames
        kept = self._renames
        if kept is not None and time.monotonic() - kept[0] < self._renames_seconds:
            return kept[1]
        found = staged_renames(self.root)
        self._renames = (time.monotonic(), found)
        return found

    def _at_head(self, spec: TargetSpec, working: str) -> TargetSpec:
        """`PATH:LINE` as a user reads it, in the working tree, numbered as at the indexed HEAD,
        where the store's answers are: 40 lines added above a function move it 40 lines down
        in the file, not in the index. A line of a changed file is first read in the working
        tree's definitions (_working_symbol); else a line the working tree added or changed is
        taken where its change sits at HEAD. A file as at HEAD costs one hash of it; a file that is not a regular one (a link, a device) or
        is over 4 MB is not read, and its lines are taken as given. `working`: the file's path
        in the working tree (another one after a staged rename)."""
        from cortex_core.store.store import head_blob_id
        try:
            blob = head_blob_id(self.reader(), spec.path)
            data = _regular_file(self.root / working) if blob else None
        except (CortexError, OSError):   # no index yet, no such file: the query says so
            return spec
        if data is None or _git_object_id(data, len(blob)) == blob:
            return spec
        from cortex_core.git.git_reads import read_blob_at
        from cortex_core.query.blame import buffer_hunks, map_line
        from cortex_core.query.targets import TargetSpec
        head = read_blob_at(self.root, blob)
        count = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        if head is None or not 1 <= spec.line <= count:
            return spec   # past the file's end: as given, and the answer says what it found
        try:
            hunks = buffer_hunks(head, data)
        except CortexError:   # too large to compare: as given
            return spec
        named = self._working_symbol(spec, working, data, hunks)
        if named is not None:
            return named
        line = map_line(hunks, spec.line, near=True)
        return TargetSpec(spec.path, spec.symbol, line) if line is not None else spec

    def _working_symbol(self, spec: TargetSpec, working: str, data: bytes,
                        hunks: list) -> TargetSpec | None:
        """`PATH:LINE` of a file the working tree changed, as the definition that encloses the
        line there (the language server's hover reads it so): a line inside a function
        inserted above another is that function's, not the other's. The innermost enclosing
        definition the index knows answers. One it does not know was edited (renamed, its
        signature changed: most of its lines are HEAD's or changed in place) and is read at
        HEAD's numbering (None); or it is new, mostly inserted, and the nearest enclosing
        definition the index knows answers (a new helper nested in a known function: that
        function), else NotFound (it has no history yet). None too where no definition encloses
        the line or the file is not read for symbols."""
        from cortex_core.errors import NotFound
        from cortex_core.lang.live import buffer_symbols, innermost
        from cortex_core.query.targets import TargetSpec, file_level_reason, find
        con = self.reader()
        indexed = find(con, spec.path)
        if indexed is None or file_level_reason(con, indexed.file_id) is not None:
            return None
        symbols = buffer_symbols(working, data)
        if not symbols:
            return None
        start = 0
        for _ in range(spec.line - 1):
            start = data.find(b"\n", start) + 1
        end = data.find(b"\n", start)
        text = data[start:end if end >= 0 else len(data)]
        sym = innermost(symbols, start + len(text) - len(text.lstrip()), spec.line)
        chain = []
        while sym is not None:
            chain.append(sym)
            sym = symbols[sym.parent] if 0 <= sym.parent < len(symbols) else None
        if not chain:
            return None
        if find(con, spec.path, chain[0].qualname) is not None:
            return TargetSpec(spec.path, chain[0].qualname)
        lines = range(chain[0].start_line, chain[0].end_line + 1)
        if 2 * sum(_net_added(hunks, n) for n in lines) <= len(lines):
            # Mostly HEAD's lines, or lines changed in place: an edit of a definition there (a
            # rename, a new signature), read at HEAD's numbering, not its enclosing class's.
            return None
        for outer in chain[1:]:   # new, inside a definition the index knows: that one's line
            if find(con, spec.path, outer.qualname) is not None:
                return TargetSpec(spec.path, outer.qualname)
        raise NotFound(f"line {spec.line} of {working} is in {chain[0].qualname}, which is not "
                       "in the index: it was added since the indexed HEAD (no commit has "
                       f"changed it yet); ask for {working} for the file's answer")

    def relative(self, path: str, cwd: Path | None = None) -> str:
        """A path as the index names it (see `target`)."""
        from cortex_core.git.repo_paths import repo_relative
        return repo_relative(path, self.root, cwd=cwd)

    # -- reading -----------------------------------------------------------------------------

    def reader(self):
        """This thread's read connection; reopened when the file was replaced (a rebuild, or
        deleted and indexed again). Raises NoIndex (Hint "index") when there is no store yet,
        and the store's typed errors when it cannot be read."""
        from cortex_core.store.store import open_reader
        path = self.db
        identity = _identity(path)
        kept = getattr(self._local, "con", None)
        if kept is not None and identity is not None and kept[1] == identity:
            return kept[0]
        self._drop()
        with typed_errors():
            con = open_reader(path)
            try:
                self._check_owner(con, identity)
            except BaseException:
                con.close()
                raise
        self._local.con = (con, identity)
        with self._lock:
            self._connections.append(con)
        return con

    def _check_owner(self, con, identity) -> None:
        """Refuse a store that holds another repository's history (git/ownership.py). Free
        for a store indexed from this repository, or from before stores named theirs; for
        another, looked up once per store file (threads and reopened connections of that file
        ask no more)."""
        if identity is not None and identity == self._owner_checked:
            return
        from cortex_core.git.ownership import check_owner
        from cortex_core.store.store import REPOSITORY_META, get_meta, sample_commits
        recorded = get_meta(con, REPOSITORY_META)
        if recorded is None:   # written before stores named their repository: trusted, as
            return             # then, until an index run (which looks) names it
        check_owner(self.root, self.db, recorded, lambda: sample_commits(con))
        self._owner_checked = identity

    def _drop(self) -> None:
        kept = getattr(self._local, "con", None)
        if kept is None:
            return
        self._local.con = None
        with self._lock:
            if kept[0] in self._connections:
                self._connections.remove(kept[0])
        try:
            kept[0].close()
        except Exception:   # closing a connection to a deleted file must not fail a request
            pass

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """A consistent read: every question asked of the snapshot sees the same index (one read
        transaction), whatever an indexer commits meanwhile. Reentrant in a thread."""
        con = self.reader()
        with typed_errors():
            if not con.getautocommit():      # inside a snapshot already: the same one
                yield Snapshot(self, con)
                return
            con.execute("begin")
            try:
                yield Snapshot(self, con)
            finally:
                if not con.getautocommit():
                    con.execute("rollback")   # a snapshot never writes

    def run(self, request) -> Any:
        """Answer any operation's request (cortex_core/operations.py)."""
        op = BY_REQUEST.get(type(request))
        if op is None:
            raise TypeError(f"not an operation's request: {type(request).__name__}")
        kwargs = request._asdict()
        if op.writes:
            return getattr(self, op.method)(**kwargs)
        with self.snapshot() as snap:
            return getattr(snap, op.method)(**kwargs)

    def forget_workspace(self) -> None:
        """The working copy changed (a file saved, git's files moved): the next search reads
        its status again, even within `workspace_seconds`."""
        self._renames = None
        if self._workspace is not None:
            self._workspace.forget()

    def embedder(self, con):
        """The model that wrote the index's vectors, loaded once (None: semantic search off)."""
        from cortex_core.memory.embeddings import load_embedder
        from cortex_core.store.store import get_meta
        key = (get_meta(con, "embed_model"), get_meta(con, "embed_dim"))
        with self._lock:
            if self._embedder is None or self._embedder[0] != key:
                self._embedder = (key, load_embedder(con, one_shot=not self.keep_vectors))
            return self._embedder[1]

    def vectors(self, con):
        """The snapshot's embeddings as a matrix in memory, with `keep_vectors` (loaded again
        when the index's vectors change); None otherwise, or when too large to keep."""
        if not self.keep_vectors:
            return None
        from cortex_core.memory.vector_matrix import load, version_key
        from cortex_core.store.store import store_stamp
        stamp = store_stamp(con)      # a count(*) of the vectors is not read at every search
        with self._lock:
            known = self._vector_keys.get(con)
        if known is not None and known[0] == stamp:
            key = known[1]
        else:
            key = version_key(con)
            with self._lock:
                self._vector_keys[con] = (stamp, key)
        with self._lock:
            kept = self._vectors
            if kept is None or kept[0] != key:
                kept = self._vectors = (key, load(con))
            return kept[1]

    def lexicon(self, con, wait: bool = False):
        """The lexical indexes' postings in memory (memory/lexical_matrix.py), with
        `keep_vectors`, when they are the snapshot's own; None otherwise, and FTS5 answers the
        same. Postings missing or out of date are loaded again in a thread of their own (about
        a second on 11k commits), so that no search waits for them; `wait`: load them now, in
        `con`'s transaction (for tests and benchmarks)."""
        if not self.keep_vectors:
            return None
        import apsw

        from cortex_core.memory.lexical_matrix import load, version_key
        try:
            key = (_identity(self.db), version_key(con))
        except apsw.Error:        # no such tables: FTS5 answers (or says what is missing)
            return None
        with self._lock:
            kept = self._lexicon
            if kept is not None and kept[0] == key:
                return kept[1]
            if not wait:
                self._start_lexicon_loader()
                return None
        with typed_errors():
            matrix = load(con, weights=_column_weights())
        with self._lock:
            self._lexicon = (key, matrix)
        return matrix

    def preload_lexicon(self) -> None:
        """With `keep_vectors`, bring the lexical postings up to date in the background now
        (a server, after an index run), so that the next search finds them ready."""
        if self.keep_vectors:
            with self._lock:
                self._start_lexicon_loader()

    def _start_lexicon_loader(self) -> None:     # under self._lock
        if self._lexicon_loader is None:
            self._lexicon_loader = threading.Thread(target=self._load_lexicon,
                                                    name="cortex-lexicon", daemon=True)
            self._lexicon_loader.start()

    def _load_lexicon(self) -> None:
        """The background half of `lexicon`: one read transaction on a connection of its own.
        A load that fails or is refused (too large) is remembered for that version, so that
        searches do not start it again until the index changes."""
        from cortex_core.memory.lexical_matrix import load, version_key
        from cortex_core.store.store import open_reader
        key = matrix = None
        try:
            # The file too: another store (replaced, rebuilt) could repeat the records' bytes.
            identity = _identity(self.db)
            con = open_reader(self.db)
            try:
                con.execute("begin")
                key = (identity, version_key(con))
                with self._lock:
                    kept = self._lexicon
                if kept is not None and kept[0] == key:
                    matrix = kept[1]      # already this version's
                else:
                    matrix = load(con, weights=_column_weights())
            finally:
                con.close()
        except Exception:   # noqa: BLE001 - FTS5 answers instead; nothing to tell the user
            matrix = None
        finally:
            with self._lock:
                if key is not None:
                    self._lexicon = (key, matrix)
                self._lexicon_loader = None

    # -- the repository ----------------------------------------------------------------------

    def head(self):
        """HEAD of the working copy (git_reads.Head), or None when it cannot be read."""
        from cortex_core.git.git_reads import read_head
        return read_head(self.root)

    def web_base(self) -> str | None:
        """The web page of the `origin` remote's commits, on a known host only."""
        from cortex_core.git.remotes import web_base
        return web_base(self.root)

    def git_author(self) -> str | None:
        """git's user name in this repository (the default author of a note)."""
        from cortex_core.memory.notes import git_author
        return git_author(self.root)

    def token_counter(self, encoding: str | None = None):
        """Tokens counted as an agent's model counts them (default: the settings' encoding)."""
        from cortex_core.features.token_count import counter
        return counter(encoding or self.settings().packs.encoding)

    @staticmethod
    def buffer_symbols(path: str, data: bytes):
        """The symbols of a buffer being edited, named as the index names them (None: its
        language is not supported, or it is too large)."""
        from cortex_core.lang.live import buffer_symbols
        return buffer_symbols(path, data)

    @staticmethod
    def innermost(symbols, byte_offset: int, line: int):
        from cortex_core.lang.live import innermost
        return innermost(symbols, byte_offset, line)

    # -- writing -----------------------------------------------------------------------------

    @contextmanager
    def note_writer(self) -> Iterator[Any]:
        """A write connection for notes. It never creates or migrates the store (the indexer's,
        under its lock)."""
        from cortex_core.store.store import open_note_writer
        with typed_errors():
            con = open_note_writer(self.db)
            try:
                yield con
            finally:
                con.close()

    def add_note(self, target: str | None, text: str, author: str | None = None,
                 valid_from: int | None = None):
        from cortex_core.memory.notes import add_note
        with self.note_writer() as con:
            return add_note(con, self.root, target, text, author=author, valid_from=valid_from)

    def supersede_note(self, note_id: int, text: str, author: str | None = None):
        from cortex_core.memory.notes import supersede_note
        with self.note_writer() as con:
            return supersede_note(con, self.root, note_id, text, author=author)

    def import_notes(self, data) -> int:
        from cortex_core.memory.notes import import_notes
        from cortex_core.store.store import immediate
        with self.note_writer() as con, immediate(con):
            return import_notes(con, data)

    def index(self, all_branches: bool | None = None, rebuild: bool = False,
              wait_seconds: float = 10.0, jobs: int | None = None, model: str | None = None,
              coalesce: bool = False, progress=None, on_wait=None, recent_first: str = "no"):
        """Index the commits not indexed yet (ingest.index_repository); `progress(done, total,
        phase)` is called as it goes. `recent_first`: "yes" or "auto" for a first run to index a
        recent window first (answers come from it within a minute), then the whole history.
        Open the engine `for_writing`."""
        from cortex_core.index.ingest import index_repository
        with typed_errors():
            return index_repository(self.root, self.db, self.settings(),
                                    all_branches=all_branches, rebuild=rebuild,
                                    wait_seconds=wait_seconds, jobs=jobs, progress=progress,
                                    model=model, coalesce=coalesce, on_wait=on_wait,
                                    recent_first=recent_first)

    def carry_seed_notes(self) -> int | None:
        """After the first run in the per-user folder: the notes of the store it could not
        write, copied over (None: there was none)."""
        if self.location.seed is None:
            return None
        from cortex_core.store.salvage import carry_notes
        with typed_errors():
            return carry_notes(self.location.seed, self.db)

    def pull_model(self, name: str | None = None):
        """Download an embedding model (network); (its name, its folder, its dimensions)."""
        from cortex_core.memory.embeddings import choose_model, download_model, load_model
        name = name or choose_model(None, self.settings().memory.model or None).name
        if not name.strip() or name.strip().lower() == "none":
            raise CortexError("give a model-hub id (such as minishlab/potion-base-8M) or a folder")
        path = download_model(name)
        return name, path, load_model(name).dim


def load_indexer() -> None:
    """Import what an index run needs, before there is one to run: a spare indexer waits with
    them loaded (cortex_cli/spare.py), so that a run handed to it starts at once."""
    from cortex_core.index import ingest, structure   # noqa: F401
    from cortex_core.lang import structure_extract, symbols   # noqa: F401


class Snapshot:
    """One consistent read of a repository's index: one method per read operation. A parameter
    left at None takes the engine's resolved setting."""

    def __init__(self, engine: Engine, con):
        self.engine = engine
        self.con = con

    @property
    def root(self) -> Path:
        return self.engine.root

    def _settings(self) -> Settings:
        return self.engine.settings()

    def _clock(self, clock: str | None) -> str:
        return clock or self._settings().time.clock

    # -- the operations ----------------------------------------------------------------------

    def history(self, target: TargetSpec, limit: int | None = None, substantive: bool = False):
        from cortex_core.query.history import history
        return history(self.con, target, limit=limit, substantive=substantive)

    def hotspots(self, top_k: int = 10, since_days: float | None = None, path: str | None = None,
                 half_life_days: float | None = None, clock: str | None = None):
        from cortex_core.query.hotspots import hotspots
        settings = self._settings()
        return hotspots(self.con, half_life_days=half_life_days or settings.hotspots.half_life_days,
                        since_days=since_days, top_k=top_k, clock=clock or settings.time.clock,
                        path_prefix=path)

    def _coupling(self, min_support: int | None, half_life_days: float | None) -> dict:
        options = self._settings().coupling.options()
        if min_support is not None:
            options["min_support"] = min_support
        if half_life_days is not None:
            options["half_life_days"] = half_life_days
        return options

    def related(self, target: TargetSpec, top_k: int = 10, min_support: int | None = None,
                half_life_days: float | None = None):
        from cortex_core.query.blast import fused_related
        return fused_related(self.con, target, top_k=top_k,
                             **self._coupling(min_support, half_life_days))

    def changes_related(self, changed: tuple[TargetSpec, ...] = (),
                        overlay: dict[str, bytes] | None = None, top_k: int = 10,
                        min_support: int | None = None, half_life_days: float | None = None):
        from cortex_core.query.working_changes import related_to_targets, related_to_working_tree
        options = self._coupling(min_support, half_life_days)
        if changed:
            return related_to_targets(self.con, list(changed), top_k=top_k, **options)
        return related_to_working_tree(self.con, self.root, settings=self._settings().index,
                                       overlay=overlay, top_k=top_k, **options)

    def blast(self, target: TargetSpec, depth: int = 2, min_confidence: float | None = None,
              half_life_days: float | None = None, clock: str | None = None):
        from cortex_core.query.blast import MIN_CONFIDENCE, blast
        settings = self._settings()
        return blast(self.con, target, depth=depth,
                     half_life_days=half_life_days or settings.hotspots.half_life_days,
                     min_confidence=MIN_CONFIDENCE if min_confidence is None else min_confidence,
                     clock=clock or settings.time.clock, coupling=settings.coupling)

    def callers(self, target: TargetSpec):
        from cortex_core.query.blast import callers
        return callers(self.con, target)

    def callees(self, target: TargetSpec):
        from cortex_core.query.blast import callees
        return callees(self.con, target)

    def search(self, query: str, top_k: int = 10, kinds: tuple[str, ...] = (),
               since: str | int | None = None, path: str | None = None, at: str | None = None,
               mode: str = "hybrid", priors: bool = True, context: bool = True,
               workspace: bool = True, dirty: tuple[str, ...] = (), clock: str | None = None):
        """`note` of the result says why vectors were not used, when they were asked for. With
        `workspace`, git reads the working copy while the index is searched."""
        from contextlib import nullcontext
        from dataclasses import replace

        from cortex_core.git.workspace import PendingWorkspace
        from cortex_core.memory.search import (SearchOptions, build_focus, search,
                                               with_workspace)
        settings = self._settings()
        clock = clock or settings.time.clock
        options = SearchOptions(
            top_k=top_k, kinds=tuple(kinds), since=self._since(since, clock), clock=clock,
            path=path, mode=mode, priors=priors, context=context,
            half_life_days=settings.search.half_life_days,
            focus=build_focus(self.con, at))    # a target that is not there fails here, first
        embedder = self.engine.embedder(self.con) if mode != "lexical" else None
        why = None
        if mode != "lexical" and embedder is None:
            from cortex_core.memory.embeddings import semantic_state
            why = semantic_state(self.con)[1]
            if mode == "vector":
                raise CortexError(why.removesuffix("; lexical search only"), Hint("model"))
        vectors = self.engine.vectors(self.con) if embedder is not None else None
        cache = self.engine._workspace
        with (nullcontext() if not (workspace and context) else cache.pending(self.root)
              if cache is not None else PendingWorkspace(self.root)) as pending:

            def focus():
                tree = pending.result()
                if dirty:   # unsaved edits count as changed: the context lifts what they touch
                    tree = replace(tree, modified=tuple(dict.fromkeys(tree.modified + dirty)))
                return with_workspace(self.con, options.focus, tree)

            result = search(self.con, query, options, embedder=embedder, vectors=vectors,
                            lexicon=self.engine.lexicon(self.con) if mode != "vector" else None,
                            focus=focus if pending is not None else None,
                            cache=self.engine.keep_vectors)
        if why:   # the store's own reason, in place of search's generic one; other notes stay
            from cortex_core.memory.search import NO_MODEL
            note = result.note or NO_MODEL
            result = replace(result, note=note.replace(NO_MODEL, why) if NO_MODEL in note
                             else f"{why}; {note}")
        return result

    def _since(self, since: str | int | None, clock: str) -> int | None:
        """A date or a number of days back (text, counted on `clock`), or epoch seconds."""
        if since is None or isinstance(since, int):
            return since
        if not since.strip():
            return None
        from cortex_core.clock import clock as read_clock
        from cortex_core.dates import since as since_epoch
        try:
            return since_epoch(since, read_clock(self.con, clock).now)
        except CortexError as exc:
            raise CortexError(f"since: {exc}") from None

    def _spec_fix(self, cwd: Path | None):
        if cwd is None:
            return None
        from cortex_core.git.repo_paths import repo_relative
        from cortex_core.query.targets import TargetSpec
        root = self.root
        return lambda spec: TargetSpec(repo_relative(spec.path, root, cwd=cwd), spec.symbol,
                                       spec.line)

    def context_pack(self, query: str | None = None, at: str | None = None, budget: int = 2000,
                     fmt: str = "markdown", encoding: str | None = None,
                     clock: str | None = None, cwd: Path | None = None):
        from cortex_core.features.context_pack import build_pack
        settings = self._settings()
        return build_pack(self.con, self.root, query=query, at=at, budget=budget, fmt=fmt,
                          embedder=self.engine.embedder(self.con), spec_fix=self._spec_fix(cwd),
                          half_life_days=settings.search.half_life_days,
                          encoding=encoding or settings.packs.encoding,
                          clock=clock or settings.time.clock, settings=settings)

    def briefing(self, at: str, purpose: str, budget: int = 2000):
        from cortex_core.features.briefing import briefing
        from cortex_core.features.symbol_info import HeatSettings
        settings = self._settings()
        heat = HeatSettings(half_life_days=settings.hotspots.half_life_days,
                            clock=settings.time.clock)
        return briefing(self.con, self.root, at, purpose, budget=budget, heat=heat,
                        embedder=self.engine.embedder(self.con),
                        encoding=settings.packs.encoding, settings=settings)

    def what(self, top_k: int = 5, clock: str | None = None):
        from cortex_core.features.what import what
        settings = self._settings()
        return what(self.con, self.root, top_k=top_k,
                    half_life_days=settings.hotspots.half_life_days,
                    clock=clock or settings.time.clock)

    def status(self):
        from dataclasses import replace
        from cortex_core.query.status import status
        location = self.engine.location
        found = status(self.con, location.path, None if location.explicit else location.reason)
        head = self.engine.head()
        return replace(found, working_head=head.commit if head is not None else None)

    def related_commits(self, target: str, top_k: int = 10, cwd: Path | None = None):
        from cortex_core.query.related_commits import related_commits
        from cortex_core.git.git_reads import revision_sha
        return related_commits(self.con, target, embedder=self.engine.embedder(self.con),
                               top_k=top_k, relative_to=self._spec_fix(cwd),
                               revision=lambda text: revision_sha(self.engine.root, text))

    def areas(self, top_k: int | None = None):
        from cortex_core.index.areas import areas
        return areas(self.con, top_k)

    def notes(self, target: str | None = None, include_closed: bool = False):
        from cortex_core.memory.notes import list_notes
        return list_notes(self.con, self.root, target, include_closed=include_closed)

    def export_notes(self) -> dict:
        from cortex_core.memory.notes import export_notes
        return export_notes(self.con)

    # -- what the operations' answers are made of -------------------------------------------

    def reasons(self, commits) -> dict:
        """The "why" of each commit (CommitRef), by sha, in one query."""
        from cortex_core.query.history import reasons
        return reasons(self.con, list(commits))

    def live_notes(self, path: str, qualname: str | None = None):
        from cortex_core.memory.notes import live_notes_for
        return live_notes_for(self.con, self.root, path, qualname)

    def indexed_head(self) -> str | None:
        """The commit the index was last brought up to date with."""
        from cortex_core.store.store import get_meta
        return get_meta(self.con, "head")

    def clock(self, clock: str | None = None):
        """The "now" windows count back from, on `clock` (default: the settings')."""
        from cortex_core.clock import clock as read_clock
        return read_clock(self.con, self._clock(clock))

    # -- an editor's questions (the language server's hovers and lenses) --------------------

    def find(self, path: str, qualname: str | None = None):
        """The indexed file or symbol, or None."""
        from cortex_core.query.targets import find
        return find(self.con, path, qualname)

    def indexed_path(self, path: str) -> str:
        """A working copy's path as the index knows it (Engine.indexed_path: staged renames)."""
        return self.engine.indexed_path(self.con, path)

    def resolve(self, target: TargetSpec):
        from cortex_core.query.targets import resolve
        return resolve(self.con, target)

    def file_level_only(self, path: str) -> str | None:
        """Why a file at the indexed HEAD has no symbols (binary, too large...), if so."""
        from cortex_core.query.files import head_skip_reason
        return head_skip_reason(self.con, path)

    def heat(self, threshold: int, window_days: float):
        """The hotspot settings of an editor: its threshold and window, the engine's half-life
        and clock."""
        from cortex_core.features.symbol_info import HeatSettings
        settings = self._settings()
        return HeatSettings(threshold, window_days, settings.hotspots.half_life_days,
                            settings.time.clock)

    def symbol_card(self, path: str, qualname: str | None, limit: int, heat):
        from cortex_core.features.symbol_info import symbol_card
        return symbol_card(self.con, self.root, path, qualname, limit=limit, heat=heat,
                           coupling=self._settings().coupling)

    def file_heat(self, path: str, heat, *, now: float | None = None,
                  qualname: str | None = None, only_hot: bool = False):
        from cortex_core.features.symbol_info import file_heat
        return file_heat(self.con, path, heat, now=now, qualname=qualname, only_hot=only_hot)

    def history_from(self) -> int | None:
        """How far back the index's history reaches while it holds a recent window only (the
        older commits being indexed): the date it starts from; None when it holds all of it."""
        from cortex_core.store.store import history_from
        return history_from(self.con)

    def shallow_from(self) -> int | None:
        """The date of a shallow clone's oldest commit (store.shallow_from); None when full."""
        from cortex_core.store.store import shallow_from
        return shallow_from(self.con)

    def history_until(self) -> int | None:
        """How far forward the index's history reaches while its first run has not reached
        HEAD (stopped, or still running): the date of its newest commit; None once a run
        has completed."""
        from cortex_core.store.store import history_until
        return history_until(self.con)

    def dependents(self, target) -> int | None:
        from cortex_core.query.blast import dependents_of
        return dependents_of(self.con, target)

    def line_origin(self, path: str, buffer: bytes, line: int):
        """The commit that last changed a line of a buffer (blame, through the version graph)."""
        from cortex_core.features.symbol_info import line_origin
        return line_origin(self.con, self.root, path, buffer, line)


MAPPED_FILE_BYTES = 4_000_000   # the largest file _at_head reads (blame.MAX_BUFFER_BYTES)


def _net_added(hunks: list, line: int) -> bool:
    """Whether the working tree's line `line` is one a zero-context hunk adds beyond the lines
    it replaces (an insertion), not one changed in place (a renamed `def`, a new signature)."""
    for _old_start, old_lines, new_start, new_lines in hunks:
        if new_start <= line < new_start + new_lines:
            return line - new_start >= old_lines
    return False


def _regular_file(path: Path) -> bytes | None:
    """The bytes of `path` if it is a regular file of at most MAPPED_FILE_BYTES, not followed
    through a link (a repository can commit one to /dev/zero, a FIFO, or a file outside it);
    else None."""
    import stat
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAPPED_FILE_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAPPED_FILE_BYTES + 1)
        return data if len(data) <= MAPPED_FILE_BYTES else None
    finally:
        os.close(fd)


def _git_object_id(data: bytes, length: int) -> str:
    """The id git gives `data` as a blob: SHA-1, or SHA-256 for ids of 64 digits."""
    import hashlib
    digest = hashlib.sha256 if length == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_dev)


def _stamp(stat, path: Path) -> tuple | None:
    """What changes when a file is rewritten: ctime too, as a copy that keeps the old mtime
    (`cp -p`, `rsync -t`) still sets it."""
    try:
        st = stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
