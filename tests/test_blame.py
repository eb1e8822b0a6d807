"""Which commit last changed a line, from the index, checked against `git blame` itself."""

from __future__ import annotations

import random
import re
import subprocess

import pytest

from cortex_core.query.blame import MAX_BUFFER_BYTES, last_change_of_line, map_buffer_line
from cortex_core.config import IndexSettings, Settings
from cortex_core.errors import CortexError, NotFound


def lines(*items: str) -> str:
    return "".join(f"{item}\n" for item in items)


def index(cortex, settings: Settings | None = None, **kwargs):
    cortex.index(settings, model="none", **kwargs)
    return cortex.reader()


def origins(con, path: str) -> list[tuple[str | None, str, int]]:
    """(subject, path then, line then) of every line of `path` at HEAD, up to the line that is
    reported past the end."""
    out = []
    for line in range(1, 1000):
        try:
            found = last_change_of_line(con, path, line)
        except CortexError as exc:
            assert "past the end" in str(exc)
            return out
        out.append((found.commit.subject if found.commit else None, found.path, found.line))
    raise AssertionError("the end of the file was never reported")


_PORCELAIN = re.compile(r"^([0-9a-f]{40}) (\d+) (\d+)")


def git_blame(repo, path: str) -> list[tuple[str, str, int]]:
    """(sha, path then, line then) of every line, from `git blame --line-porcelain HEAD`."""
    out = repo.git("-c", "core.quotepath=off", "blame", "--line-porcelain", "HEAD", "--", path)
    result: list[tuple[str, str, int]] = []
    sha, line = "", 0
    for row in out.splitlines():
        match = _PORCELAIN.match(row)
        if match:
            sha, line = match.group(1), int(match.group(2))
        elif row.startswith("filename "):
            result.append((sha, row[len("filename "):], line))
    return result


def our_blame(con, path: str, count: int) -> list[tuple[str, str, int]]:
    result = []
    for number in range(1, count + 1):
        found = last_change_of_line(con, path, number)
        assert found.commit is not None, found.reason
        result.append((found.commit.sha, found.path, found.line))
    return result


# -- linear histories, scripted -----------------------------------------------------------------

def test_inserts_deletes_and_modifications(repo, cortex):
    repo.write("a.txt", lines("one", "two", "three", "four", "five"))
    repo.commit("create")
    repo.write("a.txt", lines("one", "two", "inserted", "three", "four", "five"))
    repo.commit("insert")
    repo.write("a.txt", lines("one", "two", "inserted", "three", "FOUR", "five"))
    repo.commit("modify")
    repo.write("a.txt", lines("two", "inserted", "three", "FOUR", "five"))
    repo.commit("delete")
    con = index(cortex)
    assert origins(con, "a.txt") == [
        ("create", "a.txt", 2),
        ("insert", "a.txt", 3),
        ("create", "a.txt", 3),
        ("modify", "a.txt", 5),
        ("create", "a.txt", 5),
    ]
    assert our_blame(con, "a.txt", 5) == git_blame(repo, "a.txt")


def test_changes_at_the_edges_of_the_file(repo, cortex):
    # Zero-length ranges at line 0: a deletion of the first lines (new_start = 0) and an
    # insertion before the first line (old_start = 0); then changes at the very end.
    repo.write("e.txt", lines("a", "b", "c", "d", "e"))
    repo.commit("create")
    repo.write("e.txt", lines("c", "d", "e"))
    repo.commit("drop the top")
    repo.write("e.txt", lines("top1", "top2", "c", "d", "e"))
    repo.commit("new top")
    repo.write("e.txt", lines("top1", "top2", "c", "d"))
    repo.commit("drop the end")
    repo.write("e.txt", lines("top1", "top2", "c", "d", "end"))
    repo.commit("new end")
    con = index(cortex)
    assert origins(con, "e.txt") == [
        ("new top", "e.txt", 1),
        ("new top", "e.txt", 2),
        ("create", "e.txt", 3),
        ("create", "e.txt", 4),
        ("new end", "e.txt", 5),
    ]
    assert our_blame(con, "e.txt", 5) == git_blame(repo, "e.txt")


