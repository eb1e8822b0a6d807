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
  4. cortex: for each query, in this process on one reader connection, `cortex_core.query.blast.
     fused_related` (what `cortex related PATH` answers) and `cortex_core.query.coupling.related`
     (co-change alone), top 10; with --variant NAME=key:value,..., further configurations of
     the ranking (each component's gain measured apart).

Scores over all queries: Recall@10 (share of a query's gold in the top 10, averaged over
queries) and MRR@10 (1 / rank of the first gold file in the top 10, 0 if none), with the number
of queries each method answers better than the baseline and worse. Latency of `related`: p50 and
p95 per query (warm connection); of the hover's "usually changes with" line
(`coupling.strongest_symbol`, then `counted_in_histories`): p50 and p95 over up to 300 functions
and methods, warm.

With --level symbol (issue 14, item 2), the same protocol for symbols (PATH::SYMBOL), every kind
cortex records (functions, methods, classes, Go types...): a change's lines are credited to the
innermost definition holding them, so a class changes only when its own lines do (its header,
its attributes), never because one of its methods did.

  1. two indexes: the split's, and a copy of it indexed on to HEAD (the same symbol ids); the
     second only says which symbols the later commits changed;
  2. a commit's changed symbols: its stored symbol changes, except "rescoped" (the text is the
     same: an enclosing class renamed); test transactions: every non-merge commit after the split
     changing 2 to 10 symbols (a rename counted once); a symbol renamed or moved after the split
     is mapped back to its identity at the split along the head index's links; each that
     existed at the split is a query, gold = the others that did;
  3. the baseline's transactions: the same stored changes of the split index, each symbol under
     the name it had at that commit (no rename following, as `git log -p` hunks mapped onto
     definitions would give), non-merge commits of at most 30 files; ranked as above, answers
     limited to symbols alive at the split;
  4. cortex: `cortex_core.query.blast.fused_related(...).symbols`, what `cortex related
     PATH::SYMBOL` lists under symbols (co-change, the file back-off and the calls), and
     `cortex_core.query.coupling.related(..., file_prior=0).symbols` (co-change alone), top 10, on
     the split index.

With --set (issue 14, item 3: the working tree's "you probably also need to touch ..."), at
either level: each test transaction with at least 2 items that existed at the split is one
query, its items sorted by name; the first half (at least one) is the changed set, gold = the
rest. The baseline aggregates the rules the simplest way: a candidate's score is its highest
confidence from any item of the set (ties by the newest transaction changing both, then name),
the set's items left out ("rules, summed support" ranks by the sum of the supports instead,
for reference). cortex: `coupling.related_to_set` (what `cortex related` without a
target ranks: the files of the set, or its symbols at symbol level), top 10.

Run with the venv's python: `/work/venv/bin/python bench/bench_cochange.py REPO`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import _benchlib as bl
from _cochange_common import (AssociationRules, accepted, halves, build_index, methods_table,
                              split_commit, variants, _versus, is_changelog, log, scores,
                              alone_line, versus_alone)
from _cochange_sets import set_report
from _cochange_symbols import (cortex_answers, hidden_by_lineage, symbol_names, print_symbol_report,
                               _rules_on_cortex_data, _symbol_dbs, symbol_queries, symbol_training)


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
    p.add_argument("--level", choices=("file", "symbol"), default="file",
                   help="rank files for files (default), or symbols for symbols (PATH::SYMBOL)")
    p.add_argument("--db", type=Path, help="reuse this database (must index the split)")
    p.add_argument("--head-db", type=Path,
                   help="--level symbol: reuse this database, a copy of --db indexed on to HEAD")
    p.add_argument("--substantive-gold", action="store_true",
                   help="--level symbol: tests and gold from the changes coupling counts only "
                   "(no reformatting, no move without edits)")
    p.add_argument("--set", action="store_true",
                   help="queries are sets: the first half of a test transaction, gold the rest "
                   "(cortex related without a target, against the rules' max confidence)")
    p.add_argument("--jobs", type=int, default=1,
                   help="processes `cortex index` reads history with (default 1)")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    env = bl.environment(repo)
    work = bl.work_dir("cochange-", args.keep)
    if args.keep:
        print(f"work folder (kept): {work}", file=sys.stderr)
    try:
        if args.level == "symbol":
            return _run_symbols(args, repo, env, work)
        return _run(args, repo, env, work)
    finally:
        if not args.keep:
            bl.remove(work)


