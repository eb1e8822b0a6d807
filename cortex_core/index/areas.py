"""Areas: spectral clusters of memory items, kept with the index, and the `areas` query.

Recomputed in full when there are none, when the vectors or the [clusters] settings changed, or
when the number of items moved by more than `RECLUSTER_SHARE` since the last full run; otherwise
new items join the cluster of the nearest centroid, so a one-commit update stays cheap. Items are clustered on
their model vectors, or, without a model, on hashed TF-IDF vectors of their words. Structural links
join the segments of one commit and chain the items that touch the same file (each to its next
`FILE_CHAIN` items in time, weighted down for files that many items touch).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from cortex_core.config import ClusterSettings
from cortex_core.store.store import get_meta, set_meta
from cortex_core.memory.tokens import query_terms

RECLUSTER_SHARE = 0.10
FILE_CHAIN = 3
LEXICAL_DIM = 512
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
                 progress: Callable[[int, int, str], None] | None = None) -> int | None:
    """Keep clusters current. Returns the number of areas, or None when nothing was recomputed."""
    import numpy as np
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
        pending = con.execute("select count(*) from items where cluster is null").get
        if pending:
            ids, vectors = _vectors(con, basis, "where cluster is null")
            centroids = [(cid, np.frombuffer(blob, dtype=np.float32)) for cid, blob in
                         con.execute("select id, centroid from clusters order by id")]
            from cortex_core.memory.spectral import assign
            labels = assign(vectors, np.vstack([c for _, c in centroids]))
            with con:   # NO_AREA: an item with no vector to place is not tried again
                con.executemany("update items set cluster = ? where id = ?",
                                ((centroids[int(label)][0] if label >= 0 else NO_AREA, item)
                                 for item, label in zip(ids, labels)))
                _recount(con)
        return None
    if progress:
        progress(0, 1, "areas")
    ids, vectors = _vectors(con, basis, "")
    links = _links(con, {item: n for n, item in enumerate(ids)})
    from cortex_core.memory.spectral import SpectralSettings, distinctive_terms, spectral_clusters
    result = spectral_clusters(vectors, links, SpectralSettings(
        knn=settings.knn, min_clusters=min_areas(len(ids), settings),
        max_clusters=settings.max_clusters, max_items=settings.max_items))
    texts = dict(con.execute("select id, title || ' ' || body from items"))
    terms = distinctive_terms(result.labels, [_label_terms(texts[i]) for i in ids], top=5)
    _store(con, ids, result, terms, basis, count)
    if progress:
        progress(1, 1, "areas")
    return result.k


def _recount(con) -> None:
    """Each cluster's size and time span, from one grouped scan of the items: three correlated
    subqueries per cluster scanned every item 3k times, which made a one-commit update grow with
    the history (sympy: 67k items, 40 clusters)."""
    spans = {cid: (n, first, last) for cid, n, first, last in con.execute(
        "select cluster, count(*), min(time), max(time) from items where cluster >= 0"
        " group by cluster")}
    con.executemany("update clusters set size = ?, first_time = ?, last_time = ? where id = ?",
                    ((*spans.get(cid, (0, None, None)), cid)
                     for cid in [r[0] for r in con.execute("select id from clusters")]))


_REDACTED = re.compile(r"\[REDACTED:[^\]]*\]")
_HASHLIKE = re.compile(r"^(?=(?:[a-z]*\d){2})[0-9a-z]{7,}$")   # two digits or more, 7+ long


def _label_terms(text: str) -> list[str]:
    """Words that can label an area: no hashes, revision ids, numbers or redaction markers."""
    text = _REDACTED.sub(" ", text)
    return [t for t in query_terms(text) if len(t) > 2 and not _HASHLIKE.match(t)
            and not t.isdigit()]


def min_areas(items: int, settings: ClusterSettings) -> int:
    """The least number of areas the eigengap may choose: `min_clusters`, raised to √(items/50).
    The spectrum of commit text is nearly continuous: its largest gap is often the first one,
    which would split a whole history into two areas."""
    return min(settings.max_clusters, max(settings.min_clusters, round(math.sqrt(items / 50))))


def _has_vectors(con) -> bool:
    return bool(get_meta(con, "embed_model")) and con.execute(
        "select 1 from sqlite_master where name = 'item_vectors'").fetchone() is not None


def _vectors(con, basis: str, where: str):
    """(item ids, float32 matrix of unit rows) for the items selected by `where`."""
    import numpy as np
    rows = con.execute(f"select id, vector_id, title || ' ' || body from items {where}"
                       " order by id").fetchall()
    ids = [r[0] for r in rows]
    if basis.startswith("lexical"):
        # New items are weighted with the document frequencies of the last full run, so that
        # one new item is not a corpus of one (where every idf is zero).
        stored = get_meta(con, "areas_df") if where else None
        matrix, df = _lexical_vectors([r[2] for r in rows], json.loads(stored) if stored else None)
        if not where:
            set_meta(con, "areas_df", json.dumps(df))
        return ids, matrix
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
    return ids, matrix


def _lexical_vectors(texts: list[str], df: dict | None = None):
    """Hashed TF-IDF vectors (sublinear tf; idf per hash slot, from `df` = {"n": items, "slots":
    [document frequency per slot]} or from these texts), unit length; and the df used."""
    import numpy as np
    docs = [Counter(_stable_hash(t) % LEXICAL_DIM for t in query_terms(text)) for text in texts]
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
            matrix[row, slot] = (1 + math.log(tf)) * math.log((1 + n) / (1 + slots[slot]))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix, df


def _stable_hash(term: str) -> int:
    import zlib
    return zlib.crc32(term.encode("utf-8"))


def _links(con, index: dict[int, int]) -> list[tuple[int, int, float]]:
    links: list[tuple[int, int, float]] = []
    by_commit: dict[int, list[int]] = {}
    for item, commit_id in con.execute("select id, commit_id from items where commit_id is not null"):
        if item in index:
            by_commit.setdefault(commit_id, []).append(index[item])
    for members in by_commit.values():
        links.extend((a, b, 1.0) for a, b in zip(members, members[1:]))
    by_file: dict[int, list[int]] = {}
    for item, file_id in con.execute("select x.item_id, x.file_id from item_files x"
                                     " join items i on i.id = x.item_id order by i.time"):
        if item in index:
            by_file.setdefault(file_id, []).append(index[item])
    for members in by_file.values():
        weight = 1.0 / (1.0 + math.log(len(members)))
        for n, a in enumerate(members):
            links.extend((a, b, weight) for b in members[n + 1:n + 1 + FILE_CHAIN])
    return links


def _store(con, ids: list[int], result, terms: list[list[str]], basis: str, count: int) -> None:
    import numpy as np
    with con:
        con.execute("update items set cluster = null")
        con.execute("delete from clusters")
        con.executemany("update items set cluster = ? where id = ?",
                        ((int(label) if label >= 0 else NO_AREA, item)
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
        " order by n desc, max(i.time) desc limit ?", (cluster, top)).fetchall()
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
