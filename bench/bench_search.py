#!/usr/bin/env python3
"""Retrieval quality of memory search on commits, against gold answers from the changelog.

Queries and gold answers come from `retrieval_gold.py`: each changelog entry, with its issue/PR
numbers removed, is a query; the commits whose messages cite those numbers are its gold answers.
Search is restricted to commit items (`kinds=("commit",)`, no context prior: there is no editor
focus here). Four rankers, each over the same queries:

  bm25-messages  the baseline: plain BM25 over each commit's whole message, computed here
                 (_bm25_messages.py), not by Cortex
  lexical        Cortex's lexical ranking alone       SearchOptions(mode="lexical", priors=False)
  vector         vectors alone                        SearchOptions(mode="vector",  priors=False)
  hybrid         Cortex's default ranking             SearchOptions(mode="hybrid",  priors=True)

Figures per ranker: Recall@k (a query is a hit when any gold sha is among the first k hits'
commit shas) and MRR@k (1/rank of the first gold hit, 0 beyond k), over all queries and over the
answerable ones (at least one gold commit is an item of the index); latency p50/p95/mean of
`search()` in process, per query, after one warm-up call (no interpreter or model start).

Tuning: `evaluate(con, queries, options_factory, embedder=...)` is importable — the bench folder is
not a package, so a tuning script does `sys.path.insert(0, "bench")` and
`from bench_search import evaluate, load_queries` — and `--sweep` runs it over SWEEP_GRID (the
hybrid ranker's `Weights`), printing one line per setting.

Run with the venv's python: `/work/venv/bin/python bench/bench_search.py REPO [--db FILE]`. The
index must exist: `cortex index --repo REPO` (default location REPO/.cortex/cortex.db).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import _benchlib as bl
import retrieval_gold as rg

MODES = {
    # name: (SearchOptions.mode, priors)
    "lexical": ("lexical", False),
    "vector": ("vector", False),
    "hybrid": ("hybrid", True),
}

# The baseline, computed in bench/ without Cortex (_bm25_messages.py).
BASELINE = "bm25-messages"

# --sweep: each entry replaces fields of the hybrid ranker's SearchOptions.weights. Edit freely.
SWEEP_GRID: list[dict] = [
    {"lexical": 1.0, "vector": v, "flat_ratio": f}
    for v in (0.0, 0.25, 0.5, 1.0, 2.0) for f in (1.5, 2.0, 3.0)
]


# ---------------------------------------------------------------------------------------------
# Importable evaluation

def load_queries(repo: Path, changelog: str | None = None, *, min_words: int = 4,
                 min_ref: int = 10, max_refs: int | None = 10, expand_merges: bool = False,
                 limit: int | None = None, seed: int = 0) -> tuple[list[rg.GoldQuery], dict]:
    """The gold queries (a seeded sample of `limit` if given) and the extraction's report."""
    gs = rg.extract(repo, changelog, min_words=min_words, min_ref=min_ref, max_refs=max_refs,
                    expand_merges=expand_merges)
    queries = gs.queries
    if limit is not None and limit < len(queries):
        queries = random.Random(seed).sample(queries, limit)
    info = {"changelog": gs.changelog, "format": gs.fmt, "entries": gs.entries,
            "queries_extracted": len(gs.queries), "queries_used": len(queries),
            "dropped": gs.dropped, "min_words": min_words, "min_ref": min_ref,
            "max_refs": max_refs, "expand_merges": expand_merges, **gs.stats}
    return queries, info


def indexed_commit_items(con) -> set[str]:
    """Full shas of the commits that have at least one commit item in the index."""
    rows = con.execute("select distinct c.sha from items i join commits c on c.id = i.commit_id"
                       " where i.kind = 'commit'").fetchall()
    return {r[0] for r in rows}


