"""Hotspots and co-change on scripted histories, with exact expected values."""

from __future__ import annotations

import math

import pytest

from cortex_core.query.coupling import related
from cortex_core.query.hotspots import hotspots
from cortex_core.query.targets import TargetSpec


def score(ages_days, authors, churn, half_life=90.0):
    r = sum(0.5 ** (age / half_life) for age in ages_days)
    return r * (1 + math.log(authors)) * (1 + math.log10(1 + churn))


@pytest.fixture
def busy_history(repo, cortex):
    """hot.py::busy changes 3 times by 2 people; calm.py::quiet once, long ago."""
    repo.write("hot.py", "def busy():\n    return 1\n")
    repo.write("calm.py", "def quiet():\n    return 1\n")
    repo.commit("start", author="Ann <ann@example.com>", days_ago=400)
    repo.write("hot.py", "def busy():\n    return 2\n")
    repo.commit("tweak", author="Bob <bob@example.com>", days_ago=20)
    repo.write("hot.py", "def busy():\n    x = 3\n    return x\n")
    repo.commit("tweak again", author="Ann <ann@example.com>", days_ago=2)
    cortex.index()
    return cortex.reader()


def test_hotspots_rank_by_the_documented_formula(repo, busy_history):
    result = hotspots(busy_history, now=repo.now, top_k=5)
    assert [(h.path, h.qualname, h.changes, h.authors, h.churn) for h in result.symbols] == [
        ("hot.py", "busy", 3, 2, 2 + 2 + 3),
        ("calm.py", "quiet", 1, 1, 2),
    ]
    top = result.symbols[0]
    assert top.score == pytest.approx(score([400, 20, 2], 2, 7))
    assert top.line == 1
    assert [(h.path, h.changes) for h in result.files] == [("hot.py", 3), ("calm.py", 1)]
    assert result.files[0].score == pytest.approx(score([400, 20, 2], 2, 2 + 2 + 3))


def test_hotspots_since_and_path_filters(repo, busy_history):
    recent = hotspots(busy_history, now=repo.now, since_days=30)
    assert [(h.qualname, h.changes) for h in recent.symbols] == [("busy", 2)]
    only_calm = hotspots(busy_history, now=repo.now, path_prefix="calm.py")
    assert [h.path for h in only_calm.symbols + only_calm.files] == ["calm.py", "calm.py"]


def test_dead_symbols_are_not_hotspots(repo, cortex):
    repo.write("a.py", "def gone():\n    return 1\n\n\ndef kept():\n    return 1\n")
    repo.commit("one", days_ago=3)
    repo.write("a.py", "def kept():\n    return 2\n")
    repo.commit("two", days_ago=2)
    cortex.index()
    result = hotspots(cortex.reader(), now=repo.now)
    assert [h.qualname for h in result.symbols] == ["kept"]


@pytest.fixture
def coupled(repo, cortex):
    """a.py changes with b.py three times and with c.py once; big commits do not count."""
    def touch(files, subject, days):
        for name in files:
            path = repo.path / name
            old = path.read_text() if path.exists() else ""
            repo.write(name, old + f"def f{len(old)}():\n    return {days}\n\n\n")
        return repo.commit(subject, days_ago=days)

    touch(["a.py", "b.py", "c.py"], "start", 50)
    touch(["a.py", "b.py"], "pair 1", 40)
    touch(["a.py", "b.py"], "pair 2", 30)
    touch(["a.py", "c.py"], "with c", 20)
    touch(["b.py"], "b alone", 10)
    touch(["a.py"] + [f"noise{i}.py" for i in range(31)], "huge commit", 5)
    cortex.index()
    return cortex.reader()


def test_related_files_support_and_confidence(coupled):
    result = related(coupled, TargetSpec("a.py"), min_support=1)
    # a.py is in 4 commits within the changeset bound (the 32-file commit is left out).
    assert result.target_commits == 4
    rows = [(p.path, p.support, p.confidence, p.reverse_confidence) for p in result.files]
    assert rows == [("b.py", 3, 3 / 4, 3 / 4), ("c.py", 2, 2 / 4, 2 / 2)]
    assert [e.subject for e in result.files[0].evidence] == ["pair 2", "pair 1", "start"]
    strict = related(coupled, TargetSpec("a.py"), min_support=3)
    assert [p.path for p in strict.files] == ["b.py"]


def test_related_follows_renames(repo, coupled, cortex):
    repo.move("b.py", "renamed_b.py")
    repo.commit("rename b", days_ago=1)
    cortex.index()
    result = related(cortex.reader(), TargetSpec("a.py"), min_support=1)
    assert [(p.path, p.support) for p in result.files] == [("renamed_b.py", 3), ("c.py", 2)]


