"""Reading commits in parallel: worker processes read contiguous ranges of the history (diffs,
parses, symbol changes) while the one writer stores what they return.

Each worker takes one contiguous range and reads it in order, so its parser cache still sees a
file's versions one after another and re-parses them incrementally; only the first version of
each file in a range is parsed cold. Workers are spawned (not forked): the parent holds a SQLite
connection and libgit2 state that must not be copied into a child.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Iterator

import pygit2

from .commit_reader import CommitReader, CommitRecord
from .config import IndexSettings

CHUNK = 32  # commits per task: small enough to stream progress, large enough to amortize IPC

_reader: CommitReader | None = None


def _start(repo_path: str, settings: IndexSettings) -> None:
    global _reader
    _reader = CommitReader(pygit2.Repository(repo_path), settings)


def _read(shas: list[str]) -> list[CommitRecord]:
    assert _reader is not None
    return [_reader.read(_reader.repo.get(sha)) for sha in shas]


def read_parallel(repo_path: str, settings: IndexSettings, shas: list[str],
                  workers: int) -> Iterator[tuple[int, CommitRecord]]:
    """(position in `shas`, record) for every commit, in completion order."""
    context = multiprocessing.get_context("spawn")
    pools = [ProcessPoolExecutor(1, mp_context=context, initializer=_start,
                                 initargs=(repo_path, settings)) for _ in range(workers)]
    pending: dict[Future, int] = {}
    try:
        size = -(-len(shas) // workers)
        for w, pool in enumerate(pools):
            for start in range(w * size, min(len(shas), (w + 1) * size), CHUNK):
                end = min(start + CHUNK, (w + 1) * size, len(shas))
                pending[pool.submit(_read, shas[start:end])] = start
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=pending.__getitem__):
                start = pending.pop(future)
                for offset, record in enumerate(future.result()):
                    yield start + offset, record
    finally:
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
