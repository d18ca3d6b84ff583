"""Iceberg ``deletion-vector-v1`` blobs: decode, validate, build and serialize.

Layout (Puffin spec): a 4-byte big-endian length of magic + vector, the magic
``D1 D3 39 64``, the vector in Roaring's portable 64-bit format (an 8-byte
little-endian bucket count, then per bucket a 4-byte key and a 32-bit Roaring
bitmap), and a big-endian CRC-32 of magic + vector.
"""

from __future__ import annotations

import array
import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

import numpy as np

from .._arrays import sorted_unique
from .._repr import RichRepr, make_view
from .._text import plural
from ..errors import BlobDecodeError, SourceError
from ..regions import Finding, FindingList, Region, Severity, clip
from .roaring import (JAVA_MAX_KEY, SERIAL_COOKIE, SERIAL_COOKIE_NO_RUNCONTAINER, Bitmap32, container_runs,
                      container_values, merge_runs, parse_bitmap32, values_from_slice)

if TYPE_CHECKING:  # pragma: no cover
    from .blob_entry import BlobEntry

BLOB_TYPE = "deletion-vector-v1"
DV_MAGIC = b"\xd1\xd3\x39\x64"
_MAGIC_WORD = struct.unpack("<I", DV_MAGIC)[0]  # the magic read as a little-endian uint32
ROW_POSITION_FIELD_ID = 2147483645
#: Buckets for absent keys below the largest are written (as Iceberg Java does) up to this many.
_MAX_FILLED_BUCKETS = 1 << 16


@dataclass
class Bucket:
    """One 32-bit Roaring bitmap of the vector, for positions ``key << 32 | low``."""

    key: int
    key_offset: int  # absolute offset of the 4-byte key
    bitmap: Bitmap32

    @property
    def cardinality(self) -> int:
        return self.bitmap.cardinality


