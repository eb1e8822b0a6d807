"""Memory: items, embeddings, hybrid search with bounded priors, notes, areas, related commits.

Real repositories, real SQLite stores and a real (tiny) model2vec model: see tiny_model.py.
"""

from __future__ import annotations

import json

import pytest

from cortex_core.index.areas import areas
from cortex_core.index.memory import compact_lexical, insert_item
from cortex_core.memory.embeddings import load_embedder
from cortex_core.errors import CortexError, NotFound
from cortex_core.memory.notes import (add_note, export_notes, import_notes, list_notes,
                                      supersede_note)
from cortex_core.query.related_commits import related_commits
from cortex_core.memory.tokens import path_words
from cortex_core.memory.search import (MAX_BOOST, Focus, PriorWeights, SearchOptions, build_focus,
                                       search)
from cortex_core.query.status import status
from cortex_core.store.store import open_writer
from cortex_core.git.workspace import Workspace
from conftest import Indexed


@pytest.fixture
def topics(repo):
    """Two topics a model can tell apart: timeouts (client.py) and caching (cache.py)."""
    repo.write("client.py", "def fetch(url):\n    return get(url)\n")
    repo.write("cache.py", "def lookup(key):\n    return table[key]\n")
    repo.commit("Add fetch client and lookup table", days_ago=300)
    repo.write("client.py", "def fetch(url):\n    return get(url, timeout=30)\n")
    repo.commit("Fix timeout in fetch\n\nThe request could hang forever; set a deadline.",
                days_ago=200)
    repo.write("cache.py", "def lookup(key):\n    return memo(table, key)\n")
    repo.commit("Memoize lookups with an lru cache", days_ago=100)
    repo.write("cache.py", "def lookup(key):\n    return memo(table, key, ttl=5)\n")
    repo.commit("Fix stale cache eviction", days_ago=50)
    repo.write("README.md", "# Client\n\nThe client waits with a deadline.\n\n"
                            "# Cache\n\nLookups are memoized in an lru cache.\n")
    repo.commit("docs: describe client and cache", days_ago=20)
    repo.write("client.py", "def fetch(url, retries=3):\n    return get(url, timeout=30)\n")
    repo.write("cache.py", "def lookup(key):\n    return memo(table, key, ttl=10)\n")
    repo.write("auth.py", "def login(user):\n    return session(user)\n")
    repo.commit("Several changes\n\n- Add retry with backoff to fetch in client.py\n"
                "- Longer cache eviction ttl in cache.py\n- Add login session in auth.py\n"
                "- More retry attempts for fetch", days_ago=5)
    return repo


@pytest.fixture
def indexed(topics, cortex, tiny_model):
    cortex.index(model=tiny_model)
    return cortex


def hits_of(con, query, embedder=None, **options):
    return search(con, query, SearchOptions(**options), embedder=embedder).hits


# -- items and embeddings ------------------------------------------------------------------------


def test_indexing_makes_items_with_vectors_and_says_which_model(topics, cortex, tiny_model):
    summary = cortex.index(model=tiny_model)
    assert summary.semantic.startswith(f"on: {tiny_model}")
    assert summary.items_without_vector == 0
    con = cortex.reader()
    kinds = dict(con.execute("select kind, count(*) from items group by kind"))
    # 6 commits, the last one split into a head segment and 4 items; 2 README sections
    assert kinds == {"commit": 6 + 4, "doc": 2}
    state = status(con, cortex.db).memory
    assert state.semantic and state.model == tiny_model and state.without_vector == 0
    assert con.execute("select value from meta where key = 'embed_dim'").get == "16"


def test_identical_texts_are_embedded_once(repo, cortex, tiny_model):
    for n in range(3):
        repo.write("a.py", f"x = {n}\n")
        repo.commit("Fix timeout", days_ago=10 - n)
    summary = cortex.index(model=tiny_model)
    con = cortex.reader()
    assert con.execute("select count(*) from items").get == 3
    assert con.execute("select count(distinct vector_id) from items").get == 1
    assert summary.texts_embedded == 1


