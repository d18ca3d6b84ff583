"""A Delta Lake deletion-vector file (``deletion_vector_<uuid>.bin``) as byte regions.

Layout (Delta PROTOCOL.md, "Deletion Vector File Storage Format"): a version
byte ``1``, then DVs back to back, each a big-endian 4-byte ``dataSize``, the
magic ``D1 D3 39 64`` and a portable 64-bit Roaring bitmap (``dataSize`` bytes
together), and a big-endian CRC-32 of those bytes.  Each DV is walked from the
previous one's end, so the region tree covers every byte; descriptors from a
table's log (optional) say which data file each DV belongs to.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from .._repr import RichRepr, hex_view
from .._text import are, plural
from ..findings import make
from ..format import container
from ..io import ByteSource, Location
from ..regions import Finding, FindingList, Region, Severity
from .descriptor import DVDescriptor, decode_dv, is_delta_dv_magic

FORMAT_VERSION = 1
#: Files up to this size are fetched with one request before the walk.
PREFETCH_LIMIT = 64 << 20


@dataclass
class DeltaDV:
    """One DV inside a DV file: where it is, what it decodes to, which data files point at it."""

    index: int
    offset: int  # of the 4-byte size field, as descriptors give it
    size_in_bytes: int  # magic + bitmap
    dv: Any  # DeletionVector
    data_files: tuple[str, ...] = ()

    @property
    def length(self) -> int:
        return self.size_in_bytes + 8

    @property
    def end(self) -> int:
        return self.offset + self.length

    @property
    def cardinality(self) -> int:
        return int(self.dv.cardinality)


class DeltaDVFile(RichRepr):
    """A Delta DV file opened leniently: ``dvs``, ``regions()``, ``findings``, ``hex()``.

    ``descriptors`` maps data files to their :class:`DVDescriptor` (what
    ``DeltaTable.dv_file()`` passes) so each DV names its data files and a
    descriptor that points between DVs is reported.
    """

    def __init__(self, location: Location, storage_options: Optional[dict[str, Any]] = None,
                 descriptors: Optional[Iterable[tuple[str, DVDescriptor]]] = None) -> None:
        self.source = ByteSource.of(location, storage_options)
        self.location = self.source.location
        self.size = self.source.size
        self.version: Optional[int] = None
        self.dvs: list[DeltaDV] = []
        self._findings: list[Finding] = []
        self._tail: Optional[tuple[int, int]] = None  # unparsed bytes at the end
        self.descriptors = list(descriptors or [])
        self._walk()
        self._match_descriptors()

    def _add(self, code: str, offset: Optional[int], message: str, length: Optional[int] = None) -> None:
        self._findings.append(make(code, offset, message, length=length))

    def _walk(self) -> None:
        size = self.size
        if size == 0:
            self._add("delta.dv-file-truncated", 0, "the file is empty; a DV file starts with a version byte")
            return
        self.source.prefetch(0, min(size, PREFETCH_LIMIT))
        self.version = self.source.read(0, 1)[0]
        if self.version != FORMAT_VERSION:
            self._add("delta.dv-file-version", 0,
                      f"the version byte is {self.version}, expected {FORMAT_VERSION}", 1)
        pos = 1
        while pos < size:
            head = self.source.read(pos, 8) if size - pos >= 8 else b""
            if len(head) < 8:
                self._tail = (pos, size - pos)
                self._add("delta.dv-file-truncated", pos,
                          f"{plural(size - pos, 'byte', sep='')} at the end {are(size - pos)} too few for another DV (size field and magic)",
                          size - pos)
                return
            (data_size,) = struct.unpack(">I", head[:4])
            if not is_delta_dv_magic(head[4:8]) or data_size < 4 or pos + data_size + 8 > size:
                why = (f"no DV magic at {pos + 4:,} (found {head[4:8].hex(' ')})" if not is_delta_dv_magic(head[4:8])
                       else f"its size field says {plural(data_size, 'byte')}, but the file has {size - pos - 8:,} left")
                self._tail = (pos, size - pos)
                self._add("delta.dv-file-truncated", pos,
                          f"bytes [{pos:,}, {size:,}) do not hold a DV: {why}", size - pos)
                return
            data = self.source.read(pos, data_size + 8)
            dv = decode_dv(data, pos)
            self.dvs.append(DeltaDV(len(self.dvs), pos, data_size, dv))
            pos += data_size + 8

    def _match_descriptors(self) -> None:
        by_offset = {d.offset: d for d in self.dvs}
        for data_file, desc in self.descriptors:
            d = by_offset.get(desc.read_offset)
            if d is None:
                starts = ", ".join(str(x.offset) for x in self.dvs) or "none"
                self._add("delta.dv-offset-mismatch", desc.read_offset,
                          f"{data_file}: the descriptor's offset {desc.read_offset} is not where a DV starts "
                          f"(DVs start at {starts})")
                continue
            d.data_files = d.data_files + (data_file,)
            if d.size_in_bytes != desc.size_in_bytes:
                self._add("delta.dv-size-mismatch", d.offset,
                          f"{data_file}: sizeInBytes {desc.size_in_bytes} but the DV's size field says "
                          f"{d.size_in_bytes}", 4)

    # ---- answers --------------------------------------------------------------------------
    def dv_at(self, offset: int) -> Optional[DeltaDV]:
        """The DV whose size field is at ``offset`` (a descriptor's ``offset``)."""
        for d in self.dvs:
            if d.offset == offset:
                return d
        return None

    def container_of(self, offset: int) -> Optional[DeltaDV]:
        """The DV whose bytes hold ``offset``."""
        for d in self.dvs:
            if d.offset <= offset < d.end:
                return d
        return None

    @property
    def file_findings(self) -> FindingList:
        """Problems of the file's framing and of descriptors pointing into it (not inside the DVs)."""
        return FindingList(self._findings)

    @property
    def findings(self) -> FindingList:
        """Problems of the file and of every DV in it, by offset."""
        out = list(self._findings)
        for d in self.dvs:
            out.extend(d.dv.findings)
        return FindingList(sorted(out, key=lambda f: (f.space != "file", f.offset if f.offset is not None else -1)))

    @property
    def is_valid(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_pandas(self):
        """One row per DV: index, offset, size_in_bytes, length, cardinality, first/last position, CRC, data files."""
        import pandas as pd

        rows = [{"index": d.index, "offset": d.offset, "size_in_bytes": d.size_in_bytes, "length": d.length,
                 "cardinality": d.cardinality, "min_position": d.dv.min_position,
                 "max_position": d.dv.max_position, "crc_ok": d.dv.crc_ok,
                 "data_files": list(d.data_files)} for d in self.dvs]
        return pd.DataFrame(rows, columns=["index", "offset", "size_in_bytes", "length", "cardinality",
                                           "min_position", "max_position", "crc_ok", "data_files"])

    def regions(self) -> Region:
        """Version byte, then per DV its size field, magic, buckets and containers, CRC; trailing bytes."""
        children: list[Region] = []
        if self.version is not None:
            children.append(Region("version", "delta-version", 0, 1, value=self.version))
        for d in self.dvs:
            who = f" → {', '.join(_short(p) for p in d.data_files)}" if d.data_files else ""
            children.append(Region(f"DV {d.index} ({plural(d.cardinality, 'position')}){who}", "blob", d.offset,
                                   d.length, d.dv.regions(), value=d.index))
        if self._tail is not None:
            children.append(Region(f"unparsed ({plural(self._tail[1], 'byte')})", "unclaimed", *self._tail))
        return Region(self.location, "file", 0, self.size, children)

    def hex(self, offset: Optional[int] = None, length: Optional[int] = None):
        """An annotated hex view coloured by region."""
        return hex_view(self.source, self.regions(), offset, length, findings=self.findings)

    def summary(self) -> str:
        total = sum(d.cardinality for d in self.dvs)
        state = "valid" if self.is_valid else f"{plural(len(self.findings.errors), 'error', sep='')}"
        return f"Delta DV file, version {self.version}, {plural(len(self.dvs), 'DV', sep='')}, {plural(total, 'position')}, {state}"

    def __repr__(self) -> str:
        return f"DeltaDVFile({self.location!r}, size={self.size}, dvs={len(self.dvs)})"


def _short(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


container.OTHER_READERS[container.DELTA_DV_FILE] = DeltaDVFile  # what PuffinFile opens a Delta DV file with
