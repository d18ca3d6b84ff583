"""Delta Lake deletion-vector descriptors (``add.deletionVector``) and their bytes.

A descriptor says where a DV is: ``storageType`` ``u`` (a file next to the data,
named from a Z85-encoded UUID with an optional random prefix), ``p`` (an absolute
path) or ``i`` (the bitmap inline, Z85-encoded); ``offset`` (of the DV's 4-byte
size field in the DV file), ``sizeInBytes`` (magic + bitmap, without the size
field and the CRC) and ``cardinality``.  In a DV file a DV is exactly an Iceberg
``deletion-vector-v1`` blob: big-endian size, magic ``D1 D3 39 64``, portable
64-bit Roaring bitmap, big-endian CRC-32 — so its ``sizeInBytes + 8`` bytes at
``offset`` decode with :class:`~puffin_explorer.DeletionVector` as they are.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Optional
from urllib.parse import unquote

from .._text import plural
from ..errors import InvalidFileError
from ..format.dv import DeletionVector
from ..format.dv_shape import DV_MAGIC
from ..regions import Finding, Severity
from . import z85

#: Delta's older "native" RoaringBitmapArray serialization (magic 1681511376 big-endian, then
#: a count and per 32-bit key a size-prefixed bitmap).  Readers accept it; writers use the portable one.
NATIVE_MAGIC = b"\x64\x39\xd3\xd0"
STORAGE_TYPES = {"u": "relative path from a UUID", "p": "absolute path", "i": "inline"}


@dataclass(frozen=True)
class DVDescriptor:
    """One ``deletionVector`` struct of an ``add`` or ``remove`` action."""

    storage_type: str
    path_or_inline_dv: str
    offset: Optional[int]
    size_in_bytes: int
    cardinality: int
    max_row_index: Optional[int] = None

    @classmethod
    def from_action(cls, raw: Mapping[str, Any]) -> "DVDescriptor":
        """The descriptor of a ``deletionVector`` struct; :class:`~puffin_explorer.errors.InvalidFileError` when a
        field has the wrong type (the log reader reports those as findings before it gets here)."""
        def num(key: str) -> Optional[int]:
            v = raw.get(key)
            if v is None:
                return None
            if not isinstance(v, int) or isinstance(v, bool):
                raise InvalidFileError(f"deletionVector.{key}: expected an integer, got {v!r}", None,
                                       "delta.action-field")
            return v

        return cls(str(raw.get("storageType") or ""), str(raw.get("pathOrInlineDv") or ""), num("offset"),
                   num("sizeInBytes") or 0, num("cardinality") or 0, num("maxRowIndex"))

    def problems(self) -> list[tuple[str, str, str]]:
        """Why this descriptor's DV cannot be found or read as it stands: ``(code, field, message)`` for a
        storageType that is not u, p or i, a path that is not a Z85 UUID, an inline DV that does not decode,
        and (a warning) an on-disk DV without an offset."""
        if self.storage_type not in STORAGE_TYPES:
            return [("delta.dv-storage-type", "storageType", f"{self.storage_type!r} is not u, p or i")]
        if self.storage_type == "u":
            try:
                self.uuid()
            except z85.Z85Error as exc:
                return [("delta.dv-path", "pathOrInlineDv", f"{self.path_or_inline_dv!r} does not decode: {exc}")]
        elif self.storage_type == "p" and not self.path_or_inline_dv:
            return [("delta.dv-path", "pathOrInlineDv", "an absolute path is empty")]
        elif self.storage_type == "i":
            try:
                self.inline_bytes()
            except z85.Z85Error as exc:
                return [("delta.dv-inline", "pathOrInlineDv", f"the inline DV does not decode: {exc}")]
        if self.storage_type != "i" and self.offset is None:
            return [("delta.dv-offset-missing", "offset", "an on-disk DV has no offset; the first DV of the file "
                                                          "is read")]
        return []

    @property
    def unique_id(self) -> str:
        """``<storageType><pathOrInlineDv>[@<offset>]``: the DV's identity in log replay."""
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    @property
    def is_inline(self) -> bool:
        return self.storage_type == "i"

    def uuid(self) -> uuid.UUID:
        """The DV file's UUID (storage type ``u``); raises :class:`~.z85.Z85Error` when it does not decode."""
        return z85.decode_uuid(self.path_or_inline_dv[-z85.UUID_CHARS:])

    @property
    def prefix(self) -> str:
        """The random folder prefix of a ``u`` path (often empty)."""
        return self.path_or_inline_dv[:-z85.UUID_CHARS] if self.storage_type == "u" else ""

    def relative_path(self) -> Optional[str]:
        """``[<prefix>/]deletion_vector_<uuid>.bin`` for ``u``; None otherwise."""
        if self.storage_type != "u":
            return None
        name = f"deletion_vector_{self.uuid()}.bin"
        return f"{self.prefix}/{name}" if self.prefix else name

    def absolute_path(self, table_root: str) -> Optional[str]:
        """Where the DV file is: under ``table_root`` for ``u``, the path itself for ``p``; None inline."""
        if self.storage_type == "u":
            return table_root.rstrip("/") + "/" + self.relative_path()
        if self.storage_type == "p":
            return unquote(self.path_or_inline_dv)
        return None

    @property
    def read_offset(self) -> int:
        """Where the DV starts in its file (a missing offset reads the first DV, after the version byte)."""
        return 1 if self.offset is None else int(self.offset)

    @property
    def read_length(self) -> int:
        """Bytes to read: the size field, ``sizeInBytes`` and the CRC."""
        return int(self.size_in_bytes) + 8

    def inline_bytes(self) -> bytes:
        """The inline DV's raw bytes (magic + bitmap), Z85-decoded and cut to ``sizeInBytes``."""
        raw = z85.decode(self.path_or_inline_dv)
        if len(raw) < self.size_in_bytes or len(raw) - self.size_in_bytes > 3:
            raise z85.Z85Error(f"the inline DV decodes to {plural(len(raw), 'byte', sep='')}; sizeInBytes is {self.size_in_bytes}")
        return raw[:self.size_in_bytes]

    def to_dict(self) -> dict[str, Any]:
        return {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline_dv,
                "offset": self.offset, "sizeInBytes": self.size_in_bytes, "cardinality": self.cardinality}


