"""How long the pairing's similarity takes against difflib's plain ratio, on shapes of token
sequences that make difflib fast or slow (issue 17: symbol matching on sympy's early history).

    python bench/bench_similarity.py [--scale 1.0] [--runs 2] [--json]

Each shape is a pair of token sequences and the threshold the pairing would ask at. Both are
timed in this process, in turn, best of `--runs`: the baseline is difflib's ratio after the same
cheap bounds (lengths, then counts: `quick_ratio`), which is what the pairing ran before
`lang/similarity.py`; then `token_similarity`, which keeps a running bound on large pairs. Each
answer is checked: the same value when the ratio reaches the threshold, one under it otherwise.
`--scale` multiplies the sequences' lengths (0.05 for a quick look).

Shapes: near copies of distinct tokens (difflib finds one long block: fast); a sequence against
itself; a shuffle of a few popular tokens (difflib starts no match at a token over 1% of b: fast);
every third token replaced (every block is two tokens long: difflib is quadratic, and no bound
helps, the pair reaching its threshold); and shuffled twins, tokens each in a few places under
1% (sympy's generated tests: alike by their counts, hardly by difflib, each search rescanning
almost all of both): there the bound ends the search early.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from difflib import SequenceMatcher

from _benchlib import emit, environment, environment_lines, table

from cortex_core.lang.similarity import token_similarity


def plain(a: tuple[str, ...], b: tuple[str, ...], at_least: float) -> float:
    """The pairing's similarity before lang/similarity.py: difflib after its cheap bounds."""
    if not a and not b:
        return 1.0
    if 2.0 * min(len(a), len(b)) / (len(a) + len(b)) < at_least:
        return 0.0
    matcher = SequenceMatcher(None, a, b)
    return 0.0 if matcher.quick_ratio() < at_least else matcher.ratio()


def shapes(scale: float) -> list[tuple[str, tuple[str, ...], tuple[str, ...], float]]:
    rng = random.Random(3)

    def n(count: int) -> int:
        return max(10, int(count * scale))

    def distinct(count: int) -> tuple[str, ...]:
        return tuple(f"t{i}" for i in rng.sample(range(10 ** 9), n(count)))

    out = []
    a = distinct(100_000)
    out.append(("near copy, distinct tokens", a, a[:len(a) // 2] + ("x",) + a[len(a) // 2 + 1:],
                0.8))
    a = distinct(44_000)
    out.append(("a sequence against itself", a, a, 0.8))
    few = ["(", ")", ",", "S", "1", "2", "/", "Ket", "couple", "expand"]
    a = tuple(rng.choice(few) for _ in range(n(40_000)))
    out.append(("ten popular tokens, shuffled", a, tuple(rng.sample(a, len(a))), 0.6))
    a = distinct(10_000)
    out.append(("every third token replaced", a,
                tuple(f"x{i}" if i % 3 == 0 else t for i, t in enumerate(a)), 0.65))
    for count in (3_000, 40_000):
        a = tuple(f"w{rng.randrange(max(1, n(count) // 8))}" for _ in range(n(count)))
        out.append((f"shuffled twins, {n(count):,} tokens", a, tuple(rng.sample(a, len(a))), 0.6))
    return out


def measure(args) -> dict:
    rows = []
    for name, a, b, at_least in shapes(args.scale):
        base, new = [], []
        for _ in range(args.runs):
            start = time.perf_counter()
            expected = plain(a, b, at_least)
            base.append(time.perf_counter() - start)
            start = time.perf_counter()
            got = token_similarity(a, b, at_least)
            new.append(time.perf_counter() - start)
        same = (got >= at_least) == (expected >= at_least) and \
            (expected < at_least or got == expected)
        rows.append({"shape": name, "tokens": [len(a), len(b)], "threshold": at_least,
                     "difflib_seconds": min(base), "cortex_seconds": min(new),
                     "over_difflib": min(new) / min(base) if min(base) else None,
                     "ratio": SequenceMatcher(None, a, b).ratio() if args.exact else None,
                     "same_answer": same})
    return {"benchmark": "similarity", "environment": environment(), "scale": args.scale,
            "runs": args.runs, "shapes": rows}


def render(report: dict) -> str:
    rows = [[r["shape"], f"{r['tokens'][0]:,} x {r['tokens'][1]:,}", str(r["threshold"]),
             f"{r['difflib_seconds'] * 1000:.1f} ms", f"{r['cortex_seconds'] * 1000:.1f} ms",
             f"{r['over_difflib']:.2f}x" if r["over_difflib"] else "-",
             "yes" if r["same_answer"] else "NO"] for r in report["shapes"]]
    return "\n".join([*environment_lines(report["environment"]), "", table(
        rows, ["shape", "tokens", "threshold", "difflib", "cortex", "cortex / difflib",
               "same answer"])])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the sequences' lengths (default 1.0; 0.05 is quick)")
    parser.add_argument("--runs", type=int, default=2, help="best of this many (default 2)")
    parser.add_argument("--exact", action="store_true",
                        help="also report difflib's ratio of each pair (slow at scale 1)")
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.runs < 1:
        parser.error("--scale must be positive and --runs at least 1")
    report = measure(args)
    emit(report, args.json, render)
    return 0 if all(r["same_answer"] for r in report["shapes"]) else 1


if __name__ == "__main__":
    sys.exit(main())