def evaluate(con, queries: list[rg.GoldQuery], options_factory, *, embedder=None, k: int = 10,
             now: float | None = None, indexed: set[str] | None = None,
             per_query: bool = False, warmup: bool = True) -> dict:
    """Recall@k, MRR@k and latency of one ranker over `queries`.

    options_factory: a SearchOptions, or a callable returning one (called once per query, with no
    argument), e.g. `lambda: SearchOptions(top_k=10, kinds=("commit",), mode="hybrid")`. Its
    top_k should be at least k. now: the clock of the recency prior (default: wall clock).
    indexed: the shas with commit items (`indexed_commit_items(con)`), for the answerable subset;
    computed if None. per_query: also return each query's rank of its first gold hit.

    Returns {"queries", "answerable", "recall_at_k", "mrr_at_k", "recall_at_k_answerable",
    "mrr_at_k_answerable", "latency_s": {p50, p95, mean, max}, "modes_used", "errors",
    "error_examples", ["per_query"], "_ranks" (each query's rank of its first gold hit, or None,
    which versus_baseline() reads and drops)}. A query whose search raises counts as a miss (the
    exception's text is kept in error_examples)."""
    from cortex_core.memory.search import search

    def options():
        return options_factory() if callable(options_factory) else options_factory
    if warmup and queries:
        try:
            search(con, queries[0].query, options(), embedder=embedder, now=now)
        except Exception:  # noqa: BLE001, S110 - reported below, query by query
            pass

    def run(query: str) -> tuple[list[str], str]:
        result = search(con, query, options(), embedder=embedder, now=now)
        return [h.sha for h in result.hits[:k]], result.mode
    return score_ranker(queries, run, k=k,
                        indexed=indexed if indexed is not None else indexed_commit_items(con),
                        per_query=per_query)


def score_ranker(queries: list[rg.GoldQuery], run, *, k: int, indexed: set[str],
                 per_query: bool = False) -> dict:
    """The figures of evaluate() for any ranker: `run(query)` returns (shas best first, mode)."""
    hits = rr_sum = 0.0
    hits_ans = rr_ans = 0.0
    answerable = 0
    seconds: list[float] = []
    modes: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    rows = []
    ranks: list[int | None] = []   # each query's rank of its first gold hit, for the intervals
    for q in queries:
        is_answerable = bool(q.gold & indexed)
        answerable += is_answerable
        rank = elapsed = None
        try:
            start = time.perf_counter()
            shas, mode = run(q.query)
            elapsed = time.perf_counter() - start
            seconds.append(elapsed)
            modes[mode] += 1
            for i, sha in enumerate(shas[:k], 1):
                if sha in q.gold:
                    rank = i
                    break
        except Exception as exc:  # noqa: BLE001 - a failing query is a miss, and is counted
            errors[f"{type(exc).__name__}: {exc}"[:200]] += 1
        if rank is not None:
            hits += 1
            rr_sum += 1 / rank
            if is_answerable:
                hits_ans += 1
                rr_ans += 1 / rank
        ranks.append(rank)
        if per_query:
            rows.append({"source": q.source, "query": q.query, "gold": len(q.gold),
                         "answerable": is_answerable, "rank": rank, "seconds": elapsed})
    n = len(queries)
    out = {
        "k": k,
        "queries": n,
        "answerable": answerable,
        "recall_at_k": hits / n if n else None,
        "mrr_at_k": rr_sum / n if n else None,
        "recall_at_k_answerable": hits_ans / answerable if answerable else None,
        "mrr_at_k_answerable": rr_ans / answerable if answerable else None,
        "latency_s": ({"p50": bl.percentile(seconds, 50), "p95": bl.percentile(seconds, 95),
                       "mean": statistics.fmean(seconds), "max": max(seconds)}
                      if seconds else None),
        "modes_used": dict(modes),
        "errors": sum(errors.values()),
        "error_examples": dict(errors.most_common(5)),
    }
    if per_query:
        out["per_query"] = rows
    out["_ranks"] = ranks   # not printed: versus_baseline() reads it
    return out


