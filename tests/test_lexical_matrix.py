"""The lexical postings in memory (cortex_core/memory/lexical_matrix.py) against FTS5 itself:
the same rows, the same scores (to the bit) and the same order, on real stores of real git
repositories; the key that says when they are out of date; the engine that keeps them."""

from __future__ import annotations

import itertools
import random

import apsw
import pytest

from cortex_core import api
from cortex_core.engine import Engine
from cortex_core.memory import lexical_matrix
from cortex_core.memory.notes import add_note
from cortex_core.memory.search import (BM25_WEIGHTS, CODE_WEIGHTS, SearchOptions, search)
from cortex_core.memory.tokens import fts_query, query_terms
from cortex_core.store.store import open_writer

WORDS = ("fix", "fixes", "fixed", "cache", "timeout", "retry", "retries", "client", "docs",
         "parser", "naïve", "café", "HTTPServerError", "getUserById", "lookup", "eviction")


@pytest.fixture
def busy(repo):
    """Commits whose messages and code share words in every proportion, some messages
    repeated word for word (equal scores: ties broken by rowid), a doc, identifiers."""
    rng = random.Random(7)
    for n in range(60):
        words = rng.sample(WORDS, rng.randint(1, 6))
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30)))
        subject = "Fix cache timeout" if n % 7 == 0 else " ".join(words)
        name = rng.choice(("cache", "client", "parser"))
        repo.write(f"{name}.py", f"def {rng.choice(('lookup', 'fetch', 'retry'))}_{n}(key):\n"
                                 f"    return {' + '.join(w.lower() for w in words)}\n")
        repo.commit(f"{subject}\n\n{body}", days_ago=200 - n)
    repo.write("README.md", "# Cache\n\nThe cache retries a timeout.\n\n# Parser\n\nNaïve.\n")
    repo.commit("docs: cache and parser", days_ago=1)
    return repo


@pytest.fixture
def store(busy, cortex):
    cortex.index()
    return cortex


def fts5(con, table, terms, weights, limit):
    w = ", ".join(str(x) for x in weights)
    return [tuple(r) for r in con.execute(
        f"select rowid, -bm25({table}, {w}) as s from {table} where {table} match ?"
        f" order by s desc, rowid limit ?", (fts_query(" ".join(terms)), limit))]


def queries():
    rng = random.Random(3)
    out = [[w] for w in WORDS] + [["fix", "fixes", "fixed"], ["cache", "cache"],
                                  ["nothing", "here"], ["fix", "nothing"]]
    out += [rng.sample(WORDS, rng.randint(2, 8)) for _ in range(60)]
    return [query_terms(" ".join(q)) for q in out]


def test_postings_rank_and_score_as_fts5_does(store):
    con = store.reader()
    con.execute("begin")
    matrix = lexical_matrix.load(con)
    assert matrix is not None
    ties = 0
    for terms, (table, weights), limit in itertools.product(
            queries(), [("items_fts", BM25_WEIGHTS), ("items_fts", (2.0, 0.7, 0.3, 0.1)),
                        ("items_code", CODE_WEIGHTS), ("items_code", (0.3,))], (1, 5, 400)):
        expected = fts5(con, table, terms, weights, limit)
        got = matrix.top(con, table, terms, weights, limit)
        assert got == expected, (terms, table, weights, limit)     # floats compared exactly
        ties += sum(a[1] == b[1] for a, b in zip(got, got[1:]))
    assert ties > 20     # equal scores were met, and ordered by rowid as FTS5 orders them


def test_a_word_the_tokenizer_splits_or_drops_is_left_to_fts5(store):
    con = store.reader()
    con.execute("begin")
    matrix = lexical_matrix.load(con)
    assert lexical_matrix.query_tokens(con, ["fixes", "Café"]) == ["fix", "cafe"]
    for terms in (["cache", "e-mail"], ["cache", "-"]):
        assert lexical_matrix.query_tokens(con, terms) is None
        assert matrix.top(con, "items_fts", terms, BM25_WEIGHTS, 10) is None
    assert matrix.top(con, "no_such_table", ["cache"], BM25_WEIGHTS, 10) is None
    # A column weighted 0 (or less) gives matches a score of 0 that FTS5 still lists: FTS5's.
    assert fts5(con, "items_code", ["cache"], (0.0, 0.0), 400)
    assert matrix.top(con, "items_code", ["cache"], (0.0, 0.0), 10) is None
    assert matrix.top(con, "items_fts", ["cache"], (1.0, -1.0), 10) is None


