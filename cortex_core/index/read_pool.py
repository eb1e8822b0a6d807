"""Reading commits in parallel: worker processes read contiguous ranges of the history (diffs,
parses, symbol changes) while the one writer stores what they return.

Each worker reads contiguous ranges of commits in order, so its parser cache still sees a file's
versions one after another and re-parses them incrementally; only the first version of each file
in a range is parsed cold. Workers are spawned (not forked): the parent holds a SQLite
connection and libgit2 state that must not be copied into a child.

Bounded memory: a worker's caches are bounded by size (parser, blobs, tokens, and libgit2's
object cache: GIT_CACHE_BYTES), but what a long-lived process holds still creeps up with the
history it has read: a big commit lifts Python's small-object arenas, which stay mostly empty
and fragmented afterwards, and libgit2's pack state grows (sympy: 210 MB of arenas of which a
few MB live, after 8,000 commits). So a worker looks at its resident memory before each commit:
past its share of `index.memory_mb` (worker_plan) it stops and returns what it has read, the
rest of its chunks goes back to the parent, and the worker is replaced by a fresh process (a
recycle costs a process start and a cold cache, like the start of a range; the records do not
depend on the cache, so neither does the store). A worker thus holds at most its share plus what
one commit takes; checked once per chunk instead, it overshot by what 32 commits take (sympy:
up to 290 MB). What one commit takes is mostly the syntax tree of its largest file, so that is
checked before the commit too (_needs_room): the worker makes room for it, or a fresh worker
reads the commit.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Callable, Iterator, NamedTuple

import pygit2

from cortex_core.git.commit_reader import CommitReader, CommitRecord
from cortex_core.git.loose_objects import hide
from cortex_core.config import IndexSettings
from cortex_core.errors import WorkerError
from cortex_core.git.object_source import ObjectSource
from cortex_core.index.process_memory import release_memory, resident_bytes, trim_heap
from cortex_core.lang.symbols import CACHED_SYMBOLS, TREE_CACHE_BYTES, Symbol, SymbolParser

CHUNK = 32  # commits per task: small enough to stream progress, large enough to amortize IPC
QUEUED = 2  # chunks handed to a worker at a time: one running, one ready when it ends
# libgit2's object cache (commits and trees; 256 MB by default, per process). Its hot set while
# reading a history is much smaller: on sympy it held 25-30 MB after the first thousand commits
# and crept on towards the default, to ~100 MB per worker, as the history went by.
GIT_CACHE_BYTES = 32 * 1024 * 1024
# libgit2 maps pack files in windows of up to 1 GB, up to 8 GB per process by default: every
# page read stays resident and counts in the process's memory (file pages, shared by the
# workers). Smaller windows under a small limit keep only the parts read lately.
PACK_WINDOW_BYTES = 32 * 1024 * 1024
PACK_MAPPED_BYTES = 64 * 1024 * 1024

_reader: CommitReader | None = None
_commits_read = 0   # by this process: a fresh worker reads at least one commit, whatever its size
# A blob's syntax tree takes up to ~110x its text (sympy's generated Python: a 1.44 MB file,
# 154 MB of tree; 0.73 MB, 63 MB), built all at once: a worker at its share that read a commit of
# a 2 MB file grew by 250 MB inside it, past any check between commits. So before a commit the
# worker adds the tree of its largest parsed blob to what it holds; past its share, it first
# drops its caches (parser, blobs, libgit2's), then gives the commit back to a fresh process
# if that holds less. A worker's peak is then about the larger of its share and a fresh worker
# plus the largest tree (120x the largest file parsed; max_file_bytes bounds it).
TREE_PER_BYTE = 120
# Only a tree of at least this part of the share is looked at: a smaller one passes the share
# by little (the tree cache evicts as it grows), while dropping the caches for it (a worker near
# its share would, for most files) cost all of sympy's reading 10% more time.
GUARDED_SHARE = 8
# About what a fresh worker holds (40-50 MiB): a worker that dropped its caches and still holds
# more gives the commit back (a fresh one has more room); one that holds no more reads it.
FRESH_BYTES = 64 * 1024 * 1024


def _start(repo_path: str, settings: IndexSettings, fetch: bool = False,
           roots: frozenset[str] = frozenset(), budget: int = 0,
           damaged: frozenset[str] = frozenset()) -> None:
    """`fetch`: a partial clone whose remote answered: read what libgit2 lacks through git.
    `roots`: commits read as adding their whole tree (CommitReader.roots). `budget`: the
    worker's memory budget in bytes (0: none), which sizes its parser's caches. `damaged`:
    loose objects the parent found unreadable (loose_objects), read as missing."""
    global _reader
    _exit_with_parent()
    pygit2.settings.cache_max_size(GIT_CACHE_BYTES)
    pygit2.settings.mwindow_size = PACK_WINDOW_BYTES
    pygit2.settings.mwindow_mapped_limit = PACK_MAPPED_BYTES
    repo = hide(pygit2.Repository(repo_path), damaged)
    _reader = CommitReader(repo, settings, parser=_parser(budget),
                           objects=ObjectSource(repo_path, True) if fetch else None, roots=roots)


def _exit_with_parent() -> None:
    """Exit when the parent dies. A worker waits for tasks on a queue whose write end it holds
    too, so a parent killed outright (`kill -9`, the OOM killer) left it waiting for ever,
    holding its memory and the packs open. The parent's end of the spawn pipe closes when it
    dies, whatever killed it; a thread waits on that."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="cortex-parent", daemon=True).start()


