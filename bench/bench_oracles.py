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
import ast
import difflib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import _benchlib as bl

ALLOWED = {"asciinema": ("python", "asciinema/asciinema"), "httpie": ("python", "httpie/cli"),
           "commons-lang": ("java", "apache/commons-lang"),
           "junit4": ("java", "junit-team/junit4"), "mockito": ("java", "mockito/mockito")}
ORACLE_DIR = "src/test/resources/oracles"
VARIANTS = ("cortex", "cortex-substantive", "git-funcname", "git-range")
WAYPOINT_TYPES = {"Yfilerename", "Ymovefromfile", "Yrename"}
KINDS = {  # (side, kind) -> meaning, in the order checked (wrong-target first on both sides)
    ("both", "wrong-target"): "PATH:LINE gave another symbol (anonymous class methods are none)",
    ("miss", "no-history"): "cortex listed nothing",
    ("miss", "before-cortex-start"): "older than cortex's oldest entry (see Lineage breaks)",
    ("miss", "not-found-by-name"): "no declaration of the method's names in the changed files",
    ("miss", "waypoint"): "file rename/move, text unchanged (--substantive drops it by design)",
    ("miss", "own-text-changed"): "method text changed and the diff touches it (BUG)",
    ("miss", "javadoc-only"): "only the Javadoc changed, not in whitespace only",
    ("miss", "format-only"): "whitespace-only change (--substantive drops it by design)",
    ("miss", "text-changed-outside-diff"): "text changed, no changed line inside it",
    ("miss", "untouched"): "the diff touches neither the method nor its Javadoc",
    ("extra", "waypoint"): "cortex entry with 0 lines (moved/renamed/rescoped)",
    ("extra", "side-branch"): "not in `git log START -- PATHS` (git's history simplification)",
    ("extra", "overload-sibling"): "only another declaration with the same name changed",
    ("extra", "before-oracle-birth"): "older than the oracle's Yintroduced: cortex links further",
    ("extra", "own-text-changed"): "method text changed; the oracle omits it",
    ("extra", "javadoc-only"): "only the Javadoc changed (not whitespace only); oracle omits it",
    ("extra", "format-only"): "whitespace-only change; the oracle omits it",
    ("extra", "text-changed-outside-diff"): "text changed, no changed line inside it",
    ("extra", "untouched"): "the diff touches neither the method nor its Javadoc (BUG?)",
}
JAVA_MODS = (r"(?:(?:public|protected|private|static|final|abstract|synchronized|native|default"
             r"|strictfp)\s+)*")
NOT_TYPES = {"return", "new", "throw", "else", "case", "yield", "await", "assert"}
JAVA_NOISE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
log = bl.progress


def sh(cwd, *args: str, check: bool = True) -> str:
    return bl.run(["git", "-C", str(cwd), *args], check=check).stdout.decode("utf-8", "replace")


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
# Declarations named NAME in a blob, found without cortex: Python by `ast`, Java by brace matching
# on the text with comments and literals blanked. Each: start (first annotation or decorator
# line), line (signature), end, doc (Javadoc line range), doc_text, key (Java: parameter types;
# Python: parameter names), qual (Python), text.

