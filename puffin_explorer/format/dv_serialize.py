"""Row positions serialized as a ``deletion-vector-v1`` blob, byte-identical to Iceberg Java."""

from __future__ import annotations

import array
import struct
import zlib
from typing import Any, Iterable

import numpy as np

from .._arrays import sorted_unique
from .dv_shape import DV_MAGIC

#: Buckets for absent keys below the largest are written (as Iceberg Java does) up to this many.
_MAX_FILLED_BUCKETS = 1 << 16


def uint32_array(values: np.ndarray) -> array.array:
    arr = array.array("I")
    arr.frombytes(np.ascontiguousarray(values, dtype=np.uint32).tobytes())
    return arr


def serialize_bitmaps(bitmaps: dict[int, Any]) -> bytes:
    """Frame per-key pyroaring bitmaps as a deletion-vector-v1 blob, as Iceberg Java does."""
    from pyroaring import BitMap

    keys = sorted(k for k, bm in bitmaps.items() if len(bm))
    if keys and keys[-1] < _MAX_FILLED_BUCKETS:
        keys = list(range(keys[-1] + 1))  # Java writes an empty bitmap for every key below the max
    parts = [struct.pack("<Q", len(keys))]
    for k in keys:
        bm = bitmaps.get(k) or BitMap()
        bm.run_optimize()
        parts.append(struct.pack("<I", k))
        parts.append(bm.serialize())
    vector = b"".join(parts)
    body = DV_MAGIC + vector
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def serialize_positions(positions: Iterable[int] | np.ndarray) -> bytes:
    """Serialize row positions as a ``deletion-vector-v1`` blob, byte-identical to Iceberg Java."""
    from pyroaring import BitMap

    pos = np.asarray(positions if isinstance(positions, np.ndarray) else list(positions))
    if pos.size and pos.dtype.kind == "i" and int(pos.min()) < 0:
        raise ValueError("positions must be >= 0")
    pos = sorted_unique(pos.astype(np.uint64))
    if pos.size and int(pos[-1]) >= 1 << 63:
        raise ValueError("positions must be below 2^63")
    keys = (pos >> np.uint64(32)).astype(np.int64)
    bitmaps = {}
    if pos.size:
        # keys are sorted: each bucket starts where the key changes
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        bounds = list(starts) + [pos.size]
        for i, start in enumerate(starts):
            low = (pos[start:bounds[i + 1]] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            bitmaps[int(keys[start])] = BitMap(uint32_array(low))
    return serialize_bitmaps(bitmaps)
