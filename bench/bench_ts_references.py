#!/usr/bin/env python3
"""`cortex callers` of TypeScript classes, interfaces, type aliases and enums against
TypeScript's own "find all references" (its language service, what VS Code answers with).

A sample of top-level definitions of those kinds at the indexed HEAD, outside tests and
benchmarks (shuffled with --seed), is asked of both: TypeScript's references through
bench/_ts_references.js (node, and a typescript.js you name: TypeScript is no dependency of
Cortex), every .ts file of the clone outside node_modules given to its language service; and
`cortex_core.query.blast.callers` in this process. Each reference site and each caller is
mapped to its innermost enclosing definition in the store's `defs` (module level when none),
and the two sets of (path, definition) pairs are compared: recall and precision of Cortex
against TypeScript, micro-averaged, also for Cortex's edges of confidence 0.9 or more; and of
the baseline a user has without an index, `git grep -w NAME` over the .ts files, import lines
left out (_structure_callers.grep_pairs). Sites inside the target's own definition are left
out of all three.

usage: bench_ts_references.py CLONE --db DB --typescript PATH/typescript.js [--sample N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import _benchlib as bl
from _structure_callers import HIGH_CONFIDENCE, Defs, grep_pairs

KINDS = ("class", "interface", "type", "enum")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="cortex callers of TypeScript types against "
                                "TypeScript's own find-all-references.")
    p.add_argument("clone", type=Path, help="a checkout of the indexed commit")
    p.add_argument("--db", type=Path, required=True, help="the store that indexes it")
    p.add_argument("--typescript", type=Path, required=True,
                   help="typescript.js of a TypeScript package (lib/typescript.js)")
    p.add_argument("--sample", type=int, default=40, help="definitions asked (default 40)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    return p.parse_args(argv)


def sample_types(con, clone: Path, n: int, seed: int) -> list[dict]:
    marks = ",".join("?" * len(KINDS))
    rows = con.execute(
        "select f.path, d.qualname, d.name, d.start_line, d.end_line from defs d join files f"
        " on f.id = d.file_id join struct_files s on s.file_id = d.file_id where s.language ="
        " 'typescript' and s.is_test = 0 and s.skip_reason is null and d.qualname not like"
        f" '%.%' and d.kind in ({marks}) order by f.path, d.qualname", KINDS).fetchall()
    random.Random(seed).shuffle(rows)
    out = []
    for path, qualname, name, start, end in rows:
        if len(out) == n:
            break
        if "/bench/" in f"/{path}" or "/tests/" in f"/{path}":
            continue
        try:
            lines = (clone / path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        pattern = re.compile(r"\b(?:class|interface|type|enum)\s+(" + re.escape(name) + r")\b")
        for i in range(start - 1, min(end, len(lines))):
            m = pattern.search(lines[i])
            if m:
                out.append({"path": path, "qualname": qualname, "start": start, "end": end,
                            "line": i + 1, "column": m.start(1)})
                break
    return out


def typescript_references(clone: Path, typescript: Path, sample: list[dict]) -> list:
    files = sorted(p.relative_to(clone).as_posix() for p in clone.rglob("*.ts")
                   if "node_modules" not in p.parts)
    request = {"root": str(clone.resolve()), "files": files,
               "targets": [[t["path"], t["line"], t["column"]] for t in sample]}
    done = subprocess.run(["node", str(Path(__file__).with_name("_ts_references.js"))],
                          input=json.dumps(request), capture_output=True, text=True,
                          env={**os.environ, "TYPESCRIPT": str(typescript.resolve())},
                          timeout=3600)
    if done.returncode:
        sys.exit(f"TypeScript's references failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main(argv=None) -> int:
    args = parse_args(argv)
    from cortex_core.query.blast import callers
    from cortex_core.query.targets import TargetSpec
    from cortex_core.store.store import open_reader
    con = open_reader(args.db)
    sample = sample_types(con, args.clone, args.sample, args.seed)
    found = typescript_references(args.clone, args.typescript, sample)
    defs = Defs(con)
    totals = {"typescript": 0, "cortex": 0, "both": 0, "cortex_high": 0, "both_high": 0,
              "grep": 0, "grep_both": 0}
    per = []
    for target, refs in zip(sample, found):
        if refs is None:
            continue
        theirs = {(p, defs.enclosing(p, line)) for p, line in refs
                  if not (p == target["path"] and target["start"] <= line <= target["end"])}
        items = callers(con, TargetSpec(target["path"], target["qualname"])).items
        ours = {(i.path, defs.enclosing(i.path, i.line)) for i in items}
        high = {(i.path, defs.enclosing(i.path, i.line)) for i in items
                if i.confidence >= HIGH_CONFIDENCE}
        grepped = grep_pairs(args.clone, defs, target["qualname"], target["path"],
                             target["start"], target["end"], ("*.ts",))
        totals["grep"] += len(grepped)
        totals["grep_both"] += len(theirs & grepped)
        totals["typescript"] += len(theirs)
        totals["cortex"] += len(ours)
        totals["both"] += len(theirs & ours)
        totals["cortex_high"] += len(high)
        totals["both_high"] += len(theirs & high)
        per.append({"target": f"{target['path']}::{target['qualname']}",
                    "typescript": len(theirs), "cortex": len(ours), "both": len(theirs & ours),
                    "typescript_only": sorted(f"{p}::{q}" for p, q in theirs - ours)[:10],
                    "cortex_only": sorted(f"{p}::{q}" for p, q in ours - theirs)[:10]})

    def share(a: int, b: int) -> float | None:
        return round(a / b, 4) if b else None
    report = {"environment": bl.environment(args.clone), "targets": len(per), **totals,
              "recall": share(totals["both"], totals["typescript"]),
              "precision": share(totals["both"], totals["cortex"]),
              "recall_high": share(totals["both_high"], totals["typescript"]),
              "precision_high": share(totals["both_high"], totals["cortex_high"]),
              "grep_recall": share(totals["grep_both"], totals["typescript"]),
              "grep_precision": share(totals["grep_both"], totals["grep"]),
              "per_target": per}
    if args.json:
        bl.dump_json(report)
        return 0
    print("\n".join(bl.environment_lines(report["environment"])))
    print(f"\n{len(per)} TypeScript types: {totals['typescript']} (path, definition) pairs "
          f"TypeScript finds, {totals['cortex']} Cortex lists, {totals['both']} both")
    print(f"recall {report['recall']}, precision {report['precision']}; edges of confidence "
          f">= {HIGH_CONFIDENCE}: recall {report['recall_high']}, precision "
          f"{report['precision_high']}")
    print(f"baseline, `git grep -w NAME` over *.ts (imports and the definition left out): "
          f"{totals['grep']} pairs, recall {report['grep_recall']}, precision "
          f"{report['grep_precision']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
