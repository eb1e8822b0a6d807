#!/usr/bin/env python3
"""Notes written while an index run writes: how long they wait, how many fail, what they cost.

    /work/venv/bin/python bench/bench_notes.py REPO [--behind N] [--every 0.2] [--code DIR ...]
                                                [--tight] [--json]

A private clone of REPO is reset N first-parent commits behind its tip and indexed there
(`--model none --jobs 1`); each measure starts from a copy of that store and indexes from there
to the tip. For each version of the code (`--code DIR`, a folder holding `cortex_core`, e.g. a
git worktree; default: this checkout), in the same process:
- the baseline: `cortex note add` on the idle store, 10 times (process start included);
- the index run alone: its wall time;
- the same run while `cortex note add` starts every --every seconds until it ends: each note's
  wall time, the failures (with their messages), the run's wall time and exit status;
- with --tight, the same run while this process writes notes back to back, in process (no
  pause, no process start; the versions' `add_note` and `open_note_writer`): notes written,
  failures, the slowest note, the run's wall time and exit status.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import _benchlib as bl


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--behind", type=int, metavar="N",
                   help="first-parent commits behind the tip to index first (default: half)")
    p.add_argument("--every", type=float, default=0.2, metavar="S",
                   help="seconds between the end of a note and the start of the next (0.2)")
    p.add_argument("--code", type=Path, action="append", metavar="DIR",
                   help="a folder holding the cortex_core to measure; repeat to compare "
                   "(default: this checkout)")
    p.add_argument("--tight", action="store_true",
                   help="also write notes back to back, in process, during a run")
    p.add_argument("--work", type=Path, help="work folder (default: a new one under "
                   "bench/.work/); removed at the end unless --keep")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    args = p.parse_args(argv)
    args.code = args.code or [bl.CODE_DIR]
    for folder in args.code:
        if not (folder / "cortex_core" / "__init__.py").is_file():
            p.error(f"{folder} holds no cortex_core/")
    if args.every < 0 or (args.behind is not None and args.behind < 1):
        p.error("--every S needs S >= 0 and --behind N needs N >= 1")
    return args


def _env(code: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(code.resolve()), CORTEX_DAEMON="off")


def _index(code: Path, clone: Path, db: Path) -> subprocess.Popen:
    return subprocess.Popen([*bl.python_module("cortex_core"), "index", "--repo", str(clone),
                             "--db", str(db), "--model", "none", "--jobs", "1", "--quiet"],
                            env=_env(code), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _note(code: Path, clone: Path, db: Path, text: str) -> tuple[float, str | None]:
    """One `cortex note add`: its wall time and, when it failed, its message."""
    run = bl.run([*bl.python_module("cortex_core"), "note", "add", "--repo", str(clone), "--db",
                  str(db), ".", text], env=_env(code), check=False)
    error = None if run.returncode == 0 else run.stderr.decode("utf-8", "replace").strip()
    return run.seconds, error


def _summary(values: list[float]) -> dict:
    ordered = sorted(values) or [0.0]
    return {"n": len(values), "p50": statistics.median(ordered),
            "p90": bl.percentile(ordered, 90), "max": ordered[-1]}


def _finish(proc: subprocess.Popen, started: float) -> dict:
    _, err = proc.communicate()
    return {"seconds": time.perf_counter() - started, "returncode": proc.returncode,
            "error": err.decode("utf-8", "replace").strip()[-300:] or None}


_TIGHT = """
import sys, time
from pathlib import Path
from cortex_core.errors import CortexError
from cortex_core.memory.notes import add_note
from cortex_core.store.store import open_note_writer
clone, db, pid = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
con, ok, errors, worst = open_note_writer(db), 0, {}, 0.0
def alive():
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
while alive():
    started = time.perf_counter()
    try:
        add_note(con, clone, None, f"tight {ok}")
        ok += 1
    except CortexError as exc:
        errors[str(exc)] = errors.get(str(exc), 0) + 1
    worst = max(worst, time.perf_counter() - started)
