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
  4. cortex: `cortex_core.blast.fused_related(...).symbols`, what `cortex related
     PATH::SYMBOL` lists under symbols (co-change, the file back-off and the calls), and
     `cortex_core.coupling.related(..., file_prior=0).symbols` (co-change alone), top 10, on
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


def _index(clone: Path, db: Path, jobs: int) -> None:
    bl.run([*bl.cortex_command(), "index", "--repo", str(clone), "--db", str(db), "--quiet",
            "--model", "none", "--jobs", str(jobs)])


def _split(repo: Path, fraction: float) -> tuple[str, list[str], str]:
    """HEAD, its first-parent line oldest first, and the commit at `fraction` of it."""
    head = bl.git(repo, "rev-parse", "HEAD")
    line = bl.git(repo, "rev-list", "--first-parent", "--reverse", head).split()
    return head, line, line[min(len(line) - 1, int(len(line) * fraction))]


def _run(args, repo: Path, env: dict, work: Path) -> int:
    head, line, split = _split(repo, args.split)
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
        _index(clone, db, args.jobs)
    from cortex_core.blast import fused_related
    from cortex_core.coupling import related
    from cortex_core.errors import CortexError
    from cortex_core.store import open_reader
    from cortex_core.targets import TargetSpec
    con = open_reader(db)
    if args.set:
        sets = _halves([sorted({f for f in t.files if f in alive}) for t in tests])
        head_info = {"environment": env, "repo": str(repo), "split": split, "head": head,
                     "first_parent_commits": len(line), "training_commits": len(training),
                     "test_transactions": len(tests)}
        return _set_report(args, con, head_info, baseline, sets, lambda items: (items, []),
                           lambda found: [p.path for p in found.files])

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
        report["methods"][name] = {
            **_versus(scores(answers, golds, args.top), base), "kwargs": call_kwargs,
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
    print(_methods_table(report["methods"]))
    hover = report.get("hover_coupled_symbol_ms")
    if hover:
        print(f"\nhover's coupled-symbol line (strongest_symbol, warm, {hover['symbols']} "
              f"symbols): p50 {hover['p50']:.2f} ms, p95 {hover['p95']:.2f} ms")
    return 0


def _methods_table(methods: dict) -> str:
    base = methods["association rules"]
    rows = []
    for name, m in methods.items():
        delta = "" if m is base else f"{(m['recall'] - base['recall']) * 100:+.1f}"
        rows.append([name, f"{m['recall']:.3f}", delta, f"{m['mrr']:.3f}",
                     str(m.get("better_than_baseline", "")), str(m.get("worse_than_baseline", "")),
                     f"{m['p95_ms']:.1f}" if m.get("p95_ms") is not None else ""])
    return bl.table(rows, ["method", "Recall@10", "pts vs rules", "MRR@10", "better", "worse",
                           "p95 ms"])


# ---- symbol level (--level symbol) ------------------------------------------------------------
# Changes whose text is the same on both sides (an enclosing class renamed, a scope shifted) are
# no change of the definition: a diff touches none of its lines. Left out of every transaction.
_UNCHANGED = ("rescoped",)


def _names(con) -> dict[int, tuple[str, str, str, bool]]:
    """symbol id -> (PATH::QUALNAME, kind, path, alive) in this database."""
    return {sid: (f"{path}::{qual}", kind, path, bool(alive)) for sid, path, qual, kind, alive
            in con.execute("select s.id, f.path, s.qualname, s.kind, s.alive from symbols s"
                           " join files f on f.id = s.file_id")}


def _changed_symbols(con, commit_ids=None, as_cortex: bool = False) -> dict[int, list[int]]:
    """commit id -> the symbols it changed (stored symbol changes, one row per identity). With
    `as_cortex`, only the changes coupling counts (no reformatting, no move without edits)."""
    from cortex_core.change_kinds import SUBSTANTIVE_SQL
    where = (f"{SUBSTANTIVE_SQL} and not (sc.change = 'moved' and sc.added = 0"
             " and sc.deleted = 0)") if as_cortex else \
        "sc.change not in ({})".format(",".join(f"'{k}'" for k in _UNCHANGED))
    out: dict[int, list[int]] = defaultdict(list)
    for cid, sid in con.execute(
            "select sc.commit_id, sc.symbol_id from symbol_changes sc join commits c on"
            f" c.id = sc.commit_id where c.is_merge = 0 and {where}"):
        if commit_ids is None or cid in commit_ids:
            out[cid].append(sid)
    return out


def symbol_training(con, names: dict, lineage=None,
                    as_cortex: bool = False) -> list[Transaction]:
    """The rules' transactions: per non-merge commit up to the split, the names its changed
    symbols had at that commit, as the split index stores them (no rename following). With
    `lineage` (coupling's), each under the identity its lineage has at the split instead."""
    meta = {cid: (sha, when, size) for cid, sha, when, size in con.execute(
        "select id, sha, committer_time, files_changed from commits where reachable = 1")}
    out = []
    for cid, sids in _changed_symbols(con, as_cortex=as_cortex).items():
        if cid in meta:
            sha, when, size = meta[cid]
            keys = {names[lineage.at(s, cid) if lineage else s][0] for s in sids}
            out.append(Transaction(sha, when, sorted(keys), size))
    return sorted(out, key=lambda t: t.time)


class SplitIdentity:
    """Maps a symbol changed after the split (head index) to its identity at the split: back
    along the rename and move links the head index recorded after the split. Both indexes share
    their symbol ids: the head index is a copy of the split index, indexed on."""

    def __init__(self, head_con, after: dict[int, int], split_alive: set[int]):
        self.after = after          # commit id after the split -> its rank, oldest first
        self.split_alive = split_alive
        self.links: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for sid, cid, old in head_con.execute(
                "select symbol_id, commit_id, from_symbol_id from symbol_changes"
                " where from_symbol_id is not null and from_symbol_id != symbol_id"):
            if cid in after:
                self.links[sid].append((after[cid], old))

    def of(self, sid: int, commit_id: int) -> int | None:
        bound = self.after[commit_id]
        for _ in range(64):   # a lineage is short; the bound guards a cycle
            earlier = [(key, old) for key, old in self.links.get(sid, ()) if key <= bound]
            if not earlier:
                return sid if sid in self.split_alive else None
            rank, sid = max(earlier)
            bound = rank - 1   # the older name: links into it are strictly before this one
        return None


def symbol_queries(head_con, names: dict, after_shas: list[str], split_alive: set[int],
                   low: int = 2, high: int = 10, as_cortex: bool = False,
                   sets: list | None = None) -> tuple[list, int]:
    """Test transactions: each non-merge commit after the split that changed `low` to `high`
    symbols; each of them that existed at the split is a query, gold = the others that did.
    `sets`, when given, receives each transaction's symbols that existed at the split."""
    ids = dict(head_con.execute("select sha, id from commits where is_merge = 0"))
    wanted = [ids[s] for s in after_shas if s in ids]
    marks = ",".join("?" * len(wanted))
    # The index's own order, oldest first (committer time, generation, sha), as a rank.
    ordered = head_con.execute(f"select id from commits c where id in ({marks})"
                               " order by c.committer_time, c.generation, c.sha", wanted)
    after = {cid: rank for rank, (cid,) in enumerate(ordered)}
    identity = SplitIdentity(head_con, after, split_alive)
    queries, tests = [], 0
    changed = _changed_symbols(head_con, after, as_cortex)
    for cid, sids in sorted(changed.items(), key=lambda i: after[i[0]]):
        mapped = {s: identity.of(s, cid) for s in set(sids)}
        # A rename has a row under each name: the commit's size counts identities.
        if not low <= len({m or -s for s, m in mapped.items()}) <= high:
            continue
        tests += 1
        alive = set(mapped.values()) - {None}
        if sets is not None:
            sets.append(alive)
        for q in sorted(alive):
            gold = {names[g][0] for g in alive - {q}}
            if gold:
                queries.append((q, gold))
    return queries, tests


def _symbol_dbs(args, clone: Path, work: Path, split: str, head: str) -> tuple[Path, Path]:
    """The split index, and a copy of it indexed on to HEAD (the same symbol ids)."""
    db = args.db
    if db is None:
        db = work / "split.db"
        print("indexing the split ...", file=sys.stderr)
        bl.git(clone, "checkout", "-q", "--detach", split)
        _index(clone, db, args.jobs)
    head_db = args.head_db
    if head_db is None:
        head_db = work / "head.db"
        bl.copy_db(db, head_db)
        print("indexing on to HEAD (a copy) ...", file=sys.stderr)
        bl.git(clone, "checkout", "-q", "--detach", head)
        _index(clone, head_db, args.jobs)
    return db, head_db


def _run_symbols(args, repo: Path, env: dict, work: Path) -> int:
    from cortex_core.store import open_reader
    head, line, split = _split(repo, args.split)
    clone = bl.private_clone(repo, work / "clone", checkout=False)
    db, head_db = _symbol_dbs(args, clone, work, split, head)
    con, head_con = open_reader(db), open_reader(head_db)
    names = _names(con)
    split_alive = {sid for sid, n in names.items() if n[3]}
    head_names = _names(head_con)
    renumbered = sum(head_names.get(sid, ("",))[0] != names[sid][0] for sid in split_alive)
    if renumbered:
        sys.exit(f"{head_db} does not continue {db}: {renumbered} symbol ids differ")
    training = symbol_training(con, names)
    after = bl.git(clone, "rev-list", "--no-merges", f"{split}..{head}").split()
    transactions: list[set[int]] = []
    queries, tests = symbol_queries(head_con, names, after, split_alive,
                                    as_cortex=args.substantive_gold, sets=transactions)
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
        sets = _halves([sorted(names[s][0] for s in t) for t in transactions])
        head_info = {"environment": env, "repo": str(repo), "level": "symbol", "split": split,
                     "head": head, "first_parent_commits": len(line),
                     "training_commits": len(training), "test_transactions": tests}
        return _set_report(args, con, head_info, baseline, sets,
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
              "queries": len(queries), "query_kinds": dict(kinds), "top": args.top,
              "methods": {"association rules": {
                  "recall": base["recall"], "mrr": base["mrr"],
                  "seconds_per_query": base_seconds / len(queries)}}}
    reachable = [len(g & set(baseline.rank(k, 10**9))) / len(g) for k, g in zip(keys, golds)]
    report["history_ceiling"] = sum(reachable) / len(reachable)
    methods = [("cortex related (symbols)", {}, False),
               ("co-change alone", {"file_prior": 0}, True)]
    for name, kwargs in _variants(args.variant):
        methods += [(f"{name} (fused)", kwargs, False), (f"{name} (co-change)", kwargs, True)]
    for name, kwargs, alone in methods:
        answers, times, unresolved = _cortex_answers(con, queries, names, args, kwargs, alone)
        report["methods"][name] = {**_versus(scores(answers, golds, args.top), base),
                                   "kwargs": kwargs, "unresolved": unresolved,
                                   "p50_ms": bl.percentile(times, 50) * 1000,
                                   "p95_ms": bl.percentile(times, 95) * 1000}
    report["unresolved_queries"] = report["methods"]["cortex related (symbols)"]["unresolved"]
    report["methods"].update(_rules_on_cortex_data(con, names, [q for q, _ in queries], golds,
                                                   alive_keys, args, base))
    report["gold_hidden_by_lineage"] = _hidden_by_lineage(con, queries, names, split_alive,
                                                          args.max_changeset)
    con.close()
    if args.json:
        bl.dump_json(report)
        return 0
    _print_symbol_report(report, repo)
    return 0


def _halves(transactions: list[list[str]]) -> list[tuple[list[str], set[str]]]:
    """Set queries: of each transaction's items (sorted) with at least two, the first half (at
    least one) as the changed set, the rest as gold."""
    out = []
    for items in transactions:
        if len(items) >= 2:
            half = len(items) // 2
            out.append((items[:half], set(items[half:])))
    return out


def _set_report(args, con, head_info: dict, baseline: AssociationRules, sets, call, pick) -> int:
    """--set: `coupling.related_to_set` (cortex related without a target) against the rules'
    max confidence over the set, on the same queries. `call` turns a query's items into
    related_to_set's (paths, symbols); `pick` reads the answers' keys from its result."""
    from cortex_core.coupling import related_to_set
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
            (f"{n} (set)", kw) for n, kw in _variants(args.variant)]:
        call_kwargs = _accepted(related_to_set, {"max_changeset": args.max_changeset, **kwargs})
        answers, times = [], []
        for items, _ in sets:
            paths, symbols = call(items)
            t0 = time.perf_counter()
            found = related_to_set(con, paths, symbols=symbols, top_k=args.top, **call_kwargs)
            times.append(time.perf_counter() - t0)
            answers.append(pick(found))
        report["methods"][name] = {**_versus(scores(answers, golds, args.top), base),
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
    print(_methods_table(report["methods"]))
    return 0


def _cortex_transactions(con, level: str, max_changeset: int) -> list[Transaction]:
    """The training commits as coupling reads them (coupling._history_sets): each item under
    its identity at the split (renames followed in time), changelogs and non-substantive
    symbol changes left out, at most `max_changeset` files."""
    from cortex_core.coupling import _history_sets, _symbol_label
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


def _versus(s: dict, base: dict) -> dict:
    """Scores, and the queries answered better and worse than the baseline (Recall@10)."""
    pairs = list(zip(s["per_query_recall"], base["per_query_recall"]))
    return {"recall": s["recall"], "mrr": s["mrr"],
            "better_than_baseline": sum(a > b for a, b in pairs),
            "worse_than_baseline": sum(a < b for a, b in pairs)}


def _cortex_answers(con, queries, names: dict, args, kwargs: dict, alone: bool = False):
    """What `cortex related PATH::SYMBOL` lists under symbols for each query (blast.
    fused_related; with `alone`, coupling.related: no structure), timed (warm: the history is
    read once per connection). A query that resolves to another symbol scores 0."""
    from cortex_core.blast import fused_related
    from cortex_core.coupling import related as cochange
    from cortex_core.errors import CortexError
    related = cochange if alone else fused_related
    from cortex_core.targets import TargetSpec
    call_kwargs = _accepted(related, {"max_changeset": args.max_changeset, **kwargs})
    answers, times, unresolved = [], [], 0
    for q, _ in queries:
        key, _, path, _ = names[q]
        t0 = time.perf_counter()
        try:
            found = related(con, TargetSpec(path, key[len(path) + 2:]), top_k=args.top,
                            **call_kwargs)
        except CortexError:
            found = None
        times.append(time.perf_counter() - t0)
        if found is None or found.target.symbol_id != q:
            unresolved += 1
            answers.append([])
            continue
        answers.append([f"{p.path}::{p.qualname}" for p in found.symbols])
    return answers, times, unresolved


def _rules_on_cortex_data(con, names: dict, qids, golds, alive_keys, args, base) -> dict:
    """The rules again, given what cortex reads instead of the plain stored changes: its change
    filter (no reformatting, no move without edits), its lineage (each symbol under its latest
    identity, coupling's own map), and both. Says which of cortex's data choices moves the score,
    apart from its ranking (decay, ties)."""
    from cortex_core.coupling import _history_sets
    h = _history_sets(con, args.max_changeset)
    out = {}
    for label, lineage, as_cortex in (("rules + cortex's change filter", False, True),
                                      ("rules + cortex's lineage", True, False),
                                      ("rules + both", True, True)):
        training = symbol_training(con, names, h.symbol_canon if lineage else None, as_cortex)
        rules = AssociationRules(training,
                                 args.max_changeset, alive_keys, keep=lambda k: True)
        # With the lineage, a query asks under its latest identity, as coupling does.
        keys = [names[h.symbol_canon.latest(q, h.alive_symbols) if lineage else q][0]
                for q in qids]
        found = scores([rules.rank(k, args.top) for k in keys], golds, args.top)
        out[label] = _versus(found, base)
    return out


def _hidden_by_lineage(con, queries, names: dict, split_alive: set[int], max_changeset: int
                       ) -> dict:
    """Gold that cortex cannot answer whatever its ranking: symbols whose lineage (followed
    forward through renames, as coupling does) ends on an identity that is not alive, so that
    they are no candidate. It happened when a name was renamed away and later used again, until
    coupling followed renames in time (expected 0 now). Read from coupling's own history sets:
    a diagnosis, not a ranking."""
    from cortex_core.coupling import _history_sets
    h = _history_sets(con, max_changeset)
    hidden = {names[s][0] for s in split_alive
              if h.symbol_canon.latest(s, h.alive_symbols) not in split_alive}
    gold = sum(len(g) for _, g in queries)
    return {"symbols": len(hidden), "gold": sum(len(g & hidden) for _, g in queries),
            "of_gold": gold}


def _print_symbol_report(report: dict, repo: Path) -> None:
    print("\n".join(bl.environment_lines(report["environment"])))
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(report["query_kinds"].items()))
    name = repo.parent.name if repo.name in ("repo", ".git") else repo.name
    print(f"\n{name}, symbol level: split at {report['split'][:10]}, {report['queries']} "
          f"queries ({kinds}) from {report['test_transactions']} test transactions; "
          f"{report['history_ceiling']:.3f} of the gold shared a commit with its query before "
          "the split (by name, without renames)")
    if report["unresolved_queries"]:
        print(f"{report['unresolved_queries']} queries cortex could not resolve to the same "
              "symbol (scored 0)")
    hidden = report["gold_hidden_by_lineage"]
    print(f"{hidden['gold']} of {hidden['of_gold']} gold symbols are no candidate for cortex: "
          f"their lineage ends on a symbol not alive at the split ({hidden['symbols']} such "
          "symbols; a name renamed away and used again)")
    print()
    print(_methods_table(report["methods"]))


if __name__ == "__main__":
    sys.exit(main())
