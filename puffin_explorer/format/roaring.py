"""The Roaring "portable" serialization: structure, regions and validation.

This module walks the bytes of a 32-bit Roaring bitmap (and the 64-bit
extension used by deletion vectors) without materializing its values, so the
cardinality, the container breakdown and the byte regions come from the headers
alone.  Values are decoded by :func:`values_from_slice` with pyroaring (C speed),
falling back to a numpy decoder for bitmaps pyroaring refuses.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from .._arrays import sorted_unique
from .._text import plural
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


_KINDS = ("array", "bitmap", "run")
ARRAY, BITMAP, RUN = 0, 1, 2


class Bitmap32:
    """The parsed structure of one 32-bit Roaring bitmap.

    Container headers are held as numpy arrays (``keys``, ``cards``, ``kinds``,
    ``starts`` (absolute payload offsets), ``lengths``, ``runs``); the
    :attr:`containers` and :attr:`regions` lists are built from them when first asked for.
    """

    __slots__ = ("offset", "length", "cookie", "has_runs", "findings", "ok", "space", "keys", "cards",
                 "kinds", "starts", "lengths", "runs", "_head", "_containers", "_regions")

    def __init__(self, offset: int, length: int, cookie: int, has_runs: bool, space: str = "file") -> None:
        self.offset = offset  # absolute offset of the cookie
        self.length = length  # serialized bytes
        self.cookie = cookie
        self.has_runs = has_runs
        self.findings: list[Finding] = []
        self.ok = True  # False when the structure could not be read to its end
        self.space = space
        empty = np.zeros(0, dtype=np.int64)
        self.keys = self.cards = self.kinds = self.starts = self.lengths = self.runs = empty
        self._head: list[tuple] = []  # (name, kind, offset, length, value) of the header regions
        self._containers: Optional[list[Container]] = None
        self._regions: Optional[list[Region]] = None

    @property
    def count(self) -> int:
        """Number of containers read."""
        return len(self.keys)

    @property
    def cardinality(self) -> int:
        return int(self.cards.sum())

    def container(self, i: int) -> Container:
        """Container ``i`` (negative counts from the end)."""
        if self._containers is not None:
            return self._containers[i]
        return Container(int(self.keys[i]), _KINDS[int(self.kinds[i])], int(self.cards[i]), int(self.starts[i]),
                         int(self.lengths[i]), int(self.runs[i]))

    @property
    def containers(self) -> list[Container]:
        if self._containers is None:
            self._containers = [Container(k, _KINDS[t], c, o, n, r) for k, t, c, o, n, r in zip(
                self.keys.tolist(), self.kinds.tolist(), self.cards.tolist(), self.starts.tolist(),
                self.lengths.tolist(), self.runs.tolist())]
        return self._containers

    @property
    def regions(self) -> list[Region]:
        if self._regions is None:
            sp = self.space
            out = [Region(name, kind, off, ln, value=value, space=sp) for name, kind, off, ln, value in self._head]
            for c in self.containers:
                label = f"{c.kind} container key={c.key} card={c.cardinality:,}" + (
                    f" runs={c.runs}" if c.kind == "run" else "")
                out.append(Region(label, f"roaring-{c.kind}", c.offset, c.length, value=c.cardinality, space=sp))
            self._regions = out
        return self._regions


def _finding(code: str, severity: Severity, offset: int, message: str, hint: str = "",
             space: str = "file") -> Finding:
    return Finding(code, severity, offset, message, hint, space=space)


def _u16_at(u8: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Little-endian uint16 values at byte positions ``pos`` (any alignment)."""
    return u8[pos].astype(np.int64) | (u8[pos + 1].astype(np.int64) << 8)


class _Unreadable(Exception):
    """The bitmap cannot be read on from byte ``at``: the finding that says why."""

    def __init__(self, code: str, message: str, at: int, hint: str = "") -> None:
        super().__init__(message)
        self.code, self.message, self.at, self.hint = code, message, at, hint


