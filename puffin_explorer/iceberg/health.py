"""The table doctor: every health check of an Iceberg table, each problem a finding with the statement that fixes it.

:func:`table_health` computes a :class:`TableHealth` over a :class:`~.source.TableSource` and the frames every
other analysis builds from it (the entry index, ``overview.manifest_frame``, ``snapshot_frame``,
``statistics_frame``, the metadata, the I/O layer's listing), never a private cache.
Views (``display/health_view.py``) only format it.

Deletion vectors are counted the way the spec stores them: a DV is a range of a Puffin file, so
the delete *files* are distinct Puffin files (one file holding four DVs is one delete file whose
bytes count once).  Which deletes apply to which data file, the deleted rows, and every sum over the files
(per partition, per size class, dangling deletes, read amplification) are the measures of :mod:`.measures`
(one SQL text each, run by DuckDB here and by Spark SQL in the Spark doctor): the card, delete
debt and the doctor show one number (``deletes.row_counts``: DV cardinalities, the rows live Parquet
position-delete files name in live data files, position deletes of a data file that has a DV superseded).

Thresholds come from the table's own properties, with Iceberg's defaults when a property is not
set; every finding says which (``evidence["source"]``).  Defaults used:

* ``write.target-file-size-bytes`` 512 MiB; a data file is *small* below 75 % of it, the
  ``min-file-size-bytes`` default of Iceberg's ``rewrite_data_files``;
* ``history.expire.max-snapshot-age-ms`` 5 days, ``history.expire.min-snapshots-to-keep`` 1;
* ``commit.manifest.target-size-bytes`` 8 MiB, ``commit.manifest.min-count-to-merge`` 100;
* ``write.metadata.previous-versions-max`` 100, ``write.metadata.delete-after-commit.enabled`` false;
* orphan files: unreferenced files older than 3 days (``remove_orphan_files``' default); like
  ``remove_orphan_files``, names starting with ``.`` or ``_`` (Hadoop's ``.crc`` files) are skipped;
* deleted share above 10 % (the table card's compaction threshold).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from .._text import are, plural
from ..errors import PuffinError
from ..health import (CLUSTERING_DEPTH_THRESHOLD, DAY_MS, DEFAULTS, DELETE_FILES_PER_DATA_FILE,
                      DELETED_SHARE_THRESHOLD, FIX_ORDER, METRIC_KEYS, MIB, SMALL_FILE_SHARE, Action, HealthFinding,
                      TableHealth, deleted_share_finding, epoch_ms, fill_listing_stats, listing_arrow, size_histogram, small_files_finding,
                      sum_relations, ts_literal, unknown_counts)
from ..coverage import WHOLE, Coverage
from ..regions import Severity
from .deletes import coverage
from .index import SLOW_DECODE, build_index
from .overview import manifest_frame, snapshot_frame, statistics_frame
from .paths import join, normalize

#: Index findings that mean a snapshot's file list is incomplete.
_MANIFEST_BROKEN = ("iceberg.manifest-unreadable", "iceberg.manifest-damaged", "table.file-vanished")

if TYPE_CHECKING:  # pragma: no cover
    from .metric_totals import MetricTotals
    from .source import TableSource


#: Unreferenced files younger than this are in-flight writes, not orphans (``remove_orphan_files``' default).
ORPHAN_GRACE_MS = 3 * DAY_MS
#: The largest partition holding this many times the median partition's bytes is skewed.
SKEW_RATIO = 10.0
#: Sort-order transforms that keep the source column's order (bounds of the source column still cluster).
_ORDERED_TRANSFORMS = ("identity", "year", "month", "day", "hour", "truncate")



# ---- thresholds --------------------------------------------------------------------------------
def _threshold(props: dict[str, str], key: str) -> dict[str, Any]:
    """``{"value", "property", "source"}``: the table's property when set and valid, else Iceberg's default."""
    default = DEFAULTS[key]
    raw = props.get(key)
    if raw is not None:
        try:
            if isinstance(default, bool):
                low = str(raw).strip().lower()
                if low not in ("true", "false"):
                    raise ValueError(raw)
                value: Any = low == "true"
            else:
                value = int(str(raw).strip())
                if value < 0:
                    raise ValueError(raw)
            return {"value": value, "property": key, "source": "table property"}
        except ValueError:
            return {"value": default, "property": key, "source": f"default (table property {raw!r} is not valid)"}
    return {"value": default, "property": key, "source": "default"}


# ---- statement builders ------------------------------------------------------------------------
def _sql_str(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _duration(ms: int) -> str:
    """A Trino duration literal (``5d``, ``36h``, ``90s``) no longer than ``ms``."""
    for unit, size in (("d", DAY_MS), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{max(ms // 1000, 0)}s"


def _map(options: dict[str, Any]) -> str:
    return "map(" + ", ".join(f"{_sql_str(k)}, {_sql_str(v)}" for k, v in options.items()) + ")"


# ---- the checks ---------------------------------------------------------------------------------
#: The measures whose answers make :class:`FileAggregates` (each one row, or one per partition or size class).
SUM_MEASURES = ("file_totals", "delete_totals", "partition_totals", "partition_summary", "size_histogram",
                "dangling_deletes")
#: File-set paths looked up in the listing at a time by the orphan check on the driver.
ORPHAN_LOOKUP = 262_144
#: Data files kept in ``frames["amplification"]`` (driver and Spark alike): the ones merging the most delete files.
AMPLIFICATION_ROWS = 1_000
#: Rows kept in ``frames["expired_only"]`` (driver and Spark alike; Spark's ``frames["orphans"]`` too): the
#: first by location.
FRAME_ROWS = 10_000
#: Partitions kept in ``frames["partitions"]`` (driver and Spark alike): the first by partition key.  Findings
#: and metrics read the ``partition_summary`` measure, which sums every partition.
PARTITION_ROWS = 10_000
#: The per data file columns of ``frames["amplification"]``, in order.
AMPLIFICATION_COLUMNS = ("file_path", "partition", "spec_id", "sequence_number", "record_count",
                         "file_size_in_bytes", "pkey", "dvs", "position_delete_files", "equality_delete_files",
                         "delete_files", "deleted_rows")


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


def _snapshot_files(source: "TableSource", snapshot_id: int, manifests) -> Any:
    """Every file one snapshot references as an Arrow table of normalized ``location`` and ``size`` (no Python
    value per file): live data and delete files (a Puffin file once per DV, or once when the index's paths are
    coded already: each distinct path located once, its largest size), its manifests (its manifest list is added
    later)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import largest_of_each, located_array, normalized

    ix = build_index(source, snapshot_id)
    codes = ix.derived.get("path-codes")  # the current snapshot's, made by the doctor's relations
    if codes is not None:  # (an entry without a path, code -1, references no file)
        live = ix.mask()
        present, largest = largest_of_each(codes.files[live], ix.ints("file_size_in_bytes", 0)[live],
                                           codes.size)
        files = pa.table({"location": normalized(located_array(source, codes.take(present))),
                          "size": pa.array(largest, pa.int64())})
    else:
        rows = ix.rows(ix.mask(), ["file_path", "file_size_in_bytes"])
        files = pa.table({"location": normalized(located_array(source, rows.column("file_path"))),
                          "size": pc.fill_null(pc.cast(rows.column("file_size_in_bytes"), pa.int64()), 0)})
        files = files.filter(pc.is_valid(files.column("location")))  # an entry without a path references no file
    if len(manifests):
        files = pa.concat_tables([files, pa.table({
            "location": pa.array([normalize(v) for v in manifests["location"]], pa.string()),
            "size": pa.array(manifests["manifest_length"].astype("int64").to_numpy(), pa.int64())})])
    return files


