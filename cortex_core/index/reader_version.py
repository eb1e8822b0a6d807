"""Which rules read each commit of a store, so that a store read by other ones says so.

How definitions are read and paired (their ranges, the pairing of renames) changes now and then.
An incremental run reads only new commits: a store built by an earlier Cortex keeps the earlier
reading of every commit it had (and of the ranges of files not changed since), and mixes the two
from then on, which nothing else would tell a user; so does a store that an older Cortex
extended. Each commit records the version of the reader that read it (commits.reader; NULL:
before the record, version 1). A rebuild reads it all again; the front ends say how
(cortex_cli.render.earlier_reader).
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

READER_VERSION = 7
# What each version reads differently from the one before: said to the user of an older store.
CHANGES = {
    2: "Go declarations take the doc comment above them; functions renamed behind a new wrapper "
       "of their old name, and names made plural, private or unexported, are followed",
    3: "a Go `type ( ... )` group of one type starts at its `type` line",
    4: "a file committed with conflict markers is read as one side of its conflicts",
    5: "C headers' `extern \"C\"` blocks; C++ in `.h` headers and past macros; Ruby class "
       "methods (`x[self]`), doc comments, one-line and conditional methods; JavaScript arrow "
       "functions' headers, and functions in a TypeScript assertion (`as T`); PHP attributes, "
       "DocBlocks and heredocs",
    6: "a file name's bytes that are not UTF-8 are kept, as `\\xNN` (two names that differ in "
       "them were one file)",
    7: "a merge that changed a file against every parent follows each parent, also one whose "
       "version of the file is another parent's (the commits reached only through it were "
       "missing from the file's history)",
}


# Changes that can be told not to apply to a store: where one does not, the version before it
# read the store the same, and says nothing. Version 6 changed only paths that held U+FFFD.
_APPLIES = {
    6: lambda con: con.execute("select 1 from files where instr(path, char(65533)) > 0"
                               " limit 1").fetchone() is not None,
    # A merge that changed a file against every parent with fewer diffs than parents (one had
    # no such file, or, before version 7, had an earlier parent's version): rare.
    7: lambda con: con.execute(
        "select 1 from merge_files m join commits c on c.id = m.commit_id"
        " where m.via is null and m.status != 'D' and (select count(*) from merge_edges e"
        " where e.commit_id = m.commit_id and e.file_id = m.file_id)"
        " < length(c.parents) - length(replace(c.parents, ' ', '')) + 1"
        " limit 1").fetchone() is not None,
}


@dataclass(frozen=True)
class EarlierReader:
    """A store whose reachable commits another version of the reader read (also a later one:
    a store a newer Cortex extended)."""
    version: int       # the oldest reader among them; the newest, when none is older
    current: int
    since: list[str]   # what the current reader does differently (CHANGES), oldest first


def earlier_reader(con: apsw.Connection) -> EarlierReader | None:
    """The other reader that read some of the store's reachable commits; None when this one
    read them all (or there are none)."""
    # Each aggregate alone, over the index on (reachable, reader): two look-ups where
    # min(coalesce(...)) read all 62k entries of sympy (9 ms of every run). A commit read
    # before readers were counted (null) is reader 1's.
    oldest, newest, uncounted = con.execute(
        "select (select min(reader) from commits where reachable = 1),"
        " (select max(reader) from commits where reachable = 1),"
        " exists(select 1 from commits where reachable = 1 and reader is null)").fetchone()
    if uncounted:
        oldest = 1 if oldest is None else min(oldest, 1)
        newest = 1 if newest is None else max(newest, 1)
    if oldest is None or oldest == newest == READER_VERSION:
        return None
    version = oldest if oldest < READER_VERSION else newest
    since = [v for v in range(version + 1, READER_VERSION + 1)
             if v in CHANGES and (v not in _APPLIES or _APPLIES[v](con))]
    if version < READER_VERSION and not since:
        return None   # read alike: what changed since does not apply to this store
    return EarlierReader(version, READER_VERSION, [CHANGES[v] for v in since])
