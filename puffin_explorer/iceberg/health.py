"""The table doctor: every health check of an Iceberg table, each problem a finding with the statement that fixes it.

:func:`table_health` computes a :class:`TableHealth` over a :class:`~.source.TableSource` and the frames every
other analysis builds from it (the entry index, ``overview.manifest_frame``, ``snapshot_frame``,
``statistics_frame``, the metadata, the I/O layer's listing), never a private cache.
Views (``display/health_view.py``) only format it.  :func:`doctor` reads in steps, in order; the checks it runs
live by concern: the current snapshot's live files (:mod:`.health_live_files`, from the sums of
:mod:`.health_aggregates`; clustering in :mod:`.health_clustering`), manifests and statistics files
(:mod:`.health_metadata`), retention, orphans and metadata cleanup (:mod:`.health_cleanup`), each fix statement
written with the literals of :mod:`.health_statements`.

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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from ..errors import PuffinError
from ..health import (DAY_MS, DEFAULTS, METRIC_KEYS, SMALL_FILE_SHARE, DoctorRun, HealthFinding, TableHealth,
                      epoch_ms, fill_listing_stats, listing_arrow, ts_literal, unknown_counts)
from ..regions import Severity
from .deletes import coverage
from .duckdb_manifests import SLOW_DECODE
from .health_aggregates import FileAggregates, _first_rows, driver_file_aggregates
from .health_cleanup import (check_retention, metadata_cleanup_finding, not_current_metadata_finding,
                             orphan_finding)
from .health_clustering import clustering_column
from .health_live_files import current_findings
from .health_metadata import manifest_findings, statistics_findings
from .health_statements import sql_string
from .index_build import build_index
from .overview import manifest_frame, snapshot_frame
from .paths import join, normalize

#: Index findings that mean a snapshot's file list is incomplete.
_MANIFEST_BROKEN = ("iceberg.manifest-unreadable", "iceberg.manifest-damaged", "table.file-vanished")

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource


#: Unreferenced files younger than this are in-flight writes, not orphans (``remove_orphan_files``' default).
ORPHAN_GRACE_MS = 3 * DAY_MS
#: Rows kept in ``frames["expired_only"]`` (driver and Spark alike; Spark's ``frames["orphans"]`` too): the
#: first by location.
FRAME_ROWS = 10_000


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
        self.metadata_listed = None  # the listed metadata files (the metadata_listed measure), once listed

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

    def _snapshot_files(self, sids) -> Any:
        """The ``snapshot_files`` relation of the snapshots ``sids``: their file sets, each with its ``sid``."""
        import numpy as np
        import pyarrow as pa

        from .measures import empty

        sets = [files.append_column("sid", pa.array(np.full(files.num_rows, sid, dtype=np.int64)))
                for sid in sorted(sids) for files in self._set_of(sid)]
        return pa.concat_tables(sets) if sets else empty("snapshot_files")

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

    def listed_sizes(self, locations) -> dict[str, Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        wanted = pc.is_in(self.listing.column("location"), value_set=pa.array(sorted(set(locations)), pa.string()))
        self._stat(wanted.to_numpy(zero_copy_only=False))
        hit = self.listing.filter(pc.is_in(self.listing.column("location"),
                                           value_set=pa.array(sorted(set(locations)), pa.string())))
        return dict(zip(hit.column("location").to_pylist(), hit.column("size").to_pylist()))

    def _stat_listed(self, listed) -> None:
        """Reads the size and time of the listed files named in the column ``location`` of ``listed``."""
        import pyarrow.compute as pc

        wanted = pc.is_in(self.listing.column("location"), value_set=listed.column("location").combine_chunks())
        self._stat(wanted.to_numpy(zero_copy_only=False))

    def metadata_files(self) -> int:
        from .measures import METADATA_FILES, METADATA_LISTED, LocalMeasures

        with LocalMeasures({"listing": self.listing}) as run:
            files = run.arrow(METADATA_FILES).column("files")[0].as_py()
            self.metadata_listed = run.arrow(METADATA_LISTED)
        return int(files)

    def newer_metadata(self, current_loc: str, tracked: set) -> list[str]:
        """The metadata measures over the listing, once the listed metadata files' times are read."""
        from .measures import METADATA_LISTED, NEWER_METADATA, metadata_log, run_local

        if self.metadata_listed is None:
            self.metadata_listed = run_local(METADATA_LISTED, listing=self.listing)
        self._stat_listed(self.metadata_listed)
        newer = run_local(NEWER_METADATA, listing=self.listing, metadata_listed=self.metadata_listed,
                          metadata_log=metadata_log(tracked, current_loc))
        return sorted(newer.column("location").to_pylist())

    def expired_only(self, keep: set, expired: list):
        """The files only the ``expired`` snapshots hold: ``(frame of location, size; files; bytes)``, the frame
        the first :data:`FRAME_ROWS` by location, as the Spark doctor keeps it."""
        from .measures import EXPIRED_ONLY, EXPIRED_ONLY_TOTALS, LocalMeasures, retention

        with LocalMeasures({"snapshot_files": self._snapshot_files({*keep, *expired}),
                            "retention": retention(keep, expired)}) as run:
            totals = run.arrow(EXPIRED_ONLY_TOTALS).to_pylist()[0]
            freed = run.arrow(EXPIRED_ONLY)
        frame = _first_rows(freed, FRAME_ROWS, [("location", "ascending")]).to_pandas()
        frame["size"] = frame["size"].astype("int64")
        return frame, int(totals["files"]), int(totals["bytes"])

    def orphans(self, referenced: set, cutoff_ms: int):
        """Listed files no snapshot or metadata file references, not hidden, older than ``cutoff_ms``:
        ``(frame, files, bytes, in-flight files)``; the size and time of those files read now (none before)."""
        from .measures import ORPHAN_TOTALS, ORPHANS, UNREFERENCED, LocalMeasures, locations, orphan_params, \
            run_local

        unreferenced = run_local(UNREFERENCED, listing=self.listing, referenced=locations(referenced),
                                 snapshot_files=self._snapshot_files({*self.sets, *self.unmade}))
        self._stat_listed(unreferenced)
        with LocalMeasures({"listing": self.listing, "unreferenced": unreferenced,
                            "orphan_params": orphan_params(cutoff_ms)}) as run:
            totals = run.arrow(ORPHAN_TOTALS).to_pylist()[0]
            orphans = run.arrow(ORPHANS).sort_by("location").to_pandas()
        return orphans, int(totals["files"]), int(totals["bytes"]), int(totals["in_flight"])


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


