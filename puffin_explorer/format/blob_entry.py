"""What a decoded blob knows of its entry in a Puffin footer.

Below both the container (:mod:`.puffin`, whose :class:`~.puffin.BlobMetadata` adds a handle to the file) and the
blob types (deletion vectors, theta sketches, raw blobs), so that neither imports the other to name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class BlobEntry:
    """One entry of a Puffin footer's ``blobs`` list: its fields as read (``raw``: the entry as written)."""

    index: int
    type: Optional[str]
    fields: list
    snapshot_id: Optional[int]
    sequence_number: Optional[int]
    offset: Optional[int]
    length: Optional[int]
    compression_codec: Optional[str] = None
    properties: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict, repr=False)
    readable: bool = True