def test_related_symbols(repo, cortex):
    repo.write("m.py", "def load():\n    return 1\n\n\ndef save():\n    return 1\n\n\ndef other():\n    return 1\n")
    repo.commit("start", days_ago=9)
    for i, days in ((2, 8), (3, 7)):
        repo.write("m.py", f"def load():\n    return {i}\n\n\ndef save():\n    return {i}\n\n\ndef other():\n    return 1\n")
        repo.commit(f"load and save {i}", days_ago=days)
    cortex.index()
    result = related(cortex.reader(), TargetSpec("m.py", "load"))
    # `other` shares only the first commit: listed, after the pattern, as weak evidence.
    assert [(p.qualname, p.support, p.weak) for p in result.symbols] == [
        ("save", 3, False), ("other", 1, True)]
    assert [p.qualname for p in related(cortex.reader(), TargetSpec("m.py", "load"),
                                        min_support=2).symbols] == ["save"]
    assert result.files == []  # m.py is the target's own file; nothing else changed with it


def test_a_long_lived_reader_sees_new_commits(repo, coupled, cortex):
    assert related(coupled, TargetSpec("a.py"), min_support=1).target_commits == 4
    repo.write("a.py", "x = 'again'\n")
    repo.write("c.py", "y = 'again'\n")
    repo.commit("a and c again", days_ago=0.5)
    cortex.index()
    again = related(coupled, TargetSpec("a.py"), min_support=1)   # the same connection
    assert again.target_commits == 5
    assert [(p.path, p.support) for p in again.files] == [("c.py", 3), ("b.py", 3)]


def test_one_targets_score_is_the_listed_score(repo, busy_history):
    from cortex_core.query.hotspots import hotspot_score
    listed = hotspots(busy_history, now=repo.now, top_k=5)
    for h in listed.symbols + listed.files:
        file_id = busy_history.execute("select id from files where path = ?", (h.path,)).get
        symbol_id = busy_history.execute(
            "select id from symbols where file_id = ? and qualname = ?", (file_id, h.qualname)
        ).get if h.qualname else None
        assert hotspot_score(busy_history, file_id, symbol_id, now=repo.now) == pytest.approx(h.score)


def test_hotspots_count_a_renamed_file_and_a_moved_symbol_over_their_lineage(repo, cortex):
    """A repository that moves its sources (`requests/` to `src/requests/`) keeps its hotspots:
    the changes before the move count, by their own authors, as the histories list them (a
    review found models.py at 18 changes over "all history" after such a move, against 669)."""
    from cortex_core.features.symbol_info import HeatSettings, file_heat
    from cortex_core.query.history import history
    from cortex_core.query.hotspots import hotspot_score
    body = "def send(x):\n    return x{}\n"
    repo.write("pkg/core.py", body.format(""))
    repo.commit("add send", author="Ann <ann@example.com>", days_ago=300)
    for i, who in enumerate(("Bob <bob@example.com>", "Cy <cy@example.com>"), 1):
        repo.write("pkg/core.py", body.format(f" + {i}"))
        repo.commit(f"send: step {i}", author=who, days_ago=200 - 10 * i)
    repo.move("pkg/core.py", "src/pkg/core.py")
    repo.commit("move to src", author="Dee <dee@example.com>", days_ago=100)
    repo.write("src/pkg/core.py", body.format(" * 2"))
    repo.commit("send: double", author="Dee <dee@example.com>", days_ago=10)
    cortex.index()
    con = cortex.reader()
    found = hotspots(con, now=repo.now, top_k=5)
    by_path = {h.path: h for h in found.files}
    assert list(by_path) == ["src/pkg/core.py"]
    whole = by_path["src/pkg/core.py"]
    assert (whole.changes, whole.authors) == (5, 4)   # add, two steps, the move, the double
    assert whole.changes == len(history(con, TargetSpec("src/pkg/core.py")).entries)
    [send] = found.symbols
    # Its substantive changes: added, two steps, the move (a file move stays), the double.
    assert (send.path, send.qualname, send.changes, send.authors) == ("src/pkg/core.py",
                                                                      "send", 5, 4)
    assert send.changes == len(history(con, TargetSpec("src/pkg/core.py", "send"),
                                       substantive=True).entries)
    assert send.score == pytest.approx(score([300, 190, 180, 100, 10], 4, 2 + 2 + 2 + 0 + 2))
    file_id = con.execute("select id from files where path = 'src/pkg/core.py'").get
    symbol_id = con.execute("select id from symbols where file_id = ? and qualname = 'send'",
                            (file_id,)).get
    assert hotspot_score(con, file_id, symbol_id, now=repo.now) == pytest.approx(send.score)
    assert hotspot_score(con, file_id, None, now=repo.now) == pytest.approx(whole.score)
    # The code lens's window counts the same lineage: within 250 days, the steps, the move and
    # the double.
    [heat] = file_heat(con, "src/pkg/core.py", HeatSettings(window_days=250), now=repo.now)
    assert (heat.qualname, heat.changes, heat.authors) == ("send", 4, 3)
