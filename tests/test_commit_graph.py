"""The commit graph kept by chunks (index/commit_graph.py) is always what `commits` holds: after
runs that add commits, with many chunks merged, with a parent stored after its child, and with
chunks that are damaged or do not match the table."""

from __future__ import annotations

import apsw

from cortex_core.index import commit_graph
from random_lives import random_lives


def from_commits(con: apsw.Connection) -> dict[int, tuple[list[int | None], int]]:
    """Every stored commit's parents and order, read from `commits` as the walks once did."""
    ids = {sha: cid for cid, sha in con.execute("select id, sha from commits")}
    return {cid: ([ids.get(p) for p in parents.split()], order) for cid, parents, order in
            con.execute(f"select c.id, c.parents, {commit_graph.ORDER} from commits c")}


def loaded(con: apsw.Connection) -> dict[int, tuple[list[int | None], int]]:
    with con:
        graph = commit_graph.load(con)
    ids = [cid for (cid,) in con.execute("select id from commits")]
    assert all(cid in graph for cid in ids)
    assert max(ids, default=0) + 1 not in graph and graph.parents(0) is None
    table = from_commits(con)
    for cid in ids:   # each commit's first-parent line, read in one loop, as parents() gives it
        line, orders, ended = graph.first_parents(cid, -1 << 80)
        walked: list[int] = []
        at: int | None = cid
        while at is not None:
            walked.append(at)
            at = (table[at][0] or [None])[0]
        assert (line, orders, ended) == (walked, [table[c][1] for c in walked], True)
    return {cid: (graph.parents(cid), graph.order(cid)) for cid in ids}


def chunks(con: apsw.Connection) -> int:
    return con.execute("select count(*) from commit_graph").get


def test_the_graph_is_the_commits_table_after_every_run(repo, cortex):
    seen: list[int] = []

    def run(step=None) -> None:
        cortex.index(model="none")
        con = apsw.Connection(str(cortex.db))
        try:
            assert loaded(con) == from_commits(con)
            seen.append(chunks(con))
        finally:
            con.close()

    random_lives(repo, 3, every=run)   # merges, `-s ours`, renames: every shape of parents
    run()
    assert seen == sorted(seen) and seen[-1] > 1   # appended run after run, not read again


def test_many_chunks_become_one(repo, cortex):
    con = None
    for n in range(commit_graph.MAX_CHUNKS + 2):
        repo.write("a.py", f"x = {n}\n")
        repo.commit(f"change {n}")
        cortex.index(model="none")
        con = apsw.Connection(str(cortex.db))
        assert loaded(con) == from_commits(con)
        assert chunks(con) == (n + 1 if n < commit_graph.MAX_CHUNKS else
                               n - commit_graph.MAX_CHUNKS + 1)
        con.close()


def test_a_parent_stored_after_its_child_is_linked(repo, cortex):
    """A run stopped and resumed can store a child before its parent: the parent is kept as
    missing, and when a commit with that sha is stored, the chunks are read again and the
    child's link is made."""
    for n in range(3):
        repo.write("a.py", f"x = {n}\n")
        repo.commit(f"change {n}")
    cortex.index(model="none")
    con = apsw.Connection(str(cortex.db))
    child = con.execute("select max(id) from commits").get
    parent = "f" * 40   # not stored yet
    with con:
        con.execute("delete from commit_graph")
        con.execute("update commits set parents = ? where id = ?", (parent, child))
    before = loaded(con)
    assert before[child][0] == [None] and before == from_commits(con)
    assert con.execute("select missing from commit_graph").get == parent
    with con:   # the parent arrives
        columns = ", ".join(name for _, name, *_ in con.execute("pragma table_info(commits)")
                            if name not in ("id", "sha", "parents"))
        con.execute(f"insert into commits(sha, parents, {columns}) select ?, '', {columns}"
                    " from commits where id = 1", (parent,))
    after = loaded(con)
    assert after[child][0] == [max(after)] and after == from_commits(con)
    assert chunks(con) == 1 and con.execute("select missing from commit_graph").get == ""
    con.close()


def test_chunks_that_do_not_match_are_read_again(repo, cortex):
    for n in range(5):
        repo.write("a.py", f"x = {n}\n")
        repo.commit(f"change {n}")
    cortex.index(model="none")
    con = apsw.Connection(str(cortex.db))
    expected = from_commits(con)
    assert loaded(con) == expected
    for damage in ("update commit_graph set data = x'0102'",       # not whole numbers
                   "update commit_graph set data = zeroblob(80)",  # counts that do not add up
                   "update commit_graph set data = 'text'",
                   "update commit_graph set commits = 'many'",
                   "update commit_graph set missing = 7",
                   "update commit_graph set commits = commits - 1",
                   "insert into commit_graph values (1000, 1000, 0, x'', '')",
                   "update commit_graph set last_id = last_id + 100",
                   "update commit_graph set first_id = 3"):
        with con:
            con.execute(damage)
        assert loaded(con) == expected, damage
        assert chunks(con) == 1
        assert con.execute("select first_id, last_id, commits from commit_graph").fetchone() \
            == (1, 5, 5)
    con.close()


def test_a_commit_dated_beyond_int64_orders_is_walked(repo, cortex):
    """A commit dated in year 3 billion (a valid object: test_clock.py) has an ORDER past 2**63,
    which SQLite gives as a float: a later run that walks the graph still indexes, and the
    graph is what `commits` holds."""
    import subprocess
    repo.write("a.py", "def f():\n    return 1\n")
    first = repo.commit("add f", days_ago=2)
    stamp = "99999999999999999 +0000"
    raw = (f"tree {repo.git('write-tree')}\nparent {first}\nauthor A <a@b> {stamp}\n"
           f"committer A <a@b> {stamp}\n\nfrom the far future\n")
    sha = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo.path,
                         input=raw.encode(), check=True, capture_output=True).stdout.decode()
    repo.git("update-ref", "HEAD", sha.strip())
    cortex.index(model="none")
    repo.git("checkout", "-q", "-b", "side", first)   # forked below the indexed HEAD: walked
    repo.write("b.py", "x = 1\n")
    repo.commit("side", days_ago=1)
    cortex.index(model="none")
    con = apsw.Connection(str(cortex.db))
    assert chunks(con) == 1 and loaded(con) == from_commits(con)
    con.close()


def test_a_first_parent_line_stops_under_its_bound_and_where_orders_rise():
    """Ids with a gap (a place by dict), a parent not stored, a bound, an order above its child's
    (a deepened shallow edge) and a cycle (a graph read wrong) each end the line."""
    none = -1
    #            ids 10, 11, 12, 20, 21: 21 -> 20 -> 12 -> 11 -> 10; 10's parent not stored
    graph = commit_graph.CommitGraph([10, 11, 12, 20, 21], [1, 2, 3, 4, 5], [1, 1, 2, 1, 1],
                                     [none, 10, 11, 99, 12, 20])
    assert graph.first_parents(21, -1) == ([21, 20, 12, 11, 10], [5, 4, 3, 2, 1], True)
    assert graph.first_parents(21, 4) == ([21, 20, 12], [5, 4, 3], False)
    assert graph.first_parents(99, -1) == ([], [], True)
    rising = commit_graph.CommitGraph([1, 2, 3], [1, 7, 5], [0, 1, 1], [1, 2])
    assert rising.first_parents(3, -1) == ([3, 2], [5, 7], True)   # the caller sees 7 > 5
    looped = commit_graph.CommitGraph([1, 2], [3, 3], [1, 1], [2, 1])
    line, _, ended = looped.first_parents(1, -1)
    assert ended and len(line) <= 3
