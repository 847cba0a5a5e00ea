"""Snapshot files (store/sqlite/_snapshot.py): arrays written in order, read back by
name, the large ones straight into a caller's array, rows apart when it is a slice."""

from __future__ import annotations

import io

import numpy as np
import pytest

from store.sqlite import _snapshot


def _written(arrays: dict[str, np.ndarray]) -> io.BytesIO:
    out = io.BytesIO()
    _snapshot.write(out, arrays)
    out.seek(0)
    return out


def test_arrays_come_back_by_name():
    rng = np.random.default_rng(1)
    arrays = {"header": np.array('{"a": 1}'), "ids": np.array(["x", "yy", "zzz"]),
              "floats": rng.standard_normal((3, 5)).astype(np.float16),
              "bits": rng.integers(0, 2**63, (2, 3), dtype=np.uint64)}
    saved = _snapshot.Snapshot(_written(arrays))
    assert saved.names == ["header", "ids", "floats", "bits"]
    assert str(saved["header"]) == '{"a": 1}'
    assert saved["bits"].tolist() == arrays["bits"].tolist()
    assert saved["ids"].tolist() == ["x", "yy", "zzz"]
    assert saved.shape("floats") == (3, 5)


def test_read_into_fills_a_slice_of_a_larger_array():
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2**63, (2, 3), dtype=np.uint64)
    floats = rng.standard_normal((3, 4)).astype(np.float16)
    saved = _snapshot.Snapshot(_written({"bits": bits, "floats": floats}))
    room_bits, room_floats = np.zeros((2, 8), np.uint64), np.zeros((8, 4), np.float16)
    saved.read_into("bits", room_bits[:, :3])  # rows not contiguous with each other
    saved.read_into("floats", room_floats[:3])
    assert room_bits[:, :3].tolist() == bits.tolist() and not room_bits[:, 3:].any()
    assert room_floats[:3].tolist() == floats.tolist() and not room_floats[3:].any()


def test_a_shape_or_type_that_does_not_fit_is_refused():
    saved = _snapshot.Snapshot(_written({"floats": np.ones((3, 4), np.float32)}))
    with pytest.raises(ValueError, match="float32"):
        saved.read_into("floats", np.zeros((3, 4), np.float16))
    with pytest.raises(ValueError, match=r"\(3, 4\)"):
        saved.read_into("floats", np.zeros((2, 4), np.float32))


@pytest.mark.parametrize("damage", [lambda b: b[:-7], lambda b: b"PK\x03\x04" + b[4:],
                                    lambda b: b""])
def test_a_damaged_file_is_a_value_error(damage):
    data = _written({"floats": np.ones((3, 4), np.float32)}).getvalue()
    with pytest.raises(ValueError):
        saved = _snapshot.Snapshot(io.BytesIO(damage(data)))
        saved.read_into("floats", np.zeros((3, 4), np.float32))
