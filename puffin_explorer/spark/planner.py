"""Plan a table's Spark work on the driver from this project's own metadata reader.

A table given as a :class:`~puffin_explorer.Table` (or anything that opens one: a
``*.metadata.json`` location, a table folder, a pyiceberg table) is planned here:
its manifests are read on the driver (the live DVs with ``content_offset`` /
``content_size_in_bytes``, the data files with their record counts, the
position-delete and statistics files), every location is mapped through the
table's ``relocate`` prefixes, and the plan goes to Spark as one Arrow-backed
DataFrame.  No Iceberg jar is involved.

Small plans are not worth a Spark stage: below :data:`DRIVER_MAX_DVS` DVs,
:data:`DRIVER_MAX_BYTES` DV bytes and :data:`DRIVER_MAX_POSITIONS` positions the
executor functions run right here and Spark gets their result as Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from ..errors import PuffinError, UnsupportedTableError
from ..iceberg.entry_cache import of_content
from ..iceberg.index_build import build_index
from .arrow import executor_location, to_spark
from .executors import steady_imports

#: Schemas (Spark DDL) of the plans sent to the executors.
DV_PLAN_SCHEMA = ("file_path string, location string, referenced_data_file string, content_offset bigint, "
                  "content_size_in_bytes bigint, record_count bigint, inline_dv binary")
FILES_PLAN_SCHEMA = "puffin_file string, location string, file_kind string, file_size bigint"
DATA_FILES_SCHEMA = "data_file string, location string, rows bigint, data_file_size bigint"
DELETE_FILES_SCHEMA = "file_path string, location string"

#: The driver decodes when a plan is below all three limits (picked with
#: benchmarks/bench_spark_dv_positions.py: below them a Spark stage with Python
#: workers costs more than decoding here and handing Spark the result; on 2 cores
#: the driver wins 2.2-3.5x at 10 and 100 DVs and 1.1x at 1,000, the executors 1.7-2.5x
#: at 10,000 DVs of 468 positions each).
DRIVER_MAX_DVS = 2_000
DRIVER_MAX_BYTES = 64 << 20
DRIVER_MAX_POSITIONS = 2_000_000
#: Puffin files (footer + every blob) the driver opens itself for an inventory.
DRIVER_MAX_FILES = 64

MODES = ("auto", "driver", "executors")
#: From this many manifests in a snapshot on, ``index_on="auto"`` builds the entry index on the executors
#: (:mod:`.index`, manifests spread over a few tasks per core) so the driver never holds every entry; below it the driver
#: builds it (no Spark stage to start, and the index is cached on the table).
EXECUTORS_INDEX_FROM_MANIFESTS = 500


@dataclass
class TablePlan:
    """What the driver read from a table's metadata, ready to send to Spark.

    ``table`` is the Iceberg table's :class:`~puffin_explorer.iceberg.source.TableSource` (a
    :class:`~puffin_explorer.DeltaTable` in a :class:`DeltaPlan`); every ``location`` column is where
    a file is now (relocated, absolute), every ``file_path`` / ``data_file`` column is the
    path as the metadata writes it (as Iceberg's metadata tables show it).
    """

    table: Any
    storage_options: dict = field(default_factory=dict)
    snapshot_id: Optional[int] = None
    index_on: str = "auto"
    _located: dict = field(default_factory=dict, repr=False)

    # ---- where files are -----------------------------------------------------------------
    def locate(self, path: str) -> str:
        """Where a path from the metadata is now, spelled for this package's reader."""
        loc = self._located.get(path)
        if loc is None:
            loc = self._located[path] = executor_location(self.table.locate(path))
        return loc

    @property
    def relocated(self) -> bool:
        """True when any location differs from what the metadata says (Iceberg itself cannot read it)."""
        return bool(self.table.mapper)

    # ---- the plans -------------------------------------------------------------------------
    def _deletes(self) -> list[dict]:
        if self.table.metadata.snapshot(self.snapshot_id) is None:
            return []  # a table without snapshots has no files
        ix = build_index(self.table, self.snapshot_id, content="deletes")
        return ix.to_dicts(ix.mask(live=True))

    def _index(self, content: str):
        """The snapshot's entry index of ``content`` manifests (None for a table without snapshots)."""
        if self.table.metadata.snapshot(self.snapshot_id) is None:
            return None
        return build_index(self.table, self.snapshot_id, content=content)

    def _locations(self, column) -> list:
        """:meth:`locate` once per distinct value of an Arrow string column."""
        enc = column.combine_chunks().dictionary_encode() if hasattr(column, "combine_chunks") else \
            column.dictionary_encode()
        where = [None if v is None else self.locate(v) for v in enc.dictionary.to_pylist()]
        return [None if i is None else where[i] for i in enc.indices.to_pylist()]

    def dvs(self, data_files: Optional[Iterable[str]] = None):
        """Arrow table (:data:`DV_PLAN_SCHEMA`): one row per live DV, sorted by Puffin file and offset."""
        import pyarrow as pa
        import pyarrow.compute as pc

        ix = self._index("deletes")
        rows = ix.rows(ix.mask(["dv"])) if ix is not None else None
        if rows is None or not rows.num_rows:
            rows = None
        if rows is not None and data_files is not None:
            wanted = pa.array(sorted(set(data_files)), pa.string())
            refs = rows.column("referenced_data_file")
            hit = pc.fill_null(pc.is_in(refs, value_set=wanted), False)
            located_hit = pc.fill_null(pc.is_in(pa.array(self._locations(refs), pa.string()), value_set=wanted),
                                       False)
            rows = rows.filter(pc.or_(hit, located_hit))
        if rows is not None:
            order = pc.sort_indices(pa.table({"p": rows.column("file_path"),
                                              "o": pc.fill_null(rows.column("content_offset"), 0)}),
                                    sort_keys=[("p", "ascending"), ("o", "ascending")])
            rows = rows.take(order)
        n = rows.num_rows if rows is not None else 0
        col = (lambda name: rows.column(name)) if rows is not None else (lambda name: pa.array([], pa.string()))
        return pa.table({
            "file_path": pa.array(col("file_path").to_pylist() if n else [], pa.string()),
            "location": pa.array(self._locations(col("file_path")) if n else [], pa.string()),
            "referenced_data_file": pa.array(col("referenced_data_file").to_pylist() if n else [], pa.string()),
            "content_offset": pa.array(col("content_offset").to_pylist() if n else [], pa.int64()),
            "content_size_in_bytes": pa.array(col("content_size_in_bytes").to_pylist() if n else [], pa.int64()),
            "record_count": pa.array(col("record_count").to_pylist() if n else [], pa.int64()),
            "inline_dv": pa.nulls(n, pa.binary()),
        })

    # ---- the index on the executors ---------------------------------------------------------
    def index_where(self, content: Optional[str] = None) -> str:
        """``"driver"`` or ``"executors"``: where the entry index of ``content`` manifests is built."""
        if self.index_on not in MODES:
            raise ValueError(f"index_on must be one of {', '.join(MODES)}, not {self.index_on!r}")
        if self.index_on != "auto":
            return self.index_on
        if self.table.metadata.snapshot(self.snapshot_id) is None:
            return "driver"
        try:
            listed = self.table.manifest_records(self.snapshot_id)
        except PuffinError:  # no readable manifest list: the driver's index says why, as a finding
            return "driver"
        return "executors" if len(of_content(listed, content)) >= EXECUTORS_INDEX_FROM_MANIFESTS else "driver"

    def executors_index(self, spark, content: Optional[str] = None):
        """The snapshot's :class:`~.index.ExecutorIndex` of ``content`` manifests (None without snapshots)."""
        from .index import build_index_on_executors

        if self.table.metadata.snapshot(self.snapshot_id) is None:
            return None
        return build_index_on_executors(spark, self.table, self.snapshot_id, content,
                                        storage_options=self.storage_options)

    def dvs_frame(self, spark, data_files: Optional[Iterable[str]] = None):
        """Spark DataFrame (:data:`DV_PLAN_SCHEMA`) of the live DVs, from the index built on the executors."""
        from pyspark.sql import functions as F

        ix = self.executors_index(spark, "deletes")
        if ix is None:
            return to_spark(spark, self.dvs(data_files), DV_PLAN_SCHEMA)
        live = ix.entries.where((F.col("kind") == "dv") & F.coalesce(F.col("status") != 2, F.lit(True)))
        wanted = None if data_files is None else sorted(set(data_files))
        return live.select("file_path", "referenced_data_file", "content_offset", "content_size_in_bytes",
                           "record_count").mapInArrow(_locate_rows(self.table.mapper, wanted), DV_PLAN_SCHEMA)

    def data_files_frame(self, spark):
        """Spark DataFrame ``(data_file, rows, data_file_size)`` of the live data files, from the index
        built on the executors."""
        from pyspark.sql import functions as F

        ix = self.executors_index(spark, "data")
        if ix is None:
            return to_spark(spark, self.data_files().drop(["location"]),
                            "data_file string, rows bigint, data_file_size bigint")
        live = ix.entries.where((F.col("kind") == "data") & F.coalesce(F.col("status") != 2, F.lit(True)))
        return live.select(F.col("file_path").alias("data_file"), F.col("record_count").alias("rows"),
                           F.col("file_size_in_bytes").alias("data_file_size"))

    def deletions(self, data_file: str):
        """Sorted deleted positions of one data file (as the metadata writes its path)."""
        from ..iceberg.dvreads import deletions

        return deletions(self.table, data_file, self.snapshot_id)

    #: Iceberg's own reader could compare with this plan (not a Delta table)
    iceberg = True

    def data_files(self):
        """Arrow table (:data:`DATA_FILES_SCHEMA`): the live data files with their record counts and sizes."""
        import pyarrow as pa
        import pyarrow.compute as pc

        ix = self._index("data")
        rows = ix.rows(ix.mask(["data"])) if ix is not None else None
        if rows is None or not rows.num_rows:
            return pa.table({"data_file": pa.array([], pa.string()), "location": pa.array([], pa.string()),
                             "rows": pa.array([], pa.int64()), "data_file_size": pa.array([], pa.int64())})
        rows = rows.take(pc.sort_indices(rows.column("file_path")))
        return pa.table({
            "data_file": rows.column("file_path").combine_chunks(),
            "location": pa.array(self._locations(rows.column("file_path")), pa.string()),
            "rows": rows.column("record_count").combine_chunks(),
            "data_file_size": rows.column("file_size_in_bytes").combine_chunks(),
        })

    def position_delete_files(self):
        """Arrow table (:data:`DELETE_FILES_SCHEMA`): live Parquet/ORC/Avro position-delete files."""
        import pyarrow as pa

        paths = sorted({e["file_path"] for e in self._deletes() if e["kind"] == "position-deletes"})
        return pa.table({"file_path": pa.array(paths, pa.string()),
                         "location": pa.array([self.locate(p) for p in paths], pa.string())})

    def puffin_files(self, all_snapshots: bool = False):
        """Arrow table (:data:`FILES_PLAN_SCHEMA`): DV Puffin files (live, or of every snapshot) and statistics files."""
        import pyarrow as pa

        files: dict[str, tuple[str, Optional[int]]] = {}
        if all_snapshots:
            snapshots = [s.snapshot_id for s in self.table.metadata.snapshots]
        else:
            current = self.table.metadata.snapshot(self.snapshot_id)
            snapshots = [current.snapshot_id] if current is not None else []
        for sid in snapshots:
            ix = build_index(self.table, sid, content="deletes")
            for e in ix.to_dicts(ix.mask(live=True)):
                if e["kind"] == "dv":
                    files.setdefault(e["file_path"], ("deletes", e.get("file_size_in_bytes")))
        for s in self.table.metadata.statistics:
            if s.path:
                files.setdefault(s.path, ("statistics", s.file_size_in_bytes))
        order = sorted(files, key=lambda p: (files[p][0], p))
        return pa.table({
            "puffin_file": pa.array(order, pa.string()),
            "location": pa.array([self.locate(p) for p in order], pa.string()),
            "file_kind": pa.array([files[p][0] for p in order], pa.string()),
            "file_size": pa.array([files[p][1] for p in order], pa.int64()),
        })

    def resolve_data_file(self, data_file: str) -> tuple[str, str]:
        """(path as written, location now) of the live data file that is ``data_file`` or ends with it."""
        data = self.data_files()
        paths = data.column("data_file").to_pylist()
        locations = data.column("location").to_pylist()
        for p, loc in zip(paths, locations):
            if data_file in (p, loc):
                return p, loc
        matches = [(p, loc) for p, loc in zip(paths, locations) if p.endswith(data_file) or loc.endswith(data_file)]
        if len(matches) != 1:
            what = "no data file" if not matches else "more than one data file"
            raise ValueError(f"{what} of {self.table.name} matches {data_file!r}")
        return matches[0]

    # ---- driver or executors ---------------------------------------------------------------
    def choose(self, dvs, mode: str = "auto") -> str:
        """``"driver"`` or ``"executors"`` for decoding the DVs of ``dvs`` (a :meth:`dvs` table)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if mode != "auto":
            return mode
        return "driver" if small(dvs) else "executors"

    def describe(self, mode: str = "auto") -> dict[str, Any]:
        """Sizes of the plan and where the DVs will be decoded (what the benchmark prints)."""
        dvs = self.dvs()
        from ..iceberg.duckdb_manifests import decoder_label

        return {"table": self.table.name, "dvs": dvs.num_rows, "dv_bytes": _total(dvs, "content_size_in_bytes"),
                "positions": _total(dvs, "record_count"), "relocated": self.relocated,
                "decode_on": self.choose(dvs, mode), "index_on": self.index_where("deletes"),
                "manifest_decoder": decoder_label()}


class DeltaPlan(TablePlan):
    """A Delta table's plan: the live DVs of its log (``u`` and ``p`` DV files read by range like Puffin
    blobs, ``i`` inline DVs carried in the plan), its data files with ``numRecords``; no position-delete or
    Puffin files.  ``data_file`` columns hold paths as the log writes them (relative to the table)."""

    iceberg = False

    def index_where(self, content: Optional[str] = None) -> str:
        """Always ``"driver"``: a Delta log has no manifests to spread over tasks."""
        return "driver"

    def deletions(self, data_file: str):
        return self.table.deletions(data_file)

    def dvs(self, data_files: Optional[Iterable[str]] = None):
        import pyarrow as pa

        from ..delta.descriptor import frame

        rows = []
        wanted = set(data_files) if data_files is not None else None
        for f in self.table.live_files():
            d = f.dv
            if d is None:
                continue
            if wanted is not None and f.path not in wanted and self.locate(f.path) not in wanted:
                continue
            if d.storage_type == "i":
                try:
                    inline = frame(d.inline_bytes())
                except Exception as exc:  # an undecodable inline DV: an empty frame fails with its reason
                    inline = str(exc).encode()[:0]
                rows.append((f"inline DV of {f.path}", None, f.path, 0, len(inline), d.cardinality, inline))
                continue
            where = self.table.dv_location(d)
            rows.append((where or d.path_or_inline_dv, executor_location(where) if where else None, f.path,
                         d.read_offset, d.read_length, d.cardinality, None))
        rows.sort(key=lambda r: (r[0], r[3]))
        names = ["file_path", "location", "referenced_data_file", "content_offset", "content_size_in_bytes",
                 "record_count", "inline_dv"]
        types = [pa.string(), pa.string(), pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.binary()]
        return pa.table({n: pa.array([r[i] for r in rows], t) for i, (n, t) in enumerate(zip(names, types))})

    def data_files(self):
        import pyarrow as pa

        live = self.table.live_files()
        return pa.table({
            "data_file": pa.array([f.path for f in live], pa.string()),
            "location": pa.array([self.locate(f.path) for f in live], pa.string()),
            "rows": pa.array([f.num_records for f in live], pa.int64()),
            "data_file_size": pa.array([f.add.get("size") for f in live], pa.int64()),
        })

    def position_delete_files(self):
        import pyarrow as pa

        return pa.table({"file_path": pa.array([], pa.string()), "location": pa.array([], pa.string())})

    def puffin_files(self, all_snapshots: bool = False):
        raise UnsupportedTableError(f"{self.table.name} is a Delta table: its DVs live in deletion_vector_*.bin files, not "
                         "Puffin files (dv_facts lists them, DeltaTable.dv_file(...) shows one)")


def _locate_rows(mapper, data_files: Optional[list[str]] = None):
    """mapInArrow function: DV index rows → :data:`DV_PLAN_SCHEMA` rows, ``location`` mapped on the executor;
    with ``data_files`` only the DVs of those data files (as written, or where they are now)."""

    def run(batches):
        steady_imports()
        import pyarrow as pa

        from .executors import _arrow_schema

        schema = _arrow_schema(DV_PLAN_SCHEMA)
        wanted = None if data_files is None else set(data_files)
        for batch in batches:
            if wanted is not None:
                refs = batch.column("referenced_data_file").to_pylist()
                keep = [r is not None and (r in wanted or executor_location(mapper.map(r)) in wanted) for r in refs]
                batch = batch.filter(pa.array(keep, pa.bool_()))
            paths = batch.column("file_path").to_pylist()
            where = {p: executor_location(mapper.map(p)) for p in set(paths) if p is not None}
            cols = {name: batch.column(name) for name in batch.schema.names}
            cols["location"] = pa.array([where.get(p) for p in paths], pa.string())
            cols["inline_dv"] = pa.nulls(batch.num_rows, pa.binary())
            yield pa.RecordBatch.from_arrays([cols[f.name].cast(f.type) for f in schema], schema=schema)

    return run


def small(dvs) -> bool:
    """True when decoding ``dvs`` on the driver beats a Spark stage (see the limits above)."""
    return (dvs.num_rows <= DRIVER_MAX_DVS and _total(dvs, "content_size_in_bytes") <= DRIVER_MAX_BYTES
            and _total(dvs, "record_count") <= DRIVER_MAX_POSITIONS)


def _total(table, column: str) -> int:
    import pyarrow.compute as pc

    value = pc.sum(table.column(column)).as_py() if table.num_rows else 0
    return int(value or 0)


def plan_table(table: Any, storage_options: Optional[dict[str, Any]] = None,
               relocate: Optional[Mapping[str, str]] = None, snapshot_id: Optional[int] = None,
               index_on: str = "auto") -> Optional[TablePlan]:
    """A :class:`TablePlan` for ``table`` (see :func:`open_table`; a :class:`DeltaPlan` for a Delta table),
    or None for a catalog name.  ``index_on`` says where an Iceberg table's entry index is built
    (``"auto"``: on the executors from :data:`EXECUTORS_INDEX_FROM_MANIFESTS` manifests on)."""
    if index_on not in MODES:
        raise ValueError(f"index_on must be one of {', '.join(MODES)}, not {index_on!r}")
    from ..delta.table import DeltaTable
    from ..io.scope import with_scope
    from .tables import open_table

    opened = open_table(table, storage_options, relocate)
    if opened is None:
        return None
    # the table's read scope travels with the plan: every executor refuses what the driver would
    options = with_scope(storage_options if storage_options is not None else opened.io.storage_options,
                         opened.io.scope)
    if isinstance(opened, DeltaTable):
        return DeltaPlan(opened, dict(options))
    return TablePlan(opened, dict(options), snapshot_id, index_on)
