"""Random access to the bytes of one file: range reads, planned reads, a cache and counters."""

from __future__ import annotations

from bisect import bisect_right

import io
import os
import stat
import threading
from typing import Any, Callable, Iterable, Optional, Sequence, TypeVar, Union

from .._text import plural
from ..errors import NotAFileError, SourceError
from . import failures, resolve, retry
from .errors import storage_error
from .locations import check_location
from .scope import check_scope
from .arrow_s3 import enabled as arrow_enabled
from .ranges import DEFAULT_GAP, coalesce, slice_from

Location = Union[str, bytes, bytearray, memoryview, os.PathLike, "ByteSource"]
T = TypeVar("T")
R = TypeVar("R")

#: Requests in flight at once for one source (object stores answer many small reads in parallel).
DEFAULT_WORKERS = 64
_LOCAL_PROTOCOLS = resolve.LOCAL_PROTOCOLS


def filesystem(location: str, storage_options: Optional[dict[str, Any]] = None):
    """``(fs, path)`` for a local path or fsspec URL; storage errors become :class:`SourceError`, and a location
    outside the read scope the options carry is refused before any request (:mod:`.scope`).

    Resolved once per process and kept (:mod:`.resolve`): a second call for the same location and
    options makes no fsspec resolution (the scope is checked every time)."""
    found = _resolved(location, storage_options)
    return found.fs, found.path


def _resolved(location: str, storage_options: Optional[dict[str, Any]]) -> resolve.Resolved:
    """:func:`.resolve.resolve`, its storage errors as :class:`SourceError`."""
    check_scope(location, storage_options)  # on every read, before anything is resolved: the scope decides
    try:
        return resolve.resolve(location, storage_options, check_location)  # checked when first resolved
    except SourceError:
        raise
    except (ImportError, ValueError, OSError, TypeError) as exc:
        raise storage_error(exc, location, "open") from exc


