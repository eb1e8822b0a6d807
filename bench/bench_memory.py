#!/usr/bin/env python3
"""Memory: what embeddings and areas add to indexing, embedding throughput, search latency.

Works on a private clone of REPO under bench/.work/ (REPO itself is never altered), like
bench_index.py: the clone is checked out at T~1, T being the newest non-merge commit on HEAD's
first-parent line, so that a one-commit update can be measured later.

  1. Indexing cost. Two full `cortex index --rebuild` child processes into temporary databases,
     `--model none` (commits, items, lexical areas) and `--model PATH` (the same plus vectors and
     areas on vectors): wall, CPU, peak memory of the process tree, database size. Then the same
     two indexes once more, in a child process that runs `cortex_core.ingest.index_repository`
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
  4. Search latency: `cortex_core.search.search` in process (after one warm-up call) for the
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
import re
import shlex
import statistics
import sys
import time
from pathlib import Path

import _benchlib as bl
from _benchlib import copy_db, db_size, remove_db

DEFAULT_MODEL = "/work/shared/models/m2v-minilm-l6-v2"
SEARCH_MODES = ("lexical", "vector", "hybrid")


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
# Databases


# ---------------------------------------------------------------------------------------------
# 1b. The instrumented index run (a child process running this script with --phases-child)

def _vm_hwm_kib() -> int:
    """Peak RSS of this process so far (VmHWM)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def phases_child(args) -> int:
    """Run index_repository(rebuild=True) with timers around its phases; print JSON."""
    from dataclasses import asdict

    from cortex_core import areas as areas_mod
    from cortex_core import ingest, spectral
    from cortex_core.config import load_settings
    from cortex_core.embeddings import Embedder

    timings: dict[str, dict] = {}
    details: dict[str, object] = {}
    order: list[str] = []

    def wrap(owner, name: str, label: str, capture=None):
        original = getattr(owner, name)

        def wrapped(*a, **k):
            before = _vm_hwm_kib()
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                result = original(*a, **k)
            finally:
                rec = timings.get(label)
                if rec is None:
                    rec = timings[label] = {"seconds": 0.0, "cpu_seconds": 0.0, "calls": 0,
                                            "peak_rss_kib_before": before}
                    order.append(label)
                rec["seconds"] += time.perf_counter() - t0
                rec["cpu_seconds"] += time.process_time() - c0
                rec["calls"] += 1
                rec["peak_rss_kib_after"] = _vm_hwm_kib()
            if capture is not None:
                capture(result, a, k)
            return result
        setattr(owner, name, wrapped)

    def put(key):
        return lambda result, a, k: details.__setitem__(key, result)

    def spectral_info(result, a, k):
        details["spectral"] = {
            "items": int(len(a[0])), "dim": int(a[0].shape[1]) if a[0].ndim == 2 else None,
            "links": len(a[1]) if len(a) > 1 and hasattr(a[1], "__len__") else None,
            "k": int(result.k), "eigengap": float(result.eigengap),
            "sampled": int(result.sampled),
            "eigenvalues": [round(float(v), 5) for v in result.eigenvalues[:8]],
            "settings": {f: getattr(a[2] if len(a) > 2 else k.get("settings"), f)
                         for f in ("knn", "min_clusters", "max_clusters", "max_items")}}

    def graph_info(result, a, k):
        details.setdefault("graph", []).append({"nodes": int(result.shape[0]),
                                                "edges_nnz": int(result.nnz)})

    def collapse_info(result, a, k):
        details["distinct_vector_nodes"] = int(len(result[1]))

    wrap(ingest._Indexer, "_ingest", "commits: read + write")
    wrap(ingest._Indexer, "_snapshot_head", "HEAD snapshot")
    wrap(ingest._Indexer, "_memory", "memory (all)")
    wrap(ingest, "add_commit_items", "items: commit segments", put("commit_items"))
    wrap(ingest, "refresh_docs", "items: doc sections", put("doc_items"))
    wrap(ingest, "drop_vectors", "vectors dropped (model none)")
    wrap(ingest, "load_model", "model load")
    wrap(ingest, "prepare_vectors", "vector table")
    wrap(ingest, "embed_missing", "embedding (embed_missing)", put("texts_embedded"))
    wrap(Embedder, "encode", "  of which Embedder.encode")
    wrap(ingest, "update_areas", "areas (update_areas)", put("areas"))
    wrap(areas_mod, "_vectors", "  item vectors")
    wrap(areas_mod, "_links", "  structural links")
    wrap(spectral, "spectral_clusters", "  spectral_clusters", spectral_info)
    wrap(spectral, "_collapse", "    identical vectors", collapse_info)
    wrap(spectral, "_graph", "    kNN graph", graph_info)
    wrap(spectral, "_spectrum", "    eigenvectors (Lanczos)")
    wrap(spectral, "_kmeans", "    k-means")
    wrap(spectral, "_extend", "    out-of-sample extension")
    wrap(spectral, "distinctive_terms", "  distinctive terms")
    wrap(areas_mod, "_store", "  store clusters")

    repo = args.repo.resolve()
    t0, c0 = time.perf_counter(), time.process_time()
    summary = ingest.index_repository(repo, args.phases_child,
                                      load_settings(repo / ".cortex" / "config.toml"),
                                      rebuild=True, jobs=args.jobs, model=args.model)
    total = time.perf_counter() - t0
    out = {"model": args.model, "total_seconds": total,
           "total_cpu_seconds_main_process": time.process_time() - c0,
           "peak_rss_kib_main_process": _vm_hwm_kib(), "phases": timings, "order": order,
           "details": details, "summary": asdict(summary)}
    bl.dump_json(out)
    return 0


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

