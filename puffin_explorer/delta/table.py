"""One Delta Lake table: its versions, data files and deletion vectors as DataFrames, decoded DVs, cross-checks."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Union
from urllib.parse import unquote

from .._repr import RichRepr
from ..errors import InvalidFileError, NotFoundError, NotInTableError, PuffinError, SourceError
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

DV_COLUMNS = ["data_file", "location", "storage_type", "path_or_inline_dv", "offset", "size_in_bytes",
              "cardinality", "dv_file", "unique_id", "num_records", "version"]


class DeltaTable(RichRepr):
    """A Delta table read from its ``_delta_log`` at the latest version or ``version=N``.

    ``location`` is a local folder or any fsspec URL; ``storage_options`` go to
    fsspec; ``relocate={old_prefix: new_prefix}`` maps absolute paths written in
    the log (``p`` DVs, absolute data paths) to where the files are now.

    Reading is lenient: a damaged log line, action, descriptor, checkpoint or DV
    is a finding (``findings``, ``check()``, a DV's own ``findings``) and the
    rest of the table reads.  Only a location without a Delta log raises
    (:class:`~puffin_explorer.errors.TableNotFoundError`); asking for a version,
    data file or DV the table does not have raises
    :class:`~puffin_explorer.errors.NotInTableError`.  ``strict=True`` raises the
    first error finding instead (:class:`~puffin_explorer.errors.InvalidFileError`).
    """

    def __init__(self, location: str, version: Optional[int] = None,
                 storage_options: Optional[dict[str, Any]] = None,
                 relocate: Optional[Mapping[str, str]] = None, strict: bool = False) -> None:
        self.io = TableIO(storage_options)
        self.location = normalize(str(location))
        self.mapper = PathMapper(relocate)
        self.strict = strict
        self.log = DeltaLog(self.io, self.location)
        self._state: State = self.log.state(version)
        self.version: int = self._state.version
        self.name = basename(self.location)
        self._sources: dict[str, ByteSource] = {}
        self._files: Optional[list[FileAction]] = None
        self._kept: dict[str, Any] = {}
        self._raise_first_error(self.log.findings)

    def _raise_first_error(self, findings) -> None:
        if self.strict:
            first = next((f for f in findings if f.severity is Severity.ERROR), None)
            if first is not None:
                raise InvalidFileError.from_finding(first)

    # ---- what the log says -------------------------------------------------------------------
    @property
    def protocol(self) -> dict[str, Any]:
        """The ``protocol`` action (minReaderVersion, minWriterVersion, readerFeatures, writerFeatures)."""
        return dict(self._state.protocol)

    @property
    def reader_features(self) -> list[str]:
        """The protocol's ``readerFeatures`` (empty when it lists none)."""
        return list(self._state.protocol.get("readerFeatures") or [])

    @property
    def metadata(self) -> dict[str, Any]:
        """The ``metaData`` action (schemaString, partitionColumns, configuration, ...)."""
        return dict(self._state.metadata)

    @property
    def findings(self) -> FindingList:
        """Problems met while reading the log (``check()`` adds the cross-checks)."""
        return FindingList(self.log.findings)

    def locate(self, path: str) -> str:
        """Where a path written in the log is now (relative paths are under the table folder)."""
        raw = unquote(str(path))
        if _SCHEME.match(raw) or raw.startswith("/"):
            return self.mapper.map(normalize(raw))
        return join(self.location, raw)

    def live_files(self) -> list[FileAction]:
        """The live ``add`` actions at this version (path, numRecords, DV descriptor), sorted by path."""
        return list(self._live())

    def _live(self) -> list[FileAction]:
        if self._files is None:
            self._files = sorted(self._state.files.values(), key=lambda f: f.path)
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

    # ---- DataFrames ----------------------------------------------------------------------------
    def files(self):
        """Live data files: path, location, size, modification time, numRecords, partition values, DV summary."""
        import pandas as pd

        rows = []
        for f in self._live():
            a = f.add
            rows.append({"file_path": f.path, "location": self.locate(f.path), "size_in_bytes": a.get("size"),
                         "modification_time": a.get("modificationTime"), "num_records": f.num_records,
                         "partition_values": f.partition_values,
                         "has_dv": f.dv is not None, "dv_storage_type": f.dv.storage_type if f.dv else None,
                         "dv_cardinality": f.dv.cardinality if f.dv else 0,
                         "base_row_id": a.get("baseRowId"), "version": f.version})
        df = pd.DataFrame.from_records(rows, columns=[
            "file_path", "location", "size_in_bytes", "modification_time", "num_records", "partition_values",
            "has_dv", "dv_storage_type", "dv_cardinality", "base_row_id", "version"])
        for col in ("num_records", "base_row_id", "size_in_bytes"):
            df[col] = df[col].astype("Int64")
        return df

    def dvs(self):
        """One row per live DV: data file, storage_type, path_or_inline_dv, offset, size_in_bytes,
        cardinality, the resolved DV file (None inline), unique_id, the data file's numRecords."""
        import pandas as pd

        rows = []
        for f in self._live():
            if f.dv is None:
                continue
            d = f.dv
            rows.append({"data_file": f.path, "location": self.locate(f.path), "storage_type": d.storage_type,
                         "path_or_inline_dv": d.path_or_inline_dv, "offset": d.offset,
                         "size_in_bytes": d.size_in_bytes, "cardinality": d.cardinality,
                         "dv_file": self.dv_location(d), "unique_id": d.unique_id, "num_records": f.num_records,
                         "version": f.version})
        df = pd.DataFrame.from_records(rows, columns=DV_COLUMNS)
        for col in ("offset", "num_records"):
            df[col] = df[col].astype("Int64")
        return df

    def deleted_rows_per_file(self):
        """Per data file: rows, deleted rows (the DV's cardinality), live rows, share deleted, DV storage."""
        import pandas as pd

        rows = []
        for f in self._live():
            n = int(f.num_records or 0)
            k = f.dv.cardinality if f.dv else 0
            rows.append({"file_path": f.path, "location": self.locate(f.path),
                         "partition": f.partition_values, "record_count": n,
                         "deleted_rows": k, "live_rows": n - k, "deleted_share": (k / n) if n else 0.0,
                         "dvs": int(f.dv is not None), "storage_type": f.dv.storage_type if f.dv else None})
        return pd.DataFrame.from_records(rows, columns=[
            "file_path", "location", "partition", "record_count", "deleted_rows", "live_rows", "deleted_share",
            "dvs", "storage_type"])

    def compaction_candidates(self, min_share: float = 0.1):
        """Data files whose DV deletes at least ``min_share`` of their rows, most deleted first."""
        df = self.deleted_rows_per_file()
        df = df[df["deleted_share"] >= min_share]
        return df.sort_values(["deleted_share", "deleted_rows"], ascending=False).reset_index(drop=True)

    def totals(self) -> dict[str, int]:
        """Data files, records (numRecords), deleted rows (DV cardinalities), live rows, DVs at this version."""
        files = self._live()
        records = sum(int(f.num_records or 0) for f in files)
        deleted = sum(f.dv.cardinality for f in files if f.dv)
        return {"data_files": len(files), "records": records, "deleted_rows": deleted, "live_rows": records - deleted,
                "dvs": sum(1 for f in files if f.dv)}

    def versions(self):
        """The version timeline: per commit its operation, files and DVs added/removed, and the table after it
        (data files, records, deleted rows, live rows)."""
        import pandas as pd

        rows = []

        def each(version: int, state: State, actions: list) -> None:
            info = next((b for k, b in actions if k == "commitInfo"), {})
            adds = [b for k, b in actions if k == "add"]
            removes = [b for k, b in actions if k == "remove"]
            live = state.files.values()
            records = sum(int(f.num_records or 0) for f in live)
            deleted = sum(f.dv.cardinality for f in live if f.dv)
            rows.append({"version": version, "timestamp": _timestamp(info.get("timestamp")),
                         "operation": info.get("operation", "CHECKPOINT" if not actions else None),
                         "operation_parameters": dict(info.get("operationParameters") or {}),
                         "added_files": len(adds), "removed_files": len(removes),
                         "added_dvs": sum(1 for a in adds if a.get("deletionVector")),
                         "removed_dvs": sum(1 for r in removes if r.get("deletionVector")),
                         "data_files": len(state.files), "records": records, "deleted_rows": deleted,
                         "live_rows": records - deleted, "dvs": sum(1 for f in live if f.dv),
                         "is_current": version == self.version})

        self.log.replay(self.log.files.latest or 0, each)
        return pd.DataFrame.from_records(rows, columns=[
            "version", "timestamp", "operation", "operation_parameters", "added_files", "removed_files",
            "added_dvs", "removed_dvs", "data_files", "records", "deleted_rows", "live_rows", "dvs", "is_current"])

    # ---- DVs -------------------------------------------------------------------------------------
    def _file_action(self, target: Union[str, dict, FileAction, Any], with_dv: bool = False) -> FileAction:
        """The live file ``target`` names: a path, a ``files()`` / ``dvs()`` row (its ``unique_id`` picks one of
        two live entries of one path), or a :class:`FileAction` of ``live_files()``."""
        if isinstance(target, FileAction):
            for f in self._live():
                if f.key == target.key:
                    return f
            raise NotInTableError(f"{self.name}: {target.path} is not a live data file at version {self.version}")
        unique_id = None
        if hasattr(target, "to_dict"):
            target = dict(target.to_dict())
        if isinstance(target, dict):
            unique_id = target.get("unique_id") if isinstance(target.get("unique_id"), str) else None
            target = next((target[k] for k in ("data_file", "file_path", "path") if isinstance(target.get(k), str)),
                          None)
        wanted = str(target)
        matches = [f for f in self._live()
                   if f.path == wanted or unquote(f.path) == wanted or self.locate(f.path) == normalize(wanted)]
        if unique_id is not None:
            matches = [f for f in matches if (f.dv.unique_id if f.dv else "") == unique_id] or matches
        if with_dv:
            matches = [f for f in matches if f.dv is not None] or matches
        if not matches:
            raise NotInTableError(f"{self.name}: {target} is not a live data file at version {self.version}")
        return matches[0]

    def _source(self, location: str) -> ByteSource:
        src = self._sources.get(location)
        if src is None:
            src = ByteSource(location, self.io.storage_options)
            if src.size <= _WHOLE_FILE:
                src.prefetch(0, src.size)
            self._sources[location] = src
        return src

    def read_dv(self, target: Union[str, dict, FileAction, Any]):
        """The :class:`~puffin_explorer.DeletionVector` of a data file: its path, a ``dvs()`` / ``files()`` row, or
        a :class:`~puffin_explorer.delta.log.FileAction` of ``live_files()``.  Every row ``dvs()`` lists reads.

        On-disk DVs read ``sizeInBytes + 8`` bytes at ``offset`` of the DV file; inline
        DVs are Z85-decoded and framed with their size and CRC so that they decode the same way.
        A DV that cannot be read (a missing DV file, a range past its end, a storageType or
        path that does not resolve) comes back empty, its one finding saying why
        (``strict=True`` raises it).  A file that is not live, or has no DV, raises
        :class:`~puffin_explorer.errors.NotInTableError`.
        """
        f = self._file_action(target, with_dv=True)
        if f.dv is None:
            raise NotInTableError(f"{self.name}: {f.path} has no deletion vector at version {self.version}")
        return self._read_dv(f)

    def _read_dv(self, f: FileAction):
        d = f.dv
        data_file = self.locate(f.path)
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
            src = self._source(loc)
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

    def refresh(self) -> "DeltaTable":
        """This table at the newest version of its log, as a new :class:`DeltaTable`: a new object rather than
        this one changed in place, so nothing cached for this version (files, DV files, the doctor) can be
        served for another, and this object keeps answering for the version it pinned."""
        return DeltaTable(self.location, storage_options=self.io.storage_options or None,
                          relocate=self.mapper.prefixes, strict=self.strict)

    def _decoded(self, f: FileAction, data: bytes, offset: int, space: str = "file"):
        try:
            dv = decode_dv(data, offset, space=space, referenced_data_file=self.locate(f.path))
        except (PuffinError, ValueError) as exc:
            return self._unreadable(f, "delta.dv-unreadable", offset, f"the DV's bytes do not decode: {exc}")
        self._raise_first_error(dv.findings)
        return dv

    def _unreadable(self, f: FileAction, code: str, offset: Optional[int], message: str):
        """An empty DV whose one finding says why the DV of ``f`` cannot be read (raised when strict)."""
        from ..format.dv import DeletionVector

        finding: Finding = make(code, offset, f"{f.path}: {message}")
        self._raise_first_error([finding])
        dv = DeletionVector.from_positions([], referenced_data_file=self.locate(f.path))
        dv.findings.append(finding)
        return dv

    def deletion_vectors(self) -> dict[str, Any]:
        """Every live DV decoded: data file location → DeletionVector (each DV file read once when small)."""
        return {self.locate(f.path): self._read_dv(f) for f in self._live() if f.dv is not None}

    def deletions(self, data_file: Union[str, dict, FileAction, Any]):
        """Sorted deleted row positions of one data file (empty without a DV, or when its DV cannot be read)."""
        import numpy as np

        f = self._file_action(data_file, with_dv=True)
        if f.dv is None:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(self._read_dv(f).positions(), dtype=np.int64)

    def dv_files(self):
        """The DV files live DVs point into: location, DVs referenced, their cardinalities."""
        import pandas as pd

        rows: dict[str, dict[str, Any]] = {}
        for f in self._live():
            loc = self.dv_location(f.dv) if f.dv else None
            if loc is None:
                continue
            r = rows.setdefault(loc, {"dv_file": loc, "storage_type": f.dv.storage_type, "dvs": 0, "cardinality": 0})
            r["dvs"] += 1
            r["cardinality"] += f.dv.cardinality
        return pd.DataFrame.from_records(list(rows.values()), columns=["dv_file", "storage_type", "dvs", "cardinality"])

    def dv_file(self, location: str):
        """A DV file as a :class:`~puffin_explorer.delta.DeltaDVFile` (regions, hex, findings), its DVs named
        by the data files whose live descriptors point into it."""
        from .dvfile import DeltaDVFile

        loc = normalize(location) if ("/" in str(location)) else join(self.location, str(location))
        descs = [(f.path, f.dv) for f in self._live() if f.dv is not None and self.dv_location(f.dv) == loc]
        return DeltaDVFile(self._source(loc), descriptors=descs)

    # ---- checks ------------------------------------------------------------------------------------
    def check(self, check_files_exist: bool = True) -> FindingList:
        """Cross-check the log, the DV descriptors, the DV files and the data files (see ``delta.checks``)."""
        from .checks import check_table

        findings = check_table(self, check_files_exist=check_files_exist)
        self._raise_first_error(findings)
        return FindingList(findings)

    def health(self, now: Any = None, name: Optional[str] = None, list_files: bool = True):
        """The table doctor on this Delta table (a :class:`~puffin_explorer.health.TableHealth`):
        small files, DV share, tombstones past ``delta.deletedFileRetentionDuration``, checkpoints and log
        size, orphan files; fixes as ``OPTIMIZE`` / ``REORG TABLE … APPLY (PURGE)`` / ``VACUUM``."""
        from .health import delta_health

        return delta_health(self, now=now, name=name, list_files=list_files)

    def card_health(self, now: Any = None):
        """The doctor run a table card shows (no storage listing), or None above ``CARD_HEALTH_UP_TO`` data
        files; see :func:`~puffin_explorer.health.card_health`."""
        from ..health import card_health

        return card_health(self, self.totals()["data_files"], now, self._kept)

    def summary(self) -> str:
        t = self.totals()
        return (f"Delta table {self.name} at version {self.version}: {t['data_files']:,} data files, "
                f"{t['records']:,} rows, {t['dvs']:,} DVs deleting {t['deleted_rows']:,}, {t['live_rows']:,} live")

    def __repr__(self) -> str:
        return f"DeltaTable({self.location!r}, version={self.version})"


def _timestamp(ms: Any):
    """A commit's ``timestamp`` (milliseconds) as a UTC Timestamp; NaT when absent or out of pandas' range."""
    from ..iceberg.overview import timestamp_ms

    return timestamp_ms(ms)


__all__ = ["DeltaTable", "DV_COLUMNS"]
