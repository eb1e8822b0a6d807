"""The lexical indexes' postings in memory, for servers that search many times.

FTS5 answers `... where items_fts match '"a" OR "b" OR ...' order by bm25(...) limit 400` by
computing bm25 for every row that matches any word, one row at a time (each row's instances and
its size read from the index): a commit subject's common words ("fix", "test", "docs") match a
fifth to two thirds of scrapy's items, and the two lexical queries were about a third of a
search in the language server. Most of that cost is per matching row, not in the index itself.

Here the same numbers come from arrays: per term, the rows that hold it and how many times in
each column; per row, its size in tokens; the table's row count and total size as FTS5 keeps
them (its averages record). `Postings.top` is bm25 as fts5_aux.c computes it, step by step in
the same order (the frequency of a phrase in a row is `w` added once per instance, column
after column; the score sums the phrases in query order), so the scores are the same doubles
and the order (score, then rowid) the same; tests/test_lexical_matrix.py compares them with
FTS5's. Anything it cannot answer exactly (a quoted word that the tokenizer splits in two or
drops, another tokenizer) returns None and FTS5 answers.

The postings are the snapshot's: loaded inside a read transaction, valid while the FTS5 tables
are unchanged (`version_key`: each table's structure record, which FTS5 rewrites at every
commit that touches the table, and its averages record). On scrapy (16,706 items: 307,334 and
385,546 postings) loading takes 0.3-0.4 s of CPU (most of it SQLite walking the index once)
and ~15 MB; the language server loads in the background and FTS5 answers meanwhile
(Engine.lexicon).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# The tables, with their columns in order (store/schema.py).
TABLES = {"items_fts": ("title", "body", "terms", "paths"),
          "items_code": ("symbols", "code", "paths")}
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])
_TOKENIZE = "tokenize = 'porter unicode61 remove_diacritics 2'"
# Above this many postings (term-row pairs, all tables) nothing is kept: FTS5 answers.
MAX_POSTINGS = 8_000_000

K1 = 1.2     # fts5_aux.c's constants
B = 0.75

_AVERAGES_ROWID = 1      # FTS5_AVERAGES_ROWID: row count, then total tokens per column
_STRUCTURE_ROWID = 10    # FTS5_STRUCTURE_ROWID: the segments; rewritten by every change


@dataclass
class Postings:
    """One FTS5 table's postings. Terms are as the tokenizer stores them (stemmed)."""
    columns: int
    rows: int                     # FTS5's row count (xRowCount)
    avgdl: float                  # its total tokens / rows, as bm25 computes it
    spans: dict[str, tuple[int, int]]   # term -> [start, end) in `docs` and `counts`
    docs: np.ndarray              # rowids, ascending within a term
    counts: np.ndarray            # (postings, columns): instances of the term per column
    length_part: np.ndarray       # per rowid: k1 * (1 - b + b * D / avgdl), D its size
    _freq: dict[tuple[float, ...], np.ndarray] = field(default_factory=dict)

    def frequencies(self, weights: tuple[float, ...]) -> np.ndarray:
        """Per posting, bm25's phrase frequency: `weight` added once per instance, columns in
        order, as fts5_aux.c adds them (not count * weight, which rounds differently)."""
        key = tuple(float(w) for w in weights[:self.columns]) + \
            (1.0,) * max(0, self.columns - len(weights))
        kept = self._freq.get(key)
        if kept is not None:
            return kept
        freq = np.zeros(len(self.docs), dtype=np.float64)
        for column, weight in enumerate(key):
            count = self.counts[:, column]
            live = np.flatnonzero(count)
            added = 0
            while live.size:
                with np.errstate(over="ignore"):   # top() leaves non-finite scores to FTS5
                    freq[live] += weight
                added += 1
                live = live[count[live] > added]
        self._freq[key] = freq
        return freq

    def top(self, tokens: list[str], weights: tuple[float, ...],
            limit: int) -> list[tuple[int, float]] | None:
        """(rowid, -bm25(table, *weights)) of the best `limit` rows matching any token, best
        first, ties by rowid: the rows and numbers of FTS5's `order by -bm25(...) desc, rowid`.
        One phrase per token, in query order (a repeated token counts twice, as in FTS5).
        None when a score is not finite (weights near the largest double): FTS5 answers."""
        freq = self.frequencies(weights)
        score = np.zeros(len(self.length_part), dtype=np.float64)
        for token in tokens:
            span = self.spans.get(token)
            if span is None:
                continue     # no row holds it: it adds nothing to any score
            start, end = span
            hits = end - start
            idf = math.log((self.rows - hits + 0.5) / (hits + 0.5))    # libm's, as SQLite
            if idf <= 0.0:
                idf = 1e-6
            docs = self.docs[start:end]
            f = freq[start:end]
            with np.errstate(over="ignore", invalid="ignore"):   # checked below
                score[docs] += idf * ((f * (K1 + 1.0)) / (f + self.length_part[docs]))
        rowids = np.flatnonzero(score)
        values = score[rowids]
        if not np.isfinite(values).all():
            return None
        if len(rowids) > limit:
            kth = np.partition(values, len(values) - limit)[len(values) - limit]
            keep = values >= kth
            rowids, values = rowids[keep], values[keep]
        order = np.argsort(-values, kind="stable")[:limit]    # rowids ascend: ties by rowid
        return [(int(r), float(v)) for r, v in zip(rowids[order], values[order])]


