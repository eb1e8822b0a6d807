"""The engine's facade (cortex_core/engine.py): one object per repository, typed errors with the
action that fixes them, settings resolved in one place, a consistent snapshot, and the table of
operations it answers (cortex_core/operations.py). Real git repositories in temporary folders,
real stores."""

from __future__ import annotations

import json

import inspect
import sys
import threading
from pathlib import Path

import apsw
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402

from cortex_core import api  # noqa: E402
from cortex_core.engine import Engine, Snapshot  # noqa: E402
from cortex_core.errors import ACTIONS  # noqa: E402
from cortex_core.operations import BY_REQUEST, OPERATIONS  # noqa: E402

# One front end's words for every hint: each error below must say what fixes it.
WORDS = {action: "{message} [fix: " + action + "]" for action in ACTIONS}


@pytest.fixture
def repo(tmp_path: Path) -> ScriptedRepo:
    repo = ScriptedRepo(tmp_path / "widgets")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(1))
    repo.write("pkg/use.py", sample_use())
    repo.commit("add the core", days_ago=30)
    repo.write("pkg/core.py", sample_core(2))
    repo.commit("tune compute", days_ago=2)
    return repo


@pytest.fixture
def indexed(repo: ScriptedRepo) -> ScriptedRepo:
    with Engine.open(repo.path, for_writing=True) as engine:
        engine.run(api.IndexRequest(model="none"))
    return repo


def phrased(exc: api.CortexError) -> str:
    return exc.phrased(WORDS)


# -- typed errors, each with the action that fixes it --------------------------------------------


