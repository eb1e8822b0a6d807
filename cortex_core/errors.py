"""Errors a user can cause. Front ends print their message on one line and exit 1; anything else
that escapes is a bug in Cortex."""


class CortexError(Exception):
    """A problem the user can fix: the message says what happened and, where possible, what to do."""


class NotARepository(CortexError):
    pass


class EmptyRepository(CortexError):
    pass


class StoreError(CortexError):
    """The database cannot be used: unreadable, corrupt, or written by a newer Cortex."""


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
