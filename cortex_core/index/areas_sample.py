"""Areas beyond `[clusters] max_items`: cluster a sample exactly, label the rest block by block.

`update_areas` (areas.py) clusters up to `max_items` items exactly, all of them in memory. Beyond
that, `recluster_sampled` clusters a seeded random sample of `max_items` distinct vectors
exactly (`spectral_clusters`: their vectors and the links among them in memory) and reads every other
item from SQLite in blocks of `BLOCK` ids (areas_stream.py), labelling each block with
spectral.py's out-of-sample rule (the weighted vote of its `knn` nearest sampled items plus its
links into the sample, `knn_votes`) before it reads the next. What a full recompute holds at
once is then:

- the sample: its vectors (up to twice max_items rows: a vector shared by several items is
  sampled with two of them, for its self-loop), its links (among its items and into the rest),
  its clustering;
- one block: its rows, texts and vectors;
- per cluster: the sum of its unit vectors (for the centroid) and its term counts
  (`TermCounts`: they grow with the vocabulary, not with the items);
- per item: a few arrays of one number an item (ids, labels, their renumbering by size, and
  while the sample is drawn a key of its vector: ~50 bytes an item at the peak, 3 MB at 67k
  items), because the sample is drawn among distinct vectors, clusters are numbered by size only
  once every item has one, and an item left without a vote follows its links to labelled items
  anywhere in the history;
- SQLite's sorts for the links (in its own page cache, spilled to temporary files).

The passes over the store: the lexical document frequencies (no model) or the stored vectors
(a key of each), the sample, the links once, every item once (a sampled item keeps its label, the others vote; vectors summed
and terms counted by cluster), the links again for the items with no vote (all-zero vectors
outside the sample, one hop per pass, as `_extend` does), and the items labelled last once more.

Where this differs from `spectral_clusters` given every item at once (which samples the same way
above `max_items`, and was what `update_areas` did): the sample is drawn as there (max_items
distinct non-zero vectors in the order of their first item, the same generator and seed), with
distinct vectors told apart by a hash of the stored vector (model) or of the hashed term counts
(lexical); all-zero vectors with links, which the in-memory path also drew, join through their
links afterwards, so the draw is not the same one when there are such items; a sampled vector
keeps the links of its first two items only (a graph node kept those of all its items); two
identical vectors outside the sample are not merged, so different links can give them
different labels; links are ordered by (time, id) within a file; and an item with a vector that
no sampled item resembles and no link reaches takes the nearest of the centroids of the sample
and of the voted items. docs/numbers.md ("Bounded memory") compares both with the exact
clustering of every item on scrapy.
"""

from __future__ import annotations

import numpy as np

from cortex_core.index.areas_stream import (BLOCK, block_vectors, document_frequencies,
                                            item_blocks, label_terms, link_chunks,
                                            model_vector_keys, positions, rows_of, vector_dim)
from cortex_core.memory.spectral import (ZERO_NORM, SpectralResult, SpectralSettings, TermCounts,
                                         assign, by_size, distinct_rows, knn_votes,
                                         spectral_clusters, unit_rows)


