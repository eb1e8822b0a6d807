"""Blast radius: what depends on a symbol or a file, structurally and historically.

Structure: the reverse transitive closure over resolved edges (calls, imports, inheritance, other
references) up to a depth, each dependent with the chain of edges that explains it and the
product of their confidences. Relations: caller, importer, subclass (or implementer), test (any
dependent in a test file), reference. History: the co-change partners that the structure does not
show — hidden coupling — with their shared commits.

Risk (documented in docs/commands.md):

    risk = (1 + ln(1 + D)) × (1 + H)
    D = dependents found (each weighted by its chain's confidence)
    H = the target's hotspot score: R × (1 + ln A) × (1 + log10(1 + L)), R = Σ 0.5^(age/90 days)

    low < 4 ≤ medium < 12 ≤ high

`fused_related` ranks what changes with a target by structure and co-change together:
    score = c + s / (1 + n) + 0.03 × f
    c = co-change confidence (the shared commits' decayed weight / the target's), n = the
    target's commits, s = best chain confidence × 0.5^(depth − 1), in either direction,
    f = the folder back-off (coupling.folder_scores).
History leads where there is history; structure speaks for a file with little of it, and breaks
ties otherwise. For a symbol target, the symbols likewise (coupling.related, with the calls one
edge away as s). (A noisy-OR of s and c lost to co-change alone on the time-split benchmark: every
file one edge away outranked every co-change partner.)
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from cortex_core.clock import DEFAULT, clock as read_clock
from cortex_core.config import COUPLING_DEFAULTS, CouplingSettings
from cortex_core.query.coupling import (DECAY, FILE_PRIOR, FOLDER_PRIOR, HALF_LIFE_DAYS,
                                        MAX_CHANGESET, MIN_SUPPORT, SIZE_EXPONENT,
                                        SYMBOL_TWIN_MAX, SYMBOL_TWIN_WEIGHT, decay_text,
                                        evidence_of, file_scores, folder_scores, name_twins, related)
from cortex_core.query.history import CommitRef, moved_to
from cortex_core.lang.languages import STRUCTURE_LANGUAGES
from cortex_core.lang.qualnames import structural_name
from cortex_core.query.targets import Target, TargetSpec, no_symbol_at, resolve

MAX_DEPTH = 10
MAX_DEPENDENTS = 2000
# How much the structure counts beside co-change in `fused_related`: s / (1 + n) at this weight,
# n the target's commits (see bench/bench_cochange.py for how it was chosen).
STRUCTURE_WEIGHT = 1.0
# The structure share of a file named like the target once test affixes are dropped (a module and
# its tests): as strong as a direct dependent of confidence TWIN_WEIGHT. 0 turns it off.
TWIN_WEIGHT = 1.0
RISK_LEVELS = ((4.0, "low"), (12.0, "medium"))
RISK_FORMULA = ("risk = (1 + ln(1 + D)) × (1 + H); D = dependents (confidence-weighted), "
                "H = hotspot score of the target; low < 4 ≤ medium < 12 ≤ high")


@dataclass(frozen=True)
class Link:
    kind: str                 # call, import, inherits, ref; dispatch: a call of a method it
    #                           overrides, made by the class it overrides it from (_dispatched)
    src_path: str
    src_qualname: str | None  # None: module level
    line: int
    dst_path: str
    dst_qualname: str | None
    confidence: float


@dataclass(frozen=True)
class Dependent:
    path: str
    qualname: str | None
    relation: str             # caller, importer, subclass, test, reference
    depth: int
    confidence: float
    chain: tuple[Link, ...]   # from this dependent to the target

    @property
    def label(self) -> str:
        return f"{self.path}::{self.qualname}" if self.qualname else self.path


@dataclass(frozen=True)
class Hidden:
    path: str
    qualname: str | None
    support: int
    confidence: float
    evidence: list[CommitRef]


@dataclass(frozen=True)
class Summary:
    by_relation: dict[str, int]
    files: int
    tests: list[str]
    risk: str
    risk_score: float
    dependents_weighted: float
    hotspot: float
    formula: str = RISK_FORMULA


@dataclass(frozen=True)
class Blast:
    target: Target
    depth: int
    dependents: list[Dependent]
    hidden: list[Hidden]
    summary: Summary
    note: str | None = None
    # Dependents left out only for their confidence: below `min_confidence` (most are calls
    # matched by a method's name alone, whatever the receiver; Go's `t.Run` for a `Run`).
    below_confidence: int = 0
    min_confidence: float = 0.0
    # False when the target had no structure to walk and none was found (the note says why):
    # its dependents are then not known, which is not none.
    dependents_known: bool = True

    @property
    def left_out_why(self) -> str | None:
        """What most of the dependents left out are, when it can be said: calls matched by a
        method's name alone, when the floor is at most what such a call is given."""
        return ("mostly calls matched by a method's name alone"
                if self.min_confidence <= NAME_ONLY else None)


