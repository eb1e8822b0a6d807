"""Areas: spectral clusters of memory items, kept with the index, and the `areas` query.

Recomputed in full when there are none, when the vectors or the [clusters] settings changed, or
when the number of items moved by more than `RECLUSTER_SHARE` since the last full run; otherwise
new items join the cluster of the nearest centroid, so a one-commit update stays cheap. Items are clustered on
their model vectors, or, without a model, on hashed TF-IDF vectors of their words. Structural links
join the segments of one commit and chain the items that touch the same file (each to its next
`FILE_CHAIN` items in time, weighted down for files that many items touch).

Memory: up to `[clusters] max_items` items, a full recompute holds every item's vector and link
at once (bounded by max_items); beyond it, areas_sample.py clusters a sample of max_items and
labels the other items block by block, so the step's memory is bounded by max_items and
`BLOCK`, not by the number of items (what still grows with them is listed there). Either way
the labels of areas count terms a block of items at a time, and new items of an incremental
update are placed a block at a time.
"""

from __future__ import annotations

import array
import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from cortex_core.config import ClusterSettings
from cortex_core.index.areas_stream import (BLOCK, FILE_CHAIN, LEXICAL_DIM, block_vectors,
                                            count_terms, lexical_vectors, rows_of, stored_df,
                                            term_slots, tf_idf)
from cortex_core.store.store import get_meta, set_meta

RECLUSTER_SHARE = 0.10
# New items of the lexical basis placed in Python at most, without numpy (an update's: importing
# numpy cost a one-commit update of sympy 0.15 s, a fifth of it; placing an item in Python costs
# about 60 µs); the least gap between an item's nearest two centroids that tells which is nearer
# in float32 too, and the shortest centroid it places against, else numpy does
# (nearest_in_python). Over sympy's 67,000 items, 0.2% fell within the gap.
PLACED_IN_PYTHON = 256
PLACE_MARGIN = 1e-4
SHORT_CENTROID = 1e-6   # spectral.ZERO_NORM, below which assign leaves a centroid out, is 1e-12
MIN_ITEMS = 8            # fewer items make no meaningful areas
NO_AREA = -1             # items.cluster of an item with nothing to cluster on (no words, no vector)


@dataclass(frozen=True)
class Area:
    id: int
    size: int
    label: str
    terms: tuple[str, ...]
    paths: tuple[str, ...]     # the hottest paths: most touched by the area's items, recent first
    first_time: int | None
    last_time: int | None
    commits: int
    docs: int
    notes: int


# -- computing ---------------------------------------------------------------------------------


def update_areas(con, settings: ClusterSettings, embedder,
                 progress: Callable[[int, int, str], None] | None = None,
                 block: int = BLOCK) -> int | None:
    """Keep clusters current. Returns the number of areas, or None when nothing was recomputed.
    `block`: items read from the store at a time where the step streams them."""
    # What the clusters were computed from and with: a change of either recomputes them.
    basis = (f"model:{get_meta(con, 'embed_model')}:{get_meta(con, 'embed_dim')}"
             if _has_vectors(con) else "lexical") + \
        f"|{settings.knn},{settings.min_clusters},{settings.max_clusters},{settings.max_items}|3"
    count = con.execute("select count(*) from items").get
    last = int(get_meta(con, "areas_items", "0") or 0)
    have = con.execute("select count(*) from clusters").get
    full = (not have or get_meta(con, "areas_basis") != basis
            or abs(count - last) > RECLUSTER_SHARE * max(last, 1))
    if count < MIN_ITEMS:
        with con:
            con.execute("update items set cluster = null")
            con.execute("delete from clusters")
        return 0
    if not full:
        _place_new(con, basis, block)
        return None
    if progress:
        progress(0, 1, "areas")
    from cortex_core.memory.spectral import SpectralSettings
    spectral = SpectralSettings(knn=settings.knn, min_clusters=min_areas(count, settings),
                                max_clusters=settings.max_clusters, max_items=settings.max_items)
    # Every read of the computation in one snapshot: an item written meanwhile (a note's, from
    # another connection) was read by some of its passes and not others (an IndexError, or its
    # label given to the newest item read). Nothing is written until _store, which leaves such
    # an item to the next run's placement.
    snapshot = not con.in_transaction
    if snapshot:
        con.execute("begin")
    try:
        if count > settings.max_items:
            from cortex_core.index.areas_sample import recluster_sampled
            ids, result, terms, df = recluster_sampled(con, basis, spectral, block)
        else:
            ids, result, terms, df = _recluster_exactly(con, basis, spectral, block)
        # What each note's item held when read: a note superseded meanwhile deletes its item
        # and writes its successor's, which takes the same id when it was the newest (SQLite
        # reuses the largest rowid); the successor must not get the area computed for the text
        # it replaced. Other items are written by the index run only, never meanwhile.
        notes = dict(con.execute("select id, text_hash from items where kind = 'note'"))
    finally:
        # A read: nothing to write. An I/O error or a full disk has rolled it back already,
        # and its error is the one to raise.
        if snapshot and con.in_transaction:
            con.execute("commit")
    _store(con, ids, notes, result, terms, basis, count, df)
    if progress:
        progress(1, 1, "areas")
    return result.k


