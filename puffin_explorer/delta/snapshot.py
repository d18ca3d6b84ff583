"""One version of a Delta table as its readers see it: the log state, the I/O layer, path mapping and DV reads.

:class:`DeltaSnapshot` is the source every analysis of a Delta table takes (the data-file frames of
:mod:`.files`, the cross-checks of :mod:`.checks`, the doctor of :mod:`.health`);
:class:`~.table.DeltaTable` opens one and delegates to it.
"""

from __future__ import annotations

import re
from typing import Any, Optional
from urllib.parse import unquote

from ..coverage import WHOLE, Coverage
from ..errors import InvalidFileError, NotFoundError, PuffinError, SourceError
from ..findings import make
from ..iceberg.paths import PathMapper, TableIO, basename, join, normalize
from ..io import ByteSource
from ..regions import Finding, FindingList, Severity
from .descriptor import STORAGE_TYPES, DVDescriptor, decode_dv, frame
from .log import DeltaLog, FileAction, State
from . import z85

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
#: DV files up to this size are read once, whole, when several DVs in them are decoded.
_WHOLE_FILE = 8 << 20


class DeltaSnapshot:
    """The log ``state`` of one version of the Delta table at ``location``, read through ``io``
    (``mapper`` maps absolute paths of the log to where the files are now; ``strict`` raises the
    first error finding)."""

    def __init__(self, io: TableIO, location: str, log: DeltaLog, state: State, mapper: PathMapper,
                 strict: bool = False) -> None:
        self.io = io
        self.location = location
        self.log = log
        self.state = state
        self.mapper = mapper
        self.strict = strict
        self.version: int = state.version
        self.name = basename(location)
        self._sources: dict[str, ByteSource] = {}
        self._files: Optional[list[FileAction]] = None
        self._outside: Optional[list[Finding]] = None

    def raise_first_error(self, findings) -> None:
        """With ``strict``, raise the first error among ``findings`` (an
        :class:`~puffin_explorer.errors.InvalidFileError`)."""
        if self.strict:
            first = next((f for f in findings if f.severity is Severity.ERROR), None)
            if first is not None:
                raise InvalidFileError.from_finding(first)

    # ---- what the log says -------------------------------------------------------------------
    @property
    def protocol(self) -> dict[str, Any]:
        """The ``protocol`` action (minReaderVersion, minWriterVersion, readerFeatures, writerFeatures)."""
        return dict(self.state.protocol)

    @property
    def reader_features(self) -> list[str]:
        """The protocol's ``readerFeatures`` (empty when it lists none)."""
        return list(self.state.protocol.get("readerFeatures") or [])

    @property
    def metadata(self) -> dict[str, Any]:
        """The ``metaData`` action (schemaString, partitionColumns, configuration, ...)."""
        return dict(self.state.metadata)

    @property
    def findings(self) -> FindingList:
        """Problems met while reading the log, and the locations it names outside the read scope."""
        return FindingList(self.log.findings + self.outside_scope())

    def outside_scope(self) -> list[Finding]:
        """A ``source.outside-scope`` finding for each live data file and ``p`` DV file whose location is outside
        the table's read scope (none of them is read: the I/O layer refuses it); one column-wise test, kept."""
        if self._outside is None:
            scope = self.io.scope
            out: list[Finding] = []
            if scope is not None and self.state.files:
                import pyarrow as pa

                from ..iceberg.source import scope_finding
                from ..regions import cap_per_code

                live = self.live()
                named = [(f"add action {f.path}", self.locate(f.path)) for f in live]
                for f in live:
                    if f.dv is not None and f.dv.storage_type == "p":
                        loc = self.dv_location(f.dv)
                        if loc:
                            named.append((f"the DV of {f.path}", loc))
                refused = scope.refused(pa.array([loc for _, loc in named], pa.string()))
                out = cap_per_code([scope_finding(scope, what, loc, self.log.log_dir)
                                    for (what, loc), no in zip(named, refused.tolist()) if no])
            self._outside = out
        return list(self._outside)

    @property
    def coverage(self) -> Coverage:
        """Which counts of this version are whole: none when a commit it needs was missing or unreadable (its
        ``delta.log-gap`` finding names it), since the files rebuilt without it may include files it removed (so
        never a partial count)."""
        if not self.state.missing:
            return WHOLE
        return Coverage(rows=False, deletes=False, because=("delta.log-gap",))

    def locate(self, path: str) -> str:
        """Where a path written in the log is now (relative paths are under the table folder)."""
        raw = unquote(str(path))
        if _SCHEME.match(raw) or raw.startswith("/"):
            return self.mapper.map(normalize(raw))
        return join(self.location, raw)

    def live(self) -> list[FileAction]:
        """The live ``add`` actions at this version, sorted by path (one list, kept)."""
        if self._files is None:
            self._files = sorted(self.state.files.values(), key=lambda f: f.path)
        return self._files

    def dv_location(self, dv: DVDescriptor) -> Optional[str]:
        """The DV file of a descriptor (None for inline DVs or an undecodable path)."""
        try:
            where = dv.absolute_path(self.location)
        except z85.Z85Error:
            return None
        if where is None:
            return None
        return self.locate(where) if dv.storage_type == "p" else where

    # ---- DVs -------------------------------------------------------------------------------------
    def source(self, location: str) -> ByteSource:
        """The byte source of a DV file (read whole once when small), one per location."""
        src = self._sources.get(location)
        if src is None:
            src = ByteSource(location, self.io.storage_options)
            if src.size <= _WHOLE_FILE:
                src.prefetch(0, src.size)
            self._sources[location] = src
        return src

    def read_dv(self, f: FileAction):
        """The DV of the live file ``f`` (which has one); an empty one whose finding says why when it cannot
        be read (see :meth:`~.table.DeltaTable.read_dv`)."""
        d = f.dv
        if d.storage_type not in STORAGE_TYPES:
            return self._unreadable(f, "delta.dv-storage-type", None, f"DV storageType {d.storage_type!r} is not u, "
                                                                       "p or i")
        if d.storage_type == "i":
            try:
                raw = d.inline_bytes()
            except z85.Z85Error as exc:
                return self._unreadable(f, "delta.dv-inline", None, f"inline DV does not decode: {exc}")
            return self._decoded(f, frame(raw), 0, space="inline DV (Z85-decoded, framed)")
        loc = self.dv_location(d)
        if loc is None:
            return self._unreadable(f, "delta.dv-path", None, f"DV path {d.path_or_inline_dv!r} does not decode")
        off, length = d.read_offset, d.read_length
        try:
            src = self.source(loc)
            if off + length > src.size:
                return self._unreadable(f, "delta.dv-range", off, f"DV range [{off:,}, {off + length:,}) runs past "
                                                                  f"the end of the {src.size:,}-byte file {loc}")
            data = src.read(off, length)
        except NotFoundError:
            return self._unreadable(f, "table.file-vanished", None, self.vanished_message(loc, d.cardinality))
        except SourceError as exc:
            return self._unreadable(f, "delta.dv-unreadable", None, f"the DV file cannot be read: {exc}")
        return self._decoded(f, data, off)

    def vanished_message(self, loc: str, cardinality: Any) -> str:
        """What a ``table.file-vanished`` finding says of a DV file of this version that is gone (VACUUM): the
        file, the version, that its positions are not read, and the newer log version when the log moved on."""
        try:
            latest = self.log._list().latest  # listed once per vanished DV file met, never per read
        except (SourceError, OSError):
            latest = None
        changed = (f"; the table changed while it was read; newer log version: {latest}"
                   if latest is not None and latest > self.version else "")
        return (f"DV file {loc} of version {self.version} is gone: its positions are not read (the cardinality "
                f"{cardinality} in the log is counted, the positions are partial){changed}")

    def _decoded(self, f: FileAction, data: bytes, offset: int, space: str = "file"):
        try:
            dv = decode_dv(data, offset, space=space, referenced_data_file=self.locate(f.path))
        except (PuffinError, ValueError) as exc:
            return self._unreadable(f, "delta.dv-unreadable", offset, f"the DV's bytes do not decode: {exc}")
        self.raise_first_error(dv.findings)
        return dv

    def _unreadable(self, f: FileAction, code: str, offset: Optional[int], message: str):
        """An empty DV whose one finding says why the DV of ``f`` cannot be read (raised when strict)."""
        from ..format.dv import DeletionVector

        finding: Finding = make(code, offset, f"{f.path}: {message}")
        self.raise_first_error([finding])
        dv = DeletionVector.from_positions([], referenced_data_file=self.locate(f.path))
        dv.findings.append(finding)
        return dv

    def dv_file(self, location: str):
        """A DV file as a :class:`~puffin_explorer.delta.DeltaDVFile`, its DVs named by the data files whose
        live descriptors point into it."""
        from .dvfile import DeltaDVFile

        loc = normalize(location) if ("/" in str(location)) else join(self.location, str(location))
        descs = [(f.path, f.dv) for f in self.live() if f.dv is not None and self.dv_location(f.dv) == loc]
        return DeltaDVFile(self.source(loc), descriptors=descs)


__all__ = ["DeltaSnapshot"]
