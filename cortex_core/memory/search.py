"""Search over memory items: BM25 and vector neighbours fused by rank, then bounded priors.

1. Candidates: the best `CANDIDATES` items by lexical score and by cosine distance in the vec0
   table, each list filtered the same way (kind, time, path, reachable commits). The lexical score
   is the FTS5 BM25 of the message (items_fts: title, body, identifier parts, a few words of the
   paths) plus `Weights.code` times the BM25 of the code the item is about (items_code: the
   qualified names of its symbols, the words of its commit's changed source lines, code_words.py,
   and the words of its paths): a changelog entry names the function, option or error message
   that changed more often than the commit message does. Two tables, not two columns of one:
   FTS5's BM25 normalises by the whole row's length, and a long code field or file list would
   sink the message's matches.
2. Fusion by reciprocal rank: w_lex/(K_lex + lexical rank) + w_vec/(K_vec + vector rank). Static
   embeddings are weaker than BM25 on commit text (an equal-weight fusion scores below BM25 alone),
   so the lexical list is sharp (a small K_lex keeps BM25's top ranks on top) and the vector weight
   is gated by how flat the BM25 list is: when the best BM25 score clearly stands out from the
   tenth, words have found it and vectors only break ties; when BM25 is flat (or finds nothing),
   vectors get their full weight. bench/bench_search.py chose the numbers.
3. Priors multiply the fused score by 1 + a bounded sum: recency (exponential decay, ages counted
   back from the repository's own clock by default: clock.py), signal (a fix
   or revert above a feature above a refactor above chores and docs), context (the focus symbol or
   file, files changed in the working tree, words of the branch name) and area (the cluster of the
   best hits). The sum is at most `MAX_BOOST`, so an item whose fused score is more than
   (1 + MAX_BOOST) times another's always stays ahead of it: priors reorder near-equals only.
4. Authors the query names (`@login`, as changelogs credit them: memory/authors.py): a commit
   by one of them has its score multiplied by 1 + `AUTHOR_WEIGHT`, so it rises over the other
   authors' commits near the top, not over much better matches. Not a prior: the query asked.
5. Diversity: at most `PER_COMMIT` segments of one commit (one: a commit is one answer, whose
   best segment stands for it), and `PER_SOURCE` sections of one document.

Every hit carries its explanation: both ranks, the fused score and each prior.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from cortex_core.clock import DEFAULT, Clock, clock as read_clock
from cortex_core.errors import CortexError, Hint
from cortex_core.text.redact import redact
from cortex_core.memory.authors import authored_by, known_logins, named_logins, without_logins
from cortex_core.memory.tokens import fts_query, only_common_words, query_terms

CANDIDATES = 200
OVERFETCH = 2 * CANDIDATES  # lexical matches read before the filters (_bm25)
# The vector list is shorter: sqlite-vec's cost grows with k (on scrapy's 13.6k vectors, k = 400
# took 10.7 ms, k = 100 4.8 ms), and past rank 100 a vector hit adds under w_vec / 160 to a
# fused score (bench/bench_search.py measured no loss: docs/numbers.md).
VECTOR_CANDIDATES = 100
RRF_K_LEXICAL = 10
RRF_K_VECTOR = 60
FLATNESS_DEPTH = 10      # BM25 flatness: best score / score at this rank
PER_SOURCE = 2
# One segment of a commit in a list: its second one took the place of another commit. Chosen on
# the tuning repositories (issue 18; hybrid Recall@10 / MRR@10 in points against two: requests
# 0 / 0, scrapy +0.5 / +0.2, fastapi +0.4 / +0.3; docs/numbers.md, "Memory search").
PER_COMMIT = 1
KINDS = ("commit", "doc", "note")


@dataclass(frozen=True)
class PriorWeights:
    """The largest share each prior may add to a fused score."""
    recency: float = 0.02
    signal: float = 0.02
    context: float = 0.15
    area: float = 0.02

    @property
    def total(self) -> float:
        return self.recency + self.signal + self.context + self.area


MAX_BOOST = PriorWeights().total
# A commit by an author the query names: score × (1 + this). Chosen on fastapi's changelog, whose
# entries credit their authors (0.5 to 8 measured: a plateau from 2 on; docs/numbers.md).
AUTHOR_WEIGHT = 2.0

SIGNAL = {"revert": 1.0, "fix": 1.0, "security": 1.0, "note": 0.9, "perf": 0.7, "feat": 0.6,
          "doc": 0.4, "refactor": 0.4, "other": 0.3, "test": 0.2, "build": 0.2, "ci": 0.2,
          "chore": 0.0, "docs": 0.0, "style": 0.0, "merge": 0.1}

# bm25 column weights: title, body, terms (identifier parts), paths.
BM25_WEIGHTS = (1.0, 1.0, 0.3, 0.1)
# bm25 column weights of the code index (items_code): symbols, words of the changed lines, words
# of the paths (CODE_PATH_WEIGHT: the tuning repositories, docs/numbers.md).
CODE_PATH_WEIGHT = 0.1
CODE_WEIGHTS = (0.5, 1.0, CODE_PATH_WEIGHT)


@dataclass(frozen=True)
class Weights:
    lexical: float = 1.0
    vector: float = 1.0          # the vector weight when BM25 is flat
    flat_ratio: float = 2.0      # best/10th BM25 score at which the vector weight reaches 0
    code: float = 0.3            # the code index's BM25 in an item's lexical score
    code_columns: tuple[float, float, float] = CODE_WEIGHTS
    text_columns: tuple[float, float, float, float] = BM25_WEIGHTS


@dataclass(frozen=True)
class Focus:
    """What the user is looking at, resolved to ids: boosts items about it."""
    file_ids: frozenset[int] = frozenset()
    symbol_ids: frozenset[int] = frozenset()
    changed_file_ids: frozenset[int] = frozenset()
    branch_terms: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.file_ids or self.symbol_ids or self.changed_file_ids or self.branch_terms)


@dataclass(frozen=True)
class SearchOptions:
    top_k: int = 10
    kinds: tuple[str, ...] = ()          # empty: every kind
    since: int | None = None             # epoch seconds
    path: str | None = None              # a file or folder the items must touch
    mode: str = "hybrid"                 # "hybrid", "lexical" or "vector"
    priors: bool = True
    context: bool = True
    half_life_days: float = 180.0
    focus: Focus = field(default_factory=Focus)
    weights: Weights = field(default_factory=Weights)
    prior_weights: PriorWeights = field(default_factory=PriorWeights)
    per_source: int = PER_SOURCE         # sections of one document
    per_commit: int = PER_COMMIT         # segments of one commit
    clock: str = DEFAULT                 # what the recency prior counts back from


@dataclass(frozen=True)
class Explanation:
    lexical_rank: int | None
    vector_rank: int | None
    vector_similarity: float | None
    vector_weight: float
    fused: float         # the reciprocal-rank fusion, × (1 + AUTHOR_WEIGHT) for a named author
    recency: float       # each prior's value in [0, 1], before its weight
    signal: float
    context: float
    context_reasons: tuple[str, ...]
    area: float
    boost: float         # the multiplier's excess over 1, at most MAX_BOOST
    score: float
    text_bm25: float | None = None     # the message's BM25 (items_fts)
    code_bm25: float | None = None     # the code's BM25 (items_code): symbols, words, paths
    named_author: str | None = None    # the query's @login this commit's author is
    author_factor: float = 1.0         # what that multiplied `fused` by (1 + AUTHOR_WEIGHT)


@dataclass(frozen=True)
class Hit:
    item_id: int
    kind: str
    title: str
    text: str
    citation: str                  # short sha, path:line, or note #id
    time: int
    signal: str | None
    sha: str | None = None         # commit items
    segment: int = 0
    author: str | None = None
    path: str | None = None        # doc items: the document; note items: the target's file
    line: int | None = None
    note_id: int | None = None
    files: tuple[str, ...] = ()
    cluster: int | None = None
    why: Explanation | None = None


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str                      # the mode actually used
    hits: list[Hit]
    semantic: bool
    note: str | None               # e.g. why vectors were not used
    candidates: int
    clock: Clock | None = None     # what the recency prior counted back from


def build_focus(con, at: str | None = None, workspace=None) -> Focus:
    """A Focus from a target (`PATH`, `PATH::SYMBOL`, `PATH:LINE`) and a workspace.Workspace."""
    from cortex_core.query.targets import parse_target, resolve
    file_ids: set[int] = set()
    symbol_ids: set[int] = set()
    if at:
        from cortex_core.query.history import earlier_identities
        target = resolve(con, parse_target(at))
        # Its earlier paths and names too: commits from before a rename are about it as well.
        file_ids |= earlier_identities(con, file_id=target.file_id)
        if target.symbol_id is not None:
            symbol_ids |= earlier_identities(con, symbol_id=target.symbol_id)
    return with_workspace(con, Focus(frozenset(file_ids), frozenset(symbol_ids)), workspace)


def with_workspace(con, focus: Focus, workspace=None) -> Focus:
    """`focus` with a workspace.Workspace's changed files and branch words (None: as it is)."""
    if workspace is None:
        return focus
    changed: set[int] = set()
    for path in workspace.changed:
        row = con.execute("select id from files where path = ?", (path,)).fetchone()
        if row:
            changed.add(row[0])
    return replace(focus, changed_file_ids=frozenset(changed),
                   branch_terms=tuple(workspace.branch_terms))