@dataclass(frozen=True)
class Neighbour:
    path: str
    qualname: str | None
    relation: str
    confidence: float
    line: int


@dataclass(frozen=True)
class Neighbours:
    target: Target
    items: list[Neighbour] = field(default_factory=list)
    note: str | None = None
    known: bool = True   # False: no structure to read its edges from (the note says why)


# -- edges -------------------------------------------------------------------------------------


def _incoming(con, file_id: int, qualname: str | None, whole_file: bool):
    """(src file, src scope, kind, line, confidence, dst qualname) of edges into a node."""
    qualname = _structural(qualname)
    params: tuple
    if whole_file:
        where, params = "e.dst_file_id = ?", (file_id,)
    elif qualname is None:      # module level: what imports the module
        where, params = "e.dst_file_id = ? and e.dst_qualname is null", (file_id,)
    else:                       # the symbol and its members
        where = ("e.dst_file_id = ? and (e.dst_qualname = ? or (e.dst_qualname >= ? and"
                 " e.dst_qualname < ?))")
        params = (file_id, qualname, qualname + ".", qualname + "/")
    rows = con.execute(
        "select r.file_id, r.scope, r.kind, r.line, e.confidence, e.dst_qualname from edges e"
        f" join refs r on r.id = e.ref_id where {where}", params).fetchall()
    if not whole_file and qualname is not None and "." in qualname:
        direct = {(row[0], row[1], row[3]) for row in rows}
        rows += [row for row in _dispatched(con, file_id, qualname) + _constructions(
                 con, file_id, qualname) if (row[0], row[1], row[3]) not in direct]
    elif not whole_file and qualname is not None:
        named = {(row[0], row[1]) for row in rows}   # `export {sum} from` says more
        rows += [row for row in _reexports(con, file_id) if (row[0], row[1]) not in named]
    return rows


def _reexports(con, file_id: int) -> list[tuple]:
    """`export * from './mul'` in a JavaScript or TypeScript barrel (an index.ts): an import of
    the whole module that exports each of its top-level definitions again, so an importer of
    each. Its edge names no definition, and a definition's blast left the barrel out; hidden
    coupling then called it a partner with "no structural link". Not `export * as ns`, nor
    `import * as ns`: a namespace, whose uses are its calls."""
    return con.execute(
        "select r.file_id, r.scope, r.kind, r.line, e.confidence, e.dst_qualname from edges e"
        " join refs r on r.id = e.ref_id join struct_files s on s.file_id = r.file_id"
        " where e.dst_file_id = ? and e.dst_qualname is null and r.kind = 'import'"
        " and r.name = '*' and r.alias is null and s.language in"
        " ('javascript', 'typescript', 'tsx')", (file_id,)).fetchall()


def _constructions(con, file_id: int, qualname: str) -> list[tuple]:
    """Calls that run a constructor by naming its class: `Retry(...)` runs `Retry.__init__`,
    `new Foo(...)` Foo's constructor (every one of its overloads: which one is not known).
    tenacity's `wait_fixed.__init__` had 1 dependent; 29 test lines construct the class."""
    cls, _, method = qualname.rpartition(".")
    if method not in _CONSTRUCTORS and method != cls.rpartition(".")[2]:
        return []
    return con.execute(
        "select r.file_id, r.scope, r.kind, r.line, e.confidence, e.dst_qualname from edges e"
        " join refs r on r.id = e.ref_id where e.dst_file_id = ? and e.dst_qualname = ?"
        " and r.kind = 'call'", (file_id, cls)).fetchall()


# How far up its classes a method's overridden definitions are looked for.
OVERRIDE_LEVELS = 3
# Methods a class's own call never reaches in a subclass: constructors (and Java's, named as
# their class), called on a class, not on the object.
_NOT_DISPATCHED = frozenset(("__init__", "__new__", "__init_subclass__", "constructor"))
_CONSTRUCTORS = frozenset(("__init__", "__new__", "constructor"))   # and Java's: the class's name
# Receivers of a call that dispatches on the object's class: `self.m()`, `this.m()`, `cls.m()`,
# and an unqualified call (a Java or TypeScript method calling another of its class).
_SELF_RECEIVERS = "(r.qualifier is null or r.qualifier in ('self', 'this', 'cls'))"


