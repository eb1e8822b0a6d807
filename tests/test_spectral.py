"""Spectral clustering of memory items on seeded synthetic vectors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from cortex_core.memory.spectral import (SpectralSettings, TermCounts, _spectrum, assign,
                                         distinctive_terms, knn_votes, spectral_clusters,
                                         unit_rows)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def blobs(per_blob: int, n_blobs: int, dim: int = 64, noise: float = 0.6, seed: int = 1):
    """Points around random unit centres; `noise` is the expected length of the offset."""
    rng = np.random.default_rng(seed)
    centres = unit(rng.standard_normal((n_blobs, dim)))
    truth = np.repeat(np.arange(n_blobs), per_blob)
    points = centres[truth] + noise * rng.standard_normal((len(truth), dim)) / np.sqrt(dim)
    return unit(points), truth, centres


def purity(labels: np.ndarray, truth: np.ndarray) -> float:
    """Share of items in the majority true class of their cluster (1.0: no cluster mixes)."""
    return sum(np.bincount(truth[labels == c]).max() for c in np.unique(labels)) / len(truth)


def orthogonal_groups(sizes: list[int], dim: int = 24, seed: int = 2) -> np.ndarray:
    """Groups living on disjoint coordinates: no positive cosine between groups."""
    rng = np.random.default_rng(seed)
    width = dim // len(sizes)
    rows = []
    for g, size in enumerate(sizes):
        block = np.zeros((size, dim))
        block[:, g * width:(g + 1) * width] = rng.random((size, width)) + 0.2
        rows.append(block)
    return unit(np.vstack(rows))


def test_well_separated_blobs_are_recovered():
    x, truth, _ = blobs(60, 4)
    result = spectral_clusters(x)
    assert result.k == 4
    assert purity(result.labels, truth) >= 0.95 and purity(truth, result.labels) >= 0.95
    assert result.labels.dtype == np.int32 and set(result.labels.tolist()) == {0, 1, 2, 3}
    assert result.eigengap == pytest.approx(result.eigenvalues[4] - result.eigenvalues[3])
    assert np.all(np.diff(result.eigenvalues) >= -1e-9)
    assert result.sampled == 240
    assert result.centroids.shape == (4, 64)
    assert np.allclose(np.linalg.norm(result.centroids, axis=1), 1.0, atol=1e-5)


def test_overlapping_blobs_through_lanczos_are_recovered():
    # 800 items: more than the dense limit, so the eigenvectors come from eigsh; the noise makes
    # every item's similarity to its own centre about 0.55, and the graph is one component.
    x, truth, _ = blobs(160, 5, dim=48, noise=1.5, seed=3)
    result = spectral_clusters(x)
    assert result.k == 5
    assert purity(result.labels, truth) >= 0.95 and purity(truth, result.labels) >= 0.95


def test_lanczos_spectrum_matches_a_dense_eigendecomposition():
    rng = np.random.default_rng(4)
    sizes = [300, 250, 150]  # three components, 700 nodes: the eigsh path
    blocks = [sparse.random(s, s, density=0.03, random_state=rng) for s in sizes]
    w = sparse.block_diag([b + b.T for b in blocks]).tocsr()
    degree = np.asarray(w.sum(axis=1)).ravel()
    assert degree.min() > 0
    component = np.repeat(np.arange(3), sizes)

    eigenvalues, vectors = _spectrum(w, degree, component, 3, 8, seed=0)

    scale = np.diag(1 / np.sqrt(degree))
    laplacian = np.eye(len(degree)) - scale @ w.toarray() @ scale
    assert np.allclose(eigenvalues, np.linalg.eigvalsh(laplacian)[:8], atol=1e-6)
    residual = laplacian @ vectors - vectors * eigenvalues
    assert np.abs(residual).max() < 1e-5


def test_structural_links_pull_two_blobs_together():
    x, truth, _ = blobs(40, 3, seed=5)
    first, second = np.flatnonzero(truth == 0), np.flatnonzero(truth == 1)
    links = [(int(i), int(j), 1.0) for i in first for j in second]

    def co_assigned(labels):
        return np.mean(labels[first][:, None] == labels[second][None, :])

    apart = spectral_clusters(x)
    together = spectral_clusters(x, links, SpectralSettings(structural_weight=1.0))
    assert co_assigned(apart.labels) == 0.0
    assert co_assigned(together.labels) == 1.0
    assert together.k == 2
    assert not set(together.labels[truth == 2]) & set(together.labels[first])


def test_disconnected_components_come_out_as_separate_clusters():
    x = orthogonal_groups([20, 30, 25])
    truth = np.repeat([0, 1, 2], [20, 30, 25])
    result = spectral_clusters(x)
    assert result.k == 3
    assert purity(result.labels, truth) == 1.0 and purity(truth, result.labels) == 1.0
    assert np.allclose(result.eigenvalues[:3], 0.0, atol=1e-9)


def test_more_components_than_max_clusters_keeps_each_component_whole():
    x = orthogonal_groups([20, 30, 25, 10])
    truth = np.repeat([0, 1, 2, 3], [20, 30, 25, 10])
    result = spectral_clusters(x, settings=SpectralSettings(max_clusters=3))
    assert result.k == 3
    assert purity(truth, result.labels) == 1.0  # no component is split


def test_same_seed_same_labels():
    x, _, _ = blobs(50, 6, noise=1.5, seed=6)
    settings = SpectralSettings(seed=7)
    assert np.array_equal(spectral_clusters(x, (), settings).labels,
                          spectral_clusters(x, (), settings).labels)
    sampled = SpectralSettings(seed=7, max_items=120)
    assert np.array_equal(spectral_clusters(x, (), sampled).labels,
                          spectral_clusters(x, (), sampled).labels)


def test_beyond_max_items_a_sample_is_clustered_and_the_rest_extended():
    x, truth, _ = blobs(100, 4, seed=8)
    result = spectral_clusters(x, settings=SpectralSettings(max_items=100))
    assert result.sampled == 100
    assert result.k == 4
    assert purity(result.labels, truth) >= 0.95 and purity(truth, result.labels) >= 0.95


def test_a_zero_vector_outside_the_sample_follows_its_link():
    x, _, _ = blobs(100, 4, seed=8)
    x = np.vstack([x, np.zeros((1, x.shape[1]), dtype=np.float32)])
    result = spectral_clusters(x, [(400, 0, 1.0)], SpectralSettings(max_items=100))
    assert result.labels[400] == result.labels[0]


def test_no_items():
    result = spectral_clusters(np.zeros((0, 8), dtype=np.float32))
    assert result.labels.shape == (0,) and result.k == 0 and result.sampled == 0
    assert result.centroids.shape == (0, 8)


@pytest.mark.parametrize("n", [1, 2])
def test_one_or_two_items_are_one_cluster(n):
    x, _, _ = blobs(n, 1)
    result = spectral_clusters(x)
    assert result.labels.tolist() == [0] * n and result.k == 1


def test_identical_vectors_are_one_cluster():
    x = np.tile(unit(np.arange(1.0, 9.0)[None, :]), (600, 1))
    result = spectral_clusters(x)
    assert set(result.labels.tolist()) == {0} and result.k == 1


def test_zero_vectors_are_unlabelled_unless_linked():
    x, truth, _ = blobs(30, 2, seed=9)
    x = np.vstack([x, np.zeros((2, 64), dtype=np.float32)])
    result = spectral_clusters(x, [(60, 45, 1.0)])
    assert result.labels[60] == result.labels[45]
    assert result.labels[61] == -1
    assert purity(result.labels[:60], truth) == 1.0


def test_only_zero_vectors():
    result = spectral_clusters(np.zeros((5, 8), dtype=np.float32))
    assert result.labels.tolist() == [-1] * 5 and result.k == 0


def test_an_item_unlike_all_others_joins_the_nearest_cluster():
    x = orthogonal_groups([20, 20], dim=8)
    odd = -x[:20].sum(axis=0, keepdims=True) - 0.01 * x[20:].sum(axis=0, keepdims=True)
    result = spectral_clusters(np.vstack([x, unit(odd)]))
    assert result.labels[40] == result.labels[20]  # cosine 0 with group 2, negative with group 1


@pytest.mark.parametrize("link", [(0, 10, 1.0), (-1, 2, 1.0), (0.5, 2, 1.0)])
def test_links_to_missing_items_are_rejected(link):
    x, _, _ = blobs(5, 2)
    with pytest.raises(ValueError, match="refers to an item that does not exist"):
        spectral_clusters(x, [link])


def test_negative_link_weights_are_rejected():
    x, _, _ = blobs(5, 2)
    with pytest.raises(ValueError, match="negative or not finite"):
        spectral_clusters(x, [(0, 1, -1.0)])


@pytest.mark.parametrize("kwargs", [{"knn": 0}, {"min_clusters": 5, "max_clusters": 4},
                                    {"structural_weight": -1.0}, {"max_items": 1}])
def test_invalid_settings_are_rejected(kwargs):
    with pytest.raises(ValueError):
        SpectralSettings(**kwargs)


def test_assign_puts_new_points_with_their_blob():
    x, truth, _ = blobs(60, 4, seed=10)
    result = spectral_clusters(x)
    blob_cluster = {t: np.bincount(result.labels[truth == t]).argmax() for t in range(4)}
    fresh, fresh_truth, _ = blobs(25, 4, seed=10)  # same centres, new noise
    labels = assign(np.vstack([fresh, np.zeros((1, 64))]), result.centroids)
    assert labels.dtype == np.int32
    assert labels[:-1].tolist() == [blob_cluster[t] for t in fresh_truth]
    assert labels[-1] == -1


def test_distinctive_terms_prefer_what_is_specific_to_a_cluster():
    labels = np.repeat([0, 1, 2], 10)
    topics = [["auth", "token"], ["sqlite", "schema"], ["hover", "lsp"]]
    items = []
    for i, label in enumerate(labels):
        terms = ["cortex", "fix", "the", "Merge"] + topics[label]
        if i % 2:
            terms.append("tests")  # common, spread evenly
        if label == 0 and i < 3:
            terms.append("session")  # specific but rarer than auth and token
        if label == 1 and i == 10:
            terms.append("wal")  # a single item: below min_count
        items.append(terms)

    terms = distinctive_terms(labels, items, top=3)

    assert terms == [["auth", "token", "session"], ["schema", "sqlite"], ["hover", "lsp"]]


def test_terms_counted_in_blocks_are_the_terms_of_all_items_at_once():
    labels = np.array([2, 0, 1, 0, -1, 2, 1, 0, 2, 1, 0, 2])
    items = [[["auth", "token"], ["sqlite", "wal"], ["hover", "lsp"]][i % 3] + ["cortex"]
             for i in range(len(labels))]
    counts = TermCounts()
    for start, stop in ((7, 12), (0, 5), (5, 7)):   # blocks of 5, 5 and 2, out of order
        counts.add(labels[start:stop], items[start:stop])
    assert counts.distinctive(top=3) == distinctive_terms(labels, items, top=3)
    # renumbered (2 -> 0, 0 -> 1, 1 -> 2): the same lists in the new order
    whole = distinctive_terms(labels, items, top=3)
    assert counts.renumbered([1, 2, 0]).distinctive(top=3) == [whole[2], whole[0], whole[1]]
    with pytest.raises(ValueError):
        counts.renumbered([0, 2, -1])


def test_the_knn_vote_of_a_block_is_its_rows_of_the_vote_of_all():
    x, truth, _ = blobs(30, 3, seed=4)
    voters, queries = x[::2], unit_rows(x[1::2])[0]
    everyone = knn_votes(queries, voters, truth[::2], 3, 5)
    # Same up to float32 rounding: BLAS may sum a block's products in another order.
    assert np.allclose(knn_votes(queries[4:9], voters, truth[::2], 3, 5), everyone[4:9],
                       rtol=1e-6, atol=0)
    assert (np.argmax(everyone, axis=1) == truth[1::2]).mean() >= 0.95


def test_distinctive_terms_checks_lengths():
    with pytest.raises(ValueError):
        distinctive_terms(np.array([0, 1]), [["a"]])


def test_unit_rows_scales_in_blocks_to_the_same_values():
    """Row by row as the whole-array formula did (float64, then float32), zero rows kept zero,
    holding little beyond its result: the whole array in float64 and its quotient were five
    times the result (numpy reports its buffers to tracemalloc)."""
    import tracemalloc
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20_000, 512)).astype(np.float32)
    x[::97] = 0.0
    v = x.astype(np.float64)
    norms = np.linalg.norm(v, axis=1)
    expected = (v / np.where(norms > 1e-12, norms, 1.0)[:, None]).astype(np.float32)
    del v
    tracemalloc.start()
    try:
        got, has_vector = unit_rows(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(got, expected)
    assert np.array_equal(has_vector, np.linalg.norm(x, axis=1) > 0)
    assert peak < 1.6 * got.nbytes
    with pytest.raises(ValueError, match="NaN or infinite"):
        unit_rows(np.vstack([x[:5000], [[np.nan] * 512]]))


def test_identical_vectors_are_one_node_found_by_digest():
    """Duplicates anywhere (not only adjacent), zero rows apart: the same nodes, in order of
    first appearance, as comparing whole rows gives."""
    from cortex_core.memory.spectral import _collapse
    rng = np.random.default_rng(4)
    base = unit(rng.standard_normal((50, 16)))
    picks = rng.integers(0, 50, size=400)
    x = base[picks]
    x[::37] = 0.0
    has_vector = np.linalg.norm(x, axis=1) > 0
    node_of, node_items = _collapse(x, has_vector)
    first_seen: dict[bytes, int] = {}
    for i in np.flatnonzero(has_vector):
        first_seen.setdefault(x[i].tobytes(), len(first_seen))
    assert [node_of[i] for i in np.flatnonzero(has_vector)] == \
        [first_seen[x[i].tobytes()] for i in np.flatnonzero(has_vector)]
    assert len(node_items) == len(first_seen) + int(np.count_nonzero(~has_vector))
    zeros = np.flatnonzero(~has_vector)
    assert list(node_of[zeros]) == list(range(len(first_seen), len(first_seen) + len(zeros)))


def test_vectors_already_unit_are_clustered_the_same_without_a_copy():
    x, _, _ = blobs(40, 3)
    plain = spectral_clusters(x)
    given = spectral_clusters(x, unit=unit_rows(x))
    assert np.array_equal(plain.labels, given.labels)
    assert np.allclose(plain.centroids, given.centroids)


def test_similarities_of_an_array_with_itself_are_those_of_two_copies():
    """`A @ A.T` on one buffer goes to BLAS's syrk, which rounds otherwise than gemm on a few
    dozen rows; the kNN step passes one array twice and must see what two copies give (small
    graphs tie often, and rounding would pick their number of clusters)."""
    from cortex_core.memory.spectral import _nearest
    rng = np.random.default_rng(5)
    for rows in (4, 20, 34, 300):
        x = unit(rng.standard_normal((rows, 64)))
        k = min(3, rows - 1)
        same = _nearest(x, x, k, same=True)
        apart = _nearest(x, x.copy(), k, same=True)
        assert np.array_equal(same[0], apart[0]) and np.array_equal(same[1], apart[1]), rows