def versus_baseline(results: dict) -> None:
    """Each ranker's differences from the baseline, paired query by query, in points, with
    their 95% intervals (a bootstrap over the queries: each changelog entry is drawn alone) and
    p-values (a sign-flip test: for Recall@k, the exact McNemar test); the per-query ranks are
    then dropped from the report."""
    base = results.get(BASELINE)
    for r in results.values():
        if "_ranks" not in r:
            continue
        if base is not None and r is not base:
            hit = [float(x is not None) for x in r["_ranks"]]
            rr = [1 / x if x else 0.0 for x in r["_ranks"]]
            base_hit = [float(x is not None) for x in base["_ranks"]]
            base_rr = [1 / x if x else 0.0 for x in base["_ranks"]]
            each = list(range(len(hit)))
            r["versus_baseline"] = {
                "recall_points": round((r["recall_at_k"] - base["recall_at_k"]) * 100, 2),
                "recall_interval": bl.paired_interval(hit, base_hit, each),
                "recall_p": bl.sign_flip_p(hit, base_hit, each),
                "mrr_points": round((r["mrr_at_k"] - base["mrr_at_k"]) * 100, 2),
                "mrr_interval": bl.paired_interval(rr, base_rr, each),
                "mrr_p": bl.sign_flip_p(rr, base_rr, each)}
    for r in results.values():
        r.pop("_ranks", None)


def evaluate_baseline(repo: Path, queries: list[rg.GoldQuery], *, k: int = 10,
                      indexed: set[str], per_query: bool = False) -> dict:
    """BM25 over commit messages, computed here (_bm25_messages.py), scored like evaluate()."""
    from _bm25_messages import MessageBM25
    start = time.perf_counter()
    bm25 = MessageBM25(repo)
    built = time.perf_counter() - start
    out = score_ranker(queries, lambda query: (bm25.search(query, k), "bm25-messages"), k=k,
                       indexed=indexed, per_query=per_query)
    out["build_seconds"] = built
    out["documents"] = bm25.n_docs
    return out


def mode_options(name: str, k: int = 10) -> Callable:
    """The options factory of one of the three rankers (see MODES)."""
    from cortex_core.memory.search import SearchOptions
    mode, priors = MODES[name]
    opts = SearchOptions(top_k=k, kinds=("commit",), mode=mode, priors=priors, context=False)
    return lambda: opts


def sweep(con, queries, *, embedder=None, k: int = 10, grid: list[dict] | None = None,
          now: float | None = None, log=None) -> list[dict]:
    """evaluate() of the hybrid ranker for each setting of `grid` (fields of Weights)."""
    base = mode_options("hybrid", k)()
    indexed = indexed_commit_items(con)
    out = []
    for setting in grid or SWEEP_GRID:
        weights = dataclasses.replace(base.weights, **setting)
        opts = dataclasses.replace(base, weights=weights)
        r = evaluate(con, queries, opts, embedder=embedder, k=k, now=now, indexed=indexed)
        out.append({"weights": setting, **{key: r[key] for key in (
            "recall_at_k", "mrr_at_k", "recall_at_k_answerable", "mrr_at_k_answerable",
            "latency_s", "errors")}})
        if log:
            log(f"sweep {setting}: R@{k} {r['recall_at_k']:.3f} MRR {r['mrr_at_k']:.3f}")
    return out


# ---------------------------------------------------------------------------------------------
# The report

