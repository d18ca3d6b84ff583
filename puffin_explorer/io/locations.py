"""Locations the I/O layer refuses before any storage library sees them: control characters, or too long.

A path read from a damaged manifest or metadata file may hold a NUL byte (the OS raises ``ValueError:
embedded null byte``) or another control character (``\\x01``, ``\\x1f``, ``\\x7f``, a newline) that no
writer puts in a file name.  :func:`check_location` runs where every location enters the layer
(:func:`.source.filesystem`, :meth:`.files.FileIO.fs`) and raises a :class:`~puffin_explorer.errors.SourceError`
that names the character and where it is, which every caller already turns into a finding; the table
readers also report each such path where they read it (:func:`control_character` is their test).

A location longer than :data:`MAX_LOCATION_CHARS` is refused the same way, before it is searched, joined or
sent anywhere: no object store or file system takes a path of that length, and a damaged metadata file
may hold one of megabytes.
"""

from __future__ import annotations

import re
from typing import Optional

from ..errors import SourceError
from .errors import shown

#: The C0 control characters and DEL.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The same as an Arrow (RE2) pattern, for column-wise checks.
CONTROL_PATTERN = "[\\x00-\\x1f\\x7f]"
#: The longest location opened: S3, GCS and Azure keys stop at 1,024 bytes, HDFS paths at 8,000 characters.
MAX_LOCATION_CHARS = 65_536


def control_character(location: str) -> Optional[tuple[int, str]]:
    """``(index, character)`` of the first control character in ``location``, or None."""
    m = CONTROL.search(location) if isinstance(location, str) else None
    return (m.start(), m.group()) if m else None


def describe(location: str) -> str:
    """Where the first control character of ``location`` is, for a message: ``'\\x00' at character 12``."""
    got = control_character(location)
    return "" if got is None else f"{got[1]!r} at character {got[0]:,}"


def check_location(location: str) -> None:
    """Raise a :class:`SourceError` (``source.invalid-location``) for a location with a control character
    or longer than :data:`MAX_LOCATION_CHARS`."""
    if isinstance(location, str) and len(location) > MAX_LOCATION_CHARS:
        raise SourceError(f"a location of {len(location):,} characters, more than any storage takes "
                          f"({MAX_LOCATION_CHARS:,}), is not opened: {shown(location, 300)}", location=location,
                          code="source.invalid-location",
                          hint="the path was damaged where it was written (a manifest or metadata file)")
    got = control_character(location)
    if got is not None:
        raise SourceError(f"{location!r} holds the control character {describe(location)}; no file is opened "
                          "at it", location=location, code="source.invalid-location",
                          hint="the path was damaged where it was written (a manifest or metadata file)")
