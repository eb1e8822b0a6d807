"""Which rules read a store's history, so that a store read by earlier ones says so.

How definitions are read and paired (their ranges, the pairing of renames) changes now and then.
An incremental run reads only new commits: a store built by an earlier Cortex keeps the earlier
reading of every commit it had, and mixes the two from then on, which nothing else would tell a
user. Each store records the version of the reader that read its oldest commits (meta
`history_reader`, set by the run that starts an empty store, never raised by later runs); a
store from before the record counts as version 1. A rebuild reads it all again; the front ends
say how (cortex_cli.render.earlier_reader).
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from cortex_core.store.store import get_meta, set_meta

READER_VERSION = 2
# What each version reads differently from the one before: said to the user of an older store.
CHANGES = {
    2: "Go declarations take the doc comment above them; functions renamed behind a new wrapper "
       "of their old name, and names made plural, private or unexported, are followed",
}
_META = "history_reader"


@dataclass(frozen=True)
class EarlierReader:
    """A store whose oldest commits an earlier reader read."""
    version: int
    current: int
    since: list[str]   # what the current reader does differently (CHANGES), oldest first


def record(con: apsw.Connection, empty: bool) -> None:
    """Called by every index run before it writes a commit: an empty store is read by this
    reader; a store with commits and no record was read by version 1."""
    if get_meta(con, _META) is None:
        set_meta(con, _META, str(READER_VERSION if empty else 1))


def earlier_reader(con: apsw.Connection) -> EarlierReader | None:
    """The reader that read the store's oldest commits, when it is not this one; None for a
    store this reader read (or an empty one)."""
    raw = get_meta(con, _META)
    if raw is None:
        if not con.execute("select exists(select 1 from commits)").get:
            return None
        version = 1
    else:
        try:
            version = int(raw)
        except ValueError:
            version = 1
    if version >= READER_VERSION:
        return None
    return EarlierReader(version, READER_VERSION,
                         [CHANGES[v] for v in range(version + 1, READER_VERSION + 1)
                          if v in CHANGES])