@dataclass(kw_only=True)
class _DoctorRun(DoctorRun):
    """One run of the Iceberg doctor: beside what every doctor's run holds, the source, the orphan cutoff and
    whether it was given, the catalog its statements name, and the target and small file sizes."""

    source: "TableSource"
    orphan_cutoff: int
    cutoff_given: bool
    catalog: str
    target: int
    small_size: int

    @property
    def call(self) -> str:
        """The start of a Spark procedure call: ``CALL <catalog>.system.``."""
        return f"CALL {self.catalog}.system."

    @property
    def spark_t(self) -> str:
        """The table's name as a Spark procedure's ``table`` argument (a SQL string)."""
        return sql_string(self.ident)


def doctor(source: "TableSource", reads: Any, now: Any = None, older_than: Any = None, catalog: str = "spark_catalog",
           name: Optional[str] = None, list_files: bool = True, cluster_by: Optional[str] = None) -> TableHealth:
    """:func:`table_health` with the reads that grow with the table done by ``reads`` (:class:`DriverReads`,
    or the Spark jobs of ``puffin_explorer/spark/health.py``); everything else is read and decided here."""
    run = _start(source, now, older_than, catalog, name)
    snaps = _snapshots_with_times(source)
    run.m["snapshots"] = int(len(snaps))
    current = source.metadata.current_snapshot_id
    if current is not None:
        _check_current_files(run, reads, current, cluster_by)
    readable, manifest_lists, unreadable = _check_manifests(run, reads, snaps, current)
    listed = bool(list_files and source.metadata.location)
    _list_storage(run, reads, listed, readable, manifest_lists)
    _check_snapshot_ages(run, snaps)
    if len(snaps):
        run.frames["expired_only"] = check_retention(run.findings, source, snaps, reads, run.m, run.th, run.now_ms,
                                                     run.call, run.spark_t, run.ident)
    tracked = _check_metadata_files(run, reads, listed)
    _check_orphans(run, reads, listed, bool(unreadable), tracked)
    if listed:
        run.frames["listing"] = reads.listing_frame()  # once the checks read the sizes and times they need
    if current is not None:
        statistics_findings(run.findings, source, snaps, current, run.m, run.call, run.spark_t, run.ident)
        _vanished_findings(run, current)
    return TableHealth(run.ident, run.m, run.findings, _thresholds_shown(run), run.frames, run.now_ms, catalog)


