"""The doctor's checks of the table's metadata: the current snapshot's manifests (fragmentation, manifests without
live entries) and its statistics files (missing, stale, columns without NDV), each finding with the statements that
fix it."""

from __future__ import annotations

import math

from .._text import plural
from ..health import Action, HealthFinding
from ..regions import Severity
from .health_cleanup import parent_id
from .health_statements import sql_string
from .overview import statistics_frame


def manifest_findings(findings, mans, m, th, call, spark_t, ident) -> None:
    """The manifest counts of the current snapshot (``mans``: its manifests frame) and
    ``health.manifest-fragmentation`` when enough data manifests are below the target size to merge."""
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


def statistics_findings(findings, source, snaps, current, m, call, spark_t, ident) -> None:
    """The table's statistics file for the current snapshot: missing, some commits behind (or for a snapshot outside
    its history), or without an NDV for some top-level columns."""
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
        p = parent_id(parent.get(sid))
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
                             f"{', '.join(sql_string(c) for c in missing)}))"),),
            {"columns_without_ndv_after": 0}))


__all__ = ["manifest_findings", "statistics_findings"]
