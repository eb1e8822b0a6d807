#!/usr/bin/env python3
"""Memory: what embeddings and areas add to indexing, embedding throughput, search latency.

Works on a private clone of REPO under bench/.work/ (REPO itself is never altered), like
bench_index.py: the clone is checked out at T~1, T being the newest non-merge commit on HEAD's
first-parent line, so that a one-commit update can be measured later.

  1. Indexing cost. Two full `cortex index --rebuild` child processes into temporary databases,
     `--model none` (commits, items, lexical areas) and `--model PATH` (the same plus vectors and
     areas on vectors): wall, CPU, peak memory of the process tree, database size. Then the same
     two indexes once more, in a child process that runs `cortex_core.index.ingest.index_repository`
     with timers wrapped around its phases (module attributes replaced in that process only;
     cortex_core is not modified): commits (read + write), HEAD snapshot, memory items, model
     load, embedding (encode vs SQLite), the spectral step (item vectors, links, kNN graph,
     eigenvectors, k-means, terms, store), with the peak RSS reached after each. "Commits-only"
     is that run's time outside `_Indexer._memory`; every memory phase is given as a ratio to it.
  2. Embedding throughput: `Embedder.encode` over the distinct texts of the index's items
     (`memory.embed_text`, as `embed_missing` builds them), in batches of `embeddings.BATCH`,
     best of --encode-runs, in this process.
  3. Updates with the model on and off: the no-op `cortex index` (best of --noop-runs) and a
     one-commit update (the clone's branch moves to T; --incremental-runs, each from a copy of the
     database), each with `--model PATH` on the model's database and `--model none` on the other;
     the added time is the difference of the best runs.
  4. Search latency: `cortex_core.memory.search.search` in process (after one warm-up call) for the
     lexical, vector and hybrid modes over up to --queries changelog entries
     (`retrieval_gold.gold_queries(REPO)`, texts only); and end to end, for --cli-queries of them,
     `cortex search` as a child process (hybrid and lexical on the whole entry, hybrid on its
     first word) against `git log --grep=WORD -i --format=%H | head` (WORD: the entry's first
     word), measured interleaved in the same run.

Run with the venv's python: `/work/venv/bin/python bench/bench_memory.py REPO`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

import _benchlib as bl
from _benchlib import copy_db, db_size, remove_db
from _memory_children import phases_child, recompute_child
from _memory_report import render
from _memory_search import encode_throughput, search_cli, search_in_process

DEFAULT_MODEL = "/work/shared/models/m2v-minilm-l6-v2"


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Memory costs: full index with --model none vs --model PATH (child processes "
        "and an in-process phase breakdown), Embedder.encode throughput over the index's item "
        "texts, no-op and one-commit updates with and without the model, search latency in "
        "process and end to end against git log --grep. Works on a private clone under "
        "bench/.work/.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--model", default=DEFAULT_MODEL,
                   help=f"embedding model, a model2vec folder or hub id (default {DEFAULT_MODEL})")
    p.add_argument("--jobs", type=int, help="pass --jobs N to cortex index (default: cortex's "
                   "own default; recorded in the report)")
    p.add_argument("--no-phases", action="store_true",
                   help="skip the two instrumented in-process index runs (saves two full indexes)")
    p.add_argument("--encode-runs", type=int, default=3,
                   help="passes of Embedder.encode over all texts, best kept (default 3)")
    p.add_argument("--noop-runs", type=int, default=3, help="no-op re-index runs (default 3)")
    p.add_argument("--incremental-runs", type=int, default=3,
                   help="one-commit updates, each from a copy of the database (default 3)")
    p.add_argument("--queries", type=int, default=200,
                   help="search queries in process, a seeded sample of the changelog entries "
                   "(default 200)")
    p.add_argument("--cli-queries", type=int, default=20,
                   help="queries run through the command line and git (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the query sample (default 0)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    # Internal: the instrumented index run, in its own process (see phases_child).
    p.add_argument("--recompute-runs", type=int, default=3,
                   help="full recomputes of the vectors and of the areas on a copy of each "
                   "store, best kept (default 3; 0 skips them)")
    # Internal: the instrumented index run and the recomputes, each in its own process.
    p.add_argument("--phases-child", type=Path, metavar="DB", help=argparse.SUPPRESS)
    p.add_argument("--recompute-child", type=Path, metavar="DB", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# 1b. The instrumented index run (a child process running this script with --phases-child)


def run_phases(clone: Path, db: Path, model: str, jobs: int | None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), str(clone), "--phases-child", str(db),
           "--model", model]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    r = bl.run(cmd, sample_tree=True)
    out = json.loads(r.stdout)
    out["process"] = {"seconds": r.seconds, "cpu_seconds": r.user_seconds + r.system_seconds,
                      "max_rss_kib": r.max_rss_kib, "tree_peak_rss_kib": r.tree_peak_rss_kib}
    ph = out["phases"]

    def s(label):
        return ph.get(label, {}).get("seconds", 0.0)
    memory = s("memory (all)")
    commits_only = out["total_seconds"] - memory
    items = s("items: commit segments") + s("items: doc sections")
    embedding = (s("model load") + s("vector table") + s("embedding (embed_missing)")
                 + s("vectors dropped (model none)"))
    spectral = s("areas (update_areas)")
    out["breakdown"] = {
        "commits_only_seconds": commits_only,
        "items_seconds": items,
        "embedding_seconds": embedding,
        "items_plus_embedding_seconds": items + embedding,
        "spectral_seconds": spectral,
        "memory_other_seconds": memory - items - embedding - spectral,
        "items_plus_embedding_over_commits_only": (items + embedding) / commits_only,
        "spectral_over_commits_only": spectral / commits_only,
        "memory_over_commits_only": memory / commits_only,
    }
    return out


# ---------------------------------------------------------------------------------------------
# 1c. Recomputing the vectors and the areas of a finished store (a child process on a copy)


def run_recompute(clone: Path, src: Path, work: Path, model: str, runs: int,
                  blas_threads: int | None) -> dict:
    import os
    db = work / "recompute.db"
    copy_db(src, db)
    env = dict(os.environ)
    if blas_threads is not None:
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    try:
        r = bl.run([sys.executable, str(Path(__file__).resolve()), str(clone), "--recompute-child",
                    str(db), "--model", model, "--recompute-runs", str(runs)], env=env)
    finally:
        remove_db(db)
    out = json.loads(r.stdout)
    for key in ("embed", "areas"):
        if out[key]:
            out[f"{key}_best_seconds"] = min(x["seconds"] for x in out[key])
            out[f"{key}_best_cpu_seconds"] = min(x["cpu_seconds"] for x in out[key])
    return out


# ---------------------------------------------------------------------------------------------
# The run

def main(argv=None) -> int:
    args = parse_args(argv)
    if args.phases_child is not None:
        return phases_child(args)
    if args.recompute_child is not None:
        return recompute_child(args)
    repo = args.repo.resolve()
    model = args.model
    if Path(model).expanduser().is_dir():
        model = str(Path(model).expanduser().resolve())
    log = bl.progress
    env = bl.environment(repo)
    cortex = bl.cortex_command()
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    report: dict = {"benchmark": "memory", "environment": env,
                    "config": bl.config(args, leave_out=("phases_child", "recompute_child"))}
    work = bl.work_dir("memory-", args.keep)
    try:
        # -- the clone, at T~1 -------------------------------------------------------------
        clone = bl.private_clone(repo, work / "clone", checkout=False)
        head = env["repository"]["head"]
        tip = bl.git(clone, "rev-list", "--first-parent", "--no-merges", "-n", "1", head)
        base = bl.git(clone, "rev-parse", f"{tip}^1")
        # A trunk name: a topic branch name would add words to search's context prior.
        bl.run(["git", "-C", str(clone), "checkout", "-q", "-B", "main", base])
        report["setup"] = {"clone": str(clone), "tip": tip, "base": base, "model": model,
                           "tip_subject": bl.git(clone, "log", "-1", "--format=%s", tip),
                           "commits_at_base": int(bl.git(clone, "rev-list", "--count", "HEAD")),
                           "jobs": args.jobs or "cortex default"}
        log(f"clone at {base[:10]}; one-commit update to {tip[:10]} later")

        # -- 1a. full index, child processes -----------------------------------------------
        dbs = {"none": work / "none.db", "model": work / "model.db"}
        full = {}
        for name, choice in (("none", "none"), ("model", model)):
            log(f"cortex index --rebuild --model {choice} ...")
            r = bl.run([*cortex, "index", "--rebuild", "--repo", str(clone), "--db",
                        str(dbs[name]), "--quiet", "--json", "--model", choice, *jobs],
                       sample_tree=True)
            full[name] = {"command": f"cortex index --rebuild --quiet --json --model {choice}"
                          + (" " + " ".join(jobs) if jobs else ""),
                          "seconds": r.seconds, "cpu_seconds": r.user_seconds + r.system_seconds,
                          "max_rss_kib": r.max_rss_kib, "tree_peak_rss_kib": r.tree_peak_rss_kib,
                          "tree_peak_processes": r.tree_peak_processes,
                          "tree_measure": r.tree_measure, "db_bytes": db_size(dbs[name]),
                          "summary": json.loads(r.stdout)}
            log(f"  {bl.fmt_seconds(r.seconds)} (CPU {r.user_seconds + r.system_seconds:.1f} s)")
        full["model_over_none"] = full["model"]["seconds"] / full["none"]["seconds"]
        full["added_seconds"] = full["model"]["seconds"] - full["none"]["seconds"]
        full["added_cpu_seconds"] = full["model"]["cpu_seconds"] - full["none"]["cpu_seconds"]
        report["full_index"] = full

        # -- 1b. phases, in process ----------------------------------------------------------
        if not args.no_phases:
            phases = {}
            for name, choice in (("none", "none"), ("model", model)):
                log(f"instrumented index_repository(model={choice}) ...")
                db = work / f"phases-{name}.db"
                phases[name] = run_phases(clone, db, choice, args.jobs)
                remove_db(db)
                b = phases[name]["breakdown"]
                log(f"  total {phases[name]['total_seconds']:.2f} s: commits-only "
                    f"{b['commits_only_seconds']:.2f} s, items+embedding "
                    f"{b['items_plus_embedding_seconds']:.2f} s, areas "
                    f"{b['spectral_seconds']:.2f} s")
            report["phases"] = phases

        # -- 1c. recomputes on copies, default BLAS threads and one ----------------------------
        if args.recompute_runs > 0:
            recompute = {}
            for name, choice in (("none", "none"), ("model", model)):
                for threads in (None, 1):
                    key = f"{name}_blas_{threads or 'default'}"
                    log(f"recompute on a copy: {key} ...")
                    recompute[key] = run_recompute(clone, dbs[name], work, choice,
                                                   args.recompute_runs, threads)
                    log(f"  areas best {recompute[key]['areas_best_seconds']:.2f} s")
            report["recompute"] = recompute

        # -- 2. encode throughput ----------------------------------------------------------
        log("Embedder.encode over the item texts ...")
        report["encode"] = encode_throughput(dbs["model"], model, args.encode_runs)
        log(f"  {report['encode']['texts_per_second']:.0f} texts/s")

        # -- 3. updates --------------------------------------------------------------------
        choices = {"none": "none", "model": model}
        noop = {name: [] for name in dbs}
        for _ in range(args.noop_runs):
            for name in dbs:
                r = bl.run([*cortex, "index", "--repo", str(clone), "--db", str(dbs[name]),
                            "--quiet", "--json", "--model", choices[name], *jobs])
                noop[name].append((r, json.loads(r.stdout)))
        saved = {name: work / f"saved-{name}.db" for name in dbs}
        for name in dbs:
            copy_db(dbs[name], saved[name])
        inc = {name: [] for name in dbs}
        for i in range(args.incremental_runs):
            if i:
                bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", base])
                for name in dbs:
                    copy_db(saved[name], dbs[name])
            bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", tip])
            for name in dbs:
                r = bl.run([*cortex, "index", "--repo", str(clone), "--db", str(dbs[name]),
                            "--quiet", "--json", "--model", choices[name], *jobs])
                inc[name].append((r, json.loads(r.stdout)))
            log(f"one-commit update {i + 1}: none {bl.fmt_seconds(inc['none'][-1][0].seconds)}, "
                f"model {bl.fmt_seconds(inc['model'][-1][0].seconds)}")
        for name in dbs:
            remove_db(saved[name])

        def runs(rs):
            t = [r.seconds for r, _ in rs]
            return {"seconds_best": min(t), "seconds_median": statistics.median(t),
                    "seconds_all": t, "max_rss_kib": max(r.max_rss_kib for r, _ in rs),
                    "summary": rs[0][1]}
        updates = {"noop": {name: runs(noop[name]) for name in dbs},
                   "one_commit": {name: runs(inc[name]) for name in dbs}}
        for kind in ("noop", "one_commit"):
            u = updates[kind]
            u["added_seconds_best"] = u["model"]["seconds_best"] - u["none"]["seconds_best"]
            u["added_seconds_median"] = u["model"]["seconds_median"] - u["none"]["seconds_median"]
        from cortex_core.index.areas import RECLUSTER_SHARE
        s = full["model"]["summary"]
        items_per_commit = s["items_added"] / max(1, s["new_commits"])
        updates["recluster"] = {
            "share": RECLUSTER_SHARE,
            "items_at_full_index": s["items_added"],
            "items_per_commit": items_per_commit,
            "commits_until_full_recluster": RECLUSTER_SHARE * s["items_added"]
            / max(items_per_commit, 1e-9)}
        report["updates"] = updates
        report["goals"] = {"one_commit_added_under_1s": updates["one_commit"]["added_seconds_best"]
                           < 1.0,
                           "noop_added_under_1s": updates["noop"]["added_seconds_best"] < 1.0}

        # -- 4. search -----------------------------------------------------------------------
        import retrieval_gold as rg
        log("changelog queries ...")
        texts = list(dict.fromkeys(q.query for q in rg.gold_queries(repo)))
        sample = random.Random(args.seed).sample(texts, min(args.queries, len(texts)))
        log(f"search in process over {len(sample)} queries ...")
        report["search"] = {"queries_available": len(texts), "queries": len(sample),
                            "in_process": search_in_process(dbs["model"], sample)}
        report["search"]["cli"] = search_cli(clone, dbs["model"], sample[:args.cli_queries],
                                             cortex, log)
    finally:
        if not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