def recluster_sampled(con, basis: str, settings: SpectralSettings, block: int = BLOCK):
    """Clusters of every item, from an exact clustering of a sample of `settings.max_items`.
    Returns (item ids ascending, SpectralResult for them, each cluster's distinctive terms, the
    lexical df or None)."""
    if basis.startswith("lexical"):
        df, keys = document_frequencies(con, block)
    else:
        df, keys = None, model_vector_keys(con, block)
    ids = _ids(con)
    sample = _draw(ids, keys, settings)
    del keys
    x, has_vector = _unit_vectors_of(con, basis, sample, df, block)
    inside, crossing = _sample_links(con, sample, block)
    # max_items distinct vectors: exact
    exact = spectral_clusters(x, inside, settings, unit=(x, has_vector))
    labels = np.full(len(ids), -1, dtype=np.int64)
    tally = _Tally(exact.k, x.shape[1])
    voters = _Voters(x, has_vector, exact.labels, exact.k)
    cross = _cross_votes(crossing, exact.labels, settings.structural_weight)
    pending = _label_all(con, basis, df, ids, labels, sample, exact.labels, voters, cross,
                         tally, settings, block)
    if len(pending):
        _follow_links(con, ids, labels, exact.k, settings.structural_weight, block)
        _label_last(con, basis, df, ids, labels, pending, tally, block)
    final = by_size(labels)
    mapping = _renumbering(labels, final)
    result = SpectralResult(labels=final.astype(np.int32), k=len(mapping[mapping >= 0]),
                            eigenvalues=exact.eigenvalues, eigengap=exact.eigengap,
                            sampled=len(sample), centroids=tally.centroids(mapping))
    return ids, result, tally.terms(mapping), df


# -- the sample --------------------------------------------------------------------------------


def _ids(con) -> np.ndarray:
    return np.fromiter((r[0] for r in con.execute("select id from items order by id")),
                       dtype=np.int64)


