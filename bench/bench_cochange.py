#!/usr/bin/env python3
"""Co-change on a time-split history: `cortex related` against association rules (same run).

The protocol (issue 14), on a private clone of REPO:

  1. split: the commit at 80% (--split) of HEAD's first-parent history, oldest first; the clone
     is checked out there and indexed by `cortex index --model none` (what cortex knows is what
     happened up to the split);
  2. test transactions: every non-merge commit after the split (`git log SPLIT..HEAD`) that
     changes 2 to 10 files (paths as git lists them without rename detection); each of its files
     that existed at the split is a query, gold = its other files that existed at the split;
     changelog files (CHANGELOG, CHANGES, HISTORY, NEWS, RELEASE-NOTES, bare or as text or markup, and
     fragments under changelog.d/, newsfragments/, changelogs/) are left out of queries,
     gold, transactions and answers: they change with everything;
  3. the baseline, association rules as in Zimmermann et al., "Mining Version Histories to Guide
     Software Changes" (ICSE 2004), written here from `git log` alone: transactions = non-merge
     commits up to the split changing at most 30 files (--max-changeset), every path counted
     (lockfiles, generated files); for a query f and a candidate g, support = transactions
     changing both, confidence = support / transactions changing f (for one query file the same
     order as support); ranked by support, ties by the time of the newest transaction changing
     both (newer first), then path; support >= 1; answers limited to files that exist at the
     split (a filter any user would apply: it only makes the baseline stronger);
  4. cortex: for each query, in this process on one reader connection, `cortex_core.blast.
     fused_related` (what `cortex related PATH` answers) and `cortex_core.coupling.related`
     (co-change alone), top 10; with --variant NAME=key:value,..., further configurations of
     the ranking (each component's gain measured apart).

Scores over all queries: Recall@10 (share of a query's gold in the top 10, averaged over
queries) and MRR@10 (1 / rank of the first gold file in the top 10, 0 if none), with the number
of queries each method answers better than the baseline and worse. Latency of `related`: p50 and
p95 per query (warm connection); of the hover's "usually changes with" line
(`coupling.strongest_symbol`): p50 and p95 over up to 300 functions and methods, warm.

Run with the venv's python: `/work/venv/bin/python bench/bench_cochange.py REPO`.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import _benchlib as bl

_CHANGELOG_NAMES = re.compile(
    r"(?i)^(change[-_]?log|changes|history|news|release[-_]?notes|whatsnew)"
    r"(\.(md|markdown|rst|txt|adoc|asciidoc|org|xml))?$")
_CHANGELOG_DIRS = {"changelog.d", "newsfragments", "changelogs"}


def is_changelog(path: str) -> bool:
    parts = path.split("/")
    return bool(_CHANGELOG_NAMES.match(parts[-1])) or any(
        p.lower() in _CHANGELOG_DIRS for p in parts[:-1])


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Time-split co-change evaluation: cortex related (fused, and co-change "
        "alone) against association rules written here, Recall@10 and MRR@10.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--split", type=float, default=0.8,
                   help="where to split HEAD's first-parent history (default 0.8)")
    p.add_argument("--top", type=int, default=10, help="answers scored per query (default 10)")
    p.add_argument("--max-changeset", type=int, default=30,
                   help="transactions larger than this are left out (default 30)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=K:V,...",
                   help="a further cortex configuration: keyword arguments passed to "
                   "fused_related and related (e.g. nodecay=half_life_days:0)")
    p.add_argument("--db", type=Path, help="reuse this database (must index the split)")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    return p.parse_args(argv)


@dataclass
class Transaction:
    sha: str
    time: int
    files: list[str]


def log(clone: Path, rev: str) -> list[Transaction]:
    """Non-merge commits of `rev` (a range or a commit), oldest first, paths without renames."""
    out = bl.git(clone, "log", "--no-merges", "--no-renames", "--format=%x01%H %ct",
                 "--name-only", "--reverse", rev)
    found = []
    for chunk in out.split("\x01")[1:]:
        head, *names = chunk.strip("\n").split("\n")
        sha, stamp = head.split()
        found.append(Transaction(sha, int(stamp), [n for n in names if n]))
    return found


class AssociationRules:
    """The baseline: single-antecedent rules over the training transactions."""

    def __init__(self, transactions: list[Transaction], max_changeset: int, alive: set[str]):
        self.of_file: dict[str, list[int]] = defaultdict(list)
        self.transactions = []
        for t in transactions:
            files = [f for f in t.files if not is_changelog(f)]
            if len(t.files) > max_changeset or not files:
                continue
            index = len(self.transactions)
            self.transactions.append((t.time, files))
            for f in files:
                self.of_file[f].append(index)
        self.alive = alive

    def rank(self, query: str, top: int) -> list[str]:
        support: dict[str, int] = defaultdict(int)
        newest: dict[str, int] = {}
        for index in self.of_file.get(query, ()):
            stamp, files = self.transactions[index]
            for g in files:
                if g != query and g in self.alive:
                    support[g] += 1
                    newest[g] = max(newest.get(g, 0), stamp)
        ranked = sorted(support, key=lambda g: (-support[g], -newest[g], g))
        return ranked[:top]


def scores(answers: list[list[str]], golds: list[set[str]], top: int) -> dict:
    recall, rr = [], []
    for answer, gold in zip(answers, golds):
        top_answers = answer[:top]
        recall.append(len(gold & set(top_answers)) / len(gold))
        rr.append(next((1 / (i + 1) for i, a in enumerate(top_answers) if a in gold), 0.0))
    n = len(golds)
    return {"recall": sum(recall) / n, "mrr": sum(rr) / n, "per_query_recall": recall,
            "per_query_rr": rr}


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    env = bl.environment(repo)
    work = bl.work_dir("cochange-", args.keep)
    try:
        return _run(args, repo, env, work)
    finally:
        if not args.keep:
            bl.remove(work)


def _variants(specs: list[str]) -> list[tuple[str, dict]]:
    out = []
    for spec in specs:
        name, _, body = spec.partition("=")
        kwargs = {}
        for item in filter(None, body.split(",")):
            key, _, value = item.partition(":")
            kwargs[key] = _value(value)
        out.append((name, kwargs))
    return out


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def _accepted(fn, kwargs: dict) -> dict:
    names = inspect.signature(fn).parameters
    return {k: v for k, v in kwargs.items() if k in names}


def _run(args, repo: Path, env: dict, work: Path) -> int:
    head = bl.git(repo, "rev-parse", "HEAD")
    line = bl.git(repo, "rev-list", "--first-parent", "--reverse", head).split()
    split = line[min(len(line) - 1, int(len(line) * args.split))]
    clone = bl.private_clone(repo, work / "clone", checkout=False)
    bl.git(clone, "checkout", "-q", "--detach", split)
    alive = set(bl.git(clone, "ls-tree", "-r", "--name-only", split).splitlines())
    alive = {p for p in alive if not is_changelog(p)}
    training = log(clone, split)
    tests = [t for t in log(clone, f"{split}..{head}") if 2 <= len(t.files) <= 10]
    queries: list[tuple[str, set[str]]] = []
    for t in tests:
        files = {f for f in t.files if f in alive}
        for f in sorted(files):
            gold = files - {f}
            if gold:
                queries.append((f, gold))
    print(f"split {split[:10]} ({args.split:.0%} of {len(line)} first-parent commits); "
          f"{len(training)} training commits, {len(tests)} test transactions, "
          f"{len(queries)} queries", file=sys.stderr)

    baseline = AssociationRules(training, args.max_changeset, alive)
    started = time.perf_counter()
    base_answers = [baseline.rank(q, args.top) for q, _ in queries]
    base_seconds = time.perf_counter() - started

    db = args.db
    if db is None:
        db = work / "cortex.db"
        print("indexing the split ...", file=sys.stderr)
        bl.run([*bl.cortex_command(), "index", "--repo", str(clone), "--db", str(db), "--quiet",
                "--model", "none"])
    from cortex_core.blast import fused_related
    from cortex_core.coupling import related
    from cortex_core.errors import CortexError
    from cortex_core.store import open_reader
    from cortex_core.targets import TargetSpec
    con = open_reader(db)

    methods = [("cortex related", fused_related, {}), ("co-change alone", related, {})]
    for name, kwargs in _variants(args.variant):
        methods.append((f"{name} (fused)", fused_related, kwargs))
        methods.append((f"{name} (co-change)", related, kwargs))
    golds = [g for _, g in queries]
    report = {"environment": env, "repo": str(repo), "split": split, "head": head,
              "first_parent_commits": len(line), "training_commits": len(training),
              "test_transactions": len(tests), "queries": len(queries), "top": args.top,
              "methods": {}}
    base = scores(base_answers, golds, args.top)
    report["methods"]["association rules"] = {
        "recall": base["recall"], "mrr": base["mrr"], "seconds_per_query":
        base_seconds / max(1, len(queries))}
    # What history alone could find: the share of a query's gold that shared at least one
    # training commit with it (no ranking of co-change alone can recall more), averaged alike.
    reachable = [len(g & set(baseline.rank(q, 10**9))) / len(g) for q, g in queries]
    report["history_ceiling"] = sum(reachable) / max(1, len(reachable))
    for name, fn, kwargs in methods:
        call_kwargs = {"max_changeset": args.max_changeset, **kwargs}
        call_kwargs = _accepted(fn, call_kwargs)
        answers, times = [], []
        for q, _ in queries:
            t0 = time.perf_counter()
            try:
                found = fn(con, TargetSpec(q), top_k=args.top, **call_kwargs)
            except CortexError:
                answers.append([])
                times.append(time.perf_counter() - t0)
                continue
            times.append(time.perf_counter() - t0)
            answers.append([p.path for p in found.files])
        s = scores(answers, golds, args.top)
        better = sum(a > b for a, b in zip(s["per_query_recall"], base["per_query_recall"]))
        worse = sum(a < b for a, b in zip(s["per_query_recall"], base["per_query_recall"]))
        report["methods"][name] = {
            "recall": s["recall"], "mrr": s["mrr"], "kwargs": call_kwargs,
            "better_than_baseline": better, "worse_than_baseline": worse,
            "p50_ms": bl.percentile(times, 50) * 1000 if times else None,
            "p95_ms": bl.percentile(times, 95) * 1000 if times else None}
    # The hover's "usually changes with ..." line: strongest_symbol on sampled symbols alive at
    # the split, warm (the history is read once per connection, as in the language server).
    from cortex_core.coupling import strongest_symbol
    from cortex_core.targets import resolve
    symbols = con.execute("select f.path, s.qualname from symbols s join files f on"
                          " f.id = s.file_id where s.alive = 1 and s.kind in ('function', 'method')"
                          " order by s.id limit 300").fetchall()
    hover_times = []
    for path, qualname in symbols:
        try:
            target = resolve(con, TargetSpec(path, qualname))
        except CortexError:
            continue   # an ambiguous short name: the hover resolves by line instead
        strongest_symbol(con, target)
        t0 = time.perf_counter()
        strongest_symbol(con, target)
        hover_times.append(time.perf_counter() - t0)
    if hover_times:
        report["hover_coupled_symbol_ms"] = {"symbols": len(hover_times),
                                             "p50": bl.percentile(hover_times, 50) * 1000,
                                             "p95": bl.percentile(hover_times, 95) * 1000}
    con.close()
    if args.json:
        bl.dump_json(report)
        return 0
    print("\n".join(bl.environment_lines(env)))
    print(f"\n{repo.name}: split at {split[:10]}, {len(queries)} queries from {len(tests)} test "
          f"transactions; {report['history_ceiling']:.3f} of the gold shared a commit with its "
          "query before the split (the ceiling of any co-change ranking without renames)\n")
    rows = []
    for name, m in report["methods"].items():
        delta = "" if name == "association rules" else \
            f"{(m['recall'] - base['recall']) * 100:+.1f}"
        rows.append([name, f"{m['recall']:.3f}", delta, f"{m['mrr']:.3f}",
                     str(m.get("better_than_baseline", "")), str(m.get("worse_than_baseline", "")),
                     f"{m['p95_ms']:.1f}" if m.get("p95_ms") is not None else ""])
    print(bl.table(rows, ["method", "Recall@10", "pts vs rules", "MRR@10", "better", "worse",
                          "p95 ms"]))
    hover = report.get("hover_coupled_symbol_ms")
    if hover:
        print(f"\nhover's coupled-symbol line (strongest_symbol, warm, {hover['symbols']} "
              f"symbols): p50 {hover['p50']:.2f} ms, p95 {hover['p95']:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
