"""Co-change: what changes together with a file or a symbol, as association rules over history.

For a target X and a candidate Y, over the reachable non-merge commits that change at most
`max_changeset` files (larger commits — reformatting, imports, vendoring — say little about
coupling; code-maat's default is 30):

    support(X, Y)     = commits that change both
    confidence(X ⇒ Y) = support / commits that change X      (how often Y follows X)
    confidence(Y ⇒ X) = support / commits that change Y      (how much of Y's life is X's)
    weight(X, Y)      = the shared commits, each counted 0.5^(age / half-life), its age
                        counted on the repository's own clock of commits: the commits read
                        that are newer than it (an old clone ranks as it did when it was
                        current, and a quiet year ages nothing); the half-life is half of the
                        commits read (HALF_LIFE_SHARE), at least HALF_LIFE_FLOOR_COMMITS. A
                        half-life in days (a setting) counts age in time instead, from the
                        indexed HEAD's date (clock.repository_time). A fixed half-life cannot
                        suit both an 8-year and a 22-year history, and commits measured better
                        than the span in time (bench/bench_cochange.py; docs/numbers.md)

Candidates are ranked by weight (with no half-life: by support, the order of association rules,
Zimmermann et al. 2004), then by the newest shared commit, then by name. One shared commit is
enough (`min_support` 1): it is shown as weak evidence, and ordered by its recency among the
others. Every path is a candidate and counts in the commits' sets, whatever its indexing level
(lockfiles and generated files are exactly what a reviewer forgets), except changelogs, which
change with everything (CHANGELOG, HISTORY, NEWS..., towncrier fragments). Identities follow
renames and moves forward in time (Lineage), so a file's earlier names count as the file and a
reused name starts a lineage of its own. Only candidates alive at HEAD are returned.

Where the target shares few or no commits with a candidate, the level above speaks (back-off):

    a symbol's partners:  score = c + FILE_PRIOR × p + (w × s + SYMBOL_TWIN_WEIGHT × t) / (1 + n)
        c = weight / the target's commits weighted alike; n = the target's commits;
        p = how much the candidate's file changes with the target's file (its share of that
            file's weighted commits; the target's own file 1) × the candidate's share of its
            own file's weighted commits: the symbols of the target's file and of the
            PRIOR_FILES files that change with it most are candidates;
        s = a call between them, either way (blast.fused_related reads it; w its structure weight)
        t = 1 for a symbol of the target's name (symbol_twins; blast.fused_related asks for it)
    a file's partners (blast.fused_related): + FOLDER_PRIOR × f, f likewise for folders (the
        target's folder and the PRIOR_FOLDERS folders that change with its file most)

With `min_support` above 1 the back-off only re-ranks what has the support asked for.

The half-life was picked on time-split histories of repositories kept apart from the ones the
numbers are reported on (bench/bench_cochange.py; docs/numbers.md).
"""

from __future__ import annotations

import re
import weakref
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import apsw

from cortex_core.lang.change_kinds import SUBSTANTIVE_SQL
from cortex_core.lang.test_paths import is_test_path
from cortex_core.clock import repository_time
from cortex_core.config import COUPLING_DEFAULTS, CouplingSettings
from cortex_core.query.history import (COMMIT_COLUMNS, NEWEST_FIRST, OLDEST_FIRST, CommitRef,
                                       commit_ref, symbol_history_commits)
from cortex_core.query.targets import Target, TargetSpec, resolve

EVIDENCE = 5  # shared commits listed per partner
_DEFAULTS = COUPLING_DEFAULTS  # the one set of defaults (config.py)
MAX_CHANGESET = _DEFAULTS.max_changeset
MIN_SUPPORT = _DEFAULTS.min_support
HALF_LIFE_DAYS = _DEFAULTS.half_life_days  # None: HALF_LIFE_SHARE of the history's commits
HALF_LIFE_SHARE = 0.5
# A short history is all recent: no steep decay (not measured: every history measured was longer).
HALF_LIFE_FLOOR_COMMITS = 100
# Back-off for candidates the target shares few or no commits with (see the module docstring):
# a symbol from its file's co-change, a file from its folder's.
FILE_PRIOR = 1.0
FOLDER_PRIOR = 0.03
PRIOR_FILES = 30    # the target file's strongest partner files whose symbols are candidates
PRIOR_FOLDERS = 10  # folders read for the back-off: the target's own and the 9 others
# A symbol of the target's name but for test affixes (`parse` and `test_parse`, `Foo.run` and
# `Bar.run`: a test and its subject, an interface's implementations) is a partner where history
# is thin, as a structural edge is: SYMBOL_TWIN_WEIGHT / (1 + the target's commits). A name that
# more than SYMBOL_TWIN_MAX other places declare (`get`, `run`), or more than twice as many
# symbols hold, says nothing (symbol_twins). Measured on the tuning repositories
# (docs/numbers.md); the fused ranking passes it, co-change alone does not.
SYMBOL_TWIN_WEIGHT = 2.0
SYMBOL_TWIN_MAX = 5
SIZE_EXPONENT = 0.0
# How a set of changed items scores a candidate (related_to_set): "share", each shared commit's
# weight × the share of the set it held (TARMAQ-style); "max", its highest decayed confidence
# from any one item. Measured on time-split histories (bench_cochange.py --set).
# Files: "share" (at least as good on both tuning repositories' recall; "max" lost MRR on one).
# Symbols: "max" (+0.9 and +2.9 points of Recall@10, +0.7 and +4.5 of MRR@10 over "share").
SET_AGGREGATE = "share"
SET_SYMBOL_AGGREGATE = "max"
# How the decay ranks: "weight", by the decayed weight of the shared commits; "ties", by support
# (the rules' order) with the decayed weight breaking its ties (bench/bench_cochange.py).
DECAY = "weight"
_DAY = 86_400

_CHANGELOG_NAME = re.compile(
    r"(?i)(change[-_]?log|changes|history|news|release[-_]?notes|whatsnew)"
    r"(\.(md|markdown|rst|txt|adoc|asciidoc|org|xml))?")   # xml: Maven's src/changes/changes.xml
# Fragment folders (towncrier, ansible); not `changes/`, a common name for source folders.
_CHANGELOG_DIRS = frozenset({"changelog.d", "newsfragments", "changelogs"})


def is_changelog(path: str) -> bool:
    """A changelog or a changelog fragment: it changes with everything, so it is no partner."""
    *dirs, name = path.split("/")
    return bool(_CHANGELOG_NAME.fullmatch(name)) or any(d.lower() in _CHANGELOG_DIRS for d in dirs)


@dataclass(frozen=True)
class Partner:
    path: str
    qualname: str | None
    support: int
    confidence: float          # confidence(target ⇒ partner)
    reverse_confidence: float  # confidence(partner ⇒ target)
    evidence: list[CommitRef]  # the newest shared commits
    weight: float = 0.0        # the shared commits weighted by age
    weighted_confidence: float = 0.0  # weight / the target's commits weighted alike, in [0, 1]
    last_shared: int = 0       # committer time of the newest shared commit
    # Symbols only (what `related` ranks them by): score = weighted_confidence + FILE_PRIOR ×
    # prior + (structure weight × structure + twin weight × twin) / (1 + the target's commits).
    score: float = 0.0
    prior: float = 0.0         # its file's co-change with the target's file × its share of it
    structure: float = 0.0     # a call in either direction: the edge's confidence
    relation: str | None = None  # "same file", "caller", "callee", "same name": what the prior,
    # the structure or the name saw
    line: int | None = None    # a symbol's first line at HEAD (an editor opens it there)
    twin: float = 0.0          # 1 for a symbol of the target's name (SYMBOL_TWIN_WEIGHT)

    @property
    def weak(self) -> bool:
        """One shared commit or none (a symbol ranked by its file or the structure): a hint,
        not a pattern."""
        return self.support < 2


