"""How alike two definitions are: difflib's ratio of their code tokens (change_kinds.masked),
for pairing renames and moves with edits (symbol_changes).

The pairing only asks whether a pair reaches a threshold, and how alike it is when it does, so
the ratio stops as soon as a bound shows the threshold is out of reach. The bounds are upper
bounds on difflib's own count of matching tokens, so the answer for a pair that reaches the
threshold is difflib's, to the last digit.
"""

from __future__ import annotations

from collections import Counter
from itertools import accumulate

# Pairs of more tokens than this (len(a) * len(b)) are matched with a running bound (_matches);
# below it difflib's ratio costs less than keeping the bound.
BOUNDED_PAIRS = 1_000_000


def token_similarity(a: tuple[str, ...], b: tuple[str, ...], at_least: float = 0.0) -> float:
    """difflib's ratio of two token sequences (2 * matches / total), 0.0 as soon as a bound shows
    it is below `at_least`. With difflib's automatic junk (tokens making up over 1% of `b`, when
    it has 200 or more: brackets, dots, `self`) left out of where matches start: without it,
    code full of repeated tokens made the ratio quadratic (50 x 50 renamed long methods: 160 s,
    against 4 s with it; the ratios of the oracles' cases did not move)."""
    if not a and not b:
        return 1.0
    total = len(a) + len(b)
    # difflib's real_quick_ratio, before the matcher indexes b (most pairs stop here).
    if 2.0 * min(len(a), len(b)) / total < at_least:
        return 0.0
    from difflib import SequenceMatcher   # not at import: a history query lexes nothing
    matcher = SequenceMatcher(None, a, b)
    if matcher.quick_ratio() < at_least:
        return 0.0
    if at_least <= 0.0 or len(a) * len(b) <= BOUNDED_PAIRS:
        return matcher.ratio()
    matches = _matches(matcher, a, b, at_least)
    return 0.0 if matches is None else 2.0 * matches / total


def _matches(matcher, a: tuple[str, ...], b: tuple[str, ...], at_least: float) -> int | None:
    """The tokens of difflib's matching blocks (what its ratio counts), or None once they cannot
    reach `at_least` of the total.

    difflib finds the longest match in the whole range, then searches the ranges left of it and
    right of it in turn. Between two sequences alike in their tokens but not in their order
    (sympy's generated tests: 44k and 38k tokens, 0.84 alike by their counts, 0.08 by difflib)
    each longest match is a few tokens long and each search rescans almost all of both: 670
    searches, 5 s. Here the same searches (difflib's own find_longest_match, so the same blocks)
    keep a bound, once they have taken more than BOUND_AFTER steps a token (near copies, done in
    a few searches, never pay for it): the tokens matched so far plus, for each range still to
    search, the least of two bounds on what it can still match:
    - how many tokens its two sides have in common by count, kept from its parent's counts less
      what the split took (or counted afresh for the smaller child);
    - its longest common subsequence (difflib's blocks in it form one), its parent's less the
      block between them, or computed afresh for the larger child (_Schedule says when)."""
    total = len(a) + len(b)
    schedule = _Schedule(matcher, a)
    stack: list[_Range] = [_Range(0, len(a), 0, len(b), lcs=total)]
    matched, pending = 0, 0   # pending: the bounds of the ranges on the stack, once counted
    counted = False
    while stack:
        if not counted and schedule.total > BOUND_AFTER * total:
            counted = True
            for r in stack:
                pending += r.count(a, b)
        if counted and 2.0 * (matched + pending) / total < at_least:
            return None
        r = stack.pop()
        pending -= r.bound
        i, j, k = matcher.find_longest_match(r.alo, r.ahi, r.blo, r.bhi)
        schedule.searched(r.alo, r.ahi)
        if not k:
            continue
        matched += k
        children = [c for c in (_Range(r.alo, i, r.blo, j, lcs=r.lcs - k),
                                _Range(i + k, r.ahi, j + k, r.bhi, lcs=r.lcs - k)) if c.size]
        if not children:
            continue
        # The larger child takes the parent's counts, less what lies outside it; the smaller,
        # if any, is counted afresh. Either child's common subsequence, with the block, is one
        # of the parent's: at most lcs - k.
        children.sort(key=lambda c: c.ahi - c.alo + c.bhi - c.blo)
        *small, large = children
        for c in small:
            stack.append(c)
            if counted:
                pending += c.count(a, b)
        if counted:
            large.take_counts(r, a, b)
            if large.bound and schedule.due(large):
                large.lcs = min(large.lcs, schedule.compute(a[large.alo:large.ahi],
                                                            b[large.blo:large.bhi]))
            pending += large.bound
        stack.append(large)
    return matched


