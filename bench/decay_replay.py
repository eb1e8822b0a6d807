#!/usr/bin/env python3
"""A per-repository half-life for co-change, chosen by replaying the store's own past: an
experiment of issue 14, measured and left off (docs/numbers.md, "What changes together").

The product's rule was then half the span of the history in days, at least 365 (it is now half
of the history's commits, on the clock of commits: docs/numbers.md). The idea tried
here: each store replays its own recent past, as the time-split benchmark does
(bench_cochange.py), and keeps the half-life that would have served it best:

  1. the eligible commits (non-merge, at most --max-changeset files) are put oldest first and
     split at REPLAY_SPLIT; the clock is set to the split's last commit;
  2. every later commit changing 2 to 10 items (files, or symbols) is a test, each of its items
     that changed before the split and lives at it is a query, and gold is its other such items;
     at most MAX_QUERIES queries, the ones nearest the split first;
  3. each candidate share of the span (SHARES; 0: no decay) ranks co-change alone (the decayed
     weight of the shared commits, then the newest shared commit) over the commits before the
     split, top 10; Recall@10 and MRR@10 are averaged over the queries;
  4. the share with the best Recall@10 + MRR@10 wins, but the default keeps its place unless
     another beats it by MARGIN, and too short a replay (under MIN_QUERIES queries) keeps it.

On a split index of bench_cochange.py (`--keep`), the replay reads only the history before the
benchmark's split. It prints each share's replay scores and the chosen half-life in days, to
pass to bench_cochange.py as `--variant fit=half_life_days:DAYS` (0: no decay).

Run with the venv's python: `/work/venv/bin/python bench/decay_replay.py DB`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import apsw

from cortex_core.query import coupling

DEFAULT_SHARE = 0.5   # the product's rule when this was tried, where the fit starts from
FLOOR_DAYS = 365.0    # ... and its floor
SHARES = (0.125, 0.25, 0.5, 1.0, 2.0, 0.0)   # of the span; 0: no decay
REPLAY_SPLIT = 0.8
MIN_QUERIES = 100
MAX_QUERIES = 2_000
MARGIN = 0.01            # in Recall@10 + MRR@10: one point
TOP = 10
MIN_ITEMS, MAX_ITEMS = 2, 10
_DAY = 86_400


@dataclass(frozen=True)
class LevelFit:
    """One level's choice and what it rests on."""
    share: float                     # of the span; 0: no decay
    queries: int                     # replayed queries (0: too few, the default kept)
    scores: dict[str, list[float]] = field(default_factory=dict)  # share -> [R@10, MRR@10]


@dataclass(frozen=True)
class DecayFit:
    files: LevelFit
    symbols: LevelFit
    commits: int                     # eligible commits when it was fitted

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def fit(con, h) -> DecayFit:
    """Both levels' choices for the store `con` (`h`: coupling's history sets of it)."""
    position = h.file_canon.position
    order = sorted(h.commit_time, key=position.__getitem__)
    file_deaths = _deaths(con.execute(
        "select fc.commit_id, fc.file_id from file_changes fc where fc.status = 'D'"),
        position, h.file_canon)
    symbol_deaths = _deaths(con.execute(
        "select sc.commit_id, sc.symbol_id from symbol_changes sc where sc.change = 'deleted'"),
        position, h.symbol_canon)
    return DecayFit(
        fit_level(h.files_by_commit, order, h.commit_time, file_deaths, position),
        fit_level(h.symbols_by_commit, order, h.commit_time, symbol_deaths, position),
        len(order))


def _deaths(rows, position: dict[int, int], lineage) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for commit_id, item in rows:
        if commit_id in position:
            out[lineage.at(item, commit_id)].append(position[commit_id])
    return out


