#!/usr/bin/env python3
"""Where the time of reading commits goes (issue 17, item 2), and what skipping parses could save.

Reads a slice of REPO's history in this one process, as one index worker reads its range: the
non-merge commits in the index's order (oldest first: topological, then by time, as the index
walks), with a fresh CommitReader whose parser's caches are a worker's (sized to the share a
default run gives each of its workers, `--budget-mb`; `--budget-mb 0`: the default caches, as
`--jobs 1` reads). Each component is timed with a wrapper (perf_counter, not a profiler, so the
proportions are the run's own):

  - tree-sitter parses, full and incremental (the old tree cached, edited, re-parsed), with the
    bytes parsed; an incremental parse whose tree has errors is parsed again in full (counted
    as a fallback, its time in "full");
  - the definition walk over each new tree (`_Walker.extract`);
  - symbol matching (`match_commit`: change kinds, pairing renames and moves);
  - the words of the changed lines, their redaction included (`words_of`);
  - the rest (git diffs, blob reads, patches, the reader's bookkeeping).

The baseline is git printing the same commits' patches, in the same run: `git log -p
--no-walk=unsorted --stdin` fed the slice's ids (on the whole history, about what `git log -p
--no-merges` takes).

The parse-skip estimate: a new version whose old version's symbols are at hand, and whose every
hunk lies strictly inside one function's or method's lines (neither its first nor its last line
touched, no other definition's boundary in reach), is a candidate for shifting the old symbols
instead of parsing; its parse and walk time is the most a skip could save, before the cost of
proving the skip safe. An upper bound: a symbol's lines start at its first decorator, so an
edit of a decorated function's `def` line, or inside a signature of several lines, counts too
(on werkzeug's first 1,500 commits, 4 of 530 such versions changed a definition's name, kind or
nesting). Measured on sympy and werkzeug: docs/numbers.md, "Where the reading time goes".

A new version whose old version's symbols are cached but not its tree is read by regions
(symbols.py: only the module-level definitions its hunks touch are parsed, Python only): timed
as its own component, its walks included. `--verify` also parses each such version in full and
counts those whose symbols differ (there should be none; the check's time is left out).

`--ranges N` reads the slice as N ranges, each by a fresh reader, as a worker's next range or a
replaced worker starts with cold caches: what those cold starts cost.

Usage: `/work/venv/bin/python bench/bench_read_profile.py REPO [--start N] [--commits N]
[--budget-mb MB] [--ranges N] [--verify]`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import _benchlib as bl

sys.path.insert(0, str(bl.PROJECT_DIR))

import pygit2  # noqa: E402

from cortex_core.config import IndexSettings  # noqa: E402
from cortex_core.git import commit_reader  # noqa: E402
from cortex_core.index.read_pool import _parser, worker_plan  # noqa: E402
from cortex_core.lang import symbols as symbols_module  # noqa: E402

_CALLABLE = frozenset({"function", "method"})


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Time the components of reading commits (parses, the definition walk, "
        "symbol matching, words) in one process against git printing the same patches, and "
        "estimate what skipping the parse of versions edited only inside function bodies "
        "could save.")
    p.add_argument("repo", type=Path, help="the git repository (read only; may be bare)")
    p.add_argument("--start", type=int, default=0,
                   help="first non-merge commit of the slice, counted oldest first (default 0)")
    p.add_argument("--commits", type=int, default=2000,
                   help="commits in the slice (default 2000; 0: to the end)")
    p.add_argument("--budget-mb", type=int,
                   help="size the parser's caches as a worker's with this share (default: the "
                   "share a default index run gives each of 2 workers; 0: the default caches, "
                   "as --jobs 1 reads)")
    p.add_argument("--ranges", type=int, default=1,
                   help="read the slice as this many ranges, each by a fresh reader (cold "
                   "caches, as a worker's next range or a replaced worker starts; default 1)")
    p.add_argument("--verify", action="store_true",
                   help="parse each version read by regions in full too and count those whose "
                   "symbols differ (the check's time is not counted)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    args = p.parse_args(argv)
    if args.start < 0 or args.commits < 0 or (args.budget_mb or 0) < 0:
        p.error("--start, --commits and --budget-mb must be >= 0")
    if args.ranges < 1:
        p.error("--ranges must be >= 1")
    if args.budget_mb is None:
        args.budget_mb = worker_plan(IndexSettings(), 2)[1] // (1024 * 1024)
    return args


def inside_bodies(old: list, hunks: list[tuple[int, int, int, int]]) -> bool:
    """Whether every hunk lies strictly inside one callable of the old symbols: its innermost
    enclosing symbol is a function or method whose first and last lines it does not touch, and
    it touches no other symbol's boundary."""
    for start, lines, _, _ in hunks:
        lo, hi = (start, start + lines - 1) if lines else (start + 1, start)  # a gap after start
        inner = None
        for s in old:
            if s.start_line > hi + 1 or s.end_line < lo - 1:
                continue   # not within reach of the hunk
            if not (s.start_line < lo and hi < s.end_line):
                return False   # the hunk touches its first or last line, or lies around it
            if inner is None or s.start_line >= inner.start_line:
                inner = s
        if inner is None or inner.kind not in _CALLABLE:
            return False
    return True


