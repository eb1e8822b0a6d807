"""Areas of the memory: spectral clustering of memory items (design.md, Ingest step 5).

Each memory item (a commit message, a doc section, a note) has an L2-normalised embedding; some
pairs are also linked structurally (they touch the same files or symbols). `spectral_clusters`
groups the items into k areas and chooses k itself. n items of d dimensions, m = max_items:

1. Similarity graph. Identical vectors become one node first (they would tie for every
   neighbour slot; a node standing for several items gets a self-loop of weight 1, their mutual
   similarity), so duplicates always share a label. Each node's `knn` nearest neighbours by
   cosine, negatives clipped to 0, symmetrised with max(A, Aᵀ) (an edge when either end picks
   the other), plus `structural_weight` × the weight of each link (a pair given twice counts
   twice). Similarities are computed in blocks of rows (`X[block] @ Xᵀ`, 64 MiB each), so no
   n × n matrix ever exists; per row, a probe of ~1,000 evenly spaced columns bounds the knn-th
   largest value, and only the columns above that bound are sorted. Time O(n² d), memory
   O(block · n + n · knn).
2. Normalised Laplacian L = I - D^-½ W D^-½ (von Luxburg 2007, "L_sym"). Nodes of degree 0 —
   no positive similarity to anything and no link — are left out rather than divided by zero.
   We compute the largest eigenvalues μ of D^-½ W D^-½ (λ = 1 - μ are the smallest of L) with
   ARPACK's Lanczos (`eigsh`, which='LA', v0 from the seed), which converges far faster there
   than 'SM' on L. The eigenvalue 0 of L has one known eigenvector per connected component,
   D^½ 1_C / sqrt(vol C): those are written down and projected out, and Lanczos looks only for
   the rest — a repeated eigenvalue is exactly what a Krylov method finds worst. Time
   O(restarts · ncv · (nnz + n · ncv)) with ncv ≈ 2 · max_clusters, memory O(nnz + n · ncv).
   Up to 500 nodes, dense `eigh`: O(n³) time, O(n²) memory.
3. k = argmax of the eigengap λ_{k+1} - λ_k over min_clusters ≤ k ≤ max_clusters, k ≤ nodes - 1.
   Each component has λ = 0, so c components give k ≥ c: they come out as separate clusters.
   With more components than that range allows, no gap can choose (the range is all zeros): the
   max_clusters largest components are the clusters and each other one joins, whole, the cluster
   nearest to its mean vector.
4. The rows of the first k eigenvectors, scaled to unit length (Ng, Jordan & Weiss 2001), are
   clustered by k-means: k-means++ seeding (Arthur & Vassilvitskii 2007), best of 4 seeded
   restarts, O(restarts · iterations · n k²) time, O(n k) memory. Clusters are numbered by size,
   largest first.
5. Nodes of degree 0 that have a vector join the cluster with the nearest centroid (all of them
   form one cluster if there is none); all-zero vectors without a link get -1.

Why `max_items`: step 1 is quadratic. For 50,000 items of 256 dimensions it is 6 · 10¹¹
multiply-adds plus a 50,000-wide selection per row, and the graph, the Lanczos basis and k-means
grow with n as well. Above m = `max_items` nodes we cluster a seeded random sample of m exactly
and extend out of sample: each other item takes the weighted majority label of its `knn` nearest
sampled items (cosine, clipped at 0) plus its links into the sample, weighted as in the graph.
That is a kNN vote, the simplest stand-in for a Nyström extension (Fowlkes et al. 2004, which
would project each item onto the sample's eigenvectors instead); it costs O((n - m) · m · d),
linear in n. An item left without a vote follows its links to labelled items, else takes the
nearest centroid, else (all-zero, unlinked) gets -1.

`assign` gives new items the nearest centroid by cosine, so an incremental update does not have
to re-cluster; `distinctive_terms` names each cluster by the terms most over-represented in it.

Given every item at once, this module holds them all in memory, out-of-sample ones included.
The index's areas step (cortex_core/index/areas_sample.py) does not give it more than max_items
items: it draws the sample the same way, clusters it here, and applies the out-of-sample rule a
block of items at a time from the store, with `knn_votes`, `distinct_rows` (the voters) and
`TermCounts` (`distinctive_terms` counted block by block).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # scipy is imported where a full clustering needs it: placing one new item
    from scipy import sparse   # (`assign`, a one-commit update) needs numpy only, and scipy
    #                            costs ~0.25 s to import

DENSE_MAX = 500            # up to this many graph nodes, dense eigh is faster than Lanczos
# Values per block of rows: 4 MiB of float32. A block's temporaries (the mask, an
# argpartition's int64 indices) take several times its size: at 1 << 24 the kNN step alone
# lifted an index run's peak by ~150 MB (scrapy: 418 -> 260 MiB for the areas step, same
# clusters, no slower).
BLOCK_FLOATS = 1 << 20
# The kNN's similarities (the sample's graph and the labels of the items outside it), twice
# that: BLAS runs slowly on thin blocks. Labelling sympy's 47k items outside the sample against
# 20k voters (52 rows a block at 1 << 20) took its areas step 42-49 s against 41-44 s at
# 1 << 21 (66 against 56 s on a loaded machine), for 8-15 MiB more at its peak. How rows are
# blocked moves a similarity by BLAS's rounding (~1e-7), which can turn an exact tie: sympy's
# clusters came out the same.
NEAREST_BLOCK_FLOATS = 1 << 21
PROBE_COLUMNS = 1024       # columns sampled per row to bound its knn-th largest similarity
ZERO_NORM = 1e-12          # a vector shorter than this is an all-zero vector
KMEANS_RESTARTS = 4
KMEANS_ITERATIONS = 100
EIGSH_TOL = 1e-8           # ARPACK relative residual; eigengaps need ~1e-4, rows ~1e-3

# Words that describe how a change was made rather than what it is about. Matched lowercased.
STOPWORDS = frozenset((
    "a", "about", "add", "added", "adds", "after", "all", "also", "an", "and", "any", "are", "as",
    "at", "be", "been", "before", "being", "but", "by", "can", "change", "changed", "changes",
    "cleanup", "commit", "could", "do", "does", "don't", "each", "fix", "fixed", "fixes",
    "fixing", "for", "from", "get", "has", "have", "if", "in", "into", "is", "it", "its", "make",
    "makes", "merge", "merged", "more", "new", "no", "not", "now", "of", "on", "one", "only",
    "or", "other", "out", "over", "pr", "pull", "remove", "removed", "request", "set", "should",
    "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "this", "to",
    "too", "two", "under", "up", "update", "updated", "updates", "use", "used", "uses", "using",
    "via", "was", "we", "were", "when", "which", "will", "wip", "with", "would",
))


@dataclass(frozen=True)
class SpectralSettings:
    knn: int = 10                    # neighbours per item in the similarity graph
    min_clusters: int = 2
    max_clusters: int = 40
    structural_weight: float = 0.5   # weight of a structural link relative to a cosine edge
    max_items: int = 20_000          # beyond this, cluster a random sample and extend
    seed: int = 0

    def __post_init__(self):
        if self.knn < 1:
            raise ValueError(f"knn must be at least 1, not {self.knn}")
        if not 1 <= self.min_clusters <= self.max_clusters:
            raise ValueError(f"need 1 <= min_clusters <= max_clusters, not {self.min_clusters}"
                             f" and {self.max_clusters}")
        if not (math.isfinite(self.structural_weight) and self.structural_weight >= 0):
            raise ValueError(f"structural_weight must be finite and >= 0, not"
                             f" {self.structural_weight}")
        if self.max_items < 2:
            raise ValueError(f"max_items must be at least 2, not {self.max_items}")


@dataclass(frozen=True)
class SpectralResult:
    labels: np.ndarray       # int32 (n,): 0..k-1, largest cluster first; -1: zero vector, no link
    k: int                   # clusters found (below the chosen k only if k-means empties one)
    eigenvalues: np.ndarray  # smallest eigenvalues of the normalised Laplacian computed, ascending
    eigengap: float          # λ_{k+1} - λ_k for the chosen k; 0.0 when no gap chose k
    sampled: int             # items clustered exactly (n unless more than max_items nodes)
    centroids: np.ndarray    # float32 (k, dim): unit-length mean of each cluster's unit vectors


def spectral_clusters(vectors: np.ndarray, links: Iterable[tuple[int, int, float]] = (),
                      settings: SpectralSettings = SpectralSettings(), *,
                      unit: tuple[np.ndarray, np.ndarray] | None = None) -> SpectralResult:
    """Cluster items by their vectors and links; `links` are (i, j, weight), undirected.
    `unit`: what `unit_rows(vectors)` returned, when the caller has it (not a second copy)."""
    x, has_vector = unit if unit is not None else unit_rows(vectors)
    n = len(x)
    li, lj, lw = _link_arrays(links, n)
    # Identical vectors are one node: ties would otherwise pick arbitrary neighbours.
    node_of, node_items = _collapse(x, has_vector)
    # Without duplicates the nodes are the items in order: no copy of the vectors.
    same = len(node_items) == n and bool(np.all(node_items == np.arange(n)))
    nx, n_has_vector = (x, has_vector) if same else (x[node_items], has_vector[node_items])
    copies = np.bincount(node_of, minlength=len(node_items))
    ni, nj = node_of[li], node_of[lj]
    n_nodes = len(node_items)
    linked = np.zeros(n_nodes, dtype=bool)
    linked[ni] = True
    linked[nj] = True
    candidates = np.flatnonzero(n_has_vector | linked)

    if len(candidates) <= settings.max_items:
        node_labels, eigenvalues, eigengap = _cluster_exactly(nx, n_has_vector, copies, ni, nj,
                                                              lw, settings)
        sampled = n
    else:
        rng = np.random.default_rng(settings.seed)
        sample = np.sort(rng.choice(candidates, size=settings.max_items, replace=False))
        position = np.full(n_nodes, -1, dtype=np.int64)
        position[sample] = np.arange(len(sample))
        inside = (position[ni] >= 0) & (position[nj] >= 0)
        sample_labels, eigenvalues, eigengap = _cluster_exactly(
            nx[sample], n_has_vector[sample], copies[sample], position[ni[inside]],
            position[nj[inside]], lw[inside], settings)
        node_labels = np.full(n_nodes, -1, dtype=np.int64)
        node_labels[sample] = sample_labels
        _extend(nx, n_has_vector, node_labels, sample, ni, nj, lw, settings)
        sampled = int(np.count_nonzero(position[node_of] >= 0))

    labels = node_labels[node_of]
    labels = by_size(labels)
    centroids = _centroids(x, labels)
    return SpectralResult(labels=labels.astype(np.int32), k=len(centroids),
                          eigenvalues=eigenvalues, eigengap=eigengap, sampled=sampled,
                          centroids=centroids)


def assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The nearest centroid by cosine for each vector (int32); -1 for an all-zero vector."""
    x, has_vector = unit_rows(vectors)
    c, has_centroid = unit_rows(centroids)
    labels = np.full(len(x), -1, dtype=np.int32)
    if not has_centroid.any() or not has_vector.any():
        return labels
    if x.shape[1] != c.shape[1]:
        raise ValueError(f"vectors have {x.shape[1]} dimensions but centroids {c.shape[1]}")
    rows = np.flatnonzero(has_vector)
    step = max(1, BLOCK_FLOATS // len(c))
    for start in range(0, len(rows), step):
        block = rows[start:start + step]
        sims = x[block] @ c.T
        sims[:, ~has_centroid] = -np.inf
        labels[block] = np.argmax(sims, axis=1)
    return labels


def knn_votes(queries: np.ndarray, voters: np.ndarray, voter_labels: np.ndarray, k: int,
              knn: int) -> np.ndarray:
    """The out-of-sample kNN vote (module docstring): for each query, the cosine similarity
    (clipped at 0) of its `knn` nearest voters, summed by the voters' labels 0..k-1; float64,
    (len(queries), k). Queries and voters are unit rows (`unit_rows`). Works on any subset of
    the queries, so that the items outside a sample can be labelled block by block."""
    votes = np.zeros(len(queries) * k)
    if len(voters) and len(queries):
        neighbours, sims = _nearest(queries, voters, min(knn, len(voters)), same=False)
        cells = np.arange(len(queries))[:, None] * k + voter_labels[neighbours]
        votes += np.bincount(cells.ravel(), weights=np.maximum(sims, 0.0).ravel().astype(np.float64),
                             minlength=len(votes))
    return votes.reshape(len(queries), k)


def distinct_rows(x: np.ndarray, has_vector: np.ndarray) -> np.ndarray:
    """The first item of each distinct non-zero row, in order: the graph's nodes that have a
    vector, which are the voters of the out-of-sample extension (a duplicate votes once)."""
    _, node_items = _collapse(x, has_vector)
    return np.sort(node_items[has_vector[node_items]])


def distinctive_terms(labels: np.ndarray, item_terms: Sequence[Sequence[str]], top: int = 5,
                      min_count: int = 2) -> list[list[str]]:
    """For each cluster 0..max(labels), its `top` most over-represented terms, best first.

    Terms are counted by item (an item repeating a term counts it once); stopwords,
    one-character terms and numbers are ignored, and so are items labelled -1. A term needs
    `min_count` items in the cluster. The score is the weighted log-odds of Monroe, Colaresi &
    Quinn (2008, "Fightin' Words", eqs. 15-21) for item counts: a term is in y of the cluster's
    n items and in Y of the corpus's N; the prior is the corpus itself (α = Y, β = N - Y, as
    tidylo's bind_log_odds takes the corpus counts for word counts), and

        δ = log((y + α) / (n - y + β)) - log(Y / (N - Y))     posterior log-odds minus the corpus's
        z = δ / sqrt(1 / (y + α) + 1 / (n - y + β))           in posterior standard deviations

    A term spread evenly over the corpus has δ = 0, one in every item is skipped; among
    over-represented terms z prefers those with more items behind them. Ties go to the term
    that sorts first.
    """
    labels = np.asarray(labels, dtype=np.int64).ravel()
    if len(labels) != len(item_terms):
        raise ValueError(f"{len(labels)} labels but terms for {len(item_terms)} items")
    counts = TermCounts()
    counts.add(labels, item_terms)
    return counts.distinctive(top, min_count)


class TermCounts:
    """What `distinctive_terms` scores, counted a block of items at a time: per cluster, its
    size and in how many of its items each term occurs, and the same over every cluster. Counts
    add up, so the items can come in any blocks and any order with the same result; what is
    held grows with the vocabulary (distinct terms per cluster), not with the items."""

    def __init__(self) -> None:
        self.in_cluster: list[Counter[str]] = []
        self.sizes: list[int] = []
        self.corpus: Counter[str] = Counter()

    def add(self, labels, item_terms: Iterable[Iterable[str]]) -> None:
        """Count a block of items: their labels (-1: ignored) and each one's terms."""
        for label, terms in zip(np.asarray(labels, dtype=np.int64).ravel().tolist(), item_terms):
            if label < 0:
                continue
            while len(self.in_cluster) <= label:
                self.in_cluster.append(Counter())
                self.sizes.append(0)
            kept = {t for t in terms if _is_content_term(t)}
            self.in_cluster[label].update(kept)
            self.corpus.update(kept)
            self.sizes[label] += 1

    def renumbered(self, mapping: Sequence[int]) -> TermCounts:
        """The same counts under new labels: `mapping[old]` is the new label, -1 drops it;
        the new labels must be 0..k'-1 without a gap."""
        out = TermCounts()
        out.corpus = self.corpus
        kept = sorted((new, old) for old, new in enumerate(mapping) if new >= 0)
        if [new for new, _ in kept] != list(range(len(kept))):
            raise ValueError(f"labels must be renumbered 0..k-1, not to {[n for n, _ in kept]}")
        for _, old in kept:
            out.in_cluster.append(self.in_cluster[old] if old < len(self.sizes) else Counter())
            out.sizes.append(self.sizes[old] if old < len(self.sizes) else 0)
        return out

    def distinctive(self, top: int = 5, min_count: int = 2) -> list[list[str]]:
        """`distinctive_terms` of the items counted so far."""
        items = sum(self.sizes)
        return [self._best(counts, size, items, top, min_count)
                for counts, size in zip(self.in_cluster, self.sizes)]

    def _best(self, counts: Counter[str], size: int, items: int, top: int,
              min_count: int) -> list[str]:
        scored = []
        for term, y in counts.items():
            everywhere = self.corpus[term]
            if y < min_count or everywhere >= items:
                continue
            rest = size - y + items - everywhere
            delta = (math.log((y + everywhere) / rest)
                     - math.log(everywhere / (items - everywhere)))
            if delta > 0:
                scored.append((-delta / math.sqrt(1 / (y + everywhere) + 1 / rest), term))
        return [term for _, term in sorted(scored)[:top]]


# --- the exact clustering ---------------------------------------------------------------------

def _cluster_exactly(x, has_vector, copies, li, lj, lw, settings):
    """Labels (int64, -1 for an all-zero vector without links), eigenvalues, eigengap."""
    from scipy.sparse.csgraph import connected_components
    n = len(x)
    labels = np.full(n, -1, dtype=np.int64)
    no_eigenvalues = np.zeros(0)
    graph = _graph(x, has_vector, copies, li, lj, lw, settings)
    degree = np.asarray(graph.sum(axis=1)).ravel()
    core = np.flatnonzero(degree > 0)
    m = len(core)
    if m == 0:  # nothing resembles anything: one cluster of whatever has a vector
        labels[has_vector] = 0
        return labels, no_eigenvalues, 0.0

    w = graph[core][:, core].tocsr()
    n_components, component = connected_components(w, directed=False)
    k_high = min(settings.max_clusters, m - 1)
    k_low = min(settings.min_clusters, k_high)
    eigenvalues, eigengap = no_eigenvalues, 0.0
    if n_components > k_high:  # λ = 0 n_components times: nothing for a gap to choose
        k = min(n_components, settings.max_clusters)
        core_labels = _merge_components(component, n_components, x[core], k)
        eigenvalues = np.zeros(min(n_components, settings.max_clusters + 1))
    elif k_high <= 1:
        core_labels = np.zeros(m, dtype=np.int64)
    else:
        eigenvalues, vectors = _spectrum(w, degree[core], component, n_components, k_high + 1,
                                         settings.seed)
        gaps = np.diff(eigenvalues)  # gaps[k - 1] = λ_{k+1} - λ_k, for k clusters
        k = k_low + int(np.argmax(gaps[k_low - 1:k_high]))
        eigengap = float(gaps[k - 1])
        rows = vectors[:, :k]
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        rows = rows / np.where(norms > ZERO_NORM, norms, 1.0)
        core_labels = _kmeans(rows, k, np.random.default_rng(settings.seed))
    labels[core] = core_labels

    lonely = np.flatnonzero(has_vector & (degree == 0))
    if len(lonely):
        labels[lonely] = assign(x[lonely], _centroids(x, labels))
    return labels, eigenvalues, eigengap


def _graph(x, has_vector, copies, li, lj, lw, settings) -> sparse.csr_matrix:
    """The symmetric similarity graph: kNN cosine edges, weighted links, and a self-loop of
    weight 1 on a node that stands for several identical items (their mutual similarity)."""
    from scipy import sparse
    n = len(x)
    rows, cols, vals = [], [], []
    items = np.flatnonzero(has_vector)
    if len(items) >= 2:
        k = min(settings.knn, len(items) - 1)
        rows_x = x if len(items) == n else x[items]   # one array for both: no second copy
        neighbours, sims = _nearest(rows_x, rows_x, k, same=True)
        rows.append(np.repeat(items, k))
        cols.append(items[neighbours.ravel()])
        vals.append(np.maximum(sims.ravel(), 0.0).astype(np.float64))
    knn = sparse.csr_matrix(
        (np.concatenate(vals) if vals else np.zeros(0),
         (np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64),
          np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64))),
        shape=(n, n))
    graph = knn.maximum(knn.T)
    repeated = np.flatnonzero(copies > 1)
    if len(repeated):
        graph = graph + sparse.csr_matrix((np.ones(len(repeated)), (repeated, repeated)),
                                          shape=(n, n))
    keep = li != lj
    if keep.any() and settings.structural_weight > 0:
        i, j, wt = li[keep], lj[keep], lw[keep] * settings.structural_weight
        graph = graph + sparse.csr_matrix(
            (np.concatenate([wt, wt]), (np.concatenate([i, j]), np.concatenate([j, i]))),
            shape=(n, n))
    graph = graph.tocsr()
    graph.eliminate_zeros()
    return graph