class HalfLife(NamedTuple):
    """How a shared commit's weight decays: on the repository's clock of commits (`commits`, the
    default), or in `days` when a setting asks; 0 days: not at all."""
    days: float | None = None     # None: on the clock of commits
    commits: int | None = None    # None: in days


def decay_text(days: float | None, commits: int | None) -> str:
    """How each shared commit is weighted, in words (the formula that `--explain` prints)."""
    if commits:
        return f"each shared commit weighted 0.5^(commits since it / {commits})"
    if _decays(days):
        return f"each shared commit weighted 0.5^(age / {days:g} days)"
    return "no decay"


def _decays(days: float | None) -> bool:
    # Only a positive half-life decays (0, negative, NaN: none), as the settings' checks say.
    return days is not None and days > 0


@dataclass(frozen=True)
class Related:
    target: Target
    target_commits: int        # commits (within the changeset bound) that change the target
    files: list[Partner]
    symbols: list[Partner]
    max_changeset: int
    min_support: int
    half_life_days: float | None = HALF_LIFE_DAYS   # None: half_life_commits
    half_life_commits: int | None = None           # the half-life on the clock of commits


@dataclass(frozen=True)
class Scored:
    """A candidate before it is labelled: what the ranking reads."""
    ident: int
    support: int
    weight: float
    last_shared: int
    commits: list[int]


def related(con: apsw.Connection, spec: TargetSpec, *, top_k: int = 10,
            max_changeset: int = MAX_CHANGESET, min_support: int = MIN_SUPPORT,
            half_life_days: float | None = HALF_LIFE_DAYS,
            size_exponent: float = SIZE_EXPONENT, decay: str = DECAY,
            file_prior: float = FILE_PRIOR, structure: dict[int, tuple[float, str]] | None = None,
            structure_weight: float = 1.0, twin_weight: float = 0.0) -> Related:
    """Files, and for a symbol the symbols, that change with the target. Files by co-change
    alone; symbols by co-change, their file's co-change with the target's (`file_prior`, 0: off)
    and, when given, `structure` (symbol id -> (confidence, relation): what blast's
    fused_related reads from the code) and the symbols of its name (`twin_weight`, 0: off)."""
    target = resolve(con, spec)
    h = _history_sets(con, max_changeset)
    half_life = h.half_life(half_life_days)
    weights = h.weights(half_life, size_exponent)
    me, mine, _, _, _ = _side(h, target)
    own_file = h.file_canon.latest(target.file_id, h.alive_files)
    files = _partners(con, h, mine, h.files_by_commit, h.commits_of_file, {own_file},
                      h.alive_files, min_support, top_k, _file_label, weights, decay,
                      _homes(con, h, target, me, mine))
    symbols = []
    if target.symbol_id is not None:
        symbols = _symbol_partners(con, h, me, mine, min_support, top_k, weights, decay,
                                   file_prior, structure or {}, structure_weight, twin_weight)
    return Related(target, len(mine), files, symbols, max_changeset, min_support, *half_life)


@dataclass(frozen=True)
class CoupledSymbol:
    """The hover's "usually changes with `Session.send` (7 of 9 commits)"."""
    path: str
    qualname: str
    shared: int    # commits that changed both
    of: int        # commits that changed the target
    symbol_id: int = 0


@dataclass(frozen=True)
class SetPartner:
    path: str
    # "share": Σ over shared commits of weight × (changed items it held) / |set|; "max": the
    # highest over the set's items of (weight of the commits shared with it) / (its weight).
    score: float
    support: int              # commits shared with any of the changed items
    with_changed: list[str]   # the changed files (or symbols, PATH::QUALNAME) it changed with
    evidence: list[CommitRef]
    qualname: str | None = None   # a symbol partner's
    plain: float = 0.0        # the score without decay
    shared_with: dict[str, int] | None = None   # changed item -> commits shared with it
    last_shared: int = 0      # committer time of the newest shared commit
    line: int | None = None   # a symbol partner's first line at HEAD

    @property
    def weak(self) -> bool:
        return self.support < 2

    @property
    def label(self) -> str:
        return f"{self.path}::{self.qualname}" if self.qualname else self.path


@dataclass(frozen=True)
class SetRelated:
    """What a set of changed files and symbols usually brings along (the working tree's "you
    probably also need to touch ..."): symbols, then files."""
    changed: list[str]        # the set's files the index knows
    unknown: list[str]        # the set's files without history (new, or not indexed)
    files: list[SetPartner]
    half_life_days: float | None = HALF_LIFE_DAYS   # None: half_life_commits
    changed_symbols: list[str] = field(default_factory=list)   # the set's known symbols
    unknown_symbols: list[str] = field(default_factory=list)   # ... without history (new ones)
    symbols: list[SetPartner] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)   # changed files whose symbols were not read, with the reason
    truncated: bool = False   # the working tree's diff was cut to its bounds
    base: str | None = None   # the commit the working tree was compared with
    unindexed_commits: int = 0   # commits of HEAD past `base` (the index's): counted as changes
    min_support: int = MIN_SUPPORT   # shared commits a partner needed
    aggregate: str = SET_AGGREGATE            # how the files were scored (related_to_set)
    symbol_aggregate: str = SET_SYMBOL_AGGREGATE   # how the symbols were
    half_life_commits: int | None = None      # the half-life on the clock of commits

    @property
    def decay(self) -> str:
        """How each shared commit was weighted, in the words the fused ranking uses."""
        return decay_text(self.half_life_days, self.half_life_commits)

    def nothing(self, what: str) -> str:
        """Why no partner is listed, for `what` ("files" or "symbols")."""
        if self.min_support > 1:
            return (f"nothing: no other {what[:-1]} shares {self.min_support} or more commits "
                    f"with the changed {what}")
        return f"nothing: no history links the changed {what} to others"