def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Retrieval quality of memory search over commit items (BM25 alone, vectors "
        "alone, fused with priors): Recall@10, MRR@10 and latency, with gold answers from the "
        "repository's changelog (see retrieval_gold.py).")
    p.add_argument("repo", type=Path, help="the git repository (read only)")
    p.add_argument("--db", type=Path, help="the index (default: REPO/.cortex/cortex.db; create "
                   "it with `cortex index --repo REPO`)")
    p.add_argument("--changelog", help="the changelog, relative to REPO (default: found)")
    p.add_argument("--min-words", type=int, default=4, help="shorter queries are dropped "
                   "(default 4)")
    p.add_argument("--max-refs", type=int, default=10, help="entries citing more issue/PR "
                   "numbers are dropped: catch-all entries (\"Other documentation improvements\", "
                   "50 PRs) that any of dozens of commits would answer (default 10; 0: keep all)")
    p.add_argument("--expand-merges", action="store_true", help="a gold merge commit adds the "
                   "commits it merged to the gold")
    p.add_argument("--limit", type=int, help="evaluate a seeded random sample of N queries")
    p.add_argument("--seed", type=int, default=0, help="seed of --limit (default 0)")
    p.add_argument("-k", type=int, default=10, help="cut-off of Recall@k and MRR@k (default 10)")
    p.add_argument("--modes", default=f"{BASELINE},lexical,vector,hybrid",
                   help="rankers to evaluate, comma-separated (default "
                   f"{BASELINE},lexical,vector,hybrid)")
    p.add_argument("--misses", type=int, default=3, help="examples of queries the hybrid ranker "
                   "misses, with its top hits (default 3)")
    p.add_argument("--sweep", action="store_true", help="also evaluate the hybrid ranker for "
                   "each weight setting of SWEEP_GRID")
    p.add_argument("--per-query", action="store_true", help="with --json: each query's rank")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    return p.parse_args(argv)


def index_info(con, db: Path, repo_head: str) -> dict:
    from cortex_core.store.store import get_meta
    kinds = dict(con.execute("select kind, count(*) from items group by kind").fetchall())
    head = get_meta(con, "head")
    return {"path": str(db), "bytes": sum(f.stat().st_size for f in db.parent.glob(db.name + "*")
                                          if f.is_file() and not f.name.endswith(".lock")),
            "items": kinds, "indexed_head": head, "head_matches_repo": head == repo_head,
            "embed_model": get_meta(con, "embed_model"), "embed_dim": get_meta(con, "embed_dim"),
            "embed_off_reason": get_meta(con, "embed_off_reason")}


def misses(con, queries, embedder, k: int, n: int, seed: int) -> list[dict]:
    """A few queries the hybrid ranker misses: the query, its gold, the ranker's top 3."""
    from cortex_core.memory.search import search
    opts = mode_options("hybrid", k)()
    rng = random.Random(seed)
    out = []
    for q in rng.sample(queries, len(queries)):
        if len(out) >= n:
            break
        try:
            result = search(con, q.query, opts, embedder=embedder)
        except Exception:  # noqa: BLE001, S112 - a failing query: evaluate() counts it
            continue
        if any(h.sha in q.gold for h in result.hits[:k] if h.sha):
            continue
        gold = [{"sha": s, "subject": _subject(con, s)} for s in sorted(q.gold)[:3]]
        top = [{"sha": h.sha, "title": h.title} for h in result.hits[:3]]
        out.append({"source": q.source, "query": q.query, "gold": gold, "top": top})
    return out


