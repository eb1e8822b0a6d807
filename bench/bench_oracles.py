#!/usr/bin/env python3
"""Method history against CodeShovel's hand-validated oracles, with `git log -L` as the baseline.

CodeShovel (github.com/ataraxie/codeshovel) oracles list, for one method at a start commit, the
commits that changed it with a change type (Ybodychange, Yformatchange, Ydocchange, Yintroduced,
Yrename, Ymovefromfile, Yfilerename, Ymultichange(Yrename,Ybodychange), ...), checked by hand.
Only five repositories' are used: Python asciinema and httpie, Java commons-lang, junit4 and
mockito (`[Z_]REPO-*.json`: 8 Python, 30 Java); the others are kept for an independent
evaluation: names are filtered before any file is opened, and an oracle whose repositoryName does
not match its file name is refused.

Per (repository, start commit): a private clone (`git clone`, objects hard-linked, `git checkout
--detach START`, `.git/info/attributes`: `*.py diff=python`, `*.java diff=java`), indexed once by
`cortex index --model none` into WORK_DIR/db/ (--reuse keeps clones and databases: only for reruns
on unchanged cortex_core, as newer code rebuilds a database only if its schema changed). Per
oracle (FILE, functionName, functionStartLine), each tool as a subprocess, timed with its process
start, best of --runs:

  cortex              cortex history FILE:LINE --json, against the whole oracle
  cortex-substantive  the same with --substantive (if `cortex history --help` offers it, else
                      n/a), against the oracle minus its entries of type exactly Yformatchange:
                      --substantive leaves out formatting-only commits and waypoints where the
                      symbol's own text did not change, so those are out by definition (the
                      oracle's Ymultichange(...,Yformatchange) and text-unchanged Yfilerename
                      entries stay: such misses are classified format-only / waypoint)
  git-funcname        git log --no-merges -L :functionName:FILE --format=%H -s START, the form a
                      person types: git takes the first funcname line matching the name (the
                      first overload, or a longer name containing it)
  git-range           git log --no-merges -L S,E:FILE ... START: S the oracle's line (the
                      signature, below Javadoc and annotation lines), E the end found without
                      cortex: `ast` end_lineno (Python), brace matching on the text with comments
                      and literals blanked (Java); cortex's span is only compared with it

--no-merges: CodeShovel lists no merges (it walks JGit's git.log().add(START).addPath(FILE)
.setRevFilter(NO_MERGES)), nor does cortex; git still follows ranges through merges.
Scores, per language and overall: the share of methods whose commit set equals the oracle's,
micro precision/recall and macro means (nothing listed: precision 1, as in bench_history.py, and
counted). Timings: p50/p95 per method; ratio = git's p50 / the tool's (above 1: faster).

Each commit listed by one side only (oracle vs cortex and vs cortex-substantive) is classified
from git alone: its -U0 diff against the first parent (renames followed) set against the
declarations named like the method in both blobs (found as above; a blob that does not parse has
none), the one meant following cortex's identity at that commit (its entry; for a miss the
nearest older and newer entries, then the start commit's): by qualified name (Python) or
parameter types, the start commit's overload siblings left out (Java). Facts: does the diff touch
it, its Javadoc, a same-named sibling; did its text or Javadoc change, in whitespace only; is the
commit in `git log START -- PATHS` (the simplified history CodeShovel walks); where is it relative
to the start of each history. KINDS lists the kinds in the order checked. "Lineage breaks": per
method, the commit where cortex's history starts while the oracle goes on (a missing link that
loses every older commit), with CodeShovel's change type there.

Run: /work/venv/bin/python bench/bench_oracles.py CODESHOVEL SUBJECTS [--work-dir DIR] [--reuse]
[--runs 3] [--examples 3] [--json]; CODESHOVEL a bare git dir or work tree (e.g.
/work/.mirror/ataraxie+codeshovel/repo), SUBJECTS holding owner+name/repo, owner+name or name
(e.g. /work/.mirror). Raw per-oracle results: WORK_DIR/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

import _benchlib as bl
from _oracles_classify import Git, KINDS, classify, components, lineage_break, sh, truth_for
from _oracles_decls import decls

ALLOWED = {"asciinema": ("python", "asciinema/asciinema"), "httpie": ("python", "httpie/cli"),
           "commons-lang": ("java", "apache/commons-lang"),
           "junit4": ("java", "junit-team/junit4"), "mockito": ("java", "mockito/mockito")}
ORACLE_DIR = "src/test/resources/oracles"
VARIANTS = ("cortex", "cortex-substantive", "git-funcname", "git-range")
log = bl.progress


def load_oracles(codeshovel: Path) -> tuple[list[dict], list[str]]:
    """The allowed oracles only: file names are filtered before any file is opened."""
    tree = (codeshovel / ORACLE_DIR).is_dir()
    oracles, refused = [], []
    for lang in ("python", "java"):
        repos = [r for r, (lg, _) in ALLOWED.items() if lg == lang]
        pat = re.compile(rf"^(Z_)?({'|'.join(map(re.escape, repos))})-.*\.json$")
        names = (sorted(p.name for p in (codeshovel / ORACLE_DIR / lang).iterdir()) if tree else
                 [n.rsplit("/", 1)[-1] for n in sh(codeshovel, "ls-tree", "--name-only", "HEAD",
                                                   f"{ORACLE_DIR}/{lang}/").split()])
        for name in names:
            m = pat.match(name)
            if not m:
                continue  # reserved for independent evaluation: never opened
            path = f"{ORACLE_DIR}/{lang}/{name}"
            o = json.loads((codeshovel / path).read_text() if tree
                           else sh(codeshovel, "show", f"HEAD:{path}"))
            if o.get("repositoryName") != m.group(2):
                refused.append(name)
                continue
            oracles.append({**o, "oracle": name, "language": lang})
    return oracles, refused


def find_subject(subjects: Path, repo_name: str) -> Path:
    owner, name = ALLOWED[repo_name][1].split("/")
    for cand in (f"{owner}+{name}/repo", f"{owner}+{name}", name, f"{name}.git", repo_name):
        p = subjects / cand
        if p.is_dir() and ((p / "objects").is_dir() or (p / ".git").exists()):
            return p
    raise SystemExit(f"bench_oracles: no clone of {owner}/{name} in {subjects}")


def prepare(o: dict, args, cortex: list[str]) -> dict:
    """A private clone at the start commit, indexed once."""
    start = o["startCommitName"]
    key = f"{o['repositoryName']}-{start[:12]}"
    clone, db = args.work_dir / "clones" / key, args.work_dir / "db" / f"{key}.db"
    if clone.exists() and not (args.reuse and sh(clone, "rev-parse", "HEAD", check=False).strip() == start):
        shutil.rmtree(clone)
    if not clone.exists():
        src = find_subject(args.subjects, o["repositoryName"])
        log(f"cloning {src} -> {clone}")
        bl.private_clone(src, clone, checkout=False)
        sh(clone, "checkout", "-q", "--detach", start)
    info = Path(sh(clone, "rev-parse", "--absolute-git-dir").strip()) / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("*.py diff=python\n*.java diff=java\n")
    db.parent.mkdir(parents=True, exist_ok=True)
    if not args.reuse:
        bl.remove_db(db)
    log(f"indexing {key} ...")
    r = bl.run([*cortex, "index", "--repo", str(clone), "--db", str(db), "--quiet", "--json",
                "--model", "none"], env=dict(os.environ, CORTEX_MODEL="none"))
    summary = json.loads(r.stdout)
    if summary.get("head") != start:
        raise SystemExit(f"bench_oracles: {db} indexes {summary.get('head')}, not {start}")
    return {"key": key, "clone": clone, "db": db, "index_seconds": r.seconds,
            "new_commits": summary.get("new_commits"),
            "total_commits": summary.get("total_commits")}


# ---------------------------------------------------------------------------------------------
# One method: the tools, then its differences


def tool_sets(o: dict, prep: dict, cortex: list[str], substantive: bool, runs: int) -> dict:
    clone, start, path = prep["clone"], o["startCommitName"], o["filePath"]
    line = o["functionStartLine"]
    ref_all = decls(o["language"], sh(clone, "show", f"{start}:{path}"), o["functionName"])
    ref = next((d for d in ref_all if line in (d["line"], d["start"])), None)
    end = ref["end"] if ref else None
    base = [*cortex, "history", f"{path}:{line}", "--json", "--repo", str(clone),
            "--db", str(prep["db"])]
    git = ["git", "-C", str(clone), "log", "--no-merges", "--format=%H", "-s"]
    commands = {"cortex": base,
                "cortex-substantive": [*base, "--substantive"] if substantive else None,
                "git-funcname": [*git, "-L", f":{o['functionName']}:{path}", start],
                "git-range": [*git, "-L", f"{line},{end}:{path}", start] if end else None}
    out = {"ref": ref, "ref_all": ref_all, "method_end": end, "results": {}}
    for variant, cmd in commands.items():
        if cmd is None:
            out["results"][variant] = None
            continue
        best = min((bl.run(cmd, cwd=clone, check=False) for _ in range(runs)),
                   key=lambda r: r.seconds)
        res = {"seconds": best.seconds, "returncode": best.returncode, "shas": [], "entries": None}
        if best.returncode != 0:
            res["error"] = best.stderr.decode("utf-8", "replace").strip()[-300:]
        elif variant.startswith("cortex"):
            data = json.loads(best.stdout)
            res["target"] = data.get("target")
            res["entries"] = [{"sha": e["commit"]["sha"], "time": e["commit"]["time"],
                               "change": e["change"], "path": e["path"], "name": e["name"],
                               "added": e["added"], "deleted": e["deleted"],
                               "subject": e["commit"]["subject"]} for e in data["entries"]]
            res["shas"] = [e["sha"] for e in res["entries"]]
        else:
            res["shas"] = best.stdout.decode().split()
        out["results"][variant] = res
    return out


def sibling_histories(o: dict, prep: dict, cortex: list[str], m: dict) -> list[dict]:
    """For a lineage break: the overload sibling (at the start commit) in whose cortex history
    most of the lost oracle commits are (cortex may give the old history to another overload)."""
    lost = {d["sha"] for d in m["differences"].get("cortex", []) if d["kind"] == "before-cortex-start"}
    out = []
    for d in m["ref_all"] if lost else []:
        if d is not m["ref"]:
            r = bl.run([*cortex, "history", f"{o['filePath']}:{d['line']}", "--json", "--repo",
                        str(prep["clone"]), "--db", str(prep["db"])], check=False)
            data = json.loads(r.stdout) if r.returncode == 0 else {"entries": []}
            found = lost & {e["commit"]["sha"] for e in data["entries"]}
            if found:
                out.append({"sibling": data["target"]["qualname"], "lost_found": len(found)})
    return sorted(out, key=lambda x: -x["lost_found"])[:1]


def score(rows: list[tuple[set, set]]) -> dict:
    tp, n = sum(len(p & t) for p, t in rows), len(rows)
    n_p, n_t = sum(len(p) for p, _ in rows), sum(len(t) for _, t in rows)
    mean = (lambda xs: sum(xs) / n if n else None)
    return {"methods": n, "exact": mean([p == t for p, t in rows]),
            "precision_micro": tp / n_p if n_p else None,
            "recall_micro": tp / n_t if n_t else None,
            "precision_macro": mean([len(p & t) / len(p) if p else 1.0 for p, t in rows]),
            "recall_macro": mean([len(p & t) / len(t) if t else 1.0 for p, t in rows]),
            "empty": sum(not p for p, _ in rows), "listed": n_p, "truth": n_t, "common": tp}


# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("codeshovel", type=Path, help="CodeShovel: bare git dir or work tree")
    p.add_argument("subjects", type=Path, help="folder of the subject repositories")
    p.add_argument("--work-dir", type=Path, default=Path("/work/bench-oracles"),
                   help="clones, databases, results.json (default /work/bench-oracles)")
    p.add_argument("--reuse", action="store_true", help="keep clones and databases (only on "
                   "unchanged cortex_core)")
    p.add_argument("--runs", type=int, default=3, help="runs per tool and method, best kept")
    p.add_argument("--examples", type=int, default=3, help="examples printed per kind")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = p.parse_args(argv)
    args.work_dir = args.work_dir.resolve()
    cortex = bl.cortex_command()
    substantive = "--substantive" in bl.run([*cortex, "history", "--help"]).stdout.decode()
    oracles, refused = load_oracles(args.codeshovel)
    report = {"benchmark": "oracles", "environment": bl.environment(),
              "config": {k: str(v) for k, v in vars(args).items()},
              "substantive_supported": substantive, "refused": refused, "subjects": {}}
    preps, gits, methods = {}, {}, []
    for o in oracles:
        k = (o["repositoryName"], o["startCommitName"])
        if k not in preps:
            preps[k] = prepare(o, args, cortex)
            gits[k] = Git(preps[k]["clone"])
            report["subjects"][preps[k]["key"]] = {x: str(v) if isinstance(v, Path) else v
                                                   for x, v in preps[k].items()}
    for o in oracles:
        k = (o["repositoryName"], o["startCommitName"])
        log(f"{o['oracle']} ...")
        m = tool_sets(o, preps[k], cortex, substantive, args.runs)
        m["oracle"] = {x: o[x] for x in ("oracle", "language", "repositoryName", "filePath",
                                         "functionName", "functionStartLine", "startCommitName",
                                         "expectedResult")}
        t = (m["results"]["cortex"] or {}).get("target") or {}
        m["cortex_span"] = [t.get("start_line"), t.get("end_line")]
        m["differences"] = {v: classify(o, gits[k], m["results"][v], m["ref"], m["ref_all"], v)
                            for v in ("cortex", "cortex-substantive")
                            if m["results"][v] and m["results"][v]["entries"] is not None}
        m["lineage_break"] = lineage_break(o, m["results"]["cortex"])
        if m["lineage_break"]:
            m["lineage_break"]["siblings"] = sibling_histories(o, preps[k], cortex, m)
        del m["ref"], m["ref_all"]
        methods.append(m)
    report["methods"] = methods
    report["scores"] = {group: {v: score([
        (set(m["results"][v]["shas"]), set(truth_for(v, m["oracle"]["expectedResult"])))
        for m in ms]) if all(m["results"][v] for m in ms) else None for v in VARIANTS}
        for group in ("python", "java", "all")
        for ms in [[m for m in methods if group in ("all", m["oracle"]["language"])]]}
    report["timings"] = {}
    for v in VARIANTS:
        secs = [m["results"][v]["seconds"] for m in methods if m["results"][v]]
        report["timings"][v] = ({"p50": bl.percentile(secs, 50), "p95": bl.percentile(secs, 95)}
                                if secs and len(secs) == len(methods) else None)
    (args.work_dir / "results.json").write_text(json.dumps(report, indent=1, default=str))
    bl.emit(report, args.json, render, args.examples)
    return 0


def render(report: dict, examples: int) -> str:
    fmt = (lambda x, pct=False: "n/a" if x is None else f"{x:.0%}" if pct else f"{x:.3f}")
    ms = report["methods"]
    out = ["cortex history vs CodeShovel oracles (git log -L as baseline)", "=" * 62,
           *bl.environment_lines(report["environment"])]
    for key, s in report["subjects"].items():
        out.append(f"subject {key}: {s['total_commits']} commits, index "
                   f"{bl.fmt_seconds(s['index_seconds'])} ({s['new_commits']} new)")
    out.append(f"oracles: {sum(m['oracle']['language'] == 'python' for m in ms)} python, "
               f"{sum(m['oracle']['language'] == 'java' for m in ms)} java"
               + (f"; refused: {', '.join(report['refused'])}" if report["refused"] else ""))
    out.append("cortex-substantive: " + ("cortex history --substantive, scored"
               if report["substantive_supported"] else "n/a (no --substantive in `cortex history "
               "--help`); would be scored") + " against the oracle minus its Yformatchange-only "
               "entries (formatting-only commits are out by definition)")
    for group, scores in report["scores"].items():
        out += ["", f"{group} ({scores['cortex']['methods']} methods; truth: the oracle's commits)"]
        rows = [[label] + [fmt(scores[v][key], key == "exact") if scores[v] else "n/a"
                           for v in VARIANTS]
                for label, key in (("exact match (methods)", "exact"),
                                   ("precision micro", "precision_micro"),
                                   ("recall micro", "recall_micro"),
                                   ("precision macro", "precision_macro"),
                                   ("recall macro", "recall_macro"))]
        rows.append(["listed / truth / common"] + [f"{s['listed']} / {s['truth']} / {s['common']}"
                                                   if s else "n/a" for s in map(scores.get, VARIANTS)])
        rows.append(["methods with nothing listed"] + [str(s["empty"]) if s else "n/a"
                                                       for s in map(scores.get, VARIANTS)])
        out.append(bl.table(rows, ["", *VARIANTS]))
    t = report["timings"]
    out += ["", "Time per method (subprocess, best of runs; ratio = git's p50 / this tool's p50)"]
    out.append(bl.table([[v, "n/a", "n/a", "n/a", "n/a"] if t[v] is None else
                         [v, bl.fmt_seconds(t[v]["p50"]), bl.fmt_seconds(t[v]["p95"]),
                          *(f"{bl.ratio(t[g]['p50'], t[v]['p50']):.2f}x"
                            for g in ("git-funcname", "git-range"))] for v in VARIANTS],
                        ["tool", "p50", "p95", "git-funcname/this", "git-range/this"]))
    spans = [m for m in ms if m["method_end"]]
    differ = [f"{m['oracle']['oracle'][:-5]} (cortex {m['cortex_span']}, here "
              f"{m['oracle']['functionStartLine']}-{m['method_end']})"
              for m in spans if m["cortex_span"][1] != m["method_end"]]
    out.append(f"method end for git-range found for {len(spans)}/{len(ms)}; cortex's span ends "
               f"elsewhere for {len(differ)}" + (": " + "; ".join(differ) if differ else ""))
    out += ["", "Misses by oracle change type (a Ymultichange counts once per component)"]
    types: dict = {}
    for m in ms:
        for v in VARIANTS:
            r = m["results"][v]
            for sha, typ in truth_for(v, m["oracle"]["expectedResult"]).items():
                if r is not None and sha not in r["shas"]:
                    for c in components(typ):
                        types.setdefault(c, dict.fromkeys(VARIANTS, 0))[v] += 1
    out.append(bl.table([[k, *(str(n[v]) if ms[0]["results"][v] else "n/a" for v in VARIANTS)]
                         for k, n in sorted(types.items(), key=lambda kv: -kv[1]["cortex"])],
                        ["oracle type", *VARIANTS]))
    breaks = [m for m in ms if m["lineage_break"]]
    out += ["", f"Lineage breaks: cortex's history starts where the oracle goes on ({len(breaks)})"]
    for m in breaks:
        b = m["lineage_break"]
        lost = sum(d["kind"] == "before-cortex-start" for d in m["differences"].get("cortex", []))
        out.append(f"  {b['sha'][:10]} {b['method'][:-5]}: cortex {b['cortex_change']}, oracle "
                   f"{b['oracle_type']}; {lost} older oracle commits missed"
                   + "".join(f", {x['lost_found']} of them in cortex's history of {x['sibling']}"
                             for x in b["siblings"]) + f"; {b['subject'][:50]!r}")
    for v in ("cortex", "cortex-substantive"):
        if not ms[0]["results"][v]:
            out += ["", f"Differences, {v}: n/a"]
            continue
        kinds: dict = {}
        for d in (d for m in ms for d in m["differences"].get(v, [])):
            kinds.setdefault((d["side"], d["kind"]), []).append(d)
        order = sorted(kinds.items(), key=lambda kv: (kv[0][0] != "miss", -len(kv[1])))
        out += ["", f"Differences, {v} vs oracle: {sum(map(len, kinds.values()))} commits (miss: "
                "in the oracle only; extra: listed by cortex only)"]
        out.append(bl.table([[s, k, str(len(ds)), str(len({d['method'] for d in ds})),
                              KINDS.get((s, k)) or KINDS[("both", k)]] for (s, k), ds in order],
                            ["side", "kind", "commits", "methods", "meaning"]))
        for (s, k), ds in order:
            out.append(f"  {s} {k}:")
            picked: list = []
            for d in ds:  # examples from different methods first
                if len(picked) < examples and d["method"] not in {x["method"] for x in picked}:
                    picked.append(d)
            for d in picked + [d for d in ds if d not in picked][:examples - len(picked)]:
                out.append(f"    {d['sha'][:10]} {d['method'][:-5]} "
                           f"[{d['oracle_type'] or d['cortex_change']}] {d['subject'][:50]!r}: "
                           f"{d['why']}")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
