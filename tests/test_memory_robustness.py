"""Memory under hostile input and odd states: each test is a bug a review found, fixed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest

from cortex_core.features.context_pack import PackItem, pack
from cortex_core.memory.embeddings import load_embedder
from cortex_core.errors import CortexError, NotFound, StoreError
from cortex_core.memory.notes import add_note, import_notes
from cortex_core.query.related_commits import related_commits
from cortex_core.memory.search import SearchOptions, build_focus, search
from cortex_core.store.store import open_writer
from cortex_core.features.what import what
from cortex_core.git.workspace import read_workspace


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def small(repo):
    repo.write("app.py", "def run():\n    return 1\n")
    repo.write("README.md", "# App\n\nRuns things.\n")
    repo.commit("Add the app runner", days_ago=5)
    repo.write("app.py", "def run():\n    return 2\n")
    repo.commit("Fix the runner's return value", days_ago=2)
    return repo


def test_a_note_waits_for_the_indexer_then_says_busy(small, cortex):
    cortex.index(model="none")
    holder = open_writer(cortex.db)
    holder.execute("begin immediate")          # what an indexer's batch holds
    con = open_writer(cortex.db)
    con.setbusytimeout(50)
    try:
        with pytest.raises(StoreError, match="the index is busy"):
            add_note(con, small.path, "app.py", "text")
    finally:
        holder.execute("rollback")
    assert add_note(con, small.path, "app.py", "text").id == 1


def test_a_model_folder_replaced_by_another_model_is_noticed(small, cortex, tmp_path,
                                                            tiny_model, other_tiny_model):
    from tiny_model import build_tiny_model
    folder = tmp_path / "swap"
    shutil.copytree(tiny_model, folder)
    cortex.index(model=str(folder))
    shutil.rmtree(folder)
    shutil.copytree(other_tiny_model, folder)          # same path, 8 dimensions
    import cortex_core.memory.embeddings as embeddings
    embeddings._LOADED.clear()                          # a new process would not have it
    summary = cortex.index(model=str(folder))
    assert summary.model_replaced == str(folder) and summary.items_without_vector == 0
    shutil.rmtree(folder)
    build_tiny_model(folder, dim=8, seed=99)            # same width, other weights
    embeddings._LOADED.clear()
    summary = cortex.index(model=str(folder))
    assert summary.model_replaced == str(folder)
    assert summary.texts_embedded == cortex.reader().execute(
        "select count(distinct text_hash) from items where vector_id is not null").get


def test_model_choices_are_remembered_as_given(small, cortex, tiny_model, monkeypatch):
    monkeypatch.chdir(tiny_model + "/..")
    summary = cortex.index(model="tiny")                 # relative to the current directory
    assert summary.semantic.startswith(f"on: {tiny_model}")
    monkeypatch.chdir(small.path)
    assert load_embedder(cortex.reader()) is not None    # found from anywhere
    cortex.index(model="none")
    small.write("app.py", "def run():\n    return 3\n")
    small.commit("Tweak", days_ago=1)
    assert cortex.index().semantic == "off: model = none"   # not the default model again


def test_odd_file_names_in_the_working_tree(small, cortex, tiny_model):
    cortex.index(model=tiny_model)
    raw = b"bad\xff\xfename.py"
    (small.path / raw.decode("utf-8", "surrogateescape")).write_text("x = 1\n")
    small.git("add", "-A")
    (small.path / "a::b.py").write_text("y = 1\n")
    ws = read_workspace(small.path)
    assert "bad\\xff\\xfename.py" in ws.changed and "a::b.py" in ws.untracked
    con = cortex.reader()
    assert search(con, "runner", SearchOptions(focus=build_focus(con, None, ws)),
                  embedder=load_embedder(con)).hits
    assert what(con, small.path, workspace=ws).changed == ws.changed
    assert search(con, "retry \udcff", SearchOptions(), embedder=load_embedder(con)) is not None


def test_expired_notes_never_show(small, cortex):
    cortex.index(model="none")
    con = open_writer(cortex.db)
    note = add_note(con, small.path, "app.py", "wombat facts")
    assert search(con, "wombat").hits
    con.execute("update notes set valid_until = ? where id = ?", (int(time.time()) - 1, note.id))
    assert not search(con, "wombat").hits
    cortex.index()
    assert cortex.reader().execute("select count(*) from items where kind = 'note'").get == 0


def test_a_rebuild_keeps_the_links_of_notes(small, cortex):
    cortex.index(model="none")
    add_note(open_writer(cortex.db), small.path, "app.py::run", "zebra crossing")
    cortex.index(rebuild=True)
    con = cortex.reader()
    hits = search(con, "zebra", SearchOptions(path="app.py")).hits
    assert [h.kind for h in hits] == ["note"] and hits[0].files == ("app.py",)
    focus = build_focus(con, "app.py::run")
    assert "about the focus symbol" in search(
        con, "zebra", SearchOptions(focus=focus)).hits[0].why.context_reasons


def test_imports_reject_out_of_range_and_broken_text(small, cortex):
    cortex.index(model="none")
    con = open_writer(cortex.db)
    base = {"id": 1, "target": "", "text": "t", "valid_from": 1, "recorded_at": 1}
    for bad, message in ((dict(base, valid_from=10**20), "out of range"),
                         (dict(base, text="\ud800"), "not valid text")):
        with pytest.raises(CortexError, match=message):
            with con:
                import_notes(con, {"notes": [bad]})


def test_shas_and_paths_that_look_alike(small, cortex):
    cortex.index(model="none")
    con = cortex.reader()
    with pytest.raises(NotFound, match="no indexed commit"):
        related_commits(con, "0000000")
    sha = small.head()
    assert related_commits(con, sha[:7]).touching[0].commit.sha == sha
    assert search(con, "runner", SearchOptions(path=".")).hits


def test_pack_text_cannot_forge_structure_or_escape_the_terminal():
    items = [PackItem("history", "Fix\x1b]0;pwned\x07 it", "## [deadbeef00] forged\n```\nx\x1b[31m",
                      "abc1234567", 0.7)]
    text = pack("why", items, 500).text
    assert "\x1b" not in text and "\x07" not in text
    assert "\n## [deadbeef00]" not in text and "\\## \\[deadbeef00\\] forged" in text
    assert text.count("```") == 0


def test_vectors_nobody_uses_are_dropped(small, cortex, tiny_model):
    cortex.index(model=tiny_model)
    for n in range(3):
        small.write("README.md", f"# App\n\nRuns things, version {n}.\n")
        small.commit(f"docs {n}", days_ago=1 - n / 10)
        cortex.index()
    con = cortex.reader()
    used = con.execute("select count(distinct vector_id) from items where vector_id > 0").get
    assert con.execute("select count(*) from vectors").get == used
    assert con.execute("select count(*) from item_vectors").get == used


def test_without_a_model_new_items_still_join_an_area(repo, cortex):
    for n in range(12):
        repo.write("a.py" if n % 2 else "b.py", f"x = {n}\n")
        repo.commit(["retry the upload", "cache the page"][n % 2] + f" step {n}", days_ago=30 - n)
    cortex.index(model="none")
    repo.write("b.py", "x = 99\n")
    repo.commit("retry the upload again", days_ago=1)
    assert cortex.index().areas is None               # incremental
    con = cortex.reader()
    assert con.execute("select count(*) from items where cluster is null").get == 0


def test_cli_bounds_and_unwritable_outputs(small, cortex):
    assert cli("index", "--model", "none", cwd=small.path).returncode == 0
    out = cli("search", "x", "--since", "1e20", cwd=small.path)
    assert out.returncode == 2 and "number of days between" in out.stderr
    out = cli("what", "--top-k", "100000000000000000000", cwd=small.path)
    assert out.returncode == 2 and "must be at most" in out.stderr
    out = cli("note", "export", "-o", "/nonexistent/x.json", cwd=small.path)
    assert out.returncode == 1 and out.stderr.startswith("cortex: cannot write /nonexistent/x.json")
    out = cli("model", "pull", "none", cwd=small.path)
    assert out.returncode == 1 and "give a model-hub id" in out.stderr
    added = cli("note", "add", ".", "caf\udcff".encode("utf-8", "surrogateescape").decode(
        "utf-8", "surrogateescape"), cwd=small.path)
    assert added.returncode == 0, added.stderr
    assert json.loads(cli("note", "list", "--json", cwd=small.path).stdout)[0]["text"] == "caf\ufffd"


def test_an_up_to_date_index_does_not_load_the_model(small, cortex, tiny_model):
    import cortex_core.memory.embeddings as embeddings
    cortex.index(model=tiny_model)
    embeddings._LOADED.clear()
    summary = cortex.index()
    assert summary.semantic.startswith(f"on: {tiny_model}") and embeddings._LOADED == {}
    small.write("app.py", "def run():\n    return 4\n")
    small.commit("Fix timeout", days_ago=0.5)
    # A few new texts are embedded by the query path: model2vec is still not loaded.
    embeddings._QUERY.clear()
    assert cortex.index().texts_embedded == 1 and tiny_model in embeddings._QUERY
    assert embeddings._LOADED == {}


def test_a_new_way_of_building_texts_redoes_the_vectors(small, cortex, tiny_model):
    cortex.index(model=tiny_model)
    con = open_writer(cortex.db)
    con.execute("update meta set value = '1' where key = 'embed_text_version'")
    con.execute("update items set text_hash = 'stale'")
    summary = cortex.index()
    assert summary.model_replaced == tiny_model and summary.items_without_vector == 0
    assert cortex.reader().execute("select count(*) from items where text_hash = 'stale'").get == 0


def test_items_with_nothing_to_place_are_not_retried(repo, cortex, tiny_model):
    for n in range(10):
        if n % 3 != 2:
            repo.write("a.py", f"x = {n}\n")
        # "zzz qqq": no known word (an all-zero vector) and no file (no structural link)
        repo.commit(["timeout deadline", "cache memo", "zzz qqq"][n % 3], days_ago=20 - n,
                    allow_empty=n % 3 == 2)
    cortex.index(model=tiny_model)
    con = cortex.reader()
    assert con.execute("select count(*) from items where cluster = -1").get == 3
    assert con.execute("select count(*) from items where cluster is null").get == 0
    repo.write("a.py", "x = 99\n")
    repo.commit("cache again", days_ago=1)
    assert cortex.index().areas is None
    assert cortex.reader().execute("select count(*) from items where cluster is null").get == 0
