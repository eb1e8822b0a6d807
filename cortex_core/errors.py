"""Errors a user can cause. Front ends print their message on one line and exit 1; anything else
that escapes is a bug in Cortex.

An error the user fixes by doing something (build the index, rebuild it, name a repository)
carries a `Hint`: which action fixes it, not how to ask for it. The message says what happened
in the engine's words; each front end phrases the hint in its own (the command line: "run
`cortex index`"; MCP: "call `sync`"; the language server: its command), so no engine message
names a front end's flag or tool.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hint:
    """The action that fixes an error; `action` is one of ACTIONS."""
    action: str


# action -> what it means (each front end has one phrase for each).
ACTIONS = {
    "index": "build the index (none yet)",
    "upgrade": "index again: the index has an older schema, which a run upgrades",
    "rebuild": "rebuild the index: it is damaged (the notes are kept)",
    "newer": "use a newer Cortex, or rebuild the index: a newer Cortex wrote it",
    "repository": "name a repository: there is none here",
    "budget": "give a larger token budget",
    "focus": "give a question, a target to focus on, or both",
    "retry": "try again in a moment: an indexer is writing",
    "free_space": "free some disk space, then run again",
    "elsewhere": "give the index another place (its own store file), or fix the one named",
    "wait": "wait longer for the other indexer, or run again when it is done",
    "model": "index with an embedding model (semantic search is off in this index)",
    "one_worker": "index again, in one process (a worker process failed)",
    "continue": "index again: the index's first run stopped before HEAD, and a run continues it",
    "foreign": "give this repository an index of its own, or rebuild this one for it",
}


class CortexError(Exception):
    """A problem the user can fix: the message says what happened and, where possible, what to do
    (`hint`: the action, for the front end to phrase)."""

    def __init__(self, message: str = "", hint: Hint | None = None):
        super().__init__(message)
        self.hint = hint

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def phrased(self, words: dict[str, str]) -> str:
        """The message with its hint in a front end's words: `words[action]` is a format string
        over `{message}` (a hint without words gives the message alone)."""
        if self.hint is None or self.hint.action not in words:
            return self.message
        return words[self.hint.action].format(message=self.message)


class NotARepository(CortexError):
    pass


class EmptyRepository(CortexError):
    pass


class StoreError(CortexError):
    """The database cannot be used: unreadable, corrupt, or written by a newer Cortex."""


class NoIndex(StoreError):
    """The repository has no index yet (Hint "index")."""


class OlderSchema(StoreError):
    """The index has an older schema than this Cortex reads (Hint "upgrade")."""


class NewerSchema(StoreError):
    """A newer Cortex wrote the index (Hint "newer")."""


class DamagedStore(StoreError):
    """The database file is damaged or is not a database (Hint "rebuild")."""


class StoreBusy(StoreError):
    """A read or a write waited too long for an indexer's write (Hint "retry")."""


class StoreIOError(StoreError):
    """The disk failed the store: full, a file size limit, an I/O error (Hint "free_space")."""


class IndexerBusy(CortexError):
    """Another indexer holds the write lock of this repository's store."""


class IndexQueued(IndexerBusy):
    """`index --coalesce`: another run already waits its turn and will index the newest commits,
    so this one has nothing to add."""


class NotFound(CortexError):
    """A path or symbol that the index does not know; the message suggests close matches."""


class Ambiguous(NotFound):
    """A short name that several symbols answer to (overloads): the message lists them."""

    def __init__(self, message: str, candidates: list[str]):
        super().__init__(message)
        self.candidates = candidates


class WorkerError(Exception):
    """Whatever an index worker raised, as plain text (index/read_pool.py): an exception of a C
    extension (pygit2's NotFoundError) cannot always be pickled back, and the parent must still
    say what failed. Here, not in read_pool: a short update starts no worker, and catching
    this must not import multiprocessing (30 ms of `cortex index`)."""
