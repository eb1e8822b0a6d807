#!/usr/bin/env python3
"""A blobless partial clone (`git clone --filter=blob:none`) against the same repository fully
cloned, in the same run:

  1. a bare copy of REPO under bench/.work/ serves both, over file://, with
     `uploadpack.allowFilter` and `uploadpack.allowAnySHA1InWant` (what a forge allows);
  2. the two ways of getting the blobs a run needs, each on a fresh partial clone:
     - batched: `object_source.prefetch` (`git rev-list --objects --missing=print`, then one
       `git fetch --stdin` of every missing id), what `cortex index` does;
     - lazy: one `git cat-file --batch-check` request per missing object, each a fetch
       (`object_source.ObjectSource.fetch`, the fallback), on `--lazy-sample` objects
       (0: all of them), the total extrapolated from the sample;
  3. `cortex index --rebuild --quiet --json` on a fresh partial clone and on a full clone,
     alternated `--rounds` times: wall time, ratio, and whether both indexes hold the same
     counts (file changes, symbol changes, skip reasons);
  4. offline: a fresh partial clone whose remote is gone: the index time and what the summary
     says is missing.

Run with the venv's python: `/work/venv/bin/python bench/bench_partial.py REPO`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import _benchlib as bl

sys.path.insert(0, str(bl.PROJECT_DIR))
from cortex_core.git.object_source import ObjectSource, missing_objects, prefetch  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Partial (blobless) clone vs full clone: batched "
                                "prefetch vs lazy fetches, index time, offline behaviour.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--rounds", type=int, default=1, help="alternated index runs (default 1)")
    p.add_argument("--jobs", type=int, default=2, help="cortex index --jobs (default 2)")
    p.add_argument("--lazy-sample", type=int, default=300,
                   help="objects fetched one by one (0: all; default 300)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    return p.parse_args(argv)


def partial_clone(url: str, dest: Path) -> float:
    started = time.perf_counter()
    bl.run(["git", "clone", "-q", "--filter=blob:none", url, str(dest)])
    return time.perf_counter() - started


def index(cortex: list[str], clone: Path, db: Path, jobs: int) -> tuple[float, dict]:
    run = bl.run([*cortex, "index", "--rebuild", "--repo", str(clone), "--db", str(db),
                  "--quiet", "--json", "--jobs", str(jobs)])
    return run.seconds, json.loads(run.stdout)


def counts(summary: dict) -> dict:
    return {k: summary[k] for k in ("total_commits", "file_changes", "symbol_changes",
                                    "skipped_file_changes", "missing_objects")}


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    log = bl.progress
    env = bl.environment(repo)
    cortex = bl.cortex_command()
    work = bl.work_dir("partial-", args.keep)
    report: dict = {"benchmark": "partial", "environment": env, "config": bl.config(args)}
    try:
        bare = work / "served.git"
        bl.run(["git", "clone", "-q", "--bare", str(repo), str(bare)])
        bl.git(bare, "config", "uploadpack.allowFilter", "true")
        bl.git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
        url = bare.as_uri()

        # -- batched prefetch vs lazy fetches -------------------------------------------------
        batched_clone = work / "batched"
        partial_clone(url, batched_clone)
        head = bl.git(batched_clone, "rev-parse", "HEAD")
        started = time.perf_counter()
        done = prefetch(str(batched_clone), "origin", [head], [])
        batched = time.perf_counter() - started
        left = len(missing_objects(str(batched_clone), [head], []))
        log(f"batched: {done.missing} objects in {bl.fmt_seconds(batched)} ({left} left)")

        lazy_clone = work / "lazy"
        partial_clone(url, lazy_clone)
        oids = missing_objects(str(lazy_clone), [head], [])
        sample = oids if args.lazy_sample <= 0 else oids[:args.lazy_sample]
        source = ObjectSource(str(lazy_clone), True)
        started = time.perf_counter()
        fetched = sum(source.fetch(oid) for oid in sample)
        lazy = time.perf_counter() - started
        source.close()
        lazy_total = lazy / max(1, len(sample)) * len(oids)
        log(f"lazy: {fetched}/{len(sample)} objects in {bl.fmt_seconds(lazy)};"
            f" all {len(oids)}: ~{bl.fmt_seconds(lazy_total)}")
        report["fetch"] = {
            "missing_objects": len(oids), "batched_seconds": batched,
            "batched_left_missing": left, "lazy_sample": len(sample), "lazy_fetched": fetched,
            "lazy_sample_seconds": lazy, "lazy_all_seconds_extrapolated": lazy_total,
            "lazy_over_batched": lazy_total / batched if batched else None}

        # -- index: partial vs full -----------------------------------------------------------
        full_clone = work / "full"
        started = time.perf_counter()
        bl.run(["git", "clone", "-q", url, str(full_clone)])
        full_clone_seconds = time.perf_counter() - started
        runs: dict[str, list[float]] = {"full": [], "partial": []}
        summaries: dict[str, dict] = {}
        partial_clone_seconds = []
        for round_ in range(args.rounds):
            seconds, summaries["full"] = index(cortex, full_clone, work / "full.db", args.jobs)
            runs["full"].append(seconds)
            fresh = work / f"partial-{round_}"
            partial_clone_seconds.append(partial_clone(url, fresh))
            seconds, summaries["partial"] = index(cortex, fresh, work / "partial.db", args.jobs)
            runs["partial"].append(seconds)
            log(f"round {round_ + 1}: full {bl.fmt_seconds(runs['full'][-1])},"
                f" partial {bl.fmt_seconds(runs['partial'][-1])}")
            bl.remove(fresh)
        report["index"] = {
            "command": f"cortex index --rebuild --quiet --json --jobs {args.jobs}",
            "full_seconds": runs["full"], "partial_seconds": runs["partial"],
            "partial_over_full": min(runs["partial"]) / min(runs["full"]),
            "full_clone_seconds": full_clone_seconds,
            "partial_clone_seconds": partial_clone_seconds,
            "objects_fetched": summaries["partial"].get("objects_fetched"),
            "full_counts": counts(summaries["full"]),
            "partial_counts": counts(summaries["partial"]),
            "same_counts": counts(summaries["full"]) == counts(summaries["partial"])}

        # -- offline ----------------------------------------------------------------------------
        offline = work / "offline"
        partial_clone(url, offline)
        bl.git(offline, "remote", "set-url", "origin", (work / "gone.git").as_uri())
        seconds, summary = index(cortex, offline, work / "offline.db", args.jobs)
        report["offline"] = {"seconds": seconds, "counts": counts(summary),
                             "missing_cause": summary["missing_cause"]}
    finally:
        if not args.keep:
            bl.remove(work)

    bl.emit(report, args.json, render)
    return 0


def render(r: dict) -> str:
    f, i, o = r["fetch"], r["index"], r["offline"]
    lines = bl.environment_lines(r["environment"])
    lines += [
        "",
        f"blobs a full index needs, missing from a blobless clone: {f['missing_objects']}",
        f"  batched prefetch (one git fetch --stdin): {bl.fmt_seconds(f['batched_seconds'])}"
        f" ({f['batched_left_missing']} still missing after)",
        f"  lazy, one fetch per object: {f['lazy_fetched']}/{f['lazy_sample']} in"
        f" {bl.fmt_seconds(f['lazy_sample_seconds'])}"
        f" -> all ~{bl.fmt_seconds(f['lazy_all_seconds_extrapolated'])}"
        + (" (extrapolated)" if f["lazy_sample"] < f["missing_objects"] else ""),
        f"  lazy / batched: {f['lazy_over_batched']:.1f}x" if f["lazy_over_batched"] else "",
        "",
        f"{i['command']} (best of {len(i['full_seconds'])}):",
        f"  full clone:    {bl.fmt_seconds(min(i['full_seconds']))}"
        f"  (git clone {bl.fmt_seconds(i['full_clone_seconds'])})",
        f"  partial clone: {bl.fmt_seconds(min(i['partial_seconds']))}"
        f"  (git clone {bl.fmt_seconds(min(i['partial_clone_seconds']))}; index includes the"
        f" prefetch of {i['objects_fetched']} objects)",
        f"  partial / full: {i['partial_over_full']:.2f}x;"
        f" same counts: {'yes' if i['same_counts'] else 'NO'}",
        f"    full    {i['full_counts']}",
        f"    partial {i['partial_counts']}",
        "",
        f"offline (remote gone): {bl.fmt_seconds(o['seconds'])}, {o['counts']}"
        f" ({o['missing_cause']})",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