def test_several_hunks_in_one_commit_shift_the_lines_below(repo, cortex):
    repo.write("h.txt", lines(*[f"line {i}" for i in range(1, 13)]))
    repo.commit("create")
    # One commit: delete 2-3, insert two after 6, change 9, insert one after 12.
    repo.write("h.txt", lines("line 1", "line 4", "line 5", "line 6", "new a", "new b",
                              "line 7", "line 8", "LINE 9", "line 10", "line 11", "line 12",
                              "new tail"))
    repo.commit("mixed")
    con = index(cortex)
    assert [(s, n) for s, _, n in origins(con, "h.txt")] == [
        ("create", 1), ("create", 4), ("create", 5), ("create", 6), ("mixed", 5), ("mixed", 6),
        ("create", 7), ("create", 8), ("mixed", 9), ("create", 10), ("create", 11),
        ("create", 12), ("mixed", 13)]
    assert our_blame(con, "h.txt", 13) == git_blame(repo, "h.txt")


def test_rename_with_edits_is_followed(repo, cortex):
    body = [f"    value_{i} = {i}" for i in range(12)]
    repo.write("old.py", lines("def f():", *body, "    return 0"))
    repo.commit("create")
    repo.move("old.py", "pkg/new.py")
    edited = list(body)
    edited[3] = "    value_3 = 333"
    repo.write("pkg/new.py", lines("def f():", *edited, "    return 0"))
    repo.commit("move and tweak")
    edited.insert(0, "    first = True")
    repo.write("pkg/new.py", lines("def f():", *edited, "    return 0"))
    repo.commit("after the move")
    con = index(cortex)
    result = origins(con, "pkg/new.py")
    assert result[0] == ("create", "old.py", 1)
    assert result[1] == ("after the move", "pkg/new.py", 2)
    assert result[4] == ("create", "old.py", 4)
    assert result[5] == ("move and tweak", "pkg/new.py", 5)
    assert result[-1] == ("create", "old.py", 14)
    assert our_blame(con, "pkg/new.py", 15) == git_blame(repo, "pkg/new.py")
    with pytest.raises(NotFound, match="not in the indexed HEAD"):
        last_change_of_line(con, "old.py", 1)


def test_recreated_file_starts_over(repo, cortex):
    repo.write("r.txt", lines("alpha", "beta", "gamma"))
    repo.commit("first life")
    repo.remove("r.txt")
    repo.commit("delete")
    repo.write("r.txt", lines("alpha", "beta", "gamma", "delta"))
    repo.commit("second life")
    repo.write("r.txt", lines("alpha", "BETA", "gamma", "delta"))
    repo.commit("edit")
    con = index(cortex)
    assert origins(con, "r.txt") == [("second life", "r.txt", 1), ("edit", "r.txt", 2),
                                     ("second life", "r.txt", 3), ("second life", "r.txt", 4)]
    assert our_blame(con, "r.txt", 4) == git_blame(repo, "r.txt")


def test_rename_onto_a_path_with_an_earlier_life(repo, cortex):
    # b.txt lived and died; later a.txt is renamed to b.txt. Past the rename only a.txt's
    # history counts, not b.txt's first life (which the file lineage also brings along).
    repo.write("a.txt", lines("a 1", "a 2", "a 3", "a 4"))
    repo.commit("a created")
    repo.write("b.txt", lines("old b 1", "old b 2"))
    repo.commit("b first life")
    repo.remove("b.txt")
    repo.commit("b deleted")
    repo.write("a.txt", lines("a 1", "a 2", "a 3", "a 4", "a 5"))
    repo.commit("a grows")
    repo.move("a.txt", "b.txt")
    repo.commit("a becomes b")
    con = index(cortex)
    assert origins(con, "b.txt") == [("a created", "a.txt", 1), ("a created", "a.txt", 2),
                                     ("a created", "a.txt", 3), ("a created", "a.txt", 4),
                                     ("a grows", "a.txt", 5)]


def test_other_branches_do_not_count(repo, cortex):
    repo.write("f.txt", lines("x", "y", "z"))
    repo.commit("base", days_ago=5)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("f.txt", lines("X side", "y", "z"))
    repo.commit("side edit", days_ago=1)  # the newest: ingested last
    repo.git("checkout", "-q", "main")
    repo.write("f.txt", lines("x", "y", "Z main"))
    repo.commit("main edit", days_ago=3)
    con = index(cortex, all_branches=True)
    assert [s for s, _, _ in origins(con, "f.txt")] == ["base", "base", "main edit"]


