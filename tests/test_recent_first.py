"""Recent history first (ingest.py): a first run indexes a recent window, answers say how far
back they reach, and the whole history built beside it is swapped in with every identity exactly
as a plain oldest-first run makes it. Real repositories, real stores, a real language server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import time

import apsw
import pygit2
import pytest

from cortex_core.config import IndexSettings, Settings
from cortex_core.dates import reach
from cortex_core.engine import Engine
from cortex_core.index.ingest import choose_window, full_store_path, index_repository
from cortex_core.query.history import history
from cortex_core.query.targets import TargetSpec
from cortex_core.store.store import open_reader, writer_lock
from cortex_ls import render as ls_render
from cortex_cli import render as cli_render
from ls_harness import Session, plain
from scripted_repo import ScriptedRepo

WINDOW = Settings(index=IndexSettings(window_days=60.0, window_commits=500,
                                      recent_first_commits=1))

CORE_V1 = "def compute(x):\n    return x + 1\n\n\ndef helper():\n    return 2\n"


def build_history(repo: ScriptedRepo) -> dict[str, str]:
    """A history whose window (the last 60 days) leaves out a rename, a side branch forked
    before the window and merged inside it, and a symbol renamed inside the window."""
    shas = {}
    repo.write("pkg/old_core.py", CORE_V1)
    repo.write("README.md", "# project\n")
    shas["first"] = repo.commit("add the core", days_ago=400)
    repo.move("pkg/old_core.py", "pkg/core.py")
    shas["renamed"] = repo.commit("move the core module", days_ago=300)
    repo.write("pkg/core.py", CORE_V1.replace("x + 1", "x + 2"))
    shas["old_change"] = repo.commit("compute: off by one", days_ago=200)
    repo.git("branch", "side")
    for i in range(3):
        repo.write("pkg/core.py", CORE_V1.replace("x + 1", f"x + {3 + i}").replace(
            "return 2", f"return {2 + i}"))
        shas[f"recent{i}"] = repo.commit(f"compute: step {i}", days_ago=50 - 10 * i)
    repo.git("checkout", "-q", "side")
    repo.write("pkg/extra.py", "def extra():\n    return 1\n")
    shas["side"] = repo.commit("side: add extra", days_ago=15)
    repo.git("checkout", "-q", "main")
    stamp = f"{int(repo.now - 10 * 86400)} +0000"
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side",
             env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    shas["merge"] = repo.head()
    repo.write("pkg/core.py", (repo.path / "pkg/core.py").read_text().replace(
        "def helper", "def assist"))
    shas["newest"] = repo.commit("rename helper to assist", days_ago=2)
    return shas


class Stop(Exception):
    """Raised from a progress callback: a run stopped there, as a killed one is."""


def stop_at(prefix: str, after: int = 0):
    def progress(done, total, phase="commits"):
        if phase.startswith(prefix) and done >= after:
            raise Stop(phase)
    return progress


QUERIES = {
    "commits": "select sha, parents, seq, generation, order_time, author_time, subject, kind,"
               " is_merge, files_changed, lines_added, lines_deleted, reachable, code_words"
               " from commits",
    "files": "select path, language from files",
    "file_changes": "select c.sha, f.path, o.path, fc.status, fc.added, fc.deleted, fc.skip_reason"
                    " from file_changes fc join commits c on c.id = fc.commit_id"
                    " join files f on f.id = fc.file_id left join files o on o.id = fc.old_file_id",
    "hunks": "select c.sha, f.path, h.old_start, h.old_lines, h.new_start, h.new_lines from hunks h"
             " join commits c on c.id = h.commit_id join files f on f.id = h.file_id",
    "symbols": "select f.path, s.qualname, s.name, s.kind, s.alive from symbols s"
               " join files f on f.id = s.file_id",
    "symbol_changes": "select f.path, s.qualname, c.sha, sc.change, sc.added, sc.deleted, ff.path,"
                      " fs.qualname, sc.confidence from symbol_changes sc"
                      " join symbols s on s.id = sc.symbol_id join files f on f.id = s.file_id"
                      " join commits c on c.id = sc.commit_id"
                      " left join symbols fs on fs.id = sc.from_symbol_id"
                      " left join files ff on ff.id = fs.file_id",
    "file_versions": "select f.path, c.sha, fv.parent, p.sha, pf.path, fv.skip_reason, fv.lines,"
                     " fv.merge from file_versions fv join files f on f.id = fv.file_id"
                     " join commits c on c.id = fv.commit_id"
                     " left join commits p on p.id = fv.prev_commit_id"
                     " left join files pf on pf.id = fv.prev_file_id",
    "spans": "select f.path, s.qualname, sp.start_line, sp.end_line from symbol_spans sp"
             " join symbols s on s.id = sp.symbol_id join files f on f.id = s.file_id",
    "items": "select kind, title, body, time from items",
    "defs": "select f.path, d.qualname from defs d join files f on f.id = d.file_id",
}


def dump(db: Path) -> dict[str, list]:
    """Every row that carries identity, by names rather than ids (ids follow the order worker
    processes return records in)."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {name: sorted(map(repr, con.execute(sql))) for name, sql in QUERIES.items()}
    finally:
        con.close()


