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


class TableIO(FileIO):
    """The one I/O layer's :class:`~puffin_explorer.io.FileIO`, with Iceberg's spelling of locations
    (``file:``, ``s3a://``) normalized when comparing and keying them."""

    def listdir(self, location: str) -> list[tuple[str, str, Optional[int]]]:
        # an entry whose name is only slashes is the folder itself (all a normalized comparison could find)
        return [e for e in super().listdir(location) if e[0].strip("/")]

    def sizes_in(self, folders: Iterable[str], failed: Optional[dict[str, Exception]] = None) -> dict[str, int]:
        """Sizes of every file in the given folders, keyed by normalized location.

        One listing per folder instead of one request per file.  A folder that cannot be listed
        raises, or with ``failed`` given is left out and named there with its error.
        """
        out: dict[str, int] = {}
        for folder in set(folders):
            try:
                listed = self.listdir(folder)
            except SourceError as exc:
                if failed is None:
                    raise
                failed[folder] = exc
                continue
            if len(folder.rstrip("/")) >= 6:  # normalize reads a path's first 7 characters and its end alone:
                head = normalize(join(folder, "x"))[:-1]  # one folder's files share its normalized spelling
                for name, kind, size in listed:
                    if kind == "file" and size is not None:
                        out[head + name.strip("/")] = int(size)
                continue
            for name, kind, size in listed:
                if kind == "file" and size is not None:
                    out[normalize(join(folder, name))] = int(size)
        return out
