"""One Iceberg table: its snapshots, files, delete files, statistics and Puffin files as DataFrames.

:class:`Table` opens a :class:`~.source.TableSource` and answers each question by handing that source
(and the entry index built over it) to the module that computes the answer; it keeps the answers
that are asked for more than once (a card's HTML and text forms) in :class:`TableResults`.  Every answer
follows one rule (docs/answers.md): a tabular one is a DataFrame whose ``attrs`` name the ``table`` and the
``snapshot_id`` it came from, and with ``arrow=True`` (where it grows with the table) a ``pyarrow.Table``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Union

from .._answers import tabular
from .._repr import RichRepr
from ..errors import InvalidFileError, PuffinError
from .. import health as _health_model
from ..health import DELETED_SHARE_THRESHOLD
from ..io import storage_options_from_pyiceberg
from ..regions import Finding, FindingList, Severity
from . import vanished
from .dvreads import PROGRESS_FROM_DVS, dv_reader
from .index import EntryIndex
from .index_build import build_index, deletes_index
from .metadata import TableMetadata
from .paths import PathMapper, TableIO, normalize, parent
from .source import TableSource, current_metadata_location, table_scope

if TYPE_CHECKING:  # pragma: no cover - the answers' types
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from ..format.dv import DeletionVector
    from ..format.puffin import PuffinFile
    from ..health import TableHealth
    from .commits import CommitDeletes, TableSnapshot
    from .overview import DeleteDebt


@dataclass
class TableResults:
    """The answers a :class:`Table` keeps, one slot each (everything read is kept by its source)."""

    timeline: Any = None
    summary: Optional[dict] = None
    health: Optional[tuple] = None  # (the arguments it was asked with, TableHealth)
    card_health: dict = field(default_factory=dict)  # health.card_health's undated run
    checks: dict[Optional[int], FindingList] = field(default_factory=dict)  # snapshot id asked -> full check()
    metadata_check: Optional[list] = None  # check(read_files=False) of the current snapshot


class Table(RichRepr):
    """An Iceberg table read from its metadata file (in a notebook: its card).

    Locations inside the metadata are mapped through ``relocate`` (old prefix ->
    new prefix); when the table's ``location`` differs from the folder its
    metadata was found in, that mapping is added automatically.
    """

    def __init__(self, source: TableSource) -> None:
        self.source = source
        self.results = TableResults()

    @property
    def metadata(self) -> TableMetadata:
        """The parsed metadata file."""
        return self.source.metadata

    @property
    def metadata_location(self) -> str:
        """Where the metadata file was read."""
        return self.source.metadata_location

    @property
    def io(self) -> TableIO:
        """The I/O layer every file is read through."""
        return self.source.io

    @property
    def mapper(self) -> PathMapper:
        """Path mapping (relocation)."""
        return self.source.mapper

    @property
    def findings(self) -> FindingList:
        """Findings of opening the table and of every answer since (each once)."""
        return FindingList(self.source.findings)

    @property
    def scope(self) -> Any:
        """Where the table may read: a ``ReadScope``, nothing else."""
        return self.source.scope

    @property
    def name(self) -> str:
        """The table's name (its identifier when opened through a catalog or warehouse)."""
        return self.source.name

    @name.setter
    def name(self, value: str) -> None:
        self.source.name = value

    # ---- opening -------------------------------------------------------------------------
    @classmethod
    def from_metadata(cls, metadata_location: str, storage_options: Optional[dict[str, Any]] = None,
                      relocate: Optional[Mapping[str, str]] = None, auto_relocate: bool = True, name: str = "",
                      io: Optional[TableIO] = None, strict: bool = False, allow: Iterable[str] = ()) -> "Table":
        """Open a table from one ``*.metadata.json`` (local path or fsspec URL); it reads its read scope alone: the
        storage opened (a local table's folder), ``relocate`` targets, ``allow`` prefixes. Damaged metadata is read
        as far as it goes (problems in ``findings``); ``strict=True`` raises the first error finding instead. No
        metadata file, or one that is not JSON, raises :class:`~puffin_explorer.errors.TableNotFoundError`."""
        table = cls(TableSource.open(metadata_location, io or TableIO(storage_options), relocate, auto_relocate, name,
                                     allow))
        if strict:
            table.raise_first_error()
        return table

    def raise_first_error(self) -> None:
        """Raise the first error finding of opening the table (what ``strict=True`` does)."""
        for f in self.findings:
            if f.severity == Severity.ERROR:
                raise InvalidFileError.from_finding(f)

    @classmethod
    def from_folder(cls, table_root: str, storage_options: Optional[dict[str, Any]] = None,
                    relocate: Optional[Mapping[str, str]] = None, auto_relocate: bool = True,
                    name: str = "", io: Optional[TableIO] = None, strict: bool = False,
                    allow: Iterable[str] = ()) -> "Table":
        """Open a Hadoop-style table folder (``<root>/metadata/version-hint.text``); as :meth:`from_metadata`."""
        (io := io or TableIO(storage_options)).limit_to(table_scope(table_root, normalize(table_root), relocate, allow))
        loc = current_metadata_location(io, normalize(table_root))
        return cls.from_metadata(loc, relocate=relocate, auto_relocate=auto_relocate, name=name, io=io,
                                 strict=strict, allow=allow)

    @classmethod
    def from_pyiceberg(cls, table: Any, relocate: Optional[Mapping[str, str]] = None,
                       storage_options: Optional[dict[str, Any]] = None, allow: Iterable[str] = ()) -> "Table":
        """Open the metadata file a pyiceberg ``Table`` points at, with its FileIO's S3 settings."""
        props = dict(getattr(getattr(table, "io", None), "properties", {}) or {})
        opts = storage_options if storage_options is not None else storage_options_from_pyiceberg(props)
        ident = getattr(table, "name", None)
        return cls.from_metadata(table.metadata_location, storage_options=opts, relocate=relocate,
                                 name=".".join(ident()) if callable(ident) else "", allow=allow)

    def refresh(self) -> "Table":
        """This table at the newest metadata version in its metadata folder, as a new :class:`Table`.

        A new object rather than this one changed in place: every cache of a Table (the entry index, the
        results, the vanished files) belongs to the one metadata file it opened, so a refreshed table cannot
        serve a stale entry, and answers already given keep naming the snapshot they came from."""
        loc = vanished.newest_metadata(self.io, parent(self.metadata_location)) or self.metadata_location
        return type(self).from_metadata(loc, relocate=self.mapper.prefixes, name=self.name, io=self.io)

    def locate(self, path: str) -> str:
        """Where a location written in the metadata is now."""
        return self.source.locate(path)

    def note(self, finding: Finding) -> None:
        """Add a finding met while answering a question (once): it shows with the opening findings."""
        self.source.note(finding)

    def _answer(self, frame: "pd.DataFrame", snapshot_id: Optional[int] = None, arrow: bool = False) -> Any:
        """A tabular answer of the snapshot asked for (the current one by default), named in ``attrs``."""
        sid = self.metadata.current_snapshot_id if snapshot_id is None else snapshot_id
        return tabular(frame, arrow, table=self.name, snapshot_id=sid)

    # ---- snapshots -----------------------------------------------------------------------
    def snapshot(self, snapshot_id: Optional[int] = None) -> "TableSnapshot":
        """One commit (current by default) as a :class:`~.commits.TableSnapshot`: the metadata
        snapshot's attributes plus ``parent``, ``manifest_files()``, ``files_added()``, ``files_removed()``."""
        from .commits import TableSnapshot

        return TableSnapshot.of(self.source, self.source.snapshot(snapshot_id))

    def commit_deletes(self, snapshot_id: Optional[int] = None) -> "CommitDeletes":
        """What one commit (current by default) deleted per data file: a :class:`~.commits.CommitDeletes`
        (``to_pandas()``, ``positions(data_file)``, ``chart()``). Reads only the two DVs compared per file."""
        from .commits import CommitDeletes

        return CommitDeletes(self.source, snapshot_id)

    def timeline(self) -> "pd.DataFrame":
        """Per commit, oldest first: operation, records, deleted and live rows (deletes that apply to live
        data files, as on the card and in :meth:`delete_debt`). Computed once per table (a past snapshot's
        index is not kept, and the card's HTML and text forms and the browser all ask)."""
        from .overview import timeline

        if self.results.timeline is None:
            self.results.timeline = timeline(self.source)
        return self._answer(self.results.timeline.copy())

    def delete_debt(self, threshold: float = DELETED_SHARE_THRESHOLD,
                    snapshot_id: Optional[int] = None) -> "DeleteDebt":
        """Deleted share per data file and per partition, compaction candidates (share above
        ``threshold``), live position-delete files: a :class:`~.overview.DeleteDebt`."""
        from .overview import DeleteDebt

        return DeleteDebt(self.source, snapshot_id, threshold)

    def health(self, now: Any = None, older_than: Any = None, catalog: str = "spark_catalog",
               name: Optional[str] = None, list_files: bool = True, cluster_by: Optional[str] = None) -> "TableHealth":
        """The table doctor: metrics and findings, each with the statements that fix it (a
        :class:`~.health.TableHealth`). ``now`` dates retention, ``older_than`` is the orphan cutoff
        (default 3 days before now), ``catalog`` / ``name`` go into the Spark statements, ``cluster_by``
        names the column whose clustering is measured (default: the sort order's first column)."""
        from .health import table_health

        def run():
            return table_health(self.source, now=now, older_than=older_than, catalog=catalog, name=name,
                                list_files=list_files, cluster_by=cluster_by)

        if now is None:  # dated by the clock: computed afresh
            return run()
        key = (str(now), str(older_than), catalog, name, list_files, cluster_by,
               len(vanished.snapshot_findings(self.source, self.metadata.current_snapshot_id)))  # a file gone: anew
        if self.results.health is None or self.results.health[0] != key:  # a card's two forms ask: kept once
            self.results.health = (key, run())
        return self.results.health[1]

    @property
    def card_health_up_to(self) -> int:
        """The most data files a card runs the doctor for (``health.ICEBERG_CARD_HEALTH_UP_TO``)."""
        return _health_model.ICEBERG_CARD_HEALTH_UP_TO

    def card_health(self, now: Any = None) -> Optional["TableHealth"]:
        """The doctor run a table card shows (no storage listing), or None above :attr:`card_health_up_to` data
        files (counted from the manifest list, as the warehouse card does); see :func:`.health.card_health`."""
        from ..health import card_health
        from .overview import listed_counts

        if self.metadata.current_snapshot_id is None:
            return None
        try:  # counted from the manifest list alone: the summary's exact deleted rows would build an index
            listed = listed_counts(self.source.manifest_records(self.metadata.current_snapshot_id))
        except PuffinError:
            listed = None
        data_files = (listed or self.summary())["data_files"]
        return card_health(self, int(data_files or 0), now, self.results.card_health, self.card_health_up_to)

    def summary(self) -> dict[str, Any]:
        """The warehouse-card row of this table (the metadata file, the current manifest list, and its manifests
        when it lists delete manifests: deleted rows are those of :func:`~.deletes.snapshot_rows`)."""
        from .overview import summary_row

        if self.results.summary is None:
            self.results.summary = summary_row(self.source)
        return dict(self.results.summary)

    def schema_fields(self, schema_id: Optional[int] = None) -> "pd.DataFrame":
        """Every field: id, name (nested ones dotted), type, required, v3 ``initial-default`` / ``write-default``."""
        from .overview import schema_frame

        return self._answer(schema_frame(self.source, schema_id))

    def partition_spec(self, spec_id: Optional[int] = None) -> "pd.DataFrame":
        """The partition spec (default one unless ``spec_id``): field id, name, transform, source column."""
        from .overview import partition_frame

        return self._answer(partition_frame(self.source, spec_id))

    def sort_order(self) -> "pd.DataFrame":
        """The default sort order: source column, transform, direction, null order."""
        from .overview import sort_order_frame

        return self._answer(sort_order_frame(self.source))

    @property
    def next_row_id(self) -> Optional[int]:
        """v3 row lineage: the table's ``next-row-id`` (None before v3)."""
        return self.metadata.next_row_id

    def snapshots(self) -> "pd.DataFrame":
        """One row per snapshot: id, parent, sequence number, time, operation and summary counts."""
        from .overview import snapshot_frame

        return self._answer(snapshot_frame(self.source))

    # ---- manifests -----------------------------------------------------------------------
    def manifest_list_findings(self, snapshot_id: Optional[int] = None) -> FindingList:
        """What reading a snapshot's manifest list found in its records (numbers out of range, paths with
        control characters); empty until :meth:`manifests` (or any answer of that snapshot) read it."""
        return FindingList(self.source.manifest_list_findings(snapshot_id))

    def manifests(self, snapshot_id: Optional[int] = None) -> "pd.DataFrame":
        """The manifest list of a snapshot as a DataFrame."""
        from .overview import manifest_frame

        return self._answer(manifest_frame(self.source, snapshot_id), snapshot_id)

    def index(self, snapshot_id: Optional[int] = None, content: Optional[str] = None, metrics: bool = False,
              progress: Optional[bool] = None) -> EntryIndex:
        """Every manifest entry of a snapshot (current by default) in columns: an :class:`~.index.EntryIndex`.

        ``content`` ``"data"`` or ``"deletes"`` reads only those manifests; ``metrics=True`` adds the
        per-column metrics.  Cached per snapshot; a damaged or missing manifest is a finding in
        ``index(...).findings`` (and in ``check()``), the entries before the damage are kept.
        """
        return build_index(self.source, snapshot_id, content=content, metrics=metrics, progress=progress)

    def entries(self, snapshot_id: Optional[int] = None, content: Optional[str] = None,
                include_deleted: bool = False, arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Manifest entries of a snapshot, a row each (inheritance applied; ``partition`` the record);
        ``content`` ``"data"`` or ``"deletes"`` reads only those manifests.  Built from :meth:`index` (the
        manifests are fetched concurrently, in batches); ``arrow=True``: the same columns as a ``pyarrow.Table``."""
        from .files import entry_frame

        ix = self.index(snapshot_id, content=content)
        return self._answer(entry_frame(ix, ix.mask(live=not include_deleted)), ix.snapshot_id, arrow)

    # ---- files ---------------------------------------------------------------------------
    def fields_by_id(self) -> dict[int, tuple[str, Any]]:
        """``{field_id: (name, type)}`` over every schema (current first) plus the reserved fields."""
        return self.source.fields_by_id()

    def files(self, snapshot_id: Optional[int] = None, include_deleted: bool = False,
              decode: bool = True, arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Every live data and delete file of a snapshot (current by default).

        ``kind`` is ``data``, ``dv``, ``position-deletes`` or ``equality-deletes``;
        ``location`` is where the file is now; bounds are typed values by column name.
        ``arrow=True``: the same columns as a ``pyarrow.Table``.
        """
        from .files import live_files

        return self._answer(live_files(self.source, snapshot_id, include_deleted, decode), snapshot_id, arrow)

    def data_files(self, snapshot_id: Optional[int] = None, decode: bool = True,
                   arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Live data files of a snapshot (``files()`` columns; ``arrow=True``: a ``pyarrow.Table``)."""
        from .files import file_frame

        ix = self.index(snapshot_id, content="data", metrics=True)
        return self._answer(file_frame(self.source, ix, ix.mask(), decode), ix.snapshot_id, arrow)

    def delete_files(self, snapshot_id: Optional[int] = None, decode: bool = True,
                     arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Live delete files (DVs, Parquet position deletes, equality deletes); reads only delete manifests
        (``arrow=True``: a ``pyarrow.Table``)."""
        from .files import file_frame

        ix = self.index(snapshot_id, content="deletes", metrics=decode)
        return self._answer(file_frame(self.source, ix, ix.mask(), decode), ix.snapshot_id, arrow)

    def files_of_kind(self, kinds: list[str], limit: Optional[int] = None,
                      snapshot_id: Optional[int] = None) -> "pd.DataFrame":
        """The first ``limit`` live files of these kinds (``files()`` columns, no metrics) — what a card shows."""
        from .files import file_frame

        ix = self.index(snapshot_id)
        return self._answer(file_frame(self.source, ix, ix.mask(kinds), decode=False, limit=limit), ix.snapshot_id)

    def file_counts(self, snapshot_id: Optional[int] = None) -> dict[str, int]:
        """Live files per kind (``data``, ``dv``, ``position-deletes``, ``equality-deletes``)."""
        from .files import kind_counts

        return kind_counts(self.index(snapshot_id))

    def dvs(self, snapshot_id: Optional[int] = None, arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Only the deletion vectors of a snapshot: one row per DV (where it is, what it covers), no column metrics
        (``arrow=True``: a ``pyarrow.Table``)."""
        from .files import dv_frame

        ix = deletes_index(self.source, snapshot_id)
        frame = vanished.mark(dv_frame(self.source, ix), vanished.snapshot_findings(self.source, ix.snapshot_id))
        return self._answer(frame, ix.snapshot_id, arrow)

    # ---- statistics and Puffin files -----------------------------------------------------
    def statistics_files(self) -> "pd.DataFrame":
        """Table and partition statistics files named by the metadata."""
        from .overview import statistics_frame

        return self._answer(statistics_frame(self.source))

    def puffin_files(self, snapshot_id: Optional[int] = None) -> "pd.DataFrame":
        """Every Puffin file a snapshot references, with its role (``deletion-vectors`` or ``statistics``);
        none for a table without a current snapshot."""
        from .files import puffin_frame

        if snapshot_id is None and self.metadata.current_snapshot_id is None:
            return self._answer(puffin_frame(self.source, None, None))
        sid = self.source.snapshot(snapshot_id).snapshot_id
        return self._answer(puffin_frame(self.source, deletes_index(self.source, sid), sid), sid)

    def puffin(self, path: str, strict: bool = False) -> "PuffinFile":
        """Open a Puffin file the metadata names (its footer only)."""
        from ..format.puffin import PuffinFile  # lazy: the metadata layer imports without the format layer

        return PuffinFile(self.locate(path), storage_options=self.io.storage_options, strict=strict)

    # ---- deletions -----------------------------------------------------------------------
    def read_dv(self, target: Union[str, dict, Any], snapshot_id: Optional[int] = None) -> "DeletionVector":
        """The DeletionVector of a data file (path) or of a DV delete-file row.

        Reads only ``content_size_in_bytes`` at ``content_offset`` of the Puffin
        file, as Iceberg's own reader does.  A loop over many DVs of one file reads
        ahead: the following DVs are fetched and decoded together, then handed out.
        """
        return dv_reader(self.source).read_dv(target, snapshot_id)

    def read_dvs(self, entries: Optional[Any] = None, snapshot_id: Optional[int] = None,
                 progress: Optional[bool] = None, arrow: bool = False) -> Union[list["DeletionVector"], "pa.Table"]:
        """The DeletionVectors of many DV entries (default: every live DV of the snapshot), in order.

        The ranges are planned per Puffin file, neighbours merged and fetched concurrently on
        object stores, so 10,000 DVs packed in one file cost a few requests, not 10,000.  Each vector keeps
        its decoded positions; its bytes are read again when a view asks for them.  ``progress``: a bar of DVs
        read (``True`` / ``False``; by default from ``PROGRESS_FROM_DVS`` DVs on in a terminal or
        notebook).  ``arrow=True``: one ``pyarrow.Table`` instead, a row per DV with its ``positions`` as a
        list (``iceberg.dvreads.positions_schema()``), no object per DV kept.
        """
        return dv_reader(self.source).read_dvs(entries, snapshot_id, progress, arrow)

    def read_parquet_columns(self, path: str, columns: Optional[list[str]] = None) -> "pa.Table":
        """Columns of a Parquet file the metadata names (a position-delete file), as a ``pyarrow.Table``."""
        return self.source.read_parquet(path, columns)

    def delete_file_contents(self, path: str, snapshot_id: Optional[int] = None,
                             arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """What a delete file says: ``(file_path, pos)`` rows for DVs and position deletes, the rows for equality
        deletes (``arrow=True``: a ``pyarrow.Table``)."""
        from .dvreads import delete_file_contents

        return self._answer(delete_file_contents(self.source, path, snapshot_id), snapshot_id, arrow)

    def deletions(self, data_file: str, snapshot_id: Optional[int] = None) -> "np.ndarray":
        """Sorted deleted row positions of one data file: its DV, else its Parquet position deletes.

        A data file with a DV ignores position deletes (the v3 spec: a DV holds every
        older position delete of its file).  Equality deletes are not resolved to positions.
        """
        from .dvreads import deletions

        return deletions(self.source, data_file, snapshot_id)

    def position_delete_counts(self, snapshot_id: Optional[int] = None) -> "pd.DataFrame":
        """Per data file its live Parquet position-delete files name: ``data_file`` (normalized path),
        ``position_deletes`` (rows they name) and ``position_delete_files``."""
        from .deletes import position_delete_frame, snapshot_position_delete_counts

        ix = deletes_index(self.source, snapshot_id)
        return self._answer(position_delete_frame(snapshot_position_delete_counts(self.source, ix)), ix.snapshot_id)

    def deleted_rows_per_file(self, snapshot_id: Optional[int] = None,
                              arrow: bool = False) -> Union["pd.DataFrame", "pa.Table"]:
        """Per data file: rows, deleted rows, share deleted and how many delete files touch it.

        DV counts come from the manifests; Parquet position-delete files are read
        to count per data file, and ignored for a data file that has a DV (counted
        as ``superseded_position_deletes``); equality deletes are counted as files only.
        ``arrow=True``: the same columns as a ``pyarrow.Table``.
        """
        from .deletes import deleted_rows_per_file

        ix = self.index(snapshot_id)
        return self._answer(deleted_rows_per_file(self.source, ix), ix.snapshot_id, arrow)

    # ---- checks --------------------------------------------------------------------------
    def check(self, snapshot_id: Optional[int] = None, check_files_exist: bool = True,
              progress: Optional[bool] = None, read_files: bool = True) -> FindingList:
        """Cross-check a snapshot's manifests, Puffin footers, DVs and statistics files (see ``checks``).

        Returns a :class:`FindingList` (a table in a notebook). ``progress`` is a callable told
        ``(done, total)`` as DVs are checked, or a bar: ``True`` / ``False``, and by default one from
        ``PROGRESS_FROM_DVS`` DVs on in a terminal or notebook. ``read_files=False`` checks the
        metadata alone (no Puffin byte, no file listing): what the table card shows until
        ``check()`` was run.
        """
        from ..progress import ProgressBar
        from .checks import check_snapshot

        if progress is None or isinstance(progress, bool):
            with ProgressBar(f"{self.name}: DVs checked", "DV", PROGRESS_FROM_DVS, progress) as bar:
                return self.check(snapshot_id, check_files_exist, bar, read_files)
        out = check_snapshot(self.source, snapshot_id, check_files_exist, progress, read_files)
        if read_files and check_files_exist:
            self.results.checks[snapshot_id] = out
        return out

    def card_findings(self) -> FindingList:
        """The findings a table card shows: opening findings, then the last full ``check()`` of the
        current snapshot if one ran, else the metadata-only check."""
        out = FindingList(self.findings)
        if self.metadata.current_snapshot_id is None:
            return out
        full = self.results.checks.get(None) or self.results.metadata_check
        if full is None:
            try:
                full = self.results.metadata_check = self.check(read_files=False)
            except PuffinError as exc:
                from ..regions import TableFinding

                full = [TableFinding(code="iceberg.manifest-unreadable", severity=Severity.ERROR,
                                     offset=getattr(exc, "offset", None), message=str(exc))]
        seen = set(out)
        out.extend(f for f in full if f not in seen)  # check() repeats the metadata's findings
        return out

    def __repr__(self) -> str:
        return (f"Table({self.name!r}, format-version={self.metadata.format_version}, "
                f"snapshots={len(self.metadata.snapshots)}, metadata={self.metadata_location!r})")