# The note of a search without vectors; a front end that knows why says that instead.
NO_MODEL = "semantic search off: no embedding model; lexical ranking only"


def search(con, query: str, options: SearchOptions = SearchOptions(), *, embedder=None,
           vectors=None, lexicon=None, focus: Callable[[], Focus] | None = None,
           now: float | None = None, cache: bool = False) -> SearchResult:
    """`vectors`: the index's embeddings in memory (memory/vector_matrix.py), which rank the
    same as sqlite-vec, faster; None asks sqlite-vec. `lexicon`: the lexical indexes' postings
    in memory (memory/lexical_matrix.py), current for this snapshot, which score the same as
    FTS5, faster; None asks FTS5. `focus`: the focus, when learning it takes time (the working
    copy's changes): asked for once the candidates are read, in place of `options.focus`.
    `cache`: keep what depends on the store only (which items the default filters pass) with
    `con` between searches, while store_stamp says the store is the same; for a server's read
    connections, which never write."""
    _check(options)
    if not (query or "").strip():   # the command line's `search ""` gives None
        raise CortexError("the query has no words to search for")
    used = read_clock(con, options.clock, now)
    now = used.now
    mode, note = options.mode, None
    if mode != "lexical" and embedder is None:
        if mode == "vector":
            raise CortexError("vector search needs an embedding model, and this index has "
                              "none usable (its status says why)", Hint("model"))
        mode, note = "lexical", NO_MODEL
    filters = _Filters(options, con, cache)
    logins = named_logins(query)
    words = without_logins(query, known_logins(con, logins))   # who is no word to match
    scored, parts = _lexical(con, words, filters, options.weights, lexicon) \
        if mode != "vector" else ([], {})
    vector, sims = _vector(con, words, embedder, filters, vectors) if mode != "lexical" \
        else ([], {})
    if not scored and not vector and not query_terms(query) and mode != "vector":
        raise CortexError("the query has no words to search for")
    lexical = [item for item, _ in scored]
    w_vec = _vector_weight([score for _, score in scored], bool(vector), options.weights)
    if w_vec == 0.0:   # vectors only break ties between lexical candidates
        known = set(lexical)
        vector = [item for item in vector if item in known]
    if focus is not None:
        options = replace(options, focus=focus())
    hits = _rank(con, scored, parts, vector, sims, w_vec, options, now, logins)
    if mode == "hybrid" and hits and not scored:
        # Vectors always find neighbours, even of a word the history never used (a typo, another
        # language): said, so that a reader or an agent weighs them as guesses.
        said = (f"no word of the query is in the index: {'these hits are' if len(hits) != 1 else 'this hit is'}"
                " the embedding model's nearest by meaning alone")
        note = f"{note}; {said}" if note else said
    common = only_common_words(words) if scored else []
    if common:
        # "the of and" matches half the history: said, so that nobody reads the list as an answer.
        said = (f"every word of the query is a common one ({', '.join(common[:5])}): "
                "the lexical hits match those alone")
        note = f"{note}; {said}" if note else said
    behind = unsearched_commits(con)
    if behind:
        said = (f"{behind} of the newest commits {'have' if behind != 1 else 'has'} no "
                "searchable text yet (an index run stopped before its memory step, or is still "
                "running; the next one adds it)")
        note = f"{note}; {said}" if note else said
    return SearchResult(query, mode, hits, embedder is not None, note,
                        len(set(lexical) | set(vector)), used)


