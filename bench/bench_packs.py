"""How much of its budget a context pack uses, counted with a real BPE tokenizer.

    python bench/bench_packs.py REPO [--db DB] [--sample 20] [--seed 0]
        [--budgets 1000,4000,8000] [--json] [--keep]

1. Indexes REPO into a temporary database (`cortex index --model none`), or uses `--db`.
2. Samples N functions, methods and classes alive at HEAD in `.py` files with one definition: N
   at random (shuffled with the seed), and the N with the most changes (more to say).
3. For each symbol and budget, builds the pack `cortex context --at PATH::SYMBOL` builds, three
   ways in the same run: costed with the estimate (the counter of earlier versions: the
   baseline), with o200k and with cl100k (bpe-openai). Every pack's text is then counted in
   o200k (and the cl100k pack in cl100k): real tokens / budget, min, median and max. A symbol
   has "enough to say" at a budget when all its candidates together (a pack with a budget of a
   million tokens) hold more than the budget; the goal (issue 18) is checked on those.
4. Counting speed on a text of about 4,000 o200k tokens (a pack's text): the estimate,
   bpe-openai o200k and cl100k, and tiktoken when it is installed (by hand: it is no dependency;
   it is given bpe-openai's bundled vocabulary, so it downloads nothing) — which also checks that
   both tokenizers count every pack's text the same. The time to load a counter (once per
   process) and to build a pack, per encoding.

Standard library plus the project; `--json` prints the whole report.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _benchlib as bl  # noqa: E402

ENCODINGS = ("estimate", "o200k", "cl100k")
SAMPLES = ("random", "busiest")
PLENTY = 1_000_000


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("repo", type=Path, help="a git repository (never modified)")
    p.add_argument("--db", type=Path, help="an existing index of REPO (default: index it)")
    p.add_argument("--sample", type=int, default=20, help="symbols (default: 20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budgets", default="1000,4000,8000", help="comma-separated token budgets")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    return p.parse_args(argv)


def sample_symbols(con, n: int, seed: int, busiest: bool = False) -> list[str]:
    """N symbols at random (seeded), or the N with the most changes in their history."""
    rows = con.execute(
        "select f.path, s.qualname, (select count(*) from symbol_changes c"
        " where c.symbol_id = s.id) from symbols s join files f on f.id = s.file_id"
        " join symbol_spans sp on sp.symbol_id = s.id"
        " where s.alive = 1 and s.kind in ('function', 'method', 'class')"
        " and f.path like '%.py' group by s.id having count(*) = 1"
        " order by f.path, s.qualname").fetchall()
    seen, unique = set(), []
    for path, qualname, changes in rows:
        if (path, qualname) not in seen:
            seen.add((path, qualname))
            unique.append((f"{path}::{qualname}", changes))
    random.Random(seed).shuffle(unique)
    if busiest:
        unique.sort(key=lambda t: -t[1])     # stable: ties stay in the seeded order
    return [t for t, _ in unique[:n]]


def spread(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "min": min(values), "median": statistics.median(values),
            "max": max(values)}


def per_call(fn, text: str, calls: int = 50) -> float:
    """Seconds per call, the best of three rounds of `calls` calls."""
    return bl.best_of(lambda: [fn(text) for _ in range(calls)]) / calls


def tiktoken_counters() -> dict:
    """tiktoken's encoders built from bpe-openai's bundled vocabularies (no download); {} when
    tiktoken is not installed."""
    try:
        import tiktoken
        from bpe_openai import registry   # the package's own loader of its bundled files
    except ImportError:
        return {}
    out = {}
    for name in ("o200k", "cl100k"):
        spec = getattr(registry, f"{name}_base")()
        enc = tiktoken.Encoding(f"{name}_base", pat_str=spec["pat_str"],
                                mergeable_ranks=spec["mergeable_ranks"],
                                special_tokens=spec["special_tokens"])
        # enc is bound by the outer lambda's argument, per encoding
        out[name] = (lambda enc: lambda text: len(enc.encode_ordinary(text)))(enc)  # noqa: B023
    out["version"] = tiktoken.__version__
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    repo_path = args.repo.resolve()
    budgets = [int(b) for b in args.budgets.split(",")]
    log = bl.progress
    from cortex_core.features import token_count
    from cortex_core.features.context_pack import build_pack
    from cortex_core.store.store import open_reader

    env = bl.environment(repo_path)
    work = bl.work_dir("packs-", args.keep)
    report: dict = {"benchmark": "packs", "environment": env, "config": bl.config(args)}
    try:
        if args.db is None:
            db = work / "cortex.db"
            log(f"indexing {repo_path} into {db} ...")
            r = bl.run([*bl.cortex_command(), "index", "--repo", str(repo_path), "--db", str(db),
                        "--model", "none", "--quiet"])
            report["index"] = {"seconds": r.seconds}
        else:
            db = args.db.resolve()
        con = open_reader(db)

        loads = {}
        for enc in ENCODINGS:
            start = time.perf_counter()
            c = token_count.counter(enc)
            loads[enc] = time.perf_counter() - start
            if enc != "estimate" and not c.exact:
                raise SystemExit(f"bench_packs: {c.note}")
        counters = {enc: token_count.counter(enc).count for enc in ENCODINGS}
        o200k, cl100k = counters["o200k"], counters["cl100k"]

        rows, texts, build_times = {}, [], {enc: [] for enc in ENCODINGS}
        for sample in SAMPLES:
            symbols = sample_symbols(con, args.sample, args.seed, busiest=sample == "busiest")
            rows[sample] = []
            for n, target in enumerate(symbols):
                material = build_pack(con, repo_path, at=target, budget=PLENTY, encoding="o200k")
                row = {"target": target, "material": {"o200k": o200k(material.text),
                                                      "cl100k": cl100k(material.text)},
                       "packs": {}}
                for budget in budgets:
                    for enc in ENCODINGS:
                        start = time.perf_counter()
                        got = build_pack(con, repo_path, at=target, budget=budget, encoding=enc)
                        build_times[enc].append(time.perf_counter() - start)
                        real = {"o200k": o200k(got.text)}
                        if enc == "cl100k":
                            real["cl100k"] = cl100k(got.text)
                        row["packs"][f"{enc}@{budget}"] = {
                            "used": got.used, "items": len(got.items),
                            "cut": sum(i.cut for i in got.items), **real}
                        texts.append(got.text)
                rows[sample].append(row)
                log(f"{sample} [{n + 1}/{len(symbols)}] {target}: {row['material']['o200k']}"
                    " o200k tokens to say")
        report["symbols"] = rows

        fill = {}
        for sample in SAMPLES:
            for budget in budgets:
                for enc in ENCODINGS:
                    measure = "cl100k" if enc == "cl100k" else "o200k"
                    key = f"{enc}@{budget}"
                    real = [(r["packs"][key][measure], r["material"][measure])
                            for r in rows[sample]]
                    fill[f"{sample}:{key}"] = {
                        "counted_in": measure,
                        "all": spread([t / budget for t, _ in real]),
                        "enough_to_say": spread([t / budget for t, m in real if m > budget]),
                        "of_what_there_is": spread([t / min(budget, m) for t, m in real]),
                        "over_budget": sum(t > budget for t, _ in real)}
        report["fill"] = fill

        # A text of about 4,000 o200k tokens: the largest o200k pack at 4,000 tokens (or any).
        sample_text = max(texts, key=lambda t: (abs(o200k(t) - 4000) < 200, len(t)))
        speed = {"text_chars": len(sample_text), "text_o200k": o200k(sample_text),
                 "per_call_seconds": {enc: per_call(counters[enc], sample_text)
                                      for enc in ENCODINGS},
                 "first_use_seconds": loads}
        tik = tiktoken_counters()
        if tik:
            speed["tiktoken_version"] = tik["version"]
            for name in ("o200k", "cl100k"):
                speed["per_call_seconds"][f"tiktoken-{name}"] = per_call(tik[name], sample_text)
                speed[f"tiktoken_disagrees_{name}"] = sum(
                    tik[name](t) != counters[name](t) for t in texts)
            speed["texts_compared"] = len(texts)
        speed["build_pack_median_seconds"] = {enc: statistics.median(v)
                                              for enc, v in build_times.items() if v}
        report["speed"] = speed
    finally:
        if not args.keep:
            bl.remove(work)

    bl.emit(report, args.json, render, budgets)
    return 0


def render(report: dict, budgets: list[int]) -> str:
    out = ["context packs: real tokens / budget", "=" * 35,
           *bl.environment_lines(report["environment"])]
    if "index" in report:
        out.append(f"index built for this run in {bl.fmt_seconds(report['index']['seconds'])}")
    for sample in SAMPLES:
        rows = report["symbols"][sample]
        what = "at random" if sample == "random" else "with the most changes"
        out.append(f"{len(rows)} symbols {what}; o200k tokens to say (all candidates): "
                   + ", ".join(f"{k} {v:g}" for k, v in spread(
                       [r["material"]["o200k"] for r in rows]).items() if k != "n"))
        table = []
        for budget in budgets:
            for enc in ENCODINGS:
                f = report["fill"][f"{sample}:{enc}@{budget}"]
                a, p, w = f["all"], f["enough_to_say"], f["of_what_there_is"]
                label = "estimate (old)" if enc == "estimate" else enc
                table.append([str(budget), label, f["counted_in"],
                              f"{a['min']:.3f} / {a['median']:.3f} / {a['max']:.3f}",
                              f"{p['n']}",
                              f"{p['min']:.3f} / {p['median']:.3f}" if p["n"] else "-",
                              f"{w['min']:.3f} / {w['median']:.3f}", str(f["over_budget"])])
        out.append(bl.table(table, ["budget", "costed with", "counted in",
                                    "tokens/budget min / med / max", "enough",
                                    "enough: min / med", "of what there is: min / med", "over"]))
        out.append("")
    s = report["speed"]
    out += [f"counting {s['text_o200k']} o200k tokens ({s['text_chars']} characters):"]
    per = s["per_call_seconds"]
    base = per.get("tiktoken-o200k")
    for name, secs in per.items():
        extra = f"  ({bl.ratio(base, secs):.2f}x tiktoken o200k)" if base else ""
        out.append(f"  {name:16} {secs * 1e3:8.3f} ms{extra}")
    if "tiktoken_version" in s:
        out.append(f"  tiktoken {s['tiktoken_version']} and bpe-openai disagree on "
                   f"{s['tiktoken_disagrees_o200k']} (o200k) and {s['tiktoken_disagrees_cl100k']}"
                   f" (cl100k) of {s['texts_compared']} pack texts")
    else:
        out.append("  tiktoken is not installed: no comparison")
    out.append("  first use (load, once per process): " + ", ".join(
        f"{k} {v * 1e3:.1f} ms" for k, v in s["first_use_seconds"].items()))
    out.append("  building a pack (median): " + ", ".join(
        f"{k} {v * 1e3:.1f} ms" for k, v in s["build_pack_median_seconds"].items()))
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
