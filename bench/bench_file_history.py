#!/usr/bin/env python3
"""File history: `cortex history PATH` against `git log --no-merges -- PATH`, file by file.

For every file at HEAD that no rename ever touched (its path is its whole identity, so git's
path-based history and cortex's lineage mean the same thing), this compares, in one run:

  (a) git log --no-merges --format=%H -- PATH      in REPO (read-only), process start included
  (b) cortex_core.query.history.history(con, PATH)  in process, on one reader connection

and prints how many files have the same set of commits, and every difference classified:

  - merged        cortex only: a merge that wrote lines of the file itself (a conflict's
                  resolution), which cortex lists as `merged` and `git blame` credits; git log
                  --no-merges leaves every merge out (by design);
  - chmod         cortex only: a change of the file's mode alone that a merge dropped, which git
                  prunes and cortex never does (a known difference, docs/commands.md);
  - cortex-only   any other commit cortex lists and git does not (a bug until explained);
  - git-only      a commit git lists and cortex does not (a bug until explained).

Renamed files are compared apart, with --renamed, against `git log --no-merges --follow --
PATH`: identical sets and the commits each lists alone, unclassified. There cortex follows
identities (a path renamed away and used again is two lives, the older one its successor's),
which `--follow` does not (it follows a path back through a deletion and a new creation, and
pairs renames by its own heuristics), so differences are expected: read them.

Run with the venv's python: `/work/venv/bin/python bench/bench_file_history.py REPO [--db DB]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import _benchlib as bl

KINDS = ("merged", "chmod", "cortex-only", "git-only")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="cortex file histories against git log --no-merges -- PATH")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--db", type=Path, help="an index of REPO at its HEAD (default: index REPO "
                   "into a temporary database)")
    p.add_argument("--limit", type=int, default=0, help="compare at most N files (0: all)")
    p.add_argument("--renamed", action="store_true", help="also compare the renamed files "
                   "with git log --follow")
    p.add_argument("--examples", type=int, default=5, help="examples printed per kind")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.add_argument("--keep", action="store_true", help="keep the temporary database")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    env = bl.environment(repo)
    head = env["repository"]["head"]
    report: dict = {"benchmark": "file-history", "environment": env, "config": bl.config(args)}
    work = None
    try:
        if args.db is None:
            work = bl.work_dir("file-history-", args.keep)
        db, report["index"] = bl.index_store(repo, args.db, work)
        from cortex_core.query.history import history
        from cortex_core.query.targets import TargetSpec
        from cortex_core.store.store import get_meta, open_reader
        con = open_reader(db)
        if get_meta(con, "head") != head:
            raise SystemExit(f"{db} indexes {get_meta(con, 'head')}, not REPO's HEAD {head}")
        renamed = {f for (f,) in con.execute(
            "select file_id from file_changes where status in ('R', 'C') union"
            " select old_file_id from file_changes where status in ('R', 'C')"
            " and old_file_id is not null")}
        at_head = list(con.execute(
            "select f.id, f.path from head_files h join files f on f.id = h.file_id"))
        files = sorted(path for fid, path in at_head if fid not in renamed)
        report["files"] = {"at_head_never_renamed": len(files),
                           "renamed_left_out": con.execute(
                               "select count(*) from head_files").fetchone()[0] - len(files)}
        if args.limit:
            files = files[:args.limit]
        same, git_t, ours_t = 0, [], []
        kinds: dict[str, list] = {k: [] for k in KINDS}
        for n, path in enumerate(files, 1):
            t0 = time.perf_counter()
            listed = bl.git(repo, "log", "--no-merges", "--format=%H", "--", path).split()
            git_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            entries = history(con, TargetSpec(path)).entries
            ours_t.append(time.perf_counter() - t0)
            ours = {e.commit.sha: e for e in entries}
            theirs = set(listed)
            if set(ours) == theirs:
                same += 1
            for sha in sorted(set(ours) - theirs):
                e = ours[sha]
                kind = ("merged" if e.change == "merged" else
                        "chmod" if e.change == "modified" and not e.added and not e.deleted
                        else "cortex-only")
                kinds[kind].append({"path": path, "sha": sha, "change": e.change,
                                    "subject": e.commit.subject})
            for sha in sorted(theirs - set(ours)):
                kinds["git-only"].append({"path": path, "sha": sha})
            if n % 100 == 0:
                bl.progress(f"  {n}/{len(files)} files")
        report["agreement"] = {"files": len(files), "identical": same,
                               "identical_rate": same / len(files) if files else None,
                               "differences": {k: len(v) for k, v in kinds.items()}}
        report["examples"] = kinds
        if args.renamed:
            report["renamed"] = _renamed(repo, con, sorted(
                path for fid, path in at_head if fid in renamed), history, TargetSpec)
        report["timings"] = {
            "git_log": {"p50": bl.percentile(git_t, 50), "p95": bl.percentile(git_t, 95)},
            "cortex_in_process": {"p50": bl.percentile(ours_t, 50),
                                  "p95": bl.percentile(ours_t, 95)}}
    finally:
        if work is not None and not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render, args.examples)
    return 0


def _renamed(repo: Path, con, paths: list[str], history, TargetSpec) -> dict:
    same, alone, followed = 0, [], []
    for n, path in enumerate(paths, 1):
        theirs = set(bl.git(repo, "log", "--no-merges", "--follow", "--format=%H", "--",
                            path).split())
        ours = {e.commit.sha: e for e in history(con, TargetSpec(path)).entries
                if e.change != "merged"}
        same += set(ours) == theirs
        alone += [{"path": path, "sha": s, "subject": ours[s].commit.subject}
                  for s in sorted(set(ours) - theirs)]
        followed += [{"path": path, "sha": s} for s in sorted(theirs - set(ours))]
        if n % 100 == 0:
            bl.progress(f"  renamed: {n}/{len(paths)} files")
    return {"files": len(paths), "identical": same, "cortex_only": alone,
            "git_follow_only": followed}


def render(report: dict, examples: int) -> str:
    out = ["cortex file history vs git log --no-merges -- PATH", "=" * 50,
           *bl.environment_lines(report["environment"])]
    f, a, t = report["files"], report["agreement"], report["timings"]
    out.append(f"files at HEAD never renamed: {f['at_head_never_renamed']} (renamed, left out: "
               f"{f['renamed_left_out']}); compared: {a['files']}")
    out.append(f"identical sets of commits: {a['identical']} of {a['files']}"
               + (f" ({a['identical_rate']:.1%})" if a["identical_rate"] is not None else ""))
    for kind in KINDS:
        items = report["examples"][kind]
        out.append(f"  {kind:12} {len(items):5} commits")
        for item in items[:examples]:
            out.append(f"      {item['path']}  {item['sha'][:10]}  {bl.clip(item.get('subject'), 50)}")
    out.append(f"git log p50 {bl.fmt_seconds(t['git_log']['p50'])}, p95 "
               f"{bl.fmt_seconds(t['git_log']['p95'])}; cortex in process p50 "
               f"{bl.fmt_seconds(t['cortex_in_process']['p50'])}, p95 "
               f"{bl.fmt_seconds(t['cortex_in_process']['p95'])}")
    r = report.get("renamed")
    if r:
        out.append(f"renamed files against git log --follow: identical {r['identical']} of "
                   f"{r['files']}; commits listed by cortex alone {len(r['cortex_only'])}, by "
                   f"git --follow alone {len(r['git_follow_only'])} (cortex's merges left out)")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