def _draw(ids: np.ndarray, keys: np.ndarray, settings: SpectralSettings) -> np.ndarray:
    """The sampled item ids, ascending: a seeded random sample of max_items distinct non-zero
    vectors (`keys`, beside `ids`), drawn as `spectral_clusters` draws its graph nodes (in the
    order of their first item, with the same generator and seed), each by its first item, plus
    a second item for a vector that several items share, so that its node gets the same
    self-loop. (The in-memory path also drew all-zero vectors that have links; here those join
    through their links afterwards.)"""
    first, second = _distinct(keys)
    chosen = np.arange(len(first))
    if len(first) > settings.max_items:
        rng = np.random.default_rng(settings.seed)
        chosen = np.sort(rng.choice(len(first), size=settings.max_items, replace=False))
    twins = second[chosen]
    return ids[np.union1d(first[chosen], twins[twins >= 0])]


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each distinct key but -1, in the order of its first position: that position, and
    its second one (-1 when the key occurs once)."""
    where = np.flatnonzero(keys != -1)
    if not len(where):
        return where, where
    order = np.lexsort((where, keys[where]))      # by key, then position
    by_key, at = keys[where][order], where[order]
    starts = np.flatnonzero(np.r_[True, by_key[1:] != by_key[:-1]])
    ends = np.r_[starts[1:], len(at)]
    first = at[starts]
    second = np.where(ends - starts > 1, at[np.minimum(starts + 1, len(at) - 1)], -1)
    appearance = np.argsort(first, kind="stable")
    return first[appearance], second[appearance]


def _unit_vectors_of(con, basis: str, ids: np.ndarray, df,
                     block: int) -> tuple[np.ndarray, np.ndarray]:
    """`unit_rows` of the items' vectors, filled a block at a time into one array: stacking the
    blocks, then scaling the stack, held the vectors three times over."""
    x = np.zeros((len(ids), vector_dim(con, basis)), dtype=np.float32)
    has_vector = np.zeros(len(ids), dtype=bool)
    filled = 0
    for rows in rows_of(con, ids, block):
        part, has = unit_rows(block_vectors(con, basis, rows, df))
        x[filled:filled + len(part)], has_vector[filled:filled + len(part)] = part, has
        filled += len(part)
    return x[:filled], has_vector[:filled]


def _sample_links(con, sample: np.ndarray, block: int):
    """One pass over the links: those among sampled items, as (position, position, weight)
    rows, and those from an item outside the sample into it, as (item id, position, weight)."""
    inside, crossing = [], []
    for a, b, w in link_chunks(con, block):
        pa, pb = positions(sample, a), positions(sample, b)
        both = (pa >= 0) & (pb >= 0)
        inside.append(np.column_stack([pa[both], pb[both], w[both]]))
        for item, into in ((b, pa), (a, pb)):
            cross = (into >= 0) & (positions(sample, item) < 0)
            crossing.append((item[cross], into[cross], w[cross]))
    inside_links = np.vstack(inside) if inside else np.zeros((0, 3))
    return inside_links, crossing


def _cross_votes(crossing, sample_labels: np.ndarray, structural_weight: float):
    """The votes of links into the sample: (item ids ascending, label, weight) arrays."""
    items = np.concatenate([c[0] for c in crossing]) if crossing else np.zeros(0, np.int64)
    into = np.concatenate([c[1] for c in crossing]) if crossing else np.zeros(0, np.int64)
    weights = np.concatenate([c[2] for c in crossing]) if crossing else np.zeros(0)
    labels = sample_labels[into].astype(np.int64) if len(into) else np.zeros(0, np.int64)
    keep = labels >= 0
    order = np.argsort(items[keep], kind="stable")
    return (items[keep][order], labels[keep][order],
            (weights[keep] * structural_weight)[order])


class _Voters:
    """The sample's distinct labelled vectors; an identical vector outside the sample takes its
    label directly (in the in-memory path it would be the same graph node)."""

    def __init__(self, x: np.ndarray, has_vector: np.ndarray, labels: np.ndarray, k: int):
        self.k = k
        rows = distinct_rows(x, has_vector)
        rows = rows[labels[rows] >= 0]
        # Every row distinct and labelled (the usual case): x itself, not a copy of it.
        self.x = x if len(rows) == len(x) else x[rows]
        self.labels = labels[rows].astype(np.int64)
        self._by_hash = {hash(row.tobytes()): n for n, row in enumerate(self.x)}

    def same_as(self, rows: np.ndarray, has_vector: np.ndarray) -> np.ndarray:
        """The label of the voter identical to each row, -1 where there is none."""
        out = np.full(len(rows), -1, dtype=np.int64)
        for i in np.flatnonzero(has_vector):
            n = self._by_hash.get(hash(rows[i].tobytes()))
            if n is not None and np.array_equal(self.x[n], rows[i]):
                out[i] = self.labels[n]
        return out


# -- every item, a block at a time -------------------------------------------------------------


class _Tally:
    """Per provisional cluster: the sum of its items' unit vectors and its term counts."""

    def __init__(self, k: int, dim: int):
        self.sums = np.zeros((k, dim))
        self.counts = TermCounts()

    def add(self, x: np.ndarray, labels: np.ndarray, texts: list[str]) -> None:
        member = labels >= 0
        np.add.at(self.sums, labels[member], x[member].astype(np.float64))
        self.counts.add(labels, [label_terms(t) for t in texts])

    def centroids(self, mapping: np.ndarray | None = None) -> np.ndarray:
        """Unit-length centroids, renumbered by `mapping` (old label -> new, -1: gone)."""
        sums = self.sums if mapping is None else _renumbered(self.sums, mapping)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return (sums / np.where(norms > ZERO_NORM, norms, 1.0)).astype(np.float32)

    def terms(self, mapping: np.ndarray) -> list[list[str]]:
        return self.counts.renumbered(mapping.tolist()).distinctive(top=5)


def _label_all(con, basis, df, ids, labels, sample, sample_labels, voters, cross, tally,
               settings, block) -> np.ndarray:
    """Every item once, in blocks: a sampled item keeps its label, another takes its vote.
    Fills `labels` (beside `ids`) and `tally`; returns the ids left without a label."""
    pending = []
    for rows in item_blocks(con, block):
        bid = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        x, has_vector = unit_rows(block_vectors(con, basis, rows, df))
        at = positions(sample, bid)
        out = np.full(len(rows), -1, dtype=np.int64)
        sampled = at >= 0
        out[sampled] = sample_labels[at[sampled]]
        rest = np.flatnonzero(~sampled)
        out[rest] = _vote(x[rest], has_vector[rest], bid[rest], voters, cross, settings)
        labels[positions(ids, bid)] = out
        tally.add(x, out, [r[2] for r in rows])
        pending.append(bid[out < 0])
    return np.concatenate(pending) if pending else np.zeros(0, np.int64)


