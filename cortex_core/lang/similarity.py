"""How alike two definitions are: difflib's ratio of their code tokens (change_kinds.masked),
for pairing renames and moves with edits (symbol_changes).

The pairing only asks whether a pair reaches a threshold, and how alike it is when it does, so
the ratio stops as soon as a bound shows the threshold is out of reach. The bounds are upper
bounds on difflib's own count of matching tokens, so the answer for a pair that reaches the
threshold is difflib's, to the last digit.
"""

from __future__ import annotations

from collections import Counter

# Pairs of more tokens than this (len(a) * len(b)) are matched with a running bound (_matches);
# below it difflib's ratio costs less than keeping the bound.
BOUNDED_PAIRS = 1_000_000


def token_similarity(a: tuple[str, ...], b: tuple[str, ...], at_least: float = 0.0) -> float:
    """difflib's ratio of two token sequences (2 * matches / total), 0.0 as soon as a bound shows
    it is below `at_least`. With difflib's automatic junk (tokens making up over 1% of a
    sequence of 200 or more: brackets, dots, `self`) left out of where matches start: without it,
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
    keep a bound: the tokens matched so far plus, for each range still to search, the least of
    two bounds on what it can still match:
    - how many tokens its two sides have in common by count, kept from its parent's counts less
      what the split took (or counted afresh for the smaller child);
    - its longest common subsequence (difflib's blocks in it form one), computed for a large
      range every LCS_EVERY splits, and otherwise its parent's less the block between them."""
    total = len(a) + len(b)
    ca, cb = Counter(a), Counter(b)
    common = sum(min(n, cb[t]) for t, n in ca.items())
    lcs = common_subsequence_length(a, b)
    bound = min(common, lcs)
    stack = [(0, len(a), 0, len(b), ca, cb, common, lcs, bound, 0)]
    matched, pending = 0, bound   # pending: the bounds of the ranges on the stack
    while stack:
        if 2.0 * (matched + pending) / total < at_least:
            return None
        alo, ahi, blo, bhi, ca, cb, common, lcs, bound, splits = stack.pop()
        pending -= bound
        i, j, k = matcher.find_longest_match(alo, ahi, blo, bhi)
        if not k:
            continue
        matched += k
        children = [r for r in ((alo, i, blo, j), (i + k, ahi, j + k, bhi))
                    if r[0] < r[1] and r[2] < r[3]]
        if not children:
            continue
        # The larger child takes the parent's counts, less what lies outside it; the smaller,
        # if any, is counted afresh. Either child's common subsequence, with the block, is one
        # of the parent's: at most lcs - k.
        children.sort(key=lambda r: r[1] - r[0] + r[3] - r[2])
        *small, large = children
        for seq, lo, hi, keep_lo, keep_hi, counts, other in (
                (a, alo, ahi, large[0], large[1], ca, cb),
                (b, blo, bhi, large[2], large[3], cb, ca)):
            for t in (*seq[lo:keep_lo], *seq[keep_hi:hi]):
                if counts[t] <= other[t]:
                    common -= 1
                counts[t] -= 1
        for lo_a, hi_a, lo_b, hi_b in small:
            sa, sb = Counter(a[lo_a:hi_a]), Counter(b[lo_b:hi_b])
            c = sum(min(n, sb[t]) for t, n in sa.items())
            stack.append((lo_a, hi_a, lo_b, hi_b, sa, sb, c, lcs - k, min(c, lcs - k), 0))
            pending += min(c, lcs - k)
        lcs -= k
        splits += 1
        if splits % LCS_EVERY == 0 and \
                (large[1] - large[0]) * (large[3] - large[2]) > BOUNDED_PAIRS:
            lcs = min(lcs, common_subsequence_length(a[large[0]:large[1]], b[large[2]:large[3]]))
        stack.append((*large, ca, cb, common, lcs, min(common, lcs), splits))
        pending += min(common, lcs)
    return matched


# Splits of a large range between two computations of its longest common subsequence: on
# sympy's worst pair one takes 0.13 s, as much as two of difflib's searches.
LCS_EVERY = 16


def common_subsequence_length(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """The length of the longest common subsequence of `a` and `b`, bit-parallel (Allison and
    Dix 1986; Hyyrö 2004): one step per token of the longer, over the shorter's positions as the
    bits of an int, so about len(a) * len(b) / 30 machine operations."""
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
