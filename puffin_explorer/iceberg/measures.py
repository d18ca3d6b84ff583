"""The per-file measures of a table, each written once as SQL that both engines run.

Which deletes apply to which data file, and so how many rows each data file has deleted, is decided
here and nowhere else: DuckDB runs these texts over Arrow tables on the driver (:func:`run_local`),
Spark SQL over DataFrames on the executors (:func:`run_spark`).  The texts use what both dialects
read the same way (joins, ``UNION ALL``, ``CASE``, ``COALESCE``, string comparison, ``bool_and``; sums cast to ``BIGINT``, which DuckDB
widens otherwise).

The relations a measure reads (a ``key`` names one data file: the path as :func:`~.paths.normalize` writes it
on the driver and in the doctor, as the metadata writes it in ``spark.deletion_report``):

- ``data``: the live data files — ``rid`` (a row id), ``key`` (the path normalized), ``raw`` (the path as written, for the
  ``file_path`` bounds), ``pkey`` (spec id and partition), ``seq`` (data sequence number);
- ``dvs``: the live DVs — ``ref_key`` (the data file referenced), ``record_count`` (its cardinality);
- ``pos`` / ``eq``: the live position / equality delete files — ``did``, ``dpkey``, ``dseq``, and their
  path scope ``ref`` (one data file, ``''`` for any), ``lo`` / ``hi`` (``file_path`` bounds, ``''`` when
  absent); ``eq`` also ``partition_empty`` (an unpartitioned one applies to every partition);
- ``pos_rows``: rows that live Parquet position-delete files name, per data file — ``key``, ``rows``,
  ``files`` (read from the files themselves).

Adding a measure is one :class:`Measure` in :data:`MEASURES`; ``tests/test_measures_parity.py`` runs every
one of them on both engines over the same relations and compares the answers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

#: Columns that name a data file: strings, or on the driver integer codes of them (joins on codes need a
#: fraction of the memory of joins on paths).
KEYS = ("key", "ref_key")
#: Spark DDL of each input relation (DuckDB reads the same columns from Arrow).
RELATIONS = {
    "data": "rid bigint, key string, raw string, pkey string, seq bigint",
    "dvs": "ref_key string, record_count bigint",
    "pos": "did bigint, dpkey string, dseq bigint, ref string, lo string, hi string",
    "eq": "did bigint, dpkey string, dseq bigint, ref string, lo string, hi string, partition_empty boolean",
    "pos_rows": "key string, rows bigint, files bigint",
}


@dataclass(frozen=True)
class Measure:
    """One measure: its SQL (relations named ``{data}``, ``{dvs}``, …), the columns it reads of each relation
    and the columns it returns, in order (its rows are compared sorted by them)."""

    name: str
    inputs: dict
    columns: tuple[str, ...]
    sql: str
    doc: str


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
    WHERE x.ref <> '' AND d.seq <= x.dseq AND {_IN_SCOPE}
    UNION ALL
    SELECT d.rid, x.did FROM open_data d JOIN {{pos}} x ON d.pkey = x.dpkey
    WHERE x.ref = '' AND d.seq <= x.dseq AND {_IN_SCOPE}
    """,
    "(data file, position-delete file) pairs where the deletes apply: the same partition (and spec), a data "
    "sequence number at most the delete file's, within its path scope; none for a data file with a DV, which "
    "supersedes its position deletes (v3).")

EQUALITY_DELETES_APPLIED = Measure(
    "equality_deletes_applied",
    {"data": ("rid", "key", "raw", "pkey", "seq"), "eq": _SCOPE + ("partition_empty",)}, ("rid", "did"),
    f"""
    WITH everywhere AS (SELECT COALESCE(bool_and(partition_empty), false) AS g FROM {{eq}}),
    loose AS (SELECT x.* FROM {{eq}} x WHERE x.ref = '')
    SELECT d.rid, x.did FROM {{data}} d JOIN {{eq}} x ON d.key = x.ref CROSS JOIN everywhere w
    WHERE x.ref <> '' AND (w.g OR d.pkey = x.dpkey) AND d.seq < x.dseq AND {_IN_SCOPE}
    UNION ALL
    SELECT d.rid, x.did FROM {{data}} d JOIN loose x ON d.pkey = x.dpkey CROSS JOIN everywhere w
    WHERE NOT w.g AND d.seq < x.dseq AND {_IN_SCOPE}
    UNION ALL
    SELECT d.rid, x.did FROM {{data}} d CROSS JOIN loose x CROSS JOIN everywhere w
    WHERE w.g AND d.seq < x.dseq AND {_IN_SCOPE}
    """,
    "(data file, equality-delete file) pairs where the deletes apply: a data sequence number strictly below the "
    "delete file's, the same partition (every partition when every equality-delete file is unpartitioned), "
    "within its path scope.")