def _nearest(queries, base, k, *, same):
    """The k most similar rows of `base` for each query, by dot product, computed in blocks.

    Returns (indices, similarities), both (len(queries), k), most similar first. With `same`,
    queries are base itself and an item is not its own neighbour. Per block, the k-th largest
    value in an evenly spaced subset of columns bounds the k-th largest of the row from below,
    so only the few columns at or above it need sorting; a block full of ties (duplicates) falls
    back to a full argpartition.
    """
    nq, nb = len(queries), len(base)
    indices = np.empty((nq, k), dtype=np.int64)
    values = np.empty((nq, k), dtype=np.float32)
    step = max(1, NEAREST_BLOCK_FLOATS // max(nb, 1))
    probe = np.arange(0, nb, max(1, nb // PROBE_COLUMNS))
    for start in range(0, nq, step):
        stop = min(nq, start + step)
        block = queries[start:stop]
        if block.shape == base.shape and np.shares_memory(block, base):
            # One array times its own transpose goes to BLAS's syrk, which rounds otherwise
            # than gemm (up to 8e-7 for a few dozen rows): a copy (at most one block) keeps the
            # similarities, and the ties they decide, what they were with separate arrays.
            block = block.copy()
        sims = block @ base.T
        b = stop - start
        if same:
            sims[np.arange(b), np.arange(start, stop)] = -np.inf
        cand = None
        if len(probe) > k + 1 and nb > 4 * len(probe):
            floor = np.partition(sims[:, probe], -k, axis=1)[:, -k]
            mask = sims >= floor[:, None]
            if np.count_nonzero(mask) <= 16 * b * max(k, len(probe) // 8):
                cand = np.nonzero(mask)
        if cand is None:
            top = np.argpartition(sims, -k, axis=1)[:, -k:]
            r = np.repeat(np.arange(b), k)
            cand = (r, top.ravel())
        r, c = cand
        v = sims[r, c]
        order = np.lexsort((c, -v, r))  # by row, then similarity descending, then column
        r, c, v = r[order], c[order], v[order]
        first = np.searchsorted(r, np.arange(b))
        keep = (np.arange(len(r)) - first[r]) < k
        indices[start:stop] = c[keep].reshape(b, k)
        values[start:stop] = v[keep].reshape(b, k)
    return indices, values


def _spectrum(w, degree, component, n_components, count, seed):
    """The `count` smallest eigenvalues of L_sym (ascending) and their eigenvectors (columns)."""
    from scipy import sparse
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh
    m = w.shape[0]
    scale = sparse.diags(1.0 / np.sqrt(degree))
    a = (scale @ w @ scale).tocsr()  # D^-½ W D^-½, eigenvalues μ = 1 - λ
    if m <= DENSE_MAX:
        mu, vectors = np.linalg.eigh(a.toarray())
        order = np.argsort(-mu, kind="stable")[:count]
        return np.clip(1.0 - mu[order], 0.0, 2.0), vectors[:, order]

    # The known eigenvectors for λ = 0: D^½ 1_C / sqrt(vol C), one per component, orthonormal.
    volume = np.bincount(component, weights=degree, minlength=n_components)
    null = sparse.csr_matrix((np.sqrt(degree / volume[component]), (np.arange(m), component)),
                             shape=(m, n_components))

    def deflate(v):
        return v - null @ (null.T @ v)

    def matvec(v):  # P (A + I) P: the rest of the spectrum, shifted into [0, 2], the null space at 0
        v = deflate(np.ravel(v))
        return deflate(a @ v + v)

    operator = LinearOperator((m, m), matvec=matvec, dtype=np.float64)
    wanted = count - n_components
    v0 = deflate(np.random.default_rng(seed).standard_normal(m))
    ncv = min(m - 1, max(2 * wanted + 1, 20))
    try:
        shifted, vectors = eigsh(operator, k=wanted, which="LA", v0=v0, ncv=ncv, tol=EIGSH_TOL)
    except ArpackNoConvergence:
        shifted, vectors = eigsh(operator, k=wanted, which="LA", v0=v0, tol=EIGSH_TOL,
                                 ncv=min(m - 1, 4 * wanted + 20), maxiter=20 * m)
    order = np.argsort(-shifted, kind="stable")
    eigenvalues = np.concatenate([np.zeros(n_components),
                                  np.clip(2.0 - shifted[order], 0.0, 2.0)])
    return eigenvalues, np.hstack([null.toarray(), vectors[:, order]])


def _merge_components(component, n_components, x, k):
    """More components than clusters: the k largest are clusters, the rest join the nearest."""
    from scipy import sparse
    sizes = np.bincount(component, minlength=n_components)
    first = np.full(n_components, len(component))
    np.minimum.at(first, component, np.arange(len(component)))
    ranked = np.lexsort((first, -sizes))
    cluster_of = np.full(n_components, -1, dtype=np.int64)
    cluster_of[ranked[:k]] = np.arange(k)
    labels = cluster_of[component]
    centroids = _centroids(x, labels)
    rest = ranked[k:]
    members = sparse.csr_matrix((np.ones(len(component)), (component, np.arange(len(component)))),
                                shape=(n_components, len(component)))
    means = np.asarray(members[rest] @ x)
    joined = assign(means, centroids)
    cluster_of[rest] = np.where(joined >= 0, joined, 0)  # all-zero vectors: the largest
    return cluster_of[component]


def _kmeans(points, k, rng):
    """Lloyd's k-means, k-means++ seeding, best of KMEANS_RESTARTS; labels 0..k'-1, k' <= k."""
    from scipy import sparse
    squares = np.einsum("ij,ij->i", points, points)
    best, best_cost = None, np.inf
    for _ in range(KMEANS_RESTARTS):
        centres = _plus_plus(points, squares, k, rng)
        labels = None
        for _ in range(KMEANS_ITERATIONS):
            d2 = squares[:, None] - 2.0 * points @ centres.T + np.einsum("ij,ij->i", centres,
                                                                        centres)[None, :]
            new = np.argmin(d2, axis=1)
            if labels is not None and np.array_equal(new, labels):
                break
            labels = new
            counts = np.bincount(labels, minlength=len(centres))
            onehot = sparse.csr_matrix((np.ones(len(points)), (labels, np.arange(len(points)))),
                                       shape=(len(centres), len(points)))
            sums = np.asarray(onehot @ points)
            filled = counts > 0  # an emptied centre stays where it was
            centres[filled] = sums[filled] / counts[filled, None]
        cost = float(np.maximum(d2.min(axis=1), 0.0).sum())
        if cost < best_cost - 1e-9:
            best, best_cost = labels, cost
    _, contiguous = np.unique(best, return_inverse=True)
    return contiguous.astype(np.int64)


def _plus_plus(points, squares, k, rng):
    """k-means++ seeding (Arthur & Vassilvitskii 2007); fewer centres if the points run out."""
    n = len(points)
    chosen = [int(rng.integers(n))]
    d2 = np.maximum(squares - 2.0 * points @ points[chosen[0]] + squares[chosen[0]], 0.0)
    for _ in range(1, k):
        total = d2.sum()
        if total <= 1e-12:  # every point sits on a centre already
            break
        pick = int(np.searchsorted(np.cumsum(d2), rng.random() * total, side="right"))
        pick = min(pick, n - 1)
        chosen.append(pick)
        d2 = np.minimum(d2, np.maximum(squares - 2.0 * points @ points[pick] + squares[pick], 0.0))
    return points[chosen].astype(np.float64, copy=True)


# --- out of sample ----------------------------------------------------------------------------

def _extend(x, has_vector, labels, sample, li, lj, lw, settings):
    """Label the items outside the sample in place (see the module docstring)."""
    n = len(x)
    k = int(labels.max()) + 1
    if k <= 0:
        return
    in_sample = np.zeros(n, dtype=bool)
    in_sample[sample] = True
    rest = np.flatnonzero(~in_sample)
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[rest] = np.arange(len(rest))
    votes = np.zeros((len(rest), k))
    voters = sample[(labels[sample] >= 0) & has_vector[sample]]
    askers = rest[has_vector[rest]]
    votes[row_of[askers]] = knn_votes(x[askers], x[voters], labels[voters], k, settings.knn)
    votes = votes.ravel()
    for a, b in ((li, lj), (lj, li)):
        into = (row_of[a] >= 0) & in_sample[b] & (labels[b] >= 0) & (a != b)
        votes += np.bincount(row_of[a[into]] * k + labels[b[into]],
                             weights=lw[into] * settings.structural_weight, minlength=len(votes))
    votes = votes.reshape(len(rest), k)
    voted = votes.max(axis=1) > 0
    labels[rest[voted]] = np.argmax(votes[voted], axis=1)

    # No vote: follow links to items labelled by now, one hop per round, until none is taken.
    while True:
        tally = np.zeros(n * k)
        for a, b in ((li, lj), (lj, li)):
            into = (labels[a] < 0) & (labels[b] >= 0)
            tally += np.bincount(a[into] * k + labels[b[into]],
                                 weights=lw[into] * settings.structural_weight, minlength=n * k)
        tally = tally.reshape(n, k)
        taken = np.flatnonzero(tally.max(axis=1) > 0)
        if not len(taken):
            break
        labels[taken] = np.argmax(tally[taken], axis=1)
    left = np.flatnonzero((labels < 0) & has_vector)
    if len(left):
        labels[left] = assign(x[left], _centroids(x, labels))


# --- small helpers ----------------------------------------------------------------------------

def unit_rows(vectors) -> tuple[np.ndarray, np.ndarray]:
    """float32 rows scaled to unit length, and which rows are not all-zero. Scaled in float64
    a block of rows at a time: the whole array in float64, and its quotient, were 5 times the
    float32 result at once (200 MB for 20,000 rows of 512)."""
    v = np.asarray(vectors)
    if v.size == 0 and v.ndim < 2:
        v = v.reshape(0, 0)
    if v.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array (items × dimensions), not shape {v.shape}")
    out = np.empty(v.shape, dtype=np.float32)
    has_vector = np.empty(len(v), dtype=bool)
    step = max(1, BLOCK_FLOATS // max(v.shape[1], 1))
    for start in range(0, len(v), step):
        block = np.asarray(v[start:start + step], dtype=np.float64)
        if not np.isfinite(block).all():
            raise ValueError("vectors contain NaN or infinite values")
        norms = np.linalg.norm(block, axis=1)
        has = norms > ZERO_NORM
        block = block / np.where(has, norms, 1.0)[:, None]
        block[~has] = 0.0
        out[start:start + step] = block
        has_vector[start:start + step] = has
    return out, has_vector


def _link_arrays(links, n):
    """Links as (i, j, weight) arrays, checked: indices in range, weights finite and >= 0."""
    # An (m, 3) array is taken as it is: a list of m tuples costs ~100 bytes a link.
    rows = links if isinstance(links, np.ndarray) else list(links)
    if not len(rows):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    try:
        table = np.asarray(rows, dtype=np.float64).reshape(len(rows), 3)
    except ValueError as e:
        raise ValueError("links must be (i, j, weight) triples") from e
    ends = table[:, :2]
    bad = np.flatnonzero(~np.all((ends == np.floor(ends)) & (ends >= 0) & (ends < n), axis=1))
    if len(bad):
        i, j, w = table[bad[0]]
        where = f"indices run from 0 to {n - 1}" if n else "there are no items"
        raise ValueError(f"link ({i:g}, {j:g}, {w:g}) refers to an item that does not exist:"
                         f" {where}")
    weights = table[:, 2]
    bad = np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))
    if len(bad):
        i, j, w = table[bad[0]]
        raise ValueError(f"link ({i:g}, {j:g}, {w:g}) has a weight that is negative or not finite")
    return ends[:, 0].astype(np.int64), ends[:, 1].astype(np.int64), weights


def _collapse(x, has_vector) -> tuple[np.ndarray, np.ndarray]:
    """Graph nodes: one per distinct non-zero vector (numbered by first appearance), one per
    all-zero item. Returns each item's node and each node's first item."""
    n = len(x)
    items = np.flatnonzero(has_vector)
    node_of = np.empty(n, dtype=np.int64)
    distinct = np.zeros(0, dtype=np.int64)
    if len(items):
        _, first, inverse = np.unique(_row_keys(x, items), return_index=True,
                                      return_inverse=True)
        order = np.argsort(first)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        node_of[items] = rank[inverse.ravel()]
        distinct = items[first[order]]
    zero = np.flatnonzero(~has_vector)
    node_of[zero] = len(distinct) + np.arange(len(zero))
    return node_of, np.concatenate([distinct, zero])


def _row_keys(x, items) -> np.ndarray:
    """A 16-byte BLAKE2b digest of each row `items` of `x`, as one sortable value: equal rows
    have equal keys, and two distinct rows the same key with a chance of 2^-128. Sorting the
    rows themselves (as whole-row values) made copies of them all, 40 MB each for the 20,000
    rows of 512 floats the areas step clusters."""
    digest = bytearray()
    for i in items:
        digest += hashlib.blake2b(np.ascontiguousarray(x[i]).data, digest_size=16).digest()
    return np.frombuffer(bytes(digest), dtype=np.dtype((np.void, 16)))


def _centroids(x, labels) -> np.ndarray:
    """Unit-length mean vector of each cluster 0..max(labels) (zero for a cluster of zeros)."""
    from scipy import sparse
    k = int(labels.max()) + 1 if len(labels) else 0
    if k <= 0:
        return np.zeros((0, x.shape[1]), dtype=np.float32)
    members = np.flatnonzero(labels >= 0)
    onehot = sparse.csr_matrix((np.ones(len(members)), (labels[members], members)),
                               shape=(k, len(x)))
    # Summed in float64 a block of rows at a time: x in float64 at once was twice x.
    sums = np.zeros((k, x.shape[1]))
    step = max(1, BLOCK_FLOATS // max(x.shape[1], 1))
    for start in range(0, len(x), step):
        sums += onehot[:, start:start + step] @ x[start:start + step].astype(np.float64)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return (sums / np.where(norms > ZERO_NORM, norms, 1.0)).astype(np.float32)


def by_size(labels) -> np.ndarray:
    """Renumber clusters by size, largest first (ties: the one whose first item comes first)."""
    out = np.full(len(labels), -1, dtype=np.int64)
    members = labels >= 0
    if not members.any():
        return out
    used, first, inverse, sizes = np.unique(labels[members], return_inverse=True,
                                            return_index=True, return_counts=True)
    rank = np.empty(len(used), dtype=np.int64)
    rank[np.lexsort((first, -sizes))] = np.arange(len(used))
    out[members] = rank[inverse]
    return out


def _is_content_term(term: str) -> bool:
    low = term.lower()
    return len(low) > 1 and low not in STOPWORDS and not low.replace(".", "").isdigit()
