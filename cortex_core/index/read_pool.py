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
few MB live, after 8,000 commits). So each chunk reports the worker's resident memory, and a
worker over `index.worker_memory_mb` is replaced by a fresh process once its queued chunk is done
(a recycle costs a process start and a cold cache, like the start of a range; the records do not
depend on the cache, so neither does the store).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Callable, Iterator

import pygit2

from cortex_core.git.commit_reader import CommitReader, CommitRecord
from cortex_core.config import IndexSettings
from cortex_core.git.object_source import ObjectSource
from cortex_core.lang.symbols import Symbol

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


class WorkerError(Exception):
    """Whatever a worker raised, as plain text: an exception of a C extension (pygit2's
    NotFoundError) cannot always be pickled back, and the parent must still say what failed."""


def _start(repo_path: str, settings: IndexSettings, fetch: bool = False,
           roots: frozenset[str] = frozenset()) -> None:
    """`fetch`: a partial clone whose remote answered: read what libgit2 lacks through git.
    `roots`: commits read as adding their whole tree (CommitReader.roots)."""
    global _reader
    pygit2.settings.cache_max_size(GIT_CACHE_BYTES)
    pygit2.settings.mwindow_size = PACK_WINDOW_BYTES
    pygit2.settings.mwindow_mapped_limit = PACK_MAPPED_BYTES
    _reader = CommitReader(pygit2.Repository(repo_path), settings,
                           objects=ObjectSource(repo_path, True) if fetch else None, roots=roots)


def _read(shas: list[str]) -> tuple[list[CommitRecord], int]:
    """The records of `shas`, and this process's resident memory after reading them."""
    assert _reader is not None
    out = []
    for sha in shas:
        try:
            out.append(_reader.read(_reader.repo.get(sha)))
        except Exception as exc:  # noqa: BLE001 - must reach the parent as text
            raise WorkerError(f"reading commit {sha[:10]}: {type(exc).__name__}: {exc}") from None
    return out, resident_bytes()


def resident_bytes() -> int:
    """This process's resident memory now (Linux); elsewhere its peak so far (getrusage), which
    recycles a worker after a spike as well; 0 when neither can be read (never recycled)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
        import sys
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except (ImportError, OSError):
        return 0
    return peak if sys.platform == "darwin" else peak * 1024   # bytes on macOS, KiB elsewhere


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
                        workers: int, fetch: bool = False
                        ) -> Iterator[tuple[int, str | None, list[Symbol], int]]:
    """(position in `items`, skip reason, symbols, blobs parsed) for files of the HEAD tree."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start,
                             initargs=(repo_path, settings, fetch)) as pool:
        starts = range(0, len(items), CHUNK)
        for start, results in zip(starts, pool.map(_head_files,
                                                   (items[i:i + CHUNK] for i in starts))):
            for offset, (reason, symbols, parses) in enumerate(results):
                yield start + offset, reason, symbols, parses


RANGES_PER_WORKER = 3  # later history is often heavier: smaller ranges, handed out on demand,
                       # keep workers busy to the end, at the price of a cold cache per range


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
                  roots: frozenset[str] = frozenset()) -> Iterator[tuple[int, CommitRecord]]:
    """(position in `shas`, record) for every commit, in completion order. `stats` receives
    "recycled" (workers replaced for their memory) and "peak_worker_bytes" (the most a worker
    reported) when the reading ends."""
    context = multiprocessing.get_context("spawn")
    budget = settings.worker_memory_mb * 1024 * 1024

    def spawn() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(1, mp_context=context, initializer=_start,
                                   initargs=(repo_path, settings, fetch, roots))

    crew = [_Worker(spawn) for _ in range(workers)]
    size = max(CHUNK, -(-len(shas) // (workers * RANGES_PER_WORKER)))
    ranges = [(start, min(start + size, len(shas))) for start in range(0, len(shas), size)]
    ranges.reverse()  # popped from the end: in history order
    pending: dict[Future, tuple[_Worker, int]] = {}  # future -> (worker, start)
    peak = 0

    def feed(worker: _Worker) -> None:
        """Keep QUEUED chunks with the worker: the rest of its range, then a new range."""
        while worker.queued < QUEUED and not worker.recycle:
            if not worker.todo:
                if not ranges or worker.queued:   # a new range once the last one is all back
                    return
                first, end = ranges.pop()
                worker.todo.extend((s, min(s + CHUNK, end)) for s in range(first, end, CHUNK))
            begin, stop = worker.todo.popleft()
            pending[worker.pool.submit(_read, shas[begin:stop])] = (worker, begin)
            worker.queued += 1

    try:
        for worker in crew:
            feed(worker)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: pending[f][1]):
                worker, start = pending.pop(future)
                worker.queued -= 1
                records, resident = future.result()
                peak = max(peak, resident)
                if budget and resident > budget:
                    worker.recycle = True
                if worker.recycle and not worker.queued:
                    worker.replace()
                feed(worker)
                for offset, record in enumerate(records):
                    yield start + offset, record
    finally:
        for worker in crew:
            worker.pool.shutdown(wait=True, cancel_futures=True)
        if stats is not None:
            stats.update(recycled=sum(w.recycled for w in crew), peak_worker_bytes=peak)