def _typed_calls(con, b_file: int, b_name: str, method: str, file_id: int,
                 cls: str) -> list[tuple]:
    """Python calls of a base's method on a variable or attribute declared (or made) of the
    base's class (`self.backend.authenticate()` with `backend: AuthenticationBackend`, whose
    qualifier is the class, structure_extract._py_declared_type): the object may be any of
    its subclasses, so the call runs the override. Not those in the overriding class itself
    (`Base.m(self)` there calls the base's own)."""
    short = b_name.rpartition(".")[2]
    return con.execute(
        "select r.file_id, r.scope, r.line, e.confidence, e.dst_qualname"
        " from edges e join refs r on r.id = e.ref_id join struct_files s"
        " on s.file_id = r.file_id where e.dst_file_id = ? and e.dst_qualname = ?"
        " and r.kind = 'call' and s.language = 'python'"
        " and (r.qualifier = ? or substr(r.qualifier, -length(?) - 1) = '.' || ?)"
        " and not (r.file_id = ? and (r.scope = ? or (r.scope >= ? and r.scope < ?)))",
        (b_file, f"{b_name}.{method}", short, short, short, file_id, cls, cls + ".",
         cls + "/")).fetchall()


def _dispatched(con, file_id: int, qualname: str) -> list[tuple]:
    """Calls that reach a method through one it overrides: a base class (or mixin, or abstract
    class) calling `self.m()` on its own `m` runs the subclass's `m` when the object is one.
    Only calls made inside the base class itself count (a sibling subclass's call runs its own
    class's `m`, never this one), and Python calls on a variable of the base's class
    (_typed_calls); each at the call's confidence times the base edge's, shared
    among the base's direct subclasses that define `m` (which of them runs depends on the
    object). Their kind is "dispatch"; the row's last column is the overridden method, so a
    chain shows the way."""
    cls, _, method = qualname.rpartition(".")
    if method in _NOT_DISPATCHED or method == cls.rpartition(".")[2]:   # constructors
        return []
    out: list[tuple] = []
    seen = {(file_id, cls)}
    frontier = [(file_id, cls, 1.0)]
    for _ in range(OVERRIDE_LEVELS):
        bases = []
        for fid, name, conf in frontier:
            bases += [(b_file, b_name, conf * c) for b_file, b_name, c in con.execute(
                "select e.dst_file_id, e.dst_qualname, e.confidence from refs r"
                " join edges e on e.ref_id = r.id where r.file_id = ? and r.scope = ?"
                " and r.kind = 'inherits' and e.dst_qualname is not null", (fid, name))]
        frontier = []
        for b_file, b_name, conf in bases:
            if (b_file, b_name) in seen:
                continue
            seen.add((b_file, b_name))
            frontier.append((b_file, b_name, conf))
            calls = con.execute(
                "select r.file_id, r.scope, r.line, e.confidence, e.dst_qualname"
                " from edges e join refs r on r.id = e.ref_id"
                " where e.dst_file_id = ? and e.dst_qualname = ? and r.kind = 'call'"
                f" and {_SELF_RECEIVERS} and r.file_id = ?"
                " and (r.scope = ? or (r.scope >= ? and r.scope < ?))",
                (b_file, f"{b_name}.{method}", b_file, b_name, b_name + ".",
                 b_name + "/")).fetchall() + _typed_calls(con, b_file, b_name, method,
                                                          file_id, cls)
            if not calls:
                continue
            sharers = con.execute(
                "select count(distinct r.file_id || ':' || r.scope) from edges e"
                " join refs r on r.id = e.ref_id where e.dst_file_id = ? and e.dst_qualname = ?"
                " and r.kind = 'inherits' and exists (select 1 from defs d"
                " where d.file_id = r.file_id and d.qualname = r.scope || '.' || ?)",
                (b_file, b_name, method)).fetchone()[0]
            share = conf / max(1, sharers)
            out += [(src, scope, "dispatch", line, confidence * share, dst)
                    for src, scope, line, confidence, dst in calls]
    return out


def _outgoing(con, file_id: int, qualname: str | None):
    qualname = _structural(qualname)
    params: tuple
    if qualname is None:
        where, params = "r.file_id = ?", (file_id,)
    else:
        where = "r.file_id = ? and (r.scope = ? or (r.scope >= ? and r.scope < ?))"
        params = (file_id, qualname, qualname + ".", qualname + "/")
    return con.execute(
        "select e.dst_file_id, e.dst_qualname, r.kind, r.line, e.confidence, r.scope from edges e"
        f" join refs r on r.id = e.ref_id where {where}", params).fetchall()


class _Names:
    def __init__(self, con):
        self.con = con
        self.paths: dict[int, str] = {}
        self.tests = {fid for (fid,) in con.execute(
            "select file_id from struct_files where is_test = 1")}
        self.test_defs: dict[tuple[int, str], bool] = {}

    def path(self, fid: int) -> str:
        if fid not in self.paths:
            self.paths[fid] = self.con.execute("select path from files where id = ?", (fid,)).get
        return self.paths[fid]

    def is_test(self, fid: int, scope: str | None) -> bool:
        """Code of a test file, or of a test definition elsewhere (a Rust `#[test]` function,
        anything in `mod tests`)."""
        if fid in self.tests:
            return True
        if scope is None:
            return False
        key = (fid, scope)
        if key not in self.test_defs:
            row = self.con.execute("select is_test from defs where file_id = ? and qualname = ?",
                                   key).fetchone()
            self.test_defs[key] = bool(row and row[0])
        return self.test_defs[key]


