"""bench_memory.py's text report."""

from __future__ import annotations

import _benchlib as bl


def render(r: dict) -> str:
    s = r["setup"]
    out = ["cortex memory: embeddings, areas, search", "=" * 40,
           *bl.environment_lines(r["environment"]),
           f"private clone at T~1 = {s['base'][:10]} ({s['commits_at_base']} commits); "
           f"T = {s['tip'][:10]} {s['tip_subject'][:60]!r}",
           f"model: {s['model']}; index jobs: {s['jobs']}"]

    # 1a
    f = r["full_index"]
    out += ["", "1. Full index (child processes, one run each, process start included)"]
    rows = []
    for name in ("none", "model"):
        x = f[name]
        sm = x["summary"]
        rows.append([x["command"].replace("cortex index --rebuild --quiet --json ", ""),
                     bl.fmt_seconds(x["seconds"]),
                     "1.00x" if name == "none" else f"{f['model_over_none']:.2f}x",
                     f"{x['cpu_seconds']:.1f} s", bl.mib(x["tree_peak_rss_kib"]),
                     bl.mib(x["max_rss_kib"]), bl.fmt_bytes(x["db_bytes"]),
                     str(sm.get("items_added")), str(sm.get("texts_embedded")),
                     str(sm.get("areas"))])
    out.append(bl.table(rows, ["", "wall", "/ none", "CPU", "peak (tree)", "largest proc",
                               "database", "items", "embedded", "areas"]))
    out.append(f"the model adds {f['added_seconds']:+.2f} s wall, "
               f"{f['added_cpu_seconds']:+.1f} s CPU (one run each: within the noise when small; "
               f"see the phases); peak (tree): "
               f"{f['model'].get('tree_measure') or 'RSS'} of all processes, sampled every 50 ms")

    # 1b
    if "phases" in r:
        ph = r["phases"]
        labels = list(dict.fromkeys(ph["model"]["order"] + ph["none"]["order"]))
        cm = ph["model"]["breakdown"]["commits_only_seconds"]
        cn = ph["none"]["breakdown"]["commits_only_seconds"]
        rows = [["commits-only (total - memory)", f"{cm:.2f} s", "1.00x", "",
                 f"{cn:.2f} s", "1.00x", ""]]
        for label in labels:
            if label == "memory (all)":
                continue
            m = ph["model"]["phases"].get(label)
            n = ph["none"]["phases"].get(label)
            rows.append([label,
                         f"{m['seconds']:.3f} s" if m else "-",
                         f"{m['seconds'] / cm:.3f}x" if m else "",
                         bl.mib(m["peak_rss_kib_after"]) if m else "",
                         f"{n['seconds']:.3f} s" if n else "-",
                         f"{n['seconds'] / cn:.3f}x" if n else "",
                         bl.mib(n["peak_rss_kib_after"]) if n else ""])
        for key, label in (("items_plus_embedding_seconds", "= items + embedding"),
                           ("spectral_seconds", "= spectral step (areas)"),
                           ("memory_other_seconds", "= memory, rest (transactions)")):
            bm, bn = ph["model"]["breakdown"], ph["none"]["breakdown"]
            rows.append([label, f"{bm[key]:.2f} s", f"{bm[key] / cm:.3f}x", "",
                         f"{bn[key]:.2f} s", f"{bn[key] / cn:.3f}x", ""])
        rows.append(["total (index_repository)", f"{ph['model']['total_seconds']:.2f} s",
                     f"{ph['model']['total_seconds'] / cm:.2f}x",
                     bl.mib(ph["model"]["peak_rss_kib_main_process"]),
                     f"{ph['none']['total_seconds']:.2f} s",
                     f"{ph['none']['total_seconds'] / cn:.2f}x",
                     bl.mib(ph["none"]["peak_rss_kib_main_process"])])
        out += ["", "   Phases of one in-process index_repository(rebuild=True) each (a child "
                "process; wall time; nested rows indented)"]
        out.append(bl.table(rows, ["phase", "model", "/ commits", "peak RSS after",
                                   "model none", "/ commits", "peak RSS after"]))
        for name in ("model", "none"):
            d = ph[name]["details"]
            sp = d.get("spectral")
            if sp:
                g = d.get("graph", [{}])[0]
                out.append(f"spectral step, {name}: {sp['items']} items of {sp['dim']} dims "
                           f"({d.get('distinct_vector_nodes')} distinct), {sp['links']} links, "
                           f"graph {g.get('nodes')} nodes / {g.get('edges_nnz')} nnz, "
                           f"k = {sp['k']}, eigengap {sp['eigengap']:.4f}, "
                           f"{sp['sampled']} clustered exactly "
                           f"(max_items {sp['settings']['max_items']})")
        out.append("peak RSS after: the main process's peak so far (VmHWM) when the phase ended; "
                   "worker processes reading commits not included. An indented row is part of "
                   "the next less indented row below it.")

    # 1c
    if "recompute" in r:
        rc = r["recompute"]
        out += ["", "   Recomputed on a copy of each finished store (child process per row, best "
                "of runs; OPENBLAS_NUM_THREADS unset = OpenBLAS's default, one thread per CPU)"]
        rows = []
        for key, x in rc.items():
            name, threads = key.split("_blas_")
            label = ("--model none (lexical areas)" if name == "none" else "--model PATH")
            label += f", BLAS threads: {threads}"
            areas_runs = x["areas"]
            rows.append([label,
                         bl.fmt_seconds(x["embed_best_seconds"]) if x.get("embed") else "-",
                         bl.fmt_seconds(x["areas_best_seconds"]),
                         f"{x['areas_best_cpu_seconds']:.2f} s",
                         " / ".join(f"{a['seconds']:.1f}" for a in areas_runs),
                         str(areas_runs[0]["k"]), f"{areas_runs[0]['eigengap']:.4f}",
                         bl.mib(x["peak_rss_kib"])])
        out.append(bl.table(rows, ["", "embed_missing", "update_areas", "its CPU", "all runs (s)",
                                   "k", "eigengap", "peak RSS"]))

    # 2
    e = r["encode"]
    out += ["", f"2. Embedder.encode over the index's item texts (batches of {e['batch']}, best "
            f"of {len(e['seconds_all'])})"]
    out.append(f"{e['distinct_texts']} distinct texts for {e['items']} items, mean "
               f"{e['mean_chars']:.0f} chars ({e['clipped_texts']} clipped): "
               f"{bl.fmt_seconds(e['seconds_best'])} = {e['texts_per_second']:.0f} texts/s, "
               f"{e['items_per_second']:.0f} items/s, {e['chars_per_second'] / 1e6:.1f} M chars/s; "
               f"model load in process {bl.fmt_seconds(e['model_load_seconds_in_process'])}")
    if "phases" in r:
        emb = r["phases"]["model"]["phases"].get("embedding (embed_missing)")
        enc = r["phases"]["model"]["phases"].get("  of which Embedder.encode")
        if emb and enc:
            out.append(f"in the index: embed_missing {bl.fmt_seconds(emb['seconds'])}, of which "
                       f"encode {bl.fmt_seconds(enc['seconds'])} and SQLite (vec0 inserts, "
                       f"item updates) {bl.fmt_seconds(emb['seconds'] - enc['seconds'])}")

    # 3
    u = r["updates"]
    out += ["", "3. Updates (child processes, process start included)"]
    rows = []
    for kind, label in (("noop", "no-op re-index"), ("one_commit", "one new commit")):
        for name in ("none", "model"):
            x = u[kind][name]
            rows.append([f"{label}, --model {'none' if name == 'none' else 'PATH'}",
                         bl.fmt_seconds(x["seconds_best"]), bl.fmt_seconds(x["seconds_median"]),
                         bl.mib(x["max_rss_kib"]), str(x["summary"].get("texts_embedded")),
                         str(x["summary"].get("areas"))])
        rows.append(["  added by the model", f"{u[kind]['added_seconds_best'] * 1e3:+.0f} ms",
                     f"{u[kind]['added_seconds_median'] * 1e3:+.0f} ms", "", "", ""])
    out.append(bl.table(rows, ["", "best", "median", "peak RSS", "embedded", "areas"]))
    if "phases" in r and "model load" in r["phases"]["model"]["phases"]:
        out.append(f"model load in the instrumented index run: "
                   f"{bl.fmt_seconds(r['phases']['model']['phases']['model load']['seconds'])} "
                   f"(every `cortex index` with a model loads it, even with nothing to embed)")
    rc = u["recluster"]
    out.append(f"goal: the model adds under 1 s to a one-commit update: "
               f"{'yes' if r['goals']['one_commit_added_under_1s'] else 'NO'} "
               f"({u['one_commit']['added_seconds_best'] * 1e3:+.0f} ms; no-op "
               f"{u['noop']['added_seconds_best'] * 1e3:+.0f} ms)")
    out.append(f"a full re-cluster happens when the items move by {rc['share']:.0%}: "
               f"~{rc['commits_until_full_recluster']:.0f} commits at "
               f"{rc['items_per_commit']:.2f} items per commit; that update pays the spectral "
               f"step above")

    # 4
    sr = r["search"]
    ip = sr["in_process"]
    out += ["", f"4. Search latency ({sr['queries']} changelog entries of "
            f"{sr['queries_available']}; defaults: top 10, every kind, priors on)"]
    rows = []
    for mode, x in ip["modes"].items():
        lat = x["latency_s"]
        rows.append([f"search() in process, {mode}", bl.fmt_seconds(lat["p50"]),
                     bl.fmt_seconds(lat["p95"]), bl.fmt_seconds(lat["mean"]),
                     bl.fmt_seconds(lat["max"]), str(x["errors"])])
    out.append(bl.table(rows, ["", "p50", "p95", "mean", "max", "errors"]))
    out.append("the model is loaded before the first query (not in the latencies; the first "
               f"load in a process, imports included, took "
               f"{bl.fmt_seconds(r['encode']['model_load_seconds_in_process'])}: section 2)")
    c = sr["cli"]
    rows = [["git log --grep=WORD -i --format=%H | head (baseline)",
             bl.fmt_seconds(c["git"]["p50"]), bl.fmt_seconds(c["git"]["p95"]),
             bl.fmt_seconds(c["git"]["mean"]), "1.00x", ""]]
    for key, label in (("word_hybrid", "cortex search WORD (hybrid)"),
                       ("hybrid", "cortex search ENTRY (hybrid)"),
                       ("lexical", "cortex search ENTRY --mode lexical")):
        x = c[key]
        rss = c.get(f"{key}_peak_rss_kib")
        rows.append([label, bl.fmt_seconds(x["p50"]), bl.fmt_seconds(x["p95"]),
                     bl.fmt_seconds(x["mean"]), f"{c[key + '_over_git_p50']:.2f}x",
                     bl.mib(rss) if rss else ""])
    out += ["", f"   end to end, {c['queries']} queries, interleaved (cortex --version = "
            f"{bl.fmt_seconds(c['cortex_version_seconds'])})"]
    out.append(bl.table(rows, ["", "p50", "p95", "mean", "p50 / git", "peak RSS"]))
    return "\n".join(out)