def _start(source: "TableSource", now: Any, older_than: Any, catalog: str, name: Optional[str]) -> _DoctorRun:
    """The run's clock, its thresholds (the table's properties, else Iceberg's defaults) and its metrics, each
    at its value for a table of nothing."""
    import pandas as pd

    now_ms = epoch_ms(now) if now is not None else int(pd.Timestamp.now(tz="UTC").timestamp() * 1000)
    orphan_cutoff = epoch_ms(older_than) if older_than is not None else now_ms - ORPHAN_GRACE_MS
    th = {k: _threshold(source.metadata.properties, k) for k in DEFAULTS}
    target = th["write.target-file-size-bytes"]["value"] or DEFAULTS["write.target-file-size-bytes"]
    small_size = int(target * SMALL_FILE_SHARE)
    m: dict[str, Any] = {k: 0 for k in METRIC_KEYS}
    m.update(target_file_size=int(target), small_file_size=small_size, deleted_share=0.0,
             oldest_snapshot_age_days=None, newest_snapshot_age_days=None, commits_per_day=0.0,
             statistics_commits_behind=None, clustering_column=None, clustering_depth=None)
    return _DoctorRun(source=source, now_ms=now_ms, orphan_cutoff=orphan_cutoff, cutoff_given=older_than is not None,
                      catalog=catalog, ident=name or source.name, th=th, target=target, small_size=small_size, m=m)


