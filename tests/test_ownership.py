"""A store holds one repository's history (cortex_core/git/ownership.py): given another
repository's store (`--db`, a copied `.cortex/`), a read says so instead of answering with the
other history, and an index run refuses instead of writing two histories into one store. Real
git repositories in temporary folders, real stores, the real command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_repo import ScriptedRepo  # noqa: E402

from cortex_core import api  # noqa: E402
from cortex_core.engine import Engine  # noqa: E402
from cortex_core.store.store import REPOSITORY_META  # noqa: E402


def _repo(path: Path, name: str, commits: int = 3) -> ScriptedRepo:
    repo = ScriptedRepo(path)
    for i in range(commits):
        repo.write(f"{name}.py", f"def {name}():\n    return {i}\n")
        repo.commit(f"{name}: step {i}", days_ago=10 - i)
    return repo


def _index(repo: Path, db: Path, rebuild: bool = False):
    with Engine.open(repo, db=db, for_writing=True) as engine:
        return engine.run(api.IndexRequest(model="none", rebuild=rebuild))


def _history(repo: Path, db: Path, path: str):
    with Engine.open(repo, db=db) as engine:
        return engine.run(api.HistoryRequest(engine.target(path, cwd=repo)))


def _rows(db: Path) -> tuple[int, int, str | None]:
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        recorded = con.execute("select value from meta where key = ?", (REPOSITORY_META,)).get
        return (con.execute("select count(*) from commits").get,
                con.execute("select count(*) from commits where reachable = 1").get,
                recorded.split("\n")[0] if recorded else None)
    finally:
        con.close()


@pytest.fixture
def two(tmp_path: Path) -> tuple[ScriptedRepo, ScriptedRepo, Path]:
    ours = _repo(tmp_path / "ours", "alpha")
    theirs = _repo(tmp_path / "theirs", "beta", commits=4)
    db = tmp_path / "stores" / "shared.db"
    db.parent.mkdir()
    _index(ours.path, db)
    return ours, theirs, db


def test_a_store_records_the_repository_it_was_indexed_from(two):
    ours, _, db = two
    assert _rows(db) == (3, 3, str(ours.path))


def test_reading_another_repositorys_store_is_refused_with_what_fixes_it(two):
    _, theirs, db = two
    with pytest.raises(api.StoreError) as caught:
        _history(theirs.path, db, "beta.py")
    assert caught.value.hint == api.Hint("foreign")
    assert "holds another repository's history" in str(caught.value)
    assert str(theirs.path) in str(caught.value)


def test_indexing_another_repository_into_a_store_is_refused_and_changes_nothing(two):
    ours, theirs, db = two
    before = _rows(db)
    with pytest.raises(api.StoreError) as caught:
        _index(theirs.path, db)
    assert caught.value.hint == api.Hint("foreign")
    assert _rows(db) == before   # not one commit marked unreachable, none added
    assert _history(ours.path, db, "alpha.py").entries[0].commit.subject == "alpha: step 2"


def test_a_rebuild_gives_the_store_to_the_other_repository(two):
    _, theirs, db = two
    _index(theirs.path, db, rebuild=True)
    assert _rows(db) == (4, 4, str(theirs.path))
    assert len(_history(theirs.path, db, "beta.py").entries) == 4


def test_a_moved_copy_and_a_shallow_clone_still_read_it(two, tmp_path: Path):
    ours, _, db = two
    moved = tmp_path / "moved"
    shutil.copytree(ours.path, moved)
    assert len(_history(moved, db, "alpha.py").entries) == 3
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ours.path}", str(shallow)],
                   check=True, capture_output=True)
    assert len(_history(shallow, db, "alpha.py").entries) == 3
    _index(moved, db)   # the copy indexes on; the store now names it
    assert _rows(db) == (3, 3, str(moved))


def test_a_store_that_predates_the_record_is_read_as_before_until_an_index_run(two):
    """A store written before stores named their repository costs its reads nothing more (no
    libgit2 to import on each command); an index run looks for its commits, refuses another
    repository's and names its own."""
    ours, theirs, db = two
    con = apsw.Connection(str(db))
    con.execute("delete from meta where key = ?", (REPOSITORY_META,))
    con.close()
    assert len(_history(ours.path, db, "alpha.py").entries) == 3
    with pytest.raises(api.StoreError) as caught:
        _index(theirs.path, db)
    assert caught.value.hint == api.Hint("foreign") and _rows(db) == (3, 3, None)
    _index(ours.path, db)
    assert _rows(db) == (3, 3, str(ours.path))


def test_the_command_line_says_it_and_how_to_fix_it(two):
    _, theirs, db = two
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    for command in (["history", "beta.py"], ["index", "--model", "none", "--quiet"]):
        done = subprocess.run([sys.executable, "-P", "-m", "cortex_cli.cli", *command,
                               "--repo", str(theirs.path), "--db", str(db)],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 1, done.stderr
        assert "holds another repository's history" in done.stderr
        assert "cortex index --rebuild" in done.stderr
        assert "Traceback" not in done.stderr


def test_an_index_run_looks_for_the_commits_whatever_path_the_store_names(two):
    """Another repository cloned at the very path of the old one: reads take it by its path
    (docs/limits.md), but an index run looks for the store's commits and refuses it."""
    ours, theirs, db = two
    shutil.rmtree(ours.path)
    subprocess.run(["git", "clone", "-q", f"file://{theirs.path}", str(ours.path)], check=True,
                   capture_output=True)
    before = _rows(db)
    with pytest.raises(api.StoreError) as caught:
        _index(ours.path, db)
    assert caught.value.hint == api.Hint("foreign") and _rows(db) == before