class DeletionVector(RichRepr):
    """A decoded deletion vector: the set of deleted row positions of one data file.

    Build one with :meth:`from_bytes` (a blob's bytes), :meth:`from_positions`,
    ``PuffinFile(...).blobs[i].decode()`` or :func:`puffin_explorer.read_dv`.
    """

    blob_type = BLOB_TYPE
    # set later, by few vectors: defaults of the class
    _regions: Optional[list[Region]] = None
    _trailing: Optional[tuple[int, int]] = None
    _bitmaps: Optional[dict[int, Any]] = None  # bucket index -> pyroaring BitMap that passed CRoaring's validation
    _fast_valid = False  # checked whole by validate_many: its structure is parsed only when asked for
    _parsed = False  # parsed whole (buckets, regions' parts, findings)

    def __init__(self, data: bytes, offset: int = 0, metadata: Optional["BlobEntry"] = None,
                 space: str = "file", referenced_data_file: Optional[str] = None) -> None:
        # every vector sets the same attributes in the same order, so they share one key table and hold a slot
        # each (a table's read keeps a million; reading ``__dict__`` would give each a dict of its own)
        self._bytes: Optional[bytes] = bytes(data)
        self._length = len(self._bytes)
        self.offset = offset
        self.metadata = metadata
        self.space = space
        self._referenced = referenced_data_file
        self._positions: Optional[np.ndarray] = None
        self._reread: Optional[Callable[[int, int], bytes]] = None  # brings let-go bytes back

    @property
    def _data(self) -> bytes:
        """The vector's bytes: as given, or read again where a table's read let them go."""
        data = self._bytes
        if data is None:
            data = self._reread(self.offset, self._length)
            if len(data) != self._length:
                raise SourceError(f"the deletion vector at {self.offset:,} reads {len(data):,} bytes again, "
                                  f"not {self._length:,}", self.offset)
            self._bytes = data
        return data

    @classmethod
    def _decoded(cls, positions: np.ndarray, offset: int, length: int, reread: Callable[[int, int], bytes],
                 referenced_data_file: Optional[str] = None) -> "DeletionVector":
        """A vector of a file's many, its positions decoded with its neighbours' (:func:`common_positions`) and its
        bytes not held: ``reread(offset, length)`` reads them when a view or a check asks."""
        dv = cls.__new__(cls)
        dv._bytes = None  # the attributes of __init__, in its order (one shared key table)
        dv._length = length
        dv.offset = offset
        dv.metadata = None
        dv.space = "file"
        dv._referenced = referenced_data_file
        dv._positions = positions
        dv._reread = reread
        return dv

    def __getstate__(self) -> dict[str, Any]:
        """A pickled vector carries its bytes (read again if they were let go), never the reader."""
        state = dict(self.__dict__)
        state["_bytes"], state["_reread"] = self._data, None
        return state

    #: Attributes set by parsing, which runs the first time one of them is read (positions alone
    #: need no parse for the common one-bucket vector).
    _PARSED = frozenset(("findings", "buckets", "length_prefix", "crc_stored", "crc_computed", "magic_ok",
                         "bucket_count", "vector_parsed"))

    def __getattr__(self, name: str) -> Any:
        if name in DeletionVector._PARSED:
            self._parse_all()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _parse_all(self) -> None:
        if self._parsed:
            return
        self._parsed = True
        self.findings: FindingList = FindingList()
        self.buckets: list[Bucket] = []
        self.length_prefix: Optional[int] = None
        self.crc_stored: Optional[int] = None
        self.crc_computed: Optional[int] = None
        self.magic_ok = False
        self.bucket_count: Optional[int] = None
        #: False when the bytes are not read as a Roaring vector: too short, or neither the length
        #: prefix nor the magic match (bytes that are not a DV: their "buckets" would only be noise).
        self.vector_parsed = False
        self._parse()

    # ------------------------------------------------------------------ building
    @classmethod
    def from_bytes(cls, data: bytes, offset: int = 0, metadata: Optional["BlobEntry"] = None,
                   strict: bool = False, referenced_data_file: Optional[str] = None) -> "DeletionVector":
        """Decode a bare ``deletion-vector-v1`` blob (length prefix … CRC).

        ``offset`` is where the blob starts in its file, so regions and findings
        carry file offsets.  With ``strict=True`` the first error raises
        :class:`~puffin_explorer.errors.BlobDecodeError`.
        """
        dv = cls(data, offset, metadata, referenced_data_file=referenced_data_file)
        if strict:
            for f in dv.findings:
                if f.severity is Severity.ERROR:
                    raise BlobDecodeError.from_finding(f)
        return dv

    @classmethod
    def from_positions(cls, positions: Iterable[int] | np.ndarray,
                       referenced_data_file: Optional[str] = None) -> "DeletionVector":
        """Build a vector from row positions (any order, duplicates ignored)."""
        return cls(serialize_positions(positions), referenced_data_file=referenced_data_file)

    # ------------------------------------------------------------------ parsing
    def _add(self, code: str, severity: Severity, offset: int, message: str, hint: str = "") -> None:
        self.findings.append(Finding(code, severity, self.offset + offset, message, hint, space=self.space))

    def _region(self, name: str, kind: str, offset: int, length: int, value: Any = None,
                children: Optional[list[Region]] = None) -> Region:
        return Region(name, kind, self.offset + offset, length, children or (), value, space=self.space)

    def _parse(self) -> None:
        data, n = self._data, len(self._data)
        if n < 20:
            self._add("dv.truncated", Severity.ERROR, 0,
                      f"a deletion vector needs at least 20 bytes (length, magic, bucket count, CRC); "
                      f"this one has {n}")
            return
        (self.length_prefix,) = struct.unpack_from(">I", data, 0)
        magic = data[4:8]
        self.magic_ok = magic == DV_MAGIC
        (self.crc_stored,) = struct.unpack_from(">I", data, n - 4)
        self.crc_computed = zlib.crc32(data[4:n - 4]) & 0xFFFFFFFF
        if not _looks_like_dv(data):
            # one finding, not a list of what these bytes would break if they were a vector
            self._add("dv.magic", Severity.ERROR, 4,
                      f"DV magic is {magic.hex(' ')}, expected d1 d3 39 64, and the length prefix says "
                      f"{plural(self.length_prefix, 'byte')} where the blob holds {n - 8:,}: these bytes are not a "
                      "deletion vector, so the vector is not read",
                      "the footer's offset or length for this blob is probably wrong")
            return
        if self.length_prefix != n - 8:
            self._add("dv.length-prefix", Severity.ERROR, 0,
                      f"length prefix says {plural(self.length_prefix, 'byte')} of magic + vector; "
                      f"the blob holds {n - 8:,}",
                      "the blob's length in the footer and the DV's own length prefix disagree")
        if not self.magic_ok:
            self._add("dv.magic", Severity.ERROR, 4,
                      f"DV magic is {magic.hex(' ')}, expected d1 d3 39 64")
        if self.crc_stored != self.crc_computed:
            self._add("dv.crc", Severity.ERROR, n - 4,
                      f"CRC-32 stored {self.crc_stored:#010x}, computed {self.crc_computed:#010x} "
                      f"over magic + vector", "the vector's bytes were changed or cut")
        self.vector_parsed = True
        self._parse_vector(memoryview(data)[:n - 4])

    def _build_regions(self) -> list[Region]:
        """The blob's regions, built from what parsing recorded (only when asked for)."""
        data, n = self._data, len(self._data)
        if n < 20:
            return [self._region("truncated deletion vector", "unparsed", 0, n)] if n else []
        framing = [self._region("length (big-endian)", "dv-length", 0, 4, self.length_prefix),
                   self._region("DV magic", "dv-magic", 4, 4, data[4:8].hex(" "))]
        if not self.vector_parsed:
            return framing + [self._region("not a deletion vector (length and magic wrong)", "unparsed", 8, n - 8)]
        vector = [self._region("bucket count (uint64)", "dv-bucket-count", 8, 8, self.bucket_count)]
        for b in self.buckets:
            bm = b.bitmap
            key_pos = b.key_offset - self.offset
            children = [self._region("key", "dv-bucket-key", key_pos, 4, b.key)] + bm.regions
            vector.append(self._region(f"bucket key={b.key} ({plural(bm.cardinality, 'position')})", "dv-bucket",
                                       key_pos, 4 + bm.length, bm.cardinality, children))
        if self._trailing is not None:
            vector.append(self._region("trailing bytes", "unclaimed", *self._trailing))
        return framing + [
            self._region("vector (Roaring portable 64-bit)", "dv-vector", 8, n - 12, children=vector),
            self._region("CRC-32 (big-endian)", "dv-crc", n - 4, 4, f"{self.crc_stored:#010x}"
                         + (" ok" if self.crc_stored == self.crc_computed else " BAD")),
        ]

    def _parse_vector(self, buf: memoryview) -> None:
        end = len(buf)
        (count,) = struct.unpack_from("<Q", buf, 8)
        self.bucket_count = count
        pos = 16
        # Every bucket needs at least a key (4) and an empty bitmap (8) bytes.
        if count > (end - pos) // 12:
            self._add("dv.bucket-count", Severity.ERROR, 8,
                      f"{plural(count, 'bucket')} declared, but {plural(end - pos, 'byte')} can hold at most "
                      f"{(end - pos) // 12:,}")
            count = (end - pos) // 12
        prev_key = -1
        for i in range(count):
            if end - pos < 4:
                self._add("roaring.truncated", Severity.ERROR, pos, f"vector ends before bucket {i}'s key")
                break
            (key,) = struct.unpack_from("<I", buf, pos)
            key_pos = pos
            if key <= prev_key:
                self._add("roaring.keys-order", Severity.ERROR, pos,
                          f"bucket key {key} follows key {prev_key}: keys must be strictly ascending")
            if key > JAVA_MAX_KEY:
                self._add("roaring.key-range", Severity.ERROR, pos,
                          f"bucket key {key:,} is above 2^31-1: positions would be negative as 64-bit "
                          f"signed longs", "Iceberg Java rejects this vector")
            prev_key = max(prev_key, key)
            pos += 4
            # CRoaring's deserializer validates array and bitmap payloads (and the result decodes the
            # positions); run containers' header cardinalities it ignores, so those are always checked here
            checked = self._validated_bitmap(len(self.buckets), buf[pos:end])
            bm = parse_bitmap32(buf, pos, self.offset, self.space,
                                validate_payloads="runs" if checked else True)
            self.findings.extend(bm.findings)
            self.buckets.append(Bucket(key, self.offset + key_pos, bm))
            pos += bm.length
            if not bm.ok:
                break
        else:
            if pos < end:
                self._add("roaring.trailing-bytes", Severity.ERROR, pos,
                          f"{plural(end - pos, 'byte')} after the last bucket, before the CRC")
                self._trailing = (pos, end - pos)

    # ------------------------------------------------------------------ queries
    @property
    def cardinality(self) -> int:
        """Number of deleted positions, from the container headers (nothing materialized)."""
        if self._fast_valid and not self._parsed:
            return len(self._positions)
        return sum(b.cardinality for b in self.buckets)

    def __len__(self) -> int:
        return self.cardinality

    @property
    def is_valid(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def crc_ok(self) -> bool:
        return self.crc_stored is not None and self.crc_stored == self.crc_computed

    @property
    def referenced_data_file(self) -> Optional[str]:
        if self._referenced is not None:
            return self._referenced
        if self.metadata is not None:
            return self.metadata.properties.get("referenced-data-file")
        return None

    def _validated_bitmap(self, index: int, data) -> bool:
        """Deserialize bucket ``index``'s bitmap with pyroaring (which validates it) and keep it."""
        try:
            from pyroaring import BitMap

            if self._bitmaps is None:
                self._bitmaps = {}
            self._bitmaps[index] = BitMap.deserialize(bytes(data))
            return True
        except Exception:  # noqa: BLE001 - invalid: the numpy checks below say why
            return False

    def _one_array_positions(self) -> Optional[np.ndarray]:
        """Positions of the commonest vector of real tables -- one bucket holding one array
        container (at most 4,096 deleted rows in a 65,536-row range) -- read with numpy alone.

        Only a well-formed container is read here (its offsets and length agree exactly and
        its values strictly increase); anything else returns None and the general path decides.
        """
        shape = _one_array_shape(self._data)
        if shape is None:
            return None
        start, card, high = shape
        low = np.frombuffer(self._data, "<u2", card, start)
        if card > 1 and np.count_nonzero(low[1:] <= low[:-1]):
            return None
        out = low.astype(np.uint64)
        if high:
            out |= np.uint64(high)
        return out

    def _one_bucket_positions(self) -> Optional[np.ndarray]:
        """Positions of a one-bucket vector straight from CRoaring, without parsing the structure
        (None when the vector has another shape or CRoaring refuses it: the full parse decides)."""
        data, n = self._data, len(self._data)
        if n < 24 or struct.unpack_from("<Q", data, 8)[0] != 1 or not _looks_like_dv(data):
            return None
        small = self._one_array_positions()
        if small is not None:
            return small
        try:
            from pyroaring import BitMap

            # a view, not a copy of the vector's bytes (CRoaring reads any buffer)
            low = np.frombuffer(BitMap.deserialize(memoryview(data)[20:n - 4]).to_array(), dtype=np.uint32)
        except Exception:  # noqa: BLE001
            return None
        out = low.astype(np.uint64)
        key = struct.unpack_from("<I", data, 16)[0]
        if key:
            out |= np.uint64(key << 32)
        return out

    def positions(self) -> np.ndarray:
        """All deleted positions as a sorted ``numpy.uint64`` array."""
        if self._positions is not None:
            return self._positions
        if not self._parsed:
            fast = self._one_bucket_positions()
            if fast is not None:
                fast.flags.writeable = False
                self._positions = fast
        if self._positions is None:
            lows = []
            mv = memoryview(self._data)
            for i, b in enumerate(self.buckets):
                if not b.bitmap.count:
                    continue
                rb = self._bitmaps.get(i) if self._bitmaps else None
                if rb is not None:
                    lows.append((b.key, np.frombuffer(rb.to_array(), dtype=np.uint32)))
                    continue
                lo = b.bitmap.offset - self.offset
                lows.append((b.key, values_from_slice(mv[lo:lo + b.bitmap.length], b.bitmap, b.bitmap.offset)))
            out = np.empty(sum(len(v) for _, v in lows), dtype=np.uint64)
            at = 0
            for key, low in lows:  # one output array, filled in place: no temporaries per bucket
                part = out[at:at + len(low)]
                part[:] = low
                if key:
                    part |= np.uint64(key << 32)
                at += len(low)
            if len(lows) > 1 and np.any(out[1:] <= out[:-1]):
                out = sorted_unique(out)  # keys out of order in a malformed vector
            out.flags.writeable = False
            self._positions = out
        return self._positions

    @property
    def min_position(self) -> Optional[int]:
        """The smallest deleted position (decodes only the containers at the start), ``None`` when empty."""
        if self._fast_valid and not self._parsed:
            return int(self._positions[0])
        for b in self.buckets:
            for i in range(b.bitmap.count):  # a malformed container can hold no values: try the next
                vals = self._container_values(b, b.bitmap.container(i))
                if len(vals):
                    return int(vals[0])
        return None

    @property
    def max_position(self) -> Optional[int]:
        """The largest deleted position (decodes only the containers at the end), ``None`` when empty."""
        if self._fast_valid and not self._parsed:
            return int(self._positions[-1])
        for b in reversed(self.buckets):
            for i in reversed(range(b.bitmap.count)):
                vals = self._container_values(b, b.bitmap.container(i))
                if len(vals):
                    return int(vals[-1])
        return None

    def head(self, n: int = 10) -> np.ndarray:
        """The ``n`` smallest deleted positions, decoding containers only until there are ``n``."""
        keys = [(b.key, c.key) for b in self.buckets for c in b.bitmap.containers]
        if self._positions is not None or any(a >= b for a, b in zip(keys, keys[1:])):
            return self.positions()[:max(0, n)]  # already decoded, or keys out of order: sort them all
        parts, have = [], 0
        for b in self.buckets:
            for c in b.bitmap.containers:
                if have >= n:
                    break
                parts.append(sorted_unique(self._container_values(b, c))[:n - have])
                have += len(parts[-1])
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)

    def _container_values(self, bucket: Bucket, c) -> np.ndarray:
        vals = container_values(memoryview(self._data), c, self.offset)
        return vals.astype(np.uint64) | np.uint64(bucket.key << 32)

    def contains(self, position: int) -> bool:
        """Whether ``position`` is deleted (decodes only the bucket that could hold it)."""
        key, low = position >> 32, position & 0xFFFFFFFF
        for b in self.buckets:
            if b.key == key:
                return low in self._bucket_bitmap(b)
        return False

    __contains__ = contains

    def _bucket_bitmap(self, b: Bucket):
        from pyroaring import BitMap

        lo = b.bitmap.offset - self.offset
        vals = values_from_slice(memoryview(self._data)[lo:lo + b.bitmap.length], b.bitmap, b.bitmap.offset)
        return BitMap(_uint32_array(vals))

    def _keyed(self) -> dict[int, Any]:
        return {b.key: self._bucket_bitmap(b) for b in self.buckets}

    def _combine(self, other: "DeletionVector", op: str) -> "DeletionVector":
        mine, theirs = self._keyed(), other._keyed()
        from pyroaring import BitMap

        keys = sorted(set(mine) | set(theirs))
        result = {}
        for k in keys:
            a, b = mine.get(k, BitMap()), theirs.get(k, BitMap())
            result[k] = getattr(a, op)(b)
        return DeletionVector(_serialize_bitmaps(result), referenced_data_file=self.referenced_data_file)

    def union(self, other: "DeletionVector") -> "DeletionVector":
        """Positions deleted by either vector."""
        return self._combine(other, "union")

    def intersection(self, other: "DeletionVector") -> "DeletionVector":
        """Positions deleted by both vectors."""
        return self._combine(other, "intersection")

    def difference(self, other: "DeletionVector") -> "DeletionVector":
        """Positions deleted here but not in ``other`` (e.g. what a newer DV added)."""
        return self._combine(other, "difference")

    def ranges(self):
        """Runs of consecutive deleted positions as a DataFrame: start, end (exclusive), length."""
        import pandas as pd

        # From the containers, never through positions(): run containers are read as runs, so the
        # work follows the vector's bytes, not how many positions its runs cover.
        mv = memoryview(self._data)
        starts, ends = [np.zeros(0, np.uint64)], [np.zeros(0, np.uint64)]
        for b in self.buckets:
            high = np.uint64(b.key << 32)
            for c in b.bitmap.containers:
                s, e = container_runs(mv, c, self.offset)
                starts.append(s.astype(np.uint64) + high)
                ends.append(e.astype(np.uint64) + high)
        start, end = merge_runs(np.concatenate(starts), np.concatenate(ends))
        start, end = start.astype(np.int64), end.astype(np.int64)
        return pd.DataFrame({"start": start, "end": end, "length": end - start})

    def containers(self):
        """One row per Roaring container: bucket key, container key, type, cardinality, bytes, offset."""
        import pandas as pd

        rows = []
        for b in self.buckets:
            for c in b.bitmap.containers:
                first = (b.key << 32) | (c.key << 16)
                rows.append({"bucket_key": b.key, "container_key": c.key, "type": c.kind,
                             "cardinality": c.cardinality, "bytes": c.length, "offset": c.offset,
                             "runs": c.runs if c.kind == "run" else None,
                             "first_possible": first, "last_possible": first + 0xFFFF})
        cols = ["bucket_key", "container_key", "type", "cardinality", "bytes", "offset", "runs",
                "first_possible", "last_possible"]
        return pd.DataFrame(rows, columns=cols)

    def container_summary(self) -> dict[str, dict[str, int]]:
        """Count, positions and bytes per container type."""
        out: dict[str, dict[str, int]] = {}
        for b in self.buckets:
            for c in b.bitmap.containers:
                d = out.setdefault(c.kind, {"containers": 0, "positions": 0, "bytes": 0})
                d["containers"] += 1
                d["positions"] += c.cardinality
                d["bytes"] += c.length
        return out

    def run_count(self) -> int:
        """Maximal runs of consecutive deleted positions, counted from the containers (nothing
        materialized); computed once per vector."""
        if getattr(self, "_run_count", None) is None:
            from .dv_stats import count_runs

            self._run_count = count_runs(self.to_bytes(), self.offset, self.buckets) if self.cardinality else 0
        return self._run_count

    def edge_positions(self, n: int = 10) -> tuple[list[int], list[int]]:
        """The first and the last ``n`` deleted positions, decoding only the containers at the ends."""
        pairs = [(b, c) for b in self.buckets for c in b.bitmap.containers]
        first: list[int] = []
        for b, c in pairs:
            if len(first) >= n:
                break
            first.extend(int(x) for x in self._container_values(b, c)[: n - len(first)])
        last: list[int] = []
        for b, c in reversed(pairs):
            if len(last) >= n:
                break
            vals = self._container_values(b, c)
            last[:0] = [int(x) for x in vals[max(0, len(vals) - (n - len(last))):]]
        return first, last

    @property
    def nbytes(self) -> int:
        """Size of the blob's (decompressed) bytes."""
        return self._length

    def region_tree(self) -> Region:
        """The blob's regions under one root region (what the layout strip and hex view draw)."""
        return Region("deletion vector", "dv", self.offset, len(self._data), self.regions(), space=self.space)

    def to_pandas(self):
        """The deleted positions as a one-column DataFrame ``pos``."""
        import pandas as pd

        return pd.DataFrame({"pos": self.positions().astype(np.int64)})

    def plot(self, bins: int = 200, upper: Optional[int] = None):
        """A matplotlib Figure of where the deleted rows fall (binned from the bitmap, never per row)."""
        return make_view("figure", self, bins, upper)

    def to_bytes(self) -> bytes:
        """The blob's bytes (as read, or as serialized for a vector built here)."""
        return self._data

    def regions(self) -> list[Region]:
        """The byte regions of this blob (length, magic, buckets and containers, CRC)."""
        if self._regions is None:
            self._regions = self._build_regions()
        return list(self._regions)

    def summary(self) -> str:
        """One line: cardinality, range, CRC (computed once per vector)."""
        if getattr(self, "_summary", None) is None:
            if not self._fast_valid and not self.buckets and self.findings:
                self._summary = f"unreadable deletion vector ({self.findings[0].code})"
            else:
                lo, hi = self.min_position, self.max_position
                span = f", positions {lo:,}..{hi:,}" if lo is not None else ""
                self._summary = f"{plural(self.cardinality, 'deleted row')}{span}, CRC {'ok' if self.crc_ok else 'BAD'}"
        return self._summary

    def __repr__(self) -> str:
        ref = self.referenced_data_file
        return f"DeletionVector(cardinality={self.cardinality}, referenced_data_file={ref!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeletionVector):
            return NotImplemented
        return np.array_equal(self.positions(), other.positions())

    __hash__ = None  # type: ignore[assignment]


