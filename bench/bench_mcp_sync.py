#!/usr/bin/env python3
"""The MCP `sync` tool over a real history's next commits: two versions of cortex, side by side.

    /work/venv/bin/python bench/bench_mcp_sync.py REPO --db DB A_DIR B_DIR [--commits 12]

DB is an index of REPO at some commit C (a clone reset N first-parent commits behind its tip,
indexed). Each version (A and B: folders holding `cortex_core`, e.g. git worktrees) gets a
private clone of REPO at C, its own copy of DB, and its own `cortex mcp` server, driven over
stdio by the MCP SDK's client as an agent's host drives it. A first `sync` (nothing new) starts
each server's indexer once. Then for each of the next first-parent commits: both clones move to
it, and after a pause (`--pause`, an agent's turn between two syncs: what a server may do in
the background meanwhile, such as loading a spare indexer, it does) each server is asked to
`sync`, the order of A and B swapped every step. Timed on the client: the call until its answer,
which comes when the run has ended. Per version: the wall time of each sync, p50, p95 and the
mean; the part the indexer itself reports (its summary's seconds, from its store opened to its
end) and the rest (process start, imports, the server's protocol: "overhead"); how many runs a
spare indexer ran (`warm`). Per step, B / A; `git log -1 -p --no-merges` of the step for scale.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
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
    p.add_argument("--commits", type=int, default=12, metavar="N",
                   help="first-parent commits after the store's HEAD, one sync each (default 12)")
    p.add_argument("--pause", type=float, default=2.0, metavar="S",
                   help="seconds between two syncs of a server, untimed (default 2)")
    p.add_argument("--work", type=Path, help="work folder (default: a new one under "
                   "bench/.work/); removed at the end unless --keep")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    args = p.parse_args(argv)
    for folder in (args.a, args.b):
        if not (folder / "cortex_mcp" / "__init__.py").is_file():
            p.error(f"{folder} holds no cortex_mcp/")
    if not args.db.is_file():
        p.error(f"no store at {args.db}")
    if args.commits < 1 or args.pause < 0:
        p.error("--commits N needs N >= 1, --pause S needs S >= 0")
    return args


def server_params(folder: Path, clone: Path, db: Path):
    from mcp.client.stdio import StdioServerParameters
    env = {"PYTHONPATH": str(folder.resolve()), "CORTEX_MODEL": "none", "CORTEX_DAEMON": "off",
           "PATH": os.environ.get("PATH", ""), "PYTHONIOENCODING": "utf-8"}
    # -P: the working directory ("/") is not put first on sys.path.
    return StdioServerParameters(command=sys.executable, args=[
        "-P", "-m", "cortex_core", "mcp", "--repo", str(clone), "--db", str(db)], env=env, cwd="/")


async def sync(client) -> dict:
    started = time.perf_counter()
    result = await client.call_tool("sync", {"wait_seconds": 600})
    seconds = time.perf_counter() - started
    data = result.structured_content or {}
    if result.is_error or not data.get("ok"):
        raise SystemExit(f"a sync failed: {result.content[0].text if result.content else data}")
    inner = float((data.get("summary") or {}).get("seconds") or 0.0)
    return {"seconds": seconds, "indexer_seconds": inner, "warm": bool(data.get("warm")),
            "new_commits": (data.get("summary") or {}).get("new_commits")}


async def measure(args, work: Path) -> dict:
    from mcp import Client
    start = bl.store_head(args.db)
    line = bl.git(args.repo, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    if start not in line:
        raise SystemExit(f"the store's HEAD {start[:10]} is not on REPO's first-parent line")
    steps = line[line.index(start) + 1:][:args.commits]
    if not steps:
        raise SystemExit("no first-parent commit after the store's HEAD")
    sides = {}
    for name, folder in (("a", args.a), ("b", args.b)):
        clone = bl.private_clone(args.repo, work / name / "clone", checkout=False)
        bl.git(clone, "checkout", "-q", "-B", "bench", start)
        db = work / name / "store" / "cortex.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        bl.copy_db(args.db, db)
        sides[name] = (folder, clone, db)
    rows = []
    async with Client(server_params(*sides["a"]), read_timeout_seconds=900) as ca, \
            Client(server_params(*sides["b"]), read_timeout_seconds=900) as cb:
        clients = {"a": ca, "b": cb}
        for name in ("a", "b"):
            await sync(clients[name])   # nothing new: the indexer run once, untimed
        for n, sha in enumerate(steps, 1):
            for name in ("a", "b"):
                bl.git(sides[name][1], "reset", "-q", "--hard", sha)
            t0 = time.perf_counter()
            bl.git(sides["a"][1], "log", "-1", "-p", "--no-merges", sha, strip=False)
            row = {"commit": sha, "git_log_p_seconds": time.perf_counter() - t0}
            for name in (("a", "b") if n % 2 else ("b", "a")):
                await asyncio.sleep(args.pause)   # the agent's turn: not timed
                row[name] = await sync(clients[name])
            rows.append(row)
            bl.progress(f"{n}/{len(steps)} {sha[:10]}: A {row['a']['seconds']:.2f} s, "
                        f"B {row['b']['seconds']:.2f} s (warm: A {row['a']['warm']}, "
                        f"B {row['b']['warm']})")
    report = {"repo": str(args.repo), "start": start, "pause_seconds": args.pause,
              "a": str(args.a), "b": str(args.b), "rows": rows}
    for name in ("a", "b"):
        walls = [r[name]["seconds"] for r in rows]
        overhead = [r[name]["seconds"] - r[name]["indexer_seconds"] for r in rows]
        report[name + "_summary"] = {
            "p50": bl.percentile(walls, 50), "p95": bl.percentile(walls, 95),
            "mean": statistics.fmean(walls), "overhead_mean": statistics.fmean(overhead),
            "warm": sum(r[name]["warm"] for r in rows)}
    report["b_over_a_median"] = statistics.median(
        r["b"]["seconds"] / r["a"]["seconds"] for r in rows)
    report["git_log_p_max_seconds"] = max(r["git_log_p_seconds"] for r in rows)
    return report


def render(report: dict) -> str:
    head = ["", "p50", "p95", "mean", "overhead (mean)", "warm runs"]
    lines = [bl.table([[name.upper(), *(bl.fmt_seconds(report[name + "_summary"][k])
                                         for k in ("p50", "p95", "mean", "overhead_mean")),
                        f"{report[name + '_summary']['warm']} of {len(report['rows'])}"]
                       for name in ("a", "b")], head)]
    lines.append(f"B / A, median of steps: {report['b_over_a_median']:.2f}; "
                 f"`git log -1 -p` of a step: at most "
                 f"{bl.fmt_seconds(report['git_log_p_max_seconds'])}")
    lines += bl.environment_lines(report["environment"])
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    work = args.work or bl.work_dir("mcp-sync-", args.keep)
    work.mkdir(parents=True, exist_ok=True)
    try:
        report = asyncio.run(measure(args, work))
        report["environment"] = bl.environment(args.repo)
        bl.emit(report, args.json, render)
    finally:
        if not args.keep and args.work is None:
            bl.remove(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