def parse_bitmap32(buf: memoryview, pos: int, base: int, space: str = "file",
                   validate_payloads: Union[bool, str] = True) -> Bitmap32:
    """Parse one portable 32-bit bitmap starting at ``buf[pos]``.

    ``base`` is the absolute file offset of ``buf[0]``, so regions and findings
    carry file offsets.  Never reads past ``len(buf)``: a count read from the
    bytes is checked against what is left before anything is allocated.  Headers
    and payloads are checked with numpy across all containers at once.
    """
    end = len(buf)
    start = pos
    bm = Bitmap32(offset=base + pos, length=0, cookie=0, has_runs=False, space=space)
    try:
        size, is_run, pos = _read_cookie(buf, pos, base, bm)
        keys, cards, pos = _read_container_headers(buf, pos, base, size, bm)
        offsets, pos = _read_offset_header(buf, pos, base, size, bm)
    except _Unreadable as stop:
        return _stopped(bm, stop, base, start, end)
    kinds, sizes, nruns, trunc = _container_sizes(buf, pos, start, size, cards, is_run, offsets)
    ends = pos + np.cumsum(sizes)
    starts = ends - sizes
    over = np.flatnonzero(ends > end) if size and int(ends[-1]) > end else ()
    if len(over) and (trunc is None or int(over[0]) < trunc[0]):
        i = int(over[0])
        trunc = (i, f"{_KINDS[int(kinds[i])]} container {i} needs {plural(int(sizes[i]), 'byte')}, "
                    f"only {end - int(starts[i]):,} remain", int(starts[i]))
    n_ok = size if trunc is None else trunc[0]
    bm.keys, bm.cards, bm.kinds = keys[:n_ok], cards[:n_ok], kinds[:n_ok]
    bm.starts, bm.lengths, bm.runs = base + starts[:n_ok], sizes[:n_ok], nruns[:n_ok]
    upto = size if trunc is None else trunc[0] + 1
    per = _offset_findings(offsets, starts, start, base, upto, space)
    if validate_payloads and n_ok and (validate_payloads != "runs" or bm.has_runs):
        u8 = np.frombuffer(buf, dtype=np.uint8)
        for i, problem in _check_containers(u8, starts[:n_ok], kinds[:n_ok], cards[:n_ok], nruns[:n_ok],
                                            runs_only=validate_payloads == "runs"):
            per.append((i, 1, _finding("roaring.container", Severity.ERROR, base + int(starts[i]),
                                       f"{_KINDS[int(kinds[i])]} container {i} (key {int(keys[i])}): {problem}",
                                       space=space)))
    per.sort(key=lambda t: (t[0], t[1]))
    bm.findings.extend(f for _, _, f in per)
    if trunc is not None:
        return _stopped(bm, _Unreadable("roaring.truncated", trunc[1], trunc[2]), base, start, end)
    bm.length = int(ends[-1]) - start if size else pos - start
    return bm


def _stopped(bm: Bitmap32, stop: _Unreadable, base: int, start: int, end: int) -> Bitmap32:
    """``bm`` read up to where ``stop`` says it cannot be read on: its finding added, not ok."""
    bm.findings.append(_finding(stop.code, Severity.ERROR, base + stop.at, stop.message, stop.hint, bm.space))
    bm.ok = False
    bm.length = max(0, min(end, stop.at) - start)
    return bm


def _read_cookie(buf: memoryview, pos: int, base: int, bm: Bitmap32) -> tuple[int, Optional[np.ndarray], int]:
    """The cookie at ``pos`` and what follows it (the run-container bitset, or the container count):
    ``(container count, which containers are runs (None without runs), position after them)``."""
    end = len(buf)
    if end - pos < 4:
        raise _Unreadable("roaring.truncated", "bitmap ends before its 4-byte cookie", pos)
    (cookie,) = struct.unpack_from("<I", buf, pos)
    bm.cookie = cookie
    head = bm._head
    is_run = None
    if cookie & 0xFFFF == SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        bm.has_runs = True
        head.append(("cookie (with runs)", "roaring-cookie", base + pos, 4,
                     f"{SERIAL_COOKIE} | containers-1={size - 1}"))
        pos += 4
        nbytes = (size + 7) // 8
        if end - pos < nbytes:
            raise _Unreadable("roaring.truncated", "bitmap ends inside its run-container bitset", pos)
        run_bitset = bytes(buf[pos:pos + nbytes])
        head.append(("run-container bitset", "roaring-run-bitset", base + pos, nbytes, run_bitset.hex()))
        pos += nbytes
        is_run = np.unpackbits(np.frombuffer(run_bitset, dtype=np.uint8), bitorder="little")[:size].astype(bool)
    elif cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        head.append(("cookie (no runs)", "roaring-cookie", base + pos, 4, SERIAL_COOKIE_NO_RUNCONTAINER))
        pos += 4
        if end - pos < 4:
            raise _Unreadable("roaring.truncated", "bitmap ends before its container count", pos)
        (size,) = struct.unpack_from("<I", buf, pos)
        head.append(("container count", "roaring-count", base + pos, 4, size))
        pos += 4
    else:
        raise _Unreadable("roaring.cookie",
                          f"unknown Roaring cookie {cookie:#010x} (expected {SERIAL_COOKIE_NO_RUNCONTAINER} "
                          f"or {SERIAL_COOKIE} in the low 16 bits)", pos,
                          "the bytes here are not a portable Roaring bitmap")
    return size, is_run, pos


