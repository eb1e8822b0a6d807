"""Clones people really have: blobless partial clones (online and with the remote gone), and
repositories missing a blob, a tree or a commit. Each is built for real in a temporary folder
(git fast-import, git clone --filter over file://, object files deleted) and indexed through the
CLI, with one worker and with two (worker processes read histories of 500 commits or more)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from cortex_core.query.blame import last_change_of_line
from cortex_core.git.commit_reader import CommitReader
from cortex_core.config import Settings
from cortex_core.git.object_source import CAUSE_TRUNCATED, ObjectSource, missing_objects
from cortex_core.index.read_pool import WorkerError, read_parallel
from cortex_core.store.store import open_reader

from scripted_repo import ScriptedRepo

PROJECT = Path(__file__).resolve().parent.parent
COMMITS = 520   # above ingest.PARALLEL_MIN_COMMITS: --jobs 2 reads them in worker processes
GIT_ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0",
               GIT_AUTHOR_NAME="Ann", GIT_AUTHOR_EMAIL="ann@example.com",
               GIT_COMMITTER_NAME="Ann", GIT_COMMITTER_EMAIL="ann@example.com")


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, input=input,
                          capture_output=True, check=True)
    return done.stdout.decode().strip()


def cortex(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=dict(GIT_ENV, PYTHONPATH=str(PROJECT)))


def index(path: Path, jobs: int) -> dict:
    done = cortex("index", "--json", "--quiet", "--jobs", str(jobs), "--model", "none", cwd=path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def status(path: Path) -> dict:
    return json.loads(cortex("status", "--json", cwd=path).stdout)


def history(path: Path, target: str) -> list[dict]:
    done = cortex("history", target, "--json", cwd=path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["entries"]


def build_history(path: Path, commits: int) -> Path:
    """A repository of `commits` commits made with one `git fast-import`: `app.py`'s `step`
    changes in every commit, `lib/util.py`'s `helper` in every tenth, `notes.txt` in every
    seventh."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    stream = []
    for n in range(1, commits + 1):
        files = {"app.py": f"def step():\n    return {n}\n\n\ndef stay():\n    return 0\n"}
        if n == 1 or n % 10 == 0:
            files["lib/util.py"] = f"def helper():\n    return {n}\n"
        if n == 1 or n % 7 == 0:
            files["notes.txt"] = f"note {n}\n"
        stream.append(f"commit refs/heads/main\nmark :{n}\n"
                      f"committer Ann <ann@example.com> {1_600_000_000 + n * 60} +0000\n"
                      f"data <<EOF\nchange {n}\nEOF\n" + (f"from :{n - 1}\n" if n > 1 else ""))
        for name, content in files.items():
            data = content.encode()
            stream.append(f"M 100644 inline {name}\ndata {len(data)}\n{content}\n")
    git(path, "fast-import", "--quiet", input="".join(stream).encode())
    git(path, "checkout", "-q", "main")
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Path:
    """A bare repository that serves partial clones over file://."""
    root = tmp_path_factory.mktemp("served")
    source = build_history(root / "source", COMMITS)
    bare = root / "served.git"
    git(root, "clone", "-q", "--bare", str(source), str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    return bare


def partial_clone(served: Path, dest: Path) -> Path:
    git(dest.parent, "clone", "-q", "--filter=blob:none", served.as_uri(), str(dest))
    return dest


def missing_count(clone: Path) -> int:
    return len(missing_objects(str(clone), ["HEAD"], []))


# -- partial clones ----------------------------------------------------------------------------

@pytest.mark.parametrize("jobs", [1, 2])
def test_partial_clone_is_indexed_as_fully_as_a_full_clone(served, tmp_path, jobs):
    clone = partial_clone(served, tmp_path / "partial")
    lacking = missing_count(clone)
    assert lacking > COMMITS   # every old version of app.py, util.py, notes.txt
    full = tmp_path / "full"
    git(tmp_path, "clone", "-q", served.as_uri(), str(full))

    summary = index(clone, jobs)
    assert summary["objects_fetched"] == lacking and summary["missing_objects"] == 0
    assert missing_count(clone) == 0   # fetched in one request, stored in the clone
    reference = index(full, 1)
    for key in ("total_commits", "file_changes", "symbol_changes", "skipped_file_changes"):
        assert summary[key] == reference[key], key
    step = history(clone, "app.py::step")
    assert len(step) == COMMITS and step[-1]["change"] == "added"
    assert len(history(clone, "lib/util.py::helper")) == 1 + COMMITS // 10
    assert status(clone)["missing"] is None


@pytest.mark.parametrize("jobs", [1, 2])
def test_partial_clone_offline_indexes_the_rest_and_says_what_is_missing(served, tmp_path,
                                                                          jobs):
    clone = partial_clone(served, tmp_path / "partial")
    lacking = missing_count(clone)
    moved = tmp_path / "away.git"
    shutil.move(served, moved)   # the remote is unreachable from now on
    try:
        summary = index(clone, jobs)
    finally:
        shutil.move(moved, served)
    assert summary["missing_objects"] == lacking and summary["objects_fetched"] == 0
    assert summary["missing_cause"] == "partial clone, remote unreachable"
    assert summary["total_commits"] == COMMITS
    # Every file change needs a blob the checkout did not bring (it brought HEAD's versions
    # only): the whole history is at file level, and every change of app.py is listed.
    assert summary["skipped_file_changes"] == summary["file_changes"] > COMMITS
    entries = history(clone, "app.py")
    assert len(entries) == COMMITS and all(e["added"] is None for e in entries)
    # A function's history is empty; it says why, and how to get the rest (it said nothing).
    step = json.loads(cortex("history", "app.py::step", "--json", cwd=clone).stdout)
    assert step["entries"] == []
    assert step["note"] == (f"{COMMITS} commits of its file were not read for symbols, the newest "
                            f"{entries[0]['commit']['sha'][:10]}: missing object (partial clone, "
                            "remote unreachable); a rebuild of the index reads what is missing "
                            "once the repository has it")
    # HEAD's files were checked out, so their symbols are known.
    state = status(clone)
    assert state["symbols_alive"] == 3
    assert state["missing"] == {"objects": lacking,
                                "cause": "partial clone, remote unreachable",
                                "changes_in_history": summary["skipped_file_changes"],
                                "files_at_head": 0}
    text = cortex("status", cwd=clone).stdout
    assert (f"{lacking} objects could not be read (partial clone, remote unreachable)"
            in text)
    assert "cortex index --rebuild` once the remote is reachable" in text

    # The remote is back: the advice works.
    rebuilt = json.loads(cortex("index", "--rebuild", "--json", "--quiet", "--model", "none",
                                "--jobs", str(jobs), cwd=clone).stdout)
    assert rebuilt["missing_objects"] == 0 and rebuilt["objects_fetched"] == lacking
    assert len(history(clone, "app.py::step")) == COMMITS
    assert status(clone)["missing"] is None


def test_blobs_libgit2_lacks_are_read_through_git_one_by_one(served, tmp_path):
    """The fallback after the prefetch: a reader asks git for each blob libgit2 cannot find."""
    clone = partial_clone(served, tmp_path / "partial")
    repo = pygit2.Repository(str(clone))
    commit = repo.revparse_single("HEAD~3")
    source = ObjectSource(str(clone), online=True)
    try:
        record = CommitReader(repo, Settings().index, objects=source).read(commit)
    finally:
        source.close()
    app = next(f for f in record.files if f.path == "app.py")
    assert app.skip_reason is None and app.hunks == [(2, 1, 2, 1)]
    assert [(s.symbol.qualname, s.change) for s in record.symbols] == [("step", "body")]
    assert record.missing == []


def test_without_git_the_reader_records_the_missing_blobs(served, tmp_path):
    clone = partial_clone(served, tmp_path / "partial")
    repo = pygit2.Repository(str(clone))
    commit = repo.revparse_single("HEAD~3")
    record = CommitReader(repo, Settings().index,
                          objects=ObjectSource(str(clone), online=False)).read(commit)
    app = next(f for f in record.files if f.path == "app.py")
    assert app.skip_reason == "missing object" and record.symbols == []
    assert len(record.missing) == 2   # app.py before and after
    assert str(commit.tree["app.py"].id) in record.missing


def hanging_remote(clone: Path, tmp_path: Path) -> dict:
    """Point the clone's remote at a remote helper that never answers (a stalled server); the
    environment that finds the helper, with a short idle bound."""
    helpers = tmp_path / "helpers"
    helpers.mkdir()
    helper = helpers / "git-remote-hang"
    helper.write_text("#!/bin/sh\nexec sleep 3600\n")
    helper.chmod(0o755)
    git(clone, "remote", "set-url", "origin", "hang::nowhere")
    return dict(GIT_ENV, PATH=f"{helpers}{os.pathsep}{os.environ['PATH']}",
                CORTEX_FETCH_IDLE_SECONDS="2", PYTHONPATH=str(PROJECT))


def test_a_remote_that_never_answers_does_not_hold_the_index(served, tmp_path):
    clone = partial_clone(served, tmp_path / "partial")
    lacking = missing_count(clone)
    env = hanging_remote(clone, tmp_path)
    done = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "index", "--json",
                           "--quiet", "--model", "none", "--jobs", "1"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["missing_objects"] == lacking and summary["objects_fetched"] == 0
    assert summary["missing_cause"] == "partial clone, remote unreachable"
    assert summary["total_commits"] == COMMITS


def test_a_lazy_fetch_from_a_remote_that_never_answers_gives_up(served, tmp_path,
                                                                monkeypatch):
    clone = partial_clone(served, tmp_path / "partial")
    env = hanging_remote(clone, tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("CORTEX_FETCH_IDLE_SECONDS", "2")
    repo = pygit2.Repository(str(clone))
    blob = str(repo.revparse_single("HEAD~3").tree["app.py"].id)
    source = ObjectSource(str(clone), online=True)
    try:
        assert source.fetch(blob) is False
        assert source.online is False   # the other objects of the run are not asked for
    finally:
        source.close()


def test_a_cut_object_of_a_partial_clone_is_not_blamed_on_the_remote(served, tmp_path):
    """A commit made in the clone, its blob then cut short: no remote can give it back, and the
    cause says so (not "partial clone", with its advice to rebuild once the remote is back)."""
    clone = partial_clone(served, tmp_path / "clone")
    (clone / "app.py").write_text("def step():\n    return 'local'\n")
    git(clone, "commit", "-q", "-am", "local change")
    truncate_object(clone / ".git/objects", git(clone, "rev-parse", "HEAD:app.py"))
    summary = index(clone, 1)
    assert summary["total_commits"] == COMMITS + 1
    assert summary["missing_cause"] == CAUSE_TRUNCATED


def test_a_shallow_clone_starts_at_its_oldest_commit_with_nothing_missing(served, tmp_path):
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "5", served.as_uri(), str(clone))
    summary = index(clone, 2)
    assert summary["total_commits"] == 5 and summary["missing_objects"] == 0
    step = history(clone, "app.py::step")
    assert len(step) == 5 and step[-1]["change"] == "added"
    assert status(clone)["missing"] is None


def test_a_shallow_clone_says_where_its_history_starts(served, tmp_path):
    """Its oldest commit is read as a root, so what it shows as added there may be older: every
    answer says the clone is shallow and from when (a review saw the boundary commit shown as
    the one that added every function of a file written 13 years earlier)."""
    from cortex_core.dates import shallow_reach
    from cortex_ls.render import index_note
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "5", served.as_uri(), str(clone))
    index(clone, 1)
    oldest = int(git(clone, "log", "-1", "--format=%at", "HEAD~4"))
    said = shallow_reach(oldest)
    assert said.startswith("a shallow clone: history from ")
    shown = cortex("history", "app.py::step", cwd=clone)
    assert f"note: {said} (`git fetch --unshallow`" in shown.stdout
    assert json.loads(cortex("history", "app.py::step", "--json", cwd=clone).stdout)[
        "shallow_from"] == oldest
    assert status(clone)["shallow_from"] == oldest
    assert said in cortex("status", cwd=clone).stdout
    assert f"cortex: note: {said}" in cortex("hotspots", cwd=clone).stderr
    assert index_note(False, None, None, oldest).startswith(said)
    # Deepened to the root, it is a full clone again: no note.
    git(clone, "fetch", "-q", "--unshallow")
    index(clone, 1)
    assert status(clone)["shallow_from"] is None
    assert "shallow" not in cortex("history", "app.py::step", cwd=clone).stdout


