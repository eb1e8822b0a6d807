"""bench_cochange.py's evaluation as sets (the first half of a later commit's files, or symbols,
as the changed set, the rest of it as gold; one query per commit): the methods' scores and the
report."""

from __future__ import annotations

import sys
import time

import _benchlib as bl
from _cochange_common import (AssociationRules, Transaction, accepted, methods_table, variants,
                              _versus, scores)


def set_report(args, con, head_info: dict, baseline: AssociationRules, sets, call, pick) -> int:
    """--set: `coupling.related_to_set` (cortex related without a target) against the rules'
    max confidence over the set, on the same queries. `call` turns a query's items into
    related_to_set's (paths, symbols); `pick` reads the answers' keys from its result."""
    from cortex_core.query.coupling import related_to_set
    if not sets:
        sys.exit("no set queries: no later transaction has two items that existed at the split")
    golds = [g for _, g in sets]
    started = time.perf_counter()
    base = scores([baseline.rank_set(items, args.top) for items, _ in sets], golds, args.top)
    report = {**head_info, "set": True, "queries": len(sets), "top": args.top,
              "set_sizes": {str(n): sum(len(i) == n for i, _ in sets)
                            for n in sorted({len(i) for i, _ in sets})},
              "methods": {"association rules": {
                  "recall": base["recall"], "mrr": base["mrr"],
                  "seconds_per_query": (time.perf_counter() - started) / len(sets)}}}
    # A second simple aggregation, for reference: the sum of the supports from the set's items.
    summed = scores([baseline.rank_set(items, args.top, "sum") for items, _ in sets], golds,
                    args.top)
    report["methods"]["rules, summed support"] = _versus(summed, base)
    # The same two, given cortex's history instead of git log's: its lineage (renames followed
    # in time), its change filter and its changeset bound. What is left is the ranking's own.
    level = head_info.get("level", "file")
    lineage = AssociationRules(_cortex_transactions(con, level, args.max_changeset),
                               args.max_changeset, baseline.alive, keep=lambda k: True)
    for label, how in (("rules + cortex's history", "max"),
                       ("rules + cortex's history, summed", "sum")):
        found = scores([lineage.rank_set(items, args.top, how) for items, _ in sets], golds,
                       args.top)
        report["methods"][label] = _versus(found, base)
    for name, kwargs in [("cortex related (set)", {})] + [
            (f"{n} (set)", kw) for n, kw in variants(args.variant)]:
        call_kwargs = accepted(related_to_set, {"max_changeset": args.max_changeset, **kwargs})
        answers, times = [], []
        for items, _ in sets:
            paths, symbols = call(items)
            t0 = time.perf_counter()
            found = related_to_set(con, paths, symbols=symbols, top_k=args.top, **call_kwargs)
            times.append(time.perf_counter() - t0)
            answers.append(pick(found))
        # One query per test transaction: the intervals draw the sets themselves.
        report["methods"][name] = {**_versus(scores(answers, golds, args.top), base,
                                             list(range(len(sets)))),
                                   "kwargs": call_kwargs,
                                   "p50_ms": bl.percentile(times, 50) * 1000,
                                   "p95_ms": bl.percentile(times, 95) * 1000}
    con.close()
    if args.json:
        bl.dump_json(report)
        return 0
    print("\n".join(bl.environment_lines(report["environment"])))
    print(f"\n{report['repo']} ({report.get('level', 'file')} level, sets): split at "
          f"{report['split'][:10]}, {len(sets)} set queries from {report['test_transactions']} "
          "test transactions; the baseline is the rules' max confidence over the set\n")
    print(methods_table(report["methods"]))
    return 0


def _cortex_transactions(con, level: str, max_changeset: int) -> list[Transaction]:
    """The training commits as coupling reads them (coupling._history_sets): each item under
    its identity at the split (renames followed in time), changelogs and non-substantive
    symbol changes left out, at most `max_changeset` files."""
    from cortex_core.query.coupling import _history_sets, _symbol_label
    h = _history_sets(con, max_changeset)
    if level == "symbol":
        by_commit = h.symbols_by_commit
        labels = {sid: "::".join(_symbol_label(con, sid))
                  for sid in set().union(*by_commit.values())} if by_commit else {}
    else:
        by_commit, labels = h.files_by_commit, h.paths(con)
    return sorted((Transaction(str(cid), h.commit_time[cid], sorted(labels[i] for i in ids),
                               h.commit_size[cid]) for cid, ids in by_commit.items()),
                  key=lambda t: t.time)
