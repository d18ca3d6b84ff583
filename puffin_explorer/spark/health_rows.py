"""What the Spark doctor runs on the executors and the relations it builds from their rows: the health rows of
each manifest's live entries (:func:`health_rows`), the measures' relations over them (:func:`files_by_key`,
:func:`data_relation`, :func:`delete_relation`), clustering per partition (:func:`clustering_group`), every
snapshot's located entries, the rows position-delete files name and the folders of a listing
(``mapInArrow`` functions).  :class:`~.health.SparkReads` plans the jobs that run them."""

from __future__ import annotations

import pickle
from typing import Optional

from ..iceberg.column_stats import METRIC_COLUMNS
from .executors import steady_imports


#: One row per live entry of the current snapshot, what the doctor's sums need (Spark DDL); ``key`` is the file key
#: a row joins on (a DV's: the data file it references), null where that is the row's ``file_path`` as written.
#: A DV's row holds only what the measures read of a DV (``rid``, ``kind``, ``file_path``, ``key``, ``record_count``,
#: ``file_size_in_bytes``), the rest null; ``scope_lo`` / ``scope_hi`` are null where ``''`` (no bound).  Nothing
#: the measures derive is held: ``seq`` is ``sequence_number`` or 0, ``partition_empty`` is ``partition`` = ``{}``
#: (:func:`files_by_key`, :func:`delete_relation`).  Every column is a copy per row through the JVM and on disk.
HEALTH_ROWS_SCHEMA = (
    "rid bigint, kind string, file_path string, key string, pkey string, partition string, "
    "spec_id int, sequence_number bigint, record_count bigint, file_size_in_bytes bigint, scope_ref string, "
    "scope_lo string, scope_hi string, clus_lo binary, clus_hi binary, partial binary, finding_code string, "
    "finding_message string, finding_order int")
LISTING_SCHEMA = "location string, size bigint, mtime_ms bigint, hidden boolean"
CLUSTER_SCHEMA = ("pkey string, partition string, files bigint, files_with_bounds bigint, average_depth double, "
                   "max_depth bigint, bytes bigint, rows bigint")
SET_SCHEMA = "sid bigint, location string, size bigint"
#: Rows per partition of the frames kept partitioned by file key (:meth:`.SparkReads._keep_by_key`).
ROWS_PER_KEY_PARTITION = 100_000


# ---- executor functions ---------------------------------------------------------------------------
def health_rows(fields: dict, column: Optional[str], decode):
    """mapInArrow function: manifest plan rows → :data:`HEALTH_ROWS_SCHEMA` rows of their live entries, each
    manifest decoded by ``decode`` (:func:`~.index.decode_manifests` with metrics) in the same task, so that the
    entries and their metrics never cross into the JVM and back.  Rows are decoded as ``files(decode=True)``
    decodes them (bounds by column name, the path scope of position deletes); only the bounds these rows need are
    decoded (``file_path``'s and the clustering column's).  A manifest that could not be read whole gives rows of
    kind ``finding`` (``rid`` its plan position << 32), which :meth:`.SparkReads.snapshot_files` reads; each task
    ends with one row of kind ``partial``, its column metrics."""
    wanted = {fid for fid, (name, _) in fields.items() if name in ("file_path", column)}

    def run(batches):
        steady_imports()
        import pyarrow as pa

        from ..iceberg.bounds import decode_bounds
        from .executors import _arrow_schema

        schema = _arrow_schema(HEALTH_ROWS_SCHEMA)

        def needed(raw):
            return decode_bounds([kv for kv in raw if kv["key"] in wanted] if raw else raw, fields)

        import numpy as np
        import pyarrow.compute as pc

        from ..iceberg.column_stats import ColumnPartial

        partial = ColumnPartial()
        for b in _live(decode(batches), schema):
            if "rid" in b.schema.names:  # a manifest's findings, as health rows already
                yield b
                continue
            rids = (b.column("manifest").to_numpy(zero_copy_only=False).astype(np.int64) << 32) + \
                b.column("entry").to_numpy(zero_copy_only=False).astype(np.int64)
            is_data = pc.fill_null(pc.equal(b.column("kind"), "data"), False)
            data_rows = b.filter(is_data)
            if data_rows.num_rows:  # the column metrics of the batch's data files, in Arrow
                partial.add_arrow(rids[is_data.to_numpy(zero_copy_only=False)],
                                  pa.Table.from_batches([data_rows]).select(list(METRIC_COLUMNS)), fields)
            yield from _health_batch(b, rids, schema, needed, wanted, column)
        last = {f.name: pa.nulls(1, f.type) for f in schema}  # the task's column partial: one row of its own
        last["kind"] = pa.array(["partial"], pa.string())
        last["partial"] = pa.array([pickle.dumps(partial)], pa.binary())
        yield pa.RecordBatch.from_arrays([last[f.name] for f in schema], schema=schema)

    return run


