"""bench_structure.py's text report: one section a part."""

from __future__ import annotations

import statistics
from collections import Counter

import _benchlib as bl
from _structure_callers import HIGH_CONFIDENCE


def _f(x, digits=3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _t(x) -> str:
    return "-" if x is None else bl.fmt_seconds(x)


def render(r: dict) -> str:
    cfg = r.get("config", {})
    out = ["cortex structure: callers vs Jedi, co-change over time, structure pass, blast",
           "=" * 78, *bl.environment_lines(r["environment"]),
           f"jedi {r['environment'].get('jedi')}; load average at the end "
           f"{r['environment'].get('load_average_at_end')}"]
    s = r.get("setup", {})
    out.append(f"private clone at HEAD {s.get('head', '')[:10]} ({s.get('files_at_head')} files)")
    if "sample" in r:
        st = r["sample"]["stats"]
        out.append(f"sample: {st.get('sampled')} of {st.get('pool')} non-test Python functions/"
                   f"methods (seed {cfg.get('seed')}; {st.get('candidates')} in defs; left out: "
                   + ", ".join(f"{k} {v}" for k, v in st.items()
                               if k not in ("candidates", "pool", "sampled")) + ")")
    if "callers" in r:
        out += ["", *render_callers(r["callers"], cfg.get("examples", 4))]
    if "cochange" in r:
        out += ["", *render_cochange(r["cochange"])]
    if "structure" in r:
        out += ["", *render_structure(r["structure"])]
    if "blast" in r:
        b = r["blast"]
        out += ["", "4. blast latency (depth 2)",
                f"in process, warm (second pass over {b['queries']} sampled functions): "
                f"p50 {_t(b['p50'])}, p95 {_t(b['p95'])}, max {_t(b['max'])}; dependents per "
                f"query median {b['dependents_median']}, max {b['dependents_max']}; hidden "
                f"coupling median {b['hidden_median']}"
                + (f"; failures {b['failures']}" if b["failures"] else ""),
                f"cortex blast PATH::QUALNAME --json (child process, {b['cli_queries']} queries):"
                f" p50 {_t(b['cli_p50'])}, p95 {_t(b['cli_p95'])} (cortex --version: "
                f"{_t(b['cortex_version_seconds'])})"]
    return "\n".join(out)


def render_callers(c: dict, examples: int) -> list[str]:
    a, t, d = c["agreement"], c["timing"], c["disagreements"]
    out = ["1. callers() against Jedi's get_references (Jedi = reference; pairs = (path, "
           "enclosing definition))",
           f"functions compared: {a['functions']}" + (f"; failures: {a['failures']}"
                                                      if a["failures"] else "")]
    out.append(bl.table([
        ["all", str(a["pairs_cortex"]), str(a["pairs_jedi"]), str(a["pairs_both"]),
         _f(a["precision"]), _f(a["recall"])],
        [f"confidence >= {HIGH_CONFIDENCE}", str(a["pairs_conf_high"]), "", "",
         _f(a["precision_conf_high"]), _f(a["recall_conf_high_only"])],
        [f"confidence < {HIGH_CONFIDENCE}", str(a["pairs_conf_low"]), "", "",
         _f(a["precision_conf_low"]), ""],
        ["Jedi pairs with a call site", "", str(a["pairs_jedi_with_call"]), "", "",
         _f(a["recall_call_sites"])],
        ["baseline: git grep -w NAME", str(a.get("grep_pairs", "")), "", "",
         _f(a.get("grep_precision")), _f(a.get("grep_recall"))],
    ], ["", "cortex pairs", "jedi pairs", "both", "precision", "recall"]))
    out.append("Cortex pairs by the confidence of their best edge: " + "; ".join(
        f"{k}: {v['in_jedi']}/{v['pairs']} in Jedi's" for k, v in a["by_confidence"].items()))
    out.append(f"identical sets: {a['functions_identical']} functions; no Jedi reference: "
               f"{a['functions_no_jedi_refs']}; no Cortex caller: "
               f"{a['functions_no_cortex_callers']}; Cortex items whose scope differs from the "
               f"defs-table mapping: {a['cortex_items_scope_differs_from_defs_mapping']}")
    out.append(f"time per query: Jedi p50 {_t(t['jedi_p50'])} (p95 {_t(t['jedi_p95'])}, first "
               f"{_t(t['jedi_first_query'])}); callers() in process p50 {_t(t['cortex_p50'])} "
               f"(p95 {_t(t['cortex_p95'])}); Jedi/Cortex at p50: "
               + (f"{t['jedi_p50'] / t['cortex_p50']:.0f}x" if t["jedi_p50"] and t["cortex_p50"]
                  else "-"))
    for side, title in (("cortex_only", "Cortex only (not in Jedi's references)"),
                        ("jedi_only", "Jedi only (missed by Cortex)")):
        items = d[side]
        out.append(f"{title}: {d[side + '_total']} pairs, {len(items)} classified")
        kinds = Counter(i["kind"] for i in items)
        for kind, n in kinds.most_common():
            out.append(f"  {n:3d}  {kind}")
            for ex in [i for i in items if i["kind"] == kind][:examples]:
                extra = ""
                if "confidence" in ex:
                    extra += f" conf {ex['confidence']}"
                if "jedi_goto" in ex:
                    extra += f"; Jedi -> {ex['jedi_goto']}"
                if "cortex_ref" in ex:
                    cr = ex["cortex_ref"]
                    extra += f"; cortex ref {cr['kind']} {cr['status']}" + (
                        f" -> {', '.join(cr['edges'][:2])}" if cr["edges"] else "")
                out.append(f"         {ex['target']} <- {ex['site']}{extra}: {ex['text'][:90]}")
    return out


def render_cochange(c: dict) -> list[str]:
    out = [f"2. time-split co-change prediction: split {c['split'][:10]} ({c['split_date'][:10]}"
           f", first-parent {c['split_position']}/{c['first_parent_length']}); "
           f"{c['files_at_split']} files at the split ({c['structure_files_at_split']} with "
           f"structure); index in {_t(c['index_seconds'])}",
           f"later first-parent non-merge commits: {c['commits_after_split']}; examined "
           f"{c['commits_examined']}, used {c['commits_used']} (skipped: {c['skipped']})"]
    rows = []
    for label, data in [("all", c["overall"]), *c["by_query_file"].items()]:
        for name in ("cochange", "structure", "fused"):
            rows.append([label if name == "cochange" else "", str(data["queries"])
                         if name == "cochange" else "", name,
                         _f(data[name]["recall_at_10"]), _f(data[name]["mrr"])])
    out.append(bl.table(rows, ["queries (commit, F)", "n", "ranker", "Recall@10", "MRR"]))
    out.append(f"fused beats both single signals on Recall@10 and MRR: "
               f"{'yes' if c['fused_beats_both'] else 'NO'}; per query (reciprocal rank): "
               + ", ".join(f"{k} {v}" for k, v in sorted(c["paired_rr"].items())))
    alt = c.get("diagnostic_alternatives") or {}
    if alt:
        out.append("diagnostic, not Cortex's ranking (the same s and c recombined here), all "
                   "queries: " + "; ".join(f"{k}: R@10 {_f(v['recall_at_10'])}, MRR "
                                          f"{_f(v['mrr'])}" for k, v in alt.items()))
    out.append(f"queries on files with structure: candidates with structure s >= 0.9 per query "
               f"median {c['structure_ge_0_9_median']}, mean {c['structure_ge_0_9_mean']:.1f}; "
               f"with fused score >= 0.99 mean {c['fused_ge_0_99_mean']:.1f} (above every partner "
               f"whose co-change confidence is below 0.99)")
    out.append(f"fused_related per query: p50 {_t(c['fused_related_p50'])}, p95 "
               f"{_t(c['fused_related_p95'])}")
    if c["worse_examples"]:
        out.append(f"queries where fused ranks the first gold file lower than the better single "
                   f"signal: {c['fused_worse_than_best_single']}; the largest drops:")
        for q in c["worse_examples"][:8]:
            out.append(f"  {q['commit'][:10]} {q['file']} (gold {len(q['gold'])}): first gold "
                       f"rank co-change {q['cochange']['first_gold_rank']}, structure "
                       f"{q['structure']['first_gold_rank']}, fused "
                       f"{q['fused']['first_gold_rank']}; fused top 3: "
                       f"{', '.join(q['fused']['top3'])}")
    return out


def render_structure(s: dict) -> list[str]:
    out = ["3. structure pass: time and memory"]
    f = s.get("full_index")
    if f:
        sm = f["summary"]
        out.append(f"full `{f['command']}`: {_t(f['seconds'])} wall, {f['cpu_seconds']:.1f} s "
                   f"CPU, peak {f.get('tree_measure') or 'RSS'} of the tree "
                   f"{(f['tree_peak_kib'] or 0) / 1024:.0f} MiB (largest process RSS "
                   f"{f['max_rss_kib'] / 1024:.0f} MiB), database {bl.fmt_bytes(f['db_bytes'])};"
                   f" {sm.get('new_commits')} commits, structure files read "
                   f"{sm.get('structure_files_read')}")
    a = s.get("alone")
    if a:
        b = a["best"]
        share = (f" = {b['seconds'] / f['seconds']:.0%} of the full index" if f else "")
        out.append(f"structure pass alone (child process, store emptied of structure, best of "
                   f"{len(a['runs'])}): {_t(b['seconds'])}{share}; resolve_refs "
                   f"{_t(b['resolve_seconds'])}, reading + extraction "
                   f"{_t(b['seconds'] - b['resolve_seconds'])}; {b['files_read']} files, "
                   f"{b['refs_resolved']} references resolved")
        out.append(f"  memory: RSS {b['rss_before_kib'] / 1024:.0f} MiB before the pass, peak "
                   f"during it {b['peak_kib'] / 1024:.0f} MiB"
                   + ("" if b["peak_reset"] else " (peak not reset: includes startup)")
                   + f", {b['rss_after_kib'] / 1024:.0f} MiB after; tables {b['tables']}")
        if b.get("one_file"):
            o = b["one_file"]
            out.append(f"  one file modified in the working tree: {_t(o['seconds'])} (resolve_refs "
                       f"{_t(o['resolve_seconds'])}, {o['files_read']} file read, "
                       f"{o['refs_resolved']} references resolved again)")
        out.append(f"  no-op pass (nothing changed): {_t(b['noop_seconds'])} (resolve_refs "
                   f"{_t(b['noop_resolve_seconds'])}, {b['noop_refs_resolved']} references "
                   f"resolved again, {b['noop_files_read']} files read)")
        rows = [[x["language"], str(x["files"]), str(x["refs"]), _f(x["rate"], 3),
                 str(x.get("ambiguous")), str(x.get("external")), str(x.get("unresolved"))]
                for x in a["languages"]]
        if rows:
            out.append(bl.table(rows, ["language", "files", "refs", "resolved", "ambiguous",
                                       "external", "unresolved"]))
    u = s.get("updates")
    if u:
        out.append(f"no-op `cortex index --model none`: best {_t(min(u['noop_seconds']))} "
                   f"(structure files read {u.get('noop_structure_files_read')})")
        if u.get("updates"):
            ts = [x["seconds"] for x in u["updates"]]
            out.append(f"one-file update (a function appended to {u['file']}, committed): best "
                       f"{_t(min(ts))}, median {_t(statistics.median(ts))}; structure files "
                       f"read {[x['structure_files_read'] for x in u['updates']]}")
    return out
