"""Iceberg ``deletion-vector-v1`` blobs: the decoded vector, its positions and queries, many decoded together.

The framing and the common shapes are in :mod:`.dv_shape`, the structure's parse in :mod:`.dv_structure`,
vectors read straight from a file's buffer in :mod:`.dv_batch`, serialization in :mod:`.dv_serialize`.
"""

from __future__ import annotations

import struct
import zlib
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

import numpy as np

from .._arrays import sorted_unique
from .._repr import RichRepr, make_view
from .._text import plural
from ..errors import BlobDecodeError, SourceError
from ..regions import Finding, FindingList, Region, Severity, clip
from .dv_serialize import serialize_bitmaps, serialize_positions, uint32_array
from .dv_shape import (BLOB_TYPE, DV_MAGIC, HEAD, MAGIC_WORD, ROW_POSITION_FIELD_ID, array_only_positions,
                       common_shape, looks_like_dv, one_array_shape)
from .dv_structure import Bucket, VectorStructure
from .roaring import JAVA_MAX_KEY, container_runs, container_values, merge_runs, values_from_slice

if TYPE_CHECKING:  # pragma: no cover
    from .blob_entry import BlobEntry


class DeletionVector(VectorStructure, RichRepr):
    """A decoded deletion vector: the set of deleted row positions of one data file.

    Build one with :meth:`from_bytes` (a blob's bytes), :meth:`from_positions`,
    ``PuffinFile(...).blobs[i].decode()`` or :func:`puffin_explorer.read_dv`.
    """

    blob_type = BLOB_TYPE
    # set later, by few vectors: defaults of the class
    _regions: Optional[list[Region]] = None
    _fast_valid = False  # checked whole by validate_many: its structure is parsed only when asked for

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
        """A vector of a file's many, its positions decoded with its neighbours'
        (:func:`~.dv_batch.common_positions`) and its bytes not held: ``reread(offset, length)`` reads them when a
        view or a check asks."""
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

    def _one_array_positions(self) -> Optional[np.ndarray]:
        """Positions of the commonest vector of real tables -- one bucket holding one array
        container (at most 4,096 deleted rows in a 65,536-row range) -- read with numpy alone.

        Only a well-formed container is read here (its offsets and length agree exactly and
        its values strictly increase); anything else returns None and the general path decides.
        """
        shape = one_array_shape(self._data)
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
        if n < 24 or struct.unpack_from("<Q", data, 8)[0] != 1 or not looks_like_dv(data):
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
        return BitMap(uint32_array(vals))

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
        return DeletionVector(serialize_bitmaps(result), referenced_data_file=self.referenced_data_file)

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
    heads = np.frombuffer(b"".join([d[:40].ljust(40, b"\xff") for d in datas]), dtype=HEAD)
    sizes = np.fromiter(map(len, datas), dtype=np.int64, count=len(datas))
    shape, card, start, high = common_shape(heads, sizes)
    like_dv = (heads["magic"] == MAGIC_WORD) | (heads["length"] == sizes - 8)  # as looks_like_dv
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
            dv._positions = array_only_positions(data)  # several array containers in one bucket
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
