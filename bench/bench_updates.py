#!/usr/bin/env python3
"""One-commit updates over a real history's next commits: two versions of cortex, step by step.

    /work/venv/bin/python bench/bench_updates.py REPO --db DB A_DIR B_DIR [--commits 30] [--json]

One update timed on one chosen commit (bench_index.py, bench_scale.py) says little of the
updates a user meets: what an update does depends on what the commit touched (a changelog, a
new test class, a moved file). Here DB is an index of REPO at some commit C (for example a clone
reset N first-parent commits behind its tip, indexed); a private clone of REPO is put at C, and
for each of the next first-parent commits (at most --commits), the clone moves to it and each
version (A and B: folders holding `cortex_core`, e.g. git worktrees) runs `cortex index` as an
update on its own copy of the same store, process start included, `--model none`, the order of
A and B swapped every step. B's store is the start of the next step for both; with
`--own-stores`, each version's own (when B migrates the store to a schema A cannot open).
Copies are flushed to disk before they are timed. Per version: the
wall and CPU time of each update (user + system of the process, from os.wait4), p50, p95 and the
largest, and how many passed 1 s (issue 17's goal for a one-commit update); per step, B ÷ A.
The `git log -1 -p --no-merges` of each step is timed too, for scale. DB is not modified.
With `--warm`, B's updates are run as the language server runs them: by a spare indexer
(`python -P -m cortex_core --spare`, cortex_ls/spare.py) started before the step and waiting,
loaded, for its arguments; timed from the hand-over to its exit (Linux: readiness is read
from /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import _benchlib as bl


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("repo", type=Path, help="the git repository (not modified; may be bare)")
    p.add_argument("--db", type=Path, required=True,
                   help="an index of REPO at the commit to start from (not modified)")
    p.add_argument("a", type=Path, help="folder of version A (the base)")
    p.add_argument("b", type=Path, help="folder of version B (the one measured)")
    p.add_argument("--commits", type=int, default=30, metavar="N",
                   help="first-parent commits after the store's HEAD, one update each (default "
                   "30)")
    p.add_argument("--warm", action="store_true",
                   help="run B's updates as the language server does: by a spare indexer "
                   "(`python -P -m cortex_core --spare`) started and loaded before the step is "
                   "timed; its wall and CPU count from the arguments handed over to its exit "
                   "(B must have --spare: 6a3f... and later)")
    p.add_argument("--own-stores", action="store_true",
                   help="each version goes on from its own store, not from B's (needed when B "
                   "migrates the store to a schema A cannot open)")
    p.add_argument("--work", type=Path, help="work folder (default: a new one under "
                   "bench/.work/); removed at the end unless --keep")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    args = p.parse_args(argv)
    for folder in (args.a, args.b):
        if not (folder / "cortex_core" / "__init__.py").is_file():
            p.error(f"{folder} holds no cortex_core/")
    if not args.db.is_file():
        p.error(f"no store at {args.db}")
    if args.commits < 1:
        p.error("--commits N needs N >= 1")
    return args


def child_env(folder: Path) -> dict:
    # -P children: the working directory is not put first on sys.path (bench_versions.py).
    return dict(os.environ, PYTHONPATH=str(folder.resolve()), CORTEX_MODEL="none",
                CORTEX_DAEMON="off")


def update(folder: Path, clone: Path, db: Path) -> bl.Run:
    return bl.run([*bl.python_module("cortex_core"), "index", "--repo", str(clone), "--db",
                   str(db), "--model", "none", "--quiet"], env=child_env(folder))


def spare(folder: Path) -> subprocess.Popen:
    """A spare indexer of `folder`'s code, once it waits for its arguments: loaded, blocked on
    reading its stdin (the only pipe it reads). Polled from /proc: a bench, not a test."""
    proc = subprocess.Popen([*bl.python_module("cortex_core"), "--spare"], env=child_env(folder),
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd="/")
    wchan = Path(f"/proc/{proc.pid}/wchan")
    deadline = time.monotonic() + 60
    while "pipe_read" not in wchan.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the spare of {folder} did not wait for its arguments "
                             f"(is --spare in that version?): {proc.stderr.read()[-500:]!r}")
        time.sleep(0.01)
    return proc


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def warm_update(proc: subprocess.Popen, clone: Path, db: Path) -> bl.Run:
    """The update run by a waiting spare: timed from its arguments handed over to its exit;
    its CPU less what it spent loading."""
    loaded = _cpu(proc.pid)
    assert proc.stdin is not None
    started = time.perf_counter()
    proc.stdin.write(json.dumps(["index", "--repo", str(clone), "--db", str(db), "--model",
                                 "none", "--quiet"]).encode() + b"\n")
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else b""
    if proc.returncode != 0:
        raise SystemExit(f"a warm update failed ({proc.returncode}): {err[-500:]!r}")
    return bl.Run(seconds, proc.returncode, b"", err, usage.ru_maxrss,
                  max(0.0, usage.ru_utime + usage.ru_stime - loaded), 0.0)


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"p50": statistics.median(ordered), "p95": bl.percentile(ordered, 95),
            "max": ordered[-1], "over_1s": sum(v > 1.0 for v in ordered)}


def main(argv=None) -> int:
    args = parse_args(argv)
    work = args.work or bl.work_dir("updates", args.keep)
    work.mkdir(parents=True, exist_ok=True)
    try:
        start = bl.store_head(args.db)
        clone = bl.private_clone(args.repo, work / "clone", checkout=True)
        line = bl.git(clone, "rev-list", "--first-parent", "--reverse", "HEAD").split()
        if start not in line:
            raise SystemExit(f"the store's HEAD {start[:10]} is not on {args.repo}'s "
                             "first-parent line")
        steps = line[line.index(start) + 1:][:args.commits]
        if not steps:
            raise SystemExit("no first-parent commit after the store's HEAD")
        bl.git(clone, "checkout", "-q", "-B", "bench", start)
        versions = {"a": args.a, "b": args.b}
        # The store each version's next step starts from: B's for both, or each its own.
        current = {key: work / (f"start-{key}.db" if args.own_stores else "start.db")
                   for key in versions}
        for db in set(current.values()):
            bl.copy_db(args.db, db)
        rows = []
        for n, sha in enumerate(steps):
            bl.git(clone, "reset", "-q", "--hard", sha)
            git = bl.run(["git", "-C", str(clone), "log", "-1", "-p", "--no-merges", sha])
            row = {"commit": sha, "git_log_p_seconds": git.seconds,
                   "files": len(bl.git(clone, "diff", "--name-only", f"{sha}^1", sha).split())}
            order = ("a", "b") if n % 2 == 0 else ("b", "a")
            for key in order:
                db = work / f"{key}.db"
                waiting = spare(versions[key]) if args.warm and key == "b" else None
                bl.copy_db(current[key], db)
                r = update(versions[key], clone, db) if waiting is None else \
                    warm_update(waiting, clone, db)
                row[key] = {"seconds": r.seconds, "cpu": r.user_seconds + r.system_seconds}
            rows.append(row)
            for key in set(versions) if args.own_stores else ("b",):
                bl.copy_db(work / f"{key}.db", current[key])
            bl.progress(f"{n + 1}/{len(steps)} {sha[:10]} ({row['files']} files): "
                        f"A {row['a']['seconds']:.2f} s, B {row['b']['seconds']:.2f} s")
        report = {"repo": str(args.repo), "start": start, "steps": len(rows),
                  "own_stores": args.own_stores, "b_warm": args.warm,
                  "a": str(args.a), "b": str(args.b), "rows": rows,
                  "wall": {k: summary([r[k]["seconds"] for r in rows]) for k in versions},
                  "cpu": {k: summary([r[k]["cpu"] for r in rows]) for k in versions},
                  "b_over_a_wall_median": statistics.median(
                      r["b"]["seconds"] / r["a"]["seconds"] for r in rows),
                  "environment": bl.environment(args.repo)}
        bl.emit(report, args.json, render)
        return 0
    finally:
        if not args.keep:
            bl.remove(work)


def render(report: dict) -> str:
    lines = [f"{report['repo']}: {report['steps']} one-commit updates from {report['start'][:10]}"
             f"; A = {report['a']}, B = {report['b']}"
             + (" (run by a waiting spare indexer, as the language server runs them)"
                if report.get("b_warm") else "")]
    rows = []
    for what in ("wall", "cpu"):
        for key in ("a", "b"):
            s = report[what][key]
            rows.append([f"{what}, {key.upper()}", f"{s['p50']:.2f} s", f"{s['p95']:.2f} s",
                         f"{s['max']:.2f} s", str(s["over_1s"])])
    lines.append(bl.table(rows, ["", "p50", "p95", "max", "over 1 s"]))
    lines.append(f"B / A, wall, median over the steps: {report['b_over_a_wall_median']:.2f}")
    lines += [f"  {r['commit'][:10]} {r['files']:>4} files  A {r['a']['seconds']:.2f} s"
              f"  B {r['b']['seconds']:.2f} s  (git log -1 -p {r['git_log_p_seconds']:.2f} s)"
              for r in report["rows"]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
