"""In-memory KNN over chunk vectors: binary codes for the scan, float16 for rescoring.

sqlite-vec's float KNN is a full scan (~84 ms at 100k x 768 on the 2-core box), so
`chunk_vec` (a plain table of float32 blobs) is the persistent source and this
snapshot answers queries: hamming distance over sign bits (around the mean vector) picks `rescore`
candidates, exact cosine over their float16 vectors orders them (figures:
evals/results/vector_bench.md). Visibility and source_type are masks applied
before any cut. A snapshot is rebuilt when the store's generation changes.

`Partitions` keeps snapshots per user for the per-user tables: exact float32 for
the small vec0 ones (`fact_vec`, `user_memory_vec`; vec0's KNN reads every vector
of the partition from SQLite on each query, numpy scores an in-memory copy in a
fraction of that), binary codes + float16 for `message_vec` (an exact scan of a
user's 100k messages takes ~12 ms, the codes ~2 ms).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Snapshot:
    generation: str | None
    ids: list[str]
    owners: np.ndarray  # int32 code per row; 0 = shared
    types: np.ndarray  # int32 code per row
    bits: np.ndarray  # words x N uint64 sign bits (word-major: one pass per word is fastest)
    floats: np.ndarray  # N x D float16, unit length
    center: np.ndarray  # mean vector: sign bits are taken relative to it
    owner_codes: dict[str, int]
    type_codes: dict[str, int]

    def search(
        self, query: np.ndarray, *, viewer_id: str = "", source_type: str | None = None, k: int,
        rescore: int | None,
    ) -> list[tuple[str, float]]:
        """(row id, cosine distance) of the k nearest visible rows, nearest first.
        `rescore=None` scores every visible row exactly (no binary pre-selection)."""
        if not self.ids or k <= 0:
            return []
        mask = self.owners == 0
        if viewer_id in self.owner_codes:
            mask |= self.owners == self.owner_codes[viewer_id]
        if source_type is not None:
            mask &= self.types == self.type_codes.get(source_type, -1)
        visible = int(mask.sum())
        if visible == 0:
            return []
        query = _unit(query.astype(np.float32))
        floats = self.floats
        if rescore is not None and visible > rescore:
            # Scan every row (no copy of the masked subset), then push hidden rows last.
            hamming = _hamming(self.bits, _sign_bits(query - self.center))
            hamming[~mask] = np.iinfo(hamming.dtype).max
            # The `rescore` nearest codes plus any tied with the last: a histogram of the
            # small distances finds the cut faster than argpartition over every row.
            cut = np.searchsorted(np.cumsum(np.bincount(hamming)), rescore)
            rows = np.flatnonzero(hamming <= cut)
            floats = floats[rows]
        elif visible == len(self.ids):
            rows = np.arange(visible)  # everything visible: score in place, no copy
        else:
            rows = np.flatnonzero(mask)
            floats = floats[rows]
        # vecdot, not `@`: BLAS's threads cost 10x on a busy box for this matrix-vector product.
        distance = 1.0 - np.vecdot(_float32(floats), query)
        if k < len(rows):
            # Same answer as sorting everything: keep every row tied with the k-th.
            near = np.flatnonzero(distance <= np.partition(distance, k - 1)[k - 1])
            rows, distance = rows[near], distance[near]
        order = np.lexsort((rows, distance))[:k]
        return [(self.ids[rows[i]], float(distance[i])) for i in order]

    def changed(self, generation: str, remove: set[str], rows: list) -> Snapshot:
        """A copy without the `remove` ids and with `rows` appended: an in-process write
        costs a copy of the arrays instead of a reload. Bits keep the old mean vector.
        With nothing to remove (new rows: the usual write) the arrays are copied once,
        with no per-row mask."""
        keep = (np.array([i not in remove for i in self.ids], dtype=bool) if remove
                else slice(None))
        added = build(generation, rows, self.floats.shape[1], center=self.center,
                      owner_codes=dict(self.owner_codes), type_codes=dict(self.type_codes),
                      dtype=self.floats.dtype)
        kept = [i for i in self.ids if i not in remove] if remove else self.ids
        return Snapshot(
            generation=generation,
            ids=kept + added.ids,
            owners=np.concatenate([self.owners[keep], added.owners]),
            types=np.concatenate([self.types[keep], added.types]),
            bits=np.concatenate([self.bits[:, keep], added.bits], axis=1),
            floats=np.concatenate([self.floats[keep], added.floats]),
            center=self.center,
            owner_codes=added.owner_codes,
            type_codes=added.type_codes,
        )


def build(
    generation: str | None, rows: list[tuple[str, bytes, str, str]], dim: int, *,
    center: np.ndarray | None = None, owner_codes: dict | None = None,
    type_codes: dict | None = None, dtype=np.float16,
) -> Snapshot:
    """A snapshot from (row id, float32 blob, owner id or '', source type) rows;
    `dtype` is the precision kept for scoring (float32: distances as vec0 gives them)."""
    owner_codes = owner_codes if owner_codes is not None else {"": 0}
    type_codes = type_codes if type_codes is not None else {}
    blobs = b"".join(row[1] for row in rows)
    matrix = _unit(np.frombuffer(blobs, dtype=np.float32).reshape(len(rows), dim))
    owners = np.array([owner_codes.setdefault(row[2], len(owner_codes)) for row in rows],
                      dtype=np.int32)
    types = np.array([type_codes.setdefault(row[3], len(type_codes)) for row in rows],
                     dtype=np.int32)
    # Embedding models share a large mean component; signs around the mean carry the
    # information that signs around zero would spend on that shared offset.
    if center is None:
        center = matrix.mean(axis=0) if len(rows) else np.zeros(dim, dtype=np.float32)
    return Snapshot(
        generation=generation,
        ids=[row[0] for row in rows],
        owners=owners,
        types=types,
        bits=np.ascontiguousarray(_sign_bits(matrix - center).T),
        floats=matrix.astype(dtype),
        center=center,
        owner_codes=owner_codes,
        type_codes=type_codes,
    )


class Partitions:
    """Exact per-partition (user) snapshots of one vec0 table, least recently used
    dropped past `capacity`, plus each row's content hash for the stale-vector test.

    The owner keeps a generation per partition (bumped in every vector-writing
    transaction, also by other processes); a cached snapshot answers only while
    its generation is the current one, and in-process writes patch it in place.
    """

    def __init__(self, dim: int, *, capacity: int = 32, dtype=np.float32) -> None:
        self.dim = dim
        self.dtype = dtype
        self.capacity = capacity
        self._cached: OrderedDict[str, tuple[Snapshot, dict[str, str]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, generation: str, load: Callable[[], list]):
        """(snapshot, id -> content hash) at `generation`; `load` returns
        (id, float32 blob, content hash) rows read at that generation."""
        with self._lock:
            found = self._cached.get(key)
            if found is not None and found[0].generation == generation:
                self._cached.move_to_end(key)
                return found
        rows = load()
        found = (build(generation, [(r[0], r[1], "", "") for r in rows], self.dim,
                       dtype=self.dtype), {r[0]: r[2] for r in rows})
        with self._lock:
            self._cached[key] = found
            self._cached.move_to_end(key)
            while len(self._cached) > self.capacity:
                self._cached.popitem(last=False)
        return found

    def forget(self, key: str) -> None:
        with self._lock:
            self._cached.pop(key, None)

    def changed(self, key: str, before: str, after: str, remove: set[str], rows: list) -> None:
        """Patch `key`'s snapshot from `before` to `after` (inside the writing transaction:
        after a rollback `after` never becomes current and the next search reloads)."""
        with self._lock:
            found = self._cached.pop(key, None)
            if found is None or found[0].generation != before:
                return
            snapshot, hashes = found
            remove = remove & hashes.keys()  # rows written anew are not in the copy yet
            # A new dict: searches may still read the one of the snapshot replaced here.
            hashes = ({i: h for i, h in hashes.items() if i not in remove} if remove
                      else dict(hashes))
            hashes.update((r[0], r[2]) for r in rows)
            self._cached[key] = (
                snapshot.changed(after, remove, [(r[0], r[1], "", "") for r in rows]), hashes)


def _hamming(columns: np.ndarray, query_words: np.ndarray) -> np.ndarray:
    total = np.zeros(columns.shape[1], dtype=np.uint16)
    for column, word in zip(columns, query_words, strict=True):
        total += np.bitwise_count(column ^ word)
    return total


def _float32(x: np.ndarray) -> np.ndarray:
    """`x` as float32. From float16 by way of float64: the same values (float64 holds
    every float16 exactly), in about half the time of numpy's direct cast, which has no
    SIMD path on the x86 box (0.6 vs 1.0 ms for a rescore of 450 x 384)."""
    if x.dtype == np.float16:
        return x.astype(np.float64).astype(np.float32)
    return x.astype(np.float32, copy=False)


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms == 0, 1, norms)


def _sign_bits(x: np.ndarray) -> np.ndarray:
    """Sign bits packed into uint64 words (the dimension is padded to 64)."""
    packed = np.packbits(x > 0, axis=-1)
    pad = (-packed.shape[-1]) % 8
    if pad:
        widths = [(0, 0)] * (packed.ndim - 1) + [(0, pad)]
        packed = np.pad(packed, widths)
    return np.ascontiguousarray(packed).view(np.uint64)