# What of a worker's budget its parser's caches may fill: a tree takes 50-110x its text, so the
# trees up to a quarter to a half of it; a cached symbol ~200 bytes, so the symbols an eighth.
# They are most of what a worker holds alive; the allocator's fragmentation around them and what
# a commit reads take the rest, and past the budget the worker is replaced. With the default
# caches a 190 MB share was passed every ~125 commits on sympy's commits 40,000-42,000 (16
# replacements, 60 s; 45 s unbounded); with trees up to half the share, 3 replacements and
# 50 s. On all of sympy, trees up to half the share: 120 replacements, CPU 1,213 s; a quarter:
# 47 replacements, 1,166 s, as many blobs parsed as unbounded caches (docs/numbers.md).
TREE_SHARE = 200     # budget / TREE_SHARE bytes of text in the tree cache
SYMBOL_SHARE = 1600  # budget / SYMBOL_SHARE symbols in the symbols cache


def _parser(budget: int) -> SymbolParser | None:
    """A parser whose caches fit in `budget` bytes (None: the default caches)."""
    if not budget:
        return None
    return SymbolParser(tree_cache_bytes=min(TREE_CACHE_BYTES, max(250_000, budget // TREE_SHARE)),
                        cached_symbols=min(CACHED_SYMBOLS, max(20_000, budget // SYMBOL_SHARE)),
                        keep_oversized=False)


def _needs_room(tree: int, budget: int) -> bool:
    """Whether a tree of `tree` bytes is one to make room for: big, and past `budget` beside
    what this worker holds."""
    return tree >= budget // GUARDED_SHARE and resident_bytes() + tree > budget


def _drop_caches() -> None:
    """What a fresh worker would not hold: the parser's trees and symbols, the blobs, libgit2's
    caches, and the heap's free pages."""
    assert _reader is not None
    _reader.parser.forget()
    _reader.forget_blobs()
    gc.collect()
    release_memory(_reader.repo)


class _Chunk(NamedTuple):
    records: list[CommitRecord]
    resident: int        # the worker's resident memory after reading them, in bytes
    dropped: int = 0     # times it dropped its caches to make room for a big tree
    given_back: bool = False   # it stopped before a commit whose tree would not fit in it


def _read(shas: list[str], budget: int = 0) -> _Chunk:
    """The records of `shas`. Past `budget` bytes resident (0: no budget) it stops before the
    next commit, and before a commit whose largest tree would not fit beside what it holds even
    with its caches dropped: the records are then those of the first shas only, and the process
    should be replaced."""
    global _commits_read
    assert _reader is not None
    out: list[CommitRecord] = []
    dropped = 0
    for sha in shas:
        if budget and _commits_read and resident_bytes() > budget:
            break
        try:
            commit, diff = _reader.repo.get(sha), None
            if budget and _commits_read:   # a fresh worker reads one commit, whatever it takes
                diff = _reader.diff_of(commit)
                tree = TREE_PER_BYTE * _reader.largest_parse(diff) if diff is not None else 0
                if _needs_room(tree, budget):
                    commit = diff = None   # nothing of libgit2's held while its caches go
                    _drop_caches()
                    dropped += 1
                    left = resident_bytes()
                    if left + tree > budget and left > FRESH_BYTES:
                        return _Chunk(out, left, dropped, True)   # a fresh worker holds less
                    commit = _reader.repo.get(sha)
                    diff = _reader.diff_of(commit)
            _commits_read += 1
            out.append(_reader.read(commit, diff))
        except Exception as exc:  # noqa: BLE001 - must reach the parent as text
            raise WorkerError(f"reading commit {sha[:10]}: {type(exc).__name__}: {exc}") from None
    return _Chunk(out, resident_bytes(), dropped)


def _head_files(items: list[tuple[str, str]]) -> list[tuple[str | None, list[Symbol], int]]:
    assert _reader is not None
    out = []
    for path, blob_id in items:
        before = _reader.parser.parse_count()
        try:
            reason, symbols = _reader.head_file(path, blob_id)
        except Exception as exc:  # noqa: BLE001 - must reach the parent as text
            raise WorkerError(f"reading {path} at HEAD: {type(exc).__name__}: {exc}") from None
        out.append((reason, symbols, _reader.parser.parse_count() - before))
    return out


def head_files_parallel(repo_path: str, settings: IndexSettings, items: list[tuple[str, str]],
                        workers: int, fetch: bool = False, damaged: frozenset[str] = frozenset()
                        ) -> Iterator[tuple[int, str | None, list[Symbol], int]]:
    """(position in `items`, skip reason, symbols, blobs parsed) for files of the HEAD tree."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start,
                             initargs=(repo_path, settings, fetch, frozenset(), 0,
                                       damaged)) as pool:
        starts = range(0, len(items), CHUNK)
        for start, results in zip(starts, pool.map(_head_files,
                                                   (items[i:i + CHUNK] for i in starts))):
            for offset, (reason, symbols, parses) in enumerate(results):
                yield start + offset, reason, symbols, parses


# The main process while workers read (the writer: 75-90 MiB on sympy's first half; its walk's
# ids and parents grow ~400 bytes a commit) and multiprocessing's resource tracker (8 MiB).
MAIN_MB = 120
MIN_WORKER_MB = 180   # below this share a worker is replaced every few dozen commits (sympy)
FLOOR_WORKER_MB = 64  # a share never goes below: a fresh worker takes 40-50 MiB


def worker_plan(settings: IndexSettings, jobs: int) -> tuple[int, int]:
    """(workers, each one's memory budget in bytes) for `jobs` asked: `worker_memory_mb` when
    set, otherwise `memory_mb` less the main process's part, shared by as many of the workers
    as get MIN_WORKER_MB each (at least one). Never a share below FLOOR_WORKER_MB: a fresh
    worker would be replaced after every commit."""
    if settings.worker_memory_mb:
        return jobs, max(FLOOR_WORKER_MB, settings.worker_memory_mb) * 1024 * 1024
    room = settings.memory_mb - MAIN_MB
    workers = max(1, min(jobs, room // MIN_WORKER_MB))
    return workers, max(FLOOR_WORKER_MB, room // workers) * 1024 * 1024


# A chunk of records this large (symbol changes, files, a merge's files) leaves the main process
# holding what unpickling it took once it is written: sympy's commit of 1,742 files and 39,380
# symbol changes took the writer from 102 to 127 MiB resident for the rest of the run, and each
# such commit raised it again. Once the writer has moved on to a later chunk, the heap's free
# pages go back (trim_heap, a few ms): on all of sympy the writer's median during the commits
# went from 78 to 65 MiB, its most from 149 to 136 (docs/numbers.md, "The peak at two sizes").
HEAVY_ITEMS = 5_000


def _items(records: list[CommitRecord]) -> int:
    return sum(len(r.symbols) + len(r.files) + len(r.merge_files) for r in records)


# Ranges are cut as they are handed out, each a share of what is left (guided scheduling):
# long ranges first, short ones at the end, so no worker reads on alone for long while the
# others have nothing left (later history is often heavier). With ranges of equal length (a
# third of a worker's part each) the last worker read on alone for most of a range: 98 s of
# 1,179 s on all of sympy with two workers (docs/numbers.md). A range starts with a cold
# cache (files first met in it are parsed in full), which costs little: three ranges read by
# fresh readers parsed as many files in full as one reader did.
RANGE_SHARE = 2      # a range is what is left / (workers × RANGE_SHARE)
MIN_RANGE = 8 * CHUNK   # commits; the last ranges, and a worker's tail at most about one


def next_range(first: int, total: int, workers: int) -> tuple[int, int] | None:
    """The range of commits handed out next, from `first` on, or None when none is left.
    A short history is shared out in shorter ranges: every worker gets one."""
    left = total - first
    if left <= 0:
        return None
    share = max(1, workers) * RANGE_SHARE
    shortest = max(1, min(MIN_RANGE, -(-total // share)))
    size = max(shortest, -(-left // share))
    if left - size < shortest // 2:   # no stub of a range left behind
        size = left
    return first, first + size


class _Worker:
    """One worker process (a pool of one, so that it can be replaced) and the chunks of its
    current range not handed to it yet."""

    def __init__(self, spawn: Callable[[], ProcessPoolExecutor]):
        self._spawn = spawn
        self.pool = spawn()
        self.todo: deque[tuple[int, int]] = deque()   # (start, stop) of chunks
        self.queued = 0          # chunks handed to the process and not returned yet
        self.recycle = False     # over its memory budget: replace it once its queue is empty
        self.recycled = 0

    def replace(self) -> None:
        self.pool.shutdown(wait=True)   # idle: it only has to exit
        self.pool = self._spawn()
        self.recycle = False
        self.recycled += 1


def read_parallel(repo_path: str, settings: IndexSettings, shas: list[str],
                  workers: int, fetch: bool = False, stats: dict | None = None,
                  roots: frozenset[str] = frozenset(), damaged: frozenset[str] = frozenset()
                  ) -> Iterator[tuple[int, CommitRecord]]:
    """(position in `shas`, record) for every commit, in completion order, read by at most
    `workers` processes (worker_plan). `stats` receives "workers", "budget_bytes" (each one's),
    "recycled" (workers replaced for their memory), "caches_dropped" (times a worker dropped
    its caches to make room for a big tree), "given_back" (commits handed to a fresh worker for
    the tree they would build), "peak_worker_bytes" (the most a worker reported) and
    "heap_trims" (when this process gave back its heap after a heavy chunk, HEAVY_ITEMS: the
    position of the record the writer held then, each time) and "ranges" (handed out:
    next_range) when the reading ends.
    `damaged`: loose objects read as missing (loose_objects.check_loose)."""
    context = multiprocessing.get_context("spawn")
    workers, budget = worker_plan(settings, workers)

    def spawn() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(1, mp_context=context, initializer=_start,
                                   initargs=(repo_path, settings, fetch, roots, budget,
                                             damaged))

    crew = [_Worker(spawn) for _ in range(workers)]
    handed = ranges = 0   # commits handed out as ranges (in history order), and ranges
    pending: dict[Future, tuple[_Worker, int, int]] = {}  # future -> (worker, start, stop)
    peak = given_back = dropped = 0
    trims: list[int] = []
    trim_due = False   # a heavy chunk was written since the last trim

    def feed(worker: _Worker) -> None:
        """Keep QUEUED chunks with the worker: the rest of its range, then a new range."""
        nonlocal handed, ranges
        while worker.queued < QUEUED and not worker.recycle:
            if not worker.todo:
                if worker.queued:   # a new range once the last one is all back
                    return
                taken = next_range(handed, len(shas), workers)
                if taken is None:
                    return
                first, end = taken
                handed = end
                ranges += 1
                worker.todo.extend((s, min(s + CHUNK, end)) for s in range(first, end, CHUNK))
            begin, stop = worker.todo.popleft()
            pending[worker.pool.submit(_read, shas[begin:stop], budget)] = (worker, begin, stop)
            worker.queued += 1

    try:
        for worker in crew:
            feed(worker)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            # Popped one at a time: a future keeps its chunk alive, so none is held once read.
            ordered = sorted(done, key=lambda f: pending[f][1])
            done = set()
            while ordered:
                future = ordered.pop(0)
                worker, start, stop = pending.pop(future)
                worker.queued -= 1
                chunk = future.result()
                records, resident = chunk.records, chunk.resident
                peak = max(peak, resident)
                given_back += chunk.given_back
                dropped += chunk.dropped
                future = chunk = None
                if start + len(records) < stop:   # stopped at its budget: the rest comes back
                    worker.todo.append((start + len(records), stop))
                    worker.todo = deque(sorted(worker.todo))   # in history order again
                    worker.recycle = True
                if budget and resident > budget:
                    worker.recycle = True
                if worker.recycle and not worker.queued:
                    worker.replace()
                feed(worker)
                for offset, record in enumerate(records):
                    yield start + offset, record
                    if trim_due:   # the writer holds a later chunk's record: the heavy are gone
                        trim_due = False
                        if trim_heap():
                            trims.append(start + offset)
                trim_due = trim_due or _items(records) >= HEAVY_ITEMS
    finally:
        for worker in crew:
            worker.pool.shutdown(wait=True, cancel_futures=True)
        if stats is not None:
            stats.update(workers=workers, budget_bytes=budget, peak_worker_bytes=peak,
                         ranges=ranges, recycled=sum(w.recycled for w in crew),
                         given_back=given_back, caches_dropped=dropped, heap_trims=trims)
