#!/usr/bin/env python3
"""MCP server: tool latency through the SDK's own client, and token budgets held.

A real `cortex mcp` process is driven over stdio by the MCP SDK's client (`mcp.Client` with
`StdioServerParameters`, the way an agent's host launches it), on REPO with a warm index:

  1. the index: a copy of `--db` in a private folder under bench/.work/ (REPO is only read),
     brought up to date by one `cortex index` with the server's model (untimed: a database built
     by another version or model re-embeds once), then one `sync` call through the server
     (timed: the no-op sync an agent pays when nothing is new);
  2. targets: T functions and methods alive at HEAD with at least one recorded change, sampled
     with the seed from the index (read-only); queries: Q commit subjects sampled the same way,
     cut to their first six words;
  3. per tool, W warm-up calls (not counted), then N calls cycling over the targets or queries,
     one at a time, each timed on the client (time.perf_counter around the awaited call: JSON-RPC
     both ways, the SDK's validation and worker thread, the query, the markdown); an answer that
     is an error counts as a failure and is reported;
     tools: symbol_history, blast_radius, related, hotspots, search_memory, context_pack (focus,
     and query), status; prompts: before-edit, explain-symbol (2,000 tokens); and the floor: a
     `status` call on a path that does not exist, answered with an error before any query (the
     SDK's protocol, validation and thread hop alone);
  4. budgets: for every target and each budget in --budgets, context_pack with the target as
     focus, context_pack with a query, and both prompts: the whole answer's text (the pack, its
     size line and any note on the index's freshness; a prompt's request) is counted with
     cortex_core.features.token_count.count_tokens (the pack's own counter) and must not exceed the
     budget; every case is counted and any excess reported;
  5. baseline: for B of the targets, `git log -L :NAME:PATH -s --format=%H` in REPO, with git's
     Python function-name rules (`*.py diff=python`, given through core.attributesFile so that
     REPO is not touched), process start included: what an agent with a shell pays for one
     function's history; against the symbol_history call of the same target: ratio at p50 and
     p95. Targets git cannot find (a nested function, a name defined twice) are counted apart;
  6. the server's memory: VmRSS and VmHWM of its process (/proc) at the end.

Run with the venv's python: `/work/venv/bin/python bench/bench_mcp.py REPO --db DB`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchlib as lib  # noqa: E402

TOOLS = ("symbol_history", "blast_radius", "related", "hotspots", "search_memory",
         "context_pack:focus", "context_pack:query", "status", "prompt:before-edit",
         "prompt:explain-symbol", "floor")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("repo", type=Path, help="a git repository (only read)")
    p.add_argument("--db", type=Path, required=True, help="an index of REPO (copied, not changed)")
    p.add_argument("--targets", type=int, default=40, help="functions and methods sampled (40)")
    p.add_argument("--queries", type=int, default=20, help="commit subjects sampled (20)")
    p.add_argument("--calls", type=int, default=100, help="timed calls per tool (100)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls per tool first (5)")
    p.add_argument("--budgets", default="100,300,1000,2000,8000",
                   help="token budgets tried for every target (100,300,1000,2000,8000)")
    p.add_argument("--git-runs", type=int, default=20, help="targets timed with git log -L (20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", help="CORTEX_MODEL for the server (default: the environment's)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    return p.parse_args()


def sample(db: Path, n_targets: int, n_queries: int, seed: int):
    import apsw
    con = apsw.Connection(f"file:{db}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    rows = con.execute(
        "select f.path, s.qualname from symbols s join files f on f.id = s.file_id"
        " where s.alive = 1 and s.kind in ('function', 'method')"
        " and exists (select 1 from symbol_changes sc where sc.symbol_id = s.id)"
        " order by f.path, s.qualname").fetchall()
    subjects = [r[0] for r in con.execute(
        "select subject from commits where reachable = 1 and is_merge = 0 order by sha")]
    con.close()
    rng = random.Random(seed)
    targets = [f"{p}::{q}" for p, q in rng.sample(rows, min(n_targets, len(rows)))]
    queries = []
    for s in rng.sample(subjects, min(len(subjects), n_queries * 3)):
        words = re.findall(r"[A-Za-z][A-Za-z0-9_]+", s)[:6]
        if len(words) >= 2:
            queries.append(" ".join(words))
        if len(queries) == n_queries:
            break
    return targets, queries


def call_for(tool: str, i: int, targets: list[str], queries: list[str]):
    t, q = targets[i % len(targets)], queries[i % len(queries)]
    return {
        "symbol_history": ("tool", "symbol_history", {"target": t}),
        "blast_radius": ("tool", "blast_radius", {"target": t}),
        "related": ("tool", "related", {"target": t}),
        "hotspots": ("tool", "hotspots", {"top_k": 10}),
        "search_memory": ("tool", "search_memory", {"query": q}),
        "context_pack:focus": ("tool", "context_pack", {"focus": t, "budget": 2000}),
        "context_pack:query": ("tool", "context_pack", {"query": q, "budget": 2000}),
        "status": ("tool", "status", {}),
        "prompt:before-edit": ("prompt", "before-edit", {"target": t, "budget": "2000"}),
        "prompt:explain-symbol": ("prompt", "explain-symbol", {"target": t, "budget": "2000"}),
        "floor": ("floor", "status", {"repo": "/nonexistent/cortex-bench"}),
    }[tool]


async def invoke(client, kind: str, name, args) -> tuple[bool, str]:
    """(ok, text) of one call."""
    from mcp.shared.exceptions import MCPError
    if kind == "floor":     # a tool call answered with an error before any query
        result = await client.call_tool(name, args)
        return result.is_error, ""
    if kind == "prompt":
        try:
            got = await client.get_prompt(name, args)
        except MCPError as exc:
            return False, str(exc)
        return True, got.messages[0].content.text
    result = await client.call_tool(name, args)
    body = result.content[0].text if result.content else ""
    return not result.is_error, body


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def server_pid() -> int | None:
    for pid, _ in lib.descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"cortex_core\x00mcp" in f.read():
                    return pid
        except OSError:
            continue
    return None


async def measure(args, db: Path, targets: list[str], queries: list[str]) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from cortex_core.features.token_count import count_tokens
    env = server_env()
    if args.model:
        env["CORTEX_MODEL"] = args.model
    params = StdioServerParameters(command=sys.executable,
                                   args=["-P", "-m", "cortex_core", "mcp", "--repo", str(args.repo),
                                         "--db", str(db)], env=env)
    report: dict = {"tools": {}, "budgets": {}, "failures": []}
    async with Client(params, read_timeout_seconds=600) as client:
        start = time.perf_counter()
        result = await client.call_tool("sync", {"wait_seconds": 600})
        report["sync_seconds"] = time.perf_counter() - start
        report["sync"] = result.structured_content
        for tool in TOOLS:
            times = []
            for i in range(args.warmup + args.calls):
                kind, name, call_args = call_for(tool, i + 7, targets, queries)
                t0 = time.perf_counter()
                ok, body = await invoke(client, kind, name, call_args)
                elapsed = time.perf_counter() - t0
                if not ok:
                    report["failures"].append({"tool": tool, "args": call_args, "error": body[:300]})
                    continue
                if i >= args.warmup:
                    times.append(elapsed)
            report["tools"][tool] = {"calls": len(times),
                                     "p50": lib.percentile(times, 50) if times else None,
                                     "p95": lib.percentile(times, 95) if times else None}
            print(f"  {tool}: p50 {lib.fmt_seconds(report['tools'][tool]['p50'] or 0)}",
                  file=sys.stderr)
        budgets = [int(b) for b in args.budgets.split(",")]
        for case in ("context_pack:focus", "context_pack:query", "prompt:before-edit",
                     "prompt:explain-symbol"):
            tried = over = errors = 0
            worst = 0.0
            for i in range(len(targets)):
                for budget in budgets:
                    kind, name, call_args = call_for(case, i, targets, queries)
                    call_args = dict(call_args, budget=str(budget) if kind == "prompt" else budget)
                    ok, body = await invoke(client, kind, name, call_args)
                    if not ok:      # a budget below a pack's header is refused, not exceeded
                        errors += 1
                        continue
                    tried += 1
                    used = count_tokens(body)     # the whole answer: pack, size line, notes
                    worst = max(worst, used / budget)
                    if used > budget:
                        over += 1
                        report["failures"].append({"case": case, "budget": budget,
                                                   "used": used, "args": call_args})
            report["budgets"][case] = {"answers": tried, "over_budget": over, "refused": errors,
                                       "largest_share_used": round(worst, 3)}
        pid = server_pid()
        report["server_memory_kib"] = proc_status(pid) if pid else {}
    return report


def git_baseline(repo: Path, targets: list[str], runs: int, work: Path
                 ) -> tuple[list[tuple[str, float]], list[str]]:
    """(target, seconds) for the targets git found, and the targets it could not."""
    attributes = work / "attributes"
    attributes.write_text("*.py diff=python\n")
    out, missed = [], []
    for target in targets:
        if len(out) == runs:
            break
        path, qualname = target.split("::", 1)
        name = qualname.rsplit(".", 1)[-1]
        r = lib.run(["git", "-c", f"core.attributesFile={attributes}", "-C", str(repo), "log",
                     f"-L:{re.escape(name)}:{path}", "-s", "--format=%H"], check=False)
        if r.returncode == 0 and r.stdout.strip():
            out.append((target, r.seconds))
        else:
            missed.append(target)
    return out, missed


def server_env() -> dict[str, str]:
    """What the server may see of this environment: Cortex's settings, home, the path, and the
    code under test (PYTHONPATH, set by _benchlib; the server runs with -P)."""
    return {k: v for k, v in os.environ.items()
            if k.startswith("CORTEX_") or k in ("HOME", "PATH", "PYTHONPATH")}


async def symbol_history_times(args, db: Path, targets: list[str]) -> dict[str, float]:
    """symbol_history per target (after one warm-up call each): the side of the ratio."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    params = StdioServerParameters(command=sys.executable,
                                   args=["-P", "-m", "cortex_core", "mcp", "--repo", str(args.repo),
                                         "--db", str(db)],
                                   env={**server_env(), "CORTEX_MODEL": "none"})
    out = {}
    async with Client(params, read_timeout_seconds=600) as client:
        for target in targets:
            await client.call_tool("symbol_history", {"target": target})
            t0 = time.perf_counter()
            await client.call_tool("symbol_history", {"target": target})
            out[target] = time.perf_counter() - t0
    return out