def java_decls(text: str, name: str) -> list[dict]:
    masked = JAVA_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    lines, raw, offsets = masked.split("\n"), text.split("\n"), [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    decl = re.compile(rf"^\s*(?:@\w+(?:\s*\([^)]*\))?\s*)*{JAVA_MODS}(?:<[^;{{}}()]*>\s*)?"
                      rf"(?P<type>[\w$][\w$.\[\]<>?, ]*?)\s+{re.escape(name)}\s*\(")
    found = []
    for i, line in enumerate(lines):
        m = decl.match(line)
        if not m or m.group("type").split()[-1] in NOT_TYPES:
            continue
        params_end = closing(masked, offsets[i] + m.end() - 1, "(", ")")
        body = re.compile(r"[{;]").search(masked, params_end or 0)
        if params_end is None or body is None:
            continue
        end = body.start() if body.group() == ";" else closing(masked, body.start(), "{", "}")
        if end is None:
            continue
        start = i + 1
        while start > 1 and raw[start - 2].strip().startswith("@"):
            start -= 1  # annotations on lines of their own belong to the declaration
        doc, j = None, start - 2
        if j >= 0 and raw[j].strip().endswith("*/"):
            while j >= 0 and "/*" not in raw[j]:
                j -= 1
            doc = (j + 1, start - 1) if j >= 0 and "/**" in raw[j] else None
        end_line = masked.count("\n", 0, end) + 1
        found.append({"start": start, "line": i + 1, "end": end_line, "doc": doc, "qual": None,
                      "doc_text": "\n".join(raw[doc[0] - 1:doc[1]]) if doc else "",
                      "key": java_params(masked[offsets[i] + m.end():params_end]),
                      "text": "\n".join(raw[start - 1:end_line])})
    return found


def closing(text: str, pos: int, open_: str, close: str) -> int | None:
    """The index of the bracket closing the one at `pos`."""
    depth = 0
    for i in range(pos, len(text)):
        depth += (text[i] == open_) - (text[i] == close)
        if depth == 0:
            return i
    return None


def java_params(params: str) -> str:
    """Parameter types only (names, `final`, annotations and spaces dropped)."""
    parts, depth, cur = [], 0, ""
    for ch in params + ",":
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            p = re.sub(r"@\w+(\s*\([^)]*\))?|\bfinal\b", " ", cur).replace("...", "[] ").split()
            parts += ["".join(p[:-1]) or p[0]] if p else []
            cur = ""
        else:
            cur += ch
    return ",".join(parts)


def python_decls(text: str, name: str) -> list[dict]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines, found = text.split("\n"), []

    def walk(node, quals):
        for child in ast.iter_child_nodes(node):
            q = quals
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = quals + (child.name,)
                if child.name == name and not isinstance(child, ast.ClassDef):
                    start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    a = child.args
                    found.append({
                        "start": start, "line": child.lineno, "end": child.end_lineno,
                        "doc": None, "doc_text": "", "qual": ".".join(q),
                        "key": ",".join(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs),
                        "text": "\n".join(lines[start - 1:child.end_lineno])})
            walk(child, q)
    walk(tree, ())
    return found


def decls(lang: str, text: str | None, name: str) -> list[dict]:
    return [] if text is None else (python_decls if lang == "python" else java_decls)(text, name)


def pick(cands: list[dict], key: str, qual: str | None, siblings: set[str]) -> dict | None:
    """The declaration meant: Python by qualified name; Java, overload siblings left out, the
    one whose parameter types are nearest."""
    if not cands:
        return None
    if qual and cands[0]["qual"] is not None:
        return next((d for d in cands if d["qual"] == qual), None)
    mine = [d for d in cands if d["key"] == key or d["key"] not in siblings]
    like = (lambda d: 2.0 if d["key"] == key
            else difflib.SequenceMatcher(None, d["key"], key).ratio())
    return max(mine, key=like) if mine else None


def bare(qualname: str) -> str:
    """A cortex qualified name without its tags: "A.f(int, T[]).g[2]" -> "A.f.g"."""
    while (shorter := re.sub(r"[(\[][^()\[\]]*[)\]]", "", qualname)) != qualname:
        qualname = shorter
    return qualname


def tag_params(qualname: str) -> str | None:
    """The parameter types cortex tags an overload with, normalized like java_params()."""
    m = re.search(r"\(([^()]*)\)$", qualname)
    inner = m and re.sub(r"@\w+|\bfinal\b", " ", m.group(1)).replace("...", "[]")
    return re.sub(r"\s+", "", inner) if m else None


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


def components(change_type: str) -> list[str]:
    m = re.match(r"Ymultichange\((.*)\)$", change_type)
    return [c.strip() for c in m.group(1).split(",")] if m else [change_type]


def truth_for(variant: str, expected: dict) -> dict:
    if variant == "cortex-substantive":
        return {s: t for s, t in expected.items() if t != "Yformatchange"}
    return expected


class Git:
    """Cached git facts of one clone."""

    def __init__(self, clone: Path):
        self.clone, self._anc, self._simpl, self._diff = clone, {}, {}, {}

    def ancestors(self, sha: str) -> set[str]:  # strict ancestors
        if sha not in self._anc:
            self._anc[sha] = set(sh(self.clone, "rev-list", f"{sha}^@", check=False).split())
        return self._anc[sha]

    def simplified(self, start: str, paths: tuple[str, ...]) -> set[str]:
        if paths not in self._simpl:
            self._simpl[paths] = set(sh(self.clone, "log", "--format=%H", start, "--",
                                        *paths).split())
        return self._simpl[paths]

    def diff(self, sha: str, ext: str) -> tuple[str | None, dict]:
        """(first parent, {new path: (old path, [(old start, count, new start, count)])})."""
        if sha not in self._diff:
            parents = sh(self.clone, "rev-list", "--parents", "-n1", sha).split()[1:]
            base = parents[0] if parents else sh(self.clone, "hash-object", "-t", "tree",
                                                 "/dev/null").strip()
            files, old, header = {}, None, False
            for line in sh(self.clone, "diff", "-U0", "-M", "--no-color", "--no-ext-diff", base,
                           sha, "--", f"*{ext}").split("\n"):
                if line.startswith("diff --git "):
                    header = True
                elif header and line.startswith("--- "):
                    old = None if line == "--- /dev/null" else line[6:]
                elif header and line.startswith("+++ "):
                    hunks = files[old if line == "+++ /dev/null" else line[6:]] = (old, [])
                    header = False
                elif line.startswith("@@") and not header:
                    a, b, c, d = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@",
                                          line).groups()
                    hunks[1].append((int(a), int(b or 1), int(c), int(d or 1)))
            self._diff[sha] = (parents[0] if parents else None, files)
        return self._diff[sha]

    def blob(self, sha: str | None, path: str | None) -> str | None:
        if not sha or not path:
            return None
        r = bl.run(["git", "-C", str(self.clone), "show", f"{sha}:{path}"], check=False)
        return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def touched(hunks, side: str, lo: int, hi: int) -> bool:
    return any(n and s <= hi and s + n - 1 >= lo
               for s, n in ((a, b) if side == "old" else (c, d) for a, b, c, d in hunks))