def test_merge_of_disjoint_edits_agrees_with_git(repo, cortex):
    repo.write("m.txt", lines(*[f"row {i}" for i in range(10)]))
    repo.commit("base", days_ago=5)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("m.txt", lines("row 0 side", *[f"row {i}" for i in range(1, 10)]))
    repo.commit("side edit", days_ago=4)
    repo.git("checkout", "-q", "main")
    repo.write("m.txt", lines(*[f"row {i}" for i in range(9)], "row 9 main"))
    repo.commit("main edit", days_ago=3)
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    con = index(cortex)
    assert our_blame(con, "m.txt", 10) == git_blame(repo, "m.txt")
    # Through the merge the mapping stays exact: a line past the end is known to be.
    with pytest.raises(CortexError, match=r"line 11 is past the end of m.txt \(10 lines"):
        last_change_of_line(con, "m.txt", 11)


def merge(repo, branch: str, message: str, days_ago: float, *, resolve=None) -> str:
    """`git merge --no-ff branch` into the checked-out branch at a given date. `resolve(path)`,
    when given, writes the merge's own version of the files (conflict or not) before it
    commits: an evil merge, or a conflict's resolution."""
    stamp = f"{int(repo.now - days_ago * 86400)} +0000"
    env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    try:
        repo.git("merge", "-q", "--no-ff", "--no-commit", branch, env=env)
    except subprocess.CalledProcessError:
        if resolve is None:
            raise
    if resolve is not None:
        resolve()
    repo.git("commit", "-q", "--allow-empty", "-m", message, env=env)
    return repo.head()


def test_evil_merge_and_conflict_resolution_are_the_merges_lines(repo, cortex):
    repo.write("c.txt", lines("a", "b", "c", "d", "e"))
    repo.commit("base", days_ago=9)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("c.txt", lines("a", "B side", "c", "d", "e"))
    repo.commit("side edits b", days_ago=8)
    repo.git("checkout", "-q", "main")
    repo.write("c.txt", lines("a", "B main", "c", "d", "e"))
    repo.commit("main edits b", days_ago=7)
    # The conflict on b is resolved with a line of the merge's own; e is changed too (evil).
    merge(repo, "side", "merge side", 6,
          resolve=lambda: repo.write("c.txt", lines("a", "B both", "c", "d", "E merge")))
    con = index(cortex)
    assert [s for s, _, _ in origins(con, "c.txt")] == [
        "base", "merge side", "base", "base", "merge side"]
    assert our_blame(con, "c.txt", 5) == git_blame(repo, "c.txt")


def test_a_side_branch_taken_whole_keeps_its_commits(repo, cortex):
    repo.write("w.txt", lines("one", "two", "three"))
    repo.commit("base", days_ago=9)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("w.txt", lines("one", "two side", "three"))
    repo.commit("side 1", days_ago=8)
    repo.write("w.txt", lines("one", "two side", "three", "four side"))
    repo.commit("side 2", days_ago=7)
    repo.git("checkout", "-q", "main")
    repo.write("other.txt", lines("unrelated"))
    repo.commit("main elsewhere", days_ago=6)
    merge(repo, "side", "merge side", 5)
    repo.write("w.txt", lines("zero", "one", "two side", "three", "four side"))
    repo.commit("after the merge", days_ago=4)
    con = index(cortex)
    assert [s for s, _, _ in origins(con, "w.txt")] == [
        "after the merge", "base", "side 1", "base", "side 2"]
    assert our_blame(con, "w.txt", 5) == git_blame(repo, "w.txt")
    # The merge's rows: w.txt came whole from the side branch; no diff was stored for it.
    assert con.execute("select status, via from merge_files").fetchall() == [("M", 1)]
    assert con.execute("select count(*) from merge_hunks").get == 0


