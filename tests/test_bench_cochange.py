"""bench/bench_cochange.py --level symbol on a scripted history: which commits are tests, how a
symbol renamed after the split is mapped back to its identity at the split, and the association
rules' scores, through the real script (two real indexes, the split's and HEAD's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_cochange.py"


def _module(bodies: dict[str, int]) -> str:
    # Distinct bodies: each function keeps its own fingerprint, so a rename pairs unambiguously.
    return "".join(f"def {name}():\n    x = '{name}'\n    return x * {n}\n\n\n"
                   for name, n in bodies.items())


def _history(repo) -> None:
    bodies = {"a": 1, "b": 1, "c": 1, "d": 1}
    steps = [("create", {}), ("a and b", {"a": 2, "b": 2}), ("a and b again", {"a": 3, "b": 3}),
             ("a and c", {"a": 4, "c": 2}), ("d alone", {"d": 2}),
             ("c and d (the split)", {"c": 3, "d": 3})]
    for day, (subject, changes) in enumerate(steps):
        bodies.update(changes)
        repo.write("mod.py", _module(bodies))
        repo.commit(subject, days_ago=100 - day)
    # After the split: b renamed to b2 (same body) with a changed; b2 and c changed with a new e;
    # d alone (one symbol: no test).
    bodies = {("b2" if k == "b" else k): v for k, v in bodies.items()}
    bodies["a"] = 5
    repo.write("mod.py", _module(bodies))
    repo.commit("rename b, change a", days_ago=50)
    bodies.update({"b2": 4, "c": 4, "e": 1})
    repo.write("mod.py", _module(bodies))
    repo.commit("b2 and c, new e", days_ago=40)
    bodies["d"] = 4
    repo.write("mod.py", _module(bodies))
    repo.commit("d alone again", days_ago=30)


def test_symbol_level_maps_renames_back_and_scores_the_rules(repo):
    _history(repo)
    # 9 first-parent commits: 0.6 splits at the sixth ("c and d").
    out = subprocess.run([sys.executable, str(BENCH), str(repo.path), "--level", "symbol",
                          "--split", "0.6", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["split"] == repo.git("rev-parse", "HEAD~3")
    # Tests: the rename commit (a, b, b2) and the next (b2, c, e); e did not exist at the split.
    assert report["test_transactions"] == 2
    # Queries: a and b; then b (b2 mapped back through the rename, a commit earlier) and c.
    assert report["queries"] == 4
    assert report["query_kinds"] == {"function": 4}
    # The rules, by name: a -> [b (3 commits), ...]; b -> [a (3), c (1), d (1): tied, by name];
    # c -> [d, a (2 each, d's newest shared commit is newer), b]. MRR = (1 + 1 + 1/2 + 1/3) / 4.
    mrr = (1 + 1 + 1 / 2 + 1 / 3) / 4
    rules = report["methods"]["association rules"]
    assert rules["recall"] == 1.0 and rules["mrr"] == pytest.approx(mrr)
    assert report["history_ceiling"] == 1.0
    alone = report["methods"]["co-change alone"]
    assert alone["recall"] == 1.0 and alone["mrr"] == pytest.approx(mrr)
    assert (alone["better_than_baseline"], alone["worse_than_baseline"]) == (0, 0)
    # Fused, the file's co-change adds each symbol's share of the file's (decayed) commits:
    # for b, d (changed alone at day 96) now passes c (last alone with a at day 97): 1/3.
    cortex = report["methods"]["cortex related (symbols)"]
    assert cortex["recall"] == 1.0
    assert cortex["mrr"] == pytest.approx((1 + 1 + 1 / 3 + 1 / 3) / 4)
    assert (cortex["better_than_baseline"], cortex["worse_than_baseline"]) == (0, 0)  # recall
    assert report["unresolved_queries"] == 0
    # Intervals draw whole test transactions: alone ties the rules on every query; the fused
    # list loses 1/6 of a reciprocal rank on one query of the second transaction (of 2 + 2).
    assert alone["recall_interval"] == alone["mrr_interval"] == [0.0, 0.0]
    versus = report["cortex_vs_cochange_alone"]
    assert versus["recall_points"] == 0.0 and versus["recall_interval"] == [0.0, 0.0]
    assert versus["mrr_points"] == pytest.approx(-100 / 24, abs=0.01)
    assert versus["mrr_interval"] == [pytest.approx(-100 / 12, abs=0.01), 0.0]


def test_a_head_index_that_does_not_continue_the_split_index_is_refused(repo, cortex, tmp_path):
    from scripted_repo import ScriptedRepo
    _history(repo)
    cortex.index()
    other = ScriptedRepo(tmp_path / "other")
    other.write("z.py", _module({"zeta": 1, "eta": 2}))
    other.commit("other project")
    subprocess.run([sys.executable, "-m", "cortex_cli.cli", "index", "--repo", str(other.path),
                    "--db", str(tmp_path / "other.db"), "--quiet", "--model", "none"],
                   check=True, capture_output=True, timeout=300)
    out = subprocess.run([sys.executable, str(BENCH), str(repo.path), "--level", "symbol",
                          "--db", str(cortex.db), "--head-db", str(tmp_path / "other.db")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        f"{tmp_path / 'other.db'} does not continue {cortex.db}: 5 symbol ids differ")


def test_set_mode_halves_each_transaction_and_scores_both_aggregations(repo):
    _history(repo)
    run = [sys.executable, str(BENCH), str(repo.path), "--split", "0.6", "--set", "--json"]
    out = subprocess.run(run + ["--level", "symbol"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    # The two test transactions, {a, b} and {b, c} (b2 mapped back): sets [a] and [b].
    assert report["set"] is True and report["queries"] == 2 and report["set_sizes"] == {"1": 2}
    # The rules' max confidence: a -> b (3 of a's 4 commits) first; b -> a (3 of 3), then c and
    # d (1 of 3 each, the same newest commit: by name). MRR = (1 + 1/2) / 2.
    for name in ("association rules", "rules + cortex's history", "cortex related (set)"):
        method = report["methods"][name]
        assert method["recall"] == 1.0 and method["mrr"] == pytest.approx(0.75), name
    # The same answers as the rules, set by set: no difference, and nothing to tell.
    same = report["methods"]["cortex related (set)"]
    assert same["recall_interval"] == same["mrr_interval"] == [0.0, 0.0]
    assert same["recall_p"] == same["mrr_p"] == 1.0
    # One file: no transaction has two, so no set query at file level; said, not a crash.
    out = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "no set queries" in out.stderr


def test_a_history_without_later_multi_file_commits_says_so(repo):
    # One file only: no later commit changes 2 to 10 files, so there is nothing to score.
    _history(repo)
    out = subprocess.run([sys.executable, str(BENCH), str(repo.path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "no queries: no later commit changed 2 to 10 files that existed at the split")


def test_file_level_queries_are_grouped_by_their_commit(repo):
    for day in range(6):
        repo.write("a.py", f"A = {day}\n")
        repo.write("b.py", f"B = {day}\n")
        if day % 2:
            repo.write("c.py", f"C = {day}\n")
        repo.commit(f"a and b {day}", days_ago=100 - day)
    # After the split (--split 0.5 of 10 first-parent commits: the sixth, the last "a and b"):
    # three test commits; the last one's other file did not exist at the split: no query.
    for day, files in enumerate([["a.py", "b.py"], ["a.py", "c.py"], ["a.py", "new.py"]]):
        for f in files:
            repo.write(f, f"X = {day + 10}\n")
        repo.commit(f"test {day}", days_ago=50 - day)
    repo.write("d.py", "D = 1\n")
    repo.commit("d", days_ago=10)
    out = subprocess.run([sys.executable, str(BENCH), str(repo.path), "--split", "0.5",
                          "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["test_transactions"] == 3 and report["queries"] == 4
    assert report["query_transactions"] == 2
    for name in ("cortex related", "co-change alone"):
        method = report["methods"][name]
        assert 0.0 <= method["recall_p"] <= 1.0 and len(method["recall_interval"]) == 2, name
    assert set(report["cortex_vs_cochange_alone"]) == {
        "recall_points", "recall_interval", "recall_p", "mrr_points", "mrr_interval", "mrr_p"}
