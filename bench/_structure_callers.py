"""bench_structure.py, part 1: the sample of functions (from the store's `defs`) and cortex's
callers() against Jedi's references, every disagreement classified."""

from __future__ import annotations

import random
import re
import signal
import time
from collections import Counter, defaultdict
from pathlib import Path

import _benchlib as bl

log = bl.progress


HIGH_CONFIDENCE = 0.9


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


def sample_functions(con, clone: Path, n: int, seed: int,
                     kinds: tuple[str, ...] = ("function", "method")) -> tuple[list[dict], dict]:
    """Python definitions of `kinds` at HEAD outside tests (functions and methods unless asked
    otherwise: `class`), with the position of their name."""
    marks = ",".join("?" * len(kinds))
    rows = con.execute(
        "select f.path, d.qualname, d.name, d.kind, d.start_line, d.end_line from defs d"
        " join files f on f.id = d.file_id join struct_files s on s.file_id = d.file_id"
        " where s.language = 'python' and s.is_test = 0 and s.skip_reason is null"
        f" and d.kind in ({marks}) order by f.path, d.qualname", kinds).fetchall()
    from cortex_core.lang.test_paths import is_test_path
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
        pattern = re.compile(r"^\s*(?:async\s+def|def|class)\s+(" + re.escape(name)
                             + r")\s*[(\[:]")
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


class _Timeout(Exception):
    pass


_IMPORT_LINE = re.compile(r"^\s*(?:import\s|from\s+\S+\s+import\s|export\s.*\sfrom\s)")


def grep_pairs(clone: Path, defs: Defs, name: str, path: str, start: int, end: int,
               pathspec: tuple[str, ...]) -> set[tuple[str, str | None]]:
    """The baseline a user has without an index: `git grep -n -w NAME` over the language's
    files, import lines and the target's own lines left out, each hit mapped to its enclosing
    definition as the reference's sites are."""
    out = bl.git(clone, "grep", "-n", "-w", "-I", "-F", "-e", name, "--", *pathspec,
                 check=False, strip=False)
    pairs = set()
    for line in out.splitlines():
        where, _, rest = line.partition(":")
        number, _, text = rest.partition(":")
        if not number.isdigit() or _IMPORT_LINE.match(text):
            continue
        n = int(number)
        if where == path and start <= n <= end:
            continue
        pairs.add((where, defs.enclosing(where, n)))
    return pairs


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
    from cortex_core.query.blast import callers
    from cortex_core.query.targets import TargetSpec

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
        grepped = grep_pairs(clone, defs, fn["name"], fn["path"], fn["start_line"],
                             fn["end_line"], ("*.py",))
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
                       "grep": sorted(f"{p}::{q or ''}" for p, q in grepped),
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
    g_total = sum(len(r["grep"]) for r in per_fn)
    g_both = sum(len(set(r["grep"]) & set(r["jedi"])) for r in per_fn)
    agreement = {
        "functions": len(per_fn), "failures": dict(failures),
        # The baseline, `git grep -w NAME` (grep_pairs), against the same reference.
        "grep_pairs": g_total, "grep_precision": g_both / g_total if g_total else None,
        "grep_recall": g_both / j_total if j_total else None,
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
