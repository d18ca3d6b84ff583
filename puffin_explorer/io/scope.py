"""A table's read scope: the storage the user opened, and nothing a table's metadata names outside it.

A table's metadata is input.  It can name any location: another bucket, an internal HTTP service, a cloud
instance's metadata endpoint, ``/etc/passwd``.  A :class:`ReadScope` is what one table, warehouse or Delta
table may read: by default the storage the user opened (the same scheme and bucket, or host and port; for a
local folder the table's root, and the warehouse's root when opened through a ``Warehouse``), widened by the
``relocate=`` targets and by an explicit ``allow=[prefix, ...]``.

The scope rides in the I/O layer's ``storage_options`` under :data:`SCOPE_KEY` (taken out before fsspec sees
the options, as the retry settings are), so every reader of a table, its Puffin files and Parquet files, and
the Spark executors a plan is sent to, checks the same scope; :func:`check_scope` runs where every location
enters the layer (:func:`.source.filesystem`, :meth:`.files.FileIO.fs`).  A location outside it is refused
before any request, as an :class:`OutsideScopeError` (code ``source.outside-scope``) that names the
location, the scope and the parameter that would allow it.  A local location is judged by where it really
is: a symbolic link that leads out of the roots is outside.

The scope is one small immutable object; :meth:`ReadScope.refused` checks an Arrow column of locations at
once (string prefixes, no call per row), for the table layers to report every refused location of an index.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from ..errors import OutsideScopeError
from .errors import shown

#: The key of ``storage_options`` that holds a :class:`ReadScope` (never passed to fsspec).
SCOPE_KEY = "read_scope"
#: The finding and error code of a location outside the scope.
OUTSIDE_SCOPE = "source.outside-scope"
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_LOCAL_SCHEMES = ("file", "local")
_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


def _split(location: str) -> tuple[str, str, str]:
    """``(scheme, netloc, path)`` of a remote location, ``("", "", absolute path)`` of a local one."""
    loc = str(location)
    if loc.startswith("file://"):
        loc = loc[len("file://"):]
    elif loc.startswith("file:"):
        loc = loc[len("file:"):]
    m = _SCHEME.match(loc)
    if m is None or m.group(1).lower() in _LOCAL_SCHEMES:
        if m is not None:
            loc = loc[m.end():]
        return "", "", os.path.abspath(loc or ".")
    scheme = m.group(1).lower()
    scheme = _ALIASES.get(scheme, scheme)
    rest = loc[m.end():]
    netloc, _, path = rest.partition("/")
    path = "/" + path
    if "/." in path:  # a client may resolve dot segments ('/a/../b'): judged as it would be sent
        path = posixpath.normpath(path)
    return scheme, netloc.lower(), path.rstrip("/")


def canonical(location: str) -> str:
    """One spelling of a location for prefix tests: ``file:`` dropped and local paths absolute (``..`` resolved),
    ``s3a://`` / ``s3n://`` as ``s3://``, the scheme and host in lower case, no trailing slash."""
    scheme, netloc, path = _split(location)
    if not scheme:
        return path
    return f"{scheme}://{netloc}{path}"


def storage_root(location: str) -> str:
    """The storage a location is in: ``scheme://bucket`` or ``scheme://host:port`` (``""`` for a local path)."""
    scheme, netloc, _ = _split(location)
    return f"{scheme}://{netloc}" if scheme else ""


@functools.lru_cache(maxsize=4096)
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)


def _real(path: str) -> str:
    """Where a local path really is: its folder's real place (remembered: a table's files share a few folders)
    joined with its name, or, when the path itself is a link, where the link leads."""
    folder, name = os.path.split(path)
    if not name or os.path.islink(path):
        return os.path.realpath(path)
    return os.path.join(_real_folder(folder), name)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith("/") else root + "/")