def _recluster_exactly(con, basis: str, spectral, block: int):
    """Every item's vector and links in memory (at most max_items of them)."""
    from cortex_core.memory.spectral import spectral_clusters
    ids, vectors, df = _vectors(con, basis)
    links = _links(con, {item: n for n, item in enumerate(ids)})
    result = spectral_clusters(vectors, links, spectral)
    del vectors, links
    terms = count_terms(con, ids, result.labels, block).distinctive(top=5)
    return ids, result, terms, df


def _place_new(con, basis: str, block: int) -> None:
    """Items without a cluster join the nearest centroid, a block at a time. New items are
    weighted with the document frequencies of the last full run (lexical basis), so that one
    new item is not a corpus of one (where every idf is zero)."""
    pending = [r[0] for r in con.execute(   # through items_cluster: the new items alone
        "select id from items where cluster is null order by id")]
    if not pending:   # items may have gone, or changed their time (a document's kept sections)
        with con:
            _recount(con)
        return
    centroids = con.execute("select id, centroid from clusters order by id").fetchall()
    df = stored_df(con) if basis.startswith("lexical") else None
    with con:   # NO_AREA: an item with no vector to place is not tried again
        for rows in rows_of(con, pending, block):
            labels = _nearest(con, basis, rows, df, [blob for _, blob in centroids])
            con.executemany("update items set cluster = ? where id = ?",
                            ((centroids[int(label)][0] if label >= 0 else NO_AREA, row[0])
                             for row, label in zip(rows, labels)))
        _recount(con)


def _nearest(con, basis: str, rows, df: dict | None, centroids: list[bytes]):
    """The index of each row's nearest centroid (spectral.assign), -1 for a row without a
    vector: in Python for a few rows of the lexical basis, else with numpy, the same labels."""
    if df is not None and len(rows) <= PLACED_IN_PYTHON:
        labels = nearest_in_python([r[2] for r in rows], df, centroids)
        if labels is not None:
            return labels
    import numpy as np

    from cortex_core.memory.spectral import assign
    matrix = np.vstack([np.frombuffer(blob, dtype=np.float32) for blob in centroids])
    return assign(block_vectors(con, basis, rows, df), matrix)