def _read_local(path: str, offset: int, end: int) -> bytes:
    """``[offset, end)`` of a local file (fewer bytes past its end), read by the OS in one ``pread``:
    fsspec's local ``cat_file`` makes a file object, a buffered reader and a seek for the same bytes, a
    few times the cost of a small DV's whole read (the file is opened per read: one replaced on disk
    is read as it is now)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        if not _PREAD:
            os.lseek(fd, offset, os.SEEK_SET)
        parts = []
        want = end - offset
        while want > 0:
            chunk = os.pread(fd, want, offset) if _PREAD else os.read(fd, want)
            if not chunk:
                break
            parts.append(chunk)
            offset += len(chunk)
            want -= len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


_PREAD = hasattr(os, "pread")


def _protocol(fs) -> str:
    return fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]


def is_remote(fs) -> bool:
    return _protocol(fs) not in _LOCAL_PROTOCOLS


class ByteSource:
    """Random access to the bytes of one file, with byte and request counters.

    ``location`` is a local path, any fsspec URL or ``bytes``.  :meth:`read` reads
    one range; :meth:`read_ranges` plans many (neighbours merged, fetched
    concurrently) and keeps them, so later reads inside them cost nothing.
    ``bytes_read`` / ``read_count`` count what crossed the wire.
    """

    def __init__(self, location: Location, storage_options: Optional[dict[str, Any]] = None,
                 size: Optional[int] = None, *, _found: Optional[resolve.Resolved] = None) -> None:
        self.storage_options = dict(storage_options or {})
        #: Timeout and retries of every request (see :mod:`.retry`): from the options, the environment or the defaults.
        self.policy = retry.policy(self.storage_options)
        self._local_path: Optional[str] = None  # a plain local file: read by the OS (_read_local)
        self.bytes_read = 0
        self.read_count = 0
        self._lock = threading.Lock()
        self._data: Optional[bytes] = None
        self._window: tuple[int, bytes] = (0, b"")
        self._parts: list[tuple[int, bytes]] = []
        self._fs = None
        self._path: Optional[str] = None
        self._arrow = None  # an ArrowRangeReader when S3 reads can go through Arrow (see arrow_s3)
        self.remote = False
        self._size_measured = False  # True when the size came from the storage, not from the caller
        #: After the first request, a read that misses the cache fetches at least this many bytes
        #: from its offset on and keeps them (0: exact reads only).  Suits many small ranges read
        #: in file order, such as the deletion vectors of one Puffin file.
        self.readahead = 0
        if isinstance(location, (bytes, bytearray, memoryview)):
            self._data = bytes(location)
            self.location = "<bytes>"
            self.size = len(self._data)
            return
        location = os.fspath(location)
        self.location = location
        found = _found or _resolved(location, self.storage_options)
        self._fs, self._path, self.remote, self._local_path = found.fs, found.path, found.remote, found.local_path
        if size is not None:
            self.size = int(size)
        else:
            info = retry.call(lambda _attempt: self._info(), location, "open", self.policy)
            self._size_measured = True
            if info.get("type") == "directory":
                raise NotAFileError(f"{location} is a folder, not a file", location=location,
                                    hint="give the path of a file inside it", code="source.not-a-file")
            self.size = int(info.get("size") or 0)
        if self.remote and _protocol(self._fs) in ("s3", "s3a"):
            from .arrow_s3 import ArrowRangeReader, arrow_s3

            arrow = arrow_s3(self.storage_options, self.policy)
            if arrow is not None:
                self._arrow = ArrowRangeReader(arrow, self._path, self.size)

    def _info(self) -> dict:
        """The file's ``type`` and ``size`` (one ``stat`` for a plain local file, fsspec's ``info`` otherwise)."""
        if self._local_path is not None:
            st = os.stat(self._local_path)
            return {"type": "directory" if stat.S_ISDIR(st.st_mode) else "file", "size": st.st_size}
        return self._fs.info(self._path)

    @classmethod
    def of(cls, location: Location, storage_options: Optional[dict[str, Any]] = None) -> "ByteSource":
        """Return ``location`` itself when it already is a ByteSource."""
        if isinstance(location, ByteSource):
            return location
        return cls(location, storage_options)

    # ------------------------------------------------------------------ reading
    def _fetch(self, offset: int, end: int) -> bytes:
        """One read of ``[offset, end)``, retried as :attr:`policy` says; counted."""
        if self._data is not None:
            chunk = self._data[offset:end]
        else:
            chunk = retry.call(lambda attempt: self._request(offset, end, attempt), self.location, "read", self.policy)
        with self._lock:
            self.read_count += 1
            self.bytes_read += len(chunk)
        return bytes(chunk)

    def _request(self, offset: int, end: int, attempt: int = 1) -> bytes:
        """One request for ``[offset, end)``: the first attempt through Arrow while it serves this source,
        retries through fsspec (Arrow's reports of a failed answer lose its status, fsspec's keep it).

        A failure that may pass is raised for :func:`.retry.call` to retry; any other Arrow failure
        drops Arrow for this source and the request is made through fsspec, whose error the user then
        sees.  An answer shorter than asked (and than the file) was cut short: raised to be retried."""
        chunk = None
        if attempt == 1 and self._arrow is not None and arrow_enabled():
            try:
                chunk = self._arrow.read(offset, end)
            except Exception as exc:  # noqa: BLE001 - Arrow raises OSError with the AWS error in its text
                if failures.is_transient(exc):
                    raise
                self._arrow = None
        if chunk is None:
            if self._local_path is not None:
                chunk = _read_local(self._local_path, offset, end)
            else:
                chunk = self._fs.cat_file(self._path, start=offset, end=end)
        if self._size_measured and len(chunk) < min(end, self.size) - offset:
            raise failures.ShortResponse(f"asked for {plural(end - offset, 'byte')} at {offset:,}, got {len(chunk):,}")
        return chunk

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
        if self._parts:
            hit = slice_from(self._parts, offset, end - offset)
            if hit is not None:
                return hit
        if self.readahead and self.read_count and self._data is None:
            ahead = min(self.size, max(end, offset + self.readahead))
            data = self._fetch(offset, ahead)
            self._window = (offset, data)
            return data[:end - offset]
        return self._fetch(offset, end)

    def read_ranges(self, ranges: Sequence[tuple[int, int]], gap: int = DEFAULT_GAP,
                    max_workers: int = DEFAULT_WORKERS, keep: bool = True) -> list[bytes]:
        """The bytes of each ``(offset, length)``, in the order asked.

        Ranges are clipped to the file, neighbours closer than ``gap`` are merged
        into one request, and the requests run ``max_workers`` at a time.  With
        ``keep`` the fetched parts stay cached: :meth:`read` inside them is free.
        """
        size = self.size
        clipped = [(o, max(0, min(size, o + n) - o)) for o, n in ranges]
        if self._parts or self._window[1]:
            missing = [(o, n) for o, n in clipped if n > 0 and self._cached(o, n) is None]
        else:
            missing = [r for r in clipped if r[1] > 0]
        plan = coalesce(missing, gap)
        # a pool of threads, each request on its own: measured faster on s3fs than one cat_ranges call
        fetched = self.map(lambda r, _read: (r[0], self._fetch(r[0], r[0] + r[1])), plan, max_workers)
        if keep:
            self._parts.extend(fetched)
        lookup = [self._window] + (self._parts if keep else fetched + self._parts)
        # the fetched parts are sorted and disjoint: find each range's part by bisection
        starts = [start for start, _ in fetched]
        out = []
        for o, n in clipped:
            if n <= 0:
                out.append(b"")
                continue
            j = bisect_right(starts, o) - 1
            if j >= 0:
                start, data = fetched[j]
                if o + n <= start + len(data):
                    out.append(data[o - start:o - start + n])
                    continue
            hit = slice_from(lookup, o, n)
            out.append(hit if hit is not None else self.read(o, n))
        return out

    def fetch_spans(self, spans: Sequence[tuple[int, int]], max_workers: int = DEFAULT_WORKERS) -> list[bytes]:
        """The bytes of each ``(offset, length)`` span (clipped to the file), each in one request of its own, on up
        to ``max_workers`` threads when the source is remote; nothing is kept (spans planned by the caller, such as
        :func:`.ranges.request_groups`' requests)."""
        size = self.size
        return self.map(lambda r, _read: self._fetch(r[0], min(size, r[0] + r[1])) if r[1] > 0 and r[0] < size
                        else b"", spans, max_workers)

    def _cached(self, offset: int, length: int) -> Optional[bytes]:
        w_start, w_data = self._window
        if w_start <= offset and offset + length <= w_start + len(w_data):
            return w_data[offset - w_start:offset - w_start + length]
        return slice_from(self._parts, offset, length)

    def map(self, fn: Callable[[T, Callable[[int, int], bytes]], R], items: Iterable[T],
            max_workers: int = DEFAULT_WORKERS,
            progress: Optional[Callable[[int, int], None]] = None) -> list[R]:
        """``[fn(item, self.read) for item in items]``, on up to ``max_workers`` threads when the
        source is remote (results in order; counters shared).  ``progress(done, total)`` is called
        on this thread.  An interrupt drops the queued calls instead of waiting for them."""
        items = list(items)
        if max_workers <= 1 or not self.remote or len(items) < 2:
            out = []
            for item in items:
                out.append(fn(item, self.read))
                if progress is not None:
                    progress(len(out), len(items))
            return out
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=min(max_workers, len(items)))
        done = False
        try:
            out = []
            for result in pool.map(lambda item: fn(item, self.read), items):
                out.append(result)
                if progress is not None:
                    progress(len(out), len(items))
            done = True
            return out
        finally:
            pool.shutdown(wait=done, cancel_futures=not done)

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

    def forget(self) -> None:
        """Drop every cached range."""
        self._window = (0, b"")
        self._parts = []

    def tail(self, length: int) -> tuple[int, bytes]:
        """The last ``length`` bytes (or the whole file) and the offset they start at."""
        start = max(0, self.size - length)
        return start, self.read(start, self.size - start)

    def reset_counters(self) -> None:
        with self._lock:
            self.bytes_read = 0
            self.read_count = 0

    def open(self) -> "SourceFile":
        """A read-only, seekable file object over this source (for readers that want one, such as
        pyarrow's ``ParquetFile``); every read is a counted range read."""
        return SourceFile(self)

    def __repr__(self) -> str:
        return f"ByteSource({self.location!r}, size={self.size}, bytes_read={self.bytes_read})"


