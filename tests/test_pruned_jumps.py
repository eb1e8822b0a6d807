"""git's simplified walk for a path jumps along HEAD's first-parent line (simplified._Graph.walk):
between two commits that change the path or whose merge holds it otherwise than its first
parent, it goes down first parents listing nothing. The jumps must leave every answer as the
walk commit by commit gives it: the pruned changes of every HEAD file, recomputed in full both
ways, and the history `git log -- FILE` shows."""

from __future__ import annotations

import apsw
import pytest

from conftest import Indexed
from cortex_core.index.simplified import update_pruned
from random_lives import random_lives
from test_history import changes


def recomputed(db, *, jumps: bool) -> list[tuple[int, int, int]]:
    """Every HEAD file's pruned changes computed afresh in the store, walking as asked."""
    con = apsw.Connection(str(db))
    try:
        with con:
            con.execute("delete from pruned_heads")
            con.execute("delete from meta where key = 'pruned_head'")
            update_pruned(con, jumps=jumps)
        return sorted(con.execute("select commit_id, file_id, head_file_id from pruned_changes"))
    finally:
        con.close()


def stored(db) -> list[tuple[int, int, int]]:
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return sorted(con.execute("select commit_id, file_id, head_file_id from pruned_changes"))
    finally:
        con.close()


def test_an_older_life_behind_a_long_line_of_merges(repo, cortex):
    """sympy's shape: a second root commit merged in adds the file again, so each update walks
    git's simplification from HEAD down past it, through a long line of merges that do not
    touch the file, and side branches that do (one merged, one dropped with `-s ours`)."""
    body = "def f(x):\n    a = x + {v}\n    return a\n"
    repo.write("a.py", body.format(v=1))
    repo.commit("create a", days_ago=40)
    repo.git("rm", "-q", "a.py")
    repo.commit("delete a", days_ago=39)
    repo.write("a.py", body.format(v=2))
    repo.commit("a again", days_ago=38)
    # A second root that adds a.py too, merged keeping main's a.py.
    repo.git("checkout", "-q", "--orphan", "other")
    repo.git("rm", "-q", "-rf", ".")
    repo.write("a.py", body.format(v=9))
    repo.commit("first (another root)", days_ago=37)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "-s", "ours", "--allow-unrelated-histories", "-m", "merge root",
             "other")
    for n in range(12):
        repo.git("checkout", "-q", "-b", f"pr{n}")
        if n == 4:
            repo.write("a.py", body.format(v=20))
            repo.commit("pr4 edits a", days_ago=30 - n)
        elif n == 7:
            repo.write("a.py", body.format(v=70))
            repo.commit("pr7 edits a, dropped", days_ago=30 - n)
        else:
            repo.write(f"m{n}.py", body.format(v=n))
            repo.commit(f"pr{n} adds m{n}", days_ago=30 - n)
        repo.git("checkout", "-q", "main")
        repo.write(f"main{n}.py", body.format(v=n))
        repo.commit(f"main {n}", days_ago=30 - n - 0.5)
        strategy = ["-s", "ours"] if n == 7 else []
        repo.git("merge", "-q", "--no-ff", *strategy, "-m", f"merge pr{n}", f"pr{n}")
    cortex.index(model="none")
    shown = repo.git("log", "--no-merges", "--format=%s", "--", "a.py").split("\n")
    assert [c[0] for c in changes(cortex.reader(), "a.py")] == shown == [
        "pr4 edits a", "a again", "delete a", "create a"]
    assert stored(cortex.db) == recomputed(cortex.db, jumps=False) != []
    assert recomputed(cortex.db, jumps=True) == stored(cortex.db)


@pytest.mark.parametrize("seed", range(40, 52))
def test_random_lives_prune_the_same_with_and_without_jumps(repo, cortex, tmp_path, seed):
    """Histories of files with many lives, indexed at four points along the way (each update
    walks from its own HEAD, reading the line as far as it needs) and once at the end."""
    random_lives(repo, seed, every=lambda step: cortex.index(model="none"))
    cortex.index(model="none")
    once = Indexed(repo, tmp_path / "once" / "cortex.db")
    once.index(model="none")
    kept = stored(cortex.db)
    assert recomputed(cortex.db, jumps=False) == kept
    assert recomputed(once.db, jumps=False) == stored(once.db)


def test_orders_that_rise_along_the_line_turn_the_jumps_off():
    """Orders computed before a shallow clone was deepened can rise from a child to its parent:
    the places under a bound cannot be found by halves then, so the walks go commit by commit."""
    from cortex_core.index.commit_graph import CommitGraph
    from cortex_core.index.simplified import _Graph
    rising = CommitGraph([1, 2, 3], [1, 7, 5], [0, 1, 1], [1, 2])
    graph = _Graph(3, rising)
    graph._read_line(-1)
    assert not graph.line_jumps
    steady = _Graph(3, CommitGraph([1, 2, 3], [1, 4, 5], [0, 1, 1], [1, 2]))
    steady._read_line(-1)
    assert steady.line_jumps and steady.line == [3, 2, 1] and steady.line_ended
