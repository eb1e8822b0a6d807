"""How alike two definitions are (lang/similarity.py): difflib's ratio, stopped early by bounds
that never change an answer that reaches the threshold."""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cortex_core.lang import similarity
from cortex_core.lang.similarity import common_subsequence_length, token_similarity

# Few kinds of tokens, so that sequences share many in many orders (what defeats the bounds).
TOKENS = st.lists(st.sampled_from(["a", "b", "c", "(", ")", ",", "x"]), max_size=120)
THRESHOLDS = st.sampled_from([0.0, 0.3, 0.5, 0.6, 0.8, 0.9])


def longest_common_subsequence(a, b) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal, row[0] = 0, 0
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def difflib_matches(a, b) -> int:
    return sum(block.size for block in SequenceMatcher(None, a, b).get_matching_blocks())


@given(TOKENS, TOKENS)
def test_the_bit_parallel_subsequence_is_the_longest_common_one(a, b):
    assert common_subsequence_length(tuple(a), tuple(b)) == longest_common_subsequence(a, b)


@pytest.fixture(params=["at once", "as scheduled"])
def bounded_always(request, monkeypatch):
    """Every pair through the bounded matching: its bound kept from the first search and its
    subsequences computed at almost every split, or as the schedule says."""
    monkeypatch.setattr(similarity, "BOUNDED_PAIRS", 0)
    if request.param == "at once":
        monkeypatch.setattr(similarity, "BOUND_AFTER", 0)
        monkeypatch.setattr(similarity, "LCS_PER_VISIT", 10 ** 12)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TOKENS, TOKENS, THRESHOLDS)
def test_a_bounded_similarity_is_difflibs_when_it_reaches_the_threshold(bounded_always, a, b,
                                                                         at_least):
    a, b = tuple(a), tuple(b)
    exact = SequenceMatcher(None, a, b).ratio()
    got = token_similarity(a, b, at_least)
    assert (got >= at_least) == (exact >= at_least)
    if exact >= at_least:
        assert got == exact
    found = similarity._matches(SequenceMatcher(None, a, b), a, b, at_least) if a or b else 0
    assert found is None and exact < at_least or found == difflib_matches(a, b)


# Long enough (200 tokens and more) for difflib's "popular" tokens: none starts a match.
LONG = st.lists(st.sampled_from(["a", "b", "c", "(", ")", ",", *(f"n{i}" for i in range(60))]),
                min_size=200, max_size=400)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(LONG, LONG, THRESHOLDS, st.booleans())
def test_the_same_holds_where_difflib_leaves_popular_tokens_out(bounded_always, a, b, at_least,
                                                                 near_copy):
    a = tuple(a)
    b = a[:len(a) // 3] + tuple(b[:20]) + a[len(a) // 2:] if near_copy else tuple(b)
    exact = SequenceMatcher(None, a, b).ratio()
    got = token_similarity(a, b, at_least)
    assert (got >= at_least) == (exact >= at_least)
    if exact >= at_least:
        assert got == exact


def shuffled_twins(n: int, seed: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Two sequences of the same tokens in other orders, each token in a few places but under
    difflib's 1% (which would make it "popular", never the start of a match): alike by their
    counts, hardly by difflib, whose every search then looks at most of both (sympy's generated
    tests of couple/uncouple)."""
    rng = random.Random(seed)
    a = tuple(f"w{rng.randrange(n // 8)}" for _ in range(n))
    b = list(a)
    rng.shuffle(b)
    return a, tuple(b)


def test_shuffled_twins_stop_before_difflib_has_searched_them_all():
    a, b = shuffled_twins(3000, 1)
    matcher = SequenceMatcher(None, a, b)
    assert matcher.quick_ratio() == 1.0 and matcher.ratio() < 0.6
    assert len(matcher.b2j) == len(set(b))   # no token is popular
    assert similarity._matches(SequenceMatcher(None, a, b), a, b, 0.6) is None
    assert token_similarity(a, b, 0.6) == 0.0
    # Asked without a threshold, the same pair is matched to the end, as difflib does.
    assert token_similarity(a, b) == matcher.ratio()


def test_a_near_copy_over_the_bound_is_difflibs_ratio():
    rng = random.Random(2)
    a = tuple(f"name{rng.randrange(400)}" for _ in range(2000))   # as varied as code
    b = a[:700] + ("inserted", "tokens") + a[700:1500] + a[1510:]
    assert len(a) * len(b) > similarity.BOUNDED_PAIRS
    assert token_similarity(a, b, 0.8) == SequenceMatcher(None, a, b).ratio() > 0.99
