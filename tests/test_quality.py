"""Search quality with a real distilled model (CORTEX_TEST_MODEL; CI points it at
../shared/models/m2v-minilm-l6-v2). Skipped without it."""

from __future__ import annotations

import os

import pytest

from cortex_core.memory.embeddings import load_embedder
from cortex_core.memory.search import SearchOptions, search

MODEL = os.environ.get("CORTEX_TEST_MODEL")
pytestmark = pytest.mark.skipif(not MODEL or not os.path.isdir(MODEL),
                                reason="CORTEX_TEST_MODEL is not set to a model folder")

COMMITS = [
    ("net.py", "Add a timeout to outgoing HTTP calls so a dead server cannot block us"),
    ("net.py", "Retry failed uploads with exponential backoff"),
    ("auth.py", "Hash passwords with bcrypt instead of sha1"),
    ("auth.py", "Expire login sessions after thirty minutes of inactivity"),
    ("db.py", "Add an index on orders.customer_id to speed up the dashboard"),
    ("db.py", "Run schema migrations inside a transaction"),
    ("ui.py", "Fix the dark mode colours of the settings dialog"),
    ("ui.py", "Translate the checkout page into German and French"),
    ("log.py", "Rotate log files daily and keep a week of them"),
    ("cache.py", "Cache rendered templates in memory"),
]

# Paraphrases that share (almost) no word with the commit they mean.
PARAPHRASES = [
    ("the request hangs forever when the remote host is down", 0),
    ("credential storage uses a weak digest", 2),
    ("users stay signed in too long", 3),
    ("slow query on the admin overview", 4),
    ("night theme looks wrong", 6),
    ("support more languages in the shop", 7),
]


@pytest.fixture(scope="module")
def quality_index(tmp_path_factory):
    from cortex_core.config import Settings
    from cortex_core.index.ingest import index_repository
    from cortex_core.store.store import open_reader
    from scripted_repo import ScriptedRepo
    root = tmp_path_factory.mktemp("quality")
    repo = ScriptedRepo(root / "repo")
    shas = []
    for n, (path, message) in enumerate(COMMITS):
        repo.write(path, f"def f{n}():\n    return {n}\n")
        shas.append(repo.commit(message, days_ago=100 - n))
    summary = index_repository(repo.path, root / "c.db", Settings(), model=MODEL)
    assert summary.semantic.startswith("on:")
    return open_reader(root / "c.db"), shas


def test_vectors_find_paraphrases_that_words_miss(quality_index):
    con, shas = quality_index
    embedder = load_embedder(con)
    found = 0
    for query, target in PARAPHRASES:
        hits = search(con, query, SearchOptions(top_k=3, mode="vector", priors=False),
                      embedder=embedder).hits
        found += shas[target] in [h.sha for h in hits]
    assert found >= 5, f"only {found} of {len(PARAPHRASES)} paraphrases found in the top 3"


def test_hybrid_keeps_exact_word_matches_first(quality_index):
    con, shas = quality_index
    embedder = load_embedder(con)
    for query, target in [("bcrypt", 2), ("exponential backoff", 1), ("schema migrations", 5)]:
        hits = search(con, query, SearchOptions(top_k=3), embedder=embedder).hits
        assert hits[0].sha == shas[target], query


def test_hybrid_answers_paraphrases_too(quality_index):
    con, shas = quality_index
    embedder = load_embedder(con)
    found = sum(shas[target] in [h.sha for h in search(
        con, query, SearchOptions(top_k=3), embedder=embedder).hits]
        for query, target in PARAPHRASES)
    assert found >= 4