def test_outside_a_repository_the_hint_is_to_name_one(tmp_path: Path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(api.NotARepository) as caught:
        Engine.open(tmp_path / "plain")
    assert caught.value.hint == api.Hint("repository")
    assert phrased(caught.value).endswith("is not inside a git repository [fix: repository]")
    assert "--repo" not in str(caught.value)          # no front end's flag in the engine's words


def test_without_an_index_the_hint_is_to_build_it(repo: ScriptedRepo):
    with Engine.open(repo.path) as engine:
        with pytest.raises(api.NoIndex) as caught:
            engine.run(api.HistoryRequest(engine.target("pkg/core.py::compute")))
        assert caught.value.hint == api.Hint("index")
        assert phrased(caught.value) == f"no index at {engine.db} [fix: index]"
        with pytest.raises(api.NoIndex):              # writes say the same
            engine.run(api.AddNoteRequest(None, "a note"))
        assert not engine.db.exists()                 # and create nothing


def test_a_store_from_a_newer_cortex_says_so_and_how_to_go_on(indexed: ScriptedRepo):
    db = indexed.path / ".cortex" / "cortex.db"
    con = apsw.Connection(str(db))
    con.execute("update meta set value = '999' where key = 'schema_version'")
    con.close()
    with Engine.open(indexed.path) as engine:
        with pytest.raises(api.NewerSchema) as caught:
            engine.run(api.StatusRequest())
    assert caught.value.hint == api.Hint("newer")
    assert "written by a newer Cortex (schema 999" in phrased(caught.value)
    assert "cortex index" not in str(caught.value)


def test_a_store_with_an_older_schema_asks_for_an_index_run(indexed: ScriptedRepo):
    db = indexed.path / ".cortex" / "cortex.db"
    con = apsw.Connection(str(db))
    con.execute("update meta set value = '1' where key = 'schema_version'")
    con.close()
    with Engine.open(indexed.path) as engine, pytest.raises(api.OlderSchema) as caught:
        engine.reader()
    assert caught.value.hint == api.Hint("upgrade")


def test_a_store_a_first_run_left_empty_asks_for_an_index_run(repo: ScriptedRepo):
    """A first run killed before it wrote its schema leaves an empty SQLite file: it was called
    "an older schema (0 < N)", to be upgraded."""
    db = repo.path / ".cortex" / "cortex.db"
    db.parent.mkdir()
    con = apsw.Connection(str(db))
    con.execute("pragma journal_mode=wal")
    con.close()
    with Engine.open(repo.path) as engine, pytest.raises(api.NoIndex) as caught:
        engine.run(api.StatusRequest())
    assert caught.value.hint == api.Hint("index")
    assert "is empty: its first index run stopped before it wrote anything" in str(caught.value)


def test_a_damaged_store_asks_for_a_rebuild(indexed: ScriptedRepo):
    db = indexed.path / ".cortex" / "cortex.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 500)
    with Engine.open(indexed.path) as engine, pytest.raises(api.DamagedStore) as caught:
        engine.run(api.HotspotsRequest())
    assert caught.value.hint == api.Hint("rebuild")
    assert isinstance(caught.value, api.StoreError)


def test_a_busy_store_is_a_typed_error_not_the_drivers(indexed: ScriptedRepo):
    """A note writer that waits out its busy timeout behind another writer."""
    db = indexed.path / ".cortex" / "cortex.db"
    holder = apsw.Connection(str(db))
    holder.execute("begin immediate")
    try:
        with Engine.open(indexed.path) as engine, pytest.raises(api.StoreBusy) as caught:
            with engine.note_writer() as con:
                con.setbusytimeout(50)
                con.execute("begin immediate")    # raised as apsw's, typed on the way out
    finally:
        holder.execute("rollback")
        holder.close()
    assert caught.value.hint == api.Hint("retry")


def test_every_hint_has_words_in_every_front_end():
    from cortex_cli.cli import WORDS as cli
    from cortex_ls.repos import WORDS as ls
    from cortex_mcp.server import WORDS as mcp
    assert set(cli) == set(mcp) == set(ACTIONS)
    assert set(ls) == set(ACTIONS) - {"repository"}   # the server finds its repositories itself
    for words in (cli, ls, mcp):
        for action, text in words.items():
            out = api.CortexError("what happened", api.Hint(action)).phrased(words)
            assert out != "what happened" and "{" not in out, (action, text)



def test_an_indexer_child_hands_its_error_and_hint_to_the_front_end():
    from cortex_core.child_process import error_event, error_of
    sent = api.StoreError("cannot use x: it is a folder; remove it", api.Hint("elsewhere"))
    back = error_of(json.loads(json.dumps(error_event(sent))))
    assert (back.message, back.hint) == (sent.message, sent.hint)
    # What a child prints is read as untrusted: unknown or odd hints are dropped, not trusted.
    assert error_of({"event": "error", "message": "m", "hint": "rm -rf"}).hint is None
    assert error_of({"event": "error", "message": ["x"], "hint": 3}).hint is None
    assert error_of({"event": "error"}).message == "the indexer failed"
    assert len(error_of({"event": "error", "message": "x" * 10_000}).message) == 500


# -- settings, in one place ----------------------------------------------------------------------


def test_settings_defaults_then_the_file_then_the_front_ends(indexed: ScriptedRepo):
    config = indexed.path / ".cortex" / "config.toml"
    with Engine.open(indexed.path) as engine:
        assert engine.settings().search.half_life_days == 180.0
        config.write_text("[search]\nhalf_life_days = 3.0\n")
        assert engine.settings().search.half_life_days == 3.0       # read again when it changes
        engine.set_overrides({"search.half_life_days": 60.0}, "the test's settings")
        assert engine.settings().search.half_life_days == 60.0      # the front end's go over
        config.write_text("[search]\nhalf_lfe_days = 3\n")
        with pytest.raises(api.CortexError, match="unknown key search.half_lfe_days"):
            engine.settings()
    lenient = Engine(indexed.path, lenient_config=True)
    assert lenient.settings().search.half_life_days == 180.0
    assert "half_lfe_days" in lenient.config_problem


# -- a consistent snapshot -----------------------------------------------------------------------


def test_a_snapshot_sees_one_index_while_an_indexer_and_a_note_writer_commit(
        indexed: ScriptedRepo):
    with Engine.open(indexed.path) as reader, Engine.open(indexed.path,
                                                           for_writing=True) as writer:
        spec = reader.target("pkg/core.py::compute")
        with reader.snapshot() as snap:
            before = snap.history(spec)
            assert before.total == 2
            indexed.write("pkg/core.py", sample_core(3))
            head = indexed.commit("tune compute again", days_ago=1)
            writer.run(api.IndexRequest(model="none"))              # commits meanwhile
            writer.run(api.AddNoteRequest("pkg/core.py::compute", "keep it pure"))
            assert snap.history(spec).total == 2                   # the same index, still
            assert snap.indexed_head() != head
            assert snap.notes() == []
            assert snap.reasons(e.commit for e in before.entries).keys() == \
                {e.commit.sha for e in before.entries}
        with reader.snapshot() as fresh:                           # a new one sees them
            assert fresh.history(spec).total == 3
            assert fresh.indexed_head() == head
            assert [n.text for n in fresh.notes()] == ["keep it pure"]


def test_snapshots_nest_and_end_their_read(indexed: ScriptedRepo):
    with Engine.open(indexed.path) as engine:
        with engine.snapshot() as outer:
            with engine.snapshot() as inner:                       # the same read
                assert inner.con is outer.con
            assert not outer.con.getautocommit()
        assert engine.reader().getautocommit()                     # ended: no read held


def test_each_thread_reads_through_its_own_connection(indexed: ScriptedRepo):
    with Engine.open(indexed.path) as engine:
        mine = engine.reader()
        assert engine.reader() is mine
        theirs = []
        thread = threading.Thread(target=lambda: theirs.append(engine.reader()))
        thread.start()
        thread.join()
        assert theirs and theirs[0] is not mine


# -- the operations ------------------------------------------------------------------------------


def test_every_operation_is_a_method_with_its_requests_parameters():
    for op in OPERATIONS.values():
        owner = Engine if op.writes else Snapshot
        method = getattr(owner, op.method)
        params = [p for p in inspect.signature(method).parameters if p != "self"]
        assert params == list(op.request._fields), op.name
        assert BY_REQUEST[op.request] is op


def test_run_answers_each_read_operation_on_a_real_index(indexed: ScriptedRepo):
    with Engine.open(indexed.path) as engine:
        spec = engine.target("pkg/core.py::compute")
        answers = {
            "history": engine.run(api.HistoryRequest(spec)),
            "hotspots": engine.run(api.HotspotsRequest(top_k=3)),
            "related": engine.run(api.RelatedRequest(spec)),
            "blast": engine.run(api.BlastRequest(spec)),
            "callers": engine.run(api.CallersRequest(spec)),
            "search": engine.run(api.SearchRequest("tune compute", mode="lexical")),
            "status": engine.run(api.StatusRequest()),
            "what": engine.run(api.WhatRequest()),
            "context_pack": engine.run(api.ContextPackRequest(at="pkg/core.py::compute")),
        }
    assert answers["history"].total == 2
    assert answers["hotspots"].symbols[0].qualname == "compute"
    assert any(d.path == "pkg/use.py" for d in answers["blast"].dependents)
    assert any(n.path == "pkg/use.py" for n in answers["callers"].items)
    assert answers["search"].hits and answers["search"].hits[0].title == "tune compute"
    assert answers["status"].commits == 2
    assert "compute" in answers["context_pack"].text
    with pytest.raises(TypeError):
        engine.run("history")


def test_a_vector_search_without_vectors_says_why(indexed: ScriptedRepo):
    with Engine.open(indexed.path) as engine:
        hybrid = engine.run(api.SearchRequest("compute"))
        assert hybrid.note and "semantic search off" in hybrid.note
        with pytest.raises(api.CortexError, match="semantic search off") as caught:
            engine.run(api.SearchRequest("compute", mode="vector"))
        assert caught.value.hint == api.Hint("model")
        assert "lexical search only" not in caught.value.message