@dataclass
class LexicalMatrix:
    key: tuple
    tables: dict[str, Postings]

    def top(self, con, table: str, terms: list[str], weights: tuple[float, ...],
            limit: int) -> list[tuple[int, float]] | None:
        """FTS5's best `limit` matches of `terms` (each a quoted phrase, joined by OR) in
        `table`; None when this cannot answer exactly (ask FTS5)."""
        postings = self.tables.get(table)
        if postings is None or not all(0.0 < float(w) < math.inf for w in weights):
            return None      # a weight of 0 scores a match 0, which FTS5 still lists
        tokens = query_tokens(con, terms)
        if tokens is None:
            return None
        return postings.top(tokens, weights, limit)


def query_tokens(con, terms: list[str]) -> list[str] | None:
    """Each query word as the tables' tokenizer turns it into a term, or None when a word does
    not give exactly one term (FTS5 would make it a phrase of several, or an empty one)."""
    import apsw
    tokenizer = con.fts5_tokenizer(*TOKENIZER)
    out = []
    for term in terms:
        tokens = tokenizer(term.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None,
                           include_offsets=False, include_colocated=True)
        if len(tokens) != 1 or len(tokens[0]) != 1:
            return None
        out.append(tokens[0][0])
    return out


def version_key(con) -> tuple:
    """What identifies the tables' contents in this snapshot: the store's own id and HEAD
    (meta), then each table's FTS5 structure record (which every committed change to the table
    rewrites) and averages record. Those records alone do not tell two stores of the same shape
    apart (a store copied over another in place). Not the time of the last index run: a run
    that finds nothing new writes it too, and the postings would be read again for nothing
    (and a test that expected the same key after such a run failed whenever a second ticked
    during it)."""
    out: list = list(con.execute("select key, value from meta where key in"
                                 " ('store_id', 'head') order by key").fetchall())
    for table in TABLES:
        out.extend(con.execute(f"select id, block from {table}_data where id in (?, ?)"
                               f" order by id", (_AVERAGES_ROWID, _STRUCTURE_ROWID)).fetchall())
    return tuple(out)


def load(con, max_postings: int = MAX_POSTINGS,
         weights: dict[str, tuple[float, ...]] | None = None) -> LexicalMatrix | None:
    """Both tables' postings, read in the caller's read transaction (so that `key` is theirs);
    None when a table is missing, uses another tokenizer, or is larger than `max_postings`.
    `weights`: per table, the column weights whose frequencies to compute now rather than at
    the first search that asks."""
    key = version_key(con)
    sqls = dict(con.execute("select name, sql from sqlite_master where name in (?, ?)",
                            tuple(TABLES)).fetchall())
    if set(sqls) != set(TABLES) or any(_TOKENIZE not in " ".join(sql.split())
                                       for sql in sqls.values()):
        return None
    tables = {}
    try:
        for table in TABLES:
            con.execute(f"create virtual table if not exists temp.{table}_vocab_row"
                        f" using fts5vocab(main, {table}, row)")
        total = sum(con.execute(f"select coalesce(sum(doc), 0) from temp.{table}_vocab_row"
                                ).fetchone()[0] for table in TABLES)
        if total > max_postings:
            return None
        for table, columns in TABLES.items():
            postings = _load_table(con, table, columns)
            if postings is None:
                return None
            if weights and table in weights:
                postings.frequencies(weights[table])
            tables[table] = postings
    finally:
        for table in TABLES:
            for kind in ("row", "instance"):
                con.execute(f"drop table if exists temp.{table}_vocab_{kind}")
    return LexicalMatrix(key, tables)


