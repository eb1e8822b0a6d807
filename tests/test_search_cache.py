"""What a server's search keeps between searches on its read connection (search(cache=True):
which items the default filters pass; Engine.vectors: the vectors' version) gives the answers
of asking every time, and is dropped as soon as another connection changes the store."""

from __future__ import annotations

import time

import pytest

from cortex_core import api
from cortex_core.engine import Engine
from cortex_core.memory import search as search_module
from cortex_core.memory.notes import add_note, supersede_note
from cortex_core.memory.search import SearchOptions, search
from cortex_core.store.store import open_writer, store_stamp

QUERIES = ("fix cache timeout", "retry client fetch", "eviction window note", "parser docs",
           "cache", "note about the cache window")


@pytest.fixture
def store(repo, cortex):
    for n in range(30):
        name = ("cache", "client", "parser")[n % 3]
        repo.write(f"{name}.py", f"def f_{n}():\n    return {n}\n")
        repo.commit(f"Fix {name} timeout number {n}\n\nretry the {name} window", days_ago=60 - n)
    cortex.index()
    return cortex


TOP_20 = SearchOptions(top_k=20)


def answers(con, cache, options=TOP_20):
    out = []
    for q in QUERIES:
        result = search(con, q, options, now=2e9, cache=cache)
        out.append([(h.item_id, h.why.score) for h in result.hits])
    return out


def test_cached_filters_answer_as_sql_through_every_change(store, repo):
    reader = store.reader()
    writer = open_writer(store.db)

    def same():
        plain = answers(reader, False)
        assert answers(reader, True) == plain
        assert answers(reader, True) == plain          # the kept sets, used again
        for options in (SearchOptions(kinds=("note",)), SearchOptions(path="cache.py")):
            assert answers(reader, True, options) == answers(reader, False, options)
        return plain

    first = same()
    stamp = store_stamp(reader)
    assert search_module._PASSING[reader][0] == stamp
    # Commits gone from the history (a rebase): their items stop passing at once.
    with writer:
        writer.execute("update commits set reachable = 0 where id in"
                       " (select commit_id from items where title like 'Fix cache%')")
    assert store_stamp(reader) != stamp
    gone = same()
    assert gone != first
    assert not any(reader.execute("select title like 'Fix cache%' from items where id = ?",
                                  (item,)).fetchone()[0] for hits in gone for item, _ in hits)
    # Notes: a new one shows, one superseded does not, one past its end date does not, one
    # before its end date does (the end date is compared with the time at each search).
    note = add_note(writer, repo.path, "cache.py", "A note about the cache window.", author="A")
    assert any(search(reader, "note about the cache window", cache=True, now=2e9).hits)
    same()
    supersede_note(writer, repo.path, note.id, "The cache window note, corrected.", author="A")
    same()
    later = add_note(writer, repo.path, "parser.py", "Parser docs note window.", author="A")
    with writer:
        writer.execute("update notes set valid_until = ? where id = ?",
                       (int(time.time()) + 3600, later.id))
    shown = same()
    with writer:
        writer.execute("update notes set valid_until = ? where id = ?",
                       (int(time.time()) - 5, later.id))
    hidden = same()
    note_item = reader.execute("select id from items where note_id = ?", (later.id,)).fetchone()[0]
    assert any(item == note_item for hits in shown for item, _ in hits)
    assert not any(item == note_item for hits in hidden for item, _ in hits)


def test_a_connection_that_writes_is_never_answered_from_before_its_writes(store, repo):
    """The stamp counts the connection's own changes too (data_version does not)."""
    writer = open_writer(store.db)
    before = answers(writer, True)
    with writer:
        writer.execute("update commits set reachable = 0 where id in"
                       " (select commit_id from items where title like 'Fix client%')")
    assert answers(writer, True) == answers(writer, False) != before


def test_the_engine_reads_the_vectors_version_once_per_state_of_the_store(repo, tiny_model):
    for n in range(6):
        repo.write("a.py", f"x = {n}\n")
        repo.commit(f"Fix timeout {n}", days_ago=10 - n)
    with Engine.open(repo.path, for_writing=True) as writer:
        writer.run(api.IndexRequest(model=tiny_model))
    engine = Engine.open(repo.path, keep_vectors=True)
    with engine.snapshot() as snap:
        first = engine.vectors(snap.con)
        assert first is not None
        assert engine.vectors(snap.con) is first
        assert engine._vector_keys[snap.con][0] == store_stamp(snap.con)
    with Engine.open(repo.path, for_writing=True) as writer:    # new vectors, by another process
        repo.write("a.py", "x = 99\n")
        repo.commit("Add the retry budget", days_ago=1)
        writer.run(api.IndexRequest(model=tiny_model))
    with engine.snapshot() as snap:
        second = engine.vectors(snap.con)
        assert second is not first and len(second.ids) == len(first.ids) + 1
    engine.close()