# Steps of difflib's searches (see _Schedule) per token of the pair before the bound is kept.
BOUND_AFTER = 4


class _Range:
    """A range of both sequences still to search, with what bounds its matches once counted."""

    __slots__ = ("alo", "ahi", "blo", "bhi", "counts_a", "counts_b", "common", "lcs")

    def __init__(self, alo: int, ahi: int, blo: int, bhi: int, lcs: int):
        self.alo, self.ahi, self.blo, self.bhi = alo, ahi, blo, bhi
        self.counts_a: Counter[str] = Counter()
        self.counts_b: Counter[str] = Counter()
        self.common = 0     # tokens its two sides have in common by count; 0 until counted
        self.lcs = lcs      # an upper bound on its longest common subsequence

    @property
    def bound(self) -> int:
        """What it can still match (0 until counted)."""
        return min(self.common, self.lcs)

    @property
    def size(self) -> int:
        """Token pairs (0 when either side is empty: nothing to search)."""
        return max(0, self.ahi - self.alo) * max(0, self.bhi - self.blo)

    def count(self, a: tuple[str, ...], b: tuple[str, ...]) -> int:
        """Counts its tokens afresh; returns its bound."""
        self.counts_a, self.counts_b = Counter(a[self.alo:self.ahi]), Counter(b[self.blo:self.bhi])
        self.common = sum(min(n, self.counts_b[t]) for t, n in self.counts_a.items())
        return self.bound

    def take_counts(self, parent: "_Range", a: tuple[str, ...], b: tuple[str, ...]) -> None:
        """The parent's counts (the parent is done with them), less its tokens outside this."""
        ca, cb, common = parent.counts_a, parent.counts_b, parent.common
        for seq, lo, hi, keep_lo, keep_hi, counts, other in (
                (a, parent.alo, parent.ahi, self.alo, self.ahi, ca, cb),
                (b, parent.blo, parent.bhi, self.blo, self.bhi, cb, ca)):
            for t in (*seq[lo:keep_lo], *seq[keep_hi:hi]):
                if counts[t] <= other[t]:
                    common -= 1
                counts[t] -= 1
        self.counts_a, self.counts_b, self.common = ca, cb, common


class _Schedule:
    """When a range's longest common subsequence is worth computing. It costs about
    len(a) * len(b) / LCS_PER_VISIT of difflib's steps (a step: one position of b looked at for
    one position of a in a search), whatever the tokens; a search costs what its tokens' places
    in b add up to: near nothing for tokens that occur once, most of the time for few tokens
    in many places (sympy's worst pair). So one is computed once the searches since the last
    have taken as many steps as it will, and the wait doubles each time one does not end the
    pair: for a pair that reaches its threshold (where no bound can help) the subsequences cost
    a few times the last one, beside searches that took at least as long."""

    def __init__(self, matcher, a: tuple[str, ...]):
        places = matcher.b2j   # difflib's index of b: token -> its positions (popular ones out)
        self.steps = [0, *accumulate(len(places.get(t, ())) for t in a)]
        self.total = 0      # steps searched
        self.since = 0      # steps searched since the last subsequence
        self.patience = 1   # doubles after each subsequence that did not end the pair

    def searched(self, alo: int, ahi: int) -> None:
        steps = self.steps[ahi] - self.steps[alo]
        self.total += steps
        self.since += steps

    def due(self, r: _Range) -> bool:
        return r.size > BOUNDED_PAIRS and self.since >= self.patience * r.size / LCS_PER_VISIT

    def compute(self, a: tuple[str, ...], b: tuple[str, ...]) -> int:
        self.since = 0
        self.patience *= 2
        return common_subsequence_length(a, b)


# A bit-parallel subsequence step over 1,000 positions of b costs about what difflib pays for
# one position it looks at in a search (both measured on sympy's worst pair: 0.13 s for 44k x
# 38k tokens; 57 ms for a search of ~500k looks).
LCS_PER_VISIT = 1000


def common_subsequence_length(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """The length of the longest common subsequence of `a` and `b`, bit-parallel (Allison and
    Dix 1986; Hyyrö 2004): one step per token of the longer, over the shorter's positions as the
    bits of an int, each step a few operations on ints of len(b) bits."""
    if len(a) < len(b):
        a, b = b, a
    positions: dict[str, list[int]] = {}
    for j, token in enumerate(b):
        positions.setdefault(token, []).append(j)
    masks = {token: sum(1 << j for j in js) for token, js in positions.items()}
    full = (1 << len(b)) - 1
    row = full   # a 1 bit for each position of b not yet in the common subsequence
    for token in a:
        mask = masks.get(token)
        if mask:   # a token absent from b changes nothing
            matched = row & mask
            row = ((row + matched) | (row - matched)) & full
    return len(b) - row.bit_count()
