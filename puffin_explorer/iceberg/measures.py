"""The per-file measures of a table, each written once as SQL that both engines run.

Which deletes apply to which data file, how many rows each data file has deleted, and every sum the doctor and
the cards make of them (per data file, per partition, per size class, per table, the delete files no data file
needs) is decided here and nowhere else: DuckDB runs these texts over Arrow tables on the driver
(:class:`LocalMeasures`), Spark SQL over DataFrames on the executors (``spark/measures.py``).  The texts use
what both dialects read the same way (joins, ``UNION ALL``, ``CASE``, ``COALESCE``, string comparison,
``bool_and``); sums go through ``DECIMAL(38,0)`` and are clipped to a ``BIGINT`` (:func:`_total`), so a size or
count damaged past a long gives the same number in both engines and never an overflow error.

The relations a measure reads (a ``key`` names one data file: the path as :func:`~.paths.normalize` writes it
on the driver and in the doctor, as the metadata writes it in ``spark.deletion_report``; a Delta table numbers
its live files instead, a DV belonging to its ``add``):

- ``data``: the live data files — ``rid`` (a row id), ``key``, ``raw`` (the path as written, for the
  ``file_path`` bounds), ``pkey`` (spec id and partition), ``partition`` (as shown), ``seq`` (data sequence
  number), ``record_count``, ``file_size_in_bytes``;
- ``dvs``: the live DVs — ``ref_key`` (the data file referenced), ``record_count`` (its cardinality),
  ``file_path`` / ``file_size_in_bytes`` (the Puffin file holding it, None for a DV stored inline);
- ``pos`` / ``eq``: the live position / equality delete files — ``did``, ``dpkey``, ``dseq``, their path scope
  ``ref`` (one data file, null for any), ``lo`` / ``hi`` (``file_path`` bounds, ``''`` when absent; ``raw`` may
  be null when no delete file has bounds), and
  ``file_size_in_bytes``; ``eq`` also ``partition_empty`` (an unpartitioned one applies to every partition);
- ``pos_counts``: rows each live Parquet position-delete file names per data file — ``file_path`` (the delete
  file), ``key``, ``rows``: one row per (delete file, data file), read from the files themselves;
- ``params``: one row — ``small_size`` (a data file below it is small), ``many`` (a data file merging more
  delete files than this is read-amplified), ``target`` (the target file size small files are rewritten into);
- ``debt_params``: one row — ``threshold`` (a data file whose deleted share is above it is a compaction
  candidate);
- ``size_classes``: ``bucket``, ``lo`` / ``hi`` (bytes, None for unbounded) of the size histogram.

The relations of the storage checks (every snapshot's files and the listing of the table location; a
``location`` is normalized, :func:`~.paths.normalize`):

- ``snapshot_files``: ``sid``, ``location``, ``size`` — every file a snapshot references (its data and delete
  files, manifests, manifest list, statistics), once per snapshot;
- ``retention``: ``sid``, ``kept`` — the snapshots the retention check decided on (kept, or past retention);
- ``listing``: ``location``, ``size``, ``mtime_ms``, ``hidden`` — the files under the table location (a size
  and time may be null where they were not read yet: a measure that reads them is run after they are);
- ``referenced``: ``location`` — files referenced outside the snapshots' sets (metadata files, statistics, the
  version hint);
- ``metadata_log``: ``location``, ``current`` — the metadata files the table tracks, the one opened ``current``;
- ``orphan_params``: one row — ``cutoff_ms`` (a file written at or after it is an in-flight write).

A measure may read another measure's answer as a relation (its name); each is computed once per run.
Adding a measure is one :class:`Measure` in :data:`MEASURES`; the parity test runs every one of them on both
engines over the same relations and compares the answers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Optional

#: Columns that name a file or a partition: strings, or on the driver integer codes of them (the same codes in
#: every relation of a run; joins on codes need a fraction of the memory of joins on paths).
KEYS = ("key", "ref_key", "ref", "file_path", "pkey", "dpkey")
#: Spark DDL of each input relation (DuckDB reads the same columns from Arrow).
RELATIONS = {
    "data": "rid bigint, key string, raw string, pkey string, seq bigint, record_count bigint, file_size_in_bytes bigint",
    "dvs": "ref_key string, record_count bigint, file_path string, file_size_in_bytes bigint",
    "pos": "did bigint, dpkey string, dseq bigint, ref string, lo string, hi string, file_size_in_bytes bigint",
    "eq": "did bigint, dpkey string, dseq bigint, ref string, lo string, hi string, file_size_in_bytes bigint, "
          "partition_empty boolean",
    "pos_counts": "file_path string, key string, rows bigint",
    "params": "small_size bigint, many bigint, target bigint",
    "debt_params": "threshold double",
    "size_classes": "bucket bigint, lo bigint, hi bigint",
    "snapshot_files": "sid bigint, location string, size bigint",
    "retention": "sid bigint, kept boolean",
    "listing": "location string, size bigint, mtime_ms bigint, hidden boolean",
    "referenced": "location string",
    "metadata_log": "location string, current boolean",
    "orphan_params": "cutoff_ms bigint",
}


@dataclass(frozen=True)
class Measure:
    """One measure: its SQL (relations named ``{data}``, ``{dvs}``, …, or another measure's name), the columns
    it reads of each input relation, the columns it returns, in order (its rows are compared sorted by them),
    and its grain: ``"row"`` (a row per file, partition or class; none from no input) or ``"table"`` (one row).
    ``empty_without``: input relations every row of the answer joins, so that one given without rows leaves the
    answer without rows; an engine that knows a relation is empty then answers with no rows of the measure's
    types without running its joins."""

    name: str
    inputs: dict
    columns: tuple[str, ...]
    sql: str
    doc: str
    grain: str = "row"
    empty_without: tuple[str, ...] = ()


#: The exact integer type sums are made in, named by each engine when it runs a measure (``{exact}`` in the SQL):
#: Spark's ``DECIMAL(38,0)``; DuckDB's ``HUGEINT`` (a 128-bit integer: as exact for sums of longs, and its sums
#: are four times faster than a decimal's, 0.48 s against 2.1 s for six sums over a million groups).
EXACT = "{exact}"
_LONG = f"CAST('9223372036854775807' AS {EXACT})"


def _clip(expr: str) -> str:
    """An exact integer expression as a ``BIGINT``, clipped to the range of a long."""
    return f"CAST(LEAST(GREATEST({expr}, -{_LONG} - 1), {_LONG}) AS BIGINT)"


def _total(expr: str) -> str:
    """``SUM(expr)`` of integers, 0 over no rows, exact and clipped to a long."""
    return _clip(f"COALESCE(SUM(CAST({expr} AS {EXACT})), 0)")


def _count(condition: str) -> str:
    return f"CAST(COALESCE(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END), 0) AS BIGINT)"


def _total_if(condition: str, expr: str) -> str:
    return _total(f"CASE WHEN {condition} THEN {expr} ELSE 0 END")


# A delete file's path scope admits a data file: no bounds, or its written path within them.
_IN_SCOPE = "(x.lo = '' OR d.raw >= x.lo) AND (x.hi = '' OR d.raw <= x.hi)"

_SCOPE = ("did", "dpkey", "dseq", "ref", "lo", "hi")
POSITION_DELETES_APPLIED = Measure(
    "position_deletes_applied",
    {"data": ("rid", "key", "raw", "pkey", "seq"), "dvs": ("ref_key",), "pos": _SCOPE}, ("rid", "did"),
    f"""
    WITH dv_keys AS (SELECT DISTINCT ref_key AS key FROM {{dvs}} WHERE ref_key IS NOT NULL),
    open_data AS (SELECT d.* FROM {{data}} d LEFT JOIN dv_keys k ON d.key = k.key WHERE k.key IS NULL)
    SELECT d.rid, x.did FROM open_data d JOIN {{pos}} x ON d.key = x.ref AND d.pkey = x.dpkey
    WHERE x.ref IS NOT NULL AND d.seq <= x.dseq AND {_IN_SCOPE}
    UNION ALL
    SELECT d.rid, x.did FROM open_data d JOIN {{pos}} x ON d.pkey = x.dpkey
    WHERE x.ref IS NULL AND d.seq <= x.dseq AND {_IN_SCOPE}
    """,
    "(data file, position-delete file) pairs where the deletes apply: the same partition (and spec), a data "
    "sequence number at most the delete file's, within its path scope; none for a data file with a DV, which "
    "supersedes its position deletes (v3).", empty_without=("pos",))

EQUALITY_DELETES_APPLIED = Measure(
    "equality_deletes_applied",
    {"data": ("rid", "key", "raw", "pkey", "seq"), "eq": _SCOPE + ("partition_empty",)}, ("rid", "did"),
    f"""
    WITH everywhere AS (SELECT COALESCE(bool_and(partition_empty), false) AS g FROM {{eq}}),
    loose AS (SELECT x.* FROM {{eq}} x WHERE x.ref IS NULL)
    SELECT d.rid, x.did FROM {{data}} d JOIN {{eq}} x ON d.key = x.ref CROSS JOIN everywhere w
    WHERE x.ref IS NOT NULL AND (w.g OR d.pkey = x.dpkey) AND d.seq < x.dseq AND {_IN_SCOPE}
    UNION ALL
    SELECT d.rid, x.did FROM {{data}} d JOIN loose x ON d.pkey = x.dpkey CROSS JOIN everywhere w
    WHERE NOT w.g AND d.seq < x.dseq AND {_IN_SCOPE}
    UNION ALL
    SELECT d.rid, x.did FROM {{data}} d CROSS JOIN loose x CROSS JOIN everywhere w
    WHERE w.g AND d.seq < x.dseq AND {_IN_SCOPE}
    """,
    "(data file, equality-delete file) pairs where the deletes apply: a data sequence number strictly below the "
    "delete file's, the same partition (every partition when every equality-delete file is unpartitioned), "
    "within its path scope.", empty_without=("eq",))

POSITION_DELETE_ROWS = Measure(
    "pos_rows", {"pos_counts": ("key", "rows")}, ("key", "rows", "files"),
    f"""
    SELECT key, {_total('rows')} AS rows, COUNT(*) AS files FROM {{pos_counts}} WHERE key IS NOT NULL GROUP BY key
    """,
    "Per data file (by key) that live Parquet position-delete files name: the rows they name and how many files "
    "name it (pos_counts holds one row per delete file and data file).", empty_without=("pos_counts",))

DELETED_ROWS = Measure(
    "deleted_rows", {"data": ("key",), "dvs": ("ref_key", "record_count"), "pos_rows": ("key", "rows", "files")},
    ("key", "dv_rows", "dvs", "pos_rows", "pos_files", "superseded", "deleted"),
    f"""
    WITH per_dv AS (SELECT ref_key AS key, {_total('record_count')} AS dv_rows, COUNT(*) AS dvs
                    FROM {{dvs}} WHERE ref_key IS NOT NULL GROUP BY ref_key),
    files AS (SELECT DISTINCT key FROM {{data}} WHERE key IS NOT NULL),
    joined AS (
        SELECT d.key, COALESCE(v.dv_rows, 0) AS dv_rows, COALESCE(v.dvs, 0) AS dvs,
               COALESCE(p.rows, 0) AS pos_rows, COALESCE(p.files, 0) AS pos_files,
               CASE WHEN v.dvs IS NULL THEN 0 ELSE COALESCE(p.rows, 0) END AS superseded
        FROM files d LEFT JOIN per_dv v ON d.key = v.key LEFT JOIN {{pos_rows}} p ON d.key = p.key)
    SELECT key, dv_rows, dvs, pos_rows, pos_files, CAST(superseded AS BIGINT) AS superseded,
           CASE WHEN dvs > 0 THEN dv_rows ELSE pos_rows END AS deleted
    FROM joined
    """,
    "Per live data file (by key): the rows its DVs delete (a DV counts for the data file it references), the rows live "
    "Parquet position-delete files name in it, those its DV supersedes, and deleted = DV rows + position-delete "
    "rows - superseded (that is, the DV rows where a DV is, else the position-delete rows: no sum to overflow). "
    "A delete whose data file is not live counts for nothing; equality deletes are not "
    "resolved to rows.")

#: What :data:`DATA_FILE_DELETES` returns per data file (the doctor's ``amplification`` frame adds the rest).
DATA_FILE_DELETE_COLUMNS = ("rid", "pkey", "record_count", "file_size_in_bytes", "dvs",
                            "position_delete_files", "equality_delete_files", "delete_files", "deleted_rows")
DATA_FILE_DELETES = Measure(
    "data_file_deletes",
    {"data": ("rid", "key", "pkey", "record_count", "file_size_in_bytes"),
     "position_deletes_applied": ("rid",), "equality_deletes_applied": ("rid",),
     "deleted_rows": ("key", "dvs", "deleted")},
    DATA_FILE_DELETE_COLUMNS,
    """
    WITH pa AS (SELECT rid, COUNT(*) AS n FROM {position_deletes_applied} GROUP BY rid),
    ea AS (SELECT rid, COUNT(*) AS n FROM {equality_deletes_applied} GROUP BY rid),
    per_file AS (
        SELECT d.rid, d.pkey, d.record_count, d.file_size_in_bytes,
               CAST(CASE WHEN COALESCE(r.dvs, 0) > 0 THEN 1 ELSE 0 END AS BIGINT) AS dvs,
               CAST(COALESCE(pa.n, 0) AS BIGINT) AS position_delete_files,
               CAST(COALESCE(ea.n, 0) AS BIGINT) AS equality_delete_files,
               CAST(COALESCE(r.deleted, 0) AS BIGINT) AS deleted_rows
        FROM {data} d LEFT JOIN pa ON d.rid = pa.rid
        LEFT JOIN ea ON d.rid = ea.rid LEFT JOIN {deleted_rows} r ON d.key = r.key)
    SELECT rid, pkey, record_count, file_size_in_bytes, dvs, position_delete_files,
           equality_delete_files, dvs + position_delete_files + equality_delete_files AS delete_files, deleted_rows
    FROM per_file
    """,
    "Per live data file (by row id; its key is not repeated: nothing that reads it needs the path): the delete "
    "files a reader merges when scanning it (its DV, at most one: deleted_rows "
    "counts the DVs naming it, so the DVs are not joined again here; and the position and equality delete files "
    "that apply) and its deleted rows (deleted_rows).")

FILE_TOTALS = Measure(
    "file_totals",
    {"data_file_deletes": ("record_count", "file_size_in_bytes", "delete_files", "deleted_rows"),
     "params": ("small_size", "many")},
    ("data_files", "data_bytes", "records", "deleted_rows", "data_files_with_deletes",
     "max_delete_files_per_data_file", "mean_delete_files", "touched_max_size", "touched_rows",
     "touched_deleted_rows", "many_files", "many_rows", "small_files", "small_bytes"),
    f"""
    SELECT COUNT(*) AS data_files, {_total('f.file_size_in_bytes')} AS data_bytes,
           {_total('f.record_count')} AS records, {_total('f.deleted_rows')} AS deleted_rows,
           {_count('f.delete_files > 0')} AS data_files_with_deletes,
           CAST(COALESCE(MAX(f.delete_files), 0) AS BIGINT) AS max_delete_files_per_data_file,
           CASE WHEN COUNT(*) = 0 THEN CAST(0 AS DOUBLE)
                ELSE CAST(SUM(f.delete_files) AS DOUBLE) / COUNT(*) END AS mean_delete_files,
           MAX(CASE WHEN f.delete_files > 0 THEN f.file_size_in_bytes END) AS touched_max_size,
           {_total_if('f.delete_files > 0', 'f.record_count')} AS touched_rows,
           {_total_if('f.delete_files > 0', 'f.deleted_rows')} AS touched_deleted_rows,
           {_count('f.delete_files > p.many')} AS many_files,
           {_total_if('f.delete_files > p.many', 'f.record_count')} AS many_rows,
           {_count('f.file_size_in_bytes < p.small_size')} AS small_files,
           {_total_if('f.file_size_in_bytes < p.small_size', 'f.file_size_in_bytes')} AS small_bytes
    FROM {{data_file_deletes}} f CROSS JOIN {{params}} p
    """,
    "The live data files summed: files, bytes, records, deleted rows; those merging a delete file (touched: the "
    "largest, its rows and deleted rows), those merging more than params.many (many), the most and the mean delete "
    "files merged per data file, and the small files (below params.small_size).", grain="table")

# a data file's deleted share, as :func:`~.deletes.deleted_shares` makes it: 0 for a file of no records
_SHARE = ("CASE WHEN f.record_count <> 0 THEN CAST(f.deleted AS DOUBLE) / CAST(f.record_count AS DOUBLE) "
          "ELSE CAST(0 AS DOUBLE) END")
PARTITION_DELETES = Measure(
    "partition_deletes",
    {"data": ("key", "pkey", "record_count"), "deleted_rows": ("key", "deleted"), "debt_params": ("threshold",)},
    ("pkey", "data_files", "record_count", "deleted_rows", "candidates"),
    f"""
    WITH f AS (SELECT d.pkey, d.record_count, COALESCE(r.deleted, 0) AS deleted
               FROM {{data}} d LEFT JOIN {{deleted_rows}} r ON d.key = r.key)
    SELECT f.pkey, COUNT(*) AS data_files, {_total('f.record_count')} AS record_count,
           {_total('f.deleted')} AS deleted_rows, {_count(f'{_SHARE} > p.threshold')} AS candidates
    FROM f CROSS JOIN {{debt_params}} p
    GROUP BY f.pkey
    """,
    "Per partition (spec and partition, by key): data files, their records and deleted rows, and the compaction "
    "candidates: files whose deleted share (deleted rows over records, 0 for a file of no records) is above "
    "debt_params.threshold.  Over the data files and their deleted rows only: the delete debt of a table card "
    "runs it without the delete files' joins of data_file_deletes.")

PARTITION_TOTALS = Measure(
    "partition_totals",
    {"data_file_deletes": ("pkey", "record_count", "file_size_in_bytes", "delete_files"),
     "partition_deletes": ("pkey", "data_files", "record_count", "deleted_rows"), "params": ("small_size",)},
    ("pkey", "files", "rows", "deleted_rows", "bytes", "delete_files", "small_files", "small_bytes",
     "small_rows"),
    f"""
    WITH f AS (
        SELECT f.pkey, {_total('f.file_size_in_bytes')} AS bytes, {_total('f.delete_files')} AS delete_files,
               {_count('f.file_size_in_bytes < p.small_size')} AS small_files,
               {_total_if('f.file_size_in_bytes < p.small_size', 'f.file_size_in_bytes')} AS small_bytes,
               {_total_if('f.file_size_in_bytes < p.small_size', 'f.record_count')} AS small_rows
        FROM {{data_file_deletes}} f CROSS JOIN {{params}} p
        GROUP BY f.pkey)
    SELECT f.pkey, d.data_files AS files, d.record_count AS rows, d.deleted_rows, f.bytes, f.delete_files,
           f.small_files, f.small_bytes, f.small_rows
    FROM f JOIN {{partition_deletes}} d ON f.pkey IS NOT DISTINCT FROM d.pkey
    """,
    "Per partition (spec and partition, by key): data files, rows and deleted rows (partition_deletes', the "
    "numbers the delete debt shows), bytes, delete files merged, and the small files, their bytes and rows.  The "
    "partition's text is not summed here: an engine looks it up for the partitions it shows (a string minimum per "
    "partition is a sort on Spark; a table can have one partition per file).")

PARTITION_SUMMARY = Measure(
    "partition_summary",
    {"partition_totals": ("pkey", "files", "rows", "bytes", "small_files", "small_bytes", "small_rows"),
     "params": ("target",)},
    ("partitions", "median_bytes", "largest_pkey", "largest_bytes", "largest_rows", "largest_files",
     "small_partitions", "small_files_merged", "small_files_after", "small_bytes_merged", "small_rows_merged",
     "small_files_fewest"),
    f"""
    WITH n AS (SELECT COUNT(*) AS partitions FROM {{partition_totals}}),
    sizes AS (SELECT CAST(bytes AS DOUBLE) AS v, COUNT(*) AS c FROM {{partition_totals}}
              GROUP BY CAST(bytes AS DOUBLE)),
    upto AS (SELECT v, SUM(c) OVER (ORDER BY v ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto FROM sizes),
    mid AS (SELECT MIN(CASE WHEN u.upto > FLOOR((n.partitions - 1) / 2.0) THEN u.v END) AS lo,
                   MIN(CASE WHEN u.upto > CEIL((n.partitions - 1) / 2.0) THEN u.v END) AS hi
            FROM upto u CROSS JOIN n),
    a AS (SELECT n.partitions, (mid.lo + mid.hi) / 2 AS median_bytes FROM n CROSS JOIN mid),
    top AS (SELECT pkey, bytes, rows, files FROM {{partition_totals}}
            ORDER BY bytes DESC, pkey LIMIT 1),
    c AS (SELECT t.small_files, t.small_bytes, t.small_rows,
                 GREATEST(CAST(CEIL(CAST(t.small_bytes AS DOUBLE) / q.target) AS BIGINT), 1) AS after
          FROM {{partition_totals}} t CROSS JOIN {{params}} q WHERE t.small_files >= 2),
    s AS (SELECT COUNT(*) AS n, {_total('small_files')} AS files, {_total('after')} AS after,
                 {_total('small_bytes')} AS bytes, {_total('small_rows')} AS rows,
                 CAST(MIN(small_files) AS BIGINT) AS fewest FROM c)
    SELECT a.partitions, a.median_bytes, top.pkey AS largest_pkey, top.bytes AS largest_bytes,
           top.rows AS largest_rows, top.files AS largest_files, s.n AS small_partitions,
           s.files AS small_files_merged, s.after AS small_files_after, s.bytes AS small_bytes_merged,
           s.rows AS small_rows_merged, s.fewest AS small_files_fewest
    FROM a CROSS JOIN s LEFT JOIN top ON 1 = 1
    """,
    "The partitions summed, so that no engine returns a row per partition to find a problem: how many, the median "
    "partition's bytes (percentile_cont(0.5)'s value, the mean of the two middle sizes, found by a running count over "
    "the distinct sizes in order, not in one aggregation buffer that holds them all), the largest partition (the "
    "first by key among equals: its key, bytes, rows, files), and the partitions with two or more small files, "
    "each rewritten into ceil(small bytes / params.target) files (at least one): how many, their small files, the "
    "files after, the small bytes and rows, the fewest small files in one.", grain="table")

SIZE_HISTOGRAM = Measure(
    "size_histogram",
    {"data": ("rid", "file_size_in_bytes"), "size_classes": ("bucket", "lo", "hi")}, ("bucket", "files", "bytes"),
    f"""
    SELECT c.bucket, COUNT(d.rid) AS files, {_total('d.file_size_in_bytes')} AS bytes
    FROM {{size_classes}} c LEFT JOIN {{data}} d
      ON (c.lo IS NULL OR d.file_size_in_bytes >= c.lo) AND (c.hi IS NULL OR d.file_size_in_bytes < c.hi)
    GROUP BY c.bucket
    """,
    "Live data files and their bytes per size class (lo inclusive, hi exclusive; None unbounded).")

DELETE_TOTALS = Measure(
    "delete_totals",
    {"dvs": ("file_path", "file_size_in_bytes"), "pos": ("file_size_in_bytes",), "eq": ("file_size_in_bytes",)},
    ("dvs", "dv_files", "position_delete_files", "equality_delete_files", "delete_files", "delete_bytes"),
    f"""
    WITH puffins AS (SELECT file_path, MAX(file_size_in_bytes) AS size FROM {{dvs}} WHERE file_path IS NOT NULL
                     GROUP BY file_path),
    v AS (SELECT COUNT(*) AS n FROM {{dvs}}),
    f AS (SELECT COUNT(*) AS n, {_total('size')} AS bytes FROM puffins),
    p AS (SELECT COUNT(*) AS n, {_total('file_size_in_bytes')} AS bytes FROM {{pos}}),
    e AS (SELECT COUNT(*) AS n, {_total('file_size_in_bytes')} AS bytes FROM {{eq}})
    SELECT v.n AS dvs, f.n AS dv_files, p.n AS position_delete_files, e.n AS equality_delete_files,
           f.n + p.n + e.n AS delete_files,
           {_clip(f'CAST(f.bytes AS {EXACT}) + p.bytes + e.bytes')} AS delete_bytes
    FROM v CROSS JOIN f CROSS JOIN p CROSS JOIN e
    """,
    "The live delete files counted as files: DVs, the distinct files holding them (a Puffin file once, its size "
    "once; an inline DV is no file), position- and equality-delete files, and their bytes.", grain="table")

DANGLING_DELETES = Measure(
    "dangling_deletes",
    {"data": ("key",), "dvs": ("ref_key", "file_path", "file_size_in_bytes"),
     "pos": ("did", "ref", "file_size_in_bytes"), "eq": ("did", "file_size_in_bytes"),
     "position_deletes_applied": ("did",), "equality_deletes_applied": ("did",)},
    ("dvs", "position_delete_files", "equality_delete_files", "files_freed", "bytes_freed"),
    f"""
    WITH live AS (SELECT DISTINCT key FROM {{data}} WHERE key IS NOT NULL),
    dv_state AS (SELECT v.file_path, v.file_size_in_bytes, CASE WHEN l.key IS NULL THEN 1 ELSE 0 END AS dead
                 FROM {{dvs}} v LEFT JOIN live l ON v.ref_key = l.key),
    per_puffin AS (SELECT file_path, COUNT(*) AS total, SUM(dead) AS dead, MAX(file_size_in_bytes) AS size
                   FROM dv_state GROUP BY file_path),
    dv AS (SELECT CAST(COALESCE(SUM(dead), 0) AS BIGINT) AS n,
                  {_count('file_path IS NOT NULL AND dead = total')} AS files,
                  {_total_if('file_path IS NOT NULL AND dead = total', 'size')} AS bytes
           FROM per_puffin),
    pos_hit AS (SELECT DISTINCT did FROM {{position_deletes_applied}}),
    dead_pos AS (SELECT x.file_size_in_bytes FROM {{pos}} x LEFT JOIN live l ON x.ref = l.key
                 LEFT JOIN pos_hit h ON x.did = h.did
                 WHERE (x.ref IS NOT NULL AND l.key IS NULL) OR (x.ref IS NULL AND h.did IS NULL)),
    eq_hit AS (SELECT DISTINCT did FROM {{equality_deletes_applied}}),
    dead_eq AS (SELECT x.file_size_in_bytes FROM {{eq}} x LEFT JOIN eq_hit h ON x.did = h.did WHERE h.did IS NULL),
    b AS (SELECT COUNT(*) AS n, {_total('file_size_in_bytes')} AS bytes FROM dead_pos),
    c AS (SELECT COUNT(*) AS n, {_total('file_size_in_bytes')} AS bytes FROM dead_eq)
    SELECT dv.n AS dvs, b.n AS position_delete_files, c.n AS equality_delete_files,
           dv.files + b.n + c.n AS files_freed,
           {_clip(f'CAST(dv.bytes AS {EXACT}) + b.bytes + c.bytes')} AS bytes_freed
    FROM dv CROSS JOIN b CROSS JOIN c
    """,
    "Delete files that apply to no live data file: DVs whose referenced data file is not live, position-delete "
    "files scoped to a data file that is not live or (unscoped) applying to none, equality-delete files applying "
    "to none; files_freed / bytes_freed count a Puffin file only when every DV in it dangles (the DVs are joined "
    "to the live files once, then summed per Puffin file).", grain="table")

# ---- the storage checks: every snapshot's files and the listing of the table location ----------------------
EXPIRED_ONLY = Measure(
    "expired_only", {"snapshot_files": ("sid", "location", "size"), "retention": ("sid", "kept")},
    ("location", "size"),
    """
    WITH kept AS (SELECT f.location FROM {snapshot_files} f JOIN {retention} r ON f.sid = r.sid WHERE r.kept),
    expired AS (SELECT f.location, f.size FROM {snapshot_files} f JOIN {retention} r ON f.sid = r.sid
                WHERE NOT r.kept)
    SELECT e.location, MAX(e.size) AS size FROM expired e
    WHERE NOT EXISTS (SELECT 1 FROM kept k WHERE k.location = e.location)
    GROUP BY e.location
    """,
    "The files only snapshots past retention hold (none a kept snapshot holds), each once with its largest size: "
    "what expiring them frees.")

EXPIRED_ONLY_TOTALS = Measure(
    "expired_only_totals", {"expired_only": ("size",)}, ("files", "bytes"),
    f"SELECT COUNT(*) AS files, {_total('size')} AS bytes FROM {{expired_only}}",
    "The files only snapshots past retention hold, and their bytes.", grain="table")

METADATA_LISTED = Measure(
    "metadata_listed", {"listing": ("location",)}, ("location",),
    """
    SELECT location FROM {listing} WHERE location LIKE '%.metadata.json' OR location LIKE '%.metadata.json.gz'
    """,
    "The listed metadata files (``*.metadata.json``, gzipped or not).")

METADATA_FILES = Measure(
    "metadata_files", {"metadata_listed": ("location",)}, ("files",),
    "SELECT COUNT(*) AS files FROM {metadata_listed}",
    "How many metadata files the table location holds.", grain="table")

NEWER_METADATA = Measure(
    "newer_metadata",
    {"listing": ("location", "mtime_ms"), "metadata_listed": ("location",), "metadata_log": ("location", "current")},
    ("location",),
    """
    WITH own AS (SELECT MAX(l.mtime_ms) AS ms, COUNT(l.mtime_ms) AS known, COUNT(*) AS n
                 FROM {listing} l JOIN {metadata_log} g ON l.location = g.location WHERE g.current)
    SELECT m.location FROM {metadata_listed} m JOIN {listing} l ON m.location = l.location CROSS JOIN own o
    WHERE o.known = o.n AND l.mtime_ms > o.ms
      AND NOT EXISTS (SELECT 1 FROM {metadata_log} g WHERE g.location = m.location)
    """,
    "Listed metadata files the table does not track, written after the one opened (none when its time is not "
    "known): a later commit's, whose files would look orphaned.")

UNREFERENCED = Measure(
    "unreferenced",
    {"listing": ("location", "hidden"), "snapshot_files": ("location",), "referenced": ("location",)},
    ("location",),
    """
    WITH known AS (SELECT location FROM {snapshot_files} UNION ALL SELECT location FROM {referenced})
    SELECT l.location FROM {listing} l
    WHERE NOT COALESCE(l.hidden, false) AND NOT EXISTS (SELECT 1 FROM known k WHERE k.location = l.location)
    """,
    "Listed files, not hidden, that no snapshot and no metadata file references: the orphan candidates (their "
    "sizes and times are read for them alone before :data:`ORPHANS` runs).")

_YOUNG = "COALESCE(l.mtime_ms >= p.cutoff_ms, false)"
ORPHANS = Measure(
    "orphans",
    {"listing": ("location", "size", "mtime_ms", "hidden"), "unreferenced": ("location",),
     "orphan_params": ("cutoff_ms",)},
    ("location", "size", "mtime_ms", "hidden"),
    f"""
    SELECT l.location, l.size, l.mtime_ms, l.hidden
    FROM {{listing}} l JOIN {{unreferenced}} u ON l.location = u.location CROSS JOIN {{orphan_params}} p
    WHERE NOT {_YOUNG}
    """,
    "The unreferenced files written before orphan_params.cutoff_ms (or at an unknown time): orphans, as listed.")

ORPHAN_TOTALS = Measure(
    "orphan_totals",
    {"listing": ("location", "size", "mtime_ms"), "unreferenced": ("location",), "orphan_params": ("cutoff_ms",)},
    ("files", "bytes", "in_flight"),
    f"""
    WITH u AS (SELECT l.size, {_YOUNG} AS young
               FROM {{listing}} l JOIN {{unreferenced}} u ON l.location = u.location CROSS JOIN {{orphan_params}} p)
    SELECT {_count('NOT young')} AS files, {_total_if('NOT young', 'COALESCE(size, 0)')} AS bytes,
           {_count('young')} AS in_flight
    FROM u
    """,
    "The orphans counted, their bytes (an unknown size as 0), and the unreferenced files written at or after "
    "the cutoff (in-flight writes, never orphans).", grain="table")

#: Every measure, by name: what the parity test runs on both engines.
MEASURES = {m.name: m for m in (POSITION_DELETES_APPLIED, EQUALITY_DELETES_APPLIED, POSITION_DELETE_ROWS,
                                DELETED_ROWS, DATA_FILE_DELETES, FILE_TOTALS, PARTITION_DELETES, PARTITION_TOTALS,
                                PARTITION_SUMMARY, SIZE_HISTOGRAM, DELETE_TOTALS, DANGLING_DELETES, EXPIRED_ONLY,
                                EXPIRED_ONLY_TOTALS, METADATA_LISTED, METADATA_FILES, NEWER_METADATA, UNREFERENCED,
                                ORPHANS, ORPHAN_TOTALS)}

#: The measures other measures read: answering one keeps it for them.
READ_BY_MEASURES = frozenset(n for m in MEASURES.values() for n in m.inputs if n in MEASURES)


def path_scope(referenced_data_file: Any, lower: Any, upper: Any) -> tuple[Optional[str], str, str]:
    """A delete file's path scope as the relations ``pos`` / ``eq`` hold it: ``(ref, lo, hi)`` from its
    ``referenced_data_file`` and the lower and upper bounds of its ``file_path`` column (decoded values or None).
    As Iceberg's delete index: the referenced file when set, else the bounds when they are one path, else None
    (any data file); ``lo`` / ``hi`` as written (``''`` when absent)."""
    from .paths import normalize

    lo = lower if isinstance(lower, str) else ""
    hi = upper if isinstance(upper, str) else ""
    if isinstance(referenced_data_file, str) and referenced_data_file:
        return normalize(referenced_data_file), lo, hi
    return (normalize(lo) if lo and lo == hi else None), lo, hi


def empty(name: str):
    """An empty Arrow table of the input relation ``name``."""
    return arrow_schema(name).empty_table()


def arrow_schema(name: str, columns: Any = None):
    """The Arrow schema of the input relation ``name`` (:data:`RELATIONS`), or of its ``columns``."""
    import pyarrow as pa

    from ..arrow_ddl import arrow_schema as of_ddl

    schema = of_ddl(RELATIONS[name])
    return schema if columns is None else pa.schema([f for f in schema if f.name in columns])


def params(small_size: int, many: int, target: int):
    """The ``params`` relation (Arrow)."""
    import pyarrow as pa

    return pa.table({"small_size": [int(small_size)], "many": [int(many)], "target": [int(target)]},
                    schema=arrow_schema("params"))


def debt_params(threshold: float):
    """The ``debt_params`` relation (Arrow)."""
    import pyarrow as pa

    return pa.table({"threshold": [float(threshold)]}, schema=arrow_schema("debt_params"))


def orphan_params(cutoff_ms: int):
    """The ``orphan_params`` relation (Arrow)."""
    import pyarrow as pa

    return pa.table({"cutoff_ms": [int(cutoff_ms)]}, schema=arrow_schema("orphan_params"))


def locations(values: Any):
    """The ``referenced`` relation (Arrow) of locations, each once, in order."""
    import pyarrow as pa

    return pa.table({"location": pa.array(sorted(set(values)), pa.string())})


def metadata_log(tracked: Any, current: str):
    """The ``metadata_log`` relation (Arrow): the ``tracked`` metadata files and the ``current`` one."""
    import pyarrow as pa

    files = sorted({*tracked, current})
    return pa.table({"location": pa.array(files, pa.string()), "current": pa.array([f == current for f in files])},
                    schema=arrow_schema("metadata_log"))


def retention(keep: Any, expired: Any):
    """The ``retention`` relation (Arrow): the snapshots ``keep`` kept, the ``expired`` ones not."""
    import pyarrow as pa

    kept, past = sorted({int(s) for s in keep}), sorted({int(s) for s in expired})
    return pa.table({"sid": kept + past, "kept": [True] * len(kept) + [False] * len(past)},
                    schema=arrow_schema("retention"))


def size_classes(edges: list):
    """The ``size_classes`` relation (Arrow) of histogram ``edges`` (class i is ``[edges[i], edges[i+1])``; the
    first is open below, the last above)."""
    import pyarrow as pa

    n = len(edges) - 1
    return pa.table({"bucket": list(range(n)), "lo": [None] + [int(e) for e in edges[1:n]],
                     "hi": [int(e) for e in edges[1:n]] + [None]}, schema=arrow_schema("size_classes"))


class MeasureRun:
    """Measures answered over one set of relations, each measure once (a measure read by others is kept)."""

    #: the engine's exact integer type for sums (:data:`EXACT`)
    exact = "DECIMAL(38,0)"

    def __init__(self, relations: dict[str, Any]) -> None:
        self.relations = relations
        self.names: dict[str, str] = {}
        self.tag = uuid.uuid4().hex[:12]

    def _name(self, name: str) -> str:
        if name in self.names:
            return self.names[name]
        if name in self.relations:
            self.names[name] = self._register(name, self.relations[name])
        elif name in MEASURES:
            self.names[name] = self._keep(name, self._sql(MEASURES[name]))
        else:
            raise KeyError(f"measure input {name!r}: neither a relation given nor a measure")
        return self.names[name]

    def _sql(self, measure: Measure) -> str:
        sql = measure.sql.format(exact=self.exact, **{n: self._name(n) for n in measure.inputs})
        if any(self._given_empty(n) for n in measure.empty_without):  # a v3 table's pos and eq: no join run
            return self._no_rows(sql)
        return sql

    def _given_empty(self, name: str) -> bool:
        """Whether the relation ``name`` is given and known, without running anything, to have no rows."""
        return False

    def _no_rows(self, sql: str) -> str:
        """A query of no rows with the columns and types of ``sql``, which it does not run."""
        return f"SELECT * FROM ({sql}) AS no_rows WHERE false"

    def _answer_sql(self, measure: Measure) -> str:
        """The SQL of a measure's answer: its kept table when another measure read it already, or when it is
        one other measures read (kept now, so a later answer reading it does not run it again)."""
        if measure.name not in self.relations and (measure.name in self.names or (
                measure.name in READ_BY_MEASURES and MEASURES.get(measure.name) is measure)):
            return f"SELECT * FROM {self._name(measure.name)}"
        return self._sql(measure)


class LocalMeasures(MeasureRun):
    """Measures run by DuckDB in this process over Arrow tables (``relations``: name → ``pyarrow.Table``, the
    columns of :data:`RELATIONS` it has; keys may be integer codes of the paths, the same in every relation).
    Use as a context manager, or :meth:`close`."""

    exact = "HUGEINT"

    def __init__(self, relations: dict[str, Any]) -> None:
        from .._engine import locked_duckdb

        super().__init__(relations)
        self.con = locked_duckdb()  # Arrow in memory only: no file, no URL
        self.kept: dict[str, Any] = {}  # measure name -> its answer, as Arrow

    def _given_empty(self, name: str) -> bool:
        return name in self.relations and getattr(self.relations[name], "num_rows", None) == 0

    def _no_rows(self, sql: str) -> str:
        # bound, not run (a ``WHERE false`` around it would still run a CTE DuckDB materializes)
        relation = self.con.sql(sql)
        return "SELECT " + ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in zip(relation.columns, relation.types)) \
            + " WHERE false"

    def _register(self, name: str, table: Any) -> str:
        import pyarrow as pa

        view = f"in_{name}"
        if name not in RELATIONS:  # a measure's answer given (computed already): as it is
            self.con.register(view, table)
            return view
        schema = arrow_schema(name)
        fields = []
        for f in schema:
            if f.name not in table.column_names:
                continue
            have = table.schema.field(f.name)
            # keys may come as integer codes of the paths (the same codes in every relation of the run)
            fields.append(have if f.name in KEYS and pa.types.is_integer(have.type) else f)
        self.con.register(view, table.select([f.name for f in fields]).cast(pa.schema(fields)))
        return view

    def _keep(self, name: str, sql: str) -> str:
        # kept as Arrow, registered for the measures that read it and handed back as its answer: a DuckDB table
        # would hold a second copy of what the answer holds (a million rows of per-file or per-partition sums)
        self.kept[name] = self._fetch(sql)
        self.con.register(f"m_{name}", self.kept[name])
        return f"m_{name}"

    def _fetch(self, sql: str):
        relation = self.con.sql(sql)
        return relation.to_arrow_table() if hasattr(relation, "to_arrow_table") else relation.arrow()

    def arrow(self, measure: Measure):
        """The measure's answer: a ``pyarrow.Table`` of its columns."""
        sql = self._answer_sql(measure)
        kept = self.kept.get(measure.name) if MEASURES.get(measure.name) is measure else None
        return (kept if kept is not None else self._fetch(sql)).select(list(measure.columns))

    def close(self) -> None:
        self.con.close()
        self.kept = {}

    def __enter__(self) -> "LocalMeasures":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_local(measure: Measure, **relations: Any):
    """One measure (and those it reads) run by DuckDB here over Arrow tables: a ``pyarrow.Table``."""
    with LocalMeasures(relations) as run:
        return run.arrow(measure)