def frame(raw: bytes) -> bytes:
    """Magic + bitmap framed as in a DV file: big-endian size before, big-endian CRC-32 after."""
    return struct.pack(">I", len(raw)) + raw + struct.pack(">I", zlib.crc32(raw) & 0xFFFFFFFF)


def decode_dv(data: bytes, offset: int = 0, space: str = "file",
              referenced_data_file: Optional[str] = None) -> DeletionVector:
    """A framed Delta DV (size, magic, bitmap, CRC) as a :class:`DeletionVector`.

    The portable format decodes in place (regions at file offsets).  The native
    format is converted to the same positions, with a ``delta.dv-native-format``
    finding; its regions then describe the converted bytes.
    """
    if len(data) >= 8 and data[4:8] == NATIVE_MAGIC:
        return _from_native(data, offset, space, referenced_data_file)
    return DeletionVector(data, offset, space=space, referenced_data_file=referenced_data_file)


def _from_native(data: bytes, offset: int, space: str, referenced: Optional[str]) -> DeletionVector:
    import numpy as np
    from pyroaring import BitMap

    problems: list[Finding] = []
    body = data[4:-4]
    parts = []
    try:
        (count,) = struct.unpack_from(">i", body, 4)
        pos = 8
        if count < 0 or count > (len(body) - pos) // 4:
            raise ValueError(f"{plural(count, 'bitmap', sep='')} cannot fit in {plural(len(body) - pos, 'byte', sep='')}")
        for key in range(count):
            (size,) = struct.unpack_from(">i", body, pos)
            if size < 0 or pos + 4 + size > len(body):
                raise ValueError(f"bitmap {key} of {plural(size, 'byte', sep='')} runs past the DV")
            bm = BitMap.deserialize(bytes(body[pos + 4:pos + 4 + size]))
            parts.append(np.asarray(bm.to_array(), dtype=np.uint64) | np.uint64(key << 32))
            pos += 4 + size
    except (struct.error, ValueError) as exc:
        problems.append(Finding("dv.magic", Severity.ERROR, offset + 4,
                                f"native-format Delta DV cannot be read: {exc}", space=space))
    positions = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    dv = DeletionVector.from_positions(positions, referenced_data_file=referenced)
    dv.space = space
    crc = struct.unpack_from(">I", data, len(data) - 4)[0] if len(data) >= 12 else None
    if crc is not None and crc != (zlib.crc32(data[4:-4]) & 0xFFFFFFFF):
        problems.append(Finding("dv.crc", Severity.ERROR, offset + len(data) - 4,
                                "CRC-32 of the native-format DV does not match", space=space))
    dv.findings.append(Finding("delta.dv-native-format", Severity.INFO, offset + 4,
                               "the DV uses Delta's older native RoaringBitmapArray format (magic 64 39 d3 d0); "
                               "converted to the portable format", space=space))
    dv.findings.extend(problems)
    return dv


def is_delta_dv_magic(raw4: bytes) -> bool:
    return raw4 in (DV_MAGIC, NATIVE_MAGIC)