print(ok, sum(errors.values()), worst, repr(errors))
"""


def measure(code: Path, clone: Path, base: Path, work: Path, args) -> dict:
    db = work / "run.db"
    out: dict = {"code": str(code)}
    bl.copy_db(base, db)
    out["idle_note"] = _summary([_note(code, clone, db, f"idle {i}")[0] for i in range(10)])
    bl.copy_db(base, db)
    started = time.perf_counter()
    out["alone"] = _finish(_index(code, clone, db), started)
    bl.copy_db(base, db)
    started = time.perf_counter()
    proc = _index(code, clone, db)
    waits, errors = [], []
    while proc.poll() is None:
        seconds, error = _note(code, clone, db, f"note {len(waits)}")
        waits.append(seconds)
        if error:
            errors.append(error)
        time.sleep(args.every)   # a pace, not a synchronisation
    out["with_notes"] = {**_finish(proc, started), "notes": _summary(waits),
                         "failed": len(errors), "errors": sorted(set(errors))[:3]}
    if args.tight:
        bl.copy_db(base, db)
        started = time.perf_counter()
        proc = _index(code, clone, db)
        # On Linux only: the writer asks /proc whether the run is still alive.
        writer = bl.run([*bl.python_module("cortex_core")[:2], "-c", _TIGHT, str(clone), str(db),
                         str(proc.pid)], env=_env(code), check=False)
        if writer.returncode == 0:
            ok, failed, worst, messages = writer.stdout.decode().split(" ", 3)
            tight = {"written": int(ok), "failed": int(failed), "worst": float(worst),
                     "errors": messages.strip()}
        else:   # the writer itself failed: its error instead
            tight = {"written": None, "failed": None, "worst": None,
                     "errors": writer.stderr.decode("utf-8", "replace")[-300:]}
        out["tight"] = {**_finish(proc, started), **tight}
    bl.remove_db(db)
    return out


def render(report: dict) -> str:
    lines = [f"{report['repo']}: {report['commits']} commits indexed during each run "
             f"(from {report['behind']} first-parent commits behind the tip)", ""]
    rows = []
    for m in report["versions"]:
        n = m["with_notes"]
        row = [Path(m["code"]).name,
               f"{m['idle_note']['p50']:.2f} s",
               f"{m['alone']['seconds']:.1f} s (rc {m['alone']['returncode']})",
               f"{n['seconds']:.1f} s (rc {n['returncode']})",
               f"{n['failed']} of {n['notes']['n']}",
               f"{n['notes']['p50']:.2f} / {n['notes']['p90']:.2f} / {n['notes']['max']:.2f} s"]
        if "tight" in m:
            t = m["tight"]
            row.append(f"{t['seconds']:.1f} s (rc {t['returncode']}), {t['written']} written, "
                       f"{t['failed']} failed")
        rows.append(row)
    header = ["code", "idle note p50", "run alone", "run with notes", "notes failed",
              "note p50 / p90 / max"] + (["back to back"] if report["tight"] else [])
    lines.append(bl.table(rows, header))
    for m in report["versions"]:
        name = Path(m["code"]).name
        for error in m["with_notes"]["errors"]:
            lines.append(f"{name}: a note said {bl.clip(error, 90)}")
        for run in ("alone", "with_notes", "tight"):
            if m.get(run, {}).get("error"):
                lines.append(f"{name}: the run {run.replace('_', ' ')} said "
                             f"{bl.clip(m[run]['error'], 90)}")
    lines += bl.environment_lines(report["environment"])
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    work = args.work or bl.work_dir("notes", args.keep)
    work.mkdir(parents=True, exist_ok=True)
    try:
        clone = bl.private_clone(args.repo, work / "clone", checkout=True)
        line = bl.git(clone, "rev-list", "--first-parent", "HEAD").split()
        behind = args.behind or len(line) // 2
        if behind >= len(line):
            raise SystemExit(f"--behind {behind}: the first-parent line has {len(line)} commits")
        tip = line[0]
        bl.git(clone, "reset", "-q", "--hard", line[behind])
        base = work / "base.db"
        bl.progress("indexing the older part once")
        bl.run([*bl.python_module("cortex_core"), "index", "--repo", str(clone), "--db",
                str(base), "--model", "none", "--jobs", "1", "--quiet"], env=_env(args.code[0]))
        bl.git(clone, "reset", "-q", "--hard", tip)
        commits = int(bl.git(clone, "rev-list", "--count", f"{line[behind]}..{tip}"))
        versions = []
        for code in args.code:
            bl.progress(f"measuring {code}")
            versions.append(measure(code, clone, base, work, args))
        report = {"repo": str(args.repo), "behind": behind, "commits": commits,
                  "tight": args.tight, "versions": versions, "config": bl.config(args),
                  "environment": bl.environment(args.repo)}
        bl.emit(report, args.json, render)
    finally:
        if not args.keep:
            bl.remove(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
