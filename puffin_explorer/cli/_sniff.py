"""What a location holds (a Puffin file, Parquet, JSON, Avro, a folder, nothing), from its first and last bytes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ._options import UsageError

PUFFIN_MAGIC = b"PFA1"
PARQUET_MAGIC = b"PAR1"
AVRO_MAGIC = b"Obj\x01"

#: What to run instead, per kind of file.
_USE = {
    "parquet": "puffin-explorer parquet {loc}",
    "json": "puffin-explorer table {loc}",
    "avro": "puffin-explorer table on the table's folder or metadata.json",
    "puffin": "puffin-explorer inspect {loc}",
}
_NAMES = {"parquet": "a Parquet file", "json": "a JSON file", "avro": "an Avro file (an Iceberg manifest?)",
          "puffin": "a Puffin file", "folder": "a folder", "empty": "empty (0 bytes)"}


@dataclass(frozen=True)
class Sniffed:
    location: str
    kind: str  # puffin, parquet, json, avro, folder, empty, unknown
    size: Optional[int] = None

    @property
    def described(self) -> str:
        return _NAMES.get(self.kind, "not a file this tool recognises")


def sniff(location: str, storage_options: Optional[dict[str, Any]] = None) -> Sniffed:
    """Look at ``location`` without parsing it; raises the I/O layer's error when it cannot be opened."""
    from ..errors import NotAFileError
    from ..io import ByteSource

    try:
        source = ByteSource(location, storage_options)
    except NotAFileError:
        return Sniffed(location, "folder")
    size = source.size
    if size == 0:
        return Sniffed(location, "empty", 0)
    head = source.read(0, min(size, 64))
    tail = source.read(max(0, size - 4), 4) if size >= 8 else b""
    if head.startswith(PUFFIN_MAGIC):
        kind = "puffin"
    elif head.startswith(PARQUET_MAGIC) and tail == PARQUET_MAGIC:
        kind = "parquet"
    elif head.startswith(AVRO_MAGIC):
        kind = "avro"
    elif head.lstrip()[:1] in (b"{", b"["):
        kind = "json"
    elif tail == PUFFIN_MAGIC:
        kind = "puffin"  # a damaged header magic
    elif head.startswith(PARQUET_MAGIC) or tail == PARQUET_MAGIC:
        kind = "parquet"  # a truncated or damaged Parquet file
    else:
        kind = "unknown"
    return Sniffed(location, kind, size)


def is_delta_folder(location: str, storage_options: Optional[dict[str, Any]] = None) -> bool:
    """Whether ``location`` is a Delta table folder: a folder with a ``_delta_log`` in it (what ``doctor`` and
    ``table`` open as a :class:`~puffin_explorer.delta.table.DeltaTable`)."""
    from ..iceberg.paths import TableIO

    return any(name == "_delta_log" for name, _kind, _size in TableIO(storage_options).listdir(location))


def require(location: str, wanted: str, storage_options: Optional[dict[str, Any]] = None) -> Sniffed:
    """Refuse a location that positively is something other than ``wanted`` (say what it is and what to run)."""
    found = sniff(location, storage_options)
    if found.kind == "folder":
        raise UsageError(f"{location} is a folder, not {_NAMES[wanted]}: pass a file"
                         + (" (for a table folder: puffin-explorer table " + location + ")" if wanted != "json" else ""))
    if found.kind in _USE and found.kind != wanted:
        raise UsageError(f"{location} is {found.described}, not {_NAMES[wanted]}: use "
                         + _USE[found.kind].format(loc=location))
    return found