def _live(batches, schema):
    """Index batches → their entries that are not deleted (status 2), and the findings that say a manifest could
    not be read whole as ``schema`` (:data:`HEALTH_ROWS_SCHEMA`) rows of kind ``finding``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..iceberg.health import _MANIFEST_BROKEN

    for b in batches:
        code = b.column("finding_code")
        if code.null_count < b.num_rows:
            broken = b.filter(pc.and_(pc.fill_null(pc.is_in(code, value_set=pa.array(_MANIFEST_BROKEN)), False),
                                      pc.fill_null(pc.not_equal(b.column("finding_message"), ""), False)))
            if broken.num_rows:
                out = {f.name: pa.nulls(broken.num_rows, f.type) for f in schema}
                out["rid"] = pc.shift_left(broken.column("manifest").cast(pa.int64()), 32)
                out["kind"] = pa.array(["finding"] * broken.num_rows, pa.string())
                for c in ("finding_code", "finding_message", "finding_order"):
                    out[c] = broken.column(c).cast(schema.field(c).type)
                yield pa.RecordBatch.from_arrays([out[f.name] for f in schema], schema=schema)
        b = b.filter(pc.and_(pc.is_null(code), pc.fill_null(pc.not_equal(b.column("status"), 2), True)))
        if b.num_rows:
            yield b


def _health_batch(b, rids, schema, needed, wanted: set, column: Optional[str]):
    """One batch of index entries (``rids`` their row ids) as :data:`HEALTH_ROWS_SCHEMA` batches, in Arrow: the
    DVs' rows, then the other entries'; only the rows whose bounds hold a ``wanted`` column (``file_path`` of a
    delete file, the clustering column) are decoded one by one, by ``needed``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    is_dv = pc.fill_null(pc.equal(b.column("kind").cast(pa.string()), "dv"), False).to_numpy(zero_copy_only=False)
    rids = np.asarray(rids, dtype=np.int64)
    for dvs in (True, False):
        part = is_dv if dvs else ~is_dv
        if part.all():
            yield _kind_rows(b, rids, schema, needed, wanted, column, dvs)
        elif part.any():
            yield _kind_rows(b.filter(pa.array(part)), rids[part], schema, needed, wanted, column, dvs)


