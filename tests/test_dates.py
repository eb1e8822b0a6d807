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


def test_a_commit_of_the_first_second_of_1970_keeps_its_date(repo, cortex):
    """A commit dated 0 (a clock reset, an import with no dates) has a date: the status lost its
    span and a search hit its age when the oldest commit was of 1970-01-01 00:00:00."""
    import time
    from cortex_core.memory.search import SearchOptions, search
    from cortex_core.query.status import status
    from cortex_cli import render as cli_render
    from cortex_mcp import render as mcp_render
    repo.write("a.py", "def f():\n    return 1\n")
    repo.git("commit", "-q", "-m", "epoch commit",
             env={"GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000"})
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("later commit", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    found = status(con, cortex.db)
    assert found.first_commit_time == 0
    assert " from 1970-01-01 to " in cli_render.status(found, repo.path, time.time())
    assert ", 1970-01-01 to " in mcp_render.status(found, None, None)[0]
    result = search(con, "epoch", SearchOptions())
    [line] = [ln for ln in cli_render.search(result, time.time(), False).splitlines()
              if "epoch commit" in ln]
    assert " years ago " in line
    assert any("1970-01-01" in ln for ln in mcp_render.search(result))