def _structural(qualname: str | None) -> str | None:
    """The structure pass names definitions as code does: overloads are one node there."""
    return structural_name(qualname) if qualname else qualname


def _inside(scope: str | None, qualname: str | None) -> bool:
    qualname = _structural(qualname)
    return qualname is not None and scope is not None and (
        scope == qualname or scope.startswith(qualname + "."))


def _relation(kind: str, is_test: bool) -> str:
    if is_test:
        return "test"
    return {"call": "caller", "dispatch": "caller", "import": "importer",
            "inherits": "subclass"}.get(kind, "reference")


# -- queries -----------------------------------------------------------------------------------


MIN_CONFIDENCE = 0.25   # a chain less likely than this (a guess by method name) is left out
NAME_ONLY = 0.4         # the most a call matched by a method's name alone gets (resolve.CONF_METHOD)


def blast(con, spec: TargetSpec, *, depth: int = 2, top_hidden: int = 10,
          half_life_days: float = 90.0, now: float | None = None,
          min_confidence: float = MIN_CONFIDENCE, clock: str = DEFAULT,
          coupling: CouplingSettings = COUPLING_DEFAULTS) -> Blast:
    """Who depends on the target (callers, importers, subclasses, tests: `depth` steps back),
    its hidden coupling (co-change under `coupling`, the repository's settings as `related`
    reads them) and a summary (hotspot recency under `half_life_days`)."""
    target = resolve(con, spec)
    depth = max(1, min(depth, MAX_DEPTH))
    names = _Names(con)
    whole_file = target.qualname is None
    start = (target.file_id, _structural(target.qualname))
    best: dict[tuple[int, str | None], Dependent] = {}
    faint: set[tuple[int, str | None]] = set()   # reached only below min_confidence
    frontier: list[tuple[tuple[int, str | None], tuple[Link, ...], float]] = [(start, (), 1.0)]
    missing = _structure_note(con, target)
    note = _with_line(con, spec, target, missing, "dependents")
    for level in range(1, depth + 1):
        nxt = []
        for (fid, qual), chain, conf in frontier:
            # By place, not in the edges' order: of two chains of one confidence the first is
            # kept, and the first MAX_DEPENDENTS; the ids follow an index run's workers.
            rows = sorted(_incoming(con, fid, qual, whole_file and (fid, qual) == start),
                          key=lambda r: (names.path(r[0]), r[1] or "", r[3], r[2], r[5] or ""))
            for src_file, scope, kind, line, confidence, dst_qual in rows:
                node = (src_file, scope)
                if node == start or (src_file == target.file_id and
                                     (whole_file or _inside(scope, target.qualname)
                                      or (scope is None and kind == "import"))):
                    # The target's own code; its own file's imports only lead back to it
                    # (barrels that `export *` each other).
                    continue
                link = Link(kind, names.path(src_file), scope, line, names.path(fid), dst_qual,
                            confidence)
                total = conf * confidence
                if total < min_confidence:
                    faint.add(node)
                    continue
                # Keep the most likely chain, the shorter or the first by place on a tie: as
                # stored, to four places (an unrounded 0.1333... beat the stored 0.1333).
                known = best.get(node)
                if known is not None and known.confidence >= round(total, 4):
                    continue
                dep = Dependent(names.path(src_file), scope,
                                _relation(kind, names.is_test(src_file, scope)), level,
                                round(total, 4), (link,) + chain)
                best[node] = dep
                nxt.append((node, dep.chain, total))
                if len(best) >= MAX_DEPENDENTS:
                    break
            if len(best) >= MAX_DEPENDENTS:
                break
        frontier = nxt
        if len(best) >= MAX_DEPENDENTS:
            note = _joined(note, f"stopped at {MAX_DEPENDENTS} dependents")
            break
    dependents = sorted(best.values(), key=lambda d: (d.depth, -d.confidence, d.path,
                                                      d.qualname or ""))
    hidden = _hidden(con, spec, target, dependents, top_hidden, coupling)
    return Blast(target, depth, dependents, hidden,
                 _summary(con, spec, dependents, half_life_days, read_clock(con, clock, now).now),
                 note, len(faint - best.keys()), min_confidence,
                 missing is None or bool(dependents))


