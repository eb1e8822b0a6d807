"""bench/decay_replay.py, issue 14's experiment of a half-life chosen from a store's own past:
the replay picks a steep decay when partners drift, keeps the default when they do not, and
keeps it when the replay is too short to say."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "decay_replay.py"
_spec = importlib.util.spec_from_file_location("decay_replay", SCRIPT)
replay = importlib.util.module_from_spec(_spec)
sys.modules["decay_replay"] = replay   # dataclasses look their module up
_spec.loader.exec_module(replay)

DAY = 86_400


def _history(groups: int, drift: bool):
    """Per group (a, b, c): eight old commits of a and b over ten years, then two recent ones of
    a with c (drift) or with b (none); after the split, a test commit of a with that partner and
    single-file commits (no tests) to put the split at 80%."""
    by_commit, times, order = {}, {}, []

    def commit(items, t):
        cid = len(order) + 1
        by_commit[cid] = set(items)
        times[cid] = t
        order.append(cid)

    ten_years = 3650 * DAY
    for g in range(groups):
        a, b, c = 3 * g + 1, 3 * g + 2, 3 * g + 3
        for k in range(8):
            commit({a, b}, g * 10 + k * (ten_years // 10))
    for g in range(groups):
        a, b, c = 3 * g + 1, 3 * g + 2, 3 * g + 3
        for k in range(2):
            commit({a, c if drift else b}, ten_years + g * 10 + k)
    past = len(order)
    for g in range(groups):
        a, b, c = 3 * g + 1, 3 * g + 2, 3 * g + 3
        commit({a, c if drift else b}, ten_years + DAY + g)
    while len(order) < past * 5 // 4:
        commit({10_000 + len(order)}, ten_years + 2 * DAY)
    position = {cid: n for n, cid in enumerate(order)}
    return by_commit, order, times, position


def test_partners_that_drift_choose_a_steeper_decay():
    by_commit, order, times, position = _history(60, drift=True)
    fit = replay.fit_level(by_commit, order, times, {}, position)
    assert fit.queries == 120          # a and c of each group's test commit
    # Without decay a's eight old commits with b outrank its two recent ones with c.
    assert fit.scores["0"][1] == 0.75
    assert fit.scores["0.125"][1] == 1.0
    assert fit.share < replay.DEFAULT_SHARE


def test_steady_partners_keep_the_default():
    by_commit, order, times, position = _history(60, drift=False)
    fit = replay.fit_level(by_commit, order, times, {}, position)
    assert fit.queries == 120 and fit.share == replay.DEFAULT_SHARE
    assert all(score == [1.0, 1.0] for score in fit.scores.values())


def test_a_deleted_partner_is_no_answer_and_a_short_replay_keeps_the_default():
    by_commit, order, times, position = _history(60, drift=True)
    # c of group 0 deleted by the split's last commit, after its two commits with a.
    split = position[order[int(len(order) * replay.REPLAY_SPLIT) - 1]]
    fit = replay.fit_level(by_commit, order, times, {3: [split]}, position)
    assert fit.queries == 118          # c is no query, and a, its only gold gone, neither
    short = replay.fit_level(*_history(20, drift=True)[:3], {}, _history(20, drift=True)[3])
    assert short.queries == 40 and short.share == replay.DEFAULT_SHARE and not short.scores
