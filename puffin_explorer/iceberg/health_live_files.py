"""The doctor's checks of the current snapshot's live files, read from their :class:`~.health_aggregates.FileAggregates`
(the same on the driver and on Spark): small files, deleted share, read amplification, dangling deletes, partition
skew, clustering and columns without bounds, each finding with the statements that fix it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._text import plural
from ..health import (DELETE_FILES_PER_DATA_FILE, DELETED_SHARE_THRESHOLD, Action, HealthFinding, deleted_share_finding,
                      small_files_finding)
from ..regions import Severity
from .health_clustering import clustering_finding
from .health_statements import sql_map, sql_string, trino_size, trino_size_above

if TYPE_CHECKING:  # pragma: no cover
    from .health_aggregates import FileAggregates

#: The largest partition holding this many times the median partition's bytes is skewed.
SKEW_RATIO = 10.0


def current_findings(findings, frames, m, agg: FileAggregates, th, target, small_size, column, column_source,
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
        clustering_finding(findings, agg.clustering, column, column_source, m, call, spark_t, ident)
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


def _small_files_finding(findings, summary, m, th, target, small_size, call, spark_t, ident) -> None:
    """:func:`~puffin_explorer.health.small_files_finding` with Iceberg's statements."""
    def actions(summary):
        min_input = int(min(summary["small_files_fewest"], 5))
        return (Action("spark", f"{call}rewrite_data_files(table => {spark_t}, options => "
                                f"{sql_map({'min-input-files': min_input, 'remove-dangling-deletes': 'true'})})"),
                Action("trino", f"ALTER TABLE {ident} EXECUTE optimize(file_size_threshold => "
                                f"{sql_string(trino_size(small_size))})"))

    found = small_files_finding(m, summary, target, small_size, "write.target-file-size-bytes",
                                th["write.target-file-size-bytes"]["source"], actions)
    if found is not None:
        findings.append(found)


def _deletes_findings(findings, agg: FileAggregates, m, call, spark_t, ident, format_version) -> None:
    """Deleted share above the threshold; data files merging more than one delete file at scan time."""
    if m["deleted_share"] > DELETED_SHARE_THRESHOLD:
        touched = agg.touched
        findings.append(deleted_share_finding(
            m, f"merge {plural(m['delete_files'], 'delete file')}",
            (Action("spark", f"{call}rewrite_data_files(table => {spark_t}, options => "
                             f"{sql_map({'delete-file-threshold': 1, 'remove-dangling-deletes': 'true'})})"),
             Action("trino", f"ALTER TABLE {ident} EXECUTE optimize(file_size_threshold => "
                             f"{sql_string(trino_size_above(int(touched['max_size'])))})")),
            {"data_files_rewritten": touched["files"], "rows_read": touched["rows"],
             "rows_written": touched["rows"] - touched["deleted_rows"],
             "deleted_rows_after": 0, "live_rows_after": m["live_rows"]}))
    worst = m["max_delete_files_per_data_file"]
    if worst > DELETE_FILES_PER_DATA_FILE:
        many = agg.many
        options = {'delete-file-threshold': DELETE_FILES_PER_DATA_FILE + 1, 'remove-dangling-deletes': 'true'}
        actions = [Action("spark", f"{call}rewrite_data_files(table => {spark_t}, options => {sql_map(options)})")]
        if m["position_delete_files"]:
            actions.insert(0, Action("spark", f"{call}rewrite_position_delete_files(table => {spark_t}, "
                                              f"options => {sql_map({'rewrite-all': 'true'})})"))
        findings.append(HealthFinding(
            "health.read-amplification", Severity.WARNING,
            f"{plural(many['files'], 'data file')} each merge more than "
            f"{plural(DELETE_FILES_PER_DATA_FILE, 'delete file')} at scan time "
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


def _column_findings(findings, cols, m, spark_t, catalog, ident) -> None:
    """``health.columns-without-bounds``: columns with values but no lower/upper bounds in any data file."""
    no_bounds = cols[(cols["files_with_bounds"] == 0) & cols["values"].notna()]
    m["columns_without_bounds"] = int(len(no_bounds))
    if len(no_bounds):
        props = ", ".join(f"{sql_string('write.metadata.metrics.column.' + c)} = 'truncate(16)'"
                          for c in no_bounds["column"])
        findings.append(HealthFinding(
            "health.columns-without-bounds", Severity.INFO,
            f"{plural(len(no_bounds), 'column')} have no lower/upper bounds in any data file "
            f"({', '.join(no_bounds['column'])}): filters on them prune no file",
            {"columns": no_bounds["column"].tolist(), "property": "write.metadata.metrics.default",
             "source": "the manifests' metrics"},
            (Action("spark", f"ALTER TABLE {catalog}.{ident} SET TBLPROPERTIES ({props})",
                    "applies to files written afterwards"),)))


__all__ = ["SKEW_RATIO", "current_findings"]
