"""Turns between the indexer and note writers, so that neither stops the other.

SQLite gives its write lock to whoever asks when it is free; it has no queue. An index run's
transactions follow each other back to back (a batch of commits, then the next), and its
connection asked for the lock again microseconds after each commit while a note writer's busy
handler looked every 1-100 ms: a note written during a run waited out its busy timeout and
failed ("the index is busy"), one in four in a probe on werkzeug. Two flocks beside the
database hand the lock over instead:

- `<db>.note`: a note writer holds it (shared: note writers do not wait for each other here)
  from before it waits for the write lock until its transaction ends. The indexer looks at it
  between items (`wanted`: can it be taken exclusively?); when a note writer holds it, the
  indexer commits early and waits until none does (`store._Writer.hand_over`).
- `<db>.turn`: the indexer holds it (exclusive) while it waits for note writers to finish.
  A note writer waits for it to be free, at most NOTE_TURN_SECONDS, before it takes `.note`:
  notes written back to back cannot keep the indexer waiting, as each one lets the indexer's
  next transaction begin first.

Every wait is bounded. A note writer stopped while it holds `.note` (Ctrl-Z, a debugger) is
waited for once (INDEXER_WAIT_SECONDS); from then on, until `.note` is seen free, the indexer
hands over about once a second and waits STUCK_WAIT_SECONDS only, which lets the other notes
write (waiting for it as for a live one made each item of the run take 10 s; not handing over
at all made the other notes fail). A note writer's waits share one NOTE_WAIT_SECONDS. Flocks go
with their holder's death. Where a lock file cannot be opened (a folder this user cannot write
to takes no notes anyway), no turn is taken or waited for.
"""

from __future__ import annotations

import fcntl
import os
import time
import weakref
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

SUFFIXES = (".note", ".turn")
INDEXER_WAIT_SECONDS = 10.0   # the indexer's wait for note writers, at most: more than theirs
NOTE_WAIT_SECONDS = 5.0       # a note writer's waits in all: the indexer's turn, the write lock
NOTE_TURN_SECONDS = 1.0       # of which for the indexer's turn, at most (it may be stopped)
LOOK_SECONDS = 0.01           # how often a long transaction looks whether a note writer waits
STUCK_LOOK_SECONDS = 1.0      # the same, past a note writer that did not finish in time
STUCK_WAIT_SECONDS = 0.05     # the indexer's wait then: enough for live notes to write
TURN_TAKE_SECONDS = 0.05      # the indexer's wait to take `.turn` (notes look at it shared)


def _open(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:   # ELOOP (a planted link: store.check_location names it), EACCES, EROFS
        return None


def _poll(fd: int, operation: int, seconds: float) -> bool:
    """Take an flock, trying again for `seconds` at most (flock has no timeout of its own);
    whether it was taken. The pauses stay short: what is waited for is a note's write, a few
    milliseconds, or one item of the indexer's."""
    deadline = time.monotonic() + seconds
    pause = 0.0005
    while True:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)   # polling a lock another process holds: nothing to wait on
            pause = min(pause * 2, 0.005)


@contextmanager
def note_turn(db: str) -> Iterator[float]:
    """Around a note writer's transaction on the store `db`; yields the seconds left of its
    NOTE_WAIT_SECONDS, for the write lock it takes inside: one wait in all, as before the turns
    (they added up to 15 s when the indexer and another note held theirs)."""
    deadline = time.monotonic() + NOTE_WAIT_SECONDS
    note = _open(f"{db}.note") if db else None
    turn = _open(f"{db}.turn") if note is not None else None
    try:
        if turn is not None and _poll(turn, fcntl.LOCK_SH, NOTE_TURN_SECONDS):
            fcntl.flock(turn, fcntl.LOCK_UN)   # the indexer waited for earlier notes: it went
        # Shared: refused only for the instant the indexer looks (or by a stopped indexer).
        if note is not None and not _poll(note, fcntl.LOCK_SH, deadline - time.monotonic()):
            os.close(note)
            note = None
        yield max(deadline - time.monotonic(), 0.0)
    finally:
        for fd in (note, turn):
            if fd is not None:
                os.close(fd)   # lets its flock go


class IndexerTurns:
    """The indexer's side, for one connection to the store `db`."""

    def __init__(self, owner: object, db: str) -> None:
        self._note = _open(f"{db}.note") if db else None
        self._turn = _open(f"{db}.turn") if self._note is not None else None
        self._next_look = 0.0
        self.stuck = False   # a note writer did not finish within INDEXER_WAIT_SECONDS
        for fd in (self._note, self._turn):
            if fd is not None:
                weakref.finalize(owner, os.close, fd)

    def wanted(self) -> bool:
        """Whether a note writer holds `.note` (it waits for the write lock, or is about to).
        Looked at every LOOK_SECONDS at most (loops ask at every item); STUCK_LOOK_SECONDS
        past a note writer that did not finish."""
        now = time.monotonic()
        if self._note is None or now < self._next_look:
            return False
        self._next_look = now + (STUCK_LOOK_SECONDS if self.stuck else LOOK_SECONDS)
        return not self._free()

    def _free(self) -> bool:
        """Whether no note writer holds `.note` now; seen free, none is stuck."""
        assert self._note is not None
        if not _poll(self._note, fcntl.LOCK_EX, 0):
            return False
        fcntl.flock(self._note, fcntl.LOCK_UN)
        self.stuck = False
        return True

    @contextmanager
    def before_begin(self) -> Iterator[None]:
        """Around the indexer's BEGIN: when note writers hold `.note`, hold `.turn` (later
        notes wait) and wait for `.note` to be free, at most INDEXER_WAIT_SECONDS (or
        STUCK_WAIT_SECONDS, past one that did not finish)."""
        if self._note is None or self._turn is None or self._free():
            yield
            return
        # A note writer holds `.turn` shared for an instant when it looks at it: one try alone
        # missed it now and then, and six writers back to back then kept `.note` held for the
        # whole wait and stopped the run (a review). Held by more than that: go on beside it.
        turn = _poll(self._turn, fcntl.LOCK_EX, TURN_TAKE_SECONDS)
        try:
            if _poll(self._note, fcntl.LOCK_EX,
                     STUCK_WAIT_SECONDS if self.stuck else INDEXER_WAIT_SECONDS):
                fcntl.flock(self._note, fcntl.LOCK_UN)
                self.stuck = False
            elif not self.stuck:
                self.stuck = True
                self._next_look = time.monotonic() + STUCK_LOOK_SECONDS
            yield
        finally:
            if turn:
                fcntl.flock(self._turn, fcntl.LOCK_UN)