def _kind_rows(b, rids, schema, needed, wanted: set, column: Optional[str], dvs: bool):
    """:func:`_health_batch` for entries that are all DVs (``dvs``) or none: a column no row of the batch needs
    is a null column (no value copied into the JVM), and a DV's row only what the measures read of a DV."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..iceberg.columns import normalized
    from ..iceberg.measures import path_scope
    from .index import split_keyed

    n = b.num_rows
    string = pa.string()
    col = {name: b.column(name) for name in b.schema.names}
    file_path = col["file_path"].cast(string)
    out = {"rid": pa.array(rids, pa.int64()), "kind": col["kind"].cast(string), "file_path": file_path,
           "record_count": col["record_count"], "file_size_in_bytes": col["file_size_in_bytes"]}
    if dvs:  # ``key`` is the data file the DV references (the measures' ``ref_key``)
        out["key"] = normalized(col["referenced_data_file"].cast(string))
        return _batch_of(out, schema, n)
    # ``key`` is the file key the measures join a row on: its own file, null where that is ``file_path`` as written
    # (most are: each row would carry its path twice, a third of the rows Spark keeps; files_by_key fills it in)
    own = normalized(file_path)  # the same array where no path changes
    own = pa.nulls(n, string) if own is file_path else \
        pc.if_else(pc.fill_null(pc.equal(own, file_path), False), pa.scalar(None, string), own)
    (key, part), spec = split_keyed(col["partition"].cast(string)), col["spec_id"].cast(pa.int32())
    ref = col["referenced_data_file"].cast(string)
    has_ref = pc.fill_null(pc.not_equal(ref, ""), False)
    out.update(key=own, partition=part, spec_id=spec, sequence_number=col["sequence_number"],
               pkey=pc.binary_join_element_wise(pc.fill_null(spec.cast(string), ""), pc.fill_null(key, "{}"), "|"))
    if pc.any(has_ref).as_py():
        out["scope_ref"] = pc.if_else(has_ref, normalized(ref), pa.scalar(None, string))
    # rows whose bounds name a wanted column: their path scope and clustering bounds, as the driver decodes them
    hits = np.zeros(n, dtype=bool)
    keys = pa.array(sorted(wanted), pa.int32())
    for name in ("lower_bounds", "upper_bounds"):
        bounds = col[name]
        if bounds.null_count == n or not len(keys):
            continue
        flat = pc.list_flatten(bounds)
        if len(flat):
            found = pc.is_in(flat.field("key").cast(pa.int32()), value_set=keys).to_numpy(zero_copy_only=False)
            rows = pc.list_parent_indices(bounds).to_numpy(zero_copy_only=False)
            hits[rows[found]] = True
    picked = np.flatnonzero(hits)
    if len(picked):
        idx = pa.array(picked, pa.int64())
        names = ("kind", "referenced_data_file", "lower_bounds", "upper_bounds")
        columns = {c: out[c].to_pylist() if c in out else [None] * n
                   for c in ("scope_ref", "scope_lo", "scope_hi", "clus_lo", "clus_hi")}
        for i, r in zip(picked, b.select(list(names)).take(idx).to_pylist()):
            lows, highs = needed(r["lower_bounds"]), needed(r["upper_bounds"])
            scope = path_scope(r["referenced_data_file"], lows.get("file_path"), highs.get("file_path"))
            columns["scope_ref"][i] = scope[0]
            columns["scope_lo"][i], columns["scope_hi"][i] = (v or None for v in scope[1:])  # '' is held as null
            if r["kind"] == "data" and column is not None:
                for c, bounds in (("clus_lo", lows), ("clus_hi", highs)):
                    v = bounds.get(column)
                    columns[c][i] = None if v is None else pickle.dumps(v)
        for c, values in columns.items():
            out[c] = pa.array(values, pa.binary() if c.startswith("clus") else string)
    return _batch_of(out, schema, n)


def _batch_of(columns: dict, schema, n: int):
    """``columns`` as a record batch of ``schema`` and ``n`` rows; a column not given, or with no value, is a null
    column, so that the values a computed column kept behind its nulls (``if_else`` keeps its inputs' bytes) never
    reach the JVM."""
    import pyarrow as pa

    arrays = []
    for f in schema:
        a = columns.get(f.name)
        if a is None or a.null_count == n:
            a = pa.nulls(n, f.type)
        arrays.append(a.cast(f.type) if a.type != f.type else a)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def files_by_key(rows):
    """The data files and the DVs of health rows, the columns the measures read of each (a DV's ``key`` is the
    data file it references, named ``ref_key`` here): what :meth:`.SparkReads._keep_by_key` keeps.  A data file's
    path is held once: ``raw`` (the path as written) is null where it is ``key`` (:func:`data_relation` reads it)."""
    from pyspark.sql import functions as F

    kind = F.col("kind")
    data = rows.where(kind == "data").select("rid", F.coalesce("key", "file_path").alias("key"),
                                             F.when(F.col("key").isNotNull(), F.col("file_path")).alias("raw"),
                                             "pkey", "partition", "record_count", "file_size_in_bytes", "spec_id",
                                             "sequence_number")
    dv = rows.where(kind == "dv").select(F.col("key").alias("ref_key"), "record_count", "file_path",
                                         "file_size_in_bytes")
    return data, dv


def _seq(alias: str):
    """A row's data sequence number as the measures compare it (``seq``): its ``sequence_number``, 0 where null."""
    from pyspark.sql import functions as F

    return F.coalesce("sequence_number", F.lit(0).cast("bigint")).alias(alias)


def data_relation(data):
    """The kept data files of :func:`files_by_key` as the measures' ``data`` relation."""
    from pyspark.sql import functions as F

    return data.select("rid", "key", F.coalesce("raw", "key").alias("raw"), "pkey", _seq("seq"), "record_count",
                       "file_size_in_bytes")


def delete_relation(frame):
    """Health rows of delete files as the measures' ``pos`` / ``eq`` relation."""
    from pyspark.sql import functions as F

    return frame.select(F.col("rid").alias("did"), F.col("pkey").alias("dpkey"), _seq("dseq"),
                        F.col("scope_ref").alias("ref"), F.coalesce("scope_lo", F.lit("")).alias("lo"),
                        F.coalesce("scope_hi", F.lit("")).alias("hi"), "file_size_in_bytes",
                        F.col("pkey").endswith("|{}").alias("partition_empty"))  # no record, or an empty one


def no_rows(spark, ddl: str):
    """An empty DataFrame of the columns ``ddl`` names, which Spark's optimizer knows to be empty when it plans (a
    DataFrame made from an empty list is a scan it must run to find no rows)."""
    columns = ", ".join(f"CAST(NULL AS {kind}) AS {name}" for name, kind in
                        (field.strip().split(None, 1) for field in ddl.split(",")))
    return spark.sql(f"SELECT {columns} WHERE 1 = 0")


def clustering_group(pdf):
    """applyInPandas function: one partition's data files (bounds pickled) → its clustering row."""
    import pandas as pd

    from ..iceberg.columns import UNPARTITIONED
    from ..iceberg.health_clustering import clustering_by_partition

    steady_imports()
    d = pd.DataFrame({
        "pkey": pdf["pkey"].to_numpy(), "partition": pdf["partition"].fillna(UNPARTITIONED).to_numpy(),
        "lo": [None if b is None else pickle.loads(b) for b in pdf["clus_lo"]],
        "hi": [None if b is None else pickle.loads(b) for b in pdf["clus_hi"]],
        "bytes": pdf["file_size_in_bytes"].astype("int64").to_numpy(),
        "rows": pdf["record_count"].astype("int64").to_numpy()})
    out = clustering_by_partition(d).rename_axis("pkey").reset_index()
    out["average_depth"] = out["average_depth"].astype("float64")
    out["max_depth"] = out["max_depth"].astype("Int64")
    return out[["pkey", "partition", "files", "files_with_bounds", "average_depth", "max_depth", "bytes", "rows"]]


def located_entries(mapper):
    """mapInArrow function: index rows (manifest, file_path, file_size_in_bytes) → (manifest, location, size),
    ``location`` normalized where the file is now (``Table.locate``)."""

    def run(batches):
        steady_imports()
        import pyarrow as pa

        from ..iceberg.paths import normalize

        for batch in batches:
            paths = batch.column("file_path").to_pylist()
            where = {p: normalize(mapper.map(p)) for p in set(paths) if p is not None}
            yield pa.RecordBatch.from_arrays(
                [batch.column("manifest").cast(pa.int32()), pa.array([where.get(p) for p in paths], pa.string()),
                 batch.column("file_size_in_bytes").cast(pa.int64())], names=["manifest", "location", "size"])

    return run


#: What :func:`position_delete_counts` yields: per position-delete file and data file, the rows it names.
COUNTS_SCHEMA = "file_path string, key string, rows bigint, error string, missing boolean"


def position_delete_counts(mapper, storage_options: Optional[dict]):
    """mapInArrow function: position-delete files (``file_path`` as written) → per file and data file (normalized)
    the rows it names, read as the driver reads them (``source.read_parquet_at``); a file that cannot be read is
    one row with ``error`` (``missing`` when it is gone)."""

    def run(batches):
        steady_imports()
        import pyarrow as pa

        from ..arrow_ddl import arrow_schema
        from ..errors import NotFoundError, PuffinError
        from ..iceberg.columns import normalized
        from ..iceberg.source import read_parquet_at
        from ..io import FileIO
        from .tables import fsspec_location

        io = FileIO(storage_options)
        schema = arrow_schema(COUNTS_SCHEMA)
        for batch in batches:
            for path in batch.column("file_path").to_pylist():
                if path is None:
                    continue
                try:
                    names = read_parquet_at(io, fsspec_location(mapper.map(path)), ["file_path"]).column("file_path")
                except PuffinError as exc:
                    yield pa.RecordBatch.from_pydict({"file_path": [path], "key": [None], "rows": [None],
                                                      "error": [str(exc)],
                                                      "missing": [isinstance(exc, NotFoundError)]}, schema=schema)
                    continue
                counts = normalized(names.combine_chunks().cast(pa.string())).value_counts()
                keys, rows = counts.field("values"), counts.field("counts").cast(pa.int64())
                yield pa.RecordBatch.from_arrays([pa.array([path] * len(keys), pa.string()), keys, rows,
                                                  pa.nulls(len(keys), pa.string()), pa.nulls(len(keys), pa.bool_())],
                                                 schema=schema)

    return run


def list_folders(storage_options: Optional[dict], root: str):
    """mapInArrow function: folder rows → every file under each folder (:data:`LISTING_SCHEMA`), listed
    through this package's I/O layer as the driver doctor lists the whole location."""

    def run(batches):
        steady_imports()
        import pyarrow as pa

        from ..health import list_folder
        from ..iceberg.paths import TableIO
        from .executors import _arrow_schema

        schema = _arrow_schema(LISTING_SCHEMA)
        io = TableIO(storage_options)
        for batch in batches:
            for folder in batch.column("folder").to_pylist():
                rows = list_folder(io, root, folder)
                if len(rows):
                    yield pa.Table.from_pandas(rows, preserve_index=False).cast(schema).combine_chunks() \
                        .to_batches()[0]

    return run
