"""One Iceberg table: its snapshots, files, delete files, statistics and Puffin files as DataFrames."""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Optional, Union

from .._repr import RichRepr
from .._text import middle, plural
from ..errors import (InvalidFileError, NotFoundError, NotInTableError, PuffinError, SourceError,
                      TableNotFoundError)
from ..health import DELETED_SHARE_THRESHOLD
from ..io import storage_options_from_pyiceberg
from ..regions import Finding, FindingList, Severity, cap_per_code
from . import manifests as mf, vanished
from .files import FILE_COLUMNS  # noqa: F401 - the files() columns, importable from here as before
from .index import EntryCache, EntryIndex, build_index, manifest_chunk
from .metadata import RESERVED_FIELDS, TableMetadata
from .paths import PathMapper, TableIO, basename, join, normalize, parent

_VERSION_FILE = re.compile(r"^v(\d+)(?:\.gz)?\.metadata\.json$")
_NUMBERED_FILE = re.compile(r"^(\d+)-[^/]*\.metadata\.json$")

_DV_SIZE_WITHOUT_PROBE = 16 << 20  # bigger DV ranges are checked against the real file size first
#: From this many DVs on, check() and read_dvs() in a terminal or notebook show a progress bar.
PROGRESS_FROM_DVS = 10_000
#: Index findings that check(read_files=True) leaves to the checks that open the files.
_SAID_BY_FILE_CHECKS = ("iceberg.entry-range-beyond-file",)


def current_metadata_location(io: TableIO, table_root: str) -> str:
    """The current metadata file of a Hadoop-style table folder.

    ``metadata/version-hint.text`` names version N (``vN.metadata.json``); without
    a usable hint the highest ``vN.metadata.json`` (or ``NNNNN-uuid.metadata.json``) wins.
    """
    meta_dir = join(table_root, "metadata")
    names = {name for name, kind, _ in io.listdir(meta_dir) if kind == "file"}
    if "version-hint.text" in names:
        try:
            hint = io.read_text(join(meta_dir, "version-hint.text")).strip()
            candidate = f"v{int(hint)}.metadata.json"
            if candidate in names:
                return join(meta_dir, candidate)
        except (SourceError, ValueError):
            pass
    best: Optional[tuple[int, str]] = None
    for name in names:
        m = _VERSION_FILE.match(name) or _NUMBERED_FILE.match(name)
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), name)
    if best is None:
        raise TableNotFoundError(f"no table at {table_root}: no *.metadata.json in {meta_dir}", location=table_root)
    return join(meta_dir, best[1])