DELETED_ROWS = Measure(
    "deleted_rows", {"data": ("key",), "dvs": ("ref_key", "record_count"), "pos_rows": ("key", "rows", "files")},
    ("key", "dv_rows", "dvs", "pos_rows", "pos_files", "superseded", "deleted"),
    """
    WITH per_dv AS (SELECT ref_key AS key, CAST(SUM(record_count) AS BIGINT) AS dv_rows, COUNT(*) AS dvs
                    FROM {dvs} WHERE ref_key IS NOT NULL GROUP BY ref_key),
    files AS (SELECT DISTINCT key FROM {data} WHERE key IS NOT NULL),
    joined AS (
        SELECT d.key, COALESCE(v.dv_rows, 0) AS dv_rows, COALESCE(v.dvs, 0) AS dvs,
               COALESCE(p.rows, 0) AS pos_rows, COALESCE(p.files, 0) AS pos_files,
               CASE WHEN v.dvs IS NULL THEN 0 ELSE COALESCE(p.rows, 0) END AS superseded
        FROM files d LEFT JOIN per_dv v ON d.key = v.key LEFT JOIN {pos_rows} p ON d.key = p.key)
    SELECT key, dv_rows, dvs, pos_rows, pos_files, superseded, dv_rows + pos_rows - superseded AS deleted
    FROM joined
    """,
    "Per live data file (by key): the rows its DVs delete (a DV counts for the data file it references), the rows live "
    "Parquet position-delete files name in it, those its DV supersedes, and deleted = DV rows + position-delete "
    "rows - superseded. A delete whose data file is not live counts for nothing; equality deletes are not "
    "resolved to rows.")

#: Every measure, by name: what the parity test runs on both engines.
MEASURES = {m.name: m for m in (POSITION_DELETES_APPLIED, EQUALITY_DELETES_APPLIED, DELETED_ROWS)}


def path_scope(referenced_data_file: Any, lower: Any, upper: Any) -> tuple[str, str, str]:
    """A delete file's path scope as the relations ``pos`` / ``eq`` hold it: ``(ref, lo, hi)`` from its
    ``referenced_data_file`` and the lower and upper bounds of its ``file_path`` column (decoded values or None).
    As Iceberg's delete index: the referenced file when set, else the bounds when they are one path; ``lo`` /
    ``hi`` as written (``''`` when absent)."""
    from .paths import normalize

    lo = lower if isinstance(lower, str) else ""
    hi = upper if isinstance(upper, str) else ""
    if isinstance(referenced_data_file, str) and referenced_data_file:
        return normalize(referenced_data_file), lo, hi
    return (normalize(lo) if lo and lo == hi else ""), lo, hi


def empty(name: str):
    """An empty Arrow table of the input relation ``name``."""
    return arrow_schema(name).empty_table()


def arrow_schema(name: str, columns: Any = None):
    """The Arrow schema of the input relation ``name`` (:data:`RELATIONS`), or of its ``columns``."""
    import pyarrow as pa

    from ..arrow_ddl import arrow_schema as of_ddl

    schema = of_ddl(RELATIONS[name])
    return schema if columns is None else pa.schema([f for f in schema if f.name in columns])


def run_local(measure: Measure, **relations: Any):
    """The measure run by DuckDB on this process over Arrow tables (one per input): a ``pyarrow.Table``."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect(config={"threads": 1})
    try:
        names = {}
        for name, columns in measure.inputs.items():
            names[name] = f"in_{name}"
            table = relations[name].select(list(columns))
            schema = arrow_schema(name, columns)
            # keys may come as integer codes of the paths (the same codes in every relation of the call)
            schema = pa.schema([table.schema.field(f.name) if f.name in KEYS
                                and pa.types.is_integer(table.schema.field(f.name).type) else f for f in schema])
            con.register(names[name], table.cast(schema))
        relation = con.sql(measure.sql.format(**names))
        table = relation.to_arrow_table() if hasattr(relation, "to_arrow_table") else relation.arrow()
        return table.select(list(measure.columns))
    finally:
        con.close()


def run_spark(spark: Any, measure: Measure, **relations: Any):
    """The measure run by Spark SQL over DataFrames (one per input, columns as :data:`RELATIONS`): a DataFrame."""
    tag = uuid.uuid4().hex[:12]
    names = {}
    for name, columns in measure.inputs.items():
        names[name] = f"pe_{name}_{tag}"
        relations[name].select(*columns).createOrReplaceTempView(names[name])
    return spark.sql(measure.sql.format(**names)).select(*measure.columns)