class SourceFile(io.RawIOBase):
    """A seekable binary file over a :class:`ByteSource` (see :meth:`ByteSource.open`)."""

    def __init__(self, source: ByteSource) -> None:
        super().__init__()
        self.source = source
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.source.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:
        data = self.source.read(self._pos, len(buffer))
        buffer[:len(data)] = data
        self._pos += len(data)
        return len(data)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self.source.size - self._pos
        data = self.source.read(self._pos, size)
        self._pos += len(data)
        return data


def read_range(location: Location, offset: int, length: int,
               storage_options: Optional[dict[str, Any]] = None, what: str = "") -> bytes:
    """Exactly the bytes ``[offset, offset+length)`` of a file, in one request and no size probe.

    Raises :class:`~puffin_explorer.errors.SourceError` (a subclass saying what went
    wrong) when the file cannot be read or ends before ``offset + length``; ``what``
    names the range in that message (``"the DV"``).
    """
    if isinstance(location, (bytes, bytearray, memoryview)):
        # bytes in memory: a slice (many DVs are read from one file's bytes; no source object per read)
        if offset < 0:
            raise ValueError("offset must be >= 0")
        if offset + length <= len(location):
            return bytes(location[offset:offset + length])
        raise _short_read("<bytes>", offset, length, max(0, len(location) - offset), what)
    if not isinstance(location, ByteSource):
        if offset < 0:
            raise ValueError("offset must be >= 0")
        location = os.fspath(location)
        found = _resolved(location, storage_options)
        if found.local_path is not None:
            # a local file: no source object, one pread (many DVs are read this way, one call each)
            local = found.local_path
            data = retry.call(lambda _attempt: _read_local(local, offset, offset + length), location, "read",
                              found.policy) if length > 0 else b""
            if len(data) == length:
                return data
            raise _short_read(location, offset, length, len(data), what)
        src = ByteSource(location, storage_options, size=offset + length, _found=found)
    else:
        src = location
    if src._data is not None and offset + length > src.size:
        got = max(0, src.size - max(offset, 0))  # bytes in memory: known short without copying them
    else:
        data = src.read(offset, length)
        if len(data) == length:
            return data
        got = len(data)
    raise _short_read(src.location, offset, length, got, what)


def _short_read(location: str, offset: int, length: int, got: int, what: str) -> SourceError:
    return SourceError(f"{location} ends before {what or f'byte {offset + length:,}'} "
                       f"(asked for [{offset:,}, {offset + length:,}), got {plural(got, 'byte')})", offset,
                       location=location, code="source.short-read")
