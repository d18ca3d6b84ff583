"""The doctor's clustering check: which column, how deep the files' value ranges overlap per partition, and the
finding with the sort rewrite that fixes it.  The driver runs :func:`clustering_by_partition` once over every data
file, the Spark doctor once per partition."""

from __future__ import annotations

from typing import Optional

from .._text import plural
from ..health import CLUSTERING_DEPTH_THRESHOLD, Action, HealthFinding
from ..regions import Severity
from .health_statements import sql_map, sql_string

#: Sort-order transforms that keep the source column's order (bounds of the source column still cluster).
_ORDERED_TRANSFORMS = ("identity", "year", "month", "day", "hour", "truncate")


def clustering_column(md, cluster_by: Optional[str]) -> tuple[Optional[str], str]:
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


def clustering_finding(findings, clus, column: str, source: str, m, call, spark_t, ident) -> None:
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
                         f"{sql_string(order)}, options => {sql_map({'rewrite-all': 'true'})})",
                "rewrites every data file, sorted within each partition"),
         Action("trino", f"ALTER TABLE {ident} SET PROPERTIES sorted_by = ARRAY[{sql_string(column)}]",
                "then ALTER TABLE ... EXECUTE optimize sorts the files it rewrites")),
        {"files_in_poor_partitions": int(poor["files"].sum()), "bytes_in_poor_partitions": int(poor["bytes"].sum()),
         "data_files_rewritten": m["data_files"], "bytes_rewritten": m["data_bytes"], "rows_read": m["records"],
         "average_depth_after": 1.0}))


__all__ = ["clustering_by_partition", "clustering_column", "clustering_finding", "clustering_frame", "overlap_depth"]
