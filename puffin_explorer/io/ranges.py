"""Plan byte ranges: merge neighbours into fewer requests, then cut the answers back apart."""

from __future__ import annotations

from typing import Iterable

#: Ranges closer than this are fetched as one request (a request costs more than this many bytes).
DEFAULT_GAP = 64 * 1024
#: A merged request is not grown past this size by merging.
DEFAULT_MAX_REQUEST = 16 << 20


def coalesce(ranges: Iterable[tuple[int, int]], gap: int = DEFAULT_GAP,
             max_request: int = DEFAULT_MAX_REQUEST) -> list[tuple[int, int]]:
    """``(offset, length)`` ranges merged where they overlap or lie within ``gap`` bytes of each
    other (sorted; a merge never makes a request longer than ``max_request`` unless one range
    alone is).  Empty ranges are dropped."""
    spans = sorted((int(o), int(o) + int(n)) for o, n in ranges if n > 0)
    out: list[list[int]] = []
    for start, end in spans:
        if out and start - out[-1][1] <= gap and max(end, out[-1][1]) - out[-1][0] <= max_request:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e - s) for s, e in out]


def request_groups(offsets, sizes, max_ranges: int = 0, gap: int = DEFAULT_GAP,
                   max_request: int = DEFAULT_MAX_REQUEST) -> list:
    """Ranges as numpy arrays sorted by offset (thousands of a Puffin file's DVs) cut into the groups read as one
    request each, :func:`coalesce`'s plan without a Python value per range: a new request where a gap of more than
    ``gap`` bytes opens, past ``max_request`` bytes from the request's first offset, or past ``max_ranges`` ranges
    (0: no limit).  Each group is an array of indexes into ``offsets``."""
    import numpy as np

    n = len(offsets)
    if not n:
        return []
    reach = np.maximum.accumulate(offsets + sizes)
    run = np.cumsum(np.concatenate([[True], offsets[1:] - reach[:-1] > gap])) - 1
    first = np.searchsorted(run, run, side="left")  # each range's run starts at this index
    keys = [run, (offsets - offsets[first]) // max_request]
    if max_ranges:
        keys.append((np.arange(n) - first) // max_ranges)
    cut = np.flatnonzero((np.diff(np.stack(keys), axis=1) != 0).any(axis=0)) + 1
    return np.split(np.arange(n), cut)


def slice_from(parts: list[tuple[int, bytes]], offset: int, length: int):
    """The bytes ``[offset, offset+length)`` out of fetched ``(start, data)`` parts, or None."""
    for start, data in parts:
        if start <= offset and offset + length <= start + len(data):
            return data[offset - start: offset - start + length]
    return None