class Table(RichRepr):
    """An Iceberg table read from its metadata file (in a notebook: its card).

    Locations inside the metadata are mapped through ``relocate`` (old prefix ->
    new prefix); when the table's ``location`` differs from the folder its
    metadata was found in, that mapping is added automatically.
    """

    def __init__(self, metadata: TableMetadata, metadata_location: str, io: TableIO,
                 mapper: PathMapper, name: str = "") -> None:
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.mapper = mapper
        self.name = name or basename(metadata.location or parent(parent(metadata_location)))
        self.findings: list[Finding] = list(metadata.findings)
        self._noted: set[Finding] = set(self.findings)  # findings are frozen: note() adds each once by a set lookup
        self._cache: dict[str, Any] = {}
        self.entry_cache = EntryCache()  # decoded manifests and entry indexes (see index.py)
        self._dv_ready: dict[tuple[str, int, int], Any] = {}  # DVs read_dv decoded ahead, until asked for
        self._dv_calls: dict[str, int] = {}  # read_dv calls per Puffin file

    # ---- opening -------------------------------------------------------------------------
    @classmethod
    def from_metadata(cls, metadata_location: str, storage_options: Optional[dict[str, Any]] = None,
                      relocate: Optional[Mapping[str, str]] = None, auto_relocate: bool = True,
                      name: str = "", io: Optional[TableIO] = None, strict: bool = False) -> "Table":
        """Open a table from one ``*.metadata.json`` location (local path or fsspec URL).

        Damaged metadata is read as far as it goes (problems in ``findings``); ``strict=True``
        raises the first error finding instead. No metadata file, or one that is not JSON,
        raises :class:`~puffin_explorer.errors.TableNotFoundError`.
        """
        io = io or TableIO(storage_options)
        location = normalize(str(metadata_location))
        try:
            data = io.read(location)
        except NotFoundError as exc:
            raise TableNotFoundError(str(exc), exc.offset, exc.code, location=location) from exc
        metadata = TableMetadata.from_bytes(data, location)
        mapper = PathMapper(relocate)
        table = cls(metadata, location, io, mapper, name)
        if auto_relocate:
            table._detect_relocation()
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
                    name: str = "", io: Optional[TableIO] = None, strict: bool = False) -> "Table":
        """Open a Hadoop-style table folder (``<root>/metadata/version-hint.text``); ``strict`` as in
        :meth:`from_metadata`."""
        io = io or TableIO(storage_options)
        loc = current_metadata_location(io, normalize(table_root))
        return cls.from_metadata(loc, relocate=relocate, auto_relocate=auto_relocate, name=name, io=io,
                                 strict=strict)

    @classmethod
    def from_pyiceberg(cls, table: Any, relocate: Optional[Mapping[str, str]] = None,
                       storage_options: Optional[dict[str, Any]] = None) -> "Table":
        """Open the metadata file a pyiceberg ``Table`` points at, with its FileIO's S3 settings."""
        props = dict(getattr(getattr(table, "io", None), "properties", {}) or {})
        opts = storage_options if storage_options is not None else storage_options_from_pyiceberg(props)
        ident = getattr(table, "name", None)
        name = ".".join(ident()) if callable(ident) else ""
        return cls.from_metadata(table.metadata_location, storage_options=opts, relocate=relocate, name=name)

    def refresh(self) -> "Table":
        """This table at the newest metadata version in its metadata folder, as a new :class:`Table`.

        A new object rather than this one changed in place: every cache of a Table (the entry index, the
        results, the vanished files) belongs to the one metadata file it opened, so a refreshed table cannot
        serve a stale entry, and answers already given keep naming the snapshot they came from."""
        from .vanished import newest_metadata

        loc = newest_metadata(self.io, parent(self.metadata_location)) or self.metadata_location
        return type(self).from_metadata(loc, relocate=self.mapper.prefixes, name=self.name, io=self.io)

    def _detect_relocation(self) -> None:
        meta_dir = parent(self.metadata_location)
        if basename(meta_dir) != "metadata" or not self.metadata.location:
            return
        actual_root = normalize(parent(meta_dir))
        written_root = normalize(self.metadata.location)
        if self.mapper.map(written_root) == actual_root:
            return
        self.mapper.add(written_root, actual_root)
        self.note(Finding(
            "iceberg.table-relocated", Severity.INFO, None,
            f"table location {middle(written_root)} differs from where its metadata was found "
            f"({middle(actual_root)}); reading {middle(written_root)}/… from {middle(actual_root)}/…",
            hint="pass relocate={old: new} to map other prefixes (e.g. data written elsewhere)"))

    def locate(self, path: str) -> str:
        """Where a location written in the metadata is now."""
        return self.mapper.map(path)

    # ---- snapshots -----------------------------------------------------------------------
    def snapshot(self, snapshot_id: Optional[int] = None):
        """One commit (current by default) as a :class:`~.commits.TableSnapshot`: the metadata
        snapshot's attributes plus ``parent``, ``manifest_files()``, ``files_added()``, ``files_removed()``."""
        from .commits import TableSnapshot

        snap = self.metadata.snapshot(snapshot_id)
        if snap is None:
            which = "current snapshot" if snapshot_id is None else f"snapshot {snapshot_id}"
            raise NotInTableError(f"{self.name}: no {which}")
        return TableSnapshot.of(self, snap)

    def commit_deletes(self, snapshot_id: Optional[int] = None):
        """What one commit (current by default) deleted per data file: a :class:`~.commits.CommitDeletes`
        (``to_pandas()``, ``positions(data_file)``, ``chart()``). Reads only the two DVs compared per file."""
        from .commits import CommitDeletes

        return CommitDeletes(self, snapshot_id)

    def timeline(self):
        """Per commit, oldest first: operation, records, deleted and live rows (deletes that apply to live
        data files, as on the card and in :meth:`delete_debt`). Computed once per table (a past snapshot's
        index is not kept, and the card's HTML and text forms and the browser all ask)."""
        from .overview import timeline

        if "timeline" not in self._cache:
            self._cache["timeline"] = timeline(self)
        return self._cache["timeline"].copy()

    def delete_debt(self, threshold: float = DELETED_SHARE_THRESHOLD, snapshot_id: Optional[int] = None):
        """Deleted share per data file and per partition, compaction candidates (share above
        ``threshold``), live position-delete files: a :class:`~.overview.DeleteDebt`."""
        from .overview import DeleteDebt

        return DeleteDebt(self, snapshot_id, threshold)

    def health(self, now: Any = None, older_than: Any = None, catalog: str = "spark_catalog",
               name: Optional[str] = None, list_files: bool = True, cluster_by: Optional[str] = None):
        """The table doctor: metrics and findings, each with the statements that fix it (a
        :class:`~.health.TableHealth`). ``now`` dates retention, ``older_than`` is the orphan cutoff
        (default 3 days before now), ``catalog`` / ``name`` go into the Spark statements, ``cluster_by``
        names the column whose clustering is measured (default: the sort order's first column)."""
        from .health import table_health

        if now is None:  # dated by the clock: computed afresh
            return table_health(self, now=now, older_than=older_than, catalog=catalog, name=name,
                                list_files=list_files, cluster_by=cluster_by)
        key = (str(now), str(older_than), catalog, name, list_files, cluster_by,
               len(vanished.snapshot_findings(self, self.metadata.current_snapshot_id)))  # a file gone since: anew
        last = self._cache.get("health")
        if last is None or last[0] != key:  # a card's HTML and text forms ask for the same one: kept once
            last = self._cache["health"] = (key, table_health(self, now=now, older_than=older_than, catalog=catalog,
                                                              name=name, list_files=list_files, cluster_by=cluster_by))
        return last[1]

    def card_health(self, now: Any = None):
        """The doctor run a table card shows (no storage listing), or None above ``CARD_HEALTH_UP_TO``
        data files (counted from the manifest list, as the warehouse card does); see
        :func:`~puffin_explorer.health.card_health`."""
        from ..health import card_health
        from .overview import listed_counts

        if self.metadata.current_snapshot_id is None:
            return None
        try:  # counted from the manifest list alone: the summary's exact deleted rows would build an index
            listed = listed_counts(self.manifest_records(self.metadata.current_snapshot_id))
        except PuffinError:
            listed = None
        data_files = (listed or self.summary())["data_files"]
        return card_health(self, int(data_files or 0), now, self._cache)

    def summary(self) -> dict[str, Any]:
        """The warehouse-card row of this table (the metadata file, the current manifest list, and its manifests
        when it lists delete manifests: deleted rows are those of :func:`~.deletes.snapshot_rows`)."""
        from .overview import summary_row

        if "summary" not in self._cache:
            self._cache["summary"] = summary_row(self)
        return dict(self._cache["summary"])

    def schema_fields(self, schema_id: Optional[int] = None):
        """Every field: id, name (nested ones dotted), type, required, v3 ``initial-default`` / ``write-default``."""
        from .overview import schema_frame

        return schema_frame(self, schema_id)

    def partition_spec(self, spec_id: Optional[int] = None):
        """The partition spec (default one unless ``spec_id``): field id, name, transform, source column."""
        from .overview import partition_frame

        return partition_frame(self, spec_id)

    def sort_order(self):
        """The default sort order: source column, transform, direction, null order."""
        from .overview import sort_order_frame

        return sort_order_frame(self)

    @property
    def next_row_id(self) -> Optional[int]:
        """v3 row lineage: the table's ``next-row-id`` (None before v3)."""
        return self.metadata.next_row_id

    def snapshots(self):
        """One row per snapshot: id, parent, sequence number, time, operation and summary counts."""
        from .overview import snapshot_frame

        return snapshot_frame(self)

    # ---- manifests -----------------------------------------------------------------------
    def manifest_records(self, snapshot_id: Optional[int] = None) -> list[dict[str, Any]]:
        """The manifest list of a snapshot (records as dicts)."""
        snap = self.snapshot(snapshot_id)
        key = f"ml:{snap.snapshot_id}"
        if key not in self._cache:
            if snap.manifest_list:
                loc = self.locate(snap.manifest_list)
                found: list[Finding] = []
                self._cache[key] = mf.read_manifest_list(self.io.read(loc), loc, found)
                found = cap_per_code(found)  # a list of many damaged records names each problem so often
                self._cache[f"ml-findings:{snap.snapshot_id}"] = found
                for f in found:
                    self.note(f)
            else:
                self._cache[key] = mf.manifest_list_from_paths(snap.manifests, snap.snapshot_id)
        return self._cache[key]

    def manifest_list_findings(self, snapshot_id: Optional[int] = None) -> list[Finding]:
        """What reading a snapshot's manifest list found in its records (numbers out of range, paths with
        control characters); empty until :meth:`manifest_records` read it."""
        return list(self._cache.get(f"ml-findings:{self.snapshot(snapshot_id).snapshot_id}", []))

    def manifests(self, snapshot_id: Optional[int] = None):
        """The manifest list of a snapshot as a DataFrame."""
        import pandas as pd

        rows = []
        for m in self.manifest_records(snapshot_id):
            r = {k: v for k, v in m.items() if k != "partitions"}
            r["content"] = "deletes" if m.get("content") == 1 else "data"
            r["location"] = self.locate(m["manifest_path"])
            rows.append(r)
        return pd.DataFrame.from_records(rows)

    def index(self, snapshot_id: Optional[int] = None, content: Optional[str] = None, metrics: bool = False,
              progress: Optional[bool] = None) -> EntryIndex:
        """Every manifest entry of a snapshot (current by default) in columns: an :class:`~.index.EntryIndex`.

        ``content`` ``"data"`` or ``"deletes"`` reads only those manifests; ``metrics=True`` adds the
        per-column metrics.  Cached per snapshot; a damaged or missing manifest is a finding in
        ``index(...).findings`` (and in ``check()``), the entries before the damage are kept.
        """
        return build_index(self, snapshot_id, content=content, metrics=metrics, progress=progress)

    def _built_index(self, snapshot_id: Optional[int], content: str = "deletes") -> Optional[EntryIndex]:
        """An index of the snapshot's ``content`` manifests that is already built, else None."""
        if snapshot_id is None and self.metadata.current_snapshot_id is None:
            return None
        sid = self.snapshot(snapshot_id).snapshot_id
        for key in ((sid, content, False), (sid, None, False), (sid, content, True), (sid, None, True)):
            got = self.entry_cache.indexes.get(key)
            if got is not None:
                return got
        return None

    def _deletes_index(self, snapshot_id: Optional[int]) -> EntryIndex:
        """The index that answers questions about delete files: the full one if built, else the delete manifests'."""
        return self._built_index(snapshot_id, "deletes") or self.index(snapshot_id, content="deletes")

    def manifest_entries(self, manifest: dict[str, Any], data: Optional[bytes] = None) -> list[dict[str, Any]]:
        """Entries of one manifest (all statuses), inheritance applied."""
        chunk, _ = manifest_chunk(self, manifest, data=data)
        return EntryIndex(None, chunk, [manifest], self.entry_cache.partitions).dicts_of(chunk)

    def entries(self, snapshot_id: Optional[int] = None, content: Optional[str] = None,
                include_deleted: bool = False) -> list[dict[str, Any]]:
        """Manifest entries of a snapshot as dicts; ``content`` ``"data"`` or ``"deletes"`` reads only those
        manifests.  Built from :meth:`index` (the manifests are fetched concurrently, in batches)."""
        ix = self.index(snapshot_id, content=content)
        return ix.to_dicts(ix.mask(live=not include_deleted))

    # ---- files ---------------------------------------------------------------------------
    def fields_by_id(self) -> dict[int, tuple[str, Any]]:
        """``{field_id: (name, type)}`` over every schema (current first) plus the reserved fields."""
        key = "fields"
        if key not in self._cache:
            fields: dict[int, tuple[str, Any]] = {}
            for sid in sorted(self.metadata.schemas, key=lambda s: s != self.metadata.current_schema_id):
                for f in self.metadata.fields(sid):
                    fields.setdefault(f.id, (f.name, f.type))
            for fid, (name, type_name) in RESERVED_FIELDS.items():
                fields.setdefault(fid, (name, type_name))
            self._cache[key] = fields
        return self._cache[key]

    _fields_by_id = fields_by_id

    def files(self, snapshot_id: Optional[int] = None, include_deleted: bool = False, decode: bool = True):
        """Every live data and delete file of a snapshot (current by default).

        ``kind`` is ``data``, ``dv``, ``position-deletes`` or ``equality-deletes``;
        ``location`` is where the file is now; bounds are typed values by column name.
        """
        from .files import file_frame

        ix = self.index(snapshot_id, metrics=True)
        return file_frame(self, ix, ix.mask(live=not include_deleted), decode)

    def data_files(self, snapshot_id: Optional[int] = None, decode: bool = True):
        """Live data files of a snapshot."""
        from .files import file_frame

        ix = self.index(snapshot_id, content="data", metrics=True)
        return file_frame(self, ix, ix.mask(), decode)

    def delete_files(self, snapshot_id: Optional[int] = None, decode: bool = True):
        """Live delete files (DVs, Parquet position deletes, equality deletes); reads only delete manifests."""
        from .files import file_frame

        ix = self.index(snapshot_id, content="deletes", metrics=decode)
        return file_frame(self, ix, ix.mask(), decode)

    def files_of_kind(self, kinds: list[str], limit: Optional[int] = None, snapshot_id: Optional[int] = None):
        """The first ``limit`` live files of these kinds (``files()`` columns, no metrics) — what a card shows."""
        from .files import file_frame

        ix = self.index(snapshot_id)
        return file_frame(self, ix, ix.mask(kinds), decode=False, limit=limit)

    def file_counts(self, snapshot_id: Optional[int] = None) -> dict[str, int]:
        """Live files per kind (``data``, ``dv``, ``position-deletes``, ``equality-deletes``)."""
        import pyarrow as pa

        ix = self.index(snapshot_id)
        counts = ix.rows(ix.mask()).column("kind").value_counts()
        got = dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist())) \
            if isinstance(counts, pa.StructArray) else {}
        return {k: int(v) for k, v in got.items()}

    def dvs(self, snapshot_id: Optional[int] = None):
        """Only the deletion vectors of a snapshot: one row per DV (where it is, what it covers), no column metrics."""
        from .files import dv_frame

        ix = self._deletes_index(snapshot_id)
        return vanished.mark(dv_frame(self, ix), vanished.snapshot_findings(self, ix.snapshot_id))

    # ---- statistics and Puffin files -----------------------------------------------------
    def statistics_files(self):
        """Table and partition statistics files named by the metadata."""
        import pandas as pd

        fields = self._fields_by_id()
        rows = []
        for s in self.metadata.statistics:
            rows.append({
                "kind": s.kind,
                "snapshot_id": s.snapshot_id,
                "statistics_path": s.path,
                "location": self.locate(s.path),
                "file_size_in_bytes": s.file_size_in_bytes,
                "file_footer_size_in_bytes": s.file_footer_size_in_bytes,
                "blob_count": len(s.blob_metadata),
                "blob_types": sorted({b["type"] for b in s.blob_metadata}),
                "columns": [_column_names(fields, b["fields"]) for b in s.blob_metadata],
                "ndv": [b["properties"].get("ndv") for b in s.blob_metadata],
            })
        df = pd.DataFrame.from_records(rows, columns=[
            "kind", "snapshot_id", "statistics_path", "location", "file_size_in_bytes",
            "file_footer_size_in_bytes", "blob_count", "blob_types", "columns", "ndv"])
        from .overview import int_columns

        int_columns(df, rows, ("snapshot_id", "file_size_in_bytes", "file_footer_size_in_bytes"))
        return df

    def puffin_files(self, snapshot_id: Optional[int] = None):
        """Every Puffin file a snapshot references, with its role (``deletion-vectors`` or ``statistics``);
        none for a table without a current snapshot."""
        import pandas as pd

        from .files import puffin_frame

        cols = ["role", "file_path", "location", "file_size_in_bytes", "blobs", "record_count",
                "snapshot_id", "sequence_number"]
        if snapshot_id is None and self.metadata.current_snapshot_id is None:
            return pd.DataFrame(columns=cols)
        snap = self.snapshot(snapshot_id)
        return puffin_frame(self, self._deletes_index(snap.snapshot_id), snap.snapshot_id)

    def note(self, finding: Finding) -> None:
        """Add a finding met while answering a question (once): it shows with the opening findings."""
        if finding not in self._noted:
            self._noted.add(finding)
            self.findings.append(finding)

    def puffin(self, path: str, strict: bool = False):
        """Open a Puffin file the metadata names (its footer only)."""
        from .. import PuffinFile  # noqa: lazy so the metadata layer imports without the format layer

        return PuffinFile(self.locate(path), storage_options=self.io.storage_options, strict=strict)

    # ---- deletions -----------------------------------------------------------------------
    def _dv_entry(self, target: Union[str, dict, Any], snapshot_id: Optional[int]) -> dict[str, Any]:
        if isinstance(target, dict):
            return target
        if hasattr(target, "to_dict"):  # a DataFrame row
            return dict(target.to_dict())
        ix = self._deletes_index(snapshot_id)
        pos = self._dv_position(ix, target)
        if pos is None:
            raise NotInTableError(f"{self.name}: no deletion vector for {target}")
        return ix.row(int(pos))

    def _dv_position(self, ix: EntryIndex, target: Any) -> Optional[int]:
        """Index position of the first live DV of a data file, by its normalized path or where it is now."""
        import numpy as np

        from .deletes import normalized
        from .files import located

        key = ("dv-by-data-file", id(ix))
        got = self._cache.get(key)
        if got is None or got[0] is not ix:
            rows = np.flatnonzero(ix.mask(["dv"]))
            refs = ix.table.column("referenced_data_file").take(rows)
            valid = refs.is_valid().to_numpy(zero_copy_only=False)
            rows, refs = rows[valid], refs.filter(refs.is_valid())
            lookup: dict[str, int] = {}
            for k, r in zip(normalized(refs).to_pylist(), rows.tolist()):
                lookup.setdefault(k, r)
            got = self._cache[key] = (ix, lookup, rows, refs, None)
        wanted = normalize(str(target))
        pos = got[1].get(wanted)
        if pos is None:  # a data file named where it is now (relocated): look up by location, once built
            if got[4] is None:
                by_location: dict[str, int] = {}
                for k, r in zip(located(self, got[3]).tolist(), got[2].tolist()):
                    by_location.setdefault(k, r)
                got = self._cache[key] = got[:4] + (by_location,)
            pos = got[4].get(wanted)
        return pos

    def _located(self, path: str) -> str:
        """:meth:`locate`, remembered: the many DVs of one Puffin file share its path."""
        cache = self._cache.setdefault("located", {})
        loc = cache.get(path)
        if loc is None:
            loc = cache[path] = self.locate(path)
        return loc

    #: After this many ``read_dv`` calls on one Puffin file, the next DVs of that file (in file
    #: order, within ``DV_READAHEAD`` bytes) are decoded together and handed out as asked.
    READ_DV_BATCH_AFTER = 8
    #: How many read_dvs calls are running (read_dv reads no batch ahead while one is).
    _reading_dvs = 0

    def read_dv(self, target: Union[str, dict, Any], snapshot_id: Optional[int] = None):
        """The DeletionVector of a data file (path) or of a DV delete-file row.

        Reads only ``content_size_in_bytes`` at ``content_offset`` of the Puffin
        file, as Iceberg's own reader does.  A loop over many DVs of one file reads
        ahead: the following DVs are fetched and decoded together, then handed out.
        """
        e = target if isinstance(target, dict) else self._dv_entry(target, snapshot_id)
        offset, length = e.get("content_offset"), e.get("content_size_in_bytes")
        if offset is None or length is None:
            raise InvalidFileError(f"{e.get('file_path')}: DV entry without content_offset/content_size_in_bytes",
                                   None, "dv-missing-range")
        path, offset, length = e["file_path"], int(offset), int(length)
        ready = self._dv_ready
        if ready:
            dv = ready.pop((path, offset, length), None)
            if dv is not None and dv._referenced == e.get("referenced_data_file"):
                return dv
        loc = self._located(path)
        calls = self._dv_calls[loc] = self._dv_calls.get(loc, 0) + 1
        # no read-ahead from inside read_dvs: its odd ranges come here one at a time, and a batch of them
        # would come back to read_dvs, and so on without end
        if calls >= self.READ_DV_BATCH_AFTER and 0 <= offset and 0 <= length <= _DV_SIZE_WITHOUT_PROBE \
                and not self._reading_dvs:
            batch = self._dvs_after(loc, offset, snapshot_id)
            if batch and int(batch[0]["content_offset"]) == offset and \
                    int(batch[0]["content_size_in_bytes"]) == length and \
                    batch[0].get("referenced_data_file") == e.get("referenced_data_file"):
                try:
                    dvs = self.read_dvs(batch, progress=False)
                except (PuffinError, OSError):
                    dvs = None  # a damaged neighbour: this DV is read alone below, each other one when asked
                if dvs is not None:
                    for k in [k for k in ready if k[0] == path]:  # what the last batch of this file left unasked
                        del ready[k]
                    for b, d in zip(batch[1:], dvs[1:]):
                        ready[(b["file_path"], int(b["content_offset"]), int(b["content_size_in_bytes"]))] = d
                    return dvs[0]
        from .. import read_dv

        claimed = e.get("file_size_in_bytes")
        if length > _DV_SIZE_WITHOUT_PROBE or (claimed is not None and offset + length > int(claimed)):
            real = self.io.size(loc)  # never allocate for a size read out of a manifest before checking it
            if real is None:
                raise vanished.dv_error(self, NotFoundError(f"no such file: {loc}", location=loc), snapshot_id)
            if offset < 0 or offset + length > real:
                raise InvalidFileError(f"{e['file_path']}: DV range [{offset:,}, {offset + length:,}) from the "
                                       f"manifest is beyond the end of the file ({plural(real, 'byte')})", offset,
                                       "dv-range-beyond-file")
        try:
            return read_dv(self._source(loc, offset + length, claimed), offset=offset, length=length,
                           referenced_data_file=e.get("referenced_data_file"))
        except NotFoundError as exc:
            raise vanished.dv_error(self, exc, snapshot_id)

    def _dvs_after(self, loc: str, offset: int, snapshot_id: Optional[int]) -> list[dict[str, Any]]:
        """The snapshot's DV entries of the Puffin file ``loc`` from ``offset`` on, in file order,
        within ``DV_READAHEAD`` bytes (at least the one at ``offset``).  Only from an index already
        built: reading ahead never reads manifests the caller has not read."""
        import numpy as np

        from .files import located

        ix = self._built_index(snapshot_id)
        if ix is None:
            return []
        key = ("dvs-in-file-order", id(ix))
        got = self._cache.get(key)
        if got is None or got[0] is not ix:
            t = ix.table
            rows = np.flatnonzero(ix.mask(["dv"]) & t.column("content_offset").is_valid().to_numpy(
                zero_copy_only=False) & t.column("content_size_in_bytes").is_valid().to_numpy(zero_copy_only=False))
            locs = located(self, t.column("file_path").take(rows))
            offsets = ix.ints("content_offset")[rows]
            order = np.lexsort((offsets, locs.astype(str)))
            rows, locs, offsets = rows[order], locs[order], offsets[order]
            spans: dict[str, tuple[int, int]] = {}
            for i, l in enumerate(locs.tolist()):
                a = spans.get(l)
                spans[l] = (i, i + 1) if a is None else (a[0], i + 1)
            got = self._cache[key] = (ix, rows, offsets, spans)
        _, rows, offsets, spans = got
        a, b = spans.get(loc, (0, 0))
        i = a + int(np.searchsorted(offsets[a:b], offset, side="left"))
        j = a + int(np.searchsorted(offsets[a:b], offset + self.DV_READAHEAD, side="left"))
        j = min(j, i + 4096)
        return ix.dicts_of(ix.table.take(rows[i:j])) if j > i else []

    def read_dvs(self, entries: Optional[Any] = None, snapshot_id: Optional[int] = None,
                 progress: Optional[bool] = None) -> list:
        """The DeletionVectors of many DV entries (default: every live DV of the snapshot), in order.

        The ranges are planned per Puffin file, neighbours merged and fetched concurrently on
        object stores, so 10,000 DVs packed in one file cost a few requests, not 10,000.  The
        positions of small vectors are decoded together in one pass.  ``progress``: a bar of DVs
        read (``True`` / ``False``; by default from ``PROGRESS_FROM_DVS`` DVs on in a terminal or
        notebook).
        """
        from ..progress import ProgressBar

        with ProgressBar(f"{self.name}: DVs read", "DV", PROGRESS_FROM_DVS, progress) as bar:
            self._reading_dvs += 1
            try:
                return self._read_dvs(entries, snapshot_id, bar)
            except NotFoundError as exc:  # a Puffin file gone since the snapshot was written
                raise vanished.dv_error(self, exc, snapshot_id)
            finally:
                self._reading_dvs -= 1

    def _read_dvs(self, entries: Optional[Any], snapshot_id: Optional[int], bar: Callable[[int, int], None]) -> list:
        import numpy as np
        import pyarrow as pa

        from ..format.dv import DeletionVector, decode_many

        names = ("file_path", "content_offset", "content_size_in_bytes", "referenced_data_file", "file_size_in_bytes")
        if entries is None:  # the index's columns as lists: no dict per DV
            ix = self._deletes_index(snapshot_id)
            at = np.flatnonzero(ix.mask(["dv"]))
            t = ix.table.select(list(names)).take(pa.array(at))
            paths, offsets, sizes, refs, claims = (t.column(n).to_pylist() for n in names)
            del t

            def entry(i: int) -> dict[str, Any]:
                return ix.row(int(at[i]))
        else:
            if hasattr(entries, "to_dict") and hasattr(entries, "columns"):  # a DataFrame such as dvs()
                entries = entries.to_dict("records")
            rows = [self._dv_entry(e, snapshot_id) for e in entries]
            paths, offsets, sizes, refs, claims = ([e.get(n) for e in rows] for n in names)

            def entry(i: int) -> dict[str, Any]:
                return rows[i]
        total = len(paths)
        # per Puffin file: (row indexes, ranges, largest end, largest claimed file size, any odd range)
        by_file: dict[str, list] = {}
        for i, (path, o, n, claimed) in enumerate(zip(paths, offsets, sizes, claims)):
            if o is None or n is None:
                raise InvalidFileError(f"{path}: DV entry without content_offset/content_size_in_bytes", None,
                                       "dv-missing-range")
            o, n = int(o), int(n)
            plan = by_file.get(path)
            if plan is None:
                plan = by_file[path] = [[], [], 0, None, False]
            plan[0].append(i)
            plan[1].append((o, n))
            plan[2] = max(plan[2], o + n)
            if o < 0 or n < 0 or n > _DV_SIZE_WITHOUT_PROBE:
                plan[4] = True
            if claimed is not None and (plan[3] is None or int(claimed) > plan[3]):
                plan[3] = int(claimed)
        del offsets, sizes, claims
        out: list = [None] * total
        done = 0
        for path, (idx, ranges, end, claimed, odd) in list(by_file.items()):
            del by_file[path]  # each file's plan is dropped once read
            bar(done, total)
            done += len(idx)
            loc = self._located(path)
            if not odd and claimed is not None and end > claimed:
                real = self.io.size(loc)
                odd = real is None or end > real
            if odd:  # odd ranges: one at a time, with read_dv's checks
                for i in idx:
                    out[i] = self.read_dv(entry(i))
                continue
            src = self._source(loc, end)
            for k, (i, (o, n), data) in enumerate(zip(idx, ranges, src.read_ranges(ranges, keep=False))):
                if k & 4095 == 4095:  # many DVs in one file move the bar too
                    bar(done - len(idx) + k, total)
                if len(data) != n:
                    raise SourceError(f"{loc} ends before the DV at [{o:,}, {o + n:,})", o, location=loc)
                out[i] = DeletionVector(data, o, None, "file", refs[i])
        bar(done, total)
        decode_many(out)  # small vectors' positions in one numpy pass rather than one call each
        return out

    #: Reading DVs one by one from the same Puffin file, the second and later reads fetch this much ahead.
    DV_READAHEAD = 1 << 20

    def _source(self, loc: str, min_size: int, claimed_size: Optional[Any] = None):
        """One counted range reader per file for the table's lifetime (no size probe: ranges come
        from manifests and a short read is an error).  The first read is exact; later ones read
        ahead, so a loop over the DVs of one file costs a request per MiB, not per DV."""
        sources = self._cache.setdefault("sources", {})
        src = sources.get(loc)
        if src is None or src.size < min_size:
            size = max(min_size, src.size if src else 0, int(claimed_size or 0))
            src = sources[loc] = self.io.source(loc, size=size)
            src.readahead = self.DV_READAHEAD
        return src

    def _read_parquet(self, path: str, columns: Optional[list[str]] = None):
        import pyarrow as pa
        import pyarrow.parquet as pq

        loc = self.locate(path)
        data = self.io.read(loc)
        try:
            return pq.read_table(pa.BufferReader(data), columns=columns)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InvalidFileError(f"{loc}: not a readable Parquet position-delete file ({plural(len(data), 'byte')}): "
                                   f"{exc}", None, "iceberg.position-delete-unreadable") from exc

    def read_parquet_columns(self, path: str, columns: Optional[list[str]] = None):
        """Columns of a Parquet file the metadata names (a position-delete file), as a ``pyarrow.Table``."""
        return self._read_parquet(path, columns)

    def delete_file_contents(self, path: str, snapshot_id: Optional[int] = None):
        """What a delete file says: ``(file_path, pos)`` rows for DVs and position deletes, the rows for equality deletes."""
        import numpy as np
        import pandas as pd
        import pyarrow as pa
        import pyarrow.compute as pc

        from .deletes import normalized
        from .files import located

        ix = self._deletes_index(snapshot_id)
        live = ix.rows(ix.mask(deletes=True))
        wanted = normalize(path)
        paths = live.column("file_path")
        hit = pc.equal(normalized(paths), wanted).to_numpy(zero_copy_only=False)
        if not hit.any():
            hit = located(self, paths) == wanted
        entries = ix.dicts_of(live.filter(pa.array(hit)))
        if not entries:
            raise NotInTableError(f"{self.name}: {path} is not a live delete file of the snapshot")
        kind = entries[0]["kind"]
        if kind == "dv":
            frames = []
            for e in sorted(entries, key=lambda x: x.get("content_offset") or 0):
                pos = np.asarray(self.read_dv(e).positions(), dtype=np.int64)
                frames.append(pd.DataFrame({"file_path": e["referenced_data_file"], "pos": pos}))
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["file_path", "pos"])
        return self._read_parquet(entries[0]["file_path"]).to_pandas()

    def deletions(self, data_file: str, snapshot_id: Optional[int] = None):
        """Sorted deleted row positions of one data file: its DV, else its Parquet position deletes.

        A data file with a DV ignores position deletes (the v3 spec: a DV holds every
        older position delete of its file).  Equality deletes are not resolved to positions.
        """
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from .deletes import normalized
        from .files import located

        wanted = normalize(data_file)
        ix = self._deletes_index(snapshot_id)
        live = ix.rows(ix.mask(["dv", "position-deletes"], deletes=True))
        refs = live.column("referenced_data_file")
        ours = pc.fill_null(pc.equal(normalized(refs), wanted), False).to_numpy(zero_copy_only=False)
        if not ours.any() and live.num_rows:
            ours = located(self, refs) == wanted
        is_dv = pc.equal(live.column("kind"), "dv").to_numpy(zero_copy_only=False)
        def once(rows):  # an entry listed more than once is read once
            seen: set = set()
            return [e for e in ix.dicts_of(rows) if (e["file_path"], e.get("content_offset")) not in seen
                    and not seen.add((e["file_path"], e.get("content_offset")))]

        parts = [np.asarray(self.read_dv(e).positions(), dtype=np.int64)
                 for e in once(live.filter(pa.array(ours & is_dv)))]
        if not parts:  # position deletes count only for a data file without a DV
            named = ours | refs.is_null().to_numpy(zero_copy_only=False)
            for e in once(live.filter(pa.array(named & ~is_dv))):
                t = self._read_parquet(e["file_path"], columns=["file_path", "pos"])
                mask = pc.equal(normalized(t.column("file_path")), wanted).to_numpy(zero_copy_only=False)
                if not mask.any():
                    mask = located(self, t.column("file_path")) == wanted
                parts.append(t.column("pos").to_numpy().astype(np.int64)[mask])
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(parts))

    def position_delete_counts(self, snapshot_id: Optional[int] = None,
                               index: Optional[EntryIndex] = None) -> dict[str, dict[str, int]]:
        """Per data file (normalized path): rows its live Parquet position-delete files name, and how many
        files (from ``index`` when given: an index of that snapshot the caller holds)."""
        from .deletes import position_delete_counts

        key = f"pd:{self.snapshot(snapshot_id).snapshot_id}"
        if key not in self._cache:
            self._cache[key] = position_delete_counts(self, index or self._deletes_index(snapshot_id))
        return self._cache[key]

    def deleted_rows_per_file(self, snapshot_id: Optional[int] = None):
        """Per data file: rows, deleted rows, share deleted and how many delete files touch it.

        DV counts come from the manifests; Parquet position-delete files are read
        to count per data file, and ignored for a data file that has a DV (counted
        as ``superseded_position_deletes``); equality deletes are counted as files only.
        """
        from .deletes import deleted_rows_per_file

        return deleted_rows_per_file(self, self.index(snapshot_id))

    # ---- checks --------------------------------------------------------------------------
    def check(self, snapshot_id: Optional[int] = None, check_files_exist: bool = True,
              progress=None, read_files: bool = True) -> FindingList:
        """Cross-check a snapshot's manifests, Puffin footers, DVs and statistics files (see ``checks``).

        Returns a :class:`FindingList` (a table in a notebook). ``progress`` is a callable told
        ``(done, total)`` as DVs are checked, or a bar: ``True`` / ``False``, and by default one from
        ``PROGRESS_FROM_DVS`` DVs on in a terminal or notebook. ``read_files=False`` checks the
        metadata alone (no Puffin byte, no file listing): what the table card shows until
        ``check()`` was run.
        """
        from ..progress import ProgressBar

        if progress is None or isinstance(progress, bool):
            with ProgressBar(f"{self.name}: DVs checked", "DV", PROGRESS_FROM_DVS, progress) as bar:
                return self.check(snapshot_id, check_files_exist, bar, read_files)
        from .checks import check_table

        try:  # what reading the manifests found (damage, impossible values), then the cross-checks
            found = self.index(snapshot_id).findings
            if read_files:  # a DV range past its file: the checks that read the file say what is there instead
                found = [f for f in found if f.code not in _SAID_BY_FILE_CHECKS]
            out = FindingList(found)
        except PuffinError:
            out = FindingList()  # the manifest list itself: check_table reports it
        out.extend(check_table(self, snapshot_id, check_files_exist=check_files_exist and read_files,
                               progress=progress, read_files=read_files))
        sid = self.metadata.current_snapshot_id if snapshot_id is None else snapshot_id
        out.extend(dict.fromkeys(f for f in vanished.snapshot_findings(self, sid) if f not in out))
        if read_files and check_files_exist:
            self._cache[f"check:{snapshot_id}"] = out
        return out

    def card_findings(self) -> FindingList:
        """The findings a table card shows: opening findings, then the last full ``check()`` of the
        current snapshot if one ran, else the metadata-only check."""
        out = FindingList(self.findings)
        if self.metadata.current_snapshot_id is None:
            return out
        full = self._cache.get("check:None") or self._cache.get("check-metadata")
        if full is None:
            try:
                full = self._cache["check-metadata"] = self.check(read_files=False)
            except PuffinError as exc:
                from .checks import TableFinding

                full = [TableFinding(code="iceberg.manifest-unreadable", severity=Severity.ERROR,
                                     offset=getattr(exc, "offset", None), message=str(exc))]
        seen = set(out)
        out.extend(f for f in full if f not in seen)  # check() repeats the metadata's findings
        return out

    def __repr__(self) -> str:
        return (f"Table({self.name!r}, format-version={self.metadata.format_version}, "
                f"snapshots={len(self.metadata.snapshots)}, metadata={self.metadata_location!r})")


#: Field names a statistics blob shows in ``statistics_files()`` before the rest are counted.
COLUMNS_SHOWN = 100


def _column_names(fields: dict, ids: list) -> str:
    """The comma-joined names of a blob's field ids (``#id`` when no schema has it); a damaged blob naming
    a million ids shows the first :data:`COLUMNS_SHOWN` and how many more."""
    names = ",".join(fields.get(f, (f"#{f}",))[0] for f in ids[:COLUMNS_SHOWN])
    return names if len(ids) <= COLUMNS_SHOWN else f"{names},… ({len(ids) - COLUMNS_SHOWN:,} more)"
