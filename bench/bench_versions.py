#!/usr/bin/env python3
"""Two versions of cortex, one full index each, run in pairs at the same time: does B cost more?

On a shared machine one version timed after the other measures the neighbours as much as the code
(on 2026-12-03, alternating runs of the same version differed by 20%). Here each round starts A and
B together, each pinned to a core of its own (swapped every round), so whatever else loads the
machine loads both; each child's CPU time (user + system, from os.wait4) is compared, round by
round. Each version is a folder holding its `cortex_core` (a git worktree:
`git worktree add /tmp/base 259ad76`), imported through PYTHONPATH with this interpreter.

Per round and in all: CPU and wall time of each, B ÷ A. A `git log -p --no-merges` run after
each round is the usual baseline, for scale.

Run: /work/venv/bin/python bench/bench_versions.py REPO A_DIR B_DIR [--rounds 4] [--jobs 1]
[--json]. REPO is indexed into temporary databases; it is not modified.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _benchlib as bl


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Paired full indexes of two cortex versions (two "
                                "folders holding cortex_core), started together on two cores.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("a", type=Path, help="folder of version A (the base)")
    p.add_argument("b", type=Path, help="folder of version B (the one measured)")
    p.add_argument("--rounds", type=int, default=4, help="paired rounds (default 4)")
    p.add_argument("--jobs", type=int, default=1, help="cortex index --jobs (default 1: one "
                   "core each)")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    for folder in (args.a, args.b):
        if not (folder / "cortex_core" / "__init__.py").is_file():
            p.error(f"{folder} holds no cortex_core/")
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    return args


def child_env(folder: Path) -> dict:
    # The children run with -P: their working directory is not put first on sys.path, where a
    # checkout would shadow the version PYTHONPATH names.
    return dict(os.environ, PYTHONPATH=str(folder.resolve()), CORTEX_MODEL="none")


def check_version(folder: Path) -> None:
    """Exit unless a child given `folder` imports its cortex_core from there."""
    out = subprocess.run([sys.executable, "-P", "-c",
                          "import cortex_core; print(cortex_core.__file__)"],
                         env=child_env(folder), capture_output=True, text=True)
    imported = Path(out.stdout.strip() or "?").resolve()
    if out.returncode != 0 or not imported.is_relative_to(folder.resolve()):
        raise SystemExit(f"a child given {folder} imports {imported}: "
                         f"{out.stderr.strip()[-300:]}")


def start(folder: Path, repo: Path, db: Path, core: int | None, jobs: int):
    env = child_env(folder)
    cmd = [*bl.python_module("cortex_core"), "index", "--repo", str(repo), "--db", str(db),
           "--rebuild", "--jobs", str(jobs), "--model", "none", "--quiet"]
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    # stderr to a file, not a pipe: a pipe left unread until the end could fill and stall it.
    err = tempfile.TemporaryFile()
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                            preexec_fn=pin), time.perf_counter(), err


def finish_both(running: list) -> list[dict]:
    """Reap the two children in the order they end, each timed when it ends (reaping A first
    gave B the wall time of A when B ended first)."""
    ended: dict[int, tuple] = {}
    while len(ended) < len(running):
        pid, status, usage = os.wait4(-1, 0)
        ended[pid] = (status, usage, time.perf_counter())
    return [finish(proc, started, err, *ended[proc.pid]) for proc, started, err in running]


def finish(proc, started: float, err_file, status: int, usage, ended: float) -> dict:
    seconds = ended - started
    err_file.seek(0)
    err = err_file.read().decode("utf-8", "replace")
    err_file.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"cortex index failed ({proc.returncode}): {err.strip()[-500:]}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": seconds}


def main(argv=None) -> int:
    args = parse_args(argv)
    for folder in (args.a, args.b):
        check_version(folder)
    cores = sorted(os.sched_getaffinity(0))
    pinned = len(cores) >= 2 and args.jobs == 1
    rounds = []
    with tempfile.TemporaryDirectory(prefix="cortex-versions-") as tmp:
        for r in range(args.rounds):
            order = (cores[0], cores[1]) if r % 2 == 0 else (cores[1], cores[0])
            running = [start(v, args.repo, Path(tmp) / f"{name}.db",
                             order[i] if pinned else None, args.jobs)
                       for i, (name, v) in enumerate((("a", args.a), ("b", args.b)))]
            a, b = finish_both(running)
            git = bl.run(["git", "-C", str(args.repo), "log", "-p", "--no-merges"],
                         capture=False)
            rounds.append({"a": a, "b": b, "git_cpu": git.user_seconds + git.system_seconds,
                           "b_over_a_cpu": b["cpu"] / a["cpu"]})
            if not args.json:
                print(f"round {r + 1}: A {a['cpu']:.2f} s CPU ({a['wall']:.1f} s wall), "
                      f"B {b['cpu']:.2f} s CPU ({b['wall']:.1f} s wall): "
                      f"B/A {b['cpu'] / a['cpu']:.3f}", flush=True)
    a_cpu = statistics.mean(x["a"]["cpu"] for x in rounds)
    b_cpu = statistics.mean(x["b"]["cpu"] for x in rounds)
    git_cpu = statistics.mean(x["git_cpu"] for x in rounds)
    summary = {"a": str(args.a), "b": str(args.b), "pinned": pinned, "rounds": rounds,
               "a_cpu_mean": a_cpu, "b_cpu_mean": b_cpu, "b_over_a_cpu": b_cpu / a_cpu,
               "b_over_a_cpu_per_round": [x["b_over_a_cpu"] for x in rounds],
               "git_log_p_cpu_mean": git_cpu, "environment": bl.environment(args.repo)}
    if args.json:
        bl.dump_json(summary)
    else:
        ratios = ", ".join(f"{x:.3f}" for x in summary["b_over_a_cpu_per_round"])
        print(f"\nmean CPU: A {a_cpu:.2f} s = {a_cpu / git_cpu:.1f}x git log -p, "
              f"B {b_cpu:.2f} s = {b_cpu / git_cpu:.1f}x; B/A {b_cpu / a_cpu:.3f} "
              f"(per round {ratios}){'' if pinned else '; not pinned'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
