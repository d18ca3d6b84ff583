"""The Roaring "portable" serialization: structure, regions and validation.

This module walks the bytes of a 32-bit Roaring bitmap (and the 64-bit
extension used by deletion vectors) without materializing its values, so the
cardinality, the container breakdown and the byte regions come from the headers
alone.  Values are decoded by :func:`values_from_slice` with pyroaring (C speed),
falling back to a numpy decoder for bitmaps pyroaring refuses.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..regions import Finding, Region, Severity

SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4
ARRAY_MAX = 4096
BITMAP_BYTES = 8192

#: Iceberg Java keeps one bitmap per key in an array indexed by an int: keys above this are unreadable there.
JAVA_MAX_KEY = (1 << 31) - 1


@dataclass
class Container:
    """One 2^16-value chunk of a 32-bit Roaring bitmap."""

    key: int  # high 16 bits of the 32-bit value
    kind: str  # "array" | "bitmap" | "run"
    cardinality: int
    offset: int  # absolute byte offset of the container payload
    length: int  # payload bytes
    runs: int = 0  # run containers: number of runs


@dataclass
class Bitmap32:
    """The parsed structure of one 32-bit Roaring bitmap."""

    offset: int  # absolute offset of the cookie
    length: int  # serialized bytes
    cookie: int
    has_runs: bool
    containers: list[Container] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    ok: bool = True  # False when the structure could not be read to its end

    @property
    def cardinality(self) -> int:
        return sum(c.cardinality for c in self.containers)


def _finding(code: str, severity: Severity, offset: int, message: str, hint: str = "",
             space: str = "file") -> Finding:
    return Finding(code, severity, offset, message, hint, space=space)


def parse_bitmap32(buf: memoryview, pos: int, base: int, space: str = "file",
                   validate_payloads: bool = True) -> Bitmap32:
    """Parse one portable 32-bit bitmap starting at ``buf[pos]``.

    ``base`` is the absolute file offset of ``buf[0]``, so regions and findings
    carry file offsets.  Never reads past ``len(buf)``: a count read from the
    bytes is checked against what is left before anything is allocated.
    """
    end = len(buf)
    start = pos
    bm = Bitmap32(offset=base + pos, length=0, cookie=0, has_runs=False)

    def fail(code: str, message: str, at: int, hint: str = "") -> Bitmap32:
        bm.findings.append(_finding(code, Severity.ERROR, base + at, message, hint, space))
        bm.ok = False
        bm.length = max(0, min(end, at) - start)
        return bm

    if end - pos < 4:
        return fail("roaring.truncated", "bitmap ends before its 4-byte cookie", pos)
    (cookie,) = struct.unpack_from("<I", buf, pos)
    bm.cookie = cookie
    run_bitset = b""
    if cookie & 0xFFFF == SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        bm.has_runs = True
        bm.regions.append(Region("cookie (with runs)", "roaring-cookie", base + pos, 4,
                                 value=f"{SERIAL_COOKIE} | containers-1={size - 1}", space=space))
        pos += 4
        nbytes = (size + 7) // 8
        if end - pos < nbytes:
            return fail("roaring.truncated", "bitmap ends inside its run-container bitset", pos)
        run_bitset = bytes(buf[pos:pos + nbytes])
        bm.regions.append(Region("run-container bitset", "roaring-run-bitset", base + pos, nbytes,
                                 value=run_bitset.hex(), space=space))
        pos += nbytes
    elif cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        bm.regions.append(Region("cookie (no runs)", "roaring-cookie", base + pos, 4,
                                 value=SERIAL_COOKIE_NO_RUNCONTAINER, space=space))
        pos += 4
        if end - pos < 4:
            return fail("roaring.truncated", "bitmap ends before its container count", pos)
        (size,) = struct.unpack_from("<I", buf, pos)
        bm.regions.append(Region("container count", "roaring-count", base + pos, 4, value=size,
                                 space=space))
        pos += 4
    else:
        return fail("roaring.cookie",
                    f"unknown Roaring cookie {cookie:#010x} (expected {SERIAL_COOKIE_NO_RUNCONTAINER} "
                    f"or {SERIAL_COOKIE} in the low 16 bits)", pos,
                    "the bytes here are not a portable Roaring bitmap")
    if size > 1 << 16:
        return fail("roaring.container-count",
                    f"{size:,} containers declared; a 32-bit bitmap has at most 65,536", pos - 4)
    if end - pos < 4 * size:
        return fail("roaring.truncated",
                    f"{size:,} container headers declared but only {end - pos:,} bytes remain", pos)
    header = np.frombuffer(buf, dtype="<u2", count=2 * size, offset=pos).reshape(size, 2) \
        if size else np.zeros((0, 2), dtype="<u2")
    keys = header[:, 0].astype(np.int64)
    cards = header[:, 1].astype(np.int64) + 1
    bm.regions.append(Region(f"container headers ({size} × key, cardinality-1)", "roaring-header",
                             base + pos, 4 * size, value=size, space=space))
    header_pos = pos
    pos += 4 * size
    if size > 1 and np.any(np.diff(keys) <= 0):
        i = int(np.argmax(np.diff(keys) <= 0)) + 1
        bm.findings.append(_finding(
            "roaring.keys-order", Severity.ERROR, base + header_pos + 4 * i,
            f"container key {int(keys[i])} follows key {int(keys[i - 1])}: keys must be strictly ascending",
            space=space))
    is_run = np.zeros(size, dtype=bool)
    if bm.has_runs:
        bits = np.unpackbits(np.frombuffer(run_bitset, dtype=np.uint8), bitorder="little")
        is_run = bits[:size].astype(bool)
    offsets = None
    if not bm.has_runs or size >= NO_OFFSET_THRESHOLD:
        if end - pos < 4 * size:
            return fail("roaring.truncated", "bitmap ends inside its offset header", pos)
        offsets = np.frombuffer(buf, dtype="<u4", count=size, offset=pos) if size else None
        bm.regions.append(Region(f"offset header ({size} × uint32)", "roaring-offsets", base + pos,
                                 4 * size, space=space))
        pos += 4 * size
    for i in range(size):
        key, card = int(keys[i]), int(cards[i])
        if offsets is not None and int(offsets[i]) != pos - start:
            bm.findings.append(_finding(
                "roaring.offset-header", Severity.WARNING, base + pos,
                f"offset header says container {i} starts at {int(offsets[i])}, it starts at {pos - start}",
                space=space))
        if is_run[i]:
            if end - pos < 2:
                return fail("roaring.truncated", f"bitmap ends inside run container {i}", pos)
            (nruns,) = struct.unpack_from("<H", buf, pos)
            nbytes = 2 + 4 * nruns
            kind = "run"
        elif card <= ARRAY_MAX:
            nbytes, nruns, kind = 2 * card, 0, "array"
        else:
            nbytes, nruns, kind = BITMAP_BYTES, 0, "bitmap"
        if end - pos < nbytes:
            return fail("roaring.truncated",
                        f"{kind} container {i} needs {nbytes:,} bytes, only {end - pos:,} remain", pos)
        cont = Container(key, kind, card, base + pos, nbytes, nruns)
        bm.containers.append(cont)
        label = f"{kind} container key={key} card={card:,}" + (f" runs={nruns}" if kind == "run" else "")
        bm.regions.append(Region(label, f"roaring-{kind}", base + pos, nbytes, value=card, space=space))
        if validate_payloads:
            problem = _check_container(buf, pos, cont)
            if problem:
                bm.findings.append(_finding("roaring.container", Severity.ERROR, base + pos,
                                            f"{kind} container {i} (key {key}): {problem}", space=space))
        pos += nbytes
    bm.length = pos - start
    return bm


def _check_container(buf: memoryview, pos: int, c: Container) -> Optional[str]:
    if c.kind == "array":
        vals = np.frombuffer(buf, dtype="<u2", count=c.cardinality, offset=pos)
        if c.cardinality > 1 and (vals[1:] <= vals[:-1]).any():
            return "values are not strictly ascending"
    elif c.kind == "bitmap":
        words = np.frombuffer(buf, dtype="<u8", count=BITMAP_BYTES // 8, offset=pos)
        count = _popcount(words)
        if count != c.cardinality:
            return f"header says {c.cardinality:,} values, the bitmap holds {count:,}"
    else:
        pairs = np.frombuffer(buf, dtype="<u2", count=2 * c.runs, offset=pos + 2).reshape(-1, 2)
        starts = pairs[:, 0].astype(np.int64)
        ends = starts + pairs[:, 1].astype(np.int64)  # inclusive
        if (ends > 0xFFFF).any():
            return "a run extends past 65535"
        if c.runs > 1 and (starts[1:] <= ends[:-1]).any():
            return "runs overlap or are not ascending"
        count = int((ends - starts + 1).sum())
        if count != c.cardinality:
            return f"header says {c.cardinality:,} values, the runs cover {count:,}"
    return None


def _popcount(words: np.ndarray) -> int:
    if hasattr(np, "bitwise_count"):
        return int(np.bitwise_count(words).sum())
    return int(np.unpackbits(words.view(np.uint8)).sum())  # numpy < 2.0


def values_from_slice(data: bytes, bm: Bitmap32, base: int) -> np.ndarray:
    """Decode the uint32 values of ``bm`` whose bytes are ``data`` (``data[0]`` at ``base``)."""
    if not bm.containers:
        return np.zeros(0, dtype=np.uint32)
    if not bm.findings:
        try:
            from pyroaring import BitMap

            rb = BitMap.deserialize(bytes(data))
            return np.frombuffer(rb.to_array(), dtype=np.uint32)
        except Exception:  # noqa: BLE001 - fall back to the tolerant decoder below
            pass
    mv = memoryview(data)
    return sorted_unique(np.concatenate([container_values(mv, c, base) for c in bm.containers]))


def container_values(buf: memoryview, c: Container, base: int) -> np.ndarray:
    """The uint32 values of one container, decoded with numpy (tolerates malformed payloads)."""
    p = c.offset - base
    high = np.uint32(c.key << 16)
    if c.kind == "array":
        low = np.frombuffer(buf, dtype="<u2", count=c.cardinality, offset=p).astype(np.uint32)
    elif c.kind == "bitmap":
        bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8, count=BITMAP_BYTES, offset=p), bitorder="little")
        low = np.flatnonzero(bits).astype(np.uint32)
    else:
        pairs = np.frombuffer(buf, dtype="<u2", count=2 * c.runs, offset=p + 2).reshape(-1, 2)
        starts = pairs[:, 0].astype(np.int64)
        lens = pairs[:, 1].astype(np.int64) + 1
        low = expand_runs(starts, lens).clip(0, 0xFFFF).astype(np.uint32)
    return sorted_unique(low | high)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values of a 1-D array (sort + neighbour mask; ``np.unique`` is far slower on big arrays)."""
    out = np.sort(values)
    if out.size > 1:
        keep = np.empty(out.size, dtype=bool)
        keep[0] = True
        np.not_equal(out[1:], out[:-1], out=keep[1:])
        out = out[keep]
    return out


def expand_runs(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[s, s+1, …, s+len-1]`` for every run, concatenated (vectorized)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.arange(total, dtype=np.int64)
    run_start_idx = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + (idx - run_start_idx)
