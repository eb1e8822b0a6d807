"""bench_memory.py, parts 2 and 4: embedding throughput, and search latency in process (each mode)
and through the CLI."""

from __future__ import annotations

import re
import shlex
import statistics
import time
from pathlib import Path

import _benchlib as bl


SEARCH_MODES = ("lexical", "vector", "hybrid")


def encode_throughput(db: Path, model: str, runs: int) -> dict:
    from cortex_core.memory.embeddings import BATCH, MAX_CHARS, load_model
    from cortex_core.index.memory import embed_text
    from cortex_core.store.store import open_reader
    con = open_reader(db)
    rows = con.execute("select kind, segment, title, body from items").fetchall()
    con.close()
    texts = list(dict.fromkeys(embed_text(*r) for r in rows))
    t0 = time.perf_counter()
    embedder = load_model(model)
    load_seconds = time.perf_counter() - t0
    passes = []
    for _ in range(runs):
        start = time.perf_counter()
        for i in range(0, len(texts), BATCH):
            embedder.encode(texts[i:i + BATCH])
        passes.append(time.perf_counter() - start)
    best = min(passes)
    chars = sum(min(len(t), MAX_CHARS) for t in texts)
    return {"items": len(rows), "distinct_texts": len(texts), "batch": BATCH,
            "chars_encoded": chars, "clipped_texts": sum(len(t) > MAX_CHARS for t in texts),
            "mean_chars": chars / max(1, len(texts)), "dim": embedder.dim,
            "model_load_seconds_in_process": load_seconds,
            "seconds_best": best, "seconds_all": passes,
            "texts_per_second": len(texts) / best, "items_per_second": len(rows) / best,
            "chars_per_second": chars / best}


def first_word(text: str) -> str | None:
    m = re.search(r"[A-Za-z0-9]+", text)
    return m.group(0) if m else None


def latency(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"p50": bl.percentile(values, 50), "p95": bl.percentile(values, 95),
            "mean": statistics.fmean(values), "max": max(values), "n": len(values)}


def search_in_process(db: Path, queries: list[str]) -> dict:
    from cortex_core.memory.embeddings import load_embedder
    from cortex_core.memory.search import SearchOptions, search
    from cortex_core.store.store import open_reader
    con = open_reader(db)
    t0 = time.perf_counter()
    embedder = load_embedder(con)
    load_seconds = time.perf_counter() - t0
    now = time.time()
    out = {"embedder": getattr(embedder, "name", None), "embedder_load_seconds": load_seconds,
           "modes": {}}
    for mode in SEARCH_MODES:
        if mode != "lexical" and embedder is None:
            continue
        options = SearchOptions(mode=mode)   # the CLI's defaults: top 10, every kind, priors on
        errors, seconds, hits, used = 0, [], [], set()
        try:
            search(con, queries[0], options, embedder=embedder, now=now)   # warm-up
        except Exception:  # noqa: BLE001, S110 - counted query by query below
            pass
        for q in queries:
            try:
                start = time.perf_counter()
                result = search(con, q, options, embedder=embedder, now=now)
                seconds.append(time.perf_counter() - start)
                hits.append(len(result.hits))
                used.add(result.mode)
            except Exception:  # noqa: BLE001 - a query with no words, for instance
                errors += 1
        out["modes"][mode] = {"latency_s": latency(seconds), "errors": errors,
                              "mean_hits": statistics.fmean(hits) if hits else None,
                              "modes_used": sorted(used)}
    con.close()
    return out


def search_cli(clone: Path, db: Path, queries: list[str], cortex: list[str], log) -> dict:
    """cortex search (hybrid, lexical; whole entry and first word) vs git log --grep, per query
    interleaved so that a change of load hits all alike."""
    rows = []
    for n, q in enumerate(queries):
        word = first_word(q)
        if word is None:
            continue
        git_cmd = (f"git -C {shlex.quote(str(clone))} log --grep={shlex.quote(word)} -i "
                   f"--format=%H | head")
        g = bl.run(["sh", "-c", git_cmd])
        base = [*cortex, "search", "--repo", str(clone), "--db", str(db)]
        hybrid = bl.run([*base, "--", q])
        lexical = bl.run([*base, "--mode", "lexical", "--", q])
        word_hybrid = bl.run([*base, "--", word])
        rows.append({"query": q[:120], "word": word,
                     "git_seconds": g.seconds, "git_hits": len(g.stdout.split()),
                     "hybrid_seconds": hybrid.seconds, "hybrid_rss_kib": hybrid.max_rss_kib,
                     "lexical_seconds": lexical.seconds, "lexical_rss_kib": lexical.max_rss_kib,
                     "word_hybrid_seconds": word_hybrid.seconds})
        log(f"cli query {n + 1}/{len(queries)}: git {bl.fmt_seconds(g.seconds)}, hybrid "
            f"{bl.fmt_seconds(hybrid.seconds)}, lexical {bl.fmt_seconds(lexical.seconds)}")
    start = [bl.run([*cortex, "--version"]).seconds for _ in range(3)]
    out = {"queries": len(rows), "rows": rows,
           "git_command": "git log --grep=WORD -i --format=%H | head  (through sh -c)",
           "cortex_command": " ".join(cortex) + " search --repo CLONE --db DB [--mode lexical] "
                             "-- QUERY",
           "cortex_version_seconds": min(start)}
    for key in ("git", "hybrid", "lexical", "word_hybrid"):
        out[key] = latency([r[f"{key}_seconds"] for r in rows])
    for key in ("hybrid", "lexical", "word_hybrid"):
        out[f"{key}_over_git_p50"] = out[key]["p50"] / out["git"]["p50"]
        out[f"{key}_over_git_mean"] = out[key]["mean"] / out["git"]["mean"]
    out["hybrid_peak_rss_kib"] = max(r["hybrid_rss_kib"] for r in rows)
    out["lexical_peak_rss_kib"] = max(r["lexical_rss_kib"] for r in rows)
    return out
