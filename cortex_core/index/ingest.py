"""Indexing: git history down to symbols, written to the store.

One pass over the commits not indexed yet, parents before children. Each commit is diffed against
its first parent with zero context and rename detection; the old and new blob of every changed file
in a supported language are parsed (each blob once) and the hunks are mapped to the innermost
symbols — deleted lines to the old blob's symbols, added lines to the new blob's. Merges record
no changes, only what line blame needs (merge_reader); after the commits, the version graph of
line blame is extended (versions.py). Batches commit in their own transactions, so a killed run
leaves a consistent store that the next run continues.

Recent history first (`recent_first`): a first run over a long history would answer only from
its oldest commits for as long as it runs. Instead it indexes a recent window first, into the
store itself: the last `window_commits` first-parent commits or the last `window_days` before
HEAD, whichever is shorter, with the oldest of them (the boundary) read as a shallow clone's
boundary is, as adding every file of its tree. The store records it (meta `window`: the boundary
and its date), and every answer says how far back it reaches (query/status.reach). Then the
whole history is indexed oldest first, as a plain run does, into a second file beside the store
(`<db>.full`), and its rows replace the window's in one transaction on the store: so renames,
moves and every identity come out exactly as a plain run's, and the store stays the same file
(readers keep their connections and see the new rows at their next read, and the notes, which
only the store holds, stay where they are). Either phase can be stopped: the window store stays
usable, a stopped full build is continued by the next run, and the swap is one transaction.
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

import apsw
import pygit2
from pygit2.enums import SortMode

from cortex_core.index.areas import update_areas
from cortex_core.child_process import OLDER, RECENT
from cortex_core.git.commit_reader import CommitReader, CommitRecord
from cortex_core.git.git_reads import path_text
from cortex_core.config import IndexSettings, Settings
from cortex_core.memory.embeddings import (LIGHT_TEXTS, ModelUnavailable, choose_model,
                                           load_model, load_query_model, model_fingerprint)
from cortex_core.errors import (CortexError, DamagedStore, EmptyRepository, Hint, IndexerBusy,
                                NotARepository, StoreError, WorkerError)
from cortex_core.git.git_reads import commit as find_commit, read_blob
from cortex_core.git.loose_objects import LooseCheck, check_loose, hide, objects_dirs
from cortex_core.lang.languages import language_for_path
from cortex_core.index.memory import (add_commit_items, compact_lexical, drop_vectors,
                                      embed_missing, keep_vocabulary, pending_vectors,
                                      prepare_vectors, refresh_docs, vectors_current)
from cortex_core.memory.notes import import_notes, relink_note_items, saved_notes, sync_note_items
from cortex_core.git.object_source import (CAUSE_DAMAGED, CAUSE_PARTIAL, CAUSE_PARTIAL_OFFLINE,
                                           CAUSE_CORRUPT, CAUSE_TRUNCATED, ObjectSource,
                                           prefetch,
                                           promisor_remote)
from cortex_core.index.process_memory import release_memory
from cortex_core.store.salvage import Recovery, replace_damaged, resume_salvage, store_damage
from cortex_core.index.reader_version import READER_VERSION, EarlierReader, earlier_reader
from cortex_core.index.skip_rules import record_limits
from cortex_core.git.ownership import check_owner, identity as repository_identity
from cortex_core.store.store import (REPOSITORY_META, get_meta, loose_check_state, open_writer,
                                     queue_slot, record_loose_check, remove_database,
                                     sample_commits, set_meta, set_store_id, shipped_store,
                                     turn_wanted, writer_lock)
from cortex_core.lang.symbols import Symbol, preferred_kind
from cortex_core.index.simplified import update_pruned
from cortex_core.index.symbol_kinds import mark_unsettled, settle_kinds
from cortex_core.index.versions import VersionGraph

BATCH_SECONDS = 1.0          # a batch transaction commits at least this often
PARALLEL_MIN_COMMITS = 500   # below these, starting worker processes costs more than it saves
PARALLEL_MIN_FILES = 300
IDS_KEPT = 50_000            # file and symbol ids the writer keeps at hand (about 10 MB at most;
                             # a miss is one indexed lookup, ~10 µs)
KNOWN_LOOKUPS = 1_000        # up to this many commits walked: look each up rather than load all

ProgressFn = Callable[..., None]   # (done, total) or (done, total, phase)

RECENT_FIRST = ("no", "auto", "yes")   # index_repository's `recent_first`


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
    items_added: int = 0
    texts_embedded: int = 0
    items_without_vector: int = 0
    semantic: str = ""                  # "on: <model>" or why it is off
    model_replaced: str | None = None   # the model whose vectors were dropped for a new one
    areas: int | None = None            # clusters after this run (None: not recomputed)
    structure_files_read: int = 0       # files whose structure was read (again) this run
    structure_refs_resolved: int = 0    # references resolved (again) this run
    recovery: Recovery | None = None    # a damaged store replaced by this rebuild (salvage.py)
    missing_objects: int = 0            # objects this run could not read (see object_source)
    missing_cause: str = ""             # what that means: a partial clone offline, or damage
    objects_fetched: int = 0            # a partial clone's objects fetched before reading
    # Recent history first: the window's commits and the seconds until it could be read, and,
    # while the older history is not in yet, the date it reaches back to (None: all of it).
    window_commits: int = 0
    window_seconds: float | None = None
    history_from: int | None = None
    # An earlier version of Cortex read the store's oldest commits (reader_version).
    earlier_reader: EarlierReader | None = None


@dataclass(frozen=True)
class Window:
    """The recent window of a store indexed recent-first: the commits since `boundary` (read as
    adding its whole tree; its parents and what only they reach are left out), none committed
    before `since` unless a kept commit is their parent."""
    boundary: str
    hide: tuple[str, ...]   # the boundary's parents
    since: int              # the boundary's commit time

    def meta(self) -> str:
        return json.dumps({"boundary": self.boundary, "since": self.since})


def full_store_path(db_path: Path) -> Path:
    """Where the whole history is built while the store holds a recent window."""
    return db_path.with_name(db_path.name + ".full")


def open_repository(repo_root: Path) -> pygit2.Repository:
    try:
        repo = pygit2.Repository(str(repo_root))
    except pygit2.GitError as exc:
        raise NotARepository(_unopened(repo_root, str(exc))) from None
    if repo.is_bare:
        raise NotARepository(f"{repo_root} is a bare repository; Cortex indexes a working copy")
    if repo.head_is_unborn:
        raise EmptyRepository(f"{repo_root} has no commits yet; commit something, then index")
    return repo


def _unopened(repo_root: Path, reason: str) -> str:
    """Why libgit2 could not open the repository at `repo_root`, in words that say what to do."""
    if "object format" in reason:   # libgit2: "unknown object format 'sha256'"
        return (f"{repo_root} is a repository whose objects are named by SHA-256, which the git"
                f" library Cortex reads with (libgit2 {pygit2.LIBGIT2_VERSION}) cannot open"
                f" ({reason}); Cortex indexes SHA-1 repositories")
    dot = repo_root / ".git"
    try:
        line = dot.read_text(encoding="utf-8", errors="replace")[:4096].strip() \
            if dot.is_file() else ""
    except OSError:
        line = ""
    if line.startswith("gitdir:"):
        target = (repo_root / line[len("gitdir:"):].strip()).resolve()
        if not target.is_dir():
            return (f"{dot} points to {target}, which does not exist: the git folder of this"
                    " linked worktree or submodule moved or was removed (`git worktree repair`"
                    " in the main working copy mends a moved worktree; `git submodule update`"
                    " in its superproject checks a submodule out again)")
    if dot.exists():
        return f"{repo_root} is a git repository Cortex cannot open ({reason})"
    return f"{repo_root} is not a git repository"


def index_repository(repo_root: Path, db_path: Path, settings: Settings, *,
                     all_branches: bool | None = None, rebuild: bool = False,
                     wait_seconds: float = 10.0, progress: ProgressFn | None = None,
                     jobs: int | None = None, model: str | None = None, coalesce: bool = False,
                     on_wait: Callable[[str], None] | None = None,
                     recent_first: str = "no") -> IndexSummary:
    """Bring the store at `db_path` up to date with the repository. Incremental unless `rebuild`.

    `recent_first` (RECENT_FIRST): for a store with no commits yet, "yes" indexes a recent
    window first, then the whole history (see the module's docstring); "auto" does so only for a
    history of more than `index.recent_first_commits` commits. A store that holds a window is
    always completed so, whatever this says.

    `jobs`: processes reading commits in long runs (default: one per CPU, at most 4).
    `model`: the embedding model (see embeddings.choose_model); notes survive a rebuild.
    `coalesce`: for git hooks — raise IndexQueued at once when another run already waits for the
    writer lock (see store.queue_slot); otherwise wait in line, at most `wait_seconds`.
    `on_wait(holder)`: called once if another indexer holds the writer lock."""
    if recent_first not in RECENT_FIRST:
        raise ValueError(f"recent_first must be one of {RECENT_FIRST}, not {recent_first!r}")
    repo = open_repository(repo_root)
    started = time.monotonic()
    if db_path.parent == repo_root / ".cortex":
        refused = shipped_store(repo_root)
        if refused:
            raise StoreError(refused, Hint("elsewhere"))
    full_path = full_store_path(db_path)
    with queue_slot(db_path) if coalesce else nullcontext(_nothing) as leave_queue, \
            writer_lock(db_path, wait_seconds, on_wait):
        leave_queue()   # before HEAD is read: a commit from now on queues a run of its own
        con, recovery = fresh_store(db_path) if rebuild else (open_writer(db_path), None)
        if not rebuild and (get_meta(con, "rebuild_history") or _deepened(con, repo)):
            # Written by a Cortex that named symbols otherwise (schema migration 4), or that
            # kept no words of the changed lines (7): its history cannot be extended
            # incrementally. Or a shallow clone was deepened: its
            # former boundary commits were read as adding every file, and the commits now
            # behind them are ancestors of the recorded tips, which a run never walks again.
            con.close()
            (con, recovery), rebuild = fresh_store(db_path), True
        try:
            with _git_and_store_errors(repo_root, db_path):
                recovery = resume_salvage(db_path, con) or recovery
                if not rebuild:   # before anything is read or written for this repository;
                    # by its commits, whatever path the store names (a run reads objects anyway)
                    check_owner(repo_root, db_path, None, lambda: sample_commits(con))
                with con:
                    set_meta(con, REPOSITORY_META, repository_identity(repo_root))
                jobs = jobs if jobs is not None else min(4, os.cpu_count() or 1)
                loose = _checked(repo, con)   # before the first object read
                window = _stored_window(con, repo)
                if window is None and recent_first != "no" and not _has_commits(con):
                    window = choose_window(repo, settings.index, auto=recent_first == "auto")
                if window is None:
                    # A full build left over: the store was rebuilt, or a swap committed and
                    # its run stopped before removing the file.
                    _discard(full_path)
                phase_progress = _named(progress, RECENT) if window is not None else progress
                summary = _run(repo, con, settings, phase_progress, max(1, jobs), model,
                               all_branches, started, rebuild, window, loose)
                if all_branches is None:
                    all_branches = get_meta(con, "all_branches") == "1"
        finally:
            con.close()
    summary = replace(summary, recovery=recovery) if recovery else summary
    if window is None:
        return summary
    summary = replace(summary, window_commits=summary.new_commits,
                      window_seconds=summary.seconds, history_from=window.since)
    with _git_and_store_errors(repo_root, full_path):
        return _complete(repo, db_path, settings, summary, progress=progress, jobs=max(1, jobs),
                         model=model, all_branches=all_branches, started=started,
                         wait_seconds=wait_seconds)


def _run(repo: pygit2.Repository, con, settings: Settings, progress: ProgressFn | None,
         jobs: int, model: str | None, all_branches: bool | None, started: float,
         rebuilt: bool, window: Window | None = None,
         loose: LooseCheck | None = None) -> IndexSummary:
    indexer = _Indexer(repo, con, settings, progress, jobs, model, window, loose)
    try:
        return indexer.run(all_branches, started, rebuilt)
    finally:
        if indexer.reader.objects is not None:
            indexer.reader.objects.close()


@contextmanager
def _git_and_store_errors(repo_root: Path, db_path: Path) -> Iterator[None]:
    """What a run can meet besides the errors a user causes, as those errors."""
    try:
        yield
    except (apsw.CorruptError, apsw.NotADBError) as exc:   # damage found while indexing
        raise DamagedStore(f"the index at {db_path} is damaged ({exc})",
                           Hint("rebuild")) from None
    except pygit2.GitError as exc:  # a damaged repository: missing or corrupt objects
        # What is left after every missing object was tolerated: HEAD itself cannot be read.
        raise CortexError(f"git error while indexing {repo_root}: {exc}; the repository is "
                          "damaged where its current commit is (`git fsck` lists what is "
                          "missing; a fresh clone repairs it)") from None
    except WorkerError as exc:
        raise CortexError(f"a worker process failed while indexing {repo_root}: {exc}; what"
                          " was stored is kept", Hint("one_worker")) from None
    except Exception as exc:
        # A process pool's worker died (BrokenProcessPool). Only a pool raises it, and one is
        # imported only when workers run: an update with no pool does not import the module
        # (8 ms of every start).
        pool = sys.modules.get("concurrent.futures")
        if pool is not None and isinstance(exc, pool.BrokenExecutor):
            raise CortexError("a worker process died while indexing (out of memory?); what was "
                              "stored is kept", Hint("one_worker")) from None
        raise


def _named(progress: ProgressFn | None, prefix: str) -> ProgressFn | None:
    """Progress whose phase names say which history they belong to."""
    if progress is None:
        return None
    fn = progress   # bound here: mypy cannot narrow `progress` inside the closure

    def named(done: int, total: int, phase: str = "commits") -> None:
        fn(done, total, prefix + phase)
    return named


def _has_commits(con) -> bool:
    return bool(con.execute("select exists(select 1 from commits)").get)


# -- recent history first ---------------------------------------------------------------------


def choose_window(repo: pygit2.Repository, settings: IndexSettings, *,
                  auto: bool = False) -> Window | None:
    """The recent window a first run indexes first; None when it would hold the whole history
    (or, with `auto`, when the history has no more than `recent_first_commits` commits)."""
    head = repo.head.peel(pygit2.Commit)
    if auto and not _longer_than(repo, head, settings.recent_first_commits):
        return None
    cutoff = head.commit_time - settings.window_days * 86_400
    commit, counted = head, 1
    while True:
        parent = find_commit(repo, str(commit.parent_ids[0])) if commit.parent_ids else None
        if parent is None:   # the root (or a shallow clone's boundary): the whole history fits
            return None
        if counted >= settings.window_commits or parent.commit_time < cutoff:
            return Window(str(commit.id), tuple(map(str, commit.parent_ids)),
                          commit.commit_time)
        commit, counted = parent, counted + 1


def _longer_than(repo: pygit2.Repository, head: pygit2.Commit, count: int) -> bool:
    """Whether more than `count` commits lead to `head` (a walk that stops there)."""
    walker = repo.walk(head.id, SortMode.NONE)
    try:
        for seen, _ in enumerate(walker, 1):
            if seen > count:
                return True
    except pygit2.GitError:   # a missing commit: as long as what could be walked
        pass
    return False


def _checked(repo: pygit2.Repository, con) -> LooseCheck:
    """Check the repository's loose objects written since the store's last check, and hide
    those cut short: libgit2 would spin forever on one (git/loose_objects.py)."""
    check = check_loose(objects_dirs(repo), *loose_check_state(con))
    hide(repo, check.damaged)
    return check


def _stored_window(con, repo: pygit2.Repository) -> Window | None:
    """The window the store holds, when it holds one (meta `window`)."""
    try:
        stored = json.loads(get_meta(con, "window") or "null")
        boundary, since = str(stored["boundary"]), int(stored["since"])
    except (ValueError, TypeError, KeyError):
        return None
    commit = find_commit(repo, boundary)
    # A boundary gone (history rewritten, then gc): `since` alone still bounds the window.
    hide = tuple(map(str, commit.parent_ids)) if commit is not None else ()
    return Window(boundary, hide, since)


def _discard(full_path: Path) -> None:
    """Remove a full build, unless a run is building it now (its swap checks the store)."""
    if not full_path.exists():
        return
    try:
        with writer_lock(full_path, 0):
            remove_database(full_path)
    except IndexerBusy:   # being built
        pass


def _complete(repo: pygit2.Repository, db_path: Path, settings: Settings,
              window_summary: IndexSummary, *, progress: ProgressFn | None, jobs: int,
              model: str | None, all_branches: bool | None, started: float,
              wait_seconds: float) -> IndexSummary:
    """The whole history, oldest first, built beside the store holding a window, then swapped
    in; then the commits made meanwhile. Returns at once with the window's summary when another
    run is building it."""
    full_path = full_store_path(db_path)
    with ExitStack() as held:
        try:
            held.enter_context(writer_lock(full_path, 0))
        except IndexerBusy:   # another run builds it and will swap it in
            return window_summary
        con = _open_full(full_path)
        try:
            with con:
                seed = _seed_meta(db_path)
                for key, value in seed.items():
                    set_meta(con, key, value)
            full = _run(repo, con, settings, _named(progress, OLDER), jobs, model, all_branches,
                        started, True)
        finally:
            con.close()
        # The store's writer lock, waited for as long as a run may take: the full build is done
        # and must not be lost to a hook's short run.
        with writer_lock(db_path, max(wait_seconds, 600.0)):
            con = open_writer(db_path)
            try:
                if get_meta(con, "window") is not None:
                    swap_in(con, full_path)
                remove_database(full_path)
                after = _run(repo, con, settings, progress, jobs, model, all_branches, started,
                             False)
            finally:
                con.close()
    return replace(full, head=after.head, total_commits=after.total_commits,
                   new_commits=full.new_commits + after.new_commits,
                   file_changes=full.file_changes + after.file_changes,
                   symbol_changes=full.symbol_changes + after.symbol_changes,
                   seconds=time.monotonic() - started, recovery=window_summary.recovery,
                   window_commits=window_summary.window_commits,
                   window_seconds=window_summary.window_seconds, history_from=None,
                   items_added=after.items_added + full.items_added,
                   texts_embedded=after.texts_embedded + full.texts_embedded,
                   items_without_vector=after.items_without_vector, semantic=after.semantic,
                   areas=after.areas if after.areas is not None else full.areas)


def _open_full(full_path: Path):
    """The full build's store: the one a stopped run left (continued), or a new one; one that
    cannot be used (damaged, another schema) is started again."""
    try:
        con = open_writer(full_path)
        con.execute("select count(*) from commits").fetchall()   # a damaged page shows here
        return con
    except (StoreError, apsw.CorruptError, apsw.NotADBError):
        remove_database(full_path)
        return open_writer(full_path)


def _seed_meta(db_path: Path) -> dict[str, str]:
    """The store's choices a full build must make alike (the model, the branches), and the
    repository it holds."""
    con = open_writer(db_path)
    try:
        return {key: value for key in ("model_choice", "all_branches", REPOSITORY_META)
                if (value := get_meta(con, key)) is not None}
    finally:
        con.close()


def swap_in(con, full_path: Path) -> None:
    """Replace every derived row of the store `con` writes with the full build's, in one
    transaction: readers see the window or the whole history, never a mixture, and a stopped
    swap leaves the window. The notes stay (only the store has them; the run that follows links
    them again). Virtual tables (full-text, vectors) go with their shadow tables, copied as they
    are. Not a rename of the file: SQLite's readers of the old file (the servers) would keep
    it, and its WAL could be paired with the new file (sqlite.org/howtocorrupt.html)."""
    con.execute("pragma foreign_keys=off")   # rows from a store built with them on; and on, no
    con.execute("attach database ? as full", (str(full_path),))   # row-by-row copy is needed
    try:
        con.execute("begin immediate")
        try:
            _copy_tables(con)
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise
    finally:
        con.execute("detach database full")
        con.execute("pragma foreign_keys=on")


def _copy_tables(con) -> None:
    def tables(schema: str) -> dict[str, str]:
        return {name: sql or "" for name, sql in con.execute(
            f"select name, sql from {schema}.sqlite_master where type = 'table'"
            " and name not like 'sqlite\\_%' escape '\\'")}
    full, main = tables("full"), tables("main")
    for name, sql in main.items():   # virtual tables the build has not, or has otherwise
        if _virtual(sql) and full.get(name) != sql:
            con.execute(f'drop table main."{name}"')
    main = tables("main")
    for name, sql in full.items():
        if _virtual(sql) and name not in main:
            con.execute(sql)   # unqualified: made in main, with its shadow tables
    main = tables("main")
    for name in main.keys() - full.keys() - set(_KEPT_TABLES):
        if not _virtual(main[name]):
            con.execute(f'delete from main."{name}"')
    for name, sql in full.items():
        if _virtual(sql) or name in _KEPT_TABLES:
            continue
        if name not in main and sql.lower().startswith("create table"):
            con.execute(sql)   # made outside the migrations (query_vocab): made here too
        elif name not in main or _columns(con, "main", name) != _columns(con, "full", name):
            raise StoreError(f"the full build's table {name} differs from the store's")
        con.execute(f'delete from main."{name}"')
        con.execute(f'insert into main."{name}" select * from full."{name}"')
    con.execute("delete from main.meta")
    con.execute("insert into main.meta select * from full.meta")


def _virtual(sql: str) -> bool:
    return " ".join(sql.split()[:3]).lower() == "create virtual table"


def _columns(con, schema: str, table: str) -> list[tuple]:
    return [tuple(row[1:]) for row in con.execute(f'pragma {schema}.table_info("{table}")')]


def _nothing() -> None:
    pass


def shallow_commits(repo: pygit2.Repository) -> set[str]:
    """The boundary commits of a shallow clone (git's `shallow` file); empty for a full one."""
    try:
        lines = (Path(repo.path) / "shallow").read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return set()
    return set(lines)


def replaced_objects(repo: pygit2.Repository) -> int:
    """How many objects `git replace` replaces (refs under refs/replace/). libgit2 reads the
    objects as recorded, where `git log` shows their replacements (a graft joins two
    histories, a replaced commit rewrites one): the answers then differ from git's."""
    try:
        return sum(1 for name in repo.references if name.startswith("refs/replace/"))
    except pygit2.GitError:
        return 0


def _deepened(con, repo: pygit2.Repository) -> bool:
    """A boundary commit the last run saw is no longer one (`git fetch --deepen`, --unshallow)."""
    try:
        recorded = set(json.loads(get_meta(con, "shallow") or "[]"))
    except (ValueError, TypeError):
        return False
    return bool(recorded - shallow_commits(repo))


def fresh_store(db_path: Path) -> tuple[apsw.Connection, Recovery | None]:
    """For a rebuild: the store emptied, in place, of everything but its notes.

    The file stays the same file. Readers and note writers keep working on it, a note written
    while the rebuild runs is kept (notes keep their ids), and nothing is ever written into a
    file that was removed (which loses the write, and can make SQLite delete the new file's
    journal when an old connection closes). A damaged store is moved aside and replaced, with the
    notes that can be read from it (salvage.py); one from a newer Cortex is replaced, with its
    notes."""
    damage = store_damage(db_path)
    if damage:
        return replace_damaged(db_path, damage)
    try:
        con = open_writer(db_path)
    except StoreError:
        kept = saved_notes(db_path)
        remove_database(db_path)
        con = open_writer(db_path)
        try:
            if kept:
                with con:
                    import_notes(con, kept)
        except BaseException:
            con.close()
            raise
        return con, None
    try:
        with con:
            _clear_derived(con)
    except (apsw.CorruptError, apsw.NotADBError) as exc:   # damage the check did not see
        con.close()
        return replace_damaged(db_path, str(exc))
    except BaseException:
        con.close()
        raise
    return con, None


_KEPT_TABLES = ("meta", "notes")


def _clear_derived(con) -> None:
    """Delete every row the indexer derives (children before parents); drop the vector table
    (its width belongs to a model, and prepare_vectors makes it again); keep only the schema
    version and the user's choices in meta: the model (a rebuild must not fall back to the
    default model, which may not be on this machine) and the branches (`all_branches`, which
    the command line says it remembers)."""
    import re
    from cortex_core.store.schema import MIGRATIONS
    tables = re.findall(r"create (?:virtual )?table (\w+)", " ".join(MIGRATIONS))
    # A migration may make a table under a passing name and rename it (items_code_9).
    present = {name for (name,) in con.execute("select name from sqlite_master where type = 'table'")}
    for table in reversed(tables):
        if table not in _KEPT_TABLES and table in present:
            con.execute(f"delete from {table}")
    con.execute("drop table if exists item_vectors")
    con.execute("drop table if exists query_vocab")
    con.execute("delete from meta where key not in ('schema_version', 'model_choice',"
                " 'all_branches')")
    set_store_id(con)   # other contents from here on


class _Indexer:
    def __init__(self, repo: pygit2.Repository, con, settings: Settings,
                 progress: ProgressFn | None, jobs: int, model: str | None = None,
                 window: Window | None = None, loose: LooseCheck | None = None):
        # Before anything reads an object: libgit2 would spin forever on a truncated one.
        self.loose = loose if loose is not None else _checked(repo, con)
        self.repo = repo
        self.window = window
        self.con = con
        self.all_settings = settings
        self.model = model
        self.settings = settings.index
        self.progress = progress
        self.jobs = jobs
        self.reader = CommitReader(repo, self.settings,
                                   roots=frozenset([window.boundary] if window else []))
        # Ids by key, filled as keys are met (a miss asks the store) and emptied at IDS_KEPT
        # keys: loading every file's and symbol's id made a one-commit update, and the writer's
        # memory, grow with the history (sympy: hundreds of thousands of symbols).
        self.file_ids: dict[str, int] = {}
        self.symbol_ids: dict[tuple[int, str], int] = {}
        self.left_head: set[int] = set()   # symbols this run's HEAD snapshot found gone
        self.file_changes = 0
        self.symbol_changes = 0
        self.skipped = 0
        self.parses = 0
        self.missing: set[str] = set()     # ids of the objects this run could not read
        self.remote = promisor_remote(repo)  # set for a partial clone
        self.online = False                # its remote answered the prefetch
        self.fetched = 0

    # -- the run -----------------------------------------------------------------------------

    def run(self, all_branches: bool | None, started: float, rebuilt: bool) -> IndexSummary:
        con = self.con
        if all_branches is None:
            all_branches = get_meta(con, "all_branches") == "1"
        tips = self._tips(all_branches)
        # The boundaries the commits are read with, recorded before any is stored: a run
        # stopped after storing one as a root must leave a deepening to be seen (_deepened).
        shallow = json.dumps(sorted(shallow_commits(self.repo)))
        old_tips = [sha for sha in json.loads(get_meta(con, "tips", "[]")) if self._exists(sha)]
        # No usable tips: an interrupted run, or tips garbage-collected after a rewrite.
        lost_tips = not old_tips and bool(con.execute("select exists(select 1 from commits)").get)
        walked = self._walk(tips, hide=old_tips)
        known = self._known(walked if not lost_tips else None)
        new = [c for c in walked if str(c.id) not in known]
        again = [known[str(c.id)][0] for c in walked
                 if str(c.id) in known and not known[str(c.id)][1]]
        if lost_tips:
            reachable = {str(c.id) for c in walked}
            gone = [cid for sha, (cid, r) in known.items() if r and sha not in reachable]
        else:
            dropped = self._walk(old_tips, hide=tips)
            known.update(self._known(dropped))
            gone = [known[str(c.id)][0] for c in dropped
                    if str(c.id) in known and known[str(c.id)][1]]

        with con:
            con.executemany("update commits set reachable = 1 where id = ?", ((i,) for i in again))
            con.executemany("update commits set reachable = 0 where id = ?", ((i,) for i in gone))
            # Kept until the pruning has been recomputed for them: a run stopped before that
            # leaves the flags turned, and the next one, finding nothing to turn, must know.
            flipped = _pending_flips(con, again + gone)
            set_meta(con, "all_branches", "1" if all_branches else "0")
            set_meta(con, "shallow", shallow)
            if self.window is not None:   # before any commit of it: a stopped run is known
                set_meta(con, "window", self.window.meta())   # to hold a window
            # Forget the tips until this run completes: a run that dies half-way leaves commits
            # that no recorded tip accounts for, so the next run recomputes reachability fully.
            set_meta(con, "tips", "[]")

        if self.remote is not None:
            self._prefetch(tips, [] if lost_tips else old_tips, bool(new))
        # The walk's commit objects and what libgit2 cached while walking take ~1.6 KB a commit
        # (sympy: 100 MB): only ids and parents are kept while the commits are read. An update
        # keeps libgit2's caches: the next steps read the same objects again.
        todo = [(str(c.id), [str(p) for p in c.parent_ids], c.commit_time) for c in new]
        walked = new = dropped = []
        known = {}
        new_commits = len(todo)
        long_run = new_commits >= PARALLEL_MIN_COMMITS
        if long_run:
            release_memory(self.repo)
        # The parents are needed for the order only: not kept while commits are read.
        orders = self._orders(todo)
        shas = [sha for sha, _, _ in todo]
        todo = []
        self._ingest(shas, orders)
        del shas, orders
        if get_meta(con, "reread_merges"):
            self._reread_merges()
        versions = VersionGraph(con)
        versions.update()
        # The HEAD this run walked from, not HEAD now: moved meanwhile (a reset, a commit), it
        # would be recorded as indexed without its commits; the next run reads them.
        head = self.repo.get(tips[0]).peel(pygit2.Commit)
        with con:
            self._snapshot_head(head)
            # Which symbols live is known now; those HEAD left, and those of commits a rewrite
            # made reachable or not, may take another kind.
            settle_kinds(con, self.left_head, flipped)
            self.left_head = set()
            versions.write_head(str(head.id))
            update_pruned(con, flipped=flipped, commits=versions.walker.graph)
            con.execute("delete from meta where key = 'pruned_flipped'")
            set_meta(con, "tips", json.dumps(tips))
            set_meta(con, "replaced", str(replaced_objects(self.repo)))
            set_meta(con, "head", str(head.id))
            set_meta(con, "indexed_at", str(int(time.time())))
            record_loose_check(con, self.loose.checked_ns, self.loose.damaged)
            record_limits(con, self.settings)
        from cortex_core.index.structure import update_structure
        structure = update_structure(con, self.repo, self.settings, self._phase_progress,
                                     known=self.reader.parser)
        if long_run:
            # The areas step is the run's largest: what the commits and the structure pass
            # left (ids at hand, libgit2's caches, free heap pages) is given back before it.
            self.file_ids.clear()
            self.symbol_ids.clear()
            release_memory(self.repo)
        memory = self._memory()
        cause = self._record_missing()
        total = con.execute("select count(*) from commits where reachable = 1").get
        return IndexSummary(**memory, structure_files_read=structure.files_read,
            structure_refs_resolved=structure.refs_resolved,
            missing_objects=len(self.missing), missing_cause=cause, objects_fetched=self.fetched,
            head=str(head.id), new_commits=new_commits, total_commits=total,
            marked_unreachable=len(gone), reachable_again=len(again),
            file_changes=self.file_changes, symbol_changes=self.symbol_changes,
            skipped_file_changes=self.skipped, blobs_parsed=self.parses,
            seconds=time.monotonic() - started, rebuilt=rebuilt,
            earlier_reader=earlier_reader(con))

    def _known(self, commits: list[pygit2.Commit] | None) -> dict[str, tuple[int, bool]]:
        """sha -> (id, reachable) of the stored commits among `commits` (None: all of them).
        A one-commit update asks for a few commits rather than loading the whole history."""
        if commits is None or len(commits) > KNOWN_LOOKUPS:
            return {sha: (cid, bool(r)) for cid, sha, r in self.con.execute(
                "select id, sha, reachable from commits")}
        known = {}
        for sha in map(str, (c.id for c in commits)):
            row = self.con.execute("select id, reachable from commits where sha = ?",
                                   (sha,)).fetchone()
            if row is not None:
                known[sha] = (row[0], bool(row[1]))
        return known

    def _tips(self, all_branches: bool) -> list[str]:
        tips = [str(self.repo.head.peel(pygit2.Commit).id)]
        if all_branches:
            for name in self.repo.branches.local:
                target = self.repo.branches.local[name].peel(pygit2.Commit)
                if str(target.id) not in tips:
                    tips.append(str(target.id))
        return tips

    def _prefetch(self, tips: list[str], hide: list[str], new_commits: bool) -> None:
        """A partial clone: fetch the objects the new commits need in one request; later misses
        are then fetched one by one, unless the remote could not be reached."""
        done = prefetch(self.repo.workdir, self.remote, tips, hide) if new_commits else None
        self.online = done is None or done.fetched
        self.fetched = done.missing if done is not None and done.fetched else 0
        self.reader.objects = ObjectSource(self.repo.workdir, self.online)

    def _record_missing(self) -> str:
        """What the objects this run could not read mean, kept for `cortex status` (summed over
        the runs since the last rebuild: each run reads other commits)."""
        if not self.missing:
            return ""
        if self.missing & self.loose.damaged:   # cut here: no remote has them to give
            cause = CAUSE_TRUNCATED
        elif any(self._listed(sha) for sha in self.missing):   # a corrupt pack: not missing
            cause = CAUSE_CORRUPT
        elif self.remote is None:
            cause = CAUSE_DAMAGED
        else:
            cause = CAUSE_PARTIAL if self.online else CAUSE_PARTIAL_OFFLINE
        with self.con:
            before = int(get_meta(self.con, "missing_objects") or 0)
            set_meta(self.con, "missing_objects", str(before + len(self.missing)))
            set_meta(self.con, "missing_cause", cause)
        return cause

    def _listed(self, sha: str) -> bool:
        """Whether the repository lists the object (a pack's index, a loose file) though it
        could not be read: damage, not absence."""
        try:
            return sha in self.repo.odb
        except (ValueError, pygit2.GitError):
            return False

    def _exists(self, sha: str) -> bool:
        try:
            return isinstance(self.repo.get(sha), pygit2.Commit)
        except (ValueError, pygit2.GitError):
            return False

    def _walk(self, tips: list[str], hide: list[str]) -> list[pygit2.Commit]:
        """Commits reachable from `tips` but not from `hide`, parents before children; of a
        window's store, only those of the window."""
        window = self.window
        if window is None:
            return self._walk_all(tips, hide)
        kept: set[str] = set()
        out = []
        for commit in self._walk_all(tips, [*hide, *(h for h in window.hide if self._exists(h))]):
            sha = str(commit.id)
            # A branch merged lately can reach far back: its commits older than the window
            # stay out, unless they descend from one kept (the committer's clock can go back).
            if commit.commit_time >= window.since or sha == window.boundary \
                    or any(str(p) in kept for p in commit.parent_ids):
                kept.add(sha)
                out.append(commit)
        return out

    def _walk_all(self, tips: list[str], hide: list[str]) -> list[pygit2.Commit]:
        """Commits reachable from `tips` but not from `hide`, parents before children."""
        if not tips:
            return []
        walker = self.repo.walk(None, SortMode.TOPOLOGICAL | SortMode.TIME | SortMode.REVERSE)
        for sha in tips:
            walker.push(pygit2.Oid(hex=sha))
        for sha in hide:
            walker.hide(pygit2.Oid(hex=sha))
        try:
            return list(walker)
        except pygit2.GitError:   # a commit is missing (a damaged repository)
            return self._walk_around_missing(tips, hide)

    def _walk_around_missing(self, tips: list[str], hide: list[str]) -> list[pygit2.Commit]:
        """`_walk` for a history with commits missing: the commits that can be read, parents
        before children (a child of a missing commit is read as having no known parent)."""
        hidden = {str(c.id) for c in self._reachable(hide)} if hide else set()
        return [c for c in self._reachable(tips) if str(c.id) not in hidden]

    def _reachable(self, tips: list[str]) -> list[pygit2.Commit]:
        """Readable commits reachable from `tips`, parents first (oldest parent first); the ids
        of the missing ones go to `self.missing`."""
        order: list[pygit2.Commit] = []
        state: dict[str, bool] = {}   # sha -> finished
        for tip in tips:
            stack = [(tip, False)]
            while stack:
                sha, parents_done = stack.pop()
                if parents_done:
                    if not state[sha]:
                        state[sha] = True
                        order.append(self.repo.get(sha))
                    continue
                if sha in state:
                    continue
                commit = self._commit(sha)
                if commit is None:
                    self.missing.add(sha)
                    state[sha] = True
                    continue
                state[sha] = False
                stack.append((sha, True))
                parents = sorted(map(str, commit.parent_ids), key=self._time, reverse=True)
                stack.extend((p, False) for p in parents if p not in state)
        return order

    def _time(self, sha: str) -> int:
        commit = self._commit(sha)
        return commit.commit_time if commit is not None else 0

    def _ingest(self, shas: list[str], orders: list[tuple[int, int]]) -> None:
        """Read and store the commits `shas` (parents before children; each one's generation
        and order time beside them, _orders), in transactions of about BATCH_SECONDS each."""
        seq0 = self.con.execute("select coalesce(max(seq), 0) from commits").get + 1
        total = len(shas)
        if total:
            with self.con:
                mark_unsettled(self.con, seq0)
        if self.progress:
            self.progress(0, total)
        records = self._records(shas)
        done, batch_start = 0, time.monotonic()
        while done < total:
            with self.con:
                for position, record in records:
                    self._write(record, seq0 + position, *orders[position])
                    self.missing.update(record.missing)
                    done += 1
                    if self.progress:
                        self.progress(done, total)
                    if time.monotonic() - batch_start >= BATCH_SECONDS \
                            or turn_wanted(self.con):
                        break
            batch_start = time.monotonic()

    def _records(self, shas: list[str]):
        """(position, record) of every commit: read here, or by worker processes for long runs."""
        if self.jobs > 1 and len(shas) >= PARALLEL_MIN_COMMITS:
            from cortex_core.index.read_pool import read_parallel   # multiprocessing: 30 ms
            return read_parallel(self.repo.workdir, self.settings, shas, self.jobs, self.online,
                                 roots=self.reader.roots, damaged=self.loose.damaged)
        return ((i, self.reader.read(self.repo.get(sha))) for i, sha in enumerate(shas))

    def _orders(self, commits: list[tuple[str, list[str], int]]) -> list[tuple[int, int]]:
        """The generation and order time (schema.py, migration 10) of each of `commits` (sha,
        parents, committer time; parents first): from the list itself, not from the order
        records are written in, which worker processes do not keep."""
        known: dict[str, tuple[int, int]] = {}
        out = []
        for sha, parents, committed in commits:
            generation, when = 0, committed
            for parent in parents:
                if parent not in known:   # stored by an earlier run, or missing (shallow): 0
                    known[parent] = self.con.execute(
                        "select generation, order_time from commits where sha = ?",
                        (parent,)).fetchone() or (0, 0)
                generation, when = max(generation, known[parent][0]), max(when, known[parent][1])
            known[sha] = generation + 1, when
            out.append(known[sha])
        return out

    def _write(self, record: CommitRecord, seq: int, generation: int, order_time: int) -> None:
        added = sum(f.added or 0 for f in record.files)
        deleted = sum(f.deleted or 0 for f in record.files)
        commit_id = self.con.execute(
            "insert into commits(sha, seq, generation, order_time, parents, author_name,"
            " author_email, author_time, author_offset, committer_time, subject, body, kind,"
            " is_merge, files_changed, lines_added, lines_deleted, code_words, reader)"
            " values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) returning id",
            (record.sha, seq, generation, order_time, " ".join(record.parents), record.author_name,
             record.author_email, record.author_time, record.author_offset,
             record.committer_time, record.subject, record.body, record.kind,
             int(record.is_merge), len(record.files), added, deleted,
             " ".join(record.code_words), READER_VERSION)).get
        self._write_merge_files(commit_id, record)
        for f in record.files:
            file_id = self._file_id(f.path)
            old_file_id = self._file_id(f.old_path) if f.old_path is not None else None
            self.con.execute(
                "insert or replace into file_changes(commit_id, file_id, old_file_id, status,"
                " added, deleted, skip_reason) values (?,?,?,?,?,?,?)",
                (commit_id, file_id, old_file_id, f.status, f.added, f.deleted, f.skip_reason))
            if f.hunks:
                self.con.executemany(
                    "insert into hunks(commit_id, file_id, old_start, old_lines, new_start,"
                    " new_lines) values (?,?,?,?,?,?)", ((commit_id, file_id, *h) for h in f.hunks))
            self.file_changes += 1
            self.skipped += f.skip_reason is not None
        self._write_symbols(commit_id, record)
        self.parses += record.parses

    def _write_symbols(self, commit_id: int, record: CommitRecord) -> None:
        rows = []
        for change in record.symbols:
            symbol_id = self._symbol_id(self._file_id(change.path), change.symbol)
            from_id = (self._symbol_id(self._file_id(change.from_path), change.from_symbol)
                       if change.from_symbol is not None else None)
            confidence = change.confidence if from_id is not None else None
            # The kinds of the versions the change names: a deleted symbol takes its newest
            # version's (symbol_kinds.py).
            rows.append((symbol_id, commit_id, change.change, change.added, change.deleted, from_id,
                         confidence, change.symbol.kind,
                         change.from_symbol.kind if change.from_symbol is not None else None))
        self.con.executemany(
            "insert or replace into symbol_changes(symbol_id, commit_id, change, added, deleted,"
            " from_symbol_id, confidence, kind, from_kind) values (?,?,?,?,?,?,?,?,?)", rows)
        self.symbol_changes += len(rows)

    def _write_merge_files(self, commit_id: int, record: CommitRecord) -> None:
        """What a merge did to each file, for line blame (see merge_reader)."""
        for entry in record.merge_files:
            file_id = self._file_id(entry.path)
            self.con.execute(
                "insert or replace into merge_files(commit_id, file_id, old_file_id, status, via,"
                " via_file_id, lines) values (?,?,?,?,?,?,?)",
                (commit_id, file_id, self._file_id(entry.old_path) if entry.old_path else None,
                 entry.status, entry.via,
                 self._file_id(entry.via_path) if entry.via_path else None, entry.lines))
            for edge in entry.edges:
                self.con.execute(
                    "insert or replace into merge_edges(commit_id, file_id, parent, old_file_id,"
                    " skip_reason) values (?,?,?,?,?)",
                    (commit_id, file_id, edge.parent, self._file_id(edge.old_path),
                     edge.skip_reason))
                self.con.executemany(
                    "insert into merge_hunks(commit_id, file_id, parent, old_start, old_lines,"
                    " new_start, new_lines) values (?,?,?,?,?,?,?)",
                    ((commit_id, file_id, edge.parent, *h) for h in edge.hunks))

    def _reread_merges(self) -> None:
        """Merges stored before the store had merge_files (schema 5), or symbol changes of
        their own (schema 11): read them again, once. In one transaction, so that a stopped run
        leaves the flag for the next one."""
        con = self.con
        ids = dict(con.execute("select sha, id from commits where is_merge = 1"))
        merges = [sha for sha in ids if self._commit(sha) is not None]
        with con:
            con.execute("delete from merge_hunks")
            con.execute("delete from merge_edges")
            con.execute("delete from merge_files")
            con.execute("delete from symbol_changes where commit_id in"
                        " (select id from commits where is_merge = 1)")
            mark_unsettled(con, 0)   # merges of any age: settled with this run's HEAD
            for _, record in self._records(merges):
                self._write_merge_files(ids[record.sha], record)
                self._write_symbols(ids[record.sha], record)
            con.execute("delete from meta where key = 'reread_merges'")

    def _commit(self, sha: str) -> pygit2.Commit | None:
        """The commit, None when the repository no longer has it (a rewrite, then gc)."""
        return find_commit(self.repo, sha)

    # -- memory ------------------------------------------------------------------------------

    def _memory(self) -> dict:
        """Items for the new commits and changed documents, their vectors, then the areas."""
        con = self.con
        with con:
            added = add_commit_items(con, self._phase_progress) + refresh_docs(con, self._read_blob)
            compact_lexical(con, added)
            # Note items follow their targets as indexed now (a rebuild re-imports notes before
            # their files exist) and disappear once the note expired.
            sync_note_items(con)
            relink_note_items(con)
        choice = choose_model(self.model, self.all_settings.memory.model or None,
                              get_meta(con, "model_choice") or get_meta(con, "embed_model"))
        if choice.source != "default":
            with con:
                set_meta(con, "model_choice", choice.name)
        embedder, replaced, embedded = None, None, 0
        if choice.disabled:
            with con:
                drop_vectors(con, f"turned off (model = none, from {choice.source})")
            semantic = "off: model = none"
        else:
            try:
                # Loading a model costs ~0.3-0.8 s (imports): skip it when every vector is there
                # and was made by this very model.
                pending = pending_vectors(con)
                current = vectors_current(con, choice.name, None, model_fingerprint(choice.name))
                if pending == 0 and current:
                    semantic = f"on: {choice.name} ({get_meta(con, 'embed_dim')} dimensions)"
                elif current and pending <= LIGHT_TEXTS:
                    # A few new texts (an update): the query path reads only their tokens' rows.
                    embedder = load_query_model(choice.name, con)
                else:
                    embedder = load_model(choice.name)
            except ModelUnavailable as exc:
                semantic = f"off: {exc}"
                if not get_meta(con, "embed_model"):
                    with con:
                        set_meta(con, "embed_off_reason", str(exc))
            else:
                if embedder is not None:
                    with con:
                        replaced = prepare_vectors(con, embedder)
                    embedded = embed_missing(con, embedder, self._phase_progress)
                    semantic = f"on: {embedder.name} ({embedder.dim} dimensions)"
            if semantic.startswith("on:"):
                with con:   # what spares `cortex search` loading the tokenizer (wordpiece.py)
                    keep_vocabulary(con, choice.name)
        areas = update_areas(con, self.all_settings.clusters, embedder, self._phase_progress)
        return dict(items_added=added, texts_embedded=embedded,
                    items_without_vector=pending_vectors(con), semantic=semantic,
                    model_replaced=replaced, areas=areas)

    def _phase_progress(self, done: int, total: int, phase: str) -> None:
        if self.progress:
            self.progress(done, total, phase)

    def _read_blob(self, blob_id: str) -> bytes | None:
        return read_blob(self.repo, blob_id)

    # -- HEAD --------------------------------------------------------------------------------

    def _snapshot_head(self, head: pygit2.Commit) -> None:
        """Record where every symbol of HEAD is. Only files whose blob changed since the last
        snapshot are re-read; many of them (a first index) are read by worker processes."""
        con = self.con
        previous = dict(con.execute("select file_id, blob from head_files"))
        seen: set[int] = set()
        changed: list[tuple[str, str]] = []
        for path, blob_id in _tree_blobs(self.repo, head.tree_id, self.missing):
            file_id = self._file_id(path)
            seen.add(file_id)
            if previous.get(file_id) != blob_id:
                changed.append((path, blob_id))
        for file_id in previous.keys() - seen:
            self._forget_head_file(file_id)
            con.execute("delete from head_files where file_id = ?", (file_id,))
        if self.jobs > 1 and len(changed) >= PARALLEL_MIN_FILES:
            from cortex_core.index.read_pool import head_files_parallel
            results = head_files_parallel(self.repo.workdir, self.settings, changed, self.jobs,
                                          self.online, self.loose.damaged)
        else:
            results = ((i, *self._head_file(path, blob_id))
                       for i, (path, blob_id) in enumerate(changed))
        for i, reason, symbols, parses in results:
            path, blob_id = changed[i]
            if reason == "missing object":
                self.missing.add(blob_id)
            self._store_head_file(self._file_id(path), blob_id, reason, symbols)
            self.parses += parses

    def _head_file(self, path: str, blob_id: str) -> tuple[str | None, list[Symbol], int]:
        before = self.reader.parser.parse_count()
        reason, symbols = self.reader.head_file(path, blob_id)
        return reason, symbols, self.reader.parser.parse_count() - before

    def _store_head_file(self, file_id: int, blob_id: str, reason: str | None,
                         symbols: list[Symbol]) -> None:
        self._forget_head_file(file_id)
        self.con.execute("insert or replace into head_files(file_id, blob, skip_reason)"
                         " values (?,?,?)", (file_id, blob_id, reason))
        spans = [(self._symbol_id(file_id, sym), sym.start_line, sym.end_line) for sym in symbols]
        # A living symbol has HEAD's kind (a class that became an interface; symbol_kinds.py).
        kinds: dict[int, list[str]] = {}
        for (symbol_id, _, _), sym in zip(spans, symbols):
            kinds.setdefault(symbol_id, []).append(sym.kind)
        self.con.executemany("update symbols set alive = 1, kind = ? where id = ?",
                             ((preferred_kind(held), symbol_id)
                              for symbol_id, held in kinds.items()))
        self.con.executemany("insert into symbol_spans(symbol_id, start_line, end_line)"
                             " values (?,?,?)", spans)

    def _forget_head_file(self, file_id: int) -> None:
        self.con.execute("delete from symbol_spans where symbol_id in"
                         " (select id from symbols where file_id = ?)", (file_id,))
        self.left_head.update(row[0] for row in self.con.execute(
            "update symbols set alive = 0 where file_id = ? and alive = 1 returning id",
            (file_id,)))

    # -- identities --------------------------------------------------------------------------

    def _file_id(self, path: str) -> int:
        file_id = self.file_ids.get(path)
        if file_id is None:
            file_id = self.con.execute("select id from files where path = ?", (path,)).get
            if file_id is None:
                file_id = self.con.execute("insert into files(path, language) values (?, ?)"
                                           " returning id", (path, language_for_path(path))).get
            _keep(self.file_ids, path, file_id)
        return file_id

    def _symbol_id(self, file_id: int, symbol: Symbol) -> int:
        key = (file_id, symbol.qualname)
        symbol_id = self.symbol_ids.get(key)
        if symbol_id is None:
            symbol_id = self.con.execute("select id from symbols where file_id = ? and"
                                         " qualname = ?", key).get
            if symbol_id is None:
                symbol_id = self.con.execute(
                    "insert into symbols(file_id, qualname, name, kind) values (?,?,?,?)"
                    " returning id", (file_id, symbol.qualname, symbol.name, symbol.kind)).get
            _keep(self.symbol_ids, key, symbol_id)
        return symbol_id


def _pending_flips(con, flipped: list[int]) -> list[int]:
    """The stored commits whose reachability changed since the pruning was last brought up to
    date: `flipped`, this run's, and those of runs stopped before they got to it (meta
    `pruned_flipped`, which this records, in the transaction that turned the flags)."""
    pending = json.loads(get_meta(con, "pruned_flipped") or "[]")
    if flipped:
        pending = sorted(set(pending) | set(flipped))
        set_meta(con, "pruned_flipped", json.dumps(pending, separators=(",", ":")))
    return pending


def _keep(ids: dict, key, value: int) -> None:
    """Remember an id; a map that reached IDS_KEPT keys starts over (the store has them all)."""
    if len(ids) >= IDS_KEPT:
        ids.clear()
    ids[key] = value


def _tree_blobs(repo: pygit2.Repository, tree_id, missing: set[str]):
    """(path, blob id) of every file in a tree, recursively; submodules and links to trees skipped.
    A tree that cannot be read (missing, or its object damaged) adds its id to `missing`: the
    files under it are not listed, the others are."""
    stack = [(tree_id, "")]
    while stack:
        oid, base = stack.pop()
        try:
            entries = [(path_text(e.raw_name), e.type_str, e.id) for e in repo[oid]]
        except (KeyError, ValueError, pygit2.GitError):
            missing.add(str(oid))
            continue
        for name, kind, entry_id in entries:
            if kind == "tree":
                stack.append((entry_id, base + name + "/"))
            elif kind == "blob":
                yield base + name, str(entry_id)
