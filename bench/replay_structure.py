"""Does an update resolve references as a full resolution would, on a real history?

    /work/venv/bin/python bench/replay_structure.py REPO [--commits 100] [--json] [--keep]

A private clone of REPO is reset to the commit N first-parent steps behind HEAD and indexed
(`--model none`). Then it steps forward one first-parent commit at a time; after each step's
`cortex index` (an update: update_structure reads the changed files and resolves again what
they can affect), a copy of the store resolves every reference again, and the two must hold the
same statuses and edges (tests/test_structure.py's comparison, on real code). The report gives,
per step, the files read and the references resolved against all of them, and every step whose
answers differ. Exit status 1 when any step differs.

This is a guard for the incremental resolution's rules, as tests/test_structure.py's
differential tests are on small layouts; its cost column shows what those rules save an update.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _benchlib as bl  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("repo", type=Path, help="the git repository (not modified; may be bare)")
    p.add_argument("--commits", type=int, default=100, metavar="N",
                   help="first-parent steps replayed, each an update (default 100)")
    p.add_argument("--work", type=Path, help="work folder (default: a new one under "
                   "bench/.work/); removed at the end unless --keep")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    args = p.parse_args(argv)
    if args.commits < 1:
        p.error("--commits N needs N >= 1")
    return args


_REF = ("f.path, r.scope, r.kind, r.name, r.qualifier, r.module, r.level, r.alias, r.owner,"
        " r.line")


def resolution(con) -> tuple[dict, dict]:
    """Every reference's status and every edge, keyed by what survives a re-resolution (all of
    a reference's fields and its line, not row ids): the comparison of tests/test_structure.py.
    References alike in all of them (one line's `f(f(x))`) give their statuses together."""
    status: dict = {}
    for row in con.execute(
            f"select {_REF}, r.status from refs r join files f on f.id = r.file_id"):
        status.setdefault(row[:-1], []).append(row[-1])
    status = {key: sorted(found) for key, found in status.items()}
    edges: dict = {}
    for row in con.execute(
            f"select {_REF}, d.path, e.dst_qualname, e.confidence from edges e"
            " join refs r on r.id = e.ref_id join files f on f.id = r.file_id"
            " join files d on d.id = e.dst_file_id"):
        edges.setdefault(row[:10], set()).add((row[10], row[11], round(row[12], 6)))
    return status, edges


def differences(a: tuple[dict, dict], b: tuple[dict, dict], limit: int = 5) -> list[str]:
    out = []
    for what, x, y in (("status", a[0], b[0]), ("edges", a[1], b[1])):
        for key in sorted(x.keys() | y.keys(), key=repr):
            if x.get(key) != y.get(key):
                out.append(f"{what} {key}: update {x.get(key)!r}, full {y.get(key)!r}")
                if len(out) >= limit:
                    return out
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    from cortex_core.config import Settings
    from cortex_core.index.ingest import index_repository
    from cortex_core.index.structure import resolve_refs
    from cortex_core.store.store import open_reader, open_writer

    work = args.work or bl.work_dir("replay-structure", args.keep)
    work.mkdir(parents=True, exist_ok=True)
    try:
        clone = bl.private_clone(args.repo, work / "clone", checkout=True)
        line = bl.git(clone, "rev-list", "--first-parent", "--reverse", "HEAD").split()
        steps = line[-args.commits - 1:]
        db, full = work / "cortex.db", work / "full.db"
        bl.git(clone, "reset", "-q", "--hard", steps[0])
        bl.progress(f"indexing at {steps[0][:10]} ({len(line) - len(steps) + 1} first-parent "
                    "commits) ...")
        index_repository(clone, db, Settings(), model="none")
        rows, differing = [], []
        for n, sha in enumerate(steps[1:], 1):
            bl.git(clone, "reset", "-q", "--hard", sha)
            t0 = time.perf_counter()
            summary = index_repository(clone, db, Settings(), model="none")
            seconds = time.perf_counter() - t0
            bl.copy_db(db, full)
            con = open_writer(full)
            total = resolve_refs(con, [], set(), everything=True)
            theirs = resolution(con)
            con.close()
            reader = open_reader(db)
            ours = resolution(reader)
            reader.close()
            diff = differences(ours, theirs)
            rows.append({"commit": sha, "files_read": summary.structure_files_read,
                         "refs_resolved": summary.structure_refs_resolved, "refs": total,
                         "update_seconds": round(seconds, 3), "differences": diff})
            if diff:
                differing.append(sha)
            bl.progress(f"{n}/{len(steps) - 1} {sha[:10]}: {summary.structure_files_read} files,"
                        f" {summary.structure_refs_resolved}/{total} refs"
                        + (" DIFFERENT" if diff else ""))
        report = {"repo": str(args.repo), "steps": len(rows), "differing": differing,
                  "rows": rows, "environment": bl.environment(args.repo)}
        bl.emit(report, args.json, render)
        return 1 if differing else 0
    finally:
        if not args.keep:
            bl.remove(work)


def render(report: dict) -> str:
    rows = report["rows"]
    read = [r for r in rows if r["files_read"]]
    everything = [r for r in read if r["refs_resolved"] >= r["refs"]]
    lines = [f"{report['repo']}: {report['steps']} updates replayed, {len(read)} read files for "
             f"structure; {len(everything)} of those resolved every reference again"]
    if read:
        share = sum(r["refs_resolved"] for r in read) / sum(r["refs"] for r in read)
        lines.append(f"references resolved by those updates: {share:.1%} of all of them")
    lines.append(f"updates whose answers differ from a full resolution: "
                 f"{len(report['differing'])}")
    lines += [f"  {r['commit'][:10]} {d}" for r in rows for d in r["differences"]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
