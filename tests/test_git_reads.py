"""The one place for git reads (git_reads.py) and the one indexer launcher (child_process.py),
on real repositories built in temporary folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from scripted_repo import ScriptedRepo

from cortex_cli import hooks
from cortex_core.child_process import (CLI_ARGS, PARENT_ENV, index_arguments, index_command,
                                       spawn_options)
from cortex_core.config import Settings
from cortex_core.git.git_reads import (Head, commit, head_commit, head_of, indexed_head_blob,
                                       path_blob, read_blob, read_blob_at, read_head, repository)
from cortex_core.index.ingest import index_repository
from cortex_core.store.store import open_reader


def _git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(cwd), GIT_TERMINAL_PROMPT="0")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def two(tmp_path) -> ScriptedRepo:
    """main: a.py in two versions, b.txt once."""
    repo = ScriptedRepo(tmp_path / "repo")
    repo.write("a.py", "x = 1\n")
    repo.write("b.txt", "bee\n")
    repo.commit("first", days_ago=2)
    repo.write("a.py", "x = 2\n")
    repo.commit("second", days_ago=1)
    return repo


# -- HEAD ---------------------------------------------------------------------------------------

def test_head_on_a_branch(two):
    head = read_head(two.path)
    assert head == Head(two.head(), "refs/heads/main", "main")
    assert not head.unborn and not head.detached
    two.git("checkout", "-q", "-b", "fix/retry-budget")
    assert read_head(two.path).branch == "fix/retry-budget"
    assert head_of(repository(two.path)) == read_head(two.path)


def test_head_from_a_folder_inside_the_working_tree(two):
    (two.path / "pkg").mkdir()
    assert read_head(two.path / "pkg") == read_head(two.path)


def test_head_detached(two):
    first = two.git("rev-parse", "HEAD~1")
    two.git("checkout", "-q", "--detach", first)
    head = read_head(two.path)
    assert head == Head(first)
    assert head.detached and not head.unborn and head.branch is None


def test_head_unborn(tmp_path):
    repo = ScriptedRepo(tmp_path / "empty")
    head = read_head(repo.path)
    assert head == Head(None) and head.unborn and not head.detached
    assert head_commit(pygit2.Repository(str(repo.path))) is None


def test_head_of_no_repository_is_none(tmp_path):
    assert read_head(tmp_path / "nothing here") is None
    (tmp_path / "plain").mkdir()       # the temporary folder is in no repository
    assert repository(tmp_path / "plain") is None and read_head(tmp_path / "plain") is None


def test_head_of_a_bare_repository(two, tmp_path):
    bare = tmp_path / "bare.git"
    _git(tmp_path, "clone", "-q", "--bare", str(two.path), str(bare))
    assert read_head(bare) == Head(two.head(), "refs/heads/main", "main")


def test_head_of_a_broken_ref_is_unreadable_not_an_error(two):
    ref = two.path / ".git" / "refs" / "heads" / "main"
    two.git("pack-refs", "--all")   # the ref lives in packed-refs only: still read
    assert read_head(two.path).commit == two.head()
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text("not a commit id\n")
    assert read_head(two.path) is None
    assert head_commit(pygit2.Repository(str(two.path))) is None


def test_head_commit_and_commit_by_id(two):
    repo = repository(two.path)
    assert str(head_commit(repo).id) == two.head()
    first = two.git("rev-parse", "HEAD~1")
    assert str(commit(repo, first).id) == first
    assert commit(repo, None) is None and commit(repo, "") is None
    assert commit(repo, "0" * 40) is None                    # not in the repository
    assert commit(repo, "not hex") is None
    tree = two.git("rev-parse", "HEAD^{tree}")
    assert commit(repo, tree) is None                        # an object, not a commit


# -- blobs --------------------------------------------------------------------------------------

def test_blobs_by_id_and_at_a_path(two):
    repo = repository(two.path)
    first = commit(repo, two.git("rev-parse", "HEAD~1"))
    assert path_blob(repo, first, "a.py") == b"x = 1\n"
    assert path_blob(repo, head_commit(repo), "a.py") == b"x = 2\n"
    assert path_blob(repo, first, "missing.py") is None
    assert path_blob(repo, None, "a.py") is None
    two.write("pkg/c.py", "c = 3\n")
    two.commit("third")
    assert path_blob(repo, head_commit(repo), "pkg") is None    # a folder, not a file
    blob_id = two.git("rev-parse", "HEAD:b.txt")
    assert read_blob(repo, blob_id) == b"bee\n"
    assert read_blob(repo, pygit2.Oid(hex=blob_id)) == b"bee\n"
    assert read_blob_at(two.path, blob_id) == b"bee\n"
    assert read_blob(repo, "0" * 40) is None
    assert read_blob(repo, "xyz") is None
    assert read_blob(repo, two.git("rev-parse", "HEAD^{tree}")) is None   # not a blob
    assert read_blob_at(two.path.parent / "nowhere", blob_id) is None


def test_a_partial_clones_missing_blob_is_none_and_starts_no_fetch(two, tmp_path):
    served = tmp_path / "served.git"
    _git(tmp_path, "clone", "-q", "--bare", str(two.path), str(served))
    _git(served, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    _git(tmp_path, "clone", "-q", "--filter=blob:none", served.as_uri(), str(clone))
    old = two.git("rev-parse", "HEAD~1:a.py")     # only HEAD's blobs were fetched, at checkout
    repo = repository(clone)
    assert read_blob(repo, old) is None
    first = commit(repo, two.git("rev-parse", "HEAD~1"))
    assert first is not None and path_blob(repo, first, "a.py") is None
    assert path_blob(repo, head_commit(repo), "a.py") == b"x = 2\n"
    assert read_head(clone).commit == two.head()
    # libgit2 does not fetch: the object is still missing afterwards.
    missing = subprocess.run(["git", "cat-file", "-e", old], cwd=clone, capture_output=True,
                             env=dict(os.environ, GIT_NO_LAZY_FETCH="1"))
    assert missing.returncode != 0


def test_the_blob_at_the_indexed_head_not_the_repositorys(two, tmp_path):
    db = tmp_path / "index" / "cortex.db"
    index_repository(two.path, db, Settings(), model="none")
    two.write("a.py", "x = 3\n")
    two.remove("b.txt")
    two.commit("third: ahead of the index")
    con = open_reader(db)
    try:
        assert indexed_head_blob(con, two.path, "a.py") == b"x = 2\n"
        assert indexed_head_blob(con, two.path, "b.txt") == b"bee\n"
        assert indexed_head_blob(con, two.path, "nope.py") is None
        assert indexed_head_blob(con, tmp_path / "not a repository", "a.py") is None
    finally:
        con.close()


# -- the indexer launcher -----------------------------------------------------------------------

def test_the_index_command_line():
    assert CLI_ARGS == ("-P", "-m", "cortex_core")
    assert index_command("/r", progress_json=True, wait=30) == [
        sys.executable, "-P", "-m", "cortex_core", "index", "--progress-json", "--wait", "30",
        "--repo", "/r"]
    assert index_command(Path("/r"), python="/py", db=Path("/d/c.db"), rebuild=True,
                         model="--evil") == [
        "/py", "-P", "-m", "cortex_core", "index", "--rebuild", "--model=--evil",
        "--db", "/d/c.db", "--repo", "/r"]
    assert index_command("/r", model=None, db=None) == [*index_command("/r")]
    assert index_arguments("/r", quiet=True, coalesce=True, wait=3600) == [
        "index", "--quiet", "--coalesce", "--wait", "3600", "--repo", "/r"]


def test_the_hooks_run_the_launchers_command():
    script = hooks.hook_script("post-commit", "/opt/py thon/bin/python")
    assert "py='/opt/py thon/bin/python'" in script
    assert '    set -- "$py" -P -m cortex_core    # -P:' in script
    assert ('set -- "$@" index --quiet --coalesce --wait 3600 --repo "$top"\n') in script


def test_spawn_options():
    options = spawn_options()
    assert options["stdin"] == subprocess.DEVNULL and options["stdout"] == subprocess.PIPE
    assert options["start_new_session"] is True and options["cwd"] == "/"
    assert options["env"][PARENT_ENV] == str(os.getpid())
    assert options["env"]["PYTHONIOENCODING"] == "utf-8"
    assert options["env"]["PATH"] == os.environ["PATH"]


def test_the_launched_indexer_runs_and_reports_progress(two, tmp_path):
    db = tmp_path / "store" / "cortex.db"
    proc = subprocess.Popen(index_command(two.path, db=db, progress_json=True, wait=30,
                                          model="none"),
                            stderr=subprocess.PIPE, **spawn_options())
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    events = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert events[-1]["event"] == "done"
    assert events[-1]["summary"]["head"] == two.head()
    assert any(e["event"] == "progress" for e in events)
    assert db.exists()


def test_the_launched_indexer_never_imports_the_repositorys_code(two, tmp_path):
    # Run from the repository itself (not "/"): -P keeps its own cortex_core/ off sys.path.
    marker = tmp_path / "PWNED"
    two.write("cortex_core/__init__.py", "")
    two.write("cortex_core/__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    two.write("json.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    two.commit("shadow modules")
    done = subprocess.run(index_command(two.path, db=tmp_path / "c.db", quiet=True,
                                        model="none"),
                          cwd=two.path, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert not marker.exists()
