"""Whole small files (table metadata, manifest lists, manifests), many at once, counted."""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable, Mapping, Optional

from ..errors import SourceError
from . import failures, retry
from .arrow_s3 import enabled as arrow_enabled
from .errors import storage_error
from .locations import check_location
from .scope import check_scope, scope_of, with_scope
from .source import DEFAULT_WORKERS, ByteSource, _protocol, filesystem, is_remote


def storage_options_from_pyiceberg(properties: Mapping[str, str]) -> dict[str, Any]:
    """fsspec/s3fs options from a pyiceberg FileIO's properties (``s3.endpoint`` ...)."""
    opts: dict[str, Any] = {}
    client: dict[str, Any] = {}
    if properties.get("s3.endpoint"):
        client["endpoint_url"] = properties["s3.endpoint"]
    if properties.get("s3.region"):
        client["region_name"] = properties["s3.region"]
    if properties.get("s3.access-key-id"):
        opts["key"] = properties["s3.access-key-id"]
    if properties.get("s3.secret-access-key"):
        opts["secret"] = properties["s3.secret-access-key"]
    if properties.get("s3.session-token"):
        opts["token"] = properties["s3.session-token"]
    if client:
        opts["client_kwargs"] = client
    return opts


def _basename(location: str) -> str:
    return location.rstrip("/").rsplit("/", 1)[-1]


def _same(a: str, b: str) -> bool:
    strip = (lambda s: s.split("://", 1)[-1].rstrip("/"))
    return strip(a) == strip(b)


def _list_local(location: str, path: str, inside=None) -> list[tuple[str, str, Optional[int]]]:
    """A local folder's ``(name, type, size)`` entries from one ``os.scandir`` (fsspec's ``ls`` costs a
    Python ``info()`` per file, most of a million-file listing); symbolic links are followed, but with
    ``inside`` (the read scope's test) not one that leads out of the scope; an entry that vanishes while
    listed is skipped."""
    import os

    out: list[tuple[str, str, Optional[int]]] = []
    try:
        with os.scandir(path) as entries:
            for e in entries:
                try:
                    if inside is not None and e.is_symlink() and not inside(e.path):
                        continue  # a link out of the scope: not followed, not even its size read
                    if e.is_dir():
                        out.append((e.name, "directory", None))
                    else:
                        out.append((e.name, "file", e.stat().st_size))
                except OSError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise storage_error(exc, location, "list") from exc
    return out


#: Files a walk hands over at a time (:meth:`FileIO.walk_batches`): their names are Python strings only until
#: the batch is made columns.
WALK_BATCH = 65_536


class _LocalFolders:
    """The folders of one local walk (:func:`_walk_local`), each listed once: its entries sorted as its paths
    sort, a folder reached again through a link not listed again, a link out of the scope (``inside``) skipped."""

    def __init__(self, location: str, inside=None) -> None:
        self.location = location
        self.inside = inside
        self.seen: set[tuple[int, int]] = set()
        self.walked: Optional[list[str]] = []  # the folders walked while no link was met; None once one was

    def entries(self, folder: str, linked: bool) -> list:
        """The folder's entries as ``(sort key, name, folder entry or None for a file)``, sorted; none for a
        folder seen before."""
        import os

        try:
            if not self._first_time(folder, linked):
                return []
            out = []
            with os.scandir(folder) as found:
                for e in found:
                    try:
                        if self.inside is not None and e.is_symlink() and not self.inside(e.path):
                            continue
                        if e.is_dir():
                            out.append((e.name + "/", e.name, e))
                        elif e.is_file():
                            out.append((e.name, e.name, None))
                    except OSError:
                        continue
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise storage_error(exc, self.location, "list") from exc
        out.sort()  # by key: a key is unique in its folder, so the tuples' later items are never compared
        return out

    def _first_time(self, folder: str, linked: bool) -> bool:
        """Whether ``folder`` is walked for the first time.  Only a link can reach a folder twice, so folders are
        told apart by ``stat`` from the first linked one on (the ones walked before it then too)."""
        import os

        if linked and self.walked is not None:  # the first linked folder: every folder from now on is told apart
            for before in self.walked:
                try:
                    st = os.stat(before)
                    self.seen.add((st.st_dev, st.st_ino))
                except OSError:
                    pass
            self.walked = None
        if self.walked is None:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in self.seen:
                return False
            self.seen.add((st.st_dev, st.st_ino))
        else:
            self.walked.append(folder)
        return True


