"""Loose objects cut short, which libgit2 1.9.7 reads forever (git/loose_objects.py): found by
the check, hidden from every read, in real repositories built in temporary folders. Whatever
could spin runs in a child process with a time limit, so that a regression fails instead of
hanging the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from cortex_core.git.loose_objects import (check_loose, check_loose_again, complete, loose_damaged,
                                          objects_dirs)
from cortex_core.store.store import loose_check_state, open_reader

from test_damaged_clones import GIT_ENV, cortex, git, truncate_object

PROJECT = Path(__file__).resolve().parent.parent


def small_repo(path: Path, commits: int = 6) -> Path:
    """`commits` commits of app.py and notes.txt, every object loose (as commits leave them)."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for n in range(1, commits + 1):
        (path / "app.py").write_text(f"def step():\n    return {n}\n" + "# pad\n" * n)
        (path / "notes.txt").write_text(f"note {n}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"change {n}")
    return path


def in_child(code: str, timeout: float = 60) -> str:
    """Run `code` in a fresh interpreter; its stdout. A spin is a failure after `timeout`."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=dict(GIT_ENV, PYTHONPATH=str(PROJECT)))
    assert done.returncode == 0, done.stderr
    return done.stdout


def index(repo: Path) -> dict:
    done = cortex("index", "--json", "--quiet", "--model", "none", cwd=repo)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def object_file(repo: Path, oid: str) -> Path:
    return repo / ".git/objects" / oid[:2] / oid[2:]


def test_whole_loose_objects_pass_and_every_cut_fails(tmp_path):
    repo = small_repo(tmp_path / "repo")
    files = [p for p in (repo / ".git/objects").glob("??/*")]
    assert len(files) == 24 and all(complete(str(p)) for p in files)
    data = object_file(repo, git(repo, "rev-parse", "HEAD:app.py")).read_bytes()
    cut = tmp_path / "cut"
    for length in (0, 1, 2, 10, len(data) // 2, len(data) - 1):
        cut.write_bytes(data[:length])
        assert not complete(str(cut)), length
    cut.write_bytes(b"no zlib stream at all" * 3)
    assert not complete(str(cut))
    assert not complete(str(tmp_path / "absent"))


def test_a_large_loose_blob_is_checked_in_pieces(tmp_path):
    """10 MB of text in one loose object: whole, then cut a byte short."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "big.txt").write_bytes(os.urandom(5_000_000).hex().encode())
    oid = git(repo, "hash-object", "-w", "big.txt")
    path = object_file(repo, oid)
    assert complete(str(path))
    path.chmod(0o644)
    path.write_bytes(path.read_bytes()[:-1])
    assert not complete(str(path))


def test_the_check_finds_what_is_cut_and_looks_only_at_new_files(tmp_path):
    repo = small_repo(tmp_path / "repo")
    folders = objects_dirs(pygit2.Repository(str(repo)))
    assert folders == [str(repo / ".git/objects")]
    hour_ago = time.time() - 3600
    for path in [*(repo / ".git/objects").glob("??"), *(repo / ".git/objects").glob("??/*")]:
        os.utime(path, (hour_ago, hour_ago))   # written long before the check
    first = check_loose(folders)
    # 6 commits, each with its tree and two blobs
    assert first.damaged == frozenset() and first.examined == 24

    blob = git(repo, "rev-parse", "HEAD~2:app.py")
    truncate_object(repo / ".git/objects", blob)
    # Cut after the check, and its file no newer than it: not looked at again (a full check
    # is a rebuild's), but any damage a former check found is looked at every time.
    os.utime(object_file(repo, blob), (hour_ago, hour_ago))
    os.utime(object_file(repo, blob).parent, (hour_ago, hour_ago))
    again = check_loose(folders, first.checked_ns)
    assert again.examined == 0 and again.damaged == frozenset()
    assert check_loose(folders).damaged == {blob}
    assert check_loose(folders, first.checked_ns, [blob]).damaged == {blob}

    # A new commit's objects are newer than the check: looked at, and one cut is found.
    (repo / "app.py").write_text("def step():\n    return 'new'\n")
    git(repo, "commit", "-q", "-am", "new")
    new_blob = git(repo, "rev-parse", "HEAD:app.py")
    truncate_object(repo / ".git/objects", new_blob)
    third = check_loose(folders, first.checked_ns, [blob])
    assert third.damaged == {blob, new_blob} and third.examined >= 3

    # Repaired (the object written again whole): no longer damaged.
    object_file(repo, new_blob).unlink()
    git(repo, "hash-object", "-w", "app.py")
    assert check_loose(folders, first.checked_ns, [blob, new_blob]).damaged == {blob}
    assert loose_damaged(folders, blob) and not loose_damaged(folders, new_blob)
    assert not loose_damaged(folders, "0" * 40)   # not here at all: not a damaged loose object


def test_a_long_lived_reader_checks_only_what_is_new_to_it(tmp_path):
    """The language server asks again and again, from a store whose check may be old or absent:
    after its first check, it looks only at newer files, and keeps what it found."""
    repo = small_repo(tmp_path / "repo")
    folders = objects_dirs(pygit2.Repository(str(repo)))
    blob = git(repo, "rev-parse", "HEAD~2:app.py")
    truncate_object(repo / ".git/objects", blob)
    hour_ago = time.time() - 3600
    for path in [*(repo / ".git/objects").glob("??"), *(repo / ".git/objects").glob("??/*")]:
        os.utime(path, (hour_ago, hour_ago))
    first = check_loose_again(folders)
    assert first.damaged == {blob} and first.examined == 24
    again = check_loose_again(folders)
    assert again.damaged == {blob} and again.examined == 0


@pytest.mark.parametrize("mode", ["yes", "auto"])
def test_recent_history_first_reads_nothing_before_the_check(tmp_path, mode):
    """The language server's and the MCP server's first run choose a recent window first, which
    walks commits: with a cut commit, that walk too must meet a missing object, not spin."""
    repo = small_repo(tmp_path / "repo")
    truncate_object(repo / ".git/objects", git(repo, "rev-parse", "HEAD~3"))
    done = cortex("index", "--json", "--quiet", "--model", "none", "--recent-first", mode,
                  cwd=repo)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["missing_objects"] == 1
    assert summary["missing_cause"].startswith("damaged in the repository")


def test_alternates_and_worktrees_are_checked_where_their_objects_are(tmp_path):
    source = small_repo(tmp_path / "source")
    shared = tmp_path / "shared"
    git(tmp_path, "clone", "-q", "--shared", str(source), str(shared))
    folders = objects_dirs(pygit2.Repository(str(shared)))
    assert folders == [str(shared / ".git/objects"), str(source / ".git/objects")]
    blob = git(source, "rev-parse", "HEAD~1:app.py")
    truncate_object(source / ".git/objects", blob)
    assert check_loose(folders).damaged == {blob}

    git(source, "worktree", "add", "-q", str(tmp_path / "tree"), "-b", "side")
    worktree = pygit2.Repository(str(tmp_path / "tree"))
    assert objects_dirs(worktree) == [str(source / ".git/objects")]


def test_an_index_reads_around_cut_objects_of_a_shared_clone(tmp_path):
    """A clone borrowing its objects (`--shared`) whose source has a cut blob: the run ends,
    and says what it could not read."""
    source = small_repo(tmp_path / "source")
    shared = tmp_path / "shared"
    git(tmp_path, "clone", "-q", "--shared", str(source), str(shared))
    truncate_object(source / ".git/objects", git(source, "rev-parse", "HEAD~3:app.py"))
    summary = index(shared)
    assert summary["total_commits"] == 6
    assert summary["missing_objects"] == 1
    assert summary["missing_cause"].startswith("damaged in the repository")


def test_an_update_checks_the_new_objects_and_forgets_repaired_ones(tmp_path):
    repo = small_repo(tmp_path / "repo")
    index(repo)
    (repo / "app.py").write_text("def step():\n    return 'after'\n")
    git(repo, "commit", "-q", "-am", "after the index")
    blob = git(repo, "rev-parse", "HEAD:app.py")
    whole = object_file(repo, blob).read_bytes()
    truncate_object(repo / ".git/objects", blob)

    summary = index(repo)   # would spin in libgit2 without the check
    assert summary["new_commits"] == 1 and summary["missing_objects"] == 1
    con = open_reader(repo / ".cortex/cortex.db")
    try:
        since, damaged = loose_check_state(con)
    finally:
        con.close()
    assert damaged == [blob] and since > 0

    object_file(repo, blob).write_bytes(whole)   # repaired
    index(repo)
    con = open_reader(repo / ".cortex/cortex.db")
    try:
        assert loose_check_state(con)[1] == []
    finally:
        con.close()


def test_reads_for_the_editor_skip_a_cut_blob(tmp_path):
    """read_blob_at (hovers' and packs' source text) and working_changes (commits made after
    the index, whose tree is cut) answer instead of spinning."""
    repo = small_repo(tmp_path / "repo")
    index(repo)
    head_blob = git(repo, "rev-parse", "HEAD:app.py")
    truncate_object(repo / ".git/objects", head_blob)
    (repo / "notes.txt").write_text("after\n")
    git(repo, "commit", "-q", "-am", "after the index")
    truncate_object(repo / ".git/objects", git(repo, "rev-parse", "HEAD^{tree}"))
    out = in_child(f"""
from pathlib import Path
from cortex_core.git.git_reads import read_blob_at
from cortex_core.query.working_changes import working_changes
from cortex_core.store.store import open_reader
root = Path({str(repo)!r})
print(read_blob_at(root, {head_blob!r}))
print(read_blob_at(root, {git(repo, "rev-parse", "HEAD~1:notes.txt")!r}))
con = open_reader(root / ".cortex/cortex.db")
print(sorted(working_changes(con, root).files))
""")
    assert out.splitlines() == ["None", "b'note 6\\n'", "[]"]