def test_replaced_objects_are_said(tmp_path):
    """`git replace --graft` cuts a history for `git log` (4 commits of 6), which libgit2 does
    not apply: the index reads all 6, and status says that git shows replacements (a hostile
    test found it silent). Without replacements, nothing is said."""
    repo = ScriptedRepo(tmp_path / "r")
    for n in range(6):
        repo.write("a.py", f"def f():\n    return {n}\n")
        repo.commit(f"c{n}", days_ago=10 - n)
    index(repo.path, 1)
    assert status(repo.path)["replaced_objects"] == 0
    assert "git replace" not in cortex("status", cwd=repo.path).stdout
    git(repo.path, "replace", "--graft", "HEAD~2", "HEAD~5")
    assert git(repo.path, "rev-list", "--count", "HEAD").strip() == "4"
    index(repo.path, 1)
    found = status(repo.path)
    assert found["replaced_objects"] == 1 and found["commits"] == 6
    assert "note: 1 object replaced by `git replace`: the index reads the history as recorded" \
        in cortex("status", cwd=repo.path).stdout


def test_a_shallow_clone_deepened_later_gets_its_older_history(served, tmp_path):
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "5", served.as_uri(), str(clone))
    assert index(clone, 1)["total_commits"] == 5
    note = cortex("note", "add", "app.py::step", "kept across the rebuild", cwd=clone)
    assert note.returncode == 0, note.stderr
    git(clone, "fetch", "-q", "--deepen", "20")
    summary = index(clone, 1)
    assert summary["total_commits"] == 25 and summary["missing_objects"] == 0
    step = history(clone, "app.py::step")
    # The old boundary commit changed step's body; it did not add it.
    assert len(step) == 25 and [e["change"] for e in step].count("added") == 1
    assert "kept across the rebuild" in cortex("note", "list", cwd=clone).stdout
    assert index(clone, 1)["new_commits"] == 0   # once: the next run is incremental again


