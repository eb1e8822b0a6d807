"""Indexing: incremental runs, rewritten histories, odd content, bounds, the store's guarantees."""

from __future__ import annotations

import subprocess
import threading

import pytest

from cortex_core.config import IndexSettings, Settings
from cortex_core.errors import EmptyRepository, IndexerBusy, NotARepository, StoreError
from cortex_core.query.history import history
from cortex_core.query.status import status
from cortex_core.store.store import open_reader, writer_lock
from cortex_core.query.targets import TargetSpec


def subjects(con, path, symbol=None):
    return [e.commit.subject for e in history(con, TargetSpec(path, symbol)).entries]


def test_reindex_adds_only_new_commits(repo, cortex):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("one")
    first = cortex.index()
    assert (first.new_commits, first.total_commits) == (1, 1)
    again = cortex.index()
    assert (again.new_commits, again.total_commits, again.blobs_parsed) == (0, 1, 0)
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("two")
    third = cortex.index()
    assert (third.new_commits, third.total_commits) == (1, 2)
    assert subjects(cortex.reader(), "a.py", "f") == ["two", "one"]


def test_force_push_marks_unreachable_and_never_duplicates(repo, cortex):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("base", days_ago=3)
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("to be rewritten", days_ago=2)
    cortex.index()
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.write("a.py", "def f():\n    return 3\n")
    repo.commit("rewritten", days_ago=1)
    summary = cortex.index()
    assert (summary.new_commits, summary.marked_unreachable) == (1, 1)
    con = cortex.reader()
    assert subjects(con, "a.py", "f") == ["rewritten", "base"]
    assert con.execute("select count(*), count(distinct sha) from commits").fetchone() == (3, 3)
    # Back to the old history: the commit becomes reachable again, still not duplicated.
    repo.git("reset", "-q", "--hard", "HEAD@{2}")
    back = cortex.index()
    assert (back.new_commits, back.reachable_again, back.marked_unreachable) == (0, 1, 1)
    assert subjects(cortex.reader(), "a.py", "f") == ["to be rewritten", "base"]


def test_a_head_moved_during_a_run_is_read_by_the_next(repo, cortex):
    """HEAD committed to while the commits are read: the run records the HEAD it walked, and the
    next run reads the new commit (recording HEAD at the end marked it read, unread)."""
    for n in range(3):
        repo.write("a.py", f"def f():\n    return {n}\n")
        repo.commit(f"f {n}", days_ago=10 - n)
    walked = repo.head()
    moved = []

    def progress(done, total, phase="commits"):
        if phase == "commits" and not moved:
            repo.write("a.py", "def f():\n    return 99\n")
            moved.append(repo.commit("f during the run", days_ago=1))
    first = cortex.index(progress=progress, jobs=1)
    assert moved and first.head == walked
    with open_reader(cortex.db) as con:
        assert con.execute("select value from meta where key = 'head'").get == walked
    second = cortex.index()
    assert second.head == moved[0] and second.new_commits == 1
    entries = history(cortex.reader(), TargetSpec("a.py", "f")).entries
    assert entries[0].commit.subject == "f during the run"


def test_detached_head(repo, cortex):
    repo.write("a.py", "def f():\n    return 1\n")
    first = repo.commit("one")
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("two")
    repo.git("checkout", "-q", "--detach", first)
    summary = cortex.index()
    assert (summary.head, summary.total_commits) == (first, 1)


def test_all_branches_option_is_remembered(repo, cortex):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "side")
    repo.write("b.py", "def g():\n    return 1\n")
    repo.commit("on side")
    repo.git("checkout", "-q", "main")
    assert cortex.index().total_commits == 1
    assert cortex.index(all_branches=True).total_commits == 2
    repo.git("checkout", "-q", "side")
    repo.write("b.py", "def g():\n    return 2\n")
    repo.commit("more on side")
    repo.git("checkout", "-q", "main")
    assert cortex.index().total_commits == 3  # still all branches
    assert cortex.index(rebuild=True).total_commits == 3  # a rebuild keeps the choice
    assert cortex.index(rebuild=True, all_branches=False).total_commits == 1
    assert cortex.index().total_commits == 1


def test_empty_repository_is_a_clear_error(repo, cortex):
    with pytest.raises(EmptyRepository, match="no commits yet"):
        cortex.index()


def test_not_a_repository(tmp_path):
    from cortex_core.index.ingest import index_repository
    with pytest.raises(NotARepository):
        index_repository(tmp_path, tmp_path / "x.db", Settings())


def test_a_sha256_repository_says_what_it_is(tmp_path):
    """libgit2 cannot open a repository whose objects are named by SHA-256: it was called "not a
    git repository", which it is."""
    from cortex_core.index.ingest import index_repository
    made = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(tmp_path / "r")],
                          capture_output=True)
    if made.returncode:
        pytest.skip("this git makes no SHA-256 repositories")
    (tmp_path / "r" / "a.py").write_text("def f():\n    return 1\n")
    subprocess.run(["git", "-c", "user.name=A", "-c", "user.email=a@example.com", "commit",
                    "-qm", "f"], cwd=tmp_path / "r", check=False)
    with pytest.raises(NotARepository) as caught:
        index_repository(tmp_path / "r", tmp_path / "x.db", Settings())
    assert "SHA-256" in str(caught.value)
    assert "not a git repository" not in str(caught.value)


def test_a_worktree_whose_git_folder_is_gone_names_it(repo, tmp_path):
    """A linked worktree whose main repository moved: its `.git` file points nowhere. It was
    called "not a git repository", with nothing to say where to look."""
    from cortex_core.index.ingest import index_repository
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("f")
    repo.git("worktree", "add", "-q", str(tmp_path / "wt"))
    gone = repo.path / ".git" / "worktrees" / "wt"
    repo.path.rename(tmp_path / "moved")
    with pytest.raises(NotARepository) as caught:
        index_repository(tmp_path / "wt", tmp_path / "x.db", Settings())
    assert str(gone) in str(caught.value) and "git worktree repair" in str(caught.value)


def test_non_utf8_content_names_and_messages(repo, cortex):
    repo.write("latin.py", "# -*- coding: latin-1 -*-\ndef caf\xe9():\n    return '\xe9t\xe9'\n"
               .encode("latin-1"))
    repo.commit_raw_message(b"caf\xe9 \xff broken bytes\n")  # not UTF-8, no encoding header
    cortex.index()
    con = cortex.reader()
    assert con.execute("select count(*) from symbols where alive = 1").get == 1
    entries = history(con, TargetSpec("latin.py")).entries
    assert [e.commit.subject for e in entries] == ["caf\ufffd \ufffd broken bytes"]