def _subject(con, sha: str) -> str | None:
    row = con.execute("select i.title from items i join commits c on c.id = i.commit_id where "
                      "c.sha = ? and i.kind = 'commit' order by i.segment limit 1",
                      (sha,)).fetchone()
    return row[0] if row else None


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    log = bl.progress
    db = (args.db or repo / ".cortex" / "cortex.db").resolve()
    if not db.is_file():
        command = f"cortex index --repo {repo}" + (f" --db {db}" if args.db else "")
        print(f"no index at {db}: create it with `{command}`", file=sys.stderr)
        return 2
    try:
        from cortex_core.memory.embeddings import load_embedder
        from cortex_core.store.store import open_reader
    except ImportError as exc:
        print(f"cortex_core has no memory search yet ({exc})", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES and m != BASELINE]
    if unknown:
        print(f"unknown mode {unknown[0]!r} (known: {', '.join(MODES)})", file=sys.stderr)
        return 2

    env = bl.environment(repo)
    report: dict = {"benchmark": "search", "environment": env, "config": bl.config(args)}
    log("extracting gold queries ...")
    try:
        queries, gold_info = load_queries(repo, args.changelog, min_words=args.min_words,
                                          max_refs=args.max_refs or None,
                                          expand_merges=args.expand_merges, limit=args.limit,
                                          seed=args.seed)
    except FileNotFoundError as exc:   # no changelog found, or --changelog names none
        print(exc, file=sys.stderr)
        return 2
    report["gold"] = gold_info
    if not queries:
        dropped = ", ".join(f"{k} {v}" for k, v in sorted(gold_info["dropped"].items()))
        print(f"no queries: no entry of {gold_info['changelog']} cites a commit of this history "
              f"(dropped: {dropped or 'none'})", file=sys.stderr)
        return 1
    con = open_reader(db)
    start = time.perf_counter()
    embedder = load_embedder(con)
    report["embedder"] = {"loaded": embedder is not None,
                          "name": getattr(embedder, "name", None),
                          "load_seconds": time.perf_counter() - start}
    report["index"] = index_info(con, db, env["repository"]["head"])
    indexed = indexed_commit_items(con)
    gold_all = set().union(*(q.gold for q in queries)) if queries else set()
    report["index"]["gold_commits_without_item"] = len(gold_all - indexed)
    report["index"]["gold_commits"] = len(gold_all)
    now = time.time()   # one clock for every ranker: the recency prior is the same for all
    results = {}
    for name in modes:
        if name == BASELINE:
            log(f"{name}: {len(queries)} queries ...")
            results[name] = evaluate_baseline(repo, queries, k=args.k, indexed=indexed,
                                              per_query=args.per_query)
            r = results[name]
            log(f"{name}: R@{args.k} {r['recall_at_k']:.3f}  MRR@{args.k} {r['mrr_at_k']:.3f}")
            continue
        if name == "vector" and embedder is None:
            results[name] = {"skipped": "no embedding model in this index (vectors off)"}
            log("vector: skipped (no embedding model)")
            continue
        log(f"{name}: {len(queries)} queries ...")
        results[name] = evaluate(con, queries, mode_options(name, args.k), embedder=embedder,
                                 k=args.k, now=now, indexed=indexed, per_query=args.per_query)
        r = results[name]
        log(f"{name}: R@{args.k} {r['recall_at_k']:.3f}  MRR@{args.k} {r['mrr_at_k']:.3f}")
    versus_baseline(results)
    report["results"] = results
    if "hybrid" in modes and args.misses:
        report["hybrid_misses"] = misses(con, queries, embedder, args.k, args.misses, args.seed)
    if args.sweep:
        if embedder is None:
            report["sweep"] = {"skipped": "no embedding model: the weights only mix in vectors"}
        else:
            report["sweep"] = sweep(con, queries, embedder=embedder, k=args.k, now=now, log=log)

    if args.json:
        bl.dump_json(report)
    else:
        print_report(report, args.k)
    return 0


def _difference(v: dict, measure: str) -> str:
    low_high = v[f"{measure}_interval"]
    interval = f"{low_high[0]:+.1f} to {low_high[1]:+.1f}, " if low_high else ""
    return f"{v[f'{measure}_points']:+.1f} points ({interval}p {v[f'{measure}_p']})"


