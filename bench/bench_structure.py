#!/usr/bin/env python3
"""Structure: callers against Jedi, co-change prediction over time, the structure pass's cost,
`blast` latency.

Works on a private clone of REPO under bench/.work/ (REPO itself is never altered), checked out at
REPO's HEAD. Four parts (`--parts`, default all):

  callers    Accuracy of `cortex_core.query.blast.callers` against Jedi (jedi 0.20.1, installed
             in the venv for this benchmark only). N Python functions and methods defined at
             HEAD are sampled from the store's `defs` table (kinds function/method, or those of
             --kinds, such as class: not in test files,
             no dunders `__x__` and no name-mangled `__x`; shuffled with --seed, keeping those
             whose `def NAME` line is found in the definition's range). For each, Jedi's
             `Script(path, project=Project(clone)).get_references(line, column)` at the
             definition's name; kept: reference sites that are not definitions, not import
             statements and not inside the definition itself. Each site, and each item of
             `callers()`, is mapped to its enclosing definition (the innermost `defs` range
             holding its line; module level if none): precision and recall of Cortex over the
             (path, qualname) pairs, micro-averaged, with Jedi as the reference; also split by
             Cortex's confidence (best edge of the pair, >= 0.9 or lower). A sample of the
             disagreements is classified automatically: at a Cortex-only site Jedi's `goto` says
             whether it finds the target too (Jedi's references miss it), another definition
             (shadowing, overrides) or nothing (dynamic receiver); at a Jedi-only site the
             store's `refs`/`edges` rows on that line say whether Cortex did not read the
             reference, left it unresolved/ambiguous, or resolved it elsewhere. Time per query:
             Jedi (Script + get_references) against `callers()` in process (after a warm-up),
             p50.
  cochange   Time-split co-change prediction. A second private clone is reset to the split
             commit (default: the commit at 80% of HEAD's first-parent history, oldest first;
             or --split SHA) and indexed in process (`index_repository(..., model="none")`).
             For each later non-merge commit of the first-parent line (oldest first) that
             changes 2-10 files existing at the split (paths in `head_files` of the split's
             index; renames count as delete + add), up to --split-commits commits, and for each
             such file F: `fused_related(TargetSpec(F), top_k=ALL, min_support=1)` (default
             depth 2 and max_changeset 30) gives one list, ranked three ways: co-change alone
             (by .cochange, zeros dropped), structure alone (by .structure, zeros dropped) and
             fused (.score, as returned); ties by path, each list cut at 200 (= top_k=200).
             Gold: the commit's other files that existed at the split. Recall@10 (gold files in
             the first 10 / gold files, mean over the (commit, F) queries) and MRR (1 / rank of
             the first gold file, 0 if none within 200). The queries where fused does worse
             than the better single signal are listed.
  structure  The structure pass's time and memory: `cortex index --rebuild --model none` as a
             child process (wall, CPU, peak PSS of the tree); then, in a child process on a copy
             of that store with `edges`, `refs`, `defs`, `struct_files` emptied (the state of a
             first index), `structure.update_structure` timed alone, with `resolve_refs` timed
             inside it and the peak RSS of the pass (VmHWM reset through /proc/self/clear_refs
             before it), then once more with nothing changed (the no-op pass); per-language
             files and resolution rates from `cortex status --json`; the no-op `cortex index`
             and a one-file update (a function appended to a sampled function's file and
             committed in the clone), each update from a copy of the store.
  blast      `blast(con, TargetSpec(path, qualname), depth=2)` in process over the sampled
             functions (one untimed pass first, then one timed pass: warm), p50/p95; and
             `cortex blast PATH::QUALNAME --json` as a child process for --cli-blast of them.

Parts callers, structure and blast share one index of the clone at HEAD (made by the structure
part's `cortex index --rebuild`, or in process without it).

Run with the venv's python: `/work/venv/bin/python bench/bench_structure.py REPO`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import _benchlib as bl
from _structure_callers import part_callers, sample_functions
from _structure_cochange import index_in_process, part_cochange
from _structure_index import (part_blast, part_structure_alone, part_structure_index,
                              part_structure_updates)
from _structure_report import render

PARTS = ("callers", "cochange", "structure", "blast")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Structure: callers() against Jedi's references, time-split co-change "
        "prediction (co-change alone, structure alone, fused), the structure pass's time and "
        "memory, blast latency. Works on private clones under bench/.work/.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--parts", default=",".join(PARTS),
                   help=f"comma-separated subset of {','.join(PARTS)} (default: all)")
    p.add_argument("--sample", type=int, default=60,
                   help="functions sampled for callers and blast (default 60)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--kinds", default="function,method",
                   help="kinds of definition the callers part samples (default function,method;"
                   " class: who uses a class, type annotations included)")
    p.add_argument("--split", help="split commit for the co-change part (default: 80%% of the "
                   "first-parent history)")
    p.add_argument("--split-commits", type=int, default=300,
                   help="later commits evaluated after the split (default 300)")
    p.add_argument("--classify", type=int, default=30,
                   help="disagreements classified per direction (default 30)")
    p.add_argument("--jedi-timeout", type=float, default=120.0,
                   help="seconds per Jedi query before it is given up (default 120)")
    p.add_argument("--cli-blast", type=int, default=10,
                   help="functions queried through `cortex blast` (default 10)")
    p.add_argument("--incremental-runs", type=int, default=3,
                   help="one-file updates, each from a copy of the store (default 3)")
    p.add_argument("--noop-runs", type=int, default=3, help="no-op cortex index runs (default 3)")
    p.add_argument("--structure-runs", type=int, default=1,
                   help="child processes timing the structure pass alone, best kept (default 1)")
    p.add_argument("--jobs", type=int, help="--jobs for the indexes (default: cortex's own)")
    p.add_argument("--examples", type=int, default=4,
                   help="examples printed per disagreement kind (default 4)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    args = p.parse_args(argv)
    args.parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    bad = [x for x in args.parts if x not in PARTS]
    if bad:
        p.error(f"unknown part(s) {bad}; choose from {PARTS}")
    return args


log = bl.progress


# -- main ------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    env = bl.environment(repo)
    try:
        import jedi
        env["jedi"] = jedi.__version__
    except ImportError:
        env["jedi"] = None
        if "callers" in args.parts:
            log("jedi is not installed: /work/venv/bin/pip install jedi==0.20.1")
            return 2
    cortex = bl.cortex_command()
    work = bl.work_dir("structure-", args.keep)
    head = env["repository"]["head"]
    report: dict = {"benchmark": "structure", "environment": env, "config": bl.config(args)}
    try:
        clone = bl.private_clone(repo, work / "clone", checkout=True)
        bl.run(["git", "-C", str(clone), "checkout", "-q", "-B", "bench", head])
        report["setup"] = {"clone": str(clone), "head": head,
                           "files_at_head": len(bl.git(clone, "ls-files").splitlines())}
        db = work / "head.db"
        if "structure" in args.parts:
            report["structure"] = {"full_index": part_structure_index(clone, db, cortex, args)}
        elif {"callers", "blast"} & set(args.parts):
            log("indexing HEAD in process ...")
            seconds, summary = index_in_process(clone, db, args.jobs)
            report["setup"]["index_seconds"] = seconds
        sample = []
        if {"callers", "blast", "structure"} & set(args.parts):
            from cortex_core.store.store import open_reader
            con = open_reader(db)
            sample, stats = sample_functions(con, clone, args.sample, args.seed,
                                             tuple(args.kinds.split(",")))
            report["sample"] = {"stats": stats,
                                "functions": [f"{f['path']}::{f['qualname']}" for f in sample]}
            log(f"sample: {len(sample)} functions ({stats})")
            if "structure" in args.parts:
                report["structure"]["alone"] = part_structure_alone(
                    clone, db, work, cortex, args, sample[0]["path"] if sample else None)
            if "blast" in args.parts:   # before Jedi: its caches make the GC's passes slow
                report["blast"] = part_blast(con, clone, db, cortex, sample, args)
            if "callers" in args.parts:
                report["callers"] = part_callers(con, clone, sample, args)
            con.close()
            if "structure" in args.parts:
                report["structure"]["updates"] = part_structure_updates(
                    clone, db, work, cortex, sample, head, args)
        if "cochange" in args.parts:
            report["cochange"] = part_cochange(clone, work, head, args)
        report["environment"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