@dataclass(frozen=True)
class ReadScope:
    """The locations a table may read: ``roots``, each a storage (``s3://bucket``, ``http://host:port``) or a
    prefix inside one, or a local folder (absolute).  ``opened`` is what the user opened (named in messages).

    Build one with :meth:`around`; :meth:`allows` / :meth:`check` judge one location, :meth:`refused` an Arrow
    column of them."""

    roots: tuple[str, ...]
    opened: str = ""

    @classmethod
    def around(cls, opened: str, local_root: Optional[str] = None, allow: Iterable[str] = (),
               relocate: Optional[Mapping[str, str]] = None) -> "ReadScope":
        """The default scope of a table or warehouse opened at ``opened``: its storage (scheme and bucket or host
        and port) when remote, ``local_root`` (default ``opened``) when local; plus every ``relocate`` target
        and every ``allow`` prefix."""
        root = storage_root(opened) or canonical(local_root if local_root is not None else opened)
        return cls((root,), str(opened)).widened(list(allow or ()) + list((relocate or {}).values()))

    def widened(self, prefixes: Iterable[str]) -> "ReadScope":
        """This scope with more prefixes (each spelled as :func:`canonical`); itself when none is new."""
        roots = list(self.roots)
        for p in prefixes:
            if p is None or str(p) == "":
                continue
            c = canonical(str(p))
            if not any(_under(c, r) for r in roots):  # a prefix inside a root adds nothing
                roots.append(c)
        return self if len(roots) == len(self.roots) else ReadScope(tuple(roots), self.opened)

    def union(self, other: Optional["ReadScope"]) -> "ReadScope":
        """Every root of both scopes (this one's ``opened`` kept)."""
        return self if other is None else self.widened(other.roots)

    @property
    def local_roots(self) -> tuple[str, ...]:
        return tuple(r for r in self.roots if not _SCHEME.match(r))

    def allows(self, location: str) -> bool:
        """Whether ``location`` may be read: under a root, and for a local path, where it really is (symbolic
        links followed) is under a root's real place too."""
        c = canonical(location)
        if _SCHEME.match(c):
            return any(_under(c, r) for r in self.roots if _SCHEME.match(r))
        real = _real(c)
        return any(_under(real, _real_folder(r)) for r in self.local_roots)

    def _linked_out(self, location: str) -> Optional[str]:
        """Where a local location inside a root as written really is, when a symbolic link leads it out."""
        c = canonical(location)
        if _SCHEME.match(c) or not any(_under(c, r) or _under(c, _real_folder(r)) for r in self.local_roots):
            return None
        real = os.path.realpath(c)
        return None if any(_under(real, _real_folder(r)) for r in self.local_roots) else real

    def suggestion(self, location: str) -> str:
        """The prefix that, allowed, would let ``location`` be read: its storage, or its local folder (where a
        symbolic link leads)."""
        return storage_root(location) or posixpath.dirname(self._linked_out(location) or canonical(location))

    def error(self, location: str) -> OutsideScopeError:
        """The error (and finding text) for a refused location: it, the scope, and the parameter that allows it."""
        wider = self.suggestion(location)
        how = ("the table names an HTTP location: it is read only when the table itself was opened over HTTP "
               "from that host; " if storage_root(location).startswith(("http://", "https://")) else "")
        linked = self._linked_out(location)
        via = f" (a symbolic link to {shown(linked, 300)})" if linked else ""
        return OutsideScopeError(
            f"{shown(location, 300)}{via} is outside the read scope of {shown(self.opened, 200) or 'the table'} "
            f"({self.describe()}); not read", location=location, code=OUTSIDE_SCOPE,
            hint=f"{how}if the table's files really are there, pass allow=[{wider!r}] "
                 f"(--allow {wider} on the command line), or relocate={{old: new}} for a moved table")

    def check(self, location: str) -> None:
        """Raise :class:`OutsideScopeError` when ``location`` is outside the scope (nothing is read)."""
        if not self.allows(location):
            raise self.error(location)

    def describe(self, limit: int = 4) -> str:
        """The roots for a message: ``s3://bucket, /srv/warehouse``."""
        shown_roots = [shown(r, 200) for r in self.roots[:limit]]
        more = len(self.roots) - limit
        return ", ".join(shown_roots) + (f" and {more} more" if more > 0 else "")

    def refused(self, column: Any):
        """For an Arrow string column of locations (as the metadata spells them after relocation), a numpy
        bool array: True where the location is outside the scope, False where it is inside or null.  String
        prefixes, column-wise; a local path is judged as written and by its roots' real places (reading it
        follows its links: :meth:`allows`)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        n = len(column)
        if n == 0:
            return np.zeros(0, dtype=bool)
        c = column.cast(pa.string())
        if bool(pc.any(pc.starts_with(c, "file:")).as_py() or False):
            c = pc.replace_substring_regex(c, r"^file:(//)?", "")
        if bool(pc.any(pc.match_substring_regex(c, r"^s3[an]://|^[A-Za-z][A-Za-z0-9+.-]*://[^/]*[A-Z]")).as_py()
                or False):
            c = pa.array([None if v is None else canonical(v) for v in c.to_pylist()], pa.string())
        inside = np.zeros(n, dtype=bool)
        roots = set(self.roots) | {_real_folder(r) for r in self.local_roots}
        for r in roots:
            hit = pc.fill_null(pc.equal(c, r), False)
            hit = pc.or_(hit, pc.fill_null(pc.starts_with(c, r if r.endswith("/") else r + "/"), False))
            inside |= hit.to_numpy(zero_copy_only=False)
        # a relative or dotted local path: judged one by one (rare: writers name absolute locations)
        odd = pc.fill_null(pc.match_substring(c, "/."), False).to_numpy(zero_copy_only=False)
        relative = ~pc.fill_null(pc.starts_with(c, "/"), True).to_numpy(zero_copy_only=False)
        if relative.any():  # not absolute: a URL, or a relative path (judged one by one)
            url = pc.fill_null(pc.match_substring_regex(c, r"^[A-Za-z][A-Za-z0-9+.-]*://"), False)
            odd |= relative & ~url.to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(odd):
            inside[i] = self.allows(c[int(i)].as_py())
        return ~inside & ~column.is_null().to_numpy(zero_copy_only=False)

    def __str__(self) -> str:
        return self.describe()


def scope_of(storage_options: Optional[Mapping[str, Any]]) -> Optional[ReadScope]:
    """The :class:`ReadScope` in ``storage_options`` (None: no scope, every location may be read)."""
    if not storage_options:
        return None
    got = storage_options.get(SCOPE_KEY)
    return got if isinstance(got, ReadScope) else None


def check_scope(location: str, storage_options: Optional[Mapping[str, Any]]) -> None:
    """Raise :class:`OutsideScopeError` when the options carry a scope and ``location`` is outside it."""
    scope = scope_of(storage_options)
    if scope is not None and isinstance(location, str):
        scope.check(location)


def with_scope(storage_options: Optional[Mapping[str, Any]], scope: Optional[ReadScope]) -> dict[str, Any]:
    """A copy of ``storage_options`` holding ``scope`` (joined with a scope they already hold: ``scope``'s roots and
    what it opened first, the held roots not inside them after)."""
    opts = dict(storage_options or {})
    if scope is not None:
        opts[SCOPE_KEY] = scope.union(scope_of(opts))
    return opts


def without_scope(storage_options: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """A copy of ``storage_options`` without a scope (what a user sees and passes on)."""
    return {k: v for k, v in (storage_options or {}).items() if k != SCOPE_KEY}


__all__ = ["ReadScope", "OutsideScopeError", "SCOPE_KEY", "OUTSIDE_SCOPE", "scope_of", "check_scope", "with_scope",
           "without_scope", "canonical", "storage_root"]