def related_to_set(con: apsw.Connection, paths: list[str], *, top_k: int = 10,
                   max_changeset: int = MAX_CHANGESET, min_support: int = MIN_SUPPORT,
                   half_life_days: float | None = HALF_LIFE_DAYS,
                   symbols: Sequence[tuple[str, str]] = (), aggregate: str = SET_AGGREGATE,
                   symbol_aggregate: str = SET_SYMBOL_AGGREGATE) -> SetRelated:
    """Files, and for changed `symbols` ((path, qualified name) pairs) the symbols, that usually
    change with the set and are not among it. A commit counts for its candidates in proportion to
    how many of the set it changed (as TARMAQ prefers the rules whose antecedent covers most of
    the query): a file that came along with three of the changed files outranks one that came
    along with one of them. Symbols are ranked over the symbols' history, by default by their
    highest decayed confidence from any one changed symbol (`symbol_aggregate` "max": measured
    better for symbols; "share" is the files' way)."""
    h = _history_sets(con, max_changeset)
    half_life = h.half_life(half_life_days)
    weights = h.weights(half_life)
    paths_of = h.paths(con)
    by_path = {path: fid for fid, path in paths_of.items()}
    known, unknown, ids = [], [], set()
    for path in dict.fromkeys(paths):
        fid = by_path.get(path)
        if fid is None:
            unknown.append(path)
            continue
        fid = h.file_canon.latest(fid, h.alive_files)
        known.append(path)
        ids.add(fid)
    exclude = set(ids) | {by_path[p] for p in paths if p in by_path}
    files = _set_partners(h, ids, exclude, h.files_by_commit, h.commits_of_file, h.alive_files,
                          min_support, top_k, weights, lambda f: (paths_of[f], None), aggregate)
    out = [SetPartner(path, score, support, [paths_of[f] for f in sorted(
                          held, key=lambda f: paths_of[f])], evidence_of(con, h, commits),
                      None, plain, {paths_of[f]: n for f, n in each.items()}, last)
           for (path, _), score, plain, support, held, each, commits, last, _ in files]
    known_symbols, unknown_symbols, sids, raw = _symbol_ids(con, h, symbols)
    labels: dict[int, tuple[str, str]] = {}

    def label(g: int) -> tuple[str, str]:
        if g not in labels:
            labels[g] = _symbol_label(con, g)
        return labels[g]

    def text(g: int) -> str:
        path, qualname = label(g)
        return f"{path}::{qualname}"
    found = _set_partners(h, sids, sids | raw, h.symbols_by_commit, h.commits_of_symbol,
                          h.alive_symbols, min_support, top_k, weights, label, symbol_aggregate,
                          h.one_change)
    syms = [SetPartner(path, score, support, sorted(text(g) for g in held),
                       evidence_of(con, h, commits), qualname, plain,
                       {text(g): n for g, n in each.items()}, last, _symbol_line(con, ident))
            for (path, qualname), score, plain, support, held, each, commits, last, ident
            in found]
    return SetRelated(known, unknown, out, half_life.days, known_symbols, unknown_symbols, syms,
                      aggregate=aggregate, symbol_aggregate=symbol_aggregate,
                      half_life_commits=half_life.commits, min_support=min_support)


def _symbol_ids(con, h: "_HistorySets", symbols: Sequence[tuple[str, str]]
                ) -> tuple[list[str], list[str], set[int], set[int]]:
    """(labels of the symbols the index knows alive, labels of the others, their HEAD
    identities, the ids as looked up)."""
    known, unknown, ids, raw = [], [], set(), set()
    for path, qualname in dict.fromkeys(symbols):
        row = con.execute("select s.id from symbols s join files f on f.id = s.file_id"
                          " where f.path = ? and s.qualname = ? and s.alive = 1 limit 1",
                          (path, qualname)).fetchone()
        text = f"{path}::{qualname}"
        if row is None:
            unknown.append(text)
            continue
        raw.add(row[0])
        ids.add(h.symbol_canon.latest(row[0], h.alive_symbols))
        known.append(text)
    return known, unknown, ids, raw


def _set_partners(h: "_HistorySets", ids: set[int], exclude: set[int],
                  by_commit: dict[int, set[int]], commits_of: dict[int, set[int]],
                  alive: set[int], min_support: int, top_k: int, weights, label,
                  aggregate: str = "share",
                  one_change: dict[int, dict[int, set[int]]] | None = None) -> list[tuple]:
    """A set's candidates. `aggregate` "share" (TARMAQ-style): every commit that changed some of
    `ids` counts for each of its other identities by its weight × the share of the set it
    changed; "max": a candidate's highest confidence from any one of `ids`, its commits weighted
    alike. Ranked by that score, then the newest shared commit, then the label. Rows: (label,
    score, plain score (the same without decay),
    support, the set's identities it came with, commits shared with each, the shared commits,
    the newest shared commit's time, its id). `one_change`: _HistorySets.one_change, for
    symbols (a split function's halves are not partners in their shared past)."""
    if not ids:
        return []
    one_change = one_change or {}
    score: dict[int, float] = defaultdict(float)
    plain: dict[int, float] = defaultdict(float)
    shared: dict[int, list[int]] = defaultdict(list)
    commits = set().union(*(commits_of.get(f, set()) for f in ids))
    by_share = aggregate != "max"
    for commit_id in commits:
        members = by_commit[commit_id]
        held = members & ids
        w = weights(commit_id)
        split = one_change.get(commit_id)
        for g in members:
            if g in exclude or g not in alive:
                continue
            # Only the items whose change is not also g's (the halves of a split function are
            # not partners in their shared past; another item's rule still counts).
            n = len(held) if not split else sum(1 for i in held if g not in split.get(i, ()))
            if n:
                shared[g].append(commit_id)
                if by_share:
                    score[g] += w * n / len(ids)
                    plain[g] += n / len(ids)
    if not by_share:   # the strongest rule of the set: max over its items of confidence
        score, plain = _strongest_rules(ids, commits_of, by_commit, exclude, alive, weights,
                                        one_change)
    last = {g: max(h.commit_time[c] for c in cs) for g, cs in shared.items()}
    eligible = [g for g in score if len(shared[g]) >= max(1, min_support)]
    eligible.sort(key=lambda g: (-round(score[g], 9), -last[g]))
    if not eligible:
        return []
    # Labels break the remaining ties; only the candidates tied with the last one kept are read.
    bound = (-round(score[eligible[min(top_k, len(eligible)) - 1]], 9),
             -last[eligible[min(top_k, len(eligible)) - 1]])
    cut = [g for g in eligible if (-round(score[g], 9), -last[g]) <= bound]
    cut.sort(key=lambda g: (-round(score[g], 9), -last[g], label(g)))
    rows = []
    for g in cut[:top_k]:
        # Which of the set each kept candidate came with, counted for the kept ones only: for
        # every candidate, a wide commit (a file of thousands of functions deleted) would make
        # candidates × items counters.
        each: Counter = Counter()
        for c in shared[g]:
            split = one_change.get(c, {})
            each.update(i for i in by_commit[c] & ids if g not in split.get(i, ()))
        rows.append((label(g), round(score[g], 4), round(plain[g], 4), len(shared[g]),
                     set(each), dict(each), shared[g], last[g], g))
    return rows


def _strongest_rules(ids: set[int], commits_of: dict[int, set[int]],
                     by_commit: dict[int, set[int]], exclude: set[int], alive: set[int], weights,
                     one_change: dict[int, dict[int, set[int]]] | None = None
                     ) -> tuple[dict[int, float], dict[int, float]]:
    """Each candidate's highest confidence from any one of `ids` (decayed, and plain), in
    memory that grows with the candidates only. Items with the same commits have the same
    rules (the functions of one deleted file), so each set of commits is read once."""
    score: dict[int, float] = defaultdict(float)
    plain: dict[int, float] = defaultdict(float)
    one_change = one_change or {}
    rules = set()
    for f in ids:
        cs = frozenset(commits_of.get(f, ()))
        # An item split in some of its commits has rules of its own (its sibling is left out).
        rules.add((cs, f if any(f in one_change.get(c, ()) for c in cs) else None))
    for cs, item in rules:
        if not cs:
            continue
        mass = sum(weights(c) for c in cs) or 1.0
        weight: dict[int, float] = defaultdict(float)
        count: Counter = Counter()
        for c in cs:
            w = weights(c)
            same = one_change.get(c, {}).get(item, ()) if item is not None else ()
            for g in by_commit[c]:
                if g not in exclude and g in alive and g not in same:
                    weight[g] += w
                    count[g] += 1
        for g, v in weight.items():
            score[g] = max(score[g], v / mass)
            plain[g] = max(plain[g], count[g] / len(cs))
    return score, plain