def _vote(x, has_vector, bid, voters: _Voters, cross, settings) -> np.ndarray:
    """Labels of a block of items outside the sample: their kNN and link votes (spectral.py's
    out-of-sample rule), -1 without a positive vote; identical to a sampled vector: its label."""
    k = voters.k
    if not len(bid) or k <= 0:
        return np.full(len(bid), -1, dtype=np.int64)
    votes = np.zeros((len(bid), k))
    asking = np.flatnonzero(has_vector)
    votes[asking] = knn_votes(x[asking], voters.x, voters.labels, k, settings.knn)
    items, labels, weights = cross
    lo = np.searchsorted(items, bid.min(), side="left")
    hi = np.searchsorted(items, bid.max(), side="right")
    row = positions(bid, items[lo:hi])
    here = row >= 0
    np.add.at(votes, (row[here], labels[lo:hi][here]), weights[lo:hi][here])
    out = np.where(votes.max(axis=1) > 0, np.argmax(votes, axis=1), -1)
    same = voters.same_as(x, has_vector)
    return np.where(same >= 0, same, out)


def _follow_links(con, ids, labels, k: int, structural_weight: float, block: int) -> None:
    """Items without a label follow their links to labelled items, one hop per pass over the
    links, until a pass labels none (spectral.py's `_extend`: weighted majority, ties to the
    lower label)."""
    while k > 0:
        keys, weights = [], []
        for a, b, w in link_chunks(con, block):
            pa, pb = positions(ids, a), positions(ids, b)
            for p, q in ((pa, pb), (pb, pa)):   # every end is an item: positions >= 0
                into = (labels[p] < 0) & (labels[q] >= 0)
                keys.append(p[into] * k + labels[q[into]])
                weights.append(w[into] * structural_weight)
        if not keys:
            return
        cells, inverse = np.unique(np.concatenate(keys), return_inverse=True)
        sums = np.bincount(inverse, weights=np.concatenate(weights), minlength=len(cells))
        item, label = cells // k, cells % k
        positive = sums > 0
        if not positive.any():
            return
        item, label, sums = item[positive], label[positive], sums[positive]
        order = np.lexsort((label, -sums, item))
        first = order[np.r_[True, item[order][1:] != item[order][:-1]]]
        labels[item[first]] = label[first]


def _label_last(con, basis, df, ids, labels, pending, tally, block) -> None:
    """The items labelled after the main pass (by their links), and those with a vector still
    without one (the nearest centroid): their vectors and terms join the tally."""
    centroids = tally.centroids()
    for rows in rows_of(con, pending, block):
        bid = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        x, has_vector = unit_rows(block_vectors(con, basis, rows, df))
        at = positions(ids, bid)
        out = labels[at]
        left = np.flatnonzero((out < 0) & has_vector)
        if len(left) and len(centroids):
            out[left] = assign(x[left], centroids)
        labels[at] = out
        tally.add(x, out, [r[2] for r in rows])


# -- numbering ---------------------------------------------------------------------------------


def _renumbering(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """old label -> new label (-1 for a label no item has), from the same items' two labels."""
    member = np.flatnonzero(old >= 0)
    mapping = np.full(int(old.max()) + 1 if len(member) else 0, -1, dtype=np.int64)
    mapping[old[member]] = new[member]
    return mapping


def _renumbered(rows: np.ndarray, mapping: np.ndarray) -> np.ndarray:
    used = np.flatnonzero(mapping[:len(rows)] >= 0)
    out = np.zeros((int(mapping.max()) + 1 if len(used) else 0, rows.shape[1]))
    out[mapping[used]] = rows[used]
    return out