def _files_table(rows: list) -> Any:
    """``(location, size)`` pairs as a :func:`_snapshot_files` table."""
    import pyarrow as pa

    return pa.table({"location": pa.array([r[0] for r in rows], pa.string()),
                     "size": pa.array([r[1] for r in rows], pa.int64())})


def _parent_id(value: Any) -> Optional[int]:
    """A parent snapshot id out of a frame cell (None, NA and NaN mean none)."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return int(value)


def _retained(snaps, refs: dict[str, dict[str, Any]], current: Optional[int], cutoff_ms: int,
              min_keep: int) -> set[int]:
    """Snapshot ids ``expire_snapshots(older_than => cutoff, retain_last => min_keep)`` keeps: every ref's
    snapshot, each branch's newest ``min_keep`` ancestors, and every snapshot at or after the cutoff."""
    parent = dict(zip(snaps["snapshot_id"].astype("int64"), snaps["parent_snapshot_id"]))
    # a snapshot of unknown time is kept: the doctor never calls a snapshot old without knowing its age
    keep = set(snaps.loc[(snaps["timestamp_ms"] >= cutoff_ms).fillna(True).astype(bool), "snapshot_id"].astype("int64"))
    heads = {int(r["snapshot-id"]): r.get("type", "branch") for r in refs.values() if "snapshot-id" in r}
    if current is not None:
        heads.setdefault(int(current), "branch")
    for head, kind in heads.items():
        if head not in parent:
            continue
        keep.add(head)
        if kind != "branch":
            continue
        sid, n = head, 0
        while sid is not None and sid in parent and n < max(min_keep, 1):
            keep.add(sid)
            n += 1
            sid = _parent_id(parent[sid])
    return keep


@dataclass
class FileAggregates:
    """What the doctor needs from the current snapshot's live files, already summed.

    The answers of the measures of :mod:`.measures` (:data:`SUM_MEASURES`), run by DuckDB on the driver
    (:func:`driver_file_aggregates`) or by Spark SQL over the entry index built on the executors
    (``puffin_explorer/spark/health.py``), put together by :func:`file_aggregates`; one set of metric and
    finding builders reads it (:func:`_current_findings`).  ``counts`` holds ``data_files``, ``data_bytes``, ``records``,
    ``dvs``, ``position_delete_files``, ``equality_delete_files``, ``delete_files``, ``delete_bytes``,
    ``deleted_rows``, ``data_files_with_deletes``, ``max_delete_files_per_data_file``, ``small_files`` and
    ``small_bytes``; ``touched`` the data files that merge at least one delete file (``files``, ``max_size``,
    ``rows``, ``deleted_rows``), ``many`` those merging more than :data:`DELETE_FILES_PER_DATA_FILE`
    (``files``, ``rows``), ``dangling`` the delete files no live data file needs (``dvs``,
    ``position_delete_files``, ``files_freed``, ``bytes_freed``); ``partitions`` the first
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


def driver_file_aggregates(source: "TableSource", index, target: int, small_size: int,
                           column: Optional[str], totals: "MetricTotals") -> FileAggregates:
    """:class:`FileAggregates` of a snapshot's entry index, here: the measures of :mod:`.measures` run by DuckDB
    over the index's columns (:func:`.relations.index_relations`; deleted rows are :func:`~.deletes.row_counts`',
    the same measure computed once per index and shared with the card), column metrics and clustering by the
    functions the Spark doctor runs per task and per partition, from ``totals`` (:mod:`.metric_totals`)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._memory import release_freed_memory
    from .column_stats import columns_frame
    from .columns import UNPARTITIONED, largest_of_each, nullable_ints, partition_texts, plain, strings
    from .deletes import deleted_rows_of
    from .measures import DATA_FILE_DELETES, MEASURES, LocalMeasures
    from .index import take_rows
    from .relations import coded_relations

    # paths (the index's path codes) and partitions as integers: DuckDB joins integers
    codes = coded_relations(source, index, scope_bounds=totals.scope_bounds)
    release_freed_memory()  # the partition texts and string keys coded away
    relations = codes.relations
    relations.update(sum_relations(target, small_size))
    at = np.flatnonzero(index.mask(["data"]))  # the data rows, in the relations' rid order
    paths = index.take(at, ["file_path"]).column("file_path")
    # DELETED_ROWS answered already (row_counts, shared with the card): one row per data file key, with the DVs
    # naming it (DATA_FILE_DELETES reads whether it has one from here)
    deleted = deleted_rows_of(source, index, paths, rows=at)
    # per data file key (integer codes: arrays indexed by code, no hash table): its largest deleted-row count and
    # the DVs naming it
    keys = pc.fill_null(relations["data"].column("key"), -1).to_numpy()
    refs = pc.fill_null(relations["dvs"].column("ref_key"), -1).to_numpy()
    size = int(max(keys.max(initial=-1), refs.max(initial=-1))) + 1
    codes_of, most = largest_of_each(keys, deleted, size)
    dvs_per = np.bincount(refs[refs >= 0], minlength=size)
    relations["deleted_rows"] = pa.table({"key": pa.array(codes_of, pa.int64()), "deleted": pa.array(most, pa.int64()),
                                          "dvs": pa.array(dvs_per[codes_of], pa.int64())})
    with LocalMeasures(relations) as run:
        answers = {name: run.arrow(MEASURES[name]) for name in SUM_MEASURES}
        per_file = run.arrow(DATA_FILE_DELETES)
    release_freed_memory()
    for name in SUM_MEASURES:  # one row each, or one per size class: Python rows
        if name != "partition_totals":
            answers[name] = answers[name].to_pylist()
    # the first partitions by key (codes follow the text's order), each with its text (the smallest of its files'),
    # column-wise; and the largest partition's
    parts = _first_rows(answers["partition_totals"], PARTITION_ROWS, [("pkey", "ascending")])
    answers["partition_totals"] = parts.append_column("partition", codes.partitions.take(parts.column("pkey")))
    summary = answers["partition_summary"][0]
    summary["largest_partition"] = None if summary["largest_pkey"] is None else \
        codes.partitions[int(summary["largest_pkey"])].as_py()
    data = relations["data"]
    data_pkey = data.column("pkey")
    del relations

    # the data files merging the most delete files, as the Spark doctor keeps them: only they become rows
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

    # the clustering column's bounds per data file (summed metrics: ``totals``)
    clustering = None
    if column is not None:
        lows, highs = totals.lows, totals.highs
        sizes = index.take(at, ["record_count", "file_size_in_bytes"])
        d = pd.DataFrame({"pkey": codes.pkeys.take(data_pkey).to_numpy(zero_copy_only=False),
                          "partition": pc.fill_null(codes.partitions.take(data_pkey), UNPARTITIONED)
                          .to_numpy(zero_copy_only=False),
                          "lo": lows, "hi": highs,
                          "bytes": pc.fill_null(sizes.column("file_size_in_bytes"), 0).to_numpy().astype("int64"),
                          "rows": pc.fill_null(sizes.column("record_count"), 0).to_numpy().astype("int64")})
        clustering = clustering_frame(clustering_by_partition(d), column)
    return file_aggregates(answers, target, small_size, columns_frame([totals.partial]), clustering, amp)


