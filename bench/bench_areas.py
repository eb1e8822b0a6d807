#!/usr/bin/env python3
"""The areas step's memory and time: `update_areas` forced to recompute in full, per code version,
per `[clusters] max_items` and per history length, each run in a fresh child process on its own
copy of DB.

DB is a finished store (never modified: each run works on a copy under bench/.work/). For each
`--items N` (keep the N oldest items by time, deleting the others and their file and symbol rows
from the copy: a shorter history; 0 keeps all), each `--max-items` value, each seed (0, then
1..`--seeds`: `SpectralSettings.seed`, replaced in the child, draws another sample) and each
`--code` folder (a checkout holding `cortex_core`, e.g. main's and a worktree's; imported
through PYTHONPATH, which the child checks), a child process opens the copy, deletes the
`areas_basis` meta row (a full recompute, as after a change of the settings), with `--lexical`
drops the vectors (areas on hashed TF-IDF vectors, as without a model), resets its peak RSS
(`/proc/self/clear_refs`, so imports and opening do not count), runs
`update_areas(con, ClusterSettings(max_items=M), None)` and reports the peak (VmHWM), the resident
memory before, wall and CPU time, and every item's cluster. No model is loaded: a full recompute
reads the stored vectors (the embedder argument is unused there). The code folders alternate
within each setting, so that a change in the machine's load falls on both.

Agreement: the adjusted Rand index (Hubert & Arabie 1985) of each run's clusters against the exact
clustering of the same items (a run of the first `--code` with `max_items` above the item count,
unless `--no-reference`), and between the code folders at the same setting and seed, with
whether labels and the clusters table are identical. A sampled clustering is not expected to
equal the exact one: the index says how far from it each code's sample-and-extend lands, and
the seeds how far another sample alone moves it.

Run with the venv's python: `/work/venv/bin/python bench/bench_areas.py DB --code /work/main
--code . --max-items 3000 6000 --items 5000 10000 0 --seeds 3` (bench/README.md, "Areas step").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import _benchlib as bl
from _benchlib import copy_db, remove_db


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Peak memory and time of a full recompute of the areas (update_areas) per "
        "code folder and max_items, each in a fresh process on a copy of DB; agreement of the "
        "clusters (adjusted Rand index) with the exact clustering and between code folders.")
    p.add_argument("db", type=Path, help="a finished store (not modified: copied per run)")
    p.add_argument("--code", type=Path, action="append",
                   help="a folder holding cortex_core (repeat; default: this checkout)")
    p.add_argument("--max-items", type=int, nargs="+", default=[3000, 6000],
                   help="values of [clusters] max_items (default 3000 6000)")
    p.add_argument("--items", type=int, nargs="+", default=[0],
                   help="keep only the N oldest items (by time, then id) of each copy, for "
                   "several history lengths (default 0: all of them)")
    p.add_argument("--lexical", action="store_true",
                   help="drop the copy's vectors first: areas on hashed TF-IDF vectors, as "
                   "without a model")
    p.add_argument("--seeds", type=int, default=0,
                   help="also run each --code with the sample's seed 1..N (the seed of "
                   "SpectralSettings, replaced in the child): how much another sample alone "
                   "changes the clusters (default 0)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the exact clustering that agreement is measured against")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    # Internal: one run, in its own process.
    p.add_argument("--child", type=Path, metavar="DB_COPY", help=argparse.SUPPRESS)
    p.add_argument("--child-max-items", type=int, help=argparse.SUPPRESS)
    p.add_argument("--child-labels", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--child-items", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--child-seed", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# The child: one full recompute


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0); False when the kernel refuses."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _keep_oldest(con, n: int) -> None:
    """Delete every item but the n oldest, and what refers to them (a shorter history)."""
    con.execute("create temp table gone as select id from items order by time, id"
                " limit -1 offset ?", (n,))
    for table in ("item_files", "item_symbols"):
        con.execute(f"delete from {table} where item_id in (select id from gone)")
    con.execute("delete from items where id in (select id from gone)")
    con.execute("drop table gone")


def child(args) -> int:
    from dataclasses import replace

    import numpy as np
    import scipy.sparse.linalg  # noqa: F401 - imported before the peak is reset, as in an index run

    import cortex_core
    from cortex_core.config import ClusterSettings
    from cortex_core.index.areas import update_areas
    from cortex_core.memory import spectral
    if args.child_seed:
        # update_areas looks SpectralSettings up when it runs: another seed, same code otherwise.
        import functools
        spectral.SpectralSettings = functools.partial(spectral.SpectralSettings,
                                                      seed=args.child_seed)
    from cortex_core.store.store import get_meta, open_writer
    con = open_writer(args.child)
    with con:
        con.execute("delete from meta where key = 'areas_basis'")
        if args.lexical:
            from cortex_core.index.memory import drop_vectors
            drop_vectors(con, "benchmark: lexical areas")
        if args.child_items:
            _keep_oldest(con, args.child_items)
    items = con.execute("select count(*) from items").get
    settings = replace(ClusterSettings(), max_items=args.child_max_items)
    reset = _reset_peak()
    rss_before = _status_kib("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    k = update_areas(con, settings, None)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _status_kib("VmHWM")
    rows = np.array(con.execute("select id, coalesce(cluster, -2) from items order by id")
                    .fetchall(), dtype=np.int64).reshape(-1, 2)
    np.save(args.child_labels, rows)
    clusters = [list(r) for r in con.execute("select id, size, label, terms, paths, first_time,"
                                             " last_time, hex(centroid) from clusters order by id")]
    out = {"cortex_core": cortex_core.__file__, "items": items, "max_items": settings.max_items,
           "k": k, "eigengap": get_meta(con, "areas_eigengap"), "seconds": seconds,
           "cpu_seconds": cpu, "peak_reset": reset, "rss_before_kib": rss_before,
           "peak_rss_kib": peak, "step_peak_kib": peak - rss_before, "clusters": clusters}
    con.close()
    bl.dump_json(out)
    return 0


# ---------------------------------------------------------------------------------------------
# The parent


def run_one(code: Path, src: Path, work: Path, max_items: int, tag: str, items: int,
            lexical: bool, seed: int = 0) -> dict:
    db, labels = work / f"{tag}.db", work / f"{tag}.npy"
    copy_db(src, db)
    env = dict(os.environ, PYTHONPATH=str(code))
    try:
        r = bl.run([sys.executable, str(Path(__file__).resolve()), str(src), "--child", str(db),
                    "--child-max-items", str(max_items), "--child-labels", str(labels),
                    "--child-items", str(items), "--child-seed", str(seed)]
                   + (["--lexical"] if lexical else []), env=env)
    finally:
        remove_db(db)
    out = json.loads(r.stdout)
    if not Path(out["cortex_core"]).resolve().is_relative_to(code.resolve()):
        raise SystemExit(f"the child imported {out['cortex_core']}, not the copy under {code}")
    out["labels_file"] = str(labels)
    return out


def adjusted_rand(a, b) -> float:
    """Adjusted Rand index of two labelings of the same items (1: identical partitions)."""
    import numpy as np
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1), dtype=np.float64)
    np.add.at(table, (ai, bi), 1)

    def pairs(x):
        return float((x * (x - 1) / 2).sum())
    both, rows, cols, n = pairs(table), pairs(table.sum(1)), pairs(table.sum(0)), len(a)
    expected = rows * cols / (n * (n - 1) / 2)
    top = (rows + cols) / 2
    return 1.0 if top == expected else (both - expected) / (top - expected)


def _labels(run: dict):
    import numpy as np
    return np.load(run["labels_file"])


def agreement(runs: list[dict], reference: dict | None) -> None:
    """Adds `ari_exact` (against the reference), and against the first code folder's run at the
    same max_items and seed `ari_first` and `identical` (same cluster of every item, same clusters
    table: sizes, labels, terms, paths, times, centroids) to each run."""
    ref = _labels(reference) if reference else None
    first: dict[tuple[int, int], object] = {}
    tables: dict[tuple[int, int], list] = {}
    for run in runs:
        rows = _labels(run)
        if ref is not None:
            if len(rows) != len(ref) or not (rows[:, 0] == ref[:, 0]).all():
                raise SystemExit("the runs' items differ")
            run["ari_exact"] = adjusted_rand(rows[:, 1], ref[:, 1])
        key = (run["max_items"], run["seed"])
        if key in first:
            run["ari_first"] = adjusted_rand(rows[:, 1], first[key])
            run["identical"] = bool((rows[:, 1] == first[key]).all()
                                    and run["clusters"] == tables[key])
        else:
            first[key] = rows[:, 1]
            tables[key] = run["clusters"]


def render(report: dict) -> str:
    lines = bl.environment_lines(report["environment"])
    lines.append(f"store: {report['config']['db']}"
                 + (" (vectors dropped: lexical areas)" if report["config"]["lexical"] else ""))
    for r in report["references"]:
        lines.append(f"exact reference at {r['items']} items: {r['code']}: {r['k']} areas,"
                     f" step peak {bl.mib(r['step_peak_kib'])}, {r['seconds']:.1f} s")
    rows = [[str(r["items"]), str(r["max_items"]),
             r["code"] + (f" (seed {r['seed']})" if r["seed"] else ""), bl.mib(r["rss_before_kib"]), bl.mib(r["peak_rss_kib"]),
             bl.mib(r["step_peak_kib"]), f"{r['seconds']:.1f} s", f"{r['cpu_seconds']:.1f} s",
             str(r["k"]), f"{r['ari_exact']:.3f}" if "ari_exact" in r else "-",
             f"{r['ari_first']:.3f}" if "ari_first" in r else "-",
             ("yes" if r["identical"] else "no") if "identical" in r else "-"]
            for r in report["runs"]]
    lines.append(bl.table(rows, ["items", "max_items", "code", "RSS before", "peak (VmHWM)", "step peak",
                                 "wall", "CPU", "areas", "ARI vs exact", "ARI vs 1st code",
                                 "identical to 1st"]))
    if any(r["seed"] for r in report["runs"]):
        lines += ["", "over the seeds (median; range):", summary(report["runs"])]
    return "\n".join(lines)


def summary(runs: list[dict]) -> str:
    """Per history length, max_items and code: the step's peak and time, the number of areas
    and the agreement with the exact clustering over the seeds."""
    import statistics
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["items"], r["max_items"], r["code"]), []).append(r)

    def spread(values, form):
        return (f"{form(statistics.median(values))} ({form(min(values))}-{form(max(values))})"
                if len(values) > 1 else form(values[0]))
    rows = []
    for (items, max_items, code), rs in groups.items():
        aris = [r["ari_exact"] for r in rs if "ari_exact" in r]
        rows.append([str(items), str(max_items), code, str(len(rs)),
                     spread([r["step_peak_kib"] / 1024 for r in rs], lambda v: f"{v:.0f} MiB"),
                     spread([r["seconds"] for r in rs], lambda v: f"{v:.1f} s"),
                     spread([r["k"] for r in rs], lambda v: f"{v:g}"),
                     spread(aris, lambda v: f"{v:.3f}") if aris else "-"])
    return bl.table(rows, ["items", "max_items", "code", "runs", "step peak", "wall", "areas",
                           "ARI vs exact"])


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child is not None:
        return child(args)
    codes = [c.resolve() for c in (args.code or [bl.PROJECT_DIR])]
    src = args.db.resolve()
    report: dict = {"benchmark": "areas", "environment": bl.environment(),
                    "config": bl.config(args, leave_out=("child", "child_max_items",
                                                         "child_labels"))}
    work = bl.work_dir("areas-", args.keep)
    try:
        runs, n = [], 0
        for items in args.items:
            for max_items in args.max_items:
                for seed in range(args.seeds + 1):
                    for code in codes:
                        bl.progress(f"{code}: items {items or 'all'}, max_items {max_items},"
                                    f" seed {seed} ...")
                        run = run_one(code, src, work, max_items, f"run{n}", items,
                                      args.lexical, seed)
                        run["code"], run["seed"] = str(code), seed
                        runs.append(run)
                        n += 1
        report["items"] = sorted({r["items"] for r in runs})
        references = {}
        if not args.no_reference:
            for items in args.items:
                bl.progress(f"{codes[0]}: items {items or 'all'}, exact reference ...")
                ref = run_one(codes[0], src, work, 10 ** 9, f"reference{items}", items,
                              args.lexical)
                ref["code"] = str(codes[0])
                references[ref["items"]] = ref
        for items in report["items"]:
            agreement([r for r in runs if r["items"] == items], references.get(items))
        report["runs"], report["references"] = runs, list(references.values())
        bl.emit(report, args.json, render)
    finally:
        if not args.keep:
            bl.remove(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
