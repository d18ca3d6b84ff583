"""Many deletion vectors lying in one buffer (a span of a Puffin or DV file), checked and decoded together with
numpy, without an object per vector: what a table's read of thousands of small DVs costs per vector."""

from __future__ import annotations

import zlib
from typing import Any, Optional

import numpy as np

from .._arrays import sorted_unique
from .dv_shape import HEAD, MAGIC_WORD, common_shape
from .roaring import JAVA_MAX_KEY


def common_positions(buf: Any, starts: Any, sizes: Any, crc: bool = True,
                     out: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions of many framed vectors lying in one buffer (a span of a Puffin or DV file), checked
    together without an object per vector: ``(ok, cards, positions)``.

    ``ok[i]`` when vector ``i`` (``sizes[i]`` bytes at ``starts[i]`` of ``buf``) is of the common shape (one
    bucket, one array container, either Roaring cookie) and entirely right: length prefix, magic, a key
    Iceberg Java can write, CRC, strictly increasing values, which are then exactly what its
    ``positions()`` returns; ``cards[i]`` its position count (0 where not ok); ``positions`` the ok
    vectors' positions one after another, in ``starts`` order.  A vector not ok needs a parse of its own
    (:class:`~.dv.DeletionVector`), which says what is wrong with it or decodes its other shape.  With ``crc=False``
    the CRC is not compared (what ``positions()`` of one vector does not compare either).  ``out``: a ``uint64``
    array the positions are written to the start of when they fit (``positions`` is then a view of it)."""
    ok, card, high, counts, out = _common_vectors(buf, starts, sizes, crc, np.uint64, out)
    if high.any():  # positions past 65,535 (no temporary of a value per position otherwise)
        out |= np.repeat(high, counts)
    return ok, np.where(ok, card, 0), out


def common_last_positions(buf: Any, starts: Any, sizes: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`common_positions`'s ``(ok, cards)`` and each vector's last (highest) position, -1 where it is not ok
    or empty, without the positions themselves (what a check of counts and ranges needs)."""
    ok, card, high, counts, low = _common_vectors(buf, starts, sizes, True, np.uint16)
    last = np.full(len(ok), -1, np.int64)
    full = counts > 0
    ends = np.cumsum(counts)
    last[np.flatnonzero(ok)[full]] = (low[ends[full] - 1].astype(np.uint64) | high[full]).view(np.int64)
    return ok, np.where(ok, card, 0), last


def _heads(buf: Any, starts: np.ndarray, sizes: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """The first 40 bytes of each vector (:data:`HEAD`), 0xFF past its end or for a vector not inside ``buf``,
    gathered in one numpy step."""
    raw = np.frombuffer(buf, np.uint8)
    if not len(starts) or not len(raw):
        return np.full((len(starts), 40), 0xFF, np.uint8).view(HEAD).reshape(len(starts))
    reach = np.arange(40)
    got = raw[np.clip(starts[:, None] + reach, 0, len(raw) - 1)]
    got[(reach >= np.minimum(sizes, 40)[:, None]) | ~inside[:, None]] = 0xFF
    return np.ascontiguousarray(got).view(HEAD).reshape(len(starts))


#: The values of many vectors are gathered this many bytes at a time: a buffer the allocator hands back for the
#: next piece, not fresh memory the size of them all (whose pages cost a fault each on first touch).
_GATHER_BYTES = 1 << 18


def _common_vectors(buf: Any, starts: Any, sizes: Any, check_crc: bool, dtype: Any, out: Optional[np.ndarray] = None):
    """The work of :func:`common_positions`: ``(ok, card, high, counts, values)``, ``values`` the ok vectors' low
    16 bits one after another as ``dtype`` (``counts`` of each ok vector), ``high`` each ok vector's high bits,
    ``card`` each vector's claimed count (whether ok or not)."""
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    view = memoryview(buf)
    # each bound first, so that no sum nears the int64 limit (offsets and sizes come from manifests)
    inside = (starts >= 0) & (starts <= len(view)) & (sizes >= 35) & (sizes <= len(view))
    inside &= starts + np.where(inside, sizes, 0) <= len(view)
    heads = _heads(buf, starts, sizes, inside)
    shape, card, first, high = common_shape(heads, sizes)
    ok = (inside & shape & (heads["magic"] == MAGIC_WORD)
          & (heads["length"].astype(np.int64) == sizes - 8) & (heads["key"] <= JAVA_MAX_KEY))
    crc = zlib.crc32
    for i, s, z in zip(np.flatnonzero(ok).tolist(), starts[ok].tolist(), sizes[ok].tolist()) if check_crc else ():
        # the CRC of the magic and the vector, stored big-endian after them
        if crc(view[s + 4:s + z - 4]) != int.from_bytes(view[s + z - 4:s + z], "big"):
            ok[i] = False
    chosen = np.flatnonzero(ok)
    counts = card[chosen]
    values, spoiled = _gather_values(buf if isinstance(buf, bytes) else view, (starts + first)[chosen], counts, dtype,
                                     out)
    high = high[chosen]
    if len(spoiled):  # values not strictly increasing: not of the common shape after all
        ok[chosen[spoiled]] = False
        keep = np.ones(len(chosen), dtype=bool)
        keep[spoiled] = False
        values, high, counts = values[np.repeat(keep, counts)], high[keep], counts[keep]
        if out is not None and len(values) <= len(out):
            out[:len(values)] = values
            values = out[:len(values)]
    return ok, card, high, counts, values


def _gather_values(whole: Any, at: np.ndarray, counts: np.ndarray, dtype: Any,
                   into: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """The little-endian 16-bit values ``counts[i]`` of them at byte ``at[i]`` of ``whole``, one vector after
    another, as ``dtype`` (at the start of ``into`` when they fit), and the indexes of the vectors whose values are
    not strictly increasing (sorted).  Gathered :data:`_GATHER_BYTES` at a time into the one output array."""
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    out = into[:total] if into is not None and len(into) >= total else np.empty(total, dtype=dtype)
    cuts = np.searchsorted(2 * ends, np.arange(_GATHER_BYTES, 2 * len(out), _GATHER_BYTES), side="left") + 1
    bounds = sorted_unique(np.concatenate(([0], np.minimum(cuts, len(ends)), [len(ends)]))).tolist()
    spoiled = []
    firsts = ends - counts
    at_l, counts_l, firsts_l = at.tolist(), counts.tolist(), firsts.tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        # slices of bytes: no object for the collector to track
        low = np.frombuffer(b"".join([whole[s:s + 2 * c] for s, c in zip(at_l[a:b], counts_l[a:b])]), dtype="<u2")
        base = firsts_l[a]
        out[base:base + len(low)] = low
        falls = low[1:] <= low[:-1]  # a value not above the one before it, in one vector
        falls[firsts[a + 1:b] - base - 1] = False  # a vector's first value follows another vector's last
        if falls.any():
            spoiled.append(a + np.searchsorted(ends[a:b] - base, np.flatnonzero(falls) + 1, side="right"))
    return out, (sorted_unique(np.concatenate(spoiled)) if spoiled else np.zeros(0, np.int64))