def _hidden(con, spec: TargetSpec, target: Target, dependents: list[Dependent],
            top: int, coupling: CouplingSettings) -> list[Hidden]:
    """Co-change partners the structure does not connect (in either direction), with at least
    two shared commits: a risk needs a pattern, and one shared commit (often the one that
    created both) is only a hint, which `related` shows as such."""
    structural = {d.path for d in dependents} | {target.path}
    names = _Names(con)
    outgoing = _outgoing(con, target.file_id, target.qualname)
    structural |= {names.path(f) for f, *_ in outgoing}
    # Symbols linked either way: its dependents, and what it (its members included) refers to:
    # the functions it calls, the classes it extends or names.
    linked = {(d.path, _structural(d.qualname)) for d in dependents}
    linked |= {(names.path(f), _structural(q)) for f, q, *_ in outgoing if q}
    # Patterns only, asked of the ranking itself: cut to a top first, recent single commits
    # (one wide commit brings dozens) would crowd out older patterns; and enough of them that
    # the partners the structure explains leave `top` for the rest.
    found = related(con, TargetSpec(target.path, target.qualname),
                    min_support=max(2, coupling.min_support),
                    max_changeset=coupling.max_changeset, half_life_days=coupling.half_life_days,
                    top_k=top + max(len(structural), len(linked)), file_prior=0)
    out: list = []
    # For a symbol: the symbols that change with it first, those no dependent edge explains.
    for p in found.symbols:
        if ((p.path, _structural(p.qualname)) not in linked and not p.weak and len(out) < top
                and not _contains(p.path, p.qualname, target)):
            out.append(Hidden(p.path, p.qualname, p.support, round(p.confidence, 4), p.evidence))
    files = 0
    for p in found.files:
        if p.path not in structural and not p.weak:
            out.append(Hidden(p.path, None, p.support, round(p.confidence, 4), p.evidence))
            files += 1
        if files == top:
            break
    return out


def _contains(path: str, qualname: str | None, target: Target) -> bool:
    """Whether one of the two symbols holds the other (a class and its method), or both are
    overloads of one name (one node to the structure): a link too."""
    if path != target.path or not qualname or not target.qualname:
        return False
    a, b = _structural(qualname) or "", _structural(target.qualname) or ""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _summary(con, spec: TargetSpec, dependents: list[Dependent], half_life_days: float,
             now: float) -> Summary:
    counts: dict[str, int] = defaultdict(int)
    for d in dependents:
        counts[d.relation] += 1
    tests = sorted({d.label for d in dependents if d.relation == "test"})
    weighted = sum(d.confidence for d in dependents)
    hot = _hotspot_score(con, spec, half_life_days, now)
    score = (1 + math.log(1 + weighted)) * (1 + hot)
    level = next((name for bound, name in RISK_LEVELS if score < bound), "high")
    return Summary(dict(sorted(counts.items())), len({d.path for d in dependents}), tests, level,
                   round(score, 3), round(weighted, 3), round(hot, 3))


def _hotspot_score(con, spec: TargetSpec, half_life_days: float, now: float) -> float:
    """The target's score in `cortex hotspots` (0 when it has none: not changed, or gone)."""
    from cortex_core.query.hotspots import hotspot_score
    target = resolve(con, spec)
    if target.qualname is not None and not target.alive:
        return 0.0
    return hotspot_score(con, target.file_id, target.symbol_id, half_life_days=half_life_days,
                         now=now)


def _with_line(con, spec: TargetSpec, target: Target, note: str | None,
               what: str) -> str | None:
    """`note`, after why the answer is the file's when `PATH:LINE` was asked for and no symbol
    encloses the line (as history and related say it)."""
    if spec.line is None or target.qualname is not None:
        return note
    gone = f"{target.path} is not at HEAD"
    if note is not None and note.startswith(gone):   # the line's note says it already
        note = note[len(gone):].strip(" ()") or None
    return _joined(f"{no_symbol_at(con, target, spec.line)}; showing the file's {what}", note)


