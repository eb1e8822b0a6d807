"""bench_memory.py's child processes (the script run again with --phases-child or
--recompute-child): the instrumented index run, phase by phase, and the recomputation of the
vectors and areas of a finished store, each with its peak RSS."""

from __future__ import annotations

import time
from pathlib import Path

import _benchlib as bl


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

    from cortex_core.index import areas as areas_mod
    from cortex_core.index import ingest
    from cortex_core.memory import spectral
    from cortex_core.config import load_settings
    from cortex_core.memory.embeddings import Embedder

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


def recompute_child(args) -> int:
    """On a copy of a store: re-embed every item (vectors dropped first) and recompute the areas
    in full (the `areas_basis` meta row deleted first), --recompute-runs times each; print JSON.
    Same calls as `_Indexer._memory`: drop_vectors + prepare_vectors + embed_missing, update_areas."""
    import os

    from cortex_core.index.areas import update_areas
    from cortex_core.config import load_settings
    from cortex_core.memory.embeddings import load_model
    from cortex_core.index.memory import drop_vectors, embed_missing, prepare_vectors
    from cortex_core.store.store import get_meta, open_writer
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