def facts(g: Git, o: dict, sha: str, hints: list[tuple[str, str]], ref: dict,
          ref_all: list[dict]) -> dict:
    """What the commit did to the declaration meant. hints: (path, cortex qualname) of the
    method's identity around the commit, best first, each tried in its path, then in files of
    the same base name, then in every file the commit changed."""
    parent, diff = g.diff(sha, ".py" if o["language"] == "python" else ".java")
    strip = (lambda text: re.sub(r"\s+", "", text))
    for path, qualname in hints:
        name, qual, key = bare(qualname).rsplit(".", 1)[-1], bare(qualname), tag_params(qualname)
        key = ref["key"] if key is None else key
        siblings = ({d["key"] for d in ref_all if d["key"] != ref["key"]}
                    if name == o["functionName"] else set())
        base = path.rsplit("/", 1)[-1]
        for new_path in dict.fromkeys([p for p in diff if path in (p, diff[p][0])]
                                      + [p for p in diff if p.rsplit("/", 1)[-1] == base]
                                      + list(diff)):
            old_path, hunks = diff[new_path]
            old_d = decls(o["language"], g.blob(parent, old_path), name)
            new_d = decls(o["language"], g.blob(sha, new_path), name)
            if not old_d and not new_d:
                continue
            old_t, new_t = pick(old_d, key, qual, siblings), pick(new_d, key, qual, siblings)
            sides = ((old_t, old_d, "old"), (new_t, new_d, "new"))
            both = old_t and new_t
            return {"path": new_path, "name": name, "found": bool(old_t or new_t),
                    "own": any(t and touched(hunks, s, t["start"], t["end"]) for t, _, s in sides),
                    "doc": any(t and t["doc"] and touched(hunks, s, *t["doc"]) for t, _, s in sides),
                    "sibling": any(touched(hunks, s, d["start"], d["end"])
                                   for t, ds, s in sides for d in ds if d is not t),
                    "siblings": max(len(old_d), len(new_d)) - (1 if old_t or new_t else 0),
                    "changed": (old_t or {}).get("text") != (new_t or {}).get("text"),
                    "ws_only": bool(both and strip(old_t["text"]) == strip(new_t["text"])),
                    "doc_ws": bool(both and strip(old_t["doc_text"]) == strip(new_t["doc_text"])),
                    "born": old_t is None, "died": new_t is None}
    return {"path": None}


