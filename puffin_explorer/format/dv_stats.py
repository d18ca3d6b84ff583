"""Statistics of a deletion vector computed from its Roaring containers, without materializing the
positions: maximal runs of consecutive positions, and the first and last positions."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def _bit_index(words: np.ndarray, highest: bool) -> np.ndarray:
    """Index of the lowest (or highest) set bit of each non-zero uint64, exactly (via 32-bit halves)."""
    hi = (words >> np.uint64(32)).astype(np.float64)
    lo = (words & np.uint64(0xFFFFFFFF)).astype(np.float64)
    if highest:
        return np.where(hi > 0, 32 + np.floor(np.log2(np.maximum(hi, 1))),
                        np.floor(np.log2(np.maximum(lo, 1)))).astype(np.int64)
    lo_bit = lo.astype(np.int64) & -lo.astype(np.int64)
    hi_bit = hi.astype(np.int64) & -hi.astype(np.int64)
    return np.where(lo > 0, np.log2(np.maximum(lo_bit, 1)), 32 + np.log2(np.maximum(hi_bit, 1))).astype(np.int64)


def count_runs(data: bytes, offset: int, buckets: Sequence[Any]) -> int:
    """Maximal runs of consecutive deleted positions of a vector (its bytes ``data``, ``data[0]`` at ``offset``, and
    its parsed buckets, :class:`~.dv_structure.Bucket`), counted per container and joined across container edges;
    work is bounded by the bytes of the vector."""
    firsts, lasts, runs = [], [], []
    bitmaps, order, bases = [], [], []
    data = memoryview(data)
    for b in buckets:
        for c in b.bitmap.containers:
            base = (b.key << 32) | (c.key << 16)
            lo = c.offset - offset
            raw = data[lo:lo + c.length]
            if c.cardinality == 0 or len(raw) < c.length:
                continue
            if c.kind == "array":
                n = min(c.cardinality, len(raw) // 2)
                if n == 0:
                    continue
                v = np.frombuffer(raw, dtype="<u2", count=n).astype(np.int64)
                runs.append(1 + int(np.count_nonzero(np.diff(v) != 1)))
                firsts.append(base + int(v[0]))
                lasts.append(base + int(v[-1]))
            elif c.kind == "run":
                n = min(c.runs, max(0, (len(raw) - 2) // 4))
                if n == 0:
                    continue
                pairs = np.frombuffer(raw, dtype="<u2", count=2 * n, offset=2).reshape(-1, 2).astype(np.int64)
                starts, ends = pairs[:, 0], pairs[:, 0] + pairs[:, 1]
                runs.append(1 + int(np.count_nonzero(starts[1:] != ends[:-1] + 1)))
                firsts.append(base + int(starts[0]))
                lasts.append(base + int(ends[-1]))
            else:
                if len(raw) < 8192:
                    continue
                bitmaps.append(np.frombuffer(raw, dtype="<u8", count=1024))
                order.append(len(runs))
                bases.append(base)
                runs.append(0)
                firsts.append(base)
                lasts.append(base)
    if bitmaps:
        words = np.stack(bitmaps)
        carry = np.zeros_like(words)
        carry[:, 1:] = words[:, :-1] >> np.uint64(63)
        starts_mask = words & ~((words << np.uint64(1)) | carry)
        if hasattr(np, "bitwise_count"):
            counts = np.bitwise_count(starts_mask).sum(axis=1)
        else:  # pragma: no cover - numpy < 2
            counts = np.unpackbits(starts_mask.view(np.uint8), axis=1).sum(axis=1)
        nonzero = words != 0
        has_any = nonzero.any(axis=1)
        first_word = np.argmax(nonzero, axis=1)
        last_word = 1023 - np.argmax(nonzero[:, ::-1], axis=1)
        rows = np.arange(len(words))
        first_bit = first_word * 64 + _bit_index(words[rows, first_word], highest=False)
        last_bit = last_word * 64 + _bit_index(words[rows, last_word], highest=True)
        for j, i in enumerate(order):
            runs[i] = int(counts[j])
            if has_any[j]:
                firsts[i] = bases[j] + int(first_bit[j])
                lasts[i] = bases[j] + int(last_bit[j])
    total = sum(runs)
    joined = sum(1 for i in range(1, len(runs)) if firsts[i] == lasts[i - 1] + 1)
    return total - joined
