"""The index's embeddings as one matrix in memory, for servers that search many times.

sqlite-vec answers a nearest-neighbour query by reading every vector from the store: on scrapy's
13,619 vectors of 256 dimensions, 13 ms a query for the 200 nearest, a third of a search in the
language server. The same ranking from a matrix held in memory takes under a millisecond
(numpy: one matrix-vector product and a partial sort). Loading the matrix costs about 120 ms
and 4 bytes per dimension per vector (14 MB there), so only long-lived front ends (the language
server, the MCP server) keep one (`Engine(keep_vectors=True)`); the command line, which
searches once, asks sqlite-vec.

The matrix is the snapshot's: it is loaded inside a read transaction and stays valid while the
index's vectors stay the same. The indexer writes a new token to the meta key `vectors_version`
whenever it adds, removes or drops vectors (index/memory.py); an index older than that token is
told apart by SQLite's `data_version`, which changes with any write by another connection.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Above this size the matrix is not kept: sqlite-vec answers, slower but in bounded memory.
MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class VectorMatrix:
    ids: np.ndarray            # the rowids of item_vectors, ascending
    unit: np.ndarray           # one row per id, scaled to unit length (a zero row stays zero)

    def nearest(self, query: bytes, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the k nearest vectors, nearest first, as sqlite-vec's
        `distance_metric=cosine` gives them; ties in rowid order."""
        q = np.frombuffer(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0 or len(self.ids) == 0 or k <= 0:
            return []
        similarity = self.unit @ (q / norm)
        k = min(k, len(self.ids))
        top = np.argpartition(-similarity, k - 1)[:k] if k < len(self.ids) \
            else np.arange(len(self.ids))
        top = top[np.lexsort((self.ids[top], -similarity[top]))]
        return [(int(i), float(1.0 - s)) for i, s in zip(self.ids[top], similarity[top])]


def version_key(con) -> tuple:
    """What identifies the vectors the connection's snapshot sees."""
    from cortex_core.store.store import get_meta
    version: object = get_meta(con, "vectors_version")
    if version is None:     # an index from before the token: any write may have changed them
        version = ("data_version", con.execute("pragma data_version").get)
    return (get_meta(con, "embed_fingerprint"), version)


def load(con, max_bytes: int = MAX_BYTES) -> VectorMatrix | None:
    """The vectors of `item_vectors` as a matrix; None when there are none or they would take
    more than `max_bytes`."""
    if con.execute("select 1 from sqlite_master where name = 'item_vectors'").fetchone() is None:
        return None
    ids: list[int] = []
    blobs: list[bytes] = []
    size = 0
    for rowid, blob in con.execute("select rowid, embedding from item_vectors"):
        size += len(blob)
        if size > max_bytes:
            return None
        ids.append(rowid)
        blobs.append(blob)
    if not ids:
        return None
    order = np.argsort(np.asarray(ids, dtype=np.int64), kind="stable")
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)[order]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return VectorMatrix(np.asarray(ids, dtype=np.int64)[order], unit)
