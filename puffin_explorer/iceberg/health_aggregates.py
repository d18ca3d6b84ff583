"""What the doctor reads of the current snapshot's live files, already summed: :class:`FileAggregates`, made from the
answers of the measures of :mod:`.measures` by whichever engine ran them (:func:`file_aggregates`), and on the driver
by DuckDB over the entry index's columns (:func:`driver_file_aggregates`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from .._memory import release_freed_memory
from ..coverage import WHOLE, Coverage
from ..health import size_histogram, sum_relations
from .column_stats import columns_frame
from .columns import UNPARTITIONED, largest_of_each, nullable_ints, partition_texts, plain, strings
from .deletes import deleted_rows_of
from .health_clustering import clustering_by_partition, clustering_frame
from .index import take_rows
from .measures import DATA_FILE_DELETES, MEASURES, LocalMeasures
from .relations import coded_relations

if TYPE_CHECKING:  # pragma: no cover
    from .metric_totals import MetricTotals
    from .relations import Coded
    from .source import TableSource

#: The measures whose answers make :class:`FileAggregates` (each one row, or one per partition or size class).
SUM_MEASURES = ("file_totals", "delete_totals", "partition_totals", "partition_summary", "size_histogram",
                "dangling_deletes")
#: Data files kept in ``frames["amplification"]`` (driver and Spark alike): the ones merging the most delete files.
AMPLIFICATION_ROWS = 1_000
#: Partitions kept in ``frames["partitions"]`` (driver and Spark alike): the first by partition key.  Findings
#: and metrics read the ``partition_summary`` measure, which sums every partition.
PARTITION_ROWS = 10_000
#: The per data file columns of ``frames["amplification"]``, in order.
AMPLIFICATION_COLUMNS = ("file_path", "partition", "spec_id", "sequence_number", "record_count",
                         "file_size_in_bytes", "pkey", "dvs", "position_delete_files", "equality_delete_files",
                         "delete_files", "deleted_rows")


@dataclass
class FileAggregates:
    """What the doctor needs from the current snapshot's live files, already summed.

    The answers of the measures of :mod:`.measures` (:data:`SUM_MEASURES`), run by DuckDB on the driver
    (:func:`driver_file_aggregates`) or by Spark SQL over the entry index built on the executors
    (``puffin_explorer/spark/health.py``), put together by :func:`file_aggregates`; one set of metric and
    finding builders reads it (:func:`.health_live_files.current_findings`).  ``counts`` holds ``data_files``,
    ``data_bytes``, ``records``, ``dvs``, ``position_delete_files``, ``equality_delete_files``, ``delete_files``,
    ``delete_bytes``, ``deleted_rows``, ``data_files_with_deletes``, ``max_delete_files_per_data_file``,
    ``small_files`` and ``small_bytes``; ``touched`` the data files that merge at least one delete file
    (``files``, ``max_size``, ``rows``, ``deleted_rows``), ``many`` those merging more than
    :data:`DELETE_FILES_PER_DATA_FILE` (``files``, ``rows``), ``dangling`` the delete files no live data file
    needs (``dvs``, ``position_delete_files``, ``files_freed``, ``bytes_freed``); ``partitions`` the first
    :data:`PARTITION_ROWS` partitions by key, ``partition_summary`` every partition summed (one row of the
    ``partition_summary`` measure).
    """

    counts: dict[str, int]
    size_histogram: Any
    partitions: Any
    partition_summary: dict[str, Any]
    touched: dict[str, Any]
    many: dict[str, Any]
    mean_delete_files: float
    dangling: dict[str, int]
    columns: Any
    clustering: Any = None
    amplification: Any = None
    #: why the column metrics of some manifests could not be read (their files count as files without metrics)
    metrics_unread: list = field(default_factory=list)
    #: findings about how the files were read rather than about the table (manifests decoded the slow way)
    notes: list = field(default_factory=list)
    #: which counts are whole: a manifest or position-delete file not read leaves the counts it feeds unknown
    coverage: Coverage = WHOLE


def file_aggregates(answers: dict[str, list], target: int, small_size: int, columns, clustering,
                    amplification) -> "FileAggregates":
    """:class:`FileAggregates` from the answers of :data:`SUM_MEASURES` (name -> rows as dicts), by whichever
    engine ran them, and the column, clustering and amplification frames."""
    totals, deletes, dangling = answers["file_totals"][0], answers["delete_totals"][0], answers["dangling_deletes"][0]
    c = {k: int(totals[k]) for k in ("data_files", "data_bytes", "records", "deleted_rows", "data_files_with_deletes",
                                     "max_delete_files_per_data_file", "small_files", "small_bytes")}
    c.update({k: int(deletes[k]) for k in ("dvs", "position_delete_files", "equality_delete_files", "delete_files",
                                           "delete_bytes")})
    hist = size_histogram(int(target), small_size, {int(r["bucket"]): r for r in answers["size_histogram"]})
    by_part = _partition_frame(answers["partition_totals"])
    return FileAggregates(
        counts=c, size_histogram=hist, partitions=by_part, partition_summary=answers["partition_summary"][0],
        touched={"files": c["data_files_with_deletes"],
                 "max_size": None if totals["touched_max_size"] is None else int(totals["touched_max_size"]),
                 "rows": int(totals["touched_rows"]), "deleted_rows": int(totals["touched_deleted_rows"])},
        many={"files": int(totals["many_files"]), "rows": int(totals["many_rows"])},
        mean_delete_files=float(totals["mean_delete_files"]),
        dangling={k: int(dangling[k]) for k in ("dvs", "position_delete_files", "equality_delete_files",
                                                 "files_freed", "bytes_freed")},
        columns=columns, clustering=clustering, amplification=amplification)


_PARTITION_SUMS = ("files", "rows", "deleted_rows", "bytes", "delete_files", "small_files", "small_bytes",
                   "small_rows")


def _partition_frame(parts) -> Any:
    """``partitions`` of :class:`FileAggregates`, in partition order, from the ``partition_totals`` answer: rows
    as dicts (Spark collects them) or an Arrow table (DuckDB's, one row per partition, never made Python rows)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(parts, list):
        parts = sorted(parts, key=lambda r: r["pkey"])
        return pd.DataFrame({"partition": pd.array([r["partition"] for r in parts], dtype="string"),
                             **{col: pd.array([int(r[col]) for r in parts], dtype="int64") for col in _PARTITION_SUMS}})
    parts = parts.sort_by("pkey")
    return pd.DataFrame({"partition": pd.array(parts.column("partition").to_pandas(), dtype="string"),
                         **{col: pd.array(pc.cast(parts.column(col), pa.int64()).to_numpy(), dtype="int64")
                            for col in _PARTITION_SUMS}})


def _first_rows(table, k: int, order: list) -> Any:
    """The first ``k`` rows of an Arrow table in ``order`` (``sort_by`` keys), found without sorting the rest."""
    import pyarrow.compute as pc

    if table.num_rows == 0 or k <= 0:  # pyarrow before 26 cannot select from an empty table
        return table.slice(0, 0)
    return table.take(pc.select_k_unstable(table, k=min(k, table.num_rows), sort_keys=order)).sort_by(order)


def driver_file_aggregates(source: "TableSource", index, target: int, small_size: int,
                           column: Optional[str], totals: "MetricTotals") -> FileAggregates:
    """:class:`FileAggregates` of a snapshot's entry index, here: the measures of :mod:`.measures` run by DuckDB
    over the index's columns (:func:`.relations.index_relations`; deleted rows are :func:`~.deletes.row_counts`',
    the same measure computed once per index and shared with the card), column metrics and clustering by the
    functions the Spark doctor runs per task and per partition, from ``totals`` (:mod:`.metric_totals`)."""
    import numpy as np

    # paths (the index's path codes) and partitions as integers: DuckDB joins integers
    codes = coded_relations(source, index, scope_bounds=totals.scope_bounds)
    release_freed_memory()  # the partition texts and string keys coded away
    relations = codes.relations
    relations.update(sum_relations(target, small_size))
    at = np.flatnonzero(index.mask(["data"]))  # the data rows, in the relations' rid order
    paths = index.take(at, ["file_path"]).column("file_path")
    relations["deleted_rows"] = _deleted_rows_relation(source, index, relations, paths, at)
    answers, per_file = _sum_answers(relations)
    _name_partitions(answers, codes)
    data_pkey = relations["data"].column("pkey")
    del relations
    amplification = _amplification_frame(index, codes, per_file, paths, at, data_pkey)
    clustering = None if column is None else _clustering_of(index, codes, totals, at, data_pkey, column)
    return file_aggregates(answers, target, small_size, columns_frame([totals.partial]), clustering, amplification)


def _deleted_rows_relation(source: "TableSource", index, relations: dict[str, Any], paths, at) -> Any:
    """The ``deleted_rows`` relation, answered already (``row_counts``, shared with the card): one row per data file
    key with its largest deleted-row count and the DVs naming it (``DATA_FILE_DELETES`` reads whether it has one
    from here).  Keys are integer codes: arrays indexed by code, no hash table."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    deleted = deleted_rows_of(source, index, paths, rows=at)
    keys = pc.fill_null(relations["data"].column("key"), -1).to_numpy()
    refs = pc.fill_null(relations["dvs"].column("ref_key"), -1).to_numpy()
    size = int(max(keys.max(initial=-1), refs.max(initial=-1))) + 1
    codes_of, most = largest_of_each(keys, deleted, size)
    dvs_per = np.bincount(refs[refs >= 0], minlength=size)
    return pa.table({"key": pa.array(codes_of, pa.int64()), "deleted": pa.array(most, pa.int64()),
                     "dvs": pa.array(dvs_per[codes_of], pa.int64())})


def _sum_answers(relations: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The answers of :data:`SUM_MEASURES` by DuckDB (one row each, or one per size class, as Python rows;
    ``partition_totals``, one row per partition, stays Arrow) and ``DATA_FILE_DELETES``' rows (Arrow)."""
    with LocalMeasures(relations) as run:
        answers = {name: run.arrow(MEASURES[name]) for name in SUM_MEASURES}
        per_file = run.arrow(DATA_FILE_DELETES)
    release_freed_memory()
    for name in SUM_MEASURES:
        if name != "partition_totals":
            answers[name] = answers[name].to_pylist()
    return answers, per_file


def _name_partitions(answers: dict[str, Any], codes: "Coded") -> None:
    """The first :data:`PARTITION_ROWS` partitions by key (codes follow the text's order), each with its text (the
    smallest of its files'), column-wise; and the largest partition's text."""
    parts = _first_rows(answers["partition_totals"], PARTITION_ROWS, [("pkey", "ascending")])
    answers["partition_totals"] = parts.append_column("partition", codes.partitions.take(parts.column("pkey")))
    summary = answers["partition_summary"][0]
    summary["largest_partition"] = None if summary["largest_pkey"] is None else \
        codes.partitions[int(summary["largest_pkey"])].as_py()


def _amplification_frame(index, codes: "Coded", per_file, paths, at, data_pkey) -> Any:
    """``frames["amplification"]``: the :data:`AMPLIFICATION_ROWS` data files merging the most delete files, as the
    Spark doctor keeps them; only they become rows."""
    import pandas as pd

    ranked = per_file.append_column("file_path", paths.take(per_file.column("rid")))
    order = [("delete_files", "descending"), ("deleted_rows", "descending"), ("file_path", "ascending")]
    top = _first_rows(ranked, AMPLIFICATION_ROWS, order)
    rids = top.column("rid").combine_chunks()
    rows = take_rows(index.table.select(["file_path", "partition", "spec_id", "sequence_number", "record_count",
                                         "file_size_in_bytes"]), at[rids.to_numpy()])
    amp = pd.DataFrame({"file_path": strings(rows.column("file_path")), "partition": partition_texts(index, rows),
                        "spec_id": plain(rows.column("spec_id")),
                        "sequence_number": nullable_ints(rows.column("sequence_number")),
                        "record_count": plain(rows.column("record_count")),
                        "file_size_in_bytes": plain(rows.column("file_size_in_bytes")),
                        "pkey": strings(codes.pkeys.take(data_pkey.take(rids)))},
                       index=pd.RangeIndex(len(rids)))
    for col in AMPLIFICATION_COLUMNS[7:]:
        amp[col] = top.column(col).to_numpy()
    return amp


def _clustering_of(index, codes: "Coded", totals: "MetricTotals", at, data_pkey, column: str) -> Any:
    """The ``clustering`` frame on ``column``, from its bounds per data file (the summed metrics: ``totals``)."""
    import pandas as pd
    import pyarrow.compute as pc

    sizes = index.take(at, ["record_count", "file_size_in_bytes"])
    d = pd.DataFrame({"pkey": codes.pkeys.take(data_pkey).to_numpy(zero_copy_only=False),
                      "partition": pc.fill_null(codes.partitions.take(data_pkey), UNPARTITIONED)
                      .to_numpy(zero_copy_only=False),
                      "lo": totals.lows, "hi": totals.highs,
                      "bytes": pc.fill_null(sizes.column("file_size_in_bytes"), 0).to_numpy().astype("int64"),
                      "rows": pc.fill_null(sizes.column("record_count"), 0).to_numpy().astype("int64")})
    return clustering_frame(clustering_by_partition(d), column)


__all__ = ["AMPLIFICATION_COLUMNS", "AMPLIFICATION_ROWS", "PARTITION_ROWS", "SUM_MEASURES", "FileAggregates",
           "driver_file_aggregates", "file_aggregates"]
