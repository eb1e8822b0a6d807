"""Times given by people and agents (a date, or a number of days back), and dates shown to them:
a commit's day, "3 days ago", a time window and the clock it counts on (clock.py).

Engine code (briefings, packs) and every front end word dates the same way from here."""

from __future__ import annotations

import time

from cortex_core.errors import CortexError

MAX_DAYS = 1_000_000


def since(text: str, now: float | None = None) -> int:
    """`YYYY-MM-DD` (UTC midnight) or a number of days back from now, as epoch seconds."""
    from datetime import datetime, timezone
    try:
        days = float(text)
    except ValueError:
        try:
            when = datetime.strptime(text.strip(), "%Y-%m-%d").replace(tzinfo=timezone.utc)
        except ValueError:
            raise CortexError(f"not a date (YYYY-MM-DD) or a number of days: "
                              f"{text[:40]!r}") from None
        return int(when.timestamp())
    if not 0 <= days <= MAX_DAYS:      # also refuses NaN
        raise CortexError(f"must be a number of days between 0 and {MAX_DAYS}: {text[:40]}")
    return int((time.time() if now is None else now) - days * 86400)


def relative_time(then: float, now: float) -> str:
    """"3 days ago"; a date after `now` (a clock that was wrong) "in 3 days", not "just now"."""
    seconds = now - then
    ahead = seconds < 0
    for unit, size in (("year", 365 * 86400), ("month", 30 * 86400), ("week", 7 * 86400),
                       ("day", 86400), ("hour", 3600), ("minute", 60)):
        if abs(seconds) >= size:
            n = int(abs(seconds) // size)
            amount = f"{n} {unit}{'s' if n > 1 else ''}"
            return f"in {amount}" if ahead else f"{amount} ago"
    return "just now"


# A commit's date is whatever its author wrote (a year 3000000000 commit is a valid object):
# shown within years 1 to 9999, which every platform's gmtime takes.
_FIRST_DAY, _LAST_DAY = -62135596800, 253402300799


def date(ref_time: int, offset_minutes: int = 0) -> str:
    # time, not datetime: one import less in every command's start (bench/bench_start.py)
    return _utc_day(ref_time + offset_minutes * 60)


def _utc_day(when: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(min(max(when, _FIRST_DAY), _LAST_DAY)))


def _month(when: int) -> str:
    return time.strftime("%Y-%m", time.gmtime(min(max(when, _FIRST_DAY), _LAST_DAY)))


def reach(history_from: int | None, history_until: int | None = None) -> str:
    """How far an index that does not hold the whole history reaches, as every front end says
    it: back to the start of the recent window a first run reads first ("history from 2023-04
    on"), forward to the newest commit of a first run that has not reached HEAD ("history up
    to 2012-12 only"), or both ("history from 2023-04 to 2023-05 only"). Each front end adds
    what is being done about the rest."""
    if history_until is None:
        return f"history from {_month(history_from or 0)} on"
    if history_from is None:
        return f"history up to {_month(history_until)} only"
    return f"history from {_month(history_from)} to {_month(history_until)} only"


def shallow_reach(shallow_from: int) -> str:
    """What a shallow clone's history is, as every front end says it; each adds how to get the
    rest (git fetch --unshallow, then an index run)."""
    return (f"a shallow clone: history from {_month(shallow_from)} on, and what its oldest "
            "commits show as added may be older")


def on_clock(clock) -> str:
    """Which clock (clock.py) windows and recency count back from, and its date (UTC)."""
    if clock.kind == "repository":
        return f"on this repository's clock, its HEAD of {_utc_day(clock.now)}"
    if clock.kind == "wall":
        return f"on the wall clock, today {_utc_day(clock.now)}"
    return f"as of {_utc_day(clock.now)}"


def window(days: float, clock) -> str:
    """'last 90 days of this repository's activity (to 2023-04-02)', or on the wall clock
    'last 90 days (to today, 2026-12-03)'."""
    if clock is None:
        return f"last {days:g} days"
    if clock.kind == "repository":
        return f"last {days:g} days of this repository's activity (to {_utc_day(clock.now)})"
    if clock.kind == "wall":
        return f"last {days:g} days (to today, {_utc_day(clock.now)})"
    return f"last {days:g} days (to {_utc_day(clock.now)})"