def _read_container_headers(buf: memoryview, pos: int, base: int, size: int,
                            bm: Bitmap32) -> tuple[np.ndarray, np.ndarray, int]:
    """The ``size`` container headers at ``pos``: ``(keys, cardinalities, position after them)``; keys out of
    order are a finding."""
    end = len(buf)
    if size > 1 << 16:
        raise _Unreadable("roaring.container-count",
                          f"{plural(size, 'container')} declared; a 32-bit bitmap has at most 65,536", pos - 4)
    if end - pos < 4 * size:
        raise _Unreadable("roaring.truncated",
                          f"{plural(size, 'container header')} declared but only {plural(end - pos, 'byte')} remain",
                          pos)
    header = np.frombuffer(buf, dtype="<u2", count=2 * size, offset=pos).astype(np.int64)
    keys = header[0::2]
    cards = header[1::2] + 1
    bm._head.append((f"container headers ({size} × key, cardinality-1)", "roaring-header", base + pos, 4 * size,
                     size))
    if size > 1 and not (keys[1:] > keys[:-1]).all():
        bad = np.flatnonzero(keys[1:] <= keys[:-1])
        if bad.size:
            i = int(bad[0]) + 1
            bm.findings.append(_finding(
                "roaring.keys-order", Severity.ERROR, base + pos + 4 * i,
                f"container key {int(keys[i])} follows key {int(keys[i - 1])}: keys must be strictly ascending",
                space=bm.space))
    return keys, cards, pos + 4 * size


def _read_offset_header(buf: memoryview, pos: int, base: int, size: int,
                        bm: Bitmap32) -> tuple[Optional[np.ndarray], int]:
    """The offset header at ``pos`` when the bitmap has one (no runs, or at least
    :data:`NO_OFFSET_THRESHOLD` containers): ``(offsets or None, position after it)``."""
    if bm.has_runs and size < NO_OFFSET_THRESHOLD:
        return None, pos
    if len(buf) - pos < 4 * size:
        raise _Unreadable("roaring.truncated", "bitmap ends inside its offset header", pos)
    offsets = np.frombuffer(buf, dtype="<u4", count=size, offset=pos).astype(np.int64) if size else None
    bm._head.append((f"offset header ({size} × uint32)", "roaring-offsets", base + pos, 4 * size, None))
    return offsets, pos + 4 * size


def _container_sizes(buf: memoryview, pos: int, start: int, size: int, cards: np.ndarray,
                     is_run: Optional[np.ndarray], offsets: Optional[np.ndarray]):
    """Each container's kind, payload bytes and run count, payloads starting at ``pos`` (the bitmap at
    ``start``): ``(kinds, sizes, nruns, trunc)``, ``trunc`` ``(container, message, byte)`` where a run
    container's count lies past the end, else None.  Run counts are found through the offset header when it
    agrees with them, else by walking the run containers in order."""
    end = len(buf)
    kinds = (cards > ARRAY_MAX).astype(np.int64)  # ARRAY 0, BITMAP 1
    sizes = np.minimum(2 * cards, BITMAP_BYTES)
    nruns = np.zeros(size, dtype=np.int64)
    run_idx = np.flatnonzero(is_run) if is_run is not None else None
    trunc: Optional[tuple[int, str, int]] = None  # (container index, message, byte position)
    if run_idx is None or not run_idx.size:
        return kinds, sizes, nruns, trunc
    kinds[run_idx] = RUN
    sizes[run_idx] = 0
    placed = False
    if offsets is not None:
        # trust the offset header to find every run count at once; checked against the sizes below
        at = start + offsets[run_idx]
        if at.size and int(at.max()) + 2 <= end and int(at.min()) >= pos:
            nruns[run_idx] = _u16_at(np.frombuffer(buf, dtype=np.uint8), at)
            sizes[run_idx] = 2 + 4 * nruns[run_idx]
            placed = bool(np.array_equal(pos + np.cumsum(sizes) - sizes, start + offsets))
    if not placed:  # walk: each run container's place depends on the run counts before it
        sizes[run_idx] = 0
        nruns[:] = 0
        before = pos + np.cumsum(sizes) - sizes
        extra = 0
        for i in run_idx.tolist():
            p = int(before[i]) + extra
            if end - p < 2:
                trunc = (i, f"bitmap ends inside run container {i}", p)
                break
            n = int(buf[p]) | (int(buf[p + 1]) << 8)
            nruns[i] = n
            sizes[i] = 2 + 4 * n
            extra += sizes[i]
    return kinds, sizes, nruns, trunc


