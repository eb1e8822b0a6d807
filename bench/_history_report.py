"""bench_history.py's report: the timings against git, the agreement of commit sets (all functions
and by cross-file moves), the differences by kind, the weak links, and the text of the report.
"""

from __future__ import annotations

import _benchlib as bl
import _linelog as ll
from _history_explain import KINDS, Explainer
from _history_model import WEAK_LINK, Func


def timings(funcs: list[Func]) -> dict:
    out = ll.speed_summary({key: [getattr(f, attr) for f in funcs] for key, attr in (
        ("git_log_L", "git_seconds"), ("cortex_subprocess", "cli_seconds"),
        ("cortex_in_process", "inproc_seconds"))}, "git_log_L")
    out["goals"] = {
        "subprocess_beats_git_p50": out["cortex_subprocess"]["git_over_this"]["p50"] > 1,
        "subprocess_beats_git_every_function":
            out["cortex_subprocess"]["git_over_this"]["per_function_min"] > 1,
        "in_process_100x_p50": out["cortex_in_process"]["git_over_this"]["p50"] >= 100,
    }
    return out


def agreement(funcs: list[Func], explainer: Explainer, log):
    per_function = []
    items: list[dict] = []
    links: list[dict] = []
    counts, moved = [], []
    for fn in funcs:
        g, c = set(fn.git_shas), set(fn.cortex_shas)
        common = len(g & c)
        row = {"function": fn.label, "git": len(g), "cortex": len(c), "common": common,
               "git_seconds": fn.git_seconds, "cortex_subprocess_seconds": fn.cli_seconds,
               "cortex_in_process_seconds": fn.inproc_seconds, "differences": []}
        lineage = explainer.lineage(fn.symbol_id)
        row["links"] = explainer.links(fn, lineage)
        links.extend(dict(link, function=fn.label) for link in row["links"])
        if g != c:
            git_view = explainer.git_patch(fn)
            for sha, by in [(s, "git") for s in fn.git_shas if s not in c] + \
                           [(s, "cortex") for s in fn.cortex_shas if s not in g]:
                try:
                    item = explainer.explain(fn, lineage, sha, by, git_view)
                except Exception as exc:  # noqa: BLE001 - report it, keep going
                    item = {"function": fn.label, "sha": sha, "listed_by": by,
                            "subject": explainer.subject.get(sha, "?"),
                            "kind": f"unexplained-{by}", "why": f"explainer failed: {exc!r}"}
                items.append(item)
                row["differences"].append({k: item[k] for k in ("sha", "listed_by", "kind")})
        merge_shas = {d["sha"] for d in row["differences"] if d["kind"] == "git-merge"}
        counts.append(ll.set_counts(g, c, len(merge_shas)))
        # Moves between files: whole-file renames (git follows them too) and cross-file moves,
        # which git -L cannot follow; their commits from the (newest) move on are scored apart.
        row["moves"] = explainer.moves(lineage)
        cross = [m for m in row["moves"] if not m["file_rename"]]
        row["cross_file_move"] = bool(cross)
        if cross:
            since = cross[0]["seq"]
            keep = {s for s in g | c if explainer.seq.get(s, -1) >= since}
            moved.append((len(counts) - 1,
                          ll.set_counts(g & keep, c & keep, len(merge_shas & keep))))
        per_function.append(row)
        if g != c:
            log(f"explained {len(row['differences'])} differences of {fn.label}")
    agreement_ = {
        **ll.set_scores(counts),
        "git_only": sum(1 for i in items if i["listed_by"] == "git"),
        "lineage_links": len(links),
        "weak_links": [l for l in links if l["similarity"] is not None
                       and l["similarity"] < WEAK_LINK],
        "unmeasured_links": [l for l in links if l["similarity"] is None],
        "cortex_only": sum(1 for i in items if i["listed_by"] == "cortex"),
    }
    moved_ids = {i for i, _ in moved}
    agreement_["moves"] = {
        "functions_with_cross_file_move": len(moved),
        "functions_with_file_rename_only": sum(
            1 for r in per_function if r["moves"] and not r["cross_file_move"]),
        "cross_file_links": sum(1 for r in per_function for m in r["moves"]
                                if not m["file_rename"]),
        "file_rename_links": sum(1 for r in per_function for m in r["moves"] if m["file_rename"]),
        "all": ll.set_scores(counts),
        "without_cross_file_moves": ll.set_scores([x for i, x in enumerate(counts)
                                                   if i not in moved_ids]),
        "cross_file_moved": ll.set_scores([counts[i] for i in moved_ids]),
        "cross_file_moved_since_move": ll.set_scores([x for _, x in moved]),
    }
    kinds: dict[str, dict] = {}
    for item in items:
        k = kinds.setdefault(item["kind"], {
            "listed_by": KINDS.get(item["kind"], ("?",))[0],
            "bug": KINDS.get(item["kind"], ("", "?"))[1],
            "meaning": KINDS.get(item["kind"], ("", "", "?"))[2],
            "count": 0, "functions": set(), "items": []})
        k["count"] += 1
        k["functions"].add(item["function"])
        k["items"].append(item)
    for k in kinds.values():
        k["functions"] = len(k["functions"])
    differences = dict(sorted(kinds.items(), key=lambda kv: -kv[1]["count"]))
    return agreement_, differences, per_function