def strongest_symbol(con: apsw.Connection, target: Target, *, min_support: int = 2,
                     min_confidence: float = 0.25,
                     settings: CouplingSettings = _DEFAULTS) -> CoupledSymbol | None:
    """The symbol that changes with a symbol most, by the `related` ranking under `settings`
    (the repository's `[coupling]`, as `related` reads them): a pattern of at least
    `min_support` shared commits (or the settings' `min_support`, if higher) making
    `min_confidence` of the target's, else None."""
    if target.symbol_id is None:
        return None
    h = _history_sets(con, settings.max_changeset)
    weights = h.weights(h.half_life(settings.half_life_days), SIZE_EXPONENT)
    me, mine, _, _, _ = _side(h, target)
    support, weight = _tally(mine, h.symbols_by_commit, me, h.alive_symbols, weights,
                             h.same_change(me, mine))
    floor = max(1, min_support, settings.min_support)
    # Its own members and the class holding it say nothing worth a line: "Session usually
    # changes with Session.__init__", "iter_content with its nested generate" (a review).
    kin = _kin(con, target)
    eligible = {g: w for g, w in weight.items() if support[g] >= floor and g not in kin}
    if not eligible:
        return None
    top = max(eligible.values())   # rank_key rounds weights: its ties are within 1e-9
    tied = [g for g, w in eligible.items()
            if w >= top - 1e-9 and round(w, 9) == round(top, 9)]
    # The rest of rank_key's order, read for the few tied on weight only.
    last = {g: max(h.commit_time[c] for c in mine if g in h.symbols_by_commit[c]) for g in tied}
    newest = max(last.values())
    ident = min((g for g in tied if last[g] == newest), key=lambda g: _symbol_label(con, g))
    if support[ident] / len(mine) < min_confidence:
        return None
    path, qualname = _symbol_label(con, ident)
    return CoupledSymbol(path, qualname, support[ident], len(mine), ident)


def counted_in_histories(con: apsw.Connection, coupled: CoupledSymbol,
                         commits: dict[str, tuple[str, str]], *, min_support: int = 2,
                         min_confidence: float = 0.25) -> CoupledSymbol | None:
    """`coupled` counted over the histories a hover shows: `commits` (the target's history, the
    hover's "N changes": sha -> the path and name it had then) and the partner's, so that "(k
    of N commits)" agrees with "N changes". Co-change reads each name's lineage from its last
    rename on and only commits of at most MAX_CHANGESET files, which can count far fewer
    (requests' `Request.__init__`: 14 commits to history's 97, the rest spent as `OldRequest`,
    deleted since). A commit where both histories are one symbol (a function split in two:
    both halves' histories hold its older commits) is no change together. None when the shown
    counts make no pattern (`min_support`, `min_confidence`)."""
    theirs = symbol_history_commits(con, coupled.symbol_id)
    shared = sum(1 for sha, where in commits.items()
                 if sha in theirs and theirs[sha] != where)
    if not commits or shared < min_support or shared / len(commits) < min_confidence:
        return None
    return CoupledSymbol(coupled.path, coupled.qualname, shared, len(commits), coupled.symbol_id)


def _kin(con: apsw.Connection, target: Target) -> set[int]:
    """The ids of the symbols of the target's file that hold it or that it holds."""
    qualname = target.qualname or ""
    parts = qualname.split(".")
    holders = [".".join(parts[:n]) for n in range(1, len(parts))]
    marks = ",".join("?" * len(holders)) or "null"
    return {i for (i,) in con.execute(
        "select id from symbols where file_id = ? and ((qualname > ? and qualname < ?)"
        f" or qualname in ({marks}))", (target.file_id, qualname + ".", qualname + "/", *holders))}


def file_scores(con: apsw.Connection, target: Target, *, max_changeset: int = MAX_CHANGESET,
                min_support: int = MIN_SUPPORT, half_life_days: float | None = HALF_LIFE_DAYS,
                size_exponent: float = SIZE_EXPONENT
                ) -> tuple[dict[str, Scored], float, int, "_HistorySets"]:
    """Every file partner of `target` by path, unlabelled and unranked (for a fusion with other
    evidence), with the target's commits weighted alike (the denominator of a weighted
    confidence), their count, and the history read (for evidence_of)."""
    h = _history_sets(con, max_changeset)
    weights = h.weights(h.half_life(half_life_days), size_exponent)
    me, mine, _, _, _ = _side(h, target)
    own_file = h.file_canon.latest(target.file_id, h.alive_files)
    found = _score(mine, h.files_by_commit, {own_file}, h.alive_files, min_support, h, weights,
                   _homes(con, h, target, me, mine))
    paths = h.paths(con)
    return ({paths[s.ident]: s for s in found}, sum(weights(c) for c in mine), len(mine), h)


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def folder_scores(con: apsw.Connection, h: "_HistorySets", target: Target,
                 top_folders: int = PRIOR_FOLDERS) -> dict[str, float]:
    """path -> a file's back-off score for `target`'s file: how often its folder changed with
    the target's file (the share of the target's commits; its own folder 1) × its share of its
    folder's commits, over the `top_folders` folders that change with it most, its own first.
    Evidence for files the target shares few or no commits with."""
    paths = h.paths(con)
    own = h.file_canon.latest(target.file_id, h.alive_files)
    mine = h.commits_of_file.get(own, set())
    together: dict[str, int] = defaultdict(int)
    for commit_id in mine:
        for folder in {_folder(paths[f]) for f in h.files_by_commit[commit_id]}:
            together[folder] += 1
    n = len(mine) or 1
    own_folder = _folder(paths[own]) if own in paths else _folder(target.path)
    together[own_folder] = n
    # Its own folder first, always: with a thin history (one commit across a dozen folders)
    # every folder ties with it, and a cut by name could drop the one that matters most.
    chosen = [own_folder] + sorted((f for f in together if f != own_folder),
                                   key=lambda f: (-together[f], f))[:top_folders - 1]
    by_folder = h.folders(paths)
    out = {}
    for folder in chosen:
        members = [f for f in by_folder.get(folder, ()) if f != own]
        counts = {f: len(h.commits_of_file.get(f, ())) for f in members}
        total = sum(counts.values()) + len(h.commits_of_file.get(own, ())) * (
            folder == own_folder)
        if not total:
            continue
        share = together[folder] / n
        for f, count in counts.items():
            if count:
                out[paths[f]] = share * count / total
    return out


_TEST_AFFIXES = re.compile(r"^(tests?|Tests?)[_-]|[_.-](tests?|spec|Tests?|Spec)$"
                           r"|(?<=[a-z0-9])(Tests?|Spec|IT)$")


def name_key(path: str) -> str:
    """A file's name without extension and test affixes: `test_utils.py`, `utils_test.go`,
    `UtilsTest.java` and `utils.spec.ts` all give `utils` (lower-cased)."""
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0] if not path.endswith("/") else ""
    return _TEST_AFFIXES.sub("", stem).lower() if stem else ""


def name_twins(con: apsw.Connection, target: Target, max_changeset: int = MAX_CHANGESET
               ) -> list[str]:
    """Files alive at HEAD whose name is the target's once test affixes are dropped (a module
    and its tests), other than the target: partners where history is thin."""
    h = _history_sets(con, max_changeset)
    paths = h.paths(con)
    by_key = h.name_index(paths)
    own = paths.get(target.file_id)
    key = name_key(own) if own else ""
    if len(key) < 3:
        return []
    return sorted(p for p in by_key.get(key, ()) if p != own)


_IDENTIFIER = re.compile(r"(?:[^\W\d]|\$)[\w$]*")
_TEST_SCOPES = frozenset({"test", "tests"})   # Rust's `mod tests`, a `tests` namespace


