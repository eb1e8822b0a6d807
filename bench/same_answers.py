"""Do two checkouts of Cortex answer memory searches the same? A speed-up's guard.

    /work/venv/bin/python bench/same_answers.py REPO --db DB --base TREE [--tree TREE]
        [--queries 300] [--seed 0] [--variants] [--json]

Each checkout (TREE: default, this one) runs in a child process of its own (PYTHONPATH=TREE)
and searches the index as the language server does: `Engine(keep_vectors=True)` (vectors and,
where the checkout has them, lexical postings in memory, loaded before the first timed search),
one snapshot per search, `Snapshot.search(query)` with the server's defaults (hybrid when the
index has vectors, top 10, the working copy's status). The queries are subjects of REPO's
non-merge commits of at least three words, sampled with the seed, after the ones
`bench_lsp.py --seed SEED --searches 100` sends (the same sample, so those come first).
`--variants` adds, for every fifth query, lexical mode, `kinds=commit`, a path, a date and a
focus file (filters that take FTS5's own path).

The report compares every search's hits: item ids in order, and each hit's final score, fused
score, both ranks and both BM25 parts; scores must agree to 1e-9 (the largest difference is
printed; a speed-up that keeps the arithmetic gives 0). Exit status 1 when any search differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

TOLERANCE = 1e-9
HERE = Path(__file__).resolve().parent


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("repo", type=Path)
    p.add_argument("--db", type=Path, required=True, help="an index of REPO (read only)")
    p.add_argument("--base", type=Path, help="the checkout to compare with (its root)")
    p.add_argument("--tree", type=Path, default=HERE.parent,
                   help="the checkout under test (default: this one)")
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variants", action="store_true",
                   help="also lexical mode, kinds, path, since and a focus, on every fifth query")
    p.add_argument("--json", action="store_true")
    p.add_argument("--dump", action="store_true", help=argparse.SUPPRESS)   # the child's mode
    args = p.parse_args(argv)
    if not args.dump and args.base is None:
        p.error("--base TREE is required")
    return args


def queries(repo: Path, n: int, seed: int) -> list[str]:
    """bench_lsp.py's search queries first (its 105 with the default seed), then more."""
    out = subprocess.run(["git", "-C", str(repo), "log", "--no-merges", "--format=%s"],
                         capture_output=True, check=True).stdout
    subjects = [s for s in out.decode("utf-8", "replace").splitlines() if len(s.split()) >= 3]
    first = random.Random(seed + 2).sample(subjects, min(105, len(subjects)))
    rest = [s for s in random.Random(seed + 3).sample(subjects, min(len(subjects), n + 105))
            if s not in set(first)]
    return (first + rest)[:n]


def cases(repo: Path, n: int, seed: int, variants: bool) -> list[dict]:
    out = []
    for k, q in enumerate(queries(repo, n, seed)):
        out.append({"query": q})
        if variants and k % 5 == 0:
            out += [{"query": q, "mode": "lexical"}, {"query": q, "kinds": ["commit"]},
                    {"query": q, "path": "docs"}, {"query": q, "since": 1_500_000_000}]
    return out


def dump(args) -> None:
    """The child: every case's hits as JSON lines on stdout."""
    from cortex_core.engine import Engine
    from cortex_core.store.store_location import Location
    engine = Engine(args.repo.resolve(), Location(args.db.resolve(), explicit=True),
                    lenient_config=True, keep_vectors=True, workspace_seconds=2.0)
    with engine.snapshot() as snap:
        lexicon = getattr(engine, "lexicon", None)
        ready = lexicon(snap.con, wait=True) is not None if lexicon else None
        # a file at HEAD that many items touch: the focus lifts some of them
        focus = snap.con.execute(
            "select f.path from head_files h join files f on f.id = h.file_id"
            " join item_files x on x.file_id = f.id group by f.id"
            " order by count(*) desc, f.id limit 1").fetchone()[0]
    print(json.dumps({"lexicon": ready}), flush=True)
    for k, case in enumerate(cases(args.repo, args.queries, args.seed, args.variants)):
        options = dict(case)
        query = options.pop("query")
        if "kinds" in options:
            options["kinds"] = tuple(options["kinds"])
        if args.variants and k % 7 == 3:
            options["at"] = focus
        t = time.perf_counter()
        with engine.snapshot() as snap:
            result = snap.search(query, **options)
        seconds = time.perf_counter() - t
        hits = [{"id": h.item_id, "score": h.why.score, "fused": h.why.fused,
                 "lexical_rank": h.why.lexical_rank, "vector_rank": h.why.vector_rank,
                 "text_bm25": h.why.text_bm25, "code_bm25": h.why.code_bm25}
                for h in result.hits]
        print(json.dumps({"case": case, "at": options.get("at"), "mode": result.mode,
                          "candidates": result.candidates, "hits": hits,
                          "seconds": seconds}), flush=True)