class Timers:
    """Wraps the reader's components with timers (restored by `restore`)."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self._saved: list[tuple[object, str, object]] = []

    def wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)
        seconds, counts = self.seconds, self.counts

        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[label] += time.perf_counter() - t
                counts[label] += 1
        self._saved.append((owner, name, original))
        setattr(owner, name, timed)

    def restore(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)


def instrument(timers: Timers, skip: dict, verify: bool = False) -> None:
    parser_class = symbols_module.SymbolParser
    parse = parser_class._parse
    symbols = parser_class.symbols
    by_regions = parser_class._by_regions

    def timed_regions(self, walker, language, base, source, lines):
        t, walked = time.perf_counter(), timers.seconds["definition walk"]
        out = by_regions(self, walker, language, base, source, lines)
        # The regions' own walks belong to this component, not to the walk of whole trees.
        timers.seconds["definition walk"] = walked
        timers.seconds["reading by regions"] += time.perf_counter() - t
        timers.counts["region attempts"] += 1
        if out is not None:
            timers.counts["read by regions"] += 1
            timers.counts["read by regions bytes"] += len(source)
            if verify:
                t = time.perf_counter()
                if out != symbols_module.extract_symbols(language, source):
                    timers.counts["read by regions, different from a full parse"] += 1
                timers.seconds["verifying"] += time.perf_counter() - t
        return out

    def timed_parse(self, language, source, base):
        t = time.perf_counter()
        tree, reuse = parse(self, language, source, base)
        kind = "incremental parse" if reuse is not None else "full parse"
        if base is not None and reuse is None:
            timers.counts["incremental fell back to full"] += 1
        timers.seconds[kind] += time.perf_counter() - t
        timers.counts[kind] += 1
        timers.counts[kind + " bytes"] += len(source)
        return tree, reuse

    def timed_symbols(self, language, blob_id, source, base=None):
        key = (language, blob_id)
        if base is None or key in self._cache:
            return symbols(self, language, blob_id, source, base)
        old = self._cache.get((language, base[0]))
        t = time.perf_counter()
        out = symbols(self, language, blob_id, source, base)
        spent = time.perf_counter() - t
        skip["new versions parsed"] += 1
        skip["their seconds"] += spent
        if old is not None and inside_bodies(old, base[1]):
            skip["edited inside bodies only"] += 1
            skip["seconds a skip could save"] += spent
        return out

    timers._saved += [(parser_class, "_parse", parse), (parser_class, "symbols", symbols),
                      (parser_class, "_by_regions", by_regions)]
    parser_class._parse = timed_parse
    parser_class.symbols = timed_symbols
    parser_class._by_regions = timed_regions
    timers.wrap(symbols_module._Walker, "extract", "definition walk")
    timers.wrap(commit_reader, "match_commit", "symbol matching")
    timers.wrap(commit_reader, "words_of", "words of changed lines")   # the reader's own name


def git_baseline(repo: Path, shas: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(["git", "-C", str(repo), "log", "-p", "--no-walk=unsorted", "--stdin"],
                   input="\n".join(shas).encode(), stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = pygit2.Repository(str(args.repo))
    if repo.head_is_unborn:
        print("no commits in the slice: HEAD has no commit yet", file=sys.stderr)
        return 2
    mode = pygit2.enums.SortMode
    order = mode.TOPOLOGICAL | mode.TIME | mode.REVERSE   # as the index walks (ingest.py)
    ids = [c.id for c in repo.walk(repo.head.target, order) if len(c.parent_ids) <= 1]
    stop = len(ids) if not args.commits else args.start + args.commits
    history = len(ids)
    ids = ids[args.start:stop]
    if not ids:
        print(f"no commits in the slice: the history has {history} non-merge commits",
              file=sys.stderr)
        return 2
    bl.progress(f"{len(ids)} commits from #{args.start} ...")
    git_seconds = min(git_baseline(args.repo, [str(i) for i in ids]) for _ in range(2))
    timers, skip = Timers(), defaultdict(float)
    budget = args.budget_mb * 1024 * 1024
    try:
        instrument(timers, skip, args.verify)
        size = -(-len(ids) // args.ranges)
        start = time.perf_counter()
        for first in range(0, len(ids), size):   # each range from cold caches
            reader = commit_reader.CommitReader(repo, IndexSettings(), parser=_parser(budget))
            for oid in ids[first:first + size]:
                reader.read(repo.get(oid))
        total = time.perf_counter() - start - timers.seconds["verifying"]
    finally:
        timers.restore()
    parts = {k: timers.seconds[k] for k in ("full parse", "incremental parse", "reading by regions",
                                            "definition walk", "symbol matching",
                                            "words of changed lines")}
    parts["the rest (diffs, blobs, patches, bookkeeping)"] = total - sum(parts.values())
    report = {"benchmark": "read_profile", "environment": bl.environment(args.repo),
              "config": bl.config(args), "commits": len(ids), "seconds": total,
              "git_log_p_seconds": git_seconds, "over_git_log_p": total / git_seconds,
              "parts_seconds": parts, "counts": dict(timers.counts), "parse_skip": dict(skip)}
    bl.emit(report, args.json, render)
    return 0


def render(r: dict) -> str:
    c, budget = r["counts"], r["config"]["budget_mb"]
    rows = [[name, f"{s:.2f} s", f"{100 * s / r['seconds']:.0f}%"]
            for name, s in r["parts_seconds"].items()]
    skip = r["parse_skip"]
    parsed = skip.get("new versions parsed", 0)
    lines = [
        *bl.environment_lines(r["environment"]),
        "parser caches: " + (f"a worker's, for a share of {budget} MB" if budget
                             else "the default (as --jobs 1 reads)"),
        f"{r['commits']} commits read in one process"
        + (f" as {r['config']['ranges']} ranges, each by a fresh reader"
           if r["config"].get("ranges", 1) > 1 else "")
        + f": {r['seconds']:.1f} s = "
        f"{r['over_git_log_p']:.1f}x git log -p of the same commits ({r['git_log_p_seconds']:.2f} s)",
        "",
        bl.table(rows, ["component", "time", "share"]),
        "",
        f"parses: {c.get('full parse', 0)} full ({c.get('full parse bytes', 0) / 1e6:.1f} MB), "
        f"{c.get('incremental parse', 0)} incremental "
        f"({c.get('incremental parse bytes', 0) / 1e6:.1f} MB), "
        f"{c.get('incremental fell back to full', 0)} incremental trees with errors parsed again",
        f"read by regions: {c.get('read by regions', 0)} new versions "
        f"({c.get('read by regions bytes', 0) / 1e6:.1f} MB) of {c.get('region attempts', 0)} "
        "whose old tree was gone"
        + (f"; {c.get('read by regions, different from a full parse', 0)} different from a full "
           "parse (--verify)" if r["config"].get("verify") else ""),
        f"parse skip: {int(skip.get('edited inside bodies only', 0))} of {int(parsed)} new versions "
        f"parsed were edited strictly inside a function's lines only; their parse and walk took "
        f"{skip.get('seconds a skip could save', 0):.2f} s = "
        f"{100 * skip.get('seconds a skip could save', 0) / r['seconds']:.0f}% of the reading "
        "(an upper bound on what a skip could save)",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