def test_a_shallow_clone_deepened_after_a_stopped_first_run_is_read_again(served, tmp_path,
                                                                         monkeypatch):
    """A first run stopped after it stored the boundary commit (read as a root) recorded no
    boundaries: the clone deepened, the next run must still read the history again."""
    import cortex_core.index.ingest as ingest
    from cortex_core.index.ingest import index_repository
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "5", served.as_uri(), str(clone))
    db = tmp_path / "index" / "cortex.db"
    monkeypatch.setattr(ingest, "BATCH_SECONDS", 0.0)   # every commit its own transaction

    def stop(done, total, phase="commits"):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_repository(clone, db, Settings(), progress=stop, jobs=1, model="none")
    monkeypatch.undo()
    git(clone, "fetch", "-q", "--deepen", "20")
    index_repository(clone, db, Settings(), jobs=1, model="none")
    con = open_reader(db)
    roots = con.execute("select count(*) from commits where parents = ''").get
    assert con.execute("select count(*) from commits").get == 25 and roots == 1
    added = con.execute("select count(*) from file_changes fc join files f on f.id = fc.file_id"
                        " where f.path = 'app.py' and fc.status = 'A'").get
    assert added == 1   # the old boundary changed app.py; it did not add it


# -- damaged repositories ----------------------------------------------------------------------