def _load_table(con, table: str, columns: tuple[str, ...]) -> Postings | None:
    if tuple(r[1] for r in con.execute(f"pragma table_info({table})")) != columns:
        return None
    averages = con.execute(f"select block from {table}_data where id = ?",
                           (_AVERAGES_ROWID,)).fetchone()
    if averages is None:
        return None
    values = _varints(averages[0])
    if len(values) < 1 + len(columns):
        return None      # an empty table's record is empty: nothing to keep
    rows, tokens = values[0], sum(values[1:1 + len(columns)])
    if rows <= 0:
        return None
    avgdl = float(tokens) / float(rows)
    largest = con.execute(f"select coalesce(max(id), 0) from {table}_docsize").fetchone()[0]
    if largest > 4 * rows + 1_000_000 or largest >= 2**31:
        return None      # rowids too sparse for arrays indexed by rowid
    sizes = _row_sizes(con, table, len(columns), largest)
    if sizes is None:
        return None
    # bm25's `k1 * (1 - b + b * D / avgdl)`, per row, in that order of operations.
    length_part = K1 * ((1 - B) + (B * sizes) / avgdl)

    con.execute(f"create virtual table if not exists temp.{table}_vocab_instance"
                f" using fts5vocab(main, {table}, instance)")
    case = "case col " + " ".join(f"when '{c}' then {i}" for i, c in enumerate(columns)) + " end"
    spans: dict[str, tuple[int, int]] = {}
    docs: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    chunk: list[tuple[str, int, str]] = []
    done = 0

    def flush() -> bool:
        nonlocal done
        part = _postings(chunk, len(columns))
        if part is None:
            return False
        for term, start, end in part[2]:
            spans[term] = (done + start, done + end)
        docs.append(part[0])
        counts.append(part[1])
        done += len(part[0])
        chunk.clear()
        return True

    # One number per instance, doc * 8 + column, in the index's own order (term, then doc,
    # then column): SQLite walks the index once without sorting (grouping by term follows it),
    # and lets other threads run meanwhile; the numbers are parsed a few hundred terms at a
    # time, so that no step holds the interpreter for long.
    for term, n, text in con.execute(
            f"select term, count(*), group_concat(doc * 8 + {case}, ',')"
            f" from temp.{table}_vocab_instance group by term"):
        if text is None:
            return None      # a column the query above did not name
        chunk.append((term, n, text))
        if len(chunk) >= 256 and not flush():
            return None
    if chunk and not flush():
        return None
    all_docs = np.concatenate(docs) if docs else np.zeros(0, dtype=np.int64)
    if len(all_docs) and all_docs.max() > largest:
        return None          # an instance of a row without a size
    all_counts = np.concatenate(counts) if counts else \
        np.zeros((0, len(columns)), dtype=np.int32)
    # The smallest integers that hold them (rowids are below `largest`, a few million at most).
    top = int(all_counts.max()) if all_counts.size else 0
    narrow = np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.int32
    return Postings(len(columns), rows, avgdl, spans, all_docs.astype(np.int32),
                    all_counts.astype(narrow), length_part)


def _postings(chunk: list[tuple[str, int, str]], columns: int
              ) -> tuple[np.ndarray, np.ndarray, list[tuple[str, int, int]]] | None:
    """Some terms' instances (doc * 8 + column each) as postings: rowids, counts per column,
    and each term's [start, end) among them."""
    flat = np.fromstring(",".join(text for _, _, text in chunk), dtype=np.int64, sep=",")
    if flat.size != sum(n for _, n, _ in chunk):
        return None          # a column the query did not name
    term_of = np.repeat(np.arange(len(chunk)), [k for _, k, _ in chunk])
    if len(flat) > 1 and np.any((flat[1:] < flat[:-1]) & (term_of[1:] == term_of[:-1])):
        order = np.lexsort((flat, term_of))     # not in the index's order: sort each term's
        flat, term_of = flat[order], term_of[order]
    doc, col = flat >> 3, flat & 7
    if len(col) and col.max() >= columns:
        return None
    new = np.ones(len(doc), dtype=bool)
    new[1:] = (term_of[1:] != term_of[:-1]) | (doc[1:] != doc[:-1])
    posting = np.cumsum(new) - 1
    postings = int(new.sum())
    counts = np.bincount(posting * columns + col, minlength=postings * columns).astype(
        np.int32).reshape(postings, columns)
    first = np.searchsorted(term_of[new], np.arange(len(chunk)), side="left")
    last = np.append(first[1:], postings)
    return doc[new], counts, [(term, int(a), int(b))
                              for (term, _, _), a, b in zip(chunk, first, last)]


def _row_sizes(con, table: str, columns: int, largest: int) -> np.ndarray | None:
    """Each row's size in tokens (its columns' sizes summed: xColumnSize(-1)), by rowid, from
    the table's docsize records (one varint per column), decoded with numpy."""
    sizes = np.zeros(largest + 1, dtype=np.float64)
    count, ids, blobs = con.execute(
        f"select count(*), group_concat(id, ',' order by id), group_concat(hex(sz), ''"
        f" order by id) from {table}_docsize").fetchone()
    if not count:
        return sizes
    raw = np.frombuffer(bytes.fromhex(blobs), dtype=np.uint8)
    ends = np.flatnonzero(raw < 0x80)
    if len(ends) != count * columns or ends[-1] != len(raw) - 1:
        return None          # not one varint per column
    varint = np.searchsorted(ends, np.arange(len(raw)))      # which varint each byte is in
    shift = 7 * (ends[varint] - np.arange(len(raw)))
    if shift.max() > 49:
        return None          # a size no table has
    values = np.bincount(varint, weights=((raw & 0x7F).astype(np.int64) << shift).astype(
        np.float64), minlength=len(ends))
    sizes[np.fromstring(ids, dtype=np.int64, sep=",")] = values.reshape(-1, columns).sum(axis=1)
    return sizes


def _varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers, one after the other (FTS5's records)."""
    out = []
    i = 0
    n = len(blob)
    while i < n:
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80 or i >= n:
                break
        out.append(value)
    return out