def test_the_key_changes_with_each_commit_to_the_tables_and_only_then(store, busy):
    con = store.reader()
    before = lexical_matrix.version_key(con)
    assert lexical_matrix.version_key(con) == before
    store.index()                                    # nothing new: nothing written
    assert lexical_matrix.version_key(store.reader()) == before
    w = open_writer(store.db)
    add_note(w, busy.path, "cache.py", "The eviction window is a timeout.", author="Ann")
    after_note = lexical_matrix.version_key(store.reader())
    assert after_note != before
    busy.write("client.py", "def fetch():\n    return 2\n")
    busy.commit("Retry the client fetch", days_ago=0.5)
    store.index()
    assert lexical_matrix.version_key(store.reader()) not in (before, after_note)


def test_instances_out_of_the_index_order_make_the_same_postings():
    """The loader reads instances in the index's order; it sorts any term's that are not."""
    chunk = [("cache", 4, ",".join(str(d * 8 + c) for d, c in [(2, 0), (2, 1), (2, 1), (9, 3)])),
             ("fix", 3, ",".join(str(d * 8 + c) for d, c in [(1, 2), (4, 0), (4, 0)]))]
    shuffled = [("cache", 4, ",".join(str(d * 8 + c) for d, c in [(9, 3), (2, 1), (2, 0), (2, 1)])),
                ("fix", 3, ",".join(str(d * 8 + c) for d, c in [(4, 0), (1, 2), (4, 0)]))]
    for part in (chunk, shuffled):
        docs, counts, spans = lexical_matrix._postings(part, 4)
        assert docs.tolist() == [2, 9, 1, 4]
        assert counts.tolist() == [[1, 2, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [2, 0, 0, 0]]
        assert spans == [("cache", 0, 2), ("fix", 2, 4)]
    assert lexical_matrix._postings([("cache", 1, str(2 * 8 + 5))], 4) is None   # no column 5
    assert lexical_matrix._postings([("cache", 2, "17")], 4) is None             # count wrong


def test_a_store_above_the_limit_is_not_kept(store):
    con = store.reader()
    con.execute("begin")
    assert lexical_matrix.load(con, max_postings=10) is None
    assert lexical_matrix.load(con) is not None


def test_search_with_the_postings_answers_as_without(store):
    con = store.reader()
    con.execute("begin")
    matrix = lexical_matrix.load(con)
    for terms, options in itertools.product(
            queries()[::3], (SearchOptions(), SearchOptions(mode="lexical", top_k=50),
                             SearchOptions(kinds=("doc",)), SearchOptions(path="cache.py"),
                             SearchOptions(per_source=1, top_k=3),
                             SearchOptions(per_commit=3, top_k=5))):
        query = " ".join(terms)
        plain = search(con, query, options, now=2e9)
        fast = search(con, query, options, lexicon=matrix, now=2e9)
        assert plain.hits == fast.hits, (query, options)     # every field, explanations too
        assert plain.candidates == fast.candidates


def wait_for(engine, con, seconds=30.0):
    """The postings, once the loader that asking for them starts has finished (joined: no
    polling)."""
    found = engine.lexicon(con)
    loader = engine._lexicon_loader
    if found is None and loader is not None:
        loader.join(seconds)
        found = engine.lexicon(con)
    if found is None:
        raise AssertionError("the postings never loaded")
    return found


def test_the_engine_loads_them_in_the_background_and_never_uses_stale_ones(busy):
    with Engine.open(busy.path, for_writing=True) as writer:
        writer.run(api.IndexRequest(model="none"))
    plain = Engine.open(busy.path)
    assert plain.lexicon(plain.reader()) is None     # only servers keep them
    plain.close()
    engine = Engine.open(busy.path, keep_vectors=True)
    with engine.snapshot() as snap:
        first = engine.lexicon(snap.con)             # starts the load; FTS5 answers meanwhile
        assert first is None or first.key == lexical_matrix.version_key(snap.con)
        kept = wait_for(engine, snap.con)
        assert engine.lexicon(snap.con) is kept      # kept, not loaded again
        assert engine._lexicon[0][1] == kept.key == lexical_matrix.version_key(snap.con)
        before = snap.search("eviction window timeout", mode="lexical", workspace=False)
    engine.add_note("cache.py", "The eviction window is a timeout.", author="Ann")
    with engine.snapshot() as snap:
        # The tables changed: the old postings do not answer for this snapshot.
        assert engine.lexicon(snap.con) is not kept
        result = snap.search("eviction window timeout", mode="lexical", workspace=False)
        assert "note" in [h.kind for h in result.hits]      # FTS5 sees the new note
        assert "note" not in [h.kind for h in before.hits]
        fresh = wait_for(engine, snap.con)
        assert fresh is not kept
        assert snap.search("eviction window timeout", mode="lexical",
                           workspace=False).hits == result.hits
    engine.close()


def test_a_store_replaced_by_another_file_is_not_answered_from_the_old_one(busy):
    """Even a byte-for-byte copy: the key holds the file's identity."""
    import shutil
    with Engine.open(busy.path, for_writing=True) as writer:
        writer.run(api.IndexRequest(model="none"))
    engine = Engine.open(busy.path, keep_vectors=True)
    with engine.snapshot() as snap:
        kept = engine.lexicon(snap.con, wait=True)
        assert kept is not None
    copy = engine.db.with_name("copy.db")
    shutil.copyfile(engine.db, copy)
    copy.replace(engine.db)
    with engine.snapshot() as snap:      # a new connection, to the new file
        assert engine.lexicon(snap.con) is not kept
        assert wait_for(engine, snap.con) is not kept
    engine.close()


def test_preload_after_an_index_run_makes_them_ready(busy):
    with Engine.open(busy.path, for_writing=True) as writer:
        writer.run(api.IndexRequest(model="none"))
    engine = Engine.open(busy.path, keep_vectors=True)
    engine.preload_lexicon()
    loader = engine._lexicon_loader
    assert loader is not None
    loader.join(30)
    with engine.snapshot() as snap:
        assert engine.lexicon(snap.con) is not None      # ready at the first search
    engine.close()


def test_a_store_copied_over_the_file_in_place_is_not_taken_for_it(tmp_path):
    """Found by review: `cp other.db cortex.db` keeps the inode, and two stores of the same shape
    have byte-identical FTS5 records; what meta says of the store tells them apart."""
    import shutil
    from scripted_repo import ScriptedRepo

    def build(name: str, word: str) -> ScriptedRepo:
        repo = ScriptedRepo(tmp_path / name)
        repo.now = 1_700_000_000
        for n in range(12):
            repo.write(f"m{n % 3}.py", f"def f{n}():\n    return '{word} cache {n}'\n")
            repo.commit(f"{word} eviction tweak {n}", days_ago=100 - n)
        with Engine.open(repo.path, for_writing=True) as writer:
            writer.run(api.IndexRequest(model="none"))
        return repo

    zebra, okapi = build("zebra", "zebra"), build("okapi", "okapi")
    engine = Engine.open(zebra.path, keep_vectors=True)
    other = Engine.open(okapi.path)
    with engine.snapshot() as snap, other.snapshot() as theirs:
        kept = engine.lexicon(snap.con, wait=True)
        assert kept is not None
        records = lexical_matrix.version_key(theirs.con)[-4:]
        assert kept.key[-4:] == records        # the tables' records alone: the same
    other.close()
    engine._drop()
    inode = engine.db.stat().st_ino
    shutil.copyfile(okapi.path / ".cortex" / "cortex.db", engine.db)
    assert engine.db.stat().st_ino == inode
    # Another repository's store is refused as such (git/ownership.py): this one says it is
    # zebra's, as a store of zebra's that other runs rewrote would.
    from cortex_core.git.ownership import identity
    con = apsw.Connection(str(engine.db))
    con.execute("update meta set value = ? where key = 'repository'", (identity(zebra.path),))
    con.close()
    with engine.snapshot() as snap:
        assert engine.lexicon(snap.con) is not kept
        assert not snap.search("zebra", mode="lexical", workspace=False).hits
        hits = snap.search("okapi", mode="lexical", workspace=False).hits
        assert hits and all("okapi" in h.title for h in hits)
    engine.close()


def test_a_rebuild_makes_a_new_store_id(store):
    con = store.reader()
    before = con.execute("select value from meta where key = 'store_id'").fetchone()
    assert before is not None and len(before[0]) == 16
    store.index(rebuild=True)
    after = store.reader().execute("select value from meta where key = 'store_id'").fetchone()
    assert after is not None and after != before


def test_an_empty_table_is_left_to_fts5(repo):
    """A history without code or files: items_code is empty, its averages record too (found by
    review: an IndexError)."""
    for n in range(3):
        repo.git("commit", "-q", "--allow-empty", "-m", f"docs: notes {n}")
    with Engine.open(repo.path, for_writing=True) as writer:
        writer.run(api.IndexRequest(model="none"))
    engine = Engine.open(repo.path, keep_vectors=True)
    with engine.snapshot() as snap:
        assert snap.con.execute("select count(*) from items_code").fetchone()[0] == 0
        assert lexical_matrix.load(snap.con) is None
        assert engine.lexicon(snap.con, wait=True) is None
        assert snap.search("notes", mode="lexical", workspace=False).hits
    engine.close()


def test_scores_that_overflow_are_left_to_fts5(store):
    con = store.reader()
    con.execute("begin")
    matrix = lexical_matrix.load(con)
    huge = (1e308, 1.0, 0.3, 0.1)
    assert matrix.top(con, "items_fts", ["cache"], huge, 5) is None
    assert fts5(con, "items_fts", ["cache"], huge, 5)     # FTS5 answers (scores of inf)
