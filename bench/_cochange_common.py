"""What both levels of bench_cochange.py use: the transactions (non-merge commits and their
paths), the association rules of the baseline (Zimmermann et al. 2004) and their scores,
the --variant options, the split, and the table of methods."""

from __future__ import annotations

import inspect
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import _benchlib as bl
from _benchlib import paired_interval, sign_flip_p


_CHANGELOG_NAMES = re.compile(
    r"(?i)^(change[-_]?log|changes|history|news|release[-_]?notes|whatsnew)"
    r"(\.(md|markdown|rst|txt|adoc|asciidoc|org|xml))?$")
_CHANGELOG_DIRS = {"changelog.d", "newsfragments", "changelogs"}


def is_changelog(path: str) -> bool:
    parts = path.split("/")
    return bool(_CHANGELOG_NAMES.match(parts[-1])) or any(
        p.lower() in _CHANGELOG_DIRS for p in parts[:-1])


@dataclass
class Transaction:
    sha: str
    time: int
    files: list[str]          # at symbol level: PATH::QUALNAME keys
    size: int = 0             # files the commit changed, when `files` holds symbols


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

    def __init__(self, transactions: list[Transaction], max_changeset: int, alive: set[str],
                 keep=lambda item: not is_changelog(item)):
        self.of_file: dict[str, list[int]] = defaultdict(list)
        self.transactions = []
        for t in transactions:
            files = [f for f in t.files if keep(f)]
            if (t.size or len(t.files)) > max_changeset or not files:
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

    def rank_set(self, items: list[str], top: int, how: str = "max") -> list[str]:
        """Rules aggregated over a set the simplest way: a candidate's highest confidence from
        any of the items (ties by the newest transaction changing both, then name); with
        `how` "sum", the sum of its supports from the items instead."""
        chosen = set(items)
        best: dict[str, float] = {}
        newest: dict[str, int] = {}
        for f in chosen:
            indexes = self.of_file.get(f, ())
            support: dict[str, int] = defaultdict(int)
            for index in indexes:
                stamp, files = self.transactions[index]
                for g in files:
                    if g not in chosen and g in self.alive:
                        support[g] += 1
                        newest[g] = max(newest.get(g, 0), stamp)
            for g, n in support.items():
                if how == "sum":
                    best[g] = best.get(g, 0.0) + n
                else:
                    best[g] = max(best.get(g, 0.0), n / len(indexes))
        ranked = sorted(best, key=lambda g: (-best[g], -newest[g], g))
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


def variants(specs: list[str]) -> list[tuple[str, dict]]:
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


def accepted(fn, kwargs: dict) -> dict:
    names = inspect.signature(fn).parameters
    return {k: v for k, v in kwargs.items() if k in names}


def build_index(clone: Path, db: Path, jobs: int) -> None:
    bl.run([*bl.cortex_command(), "index", "--repo", str(clone), "--db", str(db), "--quiet",
            "--model", "none", "--jobs", str(jobs)])


def split_commit(repo: Path, fraction: float) -> tuple[str, list[str], str]:
    """HEAD, its first-parent line oldest first, and the commit at `fraction` of it."""
    head = bl.git(repo, "rev-parse", "HEAD")
    line = bl.git(repo, "rev-list", "--first-parent", "--reverse", head).split()
    return head, line, line[min(len(line) - 1, int(len(line) * fraction))]


def methods_table(methods: dict) -> str:
    base = methods["association rules"]
    rows = []
    for name, m in methods.items():
        delta = "" if m is base else f"{(m['recall'] - base['recall']) * 100:+.1f}"
        rows.append([name, f"{m['recall']:.3f}", delta, *_interval_cells(m, "recall"),
                     f"{m['mrr']:.3f}", *_interval_cells(m, "mrr"),
                     str(m.get("better_than_baseline", "")), str(m.get("worse_than_baseline", "")),
                     f"{m['p95_ms']:.1f}" if m.get("p95_ms") is not None else ""])
    return bl.table(rows, ["method", "Recall@10", "pts vs rules", "95% interval", "p",
                           "MRR@10", "95% interval", "p", "better", "worse", "p95 ms"])


def _interval_cells(m: dict, measure: str) -> list[str]:
    """A method's 95% interval of its difference from the rules, in points, and its p-value."""
    low_high, p = m.get(f"{measure}_interval"), m.get(f"{measure}_p")
    return [f"{low_high[0]:+.1f} to {low_high[1]:+.1f}" if low_high else "",
            f"{p:.3f}" if p is not None else ""]


def halves(transactions: list[list[str]]) -> list[tuple[list[str], set[str]]]:
    """Set queries: of each transaction's items (sorted) with at least two, the first half (at
    least one) as the changed set, the rest as gold."""
    out = []
    for items in transactions:
        if len(items) >= 2:
            half = len(items) // 2
            out.append((items[:half], set(items[half:])))
    return out


def _versus(s: dict, base: dict, groups: list[int] | None = None) -> dict:
    """Scores, the queries answered better and worse than the baseline (Recall@10), and with
    `groups` (each query's test transaction) the differences' 95% intervals in points and
    their p-values."""
    pairs = list(zip(s["per_query_recall"], base["per_query_recall"]))
    out = {"recall": s["recall"], "mrr": s["mrr"],
           "better_than_baseline": sum(a > b for a, b in pairs),
           "worse_than_baseline": sum(a < b for a, b in pairs)}
    if groups is not None:
        out.update(_paired(s, base, groups))
    return out


def _paired(s: dict, base: dict, groups: list[int]) -> dict:
    """The 95% intervals of the differences from `base` in points, and their sign-flip
    p-values, over the test transactions (`groups`)."""
    out = {}
    for measure, key in (("recall", "per_query_recall"), ("mrr", "per_query_rr")):
        out[f"{measure}_interval"] = paired_interval(s[key], base[key], groups)
        out[f"{measure}_p"] = sign_flip_p(s[key], base[key], groups)
    return out


def versus_alone(f: dict, a: dict, groups: list[int]) -> dict:
    """The fused ranking's scores `f` against co-change alone's `a` (both from `scores`),
    paired: differences in points, their 95% intervals and p-values (issue 14: the fusion must
    never rank below co-change alone)."""
    return {"recall_points": round((f["recall"] - a["recall"]) * 100, 2),
            "mrr_points": round((f["mrr"] - a["mrr"]) * 100, 2), **_paired(f, a, groups)}


def alone_line(v: dict) -> str:
    def how(measure: str) -> str:
        low_high = v[f"{measure}_interval"]
        interval = f"{low_high[0]:+.1f} to {low_high[1]:+.1f}, " if low_high else ""
        return f"{v[f'{measure}_points']:+.1f} points ({interval}p {v[f'{measure}_p']})"
    return (f"\ncortex related − co-change alone: Recall@10 {how('recall')}, MRR@10 "
            f"{how('mrr')}\n(95% intervals by a bootstrap over the test transactions; p: a "
            "sign-flip test over them)")