def _run(args, repo: Path, env: dict, work: Path) -> int:
    head, line, split = split_commit(repo, args.split)
    clone = bl.private_clone(repo, work / "clone", checkout=False)
    bl.git(clone, "checkout", "-q", "--detach", split)
    alive = set(bl.git(clone, "ls-tree", "-r", "--name-only", split).splitlines())
    alive = {p for p in alive if not is_changelog(p)}
    training = log(clone, split)
    tests = [t for t in log(clone, f"{split}..{head}") if 2 <= len(t.files) <= 10]
    queries: list[tuple[str, set[str]]] = []
    groups: list[int] = []   # each query's test transaction, for the intervals
    for number, t in enumerate(tests):
        files = {f for f in t.files if f in alive}
        for f in sorted(files):
            gold = files - {f}
            if gold:
                queries.append((f, gold))
                groups.append(number)
    print(f"split {split[:10]} ({args.split:.0%} of {len(line)} first-parent commits); "
          f"{len(training)} training commits, {len(tests)} test transactions, "
          f"{len(queries)} queries", file=sys.stderr)
    if not queries and not args.set:   # --set says it its own way, per set
        sys.exit("no queries: no later commit changed 2 to 10 files that existed at the split")

    baseline = AssociationRules(training, args.max_changeset, alive)
    started = time.perf_counter()
    base_answers = [baseline.rank(q, args.top) for q, _ in queries]
    base_seconds = time.perf_counter() - started

    db = args.db
    if db is None:
        db = work / "cortex.db"
        print("indexing the split ...", file=sys.stderr)
        build_index(clone, db, args.jobs)
    from cortex_core.query.blast import fused_related
    from cortex_core.query.coupling import related
    from cortex_core.errors import CortexError
    from cortex_core.store.store import open_reader
    from cortex_core.query.targets import TargetSpec
    con = open_reader(db)
    if args.set:
        sets = halves([sorted({f for f in t.files if f in alive}) for t in tests])
        head_info = {"environment": env, "repo": str(repo), "split": split, "head": head,
                     "first_parent_commits": len(line), "training_commits": len(training),
                     "test_transactions": len(tests)}
        return set_report(args, con, head_info, baseline, sets, lambda items: (items, []),
                           lambda found: [p.path for p in found.files])

    methods = [("cortex related", fused_related, {}), ("co-change alone", related, {})]
    for name, kwargs in variants(args.variant):
        methods.append((f"{name} (fused)", fused_related, kwargs))
        methods.append((f"{name} (co-change)", related, kwargs))
    golds = [g for _, g in queries]
    report = {"environment": env, "repo": str(repo), "split": split, "head": head,
              "first_parent_commits": len(line), "training_commits": len(training),
              "test_transactions": len(tests), "queries": len(queries),
              "query_transactions": len(set(groups)), "top": args.top,
              "methods": {}}
    base = scores(base_answers, golds, args.top)
    report["methods"]["association rules"] = {
        "recall": base["recall"], "mrr": base["mrr"], "seconds_per_query":
        base_seconds / max(1, len(queries))}
    # What history alone could find: the share of a query's gold that shared at least one
    # training commit with it (no ranking of co-change alone can recall more), averaged alike.
    reachable = [len(g & set(baseline.rank(q, 10**9))) / len(g) for q, g in queries]
    report["history_ceiling"] = sum(reachable) / max(1, len(reachable))
    scored: dict[str, dict] = {}
    for name, fn, kwargs in methods:
        call_kwargs = {"max_changeset": args.max_changeset, **kwargs}
        call_kwargs = accepted(fn, call_kwargs)
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
        scored[name] = scores(answers, golds, args.top)
        report["methods"][name] = {
            **_versus(scored[name], base, groups), "kwargs": call_kwargs,
            "p50_ms": bl.percentile(times, 50) * 1000 if times else None,
            "p95_ms": bl.percentile(times, 95) * 1000 if times else None}
    report["cortex_vs_cochange_alone"] = versus_alone(scored["cortex related"],
                                                     scored["co-change alone"], groups)
    # The hover's "usually changes with ..." line: strongest_symbol on sampled symbols alive at
    # the split, then its counts over the two histories, warm (the history is read once per
    # connection, as in the language server). The target's own history is the hover's anyway.
    from cortex_core.query.coupling import counted_in_histories, strongest_symbol
    from cortex_core.query.history import symbol_history
    from cortex_core.query.targets import resolve

    def coupled_line(target, commits):
        found = strongest_symbol(con, target)
        return found and counted_in_histories(con, found, commits)
    symbols = con.execute("select f.path, s.qualname from symbols s join files f on"
                          " f.id = s.file_id where s.alive = 1 and s.kind in ('function', 'method')"
                          " order by s.id limit 300").fetchall()
    hover_times = []
    for path, qualname in symbols:
        try:
            target = resolve(con, TargetSpec(path, qualname))
        except CortexError:
            continue   # an ambiguous short name: the hover resolves by line instead
        commits = {e.commit.sha: (e.path, e.name or "")
                   for e in symbol_history(con, target.symbol_id, False) if e.substantive}
        coupled_line(target, commits)
        t0 = time.perf_counter()
        coupled_line(target, commits)
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
    print(f"\n{repo.name}: split at {split[:10]}, {len(queries)} queries from "
          f"{report['query_transactions']} of {len(tests)} test transactions; "
          f"{report['history_ceiling']:.3f} of the gold shared a commit with its query before "
          "the split (the ceiling of any co-change ranking without renames)\n")
    print(methods_table(report["methods"]))
    print(alone_line(report["cortex_vs_cochange_alone"]))
    hover = report.get("hover_coupled_symbol_ms")
    if hover:
        print(f"\nhover's coupled-symbol line (strongest_symbol and its counts, warm, {hover['symbols']} "
              f"symbols): p50 {hover['p50']:.2f} ms, p95 {hover['p95']:.2f} ms")
    return 0