def _walk_local(location: str, path: str, batch: int = WALK_BATCH, stat: bool = True, inside=None):
    """Every file under a local folder as :meth:`FileIO.walk_batches` gives it, one ``os.scandir`` per folder
    (fsspec's ``find`` costs a Python ``info()`` per file, most of a large listing), in the order of the paths
    (a folder's entries sorted as its paths sort: a folder ``a`` by ``a/``, so ``a.txt`` before ``a/x``): the
    listing is sorted as it is walked.  Symbolic links are followed, a folder reached twice (a link cycle) is
    walked once, an entry that vanishes while listed is skipped.  Only a link can reach a folder twice, so
    folders are told apart by ``stat`` only from the first linked folder on (the ones walked before it then
    too): a tree without links costs one ``stat`` per file, none per folder, and none at all without ``stat``
    (then sizes and times are None: :func:`file_stats` reads them for the files that need them).  With ``inside``
    (the read scope's test), a link that leads out of the scope is neither followed nor listed."""
    import os

    names: list[str] = []
    sizes: list[Optional[int]] = []
    mtimes: list[Optional[float]] = []
    folders = _LocalFolders(location, inside)

    def under(folder: str) -> str:  # what a file's name is joined to
        return folder if folder.endswith(os.sep) else folder + os.sep

    stack = [(under(path), iter(folders.entries(path, False)))]
    while stack:
        prefix, entries = stack[-1]
        item = next(entries, None)
        if item is None:
            stack.pop()
            continue
        _, name, sub = item
        if sub is not None:
            try:
                linked = sub.is_symlink()
            except OSError:
                continue
            stack.append((under(sub.path), iter(folders.entries(sub.path, linked))))
            continue
        where = prefix + name
        if stat:
            try:
                info = os.stat(where)
            except OSError:
                continue
            sizes.append(info.st_size)
            mtimes.append(info.st_mtime)
        names.append(where)
        if len(names) >= batch:
            yield names, (sizes if stat else None), (mtimes if stat else None)
            names, sizes, mtimes = [], [], []
    if names:
        yield names, (sizes if stat else None), (mtimes if stat else None)


def file_stats(paths: list[str]) -> tuple[list[Optional[int]], list[Optional[float]]]:
    """The size and modification time (seconds) of each local file in ``paths``; None for one that is gone."""
    import os

    sizes: list[Optional[int]] = []
    mtimes: list[Optional[float]] = []
    for where in paths:
        try:
            info = os.stat(where)
        except OSError:
            sizes.append(None)
            mtimes.append(None)
            continue
        sizes.append(info.st_size)
        mtimes.append(info.st_mtime)
    return sizes, mtimes