def compute_history(db: Path) -> tuple[list[str], int | None]:
    con = open_reader(db)
    try:
        result = history(con, TargetSpec("pkg/core.py", "compute"))
        return [e.commit.sha for e in result.entries], result.history_from
    finally:
        con.close()


def test_window_answers_first_then_the_full_history_equals_a_plain_run(tmp_path: Path):
    repo = ScriptedRepo(tmp_path / "repo")
    shas = build_history(repo)
    db = tmp_path / "rf" / "cortex.db"
    window = choose_window(pygit2.Repository(str(repo.path)), WINDOW.index)
    assert window is not None and window.boundary == shas["recent0"]

    # Phase 1 only: the run is stopped as soon as the older history starts.
    with pytest.raises(Stop):
        index_repository(repo.path, db, WINDOW, recent_first="yes", jobs=1,
                         progress=stop_at("older history: "))
    entries, since = compute_history(db)
    # The recent commits, newest first, the boundary read as adding the file; nothing older.
    assert entries == [shas["recent2"], shas["recent1"], shas["recent0"]]
    assert since == int(repo.git("show", "-s", "--format=%ct", shas["recent0"]))
    con = open_reader(db)
    try:
        commits = {row[0] for row in con.execute("select sha from commits")}
        assert shas["side"] in commits and shas["merge"] in commits     # after the window's start
        assert shas["old_change"] not in commits and shas["renamed"] not in commits
    finally:
        con.close()
    # Every front end says how far back it reaches.
    assert reach(since) == f"history from {time.strftime('%Y-%m', time.gmtime(since))} on"
    assert ls_render.index_note(True, since) == reach(since) + "; indexing older commits"
    engine = Engine(repo.path, _location(db))
    with engine.snapshot() as snap:
        card = snap.symbol_card("pkg/core.py", "compute", limit=5, heat=snap.heat(3, 90))
        assert card.history_from == since and card.changes == 3
        text = ls_render.hover(card, web_base=None, partial=False)
        assert reach(since) in text and "older commits not indexed yet" in text
        assert snap.status().history_from == since
        assert "history from" in cli_render.history(snap.history(TargetSpec("pkg/core.py",
                                                                              "compute")), 0)
    engine.close()
    assert full_store_path(db).exists()   # the full build had started: continued below

    # Any later run completes it (here a plain one): the whole history, swapped in.
    summary = index_repository(repo.path, db, WINDOW, jobs=1)
    assert summary.history_from is None
    assert not full_store_path(db).exists()
    entries, since = compute_history(db)
    assert since is None
    assert entries[-1] == shas["first"] and shas["old_change"] in entries

    plain = tmp_path / "plain" / "cortex.db"
    index_repository(repo.path, plain, Settings(), jobs=1)
    assert dump(db) == dump(plain)
    # The file renamed before the window is one identity across the rename, as in a plain run.
    con = open_reader(db)
    try:
        assert con.execute("select count(*) from file_changes fc join files f on"
                           " f.id = fc.file_id join files o on o.id = fc.old_file_id"
                           " where f.path = 'pkg/core.py' and o.path = 'pkg/old_core.py'"
                           " and fc.status = 'R'").get == 1
    finally:
        con.close()


def _location(db: Path):
    from cortex_core.store.store_location import Location
    return Location(db, explicit=True)


