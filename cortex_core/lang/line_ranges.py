"""Sets of line numbers as sorted, disjoint, inclusive ranges: what a diff's hunks cover."""

from __future__ import annotations


def added_ranges(hunks) -> list[tuple[int, int]]:
    """The new side's lines of zero-context hunks (old_start, old_lines, new_start, new_lines)."""
    return sorted((s, s + n - 1) for _, _, s, n in hunks if n > 0)


def intersect_ranges(sets: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """The lines in every one of `sets`: a merge's own lines are those that its diff against
    each parent added (git blame credits them to the merge)."""
    if not sets:
        return []
    out = sets[0]
    for other in sets[1:]:
        merged, i, j = [], 0, 0
        while i < len(out) and j < len(other):
            lo, hi = max(out[i][0], other[j][0]), min(out[i][1], other[j][1])
            if lo <= hi:
                merged.append((lo, hi))
            if out[i][1] < other[j][1]:
                i += 1
            else:
                j += 1
        out = merged
    return out