def nearest_in_python(texts: list[str], df: dict, centroids: list[bytes]) -> list[int] | None:
    """What spectral.assign answers for these texts' `lexical_vectors` (with `df`), computed in
    float64 without numpy, or None when it cannot be sure to. assign's similarities are float32
    dot products of unit vectors of LEXICAL_DIM floats: each is within LEXICAL_DIM · 2⁻²⁴ ≈
    3.1·10⁻⁵ of the exact one (Higham, "Accuracy and Stability of Numerical Algorithms", 2002,
    §3.1, in any order of summation), plus ~10⁻⁶ for rounding the vectors, so two of them are
    ordered as the exact ones are when those differ by more than 6.4·10⁻⁵; PLACE_MARGIN is
    1.5 times that. Where an item's nearest two centroids are closer, or a centroid is one
    that assign would not take as it is (not LEXICAL_DIM finite floats, almost zero), None:
    numpy answers."""
    known: list[tuple[list[float], float]] = []   # (centroid, its length)
    for blob in centroids:
        centroid = array.array("f", blob).tolist() if isinstance(blob, bytes) else []
        norm = math.hypot(*centroid)   # not finite when a value is not
        if len(centroid) != LEXICAL_DIM or not math.isfinite(norm) or norm < SHORT_CENTROID:
            return None
        known.append((centroid, norm))
    if not known:
        return None
    n, slots = max(1, df["n"]), df["slots"]
    labels = []
    for text in texts:
        weights = {slot: w for slot, tf in term_slots(text).items()
                   if (w := tf_idf(tf, n, slots[slot]))}
        if not weights:
            labels.append(-1)
            continue
        length = math.hypot(*weights.values())
        sims = sorted(((sum(w * centroid[slot] for slot, w in weights.items())
                        / (length * norm), k) for k, (centroid, norm) in enumerate(known)),
                      reverse=True)
        if len(sims) > 1 and sims[0][0] - sims[1][0] <= PLACE_MARGIN:
            return None
        labels.append(sims[0][1])
    return labels


def _recount(con) -> None:
    """Each cluster's size and time span, from one grouped scan of the index items_cluster:
    three correlated subqueries per cluster scanned every item 3k times, which made a one-commit
    update grow with the history (sympy: 67k items, 40 clusters), and a scan of the items
    themselves still read every row (40 ms; 10 ms the index)."""
    spans = {cid: (n, first, last) for cid, n, first, last in con.execute(
        "select cluster, count(*), min(time), max(time) from items where cluster >= 0"
        " group by cluster")}
    con.executemany("update clusters set size = ?, first_time = ?, last_time = ? where id = ?",
                    ((*spans.get(cid, (0, None, None)), cid)
                     for cid in [r[0] for r in con.execute("select id from clusters")]))


def min_areas(items: int, settings: ClusterSettings) -> int:
    """The least number of areas the eigengap may choose: `min_clusters`, raised to √(items/50).
    The spectrum of commit text is nearly continuous: its largest gap is often the first one,
    which would split a whole history into two areas."""
    return min(settings.max_clusters, max(settings.min_clusters, round(math.sqrt(items / 50))))


def _has_vectors(con) -> bool:
    return bool(get_meta(con, "embed_model")) and con.execute(
        "select 1 from sqlite_master where name = 'item_vectors'").fetchone() is not None


def _vectors(con, basis: str):
    """(item ids, float32 matrix, lexical df or None) of every item: at most max_items."""
    import numpy as np
    rows = con.execute("select id, vector_id, title || ' ' || body from items order by id").fetchall()
    ids = [r[0] for r in rows]
    if basis.startswith("lexical"):
        matrix, df = lexical_vectors([r[2] for r in rows])
        return ids, matrix, df
    wanted = {r[1] for r in rows if r[1]}
    dim = int(get_meta(con, "embed_dim"))
    by_vid = {}
    for vid, blob in con.execute("select rowid, embedding from item_vectors"):
        if vid in wanted:
            by_vid[vid] = np.frombuffer(blob, dtype=np.float32)
    matrix = np.zeros((len(rows), dim), dtype=np.float32)
    for n, (_, vid, _) in enumerate(rows):
        if vid in by_vid:
            matrix[n] = by_vid[vid]
    return ids, matrix, None


