"""The ``deletion-vector-v1`` framing and the shapes most vectors have, read from the bytes with numpy alone.

Layout (Puffin spec): a 4-byte big-endian length of magic + vector, the magic ``D1 D3 39 64``, the vector in
Roaring's portable 64-bit format (an 8-byte little-endian bucket count, then per bucket a 4-byte key and a 32-bit
Roaring bitmap), and a big-endian CRC-32 of magic + vector.  Most vectors of real tables are one bucket holding
array containers only; these are recognized here without parsing the structure (:mod:`.dv_structure` does that).
"""

from __future__ import annotations

import struct
from typing import Optional

import numpy as np

from .roaring import SERIAL_COOKIE, SERIAL_COOKIE_NO_RUNCONTAINER

BLOB_TYPE = "deletion-vector-v1"
DV_MAGIC = b"\xd1\xd3\x39\x64"
MAGIC_WORD = struct.unpack("<I", DV_MAGIC)[0]  # the magic read as a little-endian uint32
ROW_POSITION_FIELD_ID = 2147483645


def looks_like_dv(data: bytes) -> bool:
    """At least 20 bytes, and the length prefix or the magic right (one damaged field is still a DV)."""
    n = len(data)
    return n >= 20 and (data[4:8] == DV_MAGIC or struct.unpack_from(">I", data, 0)[0] == n - 8)


def one_array_shape(data: bytes) -> Optional[tuple[int, int, int]]:
    """``(start, cardinality, high bits)`` of a vector that is one bucket holding one array
    container whose header, offsets and length agree exactly; None for any other shape."""
    n = len(data)
    if n < 35 or data[8:16] != b"\x01\x00\x00\x00\x00\x00\x00\x00":
        return None
    (cookie,) = struct.unpack_from("<I", data, 20)
    if cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        count, hkey, card_m1, off = struct.unpack_from("<IHHI", data, 24)
        if count != 1 or off != 16:
            return None
        start = 36
    elif cookie == SERIAL_COOKIE and data[24] == 0:  # one container, and it is not a run container
        hkey, card_m1 = struct.unpack_from("<HH", data, 25)
        start = 29
    else:
        return None
    card = card_m1 + 1
    if card > 4096 or start + 2 * card != n - 4:
        return None
    return start, card, (struct.unpack_from("<I", data, 16)[0] << 32) | (hkey << 16)


def array_only_positions(data: bytes) -> Optional[np.ndarray]:
    """Positions of a one-bucket vector whose containers are all arrays (a DV of a data file of
    up to 2^32 rows with scattered deletes), read with numpy; None unless every header, offset,
    length and value agrees exactly (then the general reader decides)."""
    n = len(data)
    if n < 35 or data[8:16] != b"\x01\x00\x00\x00\x00\x00\x00\x00":
        return None
    (cookie,) = struct.unpack_from("<I", data, 20)
    if cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        (count,) = struct.unpack_from("<I", data, 24)
        header, with_offsets = 28, True
    elif cookie & 0xFFFF == SERIAL_COOKIE:
        count = (cookie >> 16) + 1
        flags = (count + 7) // 8
        if any(data[24:24 + flags]):  # a run container
            return None
        header, with_offsets = 24 + flags, count >= 4
    else:
        return None
    if count < 1 or header + (8 if with_offsets else 4) * count > n - 4:
        return None
    heads = np.frombuffer(data, "<u2", 2 * count, header).reshape(count, 2)
    keys, cards = heads[:, 0], heads[:, 1].astype(np.int64) + 1
    start = header + (8 if with_offsets else 4) * count
    ends = np.cumsum(cards)
    firsts = ends - cards
    if (cards > 4096).any() or start + 2 * int(ends[-1]) != n - 4 or (count > 1 and not (keys[1:] > keys[:-1]).all()):
        return None
    if with_offsets:  # offsets are from the start of the 32-bit bitmap (byte 20 of the vector)
        offsets = np.frombuffer(data, "<u4", count, header + 4 * count).astype(np.int64)
        if not np.array_equal(offsets, start - 20 + 2 * firsts):
            return None
    low = np.frombuffer(data, "<u2", int(ends[-1]), start)
    rising = low[1:] > low[:-1]
    rising[firsts[1:] - 1] = True  # a container's first value has nothing before it in its container
    if not rising.all():
        return None
    out = low.astype(np.uint64) | np.repeat(keys.astype(np.uint64) << np.uint64(16), cards)
    bucket = struct.unpack_from("<I", data, 16)[0]
    if bucket:
        out |= np.uint64(bucket << 32)
    out.flags.writeable = False
    return out


#: The first 40 bytes of a deletion vector, as far as one bucket with one array container goes
#: (both Roaring cookies: with an offsets header, and with run flags).
HEAD = np.dtype({
    "names": ["length", "magic", "buckets", "key", "cookie", "count", "hkey", "card_m1", "offset0", "run_flags",
              "hkey_r", "card_m1_r"],
    "formats": [">u4", "<u4", "<u8", "<u4", "<u4", "<u4", "<u2", "<u2", "<u4", "u1", "<u2", "<u2"],
    "offsets": [0, 4, 8, 16, 20, 24, 28, 30, 32, 24, 25, 27],
    "itemsize": 40,
})


def common_shape(heads: np.ndarray, sizes: np.ndarray):
    """For vectors' first 40 bytes (:data:`HEAD`) and sizes: ``(shape, card, start, high)``: whether each is
    of the common shape (one bucket, one array container, with either Roaring cookie, its values filling the
    vector up to the CRC), its position count, where its values start, and the high bits of its positions."""
    plain = heads["cookie"] == SERIAL_COOKIE_NO_RUNCONTAINER  # offsets header, no run flags
    runs_cookie = heads["cookie"] == SERIAL_COOKIE  # one container (count-1 = 0 in the high half)
    card = np.where(plain, heads["card_m1"], heads["card_m1_r"]).astype(np.int64) + 1
    start = np.where(plain, 36, 29)
    shape = ((heads["buckets"] == 1) & (sizes >= 35) & (card <= 4096) & (start + 2 * card == sizes - 4)
             & ((plain & (heads["count"] == 1) & (heads["offset0"] == 16)) | (runs_cookie & (heads["run_flags"] == 0))))
    high = (heads["key"].astype(np.uint64) << np.uint64(32)) | \
        (np.where(plain, heads["hkey"], heads["hkey_r"]).astype(np.uint64) << np.uint64(16))
    return shape, card, start, high
