"""What kind of file holds a deletion vector: a Puffin file, a Delta DV file, or a bare DV blob.

Iceberg manifests locate a DV by ``content_offset`` / ``content_size_in_bytes``
in a file they call Puffin.  Writers differ: Iceberg Java, Spark and Trino write
Puffin files; Delta UniForm (IcebergCompatV3) points into Delta's
``deletion_vector_<uuid>.bin`` files (a version byte ``1``, then DVs); DuckDB
1.5.3 wrote bare DV blobs with no container at all.  The bytes at the offset are
the same ``deletion-vector-v1`` blob in every case.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from .dv_shape import DV_MAGIC

PUFFIN = "puffin"
DELTA_DV_FILE = "delta-dv-file"
BARE_DV = "bare-dv"
UNKNOWN = "unknown"

#: Bytes of the head that :func:`sniff` looks at.
HEAD = 9
_NATIVE_DELTA_MAGIC = b"\x64\x39\xd3\xd0"


def sniff(head: bytes, size: int) -> str:
    """The container kind from a file's first :data:`HEAD` bytes and its size."""
    if head[:4] == b"PFA1":
        return PUFFIN
    if len(head) >= 8 and head[4:8] == DV_MAGIC and struct.unpack(">I", head[:4])[0] + 8 == size:
        return BARE_DV
    if len(head) >= 9 and head[0] == 1 and head[5:9] in (DV_MAGIC, _NATIVE_DELTA_MAGIC):
        return DELTA_DV_FILE
    return UNKNOWN


#: Readers of a file that sniffs as another container than Puffin: ``kind`` -> a callable of the file's
#: :class:`~puffin_explorer.io.ByteSource`.  The Delta DV file's reader registers itself (``delta/dvfile.py``,
#: imported with the package), so the format layer names no table format.
OTHER_READERS: dict[str, Callable[[Any], Any]] = {}

DESCRIPTIONS = {
    PUFFIN: "a Puffin file",
    DELTA_DV_FILE: "a Delta deletion-vector file (version byte, then DVs; no Puffin magic or footer)",
    BARE_DV: "a bare deletion-vector blob, not a Puffin file",
    UNKNOWN: "not a Puffin file",
}