def fit_level(by_commit: dict[int, set[int]], order: list[int], times: dict[int, int],
              deaths: dict[int, list[int]], position: dict[int, int]) -> LevelFit:
    """The share of the span to decay this level's co-change by (see the module docstring).
    `by_commit`: eligible commit -> the items it changed; `order`: the eligible commits, oldest
    first; `deaths`: item -> the positions of the commits that deleted it, any size (an item
    whose last change before the split is a deletion is neither a query nor an answer)."""
    cut = int(len(order) * REPLAY_SPLIT)
    if cut < 2 or cut >= len(order):
        return LevelFit(DEFAULT_SHARE, 0)
    past, later = order[:cut], order[cut:]
    split_pos = position[past[-1]]
    now = times[past[-1]]
    start = min(times[c] for c in past)
    commits_of: dict[int, list[int]] = defaultdict(list)
    last_change: dict[int, int] = {}
    for c in past:
        for item in by_commit.get(c, ()):
            commits_of[item].append(c)
            last_change[item] = position[c]
    dead = {item for item, at in deaths.items() if item in last_change
            and any(last_change[item] < p <= split_pos for p in at)}

    def alive(item: int) -> bool:
        return item in commits_of and item not in dead

    queries: list[tuple[dict[int, list[int]], set[int]]] = []
    for c in later:
        items = by_commit.get(c, set())
        if not MIN_ITEMS <= len(items) <= MAX_ITEMS:
            continue
        known = {i for i in items if alive(i)}
        for q in sorted(known):
            gold = known - {q}
            if not gold:
                continue
            shared: dict[int, list[int]] = defaultdict(list)
            for sc in commits_of[q]:
                for other in by_commit[sc]:
                    if other != q and alive(other):
                        shared[other].append(sc)
            queries.append((shared, gold))
        if len(queries) >= MAX_QUERIES:
            break
    if len(queries) < MIN_QUERIES:
        return LevelFit(DEFAULT_SHARE, len(queries))
    span_days = (now - start) / _DAY
    scores: dict[str, list[float]] = {}
    for share in SHARES:
        weight = _weights(share, span_days, now, times, past)
        recall = mrr = 0.0
        for shared, gold in queries:
            ranked = sorted(shared, key=lambda g: (-round(sum(weight[c] for c in shared[g]), 9),
                                                   -max(times[c] for c in shared[g]), g))[:TOP]
            hits = [n for n, g in enumerate(ranked) if g in gold]
            recall += len(hits) / len(gold)
            mrr += 1.0 / (hits[0] + 1) if hits else 0.0
        scores[_key(share)] = [round(recall / len(queries), 4), round(mrr / len(queries), 4)]
    return LevelFit(_choose(scores), len(queries), scores)


def _weights(share: float, span_days: float, now: int, times: dict[int, int], past: list[int]
             ) -> dict[int, float]:
    if share == 0:
        return dict.fromkeys(past, 1.0)
    scale = days(share, span_days) * _DAY
    return {c: 0.5 ** (max(0, now - times[c]) / scale) for c in past}


def _choose(scores: dict[str, list[float]]) -> float:
    default = sum(scores[_key(DEFAULT_SHARE)])
    best = max(SHARES, key=lambda s: (sum(scores[_key(s)]), s == DEFAULT_SHARE))
    return best if sum(scores[_key(best)]) >= default + MARGIN else DEFAULT_SHARE


def _key(share: float) -> str:
    return f"{share:g}"


def days(share: float, span_days: float) -> float:
    """The half-life in days a share gives on a history of this span (0: no decay)."""
    return 0 if share == 0 else max(FLOOR_DAYS, round(share * span_days))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Replay a store's own past to choose co-change's "
                                "half-life (an experiment of issue 14, left off).")
    p.add_argument("db", type=Path, help="a Cortex store (e.g. a split index of bench_cochange)")
    p.add_argument("--max-changeset", type=int, default=coupling.MAX_CHANGESET)
    p.add_argument("--json", action="store_true", help="print the fit as JSON")
    args = p.parse_args(argv)
    con = apsw.Connection(str(args.db), flags=apsw.SQLITE_OPEN_READONLY)
    started = time.perf_counter()
    h = coupling._history_sets(con, args.max_changeset)
    found = fit(con, h)
    seconds = time.perf_counter() - started
    span = (h.now - min(h.commit_time.values(), default=h.now)) / _DAY
    if args.json:
        print(found.to_json())
        return 0
    print(f"{args.db}: {found.commits} eligible commits over {span / 365.25:.1f} years; "
          f"replayed in {seconds:.1f} s")
    for name, level in (("files", found.files), ("symbols", found.symbols)):
        print(f"{name}: {level.queries} queries; chosen share {level.share:g} = "
              f"{days(level.share, span):g} days (0: no decay)")
        for share, (recall, mrr) in level.scores.items():
            print(f"  share {share:>5}: Recall@10 {recall:.4f}  MRR@10 {mrr:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
