"""A vector index's snapshot file: named arrays one after another, each a record in
numpy's own .npy format (no zip), read back by name.

`read_into` reads an array's bytes straight into the caller's array, the index's
preallocated one. From an `.npz` (a zip member per array, its CRC, a new array, then a
copy into the index's arrays) a new process's first search of 100k 768-d facts took
214-287 ms; read in place, 79-83 ms (evals/results/snapshot_restore.md).
"""

from __future__ import annotations

import math
from typing import BinaryIO

import numpy as np

_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0,
            (2, 0): np.lib.format.read_array_header_2_0}


def write(out: BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """`arrays` in order, after a record of their names."""
    np.lib.format.write_array(out, np.array(list(arrays), dtype=str), allow_pickle=False)
    for array in arrays.values():
        np.lib.format.write_array(out, np.asarray(array, order="C"), allow_pickle=False)


class Snapshot:
    """The records of an open snapshot file (ValueError or KeyError when it is not one)."""

    def __init__(self, fp: BinaryIO) -> None:
        self._fp = fp
        self._records: dict[str, tuple[tuple[int, ...], np.dtype, int]] = {}
        names = self._read(*self._record())  # leaves the file at the next record
        for name in names.tolist():
            self._records[name] = self._record()

    def _record(self) -> tuple[tuple[int, ...], np.dtype, int]:
        """(shape, dtype, offset of the data) of the record at the file's position,
        which then moves past it."""
        version = np.lib.format.read_magic(self._fp)
        if version not in _HEADERS:
            raise ValueError(f"unknown .npy version {version}")
        shape, fortran_order, dtype = _HEADERS[version](self._fp)
        if fortran_order or dtype.hasobject:
            raise ValueError("snapshot arrays are C-ordered plain data")
        offset = self._fp.tell()
        self._fp.seek(offset + dtype.itemsize * math.prod(shape))
        return shape, dtype, offset

    def _read(self, shape: tuple[int, ...], dtype: np.dtype, offset: int) -> np.ndarray:
        self._fp.seek(offset)
        size = dtype.itemsize * math.prod(shape)
        data = self._fp.read(size)
        if len(data) != size:
            raise ValueError("snapshot file is truncated")
        return np.frombuffer(data, dtype=dtype).reshape(shape)

    @property
    def names(self) -> list[str]:
        return list(self._records)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._records[name][0]

    def __getitem__(self, name: str) -> np.ndarray:
        """A small array, read-only."""
        return self._read(*self._records[name])

    def read_into(self, name: str, target: np.ndarray) -> None:
        """Fill `target` (same shape and dtype; each row contiguous) with the array."""
        shape, dtype, offset = self._records[name]
        if shape != target.shape or dtype != target.dtype:
            raise ValueError(f"snapshot {name} is {dtype}{shape}, not {target.dtype}"
                             f"{target.shape}")
        self._fp.seek(offset)
        for part in [target] if target.flags.c_contiguous else target:
            buffer = memoryview(part).cast("B")
            if self._fp.readinto(buffer) != len(buffer):
                raise ValueError("snapshot file is truncated")
