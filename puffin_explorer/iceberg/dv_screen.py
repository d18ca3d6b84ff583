"""The columnar screen of one Puffin file's DVs: the footer's blobs and the DVs' bytes compared as arrays, a request
at a time, so that only a DV the screen cannot clear gets an object and the per-DV checks of :mod:`.dv_checks`."""

from __future__ import annotations

from typing import Any

from ..errors import PuffinError
from .metadata import _is_int  # a JSON integer within int64: a footer offset past it is no offset

#: The blob type of a DV in a Puffin file.
DV_BLOB_TYPE = "deletion-vector-v1"
#: The largest framed DV of the common shape (one bucket, one array container of at most 4,096 positions).
_COMMON_DV_MAX_BYTES = 36 + 2 * 4096 + 4
#: The screen reads at most this many DVs in one request (gap and size as the I/O layer's ``coalesce``).
_SCREEN_REQUEST_DVS = 16_384


def cleared_dvs(pf: Any, members: list[int], offsets: list, sizes: list, records: list, refs: list,
                target: Any, limits: Any) -> set[int]:
    """The members (rows of one Puffin file's DV entries) in which a columnar screen finds nothing to say: the
    footer has one blob at the entry's offset, a DV of the entry's length whose properties agree with the entry;
    the DV's bytes are of the common shape and entirely right (:func:`~puffin_explorer.format.dv_batch.common_positions`,
    read a request at a time, no object per DV), its position count the entry's record_count and its last
    position below its data file's row count. The rest go through the per-DV checks, which say what is wrong;
    nothing is cleared that those would report."""
    import numpy as np

    from ..format.dv_batch import common_last_positions
    from ..io.ranges import request_groups

    placed = np.array([i for i in members if offsets[i] is not None and sizes[i] is not None], np.int64)
    blobs = [b for b in pf.blobs if _is_int(b.offset)]
    if not len(placed) or not blobs or len({b.offset for b in blobs}) != len(blobs):  # no blob, or which is unclear
        return set()
    rows = placed.tolist()
    at = np.array([b.offset for b in blobs], np.int64)
    order = np.argsort(at, kind="stable")
    off = np.array([offsets[i] for i in rows], np.int64)
    size = np.array([sizes[i] for i in rows], np.int64)
    j = np.minimum(np.searchsorted(at[order], off), len(at) - 1)
    blob = order[j]  # the footer blob at each entry's offset, where at[blob] == off
    # the entry against its blob, as _check_blob compares them (a property that is not a string compared as str())
    length = np.array([b.length if _is_int(b.length) else -1 for b in blobs], np.int64)
    is_dv = np.array([b.type == DV_BLOB_TYPE for b in blobs], bool)
    props = [b.properties or {} for b in blobs]
    card = np.array([None if p.get("cardinality") is None else str(p.get("cardinality")) for p in props], object)
    ref = np.array([p.get("referenced-data-file") or None for p in props], object)
    claimed = np.array([str(records[i]) for i in rows], object)
    written = np.array([refs[i] or None for i in rows], object)
    card_at, ref_at = card[blob], ref[blob]
    ok = ((at[blob] == off) & (length[blob] == size) & is_dv[blob]
          & (np.equal(card_at, None) | np.equal(card_at, claimed))
          & (np.equal(ref_at, None) | np.equal(written, None) | np.equal(ref_at, written)))
    ok &= (off >= 0) & (off <= pf.size) & (size > 0) & (size <= _COMMON_DV_MAX_BYTES)
    ok &= off + np.where(ok, size, 0) <= pf.size  # no sum near the int64 limit: off is within the file now
    cand = np.flatnonzero(ok)
    cand = cand[np.argsort(off[cand], kind="stable")]
    counted = np.array([records[i] is not None for i in rows], bool)
    count = np.array([records[i] if records[i] is not None else -1 for i in rows], np.int64)
    limit = np.full(len(rows), np.iinfo(np.int64).max, np.int64)
    t = target[placed]
    limit[t >= 0] = limits[t[t >= 0]]
    cleared = np.zeros(len(rows), bool)
    # a request a group: a new one where a gap opens, past a request's bytes or past _SCREEN_REQUEST_DVS DVs
    for sel in (cand[g] for g in request_groups(off[cand], size[cand], _SCREEN_REQUEST_DVS)):
        start = int(off[sel[0]])
        length_ = int((off[sel] + size[sel]).max()) - start
        try:
            span = pf.source.read(start, length_)
        except (PuffinError, OSError, ValueError):  # the per-DV reads say what failed
            continue
        if len(span) != length_:
            continue
        good, cards, last = common_last_positions(span, off[sel] - start, size[sel])
        cleared[sel[good & (~counted[sel] | (cards == count[sel])) & (last < limit[sel])]] = True
    return set(placed[cleared].tolist())
