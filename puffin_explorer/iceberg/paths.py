"""Where an Iceberg path really is: prefix remapping for moved warehouses and a counting file reader.

Iceberg metadata stores absolute locations.  A table copied to another folder or
bucket keeps the old ones, so every location read out of metadata goes through a
:class:`PathMapper` before it is opened.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Iterable, Mapping, Optional

from ..errors import SourceError

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


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


class TableIO:
    """Reads whole small files (metadata, manifests) and byte ranges through fsspec.

    Counts ``bytes_read`` and ``read_count`` over everything it reads so that a
    listing's cost can be shown.
    """

    def __init__(self, storage_options: Optional[dict[str, Any]] = None) -> None:
        self.storage_options = dict(storage_options or {})
        self.bytes_read = 0
        self.read_count = 0
        self._fs_cache: dict[str, Any] = {}

    def fs(self, location: str):
        """The fsspec filesystem for ``location`` and the path inside it."""
        import fsspec

        protocol = fsspec.utils.get_protocol(location)
        fs = self._fs_cache.get(protocol)
        if fs is None:
            fs, path = fsspec.core.url_to_fs(location, **self.storage_options)
            self._fs_cache[protocol] = fs
            return fs, path
        return fs, fs._strip_protocol(location)

    def read(self, location: str) -> bytes:
        """The whole file."""
        fs, path = self.fs(location)
        try:
            data = fs.cat_file(path)
        except FileNotFoundError as exc:
            raise SourceError(f"no such file: {location}") from exc
        except (OSError, ValueError) as exc:
            raise SourceError(f"cannot read {location}: {exc}") from exc
        self.bytes_read += len(data)
        self.read_count += 1
        return bytes(data)

    def read_text(self, location: str) -> str:
        return self.read(location).decode("utf-8")

    def exists(self, location: str) -> bool:
        fs, path = self.fs(location)
        try:
            return bool(fs.exists(path))
        except (OSError, ValueError):
            return False

    def size(self, location: str) -> Optional[int]:
        """File size in bytes, or None when it does not exist."""
        fs, path = self.fs(location)
        try:
            return int(fs.size(path))
        except (FileNotFoundError, OSError, ValueError):
            return None

    def listdir(self, location: str) -> list[tuple[str, str, Optional[int]]]:
        """``(name, type, size)`` for each entry of a folder; type is ``file`` or ``directory``."""
        fs, path = self.fs(location)
        try:
            entries = fs.ls(path, detail=True)
        except (FileNotFoundError, OSError, ValueError):
            return []
        out = []
        for e in entries:
            name = basename(str(e["name"]))
            if not name or normalize(str(e["name"])).rstrip("/") == normalize(path).rstrip("/"):
                continue
            out.append((name, e.get("type", "file"), e.get("size")))
        return out

    def sizes_in(self, folders: Iterable[str]) -> dict[str, int]:
        """Sizes of every file in the given folders, keyed by normalized location.

        One listing per folder instead of one request per file.
        """
        out: dict[str, int] = {}
        for folder in set(folders):
            for name, kind, size in self.listdir(folder):
                if kind == "file" and size is not None:
                    out[normalize(join(folder, name))] = int(size)
        return out

    def reset_counters(self) -> None:
        self.bytes_read = 0
        self.read_count = 0
