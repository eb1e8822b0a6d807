"""How dates are said: how far an incomplete index reaches, and how long ago a commit was."""

from __future__ import annotations

from cortex_core.dates import reach, relative_time
from scripted_repo import DAY


def test_reach_names_both_ends():
    assert reach(0, 40 * DAY) == "history from 1970-01 to 1970-02 only"
    assert reach(None, 40 * DAY) == "history up to 1970-02 only"
    assert reach(40 * DAY) == "history from 1970-02 on"


def test_a_date_after_now_is_said_as_such():
    now = 1_000_000_000
    assert relative_time(now - 3 * DAY, now) == "3 days ago"
    assert relative_time(now + 3 * DAY, now) == "in 3 days"   # a clock that was wrong
    assert relative_time(now + 400 * DAY, now) == "in 1 year"
    assert relative_time(now + 30, now) == relative_time(now - 30, now) == "just now"