def unsearched_commits(con) -> int:
    """How many commits were stored after the newest one with searchable text (memory items):
    an index run stopped between its commits and its memory step leaves them so, and a search
    must not read as "nothing matched" in the whole history. Every commit gets a segment, so
    those after the newest one with a segment are the ones missing (two indexed lookups)."""
    newest = con.execute("select coalesce(max(commit_id), 0) from items").get
    return con.execute("select count(*) from commits where id > ?", (newest,)).get


def _check(options: SearchOptions) -> None:
    if options.mode not in ("hybrid", "lexical", "vector"):
        raise CortexError(f"unknown search mode {options.mode!r} (hybrid, lexical, vector)")
    if options.top_k < 1:
        raise CortexError("the number of results must be at least 1")
    unknown = set(options.kinds) - set(KINDS)
    if unknown:
        raise CortexError(f"unknown kind {sorted(unknown)[0]!r} (known: {', '.join(KINDS)})")


# -- candidates --------------------------------------------------------------------------------


def _earlier_paths(con, prefix: str) -> set[int]:
    """The ids of the earlier paths (before renames and moves) of the files at HEAD under
    `prefix` (a file or a folder): `--path src/app.py` finds the commits made to it as app.py."""
    from cortex_core.query.history import earlier_identities
    out: set[int] = set()
    for (file_id,) in con.execute(
            "select h.file_id from head_files h join files f on f.id = h.file_id"
            " where (f.path = ? or substr(f.path, 1, ?) = ?) and exists (select 1 from"
            " file_changes fc where fc.file_id = h.file_id and fc.status = 'R')",
            (prefix, len(prefix) + 1, prefix + "/")):
        out |= earlier_identities(con, file_id=file_id) - {file_id}
    return out