def test_file_names_that_are_not_utf8_stay_apart(repo, cortex):
    """Two file names that differ only in bytes that are not UTF-8 were both stored as
    `caf\ufffd.py`: one file, with both files' commits, and the symbols of one of them "gone at
    HEAD". Each byte that is not UTF-8 is now kept as `\\xNN`, which the command line reads
    from the raw name too."""
    import json
    import os
    import sys
    from pathlib import Path
    e9, e8 = os.fsdecode(b"caf\xe9.py"), os.fsdecode(b"caf\xe8.py")
    repo.write(e9, "def f():\n    return 1\n")
    repo.write(e8, "def h():\n    return 1\n")
    repo.commit("both", days_ago=3)
    repo.write(e8, "def h():\n    return 2\n")
    repo.commit("only e8", days_ago=2)
    cortex.index()
    con = cortex.reader()
    assert status(con, cortex.db).files_at_head == 2
    assert sorted(p for (p,) in con.execute("select path from files")) == \
        ["caf\\xe8.py", "caf\\xe9.py"]
    assert subjects(con, "caf\\xe8.py", "h") == ["only e8", "both"]
    assert subjects(con, "caf\\xe9.py") == ["both"]
    assert history(con, TargetSpec("caf\\xe8.py", "h")).target.alive
    asked = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "history", e9, "--json",
                            "--db", str(cortex.db)], cwd=repo.path, capture_output=True,
                           env=dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent)))
    assert asked.returncode == 0, asked.stderr
    assert [e["commit"]["subject"] for e in json.loads(asked.stdout)["entries"]] == ["both"]