def test_a_rename_on_a_merged_branch_is_followed(repo, cortex):
    body = [f"value_{i} = {i}" for i in range(10)]
    repo.write("old.py", lines(*body))
    repo.commit("create", days_ago=9)
    repo.git("checkout", "-q", "-b", "side")
    repo.move("old.py", "new.py")
    repo.commit("rename on side", days_ago=8)
    repo.git("checkout", "-q", "main")
    edited = list(body)
    edited[7] = "value_7 = 'main'"
    repo.write("old.py", lines(*edited))
    repo.commit("main edits the old path", days_ago=7)
    # git merges the edit into new.py: the merge's new.py differs from both parents.
    merge(repo, "side", "merge side", 6)
    edited[2] = "value_2 = 'after'"
    repo.write("new.py", lines(*edited))
    repo.commit("after", days_ago=5)
    con = index(cortex)
    expected = git_blame(repo, "new.py")
    assert {p for _, p, _ in expected} == {"old.py", "new.py"}
    assert our_blame(con, "new.py", 10) == expected


def test_octopus_merge(repo, cortex):
    repo.write("o.txt", lines(*[f"row {i}" for i in range(9)]))
    repo.commit("base", days_ago=9)
    for number, row in ((1, 1), (2, 4), (3, 7)):
        repo.git("checkout", "-q", "-b", f"b{number}", "main")
        content = [f"row {i}" for i in range(9)]
        content[row] = f"row {row} by b{number}"
        repo.write("o.txt", lines(*content))
        repo.commit(f"b{number}", days_ago=8 - number)
    repo.git("checkout", "-q", "main")
    stamp = f"{int(repo.now - 3 * 86400)} +0000"
    repo.git("merge", "-q", "--no-ff", "-m", "octopus", "b1", "b2", "b3",
             env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    con = index(cortex)
    assert [s for s, _, _ in origins(con, "o.txt")] == [
        "base", "b1", "base", "base", "b2", "base", "base", "b3", "base"]
    assert our_blame(con, "o.txt", 9) == git_blame(repo, "o.txt")


def random_branchy_history(repo, seed: int, steps: int = 40, every=None) -> list[str]:
    """Branches forked, edited and merged at random into each other (conflicts resolved with
    one side plus edits of the merge's own, some clean merges made evil too), two files, one of
    them renamed on a branch; every line text unique, so that no diff is ambiguous. `every`:
    (n, f) calls f() every n steps, with whichever branch is checked out."""
    rng = random.Random(seed)
    counter = iter(range(1_000_000))
    files = {"a.txt": [f"a {next(counter)}" for _ in range(rng.randint(4, 15))],
             # Long enough that the rename below stays a rename to git and to libgit2
             # across the edits of other branches (their similarity scores differ).
             "b.txt": [f"b {next(counter)}" for _ in range(rng.randint(30, 40))]}
    for path, content in files.items():
        repo.write(path, lines(*content))
    repo.commit("root", days_ago=steps + 2)
    branches = ["main"]
    renamed = False

    def read(path):
        return (repo.path / path).read_text().splitlines()

    def edit(content):
        for _ in range(rng.randint(1, 3)):
            op = rng.choice(("insert", "delete", "modify")) if content else "insert"
            at = rng.randrange(len(content) + (op == "insert")) if content else 0
            size = rng.randint(1, 3)
            if op == "insert":
                content[at:at] = [f"x {next(counter)}" for _ in range(size)]
            elif op == "delete" and len(content) > size:
                del content[at:at + size]
            else:
                content[at:at + size] = [f"x {next(counter)}" for _ in content[at:at + size]]
        return content

    def current_files():
        return [p for p in ("a.txt", "b.txt", "c.txt") if (repo.path / p).exists()]

    def resolve(evil: bool):
        """Each conflicted file: one side's version (or its deletion), edited by the merge;
        with `evil`, some clean files edited by the merge too."""
        conflicted = repo.git("diff", "--name-only", "--diff-filter=U").splitlines()
        for path in conflicted:
            stages = {int(row.split()[2]) for row in
                      repo.git("ls-files", "-u", "--", path).splitlines()} & {2, 3}
            if not stages:
                repo.git("rm", "-q", "--", path)
                continue
            side = rng.choice(sorted(stages))
            repo.write(path, lines(*edit(repo.git("show", f":{side}:{path}").splitlines())))
        for path in current_files():
            if evil and path not in conflicted and rng.random() < 0.5:
                repo.write(path, lines(*edit(read(path))))

    for step in range(steps):
        if every is not None and step and step % every[0] == 0:
            every[1]()
        days = steps + 1 - step
        roll = rng.random()
        if roll < 0.15 and len(branches) < 5:
            name = f"topic{step}"
            repo.git("checkout", "-q", "-b", name, rng.choice(branches))
            branches.append(name)
        elif roll < 0.4 and len(branches) > 1:
            into, other = rng.sample(branches, 2)
            repo.git("checkout", "-q", into)
            merge(repo, other, f"merge {other} into {into} ({step})", days,
                  resolve=lambda: resolve(rng.random() < 0.3))
        else:
            repo.git("checkout", "-q", rng.choice(branches))
            moved = None
            if not renamed and step > steps // 3 and rng.random() < 0.3 and \
                    (repo.path / "b.txt").exists():
                # A pure rename: a rename with edits of a file this small is one that git and
                # libgit2 may judge differently (their similarity scores differ).
                repo.move("b.txt", "c.txt")
                renamed, moved = True, "c.txt"
            for path in current_files():
                if path != moved and rng.random() < 0.6:
                    repo.write(path, lines(*edit(read(path))))
            repo.commit(f"commit {step}", days_ago=days, allow_empty=True)
    repo.git("checkout", "-q", "main")
    for other in branches[1:]:
        merge(repo, other, f"final merge {other}", 1, resolve=lambda: resolve(False))
    return current_files()


@pytest.mark.parametrize("seed", range(8))
def test_every_line_agrees_with_git_blame_through_merges(repo, cortex, seed):
    # Odd seeds are also indexed along the way, each time at the branch then checked out: the
    # version graph then grows from commits an earlier run versioned.
    every = (7, lambda: cortex.index(model="none")) if seed % 2 else None
    paths = random_branchy_history(repo, seed, every=every)
    assert int(repo.git("rev-list", "--count", "--merges", "HEAD")) >= 3
    con = index(cortex)
    for path in paths:
        expected = git_blame(repo, path)
        assert our_blame(con, path, len(expected)) == expected, path


def test_a_stopped_version_pass_is_finished_by_the_next_run(repo, cortex, monkeypatch):
    import cortex_core.index.versions as versions
    paths = random_branchy_history(repo, 3, steps=20)
    calls = {"n": 0}
    real = versions.VersionGraph._version

    def stop_at_ten(self, *args):
        calls["n"] += 1
        if calls["n"] == 10:
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(versions, "BATCH_SECONDS", 0.0)
    monkeypatch.setattr(versions.VersionGraph, "_version", stop_at_ten)
    with pytest.raises(KeyboardInterrupt):
        cortex.index(model="none")
    monkeypatch.undo()
    con = cortex.reader()
    assert con.execute("select count(*) from commits where versioned = 1").get == 9
    con = index(cortex)
    assert con.execute("select count(*) from commits where versioned = 0").get == 0
    for path in paths:
        expected = git_blame(repo, path)
        assert our_blame(con, path, len(expected)) == expected, path


def test_without_maps_the_walker_gives_the_same_graph(repo, cortex, monkeypatch):
    """A map per open branch is a cache: with room for one, the walker answers the rest."""
    import cortex_core.index.versions as versions
    paths = random_branchy_history(repo, 2, steps=30)
    monkeypatch.setattr(versions, "MAX_STATES", 1)
    con = index(cortex)
    for path in paths:
        expected = git_blame(repo, path)
        assert our_blame(con, path, len(expected)) == expected, path


def test_head_moved_back_to_an_indexed_commit(repo, cortex):
    paths = random_branchy_history(repo, 5, steps=20)
    index(cortex)
    repo.git("checkout", "-q", "--detach", "HEAD~2")
    con = index(cortex)
    for path in paths:
        if (repo.path / path).exists():
            expected = git_blame(repo, path)
            assert our_blame(con, path, len(expected)) == expected, path


def test_a_store_indexed_before_merge_versions_is_upgraded(repo, cortex):
    """A store of schema 4 (no generations, no merge rows, no version graph): the migrations
    fill in generations and, since schema 7 (the words of changed lines), have the run rebuild
    the history in place; the store ends as a fresh index would be."""
    import apsw
    paths = random_branchy_history(repo, 6, steps=25)
    index(cortex)
    cortex.index(model="none")
    con = apsw.Connection(str(cortex.db))
    expected_generations = dict(con.execute("select sha, generation from commits"))
    con.execute("""
        drop table merge_files; drop table merge_edges; drop table merge_hunks;
        drop table file_versions; drop table head_versions; drop index commits_unversioned;
        drop table pruned_changes; drop table pruned_heads; delete from meta where key = 'pruned_head';
        alter table commits drop column generation; alter table commits drop column versioned;
        delete from meta where key = 'versions_head';
        alter table commits drop column code_words; drop table items_code;
        alter table commits drop column order_time;
        update meta set value = '4' where key = 'schema_version';
    """)
    con.close()
    summary = cortex.index(model="none")
    assert summary.rebuilt
    con = cortex.reader()
    assert dict(con.execute("select sha, generation from commits")) == expected_generations
    assert con.execute("select count(*) from merge_files").get > 0
    assert con.execute("select value from meta where key = 'reread_merges'").fetchone() is None
    for path in paths:
        expected = git_blame(repo, path)
        assert our_blame(con, path, len(expected)) == expected, path


def test_a_later_run_walks_back_from_commits_indexed_before(repo, cortex):
    """A branch forked below the indexed HEAD: the versions its commits start from are found by
    walking back from the fork (versions._Walker), a change at a time for the first steps of a
    file's walk and from all of the file's changes after that. Here a.py's walk meets, 43 steps
    down, a merge that took it from its branch; c.py's goes on past 64 steps to its creation."""
    days = [300.0]

    def commit(message: str) -> None:
        days[0] -= 1
        repo.git("add", "-A")
        repo.commit(message, days_ago=days[0])

    def noise(count: int) -> None:
        for _ in range(count):
            repo.write("n.txt", f"{days[0]}\n")
            commit("noise")

    def merge(branch: str) -> None:
        days[0] -= 1
        stamp = f"{int(repo.now - days[0] * 86400)} +0000"
        repo.git("merge", "-q", "--no-ff", "-m", f"merge {branch}", branch,
                 env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})

    repo.write("a.py", lines("a1", "a2", "a3", "a4", "a5"))
    repo.write("c.py", lines("c1", "c2", "c3", "c4", "c5"))
    commit("start")
    repo.git("checkout", "-q", "-b", "side")
    repo.write("a.py", lines("a1", "a2 on side", "a3", "a4", "a5"))
    commit("side changes a")
    repo.git("checkout", "-q", "main")
    noise(75)
    merge("side")
    noise(40)
    index(cortex)
    repo.git("checkout", "-q", "-b", "late", "HEAD~3")
    repo.write("a.py", lines("a1", "a2 on side", "a3", "a4 late", "a5"))
    repo.write("c.py", lines("c1", "c2", "c3 late", "c4", "c5"))
    commit("late changes a and c")
    repo.git("checkout", "-q", "main")
    noise(1)
    merge("late")
    con = index(cortex)
    for path in ("a.py", "c.py"):
        expected = git_blame(repo, path)
        assert our_blame(con, path, len(expected)) == expected, path
    assert len({sha for sha, _, _ in git_blame(repo, "a.py")}) == 3   # start, side, late


