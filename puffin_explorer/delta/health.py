"""The table doctor on a Delta table: the checks of :mod:`puffin_explorer.iceberg.health` that apply to Delta,
each problem a finding with the Delta SQL that fixes it (``OPTIMIZE``, ``REORG TABLE … APPLY (PURGE)``,
``VACUUM … RETAIN … HOURS``; engine ``"delta"``).

Computed from the version's :class:`~.snapshot.DeltaSnapshot` (the frames of :mod:`.files`, ``metadata``,
the log's commits and checkpoints) and a listing of the table folder.  Deletion vectors count as the
Iceberg doctor counts them: ``dvs`` are the live DVs, ``delete_files`` the distinct DV files they live in
(inline DVs are no file), ``delete_bytes`` those files' sizes on storage, deleted rows the DV cardinalities.

Thresholds, from the table's ``configuration`` when set, else Delta's defaults:

* ``delta.targetFileSize`` (else OPTIMIZE's 1 GiB ``maxFileSize``); a file is small below 75 % of it, as
  for Iceberg; two or more small files in a partition make ``OPTIMIZE`` worthwhile;
* ``delta.deletedFileRetentionDuration`` (``interval 7 days``): removed files (tombstones) older than it
  are what ``VACUUM`` deletes; unreferenced files younger than it are in-flight writes, never orphans;
* ``delta.checkpointInterval`` (10): more commits than that since the last checkpoint is overdue;
* deleted share above 10 % of the rows (the Iceberg doctor's threshold) asks for ``REORG … APPLY (PURGE)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from .._text import plural
from ..health import (DELETED_SHARE_THRESHOLD, METRIC_KEYS, SMALL_FILE_SHARE, Action, DoctorRun, HealthFinding,
                      TableHealth, deleted_share_finding, epoch_ms, list_folder, size_histogram, small_files_finding,
                      sum_relations, ts_literal, unknown_counts)
from ..errors import PuffinError
from ..iceberg.paths import normalize
from ..regions import Severity
from ..iceberg.measures import (DELETE_TOTALS, FILE_TOTALS, PARTITION_SUMMARY, PARTITION_TOTALS, SIZE_HISTOGRAM,
                                LocalMeasures)
from .files import files_frame, measure_relations, shown_partition
from .snapshot import DeltaSnapshot

GIB = 1 << 30
HOUR_MS = 3_600_000
#: (configuration key, Delta's default) of every threshold read from a Delta table.
DELTA_DEFAULTS: dict[str, Any] = {
    "delta.targetFileSize": GIB,
    "delta.deletedFileRetentionDuration": 7 * 24 * HOUR_MS,
    "delta.checkpointInterval": 10,
}
#: Metrics only a Delta table has (added to the Iceberg doctor's keys; those that do not apply are None).
DELTA_METRIC_KEYS = ("tombstones", "tombstones_past_retention", "tombstone_bytes_on_storage", "log_files",
                     "log_bytes", "checkpoints", "commits_since_checkpoint", "checkpoint_interval")
_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(\d+)\s*(second|minute|hour|day|week)s?\s*$", re.IGNORECASE)
_UNIT_MS = {"second": 1000, "minute": 60_000, "hour": HOUR_MS, "day": 24 * HOUR_MS, "week": 7 * 24 * HOUR_MS}


def _threshold(conf: dict[str, Any], key: str) -> dict[str, Any]:
    """``{"value", "property", "source"}`` from the table's configuration, else Delta's default."""
    default = DELTA_DEFAULTS[key]
    raw = conf.get(key)
    if raw is None:
        return {"value": default, "property": key, "source": "default"}
    text = str(raw).strip()
    try:
        if key == "delta.deletedFileRetentionDuration":
            m = _INTERVAL.match(text)
            if not m:
                raise ValueError(text)
            value = int(m.group(1)) * _UNIT_MS[m.group(2).lower()]
        else:
            value = int(text)
            if value <= 0:
                raise ValueError(text)
        return {"value": value, "property": key, "source": "table property"}
    except ValueError:
        return {"value": default, "property": key, "source": f"default (table property {raw!r} is not valid)"}


def _tombstones(snap: DeltaSnapshot) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Removed files at the table's version that no later ``add`` brought back (path -> remove action), and
    the DV files every remove action names (a replaced DV's file is kept like a removed data file).

    The newest readable checkpoint at or below the version carries the tombstones it kept; the commits
    after it add and clear theirs (the same path added again is live, not a tombstone)."""
    from .descriptor import DVDescriptor

    log = snap.log
    out: dict[str, dict[str, Any]] = {}
    dv_files: set[str] = set()

    def removed(body: dict[str, Any]) -> None:
        out[body["path"]] = body
        if isinstance(body.get("deletionVector"), dict):
            try:
                where = snap.dv_location(DVDescriptor.from_action(body["deletionVector"]))
            except (PuffinError, ValueError, KeyError, TypeError):
                where = None
            if where:
                dv_files.add(normalize(where))

    start = 0
    for base in sorted((v for v in log.files.checkpoints if v <= snap.version), reverse=True):
        actions = log.checkpoint(base)
        if actions is not None:
            for kind, body in actions:
                if kind == "remove":
                    removed(body)
            start = base + 1
            break
    for v in range(start, snap.version + 1):
        if v not in log.files.commits:
            continue
        for kind, body in log.commit(v) or []:
            if kind == "remove":
                removed(body)
            elif kind == "add":
                out.pop(body["path"], None)
    live = {f.path for f in snap.live()}
    return {p: b for p, b in out.items() if p not in live}, dv_files


