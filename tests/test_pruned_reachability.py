"""What a HEAD file's history leaves out (pruned_changes) is the same in a store kept up to date
across runs that changed which stored commits are reachable (a branch reset, --all-branches
switched off) as in one indexed once at the end: a commit no branch indexed reaches any longer
is on no history, so none of its changes is counted as left out of one. Found by fuzzing
(random_lives.py histories with resets and --all-branches toggled between runs)."""

from __future__ import annotations

import pytest

from conftest import Indexed
from test_incremental_lives import answers


class Stop(Exception):
    """Raised from a progress callback: the run stops there, as a killed one does."""


def pruned(cortex: Indexed) -> list[tuple[str, str, str]]:
    return sorted(cortex.reader().execute(
        "select h.path, c.subject, f.path from pruned_changes p join commits c"
        " on c.id = p.commit_id join files f on f.id = p.file_id"
        " join files h on h.id = p.head_file_id"))


def histories(cortex: Indexed) -> list:
    """answers(), but for the files and symbols with no history at all: a store kept up to date
    still names those only unreachable commits made (b.py's f of a rename reset away)."""
    return [x for x in answers(cortex) if not (isinstance(x, tuple) and x[-1] == [])]


def once(repo, tmp_path, **kwargs) -> Indexed:
    store = Indexed(repo, tmp_path / "once" / "cortex.db")
    store.index(model="none", **kwargs)
    return store


def test_a_creation_reset_away_is_not_left_out_of_the_new_one(repo, cortex, tmp_path):
    repo.write("a.py", "def f():\n    return 1\n")
    base = repo.commit("create a.py", days_ago=5)
    repo.write("b.py", "def g():\n    return 1\n")
    repo.commit("create b.py", days_ago=4)
    cortex.index(model="none")
    repo.git("reset", "-q", "--hard", base)
    repo.write("b.py", "def g():\n    return 2\n")
    repo.commit("create b.py again", days_ago=3)
    cortex.index(model="none")
    # git log -- b.py lists "create b.py again" alone; the first creation is on no history.
    assert pruned(cortex) == []
    assert histories(cortex) == histories(once(repo, tmp_path))


def test_a_side_branch_no_longer_indexed_leaves_no_pruned_change(repo, cortex, tmp_path):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("create a.py", days_ago=5)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("side edit a.py", days_ago=4)
    repo.git("checkout", "-q", "main")
    cortex.index(model="none", all_branches=True)
    # Indexed with every branch, the side branch's edit is off HEAD's history of a.py.
    assert pruned(cortex) == [("a.py", "side edit a.py", "a.py")]
    assert histories(cortex) == histories(once(repo, tmp_path / "all", all_branches=True))
    cortex.index(model="none", all_branches=False)
    assert pruned(cortex) == []
    assert histories(cortex) == histories(once(repo, tmp_path))


def test_a_run_stopped_after_marking_commits_unreachable(repo, cortex, tmp_path, monkeypatch):
    """The run that marked the side branch unreachable stopped before it updated the pruning;
    the next run finds the marks already made, and must still recompute what they changed."""
    import cortex_core.index.ingest as ingest
    repo.write("a.py", "def f():\n    return 1\n")
    repo.write("b.py", "def g():\n    return 1\n")
    repo.commit("create a.py and b.py", days_ago=5)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("side edit a.py", days_ago=4)
    repo.git("checkout", "-q", "main")
    cortex.index(model="none", all_branches=True)
    assert pruned(cortex) == [("a.py", "side edit a.py", "a.py")]
    repo.write("b.py", "def g():\n    return 2\n")
    repo.commit("edit b.py", days_ago=3)
    monkeypatch.setattr(ingest, "BATCH_SECONDS", 0.0)   # every commit its own transaction

    def stop(done, total, phase="commits"):
        if phase.endswith("commits") and done == 1:
            raise Stop

    with pytest.raises(Stop):
        cortex.index(model="none", all_branches=False, progress=stop)
    monkeypatch.undo()
    assert cortex.reader().execute(
        "select reachable from commits where subject = 'side edit a.py'").get == 0
    cortex.index(model="none")
    assert pruned(cortex) == []
    assert histories(cortex) == histories(once(repo, tmp_path))


def test_a_merge_reset_away_and_back(repo, cortex, tmp_path):
    repo.write("a.py", "def f():\n    return 1\n")
    base = repo.commit("create a.py", days_ago=5)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("side edit a.py", days_ago=4)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-s", "ours", "-m", "merge side", "side")
    merged = repo.head()
    repo.git("branch", "-q", "-D", "side")
    cortex.index(model="none")
    # The merge kept main's a.py: git log -- a.py leaves the side branch's edit out.
    assert pruned(cortex) == [("a.py", "side edit a.py", "a.py")]
    repo.git("reset", "-q", "--hard", base)
    cortex.index(model="none")
    assert pruned(cortex) == []
    assert histories(cortex) == histories(once(repo, tmp_path / "reset"))
    repo.git("reset", "-q", "--hard", merged)
    cortex.index(model="none")
    assert pruned(cortex) == [("a.py", "side edit a.py", "a.py")]
    assert histories(cortex) == histories(once(repo, tmp_path / "back"))


def test_a_rename_away_no_longer_indexed_gives_the_path_its_older_changes_back(
        repo, cortex, tmp_path):
    """A side branch renamed a.py's first life to b.py, a file HEAD has: a.py's changes before
    that rename are b.py's past, not a.py's to prune. Indexed without that branch, they are
    a.py's again, and the one a merge dropped is left out of its history: the rename's old path
    is recomputed too, not only the path it made."""
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("create a.py", days_ago=9)
    repo.git("checkout", "-q", "-b", "x")
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("x edit a.py", days_ago=8)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-s", "ours", "-m", "merge x", "x")
    repo.git("branch", "-q", "-D", "x")
    repo.write("a.py", "def f():\n    return 3\n")
    repo.commit("edit a.py", days_ago=7)
    repo.git("checkout", "-q", "-b", "side")
    repo.move("a.py", "b.py")
    repo.commit("side rename a.py->b.py", days_ago=6)
    repo.git("checkout", "-q", "main")
    repo.remove("a.py")
    repo.commit("delete a.py", days_ago=5)
    repo.write("b.py", "def g():\n    return 1\n")
    repo.commit("create b.py", days_ago=4)
    repo.write("a.py", "def h():\n    return 1\n")
    repo.commit("create a.py again", days_ago=3)
    cortex.index(model="none", all_branches=True)
    assert histories(cortex) == histories(once(repo, tmp_path / "all", all_branches=True))
    cortex.index(model="none", all_branches=False)
    # git log -- a.py: the merge kept main's a.py, so the edit on x is not on it.
    assert ("a.py", "x edit a.py", "a.py") in pruned(cortex)
    assert histories(cortex) == histories(once(repo, tmp_path))
