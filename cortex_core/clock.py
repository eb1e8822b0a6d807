"""The one "now" that time windows and recency weights count back from.

Hotspot windows and scores, code lenses and the hover's hotspot flag, `cortex what`, the
recency prior of search and context packs and blast's risk take their `now` from here, on one of
two clocks. Co-change's decay counts commits, not days (a half-life set in days counts on the
first clock): its ranking does not depend on the clock.

- "repository" (the default): the committer date of the indexed HEAD, the commit checked out
  when the index was last brought up to date. An old clone, an archived project or an older
  release branch is seen as it was when it was current: its last 90 days are its last 90 days of
  activity, not an empty stretch of calendar. Never later than the wall clock (a commit dated in
  the future cannot push every real change out of the windows). An index without a HEAD yet (a
  first run still writing) uses its newest reachable commit; an empty index, the wall clock.
- "wall": the machine's clock, today.

Choose with `[time] clock` in `.cortex/config.toml` (CLI, MCP), `--clock` on the commands that
count back in time, or the language server's `clock` setting. Dates shown as "3 days ago" stay on
the wall clock: they say when something happened, not what counts as recent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from cortex_core.errors import CortexError

CLOCKS = ("repository", "wall")
DEFAULT = "repository"


@dataclass(frozen=True)
class Clock:
    """What windows and recency count back from, and its time."""
    kind: str       # "repository", "wall", or "given" (a caller's own now, as in tests)
    now: int        # epoch seconds: windows are [now - days, now]


def check(kind: str) -> str:
    if kind not in CLOCKS:
        raise CortexError(f"unknown clock {str(kind)[:40]!r} (repository or wall)")
    return kind


def repository_time(con) -> int | None:
    """The repository's own now: the indexed HEAD's committer date (see the module docstring),
    None for an index without commits. Two indexed lookups when the HEAD is known."""
    row = con.execute("select c.committer_time from meta m join commits c on c.sha = m.value"
                      " where m.key = 'head'").fetchone()
    if row is None:   # no HEAD recorded yet: a first run still writing
        row = con.execute("select max(committer_time) from commits where reachable = 1").fetchone()
    if row is None or row[0] is None:
        return None
    return min(int(row[0]), int(time.time()))


def clock(con, kind: str = DEFAULT, now: float | None = None) -> Clock:
    """The clock of this kind for this index; a given `now` wins (tests, fixed reports)."""
    if now is not None:
        return Clock("given", int(now))
    if check(kind) == "repository":
        own = repository_time(con)
        if own is not None:
            return Clock("repository", own)
    return Clock("wall", int(time.time()))
