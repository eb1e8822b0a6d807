"""A store read by another version of Cortex's reader says so, until it is rebuilt: an
incremental run reads only the new commits, so the older ones (and the ranges of files not
changed since) keep the earlier reading; an older Cortex extending a store mixes readings too."""

from __future__ import annotations

import json
import subprocess
import sys

import apsw
import pytest

from cortex_core.index.reader_version import READER_VERSION, earlier_reader
from cortex_core.query.status import status


def cli(repo, db, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args, "--repo", str(repo.path),
                           "--db", str(db)], capture_output=True, text=True, timeout=300)


def read_by(db, reader: int | None, where: str = "1") -> None:
    """As if another version of the reader had read these commits (NULL: before the record)."""
    con = apsw.Connection(str(db))
    con.execute(f"update commits set reader = ? where {where}", (reader,))
    con.close()


def go_commits(repo, count: int) -> None:
    for n in range(count):
        repo.write("a.go", f"package p\n\n// F does {n}.\nfunc F() {{}}\n")
        repo.commit(f"c{n}", days_ago=10 - n)


def test_a_store_says_which_reader_read_it_until_it_is_rebuilt(repo, cortex):
    go_commits(repo, 2)
    cortex.index()
    con = cortex.reader()
    assert earlier_reader(con) is None and status(con, cortex.db).earlier_reader is None
    assert con.execute("select distinct reader from commits").fetchall() == [(READER_VERSION,)]
    con.close()

    read_by(cortex.db, None)   # what a store built before the record looks like
    go_commits(repo, 3)
    summary = cortex.index()   # an incremental run: the older commits keep their reading
    assert summary.earlier_reader is not None and summary.earlier_reader.version == 1
    found = status(cortex.reader(), cortex.db).earlier_reader
    assert found is not None and found.current == READER_VERSION
    assert "Go declarations take the doc comment" in found.since[0]
    shown = cli(repo, cortex.db, "status")
    assert "note: history read by an earlier version of Cortex (reader 1" in shown.stdout
    assert "until `cortex index --rebuild`" in shown.stdout
    assert json.loads(cli(repo, cortex.db, "status", "--json").stdout)[
        "earlier_reader"]["version"] == 1
    from cortex_mcp.render import status as mcp_status
    assert any("until `sync` with `rebuild=true`" in line
               for line in mcp_status(status(cortex.reader(), cortex.db), None, None))

    rebuilt = cli(repo, cortex.db, "index", "--rebuild", "--model", "none")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "earlier version" not in rebuilt.stdout
    assert "earlier version" not in cli(repo, cortex.db, "status").stdout


def test_a_change_that_does_not_apply_to_a_store_is_not_told(repo, cortex):
    """Version 6 changed only file names that are not UTF-8: a store read by version 5 whose
    paths hold no U+FFFD (what version 5 made of such bytes) reads the same, and says nothing;
    one whose paths do is told to rebuild."""
    go_commits(repo, 2)
    cortex.index()
    read_by(cortex.db, 5)
    assert earlier_reader(cortex.reader()) is None
    con = apsw.Connection(str(cortex.db))
    con.execute("update files set path = 'caf\ufffd.go' where path = 'a.go'")
    con.close()
    found = earlier_reader(cortex.reader())
    assert found is not None and found.version == 5 and len(found.since) == 1
    assert "not UTF-8" in found.since[0]


def test_an_older_cortex_extending_a_store_is_seen_and_a_newer_one_too(repo, cortex):
    """A review: the first form recorded only who read the oldest commits, so a store an older
    Cortex extended (the same schema, no record) said nothing."""
    go_commits(repo, 3)
    cortex.index()
    newest = "id = (select max(id) from commits)"
    read_by(cortex.db, None, newest)
    assert earlier_reader(cortex.reader()).version == 1
    read_by(cortex.db, READER_VERSION + 1, newest)
    later = earlier_reader(cortex.reader())
    assert (later.version, later.since) == (READER_VERSION + 1, [])
    assert "history partly read by a later version of Cortex" in cli(
        repo, cortex.db, "status").stdout


@pytest.mark.parametrize("readers", [
    (None, None, None), (None, 2, READER_VERSION), (None, READER_VERSION, READER_VERSION),
    (None, READER_VERSION + 1, READER_VERSION), (2, 3, READER_VERSION),
    (READER_VERSION, READER_VERSION + 2, READER_VERSION + 1), (None, None, READER_VERSION + 1)])
