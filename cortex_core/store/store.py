"""The store: one SQLite file per repository, opened through APSW with sqlite-vec loaded.

WAL mode lets one writer (the indexer) and many readers (CLI, language server, agents) work at once.
Writers additionally hold an OS file lock beside the database for a whole indexing run, so a second
indexer waits a bounded time and then says clearly that another one is running; readers never take it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from cortex_core.errors import (DamagedStore, Hint, IndexerBusy, IndexQueued, NewerSchema,
                                NoIndex, OlderSchema, StoreBusy, StoreError)
from cortex_core.store.schema import BACKFILLS, MIGRATIONS
from cortex_core.store.turns import SUFFIXES, IndexerTurns, note_turn

if TYPE_CHECKING:   # annotations only: typing's full import is not needed to open a store
    from collections.abc import Callable, Iterable, Iterator

SCHEMA_VERSION = len(MIGRATIONS)


def default_db_path(repo_root: Path) -> Path:
    """`<repo>/.cortex/cortex.db`; where the store really is: store_location.store_location."""
    return repo_root / ".cortex" / "cortex.db"


def _vec_extension_path() -> str | None:
    """Where sqlite-vec's loadable library lives. Found without importing the `sqlite_vec` module,
    which imports numpy (~80 ms): the command line must start fast."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


_BUSY_MS = 5000   # how long a connection waits for another's write lock


