"""Reading commits in parallel: worker processes read contiguous ranges of the history (diffs,
parses, symbol changes) while the one writer stores what they return.

Each worker reads contiguous ranges of commits in order, so its parser cache still sees a file's
versions one after another and re-parses them incrementally; only the first version of each file
in a range is parsed cold. Workers are spawned (not forked): the parent holds a SQLite
connection and libgit2 state that must not be copied into a child.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Iterator

import pygit2

from cortex_core.git.commit_reader import CommitReader, CommitRecord
from cortex_core.config import IndexSettings
from cortex_core.git.object_source import ObjectSource
from cortex_core.lang.symbols import Symbol

CHUNK = 32  # commits per task: small enough to stream progress, large enough to amortize IPC

_reader: CommitReader | None = None


class WorkerError(Exception):
    """Whatever a worker raised, as plain text: an exception of a C extension (pygit2's
    NotFoundError) cannot always be pickled back, and the parent must still say what failed."""


def _start(repo_path: str, settings: IndexSettings, fetch: bool = False) -> None:
    """`fetch`: a partial clone whose remote answered: read what libgit2 lacks through git."""
    global _reader
    _reader = CommitReader(pygit2.Repository(repo_path), settings,
                           objects=ObjectSource(repo_path, True) if fetch else None)


def _read(shas: list[str]) -> list[CommitRecord]:
    assert _reader is not None
    out = []
    for sha in shas:
        try:
            out.append(_reader.read(_reader.repo.get(sha)))
        except Exception as exc:  # noqa: BLE001 - must reach the parent as text
            raise WorkerError(f"reading commit {sha[:10]}: {type(exc).__name__}: {exc}") from None
    return out


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


def read_parallel(repo_path: str, settings: IndexSettings, shas: list[str],
                  workers: int, fetch: bool = False) -> Iterator[tuple[int, CommitRecord]]:
    """(position in `shas`, record) for every commit, in completion order."""
    context = multiprocessing.get_context("spawn")
    pools = [ProcessPoolExecutor(1, mp_context=context, initializer=_start,
                                 initargs=(repo_path, settings, fetch)) for _ in range(workers)]
    size = max(CHUNK, -(-len(shas) // (workers * RANGES_PER_WORKER)))
    ranges = [(start, min(start + size, len(shas))) for start in range(0, len(shas), size)]
    ranges.reverse()  # popped from the end: in history order
    pending: dict[Future, tuple[int, int, bool]] = {}  # future -> (worker, start, last of range)

    def assign(worker: int) -> None:
        if not ranges:
            return
        first, end = ranges.pop()
        for start in range(first, end, CHUNK):
            stop = min(start + CHUNK, end)
            future = pools[worker].submit(_read, shas[start:stop])
            pending[future] = (worker, start, stop == end)

    try:
        for worker in range(workers):
            assign(worker)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: pending[f][1]):
                worker, start, last = pending.pop(future)
                if last:
                    assign(worker)
                for offset, record in enumerate(future.result()):
                    yield start + offset, record
    finally:
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