def _current_findings(findings, frames, m, agg: FileAggregates, th, target, small_size, column, column_source,
                      call, spark_t, catalog, ident, format_version) -> None:
    """The metrics and findings of the current snapshot's files, from their aggregates."""
    m.update(agg.counts)
    m["live_rows"] = m["records"] - m["deleted_rows"]
    m["deleted_share"] = (m["deleted_rows"] / m["records"]) if m["records"] else 0.0
    frames["amplification"] = agg.amplification
    frames["size_histogram"] = agg.size_histogram
    frames["partitions"] = agg.partitions
    summary = agg.partition_summary
    m["partitions"] = int(summary["partitions"])
    _small_files_finding(findings, summary, m, th, target, small_size, call, spark_t, ident)
    _deletes_findings(findings, agg, m, call, spark_t, ident, format_version)
    _dangling_finding(findings, agg.dangling, m)
    _skew_finding(findings, summary)
    if column is not None:
        frames["clustering"] = agg.clustering
        _clustering_finding(findings, agg.clustering, column, column_source, m, call, spark_t, ident)
    frames["columns"] = agg.columns
    _column_findings(findings, frames["columns"], m, spark_t, catalog, ident)
    findings += [HealthFinding(f.code, f.severity, f.message, {"file": getattr(f, "file", "")}, hint=f.hint)
                 for f in agg.notes]
    if agg.metrics_unread:  # read once for the counts, not again for the metrics: the table changed meanwhile
        findings.append(HealthFinding(
            "health.snapshot-unreadable", Severity.INFO,
            f"the column metrics of {plural(len(agg.metrics_unread), 'manifest')} of the current snapshot could not "
            f"be read again ({agg.metrics_unread[0]}); their files are left out of the column checks",
            {"manifests": len(agg.metrics_unread)}, hint="t.check() names the broken file"))