# -- what cannot be told, and bad requests ------------------------------------------------------

def test_unrecorded_diff_stops_the_walk_with_a_reason(repo, cortex):
    repo.write("g.txt", lines("one", "two", "three"))
    repo.commit("small")
    repo.write("g.txt", "filler line\n" * 2000)
    repo.commit("too big")
    repo.write("g.txt", lines("one", "two", "three"))
    repo.commit("small again")
    repo.write("g.txt", lines("ONE", "two", "three"))
    repo.commit("edit after")
    con = index(cortex, Settings(index=IndexSettings(max_file_bytes=10_000)))
    first = last_change_of_line(con, "g.txt", 1)
    assert first.commit is not None and first.commit.subject == "edit after"
    second = last_change_of_line(con, "g.txt", 2)
    assert second.commit is None
    assert second.path == "g.txt" and second.line == 2
    # "small again" read the file again (its definitions), not its diff: the walk stops there.
    assert ("was not recorded (its previous version was too large): over 10 kB; raise [index]"
            " max_file_bytes") in second.reason
    assert repo.git("rev-parse", "--short=10", "HEAD~1") in second.reason


def test_binary_change_gives_no_commit(repo, cortex):
    repo.write("data.txt", b"\x00\x01binary\n")
    repo.commit("binary first")
    repo.write("data.txt", lines("now text", "second"))
    repo.commit("becomes text")
    con = index(cortex)
    found = last_change_of_line(con, "data.txt", 2)
    assert found.commit is None and "(its previous version was binary)" in found.reason


