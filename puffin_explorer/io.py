"""Open any location (local path, fsspec URL, bytes) and read byte ranges.

Every read goes through :class:`ByteSource`, which counts the bytes and the
requests it made, so a benchmark or a test can show exactly what opening a file
cost.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from .errors import SourceError

Location = Union[str, bytes, bytearray, memoryview, os.PathLike, "ByteSource"]


class ByteSource:
    """Random access to the bytes of one file, with a read counter."""

    def __init__(self, location: Location, storage_options: Optional[dict[str, Any]] = None,
                 size: Optional[int] = None) -> None:
        self.storage_options = dict(storage_options or {})
        self.bytes_read = 0
        self.read_count = 0
        self._data: Optional[bytes] = None
        self._window: tuple[int, bytes] = (0, b"")
        self._fs = None
        self._path: Optional[str] = None
        if isinstance(location, (bytes, bytearray, memoryview)):
            self._data = bytes(location)
            self.location = "<bytes>"
            self.size = len(self._data)
            return
        location = os.fspath(location)
        self.location = location
        try:
            import fsspec

            fs, path = fsspec.core.url_to_fs(location, **self.storage_options)
            self._fs, self._path = fs, path
            self.size = int(size) if size is not None else int(fs.size(path))
        except FileNotFoundError as exc:
            raise SourceError(f"no such file: {location}") from exc
        except (OSError, ValueError, ImportError) as exc:
            raise SourceError(f"cannot open {location}: {exc}") from exc

    @classmethod
    def of(cls, location: Location, storage_options: Optional[dict[str, Any]] = None) -> "ByteSource":
        """Return ``location`` itself when it already is a ByteSource."""
        if isinstance(location, ByteSource):
            return location
        return cls(location, storage_options)

    def read(self, offset: int, length: int) -> bytes:
        """Read ``length`` bytes at ``offset``, clipped to the file; counts the bytes."""
        if offset < 0:
            raise ValueError("offset must be >= 0")
        end = min(self.size, offset + max(0, length))
        if end <= offset:
            return b""
        w_start, w_data = self._window
        if w_start <= offset and end <= w_start + len(w_data):
            return w_data[offset - w_start:end - w_start]
        self.read_count += 1
        if self._data is not None:
            chunk = self._data[offset:end]
        else:
            try:
                chunk = self._fs.cat_file(self._path, start=offset, end=end)
            except (OSError, ValueError) as exc:
                raise SourceError(f"cannot read {self.location} [{offset}, {end}): {exc}") from exc
        self.bytes_read += len(chunk)
        return bytes(chunk)

    def prefetch(self, offset: int, length: int) -> None:
        """Read a range once; later reads inside it are served from memory (one window at a time)."""
        if self._data is None:
            w_start, w_data = self._window
            if w_start <= offset and offset + length <= w_start + len(w_data):
                return
            if offset < w_start <= offset + length <= w_start + len(w_data):
                # the range ends inside what is already held: fetch only the head before it
                self._window = (offset, self.read(offset, w_start - offset) + w_data)
                return
            self._window = (0, b"")
            self._window = (offset, self.read(offset, length))

    def keep(self, offset: int, data: bytes) -> None:
        """Remember bytes already read at ``offset`` so reads inside them cost nothing."""
        if self._data is None:
            self._window = (offset, data)

    def tail(self, length: int) -> tuple[int, bytes]:
        """The last ``length`` bytes (or the whole file) and the offset they start at."""
        start = max(0, self.size - length)
        return start, self.read(start, self.size - start)

    def reset_counters(self) -> None:
        self.bytes_read = 0
        self.read_count = 0

    def __repr__(self) -> str:
        return f"ByteSource({self.location!r}, size={self.size}, bytes_read={self.bytes_read})"