def recompute_child(args) -> int:
    """On a copy of a store: re-embed every item (vectors dropped first) and recompute the areas
    in full (the `areas_basis` meta row deleted first), --recompute-runs times each; print JSON.
    Same calls as `_Indexer._memory`: drop_vectors + prepare_vectors + embed_missing, update_areas."""
    import os

    from cortex_core.areas import update_areas
    from cortex_core.config import load_settings
    from cortex_core.embeddings import load_model
    from cortex_core.memory import drop_vectors, embed_missing, prepare_vectors
    from cortex_core.store import get_meta, open_writer
    repo = args.repo.resolve()
    settings = load_settings(repo / ".cortex" / "config.toml")
    con = open_writer(args.recompute_child)
    t0 = time.perf_counter()
    embedder = None if args.model == "none" else load_model(args.model)
    out = {"model": args.model, "model_load_seconds": time.perf_counter() - t0,
           "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
           "items": con.execute("select count(*) from items").get, "embed": [], "areas": []}
    if embedder is not None:
        for _ in range(args.recompute_runs):
            with con:
                drop_vectors(con, "benchmark")
                prepare_vectors(con, embedder)
            t0, c0 = time.perf_counter(), time.process_time()
            texts = embed_missing(con, embedder)
            out["embed"].append({"seconds": time.perf_counter() - t0,
                                 "cpu_seconds": time.process_time() - c0, "texts": texts})
    for _ in range(args.recompute_runs):
        with con:
            con.execute("delete from meta where key = 'areas_basis'")
        t0, c0 = time.perf_counter(), time.process_time()
        k = update_areas(con, settings.clusters, embedder)
        out["areas"].append({"seconds": time.perf_counter() - t0,
                             "cpu_seconds": time.process_time() - c0, "k": k,
                             "eigengap": float(get_meta(con, "areas_eigengap") or "nan"),
                             "basis": get_meta(con, "areas_basis")})
    out["peak_rss_kib"] = _vm_hwm_kib()
    con.close()
    bl.dump_json(out)
    return 0


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
# 2. Embedding throughput

