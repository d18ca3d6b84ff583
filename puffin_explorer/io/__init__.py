"""One I/O layer for every reader: open a location, plan byte ranges, fetch, cache, count, explain errors.

Every reader of this package (Puffin files, Iceberg metadata, Parquet layouts, the
Spark executors) reads bytes through here.  A location is a local path, any fsspec
URL (``s3://``, ``gs://``, ``abfs://``, ``http(s)://``, ``memory://``) or ``bytes``;
``storage_options`` are fsspec's (for S3: ``key``, ``secret``,
``client_kwargs={"endpoint_url": ...}``), or built from a pyiceberg FileIO's
properties with :func:`storage_options_from_pyiceberg`.

The small API (also what executor code should call)::

    from puffin_explorer.io import ByteSource, FileIO, read_range

    data = read_range("s3://b/t/data/x.puffin", offset, length, storage_options)  # one request, no size probe
    src = ByteSource("s3://b/t/data/x.puffin", storage_options)    # one size probe
    parts = src.read_ranges([(4, 100), (200, 50), (10_000, 8)])     # neighbours merged, fetched concurrently
    src.read(210, 10)                                               # served from what read_ranges fetched
    src.bytes_read, src.read_count                                  # what crossed the wire

    io = FileIO(storage_options)                                    # whole small files, many at once
    blobs = io.read_many(manifest_locations)                        # {location: bytes}, 16 in flight

Every storage failure is raised as a :class:`~puffin_explorer.errors.SourceError`
subclass whose one-line message names the location and what to do:
:class:`~puffin_explorer.errors.NotFoundError`,
:class:`~puffin_explorer.errors.NoCredentialsError`,
:class:`~puffin_explorer.errors.AccessDeniedError`,
:class:`~puffin_explorer.errors.EndpointUnreachableError` (found in one TCP connect,
not after a client library's retries) and
:class:`~puffin_explorer.errors.NotAFileError`; a location outside a table's read scope
(:class:`~puffin_explorer.io.scope.ReadScope`) is refused before any request as an
:class:`~puffin_explorer.errors.OutsideScopeError`.
"""

from __future__ import annotations

from ..errors import (AccessDeniedError, EndpointUnreachableError, NoCredentialsError, NotAFileError,
                      NotFoundError, OutsideScopeError, SourceError)
from .errors import check_endpoint, storage_error
from .files import CountedSource, FileIO, storage_options_from_pyiceberg
from .ranges import coalesce
from .scope import ReadScope
from .source import DEFAULT_WORKERS, ByteSource, Location, filesystem, read_range

__all__ = ["ByteSource", "FileIO", "CountedSource", "Location", "read_range", "coalesce", "filesystem",
           "storage_options_from_pyiceberg", "storage_error", "check_endpoint", "DEFAULT_WORKERS",
           "SourceError", "NotFoundError", "NoCredentialsError", "AccessDeniedError",
           "EndpointUnreachableError", "NotAFileError", "OutsideScopeError", "ReadScope"]