def symbol_name_key(name: str, in_test: bool = False) -> str | None:
    """A symbol's own name (`symbols.name`: no class, no parameters), lower-cased, and in a test
    without its test affixes: `test_parse`, `TestParse`, `testParse`, `parse_test` and
    `ParseTest` there all give `parse`, as `Parser.parse` does anywhere (`TestRule` outside
    tests stays `testrule`). None for a special method (`__init__`: every class has one), a
    name that is no identifier (an anonymous class, an operator) or one under 3 characters."""
    if not _IDENTIFIER.fullmatch(name) or (name.startswith("__") and name.endswith("__")):
        return None
    if in_test:
        name = _without_test_affixes(name)
    key = name.lower()
    return key if len(key) >= 3 else None


def _without_test_affixes(name: str) -> str:
    for prefix in ("test_", "Test_"):
        if name.startswith(prefix) and len(name) > len(prefix) + 2:
            return name[len(prefix):]
    if name[:4] in ("test", "Test") and len(name) > 6 and name[4].isupper():
        return name[4:]
    for suffix in ("_test", "_tests", "Test", "Tests"):
        if name.endswith(suffix) and len(name) > len(suffix) + 2:
            return name[:-len(suffix)]
    return name


def _is_test(path: str, qualname: str, name: str) -> bool:
    """A test file's symbol, or one inside a `tests` module (Rust's inline `mod tests`)."""
    return is_test_path(path) or any(part in _TEST_SCOPES
                                     for part in _place(qualname, name).split("."))