def _joined(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


def _structure_note(con, target: Target) -> str | None:
    """Why a target has no structure to walk, if it has none."""
    language = con.execute("select language from files where id = ?",
                           (target.file_id,)).fetchone()[0]
    # First: a repository of C alone has no structure at all, and no index run builds it.
    if language not in STRUCTURE_LANGUAGES:
        return (f"structure not read for {language} files: history and co-change only"
                if language else
                "structure not read for this file (language not supported)")
    # Until a run's structure pass (it records its version) there is none; after it, a HEAD
    # with no file it reads has none either, and another run would not change that.
    if not con.execute("select 1 from struct_files limit 1").fetchone() and not con.execute(
            "select 1 from meta where key = 'extract_version'").fetchone():
        return "no structure indexed yet (an index run builds it)"
    if target.qualname and not target.alive:
        # Renamed or moved away: its code, and its structure, live on under another name.
        found = moved_to(con, target.symbol_id) if target.symbol_id is not None else None
        return f"{target.label} is gone at HEAD" + (
            f" (moved to {found[0]} in {found[1].sha[:10]}, which has its structure)"
            if found else "")
    row = con.execute("select skip_reason from struct_files where file_id = ?",
                      (target.file_id,)).fetchone()
    if row is None and not _at_head(con, target.file_id):
        successor = _renamed_to(con, target.file_id)
        # Its structure is its successor's: blast that one (history follows the rename).
        return f"{target.path} is not at HEAD" + (
            f" (renamed to {successor}, which has its structure)" if successor else "")
    if row is None:
        return "structure not read for this file"
    if row[0]:
        return f"structure skipped for this file: {row[0]}"
    return None


def _at_head(con, file_id: int) -> bool:
    return con.execute("select 1 from head_files where file_id = ?", (file_id,)).fetchone() \
        is not None


def _renamed_to(con, file_id: int, steps: int = 50) -> str | None:
    """The path at HEAD that a file was renamed to, through every later rename (werkzeug's
    wrappers.py -> wrappers/__init__.py -> src/werkzeug/wrappers/__init__.py); None when the
    chain ends elsewhere (deleted) or is longer than `steps`."""
    seen = {file_id}
    for _ in range(steps):
        row = con.execute(
            "select fc.file_id from file_changes fc join commits c on c.id = fc.commit_id"
            " where fc.old_file_id = ? and fc.status = 'R' and c.reachable = 1"
            " order by c.order_time desc, c.generation desc limit 1", (file_id,)).fetchone()
        if row is None or row[0] in seen:
            return None
        file_id = row[0]
        seen.add(file_id)
        if _at_head(con, file_id):
            return con.execute("select path from files where id = ?", (file_id,)).get
    return None


def dependents_of(con, target: Target) -> int | None:
    """`direct_dependents` of a resolved target; None when its file's structure was not read
    (a language without it, skipped) or the symbol is gone at HEAD: no count to show."""
    read = con.execute("select skip_reason from struct_files where file_id = ?",
                       (target.file_id,)).fetchone()
    if read is None or read[0] is not None or (target.qualname and not target.alive):
        return None
    return direct_dependents(con, target.file_id, target.qualname)


def direct_dependents(con, file_id: int, qualname: str | None) -> int:
    """How many places (a definition, or a file's module level) refer to the symbol, or import
    the file, directly: the depth-1 count of `blast`, without walking further."""
    whole_file = qualname is None
    places = {(src, scope)
              for src, scope, _, _, confidence, _ in _incoming(con, file_id, qualname, whole_file)
              if confidence >= MIN_CONFIDENCE
              and not (src == file_id and (whole_file or _inside(scope, qualname)))}
    return len(places)


def callers(con, spec: TargetSpec) -> Neighbours:
    target = resolve(con, spec)
    names = _Names(con)
    items = []
    for src_file, scope, kind, line, conf, _ in _incoming(con, target.file_id, target.qualname,
                                                          target.qualname is None):
        if kind == "import" or (src_file == target.file_id and (
                target.qualname is None or _inside(scope, target.qualname))):
            continue
        items.append(Neighbour(names.path(src_file), scope,
                               _relation(kind, names.is_test(src_file, scope)), round(conf, 4),
                               line))
    missing = _structure_note(con, target)
    return Neighbours(target, sorted(set(items), key=lambda n: (-n.confidence, n.path,
                                                                n.qualname or "", n.line)),
                      _with_line(con, spec, target, missing, "callers"),
                      missing is None or bool(items))


def callees(con, spec: TargetSpec) -> Neighbours:
    target = resolve(con, spec)
    names = _Names(con)
    items = []
    for dst_file, dst_qual, kind, line, conf, _ in _outgoing(con, target.file_id, target.qualname):
        if kind == "import" and target.qualname is not None:
            continue
        if dst_file == target.file_id and (target.qualname is None
                                           or _inside(dst_qual, target.qualname)):
            continue   # its own code (a recursive call, a class's own methods): as callers

        items.append(Neighbour(names.path(dst_file), dst_qual,
                               {"call": "callee", "inherits": "base", "import": "imported"}.get(
                                   kind, "reference"), round(conf, 4), line))
    missing = _structure_note(con, target)
    return Neighbours(target, sorted(set(items), key=lambda n: (-n.confidence, n.path,
                                                                n.qualname or "", n.line)),
                      _with_line(con, spec, target, missing, "callees"),
                      missing is None or bool(items))


# -- fused "what changes with it" ----------------------------------------------------------------


@dataclass(frozen=True)
class FusedPartner:
    path: str
    score: float
    structure: float          # in [0, 1]
    cochange: float           # co-change: the shared commits' weight / the target's, in [0, 1]
    relation: str | None      # how the structure connects it (dependent, dependency), if it does
    depth: int | None
    support: int              # shared commits
    evidence: list[CommitRef]
    confidence: float = 0.0   # shared commits / the target's commits (no decay)
    last_shared: int = 0      # committer time of the newest shared commit
    folder: float = 0.0       # the back-off: its folder's co-change (coupling.folder_scores)

    @property
    def weak(self) -> bool:
        """Co-change from one shared commit only (structure may still vouch for it)."""
        return self.support == 1


@dataclass(frozen=True)
class FusedRelated:
    target: Target
    files: list[FusedPartner]
    target_commits: int = 0   # commits (within the changeset bound) that changed the target
    half_life_days: float | None = HALF_LIFE_DAYS   # None: half_life_commits
    structure_weight: float = STRUCTURE_WEIGHT
    symbols: list = field(default_factory=list)  # for a symbol: coupling.Partner
    folder_prior: float = FOLDER_PRIOR
    file_prior: float = FILE_PRIOR
    half_life_commits: int | None = None   # the half-life on the repository's clock of commits
    note: str | None = None   # why the answer is the file's when a line was asked for
    # The bound on a commit's files for it to count (target_commits counts every non-merge
    # commit under it that changed the target, side branches' included, so the count can
    # differ from the target's history, which leaves out what a merge dropped).
    max_changeset: int = MAX_CHANGESET
    symbol_twin_weight: float = SYMBOL_TWIN_WEIGHT

    @property
    def formula(self) -> str:
        decay = decay_text(self.half_life_days, self.half_life_commits)
        text = (f"score = c + {self.structure_weight:g} × s / (1 + n) + "
                f"{self.folder_prior:g} × f; c = the shared commits' weight / the target's "
                f"({decay}), n = the target's "
                "commits, s = chain confidence × 0.5^(depth − 1), or a file of the same name but "
                "for test affixes, f = how often its folder changes with the target's file × "
                "its share of the folder's commits; ties: the newest shared commit, then s")
        if self.target.qualname:
            text += (f"\nsymbols: score = c + {self.file_prior:g} × p + ({self.structure_weight:g}"
                     f" × s + {self.symbol_twin_weight:g} × t) / (1 + n); p = how often its file "
                     "changes with the target's file × its share of its file's commits, s = a "
                     "call in either direction, t = 1 for a symbol of the target's name but for "
                     f"test affixes (none for a name declared in more than {SYMBOL_TWIN_MAX} "
                     f"places or held by more than {2 * SYMBOL_TWIN_MAX} symbols)")
        return text


# Whether `related` counts type references (an annotation, a Java field's type) as structure.
# Measured on the tuning repositories (2026-12-07): junit4 lost 0.6 points of Recall@10 at file
# level with them, so the fusion leaves them out; blast and callers list them.
TYPE_REFS = False


def structural_neighbours(con, target: Target, depth: int = 2, type_refs: bool = True
                          ) -> dict[str, tuple[float, str, int]]:
    """path -> (s, relation, depth) of files connected to the target in either direction
    (without the edges of type references unless `type_refs`)."""
    skip = set() if type_refs else {"type"}
    out: dict[str, tuple[float, str, int]] = {}
    names = _Names(con)
    start = (target.file_id, _structural(target.qualname))

    def dependents(fid, qual, level):
        whole = target.qualname is None and fid == target.file_id and level == 1
        return [(src, scope, c) for src, scope, kind, _, c, _ in _incoming(con, fid, qual, whole)
                if kind not in skip]

    def dependencies(fid, qual, level):
        return [(dst, dst_qual, c) for dst, dst_qual, kind, _, c, _ in _outgoing(con, fid, qual)
                if kind not in skip]

    for relation, step in (("dependent", dependents), ("dependency", dependencies)):
        frontier, seen = [(start, 1.0)], {start}
        for level in range(1, depth + 1):
            nxt = []
            for (fid, qual), conf in frontier:
                for other_file, other_qual, c in step(fid, qual, level):
                    node = (other_file, other_qual)
                    if node in seen or other_file == target.file_id:
                        continue
                    seen.add(node)
                    s = conf * c * 0.5 ** (level - 1)
                    path = names.path(other_file)
                    if s > out.get(path, (0.0,))[0]:
                        out[path] = (s, relation, level)
                    nxt.append((node, conf * c))
            frontier = nxt
    return out


def fused_related(con, spec: TargetSpec, *, top_k: int = 10, depth: int = 2,
                  max_changeset: int = MAX_CHANGESET, min_support: int = MIN_SUPPORT,
                  half_life_days: float | None = HALF_LIFE_DAYS,
                  structure_weight: float = STRUCTURE_WEIGHT,
                  size_exponent: float = SIZE_EXPONENT,
                  twin_weight: float = TWIN_WEIGHT, decay: str = DECAY,
                  folder_prior: float = FOLDER_PRIOR, file_prior: float = FILE_PRIOR,
                  symbol_twin_weight: float = SYMBOL_TWIN_WEIGHT,
                  type_refs: bool = TYPE_REFS) -> FusedRelated:
    """Files that change with the target: co-change first; the structure and the folders'
    co-change break its ties and fill in where history is thin (the structure's share shrinks
    as the target's commits grow). For a symbol, the symbols likewise (coupling.related)."""
    target = resolve(con, spec)
    structure = structural_neighbours(con, target, depth, type_refs)
    if twin_weight:
        for path in name_twins(con, target, max_changeset):
            if structure.get(path, (0.0,))[0] < twin_weight:
                structure[path] = (twin_weight, "same name", None)
    cochange, total, n, h = file_scores(con, target, max_changeset=max_changeset,
                                        min_support=min_support, half_life_days=half_life_days,
                                        size_exponent=size_exponent)
    # Asked for patterns (min_support above 1), the structure and the folders only re-rank the
    # files that have one (as for symbols): a file one edge away that shared a single commit
    # would be listed as sharing none.
    folders = folder_scores(con, h, target) if folder_prior else {}
    if min_support > 1:
        folders = {p: v for p, v in folders.items() if p in cochange}
        structure = {p: v for p, v in structure.items() if p in cochange}
    rows = []
    for path in set(structure) | set(cochange) | set(folders):
        s, relation, level = structure.get(path, (0.0, None, None))
        found = cochange.get(path)
        if found is None or not n:
            c = 0.0
        elif decay == "ties":  # support leads; the decayed weight only orders its ties
            c = found.support / n
        else:
            c = found.weight / total if total else 0.0
        fp = folders.get(path, 0.0)
        rows.append((c + structure_weight * s / (1 + n) + folder_prior * fp, s, c, path,
                     relation, level, found, fp))
    # Ties: the decayed weight ("ties" mode), the newest shared commit (recency, as for co-change
    # alone), then structure.
    rows.sort(key=lambda r: (-round(r[0], 9), -round(r[6].weight, 9) if r[6] is not None else 0,
                             -(r[6].last_shared if r[6] is not None else 0), -r[1], r[3]))
    out = []
    for score, s, c, path, relation, level, found, fp in rows[:top_k]:
        out.append(FusedPartner(
            path, round(score, 4), round(s, 4), round(c, 4), relation, level,
            found.support if found else 0, evidence_of(con, h, found.commits) if found else [],
            round(found.support / n, 4) if found and n else 0.0,
            found.last_shared if found else 0, round(fp, 4)))
    symbols = []
    if target.symbol_id is not None:
        symbols = related(con, TargetSpec(target.path, target.qualname), top_k=top_k,
                          max_changeset=max_changeset, min_support=min_support,
                          half_life_days=half_life_days, size_exponent=size_exponent,
                          decay=decay, file_prior=file_prior,
                          structure=symbol_neighbours(con, target, type_refs),
                          structure_weight=structure_weight,
                          twin_weight=symbol_twin_weight).symbols
    half_life = h.half_life(half_life_days)
    note = (f"{no_symbol_at(con, target, spec.line)}; showing the file's partners"
            if spec.line is not None and target.symbol_id is None else None)
    return FusedRelated(target, out, n, half_life.days, structure_weight, symbols,
                        folder_prior, file_prior, half_life.commits, note, max_changeset,
                        symbol_twin_weight)


def symbol_neighbours(con, target: Target, type_refs: bool = True
                      ) -> dict[int, tuple[float, str]]:
    """symbol id -> (confidence, "caller" or "callee") of the symbols alive at HEAD that the
    target symbol references or that reference it, one edge away (type references only if
    `type_refs`)."""
    if target.qualname is None:
        return {}
    skip = set() if type_refs else {"type"}
    wanted: dict[int, dict[str, tuple[float, str]]] = defaultdict(dict)
    for relation, edges in (
            ("caller", ((src, scope, c) for src, scope, kind, _, c, _
                        in _incoming(con, target.file_id, target.qualname, False)
                        if kind not in skip)),
            ("callee", ((dst, qual, c) for dst, qual, kind, _, c, _
                        in _outgoing(con, target.file_id, target.qualname)
                        if kind not in skip))):
        for fid, qual, conf in edges:
            if qual and conf > wanted[fid].get(_structural(qual), (0.0,))[0]:
                wanted[fid][_structural(qual)] = (conf, relation)
    out: dict[int, tuple[float, str]] = {}
    for fid, quals in wanted.items():
        for sid, qual in con.execute("select id, qualname from symbols where file_id = ?"
                                     " and alive = 1", (fid,)):
            found = quals.get(_structural(qual))
            if found and found[0] > out.get(sid, (0.0,))[0]:
                out[sid] = found
    return out