class _Filters:
    """The same filters for both candidate lists, as SQL on `items i`: `joins` after it in the
    FROM clause, `sql` in the WHERE clause. Joins rather than EXISTS subqueries: on scrapy the
    filter of 400 matches took 0.53 ms against 1.35."""

    joins = (" left join commits f_c on f_c.id = i.commit_id"
             " left join notes f_n on f_n.id = i.note_id")

    # The default filters without the note's expiry, which depends on the time (_passing).
    lasting = ("(i.commit_id is null or f_c.reachable = 1) and (i.note_id is null or"
               " (f_n.id is not null and f_n.superseded_by is null))")
    dated = "i.note_id is not null and f_n.valid_until is not null"

    def __init__(self, options: SearchOptions, con, cache: bool = False):
        """`cache`: `con` is a server's read connection, on which `keep` may reuse which items
        pass the default filters (_passing)."""
        cached = con if cache else None
        clauses = ["(i.commit_id is null or f_c.reachable = 1)",
                   # a note expired since the last index or note command never shows
                   "(i.note_id is null or (f_n.id is not null and f_n.superseded_by is null"
                   " and (f_n.valid_until is null or f_n.valid_until > ?)))"]
        params: list = [int(time.time())]
        if options.kinds:
            clauses.append(f"i.kind in ({','.join('?' * len(options.kinds))})")
            params.extend(options.kinds)
        if options.since is not None:
            clauses.append("i.time >= ?")
            params.append(int(options.since))
        prefix = (options.path or "").strip("/")
        if prefix not in ("", "."):
            clauses.append("exists (select 1 from item_files x join files fl on fl.id = x.file_id"
                           " where x.item_id = i.id and (fl.path = ? or substr(fl.path, 1, ?) = ?"
                           " or x.file_id in (select value from json_each(?))))")
            params.extend([prefix, len(prefix) + 1, prefix + "/",
                           json.dumps(sorted(_earlier_paths(con, prefix)))])
        self.sql = " and ".join(clauses)
        self.params = tuple(params)
        # The user's own filters may keep few of the best matches; the two above keep nearly all.
        self.selective = bool(options.kinds) or options.since is not None \
            or prefix not in ("", ".")
        self.cached = cached if not self.selective else None

    def keep(self, con, ids: list[int]) -> set[int]:
        """Those of `ids` that pass. With the default filters on a cached connection, from the
        items that pass them (read once per state of the store: 0.5-2 ms of SQL per search on
        scrapy otherwise); a note with an end date is still asked of SQL, with the time."""
        if self.cached is not None and self.cached is con:
            passing, dated = _passing(con)
            kept = {item for item in ids if item in passing}
            ask = [item for item in kept if item in dated]
            if not ask:
                return kept
            return (kept - set(ask)) | self._ask(con, ask)
        return self._ask(con, ids)

    def _ask(self, con, ids: list[int]) -> set[int]:
        marks = ",".join("?" * len(ids))
        return {r[0] for r in con.execute(f"select i.id from items i{self.joins}"
                                          f" where i.id in ({marks}) and {self.sql}",
                                          (*ids, *self.params))}