def _place(qualname: str, name: str) -> str:
    """Where a symbol is declared: its qualified name less its own name and parameters (the
    overloads of a method share it; `Outer.Entry.Entry(Map.Entry<K, V>)` is in `Outer.Entry`)."""
    base = qualname
    if base.endswith(")"):   # a parameter list: cut at its own opening bracket
        depth = 0
        for at in range(len(base) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(base[at], 0)
            if depth == 0:
                base = base[:at]
                break
    return base[:-len(name) - 1] if base.endswith("." + name) else ""


def symbol_twins(con: apsw.Connection, h: "_HistorySets", me: int) -> set[int]:
    """The symbols alive at HEAD of symbol `me`'s name but for test affixes, other than itself,
    its enclosing definitions and its members (a class and its constructor, a test class and
    its test); its overloads are twins (leaving them out cost junit4 two points of Recall@10:
    overloads change together). None when more than SYMBOL_TWIN_MAX places declare the name
    (`run`, `get`; the overloads of one method are one place) or more than SYMBOL_TWIN_MAX × 2
    symbols hold it (junit4's 52 `assertEquals`)."""
    keys = h.symbol_keys(con)
    mine = keys.get(me)
    if mine is None or mine[0] is None:
        return set()
    key, file_id, qualname, _ = mine
    found, places = [], set()
    for g in h.symbols_named(con).get(key, ()):
        _, other_file, other, place = keys[g]
        if g == me or (other_file == file_id and (other.startswith(qualname + ".")
                                                   or qualname.startswith(other + "."))):
            continue
        found.append(g)
        places.add((other_file, place))
    if len(places) > SYMBOL_TWIN_MAX or len(found) > 2 * SYMBOL_TWIN_MAX:
        return set()
    return set(found)


def evidence_of(con: apsw.Connection, h: "_HistorySets | None", commit_ids: list[int]
                ) -> list[CommitRef]:
    """The newest of these commits, newest first. The candidates are cut to the newest few by
    time first (ties kept): a partner of a busy file shares thousands."""
    if h is not None and len(commit_ids) > EVIDENCE:
        times = h.commit_time
        bound = sorted((times[c] for c in commit_ids), reverse=True)[EVIDENCE - 1]
        commit_ids = [c for c in commit_ids if times[c] >= bound]
    marks = ",".join("?" * len(commit_ids))
    rows = con.execute(f"select {COMMIT_COLUMNS} from commits c where c.id in ({marks})"
                       f" order by {NEWEST_FIRST} limit {EVIDENCE}", commit_ids).fetchall()
    return [commit_ref(r) for r in rows]


def _side(h: "_HistorySets", target: Target):
    own_file = h.file_canon.latest(target.file_id, h.alive_files)
    if target.symbol_id is not None:
        me = h.symbol_canon.latest(target.symbol_id, h.alive_symbols)
        return me, h.commits_of_symbol.get(me, set()), h.symbols_by_commit, \
            h.commits_of_symbol, h.alive_symbols
    return own_file, h.commits_of_file.get(own_file, set()), h.files_by_commit, \
        h.commits_of_file, h.alive_files


@dataclass
class _HistorySets:
    file_canon: Lineage
    symbol_canon: Lineage
    files_by_commit: dict[int, set[int]]
    symbols_by_commit: dict[int, set[int]]
    alive_files: set[int]
    alive_symbols: set[int]
    commit_time: dict[int, int]        # eligible commit -> committer time, newest first
    commit_size: dict[int, int]        # eligible commit -> files it changed
    commits_of_file: dict[int, set[int]] = None      # the inverse of files_by_commit
    commits_of_symbol: dict[int, set[int]] = None
    now: int = 0                       # the repository's own clock (clock.repository_time)
    # commit -> identity -> the others one change of it counts for (_group_symbols)
    one_change: dict[int, dict[int, set[int]]] = field(default_factory=dict)
    _paths: dict[int, str] | None = None
    _names: dict[str, list[str]] | None = None
    _symbols_in: dict[int, list[int]] | None = None
    _folders: dict[str, list[int]] | None = None
    _symbol_keys: dict[int, tuple[str | None, int, str, str]] | None = None
    _symbols_named: dict[str, list[int]] | None = None

    def __post_init__(self):
        self.commits_of_file = _invert(self.files_by_commit)
        self.commits_of_symbol = _invert(self.symbols_by_commit)
        self._weights: dict[tuple, dict[int, float]] = {}
        self._masses: dict = {}
        self._symbol_file: dict[int, int] = {}

    def half_life(self, half_life_days: float | None) -> HalfLife:
        """The half-life that `half_life_days` asks for: itself in days (0: no decay), or for
        None HALF_LIFE_SHARE of the commits read, at least HALF_LIFE_FLOOR_COMMITS."""
        if half_life_days is not None:
            return HalfLife(days=half_life_days)
        return HalfLife(commits=max(HALF_LIFE_FLOOR_COMMITS,
                                    round(HALF_LIFE_SHARE * len(self.commit_time))))

    def weights(self, half_life: HalfLife, size_exponent: float = 0.0):
        """commit id -> its weight under this half-life (1.0 for all without one)."""
        days, commits = half_life
        if not _decays(days) and not commits and not size_exponent:
            return _unit
        key = (half_life, size_exponent)
        table = self._weights.get(key)
        if table is None:
            table = self._weights[key] = self._decayed(days, commits)
            if size_exponent:
                sizes = self.commit_size
                for cid in table:
                    table[cid] /= max(1, sizes[cid] - 1) ** size_exponent
        return table.__getitem__

    def _decayed(self, days: float | None, commits: int | None) -> dict[int, float]:
        times = self.commit_time
        if commits:
            # A commit's age: the commits read after it, in the history's order (NEWEST_FIRST).
            return {cid: 0.5 ** (age / commits) for age, cid in enumerate(times)}
        if _decays(days):
            scale = days * _DAY
            return {cid: 0.5 ** (max(0, self.now - t) / scale) for cid, t in times.items()}
        return dict.fromkeys(times, 1.0)

    def same_change(self, me: int, mine: set[int]) -> dict[int, set[int]]:
        """commit -> the identities that one change of `me` there also counts for: no partners
        of it in that commit (the other half of a split function, in their shared past)."""
        if not self.one_change:
            return {}
        return {c: found for c in mine
                if (found := self.one_change.get(c, {}).get(me))}

    def masses(self, weights) -> tuple[dict[int, float], dict[int, float]]:
        """Each file's and each symbol's commits, weighted (kept per weighting)."""
        table = self._masses.get(weights)
        if table is None:
            table = self._masses[weights] = (
                {f: sum(weights(c) for c in cs) for f, cs in self.commits_of_file.items()},
                {s: sum(weights(c) for c in cs) for s, cs in self.commits_of_symbol.items()})
        return table

    def symbols_in(self, con) -> dict[int, list[int]]:
        """file id -> its symbols alive at HEAD."""
        if self._symbols_in is None:
            self._symbols_in = defaultdict(list)
            for sid, fid in con.execute("select id, file_id from symbols where alive = 1"):
                self._symbols_in[fid].append(sid)
            self._symbol_file = {sid: fid for fid, sids in self._symbols_in.items()
                                 for sid in sids}
        return self._symbols_in

    def symbol_keys(self, con) -> dict[int, tuple[str | None, int, str, str]]:
        """symbol id -> (symbol_name_key, file id, qualified name, place) of each symbol alive
        at HEAD; test affixes are dropped in tests (_is_test)."""
        if self._symbol_keys is None:
            paths = self.paths(con)
            self._symbol_keys = {
                sid: (symbol_name_key(name, _is_test(paths.get(fid, ""), qual, name)), fid, qual,
                      _place(qual, name))
                for sid, fid, qual, name in con.execute(
                    "select id, file_id, qualname, name from symbols where alive = 1")}
        return self._symbol_keys

    def symbols_named(self, con) -> dict[str, list[int]]:
        """symbol_name_key -> the symbols alive at HEAD that have it."""
        if self._symbols_named is None:
            self._symbols_named = defaultdict(list)
            for sid, (key, _, _, _) in self.symbol_keys(con).items():
                if key:
                    self._symbols_named[key].append(sid)
        return self._symbols_named

    def folders(self, paths: dict[int, str]) -> dict[str, list[int]]:
        """folder -> its files alive at HEAD."""
        if self._folders is None:
            self._folders = defaultdict(list)
            for fid in self.alive_files:
                self._folders[_folder(paths[fid])].append(fid)
        return self._folders

    def name_index(self, paths: dict[int, str]) -> dict[str, list[str]]:
        if self._names is None:
            self._names = defaultdict(list)
            for fid in self.alive_files:
                self._names[name_key(paths[fid])].append(paths[fid])
        return self._names

    def paths(self, con) -> dict[int, str]:
        if self._paths is None:
            self._paths = dict(con.execute("select id, path from files"))
        return self._paths


def _unit(commit_id: int) -> float:
    return 1.0


def _invert(by_commit: dict[int, set[int]]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = defaultdict(set)
    for commit_id, ids in by_commit.items():
        for ident in ids:
            out[ident].add(commit_id)
    return out


# What every co-change query reads from the whole history, kept per connection until the index
# changes: a long-lived reader (the language server, a blast with hidden coupling per hover)
# would otherwise read every file change of the history on each query. Weakly: a connection
# let go of (a rebuilt store reopened) takes its history with it, and a new connection given
# the old one's id() is not taken for it.
_CACHE: "weakref.WeakKeyDictionary[apsw.Connection, tuple[tuple, _HistorySets]]" = \
    weakref.WeakKeyDictionary()


def _history_sets(con: apsw.Connection, max_changeset: int) -> _HistorySets:
    # Cheap to ask on every hover: an index run rewrites these, and data_version moves when
    # another connection has committed (a count of the commits was a scan: 2 ms on 8,000).
    stamp = (con.execute("select group_concat(value, ' ') from (select value from meta where key"
                         " in ('indexed_at', 'head', 'tips') order by key)").fetchone(),
             con.execute("pragma data_version").fetchone(), max_changeset, con.filename)
    cached = _CACHE.get(con)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    commit_time, commit_size = {}, {}
    for cid, when, size in con.execute(
            "select id, committer_time, files_changed from commits c where reachable = 1"
            f" and is_merge = 0 and files_changed <= ? order by {NEWEST_FIRST}", (max_changeset,)):
        commit_time[cid] = when   # newest first: the clock of commits (_HistorySets.weights)
        commit_size[cid] = size
    position = {cid: n for n, (cid,) in enumerate(con.execute(
        f"select c.id from commits c where c.reachable = 1 order by {OLDEST_FIRST}"))}
    file_canon = Lineage(con.execute(
        "select fc.commit_id, fc.old_file_id, fc.file_id from file_changes fc join commits c on"
        " c.id = fc.commit_id where fc.status = 'R' and c.reachable = 1"
        f" order by {OLDEST_FIRST}"), position)
    # A link where the old symbol kept code of its own in that commit (it lived on as a
    # wrapper of its continuation: history.py) is a split: its past is both lives'. Only a
    # wrapper that lives on, at HEAD or renamed again later: an old identity a signature change
    # ended also has a row there (710 such links on commons-lang, 652 of them dead).
    symbol_canon = Lineage(con.execute(
        "select sc.commit_id, sc.from_symbol_id, sc.symbol_id, exists (select 1 from"
        " symbol_changes o join symbols s on s.id = o.symbol_id where o.symbol_id ="
        " sc.from_symbol_id and o.commit_id = sc.commit_id and o.change"
        " not in ('renamed', 'moved', 'deleted', 'rescoped') and (s.alive = 1 or exists"
        " (select 1 from symbol_changes l where l.from_symbol_id = sc.from_symbol_id and"
        " l.commit_id != sc.commit_id)))"
        " from symbol_changes sc join commits c on c.id = sc.commit_id"
        f" where sc.from_symbol_id is not null and c.reachable = 1 order by {OLDEST_FIRST}"),
        position)
    changelogs = {fid for fid, path in con.execute("select id, path from files")
                  if is_changelog(path)}
    # Every path, whatever its indexing level (a lockfile's change is recorded at file level).
    file_rows = [(c, f) for c, f in con.execute("select commit_id, file_id from file_changes")
                 if f not in changelogs]
    # A commit that only reformatted a file's functions, renamed their class or moved their file
    # says nothing about which of them change together.
    symbol_rows = con.execute(
        "select commit_id, symbol_id from symbol_changes sc"
        f" where {SUBSTANTIVE_SQL} and not (sc.change = 'moved' and sc.added = 0"
        " and sc.deleted = 0)").fetchall()
    alive_files = {fid for (fid,) in con.execute("select file_id from head_files")} - changelogs
    symbols_by_commit, one_change = _group_symbols(symbol_rows, commit_time, symbol_canon)
    sets = _HistorySets(
        file_canon, symbol_canon, _group(file_rows, commit_time, file_canon),
        symbols_by_commit, alive_files,
        {sid for (sid,) in con.execute("select id from symbols where alive = 1")}, commit_time,
        commit_size, now=repository_time(con) or 0, one_change=one_change)
    if len(_CACHE) > 16:   # connections come and go; keep the memory bounded
        _CACHE.clear()
    _CACHE[con] = (stamp, sets)
    return sets


class Lineage:
    """Where each change of an identity belongs: the identity its code carries at HEAD.

    Identities are names (a path, a file's qualified name), and names are reused: `a.py` renamed
    to `b.py` and a new `a.py` created later are two lineages under one old name. A change of `a`
    therefore follows only the renames of `a` made after it, in commit order: the old `a.py`'s
    changes go to `b.py`, the new one's stay with `a.py`; a cycle (a -> b -> a) ends where it
    ends at HEAD."""

    def __init__(self, links, position: dict[int, int]):
        # links: (commit id, old identity, new identity[, whether the old one lived on]),
        # oldest first
        self.renames: dict[int, tuple[list[int], list[int]]] = {}
        # identity -> the positions of links where it lived on beside its continuation: a
        # method whose code moved into a new one in a commit that kept it (a wrapper now),
        # whose history goes on in both (history.py).
        self.splits: dict[int, set[int]] = defaultdict(set)
        for commit_id, old, new, *lived_on in links:
            if old != new and commit_id in position:
                at, to = self.renames.setdefault(old, ([], []))
                at.append(position[commit_id])
                to.append(new)
                if lived_on and lived_on[0]:
                    self.splits[old].add(position[commit_id])
        self.position = position
        # A renamed-away identity -> the position of its newest change seen by `at`.
        self.last_seen: dict[int, int] = {}
        # The identities whose way forward passes a split (a split's own and those renamed into
        # it, at any time): only their changes are walked for more than one life.
        self.before_split: set[int] = set()
        if self.splits:
            into: dict[int, list[int]] = defaultdict(list)
            for old, (_, tos) in self.renames.items():
                for new in tos:
                    into[new].append(old)
            todo = list(self.splits)
            while todo:
                ident = todo.pop()
                if ident not in self.before_split:
                    self.before_split.add(ident)
                    todo.extend(into.get(ident, ()))

    def at(self, ident: int, commit_id: int) -> int:
        """The HEAD identity of `ident` as changed by `commit_id`."""
        if ident not in self.renames:
            return ident
        pos = self.position.get(commit_id, -1)
        if pos > self.last_seen.get(ident, -1):
            self.last_seen[ident] = pos
        return self._follow(ident, pos)

    def peek(self, ident: int, commit_id: int) -> int:
        """What `at` answers, without recording the change as seen: for a query's own look-ups
        on the cached history, which must not change what `latest` answers for the next."""
        if ident not in self.renames:
            return ident
        return self._follow(ident, self.position.get(commit_id, -1))

    def latest(self, ident: int, alive: set[int]) -> int:
        """The HEAD identity of a query's `ident`: itself while it lives (a reused name is its
        new lineage), else where its last life went: itself too when that life was a reuse of
        the name after its last rename, later deleted."""
        if ident in alive or ident not in self.renames:
            return ident
        at, to = self.renames[ident]
        if self.last_seen.get(ident, -1) > at[-1]:
            return ident
        return self._follow(to[-1], at[-1])

    def at_all(self, ident: int, commit_id: int) -> list[int]:
        """The HEAD identities of `ident` as changed by `commit_id`: `at`'s, and where a later
        split left it living on, that life's too (the wrapper's past is its own as well)."""
        first = self.at(ident, commit_id)
        if ident not in self.before_split:
            return [first]
        return self.peek_all(ident, commit_id)

    def peek_all(self, ident: int, commit_id: int) -> list[int]:
        """`at_all`, recording nothing (as `peek`)."""
        out: list[int] = []
        self._walk(ident, self.position.get(commit_id, -1), out, [SPLITS_FOLLOWED])
        return out

    def _walk(self, ident: int, pos: int, out: list[int], budget: list[int]) -> None:
        # `budget` is shared by every branch: the splits followed in all, not per branch (which
        # doubled the walk with each split of a pathological history).
        while ident in self.renames:
            at, to = self.renames[ident]
            i = bisect_right(at, pos)
            if i == len(at):
                break
            if budget[0] > 0 and at[i] in self.splits.get(ident, ()):
                budget[0] -= 1
                self._walk(ident, at[i], out, budget)   # it lived on past the split
            pos, ident = at[i], to[i]
        if ident not in out:
            out.append(ident)

    def _follow(self, ident: int, pos: int) -> int:
        # Positions only grow along the way, so this ends, cycles included.
        while ident in self.renames:
            at, to = self.renames[ident]
            i = bisect_right(at, pos)   # the first rename after `pos`
            if i == len(at):
                break
            pos, ident = at[i], to[i]
        return ident


# How many splits a change is followed through in all (each one more life it counts for);
# bounds the walk on a pathological history.
SPLITS_FOLLOWED = 16


def _group(rows, eligible, lineage: Lineage) -> dict[int, set[int]]:
    by_commit: dict[int, set[int]] = defaultdict(set)
    for commit_id, ident in rows:
        if commit_id in eligible:
            by_commit[commit_id].add(lineage.at(ident, commit_id))
    return by_commit


def _group_symbols(rows, eligible, lineage: Lineage
                   ) -> tuple[dict[int, set[int]], dict[int, dict[int, set[int]]]]:
    """_group, a change counted for every life it belongs to (Lineage.at_all), and for each
    commit, the identities one change of it counts for: the halves of a split function, whose
    shared past is one function's, not two changing together."""
    one_change: dict[int, dict[int, set[int]]] = {}
    before = lineage.before_split
    if not before:
        return _group(rows, eligible, lineage), one_change
    by_commit: dict[int, set[int]] = defaultdict(set)
    for commit_id, ident in rows:
        if commit_id in eligible:
            if ident not in before:   # one life: as _group
                by_commit[commit_id].add(lineage.at(ident, commit_id))
                continue
            lives = lineage.at_all(ident, commit_id)
            by_commit[commit_id].update(lives)
            if len(lives) > 1:
                same = one_change.setdefault(commit_id, {})
                for life in lives:
                    same.setdefault(life, set()).update(x for x in lives if x != life)
    return by_commit, one_change


def _score(mine: set[int], by_commit: dict[int, set[int]], exclude: set[int], alive: set[int],
           min_support: int, h: _HistorySets, weights,
           homes: dict[int, set[int]] | None = None) -> list[Scored]:
    """`homes`: commit -> identities left out in that commit only (_homes)."""
    # One pass over the target's commits: a hover asks this of every symbol it shows.
    shared: dict[int, list[int]] = defaultdict(list)
    weight: dict[int, float] = defaultdict(float)
    last: dict[int, int] = {}
    times = h.commit_time
    homes = homes or {}
    for commit_id in mine:
        w, t = weights(commit_id), times[commit_id]
        home = homes.get(commit_id, ())
        for ident in by_commit[commit_id]:
            if ident in exclude or ident not in alive or ident in home:
                continue
            shared[ident].append(commit_id)
            weight[ident] += w
            if last.get(ident, t) <= t:
                last[ident] = t
    floor = max(1, min_support)
    return [Scored(ident, len(commits), weight[ident], last[ident], commits)
            for ident, commits in shared.items() if len(commits) >= floor]


def _homes(con, h: _HistorySets, target: Target, me: int, mine: set[int]
           ) -> dict[int, set[int]]:
    """For a symbol target: commit -> the files (as named at HEAD) its lineage lived in then,
    and the one a move in that commit left. A function moved out of `command.go` changed it in
    every commit of its life there: the file changed because the function was in it, not with
    it (urfave/cli's `Command.run`: 136 of its 158 commits changed `command.go`, 14 of them
    after the move)."""
    if target.symbol_id is None or not mine:
        return {}
    out: dict[int, set[int]] = defaultdict(set)
    for commit_id in mine:
        # The move itself too: the file it left changed because it left.
        for symbol_id, file_id, from_file in con.execute(
                "select sc.symbol_id, s.file_id, o.file_id from symbol_changes sc join symbols s"
                " on s.id = sc.symbol_id left join symbols o on o.id = sc.from_symbol_id"
                " where sc.commit_id = ?", (commit_id,)):
            if me in h.symbol_canon.peek_all(symbol_id, commit_id):
                out[commit_id].add(h.file_canon.peek(file_id, commit_id))
                if from_file is not None:
                    out[commit_id].add(h.file_canon.peek(from_file, commit_id))
    return out


def _tally(mine: set[int], by_commit: dict[int, set[int]], me: int, alive: set[int], weights,
           homes: dict[int, set[int]] | None = None) -> tuple[Counter, dict[int, float]]:
    """The support and the weight of every candidate, and nothing else: three times faster
    than _score, for the hover's line. `homes` as _score's."""
    support: Counter = Counter()
    weight: dict[int, float] = defaultdict(float)
    homes = homes or {}
    for commit_id in mine:
        w = weights(commit_id)
        idents = by_commit[commit_id] & alive
        if commit_id in homes:
            idents = idents - homes[commit_id]
        support.update(idents)
        for ident in idents:
            weight[ident] += w
    support.pop(me, None)
    weight.pop(me, None)
    return support, weight


def rank_key(s: Scored, decay: str = DECAY) -> tuple:
    """Heavier first, then the newest shared commit (ties and weak evidence by recency)."""
    if decay == "ties":
        return (-s.support, -round(s.weight, 9), -s.last_shared)
    return (-round(s.weight, 9), -s.last_shared)


def _partners(con, h: _HistorySets, mine: set[int], by_commit: dict[int, set[int]],
              commits_of: dict[int, set[int]], exclude: set[int], alive: set[int],
              min_support: int, top_k: int, label, weights, decay: str = DECAY,
              homes: dict[int, set[int]] | None = None) -> list[Partner]:
    def key(s: Scored) -> tuple:
        return rank_key(s, decay)
    found = sorted(_score(mine, by_commit, exclude, alive, min_support, h, weights, homes),
                   key=key)
    if not found:
        return []
    # Names break the remaining ties; only the candidates tied with the last one kept are read.
    cut = [s for s in found if key(s) <= key(found[min(top_k, len(found)) - 1])]
    labels = {s.ident: label(con, s.ident) for s in cut}
    cut.sort(key=lambda s: (key(s), labels[s.ident]))
    total = sum(weights(c) for c in mine) or 1.0
    out = []
    for s in cut[:top_k]:
        path, qualname = labels[s.ident]
        out.append(Partner(path, qualname, s.support, s.support / len(mine),
                           s.support / len(commits_of[s.ident]), evidence_of(con, h, s.commits),
                           round(s.weight, 4), round(s.weight / total, 4), s.last_shared))
    return out


def _symbol_partners(con, h: _HistorySets, me: int, mine: set[int], min_support: int,
                     top_k: int, weights, decay: str, file_prior: float,
                     structure: dict[int, tuple[float, str]], structure_weight: float,
                     twin_weight: float = 0.0) -> list[Partner]:
    """The symbols that change with symbol `me`: co-change (c, as for files), plus the back-off
    to the files (`prior`: symbols of the files that change with the target's file, the target's
    own file first), the structure `s` (calls in either direction) and the name `t` (1 for a
    symbol of the target's name, symbol_twins):

        score = c + file_prior × prior + (structure_weight × s + twin_weight × t) / (1 + n)

    n the target's commits: the code's evidence counts less as history grows. Asked for patterns
    (`min_support` above 1), they only re-rank the symbols that have them."""
    n = len(mine)
    total = sum(weights(c) for c in mine)
    found = {s.ident: s for s in _score(mine, h.symbols_by_commit, {me}, h.alive_symbols,
                                        min_support, h, weights, h.same_change(me, mine))}
    prior = _file_prior(con, h, me, weights) if file_prior else {}
    relation: dict[int, str] = {}
    if prior:
        own = h._symbol_file.get(me)
        relation = {g: "same file" for g in prior if h._symbol_file.get(g) == own}
    struct = {g: v for g, v in structure.items() if g != me and g in h.alive_symbols}
    twins = symbol_twins(con, h, me) if twin_weight else set()
    for g in twins:
        relation[g] = "same name"
    for g, (_, rel) in struct.items():
        relation[g] = rel
    rows = {}
    for g in set(found) | (set(prior) | set(struct) | twins if min_support <= 1 else set()):
        f = found.get(g)
        if f is None:
            c = 0.0
        else:
            c = f.support / n if decay == "ties" else (f.weight / total if total else 0.0)
        p, st = prior.get(g, 0.0), struct.get(g, (0.0, None))[0]
        t = 1.0 if g in twins else 0.0
        rows[g] = (c + file_prior * p + (structure_weight * st + twin_weight * t) / (1 + n),
                   c, p, st, f, t)

    def key(g) -> tuple:
        score, _, _, st, f, _ = rows[g]
        return (-round(score, 9), -round(f.weight, 9) if f else 0.0,
                -(f.last_shared if f else 0), -st)
    ranked = sorted(rows, key=key)
    if not ranked:
        return []
    cut = [g for g in ranked if key(g) <= key(ranked[min(top_k, len(ranked)) - 1])]
    labels = {g: _symbol_label(con, g) for g in cut}
    cut.sort(key=lambda g: (key(g), labels[g]))
    out = []
    for g in cut[:top_k]:
        score, c, p, st, f, t = rows[g]
        path, qualname = labels[g]
        support = f.support if f else 0
        out.append(Partner(
            path, qualname, support, support / n if n else 0.0,
            support / len(h.commits_of_symbol[g]) if support else 0.0,
            evidence_of(con, h, f.commits) if f else [], round(f.weight, 4) if f else 0.0,
            round(c, 4), f.last_shared if f else 0, round(score, 4), round(p, 4), round(st, 4),
            relation.get(g), _symbol_line(con, g), t))
    return out


def _file_prior(con, h: _HistorySets, me: int, weights) -> dict[int, float]:
    """symbol id -> its file's weighted co-change with the target symbol's file (the share of
    that file's commits; its own file 1) × its share of its file's commits, over the
    PRIOR_FILES files that change with the target's file most and the target's own file."""
    symbols_in = h.symbols_in(con)
    own = h._symbol_file.get(me)
    if own is None:
        return {}
    own = h.file_canon.latest(own, h.alive_files)
    file_mass, symbol_mass = h.masses(weights)
    together: dict[int, float] = defaultdict(float)
    for commit_id in h.commits_of_file.get(own, ()):
        for f in h.files_by_commit[commit_id]:
            together[f] += weights(commit_id)
    own_mass = file_mass.get(own, 0.0) or 1.0
    # Ties at the cut by name: the sums' order (and the ids') follows the order in which the
    # index run's workers delivered commits, so two runs of one history would pick other files.
    paths = h.paths(con)
    chosen = sorted((f for f in together if f != own and f in symbols_in),
                    key=lambda f: (-round(together[f], 9), paths.get(f, "")))[:PRIOR_FILES]
    out = {}
    for f in [own, *chosen]:
        share = 1.0 if f == own else together[f] / own_mass
        mass = file_mass.get(f, 0.0)
        if not mass:
            continue
        for g in symbols_in.get(f, ()):
            part = symbol_mass.get(g, 0.0)
            if g != me and part:
                out[g] = share * min(1.0, part / mass)
    return out


def _file_label(con, file_id: int) -> tuple[str, None]:
    return con.execute("select path from files where id = ?", (file_id,)).get, None


def _symbol_line(con, symbol_id: int) -> int | None:
    """Where a live symbol starts at HEAD (its first span: overloads have several)."""
    return con.execute("select min(start_line) from symbol_spans where symbol_id = ?",
                       (symbol_id,)).get


def _symbol_label(con, symbol_id: int) -> tuple[str, str]:
    return con.execute("select f.path, s.qualname from symbols s join files f on f.id = s.file_id"
                       " where s.id = ?", (symbol_id,)).fetchone()
