"""In-memory KNN over chunk vectors: binary codes for the scan, float16 for rescoring.

sqlite-vec's float KNN is a full scan (~84 ms at 100k x 768 on the 2-core box) and
its point lookups are slow, so `chunk_vec` stays the persistent source and this
snapshot answers queries: hamming distance over sign bits (around the mean vector) picks `rescore`
candidates, exact cosine over their float16 vectors orders them (figures:
evals/results/vector_bench.md). Visibility and source_type are masks applied
before any cut. A snapshot is rebuilt when the store's generation changes.
"""

from __future__ import annotations

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
        self, query: np.ndarray, *, viewer_id: str, source_type: str | None, k: int, rescore: int
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine distance) of the k nearest visible rows, nearest first."""
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
        if visible <= rescore:
            rows = np.flatnonzero(mask)
        else:
            # Scan every row (no copy of the masked subset), then push hidden rows last.
            hamming = _hamming(self.bits, _sign_bits(query - self.center))
            hamming[~mask] = np.iinfo(hamming.dtype).max
            rows = np.argpartition(hamming, rescore)[:rescore]
        distance = 1.0 - self.floats[rows].astype(np.float32) @ query
        order = np.lexsort((rows, distance))[:k]
        return [(self.ids[rows[i]], float(distance[i])) for i in order]


def build(generation: str | None, rows: list[tuple[str, bytes, str, str]], dim: int) -> Snapshot:
    """A snapshot from (chunk id, float32 blob, owner id or '', source type) rows."""
    owner_codes: dict[str, int] = {"": 0}
    type_codes: dict[str, int] = {}
    matrix = np.zeros((len(rows), dim), dtype=np.float32)
    owners = np.zeros(len(rows), dtype=np.int32)
    types = np.zeros(len(rows), dtype=np.int32)
    for i, (_, blob, owner, source_type) in enumerate(rows):
        matrix[i] = np.frombuffer(blob, dtype=np.float32)
        owners[i] = owner_codes.setdefault(owner, len(owner_codes))
        types[i] = type_codes.setdefault(source_type, len(type_codes))
    matrix = _unit(matrix)
    # Embedding models share a large mean component; signs around the mean carry the
    # information that signs around zero would spend on that shared offset.
    center = matrix.mean(axis=0) if len(rows) else np.zeros(dim, dtype=np.float32)
    return Snapshot(
        generation=generation,
        ids=[row[0] for row in rows],
        owners=owners,
        types=types,
        bits=np.ascontiguousarray(_sign_bits(matrix - center).T),
        floats=matrix.astype(np.float16),
        center=center,
        owner_codes=owner_codes,
        type_codes=type_codes,
    )


def _hamming(columns: np.ndarray, query_words: np.ndarray) -> np.ndarray:
    total = np.zeros(columns.shape[1], dtype=np.uint16)
    for column, word in zip(columns, query_words, strict=True):
        total += np.bitwise_count(column ^ word)
    return total


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