def _links(con, index: dict[int, int]) -> list[tuple[int, int, float]]:
    links: list[tuple[int, int, float]] = []
    by_commit: dict[int, list[int]] = {}
    for item, commit_id in con.execute("select id, commit_id from items where commit_id is not null"):
        if item in index:
            by_commit.setdefault(commit_id, []).append(index[item])
    for members in by_commit.values():
        links.extend((a, b, 1.0) for a, b in zip(members, members[1:]))
    by_file: dict[int, list[int]] = {}
    # Ties in time by item, then path: the chains must not follow the ids of files, which an
    # index run gives in the order its workers deliver commits.
    for item, file_id in con.execute("select x.item_id, x.file_id from item_files x"
                                     " join items i on i.id = x.item_id join files f"
                                     " on f.id = x.file_id order by i.time, i.id, f.path"):
        if item in index:
            by_file.setdefault(file_id, []).append(index[item])
    for members in by_file.values():
        weight = 1.0 / (1.0 + math.log(len(members)))
        for n, a in enumerate(members):
            links.extend((a, b, weight) for b in members[n + 1:n + 1 + FILE_CHAIN])
    return links


def _store(con, ids, notes: dict[int, str], result, terms: list[list[str]], basis: str,
           count: int, df: dict | None) -> None:
    """Labels, clusters and what they were computed from, in one transaction; `notes`: the
    text hash of each note's item as read (one that holds another text now is left to the next
    run's placement); `df`: the lexical document frequencies that new items will be weighted
    with."""
    import numpy as np
    with con:
        if df is not None:
            set_meta(con, "areas_df", json.dumps(df))
        con.execute("update items set cluster = null")
        con.execute("delete from clusters")
        con.executemany("update items set cluster = ?1 where id = ?2"
                        " and (?3 is null or text_hash = ?3)",
                        ((int(label) if label >= 0 else NO_AREA, int(item), notes.get(int(item)))
                         for item, label in zip(ids, result.labels)))
        for cid in range(result.k):
            span = con.execute("select count(*), min(time), max(time) from items where cluster = ?",
                               (cid,)).fetchone()
            if not span[0]:
                continue
            words = terms[cid] if cid < len(terms) else []
            paths = _hot_paths(con, cid)
            label = " · ".join(words[:3]) or (paths[0] if paths else f"area {cid}")
            con.execute("insert into clusters(id, size, label, terms, paths, first_time, last_time,"
                        " centroid) values (?,?,?,?,?,?,?,?)",
                        (cid, span[0], label, json.dumps(words), json.dumps(paths), span[1],
                         span[2], np.asarray(result.centroids[cid], dtype=np.float32).tobytes()))
        set_meta(con, "areas_basis", basis)
        set_meta(con, "areas_items", str(count))
        set_meta(con, "areas_eigengap", f"{result.eigengap:.4f}")


def _hot_paths(con, cluster: int, top: int = 5) -> list[str]:
    rows = con.execute(
        "select f.path, count(*) as n, max(i.time) from items i join item_files x on x.item_id = i.id"
        " join files f on f.id = x.file_id where i.cluster = ? group by f.id"
        " order by n desc, max(i.time) desc, f.path limit ?", (cluster, top)).fetchall()
    return [r[0] for r in rows]


# -- the query ---------------------------------------------------------------------------------


def areas(con, top: int | None = None) -> list[Area]:
    """Areas, largest first."""
    rows = con.execute("select id, size, label, terms, paths, first_time, last_time from clusters"
                       " order by size desc, id").fetchall()
    kinds: dict[int, Counter] = {}
    for cluster, kind, n in con.execute("select cluster, kind, count(*) from items"
                                        " where cluster >= 0 group by cluster, kind"):
        kinds.setdefault(cluster, Counter())[kind] = n
    out = []
    for cid, size, label, terms, paths, first, last in rows[:top] if top else rows:
        k = kinds.get(cid, Counter())
        out.append(Area(cid, size, label, tuple(json.loads(terms)), tuple(json.loads(paths)),
                        first, last, k["commit"], k["doc"], k["note"]))
    return out