class FileIO:
    """Reads whole files and byte ranges of any fsspec location with one set of options.

    Counts ``bytes_read`` and ``read_count`` over everything it reads (its own reads
    and those of every :meth:`source` it opened), and ``peak_in_flight``, the most
    requests :meth:`read_many` had running at once.
    """

    def __init__(self, storage_options: Optional[dict[str, Any]] = None,
                 max_workers: int = DEFAULT_WORKERS) -> None:
        self.storage_options = dict(storage_options or {})
        #: Timeout and retries of every request (see :mod:`.retry`): from the options, the environment or the defaults.
        self.policy = retry.policy(self.storage_options)
        self.max_workers = max(1, int(max_workers))
        self.bytes_read = 0
        self.read_count = 0
        self.peak_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._fs_cache: dict[str, Any] = {}

    @classmethod
    def from_pyiceberg(cls, properties: Mapping[str, str]) -> "FileIO":
        """A FileIO with the options of a pyiceberg FileIO's ``properties``."""
        return cls(storage_options_from_pyiceberg(properties))

    def fs(self, location: str):
        """The fsspec filesystem for ``location`` and the path inside it."""
        import fsspec

        check_location(location)
        check_scope(location, self.storage_options)
        protocol = fsspec.utils.get_protocol(location)
        fs = self._fs_cache.get(protocol)
        if fs is None:
            fs, path = filesystem(location, self.storage_options)
            self._fs_cache[protocol] = fs
            return fs, path
        return fs, fs._strip_protocol(location)

    @property
    def scope(self):
        """The :class:`~.scope.ReadScope` every location read through this I/O is checked against (None: any)."""
        return scope_of(self.storage_options)

    def limit_to(self, scope) -> None:
        """Read only inside ``scope`` from now on (joined with a scope already set: one I/O a warehouse's tables
        share reads each table's files)."""
        self.storage_options = with_scope(self.storage_options, scope)

    def _count(self, nbytes: int, requests: int = 1) -> None:
        with self._lock:
            self.bytes_read += nbytes
            self.read_count += requests

    def _arrow(self, fs):
        """Arrow's S3 client for these options when it can serve S3 reads (see :mod:`.arrow_s3`)."""
        if _protocol(fs) not in ("s3", "s3a") or not arrow_enabled():
            return None
        if "arrow" not in self._fs_cache:
            from .arrow_s3 import arrow_s3

            self._fs_cache["arrow"] = arrow_s3(self.storage_options, self.policy)
        return self._fs_cache["arrow"]

    def _request(self, fs, path: str, attempt: int = 1) -> bytes:
        """One request for a whole file: the first attempt through Arrow while it serves these options,
        retries and anything else through fsspec (a failure that may pass is raised to be retried; any
        other Arrow failure moves these options to fsspec)."""
        arrow = self._arrow(fs) if attempt == 1 else None
        if arrow is not None:
            from .arrow_s3 import request

            def whole():
                with arrow.open_input_stream(path) as stream:
                    return stream.read()
            try:
                return request(whole)
            except Exception as exc:  # noqa: BLE001 - Arrow raises OSError with the AWS error in its text
                if failures.is_transient(exc):
                    raise
                self._fs_cache["arrow"] = None  # e.g. a bucket in another region: fsspec from now on
        # s3fs asks for the size (a HEAD) before a whole-file GET unless told to read in one request
        return fs.cat_file(path, max_concurrency=1) if hasattr(fs, "max_concurrency") else fs.cat_file(path)

    def read(self, location: str, first_attempt: int = 1) -> bytes:
        """The whole file (failures that may pass retried as :attr:`policy` says)."""
        fs, path = self.fs(location)
        with self._lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            data = retry.call(lambda attempt: self._request(fs, path, attempt), location, "read", self.policy,
                              first_attempt=first_attempt)
        finally:
            with self._lock:
                self._in_flight -= 1
        self._count(len(data))
        return bytes(data)

    def read_many(self, locations: Iterable[str]) -> dict[str, bytes]:
        """Whole files, fetched ``max_workers`` at a time when remote (in order on this thread when
        local); keyed by location.  The first failure raises."""
        locs = list(dict.fromkeys(locations))
        if len(locs) < 2 or self.max_workers == 1 or not is_remote(self.fs(locs[0])[0]):
            return {loc: self.read(loc) for loc in locs}
        fs = self.fs(locs[0])[0]
        if getattr(fs, "async_impl", False) and self._arrow(fs) is None and all(self.fs(loc)[0] is fs for loc in locs):
            return self._read_many_async(fs, locs)
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=min(self.max_workers, len(locs)))
        done = False
        try:
            out = dict(zip(locs, pool.map(self.read, locs)))
            done = True
            return out
        finally:
            pool.shutdown(wait=done, cancel_futures=not done)

    def _read_many_async(self, fs, locs: list[str]) -> dict[str, bytes]:
        """Whole files on an async filesystem (s3fs, gcsfs, adlfs, http): every request a coroutine on
        the filesystem's own event loop, ``max_workers`` in flight, no thread per request."""
        from fsspec.asyn import _run_coros_in_chunks, sync

        kwargs = {"max_concurrency": 1} if hasattr(fs, "max_concurrency") else {}
        paths = [self.fs(loc)[1] for loc in locs]
        batch = min(self.max_workers, len(locs))

        async def fetch_all():
            return await _run_coros_in_chunks([fs._cat_file(p, **kwargs) for p in paths], batch_size=batch,
                                              return_exceptions=True, nofiles=True)

        results = sync(fs.loop, fetch_all)
        with self._lock:
            self.peak_in_flight = max(self.peak_in_flight, batch)
        out = {}
        for loc, data in zip(locs, results):
            if isinstance(data, BaseException):
                if not isinstance(data, Exception) or not failures.is_transient(data) or self.policy.retries == 0:
                    raise storage_error(data, loc, attempts=1, policy=self.policy) from data
                time.sleep(retry.backoff(1))
                out[loc] = self.read(loc, first_attempt=2)  # counted there
                continue
            self._count(len(data))
            out[loc] = bytes(data)
        return out

    def read_text(self, location: str) -> str:
        return self.read(location).decode("utf-8")

    def write(self, location: str, data: bytes) -> int:
        """Write ``data`` as the whole file at ``location`` (folders made as needed); returns its size."""
        fs, path = self.fs(location)
        try:
            if not is_remote(fs):
                parent = path.rsplit("/", 1)[0] if "/" in path else ""
                if parent:
                    fs.makedirs(parent, exist_ok=True)
            fs.pipe_file(path, bytes(data))
        except Exception as exc:  # noqa: BLE001 - every storage library raises its own types
            raise storage_error(exc, location, "write") from exc
        return len(data)

    def source(self, location: str, size: Optional[int] = None) -> "CountedSource":
        """A :class:`ByteSource` for range reads of one file, counted here too."""
        return CountedSource(self, location, size)

    def exists(self, location: str) -> bool:
        try:
            fs, path = self.fs(location)
            return bool(fs.exists(path))
        except Exception:  # noqa: BLE001
            return False

    def size(self, location: str) -> Optional[int]:
        """File size in bytes, or None when it does not exist."""
        fs, path = self.fs(location)
        try:
            return int(retry.call(lambda _attempt: fs.size(path), location, "open", self.policy))
        except SourceError as err:
            if type(err).__name__ == "NotFoundError":
                return None
            raise

    def listdir(self, location: str) -> list[tuple[str, str, Optional[int]]]:
        """``(name, type, size)`` for each entry of a folder; type is ``file`` or ``directory``.

        A missing folder is empty; other storage errors (credentials, endpoint) raise."""
        fs, path = self.fs(location)
        from fsspec.implementations.local import LocalFileSystem

        if isinstance(fs, LocalFileSystem):
            return _list_local(location, path, self.scope.allows if self.scope is not None else None)
        try:
            entries = retry.call(lambda _attempt: fs.ls(path, detail=True), location, "list", self.policy)
        except SourceError as err:
            if type(err).__name__ in ("NotFoundError", "NotAFileError"):
                return []
            raise
        out = []
        for e in entries:
            name = _basename(str(e["name"]))
            if not name or _same(str(e["name"]), path):
                continue
            out.append((name, e.get("type", "file"), e.get("size")))
        return out

    def walk(self, location: str) -> tuple[list, list, list]:
        """Every file under a folder: ``(names, sizes, modification times)``, names in the file system's
        spelling (:meth:`fs`), times as the store gives them (seconds for local files).  A missing folder is
        empty; other storage errors raise."""
        names: list = []
        sizes: list = []
        mtimes: list = []
        for n, s, m in self.walk_batches(location):
            names += n
            sizes += s
            mtimes += m
        return names, sizes, mtimes

    def walk_batches(self, location: str, batch: int = WALK_BATCH, stat: bool = True):
        """:meth:`walk` a batch of at most ``batch`` files at a time (local folders in path order, as they are
        walked), so that a caller can make each batch columns before the next: a million files are never a
        million Python strings at once on a local file system.  ``stat=False``: a local walk reads no file's
        size or time (a ``stat`` per file was most of a large listing's time) and gives None for both, which
        :meth:`stats` reads for the files that need them; a store's listing has them anyway."""
        fs, path = self.fs(location)
        from fsspec.implementations.local import LocalFileSystem

        if isinstance(fs, LocalFileSystem):
            yield from _walk_local(location, path, batch, stat, self.scope.allows if self.scope is not None else None)
            return
        try:
            found = fs.find(path, detail=True, withdirs=False)
        except FileNotFoundError:
            found = {}
        except Exception as exc:  # noqa: BLE001 - turned into this project's storage error
            raise storage_error(exc, location, "list") from exc
        files = [(str(name), info) for name, info in found.items() if info.get("type", "file") == "file"]
        del found
        for at in range(0, len(files), batch):
            part = files[at:at + batch]
            yield ([name for name, _ in part], [info.get("size") for _, info in part],
                   [listed_mtime(info) for _, info in part])

    def stats(self, locations: list[str]) -> tuple[list[Optional[int]], list[Any]]:
        """The size and modification time of each file (as :meth:`walk` gives them); None for both where a
        file is gone."""
        if not locations:
            return [], []
        fs, _ = self.fs(locations[0])
        from fsspec.implementations.local import LocalFileSystem

        if isinstance(fs, LocalFileSystem):
            return file_stats([self.fs(loc)[1] for loc in locations])
        sizes: list[Optional[int]] = []
        mtimes: list[Any] = []
        for loc in locations:
            fs, path = self.fs(loc)
            try:
                info = fs.info(path)
            except FileNotFoundError:
                info = {}
            except Exception as exc:  # noqa: BLE001 - turned into this project's storage error
                raise storage_error(exc, loc, "list") from exc
            sizes.append(info.get("size"))
            mtimes.append(listed_mtime(info) if info else None)
        return sizes, mtimes

    def sizes_in(self, folders: Iterable[str]) -> dict[str, int]:
        """Sizes of every file in the given folders, keyed by ``folder/name`` (one listing per folder)."""
        out: dict[str, int] = {}
        for folder in set(folders):
            for name, kind, size in self.listdir(folder):
                if kind == "file" and size is not None:
                    out[folder.rstrip("/") + "/" + name] = int(size)
        return out

    def reset_counters(self) -> None:
        with self._lock:
            self.bytes_read = 0
            self.read_count = 0
            self.peak_in_flight = 0


def listed_mtime(info: dict) -> Any:
    """The modification time of an fsspec listing entry, under whichever key its file system uses."""
    return info.get("mtime", info.get("LastModified", info.get("last_modified", info.get("updated"))))


class CountedSource(ByteSource):
    """A ByteSource whose reads also count in its :class:`FileIO`."""

    def __init__(self, io: FileIO, location: str, size: Optional[int] = None) -> None:
        self._io = io
        super().__init__(location, io.storage_options, size=size)

    def _fetch(self, offset: int, end: int) -> bytes:
        data = super()._fetch(offset, end)
        self._io._count(len(data))
        return data


__all__ = ["FileIO", "CountedSource", "storage_options_from_pyiceberg", "SourceError"]
