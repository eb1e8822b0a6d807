"""Hover cards and hotspot lenses from the core: exact counts on scripted histories."""

from __future__ import annotations

import pytest

from cortex_core.errors import NotFound
from cortex_core.features.symbol_info import HeatSettings, file_heat, line_origin, symbol_card

BASE = "import os\n\n\ndef hot(x):\n    return x + {n}\n\n\ndef cold():\n    return 0\n"
CALLER = "from app import hot\n\n\ndef use():\n    return hot(1)\n"


@pytest.fixture
def indexed(repo, cortex):
    repo.write("app.py", BASE.format(n=0))
    repo.write("caller.py", CALLER)
    repo.commit("start", days_ago=200)
    for n, (author, days) in enumerate([("Ann <ann@example.com>", 60), ("Bob <bob@example.com>", 40),
                                        ("Ann <ann@example.com>", 20)], start=1):
        repo.write("app.py", BASE.format(n=n))
        repo.commit(f"tune hot to {n}\n\nThe callers need {n} more.\n\nSigned-off-by: X <x@y>",
                    author=author, days_ago=days)
    cortex.index(model="none")
    return cortex


def test_card_counts_history_heat_and_dependents(indexed):
    con = indexed.reader()
    card = symbol_card(con, indexed.repo.path, "app.py", "hot", limit=2,
                       heat=HeatSettings(threshold=3, window_days=90))
    assert (card.changes, card.authors) == (4, 2)
    assert card.recent.changes == 3 and card.recent.authors == 2 and card.recent.hot
    assert card.dependents == 2                       # caller.py imports it; use() calls it
    assert [c.commit.subject for c in card.history] == ["tune hot to 3", "tune hot to 2"]
    assert card.history[0].why == "The callers need 3 more."
    assert card.hotspot_score > 0
    cold = symbol_card(con, indexed.repo.path, "app.py", "cold")
    assert cold.changes == 1 and not cold.recent.hot and cold.recent.changes == 0
    with pytest.raises(NotFound):
        symbol_card(con, indexed.repo.path, "app.py", "missing")


def test_heat_respects_window_and_threshold(indexed):
    con = indexed.reader()
    assert [h.qualname for h in file_heat(con, "app.py", HeatSettings(3, 90), only_hot=True)] == \
        ["hot"]
    assert file_heat(con, "app.py", HeatSettings(4, 90), only_hot=True) == []
    # The window counts back from the HEAD (20 days ago): 30 days hold the changes of 40 and 20
    # days ago; on the wall clock, only the last one.
    month = file_heat(con, "app.py", HeatSettings(2, 30), only_hot=True)
    assert [(h.qualname, h.changes) for h in month] == [("hot", 2)]
    assert file_heat(con, "app.py", HeatSettings(2, 30, clock="wall"), only_hot=True) == []
    wide = file_heat(con, "app.py", HeatSettings(4, 365), only_hot=True)
    assert [(h.qualname, h.changes) for h in wide] == [("hot", 4)]


def test_line_origin_maps_an_edited_buffer_to_head(indexed):
    con = indexed.reader()
    head = (indexed.repo.path / "app.py").read_bytes()
    origin = line_origin(con, indexed.repo.path, "app.py", head, 1)
    assert origin.commit.subject == "start"
    edited = b"# new first line\n" + head
    assert line_origin(con, indexed.repo.path, "app.py", edited, 1) is None
    moved = line_origin(con, indexed.repo.path, "app.py", edited, 6)    # "    return x + 3"
    assert moved.commit.subject == "tune hot to 3"


def test_a_store_shipped_or_linked_by_the_repository_is_refused(repo, tmp_path):
    import os

    from cortex_core.config import Settings
    from cortex_core.errors import StoreError
    from cortex_core.index.ingest import index_repository
    from cortex_core.store.store import default_db_path

    repo.write("a.py", "def f():\n    return 1\n")
    repo.write(".cortex/cortex.db", b"SQLite format 3\x00 invented history")
    repo.commit("ship an index")
    with pytest.raises(StoreError, match="tracks .cortex/cortex.db"):
        index_repository(repo.path, default_db_path(repo.path), Settings(), model="none")
    repo.remove(".cortex/cortex.db")
    repo.commit("unship it")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (repo.path / ".cortex").mkdir(exist_ok=True)
    os.symlink(victim, repo.path / ".cortex" / "cortex.db.lock")
    with pytest.raises(StoreError, match="symbolic link"):
        index_repository(repo.path, default_db_path(repo.path), Settings(), model="none")
    assert victim.read_text() == "precious"


def test_card_subjects_are_redacted(repo, cortex):
    repo.write("app.py", BASE.format(n=0))
    repo.commit("start", days_ago=3)
    repo.write("app.py", BASE.format(n=1))
    repo.commit("rotate token ghp_abcdefghijklmnopqrstuvwxyz0123456789", days_ago=2)
    cortex.index(model="none")
    card = symbol_card(cortex.reader(), repo.path, "app.py", "hot", limit=1)
    assert "ghp_" not in card.history[0].commit.subject
    assert "ghp_" not in card.last_change.subject and "REDACTED" in card.last_change.subject
