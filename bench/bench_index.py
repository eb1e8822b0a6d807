#!/usr/bin/env python3
"""Indexing: a full `cortex index --rebuild` against `git log -p --no-merges`, and the updates.

Works on a private clone of REPO under bench/.work/ (REPO itself is never altered):

  1. picks T, the newest non-merge commit on HEAD's first-parent line, and checks out its first
     parent T~1 on a branch of the clone;
  2. baseline: `git log -p --no-merges > /dev/null` at T~1, best of 3 (and once more through a
     pipe to count its bytes); process start included, like every timing here;
  3. `cortex index --rebuild` at T~1 into a temporary database: wall time (1 run), peak RSS of
     that process (os.wait4 gives the child's own rusage), CPU time, database size, commits/s;
     ratio against the baseline (goal: at most 5x);
  4. no-op re-index (nothing new), best of 3;
  5. incremental update: the branch moves forward to T (one new commit) and `cortex index` runs
     (goal: under 1 s); repeated from a copy of the database taken before the update;
  6. for scale: `git log -p -1 T` (git printing that one commit) and `cortex --version` (the
     interpreter and CLI start, the floor of any cortex command).

Run with the venv's python: `/work/venv/bin/python bench/bench_index.py REPO`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import _benchlib as bl
from _benchlib import copy_db, db_size, remove_db


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Full cortex index vs git log -p --no-merges (same run), peak RSS, database "
        "size, no-op and one-commit incremental updates. Works on a private clone under "
        "bench/.work/.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--git-runs", type=int, default=3, help="git log -p runs, best kept (default 3)")
    p.add_argument("--noop-runs", type=int, default=3, help="no-op re-index runs (default 3)")
    p.add_argument("--incremental-runs", type=int, default=3,
                   help="one-commit updates, each from a copy of the database (default 3)")
    p.add_argument("--jobs", type=int, help="pass --jobs N to cortex index (default: cortex's "
                   "own default; recorded in the report)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    log = bl.progress
    env = bl.environment(repo)
    cortex = bl.cortex_command()
    work = bl.work_dir("index-", args.keep)
    report: dict = {"benchmark": "index", "environment": env, "config": bl.config(args)}
    try:
        clone = bl.private_clone(repo, work / "clone", checkout=False)
        head = env["repository"]["head"]
        tip = bl.git(clone, "rev-list", "--first-parent", "--no-merges", "-n", "1", head)
        base = bl.git(clone, "rev-parse", f"{tip}^1")
        bl.run(["git", "-C", str(clone), "checkout", "-q", "-B", "bench", base])
        commits_at_base = int(bl.git(clone, "rev-list", "--count", "HEAD"))
        report["setup"] = {"clone": str(clone), "tip": tip, "base": base,
                           "tip_subject": bl.git(clone, "log", "-1", "--format=%s", tip),
                           "commits_at_base": commits_at_base}
        log(f"clone at {base[:10]} ({commits_at_base} commits); update to {tip[:10]} later")

        # -- baseline ------------------------------------------------------------------------
        git_cmd = ["git", "-C", str(clone), "log", "-p", "--no-merges", "HEAD"]
        git_runs = []
        for i in range(args.git_runs):
            git_runs.append(bl.run(git_cmd, capture=False))
            log(f"git log -p run {i + 1}: {bl.fmt_seconds(git_runs[-1].seconds)}")
        best_git = min(git_runs, key=lambda r: r.seconds)
        git_bytes = bl.stdout_bytes(git_cmd)
        non_merges = int(bl.git(clone, "rev-list", "--count", "--no-merges", "HEAD"))
        report["git_log_p"] = {
            "command": "git log -p --no-merges > /dev/null",
            "seconds_best": best_git.seconds, "seconds_all": [r.seconds for r in git_runs],
            "cpu_seconds": best_git.user_seconds + best_git.system_seconds,
            "max_rss_kib": best_git.max_rss_kib, "bytes": git_bytes,
            "non_merge_commits": non_merges}

        # -- full index ----------------------------------------------------------------------
        db = work / "cortex.db"
        log("cortex index --rebuild (full) ...")
        jobs = ["--jobs", str(args.jobs)] if args.jobs else []
        report["setup"]["jobs"] = args.jobs or "cortex default"
        full = bl.run([*cortex, "index", "--rebuild", "--repo", str(clone), "--db", str(db),
                       "--quiet", "--json", *jobs], sample_tree=True)
        summary = json.loads(full.stdout)
        size = db_size(db)
        report["full_index"] = {
            "command": "cortex index --rebuild --quiet --json" + (" " + " ".join(jobs) if jobs
                                                                  else ""),
            "seconds": full.seconds,
            "cpu_seconds": full.user_seconds + full.system_seconds,
            "max_rss_kib": full.max_rss_kib, "tree_peak_rss_kib": full.tree_peak_rss_kib,
            "tree_peak_processes": full.tree_peak_processes,
            "tree_measure": full.tree_measure, "db_bytes": size,
            "summary": summary,
            "cpu_over_git_log_p_cpu": (full.user_seconds + full.system_seconds)
            / max(1e-9, best_git.user_seconds + best_git.system_seconds),
            "commits_per_second": summary["new_commits"] / full.seconds,
            "over_git_log_p": full.seconds / best_git.seconds,
            "rss_over_git_log_p": full.max_rss_kib / max(1, best_git.max_rss_kib),
            "tree_rss_over_git_log_p": (full.tree_peak_rss_kib or 0) / max(1, best_git.max_rss_kib),
            "db_over_git_log_p_bytes": size / max(1, git_bytes),
        }
        log(f"full index: {bl.fmt_seconds(full.seconds)}, {summary['new_commits']} commits")

        # -- no-op ---------------------------------------------------------------------------
        noop = [bl.run([*cortex, "index", "--repo", str(clone), "--db", str(db), "--quiet",
                        "--json", *jobs]) for _ in range(args.noop_runs)]
        noop_new = [json.loads(r.stdout)["new_commits"] for r in noop]

        # -- one-commit incremental ----------------------------------------------------------
        saved = work / "saved.db"
        copy_db(db, saved)
        incremental = []
        for i in range(args.incremental_runs):
            if i:
                bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", base])
                remove_db(db)
                copy_db(saved, db)
            bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", tip])
            r = bl.run([*cortex, "index", "--repo", str(clone), "--db", str(db), "--quiet",
                        "--json", *jobs], sample_tree=True)
            incremental.append((r, json.loads(r.stdout)))
            log(f"incremental run {i + 1}: {bl.fmt_seconds(r.seconds)}")

        # -- scale: one commit through git, and the bare CLI start ---------------------------
        one = [bl.run(["git", "-C", str(clone), "log", "-p", "-1", tip], capture=False)
               for _ in range(3)]
        start = [bl.run([*cortex, "--version"]) for _ in range(3)]
        one_best = min(r.seconds for r in one)
        start_best = min(r.seconds for r in start)
        inc_times = [r.seconds for r, _ in incremental]
        noop_times = [r.seconds for r in noop]
        report["noop_index"] = {
            "seconds_best": min(noop_times), "seconds_median": statistics.median(noop_times),
            "seconds_all": noop_times, "new_commits": noop_new,
            "over_git_log_p_one_commit": min(noop_times) / one_best,
            "over_cortex_start": min(noop_times) / start_best}
        report["incremental_index"] = {
            "commits_added": incremental[0][1]["new_commits"], "tip": tip,
            "seconds_best": min(inc_times), "seconds_median": statistics.median(inc_times),
            "seconds_all": inc_times,
            "max_rss_kib": max(r.max_rss_kib for r, _ in incremental),
            "tree_peak_kib": max(r.tree_peak_rss_kib or 0 for r, _ in incremental),
            "symbol_changes": incremental[0][1]["symbol_changes"],
            "over_git_log_p_one_commit": min(inc_times) / one_best,
            "over_cortex_start": min(inc_times) / start_best,
            "fraction_of_full_index": min(inc_times) / full.seconds}
        report["scale"] = {"git_log_p_one_commit_seconds": one_best,
                           "cortex_version_seconds": start_best}
        report["goals"] = {
            "full_index_at_most_5x_git_log_p": report["full_index"]["over_git_log_p"] <= 5,
            "incremental_under_1s": min(inc_times) < 1.0,
        }
    finally:
        if not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render)
    return 0


def render(r: dict) -> str:
    out = ["cortex index vs git log -p", "=" * 26, *bl.environment_lines(r["environment"])]
    s = r["setup"]
    out.append(f"private clone at T~1 = {s['base'][:10]} ({s['commits_at_base']} commits); "
               f"T = {s['tip'][:10]} {s['tip_subject'][:60]!r}")
    g, f, n, i = r["git_log_p"], r["full_index"], r["noop_index"], r["incremental_index"]
    sc = r["scale"]
    out += ["", "Full index (baseline: git log -p --no-merges > /dev/null, best of "
            f"{len(g['seconds_all'])}, same run)"]
    out.append(bl.table([
        ["git log -p --no-merges (baseline)", bl.fmt_seconds(g["seconds_best"]), "1.00x",
         f"{g['cpu_seconds']:.1f} s", "1.00x", f"{g['max_rss_kib'] / 1024:.0f} MiB", "1.00x",
         f"{g['non_merge_commits'] / g['seconds_best']:.0f}"],
        [f"cortex index --rebuild (jobs: {s['jobs']})", bl.fmt_seconds(f["seconds"]),
         f"{f['over_git_log_p']:.2f}x", f"{f['cpu_seconds']:.1f} s",
         f"{f['cpu_over_git_log_p_cpu']:.2f}x",
         f"{(f['tree_peak_rss_kib'] or f['max_rss_kib']) / 1024:.0f} MiB",
         f"{(f['tree_rss_over_git_log_p'] or f['rss_over_git_log_p']):.2f}x",
         f"{f['commits_per_second']:.0f}"],
    ], ["", "wall", "/ baseline", "CPU", "/ baseline", "peak memory", "/ baseline", "commits/s"]))
    out.append(f"peak memory of cortex: {f.get('tree_measure') or 'RSS'} of all its processes "
               f"together ({f['tree_peak_processes']} at most, sampled every 50 ms); its largest "
               f"single process (RSS, from wait4): {f['max_rss_kib'] / 1024:.0f} MiB; git: RSS. "
               f"commits/s: git counts the non-merge commits it prints, cortex every commit it "
               f"records")
    out.append(f"goal: full index at most 5x git log -p: "
               f"{'yes' if r['goals']['full_index_at_most_5x_git_log_p'] else 'NO'} "
               f"({f['over_git_log_p']:.2f}x)")
    sm = f["summary"]
    out.append(f"indexed {sm['new_commits']} commits ({g['non_merge_commits']} non-merge), "
               f"{sm['file_changes']} file changes, {sm['symbol_changes']} symbol changes, "
               f"{sm['blobs_parsed']} blobs parsed")
    out.append(f"database: {bl.fmt_bytes(f['db_bytes'])} = {f['db_over_git_log_p_bytes']:.2f}x "
               f"the {bl.fmt_bytes(g['bytes'])} that git log -p prints")
    out += ["", "Updates (baselines: git log -p -1 T = "
            f"{bl.fmt_seconds(sc['git_log_p_one_commit_seconds'])}, cortex --version = "
            f"{bl.fmt_seconds(sc['cortex_version_seconds'])}; same run)"]
    out.append(bl.table([
        ["no-op re-index", bl.fmt_seconds(n["seconds_best"]), bl.fmt_seconds(n["seconds_median"]),
         f"{n['over_git_log_p_one_commit']:.1f}x", f"{n['over_cortex_start']:.1f}x"],
        [f"one new commit ({i['commits_added']} indexed, peak RSS "
         f"{i['max_rss_kib'] / 1024:.0f} MiB)", bl.fmt_seconds(i["seconds_best"]),
         bl.fmt_seconds(i["seconds_median"]), f"{i['over_git_log_p_one_commit']:.1f}x",
         f"{i['over_cortex_start']:.1f}x"],
    ], ["", "best", "median", "/ git log -p -1", "/ cortex --version"]))
    out.append(f"goal: one-commit update under 1 s: "
               f"{'yes' if r['goals']['incremental_under_1s'] else 'NO'} "
               f"({bl.fmt_seconds(i['seconds_best'])}, {i['fraction_of_full_index']:.2%} of the "
               f"full index)")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
