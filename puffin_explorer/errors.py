"""Exceptions.  Lenient parsing records findings; ``strict=True`` raises these."""

from __future__ import annotations

from typing import Optional


class PuffinError(Exception):
    """Base class of every error this package raises about a file's content."""

    def __init__(self, message: str, offset: Optional[int] = None, code: str = "") -> None:
        self.offset = offset
        self.code = code
        where = f" (at byte {offset})" if offset is not None else ""
        super().__init__(f"{message}{where}")

    @classmethod
    def from_finding(cls, finding) -> "PuffinError":
        return cls(f"{finding.code}: {finding.message}", finding.offset, finding.code)


class InvalidFileError(PuffinError):
    """The file breaks the format in a way strict reading does not accept."""


class BlobDecodeError(PuffinError):
    """A blob's bytes cannot be decoded as its type says."""


class UnsupportedCodecError(PuffinError):
    """A compression codec the reader does not know."""


class SourceError(PuffinError):
    """The location cannot be opened or read.

    ``location`` is what was being read and ``hint`` what to do about it; both are
    part of the one-line message.
    """

    def __init__(self, message: str, offset: Optional[int] = None, code: str = "", *,
                 location: Optional[str] = None, hint: str = "") -> None:
        self.location = location
        self.hint = hint
        super().__init__(f"{message}: {hint}" if hint else message, offset, code or "source.read")


class NotFoundError(SourceError):
    """No such file, key or bucket."""


class NoCredentialsError(SourceError):
    """The storage needs credentials and none were found."""


class AccessDeniedError(SourceError):
    """The storage refused the credentials (wrong key or secret, or no permission)."""


class EndpointUnreachableError(SourceError):
    """Nothing answers at the storage endpoint."""


class StorageUnavailableError(SourceError):
    """The storage kept failing in a way that may pass (throttling, server errors, connections reset or
    stalled past the timeout) through every attempt.  ``operation`` is what was being done (``read``,
    ``open``, ``list``), ``attempts`` how many requests were made and ``cause`` the last failure, in words."""

    def __init__(self, message: str, offset: Optional[int] = None, code: str = "", *,
                 location: Optional[str] = None, hint: str = "", operation: str = "", attempts: int = 1,
                 cause: str = "") -> None:
        self.operation = operation
        self.attempts = attempts
        self.cause = cause
        super().__init__(message, offset, code or "source.unavailable", location=location, hint=hint)


class OutsideScopeError(SourceError):
    """A location outside the table's read scope (``source.outside-scope``): not read, no request made. The
    message names the location, the scope and the parameter that would allow it (``allow=``, ``relocate=``)."""


class NotAFileError(SourceError):
    """The location is a folder (or a prefix), not a file."""


class TableNotFoundError(SourceError):
    """No table at the location: no metadata file, or one that is not JSON."""


class NotInTableError(PuffinError, KeyError):
    """Asked for something the table does not have: a snapshot or version, a data file, a deletion vector."""

    __str__ = Exception.__str__


class UnsupportedTableError(PuffinError, ValueError):
    """The operation does not apply to this kind of table (a Delta table asked for Iceberg's Puffin files or
    ``position_deletes``, or for the Spark doctor); the message names what to use instead."""


class FileVanishedError(NotFoundError):
    """A file the table's pinned snapshot (or Delta version) needs is gone: deleted since that snapshot was
    written, typically by maintenance (expire_snapshots, remove_orphan_files, VACUUM) while the table was read.
    The message names the file, the snapshot and, when the table's metadata moved on, the newer version."""