def _pct(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def print_report(report: dict, k: int) -> None:
    g, idx = report["gold"], report["index"]
    print("search retrieval benchmark")
    for line in bl.environment_lines(report["environment"]):
        print("  " + line)
    print(f"  index: {idx['path']} ({bl.fmt_bytes(idx['bytes'])}), items "
          + ", ".join(f"{k_} {v}" for k_, v in sorted(idx["items"].items()))
          + (", indexed HEAD = repository HEAD" if idx["head_matches_repo"]
             else f", indexed HEAD {str(idx['indexed_head'])[:10]} != repository HEAD (stale)"))
    emb = report["embedder"]
    print("  embeddings: " + (f"{emb['name']} ({idx['embed_dim']} dims), loaded in "
                               f"{bl.fmt_seconds(emb['load_seconds'])}" if emb["loaded"] else
                               f"off ({idx.get('embed_off_reason') or 'no model recorded'})"))
    print()
    dropped = ", ".join(f"{k_} {v}" for k_, v in sorted(g["dropped"].items()))
    print(f"gold: {g['changelog']} ({g['format']}), {g['entries']} entries -> "
          f"{g['queries_extracted']} queries (dropped: {dropped}); {g['queries_used']} used")
    gs = g["gold_size"]
    print(f"  gold commits per query: mean {gs['mean']}, median {gs['median']}, max {gs['max']};"
          f" max refs {g['max_refs'] or 'any'}, merges expanded: "
          f"{'yes' if g['expand_merges'] else 'no'}")
    print(f"  gold commits without a commit item in the index: "
          f"{idx['gold_commits_without_item']} of {idx['gold_commits']}")
    print()
    rows = []
    for name, r in report["results"].items():
        if "skipped" in r:
            rows.append([name, "-", "-", "-", "-", "-", "-", r["skipped"]])
            continue
        lat = r["latency_s"] or {}
        note = []
        if r["errors"]:
            note.append(f"{r['errors']} errors")
        used = r["modes_used"]
        if used and name in MODES and set(used) != {MODES[name][0]}:
            note.append("ran as " + ", ".join(f"{m} {c}" for m, c in used.items()))
        rows.append([name, _pct(r["recall_at_k"]), _pct(r["mrr_at_k"]),
                     _pct(r["recall_at_k_answerable"]), _pct(r["mrr_at_k_answerable"]),
                     bl.fmt_seconds(lat["p50"]) if lat else "-",
                     bl.fmt_seconds(lat["p95"]) if lat else "-", "; ".join(note)])
    any_r = next((r for r in report["results"].values() if "queries" in r), None)
    n, ans = (any_r["queries"], any_r["answerable"]) if any_r else (0, 0)
    print(f"rankers over {n} queries ({ans} answerable: a gold commit has a commit item), "
          f"commit items only, top {k}:")
    print(bl.table(rows, ["ranker", f"R@{k}", f"MRR@{k}", f"R@{k} ans.", f"MRR@{k} ans.",
                          "p50", "p95", "note"]))
    for name, r in report["results"].items():
        v = r.get("versus_baseline")
        if v:
            print(f"  {name} − {BASELINE}: R@{k} {_difference(v, 'recall')}, MRR@{k} "
                  f"{_difference(v, 'mrr')} (95% intervals, sign-flip p)")
    for name, r in report["results"].items():
        for msg, count in (r.get("error_examples") or {}).items():
            print(f"  {name} error x{count}: {msg}")
    print(f"  {BASELINE} = plain BM25 over each commit's whole message, computed in bench/ "
          "(not Cortex); lexical = Cortex's lexical ranking alone, vector = vectors alone (both "
          "without priors), hybrid = Cortex's default ranking (no context prior); latency: "
          "search() in process, after a warm-up")
    if report.get("hybrid_misses"):
        print("\nqueries the hybrid ranker misses (random):")
        for m in report["hybrid_misses"]:
            print(f"\n  {m['source']}: {m['query'][:200]}")
            for gd in m["gold"]:
                print(f"    gold {str(gd['sha'])[:10]}  {str(gd['subject'])[:80]}")
            for h in m["top"]:
                print(f"    got  {str(h['sha'])[:10]}  {str(h['title'])[:80]}")
    sw = report.get("sweep")
    if isinstance(sw, dict):
        print(f"\nsweep: {sw['skipped']}")
    elif sw:
        print("\nsweep of the hybrid ranker's weights:")
        print(bl.table([[str(s["weights"]), _pct(s["recall_at_k"]), _pct(s["mrr_at_k"]),
                         bl.fmt_seconds(s["latency_s"]["p50"]) if s["latency_s"] else "-"]
                        for s in sw], ["weights", f"R@{k}", f"MRR@{k}", "p50"]))


if __name__ == "__main__":
    sys.exit(main())
