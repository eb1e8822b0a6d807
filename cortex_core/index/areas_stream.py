"""What the areas step reads of every item, a block at a time: rows, vectors, the lexical basis's
document frequencies, the terms that label areas, and the structural links.

Each reader holds one block (`BLOCK` items, or about as many links) and what it adds up, never
every item's row at once, so that areas.py and areas_sample.py can bound the step's memory by
`[clusters] max_items` and the block rather than by the history. Counts gathered block by block
are the same numbers as over all items at once (`document_frequencies`, `count_terms`); the links
are those of areas.py's `_links` (which the in-memory path keeps, to keep its results), ordered by
(time, id) within a file where `_links` takes SQLite's order for equal times.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from collections import Counter, deque
from collections.abc import Iterable, Iterator

from cortex_core.memory.tokens import query_terms
from cortex_core.store.store import get_meta

BLOCK = 4096             # items per block read from SQLite (one block's vectors: 2-8 MB)
LEXICAL_DIM = 512
FILE_CHAIN = 3


# -- items, a block at a time ------------------------------------------------------------------


def item_blocks(con, block: int = BLOCK) -> Iterator[list[tuple[int, int | None, str]]]:
    """(id, vector_id, text) of every item, by id, `block` rows at a time."""
    cursor = con.execute("select id, vector_id, title || ' ' || body from items order by id")
    rows: list[tuple[int, int | None, str]] = []
    for row in cursor:
        rows.append(row)
        if len(rows) >= block:
            yield rows
            rows = []
    if rows:
        yield rows


def rows_of(con, ids: Iterable[int], block: int = BLOCK) -> Iterator[list[tuple[int, int | None, str]]]:
    """(id, vector_id, text) of the given items (ascending ids), `block` rows at a time."""
    ids = [int(i) for i in ids]
    for start in range(0, len(ids), block):
        chunk = ids[start:start + block]
        yield con.execute("select id, vector_id, title || ' ' || body from items where id in"
                          f" ({','.join('?' * len(chunk))}) order by id", chunk).fetchall()


def block_vectors(con, basis: str, rows, df: dict | None):
    """The float32 vectors of a block of rows: hashed TF-IDF with `df` (lexical basis), else the
    stored model vectors (zero for an item without one)."""
    import numpy as np
    if basis.startswith("lexical"):
        return lexical_vectors([r[2] for r in rows], df)[0]
    wanted = sorted({r[1] for r in rows if r[1]})
    by_vid = dict(con.execute("select rowid, embedding from item_vectors where rowid in"
                              f" ({','.join('?' * len(wanted))})", wanted)) if wanted else {}
    matrix = np.zeros((len(rows), vector_dim(con, basis)), dtype=np.float32)
    for n, row in enumerate(rows):
        blob = by_vid.get(row[1])
        if blob is not None:
            matrix[n] = np.frombuffer(blob, dtype=np.float32)
    return matrix


def vector_dim(con, basis: str) -> int:
    return LEXICAL_DIM if basis.startswith("lexical") else int(get_meta(con, "embed_dim"))


# -- the lexical basis -------------------------------------------------------------------------


def lexical_vectors(texts: list[str], df: dict | None = None):
    """Hashed TF-IDF vectors (sublinear tf; idf per hash slot, from `df` = {"n": items, "slots":
    [document frequency per slot]} or from these texts), unit length; and the df used."""
    import numpy as np
    docs = [term_slots(text) for text in texts]
    if df is None:
        slots = [0] * LEXICAL_DIM
        for doc in docs:
            for slot in doc:
                slots[slot] += 1
        df = {"n": len(docs), "slots": slots}
    n, slots = max(1, df["n"]), df["slots"]
    matrix = np.zeros((len(docs), LEXICAL_DIM), dtype=np.float32)
    for row, doc in enumerate(docs):
        for slot, tf in doc.items():
            matrix[row, slot] = tf_idf(tf, n, slots[slot])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix, df


def term_slots(text: str) -> Counter:
    """A text's terms by hash slot: slot -> how many times."""
    return Counter(_slot(t) for t in query_terms(text, keep_tails=True))


def tf_idf(tf: int, n: int, df: int) -> float:
    """The weight of a slot `tf` times in a text, in `df` of `n` texts (before scaling the
    vector to unit length)."""
    return (1 + math.log(tf)) * math.log((1 + n) / (1 + df))


def document_frequencies(con, block: int = BLOCK):
    """`lexical_vectors`' df over every item, counted a block at a time (the same numbers); and
    beside the items (by id) a key of each one's vector: equal for equal hashed term counts
    (which give equal vectors), -1 for an item without terms (an all-zero vector)."""
    import numpy as np
    slots, n, keys = [0] * LEXICAL_DIM, 0, []
    for rows in item_blocks(con, block):
        block_keys = []
        for _, _, text in rows:
            doc = Counter(_slot(t) for t in query_terms(text, keep_tails=True))
            for slot in doc:
                slots[slot] += 1
            # CPython's hash is never -1: that stays the mark of an all-zero vector.
            block_keys.append(hash(tuple(sorted(doc.items()))) if doc else -1)
        keys.append(np.array(block_keys, dtype=np.int64))
        n += len(rows)
    return {"n": n, "slots": slots}, _joined(keys)


