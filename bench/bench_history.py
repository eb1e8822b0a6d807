#!/usr/bin/env python3
"""Symbol history: `cortex history FILE::FUNC` against `git log -L :FUNC:FILE`, speed and agreement.

For a deterministic sample of Python (or, with --language go, Go) functions and methods alive at
HEAD (whose regex singles out their def line, since `git log -L :regex:` takes the first match),
this measures

  (a) git log -L :REGEX:FILE --format=%H -s   in a private clone with `*.py diff=python`
                                               (Go: `*.go diff=golang`)
  (b) cortex history FILE::QUALNAME --json     as a subprocess, process start included
  (c) cortex_core.history.history(...)         in process on an open reader, warm, best of 5

and prints p50/p95 of each with the ratios git/(b) and git/(c) (goals: (b) beats git, (c) is at
least 100x faster). Then it compares the commit sets per function (precision, recall, exact
matches; git is the reference) and explains every commit listed by one tool only, by reading the
function's text in the commit and its first parent (cortex_core.symbols on the blobs, the
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
The function's own doc comment is outside both ranges (cortex's Go symbols start at `func`: no
doc comment, unlike Java's Javadoc). There are no decorators: own-decorator, outside-git-range
and git-trailing-decorator do not occur; every other check applies as it is, with tree-sitter's
Go grammar and `//`, `/*` as comments.

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
  own-decorator           cortex     no    only the function's own decorators changed: git's range
                                           starts at the def line
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
from dataclasses import dataclass, field
from pathlib import Path

import _benchlib as bl
import _linelog as ll

# Kind -> (listed by, bug?, short meaning) for the report; the docstring explains each.
KINDS = {
    "git-merge": ("git", "no", "merge commit (cortex never lists merges)"),
    "git-trailing-blank": ("git", "no", "only blank lines after the function, inside git's range"),
    "git-trailing-comment": ("git", "no", "only comments after the function, inside git's range"),
    "git-trailing-decorator": ("git", "no", "decorators of the next def, inside git's range"),
    "git-trailing-code": ("git", "no", "code between the function and the next def, inside git's range"),
    "git-range-other-def": ("git", "no", "lines of another definition that git's range had taken in"),
    "git-before-birth": ("git", "no", "function absent on both sides: git tracked other lines"),
    "git-text-unchanged": ("git", "no", "text identical, its lines deleted and re-added (moved in the file)"),
    "cortex-unlinked-rename": ("git", "gap", "renamed with edits: git follows, cortex starts anew"),
    "cortex-missed": ("git", "BUG", "the function's own lines changed, cortex does not list it"),
    "cortex-missed-blank-lines": ("git", "BUG", "blank lines inside a function with nested defs changed, not listed"),
    "cortex-file-rename": ("cortex", "no", "file renamed, function text unchanged ('moved' event)"),
    "cortex-parent-rename": ("cortex", "no", "qualified name changed (class renamed/moved to), text same"),
    "git-range-shrunk": ("cortex", "no", "beyond the range git carried back (it lost its end later)"),
    "cortex-syntax-error": ("cortex", "no", "file does not parse on one side: definition lost/re-nested"),
    "cortex-earlier-life": ("cortex", "no", "before a deletion and re-creation under the same name"),
    "git-trailing-deletion": ("cortex", "no", "function's last lines deleted after git's range end"),
    "outside-git-range": ("cortex", "no", "own decorators and lines after a nested def changed"),
    "cortex-unlinked-requalify": ("cortex", "gap", "same definition under another qualified name in the parent, not linked"),
    "git-range-diverted": ("cortex", "no", "git's range left the function at a later commit"),
    "own-decorator": ("cortex", "no", "only the function's decorators changed (outside git's range)"),
    "git-range-cut-short": ("cortex", "no", "only lines after a nested def/class changed"),
    "git-stopped-early": ("cortex", "no", "older than git's oldest commit: git's range ended"),
    "git-simplified-away": ("cortex", "no", "side branch dropped by git's history simplification"),
    "git-merge-dropped": ("cortex", "no", "a merge kept the other parent's version of the function"),
    "diff-realignment": ("cortex", "BUG", "text identical; libgit2's diff slid a hunk onto it"),
    "cortex-spurious": ("cortex", "BUG", "text unchanged and untouched, yet listed by cortex"),
    "unexplained-git": ("git", "?", "not classified: read the example"),
    "unexplained-cortex": ("cortex", "?", "not classified: read the example"),
}

# Above this difflib ratio, a definition that disappears where the function appears is taken
# for the function under its old name (cortex-unlinked-rename); below, for another one.
RENAME_SIMILARITY = 0.5
# A rename/move link cortex follows whose two definitions are less alike than this is reported.
WEAK_LINK = 0.5
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Lang:
    """What the script needs to know of a language: cortex's and tree-sitter's name, the files,
    git's diff driver and its funcname lines, the -L regex of a symbol, which lines are comments
    and decorators, and the name a funcname line defines (to tell whether it still exists)."""
    name: str
    suffix: str
    driver: str
    funcname: re.Pattern[str]
    regex: object  # (qualname, name, kind) -> (POSIX BRE, Python pattern)
    key: object  # funcname line -> the name it defines, or None
    comments: tuple[str, ...]
    decorator: str | None
    unique_names: bool  # skip functions whose simple name is not unique in the file

    @property
    def attributes(self) -> str:
        return f"*{self.suffix} diff={self.driver}"

    def defines(self, data: bytes, key: str) -> bool:
        """Whether a blob has a funcname line defining `key`."""
        if self.name == "python":
            return bool(re.search(rb"^[ \t]*(async[ \t]+)?(def|class)[ \t]+"
                                  + re.escape(key.encode()) + rb"\b", data, re.M))
        return any(self.funcname.match(l) and self.key(l) == key
                   for l in data.decode("utf-8", "replace").split("\n"))


LANGS = {
    "python": Lang("python", ".py", "python", ll.PY_FUNCNAME,
                   lambda q, n, k: ll.git_regex(n, "class" if k == "class" else "function"),
                   ll.python_def_name, ("#",), "@", True),
    "go": Lang("go", ".go", "golang", ll.GO_FUNCNAME, ll.go_regex, ll.go_def_name, ("//", "/*"),
               None, False),
}


# ---------------------------------------------------------------------------------------------
# The sample


@dataclass
class Func:
    symbol_id: int
    path: str
    qualname: str
    name: str
    kind: str
    start: int
    end: int
    bre: str
    # measurements
    git_seconds: float = 0.0
    cli_seconds: float = 0.0
    inproc_seconds: float = 0.0
    git_shas: list[str] = field(default_factory=list)
    cortex_shas: list[str] = field(default_factory=list)
    cortex_entries: dict[str, dict] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.path}::{self.qualname}"


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
    from cortex_core.history import history
    from cortex_core.targets import TargetSpec
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
# Explaining differences


@dataclass
class Side:
    """The function in one version of its file (one side of a commit)."""
    path: str
    qualname: str
    lines: list[str] | None  # the blob's lines, None when the file does not exist
    span: tuple[int, int] | None  # cortex's range of the function, None when absent
    defline: int | None = None  # the def/class line (after decorators)
    git_end: int | None = None  # where git's funcname range would end (approximation)
    symbols: list = field(default_factory=list)  # every definition of the blob
    lang: Lang = LANGS["python"]

    def decorates(self, line: int) -> bool:
        """Whether `line` lies in the decorators of some definition (above its def line)."""
        return self.lang.decorator is not None and any(
            s.start_line <= line and line < _defline(self.lines, s, self.lang)
            for s in self.symbols)

    def text(self) -> str | None:
        if self.span is None:
            return None
        text = "\n".join(self.lines[self.span[0] - 1:self.span[1]])
        if self.span[1] == len(self.lines):  # its last line ends the file without a newline
            text += "\n\\ No newline at end of file"
        return text

    def in_span(self, line: int) -> bool:
        return self.span is not None and self.span[0] <= line <= self.span[1]

    def in_git_range(self, line: int) -> bool:
        return self.defline is not None and self.defline <= line <= self.git_end


class Explainer:
    def __init__(self, repo, con, clone: Path, rev: str, lang: Lang = LANGS["python"]):
        from cortex_core.symbols import extract_symbols
        self.repo, self.con, self.clone, self.rev, self.lang = repo, con, clone, rev, lang
        self._renames: dict[str, dict] = {}
        self.extract = extract_symbols
        self._parsed: dict[str, tuple[list[str], list]] = {}
        self._births: dict[str, dict | None] = {}
        self._simplified: dict[str, set[str]] = {}
        self.seq = {}
        self.subject = {}
        self.is_merge = {}
        for sha, seq, subject, merge in con.execute(
                "select sha, seq, subject, is_merge from commits where reachable = 1"):
            self.seq[sha], self.subject[sha], self.is_merge[sha] = seq, subject, bool(merge)

    # -- identities and versions -------------------------------------------------------------

    def lineage(self, symbol_id: int) -> list[tuple[int, float, float, str, str]]:
        """The function's identities through time, newest first: (symbol id, first seq, seq
        limit, path, qualname). Walking back from the function, each step takes the latest
        rename/move link into the current identity before the current bound, so a name that
        comes and goes (A -> B -> A, seen around files with syntax errors) gets one interval per
        stay. Where several symbols merged into one, only the latest link is followed."""
        chain = []
        current, upper = symbol_id, float("inf")
        while True:
            row = self.con.execute(
                "select sc.from_symbol_id, c.seq from symbol_changes sc join commits c on"
                " c.id = sc.commit_id where sc.symbol_id = ? and c.seq < ? and c.reachable = 1"
                " and sc.from_symbol_id is not null and sc.from_symbol_id != sc.symbol_id"
                " order by c.seq desc limit 1", (current, upper)).fetchone()
            path, qualname = self.con.execute(
                "select f.path, s.qualname from symbols s join files f on f.id = s.file_id"
                " where s.id = ?", (current,)).fetchone()
            lower = row[1] if row else float("-inf")
            chain.append((current, lower, upper, path, qualname))
            if row is None or len(chain) > 1000:
                return chain
            current, upper = row

    def identity(self, lineage, sha: str, old_side: bool) -> tuple[str, str]:
        """The (path, qualname) in effect on the new side of commit `sha`: the identity of the
        lineage with the nearest limit after it; on its old side: the identity that commit
        links from (a rename or move), or else the same one."""
        seq = self.seq[sha]
        best = next((r for r in lineage if r[1] <= seq < r[2]), lineage[-1])
        if old_side:
            row = self.con.execute(
                "select f.path, s.qualname from symbol_changes sc join commits c on"
                " c.id = sc.commit_id join symbols s on s.id = sc.from_symbol_id join files f on"
                " f.id = s.file_id where sc.symbol_id = ? and c.sha = ?", (best[0], sha)).fetchone()
            if row is not None:
                return row[0], row[1]
        return best[3], best[4]

    def git_diff_touches(self, sha: str, old: Side, new: Side) -> bool | None:
        """Whether `git diff -U0` (git's own diff, indent heuristic on by default) changes a
        line of the function on either side."""
        commit = self.repo[sha]
        if not commit.parents:
            return None
        out = bl.run(["git", "-C", str(self.clone), "diff", "-U0", "--no-color", "--no-ext-diff",
                      "-M", f"{sha}^", sha, "--", old.path, new.path]).stdout.decode("utf-8",
                                                                                       "replace")
        hunk = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)
        for m in hunk.finditer(out):
            o, on = int(m.group(1)), int(m.group(2) or 1)
            n, nn = int(m.group(3)), int(m.group(4) or 1)
            if any(old.in_span(l) for l in range(o, o + on)) or \
                    any(new.in_span(l) for l in range(n, n + nn)):
                return True
        return False

    def broken_sides(self, sha: str, old: Side, new: Side) -> list[str]:
        commit = self.repo[sha]
        out = []
        if commit.parents and old.lines is not None and \
                not self.parses_cleanly(commit.parents[0], old.path):
            out.append("before")
        if new.lines is not None and not self.parses_cleanly(commit, new.path):
            out.append("after")
        return out

    def unlinked_twin(self, sha: str, old: Side, new: Side) -> str | None:
        """For a function cortex says was added (or deleted): the qualified name under which the
        other side of the commit holds a definition with the same text, if any."""
        here, other_commit, path = (new, self.repo[sha].parents[0] if self.repo[sha].parents
                                    else None, new.path) if new.span else (old, self.repo[sha],
                                                                            old.path)
        if here.span is None or other_commit is None:
            return None
        text = here.text().split("\n", 1)
        blob = ll.blob_id(other_commit, path)
        if blob is None:
            return None
        lines, symbols = self.parsed(blob)
        name = here.qualname.rsplit(".", 1)[-1]
        for sym in symbols:
            if sym.name == name and sym.qualname != here.qualname:
                other = "\n".join(lines[sym.start_line - 1:sym.end_line]).split("\n", 1)
                if [t.strip() for t in other] == [t.strip() for t in text] or \
                        ll.dedent(other) == ll.dedent(text):
                    return sym.qualname
        return None

    def diverted(self, fn: Func, lineage, sha: str, git_view) -> str | None:
        """The oldest commit newer than `sha` that git lists and where git's range, in the
        parent, does not hold the function's def line although the function is there: the diff
        re-added the def line (function moved or restructured) and git went on with other lines,
        so the older history git shows is not the function's."""
        seq = self.seq[sha]
        newer = sorted((s2 for s2 in fn.git_shas if self.seq.get(s2, -1) > seq
                        and not self.is_merge.get(s2)), key=lambda s2: self.seq[s2])
        for z in newer:
            blocks = git_view.get(z) or []
            ranges = [r for b in blocks for r in b["old_ranges"]]
            commit = self.repo[z]
            if not commit.parents or not ranges:
                continue
            old = self.side(commit.parents[0], *self.identity(lineage, z, old_side=True))[0]
            if old.defline is None:
                continue
            if not any(a <= old.defline < a + n for a, n in ranges):
                first = next((b["old_first"] for b in blocks if b["old_first"]), "")
                a, n = ranges[0]
                return (f"at {z[:10]} ({bl.clip(self.subject.get(z, '?'), 40)!r}) git's range in "
                        f"the parent is lines {a}-{a + n - 1} ({bl.clip(first, 40)!r}) while the "
                        f"function "
                        f"is at {old.defline}-{old.git_end}: the diff re-added its def line and "
                        f"git went on with other lines")
        return None

    def linked_from(self, ident: tuple[str, str], sha: str) -> tuple[str, str] | None:
        """The (path, qualname) that commit `sha` renamed or moved into `ident`, if any."""
        row = self.con.execute(
            "select f2.path, s2.qualname from symbols s join files f on f.id = s.file_id"
            " join symbol_changes sc on sc.symbol_id = s.id join commits c on c.id = sc.commit_id"
            " join symbols s2 on s2.id = sc.from_symbol_id join files f2 on f2.id = s2.file_id"
            " where f.path = ? and s.qualname = ? and c.sha = ?", (*ident, sha)).fetchone()
        return (row[0], row[1]) if row else None

    def linked_to(self, ident: tuple[str, str], sha: str) -> tuple[str, str] | None:
        """The (path, qualname) that commit `sha` renamed or moved `ident` into, if any."""
        row = self.con.execute(
            "select f2.path, s2.qualname from symbols s join files f on f.id = s.file_id"
            " join symbol_changes sc on sc.from_symbol_id = s.id join commits c on"
            " c.id = sc.commit_id join symbols s2 on s2.id = sc.symbol_id join files f2 on"
            " f2.id = s2.file_id where f.path = ? and s.qualname = ? and c.sha = ?",
            (*ident, sha)).fetchone()
        return (row[0], row[1]) if row else None

    def parses_cleanly(self, commit, path: str) -> bool:
        """Whether tree-sitter reads the file at `commit` without a syntax error."""
        from tree_sitter_language_pack import get_parser
        try:
            data = self.repo[str(commit.tree[path].id)].data
        except (KeyError, AttributeError):
            return True
        return not get_parser(self.lang.name).parse(data).root_node.has_error

    def simplified(self, fn: Func, lineage) -> set[str]:
        """The commits `git log REV -- <every path of the function's lineage>` lists: git's
        default history simplification drops side branches whose merge kept the other
        parent's version of the file; git log -L walks the same simplified history."""
        key = fn.label
        if key not in self._simplified:
            paths = sorted({r[3] for r in lineage})
            out = bl.run(["git", "-C", str(self.clone), "log", "--format=%H", self.rev, "--",
                          *paths]).stdout.decode().split()
            self._simplified[key] = set(out)
        return self._simplified[key]

    def parsed(self, blob_id: str):
        got = self._parsed.get(blob_id)
        if got is None:
            data = self.repo[blob_id].data
            lines = data.decode("utf-8", "replace").split("\n")
            got = (lines, self.extract(self.lang.name, data))
            if len(self._parsed) > 2048:
                self._parsed.clear()
            self._parsed[blob_id] = got
        return got

    def side(self, commit, path: str, qualname: str) -> tuple[Side, str | None]:
        if commit is None:
            return Side(path, qualname, None, None, lang=self.lang), None
        try:
            blob_id = str(commit.tree[path].id)
        except KeyError:
            return Side(path, qualname, None, None, lang=self.lang), None
        lines, symbols = self.parsed(blob_id)
        sym = next((s for s in symbols if s.qualname == qualname), None)
        s = Side(path, qualname, lines, None, symbols=symbols, lang=self.lang)
        if sym is not None:
            s.span = (sym.start_line, sym.end_line)
            s.defline = _defline(lines, sym, self.lang)
            end = len(lines) - (1 if lines and lines[-1] == "" else 0)
            s.git_end = next((i - 1 for i in range(s.defline + 1, end + 1)
                              if self.lang.funcname.match(lines[i - 1])), end)
        return s, blob_id

    def sides(self, fn: Func, lineage, sha: str):
        """The function on both sides of commit `sha`. For a commit cortex lists, the identity is
        the one its entry names (path and qualified name at that commit, and what it was renamed
        or moved from); otherwise the one the lineage gives for that point in time."""
        commit = self.repo[sha]
        parent = commit.parents[0] if commit.parents else None
        entry = fn.cortex_entries.get(sha)
        if entry is not None and entry.get("name"):
            new_id = (entry["path"], entry["name"])
            old_id = self.linked_from(new_id, sha)
            if old_id is None:
                # The entry may name the old identity of a rename (its "renamed" row).
                successor = self.linked_to(new_id, sha)
                new_id, old_id = (successor, new_id) if successor else (new_id, new_id)
        else:
            new_id = self.identity(lineage, sha, old_side=False)
            old_id = self.identity(lineage, sha, old_side=True)
        new, new_blob = self.side(commit, *new_id)
        old, old_blob = self.side(parent, *old_id)
        deleted, added = self.diff_lines(old, old_blob, new, new_blob)
        return commit, old, new, deleted, added

    def diff_lines(self, old: Side, old_blob, new: Side, new_blob) -> tuple[dict, set[int]]:
        """The old line numbers a zero-context diff deletes (the diff cortex maps to symbols),
        each with where its hunk lands in the new blob: (new_start, pure deletion?); a pure
        deletion lies after new line new_start. And the new line numbers it adds."""
        if old_blob == new_blob:
            return {}, set()
        if old_blob is None:
            return {}, set(range(1, len(new.lines) + 1))
        if new_blob is None:
            return {l: (0, True) for l in range(1, len(old.lines) + 1)}, set()
        patch = self.repo[old_blob].diff(self.repo[new_blob], context_lines=0)
        deleted, added = {}, set()
        for h in patch.hunks:
            for l in range(h.old_start, h.old_start + h.old_lines):
                deleted[l] = (h.new_start, h.new_lines == 0)
            added.update(range(h.new_start, h.new_start + h.new_lines))
        return deleted, added

    # -- git's own view ----------------------------------------------------------------------

    def git_patch(self, fn: Func) -> dict[str, list[dict]]:
        """git log -L with its patch: per commit, the lines git saw deleted and added in its
        range, with numbers, and the first line of its range on each side."""
        return ll.line_log(self.clone, f":{fn.bre}:{fn.path}", self.rev)

    def birth(self, fn: Func, git_view) -> dict | None:
        """Where cortex's history of `fn` starts and what git's range was just before it: when
        git's range there began at another definition that the commit removed, the function was
        renamed (with edits) and cortex did not link the two names."""
        if fn.label in self._births:
            return self._births[fn.label]
        out = None
        if fn.cortex_shas:
            sha = min(fn.cortex_shas, key=lambda s: self.seq.get(s, 1 << 60))
            blocks = git_view.get(sha) or []
            out = {"sha": sha, "subject": self.subject.get(sha, "?"),
                   "change": fn.cortex_entries.get(sha, {}).get("change", "?"),
                   "renamed_from": None, "new_first": None,
                   "git_from": next((b["old_first"] for b in blocks if b["old_first"]), None),
                   "survives": False}
            for b in blocks:
                m = self.lang.funcname.match(b["old_first"] or "")
                name = self.lang.key(b["old_first"] or "")
                if not (m and name and b["new_path"]):
                    continue
                try:
                    data = self.repo[str(self.repo[sha].tree[b["new_path"]].id)].data
                except KeyError:
                    continue
                if self.lang.defines(data, name):
                    out["survives"] = True
                    continue
                # Gone, but cortex follows it to another definition (renamed): not this one's.
                old_def = self.old_definition(sha, b)
                heir = old_def and self.linked_to((b["old_path"], old_def[1].qualname), sha)
                if heir and heir != self.identity(self.lineage(fn.symbol_id), sha, False):
                    out["survives"], out["heir"] = True, f"{heir[0]}::{heir[1]}"
                    continue
                # Gone: a rename if the two definitions are alike, else a replacement.
                similarity = self.similarity(sha, b, fn)
                out["similarity"] = similarity
                if similarity is not None and similarity >= RENAME_SIMILARITY:
                    out["renamed_from"], out["new_first"] = b["old_first"], b["new_first"]
                    break
                out["replaced"] = b["old_first"]
        self._births[fn.label] = out
        return out

    def links(self, fn: Func, lineage) -> list[dict]:
        """Every rename/move link cortex follows for `fn`, with the difflib similarity of the
        definition before and after: a low one would be a wrong link (a cortex bug that would
        hide among the commits git -L does not reach)."""
        import difflib
        by_seq = {seq: sha for sha, seq in self.seq.items()}
        out = []
        for newer, older in zip(lineage, lineage[1:]):
            sha = by_seq.get(newer[1])
            if sha is None:
                continue
            commit = self.repo[sha]
            new = self.side(commit, newer[3], newer[4])[0]
            old = (self.side(commit.parents[0], older[3], older[4])[0] if commit.parents
                   else None)
            ratio = None
            if new.span is not None and old is not None and old.span is not None:
                ratio = difflib.SequenceMatcher(None, old.text(), new.text(),
                                                autojunk=False).ratio()
            out.append({"sha": sha, "subject": self.subject.get(sha, "?"),
                        "change": fn.cortex_entries.get(sha, {}).get("change", "?"),
                        "from": f"{older[3]}::{older[4]}", "to": f"{newer[3]}::{newer[4]}",
                        "similarity": ratio})
        return out

    def moves(self, lineage) -> list[dict]:
        """The links of the lineage (newest first) that change the function's file: a whole-file
        rename when git's own rename detection (`git diff -M` on the commit's first parent, as
        `git log -L` and `--follow` use it) pairs the two paths, which git -L follows too; else a
        cross-file move (the function went into another file, or git sees no rename), where git's
        range ends: its lines were all added there."""
        by_seq = {seq: sha for sha, seq in self.seq.items()}
        out = []
        for newer, older in zip(lineage, lineage[1:]):
            sha = by_seq.get(newer[1])
            if sha is None or newer[3] == older[3]:
                continue
            if sha not in self._renames:
                self._renames[sha] = (ll.renames(self.clone, sha) if self.repo[sha].parents
                                      else {})
            similarity = self._renames[sha].get((older[3], newer[3]))
            out.append({"sha": sha, "seq": newer[1], "subject": self.subject.get(sha, "?"),
                        "from": f"{older[3]}::{older[4]}", "to": f"{newer[3]}::{newer[4]}",
                        "file_rename": similarity is not None, "git_similarity": similarity})
        return out

    def old_definition(self, sha: str, block: dict):
        """(lines, symbol) of the definition git's range starts at in the parent, or None."""
        commit = self.repo[sha]
        if not commit.parents or not block["old_path"]:
            return None
        old_blob = ll.blob_id(commit.parents[0], block["old_path"])
        if old_blob is None:
            return None
        lines, symbols = self.parsed(old_blob)
        first = (block["old_first"] or "").strip()
        old_sym = next((s for s in symbols
                        if lines[_defline(lines, s, self.lang) - 1].strip() == first), None)
        return (lines, old_sym) if old_sym is not None else None

    def similarity(self, sha: str, block: dict, fn: Func) -> float | None:
        """difflib ratio between the definition git's range came from (in the parent) and the
        function as the commit leaves it."""
        import difflib
        found = self.old_definition(sha, block)
        path, qualname = self.identity(self.lineage(fn.symbol_id), sha, old_side=False)
        new = self.side(self.repo[sha], path, qualname)[0]
        if found is None or new.span is None:
            return None
        lines, old_sym = found
        old_text = "\n".join(lines[old_sym.start_line - 1:old_sym.end_line])
        return difflib.SequenceMatcher(None, old_text, new.text(), autojunk=False).ratio()

    def merge_kept_other_side(self, lineage, sha: str, limit: int = 5000):
        """The first merge after `sha` whose first parent with an identical version of the
        function (git's TREESAME, which -L applies to its line range) does not contain `sha`:
        git follows only that parent and never reaches `sha` (the side branch's change was
        overwritten, or made on both branches). (merge sha, parent sha) or None."""
        descendants = set(bl.run(["git", "-C", str(self.clone), "rev-list", "--ancestry-path",
                                  f"{sha}..{self.rev}"]).stdout.decode().split())
        descendants.add(sha)
        merges = bl.run(["git", "-C", str(self.clone), "rev-list", "--merges", "--reverse",
                         "--ancestry-path", f"{sha}..{self.rev}"]).stdout.decode().split()
        for m in merges[:limit]:
            if m not in self.seq:
                continue
            merge = self.repo[m]
            parents = merge.parents
            holds = [str(p.id) in descendants for p in parents]
            if all(holds) or not any(holds):
                continue
            path, qualname = self.identity(lineage, m, old_side=False)
            blob = ll.blob_id(merge, path)
            text = None
            # Like git: the first parent (in order) whose version is identical is the only one
            # followed. Identical file, or else identical function text.
            for parent, has in zip(parents, holds):
                same = ll.blob_id(parent, path) == blob
                if not same and blob is not None:
                    if text is None:
                        text = self.side(merge, path, qualname)[0].text() or ""
                    same = bool(text) and self.side(parent, path, qualname)[0].text() == text
                if same:
                    if not has:
                        return m, str(parent.id)
                    break
        return None

    def carried_range(self, fn: Func, lineage, sha: str, git_view) -> tuple[int, int, str] | None:
        """How many lines git's range has at `sha` (in its new blob), as carried back from HEAD:
        between two commits git lists, no commit changes the range (else git would list it), so
        its size at `sha` is the size of the parent-side range at the next newer commit git
        lists, or of the range at HEAD when there is none. Lines dropped at its edges on the way
        (deletions just after its end, a nested def added later) are never regained. Returns
        (size, offset of its first line from the def line, where the size comes from)."""
        seq = self.seq[sha]
        newer = [s2 for s2 in fn.git_shas if self.seq.get(s2, -1) > seq]
        if newer:
            y = min(newer, key=lambda s2: self.seq[s2])
            if self.is_merge.get(y):
                return None
            ranges = [r for b in git_view.get(y) or [] for r in b["old_ranges"]]
            if not ranges or not self.repo[y].parents:
                return None
            at_y = self.side(self.repo[y].parents[0], *self.identity(lineage, y, old_side=True))[0]
            if at_y.defline is None:
                return None
            return (sum(n for _, n in ranges), ranges[0][0] - at_y.defline,
                    f"{y[:10]} ({bl.clip(self.subject.get(y, '?'), 40)!r}), the next newer commit "
                    f"git lists, whose parent-side range has")
        head = self.repo[self.rev]
        side = self.side(head, fn.path, fn.qualname)[0]
        if side.defline is None:
            return None
        return side.git_end - side.defline + 1, 0, "HEAD, where the range has"

    # -- classification ----------------------------------------------------------------------

    def explain(self, fn: Func, lineage, sha: str, listed_by: str, git_view) -> dict:
        item = {"function": fn.label, "sha": sha, "subject": self.subject.get(sha, "?"),
                "listed_by": listed_by}
        if sha not in self.seq:
            item.update(kind=f"unexplained-{listed_by}", why="commit not in the index")
            return item
        if self.is_merge[sha]:
            kind = "git-merge" if listed_by == "git" else "unexplained-cortex"
            item.update(kind=kind, why=f"merge of {len(self.repo[sha].parents)} parents")
            return item
        commit, old, new, deleted, added = self.sides(fn, lineage, sha)
        item["path"] = new.path if new.span else old.path
        item["name"] = new.qualname if new.span else old.qualname
        touched = sorted(({("-", l) for l in deleted if old.in_span(l)}
                          | {("+", l) for l in added if new.in_span(l)}), key=lambda t: (t[1], t[0]))
        created_or_gone = (old.span is None) != (new.span is None)
        text_changed = old.text() != new.text()
        if listed_by == "git":
            return self._explain_git(item, fn, sha, old, new, touched, created_or_gone,
                                     text_changed, git_view)
        return self._explain_cortex(item, fn, lineage, sha, old, new, deleted, added, touched,
                                    created_or_gone, text_changed, git_view)

    def _explain_git(self, item, fn, sha, old, new, touched, created_or_gone, text_changed,
                     git_view) -> dict:
        blocks = git_view.get(sha, [])
        minus = [(l, t) for b in blocks for l, t in b["minus"]]
        plus = [(l, t) for b in blocks for l, t in b["plus"]]
        if touched and not created_or_gone and not text_changed:
            item.update(kind="git-text-unchanged",
                        why=f"{item['name']}'s text is identical on both sides, but the diff "
                            f"deletes and re-adds its lines (e.g. {_sample_line(old, new, touched)}"
                            f"): it moved within the file, or identical lines were aligned anew")
            return item
        if touched or created_or_gone or text_changed:
            line = _sample_line(old, new, touched)
            what = ("created" if new.span and not old.span else "deleted" if old.span
                    and not new.span else "changed")
            blank_only = (old.span is not None and new.span is not None
                          and ll.without_blank_lines(old.text())
                          == ll.without_blank_lines(new.text()))
            if blank_only:
                nested = any(s2.qualname.startswith(new.qualname + ".") for s2 in new.symbols)
                item.update(kind="cortex-missed-blank-lines",
                            why=f"only blank lines inside {item['name']} changed ({line}); the "
                                f"function {'has' if nested else 'has no'} nested definitions "
                                f"(cortex credits no blank line to a symbol that has children)")
                return item
            item.update(kind="cortex-missed", why=f"{item['name']} {what} in {item['path']}"
                        f" (text {'differs' if text_changed else 'same'}); e.g. {line}")
            return item
        if old.span is None and new.span is None:
            first = next((b["new_first"] or b["old_first"] for b in blocks), None)
            paths = sorted({p for b in blocks for p in (b["old_path"], b["new_path"]) if p})
            birth = self.birth(fn, git_view)
            if birth and birth["renamed_from"]:
                item.update(kind="cortex-unlinked-rename",
                            why=f"git follows the lines through {birth['sha'][:10]} "
                                f"({bl.clip(birth['subject'], 40)!r}), where "
                                f"{bl.clip(birth['renamed_from'], 60)!r} became "
                                f"{bl.clip(birth['new_first'], 60)!r} with edits; cortex starts "
                                f"the "
                                f"history there ({birth['change']}); here git tracked "
                                f"{', '.join(paths) or '?'}")
                return item
            origin = ""
            if birth and birth.get("git_from"):
                origin = (f"; at {birth['sha'][:10]} (cortex: {birth['change']}) git's range came "
                          f"from {bl.clip(birth['git_from'], 50)!r}"
                          + (f", a definition that cortex follows to {birth['heir']} there"
                             if birth.get("heir") else ", a definition still there after that "
                             "commit" if birth["survives"] else ""))
            if birth and birth.get("replaced"):
                origin = (f"; at {birth['sha'][:10]} (cortex: {birth['change']}) git's range came "
                          f"from {bl.clip(birth['replaced'], 50)!r}, a definition that commit "
                          f"removed, too unlike the function to be a rename (similarity "
                          f"{birth.get('similarity') or 0:.2f} < {RENAME_SIMILARITY})")
            item.update(kind="git-before-birth",
                        why=f"no {old.qualname} in {old.path} on either side; git was tracking "
                        f"{', '.join(paths) or '?'} from the line {bl.clip(first)!r}{origin}")
            return item
        outside = [("-", l, t) for l, t in minus if not old.in_span(l)] + \
                  [("+", l, t) for l, t in plus if not new.in_span(l)]
        if not outside:
            item.update(kind="unexplained-git", why="git's patch shows no changed line outside "
                        "the function, yet cortex's span is untouched")
            return item
        classes = {_outside_class(old if sign == "-" else new, l, t) for sign, l, t in outside}
        if classes <= {"blank"}:
            kind = "git-trailing-blank"
        elif classes <= {"blank", "comment"}:
            kind = "git-trailing-comment"
        elif classes <= {"blank", "comment", "decorator"}:
            kind = "git-trailing-decorator"
        elif "other-def" in classes:
            kind = "git-range-other-def"
        else:
            kind = "git-trailing-code"
        sign, line, text = next((o for o in outside if _line_class(o[2], self.lang) != "blank"),
                                outside[0])
        span = new.span or old.span
        item.update(kind=kind, why=f"{len(outside)} line(s) outside the function's lines "
                    f"{span[0]}-{span[1]} changed, e.g. {sign}{line}: {bl.clip(text)!r}")
        return item

    def _explain_cortex(self, item, fn, lineage, sha, old, new, deleted, added, touched,
                        created_or_gone, text_changed, git_view) -> dict:
        change = fn.cortex_entries.get(sha, {}).get("change", "?")
        item["cortex_change"] = change
        if not touched and not created_or_gone and not text_changed:
            if old.path != new.path and old.span is not None and new.span is not None:
                item.update(kind="cortex-file-rename", why=f"{old.path} -> {new.path}; the "
                            f"function's text is identical (cortex: {change})")
            elif old.qualname != new.qualname and old.span is not None and new.span is not None:
                broken = [label for label, c, path in (
                    ("before", self.repo[sha].parents[0], old.path), ("after", self.repo[sha],
                                                                     new.path))
                    if not self.parses_cleanly(c, path)]
                note = (f"; the file has a syntax error {' and '.join(broken)} the commit, which "
                        f"changes how its definitions nest" if broken else "")
                item.update(kind="cortex-parent-rename", why=f"{old.qualname} -> {new.qualname}; "
                            f"the function's text is identical (cortex: {change}){note}")
            else:
                item.update(kind="cortex-spurious", why=f"cortex says {change!r} but no diff line "
                            f"touches {item['name']} in {item['path']} and its text is unchanged")
            return item
        if (touched or created_or_gone) and not text_changed and old.qualname != new.qualname:
            item.update(kind="cortex-parent-rename", why=f"{old.qualname} -> {new.qualname}; "
                        f"the function's text is identical, its lines moved (to another class) "
                        f"(cortex: {change})")
            return item
        if (touched or created_or_gone) and not text_changed:
            git_touches = self.git_diff_touches(sha, old, new)
            how = ("git's own diff (with its default indent heuristic) does not touch it: "
                   "libgit2's diff, which has no such heuristic, slid a hunk by a line onto it"
                   if git_touches is False else "git's own diff touches it too")
            item.update(kind="diff-realignment", why=f"text identical; the diff cortex uses "
                        f"deleted/added {len(touched)} of its lines, e.g. "
                        f"{_sample_line(old, new, touched)}; {how} (cortex: {change})")
            return item
        if sha not in self.simplified(fn, lineage):
            item.update(kind="git-simplified-away",
                        why=f"not in `git log -- {item['path']}`: git's history simplification "
                            f"follows, at a merge, a parent whose file is identical and drops "
                            f"this side branch (cortex: {change}; e.g. "
                            f"{_sample_line(old, new, touched)})")
            return item
        broken = self.broken_sides(sha, old, new)
        if created_or_gone and broken:
            item.update(kind="cortex-syntax-error",
                        why=f"the file does not parse {' and '.join(broken)} the commit: "
                            f"tree-sitter's error recovery loses or re-nests the definition, so "
                            f"cortex records it as {change} while its lines barely changed "
                            f"(e.g. {_sample_line(old, new, touched)})")
            return item
        later_birth = [s2 for s2, e in fn.cortex_entries.items() if e.get("change") == "added"
                       and self.seq.get(s2, -1) > self.seq[sha]]
        if later_birth:
            b = min(later_birth, key=lambda s2: self.seq[s2])
            item.update(kind="cortex-earlier-life",
                        why=f"the function was deleted and later re-created under the same name "
                            f"(cortex: added at {b[:10]} "
                            f"{bl.clip(self.subject.get(b, '?'), 40)!r}); "
                            f"cortex keeps one identity per file and qualified name, so its "
                            f"history includes the earlier life (here: {change}); git's range "
                            f"ends at the re-creation")
            return item
        twin = self.unlinked_twin(sha, old, new) if created_or_gone else None
        if twin:
            item.update(kind="cortex-unlinked-requalify",
                        why=f"cortex says {change}, but the parent holds the same definition as "
                            f"{twin} (class renamed, merged or split): cortex did not link the "
                            f"two names, so the history splits here")
            return item
        git_seqs = [self.seq[s] for s in fn.git_shas if s in self.seq]
        if not git_seqs or self.seq[sha] < min(git_seqs):
            if git_seqs:
                oldest = min(fn.git_shas, key=lambda s: self.seq.get(s, 1 << 60))
                at = fn.cortex_entries.get(oldest, {}).get("change", "not listed")
                item.update(kind="git-stopped-early",
                            why=f"git's history of the range begins at {oldest[:10]} "
                                f"({self.subject.get(oldest, '?')[:50]!r}; cortex there: {at}); "
                                f"cortex here: {change}")
            else:
                item.update(kind="git-stopped-early", why="git lists no commit at all")
            return item
        diverted = self.diverted(fn, lineage, sha, git_view)
        if diverted:
            item.update(kind="git-range-diverted", why=f"{diverted}; cortex here: {change}, e.g. "
                        f"{_sample_line(old, new, touched)}")
            return item
        # Where each changed line of the function lands in the new blob, against git's range
        # there (def line .. line before the next def/class): git counts an added line inside
        # its range, and a deletion only when it falls between two lines of its range.
        ref = new if new.span is not None else old
        positions = []  # (position in ref, inside git's range?, pure deletion?)
        for sign, line in touched:
            if sign == "+" or ref is old:
                positions.append((line, ref.defline <= line <= ref.git_end, False))
            else:
                at, pure = deleted[line]
                inside = (ref.defline <= at < ref.git_end if pure
                          else ref.defline <= at <= ref.git_end)
                positions.append((at, inside, pure))
        in_git = [p for p in positions if p[1]]
        if positions and not in_git:
            cut = ref.git_end < ref.span[1]
            if all(p[0] < ref.defline for p in positions):
                item.update(kind="own-decorator", why=f"only lines above the def line changed, "
                            f"e.g. {_sample_line(old, new, touched)}")
                return item
            if all(p[0] >= ref.git_end for p in positions) and cut:
                stop = ref.lines[ref.git_end] if ref.git_end < len(ref.lines) else "?"
                item.update(kind="git-range-cut-short",
                            why=f"git's range ends before line {ref.git_end + 1} "
                                f"{bl.clip(stop)!r}; changed: {_sample_line(old, new, touched)}")
                return item
            before = sum(1 for p in positions if p[0] < ref.defline)
            if cut and all(p[0] < ref.defline or p[0] >= ref.git_end for p in positions):
                item.update(kind="outside-git-range",
                            why=f"{before} changed line(s) of the function above its def line "
                                f"(decorators) and {len(positions) - before} after line "
                                f"{ref.git_end}, where git's range stops at a nested def/class; "
                                f"e.g. {_sample_line(old, new, touched)}")
                return item
            if all(p[2] and p[0] >= ref.git_end for p in positions):
                item.update(kind="git-trailing-deletion",
                            why=f"the function's last lines were deleted and the diff places the "
                                f"deletion after line {positions[0][0]}, the last line of git's "
                                f"range (the blank line before the next def): git counts a "
                                f"deletion only between two lines of its range; e.g. "
                                f"{_sample_line(old, new, touched)}")
                return item
        dropped = self.merge_kept_other_side(lineage, sha)
        if dropped:
            m, p = dropped
            item.update(kind="git-merge-dropped",
                        why=f"the merge {m[:10]} ({bl.clip(self.subject.get(m, '?'), 40)!r}) kept "
                            f"the function as in its parent {p[:10]}, which does not contain this "
                            f"commit: git -L follows only that parent (cortex: {change}; e.g. "
                            f"{_sample_line(old, new, touched)})")
            return item
        carried = self.carried_range(fn, lineage, sha, git_view) if ref is new else None
        if carried is not None:
            size, offset, source = carried
            start_ = ref.defline + offset
            end_ = start_ + size - 1
            inside = [p for p in positions
                      if start_ <= p[0] < end_ or (not p[2] and p[0] == end_)]
            if (end_ < ref.git_end or start_ != ref.defline) and not inside:
                item.update(kind="git-range-shrunk",
                            why=f"git's range here is the {size} line(s) {start_}-{end_} "
                                f"(size from {source} {size}), the function runs to "
                                f"{ref.span[1]}: at a later commit the range lost its end (a "
                                f"nested def, lines deleted just after it) or slid (a hunk "
                                f"replacing the def line with its decorator), and git never "
                                f"widens it going back; changed: "
                                f"{_sample_line(old, new, touched)} "
                                f"(cortex: {change})")
                return item
        if positions and all(p[2] and p[0] >= ref.span[1] for p in positions):
            item.update(kind="git-trailing-deletion",
                        why=f"the function's last lines were deleted and the diff places the "
                            f"deletion after line {positions[0][0]}, among the blank lines that "
                            f"end git's full range ({ref.git_end}); git counts a deletion only "
                            f"between two lines of its range, and the range it carried back "
                            f"from HEAD had lost those blank lines (an edit there that git did "
                            f"not see); e.g. {_sample_line(old, new, touched)}")
            return item
        item.update(kind="unexplained-cortex",
                    why=f"{len(touched)} changed line(s) of the function, {len(in_git)} inside "
                        f"git's approximate range, e.g. {_sample_line(old, new, touched)} "
                        f"(cortex: {change})")
        return item


def _defline(lines: list[str], sym, lang: Lang) -> int:
    """The def/class line of a definition: its first funcname line, after its decorators (Go:
    its first line; a Go struct's field named func... is a funcname line too)."""
    if lang.decorator is None:
        return sym.start_line
    return next((i for i in range(sym.start_line, sym.end_line + 1)
                 if lang.funcname.match(lines[i - 1])), sym.start_line)


def _outside_class(side: Side, line: int, text: str) -> str:
    """What a line that git's range holds outside the function is: blank, comment, decorator
    (of another definition), other-def (inside another definition that does not enclose the
    function) or code (module, class or enclosing-function level)."""
    kind = _line_class(text, side.lang)
    if kind in ("blank", "comment"):
        return kind
    if side.decorates(line):
        return "decorator"
    span = side.span
    owners = [s for s in side.symbols if s.start_line <= line <= s.end_line]
    if owners:
        inner = max(owners, key=lambda s: s.start_line)
        encloses = span is not None and inner.start_line <= span[0] and inner.end_line >= span[1]
        if not encloses:
            return "other-def"
    return "code" if kind != "decorator" else "decorator"


def _line_class(text: str, lang: Lang) -> str:
    s = text.strip()
    if not s:
        return "blank"
    if s.startswith(lang.comments):
        return "comment"
    if lang.decorator and s.startswith(lang.decorator):
        return "decorator"
    return "code"


def _sample_line(old: Side, new: Side, touched) -> str:
    for sign, line in touched:
        side = old if sign == "-" else new
        if side.lines and line <= len(side.lines) and side.lines[line - 1].strip():
            return f"{sign}{line}: {bl.clip(side.lines[line - 1])!r}"
    if touched:
        sign, line = touched[0]
        return f"{sign}{line} (blank)"
    return "(created or deleted)"


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
    from cortex_core.store import open_reader

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


if __name__ == "__main__":
    sys.exit(main())