_PASSING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # con -> (stamp, sets)
_PASSING_LOCK = threading.Lock()


def _passing(con) -> tuple[frozenset[int], frozenset[int]]:
    """The items that pass the default filters but the notes' end dates, and the notes that
    have an end date: read in one pass over the items when the store changed (store_stamp),
    else the connection's last answer."""
    from cortex_core.store.store import store_stamp
    stamp = store_stamp(con)
    with _PASSING_LOCK:
        kept = _PASSING.get(con)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    passing, dated = set(), set()
    for item, passes, has_end in con.execute(
            f"select i.id, {_Filters.lasting}, {_Filters.dated} from items i{_Filters.joins}"):
        if passes:               # 1; 0 or NULL fail, as in a WHERE clause
            passing.add(item)
        if has_end:
            dated.add(item)
    value = (frozenset(passing), frozenset(dated))
    with _PASSING_LOCK:
        _PASSING[con] = (stamp, value)
    return value


Parts = dict[int, tuple[float | None, float | None]]   # item -> (message BM25, code BM25)


def _lexical(con, query: str, filters: _Filters, weights: Weights,
             lexicon=None) -> tuple[list[tuple[int, float]], Parts]:
    """(item, lexical score: higher is better), best first. The score is the message's BM25
    plus `weights.code` times the code's (items_code): each index proposes its best
    `CANDIDATES`; a candidate outside one index's best counts 0 there (scoring it exactly took
    two more MATCH passes, doubled the lexical latency and changed MRR@10 by under 0.006 on
    requests and scrapy)."""
    expression = fts_query(query)
    if expression is None:
        return [], {}
    terms = query_terms(query)
    text = _bm25(con, "items_fts", weights.text_columns, expression, filters,
                 lexicon=lexicon, terms=terms)
    code = _bm25(con, "items_code", weights.code_columns, expression, filters,
                 lexicon=lexicon, terms=terms) if weights.code > 0 else {}
    scores = {item: s + weights.code * code.get(item, 0.0) for item, s in text.items()}
    for item, s in code.items():
        scores.setdefault(item, weights.code * s)
    best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:CANDIDATES]
    return best, {item: (text.get(item), code.get(item)) for item, _ in best}


def _bm25(con, table: str, columns: tuple[float, ...], expression: str, filters: _Filters,
          candidates: int = CANDIDATES, overfetch: int = OVERFETCH, lexicon=None,
          terms: list[str] | tuple[str, ...] = ()) -> dict[int, float]:
    """BM25 scores (higher is better) of the best `candidates` items of one FTS5 table.

    The filters run on the index's best `overfetch` matches rather than on every match: testing
    each match before sorting tripled the cost of a query of common words (scrapy: p50 12.3 ms
    against 3.8). The answer is the same: when fewer than `candidates` of them pass and the
    index had more, the filtered query runs over every match, as it does at once when the user
    filtered by kind, date or path (reading the best matches first there cost more than it
    saved: scrapy, kinds=note 5.0 against 1.8 ms).

    `lexicon` (memory/lexical_matrix.py) gives those best matches, the same rows and scores,
    from postings in memory when it can (`terms`: the words `expression` is made of); the
    filtered queries are FTS5's."""
    weights = ", ".join(str(w) for w in columns)
    if filters.selective:
        return _filtered_bm25(con, table, weights, expression, filters, candidates)
    scored = lexicon.top(con, table, list(terms), columns, overfetch) \
        if lexicon is not None and terms else None
    if scored is None:
        scored = con.execute(
            f"select rowid, -bm25({table}, {weights}) as s from {table} where {table} match ?"
            f" order by s desc, rowid limit ?", (expression, overfetch)).fetchall()
    if not scored:
        return {}
    kept = filters.keep(con, [r[0] for r in scored])
    if len(kept) >= candidates or len(scored) < overfetch:
        return dict([(item, s) for item, s in scored if item in kept][:candidates])
    return _filtered_bm25(con, table, weights, expression, filters, candidates)


def _filtered_bm25(con, table: str, weights: str, expression: str, filters: _Filters,
                   candidates: int) -> dict[int, float]:
    rows = con.execute(
        f"select i.id, -bm25({table}, {weights}) as s from {table} join items i"
        f" on i.id = {table}.rowid{filters.joins} where {table} match ? and {filters.sql}"
        f" order by s desc, i.id limit ?", (expression, *filters.params, candidates))
    return {r[0]: r[1] for r in rows}