def test_diff_too_large_gives_no_commit(repo, cortex):
    repo.write("d.txt", lines(*[f"v{i}" for i in range(50)]))
    repo.commit("create")
    repo.write("d.txt", lines(*[f"w{i}" for i in range(50)]))
    repo.commit("rewrite")
    con = index(cortex, Settings(index=IndexSettings(max_diff_lines=60)))
    found = last_change_of_line(con, "d.txt", 10)
    assert found.commit is None and "(diff too large): over 60 changed lines" in found.reason


def test_file_added_without_hunks_is_still_its_own_origin(repo, cortex):
    # A lockfile is recorded at file level only; but every line of a file comes from the commit
    # that created it, so the creation still answers; a later change cannot be crossed.
    repo.write("yarn.lock", lines("dep-a@1", "dep-b@2"))
    repo.commit("lock")
    con = index(cortex)
    found = last_change_of_line(con, "yarn.lock", 2)
    assert (found.commit.subject, found.line) == ("lock", 2)
    with pytest.raises(CortexError, match="past the end"):
        last_change_of_line(con, "yarn.lock", 3)
    repo.write("yarn.lock", lines("dep-a@1", "dep-b@3"))
    repo.commit("bump")
    con = index(cortex)
    found = last_change_of_line(con, "yarn.lock", 1)
    assert found.commit is None and "(lockfile)" in found.reason


