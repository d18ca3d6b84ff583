"""The structure of a deletion vector's bytes: length prefix, magic, buckets (32-bit Roaring bitmaps), CRC, each
problem a finding and each part a byte region.  :class:`~.dv.DeletionVector` parses it the first time one of
these is asked for; its positions of the common shapes need no parse (:mod:`.dv_shape`)."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any, Optional

from .._text import plural
from ..regions import Finding, FindingList, Region, Severity
from .dv_shape import DV_MAGIC, looks_like_dv
from .roaring import JAVA_MAX_KEY, Bitmap32, parse_bitmap32


@dataclass
class Bucket:
    """One 32-bit Roaring bitmap of the vector, for positions ``key << 32 | low``."""

    key: int
    key_offset: int  # absolute offset of the 4-byte key
    bitmap: Bitmap32

    @property
    def cardinality(self) -> int:
        return self.bitmap.cardinality


class VectorStructure:
    """Mixin of :class:`~.dv.DeletionVector`: the parse of its bytes (``_data``, at ``offset`` of ``space``) into
    the attributes of :attr:`_PARSED`, the regions built from them, and the bitmaps CRoaring validated."""

    # set by the parse, by few vectors: defaults of the class
    _trailing: Optional[tuple[int, int]] = None
    _bitmaps: Optional[dict[int, Any]] = None  # bucket index -> pyroaring BitMap that passed CRoaring's validation
    _parsed = False  # parsed whole (buckets, regions' parts, findings)

    #: Attributes set by parsing, which runs the first time one of them is read (positions alone
    #: need no parse for the common one-bucket vector).
    _PARSED = frozenset(("findings", "buckets", "length_prefix", "crc_stored", "crc_computed", "magic_ok",
                         "bucket_count", "vector_parsed"))

    def __getattr__(self, name: str) -> Any:
        if name in VectorStructure._PARSED:
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
        if not looks_like_dv(data):
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

