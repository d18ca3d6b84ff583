"""What a decoded blob knows of its entry in a Puffin footer.

A protocol below both the container (:mod:`.puffin`, whose :class:`~.puffin.BlobMetadata` is the one
implementation) and the blob types (deletion vectors, theta sketches, raw blobs), so that neither imports the
other to name it.
"""

from __future__ import annotations

from typing import Optional, Protocol


class BlobEntry(Protocol):
    """One entry of a Puffin footer's ``blobs`` list, as a blob type reads it."""

    index: int
    type: Optional[str]
    fields: list
    snapshot_id: Optional[int]
    sequence_number: Optional[int]
    offset: Optional[int]
    length: Optional[int]
    compression_codec: Optional[str]
    properties: dict