@pytest.mark.parametrize("model_fixture", ["tiny_model", "tiny_wordpiece_model"])
def test_an_update_embeds_its_few_texts_without_model2vec(topics, cortex, model_fixture,
                                                          request):
    """A one-commit update embeds with the query path (only its tokens' rows; a fresh process
    imports no model2vec, nor scipy) and stores model2vec's own vectors."""
    import subprocess
    import sys

    import numpy as np

    from cortex_core.memory import embeddings
    model = request.getfixturevalue(model_fixture)
    cortex.index(model=model)
    topics.write("client.py", "def fetch(url):\n    return get(url, timeout=60)\n")
    topics.commit("Raise the deadline of slow fetches; café retry (naïve)", days_ago=1)
    code = ("import sys; from pathlib import Path; from cortex_core.config import Settings; "
            "from cortex_core.index.ingest import index_repository as run; "
            f"s = run(Path({str(topics.path)!r}), Path({str(cortex.db)!r}), Settings(), "
            f"model={model!r}); print(s.texts_embedded, 'model2vec' in sys.modules, "
            "'scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    # Nor scipy: a new item joins the nearest area (spectral.assign needs numpy only).
    assert out.stdout.split() == ["1", "False", "False"]
    con = cortex.reader()
    text_hash, blob = con.execute(
        "select v.text_hash, e.embedding from items i join vectors v on v.id = i.vector_id"
        " join item_vectors e on e.rowid = v.id where i.title like 'Raise the deadline%'"
    ).fetchone()
    title, body, kind, segment = con.execute(
        "select title, body, kind, segment from items where text_hash = ?", (text_hash,)
    ).fetchone()
    from cortex_core.index.memory import embed_text
    embeddings._LOADED.pop(model, None)
    expected = embeddings.load_model(model).encode([embed_text(kind, segment, title, body)])[0]
    np.testing.assert_allclose(np.frombuffer(blob, np.float32), expected, atol=1e-6)


def test_another_model_replaces_every_vector(indexed, other_tiny_model, tiny_model):
    con = indexed.reader()
    items = con.execute("select count(*) from items").get
    summary = indexed.index(model=other_tiny_model)
    assert summary.model_replaced == tiny_model
    con = indexed.reader()
    assert con.execute("select value from meta where key = 'embed_dim'").get == "8"
    assert con.execute("select count(*) from items where vector_id is null").get == 0
    sql = con.execute("select sql from sqlite_master where name = 'item_vectors'").get
    assert "float[8]" in sql
    hits = hits_of(con, "deadline", load_embedder(con), mode="vector")
    assert hits, "the new vectors answer queries"
    assert items == con.execute("select count(*) from items").get


def test_without_a_model_search_is_lexical_and_says_so(topics, cortex):
    summary = cortex.index(model="cortex-test/not-downloaded")
    assert summary.semantic.startswith("off:") and "cortex model pull" in summary.semantic
    con = cortex.reader()
    state = status(con, cortex.db).memory
    assert not state.semantic and "lexical search only" in state.semantic_note
    result = search(con, "timeout", SearchOptions(), embedder=load_embedder(con))
    assert result.mode == "lexical" and "semantic search off" in result.note
    assert result.hits[0].title == "Fix timeout in fetch"
    with pytest.raises(CortexError, match="embedding model"):
        search(con, "timeout", SearchOptions(mode="vector"), embedder=None)


def test_a_search_says_when_the_newest_commits_have_no_text_yet(repo, cortex):
    """A run killed after its commits, before its memory step, left searches saying "nothing
    matched" as if the whole history had been searched (found by a review)."""
    import apsw
    from cortex_core.index.memory import delete_items
    repo.write("a.py", "def fetch():\n    return 1\n")
    repo.commit("Fix timeout in fetch", days_ago=2)
    repo.write("a.py", "def fetch():\n    return 2\n")
    repo.commit("Retry the upload on a reset connection", days_ago=1)
    cortex.index(model="none")
    assert search(cortex.reader(), "upload", SearchOptions()).note == (
        "semantic search off: no embedding model; lexical ranking only")
    con = apsw.Connection(str(cortex.db))   # as a run stopped before its memory step leaves it
    with con:
        delete_items(con, "commit_id = (select max(id) from commits)", ())
    con.close()
    found = search(cortex.reader(), "upload", SearchOptions())
    assert found.hits == []
    assert found.note.endswith("; 1 of the newest commits has no searchable text yet (an index "
                               "run stopped before its memory step, or is still running; the "
                               "next one adds it)")
    # The engine's search (the CLI's and MCP's) says why vectors are off and keeps the rest (a
    # review found the note replaced by the reason alone).
    from cortex_core.api import SearchRequest
    from cortex_core.engine import Engine
    with Engine.open(repo.path, db=cortex.db) as engine:
        said = engine.run(SearchRequest("upload")).note
    assert said.startswith("semantic search off") and said.endswith("the next one adds it)")
    cortex.index(model="none")
    found = search(cortex.reader(), "upload", SearchOptions())
    assert found.hits and "searchable" not in found.note


def test_model_none_turns_vectors_off(indexed):
    summary = indexed.index(model="none")
    assert summary.semantic == "off: model = none"
    con = indexed.reader()
    assert load_embedder(con) is None
    assert not con.execute("select 1 from sqlite_master where name = 'item_vectors'").fetchone()
    assert "turned off" in status(con, indexed.db).memory.semantic_note


# -- search -----------------------------------------------------------------------------------------


def test_vectors_find_what_words_miss(indexed):
    con = indexed.reader()
    embedder = load_embedder(con)
    assert hits_of(con, "stall", mode="lexical") == []
    hits = hits_of(con, "stall", embedder)           # same topic as timeout / deadline / hang
    assert hits[0].why.lexical_rank is None and hits[0].why.vector_rank == 1
    assert any("timeout" in h.title.lower() or "deadline" in h.text for h in hits[:3])


def test_code_aware_words_and_paths_match(repo, cortex):
    repo.write("src/http_client/retry-policy.py", "x = 1\n")
    repo.commit("Speed up getUserById", days_ago=3)
    repo.write("other.py", "y = 1\n")
    repo.commit("Unrelated change", days_ago=2)
    cortex.index(model="none")
    con = cortex.reader()
    assert [h.title for h in hits_of(con, "get user by id")] == ["Speed up getUserById"]
    assert [h.title for h in hits_of(con, "getUserById")] == ["Speed up getUserById"]
    assert [h.title for h in hits_of(con, "retry policy")] == ["Speed up getUserById"]


def test_a_long_run_leaves_each_lexical_index_merged_whole(repo, cortex):
    """Each item's id is its lexical rows' id, and after many items (here written in twelve
    transactions: a segment each), each index is merged into one segment, answering as
    before."""
    repo.write("a.py", "x = 1\n")
    repo.commit("Start", days_ago=3)
    cortex.index(model="none")
    con = open_writer(cortex.db)
    ids = []
    for start in range(0, 1_200, 100):
        with con:
            ids += [insert_item(con, kind="doc", title=f"Section {n} about widgets",
                                body=f"gadget{n % 7} sprocket", time=n, signal=None,
                                code_words=f"makeWidget{n % 5}") for n in range(start, start + 100)]
    assert all(con.execute(f"select count(distinct segid) from {table}_idx").get > 1
               for table in ("items_fts", "items_code"))
    assert [con.execute("select title from items_fts where rowid = ?", (i,)).get
            for i in ids[::97]] == [f"Section {n} about widgets" for n in range(0, 1_200, 97)]
    queries = ("widgets", "gadget3", "sprocket")

    def answers():
        return [[r for (r,) in con.execute("select rowid from items_fts where items_fts match ?"
                                           " order by rank, rowid", (q,))] for q in queries] + \
            [[r for (r,) in con.execute("select rowid from items_code where items_code match ?"
                                        " order by rank, rowid", ("makewidget2",))]]

    before = answers()
    assert not compact_lexical(con, 999)     # too few to be worth a merge
    with con:
        assert compact_lexical(con, 1_200)
    for table in ("items_fts", "items_code"):
        assert con.execute(f"select count(distinct segid) from {table}_idx").get == 1
    assert answers() == before and len(before[0]) == 1_200


def test_a_big_commit_keeps_its_exact_title_match(repo, cortex):
    """FTS5 divides a match by the length of its whole row: a commit's every path once buried an
    exact title under commits sharing two words with the query (fastapi's docs setup, 643 files).
    A few path words are kept; the words still find the file."""
    repo.write("docs/en/index.md", "start\n")
    repo.commit("Update docs index", days_ago=30)
    repo.write("plugins.cfg", "x = 1\n")
    repo.commit("Add plugins to the docs setup", days_ago=20)
    for n in range(300):
        repo.write(f"docs/lang{n}/docs/tutorial/page{n}.md", f"page {n}\n")
    repo.commit("Update docs setup with latest configs and plugins", days_ago=10)
    cortex.index(model="none")
    con = cortex.reader()
    hits = hits_of(con, "Update docs setup with latest configs and plugins", kinds=("commit",))
    assert hits[0].title == "Update docs setup with latest configs and plugins"
    assert hits[0].why.lexical_rank == 1
    assert max(len(p.split()) for (p,) in con.execute("select paths from items_fts")) <= 8
    assert max(len(p.split()) for (p,) in con.execute("select paths from items_code")) > 8
    assert [h.title for h in hits_of(con, "plugins cfg", kinds=("commit",))][0] == \
        "Add plugins to the docs setup"


def test_a_file_name_finds_a_commit_of_many_files(repo, cortex):
    """The message's table keeps 8 path words; the code's keeps the rest of a commit's file
    names, so a name past the first eight still finds it (a review found `proxies` returning
    nothing for a commit of 21 files, and a deep path hiding its own file's name)."""
    repo.write("src/client/base.py", "x = 0\n")
    repo.commit("Start the client", days_ago=40)
    for n in range(18):
        repo.write(f"src/client/part{n:02d}.py", f"x = {n}\n")
    for name in ("proxies.py", "timeouts.py", "zz_retry_policy.py"):
        repo.write(f"src/client/{name}", "\n")
    repo.commit("Split the client into modules", days_ago=30)
    repo.write("src/main/resources/com/example/app/config/prod/ratelimits.yml", "limit: 1\n")
    repo.commit("Configure production", days_ago=20)
    repo.write("src/client/other.py", "y = 1\n")
    repo.commit("Other change in py", days_ago=10)
    cortex.index(model="none")
    con = cortex.reader()
    for query in ("proxies", "timeouts.py", "zz_retry_policy"):
        assert [h.title for h in hits_of(con, query, kinds=("commit",))][:1] == \
            ["Split the client into modules"], query
    assert [h.title for h in hits_of(con, "ratelimits.yml", kinds=("commit",))][:1] == \
        ["Configure production"]


def test_a_file_name_typed_decomposed_or_composed_finds_its_commit(repo, cortex):
    repo.write("docs/re\u0301sume\u0301.md", "cv\n")      # as a Mac stores it: NFD
    repo.commit("Add the cv", days_ago=3)
    repo.write("other.md", "x\n")
    repo.commit("Add another page", days_ago=2)
    cortex.index(model="none")
    con = cortex.reader()
    for query in ("re\u0301sume\u0301", "r\u00e9sum\u00e9"):
        assert [h.title for h in hits_of(con, query, kinds=("commit",))] == ["Add the cv"], query


def test_path_words_are_the_first_distinct_words_of_the_sorted_paths():
    assert path_words(["src/http_client/x.py", "src/http_client/Retry-Policy.py"]) == \
        "src http client retry policy py x"
    assert path_words([f"d{n}/f{n}.py" for n in range(10)]) == "d0 f0 py d1 f1 d2 f2 d3"
    assert path_words(["b/y.py", "a/x.py"]) == path_words(["a/x.py", "b/y.py"])
    assert path_words(["docs/re\u0301sume\u0301.md"]) == "docs r\u00e9sum\u00e9 md"
    assert path_words([]) == ""


@pytest.mark.parametrize("version", ["7", "8"])
def test_a_store_of_schema_7_gets_its_path_words(repo, cortex, version):
    """Migration 9 makes the code's table again with a paths column, and writes both tables'
    path words from the items' files; a store of schema 8 (items_fts cut, the code's table of
    two columns) gets the same."""
    repo.write("a.py", "def f():\n    return 1\n")
    repo.write("notes/z.txt", "z\n")
    repo.commit("Two files", days_ago=2)
    cortex.index(model="none")
    con = open_writer(cortex.db)
    with con:   # the tables as schema 7 had them
        con.execute("""
            create virtual table items_code_7 using fts5(symbols, code,
                tokenize = 'porter unicode61 remove_diacritics 2');
            insert into items_code_7(rowid, symbols, code) select rowid, symbols, code
                from items_code;
            drop table items_code;
            alter table items_code_7 rename to items_code;
            update items_fts set paths = 'notes/z.txt a.py';
            alter table commits drop column order_time;
        """)
        con.execute("update meta set value = ? where key = 'schema_version'", (version,))
    con.close()
    cortex.index(model="none")
    con = cortex.reader()
    assert {p for (p,) in con.execute("select paths from items_fts")} == {"a py notes z txt"}
    assert {p for (p,) in con.execute("select paths from items_code")} == {"a py notes z txt"}
    assert [h.title for h in hits_of(con, "z.txt")] == ["Two files"]


def test_filters_kind_since_and_path(indexed, topics):
    con = indexed.reader()
    embedder = load_embedder(con)
    assert {h.kind for h in hits_of(con, "cache", embedder, kinds=("doc",))} == {"doc"}
    recent = hits_of(con, "cache", embedder, since=topics.now - 60 * 86400)
    assert recent and all(h.time >= topics.now - 60 * 86400 for h in recent)
    in_cache = hits_of(con, "fix", embedder, path="cache.py", top_k=20)
    assert in_cache and all("cache.py" in h.files for h in in_cache)
    with pytest.raises(CortexError, match="unknown kind"):
        hits_of(con, "x", kinds=("tweet",))


def test_one_segment_of_a_commit_unless_asked_for_more(indexed):
    con = indexed.reader()
    query = "fetch retry cache login session"
    for per_commit in (1, 2):
        hits = hits_of(con, query, load_embedder(con), top_k=20, per_commit=per_commit)
        shas = [h.sha for h in hits if h.kind == "commit"]
        assert max(shas.count(s) for s in set(shas)) == per_commit
    assert hits_of(con, query, load_embedder(con), top_k=20) == \
        hits_of(con, query, load_embedder(con), top_k=20, per_commit=1)


def test_priors_never_overturn_a_clearly_better_match(indexed):
    con = indexed.reader()
    embedder = load_embedder(con)
    for query in ("timeout", "cache eviction", "fix", "lookup memo", "retry fetch"):
        hits = hits_of(con, query, embedder, top_k=20, per_source=99, per_commit=99)
        for better, worse in zip(hits, hits[1:]):
            assert better.why.score >= worse.why.score
            assert better.why.boost <= MAX_BOOST + 1e-9
        for i, a in enumerate(hits):
            for b in hits[i + 1:]:
                assert not b.why.fused > (1 + MAX_BOOST) * a.why.fused, (query, a, b)


def test_recency_and_signal_reorder_near_equals(repo, cortex):
    repo.write("a.py", "x = 1\n")
    repo.commit("chore: tidy the timeout", days_ago=400)
    repo.write("a.py", "x = 2\n")
    repo.commit("fix: tidy the timeout", days_ago=400)
    repo.write("a.py", "x = 3\n")
    repo.commit("tidy the timeout", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    titles = [h.title for h in hits_of(con, "tidy timeout")]
    assert titles[0] == "tidy the timeout"                               # recency
    assert titles.index("fix: tidy the timeout") < titles.index("chore: tidy the timeout")
    plain = [h.title for h in hits_of(con, "tidy timeout", priors=False)]
    assert all(h.why.boost == 0 for h in hits_of(con, "tidy timeout", priors=False))
    assert sorted(plain) == sorted(titles)


def test_context_boosts_the_focus_and_your_changes(indexed):
    con = indexed.reader()
    embedder = load_embedder(con)
    focus = build_focus(con, "cache.py::lookup")
    hits = search(con, "fix", SearchOptions(focus=focus), embedder=embedder).hits
    assert hits[0].title == "Fix stale cache eviction"
    assert "about the focus symbol" in hits[0].why.context_reasons
    ws = Workspace("feature/stale-eviction", ("client.py",), (), ())
    focus = build_focus(con, None, ws)
    assert focus.branch_terms == ("stale", "eviction")
    hits = search(con, "fix", SearchOptions(focus=focus), embedder=embedder).hits
    top = hits[0]
    assert top.why.context > 0 and top.why.context_reasons
    off = search(con, "fix", SearchOptions(focus=focus, context=False), embedder=embedder).hits
    assert all(h.why.context == 0 for h in off)


def test_every_hit_explains_itself_and_cites(indexed):
    con = indexed.reader()
    for hit in hits_of(con, "cache", load_embedder(con)):
        assert hit.why is not None and hit.why.score > 0
        assert hit.why.lexical_rank is not None or hit.why.vector_rank is not None
        if hit.kind == "commit":
            assert hit.citation == hit.sha[:10]
        elif hit.kind == "doc":
            assert hit.citation == f"README.md:{hit.line}"


# -- notes --------------------------------------------------------------------------------------


def writer(cortex):
    return open_writer(cortex.db)


def test_notes_are_searchable_and_superseded_ones_disappear(indexed, topics):
    con = writer(indexed)
    note = add_note(con, topics.path, "cache.py::lookup", "The ttl must stay below the eviction "
                    "window: see incident 42.", author="Ann")
    assert note.target == "cache.py::lookup" and note.live and not note.stale
    hits = hits_of(con, "incident window", load_embedder(con))
    assert hits[0].kind == "note" and hits[0].citation == f"note #{note.id}"
    newer = supersede_note(con, topics.path, note.id, "The ttl is now configurable.")
    assert [n.id for n in list_notes(con, topics.path)] == [newer.id]
    closed = list_notes(con, topics.path, include_closed=True)
    assert [(n.id, n.superseded_by) for n in closed] == [(newer.id, None), (note.id, newer.id)]
    assert not [h for h in hits_of(con, "incident window", top_k=50) if h.note_id == note.id]
    with pytest.raises(CortexError, match="already superseded"):
        supersede_note(con, topics.path, note.id, "again")


def test_a_note_goes_stale_when_its_code_changes(indexed, topics):
    con = writer(indexed)
    note = add_note(con, topics.path, "client.py::fetch", "Callers rely on the 30 s timeout.")
    file_note = add_note(con, topics.path, "auth.py", "Sessions are per user.")
    repo_note = add_note(con, topics.path, None, "We support Python 3.11+.")
    topics.write("client.py", "def fetch(url, retries=3):\n    return get(url, timeout=60)\n")
    sha = topics.commit("Raise the timeout", days_ago=1)
    indexed.index()
    con = indexed.reader()
    by_id = {n.id: n for n in list_notes(con, topics.path)}
    assert by_id[note.id].stale and by_id[note.id].changed_by.sha == sha
    assert "changed since the note" in by_id[note.id].stale_reason
    assert not by_id[file_note.id].stale and not by_id[repo_note.id].stale
    assert by_id[repo_note.id].target == ""


def test_notes_on_unknown_targets_are_refused(indexed, topics):
    con = writer(indexed)
    with pytest.raises(NotFound, match="no symbol 'nope'"):
        add_note(con, topics.path, "client.py::nope", "text")
    with pytest.raises(CortexError, match="needs some text"):
        add_note(con, topics.path, "client.py", "   ")


def test_notes_survive_export_import_and_rebuild(indexed, topics, tmp_path):
    con = writer(indexed)
    first = add_note(con, topics.path, "cache.py::lookup", "Keep lookups pure.")
    supersede_note(con, topics.path, first.id, "Lookups may read the clock.")
    exported = export_notes(con)
    assert len(exported["notes"]) == 2
    summary = indexed.index(rebuild=True)
    assert summary.rebuilt
    con = indexed.reader()
    kept = list_notes(con, topics.path, include_closed=True)
    assert [n.text for n in kept] == ["Lookups may read the clock.", "Keep lookups pure."]
    assert kept[1].superseded_by == kept[0].id
    assert con.execute("select count(*) from items where kind = 'note'").get == 1
    # into another store: added once, a second import adds nothing
    from cortex_core.config import Settings
    from cortex_core.index.ingest import index_repository
    other = tmp_path / "other.db"
    index_repository(topics.path, other, Settings(), model="none")
    con2 = open_writer(other)
    with con2:
        assert import_notes(con2, json.loads(json.dumps(exported))) == 2
    with con2:
        assert import_notes(con2, exported) == 0


@pytest.mark.parametrize("bad, message", [
    ({"notes": "x"}, "not a Cortex notes export"),
    ({"cortex_notes": 9, "notes": []}, "unsupported notes export version"),
    ({"notes": [{"id": 1}]}, "missing 'target'"),
    ({"notes": [{"id": 1, "target": "", "text": "t", "valid_from": "yesterday",
                 "recorded_at": 1}]}, "'valid_from' has the wrong type"),
])
def test_bad_imports_are_clear_errors(indexed, bad, message):
    con = writer(indexed)
    with pytest.raises(CortexError, match=message):
        with con:
            import_notes(con, bad)
    assert con.execute("select count(*) from notes").get == 0


# -- areas and related commits ----------------------------------------------------------------


def test_areas_separate_the_topics(repo, cortex, tiny_model):
    for n in range(6):
        repo.write("client.py", f"def fetch():\n    return {n}\n")
        repo.commit(["Fix timeout", "Deadline for slow requests", "Stall when latency is high",
                     "Hang on waiting", "Timeouts on slow hosts", "Latency deadline"][n],
                    days_ago=60 - n)
        repo.write("cache.py", f"def lookup():\n    return {n}\n")
        repo.commit(["Memoize lookups", "Cache eviction", "Lru caching", "Stale memo entries",
                     "Caches grow", "Eviction of memoized values"][n], days_ago=59.5 - n)
    cortex.index(model=tiny_model)
    con = cortex.reader()
    found = areas(con)
    assert len(found) >= 2
    by_title = dict(con.execute("select c.subject, i.cluster from items i join commits c"
                                " on c.id = i.commit_id"))
    assert by_title["Fix timeout"] == by_title["Hang on waiting"]
    assert by_title["Memoize lookups"] == by_title["Cache eviction"]
    assert by_title["Fix timeout"] != by_title["Memoize lookups"]
    top = next(a for a in found if a.id == by_title["Memoize lookups"])
    assert top.paths[0] == "cache.py" and top.commits >= 6 and top.first_time <= top.last_time
    # a new commit joins an area without re-clustering everything
    repo.write("cache.py", "def lookup():\n    return 99\n")
    repo.commit("Memoize more", days_ago=1)
    summary = cortex.index()
    assert summary.areas is None
    con = cortex.reader()
    assert con.execute("select i.cluster from items i join commits c on c.id = i.commit_id"
                       " where c.subject = 'Memoize more'").get == by_title["Memoize lookups"]


def test_related_commits_by_sha_and_by_symbol(indexed, topics):
    con = indexed.reader()
    embedder = load_embedder(con)
    sha = con.execute("select sha from commits where subject = 'Fix timeout in fetch'").get
    found = related_commits(con, sha[:8], embedder=embedder)
    assert found.touching[0].commit.sha == sha
    assert sha not in [r.commit.sha for r in found.similar]
    assert all(r.similarity is not None for r in found.similar)
    by_symbol = related_commits(con, "cache.py::lookup", embedder=embedder)
    assert [r.commit.subject for r in by_symbol.touching][:2] == \
        ["Several changes", "Fix stale cache eviction"]
    with pytest.raises(NotFound):
        related_commits(con, "nope.py::x")


def test_focus_defaults_to_nothing():
    assert Focus().empty


def test_a_commit_is_found_by_the_code_it_changed(repo, cortex):
    """A name that only the diff holds finds the commit; a document's lines are no code."""
    repo.write("net.py", "def connect(host):\n    return open_socket(host)\n")
    repo.commit("Initial network module", days_ago=30)
    repo.write("net.py", "def connect(host):\n    return open_socket(host, negotiate_keepalive=True)\n")
    repo.commit("Keep connections alive", days_ago=20)
    repo.write("CHANGES.md", "- calibrate flux capacitor\n")
    repo.commit("Update the changelog", days_ago=10)
    cortex.index(model="none")
    con = cortex.reader()
    hits = hits_of(con, "negotiate keepalive", kinds=("commit",))
    assert [h.title for h in hits] == ["Keep connections alive"]
    assert hits[0].why.code_bm25 and hits[0].why.text_bm25 is None
    assert hits_of(con, "flux capacitor", kinds=("commit",)) == []


def test_a_merge_is_found_by_the_code_it_brought(repo, cortex):
    repo.write("net.py", "def connect(host):\n    return host\n")
    repo.commit("Initial network module", days_ago=30)
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("net.py", "def connect(host):\n    return tunnel_through_proxy(host)\n")
    repo.commit("Work in progress", days_ago=20)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge pull request #42 from ann/feature", "feature")
    cortex.index(model="none")
    con = cortex.reader()
    titles = [h.title for h in hits_of(con, "tunnel through proxy", kinds=("commit",))]
    assert sorted(titles) == ["Merge pull request #42 from ann/feature", "Work in progress"]


def test_a_commit_head_is_searched_by_its_whole_message(repo, cortex):
    """Words from two list items of one message meet in its head segment."""
    repo.write("a.py", "x = 1\n")
    repo.commit("Several changes\n\n- Add jitter to the backoff\n- Cap the pool at forty",
                days_ago=3)
    cortex.index(model="none")
    hits = hits_of(cortex.reader(), "jitter pool", kinds=("commit",), per_commit=3)
    assert (hits[0].title, hits[0].segment) == ("Several changes", 0)
    assert hits[0].why.lexical_rank == 1 and hits[1].why.lexical_rank > 1
    assert [h.segment for h in hits_of(cortex.reader(), "jitter pool", kinds=("commit",))] == [0]


# -- what a server keeps, and what search reads first ---------------------------------------------


def _answers(topics, db, keep: bool) -> list:
    from cortex_core.engine import Engine
    with Engine.open(topics.path, db=db, keep_vectors=keep) as engine, engine.snapshot() as snap:
        assert (engine.vectors(snap.con) is not None) == keep
        return [[(h.item_id, h.why.lexical_rank, h.why.vector_rank, round(h.why.fused, 9))
                 for h in snap.search(query, mode=mode, workspace=False, top_k=20).hits]
                for query in ("stall", "cache eviction", "login session", "fix")
                for mode in ("vector", "hybrid")]


def test_vectors_kept_in_memory_rank_as_sqlite_vec_does(indexed, topics):
    """A server keeps the embeddings in memory (memory/vector_matrix.py): the same hits, ranks
    and scores as sqlite-vec's."""
    from_store = _answers(topics, indexed.db, keep=False)
    assert sum(map(bool, from_store)) >= 6
    assert from_store == _answers(topics, indexed.db, keep=True)


def test_vectors_kept_in_memory_follow_the_index(indexed, topics, tiny_model):
    from cortex_core.engine import Engine
    with Engine.open(topics.path, db=indexed.db, keep_vectors=True) as engine:
        with engine.snapshot() as snap:
            before = engine.vectors(snap.con)
            assert engine.vectors(snap.con) is before        # kept, not read again
        topics.write("cache.py", "def lookup(key):\n    return memo(table, key, ttl=1)\n")
        topics.commit("Shorter cache timeout for lookups", days_ago=1)
        indexed.index(model=tiny_model)
        with engine.snapshot() as snap:
            after = engine.vectors(snap.con)
            assert len(after.ids) == len(before.ids) + 1
        # An indexer from before the vectors' token removes a vector and leaves the token.
        con = writer(indexed)
        with con:
            last = con.execute("select max(id) from vectors").fetchone()[0]
            con.execute("delete from item_vectors where rowid = ?", (last,))
            con.execute("delete from vectors where id = ?", (last,))
            con.execute("update items set vector_id = null where vector_id = ?", (last,))
        con.close()
        with engine.snapshot() as snap:
            assert len(engine.vectors(snap.con).ids) == len(after.ids) - 1
    assert _answers(topics, indexed.db, keep=False) == _answers(topics, indexed.db, keep=True)


def test_lexical_candidates_do_not_depend_on_how_many_are_read_first(indexed, topics):
    """_bm25 filters the index's best matches, and reads every match when too few pass."""
    from cortex_core.memory.search import _bm25, _Filters
    from cortex_core.memory.tokens import fts_query
    con = writer(indexed)
    expression = fts_query("fix cache fetch timeout retry lookup client deadline docs")
    # Commits gone from the history (as after a rebase) never pass the filters, even with none
    # asked for: make two of the best matches such commits.
    best = [r[0] for r in con.execute("select rowid from items_fts where items_fts match ?"
                                      " order by rank limit 3", (expression,))]
    with con:
        con.execute("update commits set reachable = 0 where id in (select commit_id from items"
                    " where id in (?, ?))", best[1:3])
    columns = SearchOptions().weights.text_columns
    for options in (SearchOptions(), SearchOptions(kinds=("doc",)),
                    SearchOptions(path="cache.py")):
        filters = _Filters(options, con)
        every = _bm25(con, "items_fts", columns, expression, filters, candidates=3,
                      overfetch=10_000)
        assert every, options
        for overfetch in (1, 2, 3, 5, 8):
            assert _bm25(con, "items_fts", columns, expression, filters, candidates=3,
                         overfetch=overfetch) == every, (options, overfetch)
    assert not set(best[1:3]) & set(_bm25(con, "items_fts", columns, expression,
                                          _Filters(SearchOptions(), con), overfetch=10_000))


def test_kept_vectors_break_ties_by_rowid_and_skip_what_they_cannot_hold(indexed):
    import numpy as np
    from cortex_core.memory.vector_matrix import VectorMatrix, load
    same = np.tile(np.array([[0.6, 0.8]], dtype=np.float32), (4, 1))
    matrix = VectorMatrix(np.array([2, 3, 5, 9]), np.vstack([same, [[1.0, 0.0]]])[[0, 1, 2, 4]])
    query = np.array([0.6, 0.8], dtype=np.float32).tobytes()
    assert [rowid for rowid, _ in matrix.nearest(query, 2)] == [2, 3]    # ties at the cut
    assert matrix.nearest(query, 9)[0] == (2, 0.0) and len(matrix.nearest(query, 9)) == 4
    assert matrix.nearest(np.zeros(2, dtype=np.float32).tobytes(), 3) == []
    assert matrix.nearest(np.array([np.nan, 1], dtype=np.float32).tobytes(), 3) == []
    con = indexed.reader()
    assert load(con, max_bytes=64) is None                                 # too large to keep
    kept = load(con)
    assert kept is not None and np.allclose(np.linalg.norm(kept.unit, axis=1), 1.0)


def test_a_rebuild_keeps_the_model_the_user_chose(topics, cortex, tiny_model, monkeypatch):
    monkeypatch.delenv("CORTEX_MODEL", raising=False)
    assert cortex.index(model=tiny_model).semantic.startswith(f"on: {tiny_model}")
    assert cortex.index(rebuild=True).semantic.startswith(f"on: {tiny_model}")


def test_the_context_of_candidates_that_cannot_reach_the_top_k_is_not_read(repo, cortex,
                                                                          monkeypatch):
    """With a focus, only candidates whose best possible score can still reach the top k have
    their files, symbols and text read; the hits are those of reading every candidate."""
    import cortex_core.memory.search as memory_search
    for i in range(40):
        repo.write(f"m{i}.py", f"def parse_{i}(text):\n    return text[{i}:]\n")
        repo.commit(f"Fix parser edge case {i}" + " parser" * (i % 7), days_ago=400 - 9 * i)
    cortex.index()
    con = writer(cortex)
    read: list[int] = []
    real = memory_search._focus_data

    def counted(con, items, text):
        read.extend(items)
        return real(con, items, text)

    monkeypatch.setattr(memory_search, "_focus_data", counted)
    focuses = [build_focus(con, "m3.py"), build_focus(con, "m39.py::parse_39"),
               Focus(branch_terms=("edge",)), Focus(changed_file_ids=frozenset({1, 2, 3}))]
    # Priors may make a score negative (weights set in code): the bound must stay above it.
    negative = PriorWeights(recency=0.0, signal=-5.0, context=0.15, area=0.0)
    for focus, weights in [(f, PriorWeights()) for f in focuses] + [(focuses[1], negative)]:
        for top_k in (1, 3, 10, 45):
            options = SearchOptions(focus=focus, top_k=top_k, prior_weights=weights)
            monkeypatch.setattr(memory_search, "CONTEXT_BATCH", 10_000)   # every candidate
            read.clear()
            every = search(con, "fix parser edge case", options)
            candidates = len(read)
            monkeypatch.setattr(memory_search, "CONTEXT_BATCH", 2)
            read.clear()
            bounded = search(con, "fix parser edge case", options)
            assert bounded.hits == every.hits, (focus, top_k)
            assert candidates >= 40 and len(set(read)) == len(read)
            if top_k <= 3:
                assert len(read) < candidates, (focus, top_k)


def test_a_tie_across_a_batch_of_contexts_is_broken_as_before_when_scores_are_negative(
        repo, cortex, monkeypatch):
    """Equal candidates, priors that make every score negative (weights set in code), the two
    newest about the focus: the newest wins the tie (by time) even when its context is read in
    a later batch than the other's."""
    import cortex_core.memory.search as memory_search
    for i in range(6):
        repo.write(f"m{i}.py", f"def parse_{i}(text):\n    return text\n")
        repo.commit("Fix parser", days_ago=60 - i)
    cortex.index()
    con = writer(cortex)
    symbols = frozenset(r[0] for r in con.execute(
        "select id from symbols where qualname in ('parse_4', 'parse_5')"))
    negative = PriorWeights(recency=0.0, signal=-5.0, context=0.15, area=0.0)
    options = SearchOptions(focus=Focus(symbol_ids=symbols), top_k=1, prior_weights=negative,
                            mode="lexical")
    monkeypatch.setattr(memory_search, "CONTEXT_BATCH", 10_000)
    every = search(con, "fix parser", options).hits
    assert [h.title for h in every] == ["Fix parser"] and every[0].why.context == 1.0
    for batch in range(1, 7):
        monkeypatch.setattr(memory_search, "CONTEXT_BATCH", batch)
        assert search(con, "fix parser", options).hits == every, batch


def test_hits_found_by_meaning_alone_say_so(indexed):
    """Vectors find neighbours of any word, one the history never used included: a review found
    a made-up word answered with three confident-looking hits and no note."""
    con = indexed.reader()
    embedder = load_embedder(con)
    guessed = search(con, "latency", SearchOptions(), embedder=embedder)
    assert guessed.hits and "timeout" in guessed.hits[0].title.lower()
    assert "no word of the query is in the index" in (guessed.note or "")
    found = search(con, "timeout", SearchOptions(), embedder=embedder)
    assert found.hits and "no word of the query" not in (found.note or "")
    assert search(con, "latency", SearchOptions(mode="lexical"), embedder=embedder).hits == []


def test_a_query_of_common_words_only_says_so(indexed):
    """"the of and" still matches (nothing else is left to match), but half the history holds
    those words: the result says its hits match common words alone, and only then."""
    con = indexed.reader()
    common = search(con, "the of and", SearchOptions(mode="lexical"))
    assert common.hits and "every word of the query is a common one (the, of, and)" in common.note
    found = search(con, "the timeout", SearchOptions(mode="lexical"))
    assert found.hits and "common one" not in (found.note or "")
    # A contraction's tail is no word: "it's the" is common words only, not a search for "s".
    assert "every word of the query is a common one (it, the)" in (search(
        con, "it's the", SearchOptions(mode="lexical")).note or "")


def test_path_filter_and_focus_follow_renames(repo, cortex):
    """A review found `--path src/app/client.py` and `--at` its function blind to the commits
    made before the file moved there (requests' move into src/): history follows the move."""
    from cortex_core.memory.search import build_focus
    repo.write("app/client.py", "def fetch(url):\n    return get(url)\n")
    repo.commit("Add fetch", days_ago=30)
    repo.write("app/client.py", "def fetch(url):\n    return get(url, timeout=30)\n")
    repo.commit("Fix timeout in fetch", days_ago=20)
    repo.move("app/client.py", "src/app/client.py")
    repo.commit("Move the package under src", days_ago=10)
    repo.write("src/app/other.py", "def other():\n    return timeout()\n")
    repo.commit("Add other with a timeout too", days_ago=5)
    cortex.index(model="none")
    con = cortex.reader()
    for path in ("src/app/client.py", "src/app", "src"):
        titles = [h.title for h in hits_of(con, "timeout fetch", path=path, kinds=("commit",))]
        assert "Fix timeout in fetch" in titles, path
    assert "Fix timeout in fetch" not in [
        h.title for h in hits_of(con, "timeout", path="src/app/other.py", kinds=("commit",))]
    focus = build_focus(con, "src/app/client.py::fetch")
    hits = search(con, "timeout", SearchOptions(kinds=("commit",), focus=focus)).hits
    about = {h.title: h.why.context for h in hits if h.why}
    assert about["Fix timeout in fetch"] == 1.0 and about["Add other with a timeout too"] < 1.0


def test_similar_commits_with_one_message_are_ranked_by_sha(repo, cortex, tiny_model):
    """Equal messages embed alike: their tie goes by sha, whatever ids the index run gave the
    commits (they follow the order its workers delivered them in)."""
    for n in range(6):   # one file, one message: six items of one text
        repo.write("notes.txt", f"{n}\n")
        repo.commit("Fix timeout in fetch", days_ago=60 - n)
    repo.write("client.py", "def fetch(url):\n    return get(url, timeout=30)\n")
    repo.commit("Fix the timeout of fetch", days_ago=10)
    cortex.index(model=tiny_model)
    con = cortex.reader()
    seed = con.execute("select sha from commits where subject = 'Fix the timeout of fetch'").get
    similar = related_commits(con, seed[:10], embedder=load_embedder(con)).similar
    tied = [r.commit.sha for r in similar if r.commit.subject == "Fix timeout in fetch"]
    assert len(tied) == 6 and len({r.similarity for r in similar if r.commit.sha in tied}) == 1
    assert tied == sorted(tied)


def test_an_item_keeps_its_first_symbols_by_name_not_by_id(repo, cortex):
    """A commit of more than MAX_QUALNAMES symbols keeps the first by name: the ids follow the
    order an index run met them in (defined here from the last name to the first), which two
    runs of one history need not share."""
    from cortex_core.index.memory import MAX_QUALNAMES
    names = [f"f_{n:03}" for n in range(MAX_QUALNAMES + 20)]

    def module(value: int) -> str:
        return "".join(f"def {name}():\n    return {value}\n\n\n" for name in reversed(names))
    repo.write("many.py", module(0))
    repo.commit("add them", days_ago=20)
    repo.write("many.py", module(1))
    repo.commit("change them all", days_ago=10)
    cortex.index()
    con = cortex.reader()
    ids = dict(con.execute("select qualname, id from symbols"))
    assert ids[names[-1]] < ids[names[0]]
    kept = con.execute("select ic.symbols from items_code ic join items i on i.id = ic.rowid"
                       " join commits c on c.id = i.commit_id"
                       " where c.subject = 'change them all'").get.split()
    assert names[0] in kept and names[MAX_QUALNAMES - 1] in kept and names[-1] not in kept


def test_documents_are_cut_in_path_order_whatever_their_ids(repo, cortex):
    """Doc items come in the order of their paths: the areas cluster items in id order, and file
    ids follow the order an index run met the files in (docs/z.md first here)."""
    repo.write("docs/z.md", "# Zebra\n\nStripes and more stripes.\n")
    repo.commit("z doc", days_ago=20)
    repo.write("docs/a.md", "# Aardvark\n\nAnts, mostly.\n")
    repo.commit("a doc", days_ago=10)
    cortex.index()
    con = cortex.reader()
    ids = dict(con.execute("select path, id from files"))
    assert ids["docs/z.md"] < ids["docs/a.md"]
    order = [path for (path,) in con.execute(
        "select f.path from items i join files f on f.id = i.file_id where i.kind = 'doc'"
        " order by i.id")]
    assert order == ["docs/a.md", "docs/z.md"]


_FIXES = ["parser", "socket", "timeout", "cache", "cookie", "header", "proxy", "redirect",
          "session", "stream", "upload", "retry"]


def _changelog(versions: list[tuple[str, list[str]]]) -> str:
    return "# Changelog\n\n" + "".join(
        f"## {version}\n\n" + "".join(f"- {entry}\n" for entry in entries) + "\n"
        for version, entries in versions)


def _doc_rows(con) -> list[tuple]:
    return sorted(con.execute("select title, body, line, end_line, time, blob, text_hash"
                              " from items where kind = 'doc'"))


def test_a_changed_document_keeps_its_unchanged_sections(repo, cortex, tiny_model, tmp_path):
    """A changelog that gains an entry keeps its other entries' items, vectors and areas: only
    what changed is added, embedded and placed; what remains is what a fresh index holds."""
    older = [f"Fix the {w} handler" for w in _FIXES[:6]]
    newer = [f"Fix the {w} handler" for w in _FIXES[6:]]
    older[4] += " (the token " + "ghp_" + "a1B2" * 9 + " leaked: revoked)"   # stored masked
    repo.write("CHANGES.md", _changelog([("1.1", newer), ("1.0", older)]))
    repo.write("a.py", "x = 1\n")
    repo.commit("Release 1.1", days_ago=20)
    cortex.index(model=tiny_model)
    con = cortex.reader()
    before = {(t, b): (i, v, c) for i, t, b, v, c in con.execute(
        "select id, title, body, vector_id, cluster from items where kind = 'doc'")}
    assert len(before) == 12
    # An entry added on top (its lines push every other down), one reworded, one dropped.
    newer2 = ["Fix the cache handler once more"] + newer[:-1]
    older2 = older[:2] + ["Fix the timeout handler for good"] + older[3:]
    repo.write("CHANGES.md", _changelog([("1.2", newer2[:1]), ("1.1", newer2[1:]),
                                         ("1.0", older2)]))
    repo.commit("Release 1.2", days_ago=1)
    summary = cortex.index(model=tiny_model)
    after = {(t, b): (i, v, c) for i, t, b, v, c in con.execute(
        "select id, title, body, vector_id, cluster from items where kind = 'doc'")}
    unchanged = before.keys() & after.keys()
    assert len(unchanged) == 10
    assert all(after[k] == before[k] for k in unchanged)   # same item, vector, area
    assert any("ghp_" not in b and "leaked" in b for _, b in unchanged)  # kept, masked
    added = after.keys() - before.keys()
    assert {b.removeprefix("- ") for _, b in added} == {"Fix the cache handler once more",
                                                        "Fix the timeout handler for good"}
    assert summary.items_added == 1 + len(added)    # the commit, and the two new entries
    assert summary.texts_embedded == 1 + len(added)
    assert all(c is not None for _, _, c in after.values())
    # Lines, times and blob as a fresh index gives them.
    fresh = Indexed(repo, tmp_path / "fresh" / "cortex.db")
    fresh.index(model=tiny_model)
    assert _doc_rows(con) == _doc_rows(fresh.reader())