def _vector(con, query: str, embedder, filters: _Filters,
            vectors=None) -> tuple[list[int], dict[int, float]]:
    """Items by cosine similarity to the query; items sharing a text share its rank."""
    has_table = con.execute("select 1 from sqlite_master where name = 'item_vectors'").fetchone()
    if not has_table or not query.strip():
        return [], {}
    vector = embedder.query_vector(query, con)
    if vector is None:
        return [], {}
    # Over-fetch: several items may share a vector and filters drop some.
    if vectors is not None:
        rows = vectors.nearest(vector, VECTOR_CANDIDATES * 2)
    else:
        rows = con.execute("select rowid, distance from item_vectors where embedding match ?"
                           " and k = ? order by distance", (vector, VECTOR_CANDIDATES * 2)
                           ).fetchall()
    rows = [(vid, dist) for vid, dist in rows if dist is not None]    # a damaged stored vector
    if not rows:
        return [], {}
    order = {vid: n for n, (vid, _) in enumerate(rows)}
    similarity = {vid: 1.0 - dist for vid, dist in rows}
    marks = ",".join("?" * len(order))
    # Through the text's hash (indexed; vector_id is not): an item points at the vector of its
    # own text, so this finds the same items as `vector_id in (...)` without reading them all.
    items = con.execute(f"select i.id, i.vector_id from vectors v join items i"
                        f" on i.text_hash = v.text_hash and i.vector_id = v.id{filters.joins}"
                        f" where v.id in ({marks}) and {filters.sql}",
                        (*order, *filters.params)).fetchall()
    items.sort(key=lambda r: (order[r[1]], r[0]))
    ranked = [item_id for item_id, _ in items][:VECTOR_CANDIDATES]
    return ranked, {item_id: similarity[vid] for item_id, vid in items}


# -- ranking -----------------------------------------------------------------------------------


def _rank(con, scored: list[tuple[int, float]], parts: Parts, vector: list[int],
          sims: dict[int, float], w_vec: float, options: SearchOptions, now: float,
          logins: dict[str, str]) -> list[Hit]:
    lex_rank = _tied_ranks([item for item, _ in scored], dict(scored))
    vec_rank = _tied_ranks(vector, sims)
    fused = {}
    for item in lex_rank.keys() | vec_rank.keys():
        score = 0.0
        if item in lex_rank:
            score += options.weights.lexical / (RRF_K_LEXICAL + lex_rank[item])
        if item in vec_rank:
            score += w_vec / (RRF_K_VECTOR + vec_rank[item])
        fused[item] = score
    if not fused:
        return []
    authors = authored_by(con, list(fused), logins)
    # Not a prior: the query asked for these authors (module docstring, 4); the area prior's
    # cluster is then that of the lifted list's best hits.
    if authors:
        fused = {item: score * (1.0 + AUTHOR_WEIGHT) if item in authors else score
                 for item, score in fused.items()}
    light = _light_metadata(con, list(fused))
    focus = options.focus if options.context else Focus()
    area = _dominant_area(fused, light) if options.priors else None
    pw = options.prior_weights
    priors: dict[int, tuple[float, float, float]] = {}   # recency, signal, area
    for item in fused:
        m = light[item]
        if options.priors:
            priors[item] = (_recency(m, now, options), SIGNAL.get(m["signal"] or "other", 0.3),
                            1.0 if area is not None and m["cluster"] == area else 0.0)
        else:
            priors[item] = (0.0, 0.0, 0.0)

    def boost(item: int, ctx: float) -> float:
        recency, signal, in_area = priors[item]
        return pw.recency * recency + pw.signal * signal + pw.context * ctx + pw.area * in_area

    contexts = {} if focus.empty else _contexts(con, fused, boost, focus, light, options)

    def key(item: int) -> tuple[float, int, int]:
        ctx = contexts.get(item, (0.0, ()))[0]
        return (-(fused[item] * (1.0 + boost(item, ctx))), -light[item]["time"], item)

    # Without a focus every candidate is scored; with one, those whose context was not read
    # cannot reach the top k (_contexts).
    ranked = sorted(fused if focus.empty else contexts, key=key)
    chosen = _diverse(ranked, light, options)
    meta = _metadata(con, chosen)
    hits = []
    for item in chosen:
        recency, signal, in_area = priors[item]
        ctx, reasons = contexts.get(item, (0.0, ()))
        lift = boost(item, ctx)
        text_bm25, code_bm25 = parts.get(item, (None, None))
        why = Explanation(lex_rank.get(item), vec_rank.get(item), sims.get(item), w_vec,
                          fused[item], recency, signal, ctx, reasons, in_area, lift,
                          fused[item] * (1.0 + lift), text_bm25=text_bm25, code_bm25=code_bm25,
                          named_author=authors.get(item),
                          author_factor=1.0 + AUTHOR_WEIGHT if item in authors else 1.0)
        hits.append(_hit(meta[item], why))
    return hits


