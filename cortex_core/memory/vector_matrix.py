"""The index's embeddings as one matrix in memory, for servers that search many times.

sqlite-vec answers a nearest-neighbour query by reading every vector from the store: on scrapy's
13,619 vectors of 256 dimensions, 13 ms a query for the 200 nearest, a third of a search in the
language server. The same ranking from a matrix held in memory takes about a millisecond
(numpy: one matrix-vector product and a partial sort). Loading the matrix costs about 120 ms
and 4 bytes per dimension per vector (14 MB there), so only long-lived front ends (the language
server, the MCP server) keep one (`Engine(keep_vectors=True)`); the command line, which
searches once, asks sqlite-vec.

The matrix is the snapshot's: it is loaded inside a read transaction and stays valid while the
index's vectors stay the same (`version_key`). The indexer writes a new random token to the meta
key `vectors_version` whenever it adds, removes or drops vectors (index/memory.py); the number
and the largest id of the vectors are in the key too, for an indexer from before the token (an
older `cortex` run by a git hook while the editor's server is newer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Above this size the matrix is not kept: sqlite-vec answers, slower but in bounded memory.
MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class VectorMatrix:
    ids: np.ndarray            # the rowids of item_vectors, ascending
    unit: np.ndarray           # one row per id, scaled to unit length

    def nearest(self, query: bytes, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the k nearest vectors, nearest first: sqlite-vec's
        `distance_metric=cosine` distances. Equal distances (identical texts' vectors) come in
        rowid order, at the cut too; sqlite-vec orders them its own way."""
        q = np.frombuffer(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if not np.isfinite(norm) or norm == 0 or len(self.ids) == 0 or k <= 0:
            return []
        similarity = self.unit @ (q / norm)
        if k < len(self.ids):
            # Every row as close as the k-th, so that ties at the cut are broken by rowid.
            kth = np.partition(similarity, len(similarity) - k)[len(similarity) - k]
            top = np.flatnonzero(similarity >= kth)
        else:
            top = np.arange(len(self.ids))
        top = top[np.lexsort((self.ids[top], -similarity[top]))][:k]
        return [(int(i), max(0.0, float(1.0 - s))) for i, s in zip(self.ids[top], similarity[top])]


def version_key(con) -> tuple:
    """What identifies the vectors the snapshot sees: the model, the indexer's token, and the
    number and largest id of the vectors (which an indexer from before the token changes too)."""
    from cortex_core.store.store import get_meta
    count, largest = con.execute("select count(*), max(id) from vectors").fetchone()
    return (get_meta(con, "embed_fingerprint"), get_meta(con, "vectors_version"), count, largest)


def load(con, max_bytes: int = MAX_BYTES) -> VectorMatrix | None:
    """The vectors of `item_vectors` as a matrix; None when there are none, or when they would
    take more than `max_bytes` (then nothing is read). Memory: the matrix, plus one copy of it
    while rows are put in rowid order."""
    from cortex_core.store.store import get_meta
    if con.execute("select 1 from sqlite_master where name = 'item_vectors'").fetchone() is None:
        return None
    dim = get_meta(con, "embed_dim")
    count = con.execute("select count(*) from vectors").fetchone()[0]
    if not dim or not dim.isdigit() or not count or count * int(dim) * 4 > max_bytes:
        return None
    width = int(dim)
    matrix = np.zeros((count, width), dtype=np.float32)
    ids = np.zeros(count, dtype=np.int64)
    n = 0
    for rowid, blob in con.execute("select rowid, embedding from item_vectors"):
        if n == count:          # more vectors than `vectors` rows: not this index's shape
            return None
        if len(blob) == width * 4:
            matrix[n] = np.frombuffer(blob, dtype=np.float32)
        ids[n] = rowid
        n += 1
    matrix, ids = matrix[:n], ids[:n]
    if n and np.any(ids[1:] < ids[:-1]):
        order = np.argsort(ids, kind="stable")
        matrix, ids = matrix[order], ids[order]
    # A damaged vector (not finite, or the wrong width) has no distance in sqlite-vec either:
    # it is left out.
    norms = np.linalg.norm(matrix, axis=1)
    usable = np.isfinite(norms) & (norms > 0)
    if not usable.all():
        matrix, ids, norms = matrix[usable], ids[usable], norms[usable]
    matrix /= norms[:, None]
    return VectorMatrix(ids, matrix) if len(ids) else None