def describe(f: dict) -> str:
    if not f["path"]:
        return "no declaration of that name in the files it changes"
    if not f["found"]:
        return f"{f['path']}: only other declarations named {f['name']} ({f['siblings']})"
    return (f"{f['path']}: {f['name']} {'touched' if f['own'] else 'untouched'} by the diff"
            + (", text unchanged" if not f["changed"] else
               ", whitespace only" if f["ws_only"] else ", text changed")
            + (f", Javadoc touched{' (whitespace only)' if f['doc_ws'] else ''}" if f["doc"] else "")
            + (f", a same-named sibling touched ({f['siblings']})" if f["sibling"] else "")
            + (", created" if f["born"] else ", deleted" if f["died"] else ""))


def text_kind(f: dict) -> str:
    if f["own"] and not f["ws_only"]:
        return "own-text-changed"
    if f["doc"] and not f["doc_ws"]:
        return "javadoc-only"
    if f["own"] or f["doc"]:
        return "format-only"
    return "text-changed-outside-diff" if f["changed"] else "untouched"


def classify(o: dict, g: Git, res: dict, ref: dict | None, ref_all: list[dict],
             variant: str) -> list[dict]:
    truth, listed, entries = truth_for(variant, o["expectedResult"]), res["shas"], res["entries"]
    by_sha = {e["sha"]: e for e in entries}
    target = res.get("target") or {}
    wrong = bool(target.get("qualname")) and \
        bare(target["qualname"]).rsplit(".", 1)[-1] != o["functionName"]
    paths = tuple(sorted({o["filePath"], *(e["path"] for e in entries)}))
    oldest = listed[-1] if listed else None
    born = [s for s, t in truth.items() if "Yintroduced" in components(t)]
    items = []
    for side, shas in (("miss", [s for s in truth if s not in listed]),
                       ("extra", [s for s in listed if s not in truth])):
        for sha in shas:
            e = by_sha.get(sha)
            when, subject = sh(g.clone, "log", "-1", "--format=%ct%x00%s", sha).strip().split("\0")
            near = [e] if e else ([x for x in entries if x["time"] <= int(when)][:1]
                                  + [x for x in entries if x["time"] > int(when)][-1:])
            hints = [(x["path"], x["name"]) for x in near]
            hints.append((o["filePath"], target.get("qualname") or o["functionName"]))
            f = facts(g, o, sha, hints, ref, ref_all) if ref and not wrong else {"path": None}
            why = describe(f)
            if wrong:
                kind, why = "wrong-target", f"PATH:LINE gave {target['qualname']}"
            elif side == "miss":
                if not listed:
                    kind = "no-history"
                elif sha in g.ancestors(oldest):
                    kind = "before-cortex-start"
                    why = (f"cortex starts at {oldest[:10]} ({by_sha[oldest]['change']}), "
                           f"oracle there: {truth.get(oldest, 'not listed')}")
                elif not f.get("found"):
                    kind = "not-found-by-name"
                elif (not f["changed"] and not f["doc"]
                      and set(components(truth[sha])) <= WAYPOINT_TYPES):
                    kind = "waypoint"
                else:
                    kind = text_kind(f)
            elif e["change"] not in ("added", "deleted") and e["added"] == e["deleted"] == 0:
                kind, why = "waypoint", f"{e['change']} at {e['path']} as {e['name']}, 0 lines"
            elif sha not in g.simplified(o["startCommitName"], paths):
                kind = "side-branch"
            elif f["path"] and f["sibling"] and not f["own"]:
                kind = "overload-sibling"
            elif born and any(sha in g.ancestors(b) for b in born):
                kind, why = "before-oracle-birth", f"oracle: Yintroduced at {born[0][:10]}; {why}"
            else:
                kind = text_kind(f) if f["path"] else "untouched"
            items.append({"side": side, "kind": kind, "sha": sha, "oracle_type": truth.get(sha),
                          "cortex_change": e["change"] if e else None, "method": o["oracle"],
                          "subject": subject, "why": why})
    return items


def lineage_break(o: dict, res: dict | None) -> dict | None:
    """Where cortex's history starts while the oracle goes on."""
    if not res or not res["entries"]:
        return None
    oldest = res["entries"][-1]
    t = o["expectedResult"].get(oldest["sha"])
    if t is None or "Yintroduced" in components(t):
        return None
    return {"method": o["oracle"], "sha": oldest["sha"], "cortex_change": oldest["change"],
            "oracle_type": t, "subject": oldest["subject"]}


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