def render(report: dict, examples: int) -> str:
    out = ["cortex history vs git log -L", "=" * 28, *bl.environment_lines(report["environment"])]
    idx = report["index"]
    if idx.get("seconds") is not None:
        out.append(f"index built for this run in {bl.fmt_seconds(idx['seconds'])}")
    s = report["sample"]
    tests = f" ({s['in_test_files']} in _test.go files)" if "in_test_files" in s else ""
    out.append(f"sample: {s['taken']} functions{tests} of {s['candidates']} candidates "
               f"(seed {report['config']['seed']}); skipped while sampling: "
               + (", ".join(f"{v} {k}" for k, v in s["skipped"].items() if v) or "none"))
    t = report["timings"]
    out += ["", "Speed (baseline: git log -L in the same run; ratio = git time / cortex time)"]
    out.append(ll.speed_table(t, (("git_log_L", "git log -L -s (baseline)"),
                                  ("cortex_subprocess", "cortex history --json (subprocess)"),
                                  ("cortex_in_process", "history() in process, warm"))))
    g = t["goals"]
    sub = t["cortex_subprocess"]["git_over_this"]
    out.append(f"goal: subprocess beats git -L: {'yes' if g['subprocess_beats_git_p50'] else 'NO'}"
               f" at p50; faster on {sub['functions_faster_than_git']}/{s['taken']} functions")
    out.append(f"goal: in process >= 100x faster than git -L (p50): "
               f"{'yes' if g['in_process_100x_p50'] else 'NO'}")
    if not report["in_process_matches_subprocess"]:
        out.append(f"WARNING: in-process and subprocess answers differ for "
                   f"{report['in_process_mismatches']}")
    a = report["agreement"]
    out += ["", "Agreement (reference: git log -L; precision = cortex commits git also lists, "
            "recall = git commits cortex also lists)"]
    out.append(bl.table([
        *([label, value] for label, value in ll.score_rows(a)),
        ["listed by git only / cortex only", f"{a['git_only']} / {a['cortex_only']}"],
    ], ["", ""]))
    weak, unmeasured = a["weak_links"], a["unmeasured_links"]
    out.append(f"rename/move links cortex followed for these functions: {a['lineage_links']}; "
               f"with text similarity < {WEAK_LINK}: {len(weak)}"
               + (f"; not measurable: {len(unmeasured)}" if unmeasured else ""))
    for link in weak + unmeasured:
        sim = "?" if link["similarity"] is None else f"{link['similarity']:.2f}"
        out.append(f"  {link['sha'][:10]} {link['change']} {link['from']} -> {link['to']} "
                   f"(similarity {sim}) {bl.clip(link['subject'], 50)!r}")
    m = a.get("moves")
    if m:
        out += ["", f"Functions moved between files: {m['functions_with_cross_file_move']} of "
                f"{a['functions']} have a cross-file move in cortex's lineage "
                f"({m['cross_file_links']} links), which git -L cannot follow (its range ends "
                f"there); {m['functions_with_file_rename_only']} more moved only with whole-file "
                f"renames, which git follows too ({m['file_rename_links']} such links in all)"]
        cols = [(f"all {m['all']['functions']}", m["all"]),
                (f"without the {m['functions_with_cross_file_move']} moved",
                 m["without_cross_file_moves"]),
                ("moved", m["cross_file_moved"]), ("moved, from the move on",
                                                   m["cross_file_moved_since_move"])]
        table = [ll.score_rows(v) for _, v in cols]
        out.append(bl.table([[row[0], *(t[i][1] for t in table)] for i, row in enumerate(table[0])],
                            ["", *(c for c, _ in cols)]))
        groups: dict[tuple, list[str]] = {}  # the cross-file moves, by commit and files
        for row in report["functions"]:
            for mv in (x for x in row["moves"] if not x["file_rename"]):
                key = (mv["sha"], mv["subject"], *(x.split("::")[0] for x in (mv["from"], mv["to"])))
                groups.setdefault(key, []).append(mv["from"].split("::", 1)[1])
        for (sha, subject, a, b), names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            out.append(f"  {sha[:10]} {a} -> {b} {bl.clip(subject, 50)!r}: {len(names)} "
                       f"function(s), {', '.join(names[:3])}{', ...' if len(names) > 3 else ''}")
    d = report["differences"]
    out += ["", "Differences by kind (each: one commit of one function; see the script's "
            "docstring)"]
    out.append(bl.table([[k, v["listed_by"], v["bug"], str(v["count"]), str(v["functions"]),
                          v["meaning"]] for k, v in d.items()],
                        ["kind", "listed by", "bug?", "commits", "functions", "meaning"]))
    for kind, v in d.items():
        out += ["", f"{kind} ({v['count']}):"]
        seen = set()
        shown = 0
        for item in v["items"]:  # prefer examples from different functions
            if item["function"] in seen and len(seen) < v["functions"]:
                continue
            seen.add(item["function"])
            out.append(f"  {item['sha'][:10]} {bl.clip(item['subject'], 60)!r}")
            out.append(f"      {item['function']}: {item['why']}")
            shown += 1
            if shown >= examples:
                break
    bugs = [(k, v) for k, v in d.items() if v["bug"] in ("BUG", "?", "gap")]
    total = sum(v["count"] for v in d.values())
    explained = sum(v["count"] for v in d.values() if v["bug"] == "no")
    out += ["", f"Of the {total} differences, {explained} are explained by how each tool defines "
            f"a function's history (by design) or by git -L's line tracking; "
            f"{total - explained} point at cortex (BUG, gap) or are unexplained."]
    out += ["", "Possible cortex bugs / unexplained: " +
            (", ".join(f"{k} x{v['count']}" for k, v in bugs) if bugs else "none")]
    return "\n".join(out)
