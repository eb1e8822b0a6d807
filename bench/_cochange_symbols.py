"""bench_cochange.py --level symbol: the symbols each commit changed, their identity at the split
(through the index's rename/move lineage), the queries, cortex's answers, the rules on cortex's
own change data, and the report."""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

import _benchlib as bl
from _cochange_common import (AssociationRules, Transaction, accepted, alone_line, build_index,
                              methods_table, _versus, scores)


# ---- symbol level (--level symbol) ------------------------------------------------------------
# Changes whose text is the same on both sides (an enclosing class renamed, a scope shifted) are
# no change of the definition: a diff touches none of its lines. Left out of every transaction.
_UNCHANGED = ("rescoped",)


def symbol_names(con) -> dict[int, tuple[str, str, str, bool]]:
    """symbol id -> (PATH::QUALNAME, kind, path, alive) in this database."""
    return {sid: (f"{path}::{qual}", kind, path, bool(alive)) for sid, path, qual, kind, alive
            in con.execute("select s.id, f.path, s.qualname, s.kind, s.alive from symbols s"
                           " join files f on f.id = s.file_id")}


def _changed_symbols(con, commit_ids=None, as_cortex: bool = False) -> dict[int, list[int]]:
    """commit id -> the symbols it changed (stored symbol changes, one row per identity). With
    `as_cortex`, only the changes coupling counts (no reformatting, no move without edits)."""
    from cortex_core.lang.change_kinds import SUBSTANTIVE_SQL
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
                   sets: list | None = None, groups: list | None = None) -> tuple[list, int]:
    """Test transactions: each non-merge commit after the split that changed `low` to `high`
    symbols; each of them that existed at the split is a query, gold = the others that did.
    `sets`, when given, receives each transaction's symbols that existed at the split;
    `groups`, each query's transaction (its number)."""
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
                if groups is not None:
                    groups.append(tests)
    return queries, tests


def _symbol_dbs(args, clone: Path, work: Path, split: str, head: str) -> tuple[Path, Path]:
    """The split index, and a copy of it indexed on to HEAD (the same symbol ids)."""
    db = args.db
    if db is None:
        db = work / "split.db"
        print("indexing the split ...", file=sys.stderr)
        bl.git(clone, "checkout", "-q", "--detach", split)
        build_index(clone, db, args.jobs)
    head_db = args.head_db
    if head_db is None:
        head_db = work / "head.db"
        bl.copy_db(db, head_db)
        print("indexing on to HEAD (a copy) ...", file=sys.stderr)
        bl.git(clone, "checkout", "-q", "--detach", head)
        build_index(clone, head_db, args.jobs)
    return db, head_db


def cortex_answers(con, queries, names: dict, args, kwargs: dict, alone: bool = False):
    """What `cortex related PATH::SYMBOL` lists under symbols for each query (blast.
    fused_related; with `alone`, coupling.related: no structure), timed (warm: the history is
    read once per connection). A query that resolves to another symbol scores 0."""
    from cortex_core.query.blast import fused_related
    from cortex_core.query.coupling import related as cochange
    from cortex_core.errors import CortexError
    related = cochange if alone else fused_related
    from cortex_core.query.targets import TargetSpec
    call_kwargs = accepted(related, {"max_changeset": args.max_changeset, **kwargs})
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


def _rules_on_cortex_data(con, names: dict, qids, golds, alive_keys, args, base,
                          groups: list[int] | None = None) -> dict:
    """The rules again, given what cortex reads instead of the plain stored changes: its change
    filter (no reformatting, no move without edits), its lineage (each symbol under its latest
    identity, coupling's own map), and both. Says which of cortex's data choices moves the score,
    apart from its ranking (decay, ties)."""
    from cortex_core.query.coupling import _history_sets
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
        out[label] = _versus(found, base, groups)
    return out


def hidden_by_lineage(con, queries, names: dict, split_alive: set[int], max_changeset: int
                       ) -> dict:
    """Gold that cortex cannot answer whatever its ranking: symbols whose lineage (followed
    forward through renames, as coupling does) ends on an identity that is not alive, so that
    they are no candidate. It happened when a name was renamed away and later used again, until
    coupling followed renames in time (expected 0 now). Read from coupling's own history sets:
    a diagnosis, not a ranking."""
    from cortex_core.query.coupling import _history_sets
    h = _history_sets(con, max_changeset)
    hidden = {names[s][0] for s in split_alive
              if h.symbol_canon.latest(s, h.alive_symbols) not in split_alive}
    gold = sum(len(g) for _, g in queries)
    return {"symbols": len(hidden), "gold": sum(len(g & hidden) for _, g in queries),
            "of_gold": gold}


def print_symbol_report(report: dict, repo: Path) -> None:
    print("\n".join(bl.environment_lines(report["environment"])))
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(report["query_kinds"].items()))
    name = repo.parent.name if repo.name in ("repo", ".git") else repo.name
    print(f"\n{name}, symbol level: split at {report['split'][:10]}, {report['queries']} "
          f"queries ({kinds}) from {report['query_transactions']} of "
          f"{report['test_transactions']} test transactions; {report['history_ceiling']:.3f} "
          "of the gold shared a commit with its query before the split (by name, without "
          "renames)")
    if report["unresolved_queries"]:
        print(f"{report['unresolved_queries']} queries cortex could not resolve to the same "
              "symbol (scored 0)")
    hidden = report["gold_hidden_by_lineage"]
    print(f"{hidden['gold']} of {hidden['of_gold']} gold symbols are no candidate for cortex: "
          f"their lineage ends on a symbol not alive at the split ({hidden['symbols']} such "
          "symbols; a name renamed away and used again)")
    print()
    print(methods_table(report["methods"]))
    print(alone_line(report["cortex_vs_cochange_alone"]))