def test_the_oldest_and_newest_readers_are_told_whatever_the_mix(repo, cortex, readers):
    """The oldest and newest reader are looked up each over the index (a reader not recorded
    is reader 1): the version told is the oldest when it is older than this one, else the
    newest, as the minimum and maximum over every commit give them."""
    go_commits(repo, 3)
    cortex.index()
    for cid, reader in zip((1, 2, 3), readers):
        read_by(cortex.db, reader, f"id = {cid}")
    counted = [1 if r is None else r for r in readers]
    oldest, newest = min(counted), max(counted)
    expected = oldest if oldest < READER_VERSION else newest
    found = earlier_reader(cortex.reader())
    if oldest == newest == READER_VERSION:
        assert found is None
    elif found is not None or expected >= READER_VERSION:   # an older one may not apply
        assert found is not None and found.version == expected


def test_commits_no_longer_reachable_say_nothing(repo, cortex):
    """A review: after a rewrite that left none of the earlier reader's commits reachable, the
    first form still said some were."""
    go_commits(repo, 2)
    cortex.index()
    read_by(cortex.db, None)
    repo.git("checkout", "-q", "--orphan", "fresh")
    repo.write("a.go", "package p\n\nfunc G() {}\n")
    repo.commit("start again", days_ago=1)
    repo.git("branch", "-D", "main")
    cortex.index()
    con = cortex.reader()
    assert con.execute("select count(*) from commits where reachable = 0").get == 2
    assert earlier_reader(con) is None


def test_a_first_run_stopped_before_its_end_is_still_this_readers(repo, cortex, monkeypatch):
    from test_ingest import interrupt_index_at
    for i in range(6):
        repo.write("a.py", f"def f():\n    return {i}\n")
        repo.commit(f"c{i}", days_ago=10 - i)
    interrupt_index_at(cortex, monkeypatch, 3)
    assert cortex.reader().execute("select count(*) from commits").get == 2
    cortex.index()
    assert earlier_reader(cortex.reader()) is None


def test_an_upgraded_store_keeps_what_it_knew_of_its_reader(repo, cortex):
    """Migration 16: a store of schema 15 read by this session's first form (the reader of its
    oldest commits in its meta) gives that version to its commits; one without says nothing
    of them (version 1)."""
    from cortex_core.store.store import open_writer
    go_commits(repo, 2)
    for recorded, expected in (("2", 2), (None, 1)):
        cortex.index()
        con = open_writer(cortex.db)
        con.execute("drop index commits_reachable; alter table commits drop column reader;"
                    " update meta set value = '15' where key = 'schema_version'")
        if recorded is not None:
            con.execute("insert or replace into meta(key, value) values ('history_reader', ?)",
                        (recorded,))
        con.close()
        open_writer(cortex.db).close()   # migrates, as a run starts by doing
        con = cortex.reader()
        assert earlier_reader(con).version == expected
        assert con.execute("select count(*) from meta where key = 'history_reader'").get == 0
        con.close()
        assert cli(repo, cortex.db, "index", "--rebuild", "--model", "none").returncode == 0


def test_version_7_is_told_only_to_a_store_with_a_merge_it_reads_otherwise(repo, cortex):
    """Version 7 diffs a merge's file against a parent whose version is an earlier parent's,
    which version 6 left out: only a store with a merge that changed a file against every
    parent, with fewer diffs than parents, may have read one otherwise."""
    repo.write("a.py", "def f(x):\n    return x\n")
    repo.commit("initial", days_ago=9)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("b.py", "y = 1\n")
    repo.commit("side", days_ago=8)
    repo.git("checkout", "-q", "main")
    repo.write("c.py", "z = 1\n")
    repo.commit("main", days_ago=7)
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    cortex.index(model="none")
    read_by(cortex.db, 6)
    assert earlier_reader(cortex.reader()) is None   # a merge that took each file whole
    con = apsw.Connection(str(cortex.db))
    # The merge as version 6 read one that changed a.py against both parents, whose versions
    # were the same: one diff, against the first.
    merge, a = con.execute("select c.id, f.id from commits c, files f where c.parents like '% %'"
                           " and f.path = 'a.py'").fetchone()
    con.execute("insert into merge_files(commit_id, file_id, status, via, lines)"
                " values (?, ?, 'M', null, 2)", (merge, a))
    con.execute("insert into merge_edges(commit_id, file_id, parent, old_file_id)"
                " values (?, ?, 0, ?)", (merge, a, a))
    con.close()
    found = earlier_reader(cortex.reader())
    assert found is not None and found.version == 6 and len(found.since) == 1
    assert "also one whose version of the file is another parent's" in found.since[0]
