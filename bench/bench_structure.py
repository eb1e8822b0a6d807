#!/usr/bin/env python3
"""Structure: callers against Jedi, co-change prediction over time, the structure pass's cost,
`blast` latency.

Works on a private clone of REPO under bench/.work/ (REPO itself is never altered), checked out at
REPO's HEAD. Four parts (`--parts`, default all):

  callers    Accuracy of `cortex_core.blast.callers` against Jedi (jedi 0.20.1, installed in the
             venv for this benchmark only). N Python functions and methods defined at HEAD are
             sampled from the store's `defs` table (kinds function/method, not in test files,
             no dunders `__x__` and no name-mangled `__x`; shuffled with --seed, keeping those
             whose `def NAME` line is found in the definition's range). For each, Jedi's
             `Script(path, project=Project(clone)).get_references(line, column)` at the
             definition's name; kept: reference sites that are not definitions, not import
             statements and not inside the definition itself. Each site, and each item of
             `callers()`, is mapped to its enclosing definition (the innermost `defs` range
             holding its line; module level if none): precision and recall of Cortex over the
             (path, qualname) pairs, micro-averaged, with Jedi as the reference; also split by
             Cortex's confidence (best edge of the pair, >= 0.9 or lower). A sample of the
             disagreements is classified automatically: at a Cortex-only site Jedi's `goto` says
             whether it finds the target too (Jedi's references miss it), another definition
             (shadowing, overrides) or nothing (dynamic receiver); at a Jedi-only site the
             store's `refs`/`edges` rows on that line say whether Cortex did not read the
             reference, left it unresolved/ambiguous, or resolved it elsewhere. Time per query:
             Jedi (Script + get_references) against `callers()` in process (after a warm-up),
             p50.
  cochange   Time-split co-change prediction. A second private clone is reset to the split
             commit (default: the commit at 80% of HEAD's first-parent history, oldest first;
             or --split SHA) and indexed in process (`index_repository(..., model="none")`).
             For each later non-merge commit of the first-parent line (oldest first) that
             changes 2-10 files existing at the split (paths in `head_files` of the split's
             index; renames count as delete + add), up to --split-commits commits, and for each
             such file F: `fused_related(TargetSpec(F), top_k=ALL, min_support=1)` (default
             depth 2 and max_changeset 30) gives one list, ranked three ways: co-change alone
             (by .cochange, zeros dropped), structure alone (by .structure, zeros dropped) and
             fused (.score, as returned); ties by path, each list cut at 200 (= top_k=200).
             Gold: the commit's other files that existed at the split. Recall@10 (gold files in
             the first 10 / gold files, mean over the (commit, F) queries) and MRR (1 / rank of
             the first gold file, 0 if none within 200). The queries where fused does worse
             than the better single signal are listed.
  structure  The structure pass's time and memory: `cortex index --rebuild --model none` as a
             child process (wall, CPU, peak PSS of the tree); then, in a child process on a copy
             of that store with `edges`, `refs`, `defs`, `struct_files` emptied (the state of a
             first index), `structure.update_structure` timed alone, with `resolve_refs` timed
             inside it and the peak RSS of the pass (VmHWM reset through /proc/self/clear_refs
             before it), then once more with nothing changed (the no-op pass); per-language
             files and resolution rates from `cortex status --json`; the no-op `cortex index`
             and a one-file update (a function appended to a sampled function's file and
             committed in the clone), each update from a copy of the store.
  blast      `blast(con, TargetSpec(path, qualname), depth=2)` in process over the sampled
             functions (one untimed pass first, then one timed pass: warm), p50/p95; and
             `cortex blast PATH::QUALNAME --json` as a child process for --cli-blast of them.

Parts callers, structure and blast share one index of the clone at HEAD (made by the structure
part's `cortex index --rebuild`, or in process without it).

Run with the venv's python: `/work/venv/bin/python bench/bench_structure.py REPO`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import _benchlib as bl
from _benchlib import copy_db, db_size, remove_db

PARTS = ("callers", "cochange", "structure", "blast")
HIGH_CONFIDENCE = 0.9
CUT = 200   # rank cut of the co-change lists (fused_related's top_k in the brief)
GIT_ID = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Structure: callers() against Jedi's references, time-split co-change "
        "prediction (co-change alone, structure alone, fused), the structure pass's time and "
        "memory, blast latency. Works on private clones under bench/.work/.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--parts", default=",".join(PARTS),
                   help=f"comma-separated subset of {','.join(PARTS)} (default: all)")
    p.add_argument("--sample", type=int, default=60,
                   help="functions sampled for callers and blast (default 60)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--split", help="split commit for the co-change part (default: 80%% of the "
                   "first-parent history)")
    p.add_argument("--split-commits", type=int, default=300,
                   help="later commits evaluated after the split (default 300)")
    p.add_argument("--classify", type=int, default=30,
                   help="disagreements classified per direction (default 30)")
    p.add_argument("--jedi-timeout", type=float, default=120.0,
                   help="seconds per Jedi query before it is given up (default 120)")
    p.add_argument("--cli-blast", type=int, default=10,
                   help="functions queried through `cortex blast` (default 10)")
    p.add_argument("--incremental-runs", type=int, default=3,
                   help="one-file updates, each from a copy of the store (default 3)")
    p.add_argument("--noop-runs", type=int, default=3, help="no-op cortex index runs (default 3)")
    p.add_argument("--structure-runs", type=int, default=1,
                   help="child processes timing the structure pass alone, best kept (default 1)")
    p.add_argument("--jobs", type=int, help="--jobs for the indexes (default: cortex's own)")
    p.add_argument("--examples", type=int, default=4,
                   help="examples printed per disagreement kind (default 4)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    args = p.parse_args(argv)
    args.parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    bad = [x for x in args.parts if x not in PARTS]
    if bad:
        p.error(f"unknown part(s) {bad}; choose from {PARTS}")
    return args


log = bl.progress


# -- stores ----------------------------------------------------------------------------------


def index_in_process(clone: Path, db: Path, jobs: int | None) -> tuple[float, object]:
    from cortex_core.config import Settings
    from cortex_core.ingest import index_repository
    start = time.perf_counter()
    summary = index_repository(clone, db, Settings(), rebuild=True, model="none", jobs=jobs)
    return time.perf_counter() - start, summary


class Defs:
    """The `defs` table of one store: innermost enclosing definition of a line."""

    def __init__(self, con):
        self.by_path: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
        for path, start, end, qualname in con.execute(
                "select f.path, d.start_line, d.end_line, d.qualname from defs d join files f"
                " on f.id = d.file_id"):
            self.by_path[path].append((start, end, qualname))

    def enclosing(self, path: str, line: int) -> str | None:
        best = None
        for start, end, qualname in self.by_path.get(path, ()):
            if start <= line <= end and (best is None or start > best[0] or
                                         (start == best[0] and end < best[1])):
                best = (start, end, qualname)
        return best[2] if best else None


# -- sample ----------------------------------------------------------------------------------


def sample_functions(con, clone: Path, n: int, seed: int) -> tuple[list[dict], dict]:
    """Python functions and methods at HEAD outside tests, with the position of their name."""
    rows = con.execute(
        "select f.path, d.qualname, d.name, d.kind, d.start_line, d.end_line from defs d"
        " join files f on f.id = d.file_id join struct_files s on s.file_id = d.file_id"
        " where s.language = 'python' and s.is_test = 0 and s.skip_reason is null"
        " and d.kind in ('function', 'method') order by f.path, d.qualname").fetchall()
    from cortex_core.structure import is_test_path
    stats = Counter(candidates=len(rows))
    pool = []
    for path, qualname, name, kind, start, end in rows:
        if is_test_path(path):
            stats["test path"] += 1
        elif name.startswith("__") and name.endswith("__"):
            stats["dunder"] += 1
        elif name.startswith("__"):
            stats["name-mangled private"] += 1
        else:
            pool.append((path, qualname, name, kind, start, end))
    random.Random(seed).shuffle(pool)
    out = []
    texts: dict[str, list[str]] = {}
    for path, qualname, name, kind, start, end in pool:
        if len(out) == n:
            break
        if path not in texts:
            try:
                texts[path] = (clone / path).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                texts[path] = []
        lines = texts[path]
        pattern = re.compile(r"^\s*(?:async\s+)?def\s+(" + re.escape(name) + r")\s*[(\[]")
        pos = None
        for i in range(start - 1, min(end, len(lines))):
            m = pattern.match(lines[i])
            if m:
                pos = (i + 1, m.start(1))
                break
        if pos is None:
            stats["def line not found"] += 1
            continue
        out.append({"path": path, "qualname": qualname, "name": name, "kind": kind,
                    "start_line": start, "end_line": end, "name_line": pos[0],
                    "name_column": pos[1]})
    stats["pool"] = len(pool)
    stats["sampled"] = len(out)
    return out, dict(stats)


# -- part 1: callers vs Jedi -----------------------------------------------------------------


class _Timeout(Exception):
    pass


def _alarm(seconds: float):
    def handler(*_):
        raise _Timeout()
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _disarm():
    signal.setitimer(signal.ITIMER_REAL, 0)


def _is_import(name) -> bool:
    tree_name = getattr(getattr(name, "_name", None), "tree_name", None)
    if tree_name is None:
        return False
    try:
        return tree_name.search_ancestor("import_from", "import_name") is not None
    except AttributeError:
        return False


def _line_text(clone: Path, path: str, line: int, cache: dict) -> str:
    if path not in cache:
        try:
            cache[path] = (clone / path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            cache[path] = []
    lines = cache[path]
    return lines[line - 1] if 0 < line <= len(lines) else ""


def jedi_references(jedi, project, clone: Path, fn: dict, timeout: float) -> tuple[list, float]:
    """[(path, line, column, is_call)] of usage sites; seconds."""
    start = time.perf_counter()
    _alarm(timeout)
    try:
        script = jedi.Script(path=str(clone / fn["path"]), project=project)
        refs = script.get_references(fn["name_line"], fn["name_column"], include_builtins=False)
    finally:
        _disarm()
    seconds = time.perf_counter() - start
    out = []
    for r in refs:
        if r.module_path is None or r.line is None:
            continue
        try:
            rel = Path(r.module_path).resolve().relative_to(clone.resolve()).as_posix()
        except ValueError:
            continue   # outside the repository
        if r.is_definition() or _is_import(r):
            continue
        if rel == fn["path"] and fn["start_line"] <= r.line <= fn["end_line"]:
            continue   # inside the definition itself
        out.append((rel, r.line, r.column, None))
    return out, seconds


def part_callers(con, clone: Path, sample: list[dict], args) -> dict:
    import jedi
    from cortex_core.blast import callers
    from cortex_core.targets import TargetSpec

    defs = Defs(con)
    added = [str(clone / "src")] if (clone / "src").is_dir() else []
    project = jedi.Project(path=str(clone), added_sys_path=added)
    cache: dict[str, list[str]] = {}
    per_fn, failures = [], Counter()
    if sample:   # warm-up of callers() (not of Jedi: its first query is part of its p50)
        try:
            callers(con, TargetSpec(sample[0]["path"], sample[0]["qualname"]))
        except Exception:  # noqa: BLE001 - counted below
            pass
    for k, fn in enumerate(sample, 1):
        spec = TargetSpec(fn["path"], fn["qualname"])
        try:
            start = time.perf_counter()
            got = callers(con, spec)
            cortex_s = time.perf_counter() - start
        except Exception as exc:  # noqa: BLE001 - a report line
            failures[f"callers: {type(exc).__name__}: {str(exc)[:80]}"] += 1
            continue
        try:
            sites, jedi_s = jedi_references(jedi, project, clone, fn, args.jedi_timeout)
        except _Timeout:
            failures[f"jedi: timeout after {args.jedi_timeout:.0f} s"] += 1
            continue
        except Exception as exc:  # noqa: BLE001 - Jedi's internal errors are counted
            failures[f"jedi: {type(exc).__name__}: {str(exc)[:80]}"] += 1
            continue
        jedi_pairs: dict[tuple, list] = defaultdict(list)
        for path, line, col, _ in sites:
            text = _line_text(clone, path, line, cache)
            is_call = text[col + len(fn["name"]):].lstrip().startswith("(")
            jedi_pairs[(path, defs.enclosing(path, line))].append(
                {"line": line, "column": col, "call": is_call})
        cortex_pairs: dict[tuple, list] = defaultdict(list)
        scope_mismatch = 0
        for item in got.items:
            mapped = defs.enclosing(item.path, item.line)
            if mapped != item.qualname:
                scope_mismatch += 1
            cortex_pairs[(item.path, mapped)].append(
                {"line": item.line, "confidence": item.confidence, "relation": item.relation,
                 "scope": item.qualname})
        per_fn.append({"function": fn, "jedi_seconds": jedi_s, "cortex_seconds": cortex_s,
                       "jedi": {f"{p}::{q or ''}": v for (p, q), v in jedi_pairs.items()},
                       "cortex": {f"{p}::{q or ''}": v for (p, q), v in cortex_pairs.items()},
                       "scope_mismatch": scope_mismatch})
        log(f"callers {k}/{len(sample)} {fn['path']}::{fn['qualname']}: jedi {len(jedi_pairs)} "
            f"({bl.fmt_seconds(jedi_s)}), cortex {len(cortex_pairs)} "
            f"({bl.fmt_seconds(cortex_s)})")

    # -- agreement --
    tp = c_total = j_total = 0
    tp_high = c_high = tp_low = c_low = 0
    j_call = tp_call = 0
    identical = 0
    only_cortex, only_jedi = [], []
    for r in per_fn:
        jp, cp = set(r["jedi"]), set(r["cortex"])
        both = jp & cp
        tp += len(both)
        c_total += len(cp)
        j_total += len(jp)
        identical += jp == cp
        for key in cp:
            conf = max(i["confidence"] for i in r["cortex"][key])
            if conf >= HIGH_CONFIDENCE:
                c_high += 1
                tp_high += key in jp
            else:
                c_low += 1
                tp_low += key in jp
        for key in jp:
            if any(s["call"] for s in r["jedi"][key]):
                j_call += 1
                tp_call += key in cp
        for key in sorted(cp - jp):
            only_cortex.append((r, key))
        for key in sorted(jp - cp):
            only_jedi.append((r, key))
    buckets: dict[str, list[int]] = defaultdict(lambda: [0, 0])   # label -> [pairs, in jedi]
    for r in per_fn:
        for key, items in r["cortex"].items():
            b = buckets[_bucket(max(i["confidence"] for i in items))]
            b[0] += 1
            b[1] += key in r["jedi"]
    high_in_jedi = sum(1 for r in per_fn for key in r["cortex"] if key in r["jedi"] and
                       max(i["confidence"] for i in r["cortex"][key]) >= HIGH_CONFIDENCE)
    agreement = {
        "functions": len(per_fn), "failures": dict(failures),
        "pairs_jedi": j_total, "pairs_cortex": c_total, "pairs_both": tp,
        "precision": tp / c_total if c_total else None,
        "recall": tp / j_total if j_total else None,
        "precision_conf_high": tp_high / c_high if c_high else None, "pairs_conf_high": c_high,
        "precision_conf_low": tp_low / c_low if c_low else None, "pairs_conf_low": c_low,
        "recall_conf_high_only": high_in_jedi / j_total if j_total else None,
        "recall_call_sites": tp_call / j_call if j_call else None, "pairs_jedi_with_call": j_call,
        "by_confidence": {k: {"pairs": v[0], "in_jedi": v[1], "precision": v[1] / v[0]}
                          for k, v in sorted(buckets.items(), reverse=True)},
        "functions_identical": identical,
        "functions_no_jedi_refs": sum(1 for r in per_fn if not r["jedi"]),
        "functions_no_cortex_callers": sum(1 for r in per_fn if not r["cortex"]),
        "cortex_items_scope_differs_from_defs_mapping": sum(r["scope_mismatch"] for r in per_fn),
    }
    jt = [r["jedi_seconds"] for r in per_fn]
    ct = [r["cortex_seconds"] for r in per_fn]
    timing = {"jedi_p50": bl.percentile(jt, 50) if jt else None,
              "jedi_p95": bl.percentile(jt, 95) if jt else None,
              "jedi_first_query": jt[0] if jt else None,
              "cortex_p50": bl.percentile(ct, 50) if ct else None,
              "cortex_p95": bl.percentile(ct, 95) if ct else None}
    rng = random.Random(args.seed)
    pick_c = rng.sample(only_cortex, min(args.classify, len(only_cortex)))
    pick_j = rng.sample(only_jedi, min(args.classify, len(only_jedi)))
    classified = {
        "cortex_only": [classify_cortex_only(con, jedi, project, clone, r, key, cache)
                        for r, key in pick_c],
        "jedi_only": [classify_jedi_only(con, clone, r, key, cache) for r, key in pick_j],
        "cortex_only_total": len(only_cortex), "jedi_only_total": len(only_jedi)}
    return {"agreement": agreement, "timing": timing, "disagreements": classified,
            "per_function": per_fn}


def _bucket(conf: float) -> str:
    """The resolver's confidence levels (resolve.py); anything else is a shared (ambiguous)
    confidence."""
    for level, label in ((1.0, "1.0 import/local"), (0.9, "0.9 self/class"),
                         (0.6, "0.6 module known"), (0.5, "0.5 unique name"),
                         (0.4, "0.4 unique method")):
        if abs(conf - level) < 1e-6:
            return label
    return "<1 shared (ambiguous)" if conf > 0.4 else "0.0x shared (ambiguous)"


def _goto(jedi, project, clone: Path, path: str, line: int, column: int):
    _alarm(30)
    try:
        return jedi.Script(path=str(clone / path), project=project).goto(
            line, column, follow_imports=True)
    finally:
        _disarm()


def classify_cortex_only(con, jedi, project, clone: Path, r: dict, key: str,
                         cache: dict) -> dict:
    fn = r["function"]
    path, _, qual = key.partition("::")
    item = max(r["cortex"][key], key=lambda i: i["confidence"])
    text = _line_text(clone, path, item["line"], cache)
    out = {"target": f"{fn['path']}::{fn['qualname']}", "site": f"{path}:{item['line']}",
           "scope": qual or None, "confidence": item["confidence"],
           "relation": item["relation"], "text": text.strip()[:120]}
    m = re.search(r"\b" + re.escape(fn["name"]) + r"\b", text)
    if m is None:   # an alias (`import x as y`): the name the store read on that line
        fid = con.execute("select id from files where path = ?", (path,)).fetchone()
        for (name,) in con.execute(
                "select distinct r.name from refs r join edges e on e.ref_id = r.id join files f"
                " on f.id = e.dst_file_id where r.file_id = ? and r.line = ? and f.path = ?"
                " and e.dst_qualname = ?", (fid[0] if fid else -1, item["line"], fn["path"],
                                            fn["qualname"])):
            m = re.search(r"\b" + re.escape(name or "") + r"\b", text) if name else None
            if m is not None:
                out["alias"] = name
                break
    if m is None:
        out["kind"] = "name not on the reference's line"
        return out
    try:
        found = _goto(jedi, project, clone, path, item["line"], m.start())
    except Exception as exc:  # noqa: BLE001 - includes the timeout
        out["kind"] = f"jedi goto failed ({type(exc).__name__})"
        return out
    hits = []
    for d in found:
        try:
            rel = Path(d.module_path).resolve().relative_to(clone.resolve()).as_posix() \
                if d.module_path else None
        except ValueError:
            rel = None
        hits.append((rel, d.line, d.full_name or d.name))
    if any(p == fn["path"] and d_line is not None and fn["start_line"] <= d_line <= fn["end_line"]
           for p, d_line, _ in hits):
        out["kind"] = ("Jedi misses: an aliased name (`as`), its goto finds the target"
                       if "alias" in out else
                       "Jedi misses: its goto at the site finds the target")
    elif not hits:
        out["kind"] = ("Jedi infers nothing at the site (dynamic receiver); Cortex guessed by "
                       "name" if item["confidence"] < HIGH_CONFIDENCE else
                       "Jedi infers nothing at the site; Cortex resolved it with high confidence")
    else:
        p, d_line, full = hits[0]
        out["jedi_goto"] = f"{p}:{d_line} {full}" if p else f"(outside the repository) {full}"
        if p is None:
            out["kind"] = "Jedi: a definition outside the repository (stdlib/dependency)"
        elif p == path and d_line is not None and d_line == item["line"]:
            out["kind"] = "Jedi: the name is defined at the site (assignment/parameter/shadowing)"
        elif item["confidence"] < HIGH_CONFIDENCE:
            out["kind"] = ("Jedi: another definition of the name; Cortex's low-confidence guess "
                           "(same-name method elsewhere, dynamic dispatch)")
        else:
            out["kind"] = ("Jedi: another definition of the name; Cortex resolved with high "
                           "confidence (shadowing, override, or a resolution error)")
    return out


def classify_jedi_only(con, clone: Path, r: dict, key: str, cache: dict) -> dict:
    fn = r["function"]
    path, _, qual = key.partition("::")
    site = r["jedi"][key][0]
    text = _line_text(clone, path, site["line"], cache)
    out = {"target": f"{fn['path']}::{fn['qualname']}", "site": f"{path}:{site['line']}",
           "scope": qual or None, "call": site["call"], "text": text.strip()[:120]}
    fid = con.execute("select id from files where path = ?", (path,)).fetchone()
    rows = con.execute(
        "select id, kind, name, qualifier, status, scope from refs where file_id = ? and line = ?"
        " and name = ?", (fid[0] if fid else -1, site["line"], fn["name"])).fetchall()
    if not rows:
        struct = con.execute("select language, skip_reason from struct_files where file_id = ?",
                             (fid[0] if fid else -1,)).fetchone()
        if struct is None:
            out["kind"] = "file not read by the structure pass"
        elif struct[1]:
            out["kind"] = f"file skipped by the structure pass ({struct[1]})"
        else:
            out["kind"] = ("Cortex read no reference of that name on the line (call)"
                           if site["call"] else
                           "Cortex read no reference of that name on the line (non-call use)")
        return out
    ref_id, kind, name, qualifier, status, scope = rows[0]
    edges = con.execute(
        "select f.path, e.dst_qualname, e.confidence from edges e join files f on"
        " f.id = e.dst_file_id where e.ref_id = ?", (ref_id,)).fetchall()
    out["cortex_ref"] = {"kind": kind, "qualifier": qualifier, "status": status, "scope": scope,
                         "edges": [f"{p}::{q or ''} ({c})" for p, q, c in edges[:5]]}
    to_target = [e for e in edges if e[0] == fn["path"] and e[1] == fn["qualname"]]
    if to_target:
        out["kind"] = "Cortex has the edge but maps the site to another scope"
    elif status == "resolved":
        out["kind"] = "Cortex resolved it to another definition"
    elif status == "ambiguous":
        out["kind"] = "Cortex: ambiguous, the target not among the candidates"
    elif status == "external":
        out["kind"] = "Cortex: external (outside the repository)"
    else:
        out["kind"] = f"Cortex: {status} (receiver not inferred)" if qualifier else \
            f"Cortex: {status}"
    return out


# -- part 2: time-split co-change ------------------------------------------------------------


def pick_split(clone: Path, head: str, split: str | None) -> tuple[str, int, int]:
    line = bl.git(clone, "rev-list", "--first-parent", "--reverse", head).split()
    if split:
        sha = bl.git(clone, "rev-parse", split)
        pos = line.index(sha) if sha in line else -1
        return sha, pos, len(line)
    pos = int(len(line) * 0.8)
    return line[pos], pos, len(line)


def later_commits(clone: Path, split: str, head: str) -> list[tuple[str, list[str], str]]:
    """Non-merge first-parent commits after the split, oldest first: (sha, files, subject)."""
    out = []
    text = bl.git(clone, "log", "--first-parent", "--no-merges", "--reverse", "--no-renames",
                  "--name-only", "--format=%x00%H%x01%s", f"{split}..{head}")
    for block in text.split("\x00"):
        if not block.strip():
            continue
        first, _, rest = block.partition("\n")
        sha, _, subject = first.partition("\x01")
        files = [f for f in rest.splitlines() if f.strip()]
        out.append((sha.strip(), files, subject))
    return out


def _rank_lists(files: list) -> dict[str, list[str]]:
    fused = [f.path for f in files if f.score > 0][:CUT]
    co = [f.path for f in sorted((f for f in files if f.cochange > 0),
                                 key=lambda f: (-f.cochange, f.path))][:CUT]
    st = [f.path for f in sorted((f for f in files if f.structure > 0),
                                 key=lambda f: (-f.structure, f.path))][:CUT]
    return {"cochange": co, "structure": st, "fused": fused}


ALT_WEIGHTS = (0.5, 0.25, 0.1)


def _alternatives(files: list, n: int = 0) -> dict[str, list[str]]:
    """Diagnostic rankings from the same s and c (not Cortex's): the fused formula with the
    structure term scaled by w, and co-change with structure breaking its ties."""
    out = {}
    for w in ALT_WEIGHTS:
        scored = [(1 - (1 - w * f.structure) * (1 - f.cochange), f) for f in files]
        out[f"1-(1-{w}s)(1-c)"] = [f.path for sc, f in sorted(
            scored, key=lambda t: (-t[0], -t[1].support, t[1].path)) if sc > 0][:CUT]
    for k in (0.5, 1, 2, 5):   # structure weighted by how little history the target has
        scored = [(f.cochange + f.structure * k / (k + n), f) for f in files]
        out[f"c+s*{k}/({k}+n)"] = [f.path for sc, f in sorted(
            scored, key=lambda t: (-t[0], -t[1].support, t[1].path)) if sc > 0][:CUT]
    out["c, ties by s"] = [f.path for f in sorted(
        (f for f in files if f.cochange > 0 or f.structure > 0),
        key=lambda f: (-f.cochange, -f.structure, f.path))][:CUT]
    return out


def _metrics(ranked: list[str], gold: set[str]) -> tuple[float, float, int | None]:
    first = next((i for i, p in enumerate(ranked, 1) if p in gold), None)
    recall = len(gold & set(ranked[:10])) / len(gold)
    return recall, (1 / first if first else 0.0), first


def part_cochange(clone: Path, work: Path, head: str, args) -> dict:
    from cortex_core.blast import fused_related
    from cortex_core.store import open_reader
    from cortex_core.targets import TargetSpec

    split, pos, length = pick_split(clone, head, args.split)
    bl.run(["git", "-C", str(clone), "checkout", "-q", "-B", "bench-split", split])
    db = work / "split.db"
    log(f"co-change: indexing the split {split[:10]} ({pos + 1}/{length} first-parent) ...")
    seconds, summary = index_in_process(clone, db, args.jobs)
    con = open_reader(db)
    at_split = {p for (p,) in con.execute(
        "select f.path from head_files h join files f on f.id = h.file_id")}
    structured = {p for (p,) in con.execute(
        "select f.path from struct_files s join files f on f.id = s.file_id"
        " where s.skip_reason is null")}
    commits = later_commits(clone, split, head)
    queries, used, examined = [], 0, 0
    skipped = Counter()
    fused_times = []
    for sha, files, subject in commits:
        if used >= args.split_commits:
            break
        examined += 1
        existing = sorted({f for f in files if f in at_split})
        if len(existing) < 2:
            skipped["fewer than 2 files existing at the split"] += 1
            continue
        if len(existing) > 10:
            skipped["more than 10 files existing at the split"] += 1
            continue
        used += 1
        for f in existing:
            gold = set(existing) - {f}
            start = time.perf_counter()
            try:
                res = fused_related(con, TargetSpec(f), top_k=1_000_000, depth=2,
                                    max_changeset=30, min_support=1)
            except Exception as exc:  # noqa: BLE001 - counted
                skipped[f"fused_related failed: {type(exc).__name__}"] += 1
                continue
            fused_times.append(time.perf_counter() - start)
            lists = _rank_lists(res.files)
            q = {"commit": sha, "subject": subject[:80], "file": f, "gold": sorted(gold),
                 "files_changed": len(files), "structured": f in structured,
                 "candidates": len(res.files),
                 "structure_ge_0_9": sum(1 for x in res.files if x.structure >= 0.9),
                 "fused_ge_0_99": sum(1 for x in res.files if x.score >= 0.99)}
            for name, ranked in lists.items():
                recall, rr, first = _metrics(ranked, gold)
                q[name] = {"recall10": recall, "rr": rr, "first_gold_rank": first,
                           "top3": ranked[:3], "listed": len(ranked)}
            q["alternatives"] = {}
            for name, ranked in _alternatives(res.files, res.target_commits).items():
                recall, rr, first = _metrics(ranked, gold)
                q["alternatives"][name] = {"recall10": recall, "rr": rr}
            queries.append(q)
        if used % 25 == 0:
            log(f"co-change: {used} commits, {len(queries)} queries")
    con.close()

    def summarize(qs):
        out = {"queries": len(qs)}
        for name in ("cochange", "structure", "fused"):
            out[name] = {
                "recall_at_10": statistics.fmean(q[name]["recall10"] for q in qs) if qs else None,
                "mrr": statistics.fmean(q[name]["rr"] for q in qs) if qs else None}
        return out

    overall = summarize(queries)
    alternatives = {}
    if queries:
        for name in queries[0]["alternatives"]:
            alternatives[name] = {
                "recall_at_10": statistics.fmean(q["alternatives"][name]["recall10"]
                                                 for q in queries),
                "mrr": statistics.fmean(q["alternatives"][name]["rr"] for q in queries)}
    by_kind = {"file with structure": summarize([q for q in queries if q["structured"]]),
               "file without structure": summarize([q for q in queries if not q["structured"]])}
    best_single = {m: max(overall["cochange"][k], overall["structure"][k])
                   for m, k in (("recall_at_10", "recall_at_10"), ("mrr", "mrr"))} \
        if queries else {}
    beats = bool(queries) and all(overall["fused"][k] > best_single[k] for k in best_single)
    paired = Counter()
    worse = []
    for q in queries:
        for base in ("cochange", "structure"):
            d = q["fused"]["rr"] - q[base]["rr"]
            paired[f"fused vs {base}: " + ("better" if d > 1e-12 else "worse" if d < -1e-12
                                           else "same")] += 1
        b = max(q["cochange"]["rr"], q["structure"]["rr"])
        if q["fused"]["rr"] < b - 1e-12:
            worse.append(q)
    worse.sort(key=lambda q: q["fused"]["rr"] - max(q["cochange"]["rr"], q["structure"]["rr"]))
    return {"split": split, "split_position": pos + 1, "first_parent_length": length,
            "split_date": bl.git(clone, "log", "-1", "--format=%cI", split),
            "index_seconds": seconds, "files_at_split": len(at_split),
            "structure_files_at_split": len(structured),
            "commits_after_split": len(commits), "commits_examined": examined,
            "commits_used": used, "skipped": dict(skipped), "overall": overall,
            "by_query_file": by_kind, "diagnostic_alternatives": alternatives,
            "fused_beats_both": beats, "paired_rr": dict(paired),
            "fused_worse_than_best_single": len(worse), "worse_examples": worse[:12],
            "structure_ge_0_9_median": statistics.median(
                [q["structure_ge_0_9"] for q in queries if q["structured"]] or [0]),
            "structure_ge_0_9_mean": statistics.fmean(
                [q["structure_ge_0_9"] for q in queries if q["structured"]] or [0]),
            "fused_ge_0_99_mean": statistics.fmean(
                [q["fused_ge_0_99"] for q in queries if q["structured"]] or [0]),
            "fused_related_p50": bl.percentile(fused_times, 50) if fused_times else None,
            "fused_related_p95": bl.percentile(fused_times, 95) if fused_times else None,
            "queries": queries}


# -- part 3: the structure pass --------------------------------------------------------------


STRUCTURE_CHILD = r'''
import json, sys, time
from pathlib import Path

def mem():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out

def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False

db, root = Path(sys.argv[1]), Path(sys.argv[2])
from cortex_core import structure
import cortex_core.resolve, cortex_core.symbols, cortex_core.structure_extract  # noqa: F401
from cortex_core.config import Settings
from cortex_core.ingest import open_repository
from cortex_core.store import open_writer
repo = open_repository(root)
con = open_writer(db)
with con:
    for table in ("edges", "refs", "defs", "struct_files"):
        con.execute(f"delete from {table}")
spent = [0.0]
real = structure.resolve_refs
def timed(*a, **k):
    s = time.perf_counter()
    try:
        return real(*a, **k)
    finally:
        spent[0] += time.perf_counter() - s
structure.resolve_refs = timed
before = mem()
peak_reset = reset_peak()
s = time.perf_counter()
counts = structure.update_structure(con, repo, Settings().index)
full = time.perf_counter() - s
after = mem()
full_resolve, spent[0] = spent[0], 0.0
s = time.perf_counter()
noop = structure.update_structure(con, repo, Settings().index)
noop_s = time.perf_counter() - s
noop_resolve = spent[0]
one = None
if len(sys.argv) > 3:   # one file modified in the working tree (read from disk), then restored
    touched = root / sys.argv[3]
    original = touched.read_bytes()
    try:
        touched.write_bytes(original + b"\n\ndef _cortex_bench_touch():\n    return None\n")
        spent[0] = 0.0
        s = time.perf_counter()
        counts1 = structure.update_structure(con, repo, Settings().index)
        one = {"seconds": time.perf_counter() - s, "resolve_seconds": spent[0],
               "files_read": counts1.files_read, "refs_resolved": counts1.refs_resolved}
    finally:
        touched.write_bytes(original)
    structure.update_structure(con, repo, Settings().index)
tables = {t: con.execute(f"select count(*) from {t}").fetchone()[0]
          for t in ("struct_files", "defs", "refs", "edges")}
print(json.dumps({"seconds": full, "resolve_seconds": full_resolve,
                  "files_read": counts.files_read, "refs_resolved": counts.refs_resolved,
                  "rss_before_kib": before.get("VmRSS"), "rss_after_kib": after.get("VmRSS"),
                  "peak_kib": after.get("VmHWM"), "peak_reset": peak_reset,
                  "noop_seconds": noop_s, "noop_resolve_seconds": noop_resolve,
                  "noop_files_read": noop.files_read, "noop_refs_resolved": noop.refs_resolved,
                  "one_file": one, "tables": tables}))
'''


def part_structure_index(clone: Path, db: Path, cortex: list[str], args) -> dict:
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    log("structure: cortex index --rebuild --model none ...")
    full = bl.run([*cortex, "index", "--rebuild", "--model", "none", "--repo", str(clone),
                   "--db", str(db), "--quiet", "--json", *jobs], sample_tree=True)
    summary = json.loads(full.stdout)
    return {"command": "cortex index --rebuild --model none --quiet --json"
            + (" " + " ".join(jobs) if jobs else ""),
            "seconds": full.seconds, "cpu_seconds": full.user_seconds + full.system_seconds,
            "max_rss_kib": full.max_rss_kib, "tree_peak_kib": full.tree_peak_rss_kib,
            "tree_measure": full.tree_measure, "db_bytes": db_size(db), "summary": summary}


def part_structure_alone(clone: Path, db: Path, work: Path, cortex: list[str], args,
                         touch: str | None) -> dict:
    runs = []
    for i in range(max(1, args.structure_runs)):
        copy = work / f"structure-{i}.db"
        copy_db(db, copy)
        r = bl.run([sys.executable, "-c", STRUCTURE_CHILD, str(copy), str(clone),
                    *([touch] if touch else [])], cwd=bl.PROJECT_DIR)
        data = json.loads(r.stdout)
        data.update({"process_seconds": r.seconds, "process_max_rss_kib": r.max_rss_kib,
                     "process_cpu_seconds": r.user_seconds + r.system_seconds})
        runs.append(data)
        remove_db(copy)
        log(f"structure pass alone: {bl.fmt_seconds(data['seconds'])} "
            f"(resolve {bl.fmt_seconds(data['resolve_seconds'])}), peak "
            f"{data['peak_kib'] / 1024:.0f} MiB")
    status = json.loads(bl.run([*cortex, "status", "--repo", str(clone), "--db", str(db),
                                "--json"]).stdout)
    langs = []
    for s in status.get("structure") or []:
        refs = s.get("refs") or 0
        langs.append({**s, "rate": (s.get("resolved", 0) / refs) if refs else None})
    return {"runs": runs, "best": min(runs, key=lambda d: d["seconds"]), "languages": langs}


def part_structure_updates(clone: Path, db: Path, work: Path, cortex: list[str],
                           sample: list[dict], head: str, args) -> dict:
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    cmd = [*cortex, "index", "--model", "none", "--repo", str(clone), "--db", str(db),
           "--quiet", "--json", *jobs]
    noop = []
    for _ in range(args.noop_runs):
        r = bl.run(cmd)
        noop.append((r.seconds, json.loads(r.stdout)))
    saved = work / "before-update.db"
    copy_db(db, saved)
    fn = sample[0] if sample else None
    path = fn["path"] if fn else None
    if path is None:
        return {"noop_seconds": [s for s, _ in noop]}
    runs = []
    for i in range(args.incremental_runs):
        if i:
            remove_db(db)
            copy_db(saved, db)
        bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", head])
        target = clone / path
        with open(target, "a", encoding="utf-8") as f:
            f.write(f"\n\ndef _cortex_bench_touch_{i}():\n    return {fn['name']}\n")
        bl.run(["git", *GIT_ID, "-C", str(clone), "commit", "-q", "-a", "-m",
                f"bench: touch {path}"])
        r = bl.run(cmd, sample_tree=True)
        summary = json.loads(r.stdout)
        runs.append({"seconds": r.seconds, "max_rss_kib": r.max_rss_kib,
                     "structure_files_read": summary.get("structure_files_read"),
                     "new_commits": summary.get("new_commits")})
        log(f"one-file update {i + 1}: {bl.fmt_seconds(r.seconds)}, "
            f"{summary.get('structure_files_read')} files read for structure")
    bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", head])
    remove_db(db)
    copy_db(saved, db)
    remove_db(saved)
    return {"file": path, "noop_seconds": [s for s, _ in noop],
            "noop_structure_files_read": [d.get("structure_files_read") for _, d in noop],
            "updates": runs}


# -- part 4: blast latency -------------------------------------------------------------------


def part_blast(con, clone: Path, db: Path, cortex: list[str], sample: list[dict],
               args) -> dict:
    from cortex_core.blast import blast
    from cortex_core.targets import TargetSpec
    specs = [TargetSpec(fn["path"], fn["qualname"]) for fn in sample]
    ok, failures = [], Counter()
    for spec in specs:   # untimed pass: warms SQLite's cache and the imports
        try:
            blast(con, spec, depth=2)
            ok.append(spec)
        except Exception as exc:  # noqa: BLE001 - counted
            failures[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
    times, sizes, hidden = [], [], []
    for spec in ok:
        start = time.perf_counter()
        b = blast(con, spec, depth=2)
        times.append(time.perf_counter() - start)
        sizes.append(len(b.dependents))
        hidden.append(len(b.hidden))
    cli = []
    picked = ok[:args.cli_blast]
    if picked:
        bl.run([*cortex, "blast", f"{picked[0].path}::{picked[0].symbol}", "--repo", str(clone),
                "--db", str(db), "--json"])   # warm-up: page cache
    for spec in picked:
        r = bl.run([*cortex, "blast", f"{spec.path}::{spec.symbol}", "--repo", str(clone),
                    "--db", str(db), "--json"])
        cli.append(r.seconds)
    start_runs = [bl.run([*cortex, "--version"]).seconds for _ in range(3)]
    return {"queries": len(times), "failures": dict(failures),
            "p50": bl.percentile(times, 50) if times else None,
            "p95": bl.percentile(times, 95) if times else None,
            "max": max(times) if times else None,
            "dependents_median": statistics.median(sizes) if sizes else None,
            "dependents_max": max(sizes) if sizes else None,
            "hidden_median": statistics.median(hidden) if hidden else None,
            "cli_queries": len(cli),
            "cli_p50": bl.percentile(cli, 50) if cli else None,
            "cli_p95": bl.percentile(cli, 95) if cli else None,
            "cortex_version_seconds": min(start_runs)}


# -- main ------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    env = bl.environment(repo)
    try:
        import jedi
        env["jedi"] = jedi.__version__
    except ImportError:
        env["jedi"] = None
        if "callers" in args.parts:
            log("jedi is not installed: /work/venv/bin/pip install jedi==0.20.1")
            return 2
    cortex = bl.cortex_command()
    work = bl.work_dir("structure-", args.keep)
    head = env["repository"]["head"]
    report: dict = {"benchmark": "structure", "environment": env,
                    "config": bl.config(args)}
    try:
        clone = bl.private_clone(repo, work / "clone", checkout=True)
        bl.run(["git", "-C", str(clone), "checkout", "-q", "-B", "bench", head])
        report["setup"] = {"clone": str(clone), "head": head,
                           "files_at_head": len(bl.git(clone, "ls-files").splitlines())}
        db = work / "head.db"
        if "structure" in args.parts:
            report["structure"] = {"full_index": part_structure_index(clone, db, cortex, args)}
        elif {"callers", "blast"} & set(args.parts):
            log("indexing HEAD in process ...")
            seconds, summary = index_in_process(clone, db, args.jobs)
            report["setup"]["index_seconds"] = seconds
        sample = []
        if {"callers", "blast", "structure"} & set(args.parts):
            from cortex_core.store import open_reader
            con = open_reader(db)
            sample, stats = sample_functions(con, clone, args.sample, args.seed)
            report["sample"] = {"stats": stats,
                                "functions": [f"{f['path']}::{f['qualname']}" for f in sample]}
            log(f"sample: {len(sample)} functions ({stats})")
            if "structure" in args.parts:
                report["structure"]["alone"] = part_structure_alone(
                    clone, db, work, cortex, args, sample[0]["path"] if sample else None)
            if "blast" in args.parts:   # before Jedi: its caches make the GC's passes slow
                report["blast"] = part_blast(con, clone, db, cortex, sample, args)
            if "callers" in args.parts:
                report["callers"] = part_callers(con, clone, sample, args)
            con.close()
            if "structure" in args.parts:
                report["structure"]["updates"] = part_structure_updates(
                    clone, db, work, cortex, sample, head, args)
        if "cochange" in args.parts:
            report["cochange"] = part_cochange(clone, work, head, args)
        report["environment"]["load_average_at_end"] = [round(x, 2) for x in
                                                        __import__("os").getloadavg()]
    finally:
        if not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render)
    return 0


# -- report ----------------------------------------------------------------------------------


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


if __name__ == "__main__":
    sys.exit(main())