def encode_throughput(db: Path, model: str, runs: int) -> dict:
    from cortex_core.embeddings import BATCH, MAX_CHARS, load_model
    from cortex_core.memory import embed_text
    from cortex_core.store import open_reader
    con = open_reader(db)
    rows = con.execute("select kind, segment, title, body from items").fetchall()
    con.close()
    texts = list(dict.fromkeys(embed_text(*r) for r in rows))
    t0 = time.perf_counter()
    embedder = load_model(model)
    load_seconds = time.perf_counter() - t0
    passes = []
    for _ in range(runs):
        start = time.perf_counter()
        for i in range(0, len(texts), BATCH):
            embedder.encode(texts[i:i + BATCH])
        passes.append(time.perf_counter() - start)
    best = min(passes)
    chars = sum(min(len(t), MAX_CHARS) for t in texts)
    return {"items": len(rows), "distinct_texts": len(texts), "batch": BATCH,
            "chars_encoded": chars, "clipped_texts": sum(len(t) > MAX_CHARS for t in texts),
            "mean_chars": chars / max(1, len(texts)), "dim": embedder.dim,
            "model_load_seconds_in_process": load_seconds,
            "seconds_best": best, "seconds_all": passes,
            "texts_per_second": len(texts) / best, "items_per_second": len(rows) / best,
            "chars_per_second": chars / best}


# ---------------------------------------------------------------------------------------------
# 4. Search

def first_word(text: str) -> str | None:
    m = re.search(r"[A-Za-z0-9]+", text)
    return m.group(0) if m else None


def latency(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"p50": bl.percentile(values, 50), "p95": bl.percentile(values, 95),
            "mean": statistics.fmean(values), "max": max(values), "n": len(values)}


def search_in_process(db: Path, queries: list[str]) -> dict:
    from cortex_core.embeddings import load_embedder
    from cortex_core.search import SearchOptions, search
    from cortex_core.store import open_reader
    con = open_reader(db)
    t0 = time.perf_counter()
    embedder = load_embedder(con)
    load_seconds = time.perf_counter() - t0
    now = time.time()
    out = {"embedder": getattr(embedder, "name", None), "embedder_load_seconds": load_seconds,
           "modes": {}}
    for mode in SEARCH_MODES:
        if mode != "lexical" and embedder is None:
            continue
        options = SearchOptions(mode=mode)   # the CLI's defaults: top 10, every kind, priors on
        errors, seconds, hits, used = 0, [], [], set()
        try:
            search(con, queries[0], options, embedder=embedder, now=now)   # warm-up
        except Exception:  # noqa: BLE001, S110 - counted query by query below
            pass
        for q in queries:
            try:
                start = time.perf_counter()
                result = search(con, q, options, embedder=embedder, now=now)
                seconds.append(time.perf_counter() - start)
                hits.append(len(result.hits))
                used.add(result.mode)
            except Exception:  # noqa: BLE001 - a query with no words, for instance
                errors += 1
        out["modes"][mode] = {"latency_s": latency(seconds), "errors": errors,
                              "mean_hits": statistics.fmean(hits) if hits else None,
                              "modes_used": sorted(used)}
    con.close()
    return out


def search_cli(clone: Path, db: Path, queries: list[str], cortex: list[str], log) -> dict:
    """cortex search (hybrid, lexical; whole entry and first word) vs git log --grep, per query
    interleaved so that a change of load hits all alike."""
    rows = []
    for n, q in enumerate(queries):
        word = first_word(q)
        if word is None:
            continue
        git_cmd = (f"git -C {shlex.quote(str(clone))} log --grep={shlex.quote(word)} -i "
                   f"--format=%H | head")
        g = bl.run(["sh", "-c", git_cmd])
        base = [*cortex, "search", "--repo", str(clone), "--db", str(db)]
        hybrid = bl.run([*base, "--", q])
        lexical = bl.run([*base, "--mode", "lexical", "--", q])
        word_hybrid = bl.run([*base, "--", word])
        rows.append({"query": q[:120], "word": word,
                     "git_seconds": g.seconds, "git_hits": len(g.stdout.split()),
                     "hybrid_seconds": hybrid.seconds, "hybrid_rss_kib": hybrid.max_rss_kib,
                     "lexical_seconds": lexical.seconds, "lexical_rss_kib": lexical.max_rss_kib,
                     "word_hybrid_seconds": word_hybrid.seconds})
        log(f"cli query {n + 1}/{len(queries)}: git {bl.fmt_seconds(g.seconds)}, hybrid "
            f"{bl.fmt_seconds(hybrid.seconds)}, lexical {bl.fmt_seconds(lexical.seconds)}")
    start = [bl.run([*cortex, "--version"]).seconds for _ in range(3)]
    out = {"queries": len(rows), "rows": rows,
           "git_command": "git log --grep=WORD -i --format=%H | head  (through sh -c)",
           "cortex_command": " ".join(cortex) + " search --repo CLONE --db DB [--mode lexical] "
                             "-- QUERY",
           "cortex_version_seconds": min(start)}
    for key in ("git", "hybrid", "lexical", "word_hybrid"):
        out[key] = latency([r[f"{key}_seconds"] for r in rows])
    for key in ("hybrid", "lexical", "word_hybrid"):
        out[f"{key}_over_git_p50"] = out[key]["p50"] / out["git"]["p50"]
        out[f"{key}_over_git_mean"] = out[key]["mean"] / out["git"]["mean"]
    out["hybrid_peak_rss_kib"] = max(r["hybrid_rss_kib"] for r in rows)
    out["lexical_peak_rss_kib"] = max(r["lexical_rss_kib"] for r in rows)
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
        from cortex_core.areas import RECLUSTER_SHARE
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