def loose(path: Path) -> None:
    """Every object of the repository as its own file, so that one can be deleted."""
    packs = list((path / ".git/objects/pack").glob("*.pack"))
    for pack in packs:
        data = pack.read_bytes()
        for extra in pack.parent.glob(pack.stem + ".*"):
            extra.unlink()
        git(path, "unpack-objects", "-q", input=data)


def delete_object(path: Path, oid: str) -> None:
    (path / ".git/objects" / oid[:2] / oid[2:]).unlink()


def truncate_object(objects: Path, oid: str) -> None:
    """Cut object `oid`'s file to half its length, as a crash or an interrupted copy leaves it.
    libgit2 1.9.7 reads such a file forever (git/loose_objects.py)."""
    path = objects / oid[:2] / oid[2:]
    path.chmod(0o644)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


@pytest.fixture(scope="module")
def damaged_source(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("damaged")
    source = build_history(root / "source", COMMITS)
    loose(source)
    return source


def damaged(damaged_source: Path, dest: Path, rev: str, what: str,
            how: str = "missing") -> tuple[Path, str]:
    """A copy of the loose repository with one object deleted (or `how="truncated"`: cut
    short): the blob of app.py at `rev`, its root tree, or the commit itself."""
    shutil.copytree(damaged_source, dest, symlinks=True)
    spec = {"blob": f"{rev}:app.py", "tree": f"{rev}^{{tree}}", "commit": rev}[what]
    oid = git(dest, "rev-parse", spec)
    if how == "truncated":
        truncate_object(dest / ".git/objects", oid)
    else:
        delete_object(dest, oid)
    return dest, oid


def test_a_corrupt_pack_is_damage_not_absence(tmp_path):
    """Bytes flipped inside a pack: its objects are listed but unreadable. They were reported
    "missing from the repository", which sends a user looking for a fetch, not a repair."""
    from cortex_core.git.object_source import CAUSE_CORRUPT
    repo = build_history(tmp_path / "repo", 40)
    git(repo, "gc", "-q")
    [pack] = (repo / ".git/objects/pack").glob("*.pack")
    pack.chmod(0o644)
    data = bytearray(pack.read_bytes())
    for at in range(len(data) // 3, 2 * len(data) // 3, 31):
        data[at] ^= 0xFF
    pack.write_bytes(bytes(data))
    summary = index(repo, jobs=1)
    assert summary["missing_objects"] > 0 and summary["missing_cause"] == CAUSE_CORRUPT
    text = cortex("status", cwd=repo).stdout
    assert "damaged in the repository: listed in its packs or objects, but unreadable" in text


@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_a_damaged_tree_at_head_does_not_stop_the_run(damaged_source, tmp_path, damage):
    """HEAD's `lib` folder (a tree only HEAD has) deleted, or its object file overwritten with
    bytes that are no object: the history is indexed, and HEAD's other files too."""
    repo = tmp_path / "repo"
    shutil.copytree(damaged_source, repo, symlinks=True)
    oid = git(repo, "rev-parse", "HEAD:lib")
    path = repo / ".git/objects" / oid[:2] / oid[2:]
    if damage == "missing":
        path.unlink()
    else:
        path.chmod(0o644)
        path.write_bytes(b"these bytes are no zlib stream" * 4)
    summary = index(repo, 1)
    assert summary["total_commits"] == COMMITS
    # lib's tree, and HEAD's root tree, whose diff the commit reader cannot complete: the last
    # commit has no file changes, every other commit is whole.
    assert summary["missing_objects"] == 2
    assert status(repo)["symbols_alive"] == 2   # step and stay; helper was under lib/
    assert len(history(repo, "app.py::step")) == COMMITS - 1


def test_a_missing_head_commit_names_the_way_out(damaged_source, tmp_path):
    """The one damage no run can go around: the commit HEAD names. One line, the fix named."""
    repo, _ = damaged(damaged_source, tmp_path / "repo", "HEAD", "commit")
    done = cortex("index", "--quiet", cwd=repo)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "`git fsck` lists what is missing" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("jobs,how", [(1, "missing"), (2, "missing"), (1, "truncated"),
                                      (2, "truncated")])
def test_a_missing_blob_costs_two_file_changes_and_nothing_else(damaged_source, tmp_path,
                                                                jobs, how):
    """Deleted, or cut short (which libgit2 alone would read forever): the same answers."""
    repo, oid = damaged(damaged_source, tmp_path / "repo", "HEAD~100", "blob", how)
    summary = index(repo, jobs)
    cause = "missing from the repository" if how == "missing" else CAUSE_TRUNCATED
    assert summary["missing_objects"] == 1
    assert summary["missing_cause"] == cause
    assert summary["total_commits"] == COMMITS
    # The commit that wrote the blob and the next one, which changed it, have file-level changes
    # only; every other commit of step's history is there.
    entries = history(repo, "app.py")
    by_subject = {e["commit"]["subject"]: e for e in entries}
    lost = {f"change {COMMITS - 100}", f"change {COMMITS - 99}"}
    assert all(by_subject[s]["added"] is None for s in lost)
    assert len(entries) == COMMITS
    step = history(repo, "app.py::step")
    assert {e["commit"]["subject"] for e in step}.isdisjoint(lost)
    assert len(step) == COMMITS - 2
    assert len(history(repo, "lib/util.py::helper")) == 1 + COMMITS // 10
    # Another file's history, whole from its birth, warns of nothing (it said it "may stop
    # short" for any missing object of the repository).
    helper = json.loads(cortex("history", "lib/util.py::helper", "--json", cwd=repo).stdout)
    assert helper["note"] is None
    state = status(repo)
    assert state["missing"] == {"objects": 1, "cause": cause,
                                "changes_in_history": 2, "files_at_head": 0}
    skipped = {s["reason"]: s["changes_in_history"] for s in state["skipped"]}
    assert skipped == {"missing object": 2}
    assert f"1 object could not be read ({cause})" in cortex("status", cwd=repo).stdout


@pytest.mark.parametrize("how", ["missing", "truncated"])
def test_a_missing_tree_costs_the_file_changes_of_two_commits(damaged_source, tmp_path, how):
    repo, oid = damaged(damaged_source, tmp_path / "repo", "HEAD~100", "tree", how)
    summary = index(repo, jobs=2)
    assert summary["total_commits"] == COMMITS
    assert summary["missing_objects"] == 1 and status(repo)["missing"]["objects"] == 1
    # That commit's changes cannot be known, nor the next one's (its parent's tree is gone).
    step = {e["commit"]["subject"] for e in history(repo, "app.py::step")}
    assert f"change {COMMITS - 100}" not in step and f"change {COMMITS - 99}" not in step
    assert len(step) == COMMITS - 2


@pytest.mark.parametrize("how", ["missing", "truncated"])
def test_a_missing_commit_in_the_middle_keeps_the_commits_after_it(damaged_source, tmp_path,
                                                                   how):
    repo, oid = damaged(damaged_source, tmp_path / "repo", "HEAD~30", "commit", how)
    summary = index(repo, jobs=1)   # 30 commits: read in this process whatever --jobs says
    # Its parents are unknown, so nothing before it can be reached: the 30 commits after it.
    # The one just after it has no parent to diff against: no file changes.
    assert summary["total_commits"] == 30
    assert summary["missing_objects"] == 1
    step = history(repo, "app.py::step")
    assert len(step) == 29 and step[-1]["commit"]["subject"] == f"change {COMMITS - 28}"
    assert status(repo)["missing"]["objects"] == 1
    # The history stops short of the function's creation: it says so (it said nothing).
    cause = "missing from the repository" if how == "missing" else CAUSE_TRUNCATED
    note = json.loads(cortex("history", "app.py::step", "--json", cwd=repo).stdout)["note"]
    assert note == (f"this history may stop short: 1 object could not be read ({cause}); "
                    "a rebuild of the index reads what is missing once the repository has it")


async def test_the_mcp_status_says_what_is_missing(damaged_source, tmp_path):
    from test_mcp import ok, server, text
    repo, _ = damaged(damaged_source, tmp_path / "repo", "HEAD~100", "blob")
    index(repo, 1)
    async with server("--repo", str(repo)) as client:
        result = await ok(client, "status")
    assert "1 object could not be read (missing from the repository)" in text(result)
    assert result.structured_content["missing"]["changes_in_history"] == 2


def test_workers_and_one_process_store_the_same(damaged_source, tmp_path):
    answers = []
    for jobs in (1, 2):
        repo, _ = damaged(damaged_source, tmp_path / f"repo{jobs}", "HEAD~100", "blob")
        index(repo, jobs)
        state = status(repo)
        answers.append({k: v for k, v in state.items() if k not in ("db_path", "db_bytes",
                                                                    "indexed_at")})
    assert answers[0] == answers[1]


def test_a_worker_error_reaches_the_parent_as_text(damaged_source):
    # A sha that names no commit: the worker raises, and the parent gets a picklable error
    # naming the commit, not a PicklingError.
    with pytest.raises(WorkerError, match="reading commit 0000000000: AttributeError"):
        list(read_parallel(str(damaged_source), Settings().index, ["0" * 40], 1))


# -- merges ------------------------------------------------------------------------------------

def merged_history(path: Path) -> Path:
    """A merge that changed a.py against both parents (each side edited one function), and a
    rename on the merged branch: the merge is read with diffs against each parent."""
    repo = ScriptedRepo(path)
    repo.write("a.py", "def one():\n    return 1\n\n\ndef two():\n    return 2\n")
    repo.write("b.py", "def keep():\n    return 'a body long enough for rename detection'\n")
    repo.commit("base", days_ago=5)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("a.py", "def one():\n    return 10\n\n\ndef two():\n    return 2\n")
    repo.move("b.py", "c.py")
    repo.commit("side: one, b.py renamed", days_ago=4)
    repo.git("checkout", "-q", "main")
    repo.write("a.py", "def one():\n    return 1\n\n\ndef two():\n    return 20\n")
    repo.commit("main: two", days_ago=3)
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    return path


def line_origins(clone: Path, path: str, count: int) -> list[tuple[str | None, str | None]]:
    con = open_reader(clone / ".cortex" / "cortex.db")
    try:
        out = []
        for line in range(1, count + 1):
            found = last_change_of_line(con, path, line)
            out.append((found.commit.subject if found.commit else None, found.reason))
        return out
    finally:
        con.close()


def test_merges_of_a_partial_clone_online_and_offline(tmp_path):
    source = merged_history(tmp_path / "source")
    bare = tmp_path / "served.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    full = tmp_path / "full"
    git(tmp_path, "clone", "-q", bare.as_uri(), str(full))
    online = partial_clone(bare, tmp_path / "online")
    offline = partial_clone(bare, tmp_path / "offline")
    git(offline, "remote", "set-url", "origin", (tmp_path / "gone.git").as_uri())

    index(full, 1)
    assert index(online, 1)["missing_objects"] == 0
    expected = line_origins(full, "a.py", 6)
    assert [subject for subject, _ in expected] == [
        "base", "side: one, b.py renamed", "base", "base", "base", "main: two"]
    assert line_origins(online, "a.py", 6) == expected
    assert history(online, "c.py::keep")[-1]["commit"]["subject"] == "base"  # the rename

    summary = index(offline, 1)
    assert summary["missing_objects"] > 0 and summary["total_commits"] == 4
    # Blame cannot cross what was recorded without hunks; it says so instead of guessing.
    for subject, reason in line_origins(offline, "a.py", 6):
        assert subject is None and reason.endswith("was not recorded (missing object)")


# -- submodules --------------------------------------------------------------------------------

def test_a_submodule_is_no_missing_object(repo, cortex, tmp_path):
    """A submodule entry names a commit of another repository: recorded as a submodule, never
    counted as an object missing from this one (which would ask for a rebuild)."""
    other = ScriptedRepo(tmp_path / "other")
    other.write("lib.py", "def f():\n    return 1\n")
    other.commit("lib")
    repo.write("app.py", "def main():\n    return 0\n")
    repo.commit("app", days_ago=5)
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other.path), "lib")
    repo.commit("add the library as a submodule", days_ago=4)
    summary = cortex.index()
    assert summary.missing_objects == 0 and not summary.missing_cause
    con = cortex.reader()
    reason = con.execute("select fc.skip_reason from file_changes fc join files f"
                         " on f.id = fc.file_id where f.path = 'lib'").fetchone()
    assert reason == ("submodule",)