def _delta_rs(snap: DeltaSnapshot) -> str:
    """The delta-rs (``deltalake``) expression that opens the table, for the Python actions."""
    return f"deltalake.DeltaTable({snap.location!r})"


def _list(snap: DeltaSnapshot):
    """Every file under the table folder: location (normalized), path relative to the folder, size, mtime (ms)."""
    import pandas as pd

    found = list_folder(snap.io, snap.location)  # through the Delta table's I/O layer
    base = normalize(snap.location).rstrip("/") + "/"
    found["relative"] = [loc[len(base):] if loc.startswith(base) else loc for loc in found["location"]]
    return found if len(found) else pd.DataFrame(columns=["location", "size", "mtime_ms", "hidden", "relative"])


def delta_health(snap: DeltaSnapshot, now: Any = None, name: Optional[str] = None,
                 list_files: bool = True) -> TableHealth:
    """Every health check of a Delta table that applies (see the module docstring); ``now`` dates tombstone
    and orphan ages (default: the clock); ``name`` names the table in the statements (default
    ``delta.`<location>```)."""
    c = _Checkup.start(snap, now, name, list_files)
    dv_files = _measure_files(c)
    tombstones, removed_dv_files = _check_tombstones(c)
    _check_log(c)
    _check_orphans(c, dv_files, tombstones, removed_dv_files)
    # a commit the version needs missing: the counts of its files are unknown (None), never the rebuilt ones
    unknown_counts(c.m, c.findings, c.frames, snap.coverage, f"version {snap.version}",
                   {"version": snap.version, "missing_commits": list(snap.state.missing[:20])})
    thresholds = dict(c.th)
    thresholds["small-file-size"] = {"value": c.small_size, "property": "delta.targetFileSize",
                                     "source": f"{SMALL_FILE_SHARE:.0%} of the target"}
    return TableHealth(name or snap.name, c.m, c.findings, thresholds, c.frames, c.now_ms, "delta")