# ---------------------------------------------------------------------------------------------
# The report

def render(r: dict) -> str:
    s = r["setup"]
    out = ["cortex memory: embeddings, areas, search", "=" * 40,
           *bl.environment_lines(r["environment"]),
           f"private clone at T~1 = {s['base'][:10]} ({s['commits_at_base']} commits); "
           f"T = {s['tip'][:10]} {s['tip_subject'][:60]!r}",
           f"model: {s['model']}; index jobs: {s['jobs']}"]

    # 1a
    f = r["full_index"]
    out += ["", "1. Full index (child processes, one run each, process start included)"]
    rows = []
    for name in ("none", "model"):
        x = f[name]
        sm = x["summary"]
        rows.append([x["command"].replace("cortex index --rebuild --quiet --json ", ""),
                     bl.fmt_seconds(x["seconds"]),
                     "1.00x" if name == "none" else f"{f['model_over_none']:.2f}x",
                     f"{x['cpu_seconds']:.1f} s", bl.mib(x["tree_peak_rss_kib"]),
                     bl.mib(x["max_rss_kib"]), bl.fmt_bytes(x["db_bytes"]),
                     str(sm.get("items_added")), str(sm.get("texts_embedded")),
                     str(sm.get("areas"))])
    out.append(bl.table(rows, ["", "wall", "/ none", "CPU", "peak (tree)", "largest proc",
                               "database", "items", "embedded", "areas"]))
    out.append(f"the model adds {f['added_seconds']:+.2f} s wall, "
               f"{f['added_cpu_seconds']:+.1f} s CPU (one run each: within the noise when small; "
               f"see the phases); peak (tree): "
               f"{f['model'].get('tree_measure') or 'RSS'} of all processes, sampled every 50 ms")

    # 1b
    if "phases" in r:
        ph = r["phases"]
        labels = list(dict.fromkeys(ph["model"]["order"] + ph["none"]["order"]))
        cm = ph["model"]["breakdown"]["commits_only_seconds"]
        cn = ph["none"]["breakdown"]["commits_only_seconds"]
        rows = [["commits-only (total - memory)", f"{cm:.2f} s", "1.00x", "",
                 f"{cn:.2f} s", "1.00x", ""]]
        for label in labels:
            if label == "memory (all)":
                continue
            m = ph["model"]["phases"].get(label)
            n = ph["none"]["phases"].get(label)
            rows.append([label,
                         f"{m['seconds']:.3f} s" if m else "-",
                         f"{m['seconds'] / cm:.3f}x" if m else "",
                         bl.mib(m["peak_rss_kib_after"]) if m else "",
                         f"{n['seconds']:.3f} s" if n else "-",
                         f"{n['seconds'] / cn:.3f}x" if n else "",
                         bl.mib(n["peak_rss_kib_after"]) if n else ""])
        for key, label in (("items_plus_embedding_seconds", "= items + embedding"),
                           ("spectral_seconds", "= spectral step (areas)"),
                           ("memory_other_seconds", "= memory, rest (transactions)")):
            bm, bn = ph["model"]["breakdown"], ph["none"]["breakdown"]
            rows.append([label, f"{bm[key]:.2f} s", f"{bm[key] / cm:.3f}x", "",
                         f"{bn[key]:.2f} s", f"{bn[key] / cn:.3f}x", ""])
        rows.append(["total (index_repository)", f"{ph['model']['total_seconds']:.2f} s",
                     f"{ph['model']['total_seconds'] / cm:.2f}x",
                     bl.mib(ph["model"]["peak_rss_kib_main_process"]),
                     f"{ph['none']['total_seconds']:.2f} s",
                     f"{ph['none']['total_seconds'] / cn:.2f}x",
                     bl.mib(ph["none"]["peak_rss_kib_main_process"])])
        out += ["", "   Phases of one in-process index_repository(rebuild=True) each (a child "
                "process; wall time; nested rows indented)"]
        out.append(bl.table(rows, ["phase", "model", "/ commits", "peak RSS after",
                                   "model none", "/ commits", "peak RSS after"]))
        for name in ("model", "none"):
            d = ph[name]["details"]
            sp = d.get("spectral")
            if sp:
                g = d.get("graph", [{}])[0]
                out.append(f"spectral step, {name}: {sp['items']} items of {sp['dim']} dims "
                           f"({d.get('distinct_vector_nodes')} distinct), {sp['links']} links, "
                           f"graph {g.get('nodes')} nodes / {g.get('edges_nnz')} nnz, "
                           f"k = {sp['k']}, eigengap {sp['eigengap']:.4f}, "
                           f"{sp['sampled']} clustered exactly "
                           f"(max_items {sp['settings']['max_items']})")
        out.append("peak RSS after: the main process's peak so far (VmHWM) when the phase ended; "
                   "worker processes reading commits not included. An indented row is part of "
                   "the next less indented row below it.")

    # 1c
    if "recompute" in r:
        rc = r["recompute"]
        out += ["", "   Recomputed on a copy of each finished store (child process per row, best "
                "of runs; OPENBLAS_NUM_THREADS unset = OpenBLAS's default, one thread per CPU)"]
        rows = []
        for key, x in rc.items():
            name, threads = key.split("_blas_")
            label = ("--model none (lexical areas)" if name == "none" else "--model PATH")
            label += f", BLAS threads: {threads}"
            areas_runs = x["areas"]
            rows.append([label,
                         bl.fmt_seconds(x["embed_best_seconds"]) if x.get("embed") else "-",
                         bl.fmt_seconds(x["areas_best_seconds"]),
                         f"{x['areas_best_cpu_seconds']:.2f} s",
                         " / ".join(f"{a['seconds']:.1f}" for a in areas_runs),
                         str(areas_runs[0]["k"]), f"{areas_runs[0]['eigengap']:.4f}",
                         bl.mib(x["peak_rss_kib"])])
        out.append(bl.table(rows, ["", "embed_missing", "update_areas", "its CPU", "all runs (s)",
                                   "k", "eigengap", "peak RSS"]))

    # 2
    e = r["encode"]
    out += ["", f"2. Embedder.encode over the index's item texts (batches of {e['batch']}, best "
            f"of {len(e['seconds_all'])})"]
    out.append(f"{e['distinct_texts']} distinct texts for {e['items']} items, mean "
               f"{e['mean_chars']:.0f} chars ({e['clipped_texts']} clipped): "
               f"{bl.fmt_seconds(e['seconds_best'])} = {e['texts_per_second']:.0f} texts/s, "
               f"{e['items_per_second']:.0f} items/s, {e['chars_per_second'] / 1e6:.1f} M chars/s; "
               f"model load in process {bl.fmt_seconds(e['model_load_seconds_in_process'])}")
    if "phases" in r:
        emb = r["phases"]["model"]["phases"].get("embedding (embed_missing)")
        enc = r["phases"]["model"]["phases"].get("  of which Embedder.encode")
        if emb and enc:
            out.append(f"in the index: embed_missing {bl.fmt_seconds(emb['seconds'])}, of which "
                       f"encode {bl.fmt_seconds(enc['seconds'])} and SQLite (vec0 inserts, "
                       f"item updates) {bl.fmt_seconds(emb['seconds'] - enc['seconds'])}")

    # 3
    u = r["updates"]
    out += ["", "3. Updates (child processes, process start included)"]
    rows = []
    for kind, label in (("noop", "no-op re-index"), ("one_commit", "one new commit")):
        for name in ("none", "model"):
            x = u[kind][name]
            rows.append([f"{label}, --model {'none' if name == 'none' else 'PATH'}",
                         bl.fmt_seconds(x["seconds_best"]), bl.fmt_seconds(x["seconds_median"]),
                         bl.mib(x["max_rss_kib"]), str(x["summary"].get("texts_embedded")),
                         str(x["summary"].get("areas"))])
        rows.append(["  added by the model", f"{u[kind]['added_seconds_best'] * 1e3:+.0f} ms",
                     f"{u[kind]['added_seconds_median'] * 1e3:+.0f} ms", "", "", ""])
    out.append(bl.table(rows, ["", "best", "median", "peak RSS", "embedded", "areas"]))
    if "phases" in r and "model load" in r["phases"]["model"]["phases"]:
        out.append(f"model load in the instrumented index run: "
                   f"{bl.fmt_seconds(r['phases']['model']['phases']['model load']['seconds'])} "
                   f"(every `cortex index` with a model loads it, even with nothing to embed)")
    rc = u["recluster"]
    out.append(f"goal: the model adds under 1 s to a one-commit update: "
               f"{'yes' if r['goals']['one_commit_added_under_1s'] else 'NO'} "
               f"({u['one_commit']['added_seconds_best'] * 1e3:+.0f} ms; no-op "
               f"{u['noop']['added_seconds_best'] * 1e3:+.0f} ms)")
    out.append(f"a full re-cluster happens when the items move by {rc['share']:.0%}: "
               f"~{rc['commits_until_full_recluster']:.0f} commits at "
               f"{rc['items_per_commit']:.2f} items per commit; that update pays the spectral "
               f"step above")

    # 4
    sr = r["search"]
    ip = sr["in_process"]
    out += ["", f"4. Search latency ({sr['queries']} changelog entries of "
            f"{sr['queries_available']}; defaults: top 10, every kind, priors on)"]
    rows = []
    for mode, x in ip["modes"].items():
        lat = x["latency_s"]
        rows.append([f"search() in process, {mode}", bl.fmt_seconds(lat["p50"]),
                     bl.fmt_seconds(lat["p95"]), bl.fmt_seconds(lat["mean"]),
                     bl.fmt_seconds(lat["max"]), str(x["errors"])])
    out.append(bl.table(rows, ["", "p50", "p95", "mean", "max", "errors"]))
    out.append("the model is loaded before the first query (not in the latencies; the first "
               f"load in a process, imports included, took "
               f"{bl.fmt_seconds(r['encode']['model_load_seconds_in_process'])}: section 2)")
    c = sr["cli"]
    rows = [["git log --grep=WORD -i --format=%H | head (baseline)",
             bl.fmt_seconds(c["git"]["p50"]), bl.fmt_seconds(c["git"]["p95"]),
             bl.fmt_seconds(c["git"]["mean"]), "1.00x", ""]]
    for key, label in (("word_hybrid", "cortex search WORD (hybrid)"),
                       ("hybrid", "cortex search ENTRY (hybrid)"),
                       ("lexical", "cortex search ENTRY --mode lexical")):
        x = c[key]
        rss = c.get(f"{key}_peak_rss_kib")
        rows.append([label, bl.fmt_seconds(x["p50"]), bl.fmt_seconds(x["p95"]),
                     bl.fmt_seconds(x["mean"]), f"{c[key + '_over_git_p50']:.2f}x",
                     bl.mib(rss) if rss else ""])
    out += ["", f"   end to end, {c['queries']} queries, interleaved (cortex --version = "
            f"{bl.fmt_seconds(c['cortex_version_seconds'])})"]
    out.append(bl.table(rows, ["", "p50", "p95", "mean", "p50 / git", "peak RSS"]))
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