class DriverReads:
    """The doctor's reads that grow with the table, done here over the source and its index: the current
    snapshot's files, every snapshot's file set, the listing of the table location.  ``spark/health.py`` has
    the same methods running as Spark jobs."""

    def __init__(self, source: "TableSource") -> None:
        self.source = source
        self.sets: dict[int, list] = {}  # snapshot id -> its files, Arrow tables of location and size
        # snapshot id -> its manifests frame, whose file set is made when first asked for: only the retention
        # and orphan checks read the sets, so a table with nothing expired and no listing never makes them
        # (at a million files, a normalized copy of every path: 0.2 GB at the doctor's peak)
        self.unmade: dict[int, Any] = {}
        self.listing = None

    def current_files(self, target: int, small_size: int, column: Optional[str]) -> FileAggregates:
        from . import vanished
        from .metric_totals import metric_totals

        index, totals, unread = metric_totals(self.source, column)
        agg = driver_file_aggregates(self.source, index, target, small_size, column, totals)
        agg.metrics_unread = [f[3] for f in unread if f[0] != vanished.CODE]  # a vanished one: noted already
        agg.notes = [f for f in index.findings if f.code == SLOW_DECODE]
        agg.coverage = coverage(self.source, index)
        return agg

    def snapshot_files(self, readable: list, current: Optional[int]) -> dict[int, str]:
        """Reads the file set of each ``(snapshot id, manifests frame)``; returns, per snapshot whose set is
        incomplete (a manifest unreadable or damaged), the first reason."""
        broken_by: dict[int, str] = {}
        for sid, mans in readable:
            try:
                broken = [f.message for f in build_index(self.source, sid).findings if f.code in _MANIFEST_BROKEN]
            except (PuffinError, KeyError) as exc:
                broken = [str(exc)]
            if broken:  # the entries after the damage are unknown: counting from the rest would mislead
                broken_by[sid] = broken[0]
                self.sets[sid] = []
            else:
                self.unmade[sid] = mans
        return broken_by

    def add_file(self, sid: int, location: str, size: int) -> None:
        self.sets.setdefault(sid, []).append(_files_table([(location, size)]))

    def _set_of(self, sid: int) -> list:
        """The file set of snapshot ``sid`` (Arrow tables of location and size), made from its index if not yet."""
        if sid in self.unmade:  # its index was read whole: made from it now
            self.sets.setdefault(sid, []).insert(0, _snapshot_files(self.source, sid, self.unmade.pop(sid)))
        return self.sets.get(sid, [])

    def _files_of(self, sids) -> Any:
        """The files of the snapshots ``sids`` hold, one row per location (its largest size)."""
        import pyarrow as pa

        tables = [t for sid in list(sids) for t in self._set_of(sid)] or [_files_table([])]
        return pa.concat_tables(tables).group_by("location").aggregate([("size", "max")]) \
            .rename_columns(["location", "size"])

    def list(self, root: str) -> None:
        """Lists the table location, no file's size or time read yet on a local file system: the checks read
        them for the few files they look at (manifest lists, metadata files, unreferenced files), which at a
        million files saves a ``stat`` per file, most of the listing's time."""
        self.listing = listing_arrow(self.source.io, root, stat=False)

    def listing_frame(self):
        """The listing as the doctor's ``frames["listing"]`` (sizes and times null where no check read them)."""
        import pandas as pd
        import pyarrow as pa

        return self.listing.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)

    def _stat(self, wanted) -> Any:
        """Reads the size and time of the listed files in the mask ``wanted``; the mask of the rows kept (None:
        all; a file gone since it was listed loses its row)."""
        self.listing, kept = fill_listing_stats(self.source.io, self.listing, wanted)
        return kept

    def _is_meta(self):
        import pyarrow.compute as pc

        loc = self.listing.column("location")
        return pc.or_(pc.ends_with(loc, ".metadata.json"), pc.ends_with(loc, ".metadata.json.gz"))

    def listed_sizes(self, locations) -> dict[str, Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        wanted = pc.is_in(self.listing.column("location"), value_set=pa.array(sorted(set(locations)), pa.string()))
        self._stat(wanted.to_numpy(zero_copy_only=False))
        hit = self.listing.filter(pc.is_in(self.listing.column("location"),
                                           value_set=pa.array(sorted(set(locations)), pa.string())))
        return dict(zip(hit.column("location").to_pylist(), hit.column("size").to_pylist()))

    def metadata_files(self) -> int:
        import pyarrow.compute as pc

        return int(pc.sum(self._is_meta()).as_py() or 0)

    def newer_metadata(self, current_loc: str, tracked: set) -> list[str]:
        import pyarrow as pa
        import pyarrow.compute as pc

        self._stat(self._is_meta().to_numpy(zero_copy_only=False))
        listing = self.listing
        loc = listing.column("location")
        own = listing.filter(pc.equal(loc, current_loc)).column("mtime_ms")
        if not (len(own) and own.null_count == 0):
            return []
        newer = pc.and_(pc.and_(self._is_meta(), pc.invert(pc.is_in(loc, value_set=pa.array(sorted(tracked),
                                                                                          pa.string())))),
                        pc.greater(listing.column("mtime_ms"), own[0]))
        return listing.filter(pc.fill_null(newer, False)).column("location").to_pylist()

    def expired_only(self, keep: set, expired: list):
        """The files only the ``expired`` snapshots hold: ``(frame of location, size; files; bytes)``, the frame
        the first :data:`FRAME_ROWS` by location, as the Spark doctor keeps it."""
        import pyarrow.compute as pc

        kept = self._files_of(keep).column("location")
        freed = self._files_of(expired)
        freed = freed.filter(pc.invert(pc.is_in(freed.column("location"), value_set=kept.combine_chunks())))
        nbytes = pc.sum(freed.column("size")).as_py() or 0
        top = _first_rows(freed, FRAME_ROWS, [("location", "ascending")])
        frame = top.to_pandas()
        frame["size"] = frame["size"].astype("int64")
        return frame, freed.num_rows, int(nbytes)

    def orphans(self, referenced: set, cutoff_ms: int):
        """Listed files no snapshot or metadata file references, not hidden, older than ``cutoff_ms``:
        ``(frame, files, bytes, in-flight files)``; the size and time of those files read now (none before)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        listed = self.listing.column("location")
        known = np.zeros(len(listed), dtype=bool)

        def mark(locations) -> None:
            """The listed files among ``locations`` marked known: each file set looked up as it is (no union of
            the sets, no copy of a path), ORPHAN_LOOKUP values at a time (the lookup's hash table copies its
            values: a million paths would be 0.15 GB more at the doctor's peak)."""
            for at in range(0, len(locations), ORPHAN_LOOKUP):  # (a set made of slices of the index: many chunks)
                part = locations.slice(at, ORPHAN_LOOKUP)
                values = (part.combine_chunks() if isinstance(part, pa.ChunkedArray) else part).cast(listed.type)
                known[pc.is_in(listed, value_set=values).to_numpy(zero_copy_only=False)] = True

        for sid in {*self.sets, *self.unmade}:
            for files in self._set_of(sid):
                mark(files.column("location"))
        mark(pa.array(sorted(referenced), pa.string()))
        unref = ~known & ~self.listing.column("hidden").to_numpy(zero_copy_only=False).astype(bool)
        kept = self._stat(unref)
        if kept is not None:  # files gone since they were listed: their rows dropped
            unref = unref[kept]
        rows = self.listing.filter(pa.array(unref))
        ms = rows.column("mtime_ms")
        young = pc.fill_null(pc.greater_equal(ms, cutoff_ms), False)
        orphans = rows.filter(pc.invert(young)).to_pandas()
        return (orphans, int(len(orphans)), int(orphans["size"].fillna(0).sum()),
                int(pc.sum(young).as_py() or 0))


def table_health(source: "TableSource", now: Any = None, older_than: Any = None, catalog: str = "spark_catalog",
                 name: Optional[str] = None, list_files: bool = True,
                 cluster_by: Optional[str] = None) -> TableHealth:
    """Every health check of the table's current snapshot (see the module docstring for the thresholds).

    ``now`` (a timestamp, ``datetime`` or epoch ms; default the clock) dates snapshot ages and
    retention; files younger than ``older_than`` (default ``now`` minus 3 days) are in-flight writes,
    never orphans.  ``catalog`` is the catalog name in the Spark statements; ``name`` the table's
    identifier there (default the table's own name).  ``list_files=False`` skips the storage
    listing (no orphan check, no manifest-list sizes).  Clustering is measured on ``cluster_by`` when
    given, else on the default sort order's first column (none when the table has no sort order).
    """
    from .._memory import release_freed_memory

    try:
        return doctor(source, DriverReads(source), now=now, older_than=older_than, catalog=catalog, name=name,
                      list_files=list_files, cluster_by=cluster_by)
    finally:
        release_freed_memory()  # the measures' and frames' columns it built and dropped


def doctor(source: "TableSource", reads: Any, now: Any = None, older_than: Any = None, catalog: str = "spark_catalog",
           name: Optional[str] = None, list_files: bool = True, cluster_by: Optional[str] = None) -> TableHealth:
    """:func:`table_health` with the reads that grow with the table done by ``reads`` (:class:`DriverReads`,
    or the Spark jobs of ``puffin_explorer/spark/health.py``); everything else is read and decided here."""
    import numpy as np
    import pandas as pd

    now_ms = epoch_ms(now) if now is not None else int(pd.Timestamp.now(tz="UTC").timestamp() * 1000)
    orphan_cutoff = epoch_ms(older_than) if older_than is not None else now_ms - ORPHAN_GRACE_MS
    ident = name or source.name
    md = source.metadata
    props = md.properties
    th = {k: _threshold(props, k) for k in DEFAULTS}
    target = th["write.target-file-size-bytes"]["value"] or DEFAULTS["write.target-file-size-bytes"]
    small_size = int(target * SMALL_FILE_SHARE)
    m: dict[str, Any] = {k: 0 for k in METRIC_KEYS}
    m.update(target_file_size=int(target), small_file_size=small_size, deleted_share=0.0,
             oldest_snapshot_age_days=None, newest_snapshot_age_days=None, commits_per_day=0.0,
             statistics_commits_behind=None, clustering_column=None, clustering_depth=None)
    findings: list[HealthFinding] = []
    frames: dict[str, Any] = {}
    spark_t = _sql_str(ident)
    call = f"CALL {catalog}.system."

    # ---- snapshots -------------------------------------------------------------------------
    snaps = snapshot_frame(source)
    if len(snaps):
        # a commit time no datetime holds (a damaged timestamp-ms, a metadata finding) is NaT: an unknown time here
        epoch = pd.Timestamp(0, tz="UTC")
        known = snaps["timestamp"].notna()
        ms = pd.Series(pd.NA, index=snaps.index, dtype="Int64")
        ms[known] = ((snaps.loc[known, "timestamp"] - epoch) // pd.Timedelta(milliseconds=1)).astype("int64")
        snaps = snaps.assign(timestamp_ms=ms)
    else:
        snaps = pd.DataFrame({"snapshot_id": pd.Series(dtype="int64"), "parent_snapshot_id": pd.Series(dtype="Int64"),
                              "timestamp": pd.Series(dtype="datetime64[ns, UTC]"),
                              "manifest_list": pd.Series(dtype=object), "timestamp_ms": pd.Series(dtype="Int64")})
    current = md.current_snapshot_id
    m["snapshots"] = int(len(snaps))

    # ---- files of the current snapshot --------------------------------------------------------
    if current is not None:
        column, column_source = _clustering_column(md, cluster_by)
        agg = reads.current_files(int(target), small_size, column)
        _current_findings(findings, frames, m, agg, th, target, small_size, column, column_source, call, spark_t,
                          catalog, ident, md.format_version)
        # files of the snapshot not read: the counts they feed are unknown (None), never the smaller number
        unknown_counts(m, findings, frames, agg.coverage, f"snapshot {current}", {"snapshot_id": current})

    # ---- manifests --------------------------------------------------------------------------
    unreadable: list[int] = []
    manifest_lists: dict[int, str] = {}
    per_snapshot = []
    readable = []
    why: list[tuple[int, Optional[str]]] = []  # per snapshot in order: why its manifests are unreadable, or None

    def unreadable_snapshot(sid: int, what: str) -> None:
        unreadable.append(sid)
        findings.append(HealthFinding("health.snapshot-unreadable", Severity.INFO,
                                      f"snapshot {sid}: {what}; its files are left out of retention and orphan "
                                      "counts", {"snapshot_id": sid}, hint="t.check() names the broken file"))

    for sid, ml in zip(snaps["snapshot_id"].astype("int64"), snaps["manifest_list"]):
        sid = int(sid)
        try:
            mans = manifest_frame(source, sid)
        except (PuffinError, KeyError) as exc:
            why.append((sid, f"manifests unreadable ({exc})"))
            continue
        if not len(mans):
            mans = pd.DataFrame(columns=["location", "manifest_length", "content"])
        per_snapshot.append({"snapshot_id": sid, "manifests": int(len(mans)),
                             "manifest_bytes": int(mans["manifest_length"].sum()) if len(mans) else 0})
        readable.append((sid, mans))
        why.append((sid, None))
        if isinstance(ml, str) and ml:
            manifest_lists[sid] = normalize(source.locate(ml))
        if sid == current:
            frames["manifests"] = mans
    broken = reads.snapshot_files(readable, current)
    for sid, what in why:
        if what is not None:
            unreadable_snapshot(sid, what)
        elif sid in broken:
            unreadable_snapshot(sid, f"a manifest is unreadable ({broken[sid]})")
    frames["snapshots"] = snaps.merge(pd.DataFrame(per_snapshot, columns=["snapshot_id", "manifests",
                                                                          "manifest_bytes"]),
                                      on="snapshot_id", how="left")
    mans = frames.get("manifests")
    if mans is not None and len(mans):
        _manifest_checks(findings, mans, m, th, call, spark_t, ident)

    # ---- storage listing ----------------------------------------------------------------------
    listed = bool(list_files and md.location)
    if listed:
        reads.list(source.locate(md.location))
    sizes_on_storage = reads.listed_sizes(manifest_lists.values()) if listed else {}
    for sid, loc in manifest_lists.items():
        reads.add_file(sid, loc, int(sizes_on_storage.get(loc) or 0))
    known = {sid for sid, _ in readable}
    for s in md.statistics:
        if s.snapshot_id in known:
            reads.add_file(s.snapshot_id, normalize(source.locate(s.path)), int(s.file_size_in_bytes or 0))

    # ---- snapshot age, rate and retention -------------------------------------------------------
    ts = snaps["timestamp_ms"].dropna().to_numpy(dtype=np.int64)  # the commit times that are known
    if len(ts):
        m["oldest_snapshot_age_days"] = round((now_ms - int(ts.min())) / DAY_MS, 3)
        m["newest_snapshot_age_days"] = round((now_ms - int(ts.max())) / DAY_MS, 3)
        span = (int(ts.max()) - int(ts.min())) / DAY_MS
        m["commits_per_day"] = round(len(ts) / max(span, 1.0), 3)
        m["commits_last_day"] = int((ts > int(ts.max()) - DAY_MS).sum())
    if len(snaps):
        frames["expired_only"] = _retention(findings, source, snaps, reads, m, th, now_ms, call, spark_t, ident)

    # ---- metadata files ---------------------------------------------------------------------
    log = md.raw.get("metadata-log") or []
    tracked = {normalize(source.locate(e["metadata-file"])) for e in log
               if isinstance(e, dict) and isinstance(e.get("metadata-file"), str)}
    tracked.add(normalize(source.metadata_location))
    m["metadata_files_tracked"] = len(tracked)
    m["metadata_files"] = reads.metadata_files() if listed else len(tracked)
    _metadata_findings(findings, m, th, catalog, ident)

    # ---- orphans: not while a snapshot's files are unknown or a newer commit exists (its files would look
    # orphaned); then the orphan metrics are None, never a false 0 -------------------------------------
    if unreadable:
        m.update(orphan_files=None, orphan_bytes=None, in_flight_files=None)
    newer = reads.newer_metadata(normalize(source.metadata_location), tracked) if listed else []
    if newer:
        m.update(orphan_files=None, orphan_bytes=None, in_flight_files=None)
        findings.append(HealthFinding(
            "health.not-current-metadata", Severity.INFO,
            f"the table location holds {len(newer):,} newer metadata files than the one opened: files of later "
            "commits would look orphaned, so the orphan check is skipped",
            {"opened": source.metadata_location, "newer": newer[:5]},
            hint="open the table's current metadata file (its folder, or the catalog's metadata location)"))
    if listed and not unreadable and not newer:
        referenced = set(tracked)
        referenced |= {normalize(source.locate(s.path)) for s in md.statistics}
        meta_dir = normalize(join(source.locate(md.location), "metadata"))
        referenced.add(normalize(join(meta_dir, "version-hint.text")))
        orphans, n_orphans, orphan_bytes, in_flight = reads.orphans(referenced, orphan_cutoff)
        frames["orphans"] = orphans
        m["orphan_files"] = n_orphans
        m["orphan_bytes"] = orphan_bytes
        m["in_flight_files"] = in_flight
        if n_orphans:
            cutoff_lit = ts_literal(orphan_cutoff)  # the statements name the zone: UTC
            findings.append(HealthFinding(
                "health.orphan-files", Severity.WARNING,
                f"{plural(n_orphans, 'file')} ({m['orphan_bytes']:,} B) under the table location are referenced by no "
                f"snapshot or metadata file",
                {"orphan_files": m["orphan_files"], "orphan_bytes": m["orphan_bytes"],
                 "older_than": cutoff_lit, "grace": "3 days (remove_orphan_files default)" if older_than is None
                 else "given", "in_flight_files": m["in_flight_files"],
                 "examples": orphans["location"].head(5).tolist()},
                (Action("spark", f"{call}remove_orphan_files(table => {spark_t}, older_than => TIMESTAMP "
                                 f"{_sql_str(cutoff_lit + ' UTC')})"),
                 Action("trino", f"ALTER TABLE {ident} EXECUTE remove_orphan_files(retention_threshold => "
                                 f"{_sql_str(_duration(max(now_ms - orphan_cutoff, 1000)))})",
                        "Trino refuses thresholds below iceberg.remove-orphan-files.min-retention (7d by default)")),
                {"files_before": m["orphan_files"], "files_after": 0, "bytes_freed": m["orphan_bytes"]}))
    if listed:
        frames["listing"] = reads.listing_frame()  # once the checks read the sizes and times they need

    # ---- statistics freshness ---------------------------------------------------------------------
    if current is not None:
        _statistics_findings(findings, source, snaps, current, m, call, spark_t, ident)

    if current is not None:  # files of the snapshot gone when read: its numbers are partial, and say so
        from .vanished import snapshot_findings

        findings[:0] = [HealthFinding(f.code, f.severity, f.message, {"file": getattr(f, "file", ""),
                                                                      "snapshot_id": current}, hint=f.hint)
                        for f in snapshot_findings(source, current)]
    thresholds = dict(th)
    thresholds["small-file-size"] = {"value": small_size, "property": "write.target-file-size-bytes",
                                     "source": f"{SMALL_FILE_SHARE:.0%} of the target "
                                               "(rewrite_data_files min-file-size-bytes default)"}
    thresholds["orphan-older-than"] = {"value": ts_literal(orphan_cutoff), "property": "",
                                       "source": "given" if older_than is not None else "3 days before now"}
    return TableHealth(ident, m, findings, thresholds, frames, now_ms, catalog)


def _small_files_finding(findings, summary, m, th, target, small_size, call, spark_t, ident) -> None:
    """:func:`~puffin_explorer.health.small_files_finding` with Iceberg's statements."""
    def actions(summary):
        min_input = int(min(summary["small_files_fewest"], 5))
        return (Action("spark", f"{call}rewrite_data_files(table => {spark_t}, options => "
                                f"{_map({'min-input-files': min_input, 'remove-dangling-deletes': 'true'})})"),
                Action("trino", f"ALTER TABLE {ident} EXECUTE optimize(file_size_threshold => "
                                f"{_sql_str(_trino_size(small_size))})"))

    found = small_files_finding(m, summary, target, small_size, "write.target-file-size-bytes",
                                th["write.target-file-size-bytes"]["source"], actions)
    if found is not None:
        findings.append(found)


def _trino_size(n: int) -> str:
    """A Trino data size literal (``384MB``) no bigger than ``n`` bytes."""
    for unit, size in (("GB", 1 << 30), ("MB", MIB), ("kB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


def _deletes_findings(findings, agg: FileAggregates, m, call, spark_t, ident, format_version) -> None:
    """Deleted share above the threshold; data files merging more than one delete file at scan time."""
    if m["deleted_share"] > DELETED_SHARE_THRESHOLD:
        touched = agg.touched
        findings.append(deleted_share_finding(
            m, f"merge {plural(m['delete_files'], 'delete file')}",
            (Action("spark", f"{call}rewrite_data_files(table => {spark_t}, options => "
                             f"{_map({'delete-file-threshold': 1, 'remove-dangling-deletes': 'true'})})"),
             Action("trino", f"ALTER TABLE {ident} EXECUTE optimize(file_size_threshold => "
                             f"{_sql_str(_trino_size_above(int(touched['max_size'])))})")),
            {"data_files_rewritten": touched["files"], "rows_read": touched["rows"],
             "rows_written": touched["rows"] - touched["deleted_rows"],
             "deleted_rows_after": 0, "live_rows_after": m["live_rows"]}))
    worst = m["max_delete_files_per_data_file"]
    if worst > DELETE_FILES_PER_DATA_FILE:
        many = agg.many
        actions = [Action("spark", f"{call}rewrite_data_files(table => {spark_t}, options => "
                                   f"{_map({'delete-file-threshold': DELETE_FILES_PER_DATA_FILE + 1, 'remove-dangling-deletes': 'true'})})")]
        if m["position_delete_files"]:
            actions.insert(0, Action("spark", f"{call}rewrite_position_delete_files(table => {spark_t}, "
                                              f"options => {_map({'rewrite-all': 'true'})})"))
        findings.append(HealthFinding(
            "health.read-amplification", Severity.WARNING,
            f"{plural(many['files'], 'data file')} each merge more than {plural(DELETE_FILES_PER_DATA_FILE, 'delete file')} at scan time "
            f"(at most {worst:,}; DVs {m['dvs']:,}, position-delete files {m['position_delete_files']:,}, "
            f"equality-delete files {m['equality_delete_files']:,})",
            {"data_files": many["files"], "max_delete_files_per_data_file": worst,
             "mean_delete_files_per_data_file": round(agg.mean_delete_files, 3),
             "threshold": DELETE_FILES_PER_DATA_FILE, "source": "default (a DV table merges at most one)",
             "format_version": format_version},
            tuple(actions),
            {"data_files_rewritten": many["files"], "rows_read": many["rows"],
             "max_delete_files_per_data_file_after": 0}))


def _dangling_finding(findings, dangling: dict[str, int], m) -> None:
    """``health.dangling-deletes`` from :data:`.measures.DANGLING_DELETES`' counts."""
    n = dangling["dvs"] + dangling["position_delete_files"] + dangling["equality_delete_files"]
    m["dangling_deletes"] = int(n)
    if not n:
        return
    eq = f", {dangling['equality_delete_files']:,} equality-delete files" if dangling["equality_delete_files"] else ""
    findings.append(HealthFinding(
        "health.dangling-deletes", Severity.INFO,
        f"{plural(n, 'delete entry')} apply to no live data file ({plural(dangling['dvs'], 'DV')}, "
        f"{plural(dangling['position_delete_files'], 'position-delete file')}{eq}): readers skip them, scan planning "
        "still reads them",
        {"dvs": dangling["dvs"], "position_delete_files": dangling["position_delete_files"],
         "equality_delete_files": dangling["equality_delete_files"],
         "delete_files_only_dangling": dangling["files_freed"],
         "delete_bytes_only_dangling": dangling["bytes_freed"],
         "source": "DVs and position deletes whose referenced_data_file is not live, or that no data file's "
                   "partition and sequence number lets apply; equality deletes no data file's partition and "
                   "sequence number lets apply"},
        hint="measured on Iceberg 1.9.2: rewrite_data_files (remove-dangling-deletes too) and "
             "rewrite_position_delete_files keep the DVs of the data files a rewrite replaced"))


def _trino_size_above(n: int) -> str:
    return f"{n // MIB + 1}MB"


def _skew_finding(findings, summary) -> None:
    """The largest partition holding ``SKEW_RATIO`` times the median partition's bytes."""
    if int(summary["partitions"]) < 2:
        return
    median = float(summary["median_bytes"])
    ratio = float(summary["largest_bytes"]) / median if median else 0.0
    if ratio < SKEW_RATIO:
        return
    findings.append(HealthFinding(
        "health.partition-skew", Severity.INFO,
        f"partition {summary['largest_partition']} holds {int(summary['largest_bytes']):,} B, {ratio:.1f}x the "
        "median partition",
        {"partition": str(summary["largest_partition"]), "bytes": int(summary["largest_bytes"]),
         "rows": int(summary["largest_rows"]), "files": int(summary["largest_files"]), "median_bytes": median,
         "ratio": round(ratio, 2), "threshold": SKEW_RATIO, "source": "default"}))


# ---- clustering ---------------------------------------------------------------------------------
def _clustering_column(md, cluster_by: Optional[str]) -> tuple[Optional[str], str]:
    """The column clustering is measured on, and where it came from: ``cluster_by`` when given, else the first
    field of the default sort order whose transform keeps the column's order (not ``bucket``)."""
    names = {f.id: f.name for f in md.fields()}
    if cluster_by:
        if cluster_by not in names.values():
            from ..errors import NotInTableError

            raise NotInTableError(f"cluster_by={cluster_by!r}: the table has no such column (columns: "
                                  f"{', '.join(sorted(names.values()))})")
        return cluster_by, "given"
    for f in md.sort_orders.get(md.default_sort_order_id or 0) or []:
        transform = str(f.get("transform", "identity"))
        if transform.split("[", 1)[0] not in _ORDERED_TRANSFORMS:
            continue
        try:
            name = names.get(int(f.get("source-id")))
        except (TypeError, ValueError):
            continue
        if name:
            return name, f"sort order {md.default_sort_order_id or 0}"
    return None, ""


def overlap_depth(lows: list, highs: list) -> tuple[float, int]:
    """Average and largest number of files whose ``[low, high]`` bounds contain a value, over the distinct
    bound values of the files (1.0 when no two files overlap; n when n files share one range)."""
    from bisect import bisect_left, bisect_right

    lo, hi = sorted(lows), sorted(highs)
    points = sorted(set(lo) | set(hi))
    if not points:
        return 0.0, 0
    depths = [bisect_right(lo, v) - bisect_left(hi, v) for v in points]
    return sum(depths) / len(depths), max(depths)


def clustering_by_partition(d):
    """Per partition key (the index; never across partitions or buckets): files, files with bounds on the
    column, and the average / largest overlap depth of those files' value ranges (a partition of one such
    file is 1.0 deep), from one row per data file: ``pkey``,
    ``partition`` (text), ``lo`` / ``hi`` (the file's bounds on the column, None when absent), ``bytes``,
    ``rows``.  Partitions are independent: any split of the rows by ``pkey`` gives the same rows."""
    import numpy as np

    d = d.assign(bounded=d["lo"].notna() & d["hi"].notna())
    out = d.groupby("pkey", sort=True).agg(partition=("partition", "first"), files=("bytes", "size"),
                                           files_with_bounds=("bounded", "sum"), bytes=("bytes", "sum"),
                                           rows=("rows", "sum"))
    out["files_with_bounds"] = out["files_with_bounds"].astype("int64")
    out["average_depth"] = np.where(out["files_with_bounds"] == 1, 1.0, np.nan)
    out["max_depth"] = out["files_with_bounds"].where(out["files_with_bounds"] <= 1).astype("Int64")
    several = d[d["bounded"] & d["pkey"].isin(out.index[out["files_with_bounds"] >= 2])]
    for pkey, part in several.groupby("pkey", sort=False):  # only partitions with two or more bounded files
        try:
            avg, top = overlap_depth(part["lo"].tolist(), part["hi"].tolist())
        except TypeError:  # bounds of mixed types: not comparable
            continue
        out.loc[pkey, "average_depth"] = avg
        out.loc[pkey, "max_depth"] = top
    return out


def clustering_frame(out, column: str):
    """The ``clustering`` frame from :func:`clustering_by_partition` rows sorted by partition key."""
    out = out.copy()
    out["column"] = column
    out["average_depth"] = out["average_depth"].astype(object).where(out["average_depth"].notna(), None)
    return out.reset_index(drop=True)[["partition", "column", "files", "files_with_bounds", "average_depth",
                                       "max_depth", "bytes", "rows"]]


def _clustering_finding(findings, clus, column: str, source: str, m, call, spark_t, ident) -> None:
    """Partitions whose files overlap more than :data:`CLUSTERING_DEPTH_THRESHOLD` deep on ``column``: a sort
    rewrite leaves one file per value range."""
    measured = clus[clus["files_with_bounds"] >= 2].dropna(subset=["average_depth"])
    m["clustering_column"] = column
    if measured.empty:
        m["clustering_depth"] = None
        return
    weights = measured["files_with_bounds"].astype(float)
    m["clustering_depth"] = round(float((measured["average_depth"] * weights).sum() / weights.sum()), 4)
    poor = measured[measured["average_depth"] > CLUSTERING_DEPTH_THRESHOLD]
    m["poorly_clustered_partitions"] = int(len(poor))
    if poor.empty:
        return
    import re

    quoted = column if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", column) else \
        "`" + column.replace("`", "``") + "`"
    order = f"{quoted} ASC NULLS FIRST"
    worst = poor.loc[poor["average_depth"].idxmax()]
    findings.append(HealthFinding(
        "health.poor-clustering", Severity.WARNING,
        f"in {len(poor):,} of {plural(len(measured), 'partition')} the files' {column} ranges overlap "
        f"{float(worst['average_depth']):.2f} deep on average at worst (partition {worst['partition']}): a filter on "
        f"{column} reads that many files per value",
        {"column": column, "column_source": source, "clustering_depth": m["clustering_depth"],
         "worst_partition": str(worst["partition"]), "worst_average_depth": round(float(worst["average_depth"]), 4),
         "worst_max_depth": int(worst["max_depth"]), "poor_partitions": int(len(poor)),
         "threshold": CLUSTERING_DEPTH_THRESHOLD,
         "source": "default (average files overlapping a bound value, within one partition)"},
        (Action("spark", f"{call}rewrite_data_files(table => {spark_t}, strategy => 'sort', sort_order => "
                         f"{_sql_str(order)}, options => {_map({'rewrite-all': 'true'})})",
                "rewrites every data file, sorted within each partition"),
         Action("trino", f"ALTER TABLE {ident} SET PROPERTIES sorted_by = ARRAY[{_sql_str(column)}]",
                "then ALTER TABLE ... EXECUTE optimize sorts the files it rewrites")),
        {"files_in_poor_partitions": int(poor["files"].sum()), "bytes_in_poor_partitions": int(poor["bytes"].sum()),
         "data_files_rewritten": m["data_files"], "bytes_rewritten": m["data_bytes"], "rows_read": m["records"],
         "average_depth_after": 1.0}))


def _column_findings(findings, cols, m, spark_t, catalog, ident) -> None:
    no_bounds = cols[(cols["files_with_bounds"] == 0) & cols["values"].notna()]
    m["columns_without_bounds"] = int(len(no_bounds))
    if len(no_bounds):
        props = ", ".join(f"{_sql_str('write.metadata.metrics.column.' + c)} = 'truncate(16)'"
                          for c in no_bounds["column"])
        findings.append(HealthFinding(
            "health.columns-without-bounds", Severity.INFO,
            f"{plural(len(no_bounds), 'column')} have no lower/upper bounds in any data file ({', '.join(no_bounds['column'])}): "
            "filters on them prune no file",
            {"columns": no_bounds["column"].tolist(), "property": "write.metadata.metrics.default",
             "source": "the manifests' metrics"},
            (Action("spark", f"ALTER TABLE {catalog}.{ident} SET TBLPROPERTIES ({props})",
                    "applies to files written afterwards"),)))


def _manifest_checks(findings, mans, m, th, call, spark_t, ident) -> None:
    import numpy as np

    content = mans["content"].astype(str)
    m["manifests"] = int(len(mans))
    m["data_manifests"] = int((content == "data").sum())
    m["delete_manifests"] = int((content == "deletes").sum())
    m["manifest_bytes"] = int(mans["manifest_length"].sum())
    target = th["commit.manifest.target-size-bytes"]["value"]
    small = mans[mans["manifest_length"] < target]
    m["small_manifests"] = int(len(small))
    live = mans.get("added_files_count", 0) + mans.get("existing_files_count", 0)
    m["manifests_without_live_entries"] = int((np.asarray(live) == 0).sum())
    min_merge = th["commit.manifest.min-count-to-merge"]["value"]
    small_data = small[small["content"].astype(str) == "data"]
    if len(small_data) >= max(min_merge, 2):
        after = max(1, math.ceil(int(small_data["manifest_length"].sum()) / target))
        findings.append(HealthFinding(
            "health.manifest-fragmentation", Severity.WARNING,
            f"{plural(len(small_data), 'data manifest')} are below the {target:,} B target (average "
            f"{int(small_data['manifest_length'].mean()):,} B); every scan plan opens each",
            {"data_manifests": m["data_manifests"], "small_data_manifests": int(len(small_data)),
             "manifest_bytes": int(small_data["manifest_length"].sum()), "target": target,
             "property": "commit.manifest.target-size-bytes",
             "source": th["commit.manifest.target-size-bytes"]["source"], "min_count_to_merge": min_merge,
             "min_count_source": th["commit.manifest.min-count-to-merge"]["source"]},
            (Action("spark", f"{call}rewrite_manifests(table => {spark_t})"),
             Action("trino", f"ALTER TABLE {ident} EXECUTE optimize_manifests")),
            {"data_manifests_before": m["data_manifests"],
             "data_manifests_after": m["data_manifests"] - len(small_data) + after}))


def _retention(findings, source, snaps, reads, m, th, now_ms, call, spark_t, ident):
    """Snapshots past retention, and (returned) the files only they hold: location, size (``reads`` sums them)."""
    import pandas as pd

    max_age = th["history.expire.max-snapshot-age-ms"]["value"]
    min_keep = th["history.expire.min-snapshots-to-keep"]["value"]
    cutoff = now_ms - max_age
    keep = _retained(snaps, source.metadata.refs, source.metadata.current_snapshot_id, cutoff, min_keep)
    expired = [int(s) for s in snaps["snapshot_id"].astype("int64") if int(s) not in keep]
    m["snapshots_past_retention"] = len(expired)
    if not expired:
        return pd.DataFrame(columns=["location", "size"])
    freed, n_freed, freed_bytes = reads.expired_only(keep, expired)
    m["bytes_only_in_expired_snapshots"] = freed_bytes
    cutoff_lit = ts_literal(cutoff)
    ids = ", ".join(str(s) for s in expired)
    findings.append(HealthFinding(
        "health.snapshots-past-retention", Severity.WARNING,
        f"{len(expired):,} of {plural(len(snaps), 'snapshot')} are older than {_duration(max_age)} (before {cutoff_lit} "
        f"UTC); {plural(n_freed, 'file')} ({m['bytes_only_in_expired_snapshots']:,} B) {are(n_freed)} held only by them",
        {"snapshots": int(len(snaps)), "snapshots_past_retention": len(expired), "max_snapshot_age_ms": max_age,
         "max_age_source": th["history.expire.max-snapshot-age-ms"]["source"], "min_snapshots_to_keep": min_keep,
         "min_keep_source": th["history.expire.min-snapshots-to-keep"]["source"], "older_than": cutoff_lit,
         "files_only_in_expired": n_freed},
        (Action("spark", f"{call}expire_snapshots(table => {spark_t}, older_than => TIMESTAMP "
                         f"{_sql_str(cutoff_lit + ' UTC')}, retain_last => {max(min_keep, 1)})"),
         Action("trino", f"ALTER TABLE {ident} EXECUTE expire_snapshots(retention_threshold => "
                         f"{_sql_str(_duration(max_age))})",
                "Trino refuses thresholds below iceberg.expire-snapshots.min-retention (7d by default)"),
         Action("pyiceberg", f"table.maintenance.expire_snapshots().by_ids([{ids}]).commit()",
                "removes the snapshots from the metadata; files are not deleted")),
        {"snapshots_before": int(len(snaps)), "snapshots_after": int(len(snaps)) - len(expired),
         "files_freed": n_freed, "bytes_freed": m["bytes_only_in_expired_snapshots"]}))
    return freed


def _metadata_findings(findings, m, th, catalog, ident) -> None:
    keep_max = th["write.metadata.previous-versions-max"]["value"]
    cleanup = th["write.metadata.delete-after-commit.enabled"]["value"]
    if cleanup:
        return
    sev = Severity.WARNING if m["metadata_files"] > keep_max + 1 else Severity.INFO
    findings.append(HealthFinding(
        "health.metadata-cleanup-disabled", sev,
        f"write.metadata.delete-after-commit.enabled is off: {plural(m['metadata_files'], 'metadata file')} kept "
        f"({m['metadata_files_tracked']:,} in the metadata log), growing by one per commit",
        {"metadata_files": m["metadata_files"], "metadata_files_tracked": m["metadata_files_tracked"],
         "previous_versions_max": keep_max,
         "previous_versions_max_source": th["write.metadata.previous-versions-max"]["source"],
         "property": "write.metadata.delete-after-commit.enabled",
         "source": th["write.metadata.delete-after-commit.enabled"]["source"]},
        (Action("spark", f"ALTER TABLE {catalog}.{ident} SET TBLPROPERTIES ("
                         f"'write.metadata.delete-after-commit.enabled' = 'true', "
                         f"'write.metadata.previous-versions-max' = '{keep_max}')"),
         Action("pyiceberg", "table.transaction().set_properties({'write.metadata.delete-after-commit.enabled': "
                             f"'true', 'write.metadata.previous-versions-max': '{keep_max}'}}).commit_transaction()")),
        {"metadata_files_before": m["metadata_files"],
         "metadata_files_after_next_commit": min(m["metadata_files"] + 1, keep_max + 1)}))


def _statistics_findings(findings, source, snaps, current, m, call, spark_t, ident) -> None:
    stats = statistics_frame(source)
    stats = stats[stats["kind"] == "table"]
    compute = Action("spark", f"{call}compute_table_stats(table => {spark_t})")
    if stats.empty:
        findings.append(HealthFinding(
            "health.statistics-missing", Severity.INFO,
            "the table has no statistics file: cost-based optimizers have no NDV per column",
            {"statistics_files": 0}, (compute,), {"statistics_commits_behind_after": 0}))
        return
    parent = dict(zip(snaps["snapshot_id"].astype("int64"), snaps["parent_snapshot_id"]))
    with_stats = set(stats["snapshot_id"].astype("int64"))
    behind, sid = 0, int(current)
    while sid not in with_stats:
        p = _parent_id(parent.get(sid))
        if p is None:
            behind = None
            break
        behind += 1
        sid = p
    m["statistics_commits_behind"] = behind
    latest = stats[stats["snapshot_id"].astype("int64") == (sid if behind is not None else -1)]
    covered = {c for cols in latest["columns"] for c in cols} if len(latest) else set()
    top_level = [f.name for f in source.metadata.fields() if isinstance(f.type, str) and "." not in f.name]
    missing = [c for c in top_level if c not in covered]
    m["columns_without_ndv"] = len(missing)
    if behind is None or behind > 0:
        findings.append(HealthFinding(
            "health.statistics-stale", Severity.WARNING,
            "the newest statistics file is for a snapshot outside the current one's history" if behind is None
            else f"the newest statistics file is {plural(behind, 'commit')} behind the current snapshot",
            {"commits_behind": behind, "statistics_snapshot_id": int(stats["snapshot_id"].iloc[-1]),
             "current_snapshot_id": int(current)}, (compute,), {"statistics_commits_behind_after": 0}))
    if missing and behind is not None:
        findings.append(HealthFinding(
            "health.statistics-columns-missing", Severity.INFO,
            f"{plural(len(missing), 'column')} have no NDV in the statistics file: {', '.join(missing)}",
            {"columns": missing, "statistics_snapshot_id": int(sid)},
            (Action("spark", f"{call}compute_table_stats(table => {spark_t}, columns => array("
                             f"{', '.join(_sql_str(c) for c in missing)}))"),),
            {"columns_without_ndv_after": 0}))


# ---- a warehouse ---------------------------------------------------------------------------------
def warehouse_health(warehouse: Any, **kwargs: Any):
    """One row per table: status (worst finding), top problem, the headline metrics; and the
    :class:`TableHealth` of each table in ``.attrs["health"]``."""
    import pandas as pd

    rows, models = [], {}
    for name in warehouse.table_names():
        try:
            h = warehouse.table(name).health(**kwargs)
        except (PuffinError, OSError, ValueError, KeyError) as exc:
            rows.append({"table": name, "status": "error", "findings": None, "top_problem": f"unreadable: {exc}"})
            continue
        models[name] = h
        rows.append({"table": name, "status": h.status,
                     "findings": len([f for f in h.findings if f.severity != Severity.INFO]),
                     "top_problem": h.top_problem,
                     **{k: h.metrics.get(k) for k in ("data_files", "small_files", "delete_files", "live_rows",
                                                      "deleted_share", "snapshots", "snapshots_past_retention",
                                                      "orphan_files")}})
    df = pd.DataFrame.from_records(rows, columns=[
        "table", "status", "findings", "top_problem", "data_files", "small_files", "delete_files", "live_rows",
        "deleted_share", "snapshots", "snapshots_past_retention", "orphan_files"])
    df.attrs["health"] = models
    return df


__all__ = ["AMPLIFICATION_ROWS", "FRAME_ROWS", "Action", "HealthFinding", "TableHealth", "table_health", "warehouse_health", "DEFAULTS", "FIX_ORDER",
           "SMALL_FILE_SHARE", "ORPHAN_GRACE_MS", "METRIC_KEYS", "CLUSTERING_DEPTH_THRESHOLD", "overlap_depth"]

