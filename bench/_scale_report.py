"""bench_scale.py's report: the in-process query times summarized, and the text of the report."""

from __future__ import annotations

import _benchlib as bl


def _stats(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"n": len(values), "p50": bl.percentile(values, 50), "p95": bl.percentile(values, 95),
            "max": max(values)}


def summarize_queries(q: dict | None, g: dict) -> dict:
    out = {"blame": _stats(g["blame_seconds"]), "log_l": _stats(g["log_l_seconds"]),
           "functions_without_definition_line": g["no_definition"]}
    if q is None:
        return out
    out.update(hover=_stats(q["hover_seconds"]), lens=_stats(q["lenses_seconds"]),
               lens_title=_stats(q["lens_title_seconds"]), lenses=q["lenses"], files=q["files"],
               hover_kinds={k: q["hover_kinds"].count(k) for k in set(q["hover_kinds"])})
    if out["hover"] and out["blame"]:
        out["blame_p95_over_hover_p95"] = out["blame"]["p95"] / out["hover"]["p95"]
    if out["hover"] and out["log_l"]:
        out["log_l_p95_over_hover_p95"] = out["log_l"]["p95"] / out["hover"]["p95"]
    return out


def render(r: dict) -> str:
    s, env = r["setup"], r["environment"]
    out = ["cortex at scale", "=" * 15, *bl.environment_lines(env)]
    if "cut_commit" in s:
        out.append(f"cut: {s['cut']} at {s['cut_commit'][:10]} (of {s['original_commits']} "
                   f"commits, {s['original_first_parent_commits']} first-parent)")
    out.append(f"indexed: {s['commits']} commits ({s['non_merge_commits']} non-merge, "
               f"{s['first_parent_commits']} first-parent), {s['first_commit_date']} to "
               f"{s['head_date']}, {s['files_at_head']} files at HEAD; jobs: {s['jobs']}")
    if s.get("settings"):
        out.append("settings (the clone's .cortex/config.toml): "
                   + "; ".join(line for line in s["settings"].splitlines() if line))
    if "full_index" not in r:
        return "\n".join(out + _first_hover_lines(r.get("first_hover")))
    g, f = r["git_log_p"], r["full_index"]
    peak = f["memory"]["peak"]
    out += ["", "Full index (wall; CPU = the process and its reaped workers)",
            bl.table([["git log -p --no-merges > /dev/null (best)",
                       bl.fmt_seconds(g["seconds_best"]), f"{g['cpu_seconds']:.1f} s", "1.00x",
                       bl.mib(g["max_rss_kib"])],
                      [f["command"], bl.fmt_seconds(f["seconds"]), f"{f['cpu_seconds']:.1f} s",
                       f"{f['over_git_log_p']:.2f}x",
                       bl.mib(peak["total_kib"])]],
                     ["", "wall", "CPU", "/ git", "peak memory"]),
            f"peak of the tree (PSS, sampled every 100 ms): {bl.mib(peak['total_kib'])} at "
            f"{peak.get('at_s', 0):.0f} s of {f['seconds']:.0f} s — main process "
            f"{bl.mib(peak.get('main_kib'))}, {peak.get('processes', 1) - 1} workers "
            f"{bl.mib(peak.get('others_kib'))}; largest single process (VmHWM) "
            f"{bl.mib(f['largest_process_peak_rss_kib'])}"]
    procs = f["memory"]["processes"]
    if procs:
        out.append("per process (VmHWM): " + ", ".join(
            f"{p['role']} {bl.mib(p['peak_rss_kib'])}" for p in procs[:6]))
    tl = f["memory"]["timeline"]
    if tl:
        marks = [tl[int(k * (len(tl) - 1) / 4)] for k in range(5)]
        out.append("timeline main/others: " + ", ".join(
            f"{m['s']:.0f} s {m['main_kib'] / 1024:.0f}/{m['others_kib'] / 1024:.0f} MiB"
            for m in marks))
    st = r["store"]
    out += ["", f"Store: {bl.fmt_bytes(st['bytes'])} ({st['over_git_log_p_bytes']:.2f}x the "
            f"bytes of git log -p's output, {bl.fmt_bytes(g['bytes'])}; "
            f"{st['bytes_per_non_merge_commit'] / 1024:.1f} KiB per non-merge commit)"]
    q = r["queries"]
    rows = []
    for key, label in (("hover", "hover (in process: locate + hover)"),
                       ("lens", "code lens (queries.lenses per file)"),
                       ("lens_title", "code lens title (per lens)"),
                       ("blame", "git blame -L n,n --porcelain (process)"),
                       ("log_l", "git log -L :RE:FILE (process)")):
        x = q.get(key)
        if x:
            rows.append([label, str(x["n"]), bl.fmt_seconds(x["p50"]), bl.fmt_seconds(x["p95"]),
                         bl.fmt_seconds(x["max"])])
    out += ["", "Sampled functions (one per file)", bl.table(rows, ["", "n", "p50", "p95", "max"])]
    if "blame_p95_over_hover_p95" in q:
        out.append(f"p95 ratios: git blame / hover {q['blame_p95_over_hover_p95']:.0f}x"
                   + (f", git log -L / hover {q['log_l_p95_over_hover_p95']:.0f}x"
                      if "log_l_p95_over_hover_p95" in q else "")
                   + f"; hover kinds {q.get('hover_kinds')}")
    u = r["update"]
    out += ["", f"One new commit: cortex index {bl.fmt_seconds(u['seconds_best'])} (best of "
            f"{len(u['seconds_all'])}, CPU {u['cpu_seconds']:.2f} s, {u['new_commits']} new "
            f"commit, tree peak {bl.mib(u['tree_peak_kib'])}); git log -p -1 "
            f"{bl.fmt_seconds(u['git_log_p_one_commit_seconds'])}"]
    out += _first_hover_lines(r.get("first_hover"))
    return "\n".join(out)


def _first_hover_lines(fh: dict | None) -> list[str]:
    out: list[str] = []
    if fh and "seconds" in fh:
        m = fh["memory"]["peak"]
        out += ["", f"First hover, language server on the clone with no index "
                f"({fh['path']}:{fh['line']}): {bl.fmt_seconds(fh['seconds'])} after start "
                f"({fh['attempts']} attempts; "
                + ("index still building" if fh["partial"] else "index done")
                + (", names the newest commit" if fh.get("names_newest_commit")
                   else ", without the newest commit")
                + "); the server's index run ended at "
                + (bl.fmt_seconds(fh["index_run_seconds"]) if fh["index_run_seconds"] else "?")
                + f"; peak of its indexer and workers {bl.mib(m['total_kib'])}"]
    elif fh:
        why = fh.get("skipped") or fh.get("error") or "no answer before the deadline"
        out += ["", f"First hover: {why}"]
    return out