def _offset_findings(offsets: Optional[np.ndarray], starts: np.ndarray, start: int, base: int, upto: int,
                     space: str) -> list[tuple[int, int, Finding]]:
    """``(container, 0, finding)`` for each of the first ``upto`` containers the offset header places wrongly."""
    if offsets is None or np.array_equal(offsets[:upto], starts[:upto] - start):
        return []
    wrong = np.flatnonzero(offsets[:upto] != starts[:upto] - start)
    return [(i, 0, _finding("roaring.offset-header", Severity.WARNING, base + int(starts[i]),
                            f"offset header says container {i} starts at {int(offsets[i])}, "
                            f"it starts at {int(starts[i]) - start}", space=space))
            for i in wrong.tolist()]


def _segments(starts: np.ndarray, counts: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Byte positions of ``counts[i]`` items of ``step`` bytes from each ``starts[i]``, and each item's container."""
    owner = np.repeat(np.arange(len(starts)), counts)
    first = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum()), dtype=np.int64) - first[owner]
    return starts[owner] + step * within, owner


def _check_containers(u8: np.ndarray, starts: np.ndarray, kinds: np.ndarray, cards: np.ndarray,
                      nruns: np.ndarray, runs_only: bool = False) -> list[tuple[int, str]]:
    """``(container index, problem)`` for every container whose payload contradicts its header,
    checked for all containers of a kind at once (``runs_only``: array and bitmap payloads are
    known to be valid)."""
    out: list[tuple[int, str]] = []
    empty = np.zeros(0, dtype=np.int64)
    arr = empty if runs_only else np.flatnonzero(kinds == ARRAY)
    if arr.size:
        at, owner = _segments(starts[arr], cards[arr], 2)
        vals = _u16_at(u8, at)
        bad = (vals[1:] <= vals[:-1]) & (owner[1:] == owner[:-1])
        for k in sorted_unique(owner[1:][bad]).tolist():
            out.append((int(arr[k]), "values are not strictly ascending"))
    bmp = empty if runs_only else np.flatnonzero(kinds == BITMAP)
    if bmp.size:
        at = starts[bmp]
        lo, hi = int(at[0]), int(at[-1]) + BITMAP_BYTES
        span = u8[lo:hi]
        per_byte = np.bitwise_count(span) if hasattr(np, "bitwise_count") else np.unpackbits(
            span).reshape(-1, 8).sum(axis=1, dtype=np.uint8)
        per_byte = np.concatenate((per_byte, np.zeros(1, dtype=per_byte.dtype)))
        edges = np.empty(2 * bmp.size, dtype=np.int64)
        edges[0::2] = at - lo
        edges[1::2] = at - lo + BITMAP_BYTES
        counts = np.add.reduceat(per_byte, edges, dtype=np.int64)[0::2]
        for k in np.flatnonzero(np.asarray(counts) != cards[bmp]).tolist():
            out.append((int(bmp[k]), f"header says {plural(int(cards[bmp[k]]), 'value')}, "
                                     f"the bitmap holds {int(counts[k]):,}"))
    run = np.flatnonzero(kinds == RUN)
    if run.size:
        at, owner = _segments(starts[run] + 2, nruns[run], 4)
        rs = _u16_at(u8, at)
        re_ = rs + _u16_at(u8, at + 2)  # inclusive ends
        past = np.zeros(run.size, dtype=bool)
        past[sorted_unique(owner[re_ > 0xFFFF])] = True
        overlap = np.zeros(run.size, dtype=bool)
        same = owner[1:] == owner[:-1]
        overlap[sorted_unique(owner[1:][same & (rs[1:] <= re_[:-1])])] = True
        covered = np.bincount(owner, weights=(re_ - rs + 1), minlength=run.size).astype(np.int64)
        for k in range(run.size) if (past.any() or overlap.any() or (covered != cards[run]).any()) else ():
            if past[k]:
                out.append((int(run[k]), "a run extends past 65535"))
            elif overlap[k]:
                out.append((int(run[k]), "runs overlap or are not ascending"))
            elif covered[k] != cards[run[k]]:
                out.append((int(run[k]), f"header says {plural(int(cards[run[k]]), 'value')}, "
                                         f"the runs cover {int(covered[k]):,}"))
    return out


