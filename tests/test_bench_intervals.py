"""The benchmarks' paired intervals (bench/_benchlib.py, paired_interval) and bench_search's
differences from its baseline, on scores whose intervals are known exactly."""

from __future__ import annotations

import pytest

from bench_modules import import_bench


@pytest.fixture(scope="module")
def bench():
    return import_bench("_benchlib", "bench_search")


def test_paired_interval_draws_whole_groups(bench):
    paired_interval = bench[0].paired_interval
    assert paired_interval([1, 1, 1], [0, 0, 0], [0, 1, 2]) == (100.0, 100.0)
    assert paired_interval([0.5, 0.2], [0.5, 0.2], [0, 1]) == (0.0, 0.0)
    # Two groups of ten queries that agree within each group: drawn by group, the mean is 0, 50
    # or 100, so the interval spans all of it; drawn query by query it is much narrower.
    a, b = [1.0] * 10 + [0.0] * 10, [0.0] * 20
    by_group = paired_interval(a, b, [0] * 10 + [1] * 10)
    by_query = paired_interval(a, b, list(range(20)))
    assert by_group == (0.0, 100.0)
    assert by_group[0] < by_query[0] < 50 < by_query[1] < by_group[1]
    # Groups of unequal size: the mean is over the drawn queries, not over the groups. One group
    # of ten queries at +100 and nine of one query at 0: of ten groups drawn, the big one comes
    # K ~ Binomial(10, 0.1) times; P(K <= 3) = 0.987 puts the upper end at K = 3, that is
    # 30 / 37 queries (an average of group means would give 30).
    uneven = paired_interval([1] * 10 + [0] * 9, [0] * 19, [0] * 10 + list(range(1, 10)))
    assert uneven == (0.0, round(100 * 30 / 37, 2))
    # One group says nothing; lengths that differ are an error, not a silent truncation.
    assert paired_interval([1, 0], [0, 0], [4, 4]) is None
    with pytest.raises(ValueError):
        paired_interval([1, 0, 1], [0, 0], [0, 1, 2])


def test_sign_flip_p_is_exact_over_groups(bench):
    sign_flip_p = bench[0].sign_flip_p
    # Four groups that differ, all the same way: 2 of the 16 sign patterns are as extreme.
    assert sign_flip_p([1, 1, 1, 1], [0, 0, 0, 0], [0, 1, 2, 3]) == 0.125
    # Queries of one group count once: four queries of one group are one sign, p = 1.
    assert sign_flip_p([1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]) == 1.0
    # McNemar: 9 wins and 2 losses over queries (two-sided binomial p = 0.0654).
    assert sign_flip_p([1] * 9 + [0] * 2 + [1] * 5, [0] * 9 + [1] * 2 + [1] * 5,
                       list(range(16))) == pytest.approx(0.0654, abs=1e-4)
    assert sign_flip_p([0.5, 0.2], [0.5, 0.2], [0, 1]) == 1.0
    assert sign_flip_p([], [], []) is None
    # Past 16 differing groups it samples: 40 groups all +1 is far from chance.
    assert sign_flip_p([1] * 40, [0] * 40, list(range(40)), draws=20_000) < 0.001


def test_search_rankers_are_compared_with_the_baseline_query_by_query(bench):
    search = bench[1]
    results = {
        search.BASELINE: {"recall_at_k": 0.5, "mrr_at_k": 0.25, "_ranks": [2, None, 2, None]},
        "hybrid": {"recall_at_k": 1.0, "mrr_at_k": 1.0, "_ranks": [1, 1, 1, 1]},
        "vector": {"skipped": "no embedding model"},
    }
    search.versus_baseline(results)
    v = results["hybrid"]["versus_baseline"]
    assert v["recall_points"] == 50.0 and v["mrr_points"] == 75.0
    # Every query gains 0 or 100 points of recall, 50 or 100 of MRR: the intervals lie inside.
    assert 0.0 <= v["recall_interval"][0] < 50.0 < v["recall_interval"][1] <= 100.0
    assert 50.0 <= v["mrr_interval"][0] < 75.0 < v["mrr_interval"][1] <= 100.0
    # Paired: two of four queries gain a hit, exact McNemar p = 0.5; every query gains in MRR.
    assert v["recall_p"] == 0.5 and v["mrr_p"] == 0.125
    assert "versus_baseline" not in results[search.BASELINE]
    assert all("_ranks" not in r for r in results.values())
