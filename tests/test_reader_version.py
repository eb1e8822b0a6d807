"""A store read by an earlier version of Cortex's reader says so, until it is rebuilt: an
incremental run reads only the new commits, so the older ones keep the earlier reading."""

from __future__ import annotations

import json
import subprocess
import sys

import apsw

from cortex_core.index.reader_version import READER_VERSION, earlier_reader
from cortex_core.query.status import status


def cli(repo, db, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args, "--repo", str(repo.path),
                           "--db", str(db)], capture_output=True, text=True, timeout=300)


def forget_the_reader(db) -> None:
    """What a store built before the record looks like."""
    con = apsw.Connection(str(db))
    con.execute("delete from meta where key = 'history_reader'")
    con.close()


def test_a_store_says_which_reader_read_it_until_it_is_rebuilt(repo, cortex):
    repo.write("a.go", "package p\n\n// F does.\nfunc F() {}\n")
    repo.commit("one", days_ago=2)
    cortex.index()
    con = cortex.reader()
    assert earlier_reader(con) is None and status(con, cortex.db).earlier_reader is None
    assert con.execute("select value from meta where key = 'history_reader'").get == \
        str(READER_VERSION)
    con.close()

    forget_the_reader(cortex.db)
    repo.write("a.go", "package p\n\n// F does it.\nfunc F() {}\n")
    repo.commit("two", days_ago=1)
    summary = cortex.index()   # an incremental run: the older commits keep their reading
    assert summary.earlier_reader is not None and summary.earlier_reader.version == 1
    con = cortex.reader()
    found = status(con, cortex.db).earlier_reader
    assert found is not None and found.current == READER_VERSION
    assert "Go declarations take the doc comment" in found.since[-1]
    con.close()
    shown = cli(repo, cortex.db, "status")
    assert "note: history read by an earlier version of Cortex (reader 1" in shown.stdout
    assert "until `cortex index --rebuild`" in shown.stdout
    from cortex_mcp.render import status as mcp_status
    assert any("until `sync` with `rebuild=true`" in line
               for line in mcp_status(status(cortex.reader(), cortex.db), None, None))
    assert json.loads(cli(repo, cortex.db, "status", "--json").stdout)[
        "earlier_reader"]["version"] == 1

    rebuilt = cli(repo, cortex.db, "index", "--rebuild", "--model", "none")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "earlier version" not in rebuilt.stdout
    assert "earlier version" not in cli(repo, cortex.db, "status").stdout


def test_a_first_run_stopped_before_its_end_is_still_this_readers(repo, cortex, monkeypatch):
    """The record is made before any commit is written: a first run stopped half-way and the
    run that completes it are one reading (recorded at its end, the second run would have found
    commits and no record: an earlier reader's store)."""
    from test_ingest import interrupt_index_at
    for i in range(6):
        repo.write("a.py", f"def f():\n    return {i}\n")
        repo.commit(f"c{i}", days_ago=10 - i)
    interrupt_index_at(cortex, monkeypatch, 3)
    assert cortex.reader().execute("select count(*) from commits").get == 2
    cortex.index()
    assert earlier_reader(cortex.reader()) is None