def run_tree(tree: Path, args) -> tuple[dict, list[dict]]:
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
    cmd = [sys.executable, str(Path(__file__).resolve()), str(args.repo), "--db", str(args.db),
           "--queries", str(args.queries), "--seed", str(args.seed), "--dump"]
    if args.variants:
        cmd.append("--variants")
    out = subprocess.run(cmd, env=env, capture_output=True, check=True, cwd=tree).stdout
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    return lines[0], lines[1:]


def differences(a: list[dict], b: list[dict]) -> tuple[list[dict], float]:
    diffs, largest = [], 0.0
    for x, y in zip(a, b):
        why = None
        if x["case"] != y["case"] or x["mode"] != y["mode"]:
            why = "not the same search"
        elif [h["id"] for h in x["hits"]] != [h["id"] for h in y["hits"]]:
            why = "other hits or order"
        else:
            for hx, hy in zip(x["hits"], y["hits"]):
                for key in ("lexical_rank", "vector_rank"):
                    if hx[key] != hy[key]:
                        why = f"{key} of item {hx['id']}"
                for key in ("score", "fused", "text_bm25", "code_bm25"):
                    if (hx[key] is None) != (hy[key] is None):
                        why = f"{key} of item {hx['id']}"
                    elif hx[key] is not None:
                        d = abs(hx[key] - hy[key])
                        largest = max(largest, d)
                        if d > TOLERANCE:
                            why = f"{key} of item {hx['id']}: {hx[key]!r} / {hy[key]!r}"
        if why:
            diffs.append({"case": x["case"], "why": why})
    if len(a) != len(b):
        diffs.append({"case": None, "why": f"{len(a)} against {len(b)} searches"})
    return diffs, largest


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.dump:
        dump(args)
        return 0
    print(f"base {args.base} ...", file=sys.stderr)
    base_info, base = run_tree(args.base, args)
    print(f"tree {args.tree} ...", file=sys.stderr)
    tree_info, tree = run_tree(args.tree, args)
    diffs, largest = differences(base, tree)

    def p50(rows):
        s = sorted(r["seconds"] for r in rows)
        return s[len(s) // 2] if s else 0.0

    report = {"repo": str(args.repo), "db": str(args.db), "base": str(args.base),
              "tree": str(args.tree), "searches": len(tree),
              "hits": sum(len(r["hits"]) for r in tree),
              "base_lexicon": base_info["lexicon"], "tree_lexicon": tree_info["lexicon"],
              "identical": not diffs, "differences": diffs[:20], "n_differences": len(diffs),
              "largest_score_difference": largest,
              "p50_seconds": {"base": p50(base), "tree": p50(tree)}}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['searches']} searches, {report['hits']} hits compared "
              f"(postings in memory: base {base_info['lexicon']}, tree {tree_info['lexicon']})")
        print(f"identical: {'yes' if not diffs else 'NO'} ({len(diffs)} searches differ); "
              f"largest score difference {largest:.3g}")
        for d in diffs[:20]:
            print(f"  {d['case']}: {d['why']}")
        print(f"p50 per search in process: base {1000 * report['p50_seconds']['base']:.1f} ms, "
              f"tree {1000 * report['p50_seconds']['tree']:.1f} ms (one run each: not a "
              "benchmark)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