def test_bad_requests(repo, cortex):
    repo.write("a.txt", lines("one", "two"))
    repo.write("empty.txt", "")
    repo.commit("create")
    repo.write("gone.txt", "x\n")
    repo.commit("gone soon")
    repo.remove("gone.txt")
    repo.commit("gone")
    con = index(cortex)
    with pytest.raises(NotFound, match="did you mean: a.txt"):
        last_change_of_line(con, "b.txt", 1)
    with pytest.raises(NotFound, match="not in the indexed HEAD"):
        last_change_of_line(con, "gone.txt", 1)
    with pytest.raises(CortexError, match="lines start at 1"):
        last_change_of_line(con, "a.txt", 0)
    with pytest.raises(CortexError, match=r"line 3 is past the end of a.txt \(2 lines"):
        last_change_of_line(con, "a.txt", 3)
    with pytest.raises(CortexError, match=r"past the end of empty.txt \(0 lines"):
        last_change_of_line(con, "empty.txt", 1)


# -- randomized, against git blame --------------------------------------------------------------

def random_history(repo, seed: int, commits: int = 20, rename_at: int | None = None) -> str:
    """A file edited by random inserts, deletes and modifications; every line text unique, so
    that a diff is never ambiguous and git and libgit2 must agree."""
    rng = random.Random(seed)
    counter = iter(range(1_000_000))
    content = [f"line {next(counter)}" for _ in range(rng.randint(5, 30))]
    path = "random.txt"
    repo.write(path, lines(*content))
    repo.commit("commit 0")
    for number in range(1, commits):
        if number == rename_at:
            repo.move(path, "moved/random.txt")
            path = "moved/random.txt"
        for _ in range(rng.randint(1, 4)):
            op = rng.choice(("insert", "delete", "modify")) if content else "insert"
            at = rng.randrange(len(content) + (op == "insert")) if content else 0
            size = rng.randint(1, 4)
            if op == "insert":
                content[at:at] = [f"line {next(counter)}" for _ in range(size)]
            elif op == "delete":
                del content[at:at + size]
            else:
                content[at:at + size] = [f"line {next(counter)}"
                                         for _ in range(len(content[at:at + size]))]
        if not content:
            content = [f"line {next(counter)}"]
        repo.write(path, lines(*content))
        repo.commit(f"commit {number}")
    return path


