"""One Delta Lake table: its versions, data files and deletion vectors as DataFrames, decoded DVs, cross-checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Union
from urllib.parse import unquote

from .._answers import tabular
from .._repr import RichRepr
from .._text import plural
from ..coverage import UNKNOWN
from ..errors import NotInTableError
from ..health import DELETED_SHARE_THRESHOLD
from ..iceberg.paths import PathMapper, TableIO, normalize
from ..io.scope import ReadScope
from ..regions import FindingList
from . import files as _files
from .descriptor import DVDescriptor
from .files import DV_COLUMNS
from .log import DeltaLog, FileAction, State
from .snapshot import DeltaSnapshot

if TYPE_CHECKING:  # pragma: no cover - the answers' types
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from ..coverage import Coverage
    from ..format.dv import DeletionVector
    from ..health import TableHealth
    from .dvfile import DeltaDVFile


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
    Only the table's read scope is read: its storage (the same bucket, or host and port), or for a local
    table its folder, plus the ``relocate`` targets and the ``allow`` prefixes.
    """

    def __init__(self, location: str, version: Optional[int] = None,
                 storage_options: Optional[dict[str, Any]] = None,
                 relocate: Optional[Mapping[str, str]] = None, strict: bool = False,
                 allow: Iterable[str] = ()) -> None:
        self.io = TableIO(storage_options)
        self.location = normalize(str(location))
        self.io.limit_to(ReadScope.around(self.location, self.location, [allow] if isinstance(allow, str) else allow,
                                          relocate))
        self.mapper = PathMapper(relocate)
        self.strict = strict
        self.log = DeltaLog(self.io, self.location)
        state: State = self.log.state(version)
        self._snap = DeltaSnapshot(self.io, self.location, self.log, state, self.mapper, strict)
        self.version: int = self._snap.version
        self.name = self._snap.name
        self._kept: dict[str, Any] = {}
        self._snap.raise_first_error(self.log.findings)

    # ---- what the log says -------------------------------------------------------------------
    @property
    def protocol(self) -> dict[str, Any]:
        """The ``protocol`` action (minReaderVersion, minWriterVersion, readerFeatures, writerFeatures)."""
        return self._snap.protocol

    @property
    def reader_features(self) -> list[str]:
        """The protocol's ``readerFeatures`` (empty when it lists none)."""
        return self._snap.reader_features

    @property
    def metadata(self) -> dict[str, Any]:
        """The ``metaData`` action (schemaString, partitionColumns, configuration, ...)."""
        return self._snap.metadata

    @property
    def findings(self) -> FindingList:
        """Problems met while reading the log (``check()`` adds the cross-checks)."""
        return self._snap.findings

    @property
    def scope(self) -> ReadScope:
        """Where the table may read (a :class:`~puffin_explorer.io.scope.ReadScope`): nothing else."""
        return self.io.scope

    def locate(self, path: str) -> str:
        """Where a path written in the log is now (relative paths are under the table folder)."""
        return self._snap.locate(path)

    def live_files(self) -> list[FileAction]:
        """The live ``add`` actions at this version (path, numRecords, DV descriptor), sorted by path."""
        return list(self._snap.live())

    def dv_location(self, dv: DVDescriptor) -> Optional[str]:
        """The DV file of a descriptor (None for inline DVs or an undecodable path)."""
        return self._snap.dv_location(dv)

    # ---- DataFrames ----------------------------------------------------------------------------
    def _answer(self, frame: "pd.DataFrame", arrow: bool = False) -> Any:
        """A tabular answer of this version, named in ``attrs`` (``table``, ``version``)."""
        return tabular(frame, arrow, table=self.name, version=self.version)

    def files(self, arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Live data files: path, location, size, modification time, numRecords, partition values, DV summary
        (``arrow=True``: the same columns as a ``pyarrow.Table``)."""
        return self._answer(_files.files_frame(self._snap), arrow)

    def dvs(self, arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """One row per live DV: data file, storage_type, path_or_inline_dv, offset, size_in_bytes,
        cardinality, the resolved DV file (None inline), unique_id, the data file's numRecords
        (``arrow=True``: a ``pyarrow.Table``)."""
        return self._answer(_files.dvs_frame(self._snap), arrow)

    def deleted_rows_per_file(self, arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Per data file: rows, deleted rows (the DV's cardinality), live rows, share deleted, DV storage
        (``arrow=True``: a ``pyarrow.Table``)."""
        return self._answer(_files.deleted_rows_per_file(self._snap), arrow)

    def compaction_candidates(self, min_share: float = DELETED_SHARE_THRESHOLD,
                              arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Data files whose DV deletes at least ``min_share`` of their rows, most deleted first
        (``arrow=True``: a ``pyarrow.Table``)."""
        return self._answer(_files.compaction_candidates(self._snap, min_share), arrow)

    def totals(self) -> dict[str, Optional[int]]:
        """Data files, records (numRecords), deleted rows (DV cardinalities), live rows, DVs at this version; None
        each when a commit the version needs was missing (see :attr:`coverage`)."""
        return _files.totals(self._snap)

    @property
    def coverage(self) -> "Coverage":
        """Which counts of this version are whole (:class:`~puffin_explorer.coverage.Coverage`)."""
        return self._snap.coverage

    def versions(self) -> "pd.DataFrame":
        """The version timeline: per commit its operation, files and DVs added/removed, and the table after it
        (data files, records, deleted rows, live rows)."""
        return self._answer(_files.versions_frame(self.log, self.version))

    # ---- DVs -------------------------------------------------------------------------------------
    def _file_action(self, target: Union[str, dict, FileAction, Any], with_dv: bool = False) -> FileAction:
        """The live file ``target`` names: a path, a ``files()`` / ``dvs()`` row (its ``unique_id`` picks one of
        two live entries of one path), or a :class:`FileAction` of ``live_files()``."""
        if isinstance(target, FileAction):
            for f in self._snap.live():
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
        matches = [f for f in self._snap.live()
                   if f.path == wanted or unquote(f.path) == wanted or self.locate(f.path) == normalize(wanted)]
        if unique_id is not None:
            matches = [f for f in matches if (f.dv.unique_id if f.dv else "") == unique_id] or matches
        if with_dv:
            matches = [f for f in matches if f.dv is not None] or matches
        if not matches:
            raise NotInTableError(f"{self.name}: {target} is not a live data file at version {self.version}")
        return matches[0]

    def read_dv(self, target: Union[str, dict, FileAction, Any]) -> "DeletionVector":
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
        return self._snap.read_dv(f)

    def vanished_message(self, loc: str, cardinality: Any) -> str:
        """What a ``table.file-vanished`` finding says of a DV file of this version that is gone (VACUUM): the
        file, the version, that its positions are not read, and the newer log version when the log moved on."""
        return self._snap.vanished_message(loc, cardinality)

    def refresh(self) -> "DeltaTable":
        """This table at the newest version of its log, as a new :class:`DeltaTable`: a new object rather than
        this one changed in place, so nothing cached for this version (files, DV files, the doctor) can be
        served for another, and this object keeps answering for the version it pinned."""
        return DeltaTable(self.location, storage_options=self.io.storage_options or None,
                          relocate=self.mapper.prefixes, strict=self.strict)

    def deletion_vectors(self) -> dict[str, Any]:
        """Every live DV decoded: data file location → DeletionVector (each DV file read once when small)."""
        return {self.locate(f.path): self._snap.read_dv(f) for f in self._snap.live() if f.dv is not None}

    def deletions(self, data_file: Union[str, dict, FileAction, Any]) -> "np.ndarray":
        """Sorted deleted row positions of one data file (empty without a DV, or when its DV cannot be read)."""
        import numpy as np

        f = self._file_action(data_file, with_dv=True)
        if f.dv is None:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(self._snap.read_dv(f).positions(), dtype=np.int64)

    def dv_files(self) -> "pd.DataFrame":
        """The DV files live DVs point into: location, DVs referenced, their cardinalities."""
        return self._answer(_files.dv_files_frame(self._snap))

    def dv_file(self, location: str) -> "DeltaDVFile":
        """A DV file as a :class:`~puffin_explorer.delta.DeltaDVFile` (regions, hex, findings), its DVs named
        by the data files whose live descriptors point into it."""
        return self._snap.dv_file(location)

    # ---- checks ------------------------------------------------------------------------------------
    def check(self, check_files_exist: bool = True) -> FindingList:
        """Cross-check the log, the DV descriptors, the DV files and the data files (see ``delta.checks``)."""
        from .checks import check_table

        findings = check_table(self._snap, check_files_exist=check_files_exist)
        self._snap.raise_first_error(findings)
        return FindingList(findings)

    def health(self, now: Any = None, name: Optional[str] = None, list_files: bool = True) -> "TableHealth":
        """The table doctor on this Delta table (a :class:`~puffin_explorer.health.TableHealth`):
        small files, DV share, tombstones past ``delta.deletedFileRetentionDuration``, checkpoints and log
        size, orphan files; fixes as ``OPTIMIZE`` / ``REORG TABLE … APPLY (PURGE)`` / ``VACUUM``."""
        from .health import delta_health

        return delta_health(self._snap, now=now, name=name, list_files=list_files)

    @property
    def card_health_up_to(self) -> int:
        """The most data files the table card runs the doctor on (``health.CARD_HEALTH_UP_TO``)."""
        from .. import health

        return health.CARD_HEALTH_UP_TO

    def card_health(self, now: Any = None) -> Optional["TableHealth"]:
        """The doctor run a table card shows (no storage listing), or None above :attr:`card_health_up_to` data
        files; see :func:`~puffin_explorer.health.card_health`."""
        from ..health import card_health

        return card_health(self, len(self._snap.live()), now, self._kept, self.card_health_up_to)

    def summary(self) -> str:
        """One line: the table, its version, data files, rows, DVs and the rows they delete."""
        t = self.totals()
        if t["records"] is None:
            return (f"Delta table {self.name} at version {self.version}: data files, rows and DVs {UNKNOWN}: a commit "
                    "the version needs is missing")
        return (f"Delta table {self.name} at version {self.version}: {plural(t['data_files'], 'data file')}, "
                f"{plural(t['records'], 'row')}, {plural(t['dvs'], 'DV')} deleting {t['deleted_rows']:,}, "
                f"{t['live_rows']:,} live")

    def __repr__(self) -> str:
        return f"DeltaTable({self.location!r}, version={self.version})"


__all__ = ["DeltaTable", "DV_COLUMNS"]
