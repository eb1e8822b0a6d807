"""bench_lsp.py's report: the summary of the round trips, memory and in-process times against the
goals, and its text."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import _benchlib as bl

TARGET_P95 = 0.030          # seconds: the goal for hover and code lens
SEARCH_P95 = 0.050          # seconds: issue 18's goal for cortex/search


def stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": bl.percentile(values, 50), "p95": bl.percentile(values, 95),
            "p99": bl.percentile(values, 99), "max": max(values), "min": min(values),
            "mean": statistics.fmean(values)}


def summarize(report: dict, run: dict, blame: dict, inproc: dict | None) -> None:
    hovers = run["hovers"]
    h_all = [h["seconds"] for h in hovers]
    by_kind = {k: [h["seconds"] for h in hovers if h["kind"] == k]
               for k in ("symbol", "line", "none", "other")}
    lens = [r["seconds"] for r in run["lens_requests"]]
    resolve = [r["seconds"] for r in run["resolve_requests"]]
    report["server"] = {k: run[k] for k in (
        "command", "initialization_options", "initialize_seconds", "index_run",
        "server_exit_code")}
    ix = run["children"]["indexer"]
    report["memory"] = {
        "server_rss_after_initialize_kib": run["rss_after_initialize_kib"],
        "server_rss_after_index_kib": run["rss_after_index_kib"],
        "server_rss_after_open_and_warmup_kib": run["rss_after_open_and_warmup_kib"],
        "server_rss_after_hovers_kib": run["rss_after_hovers_kib"],
        "server_rss_after_lenses_kib": run["rss_after_lenses_kib"],
        "server_peak_rss_kib": run["hwm_at_end_kib"],
        "indexer_peak_rss_kib": ix and ix["peak_rss_kib"],
        "indexer_samples": ix and ix["samples"],
        "indexer_cmdline": ix and ix["cmdline"],
        "largest_other_descendant": next((p for p in run["children"]["processes"]
                                          if p is not ix), None),
        "descendants_seen": len(run["children"]["processes"]),
        "children_peak_pss_sum_kib": run["children"]["peak_tree_pss_kib"],
        "children_peak_processes": run["children"]["peak_tree_processes"],
        "children": run["children"]["processes"],
        "sampling": f"/proc every {run['children']['interval_seconds'] * 1000:.0f} ms from "
                    "server start to cortex/indexUpdated",
    }
    report["hover"] = {"all": stats(h_all), **{k: stats(v) for k, v in by_kind.items() if v},
                       "protocol_floor": {**stats(run["floor"]),
                                          "non_null_answers": run["floor_answers"]},
                       "by_position": {w: stats([h["seconds"] for h in hovers if h["where"] == w])
                                       for w in ("function", "class", "outside")},
                       "result_kinds": {k: len(v) for k, v in by_kind.items()},
                       "mean_chars": statistics.fmean(h["chars"] for h in hovers)}
    titles = [r["title"] for r in run["resolve_requests"] if r["title"]]
    report["code_lens"] = {
        "codeLens": stats(lens), "codeLens/resolve": stats(resolve),
        "lenses_first_pass": sum(run["lenses_per_file"].values()),
        "files_with_lenses": sum(1 for n in run["lenses_per_file"].values() if n),
        "files": len(run["lenses_per_file"]),
        "lenses_per_file": run["lenses_per_file"],
        "resolve_titles_sample": titles[:5],
        "empty_resolves": len(resolve) - len(titles)}
    searched = run.get("searches") or []
    report["search"] = {**stats([q["seconds"] for q in searched]),
                        "modes": sorted({str(q["mode"]) for q in searched}),
                        "semantic": all(q["semantic"] for q in searched) if searched else None}
    report["goals"] = {"hover_p95_under_30ms": stats(h_all)["p95"] < TARGET_P95,
                       "search_p95_under_50ms": bool(searched)
                       and report["search"]["p95"] < SEARCH_P95,
                       "codeLens_p95_under_30ms": bool(lens) and stats(lens)["p95"] < TARGET_P95,
                       "codeLens_resolve_p95_under_30ms":
                           bool(resolve) and stats(resolve)["p95"] < TARGET_P95}
    rows = blame.get("rows") or []
    if rows:
        g = [r["seconds"] for r in rows]
        paired = [r["hover_seconds"] for r in rows]
        per = [r["seconds"] / r["hover_seconds"] for r in rows]
        line_rows = [r for r in rows if r["line_hover_names_blame_commit"] is not None]
        gs, hs = stats(g), stats(h_all)
        report["git_blame"] = {
            "command": "git -C CLONE blame -L n,n --porcelain -- FILE (process start included)",
            "seconds": gs, "same_positions_hover": stats(paired),
            "ratio_p50": bl.ratio(gs["p50"], hs["p50"]),
            "ratio_p95": bl.ratio(gs["p95"], hs["p95"]),
            "ratio_p50_same_positions": bl.ratio(gs["p50"], stats(paired)["p50"]),
            "ratio_per_position": {"median": bl.percentile(per, 50), "min": min(per),
                                   "max": max(per)},
            "line_hovers": len(line_rows),
            "line_hovers_naming_blame_commit": sum(1 for r in line_rows
                                                   if r["line_hover_names_blame_commit"]),
            "line_hovers_differing": [
                {"path": r["path"], "line": r["line"], "git_blame": r["sha"][:10]}
                for r in line_rows if not r["line_hover_names_blame_commit"]][:10],
            "rows": rows}
    slow_n = 8
    slowest = sorted(range(len(hovers)), key=lambda i: -hovers[i]["seconds"])[:slow_n]
    if inproc:
        rows_ip = inproc["rows"]
        tot = [r["total"] for r in rows_ip]
        report["in_process"] = {
            "hover_total": stats(tot),
            "locate": stats([r["locate"] for r in rows_ip]),
            "hover_query": stats([r["hover"] for r in rows_ip]),
            "by_position": {w: stats([r["total"] for r in rows_ip if r["where"] == w])
                            for w in ("function", "class", "outside")},
            "identical_hover_texts": inproc["identical_texts"],
            "overhead_p50": stats(h_all)["p50"] - stats(tot)["p50"],
            "overhead_per_request_median": bl.percentile(
                [h["seconds"] - r["total"] for h, r in zip(hovers, rows_ip)], 50),
            "lenses": stats(inproc["lenses_seconds"]),
            "lens_title": stats(inproc["lens_title_seconds"])}
        slowest_ip = sorted(range(len(rows_ip)), key=lambda i: -rows_ip[i]["total"])[:slow_n]
        report["in_process"]["slowest"] = [
            {"path": hovers[i]["path"], "line": hovers[i]["line"], "kind": rows_ip[i]["kind"],
             "in_process": rows_ip[i]["total"], "round_trip": hovers[i]["seconds"]}
            for i in slowest_ip]
    report["slowest_hovers"] = [
        {"path": hovers[i]["path"], "line": hovers[i]["line"], "kind": hovers[i]["kind"],
         "round_trip": hovers[i]["seconds"],
         "in_process": inproc["rows"][i]["total"] if inproc else None,
         "order": i} for i in slowest]
    report["slowest_resolves"] = sorted(
        ({"path": r["path"], "qualname": r["qualname"], "seconds": r["seconds"],
          "title": r["title"]} for r in run["resolve_requests"]),
        key=lambda r: -r["seconds"])[:5]
    report["slowest_code_lens"] = sorted(run["lens_requests"], key=lambda r: -r["seconds"])[:5]
    report["requests"] = [{k: h[k] for k in ("path", "line", "where", "kind", "seconds", "chars")}
                          for h in hovers]


def _ms(s: float | None) -> str:
    return "-" if s is None else bl.fmt_seconds(s)


def _mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:.0f} MiB"


def render(r: dict) -> str:
    out = ["cortex-ls hover and code lens latency", "=" * 37,
           *bl.environment_lines(r["environment"])]
    dirty_ls = r["environment"]["cortex"].get("cortex_ls_uncommitted")
    if dirty_ls:
        out.append(f"uncommitted edits in cortex_ls/: {', '.join(dirty_ls)}")
    s, sv, pos = r["setup"], r["server"], r["positions"]
    ix = sv["index_run"]
    if s["mode"] == "copy":
        st = s["settle_run"]
        out.append(f"index: copy of {s['db_source']} ({bl.fmt_bytes(s['db_bytes'])}); settled "
                   f"with model {s['model']!r} in {bl.fmt_seconds(st['seconds'])} "
                   f"(semantic {st['semantic']}, areas {st['areas']})")
    else:
        out.append(f"index: built by the server from scratch (model {s['model']!r})")
    command = " ".join(Path(c).name if i == 0 else c for i, c in enumerate(sv["command"]))
    out.append(f"server: {command}, initialize {bl.fmt_seconds(sv['initialize_seconds'])}; "
               f"index run until cortex/indexUpdated "
               f"{bl.fmt_seconds(ix['seconds_from_initialized'])} "
               f"({ix['notification'].get('newCommits')} new commits); options "
               f"{json.dumps(sv['initialization_options'])}")
    out.append(f"positions: {pos['files']} files of {pos['eligible_files']} indexed .py files at "
               f"HEAD; {pos['measured_in_functions']} in functions, "
               f"{pos['measured_outside_symbols']} outside any symbol"
               + (f", {pos['measured_in_class_bodies']} in class bodies"
                  if pos.get("measured_in_class_bodies") else ""))

    h, c = r["hover"], r["code_lens"]
    rows = []

    def row(name, st, note=""):
        if st.get("n"):
            rows.append([name, str(st["n"]), _ms(st["p50"]), _ms(st["p95"]), _ms(st["p99"]),
                         _ms(st["max"]), note])
    row("hover (all)", h["all"], "goal p95 < 30 ms: " + ("yes" if r["goals"]["hover_p95_under_30ms"]
                                                         else "NO"))
    bp = h["by_position"]
    row("  in functions: symbol card", bp["function"])
    row("  class lines: class card", bp["class"])
    row("  outside symbols: line's commit", bp["outside"])
    row("  no hover", h.get("none", {}))
    row("hover outside any repository", h["protocol_floor"], "protocol floor: no query")
    row("textDocument/codeLens", c["codeLens"],
        "goal: " + ("yes" if r["goals"]["codeLens_p95_under_30ms"] else "NO"))
    row("codeLens/resolve", c["codeLens/resolve"],
        "goal: " + ("yes" if r["goals"]["codeLens_resolve_p95_under_30ms"] else "NO"))
    if r["search"].get("n"):
        row("cortex/search (" + "/".join(r["search"]["modes"]) + ")", r["search"],
            "goal p95 < 50 ms: " + ("yes" if r["goals"]["search_p95_under_50ms"] else "NO"))
    g = r.get("git_blame")
    if g:
        row("git blame -L n,n --porcelain", g["seconds"], "subprocess")
    out += ["", "Round trips (client side, one request at a time)", bl.table(
        rows, ["", "n", "p50", "p95", "p99", "max", ""])]
    out.append(f"lenses: {c['lenses_first_pass']} on {c['files_with_lenses']} of {c['files']} "
               f"files (first pass); titles e.g. {c['resolve_titles_sample'][:2]}")
    if g:
        out.append(f"git blame / hover: p50 {g['ratio_p50']:.1f}x, p95 {g['ratio_p95']:.1f}x; "
                   f"per position median {g['ratio_per_position']['median']:.1f}x "
                   f"(min {g['ratio_per_position']['min']:.1f}x); line hovers naming git blame's "
                   f"commit: {g['line_hovers_naming_blame_commit']}/{g['line_hovers']}")
    ip = r.get("in_process")
    if ip:
        out += ["", "In process, same positions (cortex_ls.queries on a reader, warm)"]
        out.append(bl.table([
            ["locate + hover", _ms(ip["hover_total"]["p50"]), _ms(ip["hover_total"]["p95"]),
             _ms(ip["hover_total"]["max"])],
            ["  locate (cursor, live symbols)", _ms(ip["locate"]["p50"]), _ms(ip["locate"]["p95"]),
             _ms(ip["locate"]["max"])],
            *([label, _ms(st["p50"]), _ms(st["p95"]), _ms(st["max"])]
              for label, st in (("  in functions: symbol card", ip["by_position"]["function"]),
                                ("  class lines: class card", ip["by_position"]["class"]),
                                ("  outside symbols: line's commit",
                                 ip["by_position"]["outside"]))
              if st.get("n")),
            ["lenses (per file)", _ms(ip["lenses"]["p50"]), _ms(ip["lenses"]["p95"]),
             _ms(ip["lenses"]["max"])],
            ["lens_title (per lens)", _ms(ip["lens_title"].get("p50")),
             _ms(ip["lens_title"].get("p95")), _ms(ip["lens_title"].get("max"))],
        ], ["", "p50", "p95", "max"]))
        out.append(f"protocol + threads + client, p50: {_ms(ip['overhead_p50'])} (median per "
                   f"request {_ms(ip['overhead_per_request_median'])}; floor without a query "
                   f"{_ms(h['protocol_floor']['p50'])}); hover texts identical "
                   f"to the server's: {ip['identical_hover_texts']}/{h['all']['n']}")
    m = r["memory"]
    out += ["", "Memory"]
    out.append(bl.table([
        ["server VmRSS after initialize", _mib(m["server_rss_after_initialize_kib"])],
        ["server VmRSS after the index run", _mib(m["server_rss_after_index_kib"])],
        ["server VmRSS after opening files + warm-up",
         _mib(m["server_rss_after_open_and_warmup_kib"])],
        ["server VmRSS after the hovers", _mib(m["server_rss_after_hovers_kib"])],
        ["server VmRSS after the code lenses", _mib(m["server_rss_after_lenses_kib"])],
        ["server peak (VmHWM)", _mib(m["server_peak_rss_kib"])],
        ["indexer child peak RSS (VmHWM)", _mib(m["indexer_peak_rss_kib"])
         + (f" ({m['indexer_samples']} samples)" if m["indexer_samples"] else "")],
        ["its largest worker process, peak RSS (VmHWM)",
         _mib((m["largest_other_descendant"] or {}).get("peak_rss_kib"))
         + f" ({m['descendants_seen']} descendants of the server seen)"],
        ["server's descendants, summed PSS peak", _mib(m["children_peak_pss_sum_kib"])
         + f" ({m['children_peak_processes']} processes at most)"],
    ], ["", "KiB / 1024"]))
    out += ["", "Slowest hovers (round trip; in process for the same position)"]
    out.append(bl.table([[f"{x['path']}:{x['line']}", x["kind"], _ms(x["round_trip"]),
                          _ms(x["in_process"]), str(x["order"])]
                         for x in r["slowest_hovers"]],
                        ["position", "kind", "round trip", "in process", "#"]))
    if r["slowest_resolves"]:
        x = r["slowest_resolves"][0]
        out.append(f"slowest codeLens/resolve: {_ms(x['seconds'])} {x['path']}::{x['qualname']} "
                   f"({x['title']})")
    x = r["slowest_code_lens"][0]
    out.append(f"slowest codeLens: {_ms(x['seconds'])} {x['path']} ({x['lenses']} lenses)")
    return "\n".join(out)