def test_binary_lockfile_vendored_generated_are_file_level(repo, cortex):
    repo.write("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)) * 4)
    repo.write("package-lock.json", '{"lockfileVersion": 3}\n')
    repo.write("vendor/lib.py", "def vendored():\n    return 1\n")
    repo.write("api_pb2.py", "def generated():\n    return 1\n")
    repo.write("bundle.js", "function a(){return 1};" * 1000 + "\n")
    repo.write("real.py", "def real():\n    return 1\n")
    repo.commit("assets")
    cortex.index()
    con = cortex.reader()
    reasons = dict(con.execute("select f.path, fc.skip_reason from file_changes fc"
                               " join files f on f.id = fc.file_id"))
    assert reasons == {"logo.png": "binary", "package-lock.json": "lockfile",
                       "vendor/lib.py": "vendored", "api_pb2.py": "generated",
                       "bundle.js": "minified", "real.py": None}
    names = {q for (q,) in con.execute("select qualname from symbols")}
    assert names == {"real"}
    assert con.execute("select count(*) from hunks").get == 1


@pytest.mark.parametrize("header, generated", [
    ("# This file is autogenerated by pip-compile\n", True),
    ("// Autogenerated by Thrift Compiler (0.9.3)\n", True),
    ("# Code generated by go generate; DO NOT EDIT.\n", True),
    ("# @generated\n", True),
    # Prose further down (cobra's doc/util.go, line 25): no header.
    ("\n" * 20 + "# Test to see if we have a reason to print See Also information in docs\n"
     "# Basically this is a test for a parent command or a subcommand which is\n"
     "# both not deprecated and not the autogenerated help command.\n", False),
    ("\n" * 20 + "# AUTO-GENERATED FILE: edit spec.yaml instead\n", True),
    # A name that holds the word is no header (junit4's WithAutoGeneratedDataPoints.java).
    ("# WithAutoGeneratedDataPoints, auto_generated_points\n", False),
    # After a licence (a review): C#'s tag, a class's own word, a marker with a suffix.
    ("#\n" * 14 + "# <auto-generated/>\n", True),
    ("#\n" * 14 + "# This class is auto-generated; edits are lost.\n", True),
    ("#\n" * 25 + "# This module is auto-generated; edits are lost.\n", True),
    ("#\n" * 12 + "# auto-generated-code: yes\n", True),
    ("#\n" * 25 + "# keeps the autogenerated profile id of a user\n", False),
])
def test_generated_headers_and_prose(header, generated):
    """A review found cobra's hand-written doc/util.go recorded at file level only for a word in
    a comment: the weak words count on a header's first lines or where they say what made it."""
    from cortex_core.index.skip_rules import skip_by_content
    data = (header + "def f():\n    return 1\n").encode()
    assert skip_by_content(data, IndexSettings()) == ("generated" if generated else None)


def changes_of(con, path, symbol):
    return [(e.commit.subject, e.change)
            for e in history(con, TargetSpec(path, symbol)).entries]


@pytest.mark.parametrize("unreadable", ["binary", "too large"])
def test_a_file_readable_again_has_its_definitions_read(repo, cortex, unreadable):
    """A file that turns back from binary, or from over max_file_bytes, is read again: its
    definitions against the last version that was read (what changed meanwhile is the change
    of the commit that made it readable), what is new born there. Its diff is still not
    recorded: there is no text to diff against."""
    settings = Settings(index=IndexSettings(max_file_bytes=200))
    repo.write("a.py", "def b():\n    return 1\n")
    repo.commit("text")
    repo.write("a.py", "def b():\n    return 1\n\0\n" if unreadable == "binary"
               else "def b():\n    return 1\n" + "# padding\n" * 30)
    cut = repo.commit("unreadable")
    repo.write("b.py", "x = 1\n")
    repo.commit("elsewhere")
    repo.write("a.py", "def b():\n    return 2\n\n\ndef d():\n    return 5\n")
    repo.commit("readable again")
    repo.write("a.py", "def b():\n    return 2\n\n\ndef d():\n    return 6\n")
    repo.commit("edit d")
    cortex.index(settings)
    con = cortex.reader()
    assert changes_of(con, "a.py", "b") == [("readable again", "body"), ("text", "added")]
    assert changes_of(con, "a.py", "d") == [("edit d", "body"), ("readable again", "added")]
    file_changes = dict(con.execute(
        "select c.subject, fc.skip_reason from file_changes fc join commits c"
        " on c.id = fc.commit_id join files f on f.id = fc.file_id where f.path = 'a.py'"))
    assert file_changes == {"text": None, "unreadable": unreadable,
                            "readable again": f"was {unreadable}", "edit d": None}
    # Its diff is not recorded, its definitions are: the note of changes "not read for symbols"
    # names only the one a limit cut, and the status does not list it as file level only.
    note = history(con, TargetSpec("a.py", "b")).note
    assert note is None if unreadable == "binary" else f"the newest {cut[:10]}: too large" in note
    assert all(not s.reason.startswith("was ") for s in status(con, cortex.db).skipped)


def test_a_file_renamed_while_unreadable_keeps_its_definitions(repo, cortex):
    """Renamed while binary, then text again: read against its last text under the old name,
    its definitions moved with it (in the commit that made it readable: the rename's own commit
    read nothing)."""
    repo.write("r.py", "def h():\n    return 1\n\n\ndef k():\n    return 1\n")
    repo.commit("text")
    repo.write("r.py", "def h():\n    return 1\n\0\ndef k():\n    return 1\n")
    repo.commit("binary")
    repo.move("r.py", "r2.py")
    repo.commit("renamed while binary")
    repo.write("r2.py", "def h():\n    return 1\n\n\ndef k():\n    return 5\n")
    repo.commit("text again")
    cortex.index()
    con = cortex.reader()
    assert changes_of(con, "r2.py", "k") == [("text again", "moved"), ("text", "added")]
    assert changes_of(con, "r2.py", "h") == [("text again", "moved"), ("text", "added")]
    edited = history(con, TargetSpec("r2.py", "k")).entries[0]
    assert (edited.added, edited.deleted) == (1, 1)


def test_a_file_first_read_late_has_its_definitions_born_there(repo, cortex):
    """No version of the file was read before (it was binary from its start): every definition
    of the first version read is born in its commit."""
    repo.write("a.py", "\0binary\n")
    repo.commit("binary")
    repo.write("a.py", "def b():\n    return 1\n")
    repo.commit("text at last")
    cortex.index()
    assert changes_of(cortex.reader(), "a.py", "b") == [("text at last", "added")]


def test_huge_diffs_are_bounded(repo, cortex):
    repo.write("big.py", "".join(f"def f{i}():\n    return {i}\n" for i in range(400)))
    repo.write("small.py", "def s():\n    return 1\n")
    repo.commit("big")
    repo.write("big.py", "".join(f"def f{i}():\n    return {i + 1}\n" for i in range(400)))
    repo.write("small.py", "def s():\n    return 2\n")
    repo.commit("rewrite")
    settings = Settings(index=IndexSettings(max_diff_lines=500, max_file_bytes=100_000))
    cortex.index(settings)
    con = cortex.reader()
    rows = set(con.execute("select f.path, fc.status, fc.skip_reason from file_changes fc"
                           " join files f on f.id = fc.file_id"))
    # A whole file added is read whatever its line count (its symbols are born); an edit of
    # 800 changed lines is over the limit.
    assert rows == {("big.py", "A", None), ("small.py", "A", None),
                    ("big.py", "M", "diff too large"), ("small.py", "M", None)}
    repo.write("huge.py", "x = 1\n" * 30_000)
    repo.commit("huge")
    cortex.index(settings)
    con = cortex.reader()
    row = con.execute("select fc.skip_reason, fc.added from file_changes fc join files f"
                      " on f.id = fc.file_id where f.path = 'huge.py'").fetchone()
    assert row == ("too large", None)


def test_too_many_files_in_one_commit_are_bounded(repo, cortex):
    for i in range(5):
        repo.write(f"m{i}.py", f"def f{i}():\n    return {i}\n")
    repo.commit("many")
    cortex.index(Settings(index=IndexSettings(max_commit_files=3)))
    con = cortex.reader()
    assert con.execute("select count(*) from file_changes where skip_reason = 'commit too large'"
                       ).get == 2


def interrupt_index_at(cortex, monkeypatch, commits_done: int) -> None:
    """Index until `commits_done` commits are read, then interrupt as Ctrl-C would."""
    import cortex_core.index.ingest as ingest
    # Every commit its own transaction, as a long run batches them.
    monkeypatch.setattr(ingest, "BATCH_SECONDS", 0.0)

    def stop(done, total):
        if done == commits_done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cortex.index(progress=stop)
    monkeypatch.undo()


def test_interrupted_index_continues_without_loss(repo, cortex, monkeypatch):
    for i in range(6):
        repo.write("a.py", f"def f():\n    return {i}\n")
        repo.commit(f"c{i}", days_ago=10 - i)
    interrupt_index_at(cortex, monkeypatch, 3)
    # The batch in flight when the interruption came is rolled back; the two before it stay.
    assert cortex.reader().execute("select count(*) from commits").get == 2
    summary = cortex.index()
    assert (summary.new_commits, summary.total_commits) == (4, 6)
    assert subjects(cortex.reader(), "a.py", "f") == [f"c{i}" for i in reversed(range(6))]


def test_second_indexer_waits_then_says_so(repo, cortex):
    repo.write("a.py", "x = 1\n")
    repo.commit("one")
    holding, release = threading.Event(), threading.Event()

    def hold():
        with writer_lock(cortex.db):
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        holding.wait(10)
        with pytest.raises(IndexerBusy, match="another indexer is running"):
            cortex.index(wait_seconds=0.3)
    finally:
        release.set()
        holder.join()
    assert cortex.index().new_commits == 1


def test_readers_work_while_the_writer_lock_is_held(repo, cortex):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("one")
    cortex.index()
    with writer_lock(cortex.db):
        assert subjects(cortex.reader(), "a.py", "f") == ["one"]


def test_newer_schema_and_corrupt_database_are_clear_errors(repo, cortex, tmp_path):
    repo.write("a.py", "x = 1\n")
    repo.commit("one")
    cortex.index()
    con = cortex.reader()
    con.execute("update meta set value = '999' where key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match="newer Cortex"):
        open_reader(cortex.db)
    with pytest.raises(StoreError, match="newer Cortex"):
        cortex.index()
    assert cortex.index(rebuild=True).new_commits == 1
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a readable Cortex database"):
        open_reader(bad)
    with pytest.raises(StoreError, match="no index at"):
        open_reader(tmp_path / "missing.db")


def test_default_store_ignores_itself(repo):
    from cortex_core.index.ingest import index_repository
    from cortex_core.store.store import default_db_path
    repo.write("a.py", "x = 1\n")
    repo.commit("one")
    db = default_db_path(repo.path)
    index_repository(repo.path, db, Settings())
    assert (repo.path / ".cortex" / ".gitignore").read_text() == "*\n"
    assert repo.git("status", "--porcelain") == ""


def test_commit_metadata_trailers_and_kind(repo, cortex):
    repo.write("a.py", "x = 1\n")
    repo.commit("fix(parser): handle empty input\n\nThe parser crashed on b''.\n\n"
                "Signed-off-by: Ann <ann@example.com>\nChange-Id: I1234\n",
                author="Bob <bob@example.com>")
    cortex.index()
    row = cortex.reader().execute(
        "select subject, body, kind, author_name, author_email, files_changed, lines_added"
        " from commits").fetchone()
    assert row == ("fix(parser): handle empty input", "The parser crashed on b''.", "fix", "Bob",
                   "bob@example.com", 1, 1)


def test_rewrite_after_an_interrupted_run_marks_what_it_left(repo, cortex, monkeypatch):
    repo.write("a.py", "def f():\n    return 0\n")
    base = repo.commit("base", days_ago=9)
    cortex.index()
    for i in (1, 2, 3):
        repo.write("a.py", f"def f():\n    return {i}\n")
        repo.commit(f"c{i}", days_ago=9 - i)
    interrupt_index_at(cortex, monkeypatch, 2)
    repo.git("reset", "-q", "--hard", base)
    repo.write("a.py", "def f():\n    return 9\n")
    repo.commit("rewritten", days_ago=1)
    summary = cortex.index()
    assert (summary.new_commits, summary.marked_unreachable, summary.total_commits) == (1, 1, 2)
    assert subjects(cortex.reader(), "a.py", "f") == ["rewritten", "base"]


def test_a_living_symbol_has_the_kind_it_has_at_head(repo, cortex):
    """A symbol's row was given the kind of the first version written (the oldest, with one
    reader; any, with several): one whose kind changed shows HEAD's, after a first run and after
    an update; of a struct and its impl block, the struct's."""
    repo.write("m.py", "def Thing():\n    return 1\n\n\ndef gone():\n    return 2\n")
    repo.commit("a function", days_ago=3)
    repo.write("m.py", "class Thing:\n    pass\n")
    repo.commit("now a class, gone is gone", days_ago=2)
    cortex.index()

    def kinds():
        return dict(cortex.reader().execute(
            "select qualname, kind from symbols where file_id = (select id from files"
            " where path = 'm.py')"))
    assert kinds() == {"Thing": "class", "gone": "function"}
    repo.write("m.py", "def Thing():\n    return 3\n")
    repo.commit("a function again", days_ago=1)
    cortex.index()
    assert kinds()["Thing"] == "function"
    # One name, two definitions: the struct, not the impl block that extends it, above or below.
    repo.write("lib.rs", "impl S {\n    fn new() -> S { S }\n}\n\nstruct S;\n")
    repo.commit("an impl above its struct")
    cortex.index()
    assert cortex.reader().execute(
        "select kind from symbols where qualname = 'S' and file_id = (select id from files"
        " where path = 'lib.rs')").fetchall() == [("struct",)]


def _kinds_of(db, paths) -> dict:
    """(path, qualname, alive) -> kind of the symbols of these files."""
    from cortex_core.index.symbol_kinds import UNSETTLED_FROM
    con = open_reader(db)
    assert con.execute("select value from meta where key = ?", (UNSETTLED_FROM,)).get is None
    return {(p, q, a): k for p, q, k, a in con.execute(
        "select f.path, s.qualname, s.kind, s.alive from symbols s join files f on f.id ="
        f" s.file_id where f.path in ({','.join('?' * len(paths))})", paths)}


def test_a_deleted_symbol_has_the_kind_of_its_newest_version(repo, tmp_path, monkeypatch):
    """A deleted symbol whose kind changed keeps its last one, however the store was built: in
    one run (which writes the oldest version first), commit by commit, by worker processes
    that deliver commits out of order, stopped and resumed. A name defined twice (a Rust impl
    block above its struct) has the struct's kind, and a version holding only the impl block
    the impl's, though an incremental parse shares the block's symbol between the two
    versions. A store whose changes carry no kind (schema 17) keeps the kinds it has."""
    from cortex_core.index.ingest import index_repository
    import cortex_core.index.ingest as ingest
    import cortex_core.index.read_pool as read_pool
    from cortex_core.index.symbol_kinds import UNSETTLED_FROM
    impl = "impl S {\n    fn new() -> S { S }\n}\n"
    stages = [
        "def Thing():\n    return 1\n\n\nclass Gone:\n    pass\n\n\ndef kept():\n    return 0\n",
        "class Thing:\n    pass\n\n\nclass Gone:\n    x = 1\n\n\ndef kept():\n    return 0\n",
        "def Gone():\n    return 2\n\n\ndef kept():\n    return 0\n",   # Thing deleted
        "def kept():\n    return 1\n",                                    # Gone deleted
    ]

    def index(name, **kwargs):
        return index_repository(repo.path, tmp_path / f"{name}.db", Settings(), model="none",
                                **kwargs)

    for n, text in enumerate(stages):
        repo.write("m.py", text)
        repo.write(f"pad{n}.py", f"def pad{n}():\n    return {n}\n")
        if n == 0:
            repo.write("lib.rs", impl + "\nstruct S;\n")
            repo.write("a.rs", impl)
        elif n == 1:   # a.rs moved, a struct added below its impl block
            repo.move("a.rs", "b.rs")
            repo.write("b.rs", impl + "\nstruct S;\n")
        elif n == 2:
            repo.remove("lib.rs")
        repo.commit(f"stage {n}", days_ago=10 - n)
        index("incremental")
    index("one run")
    monkeypatch.setattr(ingest, "PARALLEL_MIN_COMMITS", 2)
    monkeypatch.setattr(ingest, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(ingest, "BATCH_SECONDS", 0.0)
    monkeypatch.setattr(read_pool, "CHUNK", 1)
    index("workers", jobs=2)

    def stop(done, total, phase="commits"):
        if phase == "commits" and done == 3:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        index("resumed", jobs=2, progress=stop)
    assert open_reader(tmp_path / "resumed.db").execute(
        "select value from meta where key = ?", (UNSETTLED_FROM,)).get is not None
    index("resumed", jobs=2)

    paths = ["m.py", "lib.rs", "a.rs", "b.rs"]
    expected = {("m.py", "Thing", 0): "class", ("m.py", "Gone", 0): "function",
                ("m.py", "kept", 1): "function", ("lib.rs", "S", 0): "struct",
                ("lib.rs", "S.new", 0): "method", ("a.rs", "S", 0): "impl",
                ("a.rs", "S.new", 0): "method", ("b.rs", "S", 1): "struct",
                ("b.rs", "S.new", 1): "method"}
    for name in ("one run", "incremental", "workers", "resumed"):
        assert _kinds_of(tmp_path / f"{name}.db", paths) == expected, name
    # An older store: its changes carry no kind, and a deleted symbol keeps the one it has.
    import apsw
    con = apsw.Connection(str(tmp_path / "one run.db"))
    stored = con.execute("select count(*) from symbol_changes").get
    con.execute("alter table symbol_changes drop column kind;"
                " alter table symbol_changes drop column from_kind;"
                " update symbols set kind = 'interface' where qualname = 'Thing';"
                " update meta set value = '17' where key = 'schema_version';")
    con.close()
    repo.write("m.py", "def kept():\n    return 2\n")
    repo.commit("stage 4")
    index("one run")
    assert _kinds_of(tmp_path / "one run.db", paths)[("m.py", "Thing", 0)] == "interface"
    # The new commit's change has its kind; the older ones stay without.
    assert open_reader(tmp_path / "one run.db").execute(
        "select c.subject = 'stage 4', sc.kind is null, count(*) from symbol_changes sc join"
        " commits c on c.id = sc.commit_id group by 1, 2").fetchall() == [(0, 1, stored), (1, 0, 1)]
    # Even when it is settled again (here as when merges are read again, from the first
    # commit on): its newest change has no kind, and an older one's is not taken.
    con = apsw.Connection(str(tmp_path / "one run.db"))
    con.execute("update symbol_changes set kind = 'function' where kind is null and symbol_id ="
                " (select id from symbols where qualname = 'Thing') and change = 'added';"
                f" insert into meta(key, value) values ('{UNSETTLED_FROM}', '0')")
    con.close()
    repo.write("m.py", "def kept():\n    return 3\n")
    repo.commit("stage 5")
    index("one run")
    assert _kinds_of(tmp_path / "one run.db", paths)[("m.py", "Thing", 0)] == "interface"


def test_kinds_of_deleted_symbols_across_branches_rewrites_and_silent_deaths(repo, tmp_path):
    """The newest version decides, in history's order: a branch's, dated after the main line's
    deletion, while the branch is indexed (`--all-branches`); commits a rewrite or a deleted
    branch left behind no longer count; a symbol that dies without a change of its own (its
    file turned binary) is settled as in a store built at once."""
    from cortex_core.index.ingest import index_repository

    def index(name, **kwargs):
        return index_repository(repo.path, tmp_path / f"{name}.db", Settings(), model="none",
                                **kwargs)

    def both(name):
        index("fresh " + name, all_branches=True)
        return (_kinds_of(tmp_path / f"{name}.db", ["m.py", "a.cpp"]),
                _kinds_of(tmp_path / f"fresh {name}.db", ["m.py", "a.cpp"]))

    # Branches: main deletes class Foo; a branch dated later makes it a function.
    repo.write("m.py", "class Foo:\n    pass\n\n\ndef keep():\n    return 0\n")
    repo.commit("Foo a class", days_ago=5)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("m.py", "class Bar:\n    pass\n\n\ndef Foo():\n    return 1\n\n\n"
               "def keep():\n    return 0\n")
    repo.commit("Foo renamed to Bar, a new function Foo", days_ago=2)
    repo.git("checkout", "-q", "main")
    repo.write("m.py", "def keep():\n    return 1\n")
    repo.commit("Foo deleted", days_ago=3)
    index("branches", all_branches=True)
    updated, fresh = both("branches")
    assert updated[("m.py", "Foo", 0)] == fresh[("m.py", "Foo", 0)] == "function"
    # The branch deleted: its commits no longer count (no commit of the run touches Foo).
    repo.git("branch", "-q", "-D", "side")
    index("branches", all_branches=True)
    updated, fresh = both("branches")
    assert updated[("m.py", "Foo", 0)] == fresh[("m.py", "Foo", 0)] == "class"
    # An update of one commit, on a branch, to a symbol HEAD never had.
    repo.git("checkout", "-q", "-b", "other")
    repo.write("o.py", "class Y:\n    a = 1\n")
    repo.commit("Y a class on a branch", days_ago=2.5)
    repo.git("checkout", "-q", "main")
    index("branches", all_branches=True)
    repo.git("checkout", "-q", "other")
    repo.write("o.py", "def Y():\n    return 1\n")
    repo.commit("Y a function", days_ago=2.4)
    repo.git("checkout", "-q", "main")
    index("branches", all_branches=True)
    assert _kinds_of(tmp_path / "branches.db", ["o.py"]) == {("o.py", "Y", 0): "function"}
    # A rewrite: X became a function, then that commit was dropped and X deleted (dated
    # before the dropped commit).
    repo.write("m.py", "class X:\n    a = 1\n\n\ndef keep():\n    return 2\n")
    repo.commit("X a class", days_ago=1.5)
    index("rewrite")
    kept = repo.git("rev-parse", "HEAD").strip()
    repo.write("m.py", "def X():\n    return 1\n\n\ndef keep():\n    return 2\n")
    repo.commit("X a function", days_ago=0.5)
    index("rewrite")
    repo.git("reset", "-q", "--hard", kept)
    repo.write("m.py", "def keep():\n    return 3\n")
    repo.commit("X deleted", days_ago=1)
    index("rewrite")
    index("fresh rewrite")
    assert _kinds_of(tmp_path / "rewrite.db", ["m.py"])[("m.py", "X", 0)] == \
        _kinds_of(tmp_path / "fresh rewrite.db", ["m.py"])[("m.py", "X", 0)] == "class"
    # A C++ `ns::f` becomes a function once a namespace `ns` stands above it, its text the same
    # (no change of its own), then its file turns binary (no change either).
    f = "void ns::f() {\n  return;\n}\n"
    repo.write("a.cpp", "int pad() { return 0; }\n\n" + f)
    repo.commit("ns::f a method")
    index("silent")
    repo.write("a.cpp", "namespace ns { void g(); }\n\nint pad() { return 1; }\n\n" + f)
    repo.commit("a namespace above it")
    index("silent")
    # Its file read again while it lives: HEAD's kind, not its changes'.
    repo.write("a.cpp", "namespace ns { void g(); }\n\nint pad() { return 2; }\n\n" + f)
    repo.commit("pad edited")
    index("silent")
    assert _kinds_of(tmp_path / "silent.db", ["a.cpp"])[("a.cpp", "ns.f()", 1)] == "function"
    repo.write("a.cpp", "\0binary\nnamespace ns { void g(); }\n\nint pad() { return 1; }\n\n" + f)
    repo.commit("binary now")
    index("silent")
    index("fresh silent")
    silent = [k for k in _kinds_of(tmp_path / "silent.db", ["a.cpp"]) if k[1] == "ns.f()"]
    assert silent and _kinds_of(tmp_path / "silent.db", ["a.cpp"]) == \
        _kinds_of(tmp_path / "fresh silent.db", ["a.cpp"])


def test_parallel_readers_store_what_one_reader_stores(repo, tmp_path, monkeypatch):
    """Worker processes read contiguous ranges; the store must not depend on how many."""
    from cortex_core.index.ingest import index_repository
    import cortex_core.index.ingest as ingest
    body = "    total = 0\n    for item in items:\n        total += item\n    return total\n"
    for i in range(12):
        repo.write(f"pkg/m{i % 3}.py", f"class C{i % 3}:\n    def total(self, items):\n"
                   + body.replace("0", str(i)).replace("\n    ", "\n        ").replace("    t", "        t", 1)
                   + f"\n\ndef helper{i % 2}():\n    return {i}\n")
        if i == 6:
            repo.move("pkg/m0.py", "pkg/renamed.py")
        repo.commit(f"c{i}", days_ago=20 - i)
    repo.write("logo.png", b"\x89PNG\r\n\x1a\n\0\0" + bytes(range(256)))
    repo.commit("logo", days_ago=1)
    monkeypatch.setattr(ingest, "PARALLEL_MIN_COMMITS", 2)
    monkeypatch.setattr(ingest, "PARALLEL_MIN_FILES", 1)

    def dump(db):
        con = open_reader(db)
        rows = con.execute(
            "select c.sha, f.path, s.qualname, sc.change, sc.added, sc.deleted, g.path, t.qualname"
            " from symbol_changes sc join commits c on c.id = sc.commit_id"
            " join symbols s on s.id = sc.symbol_id join files f on f.id = s.file_id"
            " left join symbols t on t.id = sc.from_symbol_id left join files g on g.id = t.file_id"
            " order by 1, 2, 3").fetchall()
        files = con.execute("select c.sha, c.seq, f.path, fc.status, fc.added, fc.deleted from"
                            " file_changes fc join commits c on c.id = fc.commit_id join files f"
                            " on f.id = fc.file_id order by 1, 3").fetchall()
        head = con.execute("select f.path, s.qualname, sp.start_line, sp.end_line, h.skip_reason"
                           " from head_files h join files f on f.id = h.file_id left join"
                           " symbols s on s.file_id = f.id and s.alive = 1 left join symbol_spans"
                           " sp on sp.symbol_id = s.id order by 1, 2, 3").fetchall()
        return rows, files, head

    one = index_repository(repo.path, tmp_path / "one.db", Settings(), jobs=1)
    two = index_repository(repo.path, tmp_path / "two.db", Settings(), jobs=2)
    assert (one.new_commits, two.new_commits) == (13, 13)
    assert dump(tmp_path / "one.db") == dump(tmp_path / "two.db")
    rows, _, head = dump(tmp_path / "one.db")
    assert rows and ("logo.png", None, None, None, "binary") in head


def _what_records_say(records: list) -> list:
    """Records without how many blobs each took to parse (a fresh worker's cold cache)."""
    import dataclasses
    return [dataclasses.replace(r, parses=0) for r in records]


def _read_alone(repo, shas: list[str]) -> list:
    """What one CommitReader in this process reads of `shas`, as _what_records_say."""
    import pygit2
    from cortex_core.git.commit_reader import CommitReader
    reader = CommitReader(pygit2.Repository(str(repo.path)), Settings().index)
    return _what_records_say([reader.read(reader.repo.get(sha)) for sha in shas])


@pytest.mark.parametrize("total,workers", [(18_456, 2), (62_475, 2), (5_000, 1), (1_000, 2),
                                           (600, 4), (300, 4), (3, 4), (1, 2), (0, 2)])
def test_ranges_shrink_towards_the_end_and_tile_the_history(total, workers):
    """Ranges are cut as they are handed out, a share of what is left: long first, short at the
    end (the last worker reads on alone for about one short range), contiguous, every commit
    in exactly one, none a stub, and every worker has one."""
    from cortex_core.index.read_pool import MIN_RANGE, RANGE_SHARE, next_range
    sizes, first = [], 0
    while (taken := next_range(first, total, workers)) is not None:
        assert taken[0] == first and taken[1] > first
        sizes.append(taken[1] - first)
        first = taken[1]
    assert first == total and next_range(total, total, workers) is None
    assert all(a >= b for a, b in zip(sizes, sizes[1:-1]))   # the last may take a stub in
    if total == 0:
        assert sizes == []
        return
    shortest = min(MIN_RANGE, -(-total // (workers * RANGE_SHARE)))
    assert all(size >= shortest for size in sizes[:-1])
    assert shortest // 2 <= sizes[-1] < 2 * shortest or sizes == [total]
    assert len(sizes) >= min(workers, total)
    if total >= 10_000:   # the tail: what is left when the last long range is handed out
        assert sizes[0] > 4 * MIN_RANGE and sum(s for s in sizes if s < 2 * MIN_RANGE) >= MIN_RANGE


def test_many_short_ranges_read_what_one_reader_reads(repo, monkeypatch):
    """Ranges of a commit or two, interleaved between two workers (each range after the first
    starts where the other worker's cache has not been): the records are one reader's."""
    import cortex_core.index.read_pool as read_pool
    for i in range(9):
        repo.write("a.py", "".join(f"def f{j}():\n    return {i + j}\n" for j in range(i + 1)))
        repo.write(f"b{i % 2}.py", f"class B:\n    def m(self):\n        return {i}\n")
        repo.commit(f"c{i}", days_ago=10 - i)
    shas = repo.git("rev-list", "--reverse", "HEAD").split()
    monkeypatch.setattr(read_pool, "CHUNK", 1)
    monkeypatch.setattr(read_pool, "MIN_RANGE", 1)
    stats: dict = {}
    pairs = list(read_pool.read_parallel(str(repo.path), Settings().index, shas, 2, stats=stats))
    assert sorted(i for i, _ in pairs) == list(range(len(shas)))   # each once, none twice
    got = dict(pairs)
    assert _what_records_say([got[i] for i in range(len(shas))]) == _read_alone(repo, shas)
    assert stats["workers"] == 2 and stats["ranges"] >= 4


def test_a_worker_over_its_memory_budget_is_replaced_and_reads_the_same(repo, monkeypatch):
    """A worker resident beyond index.worker_memory_mb stops before its next commit, even in the
    middle of a chunk, and is replaced by a fresh process that reads the rest (bounded memory,
    issue 17); records do not depend on the worker's caches."""
    import dataclasses
    import cortex_core.index.read_pool as read_pool
    for i in range(9):
        repo.write("a.py", "".join(f"def f{j}():\n    return {i + j}\n" for j in range(i + 1)))
        repo.commit(f"c{i}", days_ago=10 - i)
    shas = repo.git("rev-list", "--reverse", "HEAD").split()
    monkeypatch.setattr(read_pool, "CHUNK", 4)
    monkeypatch.setattr(read_pool, "FLOOR_WORKER_MB", 0)
    tiny = dataclasses.replace(Settings().index, worker_memory_mb=1)   # every process is over it
    stats: dict = {}
    got = dict(read_pool.read_parallel(str(repo.path), tiny, shas, 2, stats=stats))
    assert _what_records_say([got[i] for i in range(len(shas))]) == _read_alone(repo, shas)
    # Each process read one commit (a fresh one always reads one), then made way for another.
    assert stats["recycled"] == len(shas) and stats["peak_worker_bytes"] > 1024 * 1024
    roomy: dict = {}
    list(read_pool.read_parallel(str(repo.path), Settings().index, shas, 2, stats=roomy))
    assert roomy["recycled"] == 0


def test_the_writer_gives_back_its_heap_once_a_heavy_chunk_is_garbage(repo, monkeypatch):
    """A chunk of many symbol changes leaves the process that wrote it holding what unpickling
    it took; once the writer holds a record of a later chunk, read_parallel hands the heap's
    free pages back (issue 17: the main process grew with the largest commits), and by then
    nothing holds the heavy records. The records are the same; light chunks trim nothing."""
    import platform
    import weakref
    import cortex_core.index.read_pool as read_pool
    repo.write("small.py", "def f():\n    return 0\n")
    repo.commit("small", days_ago=9)
    repo.write("many.py", "".join(f"def h{i}():\n    return {i}\n\n\n" for i in range(60)))
    repo.commit("heavy", days_ago=8)
    for i in range(3):
        repo.write("small.py", f"def f():\n    return {i + 1}\n")
        repo.commit(f"small {i}", days_ago=7 - i)
    shas = repo.git("rev-list", "--reverse", "HEAD").split()
    monkeypatch.setattr(read_pool, "CHUNK", 1)          # the heavy commit is a chunk of its own
    monkeypatch.setattr(read_pool, "HEAVY_ITEMS", 50)   # 60 symbols added: heavy
    stats: dict = {}
    got = dict(read_pool.read_parallel(str(repo.path), Settings().index, shas, 1, stats=stats))
    assert _what_records_say([got[i] for i in range(len(shas))]) == _read_alone(repo, shas)
    assert len(got[1].symbols) == 60
    # The trim comes once the writer was handed the record after the heavy one (position 2) ...
    assert stats["heap_trims"] == ([2] if platform.libc_ver()[0] == "glibc" else [])
    # ... and, read as the writer reads (one record held at a time), the reader then holds
    # nothing of the heavy one: the trim frees it.
    held = {}
    for position, record in read_pool.read_parallel(str(repo.path), Settings().index, shas, 1):
        held[position] = weakref.ref(record)
        if position == 2:
            assert held[1]() is None
    assert sorted(held) == list(range(len(shas)))
    monkeypatch.setattr(read_pool, "HEAVY_ITEMS", 62)   # 60 symbol changes and 1 file: 61
    light: dict = {}
    list(read_pool.read_parallel(str(repo.path), Settings().index, shas, 1, stats=light))
    assert light["heap_trims"] == []


def test_trim_heap_gives_back_the_free_pages_between_live_blocks():
    """glibc gives back by itself only what is free at the top of its heap: blocks freed below
    a live one stay resident until malloc_trim (what trim_heap calls) gives their pages back."""
    import platform
    from cortex_core.index.process_memory import resident_bytes, trim_heap
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    # 1 KiB buffers come from malloc (Python's own allocator takes 512 bytes at most); every
    # 64th kept alive pins the heap around the ~60 MiB freed.
    blocks = [bytearray(1024) for _ in range(60_000)]
    kept = blocks[::64]
    del blocks
    before = resident_bytes()
    assert trim_heap() is True
    assert before - resident_bytes() > 30 * 1024 * 1024
    assert len(kept) == 938


def test_a_reader_without_trees_reads_versions_by_regions_and_the_same(repo):
    """A worker whose tree cache let a file's tree go reads its next version by regions (only
    the definitions the hunks touch are parsed): the records are a full parse's."""
    import pygit2
    from cortex_core.git.commit_reader import CommitReader
    from cortex_core.lang.symbols import SymbolParser
    bodies = {f"f{j}": f"    return {j}\n" for j in range(12)}

    def module() -> str:
        return "import os\n\n\n" + "".join(
            f"@trace\ndef {name}(x):\n{body}\n\n" for name, body in bodies.items())

    repo.write("mod.py", module())
    repo.commit("start", days_ago=30)
    for i, name in enumerate(["f3", "f7", "f0", "f11", "f5", "f3"]):
        bodies[name] = f"    y = x + {i}\n    return y\n"
        if i == 4:
            bodies[f"g{i}"] = "    return None\n"   # a new function at the end
        repo.write("mod.py", module())
        repo.commit(f"edit {name}", days_ago=20 - i)
    shas = repo.git("rev-list", "--reverse", "HEAD").split()
    parser = SymbolParser(tree_cache_bytes=1, keep_oversized=False)
    reader = CommitReader(pygit2.Repository(str(repo.path)), Settings().index, parser=parser)
    got = _what_records_say([reader.read(reader.repo.get(sha)) for sha in shas])
    assert got == _read_alone(repo, shas)
    assert parser.region_count() == len(shas) - 1


def test_the_largest_parse_of_a_commit_is_known_before_it_is_read(repo):
    """What a worker checks before a commit: the most text whose trees reading it holds at
    once (source code within max_file_bytes, not skipped by its name), from the objects'
    headers."""
    import dataclasses
    import pygit2
    from cortex_core.git.commit_reader import CommitReader
    from cortex_core.lang.symbols import SymbolParser
    repo.write("code.py", "x = 1\n" * 1000)
    repo.write("notes.txt", "words\n" * 5000)         # larger, but nothing to parse
    repo.commit("first")
    repo.write("code.py", "x = 2\n" * 3000)
    repo.write("huge.py", "y = 1\n" * 20_000)          # 120,000 bytes: over the limit below
    repo.write("api_pb2.py", "z = 1\n" * 15_000)       # generated (by its name): not parsed
    repo.commit("second")
    repo.remove("code.py")
    repo.commit("third")
    shas = repo.git("rev-list", "--reverse", "HEAD").split()
    settings = dataclasses.replace(Settings().index, max_file_bytes=100_000)
    # The default parser keeps the old side's tree while it parses the new one: both count.
    reader = CommitReader(pygit2.Repository(str(repo.path)), settings)
    assert [reader.largest_parse(reader.diff_of(reader.repo.get(sha))) for sha in shas] == \
        [6_000, 6_000 + 18_000, 18_000]
    # A worker's parser keeps no tree over its cache: one side at a time.
    reader = CommitReader(pygit2.Repository(str(repo.path)), settings,
                          parser=SymbolParser(tree_cache_bytes=1_000, keep_oversized=False))
    assert [reader.largest_parse(reader.diff_of(reader.repo.get(sha))) for sha in shas] == \
        [6_000, 18_000, 18_000]


def test_a_worker_makes_room_for_a_big_tree_before_its_commit_and_reads_the_same(repo,
                                                                                 monkeypatch):
    """Before a commit whose largest tree would take its worker past its share (a 2.1 MB file:
    ~250 MB by the estimate) the worker drops its caches, and hands the commit to a fresh
    process if it still holds more than one; the records are a single process's."""
    import dataclasses
    import cortex_core.index.read_pool as read_pool
    for i in range(4):
        repo.write("small.py", f"def f():\n    return {i}\n")
        repo.commit(f"small {i}", days_ago=10 - i)
    repo.write("big.py", "".join(f"def handler_{i}(value):\n    return value * {i}\n\n\n"
                                 for i in range(40_000)))
    repo.commit("big", days_ago=5)
    repo.write("small.py", "def f():\n    return 9\n")
    repo.commit("small after", days_ago=4)
    shas = repo.git("rev-list", "--reverse", "HEAD").split()
    monkeypatch.setattr(read_pool, "CHUNK", 2)   # the big commit comes after four others
    share = dataclasses.replace(Settings().index, worker_memory_mb=150)
    stats: dict = {}
    got = dict(read_pool.read_parallel(str(repo.path), share, shas, 1, stats=stats))
    assert _what_records_say([got[i] for i in range(len(shas))]) == _read_alone(repo, shas)
    assert stats["caches_dropped"] == 1 and stats["given_back"] in (0, 1)
    assert len(got[4].symbols) == 40_000


def test_a_missing_blob_is_recorded_not_fatal(repo, cortex):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.write("b.py", "def g():\n    return 1\n")
    repo.commit("one")
    blob = repo.git("rev-parse", "HEAD:b.py")
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    cortex.index()
    con = cortex.reader()
    rows = dict(con.execute("select f.path, fc.skip_reason from file_changes fc"
                            " join files f on f.id = fc.file_id"))
    assert rows == {"a.py": None, "b.py": "missing object"}
    assert subjects(con, "a.py", "f") == ["one"]


# -- the same store, however it was indexed ---------------------------------------------------

def _branchy_stages(repo):
    """A history built in three stages (each one a point to index at): branches whose commits
    share one timestamp, merged into main, a file renamed on a branch, a function edited on
    all of them. Yields after each stage."""
    same = 5   # days ago: every branch commit and merge of a stage has this one timestamp

    def code(tag: str, n: int) -> str:
        return (f"def shared():\n    return {n}\n\n\ndef {tag}_only():\n    return '{tag}'\n")

    def merge(branch: str, message: str, days_ago: float = same, *options: str):
        stamp = f"{int(repo.now - days_ago * 86400)} +0000"
        repo.git("merge", "-q", "--no-ff", *options, "-m", message, branch,
                 env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})

    repo.write("core.py", code("main", 0))
    repo.write("notes.txt", "".join(f"note {i}\n" for i in range(20)))
    repo.commit("base", days_ago=9)
    repo.write("core.py", code("main", 1))
    repo.commit("main 1", days_ago=8)
    yield
    for name, row in (("left", 2), ("right", 15)):
        repo.git("checkout", "-q", "-b", name, "main")
        for i in range(3):
            repo.write(f"{name}.py", code(name, i))
            notes = [f"note {j}" for j in range(20)]
            notes[row + i] = f"note {row + i} by {name} {i}"
            repo.write("notes.txt", "".join(f"{n}\n" for n in notes))
            repo.commit(f"{name} {i}", days_ago=same)
        repo.git("checkout", "-q", "main")
    repo.write("core.py", code("main", 2))
    repo.commit("main 2", days_ago=same)
    merge("left", "merge left")
    yield
    # A day later, on a branch from before the merge: the file renamed, the function edited.
    repo.git("checkout", "-q", "-b", "late", "main~1")
    repo.move("notes.txt", "docs/notes.txt")
    repo.commit("move the notes", days_ago=same - 1)
    repo.write("core.py", code("late", 3))
    repo.commit("late 1", days_ago=same - 1)
    repo.git("checkout", "-q", "main")
    merge("right", "merge right", same - 1)
    merge("late", "merge late", same - 1, "-X", "theirs")
    yield


def _answers(db) -> dict:
    """Every history and every line blame the store gives, and its ingestion order."""
    from cortex_core.query.blame import last_change_of_line
    from cortex_core.errors import CortexError
    from cortex_core.query.history import file_history, symbol_history
    con = open_reader(db)
    out = {"seq": [sha for (sha,) in con.execute("select sha from commits order by seq")]}
    for file_id, path in con.execute("select f.id, f.path from head_files h join files f"
                                     " on f.id = h.file_id order by f.path").fetchall():
        out[path] = [e.commit.sha for e in file_history(con, file_id)]
        lines, number = [], 1
        while True:
            try:
                found = last_change_of_line(con, path, number)
            except CortexError:
                break
            lines.append((found.commit.sha, found.path, found.line))
            number += 1
        out[f"blame {path}"] = lines
    for symbol_id, path, qualname in con.execute(
            "select s.id, f.path, s.qualname from symbols s join files f on f.id = s.file_id"
            " where s.alive = 1 order by 2, 3").fetchall():
        out[f"{path}::{qualname}"] = [e.commit.sha for e in symbol_history(con, symbol_id)]
    con.close()
    return out


def test_a_commit_dated_before_its_parent_is_listed_above_it(repo, cortex):
    """A wrong clock (a commit dated a year before its parent) does not turn history upside
    down: a commit is never listed below its parent, as in `git log`; commits whose clocks
    agree keep their committer-time order. A store of schema 9 gets the same order from the
    migration's backfill."""
    import apsw
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("add f", days_ago=100)
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("f: two, from a clock a year behind", days_ago=465)
    repo.write("b.py", "x = 1\n")
    repo.commit("unrelated", days_ago=200)
    repo.write("a.py", "def f():\n    return 3\n")
    repo.commit("f: three", days_ago=50)
    expected = ["f: three", "f: two, from a clock a year behind", "add f"]
    cortex.index()
    assert subjects(cortex.reader(), "a.py", "f") == expected
    assert subjects(cortex.reader(), "a.py") == expected
    con = apsw.Connection(str(cortex.db))
    before = con.execute("select sha, order_time, committer_time from commits order by sha"
                         ).fetchall()
    # The skewed commit and its descendants are raised to their parent's time, no further.
    assert sum(t != c for _, t, c in before) == 2
    con.execute("alter table commits drop column order_time;"
                " update meta set value = '9' where key = 'schema_version';")
    con.close()
    cortex.index()
    after = cortex.reader().execute("select sha, order_time, committer_time from commits"
                                    " order by sha").fetchall()
    assert after == before
    assert subjects(cortex.reader(), "a.py", "f") == expected


def test_history_order_is_the_same_however_the_store_was_indexed(repo, tmp_path, monkeypatch):
    """One run, several incremental runs, runs stopped and resumed (worker processes reading
    out of order, so that commits were stored before their parents): the same answers."""
    from cortex_core.index.ingest import index_repository
    import cortex_core.index.ingest as ingest
    import cortex_core.index.read_pool as read_pool

    def index(name, **kwargs):
        return index_repository(repo.path, tmp_path / f"{name}.db", Settings(), model="none",
                                **kwargs)

    for _ in _branchy_stages(repo):
        index("incremental")
    index("one run")
    # Stopped three times (at the n-th commit of the run, which is rolled back), workers
    # reading ranges of two commits.
    monkeypatch.setattr(ingest, "PARALLEL_MIN_COMMITS", 2)
    monkeypatch.setattr(ingest, "BATCH_SECONDS", 0.0)
    monkeypatch.setattr(read_pool, "CHUNK", 2)
    for stop_at in (3, 4, 3):
        def stop(done, total, phase="commits"):
            if phase == "commits" and done == stop_at:  # noqa: B023 (this iteration's)
                raise KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt):
            index("resumed", jobs=2, progress=stop)
    index("resumed", jobs=2)

    answers = {name: _answers(tmp_path / f"{name}.db")
               for name in ("one run", "incremental", "resumed")}
    orders = {name: a.pop("seq") for name, a in answers.items()}
    assert sorted(orders["one run"]) == sorted(orders["resumed"])
    assert len({tuple(o) for o in orders.values()}) > 1, "the runs stored commits in one order"
    assert answers["one run"] == answers["incremental"] == answers["resumed"]
    # The renamed file's history: six commits of one timestamp, pairs of them (left i, right i)
    # of one generation too, ordered by sha; the rename a day later.
    con = open_reader(tmp_path / "one run.db")
    history_of_notes = [con.execute("select subject, committer_time, generation from commits"
                                    " where sha = ?", (sha,)).fetchone()
                        for sha in answers["one run"]["docs/notes.txt"]]
    subjects = [s for s, _, _ in history_of_notes]
    assert subjects[0] == "move the notes" and subjects[-1] == "base"
    assert sorted(subjects[1:-1]) == ["left 0", "left 1", "left 2", "right 0", "right 1",
                                      "right 2"]
    assert len({(t, g) for _, t, g in history_of_notes[1:-1]}) == 3
    assert len(answers["one run"]["blame docs/notes.txt"]) == 20


def test_the_memory_of_an_index_run_is_shared_by_the_workers_it_fits():
    """[index] memory_mb less the main process's part is shared by as many workers as get a
    useful share each; worker_memory_mb sets each one's share instead (issue 17)."""
    import dataclasses
    from cortex_core.index.read_pool import FLOOR_WORKER_MB, MAIN_MB, MIN_WORKER_MB, worker_plan
    index = Settings().index
    mib = 1024 * 1024
    assert worker_plan(index, 4) == (2, (500 - MAIN_MB) // 2 * mib)   # the default: 2 of 4
    assert worker_plan(index, 1) == (1, (500 - MAIN_MB) * mib)
    roomy = dataclasses.replace(index, memory_mb=2000)
    assert worker_plan(roomy, 4) == (4, (2000 - MAIN_MB) // 4 * mib)
    tight = dataclasses.replace(index, memory_mb=MAIN_MB + MIN_WORKER_MB - 1)
    assert worker_plan(tight, 4) == (1, (MIN_WORKER_MB - 1) * mib)
    tiny = dataclasses.replace(index, memory_mb=1)           # never a share a worker cannot start in
    assert worker_plan(tiny, 4)[0] == 1 and worker_plan(tiny, 4)[1] >= 40 * mib
    fixed = dataclasses.replace(index, memory_mb=1, worker_memory_mb=300)
    assert worker_plan(fixed, 4) == (4, 300 * mib)
    below = dataclasses.replace(index, worker_memory_mb=1)   # a fresh worker is bigger than that
    assert worker_plan(below, 2) == (2, FLOOR_WORKER_MB * mib)


def test_a_repository_whose_memory_was_given_back_still_reads(repo):
    """release_memory drops libgit2's caches after the walk: what follows reads as before."""
    import pygit2
    from cortex_core.index.process_memory import release_memory, resident_bytes
    repo.write("a.py", "def f():\n    return 1\n")
    sha = repo.commit("one", days_ago=1)
    opened = pygit2.Repository(str(repo.path))
    head = opened.head.peel(pygit2.Commit)
    release_memory(opened)
    assert opened.head.peel(pygit2.Commit).id == head.id
    assert opened.get(str(head.id)).tree["a.py"].data == b"def f():\n    return 1\n"
    assert str(head.id).startswith(sha[:7]) and resident_bytes() > 1024 * 1024


def test_a_dead_worker_pool_is_told_as_such_and_other_errors_pass(tmp_path):
    """A process pool whose worker died (BrokenProcessPool) is a clear error with its hint;
    the pool's module is looked up only when it was imported (an update with no workers does
    not import it), and any other error is not swallowed."""
    from concurrent.futures.process import BrokenProcessPool

    from cortex_core.errors import CortexError
    from cortex_core.index.ingest import _git_and_store_errors

    with pytest.raises(CortexError, match="worker process died") as caught:
        with _git_and_store_errors(tmp_path, tmp_path / "index.db"):
            raise BrokenProcessPool("a child process terminated abruptly")
    assert caught.value.hint is not None
    with pytest.raises(KeyError):
        with _git_and_store_errors(tmp_path, tmp_path / "index.db"):
            raise KeyError("x")