@dataclass(kw_only=True)
class _Checkup(DoctorRun):
    """One run of the doctor over a version: beside what every doctor's run holds, the version, its files, the
    folder's listing (None when not listed) and the listed size of each location."""

    snap: DeltaSnapshot
    files: Any
    listing: Any
    on_storage: dict[str, Any]

    @classmethod
    def start(cls, snap: DeltaSnapshot, now: Any, name: Optional[str], list_files: bool) -> "_Checkup":
        """The thresholds read, the version's files and (``list_files``) the folder listed; every metric None."""
        import pandas as pd

        now_ms = epoch_ms(now) if now is not None else int(pd.Timestamp.now(tz="UTC").timestamp() * 1000)
        conf = dict(snap.metadata.get("configuration") or {})
        th = {k: _threshold(conf, k) for k in DELTA_DEFAULTS}
        files = files_frame(snap)
        listing = _list(snap) if list_files else None
        on_storage = dict(zip(listing["location"], listing["size"])) if listing is not None else {}
        c = cls(snap=snap, now_ms=now_ms, ident=name or f"delta.`{snap.location}`", th=th, files=files,
                listing=listing, on_storage=on_storage, m={k: None for k in (*METRIC_KEYS, *DELTA_METRIC_KEYS)})
        if listing is not None:
            c.frames["listing"] = listing
        return c

    @property
    def target(self) -> int:
        return int(self.th["delta.targetFileSize"]["value"])

    @property
    def small_size(self) -> int:
        return int(self.target * SMALL_FILE_SHARE)

    @property
    def retention(self) -> int:
        return int(self.th["delta.deletedFileRetentionDuration"]["value"])

    @property
    def cutoff(self) -> int:
        """Removed and unreferenced files older than this (ms) are past the retention."""
        return self.now_ms - self.retention

    def vacuum(self) -> tuple[Action, Action]:
        """``VACUUM`` at the table's retention, in Delta SQL and delta-rs."""
        hours = max(self.retention // HOUR_MS, 0)
        # delta-rs refuses a retention below the table's unless told: only when whole hours round it down
        below = "" if hours * HOUR_MS >= self.retention else ", enforce_retention_duration=False"
        return (Action("delta", f"VACUUM {self.ident} RETAIN {hours} HOURS"),
                Action("delta-rs", f"{_delta_rs(self.snap)}.vacuum(retention_hours={hours}, dry_run=False{below})",
                       "deltalake (Python)"))


def _measure_files(c: _Checkup) -> set[str]:
    """Data files, DVs and rows: the measures of iceberg/measures.py over the version's files; then the small
    files per partition and the deleted share. Returns the DV files (resolved and normalized)."""
    relations = measure_relations(c.snap, {loc: int(size) for loc, size in c.on_storage.items() if size is not None})
    relations.update(sum_relations(c.target, c.small_size))
    with LocalMeasures(relations) as run:
        totals = run.arrow(FILE_TOTALS).to_pylist()[0]
        deletes = run.arrow(DELETE_TOTALS).to_pylist()[0]
        parts = sorted(run.arrow(PARTITION_TOTALS).to_pylist(), key=lambda r: r["pkey"])
        summary = run.arrow(PARTITION_SUMMARY).to_pylist()[0]
        classes = {r["bucket"]: r for r in run.arrow(SIZE_HISTOGRAM).to_pylist()}
    m = c.m
    m.update(data_files=int(totals["data_files"]), data_bytes=int(totals["data_bytes"]), dvs=int(deletes["dvs"]),
             records=int(totals["records"]), deleted_rows=int(totals["deleted_rows"]),
             position_delete_files=0, equality_delete_files=0, target_file_size=c.target,
             small_file_size=c.small_size, checkpoint_interval=int(c.th["delta.checkpointInterval"]["value"]))
    m["live_rows"] = m["records"] - m["deleted_rows"]
    m["deleted_share"] = (m["deleted_rows"] / m["records"]) if m["records"] else 0.0
    dv_files = set(relations["dvs"].column("file_path").drop_null().to_pylist())  # resolved and normalized there
    m["delete_files"] = int(deletes["dv_files"])
    m["delete_bytes"] = int(deletes["delete_bytes"]) if c.listing is not None else None
    _check_small_files(c, totals, parts, summary, classes)
    _check_deleted_share(c, totals)
    return dv_files


def _check_small_files(c: _Checkup, totals: dict, parts: list[dict], summary: dict, classes: dict) -> None:
    """Small files per partition (the frames ``partitions`` and ``size_histogram``), ``OPTIMIZE`` where two or
    more of them share a partition."""
    import pandas as pd

    m = c.m
    m["small_files"], m["small_bytes"] = int(totals["small_files"]), int(totals["small_bytes"])
    by_part = pd.DataFrame({
        "partition": [shown_partition(r["pkey"]) for r in parts],
        **{col: pd.array([int(r[col]) for r in parts], dtype="int64")
           for col in ("files", "rows", "deleted_rows", "bytes", "delete_files", "small_files", "small_bytes",
                       "small_rows")}})
    c.frames["size_histogram"] = size_histogram(c.target, c.small_size, classes)
    c.frames["partitions"] = by_part
    m["partitions"] = int(summary["partitions"])
    optimize = (Action("delta", f"OPTIMIZE {c.ident}"),
                Action("delta-rs", f"{_delta_rs(c.snap)}.optimize.compact(target_size={c.target})",
                       "deltalake (Python); it applies the deletion vectors of the files it compacts"))
    found = small_files_finding(m, summary, c.target, c.small_size, "delta.targetFileSize",
                                c.th["delta.targetFileSize"]["source"], lambda cand: optimize)
    if found is not None:
        c.findings.append(found)


def _check_deleted_share(c: _Checkup, totals: dict) -> None:
    """A deleted share above the threshold: the DVs purged by ``REORG``."""
    m = c.m
    if m["deleted_share"] > DELETED_SHARE_THRESHOLD:
        c.findings.append(deleted_share_finding(
            m, f"apply {plural(m['dvs'], 'deletion vector')}",
            (Action("delta", f"REORG TABLE {c.ident} APPLY (PURGE)"),),
            {"data_files_rewritten": int(totals["data_files_with_deletes"]), "rows_read": int(totals["touched_rows"]),
             "deleted_rows_after": 0, "dvs_after": 0, "live_rows_after": m["live_rows"]}))


def _check_tombstones(c: _Checkup) -> tuple[Any, set[str]]:
    """Removed files past the retention still on storage (``VACUUM``); the frame ``tombstones``. Returns it and
    the DV files the remove actions name."""
    import pandas as pd

    snap, m, on_storage = c.snap, c.m, c.on_storage
    tombs, removed_dv_files = _tombstones(snap)
    rows = []
    for path, body in sorted(tombs.items()):
        loc = normalize(snap.locate(path))
        ts = body.get("deletionTimestamp")
        rows.append({"path": path, "location": loc, "deletion_timestamp_ms": ts if isinstance(ts, int) else None,
                     "size": body.get("size"), "on_storage": loc in on_storage if c.listing is not None else None})
    tomb_df = pd.DataFrame(rows, columns=["path", "location", "deletion_timestamp_ms", "size", "on_storage"])
    c.frames["tombstones"] = tomb_df
    m["tombstones"] = int(len(tomb_df))
    ts_known = tomb_df["deletion_timestamp_ms"].notna()
    past = tomb_df[~ts_known | (tomb_df["deletion_timestamp_ms"].fillna(0) < c.cutoff)]
    m["tombstones_past_retention"] = int(len(past))
    if c.listing is not None:
        stored = past[past["on_storage"].astype(bool)]
        m["tombstone_bytes_on_storage"] = int(sum(int(on_storage.get(loc) or 0) for loc in stored["location"]))
        if len(stored):
            c.findings.append(HealthFinding(
                "health.delta-tombstones-past-retention", Severity.WARNING,
                f"{len(stored):,} removed files ({m['tombstone_bytes_on_storage']:,} B) are older than the "
                f"{max(c.retention // HOUR_MS, 0):,}-hour retention and still on storage",
                {"tombstones": m["tombstones"], "past_retention": int(len(stored)),
                 "bytes": m["tombstone_bytes_on_storage"], "retention_ms": c.retention,
                 "property": "delta.deletedFileRetentionDuration",
                 "source": c.th["delta.deletedFileRetentionDuration"]["source"], "older_than": ts_literal(c.cutoff),
                 "examples": stored["path"].head(5).tolist()},
                c.vacuum(),
                {"files_freed": int(len(stored)), "bytes_freed": m["tombstone_bytes_on_storage"]}))
    return tomb_df, removed_dv_files


def _check_log(c: _Checkup) -> None:
    """The log's size and checkpoints: more commits since the last checkpoint than the interval is overdue."""
    snap, m, listing = c.snap, c.m, c.listing
    interval = int(c.th["delta.checkpointInterval"]["value"])
    log = snap.log
    m["checkpoints"] = len(log.files.checkpoints)
    last_cp = max((v for v in log.files.checkpoints if v <= snap.version), default=None)
    m["commits_since_checkpoint"] = snap.version - (last_cp if last_cp is not None else -1)
    m["snapshots"] = len(log.files.commits)
    if listing is not None:
        in_log = listing[listing["relative"].str.startswith("_delta_log/")]
        m["log_files"], m["log_bytes"] = int(len(in_log)), int(in_log["size"].fillna(0).sum())
        m["metadata_files"] = m["log_files"]
    if m["commits_since_checkpoint"] > interval:
        c.findings.append(HealthFinding(
            "health.delta-checkpoint-overdue", Severity.WARNING,
            f"{plural(m['commits_since_checkpoint'], 'commit')} since the last checkpoint (interval {interval}): every "
            "reader replays them all",
            {"commits_since_checkpoint": m["commits_since_checkpoint"], "last_checkpoint": last_cp,
             "checkpoint_interval": interval, "property": "delta.checkpointInterval",
             "source": c.th["delta.checkpointInterval"]["source"], "log_files": m["log_files"],
             "log_bytes": m["log_bytes"]},
            (Action("delta-rs", f"{_delta_rs(snap)}.create_checkpoint()",
                    "delta-rs (Python); Spark writes one at the next commit past the interval"),),
            {"commits_since_checkpoint_after": 0}))


def _check_orphans(c: _Checkup, dv_files: set[str], tombstones: Any, removed_dv_files: set[str]) -> None:
    """Files under the folder that no live file, DV or tombstone references, older than the retention (younger
    ones are in-flight writes); the frame ``orphans``. Unknown (None) when the folder was not listed."""
    m, listing = c.m, c.listing
    if listing is None:
        m.update(orphan_files=None, orphan_bytes=None)
        return
    referenced = set(c.files["location"].map(normalize)) | set(dv_files) | set(tombstones["location"]) \
        | removed_dv_files
    unref = listing[~listing["location"].isin(referenced) & ~listing["hidden"].astype(bool)
                    & ~listing["relative"].str.startswith("_delta_log/")]
    young = unref["mtime_ms"].notna() & (unref["mtime_ms"] >= c.cutoff)
    orphans = unref[~young].reset_index(drop=True)
    c.frames["orphans"] = orphans
    m["orphan_files"], m["orphan_bytes"] = int(len(orphans)), int(orphans["size"].fillna(0).sum())
    m["in_flight_files"] = int(young.sum())
    if len(orphans):
        c.findings.append(HealthFinding(
            "health.orphan-files", Severity.WARNING,
            f"{plural(len(orphans), 'file')} ({m['orphan_bytes']:,} B) under the table folder are referenced by no "
            "live file, deletion vector or remove action",
            {"orphan_files": m["orphan_files"], "orphan_bytes": m["orphan_bytes"],
             "older_than": ts_literal(c.cutoff), "grace": "delta.deletedFileRetentionDuration",
             "source": c.th["delta.deletedFileRetentionDuration"]["source"], "in_flight_files": m["in_flight_files"],
             "examples": orphans["relative"].head(5).tolist()},
            c.vacuum(),
            {"files_before": m["orphan_files"], "files_after": 0, "bytes_freed": m["orphan_bytes"]}))


__all__ = ["delta_health", "DELTA_DEFAULTS", "DELTA_METRIC_KEYS"]