@pytest.mark.parametrize("seed, rename_at", [(1, None), (2, None), (3, None), (4, 10)])
def test_every_line_agrees_with_git_blame(repo, cortex, seed, rename_at):
    path = random_history(repo, seed, rename_at=rename_at)
    con = index(cortex)
    expected = git_blame(repo, path)
    assert our_blame(con, path, len(expected)) == expected
    with pytest.raises(CortexError, match="past the end"):
        last_change_of_line(con, path, len(expected) + 1)


# -- buffer lines to HEAD lines -----------------------------------------------------------------

HEAD = lines("a", "b", "c", "d", "e").encode()


def test_unchanged_buffer_is_the_identity():
    assert [map_buffer_line(HEAD, HEAD, n) for n in range(1, 6)] == [1, 2, 3, 4, 5]


def test_insertions_above_shift_the_line():
    buffer = lines("x", "y", "a", "b", "new", "c", "d", "e").encode()
    assert [map_buffer_line(HEAD, buffer, n) for n in range(1, 9)] == [
        None, None, 1, 2, None, 3, 4, 5]


def test_changed_lines_are_not_in_head():
    buffer = lines("a", "B", "c", "D", "e").encode()
    assert [map_buffer_line(HEAD, buffer, n) for n in range(1, 6)] == [1, None, 3, None, 5]


def test_deleted_lines_shift_the_lines_below():
    assert [map_buffer_line(HEAD, lines("a", "e").encode(), n) for n in (1, 2)] == [1, 5]
    assert [map_buffer_line(HEAD, lines("c", "d", "e").encode(), n) for n in (1, 2, 3)] == [3, 4, 5]
    assert [map_buffer_line(HEAD, lines("a", "b").encode(), n) for n in (1, 2)] == [1, 2]


def test_final_newline_and_binary_looking_buffers():
    # As in git: a last line that loses its newline has changed.
    assert map_buffer_line(HEAD, HEAD[:-1], 5) is None
    assert map_buffer_line(HEAD, HEAD[:-1], 4) == 4
    with_nul = b"a\nb\x00\nc\n"
    assert map_buffer_line(with_nul, b"top\n" + with_nul, 3) == 2


def test_buffer_lines_out_of_range_or_too_large():
    with pytest.raises(CortexError, match="outside the buffer"):
        map_buffer_line(HEAD, HEAD, 6)
    with pytest.raises(CortexError, match="outside the buffer"):
        map_buffer_line(HEAD, HEAD, 0)
    huge = b"x\n" * (MAX_BUFFER_BYTES // 2 + 1)
    with pytest.raises(CortexError, match="too large"):
        map_buffer_line(HEAD, huge, 1)


@pytest.mark.parametrize("seed", range(20))
def test_random_buffer_edits_map_to_the_surviving_lines(seed):
    rng = random.Random(seed)
    head = [f"h{i}" for i in range(rng.randint(0, 40))]
    # Each buffer line remembers where it came from in head (None: typed in the buffer).
    buffer: list[tuple[str, int | None]] = [(text, n) for n, text in enumerate(head, 1)]
    fresh = iter(range(1_000_000))
    for _ in range(rng.randint(0, 6)):
        at = rng.randrange(len(buffer) + 1)
        op = rng.choice(("insert", "delete", "modify"))
        size = rng.randint(1, 3)
        if op == "insert":
            buffer[at:at] = [(f"new{next(fresh)}", None) for _ in range(size)]
        elif op == "delete":
            del buffer[at:at + size]
        else:
            buffer[at:at + size] = [(f"new{next(fresh)}", None) for _ in buffer[at:at + size]]
    head_bytes = lines(*head).encode()
    buffer_bytes = lines(*(text for text, _ in buffer)).encode()
    assert [map_buffer_line(head_bytes, buffer_bytes, n) for n in range(1, len(buffer) + 1)] == [
        origin for _, origin in buffer]