CONTEXT_BATCH = 64   # candidates whose context is read at a time (_contexts)


def _contexts(con, fused: dict[int, float], boost: Callable[[int, float], float],
              focus: Focus, light: dict[int, dict], options: SearchOptions
              ) -> dict[int, tuple[float, tuple[str, ...]]]:
    """The context prior of the candidates that can still reach the top k: read best upper
    bound first (the context prior at its largest), a batch at a time, until the next upper
    bound is below the k-th score of the diverse top k so far; every candidate not read scores
    below it whatever its context, so the hits are those of reading all (what the focus needs
    of a candidate, its files, symbols and text, is most of the cost of ranking a common-word
    query's hundreds of candidates)."""
    prunable = options.prior_weights.context >= 0 and all(v >= 0 for v in fused.values())

    def bound(item: int) -> float:   # a hair above, so that rounding cannot cut a tie
        best = fused[item] * (1.0 + boost(item, 1.0))
        return best + abs(best) * 1e-9   # (above also when priors make the score negative)

    def score(item: int) -> float:
        return fused[item] * (1.0 + boost(item, out[item][0]))

    order = sorted(fused, key=lambda i: (-bound(i), i))
    out: dict[int, tuple[float, tuple[str, ...]]] = {}
    for start in range(0, len(order), CONTEXT_BATCH):
        if prunable and len(out) >= options.top_k:
            ranked = sorted(out, key=lambda i: (-score(i), -light[i]["time"], i))
            chosen = _diverse(ranked, light, options)
            if len(chosen) == options.top_k and bound(order[start]) < score(chosen[-1]):
                break
        batch = order[start:start + CONTEXT_BATCH]
        for item, data in _focus_data(con, batch, bool(focus.branch_terms)).items():
            out[item] = _context(data, focus)
    return out


def _recency(m: dict, now: float, options: SearchOptions) -> float:
    age_days = max(0.0, (now - m["time"]) / 86400.0)
    return 0.5 ** (age_days / options.half_life_days)


def _tied_ranks(ordered: list[int], scores: dict[int, float]) -> dict[int, int]:
    """1-based ranks in which equal scores share a rank (identical texts, equal BM25), so that
    the priors, not the storage order, decide between them."""
    ranks: dict[int, int] = {}
    previous, rank = None, 0
    for n, item in enumerate(ordered):
        score = scores.get(item)
        if previous is None or score is None or abs(score - previous) > 1e-9 * max(1.0, abs(score)):
            rank, previous = n + 1, score
        ranks[item] = rank
    return ranks


def _vector_weight(bm25: list[float], have_vectors: bool, weights: Weights) -> float:
    """Full weight when BM25 found nothing or is flat; none when its best stands out."""
    if not have_vectors:
        return 0.0
    if not bm25:
        return weights.vector
    ratio = bm25[0] / max(bm25[min(FLATNESS_DEPTH, len(bm25)) - 1], 1e-9)
    share = (weights.flat_ratio - ratio) / (weights.flat_ratio - 1.0)
    return weights.vector * min(1.0, max(0.0, share))


def _dominant_area(fused: dict[int, float], meta: dict[int, dict]) -> int | None:
    """The cluster most of the five best fused items belong to (at least two of them)."""
    best = sorted(fused, key=lambda i: -fused[i])[:5]
    counts: dict[int, int] = {}
    for item in best:
        cluster = meta[item]["cluster"]
        if cluster is not None and cluster >= 0:
            counts[cluster] = counts.get(cluster, 0) + 1
    if not counts:
        return None
    cluster, count = max(counts.items(), key=lambda kv: kv[1])
    return cluster if count >= 2 else None