def _run_symbols(args, repo: Path, env: dict, work: Path) -> int:
    from cortex_core.store.store import open_reader
    head, line, split = split_commit(repo, args.split)
    clone = bl.private_clone(repo, work / "clone", checkout=False)
    db, head_db = _symbol_dbs(args, clone, work, split, head)
    con, head_con = open_reader(db), open_reader(head_db)
    names = symbol_names(con)
    split_alive = {sid for sid, n in names.items() if n[3]}
    head_names = symbol_names(head_con)
    renumbered = sum(head_names.get(sid, ("",))[0] != names[sid][0] for sid in split_alive)
    if renumbered:
        sys.exit(f"{head_db} does not continue {db}: {renumbered} symbol ids differ")
    training = symbol_training(con, names)
    after = bl.git(clone, "rev-list", "--no-merges", f"{split}..{head}").split()
    transactions: list[set[int]] = []
    groups: list[int] = []
    queries, tests = symbol_queries(head_con, names, after, split_alive,
                                    as_cortex=args.substantive_gold, sets=transactions,
                                    groups=groups)
    head_con.close()
    print(f"split {split[:10]} ({args.split:.0%} of {len(line)} first-parent commits); "
          f"{len(training)} training commits with symbol changes, {tests} test transactions, "
          f"{len(queries)} queries", file=sys.stderr)
    if not queries:
        sys.exit("no queries: no later commit changed 2 to 10 symbols that existed at the split")
    alive_keys = {names[sid][0] for sid in split_alive}
    keys = [names[q][0] for q, _ in queries]
    golds = [g for _, g in queries]
    baseline = AssociationRules(training, args.max_changeset, alive_keys, keep=lambda k: True)
    if args.set:
        where = {names[sid][0]: (names[sid][2], names[sid][0][len(names[sid][2]) + 2:])
                 for sid in split_alive}
        sets = halves([sorted(names[s][0] for s in t) for t in transactions])
        head_info = {"environment": env, "repo": str(repo), "level": "symbol", "split": split,
                     "head": head, "first_parent_commits": len(line),
                     "training_commits": len(training), "test_transactions": tests}
        return set_report(args, con, head_info, baseline, sets,
                           lambda items: ([], [where[k] for k in items]),
                           lambda found: [f"{p.path}::{p.qualname}" for p in found.symbols])
    started = time.perf_counter()
    base = scores([baseline.rank(k, args.top) for k in keys], golds, args.top)
    base_seconds = time.perf_counter() - started
    kinds: dict[str, int] = defaultdict(int)
    for q, _ in queries:
        kinds[names[q][1]] += 1
    report = {"environment": env, "repo": str(repo), "level": "symbol", "split": split,
              "head": head, "first_parent_commits": len(line),
              "substantive_gold": args.substantive_gold, "training_commits": len(training),
              "test_transactions": tests,
              "queries": len(queries), "query_transactions": len(set(groups)),
              "query_kinds": dict(kinds), "top": args.top,
              "methods": {"association rules": {
                  "recall": base["recall"], "mrr": base["mrr"],
                  "seconds_per_query": base_seconds / len(queries)}}}
    reachable = [len(g & set(baseline.rank(k, 10**9))) / len(g) for k, g in zip(keys, golds)]
    report["history_ceiling"] = sum(reachable) / len(reachable)
    methods = [("cortex related (symbols)", {}, False),
               ("co-change alone", {"file_prior": 0}, True)]
    for name, kwargs in variants(args.variant):
        methods += [(f"{name} (fused)", kwargs, False), (f"{name} (co-change)", kwargs, True)]
    scored: dict[str, dict] = {}
    for name, kwargs, alone in methods:
        answers, times, unresolved = cortex_answers(con, queries, names, args, kwargs, alone)
        scored[name] = scores(answers, golds, args.top)
        report["methods"][name] = {**_versus(scored[name], base, groups),
                                   "kwargs": kwargs, "unresolved": unresolved,
                                   "p50_ms": bl.percentile(times, 50) * 1000,
                                   "p95_ms": bl.percentile(times, 95) * 1000}
    report["unresolved_queries"] = report["methods"]["cortex related (symbols)"]["unresolved"]
    report["cortex_vs_cochange_alone"] = versus_alone(scored["cortex related (symbols)"],
                                                     scored["co-change alone"], groups)
    report["methods"].update(_rules_on_cortex_data(con, names, [q for q, _ in queries], golds,
                                                   alive_keys, args, base, groups))
    report["gold_hidden_by_lineage"] = hidden_by_lineage(con, queries, names, split_alive,
                                                          args.max_changeset)
    con.close()
    if args.json:
        bl.dump_json(report)
        return 0
    print_symbol_report(report, repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