def main() -> int:
    args = parse_args()
    env = lib.environment(args.repo)
    work = lib.work_dir("mcp-", args.keep)
    try:
        db = work / "cortex.db"
        lib.copy_db(args.db.resolve(), db)
        index_env = dict(os.environ, **({"CORTEX_MODEL": args.model} if args.model else {}))
        lib.run([*lib.cortex_command(), "index", "-q", "--repo", str(args.repo), "--db", str(db)],
                env=index_env)
        targets, queries = sample(db, args.targets, args.queries, args.seed)
        print(f"{len(targets)} targets, {len(queries)} queries", file=sys.stderr)
        report = asyncio.run(measure(args, db, targets, queries))
        git, missed = git_baseline(args.repo, targets, args.git_runs, work)
        ours = asyncio.run(symbol_history_times(args, db, [t for t, _ in git]))
    finally:
        if not args.keep:
            lib.remove(work)
    git_times = [s for _, s in git]
    our_times = [ours[t] for t, _ in git]
    report["baseline"] = {
        "targets": len(git), "not_found_by_git": len(missed),
        "git_log_L": {"p50": lib.percentile(git_times, 50), "p95": lib.percentile(git_times, 95)},
        "symbol_history": {"p50": lib.percentile(our_times, 50),
                           "p95": lib.percentile(our_times, 95)},
    }
    report["environment"] = env
    if args.json:
        lib.dump_json(report)
        return 0
    print("\n".join(lib.environment_lines(env)))
    print(f"no-op sync through the server: {lib.fmt_seconds(report['sync_seconds'])}\n")
    rows = [[tool, str(r["calls"]), lib.fmt_seconds(r["p50"] or 0), lib.fmt_seconds(r["p95"] or 0)]
            for tool, r in report["tools"].items()]
    print(lib.table(rows, ["tool", "calls", "p50", "p95"]))
    print()
    rows = [[case, str(r["answers"]), str(r["over_budget"]), str(r["refused"]),
             f"{r['largest_share_used']:.0%}"] for case, r in report["budgets"].items()]
    print(lib.table(rows, ["budget case", "answers", "over budget", "refused", "largest share"]))
    b = report["baseline"]
    print(f"\nsymbol history, {b['targets']} targets ({b['not_found_by_git']} more that git "
          "could not find): git log -L p50 "
          f"{lib.fmt_seconds(b['git_log_L']['p50'])} p95 {lib.fmt_seconds(b['git_log_L']['p95'])}"
          f"; symbol_history p50 {lib.fmt_seconds(b['symbol_history']['p50'])} p95 "
          f"{lib.fmt_seconds(b['symbol_history']['p95'])}; ratio "
          f"{lib.ratio(b['git_log_L']['p50'], b['symbol_history']['p50']):.0f}x at p50, "
          f"{lib.ratio(b['git_log_L']['p95'], b['symbol_history']['p95']):.0f}x at p95")
    mem = report["server_memory_kib"]
    if mem:
        print(f"server memory: VmRSS {lib.fmt_bytes(mem.get('VmRSS', 0) * 1024)}, "
              f"peak {lib.fmt_bytes(mem.get('VmHWM', 0) * 1024)}")
    if report["failures"]:
        print(f"\n{len(report['failures'])} failures:")
        for f in report["failures"][:20]:
            print(f"  {f}")
    return 0


if __name__ == "__main__":
    shutil.which("git") or sys.exit("git is needed")
    sys.exit(main())