def model_vector_keys(con, block: int = BLOCK):
    """Beside the items (by id), a key of each one's stored model vector: equal for equal
    vectors, -1 for none or an all-zero one. Reads the vectors once, one block at a time."""
    import numpy as np
    vids, hashes = [], []
    cursor = con.execute("select rowid, embedding from item_vectors order by rowid")
    while chunk := [(vid, bytes(blob)) for vid, blob in itertools.islice(cursor, block)]:
        vids.append(np.array([vid for vid, _ in chunk], dtype=np.int64))
        hashes.append(np.array([hash(b) if b.strip(b"\0") else -1 for _, b in chunk],
                               dtype=np.int64))
    vid_of, key_of = _joined(vids), _joined(hashes)
    item_vids = np.fromiter((r[0] for r in con.execute(
        "select coalesce(vector_id, -1) from items order by id")), dtype=np.int64)
    at = positions(vid_of, item_vids)
    return np.where(at >= 0, key_of[np.maximum(at, 0)] if len(key_of) else -1, -1)


def _joined(parts):
    import numpy as np
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def stored_df(con) -> dict | None:
    stored = get_meta(con, "areas_df")
    return json.loads(stored) if stored else None


def _slot(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) % LEXICAL_DIM


# -- labels of areas ---------------------------------------------------------------------------


_REDACTED = re.compile(r"\[REDACTED:[^\]]*\]")
_HASHLIKE = re.compile(r"^(?=(?:[a-z]*\d){2})[0-9a-z]{7,}$")   # two digits or more, 7+ long


def label_terms(text: str) -> list[str]:
    """Words that can label an area: no hashes, revision ids, numbers or redaction markers."""
    text = _REDACTED.sub(" ", text)
    return [t for t in query_terms(text, keep_tails=True) if len(t) > 2 and not _HASHLIKE.match(t)
            and not t.isdigit()]


def count_terms(con, ids, labels, block: int = BLOCK):
    """`TermCounts` of every item, a block at a time; `ids` ascending, `labels` beside them. An
    item not among `ids` (a note written while the step runs) is left out: it is placed later."""
    import numpy as np

    from cortex_core.memory.spectral import TermCounts
    counts = TermCounts()
    ids, labels = np.asarray(ids), np.asarray(labels)
    for rows in item_blocks(con, block):
        found = np.asarray([r[0] for r in rows], dtype=np.int64)
        at = np.searchsorted(ids, found)
        known = at < len(ids)
        known[known] = ids[at[known]] == found[known]
        counts.add(labels[at[known]], [label_terms(r[2]) for r, k in zip(rows, known) if k])
    return counts


# -- structural links, streamed ----------------------------------------------------------------


def link_chunks(con, block: int = BLOCK):
    """The structural links (module docstring of areas.py) as (item ids, item ids, weights)
    arrays of about `block` links each: the segments of a commit in a chain, and each item to
    the next `FILE_CHAIN` items (by time, then id) that touch the same file, weighted
    1 / (1 + ln(items touching the file)). Holds one chunk and `FILE_CHAIN` ids at a time."""
    yield from _chunked(_commit_links(con), block)
    yield from _chunked(_file_links(con), block)


def _commit_links(con) -> Iterator[tuple[int, int, float]]:
    previous, previous_commit = None, None
    for item, commit_id in con.execute("select id, commit_id from items where commit_id is not null"
                                       " order by commit_id, id"):
        if commit_id == previous_commit:
            yield previous, item, 1.0
        previous, previous_commit = item, commit_id


def _file_links(con) -> Iterator[tuple[int, int, float]]:
    recent: deque[int] = deque(maxlen=FILE_CHAIN)
    current = None
    for file_id, item, members in con.execute(
            "select x.file_id, x.item_id, count(*) over (partition by x.file_id) from item_files x"
            " join items i on i.id = x.item_id order by x.file_id, i.time, i.id"):
        if file_id != current:
            recent.clear()
            current = file_id
        weight = 1.0 / (1.0 + math.log(members))
        for earlier in recent:
            yield earlier, item, weight
        recent.append(item)


def _chunked(links: Iterator[tuple[int, int, float]], block: int):
    import numpy as np
    a: list[int] = []
    b: list[int] = []
    w: list[float] = []
    for i, j, weight in links:
        a.append(i)
        b.append(j)
        w.append(weight)
        if len(a) >= block:
            yield np.array(a, dtype=np.int64), np.array(b, dtype=np.int64), np.array(w)
            a, b, w = [], [], []
    if a:
        yield np.array(a, dtype=np.int64), np.array(b, dtype=np.int64), np.array(w)


def positions(sorted_ids, ids):
    """Where each of `ids` is in `sorted_ids` (int64), -1 where it is not there."""
    import numpy as np
    sorted_ids, ids = np.asarray(sorted_ids), np.asarray(ids)
    if not len(sorted_ids):
        return np.full(len(ids), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return np.where(sorted_ids[at] == ids, at, -1).astype(np.int64)
