#!/usr/bin/env python3
"""Symbol history: `cortex history FILE::FUNC` against `git log -L :FUNC:FILE`, speed and agreement.

For a deterministic sample of Python (or, with --language go, Go) functions and methods alive at
HEAD (whose regex singles out their def line, since `git log -L :regex:` takes the first match),
this measures

  (a) git log -L :REGEX:FILE --format=%H -s   in a private clone with `*.py diff=python`
                                               (Go: `*.go diff=golang`)
  (b) cortex history FILE::QUALNAME --json     as a subprocess, process start included
  (c) cortex_core.query.history.history(...)         in process on an open reader, warm, best of 5

and prints p50/p95 of each with the ratios git/(b) and git/(c) (goals: (b) beats git, (c) is at
least 100x faster). Then it compares the commit sets per function (precision, recall, exact
matches; git is the reference) and explains every commit listed by one tool only, by reading the
function's text in the commit and its first parent (cortex_core.lang.symbols on the blobs, the
function's identity at that commit from the index's rename/move lineage) and the lines each tool
saw change (git's own `-L` patch, or the blob diff).

How git defines the range: `-L :RE:FILE` starts at the first line matching RE that is also a
funcname line of the `python` diff driver (`^[ \\t]*((class|(async[ \\t]+)?def)[ \\t].*)$`) and
ends just before the next funcname line at any indentation, or at the end of the file. Decorators
above the `def` are outside it; blank lines, comments, decorators and module-level code after the
function, up to the next `def`/`class`, are inside it; a nested `def`/`class` (or a docstring line
starting with "def "/"class ") ends it. Going back in history, git follows that line range through
the diffs (renamed files included) and stops where all its lines were added. Cortex's range is the
definition itself, decorators included, up to its last non-blank line, nested definitions included
(a function's history rolls up its members), and its identity follows renames and moves recorded
at indexing.

Go (--language go): `.go` files, `_test.go` included (test functions are functions; the report
says how many were sampled there). The regex matches the `func` line only: for a function
`^func[ \t][ \t]*NAME[ \t]*[[(]` (`[`: type parameters); for a method, which cortex calls
`Repo.Save`, `^func[ \t]*(\([^)]*[ \t*]\)\{0,1\}Repo\(\[[^]]*]\)\{0,1\}[ \t]*)[ \t]*Save[ \t]*[[(]`
(receiver name, `*` and type arguments optional: `(r *Repo)`, `(Repo)`, `(r Repo[T])`). Methods
of other types named alike are told apart, so no name-uniqueness rule applies; two `func init(`
are skipped (the regex does not single out one line). git's `golang` driver makes a funcname line
of any line whose first word starts with `func` (`func`, but also `funcMap := ...` or a raw
string's `function __foo`) and of `type ... struct` / `type ... interface` lines, at any
indentation; other declarations (`var`, `const`, `type X int`) are not. So git's range is the
`func` line up to the next such line: the function, the blank lines and the doc comment of the
next function (git-trailing-comment, the Go analogue of Python's trailing decorators), and any
var/const/type declarations in between (git-trailing-code); a func literal starting a line inside
the body, a local `type ... struct` or a raw-string line starting with "func" ends it
(git-range-cut-short). Going back, git follows the range as for Python.
The function's own doc comment is outside git's range and inside cortex's (as godoc reads it,
like Java's Javadoc): a commit changing only that comment is own-decorator. There are no
decorators: outside-git-range and git-trailing-decorator do not occur; every other check applies
as it is, with tree-sitter's Go grammar and `//`, `/*` as comments.

Moves between files: for each rename/move link of a sampled function's lineage whose path
changes, git's own rename detection on that commit (`git diff -M --name-status` against the first
parent: what `git log -L` and `--follow` use) tells a whole-file rename (the pair is detected:
git -L follows it too) from a cross-file move (the function went into another file, or git sees
no rename: git's range ends there, its lines all added). Functions with a cross-file move are
reported apart: agreement over all functions, without them, over them, and over them counting
only the commits from their newest cross-file move on (git cannot list the older ones).

Kinds of differences (each: one commit listed by one tool only, for one function), in the order
they are checked; each was seen on psf/requests, scrapy/scrapy or (Go) spf13/cobra and checked by
hand on examples:

  kind                    listed by  bug?  meaning
  ----------------------  ---------  ----  ------------------------------------------------------
  git-merge               git        no    a merge whose result for the range differs from every
                                           parent (conflict resolution, evil merge); cortex never
                                           lists merges: their changes are in the merged commits
  git-text-unchanged      git        no    the function's text is identical on both sides, but the
                                           diff deletes and re-adds its lines (it moved within its
                                           file): git's range follows the lines, cortex compares
                                           the texts and records nothing (seen on Go)
  cortex-missed-blank-lines git      BUG   only blank lines inside the function changed, and the
                                           function has nested definitions: cortex credits no
                                           blank line to a symbol that has children (meant for
                                           the blank lines between a class's methods; it also
                                           hits functions), whereas a function without nested
                                           definitions does get such commits
  cortex-missed           git        BUG   the function's own lines changed in the commit (or it
                                           was created/deleted there), cortex does not list it
  cortex-unlinked-rename  git        gap   git's range, followed back, reaches the function under
                                           another name: at the commit where cortex's history
                                           starts ("added"), git's range came from a definition
                                           that the commit removed and that is alike (difflib
                                           ratio >= 0.5): a rename with edits, which cortex does
                                           not pair (it pairs identical bodies, the same
                                           qualified name in another file, and since 6932ba3 the
                                           only definition that left a scope with the only one
                                           that arrived), so it misses the older commits
  git-before-birth        git        no    the function exists on neither side under its cortex
                                           identity and no rename explains it: git's range came
                                           from other lines (the code the function was extracted
                                           from, a definition it was copied from and that still
                                           exists, or one it replaced)
  git-trailing-blank      git        no    only blank lines after the function changed: they are
                                           in git's range, which runs to the next def/class line
  git-trailing-comment    git        no    only comments (and blank lines) after the function
  git-trailing-decorator  git        no    the decorators of the next definition (with blank lines
                                           and comments)
  git-range-other-def     git        no    lines of another definition, which git's range took in
                                           going back (lines deleted inside a range join it, the
                                           def lines of neighbours included)
  git-trailing-code       git        no    code after the function up to the next def/class line:
                                           module or class level, or the enclosing function's
                                           code after a nested def
  cortex-file-rename      cortex     no    the file was renamed, the function's text did not
                                           change: cortex records the move as an event of the
                                           symbol ("moved"); git -L shows nothing (by design)
  cortex-parent-rename    cortex     no    the qualified name changed (its class was renamed, it
                                           moved to another class, or a syntax error such as a
                                           committed conflict marker made tree-sitter nest it
                                           differently) and its text did not: cortex records a
                                           "renamed" event (by design)
  cortex-spurious         cortex     BUG   the text did not change and no diff line touched it,
                                           yet cortex lists the commit
  diff-realignment        cortex     BUG   the text is identical before and after, but the diff
                                           cortex maps (libgit2's, which has no indent heuristic)
                                           slid an inserted block by a line so that it covers a
                                           line of the function identical to the inserted one
                                           (typically `@property` or a blank line); git's own diff
                                           (indent heuristic on by default) does not (checked);
                                           a minor false positive of cortex
  git-simplified-away     cortex     no    the commit is not in `git log REV -- PATH`: at a merge
                                           whose file equals one parent's, git's default history
                                           simplification follows that parent only; -L walks the
                                           same simplified history
  cortex-syntax-error     cortex     no    the file does not parse on one side of the commit;
                                           tree-sitter's error recovery loses or re-nests the
                                           definition, so cortex records it as added/deleted
  cortex-earlier-life     cortex     no    the commit is older than a later re-creation of the
                                           function ("added" after a "deleted"): cortex keeps one
                                           identity per file and qualified name, so its history
                                           includes the earlier life; git stops at the re-creation
  cortex-unlinked-requalify cortex   gap   cortex says "added" (or "renamed" from elsewhere) but
                                           the parent holds the same text under another qualified
                                           name (class renamed, merged or split, bodies too short
                                           for a fingerprint): the history splits there
  git-stopped-early       cortex     no    the commit is older than the oldest one git lists: git's
                                           range ended where its lines were all added (function
                                           moved within the file or from another file, class
                                           renamed, file moved without git seeing a rename), while
                                           cortex follows its identity on (the detail says what
                                           cortex recorded at git's oldest commit)
  git-range-diverted      cortex     no    at a newer commit that git lists, git's range in the
                                           parent does not hold the function's def line although
                                           the function is there: the diff re-added the def line
                                           (function moved or restructured) and git went on with
                                           other lines, so it never reaches this commit
  own-decorator           cortex     no    only the function's own decorators (Go: its doc comment)
                                           changed: git's range starts at the def line
  git-range-cut-short     cortex     no    only lines after the first nested def/class changed (or
                                           after a docstring line starting with "def "/"class "):
                                           git's range ends before them
  outside-git-range       cortex     no    both: decorators, and lines after a nested def
  git-trailing-deletion   cortex     no    the function's last lines were deleted and the diff
                                           places the deletion after the last line of git's range
                                           (the blank lines kept above it): git attributes a
                                           deletion to its range only when it falls between two of
                                           its lines
  git-merge-dropped       cortex     no    a later merge has, for the function, the same text as
                                           its first identical parent (in parent order), which
                                           does not contain the commit: git's TREESAME
                                           simplification, applied by -L to the range, follows
                                           that parent only (the change was overwritten, or made
                                           on both branches)
  git-range-shrunk        cortex     no    the changed lines are outside the range git carried back
                                           to this commit: between two commits it lists, git's
                                           range keeps its size and its place relative to the def
                                           line (as in the parent of the next newer listed commit,
                                           or at HEAD); it lost its end at a later commit (a nested
                                           def or a lambda turned into one, a blank line deleted
                                           just after it, a git-trailing-deletion) or slid up (a
                                           hunk replacing decorator and def line together), and
                                           git never widens it going back
  unexplained-git         git        ?     none of the above: read the example
  unexplained-cortex      cortex     ?     none of the above: read the example

Besides the differences, every rename/move link cortex follows for the sampled functions is
checked: the difflib similarity of the definition before and after it; links below 0.5 are
listed (a wrong link would add another function's commits, which git -L never reaches).

Run with the venv's python: `/work/venv/bin/python bench/bench_history.py REPO [--sample 50]`.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

import _benchlib as bl
from _history_explain import Explainer
from _history_model import LANGS, Func, Lang
from _history_report import agreement, render, timings

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------------------------------
# The sample


def sample_functions(con, repo, head, n: int, seed: int, kinds: list[str], lang: Lang):
    """Functions alive at HEAD, shuffled deterministically, kept while the git regex built from
    their name matches exactly one funcname line of the HEAD blob: their definition line."""
    import apsw  # noqa: F401 - the connection's module
    rows = con.execute(
        "select s.id, f.path, s.qualname, s.name, s.kind, min(sp.start_line), max(sp.end_line),"
        " count(*) from symbols s join files f on f.id = s.file_id"
        " join symbol_spans sp on sp.symbol_id = s.id"
        f" where s.alive = 1 and s.kind in ({','.join('?' * len(kinds))})"
        f" and f.path like '%{lang.suffix}' group by s.id order by f.path, s.qualname",
        kinds).fetchall()
    same_name = {}
    for path, name, count in con.execute(
            "select f.path, s.name, count(*) from symbols s join files f on f.id = s.file_id"
            " where s.alive = 1 group by f.path, s.name"):
        same_name[(path, name)] = count
    rows = list(rows)
    random.Random(seed).shuffle(rows)
    skipped = {"name not unique in its file": 0, "duplicate definitions (several spans)": 0,
               "name not plain ASCII": 0, "regex does not single out the def line": 0}
    chosen: list[Func] = []
    tree = head.tree
    for sid, path, qualname, name, kind, start, end, spans in rows:
        if len(chosen) >= n:
            break
        if spans > 1:
            skipped["duplicate definitions (several spans)"] += 1
            continue
        if lang.unique_names and same_name.get((path, name), 0) > 1:
            skipped["name not unique in its file"] += 1
            continue
        if not IDENT.match(name) or not lang.unique_names and "." in qualname and \
                not IDENT.match(qualname.split(".")[-2]):
            skipped["name not plain ASCII"] += 1
            continue
        bre, py = lang.regex(qualname, name, kind)
        lines = repo[tree[path].id].data.decode("utf-8", "replace").split("\n")
        hits = [i + 1 for i, line in enumerate(lines)
                if lang.funcname.match(line) and py.match(line)]
        if len(hits) != 1 or not start <= hits[0] <= end:
            skipped["regex does not single out the def line"] += 1
            continue
        chosen.append(Func(sid, path, qualname, name, kind, start, end, bre))
    return chosen, skipped, len(rows)


# ---------------------------------------------------------------------------------------------
# Measuring


def time_git(clone: Path, fn: Func, rev: str, runs: int) -> None:
    best = None
    for _ in range(runs):
        r = bl.run(["git", "-C", str(clone), "log", f"-L:{fn.bre}:{fn.path}", "--format=%H", "-s",
                    rev])
        best = r.seconds if best is None else min(best, r.seconds)
        shas = r.stdout.decode().split()
    fn.git_seconds, fn.git_shas = best, shas


def time_cli(cortex: list[str], repo: Path, db: Path, fn: Func, runs: int) -> None:
    import json
    best = None
    for _ in range(runs):
        r = bl.run([*cortex, "history", fn.label, "--json", "--repo", str(repo), "--db", str(db)])
        best = r.seconds if best is None else min(best, r.seconds)
    data = json.loads(r.stdout)
    fn.cli_seconds = best
    fn.cortex_shas = [e["commit"]["sha"] for e in data["entries"]]
    fn.cortex_entries = {e["commit"]["sha"]: e for e in data["entries"]}


def time_in_process(con, fn: Func, runs: int) -> list[str]:
    from cortex_core.query.history import history
    from cortex_core.query.targets import TargetSpec
    spec = TargetSpec(fn.path, fn.qualname)
    result = history(con, spec)  # warm-up: page cache, statement cache
    best = None
    for _ in range(runs):
        t = time.perf_counter()
        result = history(con, spec)
        elapsed = time.perf_counter() - t
        best = elapsed if best is None else min(best, elapsed)
    fn.inproc_seconds = best
    return [e.commit.sha for e in result.entries]


# ---------------------------------------------------------------------------------------------
# Main


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="cortex history FILE::FUNC vs git log -L :FUNC:FILE: speed (p50/p95, ratios "
        "against git measured in the same run) and agreement (precision/recall, every "
        "difference classified). See the docstring table of kinds at the top of this script.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("repo", type=Path, help="the git repository (not modified; git -L runs in a "
                   "private clone under bench/.work/)")
    p.add_argument("--language", choices=sorted(LANGS), default="python", help="the functions "
                   "sampled: Python (.py) or Go (.go, _test.go included); default python")
    p.add_argument("--db", type=Path, help="an existing index of REPO at its HEAD (default: index "
                   "REPO into a temporary database first)")
    p.add_argument("--sample", type=int, default=50, metavar="N", help="functions (default 50)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--kinds", default="function,method",
                   help="symbol kinds to sample (default: function,method; class allowed)")
    p.add_argument("--git-runs", type=int, default=1, help="git log -L runs per function, best "
                   "kept (default 1: it is the slow one)")
    p.add_argument("--cli-runs", type=int, default=3, help="cortex subprocess runs per function, "
                   "best kept (default 3)")
    p.add_argument("--inproc-runs", type=int, default=5, help="in-process runs, best kept "
                   "(default 5, after one warm-up call)")
    p.add_argument("--commit-graph", action="store_true", help="write a commit-graph with "
                   "changed-path Bloom filters in the private clone first (git's best case)")
    p.add_argument("--examples", type=int, default=3, help="examples printed per kind (default 3)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    repo_path = args.repo.resolve()
    log = bl.progress
    import apsw
    import pygit2

    from cortex_core.store.store import open_reader

    env = bl.environment(repo_path)
    head_sha = env["repository"]["head"]
    work = bl.work_dir("history-", args.keep)
    report: dict = {"benchmark": "history", "environment": env, "config": bl.config(args)}
    try:
        cortex = bl.cortex_command()
        if args.db is None:
            db = work / "cortex.db"
            log(f"indexing {repo_path} into {db} ...")
            r = bl.run([*cortex, "index", "--repo", str(repo_path), "--db", str(db), "--quiet",
                        "--json"])
            report["index"] = {"db": str(db), "seconds": r.seconds}
        else:
            db = args.db.resolve()
            report["index"] = {"db": str(db), "seconds": None}
        con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        indexed_head = con.execute("select value from meta where key = 'head'").fetchone()
        if not indexed_head or indexed_head[0] != head_sha:
            raise SystemExit(f"bench_history: {db} indexes {indexed_head and indexed_head[0]}, "
                             f"not {repo_path}'s HEAD {head_sha}; run `cortex index` first")

        repo = pygit2.Repository(str(repo_path))
        head = repo[head_sha]
        lang = LANGS[args.language]
        funcs, skipped, candidates = sample_functions(
            con, repo, head, args.sample, args.seed, args.kinds.split(","), lang)
        report["sample"] = {"requested": args.sample, "taken": len(funcs),
                            "candidates": candidates, "skipped": skipped}
        if lang.name == "go":
            report["sample"]["in_test_files"] = sum(f.path.endswith("_test.go") for f in funcs)
        log(f"sampled {len(funcs)} of {candidates} candidates; skipped {skipped}")

        clone = bl.private_clone(repo_path, work / "clone", checkout=False)
        (clone / ".git" / "info").mkdir(parents=True, exist_ok=True)
        (clone / ".git" / "info" / "attributes").write_text(lang.attributes + "\n")
        if args.commit_graph:
            bl.run(["git", "-C", str(clone), "commit-graph", "write", "--reachable",
                    "--changed-paths"])
        report["git_clone"] = {"commit_graph": args.commit_graph,
                               "attributes": lang.attributes}

        reader = open_reader(db)
        mismatched_inproc = []
        for i, fn in enumerate(funcs, 1):
            time_git(clone, fn, head_sha, args.git_runs)
            time_cli(cortex, repo_path, db, fn, args.cli_runs)
            shas = time_in_process(reader, fn, args.inproc_runs)
            if shas != fn.cortex_shas:
                mismatched_inproc.append(fn.label)
            log(f"[{i}/{len(funcs)}] {fn.label}: git {bl.fmt_seconds(fn.git_seconds)} "
                f"({len(fn.git_shas)}), cortex {bl.fmt_seconds(fn.cli_seconds)} / "
                f"{bl.fmt_seconds(fn.inproc_seconds)} ({len(fn.cortex_shas)})")
        report["timings"] = timings(funcs)
        report["in_process_matches_subprocess"] = not mismatched_inproc
        report["in_process_mismatches"] = mismatched_inproc

        explainer = Explainer(repo, con, clone, head_sha, lang)
        report["agreement"], report["differences"], report["functions"] = agreement(
            funcs, explainer, log)
    finally:
        if not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render, args.examples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