def _snapshots_with_times(source: "TableSource") -> Any:
    """The snapshot frame with each commit's time in epoch ms (``timestamp_ms``; NA for a commit time no
    datetime holds, a damaged ``timestamp-ms``: an unknown time here)."""
    import pandas as pd

    snaps = snapshot_frame(source)
    if not len(snaps):
        return pd.DataFrame({"snapshot_id": pd.Series(dtype="int64"), "parent_snapshot_id": pd.Series(dtype="Int64"),
                             "timestamp": pd.Series(dtype="datetime64[ns, UTC]"),
                             "manifest_list": pd.Series(dtype=object), "timestamp_ms": pd.Series(dtype="Int64")})
    epoch = pd.Timestamp(0, tz="UTC")
    known = snaps["timestamp"].notna()
    ms = pd.Series(pd.NA, index=snaps.index, dtype="Int64")
    ms[known] = ((snaps.loc[known, "timestamp"] - epoch) // pd.Timedelta(milliseconds=1)).astype("int64")
    return snaps.assign(timestamp_ms=ms)


def _check_current_files(run: _DoctorRun, reads: Any, current: int, cluster_by: Optional[str]) -> None:
    """The checks of the current snapshot's live files, from the aggregates ``reads`` sums; the counts of files
    it could not read are unknown (None), never the smaller number."""
    md = run.source.metadata
    column, column_source = clustering_column(md, cluster_by)
    agg = reads.current_files(int(run.target), run.small_size, column)
    current_findings(run.findings, run.frames, run.m, agg, run.th, run.target, run.small_size, column, column_source,
                     run.call, run.spark_t, run.catalog, run.ident, md.format_version)
    unknown_counts(run.m, run.findings, run.frames, agg.coverage, f"snapshot {current}", {"snapshot_id": current})


def _check_manifests(run: _DoctorRun, reads: Any, snaps, current: Optional[int]):
    """Every snapshot's manifests read, their file sets handed to ``reads``, a finding per snapshot whose files are
    not all known, and the current snapshot's manifest checks.  Returns the readable ``(snapshot id, manifests
    frame)`` pairs, the manifest list of each, and the snapshot ids whose files are not all known."""
    readable, manifest_lists, per_snapshot, why = _manifests_per_snapshot(run, snaps, current)
    broken = reads.snapshot_files(readable, current)
    unreadable: list[int] = []
    for sid, what in why:
        if what is None and sid in broken:
            what = f"a manifest is unreadable ({broken[sid]})"
        if what is not None:
            unreadable.append(sid)
            run.findings.append(HealthFinding(
                "health.snapshot-unreadable", Severity.INFO,
                f"snapshot {sid}: {what}; its files are left out of retention and orphan counts",
                {"snapshot_id": sid}, hint="t.check() names the broken file"))
    run.frames["snapshots"] = snaps.merge(per_snapshot, on="snapshot_id", how="left")
    mans = run.frames.get("manifests")
    if mans is not None and len(mans):
        manifest_findings(run.findings, mans, run.m, run.th, run.call, run.spark_t, run.ident)
    return readable, manifest_lists, unreadable


def _manifests_per_snapshot(run: _DoctorRun, snaps, current: Optional[int]):
    """Each snapshot's manifests frame (the current one's is ``frames["manifests"]``): the readable ``(snapshot id,
    frame)`` pairs, each one's manifest list location, a frame of manifests and their bytes per snapshot, and per
    snapshot in order why its manifests are unreadable (None when they are not)."""
    import pandas as pd

    source = run.source
    readable, manifest_lists, rows = [], {}, []
    why: list[tuple[int, Optional[str]]] = []
    for sid, ml in zip(snaps["snapshot_id"].astype("int64"), snaps["manifest_list"]):
        sid = int(sid)
        try:
            mans = manifest_frame(source, sid)
        except (PuffinError, KeyError) as exc:
            why.append((sid, f"manifests unreadable ({exc})"))
            continue
        if not len(mans):
            mans = pd.DataFrame(columns=["location", "manifest_length", "content"])
        rows.append({"snapshot_id": sid, "manifests": int(len(mans)),
                     "manifest_bytes": int(mans["manifest_length"].sum()) if len(mans) else 0})
        readable.append((sid, mans))
        why.append((sid, None))
        if isinstance(ml, str) and ml:
            manifest_lists[sid] = normalize(source.locate(ml))
        if sid == current:
            run.frames["manifests"] = mans
    per_snapshot = pd.DataFrame(rows, columns=["snapshot_id", "manifests", "manifest_bytes"])
    return readable, manifest_lists, per_snapshot, why


def _list_storage(run: _DoctorRun, reads: Any, listed: bool, readable: list, manifest_lists: dict[int, str]) -> None:
    """The table location listed (when ``listed``), and each readable snapshot's manifest list (its size on
    storage, 0 unlisted) and statistics files added to its file set."""
    source, md = run.source, run.source.metadata
    if listed:
        reads.list(source.locate(md.location))
    sizes_on_storage = reads.listed_sizes(manifest_lists.values()) if listed else {}
    for sid, loc in manifest_lists.items():
        reads.add_file(sid, loc, int(sizes_on_storage.get(loc) or 0))
    known = {sid for sid, _ in readable}
    for s in md.statistics:
        if s.snapshot_id in known:
            reads.add_file(s.snapshot_id, normalize(source.locate(s.path)), int(s.file_size_in_bytes or 0))


def _check_snapshot_ages(run: _DoctorRun, snaps) -> None:
    """The oldest and newest snapshot's age and the commit rate, over the commit times that are known."""
    import numpy as np

    ts = snaps["timestamp_ms"].dropna().to_numpy(dtype=np.int64)
    if not len(ts):
        return
    m, now_ms = run.m, run.now_ms
    m["oldest_snapshot_age_days"] = round((now_ms - int(ts.min())) / DAY_MS, 3)
    m["newest_snapshot_age_days"] = round((now_ms - int(ts.max())) / DAY_MS, 3)
    span = (int(ts.max()) - int(ts.min())) / DAY_MS
    m["commits_per_day"] = round(len(ts) / max(span, 1.0), 3)
    m["commits_last_day"] = int((ts > int(ts.max()) - DAY_MS).sum())


def _check_metadata_files(run: _DoctorRun, reads: Any, listed: bool) -> set[str]:
    """The metadata files kept (listed, or else those the metadata log tracks) and whether old ones are deleted;
    returns the tracked ones' locations."""
    source = run.source
    log = source.metadata.raw.get("metadata-log") or []
    tracked = {normalize(source.locate(e["metadata-file"])) for e in log
               if isinstance(e, dict) and isinstance(e.get("metadata-file"), str)}
    tracked.add(normalize(source.metadata_location))
    run.m["metadata_files_tracked"] = len(tracked)
    run.m["metadata_files"] = reads.metadata_files() if listed else len(tracked)
    metadata_cleanup_finding(run.findings, run.m, run.th, run.catalog, run.ident)
    return tracked


def _check_orphans(run: _DoctorRun, reads: Any, listed: bool, unreadable: bool, tracked: set[str]) -> None:
    """Orphan files: not while a snapshot's files are unknown or a newer commit exists (its files would look
    orphaned); then the orphan metrics are None, never a false 0."""
    source, md, m = run.source, run.source.metadata, run.m
    if unreadable:
        m.update(orphan_files=None, orphan_bytes=None, in_flight_files=None)
    newer = reads.newer_metadata(normalize(source.metadata_location), tracked) if listed else []
    if newer:
        m.update(orphan_files=None, orphan_bytes=None, in_flight_files=None)
        not_current_metadata_finding(run.findings, source.metadata_location, newer)
    if not listed or unreadable or newer:
        return
    referenced = set(tracked)
    referenced |= {normalize(source.locate(s.path)) for s in md.statistics}
    meta_dir = normalize(join(source.locate(md.location), "metadata"))
    referenced.add(normalize(join(meta_dir, "version-hint.text")))
    orphans, n_orphans, orphan_bytes, in_flight = reads.orphans(referenced, run.orphan_cutoff)
    run.frames["orphans"] = orphans
    m["orphan_files"] = n_orphans
    m["orphan_bytes"] = orphan_bytes
    m["in_flight_files"] = in_flight
    if n_orphans:
        orphan_finding(run.findings, orphans, m, run.orphan_cutoff, run.cutoff_given, run.now_ms, run.call,
                       run.spark_t, run.ident)


def _vanished_findings(run: _DoctorRun, current: int) -> None:
    """Files of the current snapshot gone when read, first: its numbers are partial, and say so."""
    from .vanished import snapshot_findings

    run.findings[:0] = [HealthFinding(f.code, f.severity, f.message, {"file": getattr(f, "file", ""),
                                                                      "snapshot_id": current}, hint=f.hint)
                        for f in snapshot_findings(run.source, current)]


def _thresholds_shown(run: _DoctorRun) -> dict[str, dict[str, Any]]:
    """The thresholds the report shows: the table's, the small-file size and the orphan cutoff."""
    thresholds = dict(run.th)
    thresholds["small-file-size"] = {"value": run.small_size, "property": "write.target-file-size-bytes",
                                     "source": f"{SMALL_FILE_SHARE:.0%} of the target "
                                               "(rewrite_data_files min-file-size-bytes default)"}
    thresholds["orphan-older-than"] = {"value": ts_literal(run.orphan_cutoff), "property": "",
                                       "source": "given" if run.cutoff_given else "3 days before now"}
    return thresholds


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


__all__ = ["FRAME_ROWS", "ORPHAN_GRACE_MS", "DriverReads", "doctor", "table_health",
           "warehouse_health"]
