"""The doctor's cleanup checks: what ``expire_snapshots`` and ``remove_orphan_files`` would remove (snapshots past
retention and the files only they hold, orphan files) and whether old metadata files are deleted, each finding with
the statements that fix it.  The files are counted by the doctor's reads (driver or Spark); this module decides."""

from __future__ import annotations

import math
from typing import Any, Optional

from .._text import are, plural
from ..health import Action, HealthFinding, ts_literal
from ..regions import Severity
from .health_statements import duration_literal, sql_string


def parent_id(value: Any) -> Optional[int]:
    """A parent snapshot id out of a frame cell (None, NA and NaN mean none)."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return int(value)


def retained_snapshots(snaps, refs: dict[str, dict[str, Any]], current: Optional[int], cutoff_ms: int,
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
            sid = parent_id(parent[sid])
    return keep


def check_retention(findings, source, snaps, reads, m, th, now_ms, call, spark_t, ident):
    """Snapshots past retention, and (returned) the files only they hold: location, size (``reads`` sums them)."""
    import pandas as pd

    max_age = th["history.expire.max-snapshot-age-ms"]["value"]
    min_keep = th["history.expire.min-snapshots-to-keep"]["value"]
    cutoff = now_ms - max_age
    keep = retained_snapshots(snaps, source.metadata.refs, source.metadata.current_snapshot_id, cutoff, min_keep)
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
        f"{len(expired):,} of {plural(len(snaps), 'snapshot')} are older than {duration_literal(max_age)} "
        f"(before {cutoff_lit} UTC); {plural(n_freed, 'file')} ({m['bytes_only_in_expired_snapshots']:,} B) "
        f"{are(n_freed)} held only by them",
        {"snapshots": int(len(snaps)), "snapshots_past_retention": len(expired), "max_snapshot_age_ms": max_age,
         "max_age_source": th["history.expire.max-snapshot-age-ms"]["source"], "min_snapshots_to_keep": min_keep,
         "min_keep_source": th["history.expire.min-snapshots-to-keep"]["source"], "older_than": cutoff_lit,
         "files_only_in_expired": n_freed},
        (Action("spark", f"{call}expire_snapshots(table => {spark_t}, older_than => TIMESTAMP "
                         f"{sql_string(cutoff_lit + ' UTC')}, retain_last => {max(min_keep, 1)})"),
         Action("trino", f"ALTER TABLE {ident} EXECUTE expire_snapshots(retention_threshold => "
                         f"{sql_string(duration_literal(max_age))})",
                "Trino refuses thresholds below iceberg.expire-snapshots.min-retention (7d by default)"),
         Action("pyiceberg", f"table.maintenance.expire_snapshots().by_ids([{ids}]).commit()",
                "removes the snapshots from the metadata; files are not deleted")),
        {"snapshots_before": int(len(snaps)), "snapshots_after": int(len(snaps)) - len(expired),
         "files_freed": n_freed, "bytes_freed": m["bytes_only_in_expired_snapshots"]}))
    return freed


def metadata_cleanup_finding(findings, m, th, catalog, ident) -> None:
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


def not_current_metadata_finding(findings: list, opened: str, newer: list[str]) -> None:
    """``health.not-current-metadata``: the table location holds metadata files newer than the one opened, so the
    orphan check is skipped (files of later commits would look orphaned)."""
    findings.append(HealthFinding(
        "health.not-current-metadata", Severity.INFO,
        f"the table location holds {len(newer):,} newer metadata files than the one opened: files of later "
        "commits would look orphaned, so the orphan check is skipped",
        {"opened": opened, "newer": newer[:5]},
        hint="open the table's current metadata file (its folder, or the catalog's metadata location)"))


def orphan_finding(findings: list, orphans, m: dict[str, Any], cutoff_ms: int, grace_given: bool, now_ms: int,
                   call: str, spark_t: str, ident: str) -> None:
    """``health.orphan-files``: listed files no snapshot or metadata file references, older than ``cutoff_ms``
    (``orphans`` the frame of them the doctor's reads kept, ``m`` their counts)."""
    cutoff_lit = ts_literal(cutoff_ms)  # the statements name the zone: UTC
    findings.append(HealthFinding(
        "health.orphan-files", Severity.WARNING,
        f"{plural(m['orphan_files'], 'file')} ({m['orphan_bytes']:,} B) under the table location are referenced by "
        f"no snapshot or metadata file",
        {"orphan_files": m["orphan_files"], "orphan_bytes": m["orphan_bytes"],
         "older_than": cutoff_lit, "grace": "given" if grace_given else "3 days (remove_orphan_files default)",
         "in_flight_files": m["in_flight_files"], "examples": orphans["location"].head(5).tolist()},
        (Action("spark", f"{call}remove_orphan_files(table => {spark_t}, older_than => TIMESTAMP "
                         f"{sql_string(cutoff_lit + ' UTC')})"),
         Action("trino", f"ALTER TABLE {ident} EXECUTE remove_orphan_files(retention_threshold => "
                         f"{sql_string(duration_literal(max(now_ms - cutoff_ms, 1000)))})",
                "Trino refuses thresholds below iceberg.remove-orphan-files.min-retention (7d by default)")),
        {"files_before": m["orphan_files"], "files_after": 0, "bytes_freed": m["orphan_bytes"]}))


__all__ = ["metadata_cleanup_finding", "not_current_metadata_finding", "orphan_finding", "parent_id",
           "retained_snapshots", "check_retention"]