def _looks_like_dv(data: bytes) -> bool:
    """At least 20 bytes, and the length prefix or the magic right (one damaged field is still a DV)."""
    n = len(data)
    return n >= 20 and (data[4:8] == DV_MAGIC or struct.unpack_from(">I", data, 0)[0] == n - 8)


def _one_array_shape(data: bytes) -> Optional[tuple[int, int, int]]:
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


def _array_only_positions(data: bytes) -> Optional[np.ndarray]:
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


#: decode_many works on this many vectors at a time (about 16 MB of joined bytes for vectors of 1 KB).
DECODE_MANY_CHUNK = 16_384


def decode_many(dvs: list["DeletionVector"]) -> None:
    """Decode the positions of many small vectors in one numpy pass (what ``positions()`` of each
    would return, computed together).

    Real tables hold many DVs of a few hundred positions; decoding them one by one costs more
    in per-call overhead than in work.  Vectors of the common shape (one bucket, one array
    container) are read together; any other vector, or one whose values do not strictly
    increase, is left for its own ``positions()``.
    """
    picked = [dv for dv in dvs
              if dv is not None and dv._positions is None and not dv._parsed]
    if len(picked) > DECODE_MANY_CHUNK:  # bounded temporaries: the joined bytes of one chunk at a time
        for i in range(0, len(picked), DECODE_MANY_CHUNK):
            decode_many(picked[i:i + DECODE_MANY_CHUNK])
        return
    if not picked:
        return
    datas = [dv._data for dv in picked]
    # the first 40 bytes of every vector side by side: its shape is read for all of them at once
    heads = np.frombuffer(b"".join([d[:40].ljust(40, b"\xff") for d in datas]), dtype=_HEAD)
    sizes = np.fromiter(map(len, datas), dtype=np.int64, count=len(datas))
    shape, card, start, high = _common_shape(heads, sizes)
    like_dv = (heads["magic"] == _MAGIC_WORD) | (heads["length"] == sizes - 8)  # as _looks_like_dv
    ok = like_dv & shape
    chosen = np.flatnonzero(ok).tolist()
    if not chosen:
        return
    starts, cards = start[ok].tolist(), card[ok].tolist()
    low = np.frombuffer(b"".join([datas[i][s:s + 2 * c] for i, s, c in zip(chosen, starts, cards)]), dtype="<u2")
    high = high[ok]
    ends = np.cumsum(cards)
    first = ends - np.asarray(cards)
    # a value not above the one before it, other than a vector's first value, spoils its vector
    falls = np.flatnonzero(low[1:] <= low[:-1]) + 1
    bad = set(np.searchsorted(ends, falls[~np.isin(falls, first)], side="right").tolist())
    out = low.astype(np.uint64)
    if high.any():
        out |= np.repeat(high, cards)
    out.flags.writeable = False
    for j, (i, a, b) in enumerate(zip(chosen, first.tolist(), ends.tolist())):
        if j not in bad:
            picked[i]._positions = out[a:b]