def _context(m: dict, focus: Focus) -> tuple[float, tuple[str, ...]]:
    value, reasons = 0.0, []
    if focus.symbol_ids & m["symbol_ids"]:
        value, reasons = 1.0, ["about the focus symbol"]
    elif focus.file_ids & m["file_ids"]:
        value, reasons = 0.7, ["touches the focus file"]
    if focus.changed_file_ids & m["file_ids"]:
        value = max(value, 0.5)
        reasons.append("touches a file you changed")
    if focus.branch_terms:
        words = set(query_terms(m["title"] + " " + m["body"]))
        shared = [t for t in focus.branch_terms if t in words]
        if shared:
            value = max(value, 0.3)
            reasons.append("mentions " + ", ".join(shared) + " (branch name)")
    return value, tuple(reasons)


def _light_metadata(con, items: list[int]) -> dict[int, dict]:
    """What every candidate's priors and diversity need: time, signal, cluster, source."""
    out: dict[int, dict] = {}
    for start in range(0, len(items), 500):
        chunk = items[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for item, kind, when, signal, cluster, commit_id, file_id in con.execute(
                f"select id, kind, time, signal, cluster, commit_id, file_id from items"
                f" where id in ({marks})", chunk):
            source = ("commit", commit_id) if kind == "commit" else \
                ("doc", file_id) if kind == "doc" else ("note", item)
            out[item] = dict(time=when, signal=signal, cluster=cluster, source=source)
    return out


def _focus_data(con, items: list[int], text: bool) -> dict[int, dict]:
    """What the context prior reads of a candidate: its files and symbols, its text when the
    branch name has words to look for."""
    marks = ",".join("?" * len(items))
    out: dict[int, dict] = {item: dict(file_ids=set(), symbol_ids=set(), title="", body="")
                            for item in items}
    for item, file_id in con.execute(
            f"select item_id, file_id from item_files where item_id in ({marks})", items):
        out[item]["file_ids"].add(file_id)
    for item, symbol_id in con.execute(
            f"select item_id, symbol_id from item_symbols where item_id in ({marks})", items):
        out[item]["symbol_ids"].add(symbol_id)
    if text:
        for item, title, body in con.execute(
                f"select id, title, body from items where id in ({marks})", items):
            out[item].update(title=title, body=body)
    return out


def _metadata(con, items: list[int]) -> dict[int, dict]:
    """Everything a hit shows of the chosen items."""
    out: dict[int, dict] = {}
    if not items:
        return out
    marks = ",".join("?" * len(items))
    for row in con.execute(
            f"select i.id, i.kind, i.title, i.body, i.time, i.signal, i.segment, i.line,"
            f" i.note_id, i.cluster, c.sha, c.author_name, df.path"
            f" from items i left join commits c on c.id = i.commit_id"
            f" left join files df on df.id = i.file_id where i.id in ({marks})", items):
        (item, kind, title, body, when, signal, segment, line, note_id, cluster, sha, author,
         doc_path) = row
        out[item] = dict(id=item, kind=kind, title=title, body=body, time=when, signal=signal,
                         segment=segment, line=line, note_id=note_id, cluster=cluster, sha=sha,
                         author=author, doc_path=doc_path, paths=[])
    for item, path in con.execute(
            f"select x.item_id, f.path from item_files x join files f on f.id = x.file_id"
            f" where x.item_id in ({marks})", items):
        out[item]["paths"].append(path)
    return out


def _hit(m: dict, why: Explanation) -> Hit:
    kind = m["kind"]
    path = m["doc_path"] if kind == "doc" else (m["paths"][0] if kind == "note" and m["paths"]
                                                else None)
    if kind == "commit":
        citation = m["sha"][:10]
    elif kind == "doc":
        citation = f"{path}:{m['line']}"
    else:
        citation = f"note #{m['note_id']}"
    return Hit(m["id"], kind, m["title"], m["body"], citation, m["time"], m["signal"],
               sha=m["sha"], segment=m["segment"],
               author=redact(m["author"]) if m["author"] else m["author"], path=path,
               line=m["line"], note_id=m["note_id"], files=tuple(sorted(m["paths"])),
               cluster=m["cluster"], why=why)


def _diverse(ranked: Iterable[int], light: dict[int, dict], options: SearchOptions) -> list[int]:
    """The best items, at most `per_commit` from one commit and `per_source` from one
    document."""
    taken: dict[tuple, int] = {}
    out = []
    for item in ranked:
        source = light[item]["source"]
        most = options.per_commit if source[0] == "commit" else options.per_source
        if taken.get(source, 0) >= most:
            continue
        taken[source] = taken.get(source, 0) + 1
        out.append(item)
        if len(out) == options.top_k:
            break
    return out
