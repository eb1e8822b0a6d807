"""bench_structure.py, parts 3 and 4: the structure pass's time and memory (in a full index, alone
in a child process, on one-file updates) and blast latency (in process and through the CLI)."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import _benchlib as bl
from _benchlib import copy_db, db_size, remove_db

log = bl.progress


GIT_ID = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]


STRUCTURE_CHILD = r'''
import json, sys, time
from pathlib import Path

def mem():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out

def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False

db, root = Path(sys.argv[1]), Path(sys.argv[2])
from cortex_core.index import structure
import cortex_core.index.resolve, cortex_core.lang.symbols  # noqa: F401,E401
import cortex_core.lang.structure_extract  # noqa: F401
from cortex_core.config import Settings
from cortex_core.index.ingest import open_repository
from cortex_core.store.store import open_writer
repo = open_repository(root)
con = open_writer(db)
with con:
    for table in ("edges", "refs", "defs", "struct_files"):
        con.execute(f"delete from {table}")
spent = [0.0]
real = structure.resolve_refs
def timed(*a, **k):
    s = time.perf_counter()
    try:
        return real(*a, **k)
    finally:
        spent[0] += time.perf_counter() - s
structure.resolve_refs = timed
before = mem()
peak_reset = reset_peak()
s = time.perf_counter()
counts = structure.update_structure(con, repo, Settings().index)
full = time.perf_counter() - s
after = mem()
full_resolve, spent[0] = spent[0], 0.0
s = time.perf_counter()
noop = structure.update_structure(con, repo, Settings().index)
noop_s = time.perf_counter() - s
noop_resolve = spent[0]
one = None
if len(sys.argv) > 3:   # one file modified in the working tree (read from disk), then restored
    touched = root / sys.argv[3]
    original = touched.read_bytes()
    try:
        touched.write_bytes(original + b"\n\ndef _cortex_bench_touch():\n    return None\n")
        spent[0] = 0.0
        s = time.perf_counter()
        counts1 = structure.update_structure(con, repo, Settings().index)
        one = {"seconds": time.perf_counter() - s, "resolve_seconds": spent[0],
               "files_read": counts1.files_read, "refs_resolved": counts1.refs_resolved}
    finally:
        touched.write_bytes(original)
    structure.update_structure(con, repo, Settings().index)
tables = {t: con.execute(f"select count(*) from {t}").fetchone()[0]
          for t in ("struct_files", "defs", "refs", "edges")}
print(json.dumps({"seconds": full, "resolve_seconds": full_resolve,
                  "files_read": counts.files_read, "refs_resolved": counts.refs_resolved,
                  "rss_before_kib": before.get("VmRSS"), "rss_after_kib": after.get("VmRSS"),
                  "peak_kib": after.get("VmHWM"), "peak_reset": peak_reset,
                  "noop_seconds": noop_s, "noop_resolve_seconds": noop_resolve,
                  "noop_files_read": noop.files_read, "noop_refs_resolved": noop.refs_resolved,
                  "one_file": one, "tables": tables}))
'''


def part_structure_index(clone: Path, db: Path, cortex: list[str], args) -> dict:
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    log("structure: cortex index --rebuild --model none ...")
    full = bl.run([*cortex, "index", "--rebuild", "--model", "none", "--repo", str(clone),
                   "--db", str(db), "--quiet", "--json", *jobs], sample_tree=True)
    summary = json.loads(full.stdout)
    return {"command": "cortex index --rebuild --model none --quiet --json"
            + (" " + " ".join(jobs) if jobs else ""),
            "seconds": full.seconds, "cpu_seconds": full.user_seconds + full.system_seconds,
            "max_rss_kib": full.max_rss_kib, "tree_peak_kib": full.tree_peak_rss_kib,
            "tree_measure": full.tree_measure, "db_bytes": db_size(db), "summary": summary}


def part_structure_alone(clone: Path, db: Path, work: Path, cortex: list[str], args,
                         touch: str | None) -> dict:
    runs = []
    for i in range(max(1, args.structure_runs)):
        copy = work / f"structure-{i}.db"
        copy_db(db, copy)
        r = bl.run([sys.executable, "-c", STRUCTURE_CHILD, str(copy), str(clone),
                    *([touch] if touch else [])], cwd=bl.PROJECT_DIR)
        data = json.loads(r.stdout)
        data.update({"process_seconds": r.seconds, "process_max_rss_kib": r.max_rss_kib,
                     "process_cpu_seconds": r.user_seconds + r.system_seconds})
        runs.append(data)
        remove_db(copy)
        log(f"structure pass alone: {bl.fmt_seconds(data['seconds'])} "
            f"(resolve {bl.fmt_seconds(data['resolve_seconds'])}), peak "
            f"{data['peak_kib'] / 1024:.0f} MiB")
    status = json.loads(bl.run([*cortex, "status", "--repo", str(clone), "--db", str(db),
                                "--json"]).stdout)
    langs = []
    for s in status.get("structure") or []:
        refs = s.get("refs") or 0
        langs.append({**s, "rate": (s.get("resolved", 0) / refs) if refs else None})
    return {"runs": runs, "best": min(runs, key=lambda d: d["seconds"]), "languages": langs}


def part_structure_updates(clone: Path, db: Path, work: Path, cortex: list[str],
                           sample: list[dict], head: str, args) -> dict:
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    cmd = [*cortex, "index", "--model", "none", "--repo", str(clone), "--db", str(db),
           "--quiet", "--json", *jobs]
    noop = []
    for _ in range(args.noop_runs):
        r = bl.run(cmd)
        noop.append((r.seconds, json.loads(r.stdout)))
    saved = work / "before-update.db"
    copy_db(db, saved)
    fn = sample[0] if sample else None
    path = fn["path"] if fn else None
    if path is None:
        return {"noop_seconds": [s for s, _ in noop]}
    runs = []
    for i in range(args.incremental_runs):
        if i:
            remove_db(db)
            copy_db(saved, db)
        bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", head])
        target = clone / path
        with open(target, "a", encoding="utf-8") as f:
            f.write(f"\n\ndef _cortex_bench_touch_{i}():\n    return {fn['name']}\n")
        bl.run(["git", *GIT_ID, "-C", str(clone), "commit", "-q", "-a", "-m",
                f"bench: touch {path}"])
        r = bl.run(cmd, sample_tree=True)
        summary = json.loads(r.stdout)
        runs.append({"seconds": r.seconds, "max_rss_kib": r.max_rss_kib,
                     "structure_files_read": summary.get("structure_files_read"),
                     "new_commits": summary.get("new_commits")})
        log(f"one-file update {i + 1}: {bl.fmt_seconds(r.seconds)}, "
            f"{summary.get('structure_files_read')} files read for structure")
    bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", head])
    remove_db(db)
    copy_db(saved, db)
    remove_db(saved)
    return {"file": path, "noop_seconds": [s for s, _ in noop],
            "noop_structure_files_read": [d.get("structure_files_read") for _, d in noop],
            "updates": runs}


def part_blast(con, clone: Path, db: Path, cortex: list[str], sample: list[dict],
               args) -> dict:
    from cortex_core.query.blast import blast
    from cortex_core.query.targets import TargetSpec
    specs = [TargetSpec(fn["path"], fn["qualname"]) for fn in sample]
    ok, failures = [], Counter()
    for spec in specs:   # untimed pass: warms SQLite's cache and the imports
        try:
            blast(con, spec, depth=2)
            ok.append(spec)
        except Exception as exc:  # noqa: BLE001 - counted
            failures[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
    times, sizes, hidden = [], [], []
    for spec in ok:
        start = time.perf_counter()
        b = blast(con, spec, depth=2)
        times.append(time.perf_counter() - start)
        sizes.append(len(b.dependents))
        hidden.append(len(b.hidden))
    cli = []
    picked = ok[:args.cli_blast]
    if picked:
        bl.run([*cortex, "blast", f"{picked[0].path}::{picked[0].symbol}", "--repo", str(clone),
                "--db", str(db), "--json"])   # warm-up: page cache
    for spec in picked:
        r = bl.run([*cortex, "blast", f"{spec.path}::{spec.symbol}", "--repo", str(clone),
                    "--db", str(db), "--json"])
        cli.append(r.seconds)
    start_runs = [bl.run([*cortex, "--version"]).seconds for _ in range(3)]
    return {"queries": len(times), "failures": dict(failures),
            "p50": bl.percentile(times, 50) if times else None,
            "p95": bl.percentile(times, 95) if times else None,
            "max": max(times) if times else None,
            "dependents_median": statistics.median(sizes) if sizes else None,
            "dependents_max": max(sizes) if sizes else None,
            "hidden_median": statistics.median(hidden) if hidden else None,
            "cli_queries": len(cli),
            "cli_p50": bl.percentile(cli, 50) if cli else None,
            "cli_p95": bl.percentile(cli, 95) if cli else None,
            "cortex_version_seconds": min(start_runs)}