def values_from_slice(data: bytes, bm: Bitmap32, base: int) -> np.ndarray:
    """Decode the uint32 values of ``bm`` whose bytes are ``data`` (``data[0]`` at ``base``)."""
    if not bm.count:
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
    """The uint32 values of one container, decoded with numpy (tolerates malformed payloads).

    Work and output are bounded by one container's span (65,536 values) whatever its
    payload claims, and a malformed container never yields more values than its header's
    cardinality (so ``len(positions()) <= cardinality`` for every vector)."""
    p = c.offset - base
    high = np.uint32(c.key << 16)
    if c.kind == "array":
        low = sorted_unique(np.frombuffer(buf, dtype="<u2", count=c.cardinality, offset=p).astype(np.uint32))
    elif c.kind == "bitmap":
        bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8, count=BITMAP_BYTES, offset=p), bitorder="little")
        low = np.flatnonzero(bits).astype(np.uint32)
    else:
        starts, ends = run_bounds(buf, c, base)
        low = _runs_to_values(starts, ends)
    if len(low) > c.cardinality:
        low = low[:c.cardinality]
    return low | high


def run_bounds(buf: memoryview, c: Container, base: int) -> tuple[np.ndarray, np.ndarray]:
    """A run container's runs as ``(starts, inclusive ends)`` (int64, ends clipped to 65535), as stored."""
    pairs = np.frombuffer(buf, dtype="<u2", count=2 * c.runs, offset=c.offset - base + 2).reshape(-1, 2)
    starts = pairs[:, 0].astype(np.int64)
    return starts, np.minimum(starts + pairs[:, 1].astype(np.int64), 0xFFFF)


def _runs_to_values(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    lens = ends - starts + 1
    if int(lens.sum()) <= 1 << 16:
        return sorted_unique(expand_runs(starts, lens)).astype(np.uint32)
    # Overlapping runs that together claim more than the container's span: mark a 64 Ki mask instead.
    diff = np.zeros((1 << 16) + 1, dtype=np.int64)
    np.add.at(diff, starts, 1)
    np.add.at(diff, ends + 1, -1)
    return np.flatnonzero(np.cumsum(diff[:1 << 16]) > 0).astype(np.uint32)


def container_runs(buf: memoryview, c: Container, base: int) -> tuple[np.ndarray, np.ndarray]:
    """The container's values as maximal runs ``(starts, exclusive ends)`` of uint32 values (int64 arrays);
    a run container's runs are read as stored, without expanding them."""
    high = c.key << 16
    if c.kind == "run":
        starts, ends = run_bounds(buf, c, base)
        if int((ends - starts + 1).sum()) <= c.cardinality:
            return merge_runs(starts + high, ends + 1 + high)
    vals = container_values(buf, c, base).astype(np.int64)
    if len(vals) == 0:
        return vals, vals
    breaks = np.flatnonzero(np.diff(vals) != 1)
    return (np.concatenate(([vals[0]], vals[breaks + 1])), np.concatenate((vals[breaks], [vals[-1]])) + 1)


def merge_runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort half-open runs and join those that overlap or touch."""
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    new = np.ones(len(starts), dtype=bool)
    new[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.concatenate((first[1:], [len(starts)])) - 1
    return starts[first], reach[last]


def expand_runs(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[s, s+1, …, s+len-1]`` for every run, concatenated (vectorized)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.arange(total, dtype=np.int64)
    run_start_idx = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + (idx - run_start_idx)