def test_a_stopped_full_build_is_continued_and_notes_survive_the_swap(tmp_path: Path):
    repo = ScriptedRepo(tmp_path / "repo")
    build_history(repo)
    db = tmp_path / "rf" / "cortex.db"
    with pytest.raises(Stop):   # stopped inside the full build, after its commits were read
        index_repository(repo.path, db, WINDOW, recent_first="yes", jobs=1,
                         progress=stop_at("older history: files read for structure"))
    con = open_reader(full_store_path(db))
    try:
        assert con.execute("select count(*) from commits").get == 9
    finally:
        con.close()
    engine = Engine(repo.path, _location(db))
    note = engine.add_note("pkg/core.py::compute", "keep it pure")
    with engine.snapshot() as snap:
        assert snap.history_from() is not None
    summary = index_repository(repo.path, db, WINDOW, recent_first="auto", jobs=1)
    assert summary.history_from is None and summary.window_commits == 0
    with engine.snapshot() as snap:   # the same connection, reading the swapped rows
        assert snap.history_from() is None
        card = snap.symbol_card("pkg/core.py", "compute", limit=10, heat=snap.heat(3, 90))
        assert card.changes == 6 and [n.id for n in card.notes] == [note.id]
    engine.close()
    plain = tmp_path / "plain" / "cortex.db"
    index_repository(repo.path, plain, Settings(), jobs=1)
    ours, theirs = dump(db), dump(plain)
    ours["items"] = [i for i in ours["items"] if not i.startswith("('note'")]
    assert ours == theirs


@pytest.mark.parametrize("stop", [
    ("recent history: commits", 1),          # inside the window's commits
    ("recent history: files read", 0),       # after them, before the window is complete
    ("older history: commits", 2),           # inside the full build's commits
])
def test_a_run_stopped_anywhere_is_continued_to_what_a_plain_run_stores(tmp_path: Path, stop):
    """A killed first run leaves a store the next run continues from, whatever the phase: the
    window is finished, the whole history built and swapped in, identities as a plain run's."""
    repo = ScriptedRepo(tmp_path / "repo")
    shas = build_history(repo)
    db = tmp_path / "rf" / "cortex.db"
    with pytest.raises(Stop):
        index_repository(repo.path, db, WINDOW, recent_first="yes", jobs=1,
                         progress=stop_at(*stop))
    summary = index_repository(repo.path, db, WINDOW, recent_first="auto", jobs=1)
    assert summary.history_from is None and not full_store_path(db).exists()
    assert compute_history(db) == ([shas[f"recent{i}"] for i in (2, 1, 0)]
                                   + [shas["old_change"], shas["renamed"], shas["first"]], None)
    plain = tmp_path / "plain" / "cortex.db"
    index_repository(repo.path, plain, Settings(), jobs=1)
    assert dump(db) == dump(plain)


def test_auto_leaves_a_short_history_to_a_plain_run(tmp_path: Path):
    repo = ScriptedRepo(tmp_path / "repo")
    build_history(repo)
    db = tmp_path / "rf" / "cortex.db"
    short = dataclasses.replace(WINDOW, index=dataclasses.replace(WINDOW.index,
                                                                  recent_first_commits=100))
    summary = index_repository(repo.path, db, short, recent_first="auto", jobs=1)
    assert summary.window_seconds is None and summary.history_from is None
    assert not full_store_path(db).exists()


# -- the language server -------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> ScriptedRepo:
    repo = ScriptedRepo(tmp_path / "project")
    build_history(repo)
    (repo.path / ".cortex").mkdir()
    (repo.path / ".cortex" / "config.toml").write_text(
        "[index]\nwindow_days = 60.0\nrecent_first_commits = 1\n", encoding="utf-8")
    return repo


@pytest.mark.asyncio
async def test_the_language_server_answers_from_the_window_then_reads_the_swapped_store(
        lsp: Session, project: ScriptedRepo):
    db = project.path / ".cortex" / "cortex.db"
    # Another run holds the full build: the server's own run indexes the window and leaves the
    # rest to it, so the window's answers can be seen.
    with writer_lock(full_store_path(db), 0):
        await lsp.start(project.path)
        assert plain(lsp.updates[-1]).get("ok", True) is not False
        uri = lsp.open(project.path / "pkg" / "core.py")
        text = await lsp.hover(uri, 0, 5)
        assert text is not None and "compute: step 2" in text
        assert "history from " in text and "move the core module" not in text
        payload = plain(await lsp.request("cortex/symbolHistory",
                                          {"target": "pkg/core.py::compute"}))
        assert isinstance(payload["historyFrom"], int)
    # That other run: the whole history, swapped into the store the server reads.
    await asyncio.get_running_loop().run_in_executor(
        None, lambda: index_repository(project.path, db, WINDOW, jobs=1))
    text = await lsp.hover(uri, 0, 5)
    assert text is not None and "history from" not in text
    assert "6 changes" in text
    payload = plain(await lsp.request("cortex/symbolHistory",
                                      {"target": "pkg/core.py::compute"}))
    assert payload["historyFrom"] is None
    assert "compute: off by one" in json.dumps(payload)