def _common_shape(heads: np.ndarray, sizes: np.ndarray):
    """For vectors' first 40 bytes (:data:`_HEAD`) and sizes: ``(shape, card, start, high)``: whether each is
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


def validate_many(dvs: list["DeletionVector"]) -> None:
    """Check many small vectors together: those of the common shape (one bucket, one array
    container) whose length prefix, magic, CRC, key and strictly increasing values are all right
    get no findings and their positions without a per-vector parse (their structure is still
    parsed, lazily, when regions or buckets are asked for).  Any other vector is left as it was:
    its own parse finds what is wrong with it."""
    decode_many(dvs)
    for dv in dvs:
        if dv is None or dv._fast_valid or dv._parsed:
            continue
        data = dv._data
        n = len(data)
        if data[4:8] != DV_MAGIC:
            continue
        if dv._positions is None:
            dv._positions = _array_only_positions(data)  # several array containers in one bucket
            if dv._positions is None:
                continue
        (length, ) = struct.unpack_from(">I", data, 0)
        (stored, ) = struct.unpack_from(">I", data, n - 4)
        (key, ) = struct.unpack_from("<I", data, 16)
        if length != n - 8 or key > JAVA_MAX_KEY:
            continue
        computed = zlib.crc32(memoryview(data)[4:n - 4]) & 0xFFFFFFFF
        if computed != stored:
            continue
        dv.__dict__.update(findings=FindingList(), length_prefix=length, magic_ok=True, crc_stored=stored,
                           crc_computed=computed, bucket_count=1, vector_parsed=True)
        dv._fast_valid = True


def common_positions(buf: Any, starts: Any, sizes: Any, crc: bool = True,
                     out: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions of many framed vectors lying in one buffer (a span of a Puffin or DV file), checked
    together without an object per vector: ``(ok, cards, positions)``.

    ``ok[i]`` when vector ``i`` (``sizes[i]`` bytes at ``starts[i]`` of ``buf``) is of the common shape (one
    bucket, one array container, either Roaring cookie) and entirely right: length prefix, magic, a key
    Iceberg Java can write, CRC, strictly increasing values, which are then exactly what its
    ``positions()`` returns; ``cards[i]`` its position count (0 where not ok); ``positions`` the ok
    vectors' positions one after another, in ``starts`` order.  A vector not ok needs a parse of its own
    (:class:`DeletionVector`), which says what is wrong with it or decodes its other shape.  With ``crc=False``
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
    """The first 40 bytes of each vector (:data:`_HEAD`), 0xFF past its end or for a vector not inside ``buf``,
    gathered in one numpy step."""
    raw = np.frombuffer(buf, np.uint8)
    if not len(starts) or not len(raw):
        return np.full((len(starts), 40), 0xFF, np.uint8).view(_HEAD).reshape(len(starts))
    reach = np.arange(40)
    got = raw[np.clip(starts[:, None] + reach, 0, len(raw) - 1)]
    got[(reach >= np.minimum(sizes, 40)[:, None]) | ~inside[:, None]] = 0xFF
    return np.ascontiguousarray(got).view(_HEAD).reshape(len(starts))


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
    shape, card, first, high = _common_shape(heads, sizes)
    ok = (inside & shape & (heads["magic"] == _MAGIC_WORD)
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


#: The first 40 bytes of a deletion vector, as far as one bucket with one array container goes
#: (both Roaring cookies: with an offsets header, and with run flags).
_HEAD = np.dtype({
    "names": ["length", "magic", "buckets", "key", "cookie", "count", "hkey", "card_m1", "offset0", "run_flags",
              "hkey_r", "card_m1_r"],
    "formats": [">u4", "<u4", "<u8", "<u4", "<u4", "<u4", "<u2", "<u2", "<u4", "u1", "<u2", "<u2"],
    "offsets": [0, 4, 8, 16, 20, 24, 28, 30, 32, 24, 25, 27],
    "itemsize": 40,
})


def _uint32_array(values: np.ndarray) -> array.array:
    arr = array.array("I")
    arr.frombytes(np.ascontiguousarray(values, dtype=np.uint32).tobytes())
    return arr


def _serialize_bitmaps(bitmaps: dict[int, Any]) -> bytes:
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
            bitmaps[int(keys[start])] = BitMap(_uint32_array(low))
    return _serialize_bitmaps(bitmaps)


def check_metadata(dv: DeletionVector, blob: "BlobEntry", anchor: int) -> list[Finding]:
    """The Puffin spec's rules for a DV blob's footer entry, checked against the decoded vector."""
    out = []
    where = f"blob {blob.index}"

    def add(code: str, sev: Severity, msg: str, hint: str = "") -> None:
        out.append(Finding(code, sev, anchor, f"{where}: {msg}", hint))

    if blob.compression_codec is not None:
        add("dv.codec", Severity.ERROR, f"compression-codec is {clip(blob.compression_codec)}; "
            "deletion-vector-v1 blobs must not be compressed")
    if blob.snapshot_id != -1:
        add("dv.snapshot-id", Severity.ERROR, f"snapshot-id is {blob.snapshot_id}, must be -1")
    if blob.sequence_number != -1:
        add("dv.sequence-number", Severity.ERROR, f"sequence-number is {blob.sequence_number}, must be -1")
    if blob.fields != [ROW_POSITION_FIELD_ID]:
        add("dv.fields", Severity.WARNING, f"fields is {clip(blob.fields)}, expected [{ROW_POSITION_FIELD_ID}] "
            "(the _pos metadata column)")
    props = blob.properties
    if "referenced-data-file" not in props:
        add("dv.referenced-data-file", Severity.ERROR, "property referenced-data-file is missing",
            "a reader cannot tell which data file this vector applies to")
    card = props.get("cardinality")
    if card is None:
        add("dv.cardinality-missing", Severity.ERROR, "property cardinality is missing")
    elif not (isinstance(card, str) and card.isascii() and card.isdigit() and len(card) <= 30):
        add("dv.cardinality-invalid", Severity.ERROR, f"property cardinality {clip(card)} is not a number")
    elif dv.vector_parsed and int(card) != dv.cardinality:
        add("dv.cardinality-mismatch", Severity.ERROR,
            f"property cardinality says {int(card):,}, the vector holds {dv.cardinality:,}")
    return out