class _Writer(apsw.Connection):
    """The indexer's connection. Each transaction that `with con:` opens (the outermost one)
    takes the write lock first (BEGIN IMMEDIATE, with APSW's savepoint inside it), after a note
    writer that asked for its turn (turns.py); nested `with` blocks stay savepoints.

    A deferred transaction reads before it writes, and SQLite does not wait for a read to
    become a write once another connection has written since: a note written then stopped the
    index run ("database is locked"). Taking the lock first fixes that; the turns keep notes
    from starving, as they did when this alone was tried."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._began: list[bool] = []   # per `with` level: whether it began the transaction
        self.turns = IndexerTurns(self, self.filename)

    def hand_over(self) -> None:
        """Commit, let a waiting note writer write, and begin again, when one waits and this is
        the transaction's only level (a savepoint inside a caller's cannot commit). A failed
        commit or begin leaves no level open (`__exit__` then lets its caller's error pass)."""
        if self._began == [True] and self.turns.wanted():
            self.__exit__(None, None, None)
            self.__enter__()

    def __enter__(self) -> "_Writer":
        began = not self.in_transaction
        if began:
            with self.turns.before_begin():
                try:
                    self.execute("begin immediate")
                except apsw.BusyError:   # not another indexer: the writer lock keeps them out
                    raise StoreBusy("another process holds the index's write lock (a note "
                                    "being written or imported?)", Hint("retry")) from None
        try:
            super().__enter__()
            self._began.append(began)
        except BaseException:
            if began and self.in_transaction:
                self.execute("rollback")
            raise
        return self

    def __exit__(self, etype, evalue, tb) -> bool | None:
        if not self._began:   # `hand_over` failed to commit or to begin again: nothing is open
            return None
        began = self._began.pop()
        try:
            result = super().__exit__(etype, evalue, tb)
            if began and etype is None and self.in_transaction:
                self.execute("commit")
        except BaseException:
            if began and self.in_transaction:
                self.execute("rollback")
            raise
        if began and self.in_transaction:   # an error inside: the savepoint rolled back
            self.execute("rollback")
        return result


class _NoteWriter(apsw.Connection):
    """A note writer's connection. Its busy handler waits until `deadline` when one is set
    (`immediate`: what is left of one wait for the turns and the lock), else _BUSY_MS, and
    looks every millisecond: SQLite's own handler looks every 100 ms after its first second,
    time the indexer, waiting for this note, spent idle."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.deadline: float | None = None
        self._until = 0.0

    def busy(self, tries: int) -> bool:
        now = time.monotonic()
        if tries == 0:
            self._until = now + _BUSY_MS / 1000
        if now >= (self.deadline if self.deadline is not None else self._until):
            return False
        time.sleep(0.001)   # SQLite asks again when this returns: there is nothing to wait on
        return True


def turn_wanted(con: apsw.Connection) -> bool:
    """Whether a note writer waits for the indexer's connection `con` to commit (turns.py);
    batch loops end their transaction early then."""
    return isinstance(con, _Writer) and con.turns.wanted()


def hand_over(con: apsw.Connection) -> None:
    """Commit and begin again when a note writer waits (`_Writer.hand_over`); for loops inside
    one `with con:` that cannot end it."""
    if isinstance(con, _Writer):
        con.hand_over()


def _connect(path: Path | str, flags: int, shown: Path | str | None = None,
             kind: type[apsw.Connection] = apsw.Connection) -> apsw.Connection:
    """`shown`: the path messages name when `path` is a URI; `kind`: the connection's class."""
    shown = shown or path
    try:
        con = kind(str(path), flags=flags)
        con.setbusytimeout(_BUSY_MS)
        ext = _vec_extension_path()
        if ext is not None:
            con.enable_load_extension(True)
            con.load_extension(ext)
            con.enable_load_extension(False)
        # A cheap read that fails right away on a file that is not a database.
        _ = con.execute("select count(*) from sqlite_master").get
    except apsw.CantOpenError:
        raise StoreError(f"cannot open the database {shown}") from None
    except (apsw.NotADBError, apsw.CorruptError):
        raise DamagedStore(f"{shown} is not a readable Cortex database (corrupt?)",
                           Hint("rebuild")) from None
    return con


def _connect_reader(path: Path) -> apsw.Connection:
    """A read connection; on a read-only file system, a read of the file as it is. SQLite cannot
    open a WAL-mode database there at all (it needs to create the -shm file), unless told that
    the file cannot change (`immutable`): true of a read-only mount, the only case it is used."""
    try:
        return _connect(path, apsw.SQLITE_OPEN_READWRITE)
    except StoreError:
        if os.access(path.parent, os.W_OK) or Path(f"{path}-wal").exists():
            raise
    from urllib.parse import quote
    return _connect(f"file:{quote(str(path))}?immutable=1",
                    apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, shown=path)


def _prepare_folder(path: Path) -> None:
    """Create the database folder; a `.cortex/` folder ignores itself for git."""
    check_location(path)
    # The per-user folder is private: the index holds notes and history.
    mode = 0o777 if path.parent.name == ".cortex" else 0o700
    try:
        path.parent.mkdir(mode=mode, parents=True, exist_ok=True)
    except OSError as exc:   # read-only, a file in the way: a message, not a traceback
        raise StoreError(f"cannot create the folder of the index {path.parent}: "
                         f"{exc.strerror or exc}", Hint("elsewhere")) from None
    if path.parent.name == ".cortex":
        try:   # never through a link: a repository must not choose where this writes
            fd = os.open(path.parent / ".gitignore",
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            return
        except OSError as exc:
            raise StoreError(f"cannot write {path.parent / '.gitignore'}: {exc}") from None
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("*\n")


def check_location(path: Path) -> None:
    """Refuse a store reached through symbolic links that a repository could have committed:
    `.cortex` itself, the database, its lock and its journal files. A cloned repository could
    otherwise make the indexer write (the lock's pid, the database) wherever the link points."""
    candidates = [path.parent] if path.parent.name == ".cortex" else []
    candidates += [Path(str(path) + s) for s in ("", "-wal", "-shm", ".lock", ".next", *SUFFIXES)]
    for candidate in candidates:
        if candidate.is_symlink():
            raise StoreError(f"refusing to use {candidate}: it is a symbolic link; remove it",
                             Hint("elsewhere"))
    # The database and its journals are regular files: a directory or a FIFO there (opening a
    # FIFO blocks or fails with an I/O error deep in SQLite) is named, with the fix.
    for candidate in (Path(str(path) + s) for s in ("", "-wal", "-shm")):
        try:
            mode = candidate.lstat().st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise StoreError(f"cannot use {candidate}: it is {kind}; remove it",
                             Hint("elsewhere"))


def shipped_store(repo_root: Path) -> str | None:
    """Why the repository's default store must not be used: it tracks files under `.cortex/`
    (a repository shipping an index would show invented history as real). None when fine."""
    import pygit2
    try:
        index = pygit2.Repository(str(repo_root)).index
    except (pygit2.GitError, KeyError, ValueError, OSError):
        return None
    tracked = [e.path for e in index if e.path.startswith(".cortex/") or e.path == ".cortex"]
    if tracked:
        return (f"the repository tracks {tracked[0]} under .cortex/: Cortex will not use an index "
                "a repository ships")
    return None


def schema_version(con: apsw.Connection) -> int:
    row = con.execute("select value from meta where key = 'schema_version'").fetchone() \
        if _has_table(con, "meta") else None
    return int(row[0]) if row else 0


def _has_table(con: apsw.Connection, name: str) -> bool:
    return con.execute("select 1 from sqlite_master where type = 'table' and name = ?",
                       (name,)).fetchone() is not None


def _check_ours(con: apsw.Connection, path: Path) -> None:
    """A database without Cortex's schema version that holds tables is someone else's (the first
    migration writes the version with the tables, in one transaction): never migrated into (that
    wrote Cortex's tables beside the others) nor reported as an index to upgrade."""
    if schema_version(con):
        return
    others = [name for name, in con.execute(
        "select name from sqlite_master where type in ('table', 'view')"
        " and name not like 'sqlite\\_%' escape '\\' order by name limit 4")]
    if others:
        shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
        raise StoreError(f"{path} is not a Cortex index: it is another database (tables "
                         f"{shown}); Cortex needs a file of its own")


def _check_not_newer(con: apsw.Connection, path: Path) -> int:
    _check_ours(con, path)
    version = schema_version(con)
    if version > SCHEMA_VERSION:
        raise NewerSchema(f"{path} was written by a newer Cortex (schema {version}, this one "
                          f"knows {SCHEMA_VERSION})", Hint("newer"))
    return version


def migrate(con: apsw.Connection, path: Path) -> None:
    """Bring the schema up to date, one migration per transaction (its SQL, then its backfill)."""
    version = _check_not_newer(con, path)
    for number in range(version, SCHEMA_VERSION):
        with con:
            con.execute(MIGRATIONS[number])
            if number + 1 in BACKFILLS:
                BACKFILLS[number + 1](con)
            con.execute("insert or replace into meta(key, value) values ('schema_version', ?)",
                        (str(number + 1),))


def open_reader(path: Path) -> apsw.Connection:
    """A read connection to an existing, up-to-date store. Never blocks on the indexer."""
    check_location(path)
    if not path.is_file():
        raise NoIndex(f"no index at {path}", Hint("index"))
    con = _connect_reader(path)
    version = _check_not_newer(con, path)
    if version < SCHEMA_VERSION:
        con.close()
        raise _older(path, version)
    return con


def _older(path: Path, version: int) -> OlderSchema | NoIndex:
    if version == 0:   # no schema at all: a first run stopped before it wrote one
        return NoIndex(f"the index at {path} is empty: its first index run stopped before it "
                       "wrote anything", Hint("index"))
    return OlderSchema(f"the index at {path} has an older schema ({version} < {SCHEMA_VERSION})",
                       Hint("upgrade"))


def open_note_writer(path: Path) -> apsw.Connection:
    """A write connection for notes to an existing, up-to-date store. It never creates the file
    and never migrates it: that is the indexer's, under its lock (a note writer that did raced a
    rebuild's migration). A rebuild empties the store in place (ingest.fresh_store), so notes
    written meanwhile land in the file the rebuild keeps."""
    check_location(path)
    if not path.is_file():
        raise NoIndex(f"no index at {path}", Hint("index"))
    con = _connect(path, apsw.SQLITE_OPEN_READWRITE, kind=_NoteWriter)
    assert isinstance(con, _NoteWriter)
    # The handler is the connection's own method: a cycle that only close() breaks (the garbage
    # collector does not see into APSW's handlers), so every way out below closes it.
    con.setbusyhandler(con.busy)
    try:
        version = _check_not_newer(con, path)
        if version < SCHEMA_VERSION:
            raise _older(path, version)
        con.execute("pragma foreign_keys=on")
    except BaseException:
        con.close()
        raise
    return con


def open_writer(path: Path) -> apsw.Connection:
    """A write connection, creating and migrating the store as needed. Callers hold `writer_lock`."""
    _prepare_folder(path)
    con = _connect(path, apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE, kind=_Writer)
    try:
        _check_ours(con, path)   # before the journal mode: another program's file stays as it was
    except StoreError:
        con.close()
        raise
    _ = con.execute("pragma journal_mode=wal").get
    con.execute("pragma synchronous=normal")
    con.execute("pragma foreign_keys=on")
    migrate(con, path)
    set_store_id(con, only_if_missing=True)
    return con


def set_store_id(con: apsw.Connection, only_if_missing: bool = False) -> None:
    """A random id of this store's contents (meta `store_id`): made with the file, and again when
    a rebuild empties it. What a server keeps from a store is keyed by it, so that another store
    copied over this file in place (same inode) is not taken for it."""
    if only_if_missing and con.execute(
            "select 1 from meta where key = 'store_id'").fetchone() is not None:
        return   # a read: opening a store another writer holds must not wait for its lock
    verb = "insert or ignore" if only_if_missing else "insert or replace"
    # os.urandom is what secrets.token_hex reads; importing `secrets` (hmac, hashlib, random)
    # cost every short command about 4 ms of its start.
    con.execute(f"{verb} into meta(key, value) values ('store_id', ?)", (os.urandom(8).hex(),))


def remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


@contextmanager
def writer_lock(path: Path, wait_seconds: float = 10.0,
                on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the indexer lock of the store at `path`; wait at most `wait_seconds` for it.
    `on_wait(holder)` is called once if another indexer holds it (holder: " (pid N)" or "").

    An flock on `<db>.lock` is released by the OS when its holder dies, so a crashed indexer never
    leaves a stale lock behind."""
    _prepare_folder(path)
    lock_path = Path(str(path) + ".lock")
    fd = _open_lock_file(lock_path)
    try:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if on_wait is not None:
                    on_wait(_read_holder(lock_path))
                    on_wait = None
                if time.monotonic() >= deadline:
                    holder = _read_holder(lock_path)
                    raise IndexerBusy(f"another indexer is running on {path}{holder}; waited "
                                      f"{wait_seconds:g}s", Hint("wait")) from None
                time.sleep(0.1)  # polling a lock held by another process; nothing to wait on
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)


@contextmanager
def queue_slot(path: Path) -> Iterator[Callable[[], None]]:
    """The one place in line behind the running indexer of the store at `path`, for runs that
    only need to happen *after* the latest change (git hooks: `cortex index --coalesce`).

    Takes `<db>.next` without waiting; raises IndexQueued when another run holds it, since that
    run has not read HEAD yet and so will index whatever this one would. Yields `release`, to be
    called as soon as the writer lock is held — before reading HEAD — so that a change made from
    then on queues a run of its own. At most one run works and one waits, however many hooks
    fire (a rebase fires dozens)."""
    _prepare_folder(path)
    fd: int | None = _open_lock_file(Path(str(path) + ".next"))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise IndexQueued(f"another index run of {path} is already queued; it will index the "
                          "newest commits") from None

    def release() -> None:
        nonlocal fd
        if fd is not None:
            os.close(fd)
            fd = None

    try:
        yield release
    finally:
        release()


def _open_lock_file(lock_path: Path) -> int:
    try:
        return os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:   # ELOOP: a link planted in its place
        raise StoreError(f"cannot open the lock {lock_path}: {exc}") from None


def _read_holder(lock_path: Path) -> str:
    try:
        pid = lock_path.read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


def store_stamp(con: apsw.Connection) -> tuple[int, int]:
    """What says whether the store changed, for one connection: SQLite's data_version (which
    changes when another connection commits, and stays put within a read transaction) and this
    connection's own changes. Equal stamps on one connection: the same store; stamps of two
    connections do not compare."""
    return con.execute("pragma data_version").fetchone()[0], con.total_changes()


def get_meta(con: apsw.Connection, key: str, default: str | None = None) -> str | None:
    row = con.execute("select value from meta where key = ?", (key,)).fetchone()
    return row[0] if row else default


def history_from(con) -> int | None:
    """How far back the index's history reaches when it does not reach the first commit: the
    commit time of the oldest commit of the recent window a first run indexed first (ingest.py,
    recent first; meta `window`). None when the whole history is indexed. Every answer built
    from such an index carries it, and each front end says it ("history from 2023-04 on")."""
    try:
        return int(json.loads(get_meta(con, "window") or "null")["since"])
    except (ValueError, TypeError, KeyError):
        return None


def shallow_from(con) -> int | None:
    """For a shallow clone (git's `shallow` file, as the last completed run recorded it in meta
    `shallow`), the author time of the oldest commit the store holds, as status counts from it:
    the clone's history goes no further back, and what it shows as added in a boundary commit
    may be older, the commit being read as a root. (Not the boundary's own date: a side branch
    merged later can hold older commits.) None for a full clone. Every history answer carries
    it (dates.shallow_reach)."""
    try:
        shas = json.loads(get_meta(con, "shallow") or "[]")
    except ValueError:
        return None
    if not isinstance(shas, list) or not shas:
        return None
    return con.execute("select min(author_time) from commits where reachable = 1").fetchone()[0]


def history_until(con) -> int | None:
    """How far forward the index's history reaches when its first run stopped before HEAD (no
    meta `head` yet, commits written: a run writes oldest first and records HEAD at its end):
    the author time of the newest commit written. None once a run has completed; the commits
    made since then are what `head` is behind by, which each answer states its own way.
    Every answer built from such an index carries it ("history up to 2012-12 only")."""
    if get_meta(con, "head") is not None:
        return None
    return con.execute("select max(author_time) from commits where reachable = 1").fetchone()[0]


def loose_check_state(con) -> tuple[int, list[str]]:
    """When the last index run checked the repository's loose objects (ns since the epoch; 0:
    never) and the ids it found damaged (git/loose_objects.py)."""
    try:
        since = int(get_meta(con, "loose_checked_ns") or 0)
        damaged = json.loads(get_meta(con, "loose_damaged") or "[]")
    except ValueError:
        return 0, []
    if not isinstance(damaged, list):
        return since, []
    return since, [oid for oid in damaged if isinstance(oid, str)]


def record_loose_check(con, checked_ns: int, damaged: Iterable[str]) -> None:
    set_meta(con, "loose_checked_ns", str(checked_ns))
    set_meta(con, "loose_damaged", json.dumps(sorted(damaged)))


def head_blob_id(con: apsw.Connection, path: str) -> str | None:
    """The id of the blob `path` had at the indexed HEAD; None when the index has none."""
    row = con.execute("select h.blob from head_files h join files f on f.id = h.file_id"
                      " where f.path = ?", (path,)).fetchone()
    return row[0] if row else None


# The working tree the store was last indexed from (git/ownership.py).
REPOSITORY_META = "repository"
SAMPLED_COMMITS = 3   # the newest and the oldest commits sample_commits takes, each


def sample_commits(con: apsw.Connection) -> list[str]:
    """A few of the store's commits to look for in a repository (git/ownership.py): its
    recorded head, and the first and last it wrote (by row: no sort of the table), no
    repeats."""
    head = get_meta(con, "head")
    shas = [head] if head else []
    for order in ("desc", "asc"):
        shas += [sha for (sha,) in con.execute(
            f"select sha from commits order by id {order} limit ?", (SAMPLED_COMMITS,))]
    return list(dict.fromkeys(shas))


def set_meta(con: apsw.Connection, key: str, value: str) -> None:
    con.execute("insert or replace into meta(key, value) values (?, ?)", (key, value))


@contextmanager
def immediate(con: apsw.Connection) -> Iterator[None]:
    """A note writer's transaction: its turn (turns.py), so that an index run lets it write
    after the run's current item, then the write lock. A deferred transaction that reads before
    it writes fails at once with BUSY when the indexer holds the lock; this one waits the busy
    timeout, then says the index is busy."""
    with note_turn(con.filename) as seconds_left:
        if isinstance(con, _NoteWriter):
            con.deadline = time.monotonic() + seconds_left
        try:
            con.execute("begin immediate")
        except apsw.BusyError:
            raise StoreBusy("the index is busy (an indexer is writing)", Hint("retry")) from None
        finally:
            if isinstance(con, _NoteWriter):
                con.deadline = None
        try:
            yield
        except BaseException:
            con.execute("rollback")
            raise
        con.execute("commit")

