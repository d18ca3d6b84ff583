"""Blobs of types without a decoder: kept as bytes, shown raw, never an error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._repr import RichRepr
from .._text import plural
from ..regions import FindingList, Region

if TYPE_CHECKING:  # pragma: no cover
    from .blob_entry import BlobEntry


class RawBlob(RichRepr):
    """The (decompressed) bytes of a blob this package does not interpret."""

    blob_type = None

    def __init__(self, data: bytes, offset: int = 0, metadata: Optional["BlobEntry"] = None,
                 space: str = "file") -> None:
        self.data = bytes(data)
        self.offset = offset
        self.metadata = metadata
        self.space = space
        self.findings: FindingList = FindingList()

    @property
    def size(self) -> int:
        """Bytes after decompression."""
        return len(self.data)

    @property
    def nbytes(self) -> int:
        """Bytes after decompression (the same as :attr:`size`)."""
        return len(self.data)

    @property
    def stored_size(self) -> int:
        """Bytes in the file (before decompression)."""
        return self.metadata.length if self.metadata is not None else len(self.data)

    @property
    def text(self) -> Optional[str]:
        """The bytes as UTF-8 text when they are valid UTF-8."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def regions(self) -> list[Region]:
        return []

    def summary(self) -> str:
        preview = self.text
        if preview is not None:
            preview = preview if len(preview) <= 40 else preview[:37] + "..."
            return f"{plural(self.size, 'byte')}: {preview!r}"
        return f"{plural(self.size, 'byte')} of binary data"

    def __repr__(self) -> str:
        return f"RawBlob(size={self.size}, stored_size={self.stored_size})"
