"""Where an Iceberg path really is: prefix remapping for moved warehouses and a counting file reader.

Iceberg metadata stores absolute locations.  A table copied to another folder or
bucket keeps the old ones, so every location read out of metadata goes through a
:class:`PathMapper` before it is opened.
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import Iterable, Mapping, Optional

from ..errors import SourceError
from ..io.files import FileIO
from ..io.source import is_remote

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@functools.lru_cache(maxsize=1 << 16)
def normalize(location: str) -> str:
    """Canonical spelling of a location for prefix comparison.

    ``file:/x``, ``file:///x`` and ``/x`` are the same local path; ``s3a://`` and
    ``s3n://`` are ``s3://``; trailing slashes are dropped.
    """
    loc = str(location)
    if loc.startswith("file://"):
        loc = loc[len("file://"):]
    elif loc.startswith("file:"):
        loc = loc[len("file:"):]
    for alias in ("s3a://", "s3n://"):
        if loc.startswith(alias):
            loc = "s3://" + loc[len(alias):]
    if len(loc) > 1:
        loc = loc.rstrip("/")
    return loc


def join(base: str, *parts: str) -> str:
    """Join path parts with ``/`` whatever the scheme."""
    out = base.rstrip("/")
    for part in parts:
        out = out + "/" + part.strip("/")
    return out


def parent(location: str) -> str:
    """The folder that holds ``location``."""
    loc = location.rstrip("/")
    if _SCHEME.match(loc) and "://" in loc:
        scheme, rest = loc.split("://", 1)
        return scheme + "://" + posixpath.dirname(rest)
    return posixpath.dirname(loc)


def basename(location: str) -> str:
    return location.rstrip("/").rsplit("/", 1)[-1]


class PathMapper:
    """Maps locations written in metadata to where the files are now.

    ``prefixes`` maps an old prefix to a new one; the longest matching prefix
    wins and a prefix only matches on a path-segment boundary.
    """

    def __init__(self, prefixes: Optional[Mapping[str, str]] = None) -> None:
        self._map: dict[str, str] = {}
        for old, new in (prefixes or {}).items():
            self.add(old, new)

    def add(self, old: str, new: str) -> None:
        """Add one prefix rule (ignored when it maps a prefix onto itself)."""
        old_n, new_n = normalize(old), normalize(new)
        if old_n != new_n:
            self._map[old_n] = new_n

    @property
    def prefixes(self) -> dict[str, str]:
        return dict(self._map)

    def __bool__(self) -> bool:
        return bool(self._map)

    def __call__(self, location: str) -> str:
        return self.map(location)

    def map(self, location: str) -> str:
        """Where ``location`` is now (unchanged when no prefix matches)."""
        if not location:
            return location
        loc = normalize(location)
        best = None
        for old in self._map:
            if loc == old or loc.startswith(old + "/") or (old.endswith("/") and loc.startswith(old)):
                if best is None or len(old) > len(best):
                    best = old
        if best is None:
            return loc
        return self._map[best] + loc[len(best):]

    def copy(self) -> "PathMapper":
        return PathMapper(self._map)

    def __repr__(self) -> str:
        return f"PathMapper({self._map!r})"


def normalized_column(column):
    """``paths.normalize`` over an Arrow string column (``file:`` dropped, ``s3a://``/``s3n://`` as
    ``s3://``, trailing slashes dropped)."""
    import pyarrow.compute as pc

    def some(mask) -> bool:  # a rewrite copies every path: only when one needs it
        return bool(pc.any(mask).as_py())

    c = column
    if some(pc.starts_with(c, "file:")):
        c = pc.replace_substring_regex(c, r"^file:(//)?", "")
    if some(pc.or_(pc.starts_with(c, "s3a://"), pc.starts_with(c, "s3n://"))):
        c = pc.replace_substring_regex(c, r"^s3[an]://", "s3://")
    if some(pc.ends_with(c, "/")):  # as str.rstrip("/") above one character: "//" and "///" are ""
        c = pc.replace_substring_regex(pc.replace_substring_regex(c, r"^//+$", ""), r"(.)/+$", r"\1")
    return c


def located_column(mapper: "PathMapper", column):
    """Where each location of an Arrow string column is now, as Arrow strings (chunked as the column is when
    nothing moved): :meth:`PathMapper.map` (:func:`normalize`, then the longest matching prefix replaced)
    column-wise."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    prefixes = sorted(mapper.prefixes.items(), key=lambda kv: -len(kv[0]))
    if not prefixes:  # nowhere moved: the column as it is when no path needs normalizing (no copy of a path)
        return normalized_column(column)
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    norm = normalized_column(column)
    out = norm
    done = np.zeros(len(norm), dtype=bool)
    for old, new in prefixes:
        # plain prefix tests and slices (no pattern built from a prefix, which a table's metadata can make huge)
        hit = pc.fill_null(pc.starts_with(norm, old), False)
        if not old.endswith("/"):  # the prefix ends where a path segment does
            after = pc.utf8_slice_codeunits(norm, len(old), len(old) + 1)
            hit = pc.and_(hit, pc.fill_null(pc.is_in(after, value_set=pa.array(["/", ""])), False))
        hit = hit.to_numpy(zero_copy_only=False) & ~done
        if hit.any():
            moved = pc.binary_join_element_wise(new, pc.utf8_slice_codeunits(norm, len(old)), "")
            out = pc.if_else(pa.array(hit), moved, out)
            done |= hit
    return out


#: Folders listed at once by :meth:`TableIO.sizes_in` (each listing's entries are held until it is merged).
LISTING_WORKERS = 16


class TableIO(FileIO):
    """The one I/O layer's :class:`~puffin_explorer.io.FileIO`, with Iceberg's spelling of locations
    (``file:``, ``s3a://``) normalized when comparing and keying them."""

    def listdir(self, location: str) -> list[tuple[str, str, Optional[int]]]:
        # an entry whose name is only slashes is the folder itself (all a normalized comparison could find)
        return [e for e in super().listdir(location) if e[0].strip("/")]

    def _listings(self, folders: list[str]):
        """``(folder, entries or the SourceError listing it raised)`` for each folder, in order; remote folders
        listed several at a time (a listing is a request that waits on the store; local listings are Python
        loops over ``os.scandir`` that threads only slow down: 35 s against 14 s for a million files)."""
        def listing(folder: str):
            try:
                return folder, self.listdir(folder)
            except SourceError as exc:
                return folder, exc

        try:
            remote = len(folders) > 1 and self.max_workers > 1 and is_remote(self.fs(folders[-1])[0])
        except SourceError:  # a folder that cannot be named: its listing says so
            remote = False
        if not remote:
            yield from map(listing, folders)
            return
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=min(self.max_workers, len(folders), LISTING_WORKERS))
        done = False
        try:
            yield from pool.map(listing, folders)
            done = True
        finally:  # interrupted (Ctrl-C, an error raised from a listing): the listings not started are dropped
            pool.shutdown(wait=done, cancel_futures=not done)

    def sizes_in(self, folders: Iterable[str], failed: Optional[dict[str, Exception]] = None) -> dict[str, int]:
        """Sizes of every file in the given folders, keyed by normalized location.

        One listing per folder instead of one request per file.  A folder that cannot be listed
        raises, or with ``failed`` given is left out and named there with its error.
        """
        out: dict[str, int] = {}
        for keys, sizes in self._sized(folders, failed):
            out.update(zip(keys, sizes))
        return out

    def listed_sizes(self, folders: Iterable[str], failed: Optional[dict[str, Exception]] = None):
        """:meth:`sizes_in` as two Arrow arrays, normalized locations and sizes, made a folder at a time (no
        Python string per file outlives its folder's listing)."""
        import pyarrow as pa

        names, sizes = [pa.array([], pa.string())], [pa.array([], pa.int64())]
        for keys, values in self._sized(folders, failed):
            names.append(pa.array(keys, pa.string()))
            sizes.append(pa.array(values, pa.int64()))
        return pa.concat_arrays(names), pa.concat_arrays(sizes)

    def _sized(self, folders: Iterable[str], failed: Optional[dict[str, Exception]]):
        """Per listed folder, its files' normalized locations and sizes (two lists)."""
        for folder, listed in self._listings(sorted(set(folders))):
            if isinstance(listed, SourceError):
                if failed is None:
                    raise listed
                failed[folder] = listed
                continue
            files = [(name, size) for name, kind, size in listed if kind == "file" and size is not None]
            if len(folder.rstrip("/")) >= 6:  # normalize reads a path's first 7 characters and its end alone:
                head = normalize(join(folder, "x"))[:-1]  # one folder's files share its normalized spelling
                yield [head + name.strip("/") for name, _ in files], [int(size) for _, size in files]
            else:
                yield [normalize(join(folder, name)) for name, _ in files], [int(size) for _, size in files]
