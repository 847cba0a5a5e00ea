"""In-memory KNN over one vector table (or one user's part of it): binary codes for the
scan, stored floats for rescoring.

sqlite-vec's float KNN is a full scan (~84 ms at 100k x 768 on the 2-core box), so the
SQLite tables are the persistent source and an `Index` answers queries: hamming distance
over sign bits (around the mean vector) picks `rescore` candidates, exact cosine over
their stored vectors orders them (figures: evals/results/vector_bench.md). Knowledge
chunks and messages keep float16 (half the memory); facts and memories keep float32, so
distances are the ones vec0 gives. Visibility and source_type are masks applied before
any cut.

An `Index` grows in place: rows are appended into arrays whose capacity doubles (an
in-process or another process's write costs the new rows, not a copy of the index), a
deleted or rewritten row is a tombstone in the `live` mask, and `rebuild` compacts the
arrays and recomputes the mean once tombstones pile up or the index has doubled since
its mean was taken. Searches read a `View`: the arrays up to the row count of the moment
and a copy of the mask, which later appends and tombstones do not touch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# (row id, float32 blob, owner id or '', kind, content hash)
Row = tuple[str, bytes, str, str, str]
MIN_REBUILD = 1024  # below this many rows, tombstones and an old mean cost nothing


@dataclass(frozen=True)
class View:
    ids: list[str]  # may grow past `n` after the view was taken: read below `n` only
    hashes: list[str]
    n: int
    owners: np.ndarray  # int32 code per row; 0 = shared
    types: np.ndarray  # int32 code per row
    bits: np.ndarray  # words x n uint64 sign bits (word-major: one pass per word is fastest)
    floats: np.ndarray  # n x D, unit length
    live: np.ndarray  # bool per row: False for a deleted or rewritten row
    center: np.ndarray  # mean vector: sign bits are taken relative to it
    owner_codes: dict[str, int]
    type_codes: dict[str, int]

    def search(
        self, query: np.ndarray, *, viewer_id: str = "", source_type: str | None = None, k: int,
        rescore: int | None,
    ) -> list[tuple[str, float, str]]:
        """(row id, cosine distance, content hash) of the k nearest visible rows, nearest
        first. `rescore=None` scores every visible row exactly (no binary pre-selection)."""
        if not self.n or k <= 0:
            return []
        mask = self.live & (self.owners == 0)
        if viewer_id in self.owner_codes:
            mask |= self.live & (self.owners == self.owner_codes[viewer_id])
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
        elif visible == self.n:
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
        return [(self.ids[rows[i]], float(distance[i]), self.hashes[rows[i]]) for i in order]


class Index:
    """The rows of one vector table (or partition) in growable arrays. Not locked:
    the owner (`store/sqlite/_vecfeed.py`) serialises `add`/`remove`/`view`."""

    def __init__(self, dim: int, dtype=np.float16) -> None:
        self.dim, self.dtype = dim, dtype
        self.owner_codes: dict[str, int] = {"": 0}
        self.type_codes: dict[str, int] = {}
        self._start(np.zeros(dim, dtype=np.float32), 0)

    def _start(self, center: np.ndarray, capacity: int) -> None:
        """Empty arrays of `capacity` rows with bits around `center` (new lists too: views
        taken before keep theirs)."""
        self.center, self.centered = center, 0
        self.ids: list[str] = []
        self.hashes: list[str] = []
        self.row_of: dict[str, int] = {}
        self.n = self.dead = 0
        self._arrays(capacity)

    def _arrays(self, capacity: int, keep: int = 0) -> None:
        """New arrays of `capacity` rows holding the first `keep` rows of the current ones."""
        words = -(-self.dim // 64)
        owners, types = np.zeros(capacity, np.int32), np.zeros(capacity, np.int32)
        bits = np.zeros((words, capacity), np.uint64)
        floats = np.zeros((capacity, self.dim), self.dtype)
        live = np.zeros(capacity, bool)
        if keep:
            owners[:keep], types[:keep] = self.owners[:keep], self.types[:keep]
            bits[:, :keep], floats[:keep] = self.bits[:, :keep], self.floats[:keep]
            live[:keep] = self.live[:keep]
        self.owners, self.types, self.bits, self.floats, self.live = (
            owners, types, bits, floats, live)

    @property
    def size(self) -> int:
        """Live rows."""
        return self.n - self.dead

    def load(self, rows: list[Row]) -> None:
        """Replace everything with `rows`, bits around their mean."""
        matrix = _matrix(rows, self.dim)
        # Embedding models share a large mean component; signs around the mean carry the
        # information that signs around zero would spend on that shared offset.
        self._start(matrix.mean(axis=0) if len(rows) else np.zeros(self.dim, np.float32),
                    _room(len(rows)))
        self._append(rows, matrix)
        self.centered = self.n

    def add(self, rows: list[Row]) -> None:
        """Append rows (a row already present is replaced: its old row is a tombstone)."""
        self.remove(row[0] for row in rows)
        if rows:
            self._append(rows, _matrix(rows, self.dim))

    def remove(self, ids) -> None:
        for row_id in ids:
            row = self.row_of.pop(row_id, None)
            if row is not None:
                self.live[row] = False
                self.dead += 1

    def _append(self, rows: list[Row], matrix: np.ndarray) -> None:
        start, end = self.n, self.n + len(rows)
        if end > len(self.live):  # amortised: doubling keeps appends O(new rows)
            self._arrays(max(2 * len(self.live), end, 64), keep=start)
        self.owners[start:end] = [self.owner_codes.setdefault(r[2], len(self.owner_codes))
                                  for r in rows]
        self.types[start:end] = [self.type_codes.setdefault(r[3], len(self.type_codes))
                                 for r in rows]
        self.bits[:, start:end] = _sign_bits(matrix - self.center).T
        self.floats[start:end] = matrix
        self.live[start:end] = True
        self.row_of.update((r[0], start + i) for i, r in enumerate(rows))
        self.ids.extend(r[0] for r in rows)
        self.hashes.extend(r[4] for r in rows)
        self.n = end

    def stale(self) -> bool:
        """Worth a `rebuild`: many tombstones, or twice the rows the mean was taken over."""
        if self.n < MIN_REBUILD:
            return False
        return self.dead > self.n // 4 or self.size > 2 * max(self.centered, 1)

    def rebuild(self) -> None:
        """Compact away tombstones and take the mean again (from the stored floats)."""
        keep = np.flatnonzero(self.live[:self.n])
        owner_names, type_names = _names(self.owner_codes), _names(self.type_codes)
        rows = [(self.ids[i], b"", owner_names[self.owners[i]], type_names[self.types[i]],
                 self.hashes[i]) for i in keep]
        matrix = self.floats[keep].astype(np.float32)
        self._start(matrix.mean(axis=0) if len(keep) else self.center, _room(len(keep)))
        self._append(rows, matrix)
        self.centered = self.n

    def view(self) -> View:
        n = self.n
        return View(ids=self.ids, hashes=self.hashes, n=n, owners=self.owners[:n],
                    types=self.types[:n], bits=self.bits[:, :n], floats=self.floats[:n],
                    live=self.live[:n].copy(), center=self.center,
                    owner_codes=self.owner_codes, type_codes=self.type_codes)

    # -- persistence (store/sqlite/_vecfeed.py writes these arrays to a file) ----------

    def arrays(self) -> dict[str, np.ndarray]:
        """The live rows, compacted (call `rebuild` first for a fresh mean)."""
        keep = np.flatnonzero(self.live[:self.n])
        return {"ids": np.array(self.ids, dtype=str)[keep] if self.n else np.array([], str),
                "hashes": np.array(self.hashes, dtype=str)[keep] if self.n
                else np.array([], str),
                "owners": self.owners[keep], "types": self.types[keep],
                "bits": self.bits[:, keep], "floats": self.floats[keep], "center": self.center,
                "owner_names": np.array(_names(self.owner_codes), dtype=str),
                "type_names": np.array(_names(self.type_codes), dtype=str)}

    def restore(self, saved) -> None:
        """Take the arrays `arrays` gave from a `_snapshot.Snapshot` (ValueError when they
        do not fit); the large ones are read straight into this index's arrays."""
        ids = saved["ids"]
        n = len(ids)
        if (saved.shape("floats") != (n, self.dim)
                or saved.shape("bits") != (-(-self.dim // 64), n)):
            raise ValueError("snapshot arrays do not fit this index")
        self._start(np.asarray(saved["center"], np.float32), _room(n))
        self.owner_codes = {name: i for i, name in enumerate(saved["owner_names"].tolist())}
        self.type_codes = {name: i for i, name in enumerate(saved["type_names"].tolist())}
        self.owners[:n], self.types[:n] = saved["owners"], saved["types"]
        saved.read_into("bits", self.bits[:, :n])
        saved.read_into("floats", self.floats[:n])
        self.live[:n] = True
        self.ids, self.hashes = ids.tolist(), saved["hashes"].tolist()
        self.row_of = {row_id: i for i, row_id in enumerate(self.ids)}
        self.n = self.centered = n


def _room(rows: int) -> int:
    """Capacity for `rows` and as many appends: the first writes after a load copy
    nothing, and untouched zeroed pages cost no memory."""
    return 2 * rows + 64


def _names(codes: dict[str, int]) -> list[str]:
    return sorted(codes, key=codes.__getitem__)


def _matrix(rows: list[Row], dim: int) -> np.ndarray:
    blobs = b"".join(row[1] for row in rows)
    return _unit(np.frombuffer(blobs, dtype=np.float32).reshape(len(rows), dim))


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
